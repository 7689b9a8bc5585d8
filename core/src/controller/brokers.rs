//! The broker lifecycle as the active controller decides it (seed 003;
//! Kafka's `ClusterControlManager` and `BrokerHeartbeatManager`): who may
//! register, what a heartbeat moves a broker to, and who is fenced because
//! its session ran out. Pure: time comes in as `now_ms`, and the applying
//! side turns the decisions into metadata records.
//!
//! A broker registers with an incarnation id (new on every process start);
//! its broker epoch is the offset of its registration record. It starts
//! fenced, and is unfenced by a heartbeat once its metadata offset reaches
//! its own registration record. An unfenced broker whose heartbeats stop
//! for the session timeout is fenced. Sessions are controller memory, not
//! log state: a newly active controller gives every broker a fresh one.

use std::collections::BTreeMap;

use crate::controller::partitions::with_leadership_changes;
use crate::controller::topics::TopicError;
use crate::metadata::image::MetadataImage;
use crate::metadata::records::MetadataRecord;
use crate::protocol::error_code;

/// A broker as the metadata log records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    pub id: i32,
    pub incarnation_id: [u8; 16],
    /// The offset of its registration record.
    pub epoch: i64,
    pub rack: Option<String>,
    pub fenced: bool,
    pub in_controlled_shutdown: bool,
}

/// A BrokerRegistration request, as the decision needs it.
#[derive(Debug, Clone)]
pub struct RegistrationRequest {
    pub id: i32,
    pub cluster_id: String,
    pub incarnation_id: [u8; 16],
    pub rack: Option<String>,
    /// The broker epoch the broker's last clean shutdown recorded (KIP-966's
    /// `PreviousBrokerEpoch`), -1 when its last shutdown was not clean.
    pub previous_broker_epoch: i64,
}

/// Whether a registration comes from a broker whose last shutdown was not
/// clean (Kafka's check in `ClusterControlManager.registerBroker`): it was
/// registered before, and does not bring that registration's epoch from a
/// clean-shutdown marker. Its unflushed records may be lost, so it must not
/// be trusted as an in-sync or eligible replica (KIP-966).
pub fn unclean_shutdown(
    registrations: &BTreeMap<i32, Registration>,
    req: &RegistrationRequest,
) -> bool {
    registrations.get(&req.id).is_some_and(|r| {
        r.incarnation_id != req.incarnation_id && r.epoch != req.previous_broker_epoch
    })
}

/// What a registration becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistrationDecision {
    /// A new incarnation: a registration record at the next offset, fenced,
    /// whose offset becomes the broker epoch.
    New,
    /// The same incarnation asking again (a retried request): it keeps its
    /// epoch and state, and nothing is written.
    Unchanged { epoch: i64 },
}

/// One broker's heartbeat session on the active controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Session {
    last_contact_ms: i64,
    metadata_offset: i64,
}

/// A BrokerHeartbeat request.
#[derive(Debug, Clone, Copy)]
pub struct Heartbeat {
    pub id: i32,
    pub epoch: i64,
    pub metadata_offset: i64,
    pub want_fence: bool,
    pub want_shut_down: bool,
}

/// Where a heartbeat moves its broker (Kafka's `BrokerControlState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerControlState {
    Fenced,
    Unfenced,
    ControlledShutdown,
    ShutdownNow,
}

/// The answer to a heartbeat, and the state change to record (if any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeartbeatOutcome {
    pub next: BrokerControlState,
    /// The broker's metadata offset reached its registration record.
    pub caught_up: bool,
    /// A change of the registration the log must record first.
    pub changed: bool,
}

/// The active controller's view of broker sessions.
#[derive(Debug)]
pub struct BrokerSessions {
    session_timeout_ms: i64,
    sessions: BTreeMap<i32, Session>,
}

