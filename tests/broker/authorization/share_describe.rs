//! KAFKA-18813's rule for share groups: ShareGroupDescribe refuses, whole,
//! a group whose members hold a topic the client may not DESCRIBE
//! (TOPIC_AUTHORIZATION_FAILED), as ConsumerGroupDescribe does; otherwise
//! describing the group would name a topic the client may not see.

use std::time::{Duration, Instant};

use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code;
use pinlog::protocol::messages::share_group_describe::{
    ShareGroupDescribeRequest, ShareGroupDescribeResponse,
};
use pinlog::protocol::messages::share_group_heartbeat::{
    ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
};

use crate::support::kafka_conn::Conn;

/// How long the member's heartbeats may take to be given partitions of
/// every topic it subscribed to (the coordinator may still be loading).
const ASSIGNED_WAIT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(100);
const VERSION: i16 = 1;
/// The member this file joins.
const MEMBER_ID: &str = "share-describe-member-0001";

fn heartbeat(c: &mut Conn, req: &ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse {
    let mut r = c.call(ApiKey::ShareGroupHeartbeat, VERSION, |w| {
        req.encode(w, VERSION)
    });
    ShareGroupHeartbeatResponse::decode(&mut r, VERSION).expect("decode ShareGroupHeartbeat")
}

/// ShareGroupDescribe of `group` through `conn`: its error, and the topic
/// names its members are assigned.
pub fn described(conn: &mut Conn, group: &str) -> (i16, Vec<String>) {
    let req = ShareGroupDescribeRequest {
        group_ids: vec![group.into()],
        include_authorized_operations: false,
    };
    let mut r = conn.call(ApiKey::ShareGroupDescribe, VERSION, |w| {
        req.encode(w, VERSION)
    });
    let resp =
        ShareGroupDescribeResponse::decode(&mut r, VERSION).expect("decode ShareGroupDescribe");
    let g = &resp.groups[0];
    let mut names: Vec<String> = g
        .members
        .iter()
        .flat_map(|m| m.assignment.iter().map(|t| t.topic_name.clone()))
        .collect();
    names.sort();
    names.dedup();
    (g.error_code, names)
}

/// Joins share group `group` through `member` (whose ACLs the caller set),
/// subscribed to `topics`, and heartbeats until it is assigned partitions
/// of all of them.
pub fn join_share_member(member: &mut Conn, group: &str, topics: &[&str]) {
    let subscribed: Vec<String> = topics.iter().map(|t| t.to_string()).collect();
    let mut req = ShareGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: MEMBER_ID.into(),
        member_epoch: 0,
        rack_id: None,
        subscribed_topic_names: Some(subscribed.clone()),
    };
    let mut assigned: Vec<String> = Vec::new();
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
        if let Some(assignment) = &resp.assignment {
            // The heartbeat names topics by id; counting distinct ids is
            // enough to know every subscribed topic has partitions here.
            assigned = assignment.iter().map(|t| hex(&t.topic_id)).collect();
            assigned.sort();
            assigned.dedup();
        }
        if assigned.len() == topics.len() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not assigned all of {topics:?} within {ASSIGNED_WAIT:?}: {resp:?}"
        );
        req = ShareGroupHeartbeatRequest {
            group_id: group.into(),
            member_id: MEMBER_ID.into(),
            member_epoch: resp.member_epoch,
            rack_id: None,
            subscribed_topic_names: None,
        };
        std::thread::sleep(POLL);
    }
}

fn hex(id: &[u8; 16]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// The member of `join_share_member` leaves `group`.
pub fn leave(member: &mut Conn, group: &str) {
    let left = heartbeat(
        member,
        &ShareGroupHeartbeatRequest {
            group_id: group.into(),
            member_id: MEMBER_ID.into(),
            member_epoch: -1,
            rack_id: None,
            subscribed_topic_names: None,
        },
    );
    assert_eq!(left.error_code, error_code::NONE, "{left:?}");
}
