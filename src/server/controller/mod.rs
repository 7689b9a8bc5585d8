//! The controller's applying half, on shard 0 of every node. The
//! decisions (what records a request becomes, or why it is refused) are
//! the pure functions of `crate::controller`; this module runs them on the
//! active controller and commits their records through the metadata quorum
//! (`crate::quorum`); the image applier (`server/image_applier/`)
//! publishes each committed image to every shard, which opens or deletes
//! the partitions it owns.
//!
//! Any node accepts admin requests: a node that is not the active
//! controller forwards them to it over the controller listener. Every node
//! answers once all its shards serve the result, so a client sees its
//! change on the broker it asked.
//!
//! Broker sessions (registration, heartbeats, fencing) are in
//! `broker_sessions.rs`; bringing each image onto the shards is the
//! `image_applier` room's.

use std::cell::{Cell, RefCell, RefMut};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::controller::brokers::{plan_unregister_broker, registrations, BrokerSessions};
use crate::controller::elections::{
    plan_elect_leaders, plan_preferred_rebalance, ElectionOutcome, ElectionType,
};
use crate::controller::features::{plan_update_features, FeatureUpdate};
use crate::controller::group_configs::{plan_alter_group_configs, GroupDefaults};
use crate::controller::partitions::{broker_views, plan_alter_partition, IsrProposal};
use crate::controller::placement::UsableBroker;
use crate::controller::quotas::{QuotaAlteration, QuotaOutcome};
use crate::controller::reassignment::{
    list_reassignments, plan_alter_reassignments, OngoingReassignment, ReassignmentOutcome,
    ReassignmentRequest,
};
use crate::controller::scram::{ScramChange, UserOutcome};
use crate::controller::{
    plan_alter_broker_configs, plan_alter_topic_configs, plan_create_partitions,
    plan_create_topics, plan_delete_topics, Context,
};
pub use crate::controller::{CreatedTopic, NewPartitions, NewTopic, TopicError};
use crate::metadata::image::{MetadataImage, PartitionImage};
use crate::metadata::records::MetadataRecord;
use crate::node::ids::random_uuid;
use crate::node::state::BrokerState;
use crate::node::stop::StopHandle;
use crate::protocol::codec::Reader;
use crate::protocol::error_code;
use crate::protocol::messages::alter_partition::{
    AlterPartitionRequest, AlterPartitionResponse, AlterPartitionResult, AlterPartitionTopicResult,
};
use crate::protocol::messages::broker_registration::{
    BrokerHeartbeatRequest, BrokerRegistrationRequest,
};
use crate::quorum::network::{ConnectionId, Forwarded};
use crate::quorum::{ForwardLane, Quorum, QuorumError, QuorumStatus};
use crate::shard::shard::Shard;

mod acls;
mod broker_sessions;
mod credentials;
mod envelope;
pub mod internal_topics;
mod requests;

pub use self::acls::{create_acls, delete_acls};
pub use self::credentials::{alter_client_quotas, alter_scram_credentials};
pub use self::envelope::Caller;
pub use self::requests::{
    allocate_producer_id, alter_broker_configs, alter_group_configs, alter_reassignments,
    alter_topic_configs, create_partitions, create_topics, delete_topics, describe_quorum,
    elect_leaders, list_partition_reassignments, unregister_broker, update_features,
};

pub use self::broker_sessions::{
    alter_partition_call, broker_heartbeat_call, broker_registration, fence_expired_brokers,
};
use self::broker_sessions::{
    answer_steady_heartbeat, broker_heartbeat, fence_if_gone, register_broker,
};

