//! The heartbeat's rules, one test each, on a group driven through its
//! records exactly as the coordinator will drive it.

use super::group::{replay_into, ConsumerGroup, ConsumerGroupState};
use super::heartbeat::*;
use super::member::MemberState;
use super::records::ConsumerGroupRecord;
use super::topics::{Assignment, TopicsImage};
use crate::broker_config::consumer_group::ConsumerGroupConfig;
use crate::protocol::error_code;
use std::collections::BTreeMap;

struct Harness {
    groups: BTreeMap<String, ConsumerGroup>,
    log: Vec<ConsumerGroupRecord>,
    config: ConsumerGroupConfig,
    image: TopicsImage,
    now_ms: i64,
    timers: Vec<TimerOp>,
}

impl Harness {
    fn new(image: TopicsImage) -> Harness {
        Harness {
            groups: BTreeMap::new(),
            log: Vec::new(),
            config: ConsumerGroupConfig::default(),
            image,
            now_ms: 1_000,
            timers: Vec::new(),
        }
    }

    fn group(&self) -> &ConsumerGroup {
        &self.groups["g"]
    }

    fn apply(&mut self, records: Vec<ConsumerGroupRecord>) {
        for r in records {
            replay_into(&mut self.groups, &r);
            self.log.push(r);
        }
    }

    fn hb(&mut self, req: HeartbeatRequest) -> Result<HeartbeatResponse, HeartbeatError> {
        validate_request(&req, &self.config)?;
        let fresh = ConsumerGroup::new("g");
        let group = self.groups.get("g").unwrap_or(&fresh);
        if !self.groups.contains_key("g") && req.member_epoch != 0 {
            return Err(unknown_group_error("g"));
        }
        let ctx = HeartbeatContext {
            now_ms: self.now_ms,
            config: &self.config,
            topics: &self.image,
            fresh_member_id: "fresh-id",
            may_describe: None,
            session_deadline_ms: None,
        };
        let out = group.heartbeat(&req, &ctx)?;
        self.timers.extend(out.timers.clone());
        self.apply(out.records);
        Ok(out.response)
    }
}

fn join(member: &str, topics: &[&str]) -> HeartbeatRequest {
    HeartbeatRequest {
        api_version: 1,
        group_id: "g".into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
        topic_partitions: Some(vec![]),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        ..HeartbeatRequest::default()
    }
}

fn beat(member: &str, epoch: i32, owned: &Assignment) -> HeartbeatRequest {
    HeartbeatRequest {
        api_version: 1,
        group_id: "g".into(),
        member_id: member.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        topic_partitions: Some(owned.to_topic_partitions()),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        ..HeartbeatRequest::default()
    }
}

fn owned(r: &HeartbeatResponse) -> Assignment {
    Assignment::from_topic_partitions(r.assignment.as_deref().unwrap_or(&[]))
}

fn image() -> TopicsImage {
    TopicsImage::default().with_topic("t", 4)
}

#[test]
fn the_first_member_gets_every_partition_at_epoch_one() {
    let mut h = Harness::new(image());
    let r = h.hb(join("a", &["t"])).unwrap();
    assert_eq!(r.member_epoch, 1);
    assert_eq!(owned(&r).len(), 4);
    assert_eq!(r.heartbeat_interval_ms, 5_000);
    // Its acknowledgement (it owns its assignment now) is answered with an
    // interval spread below the group's, by at most half.
    let ack = h.hb(beat("a", 1, &owned(&r))).unwrap();
    assert!(
        (2_500..=5_000).contains(&ack.heartbeat_interval_ms),
        "{ack:?}"
    );
    assert_eq!(h.group().state(), ConsumerGroupState::Stable);
    assert!(h.timers.contains(&TimerOp::Session {
        member_id: "a".into(),
        deadline_ms: 1_000 + 45_000
    }));
}

