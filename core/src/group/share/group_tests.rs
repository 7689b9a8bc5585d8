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
