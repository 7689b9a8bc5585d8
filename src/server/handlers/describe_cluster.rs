//! DescribeCluster: the live brokers of the image (and, at v2 when asked,
//! the fenced ones, marked). The controller id is this broker's, as
//! Kafka's brokers name a broker there (clients send admin requests to it,
//! and it forwards them to the active controller).
//!
//! Any principal may call it, as in Kafka; the cluster's authorized
//! operations, when asked for, are reported only to a principal that may
//! DESCRIBE the cluster (0 to anyone else).

use std::rc::Rc;

use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_cluster::*;
use crate::protocol::messages::metadata::AUTHORIZED_OPERATIONS_OMITTED;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DescribeClusterRequest,
    listener: &str,
    access: &Access<'_>,
) -> DescribeClusterResponse {
    let broker = BrokerState::of(shard);
    let image = broker.image();
    let mut brokers: Vec<DescribeClusterBroker> =
        crate::server::handlers::metadata::live_brokers(&broker, &image, listener)
            .into_iter()
            .map(|b| DescribeClusterBroker {
                broker_id: b.id,
                host: b.host,
                port: b.port,
                rack: b.rack,
                is_fenced: false,
                broker_epoch: image.brokers.get(&b.id).map(|r| r.epoch),
            })
            .collect();
    if req.include_fenced_brokers {
        brokers.extend(image.brokers.values().filter(|b| b.fenced).filter_map(|b| {
            let (host, port) = b.endpoint(listener)?;
            Some(DescribeClusterBroker {
                broker_id: b.id,
                host: host.to_string(),
                port,
                rack: b.rack.clone(),
                is_fenced: true,
                broker_epoch: Some(b.epoch),
            })
        }));
        brokers.sort_by_key(|b| b.broker_id);
    }
    DescribeClusterResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        error_message: None,
        endpoint_type: req.endpoint_type,
        cluster_id: broker.cluster_id().to_string(),
        controller_id: broker.node_id(),
        brokers,
        cluster_authorized_operations: if req.include_cluster_authorized_operations {
            access.cluster_authorized_operations(&image)
        } else {
            AUTHORIZED_OPERATIONS_OMITTED
        },
    }
}
