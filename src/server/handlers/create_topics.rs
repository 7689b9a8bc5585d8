//! CreateTopics through the controller.

use std::rc::Rc;

use crate::acl::matrix;
use crate::metadata::dynamic_broker_config;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::create_topics::*;
use crate::quota::mutation;
use crate::server::controller::{self, NewTopic};
use crate::server::handlers::access::Access;
use crate::server::handlers::config_sources::effective_source;
use crate::server::handlers::quota;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: CreateTopicsRequest,
    access: &Access<'_>,
) -> CreateTopicsResponse {
    let broker = BrokerState::of(shard);
    let before = broker.image();
    let denied = if access.allows_cluster(&before, matrix::CREATE_TOPICS_CLUSTER) {
        Default::default()
    } else {
        access.denied(
            &before,
            matrix::CREATE_TOPICS_TOPIC,
            req.topics.iter().map(|t| t.name.as_str()),
        )
    };
    // KIP-599: each new topic's partitions, charged before the controller
    // decides and given back for the topics it refuses.
    let mut quota = quota::mutation_quota(
        shard,
        header,
        access,
        mutation::CREATE_TOPICS_STRICT_SINCE_VERSION,
    );
    let partitions = |t: &CreatableTopic| -> Option<u64> {
        let n = match (t.assignments.len(), t.num_partitions) {
            _ if before.topic(&t.name).is_some() => return None,
            (0, -1) => broker.config.num_partitions,
            (0, n) => n,
            (n, _) => n as i32,
        };
        u64::try_from(n).ok().filter(|n| *n > 0)
    };
    let (throttled, mut charged) = quota::charge_topics(
        &mut quota,
        req.topics
            .iter()
            .filter(|t| !denied.contains(&t.name))
            .map(|t| (t.name.as_str(), partitions(t))),
    );
    let new: Vec<NewTopic> = req
        .topics
        .iter()
        .filter(|t| !denied.contains(&t.name) && !throttled.contains(&t.name))
        .map(|t| NewTopic {
            name: t.name.clone(),
            num_partitions: t.num_partitions,
            replication_factor: t.replication_factor,
            configs: t
                .configs
                .iter()
                .map(|c| (c.name.clone(), c.value.clone()))
                .collect(),
            assignments: t
                .assignments
                .iter()
                .map(|a| (a.partition_index, a.broker_ids.clone()))
                .collect(),
        })
        .collect();
    let results =
        match controller::create_topics(shard, access.caller(), new, req.validate_only).await {
            Ok(mut r) => {
                for (name, _) in r.iter().filter(|(_, r)| r.is_err()) {
                    if let Some(n) = charged.remove(name) {
                        quota.refund(n);
                    }
                }
                r.extend(
                    throttled
                        .iter()
                        .map(|name| (name.clone(), Err(quota::throttled_topic_error()))),
                );
                r.extend(denied.iter().map(|name| {
                    (
                        name.clone(),
                        Err((
                            error_code::TOPIC_AUTHORIZATION_FAILED,
                            "Authorization failed.".to_string(),
                        )),
                    )
                }));
                r
            }
            Err(e) => {
                tracing::warn!("CreateTopics failed: {e}");
                charged.values().for_each(|n| quota.refund(*n));
                req.topics
                    .iter()
                    .map(|t| (t.name.clone(), Err((e.code, e.message.clone()))))
                    .collect()
            }
        };
    let image = broker.image();
    let mut topics: Vec<CreatableTopicResult> = Vec::with_capacity(results.len());
    for (name, r) in results {
        match r {
            Ok(created) => {
                let overrides = image
                    .topic(&name)
                    .map(|t| t.configs.clone())
                    .unwrap_or_default();
                let configs = (header.api_version >= 5).then(|| {
                    dynamic_broker_config::describe_topic(&broker.config, &image, &overrides)
                        .into_iter()
                        .map(|(e, synonyms)| CreatableTopicConfigs {
                            name: e.name.to_string(),
                            value: Some(e.value),
                            read_only: false,
                            config_source: effective_source(&synonyms),
                            is_sensitive: false,
                        })
                        .collect()
                });
                topics.push(CreatableTopicResult {
                    name,
                    topic_id: created.topic_id,
                    error_code: error_code::NONE,
                    error_message: None,
                    num_partitions: created.num_partitions,
                    replication_factor: created.replication_factor,
                    configs,
                    ..Default::default()
                });
            }
            Err((code, message)) => topics.push(CreatableTopicResult {
                name,
                error_code: code,
                error_message: Some(message),
                num_partitions: -1,
                replication_factor: -1,
                ..Default::default()
            }),
        }
    }
    CreateTopicsResponse {
        throttle_time_ms: quota.throttle_time_ms(),
        topics,
    }
}
