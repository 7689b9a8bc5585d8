//! The Raft quorum that replicates the metadata log: openraft on glommio,
//! hidden behind [`Quorum`] so that no openraft type leaks into the rest
//! of pinlog.
//!
//! - `runtime.rs`: openraft's runtime on glommio (its conformance suite
//!   runs in the unit tests);
//! - `log_store.rs`: the Raft log on `__cluster_metadata-0`;
//! - `state_machine.rs`: committed entries applied to the image, which a
//!   publisher task then publishes to every shard; snapshots as
//!   `.checkpoint` files;
//! - `network.rs`: the controllers' RPCs and forwarded admin requests;
//! - `upgrade.rs`: a metadata log of the release before the quorum becomes
//!   the quorum's first snapshot.
//!
//! The quorum runs on shard 0 of every controller and must only be driven
//! from there: its channels wake only local tasks.

pub mod log_store;
pub mod metadata_log;
pub mod network;
pub mod observer;
pub mod reconnect;
pub mod runtime;
pub mod state_machine;
pub mod types;
pub mod upgrade;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::impls::BasicNode;
use openraft::rt::watch::WatchReceiver;
use openraft::{Config, ReadPolicy, ServerState, SnapshotPolicy};

use crate::log::data_dir::{DataDirState, PartitionOffsets};
use crate::log::partition_log::{OpenParams, StorageFailures};
use crate::metadata::image::MetadataImage;
use crate::metadata::records::MetadataRecord;
use crate::node::stop::StopHandle;
use crate::quorum::log_store::{LogCloser, LogStore};
use crate::quorum::metadata_log::metadata_partition;
use crate::quorum::network::{
    ForwardHandler, PeerClients, PeerConnection, PeerError, PeerRequest, PeerResponse,
};
pub use crate::quorum::state_machine::Publish;
use crate::quorum::state_machine::StateMachine;
use crate::quorum::types::{Proposal, Raft};

/// Entries between two snapshots of the metadata log. Kafka's trigger is
/// `metadata.log.max.record.bytes.between.snapshots` (20 MiB); a pinlog
/// entry is one controller decision, a few hundred bytes to a few
/// kilobytes, so this is the same order of size.
pub const METADATA_SNAPSHOT_ENTRIES: u64 = 10_000;
/// Entries kept behind a snapshot, so that a briefly lagging voter catches
/// up from the log rather than by a snapshot.
const ENTRIES_KEPT_BEHIND_SNAPSHOT: u64 = 1_000;
/// How often a starting node looks at whether the quorum has caught it up,
/// and how often it says it is still waiting.
const READY_POLL: Duration = Duration::from_millis(20);
const READY_LOG_EVERY: Duration = Duration::from_secs(5);

/// Who votes, and how fast the quorum reacts (Kafka's `controller.quorum.*`).
#[derive(Debug, Clone)]
pub struct QuorumSettings {
    pub node_id: i32,
    /// `controller.quorum.voters`: each voter's id and controller address.
    pub voters: BTreeMap<i32, String>,
    /// `controller.listen`; `None` for a one-voter quorum without peers.
    /// A node that is not a voter (`process.roles=broker`) listens here
    /// for the metadata log the active controller sends it.
    pub listen: Option<SocketAddr>,
    /// The host the voters reach a non-voter's `listen` at (its
    /// advertised host); unused on voters.
    pub observer_host: String,
    /// `controller.quorum.election.timeout.ms` (Kafka: 1000): the random
    /// spread of election timeouts.
    pub election_timeout_ms: u64,
    /// `controller.quorum.fetch.timeout.ms` (Kafka: 2000): how long a voter
    /// waits to hear from a leader before it stands for election.
    pub fetch_timeout_ms: u64,
    /// `controller.quorum.request.timeout.ms` (Kafka: 2000): how long an
    /// RPC to a peer, or a request forwarded to the leader, may take.
    pub request_timeout_ms: u64,
    /// The controller channel's mutual TLS; `None` in the clear.
    pub tls: Option<std::sync::Arc<crate::security::controller_channel::ControllerChannelTls>>,
}

