//! The single-node controller's applying half: the only writer of the
//! metadata log, on shard 0. The decisions (what records a request becomes,
//! or why it is refused) are the pure functions of `crate::controller`;
//! this module serialises requests, appends their records to the metadata
//! log, and publishes the new image to every shard, which opens or deletes
//! the partitions it owns. A change is answered only after every shard has
//! applied it.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use glommio::sync::RwLock;

use crate::controller::{
    plan_alter_broker_configs, plan_alter_topic_configs, plan_create_partitions,
    plan_create_topics, plan_delete_topics, Context,
};
pub use crate::controller::{CreatedTopic, NewTopic, TopicError};
use crate::error::LogResult;
use crate::group::coordinator::GroupCoordinator;
use crate::log::topic_partition::TopicPartition;
use crate::metadata::image::MetadataImage;
use crate::metadata::records::MetadataRecord;
use crate::metadata::store::MetadataStore;
use crate::metadata::OFFSETS_TOPIC;
use crate::metadata::{dynamic_broker_config, topic_config};
use crate::node::ids::random_uuid;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::shard::shard::{now_ms, Shard};

/// The shard that runs the controller.
pub const CONTROLLER_SHARD: usize = 0;
/// Producer ids are reserved in the metadata log in blocks of this size.
pub const PRODUCER_ID_BLOCK: i64 = 1000;

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
    let mut new_topic_id = random_uuid;
    let mut ctx = context(&broker, &mut new_topic_id);
    let plan = plan_create_topics(&image, &mut ctx, topics);
    if !validate_only {
        append_and_publish(shard, store, &plan.records).await?;
    }
    Ok(plan.results)
}

/// The decisions' view of this broker.
fn context<'a>(broker: &BrokerState, new_topic_id: &'a mut dyn FnMut() -> [u8; 16]) -> Context<'a> {
    Context {
        node_id: broker.node_id(),
        num_partitions: broker.config.num_partitions,
        default_replication_factor: broker.config.default_replication_factor,
        new_topic_id,
        descriptor_budget: &check_descriptor_budget,
    }
}

/// Appends `records` (if any) and publishes the image they make.
async fn append_and_publish(
    shard: &Rc<Shard>,
    store: &mut MetadataStore,
    records: &[MetadataRecord],
) -> LogResult<()> {
    if records.is_empty() {
        return Ok(());
    }
    let image = store.append(records, now_ms()).await?;
    publish(shard, image).await
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
            let plan = plan_delete_topics(&store.image(), names);
            append_and_publish(&shard, store, &plan.records).await?;
            Ok(plan.results)
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
            let mut new_topic_id = random_uuid;
            let ctx = context(&broker, &mut new_topic_id);
            let plan = plan_create_partitions(&store.image(), &ctx, requests);
            if !validate_only {
                append_and_publish(&shard, store, &plan.records).await?;
            }
            Ok(plan.results)
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
            let records =
                match plan_alter_topic_configs(&store.image(), &topic, changes, incremental) {
                    Ok(records) => records,
                    Err(e) => return Ok(Err(e)),
                };
            if !validate_only {
                append_and_publish(&shard, store, &records).await?;
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
            let records = match plan_alter_broker_configs(&store.image(), changes, incremental) {
                Ok(records) => records,
                Err(e) => return Ok(Err(e)),
            };
            if !validate_only {
                append_and_publish(&shard, store, &records).await?;
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
