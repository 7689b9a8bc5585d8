//! Broker sessions on the active controller (seed 003): registrations,
//! heartbeats that fence and unfence, the fencing of expired sessions and
//! of brokers whose process is gone, and the broker-side calls that send
//! BrokerRegistration, BrokerHeartbeat and AlterPartition to it.

use std::rc::Rc;
use std::time::{Duration, Instant};

use super::{
    call, controller, wrong_answer, AdminAnswer, AdminRequest, Controller, ControllerResult,
};
use crate::controller::brokers::{
    registrations, unclean_shutdown, BrokerControlState, Heartbeat, HeartbeatOutcome,
    RegistrationDecision, RegistrationRequest,
};
use crate::controller::partitions::{fencing, with_leadership_changes, with_unclean_shutdown};
use crate::metadata::features::new_cluster_records;
use crate::metadata::image::MetadataImage;
use crate::metadata::records::{BrokerEndpoint, MetadataRecord};
use crate::node::state::BrokerState;
use crate::node::stop::StopHandle;
use crate::protocol::error_code;
use crate::protocol::messages::broker_registration::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse,
};
use crate::shard::shard::{now_ms, Shard};

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
pub(super) async fn fence_if_gone(shard: Rc<Shard>, broker: i32) {
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

/// BrokerRegistration on the active controller (seed 003): agree on the
/// cluster id, refuse another cluster's broker and a live duplicate
/// node.id, and record a new incarnation fenced, its epoch the offset of
/// its registration record.
pub(super) async fn register_broker(
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
                crate::node::ids::new_cluster_id()
            } else {
                req.cluster_id.clone()
            };
            records.push(MetadataRecord::ClusterId {
                cluster_id: id.clone(),
            });
            // A brand-new cluster finalizes its features with its id, as
            // Kafka's `kafka-storage format` does; a metadata log that
            // predates the cluster id (the release before the quorum: it
            // may hold topics) stays at level 0, as an upgraded Kafka
            // cluster does.
            if image.topics.is_empty() {
                records.extend(new_cluster_records());
            }
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
                // One PLAINTEXT listener is what `host` and `port` say
                // already; leaving it out keeps the record in the format
                // the release before named listeners reads.
                listeners: if req.listeners.len() == 1 && req.listeners[0].name == "PLAINTEXT" {
                    Vec::new()
                } else {
                    req.listeners
                        .iter()
                        .map(|l| BrokerEndpoint {
                            name: l.name.clone(),
                            host: l.host.clone(),
                            port: i32::from(l.port),
                            security_protocol: l.security_protocol,
                        })
                        .collect()
                },
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
pub(super) async fn broker_heartbeat(
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
    let epoch = controller.quorum.status().leader_epoch;
    let outcome = controller.sessions(image, epoch, now).heartbeat(
        registration,
        &heartbeat_of(&req),
        leads_partitions(image, req.broker_id),
        now,
    );
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
    Ok((heartbeat_response(&outcome), None))
}

/// Answers at once, without waiting for its turn among the decisions, a
/// heartbeat that changes nothing (the broker stays as it is: the common
/// case): its session is refreshed and its answer read from the committed
/// image; returns the answer's encoded body. `None` for every other
/// heartbeat (one that fences, unfences or shuts its broker down, or is
/// refused), which is decided in turn.
///
/// The decisions are one at a time, each with a read barrier and usually a
/// commit: behind a backlog of them (the ISR changes of a failover on a
/// slow disk or a loaded machine) a heartbeat waited for seconds, and a
/// broker sends its next one only once answered, so the session-expiry
/// check, which takes its turn more often, fenced live brokers; each
/// fencing moved leaderships and made more decisions (a fault run on a
/// loaded CI machine went on like this for a minute). Kafka's controller
/// likewise records a heartbeat's contact before it queues the heartbeat
/// (`BrokerHeartbeatTracker`).
pub(super) fn answer_steady_heartbeat(
    controller: &Controller,
    version: i16,
    body: &[u8],
) -> Option<Vec<u8>> {
    if !controller.quorum.is_leader() {
        return None;
    }
    let req = BrokerHeartbeatRequest::decode(
        &mut crate::protocol::codec::Reader::new(bytes::Bytes::copy_from_slice(body)),
        version,
    )
    .ok()?;
    let image = controller.quorum.image();
    let registration = registrations(&image).remove(&req.broker_id)?;
    let now = now_ms();
    let epoch = controller.quorum.status().leader_epoch;
    let outcome = controller
        .sessions(&image, epoch, now)
        .heartbeat(
            &registration,
            &heartbeat_of(&req),
            leads_partitions(&image, req.broker_id),
            now,
        )
        .ok()?;
    if outcome.changed {
        return None;
    }
    let mut w = bytes::BytesMut::new();
    heartbeat_response(&outcome).encode(&mut w, version);
    Some(w.to_vec())
}

fn heartbeat_of(req: &BrokerHeartbeatRequest) -> Heartbeat {
    Heartbeat {
        id: req.broker_id,
        epoch: req.broker_epoch,
        metadata_offset: req.current_metadata_offset,
        want_fence: req.want_fence,
        want_shut_down: req.want_shut_down,
    }
}

/// Whether `broker` leads any partition (a controlled shutdown waits until
/// it leads none).
fn leads_partitions(image: &MetadataImage, broker: i32) -> bool {
    image
        .topics
        .values()
        .flat_map(|t| t.partitions.values())
        .any(|p| p.leader == broker)
}

fn heartbeat_response(outcome: &HeartbeatOutcome) -> BrokerHeartbeatResponse {
    use BrokerControlState::*;
    BrokerHeartbeatResponse {
        error_code: error_code::NONE,
        is_caught_up: outcome.caught_up,
        is_fenced: matches!(outcome.next, Fenced | ShutdownNow),
        should_shut_down: outcome.next == ShutdownNow,
        ..Default::default()
    }
}

/// On the active controller, fences the brokers whose session ran out.
/// Runs on shard 0 until `stop`; does nothing while this node is not the
/// active controller.
pub async fn fence_expired_brokers(shard: Rc<Shard>, every: Duration, stop: StopHandle) {
    let mut probed_epoch = None;
    while !stop.is_requested() {
        crate::ticks::sleep_to_next_tick(every).await;
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