/// Why a proposal or a forwarded request did not go through.
#[derive(Debug, Clone, thiserror::Error)]
pub enum QuorumError {
    #[error("this node is not the active controller{}", leader_hint(*.leader))]
    NotLeader { leader: Option<i32> },
    #[error("there is no active controller: the quorum is electing one; retry shortly")]
    NoLeader,
    #[error("the active controller did not answer in time: {0}")]
    Timeout(String),
    #[error("the active controller (node {leader}) cannot be reached ({why}); if it is down the quorum elects another within controller.quorum.fetch.timeout.ms; retry shortly")]
    Unreachable { leader: i32, why: String },
    #[error("the controller quorum has stopped: {0}")]
    Stopped(String),
}

fn leader_hint(leader: Option<i32>) -> String {
    match leader {
        Some(id) => format!(" (node {id} is)"),
        None => String::new(),
    }
}

/// One voter's progress, as the leader sees it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct VoterStatus {
    pub node_id: i32,
    pub address: String,
    /// Next offset the voter is known to hold; -1 when unknown.
    pub log_end_offset: i64,
    /// Milliseconds since the leader last heard from it; `None` if never.
    pub last_ack_ms_ago: Option<u64>,
}

/// The quorum as this node sees it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct QuorumStatus {
    pub leader: Option<i32>,
    /// The Raft term: the metadata partition's leader epoch.
    pub leader_epoch: i32,
    /// Next offset after the last committed entry.
    pub high_watermark: i64,
    pub voters: Vec<VoterStatus>,
    pub is_leader: bool,
    /// Nodes that learn the log without voting (broker-only nodes), with
    /// their progress as the leader knows it; their address is the one
    /// the leader sends the log to.
    pub observers: Vec<VoterStatus>,
}

/// Which of a node's connections to the active controller a forwarded
/// request takes. Each carries one request at a time, so a broker's
/// registration and heartbeats have one of their own, as Kafka's broker
/// lifecycle manager has its own channel: behind a slow admin request or
/// ISR change (seconds, when the controller has a backlog) a heartbeat
/// would wait out the broker's session, and the broker be fenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ForwardLane {
    /// BrokerRegistration and BrokerHeartbeat.
    Lifecycle,
    /// Every other request.
    Requests,
}

/// A connection that several tasks take turns on.
type SharedPeerConnection = Rc<glommio::sync::RwLock<PeerConnection>>;

/// The metadata quorum of one node.
pub struct Quorum {
    raft: Raft,
    state_machine: StateMachine,
    log: LogCloser,
    settings: QuorumSettings,
    /// Connections to the other voters for forwarded requests.
    forward_connections: RefCell<HashMap<(i32, ForwardLane), SharedPeerConnection>>,
    /// Stops the controller listener and its connections. Its own, not the
    /// broker's: a stopping node stays a voter until the quorum shuts
    /// down, so that it acknowledges appends while it drains and learns
    /// who took over after a handover.
    network_stop: StopHandle,
    /// Set by [`Quorum::shutdown`]: the Raft member is gone, and the
    /// controller's timers that still run answer themselves instead of
    /// asking it (openraft logs an error for every call after shutdown).
    shut_down: Cell<bool>,
}

impl Drop for Quorum {
    fn drop(&mut self) {
        self.network_stop.request();
    }
}

