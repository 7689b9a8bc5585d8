//! Unit tests of the share-group membership core (`group.rs`).

use crate::broker_config::share_group::ShareGroupConfig;
use crate::group::consumer::heartbeat::{TimerOp, FENCED_MEMBER_EPOCH};
use crate::group::consumer::topics::TopicsImage;
use crate::group::share::group::{
    ShareGroup, ShareGroupState, ShareHeartbeatContext, ShareHeartbeatOutcome,
};
use crate::group::share::records::ShareGroupRecord;
use crate::protocol::error_code::{GROUP_MAX_SIZE_REACHED, INVALID_REQUEST, UNKNOWN_MEMBER_ID};
use crate::protocol::messages::share_group_heartbeat::{
    ShareGroupHeartbeatRequest, TopicPartitions,
};

fn join(member: &str, topics: &[&str]) -> ShareGroupHeartbeatRequest {
    ShareGroupHeartbeatRequest {
        group_id: "queue".into(),
        member_id: member.into(),
        member_epoch: 0,
        rack_id: None,
        subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
    }
}

fn beat(member: &str, epoch: i32) -> ShareGroupHeartbeatRequest {
    ShareGroupHeartbeatRequest {
        group_id: "queue".into(),
        member_id: member.into(),
        member_epoch: epoch,
        rack_id: None,
        subscribed_topic_names: None,
    }
}

struct Fixture {
    group: ShareGroup,
    topics: TopicsImage,
    config: ShareGroupConfig,
    now_ms: i64,
}

impl Fixture {
    fn new(topics: TopicsImage) -> Fixture {
        Fixture {
            group: ShareGroup::new("queue"),
            topics,
            config: ShareGroupConfig::default(),
            now_ms: 1_000,
        }
    }

    /// Sends a heartbeat, persists its records (through their bytes) and
    /// replays them, as the shell does.
    fn send(&mut self, req: ShareGroupHeartbeatRequest) -> ShareHeartbeatOutcome {
        let ctx = ShareHeartbeatContext {
            now_ms: self.now_ms,
            config: &self.config,
            topics: &self.topics,
            client_id: "client",
            client_host: "/10.0.0.1",
        };
        let out = self.group.heartbeat(&req, ctx);
        self.replay(&out.records);
        out
    }

    fn replay(&mut self, records: &[ShareGroupRecord]) {
        for r in records {
            let back = ShareGroupRecord::decode(r.encode_key(), r.encode_value())
                .unwrap()
                .unwrap();
            self.group.replay(&back);
        }
    }

    fn partitions(&self, topic: &str, out: &ShareHeartbeatOutcome) -> Option<Vec<i32>> {
        let id = self.topics.by_name(topic).unwrap().id;
        let a = out.response.assignment.as_ref()?;
        Some(
            a.iter()
                .find(|t| t.topic_id == id)
                .map(|t: &TopicPartitions| t.partitions.clone())
                .unwrap_or_default(),
        )
    }
}

#[test]
fn members_join_and_share_a_single_partition() {
    let mut f = Fixture::new(TopicsImage::default().with_topic("t", 1));
    let a = f.send(join("a", &["t"]));
    assert_eq!(a.response.error_code, 0);
    assert_eq!(a.response.member_epoch, 1);
    assert_eq!(f.partitions("t", &a), Some(vec![0]));
    assert_eq!(
        a.timer,
        Some(TimerOp::Session {
            member_id: "a".into(),
            deadline_ms: 1_000 + 45_000,
        })
    );
    let b = f.send(join("b", &["t"]));
    assert_eq!(b.response.member_epoch, 2);
    assert_eq!(
        f.partitions("t", &b),
        Some(vec![0]),
        "shared, not revoked from a"
    );
    // a moves to epoch 2 at its next heartbeat, keeping partition 0.
    let a2 = f.send(beat("a", 1));
    assert_eq!(a2.response.member_epoch, 2);
    assert_eq!(f.partitions("t", &a2), Some(vec![0]));
    // Nothing changes: no records, no assignment in the answer.
    let a3 = f.send(beat("a", 2));
    assert!(a3.records.is_empty());
    assert_eq!(a3.response.assignment, None);
    assert_eq!(f.group.state(), ShareGroupState::Stable);
}