/// The shard that runs the controller and the quorum.
pub const CONTROLLER_SHARD: usize = 0;
/// Producer ids are reserved in the metadata log in blocks of this size.
pub const PRODUCER_ID_BLOCK: i64 = 1000;
/// How often a node that forwarded a change looks whether its own image
/// has caught up with it.
const CATCH_UP_POLL: Duration = Duration::from_millis(2);
/// How long an answer waits for this node's shards to serve the change it
/// reports: Kafka clients' default `request.timeout.ms`. Past it, the
/// answer goes out with a warning in the log.
const IMAGE_WAIT_MAX: Duration = Duration::from_secs(30);
/// How often a long periodic wait checks whether the broker is stopping.
const STOP_POLL: Duration = Duration::from_millis(100);

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
            QuorumError::NotLeader { .. }
            | QuorumError::NoLeader
            | QuorumError::Unreachable { .. } => error_code::NOT_CONTROLLER,
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
        requests: Vec<NewPartitions>,
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
    /// Kafka's BrokerRegistration (API 62), encoded at `version`.
    BrokerRegistration {
        version: i16,
        body: Vec<u8>,
    },
    /// Kafka's BrokerHeartbeat (API 63), encoded at `version`.
    BrokerHeartbeat {
        version: i16,
        body: Vec<u8>,
    },
    /// Kafka's AlterPartition (API 56), encoded at `version`.
    AlterPartition {
        version: i16,
        body: Vec<u8>,
    },
    /// UnregisterBroker (API 64).
    UnregisterBroker {
        broker_id: i32,
    },
    /// ElectLeaders (API 43); `None` for every partition.
    ElectLeaders {
        election: ElectionType,
        partitions: Option<Vec<(String, Vec<i32>)>>,
    },
    /// AlterPartitionReassignments (API 45).
    AlterReassignments {
        requests: Vec<ReassignmentRequest>,
        allow_replication_factor_change: bool,
    },
    /// ListPartitionReassignments (API 46); `None` for every partition.
    ListReassignments {
        partitions: Option<Vec<(String, Vec<i32>)>>,
    },
    /// AlterConfigs / IncrementalAlterConfigs on one broker's resource:
    /// its replication throttle rates are its own (the other names are
    /// cluster-wide, as `AlterBrokerConfigs`). Added after the others, so
    /// that the variants before it keep their wire index.
    AlterOneBrokerConfigs {
        broker: i32,
        changes: Vec<(String, Option<String>)>,
        incremental: bool,
        validate_only: bool,
    },
    /// UpdateFeatures (API 57). Added after the others, for the same
    /// reason.
    UpdateFeatures {
        updates: Vec<FeatureUpdate>,
        validate_only: bool,
    },
    /// AlterUserScramCredentials (API 51): each user's checked changes.
    /// Added last, for the same reason.
    AlterScramCredentials {
        users: Vec<(String, Vec<ScramChange>)>,
    },
    /// AlterClientQuotas (API 49). Added last, for the same reason.
    AlterClientQuotas {
        alterations: Vec<QuotaAlteration>,
        validate_only: bool,
    },
    /// Kafka's CreateAcls (API 30), encoded at `version`. Added after the
    /// others, for the same reason.
    CreateAcls {
        version: i16,
        body: Vec<u8>,
    },
    /// Kafka's DeleteAcls (API 31), encoded at `version`.
    DeleteAcls {
        version: i16,
        body: Vec<u8>,
    },
    /// `request`, decided for `caller`, who must be allowed it by the
    /// active controller's ACLs (`envelope.rs`). Added last, so that the
    /// variants before it keep their wire index.
    AsCaller {
        caller: Caller,
        request: Box<AdminRequest>,
    },
    /// IncrementalAlterConfigs or AlterConfigs on a group (KIP-848's
    /// group configs). Added after `AsCaller`, keeping the wire indices.
    AlterGroupConfigs {
        group: String,
        changes: Vec<(String, Option<String>)>,
        incremental: bool,
        validate_only: bool,
    },
}

