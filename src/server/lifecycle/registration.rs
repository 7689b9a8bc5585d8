//! The broker's side of its lifecycle (seed 003): once the node has caught
//! up with the metadata quorum, it registers with the active controller
//! (Kafka's BrokerRegistration, with a new incarnation id per process),
//! heartbeats (BrokerHeartbeat, with its metadata offset) until it is
//! unfenced, and only then serves clients. It keeps heartbeating every
//! `broker.heartbeat.interval.ms`; a controller that stopped hearing from
//! it fences it, and the next heartbeat that finds it caught up unfences it.
//!
//! The requests use Kafka's own schemas (protocol/src/messages/
//! broker_registration.rs) and reach the active controller through the
//! controller's forwarding, as Kafka's brokers send them over their
//! controller channel.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::BytesMut;

use crate::log::data_dir::record_registration;
use crate::node::ids::random_uuid;
use crate::node::state::BrokerState;
use crate::node::stop::StopHandle;
use crate::protocol::codec::Reader;
use crate::protocol::error_code;
use crate::protocol::messages::broker_registration::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse, RegistrationListener,
};
use crate::server::controller;
use crate::shard::shard::Shard;

/// BrokerRegistration version sent (v3 adds `previous_broker_epoch`).
const REGISTRATION_VERSION: i16 = 3;
/// BrokerHeartbeat version sent.
const HEARTBEAT_VERSION: i16 = 1;
/// How soon a broker asks again while it waits for a controller, or to be
/// unfenced at startup.
const RETRY: Duration = Duration::from_millis(50);
/// How often a broker that waits says so.
const WAIT_LOG_EVERY: Duration = Duration::from_secs(5);

/// Why a broker cannot join: the setting to change is in the message.
#[derive(Debug)]
pub struct JoinRefused(pub String);

/// This process's registration.
pub struct Lifecycle {
    incarnation_id: [u8; 16],
    epoch: Cell<i64>,
    fenced: Cell<bool>,
    cluster_id: Option<String>,
}

impl Lifecycle {
    pub fn broker_epoch(&self) -> i64 {
        self.epoch.get()
    }
}

/// Registers this node and waits until it is unfenced. `cluster_id` is the
/// one in `meta.properties`, `None` for an empty data directory (which
/// adopts the quorum's).
pub async fn join(
    shard: &Rc<Shard>,
    cluster_id: Option<String>,
    stop: &StopHandle,
) -> Result<Rc<Lifecycle>, JoinRefused> {
    let lifecycle = Rc::new(Lifecycle {
        incarnation_id: random_uuid(),
        epoch: Cell::new(-1),
        fenced: Cell::new(true),
        cluster_id,
    });
    let started = Instant::now();
    let mut last_log = Instant::now();
    register(shard, &lifecycle, stop).await?;
    while lifecycle.fenced.get() {
        if stop.is_requested() {
            return Err(JoinRefused("stopped while waiting to be unfenced".into()));
        }
        heartbeat(shard, &lifecycle, stop).await?;
        if lifecycle.fenced.get() {
            if last_log.elapsed() >= WAIT_LOG_EVERY {
                last_log = Instant::now();
                tracing::warn!(
                    waited_s = started.elapsed().as_secs(),
                    "still fenced: waiting for the active controller to see this broker caught up"
                );
            }
            glommio::timer::sleep(RETRY).await;
        }
    }
    tracing::info!(
        epoch = lifecycle.epoch.get(),
        waited_ms = started.elapsed().as_millis() as u64,
        "registered with the controller and unfenced"
    );
    Ok(lifecycle)
}

/// Heartbeats every `interval` until `stop`.
pub async fn keep_heartbeating(
    shard: Rc<Shard>,
    lifecycle: Rc<Lifecycle>,
    interval: Duration,
    stop: StopHandle,
) {
    // A shutdown request hands the heartbeats over to the controlled
    // shutdown (`server/lifecycle/controlled_shutdown.rs`).
    while !stop.is_shutdown_requested() {
        glommio::timer::sleep(interval).await;
        if stop.is_shutdown_requested() {
            return;
        }
        if let Err(JoinRefused(why)) = heartbeat(&shard, &lifecycle, &stop).await {
            tracing::error!("{why}; stopping the broker");
            stop.request();
            return;
        }
    }
}

