//! The online migration, driven through records as the coordinator drives
//! it: a live classic group becomes a consumer group, its classic members
//! rejoin and sync inside it next to a consumer-protocol member, and the
//! group goes back to classic when that member leaves.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::classic::*;
use super::group::{replay_into, ConsumerGroup, ConsumerGroupState};
use super::heartbeat::*;
use super::records::{ConsumerGroupRecord, CurrentAssignmentValue};
use super::topics::{Assignment, TopicsImage};
use crate::broker_config::consumer_group::{ConsumerGroupConfig, MigrationPolicy};
use crate::group::consumer_protocol::{
    decode_assignment, encode_assignment, encode_subscription, Subscription,
};
use crate::group::group::Group;
use crate::group::schema::{GroupValue, StoredMember};
use crate::protocol::error_code;

const CLASSIC_MAX_SIZE: usize = 100;

struct Harness {
    groups: BTreeMap<String, ConsumerGroup>,
    config: ConsumerGroupConfig,
    image: TopicsImage,
    now_ms: i64,
}

impl Harness {
    fn new() -> Harness {
        Harness {
            groups: BTreeMap::new(),
            config: ConsumerGroupConfig::default(),
            image: TopicsImage::default().with_topic("t", 4),
            now_ms: 1_000,
        }
    }

    fn group(&self) -> &ConsumerGroup {
        &self.groups["g"]
    }

    fn apply(&mut self, records: &[ConsumerGroupRecord]) {
        for r in records {
            replay_into(&mut self.groups, r);
        }
    }

    fn ctx(&self) -> HeartbeatContext<'_> {
        HeartbeatContext {
            now_ms: self.now_ms,
            config: &self.config,
            topics: &self.image,
            fresh_member_id: "fresh",
            may_describe: None,
            session_deadline_ms: None,
        }
    }

    fn classic_join(
        &mut self,
        member: &str,
        owned: &[i32],
    ) -> Result<ClassicJoinResponse, HeartbeatError> {
        let req = join_request(member, owned);
        let out = self.group().classic_join(&req, &self.ctx())?;
        self.apply(&out.records);
        Ok(out.response)
    }

    fn sync(&self, member: &str, generation: i32) -> Result<Vec<i32>, HeartbeatError> {
        let out = self.group().classic_sync(
            member,
            None,
            generation,
            Some(CONSUMER_PROTOCOL_TYPE),
            Some("range"),
            self.now_ms,
            &self.image,
        )?;
        let named = decode_assignment(&out.response).unwrap();
        Ok(named.into_iter().flat_map(|(_, ps)| ps).collect())
    }

    fn consumer_heartbeat(&mut self, req: HeartbeatRequest) -> HeartbeatResponse {
        let out = self.group().heartbeat(&req, &self.ctx()).unwrap();
        self.apply(&out.records);
        out.response
    }

    fn t(&self) -> [u8; 16] {
        self.image.by_name("t").unwrap().id
    }
}

fn subscription(owned: &[i32]) -> Bytes {
    encode_subscription(&Subscription {
        version: 1,
        topics: vec!["t".into()],
        user_data: None,
        owned_partitions: if owned.is_empty() {
            Vec::new()
        } else {
            vec![("t".into(), owned.to_vec())]
        },
        generation_id: -1,
        rack_id: None,
    })
}

fn join_request(member: &str, owned: &[i32]) -> ClassicJoinRequest {
    ClassicJoinRequest {
        member_id: member.into(),
        instance_id: None,
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: CONSUMER_PROTOCOL_TYPE.into(),
        protocols: vec![("range".into(), subscription(owned))],
        client_id: "classic".into(),
        client_host: "/127.0.0.1".into(),
        require_known_member_id: false,
    }
}

/// A stable classic group at generation 3: a holds t-0 and t-1, b holds
/// t-2 and t-3.
fn classic_group() -> Group {
    let member = |id: &str, parts: Vec<i32>| StoredMember {
        member_id: id.into(),
        group_instance_id: None,
        client_id: "classic".into(),
        client_host: "/127.0.0.1".into(),
        rebalance_timeout_ms: 30_000,
        session_timeout_ms: 10_000,
        subscription: subscription(&[]),
        assignment: encode_assignment(1, &vec![("t".into(), parts)]),
    };
    let mut g = Group::new("g".into(), 0);
    g.load(
        GroupValue {
            protocol_type: CONSUMER_PROTOCOL_TYPE.into(),
            generation: 3,
            protocol: Some("range".into()),
            leader: Some("a".into()),
            current_state_timestamp: 0,
            members: vec![member("a", vec![0, 1]), member("b", vec![2, 3])],
        },
        0,
    );
    g
}