#[test]
fn a_second_member_gets_partitions_only_after_the_first_revokes_them() {
    let mut h = Harness::new(image());
    let a = h.hb(join("a", &["t"])).unwrap();
    let a_owned = owned(&a);
    let b = h.hb(join("b", &["t"])).unwrap();
    assert_eq!(b.member_epoch, 2);
    assert!(owned(&b).is_empty(), "a still holds everything");
    assert_eq!(
        h.group().member("b").unwrap().state,
        MemberState::UnreleasedPartitions
    );
    // b waits on a: it is told to heartbeat sooner than the group's 5 s,
    // to learn at once when its partitions are free.
    assert_eq!(
        b.heartbeat_interval_ms,
        UNRELEASED_PARTITIONS_HEARTBEAT_INTERVAL_MS
    );

    // a learns what to revoke and stays at epoch 1.
    let a2 = h.hb(beat("a", 1, &a_owned)).unwrap();
    assert_eq!(a2.member_epoch, 1);
    assert_eq!(
        a2.heartbeat_interval_ms, 5_000,
        "a revoker answers when done"
    );
    let keep = owned(&a2);
    assert_eq!(keep.len(), 2);
    assert_eq!(
        h.group().member("a").unwrap().state,
        MemberState::UnrevokedPartitions
    );
    assert!(matches!(h.timers.last(), Some(TimerOp::Session { .. })));
    assert!(h.timers.iter().any(|t| matches!(
        t,
        TimerOp::Rebalance {
            member_epoch: 1,
            ..
        }
    )));

    // b still waits while a has not confirmed.
    let b2 = h.hb(beat("b", 2, &Assignment::new())).unwrap();
    assert!(b2.assignment.is_none());
    assert_eq!(
        b2.heartbeat_interval_ms,
        UNRELEASED_PARTITIONS_HEARTBEAT_INTERVAL_MS
    );
    // a confirms: it moves to epoch 2, and then b gets the rest.
    let a3 = h.hb(beat("a", 1, &keep)).unwrap();
    assert_eq!(a3.member_epoch, 2);
    let b3 = h.hb(beat("b", 2, &Assignment::new())).unwrap();
    assert_eq!(owned(&b3).len(), 2);
    assert!(!owned(&b3).intersects(&keep));
    assert_eq!(b3.heartbeat_interval_ms, 5_000, "b has not acknowledged");
    // Both acknowledge their targets: each is told an interval spread
    // below the group's, so that they do not heartbeat in step.
    let b4 = h.hb(beat("b", 2, &owned(&b3))).unwrap();
    assert!(
        (2_500..=5_000).contains(&a3.heartbeat_interval_ms),
        "{a3:?}"
    );
    assert!(
        (2_500..=5_000).contains(&b4.heartbeat_interval_ms),
        "{b4:?}"
    );
    assert_ne!(a3.heartbeat_interval_ms, b4.heartbeat_interval_ms);
    // Later heartbeats, which report nothing new, get the group's.
    let mut later = beat("b", 2, &Assignment::new());
    later.topic_partitions = None;
    let b5 = h.hb(later).unwrap();
    assert_eq!(b5.heartbeat_interval_ms, 5_000);
    assert_eq!(h.group().state(), ConsumerGroupState::Stable);
}

#[test]
fn validation_errors_are_kafkas() {
    let mut h = Harness::new(image());
    let code = |h: &mut Harness, r| h.hb(r).unwrap_err().error_code;
    let mut r = join("a", &["t"]);
    r.rebalance_timeout_ms = -1;
    assert_eq!(code(&mut h, r), error_code::INVALID_REQUEST);
    let mut r = join("a", &[]);
    r.subscribed_topic_names = Some(vec![]);
    assert_eq!(code(&mut h, r), error_code::INVALID_REQUEST);
    let mut r = join("a", &["t"]);
    r.topic_partitions = None;
    assert_eq!(code(&mut h, r), error_code::INVALID_REQUEST);
    assert_eq!(code(&mut h, join("", &["t"])), error_code::INVALID_REQUEST);
    let mut r = join("a", &["t"]);
    r.member_epoch = -3;
    assert_eq!(code(&mut h, r), error_code::INVALID_REQUEST);
    let mut r = join("a", &["t"]);
    r.server_assignor = Some("sticky".into());
    assert_eq!(code(&mut h, r), UNSUPPORTED_ASSIGNOR);
    let mut r = join("a", &[]);
    r.subscribed_topic_regex = Some("(".into());
    assert_eq!(code(&mut h, r), INVALID_REGULAR_EXPRESSION);
    assert_eq!(
        code(&mut h, beat("a", 1, &Assignment::new())),
        error_code::GROUP_ID_NOT_FOUND
    );
    // v0 members may join without an id; the coordinator names them.
    let mut r = join("", &["t"]);
    r.api_version = 0;
    assert_eq!(h.hb(r).unwrap().member_id, "fresh-id");
    assert_eq!(
        code(&mut h, beat("zzz", 1, &Assignment::new())),
        error_code::UNKNOWN_MEMBER_ID
    );
}

