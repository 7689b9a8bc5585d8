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

use std::cell::{Cell, RefCell, RefMut};
use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::config::LogConfig;
use crate::constants::PARTITION_OPENS_IN_FLIGHT;
use crate::controller::brokers::{
    plan_unregister_broker, registrations, unclean_shutdown, BrokerControlState, BrokerSessions,
    Heartbeat, RegistrationDecision, RegistrationRequest,
};
use crate::controller::elections::{
    plan_elect_leaders, plan_preferred_rebalance, ElectionOutcome, ElectionType,
};
use crate::controller::partitions::{
    broker_views, effective_min_isr, fencing, plan_alter_partition, with_leadership_changes,
    with_unclean_shutdown, IsrProposal,
};
use crate::controller::placement::UsableBroker;
use crate::controller::reassignment::{
    list_reassignments, plan_alter_reassignments, OngoingReassignment, ReassignmentOutcome,
    ReassignmentRequest,
};
use crate::controller::{
    plan_alter_broker_configs, plan_alter_topic_configs, plan_create_partitions,
    plan_create_topics, plan_delete_topics, Context,
};
pub use crate::controller::{CreatedTopic, NewPartitions, NewTopic, TopicError};
use crate::error::LogResult;
use crate::group::coordinator::GroupCoordinator;
use crate::log::topic_partition::TopicPartition;
use crate::metadata::image::{MetadataImage, PartitionImage};
use crate::metadata::records::MetadataRecord;
use crate::metadata::OFFSETS_TOPIC;
use crate::metadata::{dynamic_broker_config, topic_config};
use crate::node::ids::random_uuid;
use crate::node::replicas::{self, Replicas};
use crate::node::state::BrokerState;
use crate::node::stop::StopHandle;
use crate::protocol::codec::Reader;
use crate::protocol::error_code;
use crate::protocol::messages::alter_partition::{
    AlterPartitionRequest, AlterPartitionResponse, AlterPartitionResult, AlterPartitionTopicResult,
};
use crate::protocol::messages::broker_registration::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse,
};
use crate::quorum::network::{ConnectionId, Forwarded};
use crate::quorum::{Quorum, QuorumError, QuorumStatus};
use crate::replica::{Assignment, Transition};
use crate::server::replica_fetcher::ReplicaFetchers;
use crate::shard::shard::{map_concurrently, now_ms, Shard};

/// The shard that runs the controller and the quorum.
pub const CONTROLLER_SHARD: usize = 0;
/// Producer ids are reserved in the metadata log in blocks of this size.
pub const PRODUCER_ID_BLOCK: i64 = 1000;
/// How often a node that forwarded a change looks whether its own image
/// has caught up with it.
const CATCH_UP_POLL: Duration = Duration::from_millis(2);
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
    /// cluster-wide, as `AlterBrokerConfigs`). Last, so that the variants
    /// before it keep their wire index.
    AlterOneBrokerConfigs {
        broker: i32,
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
    /// A Kafka-encoded BrokerRegistration or BrokerHeartbeat response, and
    /// the reason when it carries an error (the schema has no message).
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
        }
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