#[derive(Debug, Serialize, Deserialize)]
enum AdminAnswer {
    CreateTopics(Vec<(String, Result<CreatedTopic, TopicError>)>),
    DeleteTopics(Vec<(String, Result<[u8; 16], TopicError>)>),
    CreatePartitions(Vec<(String, Result<(), TopicError>)>),
    Altered(Result<(), TopicError>),
    ProducerId(i64),
    Quorum(QuorumStatus),
    Elected(BTreeMap<String, Vec<ElectionOutcome>>),
    Reassigned(Vec<ReassignmentOutcome>),
    Reassignments(Vec<OngoingReassignment>),
    ScramAltered(Vec<UserOutcome>),
    QuotasAltered(Vec<QuotaOutcome>),
    /// A Kafka-encoded BrokerRegistration, BrokerHeartbeat, AlterPartition,
    /// CreateAcls or DeleteAcls response, and the reason when it carries
    /// an error the schema has no message for.
    Broker {
        body: Vec<u8>,
        message: Option<String>,
    },
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
    /// Broker sessions of the leader epoch this node was active in: a new
    /// active controller gives every registered broker a fresh one.
    sessions: RefCell<Option<(i32, BrokerSessions)>>,
    session_timeout_ms: i64,
    decisions: glommio::sync::Semaphore,
    next_producer_id: Cell<i64>,
    producer_id_limit: Cell<i64>,
    /// The leader epoch whose controller reserved the current id block; a
    /// new active controller starts after the last reserved block.
    producer_block_epoch: Cell<i32>,
    /// Partitions created by committed decisions, by the entry's offset,
    /// until this node has published that entry (and opened them).
    unopened: RefCell<VecDeque<(i64, u64)>>,
}

impl Controller {
    pub fn new(quorum: Rc<Quorum>, session_timeout_ms: u64) -> Self {
        Controller {
            quorum,
            sessions: RefCell::new(None),
            session_timeout_ms: session_timeout_ms as i64,
            decisions: glommio::sync::Semaphore::new(1),
            next_producer_id: Cell::new(0),
            producer_id_limit: Cell::new(0),
            producer_block_epoch: Cell::new(-1),
            unopened: RefCell::new(VecDeque::new()),
        }
    }

    /// Records that the entry at `offset` (-1: none was written) created
    /// `partitions` partitions.
    fn created_partitions(&self, offset: i64, partitions: u64) {
        if offset >= 0 && partitions > 0 {
            self.unopened.borrow_mut().push_back((offset, partitions));
        }
    }

    /// Partitions created by entries past `published_offset`: committed,
    /// but not yet open on this node.
    fn unopened_partitions(&self, published_offset: i64) -> u64 {
        let mut unopened = self.unopened.borrow_mut();
        while unopened
            .front()
            .is_some_and(|(o, _)| *o <= published_offset)
        {
            unopened.pop_front();
        }
        unopened.iter().map(|(_, n)| n).sum()
    }

    pub fn quorum(&self) -> &Rc<Quorum> {
        &self.quorum
    }