impl Quorum {
    /// Opens the metadata log and starts this node's Raft member (and its
    /// controller listener when there are peers). Startup, shard 0 only.
    pub async fn start(
        data_dir: &Path,
        startup: &DataDirState,
        settings: QuorumSettings,
        publish: Publish,
        forward: ForwardHandler,
        failures: StorageFailures,
    ) -> Result<Rc<Quorum>, String> {
        let voter = settings.voters.contains_key(&settings.node_id);
        if voter {
            refuse_duplicate_node_id(&settings).await?;
        }
        let tp = metadata_partition();
        let now = crate::shard::shard::now_ms();
        let params = || OpenParams {
            recovery_point: startup.recovery_point(&tp),
            log_start_offset: startup.log_start_offset(&tp),
            clean_shutdown: startup.clean_shutdown,
            now_ms: now,
        };
        let members = membership(&settings);
        upgrade::migrate_pre_quorum_log(data_dir, params(), &members)
            .await
            .map_err(|e| format!("cannot migrate the metadata log to the quorum: {e}"))?;
        let log_store = LogStore::open(data_dir, params(), Some(failures))
            .await
            .map_err(|e| format!("cannot open the metadata log: {e}"))?;
        let dir = data_dir.join(tp.dir_name());
        let state_machine = StateMachine::open(&dir, publish).map_err(|e| {
            format!(
                "cannot read the metadata snapshot in {}: {e}",
                dir.display()
            )
        })?;
        let pristine = log_store.is_pristine() && state_machine.image().offset < 0;
        let log = log_store.closer();
        let config = Config {
            cluster_name: "pinlog-metadata".into(),
            // A voter that hears nothing from a leader for the fetch timeout
            // stands for election, after a random extra of up to the
            // election timeout, as KRaft's voters do.
            election_timeout_min: settings.fetch_timeout_ms,
            election_timeout_max: settings.fetch_timeout_ms + settings.election_timeout_ms.max(1),
            // Followers must hear from the leader well within the fetch
            // timeout; a quarter of it survives a lost heartbeat or two.
            heartbeat_interval: (settings.fetch_timeout_ms / 4).max(1),
            install_snapshot_timeout: settings.request_timeout_ms,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(METADATA_SNAPSHOT_ENTRIES),
            max_in_snapshot_log_to_keep: ENTRIES_KEPT_BEHIND_SNAPSHOT,
            enable_pre_vote: Some(true),
            // The state machine lives in memory and the committed id is
            // not persisted: a restarted leader must win an election
            // before it leads again, or it could lead with a stale image.
            enable_leader_restore: Some(false),
            ..Config::default()
        };
        let config = Arc::new(
            config
                .validate()
                .map_err(|e| format!("invalid controller.quorum.* settings: {e}"))?,
        );
        let node_id = settings.node_id as u64;
        let raft = Raft::new(
            node_id,
            config,
            PeerClients {
                tls: settings.tls.clone(),
                voters: settings.voters.keys().map(|&id| id as u64).collect(),
            },
            log_store,
            state_machine.clone(),
        )
        .await
        .map_err(|e| format!("cannot start the metadata quorum: {e}"))?;
        if pristine && voter {
            // Every voter of a new quorum proposes the same first entry (the
            // voter set at index 0), so it does not matter who goes first.
            if let Err(e) = raft.initialize(members.clone()).await {
                tracing::debug!("quorum already initialized: {e}");
            }
        }
        let network_stop = StopHandle::new();
        if let Some(addr) = settings.listen {
            let listener = glommio::net::TcpListener::bind(addr).map_err(|e| {
                format!(
                    "cannot listen for controllers on {addr} (controller.listen): {e}; is another node running with node.id {}? every node needs its own node.id and controller port",
                    settings.node_id
                )
            })?;
            let bound = listener
                .local_addr()
                .map_err(|e| format!("cannot read the controller listener's address: {e}"))?;
            glommio::spawn_local(network::serve(
                listener,
                settings.node_id,
                raft.clone(),
                forward,
                settings.tls.clone(),
                network_stop.clone(),
            ))
            .detach();
            if !voter {
                let address = format!("{}:{}", settings.observer_host, bound.port());
                glommio::spawn_local(observer::join(
                    raft.clone(),
                    settings.node_id,
                    address,
                    settings.voters.clone(),
                    settings.request_timeout_ms,
                    settings.tls.clone(),
                    network_stop.clone(),
                ))
                .detach();
            }
        } else if !voter {
            return Err(format!(
                "node {} is not a voter and has no controller.listen: the active controller \
                 could not send it the metadata log",
                settings.node_id
            ));
        }
        if voter && settings.voters.len() == 1 && !pristine {
            // The only voter needs no election timeout to win; KRaft's
            // single voter becomes leader at once too. (A new one already
            // is: initializing a one-voter quorum elects it.)
            raft.trigger()
                .elect(false)
                .await
                .map_err(|e| format!("the metadata quorum stopped: {e}"))?;
        }
        glommio::spawn_local(log_leader_changes(raft.clone(), settings.node_id)).detach();
        Ok(Rc::new(Quorum {
            raft,
            state_machine,
            log,
            settings,
            forward_connections: RefCell::new(HashMap::new()),
            network_stop,
            shut_down: Cell::new(false),
        }))
    }

