//! ListConfigResources: the resources whose configs can be described, by
//! type, from this broker's metadata image, as Kafka's `KafkaApis` lists
//! them.

use std::rc::Rc;

use crate::acl::matrix;
use crate::metadata::records::{RESOURCE_BROKER, RESOURCE_TOPIC};
use crate::metadata::METADATA_TOPIC;
use crate::node::state::BrokerState;
use crate::protocol::config_resource::GROUP as RESOURCE_GROUP;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::list_config_resources::*;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

/// The types version 1 lists. Kafka also lists BROKER_LOGGER (8), whose
/// configs pinlog does not serve, so it is refused like any type a broker
/// does not support.
const V1_RESOURCE_TYPES: [i8; 4] = [
    RESOURCE_TOPIC,
    RESOURCE_BROKER,
    CLIENT_METRICS_RESOURCE_TYPE,
    RESOURCE_GROUP,
];

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: ListConfigResourcesRequest,
    access: &Access<'_>,
) -> ListConfigResourcesResponse {
    if !access.allows_cluster(
        &BrokerState::of(shard).image(),
        matrix::LIST_CONFIG_RESOURCES_CLUSTER,
    ) {
        return ListConfigResourcesResponse {
            error_code: error_code::CLUSTER_AUTHORIZATION_FAILED,
            ..Default::default()
        };
    }
    let supported: &[i8] = if header.api_version >= 1 {
        &V1_RESOURCE_TYPES
    } else {
        &[CLIENT_METRICS_RESOURCE_TYPE]
    };
    let wanted: Vec<i8> = if req.resource_types.is_empty() {
        supported.to_vec()
    } else {
        req.resource_types
    };
    if let Some(t) = wanted.iter().find(|t| !supported.contains(t)) {
        // Kafka's answer to a type it does not list.
        tracing::debug!(
            resource_type = t,
            "ListConfigResources for an unsupported resource type"
        );
        return ListConfigResourcesResponse {
            error_code: error_code::UNSUPPORTED_VERSION,
            ..Default::default()
        };
    }
    let broker = BrokerState::of(shard);
    let image = broker.image();
    let mut config_resources = Vec::new();
    // Groups are listed when they have dynamic configs, and
    // client-metrics resources when a subscription exists (pinlog has no
    // client telemetry, so that list is empty, as on a Kafka cluster where
    // none was set).
    if wanted.contains(&RESOURCE_BROKER) {
        let mut ids: Vec<i32> = image
            .brokers
            .values()
            .filter(|b| !b.fenced)
            .map(|b| b.id)
            .collect();
        if ids.is_empty() {
            ids.push(broker.node_id());
        }
        config_resources.extend(ids.into_iter().map(|id| ListedConfigResource {
            resource_name: id.to_string(),
            resource_type: RESOURCE_BROKER,
        }));
    }
    if wanted.contains(&RESOURCE_TOPIC) {
        config_resources.extend(
            image
                .topics
                .keys()
                .filter(|n| n.as_str() != METADATA_TOPIC)
                .map(|n| ListedConfigResource {
                    resource_name: n.clone(),
                    resource_type: RESOURCE_TOPIC,
                }),
        );
    }
    if wanted.contains(&RESOURCE_GROUP) {
        config_resources.extend(image.group_configs.keys().map(|g| ListedConfigResource {
            resource_name: g.clone(),
            resource_type: RESOURCE_GROUP,
        }));
    }
    ListConfigResourcesResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        config_resources,
    }
}