    /// The sessions for `epoch`, activated fresh when this node became the
    /// active controller in it.
    fn sessions(&self, image: &MetadataImage, epoch: i32, now: i64) -> RefMut<'_, BrokerSessions> {
        let mut guard = self.sessions.borrow_mut();
        if guard.as_ref().is_none_or(|(e, _)| *e != epoch) {
            let registrations = registrations(image);
            *guard = Some((
                epoch,
                BrokerSessions::activate(registrations.values(), self.session_timeout_ms, now),
            ));
        }
        RefMut::map(guard, |g| &mut g.as_mut().expect("set above").1)
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

/// The partitions `records` create.
fn new_partitions(records: &[MetadataRecord]) -> u64 {
    records
        .iter()
        .filter(|r| matches!(r, MetadataRecord::Partition { .. }))
        .count() as u64
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

/// Runs `request` on the active controller for `caller` (see
/// `envelope.rs`; `None` for the broker's own requests, or without an
/// authorizer), from any shard of any node.
async fn call_as(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    request: AdminRequest,
) -> ControllerResult<AdminAnswer> {
    let request = match caller {
        Some(caller) => AdminRequest::AsCaller {
            caller,
            request: Box::new(request),
        },
        None => request,
    };
    call(shard, request).await
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
    let lane = match request {
        AdminRequest::BrokerRegistration { .. } | AdminRequest::BrokerHeartbeat { .. } => {
            ForwardLane::Lifecycle
        }
        _ => ForwardLane::Requests,
    };
    if quorum.is_leader() {
        let response = decide(shard, request).await;
        if response.offset >= 0 {
            wait_for_image(&quorum, response.offset).await;
        }
        return response.result;
    }
    let bytes = postcard::to_stdvec(&request).map_err(|e| ControllerError {
        code: error_code::UNKNOWN_SERVER_ERROR,
        message: e.to_string(),
    })?;
    let answer = quorum.forward(bytes, lane).await?;
    let response: AdminResponse = postcard::from_bytes(&answer).map_err(|e| ControllerError {
        code: error_code::UNKNOWN_SERVER_ERROR,
        message: format!("the active controller's answer does not decode: {e}"),
    })?;
    if response.offset >= 0 {
        wait_for_image(&quorum, response.offset).await;
    }
    response.result
}

/// Waits (bounded by the request timeout) until every shard of this node
/// serves the image with the entry at `offset`, so that the client that
/// asked, on whichever connection and shard, sees its change here at once.
/// The quorum's own image is not enough: it is set before the shards have
/// applied it (found by a Go client's tests: Metadata right after
/// DeleteTopics still listed the topic).
async fn wait_for_image(quorum: &Quorum, offset: i64) {
    let deadline = Instant::now() + IMAGE_WAIT_MAX;
    while quorum.published_offset() < offset {
        if Instant::now() >= deadline {
            tracing::warn!(
                offset,
                published = quorum.published_offset(),
                "answering before this node serves metadata entry {offset}: its shards have \
                 not applied it within {IMAGE_WAIT_MAX:?} (slow or failing storage?)"
            );
            return;
        }
        glommio::timer::sleep(CATCH_UP_POLL).await;
    }
}

/// The forwarded-request handler of the controller listener (shard 0).
pub fn forward_handler(shard: Rc<Shard>) -> crate::quorum::network::ForwardHandler {
    Rc::new(Forwarding {
        shard,
        heartbeat_connections: RefCell::new(HashMap::new()),
    })
}

/// Forwarded requests, and which broker heartbeats on which connection: a
/// broker's connection that closes may mean its process died (see
/// [`fence_if_gone`]).
struct Forwarding {
    shard: Rc<Shard>,
    heartbeat_connections: RefCell<HashMap<ConnectionId, i32>>,
}

impl Forwarded for Forwarding {
    fn request(
        &self,
        connection: ConnectionId,
        bytes: Vec<u8>,
    ) -> Pin<Box<dyn std::future::Future<Output = Vec<u8>>>> {
        let shard = self.shard.clone();
        let request = postcard::from_bytes::<AdminRequest>(&bytes);
        if let Ok(AdminRequest::BrokerHeartbeat { version, body }) = &request {
            if let Ok(hb) =
                BrokerHeartbeatRequest::decode(&mut Reader::new(body.clone().into()), *version)
            {
                self.heartbeat_connections
                    .borrow_mut()
                    .insert(connection, hb.broker_id);
            }
        }
        Box::pin(async move {
            let response = match request {
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
    }

    fn closed(&self, connection: ConnectionId) {
        let broker = self.heartbeat_connections.borrow_mut().remove(&connection);
        if let Some(broker) = broker {
            tracing::debug!(broker, "the heartbeat connection of broker {broker} closed");
            glommio::spawn_local(fence_if_gone(self.shard.clone(), broker)).detach();
        }
    }
}

/// Decides `request` as the active controller: one at a time, on the image
/// of everything committed, committing the records it makes.
async fn decide(shard: &Rc<Shard>, request: AdminRequest) -> AdminResponse {
    let controller = controller(shard);
    if let AdminRequest::BrokerHeartbeat { version, body } = &request {
        if let Some(body) = answer_steady_heartbeat(&controller, *version, body) {
            return AdminResponse {
                result: Ok(AdminAnswer::Broker {
                    body,
                    message: None,
                }),
                offset: -1,
            };
        }
    }
    let Ok(_permit) = controller.decisions.acquire_permit(1).await else {
        return AdminResponse {
            result: Err(QuorumError::Stopped("the controller has shut down".into()).into()),
            offset: -1,
        };
    };
    let mut offset = -1;
    let (caller, request) = match request {
        AdminRequest::AsCaller { caller, request } => (Some(caller), *request),
        request => (None, request),
    };
    let result = decide_locked(shard, &controller, caller, request, &mut offset).await;
    AdminResponse { result, offset }
}

async fn decide_locked(
    shard: &Rc<Shard>,
    controller: &Controller,
    caller: Option<Caller>,
    request: AdminRequest,
    offset: &mut i64,
) -> ControllerResult<AdminAnswer> {
    let quorum = &controller.quorum;
    let broker = BrokerState::of(shard);
    // Authorized on the image every decision reads: committed, and past
    // the read barrier (DescribeQuorum takes no barrier: it must answer
    // while there is no leader).
    let authorize = |image: &MetadataImage| match (&caller, &broker.config.authorizer) {
        (Some(caller), Some(config)) => envelope::authorize(config, image, caller, &request),
        _ => Ok(()),
    };
    if let AdminRequest::DescribeQuorum = request {
        authorize(&quorum.image())?;
        return Ok(AdminAnswer::Quorum(quorum.status()));
    }
    quorum.read_barrier().await?;
    let image = quorum.image();
    authorize(&image)?;
    let mut new_topic_id = random_uuid;
    let brokers = usable_brokers(&image);
    let mut below = random_below;
    // Partitions that earlier decisions created but this node has not
    // opened yet hold no descriptors so far: count them as if they did.
    let unopened = controller.unopened_partitions(quorum.published_offset());
    let budget = move |n: u64| check_descriptor_budget(n + unopened);
    let mut ctx = context(&broker, &brokers, &mut new_topic_id, &mut below, &budget);
    // Commits `records` unless the request only validates; the offset of
    // the entry, -1 when nothing was written.
    let commit = |records: Vec<MetadataRecord>, validate_only: bool| async move {
        if validate_only || records.is_empty() {
            return Ok::<i64, ControllerError>(-1);
        }
        Ok(quorum.propose(&records).await?)
    };
    match request {
        AdminRequest::CreateTopics {
            topics,
            validate_only,
        } => {
            let plan = plan_create_topics(&image, &mut ctx, topics);
            let created = new_partitions(&plan.records);
            *offset = commit(plan.records, validate_only).await?;
            controller.created_partitions(*offset, created);
            Ok(AdminAnswer::CreateTopics(plan.results))
        }
        AdminRequest::DeleteTopics { names } => {
            let plan = plan_delete_topics(&image, names);
            *offset = commit(plan.records, false).await?;
            Ok(AdminAnswer::DeleteTopics(plan.results))
        }
        AdminRequest::CreatePartitions {
            requests,
            validate_only,
        } => {
            let plan = plan_create_partitions(&image, &mut ctx, requests);
            let created = new_partitions(&plan.records);
            *offset = commit(plan.records, validate_only).await?;
            controller.created_partitions(*offset, created);
            Ok(AdminAnswer::CreatePartitions(plan.results))
        }
        AdminRequest::UnregisterBroker { broker_id } => {
            // Its leadership and ISR changes are logged as they are planned
            // (`with_leadership_changes`).
            let planned = plan_unregister_broker(&image, broker_id);
            let answer = altered(planned, false, commit, offset).await?;
            if matches!(answer, AdminAnswer::Altered(Ok(()))) {
                // A broker-only node observed the quorum as a learner: the
                // leader would go on sending the log to its address.
                quorum.remove_observer(broker_id).await;
            }
            Ok(answer)
        }
        AdminRequest::ElectLeaders {
            election,
            partitions,
        } => {
            let plan = plan_elect_leaders(&image, &broker_views(&image), election, partitions);
            log_elections(&image, &plan.records, "asked by an operator");
            *offset = commit(plan.records, false).await?;
            Ok(AdminAnswer::Elected(plan.results))
        }
        AdminRequest::AlterReassignments {
            requests,
            allow_replication_factor_change,
        } => {
            let plan = plan_alter_reassignments(
                &image,
                &broker_views(&image),
                &requests,
                allow_replication_factor_change,
            );
            for (req, outcome) in requests.iter().zip(&plan.outcomes) {
                match (&req.target, outcome.error_code) {
                    (Some(target), error_code::NONE) => tracing::info!(
                        partition = %format!("{}-{}", req.topic, req.partition),
                        "reassigning to replicas {target:?}"
                    ),
                    (None, error_code::NONE) => tracing::info!(
                        partition = %format!("{}-{}", req.topic, req.partition),
                        "reassignment cancelled: back to the original replicas"
                    ),
                    (_, code) => tracing::info!(
                        partition = %format!("{}-{}", req.topic, req.partition),
                        code,
                        "reassignment refused: {}",
                        outcome.message.as_deref().unwrap_or("")
                    ),
                }
            }
            *offset = commit(plan.records, false).await?;
            Ok(AdminAnswer::Reassigned(plan.outcomes))
        }
        AdminRequest::AlterClientQuotas {
            alterations,
            validate_only,
        } => {
            let (records, answer) = credentials::decide_client_quotas(&alterations);
            credentials::committed(records, validate_only, answer, commit, offset).await
        }
        AdminRequest::AlterScramCredentials { users } => {
            let (records, answer) = credentials::decide_scram_credentials(&image, &users);
            credentials::committed(records, false, answer, commit, offset).await
        }
        AdminRequest::ListReassignments { partitions } => Ok(AdminAnswer::Reassignments(
            list_reassignments(&image, partitions.as_deref()),
        )),
        AdminRequest::AlterTopicConfigs {
            topic,
            changes,
            incremental,
            validate_only,
        } => {
            let planned = plan_alter_topic_configs(&image, &topic, changes, incremental);
            altered(planned, validate_only, commit, offset).await
        }
        AdminRequest::AlterGroupConfigs {
            group,
            changes,
            incremental,
            validate_only,
        } => {
            let defaults = GroupDefaults {
                consumer: &broker.config.consumer_group,
                share: &broker.config.share_group,
            };
            let planned = plan_alter_group_configs(&image, &defaults, &group, changes, incremental);
            altered(planned, validate_only, commit, offset).await
        }
        AdminRequest::AlterBrokerConfigs {
            changes,
            incremental,
            validate_only,
        } => {
            let planned = plan_alter_broker_configs(&image, None, changes, incremental);
            altered(planned, validate_only, commit, offset).await
        }
        AdminRequest::AlterOneBrokerConfigs {
            broker,
            changes,
            incremental,
            validate_only,
        } => {
            let planned = plan_alter_broker_configs(&image, Some(broker), changes, incremental);
            altered(planned, validate_only, commit, offset).await
        }
        AdminRequest::UpdateFeatures {
            updates,
            validate_only,
        } => {
            let planned = plan_update_features(&image, &updates);
            if let (Ok(records), false) = (&planned, validate_only) {
                for r in records {
                    if let MetadataRecord::FeatureLevel { name, level } = r {
                        tracing::info!(
                            feature = %name,
                            level,
                            from = image.feature_level(name),
                            "feature {name} finalized at level {level}"
                        );
                    }
                }
            }
            altered(planned, validate_only, commit, offset).await
        }
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
                commit(
                    vec![MetadataRecord::ProducerIds {
                        next_producer_id: limit,
                    }],
                    false,
                )
                .await?;
                controller.producer_id_limit.set(limit);
            }
            let id = controller.next_producer_id.get();
            controller.next_producer_id.set(id + 1);
            Ok(AdminAnswer::ProducerId(id))
        }
        AdminRequest::BrokerRegistration { version, body } => {
            let req = BrokerRegistrationRequest::decode(&mut Reader::new(body.into()), version)
                .map_err(|e| invalid_request("BrokerRegistration", e))?;
            let (resp, message) = register_broker(controller, &image, req, offset).await?;
            let mut w = bytes::BytesMut::new();
            resp.encode(&mut w, version);
            Ok(AdminAnswer::Broker {
                body: w.to_vec(),
                message,
            })
        }
        AdminRequest::BrokerHeartbeat { version, body } => {
            let req = BrokerHeartbeatRequest::decode(&mut Reader::new(body.into()), version)
                .map_err(|e| invalid_request("BrokerHeartbeat", e))?;
            let (resp, message) = broker_heartbeat(controller, &image, req, offset).await?;
            let mut w = bytes::BytesMut::new();
            resp.encode(&mut w, version);
            Ok(AdminAnswer::Broker {
                body: w.to_vec(),
                message,
            })
        }
        AdminRequest::AlterPartition { version, body } => {
            let req = AlterPartitionRequest::decode(&mut Reader::new(body.into()), version)
                .map_err(|e| invalid_request("AlterPartition", e))?;
            let resp = alter_partition(quorum, &image, req, offset).await?;
            let mut w = bytes::BytesMut::new();
            resp.encode(&mut w, version);
            Ok(AdminAnswer::Broker {
                body: w.to_vec(),
                message: None,
            })
        }
        AdminRequest::CreateAcls { version, body } => {
            let decided = acls::decide_create(&image, version, body)?;
            *offset = commit(decided.records, false).await?;
            Ok(AdminAnswer::Broker {
                body: decided.body,
                message: None,
            })
        }
        AdminRequest::DeleteAcls { version, body } => {
            let decided = acls::decide_delete(&image, version, body)?;
            *offset = commit(decided.records, false).await?;
            Ok(AdminAnswer::Broker {
                body: decided.body,
                message: None,
            })
        }
        AdminRequest::DescribeQuorum => unreachable!("answered above"),
        AdminRequest::AsCaller { .. } => Err(ControllerError {
            code: error_code::INVALID_REQUEST,
            message: "a request wrapped twice in its caller".into(),
        }),
    }
}

/// AlterPartition on the active controller: the pure decision, its
/// records committed, the partitions' new state answered.
async fn alter_partition(
    quorum: &Quorum,
    image: &MetadataImage,
    req: AlterPartitionRequest,
    offset: &mut i64,
) -> ControllerResult<AlterPartitionResponse> {
    let proposals: Vec<IsrProposal> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| IsrProposal {
                topic_id: t.topic_id,
                partition: p.partition_index,
                leader_epoch: p.leader_epoch,
                partition_epoch: p.partition_epoch,
                new_isr: p
                    .new_isr
                    .iter()
                    .map(|m| (m.broker_id, m.broker_epoch))
                    .collect(),
            })
        })
        .collect();
    let planned = plan_alter_partition(
        image,
        &broker_views(image),
        req.broker_id,
        req.broker_epoch,
        &proposals,
    );
    let (records, decisions) = match planned {
        Ok(p) => p,
        Err(code) => {
            return Ok(AlterPartitionResponse {
                error_code: code,
                ..Default::default()
            })
        }
    };
    if !records.is_empty() {
        *offset = quorum.propose(&records).await?;
    }
    let mut topics: Vec<AlterPartitionTopicResult> = Vec::new();
    for (proposal, d) in proposals.iter().zip(decisions) {
        let p = d.partition.unwrap_or_else(|| PartitionImage {
            replicas: Vec::new(),
            isr: Vec::new(),
            leader: -1,
            leader_epoch: -1,
            partition_epoch: -1,
            elr: Vec::new(),
            last_known_elr: Vec::new(),
            last_unclean_election_epoch: None,
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
        });
        let result = AlterPartitionResult {
            partition_index: proposal.partition,
            error_code: d.error_code,
            leader_id: p.leader,
            leader_epoch: p.leader_epoch,
            isr: p.isr,
            leader_recovery_state: 0,
            partition_epoch: p.partition_epoch,
        };
        match topics.last_mut() {
            Some(t) if t.topic_id == proposal.topic_id => t.partitions.push(result),
            _ => topics.push(AlterPartitionTopicResult {
                topic_id: proposal.topic_id,
                partitions: vec![result],
            }),
        }
    }
    Ok(AlterPartitionResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        topics,
    })
}

