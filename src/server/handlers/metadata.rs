//! Metadata: served from the shard's metadata image; auto-creates topics
//! when the request and `auto.create.topics.enable` allow it.

use std::rc::Rc;

use crate::metadata::store::METADATA_TOPIC;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::metadata::*;
use crate::server::controller::{self, NewTopic};
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: MetadataRequest,
) -> MetadataResponse {
    let broker = BrokerState::of(shard);
    let mut image = broker.image();
    // Names asked for; `None` means every topic.
    let requested: Option<Vec<String>> = req
        .topics
        .as_ref()
        .map(|ts| ts.iter().filter_map(|t| t.name.clone()).collect());
    let mut creation_errors = Vec::new();
    if let Some(names) = &requested {
        let missing: Vec<String> = names
            .iter()
            .filter(|n| image.topic(n).is_none())
            .cloned()
            .collect();
        if !missing.is_empty()
            && req.allow_auto_topic_creation
            && broker.config.auto_create_topics_enable
        {
            let new: Vec<NewTopic> = missing
                .iter()
                .map(|n| NewTopic {
                    name: n.clone(),
                    num_partitions: -1,
                    replication_factor: -1,
                    configs: Vec::new(),
                })
                .collect();
            match controller::create_topics(shard, new, false).await {
                Ok(results) => {
                    for (name, r) in results {
                        if let Err((code, message)) = r {
                            if code != error_code::TOPIC_ALREADY_EXISTS {
                                tracing::info!(topic = %name, "auto-creation refused: {message}");
                                creation_errors.push((name, code));
                            }
                        }
                    }
                }
                Err(e) => tracing::error!("auto-creating topics failed: {e}"),
            }
            image = broker.image();
        }
    }
    let names: Vec<String> = match requested {
        Some(n) => n,
        None => image
            .topics
            .keys()
            .filter(|n| n.as_str() != METADATA_TOPIC)
            .cloned()
            .collect(),
    };
    let node = broker.node_id();
    let mut topics = Vec::with_capacity(names.len());
    for name in names {
        let Some(t) = image.topic(&name) else {
            let code = creation_errors
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, c)| *c)
                .unwrap_or(error_code::UNKNOWN_TOPIC_OR_PARTITION);
            topics.push(MetadataResponseTopic {
                error_code: code,
                name: Some(name),
                ..Default::default()
            });
            continue;
        };
        let partitions = t
            .partitions
            .iter()
            .map(|(&p, part)| MetadataResponsePartition {
                error_code: error_code::NONE,
                partition_index: p,
                leader_id: part.leader,
                leader_epoch: part.leader_epoch,
                replica_nodes: part.replicas.clone(),
                isr_nodes: part.isr.clone(),
                offline_replicas: Vec::new(),
            })
            .collect();
        let is_internal = name == crate::group::offsets_topic::OFFSETS_TOPIC;
        topics.push(MetadataResponseTopic {
            error_code: error_code::NONE,
            name: Some(name),
            topic_id: t.id,
            is_internal,
            partitions,
            topic_authorized_operations: i32::MIN,
        });
    }
    let (host, port) = broker.config.advertised_host_port();
    MetadataResponse {
        throttle_time_ms: 0,
        brokers: vec![MetadataResponseBroker {
            node_id: node,
            host,
            port,
            rack: None,
        }],
        cluster_id: Some(broker.cluster_id.to_string()),
        controller_id: node,
        topics,
        cluster_authorized_operations: i32::MIN,
    }
}