#[test]
fn stale_and_future_epochs_are_fenced_but_a_lost_bump_is_forgiven() {
    let mut h = Harness::new(image());
    let a = h.hb(join("a", &["t"])).unwrap();
    let all = owned(&a);
    assert_eq!(
        h.hb(beat("a", 7, &all)).unwrap_err().error_code,
        FENCED_MEMBER_EPOCH
    );
    // Bump a to epoch 2 through a second member; a's answer is "lost".
    h.hb(join("b", &["t"])).unwrap();
    let a2 = h.hb(beat("a", 1, &all)).unwrap();
    let keep = owned(&a2);
    h.hb(beat("a", 1, &keep)).unwrap();
    assert_eq!(h.group().member("a").unwrap().member_epoch, 2);
    // Retrying with the previous epoch and a subset of its partitions: fine.
    let retry = h.hb(beat("a", 1, &keep)).unwrap();
    assert_eq!(retry.member_epoch, 2);
    // With partitions it no longer has: fenced.
    assert_eq!(
        h.hb(beat("a", 1, &all)).unwrap_err().error_code,
        FENCED_MEMBER_EPOCH
    );
    // Epoch 0 under the same id rejoins (KAFKA-19233) and gets its
    // assignment back without a new group epoch.
    let epoch = h.group().group_epoch();
    let back = h.hb(join("a", &["t"])).unwrap();
    assert_eq!(back.member_epoch, 2);
    assert_eq!(owned(&back), keep);
    assert_eq!(h.group().group_epoch(), epoch);
}

#[test]
fn leaving_releases_partitions_and_bumps_the_epoch() {
    let mut h = Harness::new(image());
    h.hb(join("a", &["t"])).unwrap();
    h.hb(join("b", &["t"])).unwrap();
    let epoch = h.group().group_epoch();
    let r = h.hb(beat("b", -1, &Assignment::new())).unwrap();
    assert_eq!(r.member_epoch, -1);
    assert!(h.group().member("b").is_none());
    assert_eq!(h.group().group_epoch(), epoch + 1);
    assert!(h.timers.contains(&TimerOp::CancelAll {
        member_id: "b".into()
    }));
    // a (which had not heartbeated since b joined) keeps everything and
    // moves to the new epoch.
    let a = h.hb(beat("a", 1, &Assignment::new())).unwrap();
    assert_eq!(a.member_epoch, epoch + 1);
    assert_eq!(h.group().member("a").unwrap().assigned_partitions.len(), 4);
}

