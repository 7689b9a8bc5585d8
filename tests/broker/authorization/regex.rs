//! KAFKA-18813's rules, in Kafka 4.x: a KIP-848 member subscribed by
//! regular expression is given only the matching topics it may DESCRIBE
//! (the broker resolves the regex, so without the filter a member would
//! be handed, and could learn the names of, topics it may not even see),
//! and ConsumerGroupDescribe refuses a group whose members hold a topic
//! the client may not DESCRIBE.

use std::time::{Duration, Instant};

use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code;
use pinlog::protocol::messages::consumer_group_describe::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
};
use pinlog::protocol::messages::consumer_group_heartbeat::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
};

use crate::support::kafka_conn::Conn;

/// How long the member's heartbeats may take to be given its topics (the
/// coordinator may still be loading).
const ASSIGNED_WAIT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(100);
const HEARTBEAT_VERSION: i16 = 1;
const DESCRIBE_VERSION: i16 = 1;

fn heartbeat(c: &mut Conn, req: &ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse {
    let mut r = c.call(ApiKey::ConsumerGroupHeartbeat, HEARTBEAT_VERSION, |w| {
        req.encode(w, HEARTBEAT_VERSION)
    });
    ConsumerGroupHeartbeatResponse::decode(&mut r, HEARTBEAT_VERSION)
        .expect("decode ConsumerGroupHeartbeat")
}

/// ConsumerGroupDescribe of `group` through `conn`: its error, and the
/// topic names of its members' target assignments.
pub fn described(conn: &mut Conn, group: &str) -> (i16, Vec<String>) {
    let req = ConsumerGroupDescribeRequest {
        group_ids: vec![group.into()],
        include_authorized_operations: false,
    };
    let mut r = conn.call(ApiKey::ConsumerGroupDescribe, DESCRIBE_VERSION, |w| {
        req.encode(w, DESCRIBE_VERSION)
    });
    let resp = ConsumerGroupDescribeResponse::decode(&mut r, DESCRIBE_VERSION)
        .expect("decode ConsumerGroupDescribe");
    let g = &resp.groups[0];
    let mut names: Vec<String> = g
        .members
        .iter()
        .flat_map(|m| m.target_assignment.iter().map(|t| t.topic_name.clone()))
        .collect();
    names.sort();
    names.dedup();
    (g.error_code, names)
}

/// The member this file joins.
const MEMBER_ID: &str = "regex-member-00000000001";

/// Joins `group` as the member of `member` (whose ACLs the caller set),
/// subscribed to `regex`, and heartbeats until it is given partitions.
pub fn join_regex_member(member: &mut Conn, group: &str, regex: &str) {
    let mut req = ConsumerGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: MEMBER_ID.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_regex: Some(regex.into()),
        topic_partitions: Some(Vec::new()),
        ..Default::default()
    };
    let deadline = Instant::now() + ASSIGNED_WAIT;
    loop {
        let resp = heartbeat(member, &req);
        let transient = [
            error_code::COORDINATOR_NOT_AVAILABLE,
            error_code::COORDINATOR_LOAD_IN_PROGRESS,
            error_code::NOT_COORDINATOR,
        ];
        if transient.contains(&resp.error_code) && Instant::now() < deadline {
            std::thread::sleep(POLL);
            continue;
        }
        assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
        if resp.assignment.as_ref().is_some_and(|a| !a.is_empty()) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no partitions within {ASSIGNED_WAIT:?}: {resp:?}"
        );
        req = ConsumerGroupHeartbeatRequest {
            group_id: group.into(),
            member_id: MEMBER_ID.into(),
            member_epoch: resp.member_epoch,
            ..Default::default()
        };
        std::thread::sleep(POLL);
    }
}

/// The member of `join_regex_member` leaves `group`.
pub fn leave(member: &mut Conn, group: &str) {
    let left = heartbeat(
        member,
        &ConsumerGroupHeartbeatRequest {
            group_id: group.into(),
            member_id: MEMBER_ID.into(),
            member_epoch: -1,
            ..Default::default()
        },
    );
    assert_eq!(left.error_code, error_code::NONE, "{left:?}");
}