#[test]
fn a_second_member_takes_half_the_partitions_and_a_leave_gives_them_back() {
    let mut f = Fixture::new(TopicsImage::default().with_topic("t", 4));
    f.send(join("a", &["t"]));
    f.send(join("b", &["t"]));
    let a = f.send(beat("a", 1));
    assert_eq!(f.partitions("t", &a), Some(vec![0, 2]));
    let left = f.send(beat("b", -1));
    assert_eq!(left.response.member_epoch, -1);
    assert_eq!(
        left.timer,
        Some(TimerOp::CancelAll {
            member_id: "b".into()
        })
    );
    assert!(!f.group.members.contains_key("b"));
    let a = f.send(beat("a", 2));
    assert_eq!(a.response.member_epoch, 3);
    assert_eq!(f.partitions("t", &a), Some(vec![0, 1, 2, 3]));
    let gone = f.send(beat("a", -1));
    assert_eq!(gone.response.error_code, 0);
    assert_eq!(f.group.state(), ShareGroupState::Empty);
}

#[test]
fn stale_unknown_and_invalid_heartbeats_are_refused() {
    let mut f = Fixture::new(TopicsImage::default().with_topic("t", 2));
    f.send(join("a", &["t"]));
    assert_eq!(
        f.send(beat("a", 7)).response.error_code,
        FENCED_MEMBER_EPOCH
    );
    assert_eq!(
        f.send(beat("nobody", 1)).response.error_code,
        UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        f.send(beat("nobody", -1)).response.error_code,
        UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        f.send(join("", &["t"])).response.error_code,
        INVALID_REQUEST
    );
    assert_eq!(f.send(join("c", &[])).response.error_code, INVALID_REQUEST);
    assert_eq!(f.send(beat("a", -3)).response.error_code, INVALID_REQUEST);
    let mut no_group = join("c", &["t"]);
    no_group.group_id.clear();
    assert_eq!(f.send(no_group).response.error_code, INVALID_REQUEST);
    // A fenced member joins again with epoch 0 and catches up.
    let again = f.send(join("a", &["t"]));
    assert_eq!(again.response.member_epoch, 1);
}

#[test]
fn the_group_size_is_bounded() {
    let mut f = Fixture::new(TopicsImage::default().with_topic("t", 2));
    f.config.max_size = 2;
    f.send(join("a", &["t"]));
    f.send(join("b", &["t"]));
    let c = f.send(join("c", &["t"]));
    assert_eq!(c.response.error_code, GROUP_MAX_SIZE_REACHED);
    assert!(c.records.is_empty());
}

#[test]
fn new_partitions_start_a_new_epoch_at_the_next_heartbeat() {
    let mut f = Fixture::new(TopicsImage::default().with_topic("t", 1));
    f.send(join("a", &["t"]));
    f.topics.add_topic("t", 3, &[]);
    let a = f.send(beat("a", 1));
    assert_eq!(a.response.member_epoch, 2);
    assert_eq!(f.partitions("t", &a), Some(vec![0, 1, 2]));
}

#[test]
fn a_session_timeout_fences_the_member() {
    let mut f = Fixture::new(TopicsImage::default().with_topic("t", 2));
    f.send(join("a", &["t"]));
    f.send(join("b", &["t"]));
    let records = f.group.fence_member("b", &f.topics, 50_000);
    f.replay(&records);
    assert!(!f.group.members.contains_key("b"));
    assert!(f.group.fence_member("b", &f.topics, 50_001).is_empty());
    let a = f.send(beat("a", 1));
    assert_eq!(f.partitions("t", &a), Some(vec![0, 1]));
}