fn upgraded() -> Harness {
    let mut h = Harness::new();
    let records = ConsumerGroup::from_classic(&classic_group(), &h.image).unwrap();
    h.apply(&records);
    h
}

#[test]
fn a_converted_group_keeps_the_classic_generation_and_assignments() {
    let h = upgraded();
    let g = h.group();
    assert_eq!(g.group_epoch(), 3);
    assert_eq!(g.assignment_epoch(), 3);
    assert_eq!(g.state(), ConsumerGroupState::Stable);
    let t = h.t();
    assert_eq!(g.owner(&t, 1).unwrap().member_id, "a");
    assert_eq!(g.owner(&t, 3).unwrap().member_id, "b");
    let a = g.member("a").unwrap();
    assert!(a.uses_classic_protocol());
    assert_eq!(a.member_epoch, 3);
    assert_eq!(a.classic.as_ref().unwrap().session_timeout_ms, 10_000);
    // Classic members keep heartbeating without a rebalance.
    let hb = g.classic_heartbeat("a", None, 3, h.now_ms).unwrap();
    assert_eq!(hb.response, error_code::NONE);
    // And SyncGroup gives them what they hold.
    assert_eq!(h.sync("b", 3).unwrap(), vec![2, 3]);
}

#[test]
fn classic_members_rejoin_and_hand_over_to_a_consumer_member() {
    let mut h = upgraded();
    let t = h.t();
    // A consumer-protocol member joins: the group epoch moves to 4.
    let c = h.consumer_heartbeat(HeartbeatRequest {
        api_version: 1,
        group_id: "g".into(),
        member_id: "c".into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["t".into()]),
        topic_partitions: Some(vec![]),
        client_id: "new".into(),
        client_host: "/127.0.0.1".into(),
        ..HeartbeatRequest::default()
    });
    assert_eq!(h.group().group_epoch(), 4);
    // Its partitions are still held by the classic members.
    assert!(c.assignment.unwrap_or_default().is_empty());

    // Classic members hear of the rebalance through Heartbeat and SyncGroup.
    let hb = h.group().classic_heartbeat("a", None, 3, h.now_ms).unwrap();
    assert_eq!(hb.response, error_code::REBALANCE_IN_PROGRESS);
    assert!(matches!(hb.timers[1], TimerOp::ClassicJoin { .. }));
    assert_eq!(
        h.sync("a", 3).unwrap_err().error_code,
        error_code::REBALANCE_IN_PROGRESS
    );

    // An eager member revokes everything before joining: it moves to
    // epoch 4 at once, with its new target.
    let a = h.classic_join("a", &[]).unwrap();
    assert_eq!(a.generation_id, 4);
    assert_eq!(a.protocol_name, "range");
    let a_parts = h.sync("a", 4).unwrap();
    let b = h.classic_join("b", &[]).unwrap();
    let b_parts = h.sync("b", b.generation_id).unwrap();
    // The consumer member now gets what the others released.
    let c = h.consumer_heartbeat(HeartbeatRequest {
        api_version: 1,
        group_id: "g".into(),
        member_id: "c".into(),
        member_epoch: 4,
        topic_partitions: Some(vec![]),
        ..HeartbeatRequest::default()
    });
    let c_parts: Vec<i32> = c
        .assignment
        .unwrap_or_default()
        .into_iter()
        .flat_map(|(_, ps)| ps)
        .collect();
    let mut all: Vec<i32> = a_parts
        .iter()
        .chain(&b_parts)
        .chain(&c_parts)
        .copied()
        .collect();
    all.sort();
    assert_eq!(all, vec![0, 1, 2, 3], "every partition owned once");
    assert!(!c_parts.is_empty());
    for p in 0..4 {
        assert!(h.group().owner(&t, p).is_some());
    }
}