    /// Waits until this node knows a leader and has applied every entry it
    /// knows to be committed, logging while it waits. Until then its image
    /// may lag the quorum's, and the node must not serve clients.
    pub async fn wait_until_caught_up(&self, stop: &StopHandle) -> Result<(), String> {
        let started = Instant::now();
        let mut last_log = Instant::now();
        loop {
            if stop.is_requested() {
                return Err("stopped while waiting for the controller quorum".into());
            }
            let m = self.raft.metrics().borrow_watched().clone();
            if let Err(e) = &m.running_state {
                return Err(format!("the metadata quorum stopped: {e}"));
            }
            if m.current_leader.is_some()
                && m.cluster_committed.is_some()
                && m.last_applied >= m.cluster_committed
            {
                tracing::info!(
                    leader = m.current_leader,
                    term = m.current_term,
                    applied = m.last_applied.map(|l| l.index),
                    waited_ms = started.elapsed().as_millis() as u64,
                    "caught up with the controller quorum"
                );
                return Ok(());
            }
            if last_log.elapsed() >= READY_LOG_EVERY {
                last_log = Instant::now();
                let voters: Vec<String> = self
                    .settings
                    .voters
                    .iter()
                    .map(|(id, a)| format!("{id}@{a}"))
                    .collect();
                tracing::warn!(
                    waited_s = started.elapsed().as_secs(),
                    leader = m.current_leader,
                    "waiting for the controller quorum ({}): a majority of the voters must be running and reachable on their controller listeners",
                    voters.join(",")
                );
            }
            glommio::timer::sleep(READY_POLL).await;
        }
    }

    /// The image of every committed entry applied so far.
    pub fn image(&self) -> Arc<MetadataImage> {
        self.state_machine.image()
    }

    /// The offset of the newest image that every shard of this node has
    /// applied: a change committed at or below it is visible to clients of
    /// this node.
    pub fn published_offset(&self) -> i64 {
        self.state_machine.published_offset()
    }