#[test]
fn a_static_member_keeps_its_assignment_across_a_restart() {
    let mut h = Harness::new(image());
    let mut j = join("a1", &["t"]);
    j.instance_id = Some("inst".into());
    h.hb(j.clone()).unwrap();
    let mut jb = join("b", &["t"]);
    jb.instance_id = Some("other".into());
    h.hb(jb).unwrap();
    // a1 acknowledges its revocation (if any), so it holds its target.
    let held = h.group().member("a1").unwrap().assigned_partitions.clone();
    let mut r = beat("a1", 1, &held);
    r.instance_id = Some("inst".into());
    h.hb(r).unwrap();
    // Whatever a1 holds now, it leaves for a while with -2.
    let before = h.group().member("a1").unwrap().assigned_partitions.clone();
    let epoch = h.group().group_epoch();
    let mut leave = beat("a1", -2, &before);
    leave.instance_id = Some("inst".into());
    assert_eq!(h.hb(leave).unwrap().member_epoch, -2);
    assert_eq!(
        h.group().group_epoch(),
        epoch,
        "a temporary leave keeps the epoch"
    );
    // Another instance cannot take the id while it is held...
    let mut thief = join("x", &["t"]);
    thief.instance_id = Some("other".into());
    assert_eq!(h.hb(thief).unwrap_err().error_code, UNRELEASED_INSTANCE_ID);
    // ...but the restarted instance, with a new member id, takes over.
    let mut back = join("a2", &["t"]);
    back.instance_id = Some("inst".into());
    let r = h.hb(back).unwrap();
    assert_eq!(
        h.group().group_epoch(),
        epoch,
        "no rebalance for a static restart"
    );
    assert!(h.group().member("a1").is_none());
    assert_eq!(r.member_epoch, h.group().assignment_epoch());
    assert_eq!(owned(&r), before, "the same partitions, taken over");
    // The old member id is now fenced.
    let mut old = beat("a1", 1, &Assignment::new());
    old.instance_id = Some("inst".into());
    assert_eq!(
        h.hb(old).unwrap_err().error_code,
        error_code::FENCED_INSTANCE_ID
    );
}

#[test]
fn the_group_max_size_refuses_new_members_only() {
    let mut h = Harness::new(image());
    h.config.max_size = 1;
    h.hb(join("a", &["t"])).unwrap();
    assert_eq!(
        h.hb(join("b", &["t"])).unwrap_err().error_code,
        error_code::GROUP_MAX_SIZE_REACHED
    );
    h.hb(beat("a", 1, &Assignment::new())).unwrap();
}

#[test]
fn new_partitions_and_regex_topics_bump_the_epoch() {
    let mut h = Harness::new(image());
    let mut j = join("a", &[]);
    j.subscribed_topic_names = None;
    j.subscribed_topic_regex = Some("t.*".into());
    let r = h.hb(j).unwrap();
    assert_eq!(owned(&r).len(), 4);
    assert_eq!(h.group().regexes()["t.*"].topics, vec!["t"]);
    let epoch = h.group().group_epoch();
    // A new matching topic joins the subscription.
    h.image.add_topic("t2", 2, &[]);
    let r = h.hb(beat("a", 1, &owned(&r))).unwrap();
    assert_eq!(h.group().group_epoch(), epoch + 1);
    assert_eq!(owned(&r).len(), 6);
    // More partitions of a subscribed topic.
    h.image.add_topic("t2", 3, &[]);
    let r = h.hb(beat("a", r.member_epoch, &owned(&r))).unwrap();
    assert_eq!(owned(&r).len(), 7);
    // Unrelated metadata changes nothing.
    h.image.add_topic("other", 3, &[]);
    let e = h.group().group_epoch();
    h.hb(beat("a", r.member_epoch, &owned(&r))).unwrap();
    assert_eq!(h.group().group_epoch(), e);
}

#[test]
fn timeouts_fence_and_stale_timers_do_nothing() {
    let mut h = Harness::new(image());
    h.hb(join("a", &["t"])).unwrap();
    h.hb(join("b", &["t"])).unwrap();
    let a_owned = h.group().member("a").unwrap().assigned_partitions.clone();
    h.hb(beat("a", 1, &a_owned)).unwrap(); // a must now revoke
    let epoch = h.group().member("a").unwrap().member_epoch;
    let (records, _) = h.group().rebalance_expired("a", epoch - 1);
    assert!(records.is_empty(), "a timer of an epoch the member left");
    let (records, timers) = h.group().rebalance_expired("a", epoch);
    assert!(!records.is_empty());
    assert_eq!(
        timers,
        vec![TimerOp::CancelAll {
            member_id: "a".into()
        }]
    );
    h.apply(records);
    assert!(h.group().member("a").is_none());
    let (records, _) = h.group().session_expired("b");
    h.apply(records);
    assert!(h.group().is_empty());
    assert_eq!(h.group().state(), ConsumerGroupState::Empty);
    assert!(h.group().session_expired("b").0.is_empty());
}

