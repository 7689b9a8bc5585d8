//! The single-node controller: the only writer of the metadata log, on
//! shard 0. It validates topic and config changes, appends them as metadata
//! records, and publishes the new image to every shard, which opens or
//! deletes the partitions it owns. A change is answered only after every
//! shard has applied it.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;

use glommio::sync::RwLock;

use crate::error::LogResult;
use crate::group::coordinator::GroupCoordinator;
use crate::group::offsets_topic::OFFSETS_TOPIC;
use crate::log::topic_partition::TopicPartition;
use crate::metadata::dynamic_broker_config;
use crate::metadata::image::MetadataImage;
use crate::metadata::records::{MetadataRecord, RESOURCE_BROKER, RESOURCE_TOPIC};
use crate::metadata::store::MetadataStore;
use crate::metadata::topic_config;
use crate::protocol::error_code;
use crate::server::cluster_id::random_uuid;
use crate::server::state::BrokerState;
use crate::shard::shard::{now_ms, Shard};

/// The shard that runs the controller.
pub const CONTROLLER_SHARD: usize = 0;
/// Kafka's limit on topic name length.
pub const TOPIC_NAME_MAX_LEN: usize = 249;
/// Producer ids are reserved in the metadata log in blocks of this size.
pub const PRODUCER_ID_BLOCK: i64 = 1000;
/// Upper bound on partitions per topic in one request.
pub const PARTITIONS_PER_TOPIC_MAX: i32 = 100_000;

/// Shard-0 state: the metadata log, serialised by a lock so that changes
/// are appended and published one at a time.
pub struct Controller {
    store: RwLock<Option<MetadataStore>>,
    next_producer_id: Cell<i64>,
    producer_id_limit: Cell<i64>,
}

impl Controller {
    pub fn new(store: MetadataStore) -> Self {
        let next = store.image().next_producer_id;
        Controller {
            store: RwLock::new(Some(store)),
            next_producer_id: Cell::new(next),
            producer_id_limit: Cell::new(next),
        }
    }

    /// Closes the metadata log for a clean shutdown.
    pub async fn close(&self, shard: &Shard) -> LogResult<()> {
        let Ok(mut guard) = self.store.write().await else {
            return Ok(());
        };
        if let Some(store) = guard.take() {
            let offsets = store.close().await?;
            shard.add_closed_log_offsets(offsets);
        }
        Ok(())
    }
}

/// A topic to create, as requested.
#[derive(Debug, Clone)]
pub struct NewTopic {
    pub name: String,
    /// -1: `num.partitions`.
    pub num_partitions: i32,
    /// -1: `default.replication.factor`.
    pub replication_factor: i16,
    pub configs: Vec<(String, Option<String>)>,
}

/// What creating one topic produced.
#[derive(Debug, Clone)]
pub struct CreatedTopic {
    pub topic_id: [u8; 16],
    pub num_partitions: i32,
    pub replication_factor: i16,
}

/// A failure with Kafka's error code and a message that says what to do.
pub type TopicError = (i16, String);