impl BrokerSessions {
    /// Sessions for every registered broker, fresh as of `now_ms`: what a
    /// newly active controller starts with, so that it fences nobody until
    /// a whole session timeout has passed without a heartbeat.
    pub fn activate<'a>(
        registrations: impl Iterator<Item = &'a Registration>,
        session_timeout_ms: i64,
        now_ms: i64,
    ) -> BrokerSessions {
        assert!(session_timeout_ms > 0);
        BrokerSessions {
            session_timeout_ms,
            sessions: registrations
                .map(|r| {
                    (
                        r.id,
                        Session {
                            last_contact_ms: now_ms,
                            metadata_offset: -1,
                        },
                    )
                })
                .collect(),
        }
    }

    /// Whether `id` has a live session: unfenced and heard from within the
    /// session timeout.
    pub fn has_valid_session(&self, r: &Registration, now_ms: i64) -> bool {
        !r.fenced
            && self
                .sessions
                .get(&r.id)
                .is_some_and(|s| s.last_contact_ms + self.session_timeout_ms >= now_ms)
    }

    /// Decides a BrokerRegistration (Kafka's `registerBroker` checks): a
    /// different cluster is refused; a different incarnation of a broker id
    /// whose session is live is refused (two processes with one
    /// `node.id`); the same incarnation again changes nothing.
    pub fn register(
        &mut self,
        registrations: &BTreeMap<i32, Registration>,
        cluster_id: &str,
        req: &RegistrationRequest,
        now_ms: i64,
    ) -> Result<RegistrationDecision, TopicError> {
        if req.cluster_id != cluster_id {
            return Err((
                error_code::INCONSISTENT_CLUSTER_ID,
                format!(
                    "broker {} belongs to cluster {:?} but this quorum is cluster {cluster_id:?}; point it at its own quorum, or give it an empty data directory to join this one",
                    req.id, req.cluster_id
                ),
            ));
        }
        if let Some(existing) = registrations.get(&req.id) {
            if existing.incarnation_id == req.incarnation_id {
                self.touch(req.id, now_ms, None);
                return Ok(RegistrationDecision::Unchanged {
                    epoch: existing.epoch,
                });
            }
            if self.has_valid_session(existing, now_ms) {
                return Err((
                    error_code::DUPLICATE_BROKER_REGISTRATION,
                    format!(
                        "another broker is registered with node.id {} and is alive; every broker needs its own node.id",
                        req.id
                    ),
                ));
            }
        }
        self.touch(req.id, now_ms, None);
        Ok(RegistrationDecision::New)
    }

    /// Decides a heartbeat (Kafka's `calculateNextBrokerState`).
    /// `leads_partitions` says whether the broker still leads anything; a
    /// controlled shutdown ends once it leads nothing.
    pub fn heartbeat(
        &mut self,
        registration: &Registration,
        hb: &Heartbeat,
        leads_partitions: bool,
        now_ms: i64,
    ) -> Result<HeartbeatOutcome, TopicError> {
        if hb.epoch != registration.epoch {
            return Err((
                error_code::STALE_BROKER_EPOCH,
                format!(
                    "broker {} sent a heartbeat for epoch {}, but its registration has epoch {}; it must register again",
                    hb.id, hb.epoch, registration.epoch
                ),
            ));
        }
        let caught_up = hb.metadata_offset >= registration.epoch;
        use BrokerControlState::*;
        let current = if registration.in_controlled_shutdown {
            ControlledShutdown
        } else if registration.fenced {
            Fenced
        } else {
            Unfenced
        };
        let next = match current {
            Fenced if hb.want_shut_down => ShutdownNow,
            Fenced if !hb.want_fence && caught_up => Unfenced,
            Fenced => Fenced,
            Unfenced if hb.want_fence && hb.want_shut_down => ShutdownNow,
            Unfenced if hb.want_fence => Fenced,
            Unfenced if hb.want_shut_down && leads_partitions => ControlledShutdown,
            Unfenced if hb.want_shut_down => ShutdownNow,
            Unfenced => Unfenced,
            ControlledShutdown if leads_partitions => ControlledShutdown,
            ControlledShutdown => ShutdownNow,
            ShutdownNow => unreachable!("not a recorded state"),
        };
        self.touch(hb.id, now_ms, Some(hb.metadata_offset));
        Ok(HeartbeatOutcome {
            next,
            caught_up,
            changed: next != current,
        })
    }

    /// Unfenced brokers whose session ran out at `now_ms`, oldest contact
    /// first: the controller fences them (their leaderships move).
    pub fn expired<'a>(
        &self,
        registrations: impl Iterator<Item = &'a Registration>,
        now_ms: i64,
    ) -> Vec<i32> {
        let mut out: Vec<(i64, i32)> = registrations
            .filter(|r| !r.fenced)
            .filter_map(|r| {
                let s = self.sessions.get(&r.id)?;
                (s.last_contact_ms + self.session_timeout_ms < now_ms)
                    .then_some((s.last_contact_ms, r.id))
            })
            .collect();
        out.sort_unstable();
        out.into_iter().map(|(_, id)| id).collect()
    }

    /// The broker's last reported metadata offset, -1 before its first
    /// heartbeat to this controller.
    pub fn metadata_offset(&self, id: i32) -> i64 {
        self.sessions.get(&id).map_or(-1, |s| s.metadata_offset)
    }

    fn touch(&mut self, id: i32, now_ms: i64, metadata_offset: Option<i64>) {
        let s = self.sessions.entry(id).or_insert(Session {
            last_contact_ms: now_ms,
            metadata_offset: -1,
        });
        // Time never goes back for a session, even if the caller's clock did.
        s.last_contact_ms = s.last_contact_ms.max(now_ms);
        if let Some(o) = metadata_offset {
            s.metadata_offset = o;
        }
    }
}