async fn register(
    shard: &Rc<Shard>,
    lifecycle: &Lifecycle,
    stop: &StopHandle,
) -> Result<(), JoinRefused> {
    let broker = BrokerState::of(shard);
    // Every listener, the inter-broker one first: the controller records
    // the first as the endpoint other brokers connect to.
    let listeners = &broker.config.listeners;
    let mut ordered: Vec<_> = vec![listeners.inter_broker()];
    ordered.extend(
        listeners
            .all
            .iter()
            .filter(|l| l.name != listeners.inter_broker),
    );
    let request = BrokerRegistrationRequest {
        broker_id: broker.node_id(),
        cluster_id: lifecycle.cluster_id.clone().unwrap_or_default(),
        incarnation_id: lifecycle.incarnation_id,
        listeners: ordered
            .into_iter()
            .map(|l| RegistrationListener {
                name: l.name.clone(),
                host: l.advertised_host.clone(),
                port: l.advertised_port,
                security_protocol: l.protocol.id(),
            })
            .collect(),
        rack: broker.config.cluster.rack.clone(),
        // KIP-966: the epoch of the last registration, when this broker can
        // show that nothing it wrote since was lost (a clean shutdown, or a
        // process crash in this boot), tells the controller its log is
        // intact; without it the controller takes it out of every ISR and
        // ELR.
        previous_broker_epoch: shard.startup().previous_broker_epoch.unwrap_or(-1),
        ..Default::default()
    };
    let mut body = BytesMut::new();
    request.encode(&mut body, REGISTRATION_VERSION);
    let started = Instant::now();
    let mut last_log = Instant::now();
    // A restarted broker finds its previous incarnation's session still
    // live on the controller until it times out, as Kafka's does; only a
    // conflict that outlasts two session timeouts is another process.
    let session = Duration::from_millis(broker.config.cluster.session_timeout_ms);
    let mut duplicate_since: Option<Instant> = None;
    loop {
        if stop.is_requested() {
            return Err(JoinRefused("stopped while registering".into()));
        }
        match controller::broker_registration(shard, REGISTRATION_VERSION, body.to_vec()).await {
            Ok((answer, message)) => {
                let resp = BrokerRegistrationResponse::decode(
                    &mut Reader::new(answer.into()),
                    REGISTRATION_VERSION,
                )
                .map_err(|e| {
                    JoinRefused(format!(
                        "the controller's registration answer does not decode: {e}"
                    ))
                })?;
                let why = message.unwrap_or_default();
                match resp.error_code {
                    error_code::NONE => {
                        lifecycle.epoch.set(resp.broker_epoch);
                        shard
                            .config()
                            .registered_broker_epoch
                            .store(resp.broker_epoch, std::sync::atomic::Ordering::Relaxed);
                        if let Err(e) =
                            record_registration(&shard.config().data_dir, resp.broker_epoch).await
                        {
                            // Only costs the next start after a crash its
                            // claim to an intact log (KIP-966).
                            tracing::warn!("cannot record this registration: {e}");
                        }
                        return Ok(());
                    }
                    error_code::INCONSISTENT_CLUSTER_ID => {
                        return Err(JoinRefused(format!(
                            "cluster.id in meta.properties does not match the quorum's: {why}"
                        )))
                    }
                    error_code::DUPLICATE_BROKER_REGISTRATION => {
                        let since = *duplicate_since.get_or_insert_with(Instant::now);
                        if since.elapsed() > 2 * session {
                            return Err(JoinRefused(format!("node.id is taken: {why}")));
                        }
                        tracing::debug!(
                            "waiting for the previous incarnation's session to end: {why}"
                        );
                    }
                    code => tracing::debug!(code, "registration refused for now: {why}"),
                }
            }
            Err(e) => tracing::debug!("registration not taken yet: {e}"),
        }
        if last_log.elapsed() >= WAIT_LOG_EVERY {
            last_log = Instant::now();
            tracing::warn!(
                waited_s = started.elapsed().as_secs(),
                "cannot register with the active controller yet; retrying"
            );
        }
        glommio::timer::sleep(RETRY).await;
    }
}

/// One heartbeat; registers again when the controller no longer knows this
/// incarnation. Transient failures (no active controller) are only logged.
async fn heartbeat(
    shard: &Rc<Shard>,
    lifecycle: &Lifecycle,
    stop: &StopHandle,
) -> Result<(), JoinRefused> {
    heartbeat_wanting(shard, lifecycle, false, stop)
        .await
        .map(|_| ())
}

/// One heartbeat that asks for a controlled shutdown: the controller moves
/// this broker's leaderships away, and answers `should_shut_down` once it
/// leads nothing. `None` when no controller took it.
pub async fn shutdown_heartbeat(
    shard: &Rc<Shard>,
    lifecycle: &Lifecycle,
    stop: &StopHandle,
) -> Result<Option<BrokerHeartbeatResponse>, JoinRefused> {
    heartbeat_wanting(shard, lifecycle, true, stop).await
}

async fn heartbeat_wanting(
    shard: &Rc<Shard>,
    lifecycle: &Lifecycle,
    want_shut_down: bool,
    stop: &StopHandle,
) -> Result<Option<BrokerHeartbeatResponse>, JoinRefused> {
    let broker = BrokerState::of(shard);
    let request = BrokerHeartbeatRequest {
        broker_id: broker.node_id(),
        broker_epoch: lifecycle.epoch.get(),
        current_metadata_offset: broker.image().offset,
        want_fence: false,
        want_shut_down,
        ..Default::default()
    };
    let mut body = BytesMut::new();
    request.encode(&mut body, HEARTBEAT_VERSION);
    let (answer, message) =
        match controller::broker_heartbeat_call(shard, HEARTBEAT_VERSION, body.to_vec()).await {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!("heartbeat not taken: {e}");
                return Ok(None);
            }
        };
    let resp = BrokerHeartbeatResponse::decode(&mut Reader::new(answer.into()), HEARTBEAT_VERSION)
        .map_err(|e| {
            JoinRefused(format!(
                "the controller's heartbeat answer does not decode: {e}"
            ))
        })?;
    match resp.error_code {
        error_code::NONE => {
            if lifecycle.fenced.get() != resp.is_fenced {
                if resp.is_fenced && want_shut_down {
                    tracing::info!("the controller fenced this broker for its shutdown");
                } else if resp.is_fenced {
                    tracing::warn!("the controller fenced this broker");
                } else if lifecycle.epoch.get() >= 0 {
                    tracing::info!("the controller unfenced this broker");
                }
                lifecycle.fenced.set(resp.is_fenced);
            }
            Ok(Some(resp))
        }
        error_code::STALE_BROKER_EPOCH if !want_shut_down => {
            tracing::warn!(
                "{}; registering again",
                message.unwrap_or_else(|| "the controller does not know this broker epoch".into())
            );
            register(shard, lifecycle, stop).await.map(|()| None)
        }
        code => {
            tracing::debug!(code, "heartbeat refused: {}", message.unwrap_or_default());
            Ok(None)
        }
    }
}