    /// `controller.quorum.request.timeout.ms`.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.settings.request_timeout_ms)
    }

    pub fn node_id(&self) -> i32 {
        self.settings.node_id
    }

    /// The active controller, if one is known.
    pub fn leader(&self) -> Option<i32> {
        self.raft
            .metrics()
            .borrow_watched()
            .current_leader
            .map(|id| id as i32)
    }

    pub fn is_leader(&self) -> bool {
        self.leader() == Some(self.settings.node_id)
    }

    /// Waits until this leader has applied everything committed before its
    /// term, so that decisions see the whole image (a read barrier).
    pub async fn read_barrier(&self) -> Result<(), QuorumError> {
        self.refuse_after_shutdown()?;
        match self.raft.ensure_linearizable(ReadPolicy::ReadIndex).await {
            Ok(_) => Ok(()),
            Err(e) => Err(match e.forward_to_leader() {
                Some(f) => self.not_leader(f.leader_id),
                None => QuorumError::Stopped(e.to_string()),
            }),
        }
    }

    fn refuse_after_shutdown(&self) -> Result<(), QuorumError> {
        if self.shut_down.get() {
            return Err(QuorumError::Stopped("this node is shutting down".into()));
        }
        Ok(())
    }

    fn not_leader(&self, leader: Option<u64>) -> QuorumError {
        match leader {
            Some(id) => QuorumError::NotLeader {
                leader: Some(id as i32),
            },
            None => QuorumError::NoLeader,
        }
    }

    /// Commits `records` as one entry; returns its offset once every shard
    /// of this node has applied it.
    pub async fn propose(&self, records: &[MetadataRecord]) -> Result<i64, QuorumError> {
        self.refuse_after_shutdown()?;
        match self.raft.client_write(Proposal::new(records)).await {
            Ok(r) => Ok(r.data.offset as i64),
            Err(e) => Err(match e.forward_to_leader() {
                Some(f) => self.not_leader(f.leader_id),
                None => QuorumError::Stopped(e.to_string()),
            }),
        }
    }

    /// Sends `request` to the active controller's forward handler, on the
    /// connection of `lane` (one request at a time on each).
    pub async fn forward(
        &self,
        request: Vec<u8>,
        lane: ForwardLane,
    ) -> Result<Vec<u8>, QuorumError> {
        let Some(leader) = self.leader() else {
            return Err(QuorumError::NoLeader);
        };
        let Some(addr) = self.settings.voters.get(&leader).cloned() else {
            return Err(QuorumError::NoLeader);
        };
        let connection = self
            .forward_connections
            .borrow_mut()
            .entry((leader, lane))
            .or_insert_with(|| {
                Rc::new(glommio::sync::RwLock::new(PeerConnection::new(
                    addr,
                    self.settings.tls.clone(),
                )))
            })
            .clone();
        let mut connection = connection
            .write()
            .await
            .map_err(|e| QuorumError::Stopped(e.to_string()))?;
        let timeout = Duration::from_millis(self.settings.request_timeout_ms);
        let answer = connection
            .call_for(&PeerRequest::Forward(request), timeout, |a| match a {
                PeerResponse::Forward(bytes) => Some(bytes),
                _ => None,
            })
            .await;
        match answer {
            Ok(bytes) => Ok(bytes),
            Err(PeerError::Unreachable { source, .. }) => Err(QuorumError::Unreachable {
                leader,
                why: source.to_string(),
            }),
            Err(e) => Err(QuorumError::Timeout(e.to_string())),
        }
    }

    /// The quorum as this node sees it; the leader knows every voter's
    /// progress, the others only their own.
    pub fn status(&self) -> QuorumStatus {
        let m = self.raft.metrics().borrow_watched().clone();
        let is_leader = m.state == ServerState::Leader;
        let replication = m.replication.clone().unwrap_or_default();
        let now = Instant::now();
        let acked: BTreeMap<u64, Option<u64>> = m
            .heartbeat
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|(id, at)| {
                (
                    id,
                    at.map(|t| now.saturating_duration_since(*t).as_millis() as u64),
                )
            })
            .collect();
        let own_end = m.last_log_index.map_or(0, |i| i as i64 + 1);
        let progress = |id: i32, address: String| {
            let is_self = id == self.settings.node_id;
            let log_end_offset = if is_self {
                own_end
            } else {
                replication
                    .get(&(id as u64))
                    .map_or(-1, |l| l.map_or(0, |l| l.index as i64 + 1))
            };
            VoterStatus {
                node_id: id,
                address,
                log_end_offset,
                last_ack_ms_ago: if is_self {
                    Some(0)
                } else {
                    acked.get(&(id as u64)).copied().flatten()
                },
            }
        };
        let voters = self
            .settings
            .voters
            .iter()
            .map(|(&id, address)| progress(id, address.clone()))
            .collect();
        let membership = m.membership_config.membership();
        let observers = membership
            .learner_ids()
            .map(|id| {
                let address = membership
                    .get_node(&id)
                    .map_or_else(String::new, |n| n.addr.clone());
                progress(id as i32, address)
            })
            .collect();
        QuorumStatus {
            leader: m.current_leader.map(|id| id as i32),
            leader_epoch: i32::try_from(m.current_term).unwrap_or(i32::MAX),
            high_watermark: m.cluster_committed.map_or(0, |l| l.index as i64 + 1),
            voters,
            is_leader,
            observers,
        }
    }

    /// On a clean stop of the active controller: hands the quorum's
    /// leadership to the most up-to-date voter that answered recently
    /// (openraft's TransferLeader; Kafka's controllers resign with
    /// EndQuorumEpoch), so that the quorum has a leader again at once
    /// instead of after `controller.quorum.fetch.timeout.ms` plus an
    /// election. Waits at most `controller.quorum.request.timeout.ms` for
    /// another node to lead; if none does, the stop goes on and the voters
    /// elect one as after a crash.
    pub async fn hand_over_leadership(&self) {
        if !self.is_leader() || self.settings.voters.len() < 2 {
            return;
        }
        let status = self.status();
        let candidates: Vec<(i32, i64, Option<u64>)> = status
            .voters
            .iter()
            .map(|v| (v.node_id, v.log_end_offset, v.last_ack_ms_ago))
            .collect();
        let Some(to) = successor(self.node_id(), &candidates, self.settings.fetch_timeout_ms)
        else {
            tracing::info!(
                "no other controller answered within controller.quorum.fetch.timeout.ms: the \
                 quorum elects the next active controller once this one stops"
            );
            return;
        };
        let started = Instant::now();
        if let Err(e) = self.raft.trigger().transfer_leader(to as u64).await {
            tracing::warn!("handing the quorum leadership to node {to} failed: {e}");
            return;
        }
        let deadline = started + self.request_timeout();
        while Instant::now() < deadline {
            if let Some(leader) = self.leader().filter(|l| *l != self.node_id()) {
                tracing::info!(
                    "handed the quorum leadership to node {leader} in {} ms",
                    started.elapsed().as_millis()
                );
                return;
            }
            glommio::timer::sleep(HANDOVER_POLL).await;
        }
        tracing::warn!(
            "node {to} did not take the quorum leadership within \
             controller.quorum.request.timeout.ms; stopping anyway, and the voters elect one"
        );
    }

    /// On the active controller: stops sending the log to `node_id` if it
    /// is an observer (a broker-only node whose registration is gone).
    /// Best effort: a failure is logged, and the node asks to be added
    /// again if it ever comes back.
    pub async fn remove_observer(&self, node_id: i32) {
        if let Err(e) = observer::remove(&self.raft, node_id).await {
            tracing::warn!("cannot remove node {node_id} from the quorum's observers: {e}");
        }
    }

    /// Stops the Raft member and closes the metadata log.
    pub async fn shutdown(&self) -> Result<Option<PartitionOffsets>, String> {
        self.network_stop.request();
        self.shut_down.set(true);
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!("the metadata quorum did not stop cleanly: {e}");
        }
        if !self
            .state_machine
            .stop_publishing(PUBLISHER_STOP_WAIT)
            .await
        {
            tracing::warn!(
                "a metadata image was still being applied to the shards {PUBLISHER_STOP_WAIT:?} \
                 after the quorum stopped; the shards close their logs regardless"
            );
        }
        self.log.close().await.map_err(|e| e.to_string())
    }
}