#[test]
fn replaying_the_records_rebuilds_the_group() {
    let mut f = Fixture::new(TopicsImage::default().with_topic("t", 3).with_topic("u", 1));
    let mut log = Vec::new();
    for req in [
        join("a", &["t"]),
        join("b", &["t", "u"]),
        beat("a", 1),
        join("c", &["u"]),
        beat("b", 2),
        beat("a", 2),
        beat("c", -1),
    ] {
        log.extend(f.send(req).records);
    }
    let mut rebuilt = ShareGroup::new("queue");
    for r in &log {
        rebuilt.replay(r);
    }
    assert_eq!(rebuilt, f.group);
    rebuilt.check_invariants();
}

/// xorshift64*, seeded: the same sequence on every platform.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// Members join, leave, time out, heartbeat with stale epochs and change
/// subscriptions while topics grow; after a quiet round every member is at
/// the assignment epoch with its target, every subscribed partition has a
/// member, nobody holds a partition of a topic it does not subscribe to,
/// and replaying the log rebuilds the group.
#[test]
fn seeded_membership_runs_converge_and_replay() {
    const NAMES: [&str; 3] = ["t", "u", "v"];
    for seed in 1..=30u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut f = Fixture::new(
            TopicsImage::default()
                .with_topic("t", 3)
                .with_topic("u", 1)
                .with_topic("v", 5),
        );
        let mut log: Vec<ShareGroupRecord> = Vec::new();
        // Each client's idea of its epoch; absent when not joined.
        let mut epochs: std::collections::BTreeMap<String, i32> = Default::default();
        for _ in 0..300 {
            f.now_ms += 1_000;
            let m = format!("m{}", rng.below(6));
            let subscription: Vec<&str> = NAMES
                .iter()
                .copied()
                .filter(|_| rng.below(2) == 0)
                .collect();
            let req = match (epochs.get(&m).copied(), rng.below(10)) {
                (None, _) if subscription.is_empty() => continue,
                (None, _) => join(&m, &subscription),
                (Some(e), 0) => beat(&m, e + 3), // stale or future epoch
                (Some(e), 1) => beat(&m, if e > 0 { -1 } else { e }),
                (Some(e), 2) if !subscription.is_empty() => {
                    let mut r = join(&m, &subscription);
                    r.member_epoch = e;
                    r
                }
                (Some(_), 3) => {
                    // The session times out.
                    let records = f.group.fence_member(&m, &f.topics, f.now_ms);
                    f.replay(&records);
                    log.extend(records);
                    epochs.remove(&m);
                    continue;
                }
                (Some(_), 4) => {
                    let n = 1 + rng.below(8) as i32;
                    let name = NAMES[rng.below(3) as usize];
                    let now = f.topics.by_name(name).unwrap().num_partitions();
                    f.topics.add_topic(name, now.max(n), &[]);
                    continue;
                }
                (Some(e), _) => beat(&m, e),
            };
            let leaving = req.member_epoch == -1;
            let out = f.send(req);
            log.extend(out.records.iter().cloned());
            match out.response.error_code {
                0 if leaving => {
                    epochs.remove(&m);
                }
                0 => {
                    epochs.insert(m.clone(), out.response.member_epoch);
                }
                FENCED_MEMBER_EPOCH | UNKNOWN_MEMBER_ID => {
                    epochs.remove(&m);
                }
                other => panic!("seed {seed}: error {other} for {m}"),
            }
        }
        // Members whose clients gave up (fenced, told they are unknown)
        // are fenced by their session timers, as the shell's would.
        let ghosts: Vec<String> = f
            .group
            .members
            .keys()
            .filter(|m| !epochs.contains_key(*m))
            .cloned()
            .collect();
        for m in ghosts {
            let records = f.group.fence_member(&m, &f.topics, f.now_ms);
            f.replay(&records);
            log.extend(records);
        }
        // The quiet round: everyone heartbeats with what it has.
        for _ in 0..2 {
            for (m, e) in epochs.clone() {
                let out = f.send(beat(&m, e));
                assert_eq!(out.response.error_code, 0, "seed {seed}: {m}");
                log.extend(out.records.iter().cloned());
                epochs.insert(m, out.response.member_epoch);
            }
        }
        let g = &f.group;
        for m in g.members.values() {
            assert_eq!(
                m.member_epoch, g.assignment_epoch,
                "seed {seed}: {}",
                m.member_id
            );
            assert_eq!(
                Some(&m.assignment),
                g.target.get(&m.member_id),
                "seed {seed}"
            );
            for (topic, _) in m.assignment.iter() {
                let name = &f.topics.by_id(&topic).unwrap().name;
                assert!(m.subscribed_topic_names.contains(name), "seed {seed}");
            }
        }
        for name in NAMES {
            let t = f.topics.by_name(name).unwrap();
            if g.members
                .values()
                .any(|m| m.subscribed_topic_names.iter().any(|s| s == name))
            {
                for p in 0..t.num_partitions() {
                    assert!(
                        g.members.values().any(|m| m.assignment.contains(&t.id, p)),
                        "seed {seed}: {name}-{p} has no member"
                    );
                }
            }
        }
        let mut rebuilt = ShareGroup::new("queue");
        for r in &log {
            rebuilt.replay(r);
        }
        assert_eq!(&rebuilt, g, "seed {seed}");
    }
}