#[test]
fn the_last_consumer_member_leaving_turns_the_group_classic_again() {
    let mut h = upgraded();
    h.consumer_heartbeat(HeartbeatRequest {
        api_version: 1,
        group_id: "g".into(),
        member_id: "c".into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["t".into()]),
        topic_partitions: Some(vec![]),
        ..HeartbeatRequest::default()
    });
    let g = h.group();
    assert!(
        g.downgrade_on_fence(
            "a",
            MigrationPolicy::Bidirectional,
            CLASSIC_MAX_SIZE,
            5,
            &h.image
        )
        .is_none(),
        "a consumer member remains"
    );
    assert!(
        g.downgrade_on_fence("c", MigrationPolicy::Upgrade, CLASSIC_MAX_SIZE, 5, &h.image)
            .is_none(),
        "the policy forbids it"
    );
    assert!(
        g.downgrade_on_fence("c", MigrationPolicy::Bidirectional, 1, 5, &h.image)
            .is_none(),
        "too many members for group.max.size"
    );
    let d = g
        .downgrade_on_fence(
            "c",
            MigrationPolicy::Bidirectional,
            CLASSIC_MAX_SIZE,
            5,
            &h.image,
        )
        .unwrap();
    assert_eq!(d.classic.generation, 4);
    assert_eq!(d.classic.protocol.as_deref(), Some("range"));
    let ids: Vec<&str> = d
        .classic
        .members
        .iter()
        .map(|m| m.member_id.as_str())
        .collect();
    assert_eq!(ids, vec!["a", "b"]);
    assert_eq!(
        decode_assignment(&d.classic.members[0].assignment).unwrap(),
        vec![("t".to_string(), vec![0, 1])]
    );
    // The records delete the consumer group.
    h.apply(&d.records);
    assert!(!h.groups.contains_key("g"));
    // The classic group loads from the value and keeps both members.
    let mut classic = Group::new("g".into(), 0);
    classic.load(d.classic, 5);
    assert_eq!(classic.members.len(), 2);
}

#[test]
fn classic_requests_are_checked_like_kafka_checks_them() {
    let mut h = upgraded();
    let g = h.group();
    assert_eq!(
        g.classic_heartbeat("a", None, 2, 0).unwrap_err().error_code,
        error_code::ILLEGAL_GENERATION
    );
    assert_eq!(
        g.classic_heartbeat("zz", None, 3, 0)
            .unwrap_err()
            .error_code,
        error_code::UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        g.classic_sync(
            "a",
            None,
            3,
            Some("consumer"),
            Some("roundrobin"),
            0,
            &h.image
        )
        .unwrap_err()
        .error_code,
        error_code::INCONSISTENT_GROUP_PROTOCOL
    );
    let mut other = join_request("", &[]);
    other.protocols = vec![("roundrobin".into(), subscription(&[]))];
    assert_eq!(
        g.classic_join(&other, &h.ctx()).unwrap_err().error_code,
        error_code::INCONSISTENT_GROUP_PROTOCOL,
        "no protocol in common with the classic members"
    );
    let mut unknown = join_request("", &[]);
    unknown.require_known_member_id = true;
    let out = g.classic_join(&unknown, &h.ctx()).unwrap();
    assert_eq!(out.response.error_code, error_code::MEMBER_ID_REQUIRED);
    assert_eq!(out.response.member_id, "fresh");
    assert!(out.records.is_empty());

    // LeaveGroup removes classic members and bumps the epoch.
    let out = h
        .group()
        .classic_leave(&[("a".into(), None), ("zz".into(), None)]);
    assert_eq!(
        out.response,
        vec![error_code::NONE, error_code::UNKNOWN_MEMBER_ID]
    );
    h.apply(&out.records);
    assert!(h.group().member("a").is_none());
    assert_eq!(h.group().group_epoch(), 4);
    assert!(
        h.group().owner(&h.t(), 0).is_none(),
        "a's partitions are free"
    );
    let _ = Assignment::new();
}

#[test]
fn a_classic_member_reports_what_it_still_owns_when_cooperative() {
    let mut h = upgraded();
    h.consumer_heartbeat(HeartbeatRequest {
        api_version: 1,
        group_id: "g".into(),
        member_id: "c".into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["t".into()]),
        topic_partitions: Some(vec![]),
        ..HeartbeatRequest::default()
    });
    // a still owns t-0 and t-1; if its target drops one, it stays at
    // epoch 3 revoking it, and is told to sync at that generation.
    let a = h.classic_join("a", &[0, 1]).unwrap();
    let member = h.group().member("a").unwrap().clone();
    if member.partitions_pending_revocation.is_empty() {
        assert_eq!(a.generation_id, 4);
    } else {
        assert_eq!(a.generation_id, 3);
        // Syncing while revoking is allowed: it must finish first.
        let parts = h.sync("a", 3).unwrap();
        assert!(parts.len() < 2);
        let hb = h.group().classic_heartbeat("a", None, 3, 0).unwrap();
        assert_eq!(hb.response, error_code::REBALANCE_IN_PROGRESS);
        // It rejoins without the revoked partition and moves on.
        let a = h.classic_join("a", &parts).unwrap();
        assert_eq!(a.generation_id, 4);
    }
}