/// How long a stopping quorum waits for the image publication under way:
/// it opens and deletes partitions on the shards, which must not happen
/// after they closed their logs.
const PUBLISHER_STOP_WAIT: Duration = Duration::from_secs(30);

/// How often a handover looks for the new leader.
const HANDOVER_POLL: Duration = Duration::from_millis(10);

/// The voter to hand the leadership to: of the others that acknowledged
/// the leader within `fetch_timeout_ms`, the one with the longest log (it
/// needs the least to catch up before it may lead), the lowest id on a tie.
/// `voters` are `(node id, log end offset, ms since its last ack)`.
fn successor(
    own_id: i32,
    voters: &[(i32, i64, Option<u64>)],
    fetch_timeout_ms: u64,
) -> Option<i32> {
    voters
        .iter()
        .filter(|(id, _, ack)| *id != own_id && ack.is_some_and(|ms| ms <= fetch_timeout_ms))
        .max_by_key(|(id, end, _)| (*end, std::cmp::Reverse(*id)))
        .map(|(id, _, _)| *id)
}

/// How long the duplicate-id probe waits for an answer at this node's own
/// voter address.
const WHOIS_TIMEOUT: Duration = Duration::from_millis(500);

/// Refuses to start when another process already answers at this node's
/// voter address: two processes with one `node.id` would both vote as it.
async fn refuse_duplicate_node_id(settings: &QuorumSettings) -> Result<(), String> {
    if settings.voters.len() < 2 {
        return Ok(());
    }
    let Some(own) = settings.voters.get(&settings.node_id) else {
        return Ok(());
    };
    let mut probe = PeerConnection::new(own.clone(), settings.tls.clone());
    match probe.call(&PeerRequest::Whois, WHOIS_TIMEOUT).await {
        Ok(PeerResponse::Whois { node_id }) => Err(format!(
            "another node (node.id {node_id}) already answers at {own}, this node's entry in controller.quorum.voters; every node needs its own node.id: check node.id and controller.quorum.voters"
        )),
        // Nothing there (the usual case), or something that is no pinlog
        // controller: binding the listener tells.
        _ => Ok(()),
    }
}

/// Logs every change of the active controller, as seen by this voter.
async fn log_leader_changes(raft: Raft, node_id: i32) {
    let mut metrics = raft.metrics();
    let mut last: Option<(Option<u64>, u64)> = None;
    loop {
        let now = {
            let m = metrics.borrow_watched();
            (m.current_leader, m.current_term)
        };
        if last.map(|l| l.0) != Some(now.0) {
            match now.0 {
                Some(id) if id as i32 == node_id => {
                    tracing::info!(epoch = now.1, "this node is now the active controller")
                }
                Some(id) => tracing::info!(epoch = now.1, "the active controller is node {id}"),
                None if last.is_some() => tracing::warn!(
                    epoch = now.1,
                    "no active controller: the quorum is electing one"
                ),
                None => {}
            }
            last = Some(now);
        }
        if metrics.changed().await.is_err() {
            return;
        }
    }
}