/// A config change's answer: its records committed (unless validating),
/// or the reason it was refused.
async fn altered<F>(
    planned: Result<Vec<MetadataRecord>, TopicError>,
    validate_only: bool,
    commit: impl Fn(Vec<MetadataRecord>, bool) -> F,
    offset: &mut i64,
) -> ControllerResult<AdminAnswer>
where
    F: std::future::Future<Output = ControllerResult<i64>>,
{
    match planned {
        Ok(records) => {
            *offset = commit(records, validate_only).await?;
            Ok(AdminAnswer::Altered(Ok(())))
        }
        Err(e) => Ok(AdminAnswer::Altered(Err(e))),
    }
}

fn invalid_request(what: &str, e: impl std::fmt::Display) -> ControllerError {
    ControllerError {
        code: error_code::INVALID_REQUEST,
        message: format!("a {what} request does not decode: {e}"),
    }
}

/// Uniform in `0..n`.
fn random_below(n: usize) -> usize {
    rand::random_range(0..n.max(1))
}

/// The registered brokers as placement sees them.
fn usable_brokers(image: &MetadataImage) -> Vec<UsableBroker> {
    image
        .brokers
        .values()
        .map(|b| UsableBroker {
            id: b.id,
            rack: b.rack.clone(),
            fenced: b.fenced || b.in_controlled_shutdown,
        })
        .collect()
}