/// Kafka's legal topic names: ASCII letters, digits, '.', '_' and '-'.
pub fn validate_topic_name(name: &str) -> Result<(), TopicError> {
    if name.is_empty() || name == "." || name == ".." {
        return Err((
            error_code::INVALID_TOPIC_EXCEPTION,
            format!("topic name {name:?} is not allowed"),
        ));
    }
    if name.len() > TOPIC_NAME_MAX_LEN {
        return Err((
            error_code::INVALID_TOPIC_EXCEPTION,
            format!(
                "topic name is {} characters; the limit is {TOPIC_NAME_MAX_LEN}",
                name.len()
            ),
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return Err((
            error_code::INVALID_TOPIC_EXCEPTION,
            format!("topic name {name:?} may only contain ASCII letters, digits, '.', '_' and '-'"),
        ));
    }
    Ok(())
}

fn controller(shard: &Shard) -> Rc<Controller> {
    shard
        .extension::<Controller>()
        .expect("the controller runs on shard 0")
}

/// Descriptors a partition holds once open: its active segment's O_DIRECT
/// `.log` (the indexes are mapped and closed; reads use the same file).
const DESCRIPTORS_PER_PARTITION: u64 = 1;
/// Descriptors kept free for connections, segment rolls and the broker.
const DESCRIPTOR_HEADROOM: u64 = 512;

/// Refuses partitions whose descriptors would not fit under the process's
/// open-files limit. Past the limit, opening them fails halfway, after the
/// metadata already names them: the topic would be half there and the data
/// directory would not start again under the same limit.
fn check_descriptor_budget(new_partitions: u64) -> Result<(), TopicError> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct passed.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0
        || lim.rlim_cur == libc::RLIM_INFINITY
    {
        return Ok(());
    }
    let limit = lim.rlim_cur;
    let in_use = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    let needed = new_partitions.saturating_mul(DESCRIPTORS_PER_PARTITION);
    let free = limit.saturating_sub(in_use + DESCRIPTOR_HEADROOM);
    if needed > free {
        return Err((
            error_code::POLICY_VIOLATION,
            format!(
                "{new_partitions} new partitions need about {needed} open files, but only {free} of the broker's limit of {limit} are free ({in_use} in use, {DESCRIPTOR_HEADROOM} kept for connections); raise the hard open-files limit (ulimit -n, systemd LimitNOFILE) and restart the broker, or create fewer partitions"
            ),
        ));
    }
    Ok(())
}

/// Creates topics; callable from any shard.
pub async fn create_topics(
    shard: &Rc<Shard>,
    topics: Vec<NewTopic>,
    validate_only: bool,
) -> LogResult<Vec<(String, Result<CreatedTopic, TopicError>)>> {
    shard
        .submit_to(CONTROLLER_SHARD, move |shard| async move {
            create_topics_local(&shard, topics, validate_only).await
        })
        .await?
}

async fn create_topics_local(
    shard: &Rc<Shard>,
    topics: Vec<NewTopic>,
    validate_only: bool,
) -> LogResult<Vec<(String, Result<CreatedTopic, TopicError>)>> {
    let broker = BrokerState::of(shard);
    let controller = controller(shard);
    let mut guard = controller.store.write().await.map_err(|_| stopped())?;
    let Some(store) = guard.as_mut() else {
        return Err(stopped());
    };
    let image = store.image();
    let node = broker.node_id();
    let mut records = Vec::new();
    let mut results = Vec::new();
    let mut seen = BTreeSet::new();
    // Partitions this request adds so far, for the descriptor budget.
    let mut new_partitions = 0u64;
    for t in topics {
        let r = (|| {
            validate_topic_name(&t.name)?;
            if image.topic(&t.name).is_some() || !seen.insert(t.name.clone()) {
                return Err((
                    error_code::TOPIC_ALREADY_EXISTS,
                    format!("topic {:?} already exists", t.name),
                ));
            }
            let partitions = if t.num_partitions == -1 {
                broker.config.num_partitions
            } else {
                t.num_partitions
            };
            if !(1..=PARTITIONS_PER_TOPIC_MAX).contains(&partitions) {
                return Err((
                    error_code::INVALID_PARTITIONS,
                    format!("number of partitions must be between 1 and {PARTITIONS_PER_TOPIC_MAX}, got {partitions}"),
                ));
            }
            let rf = if t.replication_factor == -1 {
                broker.config.default_replication_factor
            } else {
                t.replication_factor
            };
            check_descriptor_budget(new_partitions + partitions as u64)?;
            if rf != 1 {
                return Err((
                    error_code::INVALID_REPLICATION_FACTOR,
                    format!("replication factor {rf} is larger than the 1 available broker; use 1 on a single-node pinlog"),
                ));
            }
            for (name, value) in &t.configs {
                if let Some(v) = value {
                    topic_config::validate(name, v).map_err(|m| (error_code::INVALID_CONFIG, m))?;
                }
            }
            Ok((partitions, rf))
        })();
        match r {
            Ok((partitions, rf)) => {
                new_partitions += partitions as u64;
                let topic_id = random_uuid();
                records.push(MetadataRecord::Topic {
                    name: t.name.clone(),
                    topic_id,
                });
                for p in 0..partitions {
                    records.push(MetadataRecord::Partition {
                        topic_id,
                        partition: p,
                        replicas: vec![node],
                        isr: vec![node],
                        leader: node,
                        leader_epoch: 0,
                        partition_epoch: 0,
                    });
                }
                for (name, value) in t.configs {
                    if value.is_some() {
                        records.push(MetadataRecord::Config {
                            resource_type: RESOURCE_TOPIC,
                            resource_name: t.name.clone(),
                            name,
                            value,
                        });
                    }
                }
                results.push((
                    t.name,
                    Ok(CreatedTopic {
                        topic_id,
                        num_partitions: partitions,
                        replication_factor: rf,
                    }),
                ));
            }
            Err(e) => results.push((t.name, Err(e))),
        }
    }
    if !validate_only && !records.is_empty() {
        let image = store.append(&records, now_ms()).await?;
        publish(shard, image).await?;
    }
    Ok(results)
}

/// Deletes topics by name; callable from any shard.
pub async fn delete_topics(
    shard: &Rc<Shard>,
    names: Vec<String>,
) -> LogResult<Vec<(String, Result<[u8; 16], TopicError>)>> {
    shard
        .submit_to(CONTROLLER_SHARD, move |shard| async move {
            let controller = controller(&shard);
            let mut guard = controller.store.write().await.map_err(|_| stopped())?;
            let Some(store) = guard.as_mut() else {
                return Err(stopped());
            };
            let image = store.image();
            let mut records = Vec::new();
            let mut results = Vec::new();
            for name in names {
                match image.topic(&name) {
                    // The group coordinators hold state loaded from it;
                    // Kafka's tools refuse to delete internal topics too.
                    Some(_) if name == OFFSETS_TOPIC => results.push((
                        name.clone(),
                        Err((
                            error_code::INVALID_REQUEST,
                            format!("{name} is internal and cannot be deleted; delete consumer groups with DeleteGroups instead"),
                        )),
                    )),
                    Some(t) => {
                        records.push(MetadataRecord::RemoveTopic { topic_id: t.id });
                        results.push((name, Ok(t.id)));
                    }
                    None => results.push((
                        name.clone(),
                        Err((
                            error_code::UNKNOWN_TOPIC_OR_PARTITION,
                            format!("topic {name:?} does not exist"),
                        )),
                    )),
                }
            }
            if !records.is_empty() {
                let image = store.append(&records, now_ms()).await?;
                publish(&shard, image).await?;
            }
            Ok(results)
        })
        .await?
}

/// Grows topics to `count` partitions; callable from any shard.
pub async fn create_partitions(
    shard: &Rc<Shard>,
    requests: Vec<(String, i32)>,
    validate_only: bool,
) -> LogResult<Vec<(String, Result<(), TopicError>)>> {
    shard
        .submit_to(CONTROLLER_SHARD, move |shard| async move {
            let broker = BrokerState::of(&shard);
            let controller = controller(&shard);
            let mut guard = controller.store.write().await.map_err(|_| stopped())?;
            let Some(store) = guard.as_mut() else {
                return Err(stopped());
            };
            let image = store.image();
            let mut records = Vec::new();
            let mut results = Vec::new();
            let mut added = 0u64;
            for (name, count) in requests {
                let Some(t) = image.topic(&name) else {
                    results.push((name.clone(), Err((error_code::UNKNOWN_TOPIC_OR_PARTITION, format!("topic {name:?} does not exist")))));
                    continue;
                };
                let current = t.partitions.len() as i32;
                if count <= current || count > PARTITIONS_PER_TOPIC_MAX {
                    results.push((
                        name,
                        Err((
                            error_code::INVALID_PARTITIONS,
                            format!("topic has {current} partitions; the new count must be larger (and at most {PARTITIONS_PER_TOPIC_MAX}), got {count}"),
                        )),
                    ));
                    continue;
                }
                if let Err(e) = check_descriptor_budget(added + (count - current) as u64) {
                    results.push((name, Err(e)));
                    continue;
                }
                added += (count - current) as u64;
                for p in current..count {
                    records.push(MetadataRecord::Partition {
                        topic_id: t.id,
                        partition: p,
                        replicas: vec![broker.node_id()],
                        isr: vec![broker.node_id()],
                        leader: broker.node_id(),
                        leader_epoch: 0,
                        partition_epoch: 0,
                    });
                }
                results.push((name, Ok(())));
            }
            if !validate_only && !records.is_empty() {
                let image = store.append(&records, now_ms()).await?;
                publish(&shard, image).await?;
            }
            Ok(results)
        })
        .await?
}

/// Sets (`Some`) or removes (`None`) topic settings; `incremental` keeps the
/// settings not named, otherwise they are reset (AlterConfigs semantics).
pub async fn alter_topic_configs(
    shard: &Rc<Shard>,
    topic: String,
    changes: Vec<(String, Option<String>)>,
    incremental: bool,
    validate_only: bool,
) -> LogResult<Result<(), TopicError>> {
    shard
        .submit_to(CONTROLLER_SHARD, move |shard| async move {
            let controller = controller(&shard);
            let mut guard = controller.store.write().await.map_err(|_| stopped())?;
            let Some(store) = guard.as_mut() else {
                return Err(stopped());
            };
            let image = store.image();
            let Some(t) = image.topic(&topic) else {
                return Ok(Err((
                    error_code::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("topic {topic:?} does not exist"),
                )));
            };
            for (name, value) in &changes {
                let check = match value {
                    Some(v) => topic_config::validate(name, v),
                    None => topic_config::validate(name, "0").or_else(|e| {
                        if e.contains("unknown") {
                            Err(e)
                        } else {
                            Ok(())
                        }
                    }),
                };
                if let Err(m) = check {
                    return Ok(Err((error_code::INVALID_CONFIG, m)));
                }
            }
            let mut target: BTreeMap<String, Option<String>> = BTreeMap::new();
            if !incremental {
                for name in t.configs.keys() {
                    target.insert(name.clone(), None);
                }
            }
            for (name, value) in changes {
                target.insert(name, value);
            }
            let records: Vec<MetadataRecord> = target
                .into_iter()
                .map(|(name, value)| MetadataRecord::Config {
                    resource_type: RESOURCE_TOPIC,
                    resource_name: topic.clone(),
                    name,
                    value,
                })
                .collect();
            if !validate_only && !records.is_empty() {
                let image = store.append(&records, now_ms()).await?;
                publish(&shard, image).await?;
            }
            Ok(Ok(()))
        })
        .await?
}

/// Sets (`Some`) or removes (`None`) dynamic broker defaults (broker
/// names, `log.*`); `incremental` keeps the ones not named, otherwise they
/// are reset (AlterConfigs semantics). They apply to every topic at once.
pub async fn alter_broker_configs(
    shard: &Rc<Shard>,
    changes: Vec<(String, Option<String>)>,
    incremental: bool,
    validate_only: bool,
) -> LogResult<Result<(), TopicError>> {
    shard
        .submit_to(CONTROLLER_SHARD, move |shard| async move {
            let controller = controller(&shard);
            let mut guard = controller.store.write().await.map_err(|_| stopped())?;
            let Some(store) = guard.as_mut() else {
                return Err(stopped());
            };
            let image = store.image();
            for (name, value) in &changes {
                let Some(topic_name) = dynamic_broker_config::topic_name(name) else {
                    return Ok(Err((
                        error_code::INVALID_CONFIG,
                        format!(
                            "broker setting {name:?} cannot change at runtime; set it in the broker's config file and restart. Settings that can: {}",
                            dynamic_broker_config::dynamic_names()
                        ),
                    )));
                };
                if let Some(v) = value {
                    if let Err(m) = topic_config::validate(topic_name, v) {
                        return Ok(Err((
                            error_code::INVALID_CONFIG,
                            format!("{name}: {m}"),
                        )));
                    }
                }
            }
            let mut target: BTreeMap<String, Option<String>> = BTreeMap::new();
            if !incremental {
                for name in image.broker_configs.keys() {
                    target.insert(name.clone(), None);
                }
            }
            for (name, value) in changes {
                target.insert(name, value);
            }
            let records: Vec<MetadataRecord> = target
                .into_iter()
                .map(|(name, value)| MetadataRecord::Config {
                    resource_type: RESOURCE_BROKER,
                    resource_name: String::new(),
                    name,
                    value,
                })
                .collect();
            if !validate_only && !records.is_empty() {
                let image = store.append(&records, now_ms()).await?;
                publish(&shard, image).await?;
            }
            Ok(Ok(()))
        })
        .await?
}

/// Hands out a new producer id, reserving blocks in the metadata log so ids
/// are never reused after a restart.
pub async fn allocate_producer_id(shard: &Rc<Shard>) -> LogResult<i64> {
    shard
        .submit_to(CONTROLLER_SHARD, |shard| async move {
            let controller = controller(&shard);
            let mut guard = controller.store.write().await.map_err(|_| stopped())?;
            if controller.next_producer_id.get() >= controller.producer_id_limit.get() {
                let Some(store) = guard.as_mut() else {
                    return Err(stopped());
                };
                let limit = controller.producer_id_limit.get() + PRODUCER_ID_BLOCK;
                let image = store
                    .append(
                        &[MetadataRecord::ProducerIds {
                            next_producer_id: limit,
                        }],
                        now_ms(),
                    )
                    .await?;
                controller.producer_id_limit.set(limit);
                publish(&shard, image).await?;
            }
            let id = controller.next_producer_id.get();
            controller.next_producer_id.set(id + 1);
            Ok(id)
        })
        .await?
}

fn stopped() -> crate::error::LogError {
    crate::error::LogError::Offline {
        partition: crate::metadata::store::METADATA_TOPIC.to_string(),
        reason: "the controller has shut down".to_string(),
    }
}

/// Sends `image` to every shard and waits until each has applied it.
pub async fn publish(shard: &Rc<Shard>, image: Arc<MetadataImage>) -> LogResult<()> {
    for s in 0..shard.shard_count() {
        let image = image.clone();
        shard
            .submit_to(
                s,
                move |shard| async move { apply_image(&shard, image).await },
            )
            .await??;
    }
    Ok(())
}

/// Brings one shard in line with `image`: opens partitions it owns that it
/// does not have yet (as leader, recording the epoch start), deletes those
/// whose topic is gone, and applies changed topic settings.
pub async fn apply_image(shard: &Rc<Shard>, image: Arc<MetadataImage>) -> LogResult<()> {
    let broker = BrokerState::of(shard);
    if image.offset < broker.image().offset {
        return Ok(());
    }
    broker.set_image(image.clone());
    for topic in image.topics.values() {
        let config = topic_config::log_config(
            &broker.config,
            &dynamic_broker_config::effective_overrides(&image, &topic.configs),
        );
        for (&p, part) in &topic.partitions {
            let tp = TopicPartition::new(topic.name.clone(), p);
            if shard.owner(&tp) != shard.id() {
                continue;
            }
            if shard.local_log(&tp).is_none() {
                shard
                    .open_local_partition(tp.clone(), config.clone())
                    .await?;
            }
            let Some(log) = shard.local_log(&tp) else {
                continue;
            };
            let mut log = log.write().await.map_err(|_| stopped())?;
            if log.config() != &config {
                log.set_config(config.clone());
            }
            if part.leader == broker.node_id() {
                // Kafka's makeLeader: the new epoch starts at the LEO (a no-op
                // when the cache already has this epoch).
                let leo = log.log_end_offset();
                if log.epoch_cache().latest_epoch() != Some(part.leader_epoch) {
                    log.assign_epoch_start_offset(part.leader_epoch, leo)
                        .await?;
                }
                // The only replica's HW is its LEO.
                if part.isr == [broker.node_id()] {
                    log.set_high_watermark(leo);
                }
                drop(log);
                if tp.topic == OFFSETS_TOPIC {
                    GroupCoordinator::of(shard).on_became_leader(shard, p);
                }
            }
        }
    }
    for tp in shard.local_partitions() {
        if image.partition(&tp.topic, tp.partition).is_none() {
            shard.delete_local_partition(&tp).await?;
        }
    }
    Ok(())
}