/// The voter set, with each voter's controller address.
fn membership(settings: &QuorumSettings) -> BTreeMap<u64, BasicNode> {
    settings
        .voters
        .iter()
        .map(|(&id, addr)| (id as u64, BasicNode::new(addr.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::testing::log::{StoreBuilder, Suite};
    use openraft::StorageError;

    use crate::quorum::types::MetadataRaft;

    #[test]
    fn the_successor_is_the_live_voter_with_the_longest_log() {
        // Node 1 leads; 2 is behind, 3 is level with the leader, 4 is level
        // too but has not answered for longer than the fetch timeout.
        let voters = [
            (1, 100, Some(0)),
            (2, 90, Some(50)),
            (3, 100, Some(40)),
            (4, 100, Some(5_000)),
        ];
        assert_eq!(successor(1, &voters, 2_000), Some(3));
        // A tie goes to the lower id.
        let tie = [(1, 100, Some(0)), (3, 100, Some(10)), (2, 100, Some(10))];
        assert_eq!(successor(1, &tie, 2_000), Some(2));
        // Nobody else answered: no handover.
        let alone = [(1, 100, Some(0)), (2, 100, None), (3, 100, Some(9_000))];
        assert_eq!(successor(1, &alone, 2_000), None);
    }

    /// A fresh metadata partition and state machine in a temporary
    /// directory, which the guard keeps until the test ends.
    struct MetadataStores;

    impl StoreBuilder<MetadataRaft, LogStore, StateMachine, tempfile::TempDir> for MetadataStores {
        async fn build(
            &self,
        ) -> Result<(tempfile::TempDir, LogStore, StateMachine), StorageError<MetadataRaft>>
        {
            let dir = tempfile::tempdir().expect("temporary directory");
            let params = OpenParams {
                recovery_point: 0,
                log_start_offset: 0,
                clean_shutdown: false,
                now_ms: 0,
            };
            let log = LogStore::open(dir.path(), params, None)
                .await
                .expect("open the metadata log");
            let sm_dir = dir.path().join(metadata_partition().dir_name());
            let publish: Publish = Rc::new(|_image| Box::pin(async {}));
            let sm = StateMachine::open(&sm_dir, publish).expect("open the state machine");
            Ok((dir, log, sm))
        }
    }

    /// openraft's own conformance suite for log storage and state
    /// machines, against `__cluster_metadata-0` on pinlog's storage engine.
    #[test]
    fn metadata_log_passes_openraft_storage_suite() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                Suite::test_all(MetadataStores)
                    .await
                    .expect("storage suite");
            })
            .expect("executor")
            .join()
            .expect("suite thread");
    }

    fn params() -> OpenParams {
        OpenParams {
            recovery_point: 0,
            log_start_offset: 0,
            clean_shutdown: false,
            now_ms: 0,
        }
    }

    /// Entries, the vote, a purge and a truncation survive closing and
    /// reopening the partition (and a crash: the reopen runs recovery).
    #[test]
    fn the_raft_log_survives_a_restart() {
        use openraft::entry::RaftEntry;
        use openraft::storage::{IOFlushed, RaftLogReader, RaftLogStorage};

        use crate::quorum::types::{log_id, Entry, Vote};

        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let dir = tempfile::tempdir().unwrap();
                let records = [MetadataRecord::ProducerIds {
                    next_producer_id: 7,
                }];
                let mut store = LogStore::open(dir.path(), params(), None).await.unwrap();
                let entries: Vec<Entry> = (0..6u64)
                    .map(|i| {
                        if i % 2 == 0 {
                            Entry::new_blank(log_id(1 + i / 3, i))
                        } else {
                            Entry::new_normal(log_id(1 + i / 3, i), Proposal::new(&records))
                        }
                    })
                    .collect();
                store
                    .append(entries.clone(), IOFlushed::noop())
                    .await
                    .unwrap();
                let vote = Vote::new_committed(2, 1);
                store.save_vote(&vote).await.unwrap();
                store.purge(log_id(1, 1)).await.unwrap();
                store.truncate_after(Some(log_id(2, 4))).await.unwrap();
                // No clean close: the reopen recovers the segment.
                drop(store);

                let mut store = LogStore::open(dir.path(), params(), None).await.unwrap();
                let state = store.get_log_state().await.unwrap();
                assert_eq!(state.last_purged_log_id, Some(log_id(1, 1)));
                assert_eq!(state.last_log_id, Some(log_id(2, 4)));
                assert_eq!(store.read_vote().await.unwrap(), Some(vote));
                let read = store.try_get_log_entries(0..10).await.unwrap();
                assert_eq!(read, entries[2..5].to_vec());
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