/// Waits (bounded by the request timeout) until every shard of this node
/// serves the image with the entry at `offset`, so that the client that
/// asked, on whichever connection and shard, sees its change here at once.
/// The quorum's own image is not enough: it is set before the shards have
/// applied it (found by a Go client's tests: Metadata right after
/// DeleteTopics still listed the topic).
async fn wait_for_image(quorum: &Quorum, offset: i64) {
    let deadline = Instant::now() + quorum.request_timeout();
    while quorum.published_offset() < offset && Instant::now() < deadline {
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

/// How long the probe of a broker's listener may take.
const LIVENESS_PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// How often, and for how long, the listener of a broker whose connection
/// closed is probed: a killed process closes its connections first and its
/// listener only once the kernel has torn down the rest (its io_uring
/// rings among them), which was seen to take up to a second.
const LIVENESS_PROBE_EVERY: Duration = Duration::from_millis(50);
const LIVENESS_PROBE_FOR: Duration = Duration::from_secs(3);

/// Fences `broker` at once if its process is gone: its client listener
/// refuses connections. Kafka waits out `broker.session.timeout.ms` for
/// every broker; a refused connection is proof enough that nothing serves
/// there any more, while a paused or cut-off broker still answers the
/// handshake (or times out) and keeps its session until it expires.
async fn fence_if_gone(shard: Rc<Shard>, broker: i32) {
    let controller = controller(&shard);
    if !controller.quorum.is_leader() {
        return;
    }
    let image = controller.quorum.image();
    let Some(b) = image.brokers.get(&broker).filter(|b| !b.fenced) else {
        return;
    };
    let (addr, epoch) = (format!("{}:{}", b.host, b.port), b.epoch);
    let Ok(sock) = crate::quorum::network::resolve(&addr) else {
        return;
    };
    // A dying process closes its connections and its listener one after
    // the other: probe a few times before concluding it lives.
    let mut refused = false;
    let probing_until = Instant::now() + LIVENESS_PROBE_FOR;
    while !refused && Instant::now() < probing_until {
        glommio::timer::sleep(LIVENESS_PROBE_EVERY).await;
        refused = match glommio::net::TcpStream::connect_timeout(sock, LIVENESS_PROBE_TIMEOUT).await
        {
            Ok(_) => false,
            Err(e) => std::io::Error::from(e).kind() == std::io::ErrorKind::ConnectionRefused,
        };
    }
    if !refused {
        tracing::debug!(
            broker,
            "broker {broker}'s connection closed, but {addr} still accepts"
        );
        return;
    }
    let Ok(_permit) = controller.decisions.acquire_permit(1).await else {
        return;
    };
    if !controller.quorum.is_leader() || controller.quorum.read_barrier().await.is_err() {
        return;
    }
    let image = controller.quorum.image();
    if image
        .brokers
        .get(&broker)
        .is_none_or(|b| b.fenced || b.epoch != epoch)
    {
        return;
    }
    let records = fencing(&image, &[(broker, epoch)]);
    match controller.quorum.propose(&records).await {
        Ok(_) => tracing::warn!(
            broker,
            "fenced broker {broker} without waiting for broker.session.timeout.ms: its \
             connection closed and {addr} refuses connections, so its process is gone"
        ),
        Err(e) => tracing::warn!(broker, "cannot fence broker {broker}: {e}"),
    }
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
    let brokers = usable_brokers(&image);
    let mut below = random_below;
    let mut ctx = context(&broker, &brokers, &mut new_topic_id, &mut below);
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
            *offset = commit(plan.records, validate_only).await?;
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
            *offset = commit(plan.records, validate_only).await?;
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
        AdminRequest::DescribeQuorum => unreachable!("answered above"),
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
            last_election_unclean: false,
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

/// BrokerRegistration on the active controller (seed 003): agree on the
/// cluster id, refuse another cluster's broker and a live duplicate
/// node.id, and record a new incarnation fenced, its epoch the offset of
/// its registration record.
async fn register_broker(
    controller: &Controller,
    image: &MetadataImage,
    req: BrokerRegistrationRequest,
    offset: &mut i64,
) -> ControllerResult<(BrokerRegistrationResponse, Option<String>)> {
    let quorum = &controller.quorum;
    let now = now_ms();
    let mut records = Vec::new();
    let cluster_id = match &image.cluster_id {
        Some(id) => id.clone(),
        None => {
            // The first broker of a new quorum brings the id; a broker with
            // an empty data directory asks with none, and one is made.
            let id = if req.cluster_id.is_empty() {
                crate::server::cluster_id::new_cluster_id()
            } else {
                req.cluster_id.clone()
            };
            records.push(MetadataRecord::ClusterId {
                cluster_id: id.clone(),
            });
            id
        }
    };
    let ask = RegistrationRequest {
        id: req.broker_id,
        cluster_id: if req.cluster_id.is_empty() {
            cluster_id.clone()
        } else {
            req.cluster_id.clone()
        },
        incarnation_id: req.incarnation_id,
        rack: req.rack.clone(),
        previous_broker_epoch: req.previous_broker_epoch,
    };
    let status = quorum.status();
    let mut known = registrations(image);
    let unclean = unclean_shutdown(&known, &ask);
    if status.voters.iter().any(|v| v.node_id == req.broker_id) {
        // A voter's node.id is unique already: a second process with it
        // is refused at its start (it finds the first answering at its
        // voter address, or cannot bind it). So a new incarnation of a
        // voter is that node restarted, and its old session, which a new
        // controller keeps alive for a session timeout, is not a
        // duplicate: it need not wait that out.
        known.remove(&req.broker_id);
    }
    let decision = controller
        .sessions(image, status.leader_epoch, now)
        .register(&known, &cluster_id, &ask, now);
    let refuse = |code: i16, message: String| {
        Ok((
            BrokerRegistrationResponse {
                error_code: code,
                broker_epoch: -1,
                ..Default::default()
            },
            Some(message),
        ))
    };
    let broker_epoch = match decision {
        Err((code, message)) => return refuse(code, message),
        Ok(RegistrationDecision::Unchanged { epoch }) => epoch,
        Ok(RegistrationDecision::New) => {
            let Some(listener) = req.listeners.first() else {
                return refuse(
                    error_code::INVALID_REQUEST,
                    "a broker registration must name the broker's listener".into(),
                );
            };
            records.push(MetadataRecord::RegisterBroker {
                broker_id: req.broker_id,
                incarnation_id: req.incarnation_id,
                broker_epoch: -1,
                host: listener.host.clone(),
                port: listener.port as i32,
                rack: req.rack.clone(),
                fenced: true,
                in_controlled_shutdown: false,
            });
            -1
        }
    };
    let broker_epoch = if records.is_empty() {
        broker_epoch
    } else {
        let records = if unclean {
            tracing::warn!(
                broker = req.broker_id,
                previous_broker_epoch = req.previous_broker_epoch,
                "broker {} registers after an unclean shutdown: it leaves every ISR and ELR, \
                 as it may have lost records it had not flushed (KIP-966)",
                req.broker_id
            );
            with_unclean_shutdown(image, records, req.broker_id)
        } else {
            with_leadership_changes(image, records)
        };
        let committed = quorum.propose(&records).await?;
        *offset = committed;
        if broker_epoch < 0 {
            // Every record of an entry takes the entry's offset.
            tracing::info!(
                broker = req.broker_id,
                epoch = committed,
                "registered broker {} (fenced until it catches up)",
                req.broker_id
            );
            committed
        } else {
            broker_epoch
        }
    };
    Ok((
        BrokerRegistrationResponse {
            error_code: error_code::NONE,
            broker_epoch,
            ..Default::default()
        },
        None,
    ))
}

/// BrokerHeartbeat on the active controller: refresh the session and move
/// the broker to the state the pure decision picks, recording any change.
async fn broker_heartbeat(
    controller: &Controller,
    image: &MetadataImage,
    req: BrokerHeartbeatRequest,
    offset: &mut i64,
) -> ControllerResult<(BrokerHeartbeatResponse, Option<String>)> {
    let now = now_ms();
    let registrations = registrations(image);
    let Some(registration) = registrations.get(&req.broker_id) else {
        return Ok((
            BrokerHeartbeatResponse {
                error_code: error_code::STALE_BROKER_EPOCH,
                is_fenced: true,
                ..Default::default()
            },
            Some(format!(
                "broker {} is not registered; it must register again",
                req.broker_id
            )),
        ));
    };
    let leads_partitions = image
        .topics
        .values()
        .flat_map(|t| t.partitions.values())
        .any(|p| p.leader == req.broker_id);
    let hb = Heartbeat {
        id: req.broker_id,
        epoch: req.broker_epoch,
        metadata_offset: req.current_metadata_offset,
        want_fence: req.want_fence,
        want_shut_down: req.want_shut_down,
    };
    let epoch = controller.quorum.status().leader_epoch;
    let outcome =
        controller
            .sessions(image, epoch, now)
            .heartbeat(registration, &hb, leads_partitions, now);
    let outcome = match outcome {
        Ok(o) => o,
        Err((code, message)) => {
            return Ok((
                BrokerHeartbeatResponse {
                    error_code: code,
                    is_fenced: true,
                    ..Default::default()
                },
                Some(message),
            ))
        }
    };
    use BrokerControlState::*;
    if outcome.changed {
        let (fenced, in_controlled_shutdown) = match outcome.next {
            Fenced | ShutdownNow => (Some(true), None),
            Unfenced => (Some(false), Some(false)),
            ControlledShutdown => (None, Some(true)),
        };
        let change = MetadataRecord::BrokerRegistrationChange {
            broker_id: req.broker_id,
            broker_epoch: registration.epoch,
            fenced,
            in_controlled_shutdown,
        };
        *offset = controller
            .quorum
            .propose(&with_leadership_changes(image, vec![change]))
            .await?;
        tracing::info!(broker = req.broker_id, state = ?outcome.next, "broker {} is now {:?}", req.broker_id, outcome.next);
    }
    Ok((
        BrokerHeartbeatResponse {
            error_code: error_code::NONE,
            is_caught_up: outcome.caught_up,
            is_fenced: matches!(outcome.next, Fenced | ShutdownNow),
            should_shut_down: outcome.next == ShutdownNow,
            ..Default::default()
        },
        None,
    ))
}

/// On the active controller, fences the brokers whose session ran out.
/// Runs on shard 0 until `stop`; does nothing while this node is not the
/// active controller.
pub async fn fence_expired_brokers(shard: Rc<Shard>, every: Duration, stop: StopHandle) {
    let mut probed_epoch = None;
    while !stop.is_requested() {
        glommio::timer::sleep(every).await;
        let controller = controller(&shard);
        if !controller.quorum.is_leader() {
            continue;
        }
        // A new active controller has no connections from the brokers yet:
        // it probes each once, so a broker that died with the old
        // controller (often the same process) is fenced at once too.
        let epoch = controller.quorum.status().leader_epoch;
        if probed_epoch != Some(epoch) {
            probed_epoch = Some(epoch);
            let me = BrokerState::of(&shard).node_id();
            for b in controller.quorum.image().brokers.values() {
                if b.id != me && !b.fenced {
                    glommio::spawn_local(fence_if_gone(shard.clone(), b.id)).detach();
                }
            }
        }
        let Ok(_permit) = controller.decisions.acquire_permit(1).await else {
            return;
        };
        if controller.quorum.read_barrier().await.is_err() {
            continue;
        }
        let image = controller.quorum.image();
        let now = now_ms();
        let epoch = controller.quorum.status().leader_epoch;
        let registrations = registrations(&image);
        let expired = controller
            .sessions(&image, epoch, now)
            .expired(registrations.values(), now);
        if expired.is_empty() {
            continue;
        }
        let fenced: Vec<(i32, i64)> = expired
            .iter()
            .map(|id| (*id, registrations[id].epoch))
            .collect();
        let records = fencing(&image, &fenced);
        match controller.quorum.propose(&records).await {
            Ok(_) => tracing::warn!(
                brokers = ?expired,
                session_timeout_ms = controller.session_timeout_ms,
                "fenced brokers that sent no heartbeat within broker.session.timeout.ms"
            ),
            Err(e) => tracing::warn!("cannot fence brokers {expired:?}: {e}"),
        }
    }
}

/// Sends a Kafka-encoded BrokerRegistration to the active controller;
/// returns its Kafka-encoded response and the reason of an error.
pub async fn broker_registration(
    shard: &Rc<Shard>,
    version: i16,
    body: Vec<u8>,
) -> ControllerResult<(Vec<u8>, Option<String>)> {
    match call(shard, AdminRequest::BrokerRegistration { version, body }).await? {
        AdminAnswer::Broker { body, message } => Ok((body, message)),
        _ => Err(wrong_answer()),
    }
}

/// Sends a Kafka-encoded AlterPartition to the active controller; returns
/// its Kafka-encoded response.
pub async fn alter_partition_call(
    shard: &Rc<Shard>,
    version: i16,
    body: Vec<u8>,
) -> ControllerResult<(Vec<u8>, Option<String>)> {
    match call(shard, AdminRequest::AlterPartition { version, body }).await? {
        AdminAnswer::Broker { body, message } => Ok((body, message)),
        _ => Err(wrong_answer()),
    }
}

/// Sends a Kafka-encoded BrokerHeartbeat to the active controller.
pub async fn broker_heartbeat_call(
    shard: &Rc<Shard>,
    version: i16,
    body: Vec<u8>,
) -> ControllerResult<(Vec<u8>, Option<String>)> {
    match call(shard, AdminRequest::BrokerHeartbeat { version, body }).await? {
        AdminAnswer::Broker { body, message } => Ok((body, message)),
        _ => Err(wrong_answer()),
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
) -> Context<'a> {
    Context {
        brokers,
        random_below,
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
    requests: Vec<NewPartitions>,
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

/// Removes a broker's registration (UnregisterBroker) through the active
/// controller; callable from any shard.
pub async fn unregister_broker(
    shard: &Rc<Shard>,
    broker_id: i32,
) -> ControllerResult<Result<(), TopicError>> {
    match call(shard, AdminRequest::UnregisterBroker { broker_id }).await? {
        AdminAnswer::Altered(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Elects leaders (ElectLeaders) through the active controller; callable
/// from any shard. The outcomes are by topic.
pub async fn elect_leaders(
    shard: &Rc<Shard>,
    election: ElectionType,
    partitions: Option<Vec<(String, Vec<i32>)>>,
) -> ControllerResult<BTreeMap<String, Vec<ElectionOutcome>>> {
    match call(
        shard,
        AdminRequest::ElectLeaders {
            election,
            partitions,
        },
    )
    .await?
    {
        AdminAnswer::Elected(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Starts, changes or cancels reassignments (AlterPartitionReassignments)
/// through the active controller; an outcome per partition, in the order
/// asked.
pub async fn alter_reassignments(
    shard: &Rc<Shard>,
    requests: Vec<ReassignmentRequest>,
    allow_replication_factor_change: bool,
) -> ControllerResult<Vec<ReassignmentOutcome>> {
    match call(
        shard,
        AdminRequest::AlterReassignments {
            requests,
            allow_replication_factor_change,
        },
    )
    .await?
    {
        AdminAnswer::Reassigned(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// The reassignments in progress, as the active controller's image holds
/// them (ListPartitionReassignments).
pub async fn list_partition_reassignments(
    shard: &Rc<Shard>,
    partitions: Option<Vec<(String, Vec<i32>)>>,
) -> ControllerResult<Vec<OngoingReassignment>> {
    match call(shard, AdminRequest::ListReassignments { partitions }).await? {
        AdminAnswer::Reassignments(r) => Ok(r),
        _ => Err(wrong_answer()),
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
            glommio::timer::sleep(STOP_POLL.min(every)).await;
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
/// The replication throttle rates are `broker`'s own when it is named, the
/// cluster's otherwise.
pub async fn alter_broker_configs(
    shard: &Rc<Shard>,
    broker: Option<i32>,
    changes: Vec<(String, Option<String>)>,
    incremental: bool,
    validate_only: bool,
) -> ControllerResult<Result<(), TopicError>> {
    let request = match broker {
        None => AdminRequest::AlterBrokerConfigs {
            changes,
            incremental,
            validate_only,
        },
        Some(broker) => AdminRequest::AlterOneBrokerConfigs {
            broker,
            changes,
            incremental,
            validate_only,
        },
    };
    match call(shard, request).await? {
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
    // Every shard applies it at once: each opens and transitions its own
    // partitions. The cross-shard replies come through `submit_to`'s relay,
    // so awaiting these tasks is safe (ARCHITECTURE.md's sharp edges).
    let applying: Vec<_> = (0..shard.shard_count())
        .map(|s| {
            let shard = shard.clone();
            let image = image.clone();
            glommio::spawn_local(async move {
                shard
                    .submit_to(
                        s,
                        move |shard| async move { apply_image(&shard, image).await },
                    )
                    .await
            })
        })
        .collect();
    let mut result = Ok(());
    for task in applying {
        let applied = task.await;
        if result.is_ok() {
            result = applied.and_then(|r| r);
        }
    }
    result
}

/// A shard's `apply_image` state: whose turn it is, and the image its
/// partitions were last brought in line with.
struct ImageApplier {
    turn: glommio::sync::Semaphore,
    applied: RefCell<Option<Arc<MetadataImage>>>,
}

impl ImageApplier {
    fn of(shard: &Shard) -> Rc<ImageApplier> {
        if let Some(a) = shard.extension::<ImageApplier>() {
            return a;
        }
        let a = Rc::new(ImageApplier {
            turn: glommio::sync::Semaphore::new(1),
            applied: RefCell::new(None),
        });
        shard.set_extension(a.clone());
        a
    }
}

/// Brings one shard in line with `image`: opens the partitions it owns
/// that have a replica on this broker and that it does not have yet (as
/// leader, recording the epoch start, or as a follower, which only holds
/// its own log until replication copies data), deletes those whose topic
/// is gone, and applies changed topic settings.
pub async fn apply_image(shard: &Rc<Shard>, image: Arc<MetadataImage>) -> LogResult<()> {
    let broker = BrokerState::of(shard);
    if image.offset < broker.image().offset {
        return Ok(());
    }
    let replaced = broker.image();
    broker.set_image(image.clone());
    if !broker.is_caught_up() {
        // The images before this node caught up with the quorum are old
        // ones replayed from its metadata log. Roles taken from them would
        // make this replica a leader of an old epoch, whose epoch-cache
        // entry truncates the newer ones, and it would believe it served
        // that epoch's HW (found by the fault suite). As Kafka does,
        // replicas apply only the image current once the node has caught
        // up and registered (`start_controller` publishes it then).
        return Ok(());
    }
    // One image's transitions at a time on a shard. They await partition
    // opens and locks; run concurrently, an older image (the one published
    // at startup, say) could finish after a newer one and delete the
    // partition the newer one created, as a stray, or restore old settings.
    let applier = ImageApplier::of(shard);
    let Ok(_turn) = applier.turn.acquire_permit(1).await else {
        return Ok(());
    };
    if broker.image().offset > image.offset {
        // A newer image came meanwhile: it brings the shard in line with
        // everything up to it, after this turn.
        return Ok(());
    }
    // What the shard was last brought in line with decides which missing
    // partitions this image removed.
    let previous = applier.applied.borrow().clone().unwrap_or(replaced);
    // The partitions this shard owns with a replica here. Their
    // transitions are independent (each under its own log's lock), so they
    // run PARTITION_OPENS_IN_FLIGHT at a time. New leaders' epoch entries
    // reach their checkpoints afterwards, in the background: written here,
    // one file creation and two fsyncs each, they held a restart with
    // 10,000 partitions for 3-5 s before it served.
    let mut assigned = Vec::new();
    for topic in image.topics.values() {
        let (config, min_insync_replicas) = topic_settings(&broker, &image, topic);
        for (&p, part) in &topic.partitions {
            let tp = TopicPartition::new(topic.name.clone(), p);
            if shard.owner(&tp) != shard.id() || !part.replicas.contains(&broker.node_id()) {
                continue;
            }
            assigned.push((
                tp,
                config.clone(),
                assignment_from(part, min_insync_replicas),
            ));
        }
    }
    let applied = {
        let shard = shard.clone();
        map_concurrently(
            assigned,
            PARTITION_OPENS_IN_FLIGHT,
            move |(tp, config, assignment)| {
                let shard = shard.clone();
                async move {
                    let lags = apply_assignment(&shard, tp.clone(), config, assignment).await;
                    (tp, lags)
                }
            },
        )
        .await
    };
    let mut deferred = Vec::new();
    let mut failure = None;
    for (tp, result) in applied {
        match result {
            Ok(true) => deferred.push(tp),
            Ok(false) => {}
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    persist_deferred_epochs(shard, deferred);
    if let Some(e) = failure {
        return Err(e);
    }
    // A local partition missing from the image is deleted only when this
    // image removed it (the previous one had it), or, once this node has
    // caught up with the quorum, as a stray. An image replayed at startup
    // may be older than the partition: deleting then would destroy a
    // replica the quorum still assigns here.
    // A replica that a reassignment moved off this broker goes the same
    // way, once the reassignment has completed (the image no longer lists
    // this broker): its fetcher stops with it.
    let caught_up = broker.is_caught_up();
    let me = broker.node_id();
    let assigned_here = |image: &MetadataImage, tp: &TopicPartition| {
        image
            .partition(&tp.topic, tp.partition)
            .is_some_and(|p| p.replicas.contains(&me))
    };
    for tp in shard.local_partitions() {
        if assigned_here(&image, &tp) {
            continue;
        }
        let removed_now = assigned_here(&previous, &tp);
        if removed_now || caught_up {
            if image.partition(&tp.topic, tp.partition).is_some() {
                tracing::info!(
                    partition = %tp,
                    "a reassignment moved this replica to other brokers: deleting it"
                );
            }
            if tp.topic == OFFSETS_TOPIC {
                GroupCoordinator::of(shard).on_lost_leadership(tp.partition);
            }
            replicas::forget(shard, &tp);
            crate::server::partition_load::PartitionLoad::of(shard).forget(&tp);
            shard.delete_local_partition(&tp).await?;
        }
    }
    *applier.applied.borrow_mut() = Some(image);
    Ok(())
}

/// A topic's log settings on this broker, and its `min.insync.replicas`.
fn topic_settings(
    broker: &BrokerState,
    image: &MetadataImage,
    topic: &crate::metadata::image::TopicImage,
) -> (LogConfig, usize) {
    let overrides = dynamic_broker_config::effective_overrides(image, &topic.configs);
    (
        topic_config::log_config(&broker.config, &overrides),
        topic_config::min_insync_replicas(&overrides),
    )
}

fn assignment_from(
    part: &crate::metadata::image::PartitionImage,
    min_insync_replicas: usize,
) -> Assignment {
    Assignment {
        leader: part.leader,
        leader_epoch: part.leader_epoch,
        partition_epoch: part.partition_epoch,
        replicas: part.replicas.clone(),
        isr: part.isr.clone(),
        min_isr: effective_min_isr(min_insync_replicas, part.replicas.len()),
    }
}

/// Opens `tp` on this shard, its owner now, and applies its assignment in
/// the shard's current image: how a partition moved from another shard
/// takes up its role again. A partition the image no longer assigns here
/// (its topic deleted, or reassigned away, during the move) is deleted, as
/// applying that image would have done.
pub async fn adopt_partition(shard: &Rc<Shard>, tp: TopicPartition) -> LogResult<()> {
    let broker = BrokerState::of(shard);
    let image = broker.image();
    let assigned = image.topic(&tp.topic).and_then(|topic| {
        let part = topic.partitions.get(&tp.partition)?;
        if !part.replicas.contains(&broker.node_id()) {
            return None;
        }
        let (config, min_insync_replicas) = topic_settings(&broker, &image, topic);
        Some((config, assignment_from(part, min_insync_replicas)))
    });
    match assigned {
        Some((config, assignment)) if broker.is_caught_up() => {
            if apply_assignment(shard, tp.clone(), config, assignment).await? {
                persist_deferred_epochs(shard, vec![tp]);
            }
            Ok(())
        }
        // Not serving yet: the image applied once caught up opens it.
        Some(_) => Ok(()),
        None => {
            shard
                .open_local_partition(tp.clone(), broker.config.log.clone())
                .await?;
            shard.delete_local_partition(&tp).await
        }
    }
}

/// Opens one assigned partition if needed and applies its assignment:
/// its settings, and the leader or follower transition. Returns whether a
/// new leader's epoch entry is still to be written to its checkpoint
/// (`persist_deferred_epochs`).
async fn apply_assignment(
    shard: &Rc<Shard>,
    tp: TopicPartition,
    config: LogConfig,
    assignment: Assignment,
) -> LogResult<bool> {
    let broker = BrokerState::of(shard);
    if shard.local_log(&tp).is_none() {
        shard
            .open_local_partition(tp.clone(), config.clone())
            .await?;
    }
    let Some(log) = shard.local_log(&tp) else {
        return Ok(false);
    };
    let mut log = log.write().await.map_err(|_| stopped())?;
    if log.config() != &config {
        log.set_config(config);
    }
    let state = Replicas::of(shard).get_or_create(
        &tp,
        &log,
        broker.node_id(),
        shard.checkpointed_high_watermark(&tp),
        broker.config.replication.lag_time_max_ms as i64,
    );
    let (leader_epoch, isr) = (assignment.leader_epoch, assignment.isr.clone());
    // The log's write lock is held across the transition and the
    // epoch-cache update, so no append sees a leader without its epoch
    // entry.
    let transition = state.borrow_mut().apply_assignment(&assignment, now_ms());
    let mut epoch_checkpoint_lags = false;
    match transition {
        Transition::BecameLeader { epoch_start_offset } => {
            // Kafka's makeLeader: the new epoch starts at the LEO. The
            // checkpoint is written later (`persist_deferred_epochs`), or by
            // the epoch's first append, before its batches.
            if log.epoch_cache().latest_epoch() != Some(leader_epoch) {
                epoch_checkpoint_lags =
                    log.assign_leader_epoch_in_memory(leader_epoch, epoch_start_offset)?;
            }
            replicas::sync_high_watermark(shard, &tp, &mut log);
            drop(log);
            tracing::info!(
                partition = %tp,
                leader_epoch,
                isr = ?isr,
                "leading the partition from offset {epoch_start_offset}"
            );
            if tp.topic == OFFSETS_TOPIC {
                GroupCoordinator::of(shard).on_became_leader(shard, tp.partition);
            }
        }
        Transition::BecameFollower { leader } => {
            drop(log);
            tracing::info!(
                partition = %tp,
                leader_epoch,
                "following broker {}",
                leader.map_or("(none: the partition is offline)".to_string(), |l| l.to_string())
            );
            if tp.topic == OFFSETS_TOPIC {
                GroupCoordinator::of(shard).on_lost_leadership(tp.partition);
            }
            if let Some(leader) = leader {
                ReplicaFetchers::of(shard).follow(shard, tp.clone(), leader);
            }
        }
        Transition::IsrChanged { .. } => {
            replicas::sync_high_watermark(shard, &tp, &mut log);
        }
        Transition::Unchanged => {}
    }
    if transition != Transition::Unchanged {
        replicas::after_transition(shard, &tp);
    }
    Ok(epoch_checkpoint_lags)
}

/// Writes the leader-epoch checkpoints that leader transitions left in
/// memory, `PARTITION_OPENS_IN_FLIGHT` at a time, in the background: a
/// restart with thousands of partitions serves first. A failed write takes
/// its partition offline, as any checkpoint failure does.
fn persist_deferred_epochs(shard: &Rc<Shard>, partitions: Vec<TopicPartition>) {
    if partitions.is_empty() {
        return;
    }
    let shard = shard.clone();
    glommio::spawn_local(async move {
        map_concurrently(partitions, PARTITION_OPENS_IN_FLIGHT, move |tp| {
            let shard = shard.clone();
            async move {
                let Some(log) = shard.local_log(&tp) else {
                    return;
                };
                let Ok(mut log) = log.write().await else {
                    return;
                };
                if let Err(e) = log.persist_epoch_checkpoint().await {
                    tracing::warn!(partition = %tp, "leader-epoch checkpoint not written: {e}");
                }
            }
        })
        .await;
    })
    .detach();
}
