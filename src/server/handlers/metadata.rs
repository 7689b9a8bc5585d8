//! Metadata: served from the shard's metadata image; auto-creates topics
//! when the request and `auto.create.topics.enable` allow it.

use std::collections::HashSet;
use std::rc::Rc;

use crate::acl::{matrix, ResourceType};
use crate::metadata::METADATA_TOPIC;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::metadata::*;
use crate::server::controller::{self, NewTopic};
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: MetadataRequest,
    listener: &str,
    access: &Access<'_>,
) -> MetadataResponse {
    let broker = BrokerState::of(shard);
    let mut image = broker.image();
    // Names asked for; `None` means every topic.
    // Topics asked for by id (v12+, KIP-516: a KIP-848 consumer resolving
    // the ids of a regex's assignment) are looked up by name; an unknown
    // id answers UNKNOWN_TOPIC_ID.
    let mut by_id: HashSet<String> = HashSet::new();
    let mut unknown_ids: Vec<[u8; 16]> = Vec::new();
    let requested: Option<Vec<String>> = req.topics.as_ref().map(|ts| {
        let mut names = Vec::with_capacity(ts.len());
        for t in ts {
            // Kafka's client sends an empty name (or none) with the id.
            let named = t.name.as_deref().filter(|n| !n.is_empty());
            match (named, image.topic_names_by_id.get(&t.topic_id)) {
                (Some(name), _) => names.push(name.to_string()),
                (None, _) if t.topic_id == [0; 16] => names.push(String::new()),
                (None, Some(name)) => {
                    by_id.insert(name.clone());
                    names.push(name.clone());
                }
                (None, None) => unknown_ids.push(t.topic_id),
            }
        }
        names
    });
    let mut creation_errors = Vec::new();
    // Kafka's rules: a named topic without DESCRIBE is refused whether it
    // exists or not (so that its existence does not leak); creating one
    // needs CREATE on the cluster or on the topic.
    let mut refused: HashSet<String> = match &requested {
        Some(names) => access.denied(
            &image,
            matrix::METADATA_TOPIC,
            names.iter().map(String::as_str),
        ),
        None => HashSet::new(),
    };
    if let Some(names) = &requested {
        let mut missing: Vec<String> = names
            .iter()
            .filter(|n| image.topic(n).is_none() && !refused.contains(*n) && !by_id.contains(*n))
            .cloned()
            .collect();
        let auto_create = req.allow_auto_topic_creation && broker.config.auto_create_topics_enable;
        if auto_create
            && !missing.is_empty()
            && !access.allows_cluster(&image, matrix::METADATA_AUTO_CREATE_CLUSTER)
        {
            let may_not_create = access.denied(
                &image,
                matrix::METADATA_AUTO_CREATE_TOPIC,
                missing.iter().map(String::as_str),
            );
            missing.retain(|n| !may_not_create.contains(n));
            refused.extend(may_not_create);
        }
        if !missing.is_empty() && auto_create {
            let new: Vec<NewTopic> = missing
                .iter()
                .map(|n| NewTopic {
                    name: n.clone(),
                    num_partitions: -1,
                    replication_factor: -1,
                    configs: Vec::new(),
                    assignments: Vec::new(),
                })
                .collect();
            match controller::create_topics(shard, access.caller(), new, false).await {
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
        // Every topic: those this principal may not describe are left out.
        None => image
            .topics
            .keys()
            .filter(|n| n.as_str() != METADATA_TOPIC)
            .filter(|n| access.allows(&image, matrix::METADATA_TOPIC, n))
            .cloned()
            .collect(),
    };
    let node = broker.node_id();
    let mut topics = Vec::with_capacity(names.len());
    for name in names {
        if !refused.is_empty() && refused.contains(&name) {
            topics.push(MetadataResponseTopic {
                error_code: error_code::TOPIC_AUTHORIZATION_FAILED,
                is_internal: crate::metadata::is_internal_topic(&name),
                // Asked for by id: the refusal does not tell its name.
                topic_id: if by_id.contains(&name) {
                    image.topic(&name).map_or([0; 16], |t| t.id)
                } else {
                    [0; 16]
                },
                name: (!by_id.contains(&name)).then_some(name),
                ..Default::default()
            });
            continue;
        }
        let Some(t) = image.topic(&name) else {
            let code = creation_errors
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, c)| *c)
                .unwrap_or(error_code::UNKNOWN_TOPIC_OR_PARTITION);
            let topic_authorized_operations = if req.include_topic_authorized_operations {
                access.authorized_operations(&image, ResourceType::Topic, &name)
            } else {
                AUTHORIZED_OPERATIONS_OMITTED
            };
            topics.push(MetadataResponseTopic {
                error_code: code,
                name: Some(name),
                topic_authorized_operations,
                ..Default::default()
            });
            continue;
        };
        let partitions = t
            .partitions
            .iter()
            .map(|(&p, part)| {
                // A leader that is not a live broker cannot be reached:
                // Kafka shows it as -1 with LEADER_NOT_AVAILABLE.
                let leader_live = image.is_live_broker(part.leader);
                MetadataResponsePartition {
                    error_code: if leader_live {
                        error_code::NONE
                    } else {
                        error_code::LEADER_NOT_AVAILABLE
                    },
                    partition_index: p,
                    leader_id: if leader_live { part.leader } else { -1 },
                    leader_epoch: part.leader_epoch,
                    replica_nodes: part.replicas.clone(),
                    isr_nodes: part.isr.clone(),
                    offline_replicas: part
                        .replicas
                        .iter()
                        .copied()
                        .filter(|r| !image.is_live_broker(*r))
                        .collect(),
                }
            })
            .collect();
        let is_internal = crate::metadata::is_internal_topic(&name);
        let topic_authorized_operations = if req.include_topic_authorized_operations {
            access.authorized_operations(&image, ResourceType::Topic, &name)
        } else {
            AUTHORIZED_OPERATIONS_OMITTED
        };
        topics.push(MetadataResponseTopic {
            error_code: error_code::NONE,
            name: Some(name),
            topic_id: t.id,
            is_internal,
            partitions,
            topic_authorized_operations,
        });
    }
    for topic_id in unknown_ids {
        topics.push(MetadataResponseTopic {
            error_code: error_code::UNKNOWN_TOPIC_ID,
            name: None,
            topic_id,
            ..Default::default()
        });
    }
    MetadataResponse {
        throttle_time_ms: 0,
        brokers: live_brokers(&broker, &image, listener)
            .into_iter()
            .map(|b| MetadataResponseBroker {
                node_id: b.id,
                host: b.host,
                port: b.port,
                rack: b.rack,
            })
            .collect(),
        cluster_id: Some(broker.cluster_id().to_string()),
        controller_id: node,
        topics,
        cluster_authorized_operations: if req.include_cluster_authorized_operations {
            access.cluster_authorized_operations(&image)
        } else {
            AUTHORIZED_OPERATIONS_OMITTED
        },
    }
}

/// A broker clients may connect to.
pub struct LiveBroker {
    pub id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
}

/// The registered, unfenced brokers with their endpoint on `listener`
/// (a broker without that listener is left out, as Kafka leaves it out);
/// this broker alone while its own registration is not in its image yet.
pub fn live_brokers(
    broker: &BrokerState,
    image: &crate::metadata::image::MetadataImage,
    listener: &str,
) -> Vec<LiveBroker> {
    let mut out: Vec<LiveBroker> = image
        .brokers
        .values()
        .filter(|b| !b.fenced)
        .filter_map(|b| {
            let (host, port) = b.endpoint(listener)?;
            Some(LiveBroker {
                id: b.id,
                host: host.to_string(),
                port,
                rack: b.rack.clone(),
            })
        })
        .collect();
    if out.is_empty() {
        if let Some(own) = broker.config.listeners.get(listener) {
            out.push(LiveBroker {
                id: broker.node_id(),
                host: own.advertised_host.clone(),
                port: i32::from(own.advertised_port),
                rack: broker.config.cluster.rack.clone(),
            });
        }
    }
    out
}
