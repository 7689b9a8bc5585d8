//! The controller's applying half, on shard 0 of every node. The
//! decisions (what records a request becomes, or why it is refused) are
//! the pure functions of `crate::controller`; this module runs them on the
//! active controller, commits their records through the metadata quorum
//! (`crate::quorum`), and publishes each committed image to every shard,
//! which opens or deletes the partitions it owns.
//!
//! Any node accepts admin requests: a node that is not the active
//! controller forwards them to it over the controller listener and answers
//! with its result once its own image has caught up with it, so a client
//! sees its change on the broker it asked.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

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
use crate::metadata::OFFSETS_TOPIC;
use crate::metadata::{dynamic_broker_config, topic_config};
use crate::node::ids::random_uuid;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::quorum::{Quorum, QuorumError, QuorumStatus};
use crate::shard::shard::Shard;

/// The shard that runs the controller and the quorum.
pub const CONTROLLER_SHARD: usize = 0;
/// Producer ids are reserved in the metadata log in blocks of this size.
pub const PRODUCER_ID_BLOCK: i64 = 1000;
/// How often a node that forwarded a change looks whether its own image
/// has caught up with it.
const CATCH_UP_POLL: Duration = Duration::from_millis(2);

/// Why the controller could not handle a request: a Kafka error code and
/// a message for the client.
#[derive(Debug, Clone, thiserror::Error, Serialize, Deserialize)]
#[error("{message}")]
pub struct ControllerError {
    pub code: i16,
    pub message: String,
}

impl From<crate::error::LogError> for ControllerError {
    fn from(e: crate::error::LogError) -> Self {
        ControllerError {
            code: error_code::KAFKA_STORAGE_ERROR,
            message: e.to_string(),
        }
    }
}

impl From<QuorumError> for ControllerError {
    fn from(e: QuorumError) -> Self {
        let code = match e {
            QuorumError::NotLeader { .. } | QuorumError::NoLeader => error_code::NOT_CONTROLLER,
            QuorumError::Timeout(_) => error_code::REQUEST_TIMED_OUT,
            QuorumError::Stopped(_) => error_code::NOT_CONTROLLER,
        };
        ControllerError {
            code,
            message: e.to_string(),
        }
    }
}

pub type ControllerResult<T> = Result<T, ControllerError>;

/// An admin request, as the active controller takes it.
#[derive(Debug, Serialize, Deserialize)]
enum AdminRequest {
    CreateTopics {
        topics: Vec<NewTopic>,
        validate_only: bool,
    },
    DeleteTopics {
        names: Vec<String>,
    },
    CreatePartitions {
        requests: Vec<(String, i32)>,
        validate_only: bool,
    },
    AlterTopicConfigs {
        topic: String,
        changes: Vec<(String, Option<String>)>,
        incremental: bool,
        validate_only: bool,
    },
    AlterBrokerConfigs {
        changes: Vec<(String, Option<String>)>,
        incremental: bool,
        validate_only: bool,
    },
    AllocateProducerId,
    DescribeQuorum,
}

#[derive(Debug, Serialize, Deserialize)]
enum AdminAnswer {
    CreateTopics(Vec<(String, Result<CreatedTopic, TopicError>)>),
    DeleteTopics(Vec<(String, Result<[u8; 16], TopicError>)>),
    CreatePartitions(Vec<(String, Result<(), TopicError>)>),
    Altered(Result<(), TopicError>),
    ProducerId(i64),
    Quorum(QuorumStatus),
}

/// What the active controller answers, with the offset of the entry that
/// committed the change (-1 when nothing was written).
#[derive(Debug, Serialize, Deserialize)]
struct AdminResponse {
    result: ControllerResult<AdminAnswer>,
    offset: i64,
}

/// Shard-0 state: the quorum, and the lock that makes the active
/// controller decide one request at a time against the latest image.
pub struct Controller {
    quorum: Rc<Quorum>,
    decisions: glommio::sync::Semaphore,
    next_producer_id: Cell<i64>,
    producer_id_limit: Cell<i64>,
    /// The leader epoch whose controller reserved the current id block; a
    /// new active controller starts after the last reserved block.
    producer_block_epoch: Cell<i32>,
}

impl Controller {
    pub fn new(quorum: Rc<Quorum>) -> Self {
        Controller {
            quorum,
            decisions: glommio::sync::Semaphore::new(1),
            next_producer_id: Cell::new(0),
            producer_id_limit: Cell::new(0),
            producer_block_epoch: Cell::new(-1),
        }
    }

    pub fn quorum(&self) -> &Rc<Quorum> {
        &self.quorum
    }