/// Kafka's `validateOnlineDowngradeWithReplacedMember`: a static classic
/// member that takes the place of the last member speaking the consumer
/// protocol (same `group.instance.id`) turns the group classic again, with
/// the replacement keeping the partitions of the member it replaced.
#[test]
fn a_static_classic_member_replacing_the_last_consumer_member_turns_the_group_classic() {
    let mut h = upgraded();
    let t = h.t();
    h.consumer_heartbeat(HeartbeatRequest {
        api_version: 1,
        group_id: "g".into(),
        member_id: "c".into(),
        instance_id: Some("pod-c".into()),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["t".into()]),
        topic_partitions: Some(vec![]),
        ..HeartbeatRequest::default()
    });
    let downgrade = |g: &ConsumerGroup, image: &TopicsImage, policy| {
        g.downgrade_after_replacement(policy, CLASSIC_MAX_SIZE, 5, image)
    };
    assert!(
        downgrade(h.group(), &h.image, MigrationPolicy::Bidirectional).is_none(),
        "a consumer member remains"
    );
    // The static member leaves for a restart (epoch -2) and comes back
    // speaking the classic protocol.
    h.consumer_heartbeat(HeartbeatRequest {
        api_version: 1,
        group_id: "g".into(),
        member_id: "c".into(),
        instance_id: Some("pod-c".into()),
        member_epoch: -2,
        ..HeartbeatRequest::default()
    });
    let held_by_c = h.group().member("c").unwrap().assigned_partitions.clone();
    let req = ClassicJoinRequest {
        member_id: String::new(),
        instance_id: Some("pod-c".into()),
        ..join_request("", &[])
    };
    let out = h.group().classic_join(&req, &h.ctx()).unwrap();
    h.apply(&out.records);
    let replacement = out.response.member_id.clone();
    assert_ne!(replacement, "c");
    let g = h.group();
    assert!(g.members().values().all(|m| m.uses_classic_protocol()));
    assert_eq!(
        g.member(&replacement).unwrap().assigned_partitions,
        held_by_c,
        "the replacement keeps what the member it replaced held"
    );
    assert!(
        downgrade(g, &h.image, MigrationPolicy::Upgrade).is_none(),
        "the policy forbids it"
    );
    assert!(
        g.downgrade_after_replacement(MigrationPolicy::Bidirectional, 2, 5, &h.image)
            .is_none(),
        "three members, group.max.size 2"
    );
    let d = downgrade(g, &h.image, MigrationPolicy::Bidirectional).unwrap();
    let mut ids: Vec<&str> = d
        .classic
        .members
        .iter()
        .map(|m| m.member_id.as_str())
        .collect();
    ids.sort();
    let mut want = vec!["a", "b", replacement.as_str()];
    want.sort();
    assert_eq!(ids, want);
    assert_eq!(d.classic.generation, g.group_epoch());
    // a and b, classic members, never reconciled with the target that made
    // room for c: the classic group must rebalance.
    assert!(d.rebalance, "a and b do not hold their targets");
    let stored = d
        .classic
        .members
        .iter()
        .find(|m| m.member_id == replacement)
        .unwrap();
    assert_eq!(stored.group_instance_id.as_deref(), Some("pod-c"));
    let named = decode_assignment(&stored.assignment).unwrap();
    let parts: Vec<i32> = named.into_iter().flat_map(|(_, ps)| ps).collect();
    assert_eq!(
        parts,
        held_by_c
            .iter()
            .filter(|(x, _)| *x == t)
            .map(|(_, p)| p)
            .collect::<Vec<_>>()
    );
}

/// Kafka converts a group after a static member's replacement without a
/// rebalance when the assignment is current: the target is the group
/// epoch's and every member holds its own.
#[test]
fn a_downgrade_with_the_assignment_current_does_not_rebalance() {
    let h = upgraded();
    let g = h.group();
    assert_eq!(g.assignment_epoch(), g.group_epoch());
    let d = g
        .downgrade_after_replacement(
            MigrationPolicy::Bidirectional,
            CLASSIC_MAX_SIZE,
            5,
            &h.image,
        )
        .unwrap();
    assert!(!d.rebalance, "every member holds its current target");
    // A member left holding less than its target: the group rebalances.
    let mut h = upgraded();
    let b = h.group().member("b").unwrap().clone();
    h.apply(&[ConsumerGroupRecord::CurrentMemberAssignment {
        group_id: "g".into(),
        member_id: "b".into(),
        value: Some(CurrentAssignmentValue {
            member_epoch: b.member_epoch,
            previous_member_epoch: b.previous_member_epoch,
            state: b.state,
            assigned_partitions: Assignment::new(),
            partitions_pending_revocation: Assignment::new(),
            assignment_epochs: BTreeMap::new(),
        }),
    }]);
    let d = h
        .group()
        .downgrade_after_replacement(
            MigrationPolicy::Bidirectional,
            CLASSIC_MAX_SIZE,
            5,
            &h.image,
        )
        .unwrap();
    assert!(d.rebalance, "b does not hold its target");
}