/// The decisions' view of this broker.
fn context<'a>(
    broker: &BrokerState,
    brokers: &'a [UsableBroker],
    new_topic_id: &'a mut dyn FnMut() -> [u8; 16],
    random_below: &'a mut dyn FnMut(usize) -> usize,
    descriptor_budget: &'a dyn Fn(u64) -> Result<(), TopicError>,
) -> Context<'a> {
    Context {
        brokers,
        random_below,
        num_partitions: broker.config.num_partitions,
        default_replication_factor: broker.config.default_replication_factor,
        new_topic_id,
        descriptor_budget,
    }
}

fn wrong_answer() -> ControllerError {
    ControllerError {
        code: error_code::UNKNOWN_SERVER_ERROR,
        message: "the active controller answered with the wrong kind of result".into(),
    }
}

/// One log line per elected leader, with why.
fn log_elections(image: &MetadataImage, records: &[MetadataRecord], why: &str) {
    for r in records {
        if let MetadataRecord::PartitionChange {
            topic_id,
            partition,
            leader: Some(leader),
            unclean,
            ..
        } = r
        {
            let name = image
                .topic_names_by_id
                .get(topic_id)
                .cloned()
                .unwrap_or_default();
            if *unclean {
                tracing::warn!(partition = %format!("{name}-{partition}"), leader, "unclean leader election ({why}): records the old leader held beyond the new one's log are lost");
            } else {
                tracing::info!(partition = %format!("{name}-{partition}"), leader, "leader election ({why})");
            }
        }
    }
}