#[test]
fn replaying_the_log_rebuilds_the_same_group() {
    let mut h = Harness::new(image());
    h.hb(join("a", &["t"])).unwrap();
    h.hb(join("b", &["t"])).unwrap();
    let a_owned = h.group().member("a").unwrap().assigned_partitions.clone();
    h.hb(beat("a", 1, &a_owned)).unwrap();
    let mut fresh = BTreeMap::new();
    for r in &h.log {
        // Through the bytes, as a failover reads them.
        let back = ConsumerGroupRecord::decode(r.encode_key(), r.encode_value())
            .unwrap()
            .unwrap();
        replay_into(&mut fresh, &back);
    }
    assert_eq!(fresh["g"], h.groups["g"]);
    // The replayed group answers the members without a new epoch.
    let epoch = h.group().group_epoch();
    h.groups = fresh;
    let b = h.hb(beat("b", 2, &Assignment::new())).unwrap();
    assert_eq!(b.member_epoch, 2);
    assert_eq!(h.group().group_epoch(), epoch);
    // Deleting an emptied group leaves nothing behind.
    for id in ["a", "b"] {
        let (records, _) = h.group().session_expired(id);
        h.apply(records);
    }
    let records = h.group().delete_records();
    h.apply(records);
    assert!(h.groups.is_empty());
}

/// Under an authorizer, a regex resolved at a heartbeat keeps only the
/// topics the heartbeat's principal may DESCRIBE (KAFKA-18813): the member
/// is not given, and the regex record does not name, the others.
#[test]
fn a_regex_keeps_only_the_topics_the_member_may_describe() {
    let image = TopicsImage::default()
        .with_topic("rx-open", 2)
        .with_topic("rx-hidden", 2);
    let h = Harness::new(image);
    let may_describe = |t: &str| t != "rx-hidden";
    let ctx = HeartbeatContext {
        now_ms: h.now_ms,
        config: &h.config,
        topics: &h.image,
        fresh_member_id: "fresh-id",
        may_describe: Some(&may_describe),
        session_deadline_ms: None,
    };
    let mut j = join("a", &[]);
    j.subscribed_topic_names = None;
    j.subscribed_topic_regex = Some("rx-.*".into());
    let out = ConsumerGroup::new("g").heartbeat(&j, &ctx).unwrap();
    let mut groups = BTreeMap::new();
    for r in &out.records {
        replay_into(&mut groups, r);
    }
    assert_eq!(groups["g"].regexes()["rx-.*"].topics, vec!["rx-open"]);
    let open = h.image.by_name("rx-open").unwrap().id;
    let given = owned(&out.response);
    assert_eq!(given.len(), 2);
    assert!(given.iter().all(|(t, _)| t == open), "{given:?}");
}

#[test]
fn a_dynamic_member_whose_connection_closed_is_due_after_its_interval_and_the_grace() {
    let mut h = Harness::new(image());
    h.hb(join("a", &["t"])).unwrap();
    let mut stat = join("s", &["t"]);
    stat.instance_id = Some("instance-s".into());
    h.hb(stat).unwrap();
    let g = h.group();
    // 5 s heartbeat interval and 2 s of grace from the close.
    assert_eq!(
        g.disconnected_session_deadline("a", 10_000, &h.config),
        Some(17_000)
    );
    assert_eq!(
        g.disconnected_session_deadline("s", 10_000, &h.config),
        None,
        "a static member keeps its session"
    );
    assert_eq!(
        g.disconnected_session_deadline("gone", 10_000, &h.config),
        None
    );
    let mut off = h.config.clone();
    off.disconnect_grace_ms = -1;
    assert_eq!(g.disconnected_session_deadline("a", 10_000, &off), None);
}