/// The registered brokers as the lifecycle decisions see them.
pub fn registrations(image: &MetadataImage) -> BTreeMap<i32, Registration> {
    image
        .brokers
        .values()
        .map(|b| {
            (
                b.id,
                Registration {
                    id: b.id,
                    incarnation_id: b.incarnation_id,
                    epoch: b.epoch,
                    rack: b.rack.clone(),
                    fenced: b.fenced,
                    in_controlled_shutdown: b.in_controlled_shutdown,
                },
            )
        })
        .collect()
}

/// UnregisterBroker (`kafka-cluster.sh unregister`): the broker's
/// registration is removed, and in the same entry it leaves every ISR and
/// hands its leaderships to in-sync replicas, as fencing would. Like
/// Kafka's, it does not ask whether the broker still runs: it is meant for
/// brokers that are gone for good.
pub fn plan_unregister_broker(
    image: &MetadataImage,
    broker_id: i32,
) -> Result<Vec<MetadataRecord>, TopicError> {
    let Some(b) = image.brokers.get(&broker_id) else {
        return Err((
            error_code::BROKER_ID_NOT_REGISTERED,
            format!("broker {broker_id} is not registered"),
        ));
    };
    let record = MetadataRecord::UnregisterBroker {
        broker_id,
        broker_epoch: b.epoch,
    };
    Ok(with_leadership_changes(image, vec![record]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: i64 = 9_000;

    fn reg(id: i32, incarnation: u8, epoch: i64, fenced: bool) -> Registration {
        Registration {
            id,
            incarnation_id: [incarnation; 16],
            epoch,
            rack: None,
            fenced,
            in_controlled_shutdown: false,
        }
    }

    fn request(id: i32, incarnation: u8) -> RegistrationRequest {
        RegistrationRequest {
            id,
            cluster_id: "c1".into(),
            incarnation_id: [incarnation; 16],
            rack: None,
            previous_broker_epoch: -1,
        }
    }

    fn hb(id: i32, epoch: i64, offset: i64) -> Heartbeat {
        Heartbeat {
            id,
            epoch,
            metadata_offset: offset,
            want_fence: false,
            want_shut_down: false,
        }
    }

    #[test]
    fn registration_refuses_another_cluster_and_a_live_duplicate() {
        let mut regs = BTreeMap::new();
        let mut s = BrokerSessions::activate(regs.values(), TIMEOUT, 0);
        let mut other = request(1, 1);
        other.cluster_id = "c2".into();
        let (code, msg) = s.register(&regs, "c1", &other, 0).unwrap_err();
        assert_eq!(code, error_code::INCONSISTENT_CLUSTER_ID);
        assert!(msg.contains("c2"), "{msg}");
        assert_eq!(
            s.register(&regs, "c1", &request(1, 1), 0),
            Ok(RegistrationDecision::New)
        );
        regs.insert(1, reg(1, 1, 10, false));
        // The same incarnation again is a retry.
        assert_eq!(
            s.register(&regs, "c1", &request(1, 1), 100),
            Ok(RegistrationDecision::Unchanged { epoch: 10 })
        );
        // A second process with the same node.id while the first lives.
        let (code, msg) = s.register(&regs, "c1", &request(1, 2), 200).unwrap_err();
        assert_eq!(code, error_code::DUPLICATE_BROKER_REGISTRATION);
        assert!(msg.contains("node.id"), "{msg}");
        // After the old session ran out, the new incarnation may take over.
        assert_eq!(
            s.register(&regs, "c1", &request(1, 2), 200 + TIMEOUT + 1),
            Ok(RegistrationDecision::New)
        );
    }

    #[test]
    fn a_fenced_broker_can_be_replaced_at_once() {
        let regs = BTreeMap::from([(1, reg(1, 1, 10, true))]);
        let mut s = BrokerSessions::activate(regs.values(), TIMEOUT, 0);
        assert_eq!(
            s.register(&regs, "c1", &request(1, 2), 1),
            Ok(RegistrationDecision::New)
        );
    }

    #[test]
    fn heartbeats_unfence_once_caught_up_with_the_registration() {
        let r = reg(1, 1, 40, true);
        let mut s = BrokerSessions::activate([&r].into_iter(), TIMEOUT, 0);
        let o = s.heartbeat(&r, &hb(1, 40, 39), false, 10).unwrap();
        assert_eq!(
            (o.next, o.caught_up, o.changed),
            (BrokerControlState::Fenced, false, false)
        );
        let o = s.heartbeat(&r, &hb(1, 40, 40), false, 20).unwrap();
        assert_eq!(
            (o.next, o.caught_up, o.changed),
            (BrokerControlState::Unfenced, true, true)
        );
        assert_eq!(s.metadata_offset(1), 40);
        let (code, _) = s.heartbeat(&r, &hb(1, 39, 50), false, 30).unwrap_err();
        assert_eq!(code, error_code::STALE_BROKER_EPOCH);
    }

    #[test]
    fn shutdown_and_fence_requests_follow_kafkas_table() {
        use BrokerControlState::*;
        let unfenced = reg(1, 1, 5, false);
        let mut s = BrokerSessions::activate([&unfenced].into_iter(), TIMEOUT, 0);
        let mut shut = hb(1, 5, 9);
        shut.want_shut_down = true;
        assert_eq!(
            s.heartbeat(&unfenced, &shut, true, 1).unwrap().next,
            ControlledShutdown
        );
        assert_eq!(
            s.heartbeat(&unfenced, &shut, false, 1).unwrap().next,
            ShutdownNow
        );
        let mut fence = hb(1, 5, 9);
        fence.want_fence = true;
        assert_eq!(
            s.heartbeat(&unfenced, &fence, true, 1).unwrap().next,
            Fenced
        );
        fence.want_shut_down = true;
        assert_eq!(
            s.heartbeat(&unfenced, &fence, true, 1).unwrap().next,
            ShutdownNow
        );
        let mut draining = unfenced.clone();
        draining.in_controlled_shutdown = true;
        assert_eq!(
            s.heartbeat(&draining, &hb(1, 5, 9), true, 1).unwrap().next,
            ControlledShutdown
        );
        assert_eq!(
            s.heartbeat(&draining, &hb(1, 5, 9), false, 1).unwrap().next,
            ShutdownNow
        );
        let fenced = reg(1, 1, 5, true);
        assert_eq!(
            s.heartbeat(&fenced, &shut, true, 1).unwrap().next,
            ShutdownNow
        );
    }

    #[test]
    fn silent_unfenced_brokers_expire_after_the_session_timeout() {
        let regs = [reg(1, 1, 5, false), reg(2, 1, 6, false), reg(3, 1, 7, true)];
        let mut s = BrokerSessions::activate(regs.iter(), TIMEOUT, 1_000);
        s.heartbeat(&regs[1], &hb(2, 6, 6), false, 5_000).unwrap();
        assert!(
            s.expired(regs.iter(), 1_000 + TIMEOUT).is_empty(),
            "exactly at the timeout"
        );
        assert_eq!(s.expired(regs.iter(), 1_000 + TIMEOUT + 1), vec![1]);
        // Broker 3 is fenced already; broker 2 spoke later.
        assert_eq!(s.expired(regs.iter(), 5_000 + TIMEOUT + 1), vec![1, 2]);
    }

    #[test]
    fn a_new_controller_gives_every_broker_a_fresh_session() {
        let regs = [reg(1, 1, 5, false), reg(2, 1, 6, false)];
        // The old controller last heard from them long ago; the new one
        // starts their sessions now and fences nobody at once.
        let s = BrokerSessions::activate(regs.iter(), TIMEOUT, 100_000);
        assert!(s.expired(regs.iter(), 100_000 + TIMEOUT).is_empty());
        assert_eq!(s.metadata_offset(1), -1);
        assert!(s.has_valid_session(&regs[0], 100_000));
    }

    #[test]
    fn unregistering_a_broker_removes_it_and_moves_its_leaderships() {
        let mut image = MetadataImage::empty();
        let mut offset = 0;
        let mut apply = |image: &mut MetadataImage, r: MetadataRecord| {
            offset += 1;
            image.apply(offset, &r);
        };
        for id in 1..=3 {
            apply(
                &mut image,
                MetadataRecord::RegisterBroker {
                    broker_id: id,
                    incarnation_id: [id as u8; 16],
                    broker_epoch: -1,
                    host: "127.0.0.1".into(),
                    port: 9000 + id,
                    rack: None,
                    fenced: false,
                    in_controlled_shutdown: false,
                    listeners: Vec::new(),
                },
            );
        }
        apply(
            &mut image,
            MetadataRecord::Topic {
                name: "t".into(),
                topic_id: [9; 16],
            },
        );
        apply(
            &mut image,
            MetadataRecord::Partition {
                topic_id: [9; 16],
                partition: 0,
                replicas: vec![3, 1],
                isr: vec![3, 1],
                leader: 3,
                leader_epoch: 0,
                partition_epoch: 0,
                elr: Vec::new(),
                last_known_elr: Vec::new(),
                adding_replicas: Vec::new(),
                removing_replicas: Vec::new(),
                last_unclean_election_epoch: None,
            },
        );
        let records = plan_unregister_broker(&image, 3).unwrap();
        assert_eq!(
            records,
            vec![
                MetadataRecord::UnregisterBroker {
                    broker_id: 3,
                    broker_epoch: image.brokers[&3].epoch,
                },
                MetadataRecord::PartitionChange {
                    topic_id: [9; 16],
                    partition: 0,
                    leader: Some(1),
                    isr: Some(vec![1]),
                    unclean: false,
                    elr: None,
                    last_known_elr: None,
                    adding_replicas: None,
                    removing_replicas: None,
                    replicas: None,
                },
            ]
        );
        for r in &records {
            apply(&mut image, r.clone());
        }
        assert!(!image.brokers.contains_key(&3));
        assert_eq!(image.partition("t", 0).unwrap().leader, 1);
        let again = plan_unregister_broker(&image, 3).unwrap_err();
        assert_eq!(again.0, error_code::BROKER_ID_NOT_REGISTERED);
    }
}