#[test]
fn the_state_partitions_record_grows_with_the_targets_and_outlives_the_members() {
    let mut f = Fixture::new(TopicsImage::default().with_topic("t", 2).with_topic("u", 1));
    let is_state =
        |r: &ShareGroupRecord| matches!(r, ShareGroupRecord::StatePartitionMetadata { .. });
    let a = f.send(join("a", &["t"]));
    assert_eq!(a.records.iter().filter(|r| is_state(r)).count(), 1);
    let t = f.topics.by_name("t").unwrap().id;
    assert_eq!(f.group.state_partitions[&t].partitions, vec![0, 1]);
    assert_eq!(f.group.state_partitions[&t].topic_name, "t");
    // A second member on the same topic adds no partition: no record.
    let b = f.send(join("b", &["t"]));
    assert!(!b.records.iter().any(is_state));
    // A new topic grows it.
    let c = f.send(join("c", &["u"]));
    assert!(c.records.iter().any(is_state));
    assert_eq!(f.group.state_partitions.len(), 2);
    // Everyone leaves: the group is empty, its state partitions stay.
    for (m, epoch) in [("a", -1), ("b", -1), ("c", -1)] {
        f.send(beat(m, epoch));
    }
    assert_eq!(f.group.state(), ShareGroupState::Empty);
    assert_eq!(f.group.state_partitions.len(), 2);
}

/// DeleteGroups of an empty group: its tombstones, replayed through their
/// bytes as a load does, leave no trace of it.
#[test]
fn the_tombstones_of_an_empty_group_delete_it_on_replay() {
    let mut f = Fixture::new(TopicsImage::default().with_topic("t", 2));
    let mut log: Vec<ShareGroupRecord> = Vec::new();
    for req in [join("a", &["t"]), beat("a", 1), beat("a", -1)] {
        log.extend(f.send(req).records);
    }
    assert_eq!(f.group.state(), ShareGroupState::Empty);
    assert!(!f.group.state_partitions.is_empty(), "the group read t");
    let tombstones = f.group.tombstones();
    assert!(tombstones.iter().all(ShareGroupRecord::is_tombstone));
    assert!(matches!(
        tombstones.last(),
        Some(ShareGroupRecord::GroupMetadata { value: None, .. })
    ));
    log.extend(tombstones);
    let mut groups = std::collections::BTreeMap::new();
    for r in &log {
        let back = ShareGroupRecord::decode(r.encode_key(), r.encode_value())
            .unwrap()
            .unwrap();
        crate::group::share::replay_into(&mut groups, &back);
    }
    assert!(groups.is_empty(), "{groups:?}");
}