/// On the active controller, every `every`, gives leaderships back to the
/// preferred replicas when a broker's share of its preferred partitions
/// led elsewhere passes `imbalance_percentage`
/// (`auto.leader.rebalance.enable`). Runs on shard 0 until `stop`.
pub async fn balance_preferred_leaders(
    shard: Rc<Shard>,
    every: Duration,
    imbalance_percentage: u32,
    stop: StopHandle,
) {
    while !stop.is_requested() {
        // Short sleeps, so a stop is not held up by a long interval.
        let due = Instant::now() + every;
        while !stop.is_requested() && Instant::now() < due {
            crate::ticks::sleep_to_next_tick(STOP_POLL.min(every)).await;
        }
        if stop.is_requested() {
            return;
        }
        let controller = controller(&shard);
        if !controller.quorum.is_leader() {
            continue;
        }
        let Ok(_permit) = controller.decisions.acquire_permit(1).await else {
            return;
        };
        if controller.quorum.read_barrier().await.is_err() {
            continue;
        }
        let image = controller.quorum.image();
        let records = plan_preferred_rebalance(&image, &broker_views(&image), imbalance_percentage);
        if records.is_empty() {
            continue;
        }
        log_elections(&image, &records, "auto.leader.rebalance.enable");
        if let Err(e) = controller.quorum.propose(&records).await {
            tracing::warn!("preferred leader balancing not committed, retried next interval: {e}");
        }
    }
}