    /// Stops the quorum and closes the metadata log for a clean shutdown.
    pub async fn close(&self, shard: &Shard) -> Result<(), String> {
        if let Some(offsets) = self.quorum.shutdown().await? {
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

/// Runs `request` on the active controller, from any shard of any node.
async fn call(shard: &Rc<Shard>, request: AdminRequest) -> ControllerResult<AdminAnswer> {
    shard
        .submit_to(CONTROLLER_SHARD, move |shard| async move {
            // Boxed: the decision's future is deep, and every handler that
            // awaits it would otherwise carry its whole layout.
            Box::pin(call_on_controller_shard(&shard, request)).await
        })
        .await?
}

async fn call_on_controller_shard(
    shard: &Rc<Shard>,
    request: AdminRequest,
) -> ControllerResult<AdminAnswer> {
    let controller = controller(shard);
    let quorum = controller.quorum.clone();
    if quorum.is_leader() {
        return decide(shard, request).await.result;
    }
    let bytes = postcard::to_stdvec(&request).map_err(|e| ControllerError {
        code: error_code::UNKNOWN_SERVER_ERROR,
        message: e.to_string(),
    })?;
    let answer = quorum.forward(bytes).await?;
    let response: AdminResponse = postcard::from_bytes(&answer).map_err(|e| ControllerError {
        code: error_code::UNKNOWN_SERVER_ERROR,
        message: format!("the active controller's answer does not decode: {e}"),
    })?;
    if response.offset >= 0 {
        wait_for_image(&quorum, response.offset).await;
    }
    response.result
}

/// Waits (bounded by the request timeout) until this node's image holds
/// the entry at `offset`.
async fn wait_for_image(quorum: &Quorum, offset: i64) {
    let deadline = Instant::now() + quorum.request_timeout();
    while quorum.image().offset < offset && Instant::now() < deadline {
        glommio::timer::sleep(CATCH_UP_POLL).await;
    }
}

/// The forwarded-request handler of the controller listener (shard 0).
pub fn forward_handler(shard: Rc<Shard>) -> crate::quorum::network::ForwardHandler {
    Rc::new(move |bytes: Vec<u8>| {
        let shard = shard.clone();
        Box::pin(async move {
            let response = match postcard::from_bytes::<AdminRequest>(&bytes) {
                Ok(request) => decide(&shard, request).await,
                Err(e) => AdminResponse {
                    result: Err(ControllerError {
                        code: error_code::INVALID_REQUEST,
                        message: format!("a forwarded request does not decode: {e}"),
                    }),
                    offset: -1,
                },
            };
            postcard::to_stdvec(&response).unwrap_or_default()
        })
    })
}

/// Decides `request` as the active controller: one at a time, on the image
/// of everything committed, committing the records it makes.
async fn decide(shard: &Rc<Shard>, request: AdminRequest) -> AdminResponse {
    let controller = controller(shard);
    let Ok(_permit) = controller.decisions.acquire_permit(1).await else {
        return AdminResponse {
            result: Err(QuorumError::Stopped("the controller has shut down".into()).into()),
            offset: -1,
        };
    };
    let mut offset = -1;
    let result = decide_locked(shard, &controller, request, &mut offset).await;
    AdminResponse { result, offset }
}

async fn decide_locked(
    shard: &Rc<Shard>,
    controller: &Controller,
    request: AdminRequest,
    offset: &mut i64,
) -> ControllerResult<AdminAnswer> {
    let quorum = &controller.quorum;
    if let AdminRequest::DescribeQuorum = request {
        return Ok(AdminAnswer::Quorum(quorum.status()));
    }
    quorum.read_barrier().await?;
    let image = quorum.image();
    let broker = BrokerState::of(shard);
    let mut new_topic_id = random_uuid;
    let commit = |records: Vec<MetadataRecord>| async move {
        if records.is_empty() {
            return Ok::<i64, ControllerError>(-1);
        }
        Ok(quorum.propose(&records).await?)
    };
    match request {
        AdminRequest::CreateTopics {
            topics,
            validate_only,
        } => {
            let mut ctx = context(&broker, &mut new_topic_id);
            let plan = plan_create_topics(&image, &mut ctx, topics);
            if !validate_only {
                *offset = commit(plan.records).await?;
            }
            Ok(AdminAnswer::CreateTopics(plan.results))
        }
        AdminRequest::DeleteTopics { names } => {
            let plan = plan_delete_topics(&image, names);
            *offset = commit(plan.records).await?;
            Ok(AdminAnswer::DeleteTopics(plan.results))
        }
        AdminRequest::CreatePartitions {
            requests,
            validate_only,
        } => {
            let ctx = context(&broker, &mut new_topic_id);
            let plan = plan_create_partitions(&image, &ctx, requests);
            if !validate_only {
                *offset = commit(plan.records).await?;
            }
            Ok(AdminAnswer::CreatePartitions(plan.results))
        }
        AdminRequest::AlterTopicConfigs {
            topic,
            changes,
            incremental,
            validate_only,
        } => match plan_alter_topic_configs(&image, &topic, changes, incremental) {
            Ok(records) => {
                if !validate_only {
                    *offset = commit(records).await?;
                }
                Ok(AdminAnswer::Altered(Ok(())))
            }
            Err(e) => Ok(AdminAnswer::Altered(Err(e))),
        },
        AdminRequest::AlterBrokerConfigs {
            changes,
            incremental,
            validate_only,
        } => match plan_alter_broker_configs(&image, changes, incremental) {
            Ok(records) => {
                if !validate_only {
                    *offset = commit(records).await?;
                }
                Ok(AdminAnswer::Altered(Ok(())))
            }
            Err(e) => Ok(AdminAnswer::Altered(Err(e))),
        },
        AdminRequest::AllocateProducerId => {
            let epoch = quorum.status().leader_epoch;
            if controller.producer_block_epoch.get() != epoch {
                // Ids before the last reserved limit may have been handed
                // out by an earlier controller: start after it.
                controller.next_producer_id.set(image.next_producer_id);
                controller.producer_id_limit.set(image.next_producer_id);
                controller.producer_block_epoch.set(epoch);
            }
            if controller.next_producer_id.get() >= controller.producer_id_limit.get() {
                let limit = controller.producer_id_limit.get() + PRODUCER_ID_BLOCK;
                commit(vec![MetadataRecord::ProducerIds {
                    next_producer_id: limit,
                }])
                .await?;
                controller.producer_id_limit.set(limit);
            }
            let id = controller.next_producer_id.get();
            controller.next_producer_id.set(id + 1);
            Ok(AdminAnswer::ProducerId(id))
        }
        AdminRequest::DescribeQuorum => unreachable!("answered above"),
    }
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

fn wrong_answer() -> ControllerError {
    ControllerError {
        code: error_code::UNKNOWN_SERVER_ERROR,
        message: "the active controller answered with the wrong kind of result".into(),
    }
}

/// Creates topics; callable from any shard.
pub async fn create_topics(
    shard: &Rc<Shard>,
    topics: Vec<NewTopic>,
    validate_only: bool,
) -> ControllerResult<Vec<(String, Result<CreatedTopic, TopicError>)>> {
    match call(
        shard,
        AdminRequest::CreateTopics {
            topics,
            validate_only,
        },
    )
    .await?
    {
        AdminAnswer::CreateTopics(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Deletes topics by name; callable from any shard.
pub async fn delete_topics(
    shard: &Rc<Shard>,
    names: Vec<String>,
) -> ControllerResult<Vec<(String, Result<[u8; 16], TopicError>)>> {
    match call(shard, AdminRequest::DeleteTopics { names }).await? {
        AdminAnswer::DeleteTopics(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Grows topics to `count` partitions; callable from any shard.
pub async fn create_partitions(
    shard: &Rc<Shard>,
    requests: Vec<(String, i32)>,
    validate_only: bool,
) -> ControllerResult<Vec<(String, Result<(), TopicError>)>> {
    match call(
        shard,
        AdminRequest::CreatePartitions {
            requests,
            validate_only,
        },
    )
    .await?
    {
        AdminAnswer::CreatePartitions(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Sets (`Some`) or removes (`None`) topic settings; `incremental` keeps the
/// settings not named, otherwise they are reset (AlterConfigs semantics).
pub async fn alter_topic_configs(
    shard: &Rc<Shard>,
    topic: String,
    changes: Vec<(String, Option<String>)>,
    incremental: bool,
    validate_only: bool,
) -> ControllerResult<Result<(), TopicError>> {
    match call(
        shard,
        AdminRequest::AlterTopicConfigs {
            topic,
            changes,
            incremental,
            validate_only,
        },
    )
    .await?
    {
        AdminAnswer::Altered(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Sets (`Some`) or removes (`None`) dynamic broker defaults (broker
/// names, `log.*`); `incremental` keeps the ones not named, otherwise they
/// are reset (AlterConfigs semantics). They apply to every topic at once.
pub async fn alter_broker_configs(
    shard: &Rc<Shard>,
    changes: Vec<(String, Option<String>)>,
    incremental: bool,
    validate_only: bool,
) -> ControllerResult<Result<(), TopicError>> {
    match call(
        shard,
        AdminRequest::AlterBrokerConfigs {
            changes,
            incremental,
            validate_only,
        },
    )
    .await?
    {
        AdminAnswer::Altered(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Hands out a new producer id, reserving blocks in the metadata log so ids
/// are never reused after a restart or a controller failover.
pub async fn allocate_producer_id(shard: &Rc<Shard>) -> ControllerResult<i64> {
    match call(shard, AdminRequest::AllocateProducerId).await? {
        AdminAnswer::ProducerId(id) => Ok(id),
        _ => Err(wrong_answer()),
    }
}

/// The quorum as the active controller sees it (every voter's progress).
pub async fn describe_quorum(shard: &Rc<Shard>) -> ControllerResult<QuorumStatus> {
    match call(shard, AdminRequest::DescribeQuorum).await? {
        AdminAnswer::Quorum(s) => Ok(s),
        _ => Err(wrong_answer()),
    }
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
