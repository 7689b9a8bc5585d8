//! FindCoordinator: a group's coordinator is the leader of its
//! `__consumer_offsets` partition (Kafka's `abs(hash) % partitions`), at its
//! advertised address; the shard that runs it is an internal matter the
//! client never sees. A partition without a live leader answers
//! COORDINATOR_NOT_AVAILABLE, which clients retry.
//!
//! A transactional id's coordinator is likewise the leader of its
//! `__transaction_state` partition, and a share partition's share
//! coordinator (key type SHARE, v6+, a broker's question: CLUSTER_ACTION)
//! the leader of its `__share_group_state` partition, the key being
//! `groupId:topicId:partition`. As in Kafka, the first lookup of a
//! coordinator creates its topic.

use std::rc::Rc;

use crate::acl::matrix;
use crate::metadata::{OFFSETS_TOPIC, SHARE_GROUP_STATE_TOPIC, TRANSACTION_STATE_TOPIC};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::find_coordinator::*;
use crate::server::handlers::access::Access;
use crate::server::handlers::offsets_topic::ensure_offsets_topic;
use crate::server::share_state::topic::ensure_share_group_state_topic;
use crate::server::txn_coordinator::topic::ensure_transaction_state_topic;
use crate::shard::shard::Shard;

fn refused(key: String, code: i16, message: String) -> Coordinator {
    Coordinator {
        key,
        node_id: -1,
        host: String::new(),
        port: -1,
        error_code: code,
        error_message: Some(message),
    }
}

/// First version that looks up a batch of keys.
const BATCHED_FROM: i16 = 4;
/// First version with the SHARE key type.
const SHARE_FROM: i16 = 6;

/// Kafka's check of a share coordinator key: `groupId:topicId:partition`
/// with a non-empty group, a topic id and a partition number (the group
/// itself may hold colons).
fn is_share_key(key: &str) -> bool {
    let mut parts = key.rsplitn(3, ':');
    let (Some(partition), Some(topic_id), Some(group)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    !group.is_empty() && !topic_id.is_empty() && partition.parse::<i32>().is_ok_and(|p| p >= 0)
}

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: FindCoordinatorRequest,
    listener: &str,
    access: &Access<'_>,
) -> FindCoordinatorResponse {
    let broker = BrokerState::of(shard);
    let keys = if header.api_version >= BATCHED_FROM {
        req.coordinator_keys.clone()
    } else {
        vec![req.key.clone()]
    };
    let share_allowed = req.key_type == KEY_TYPE_SHARE
        && access.allows_cluster(&broker.image(), matrix::FIND_COORDINATOR_SHARE);
    let (code, message) = match req.key_type {
        KEY_TYPE_GROUP => match ensure_offsets_topic(shard).await {
            Ok(()) => (error_code::NONE, None),
            Err(code) => (
                code,
                Some("the group coordinator is starting; retry".to_string()),
            ),
        },
        KEY_TYPE_TRANSACTION => match ensure_transaction_state_topic(shard).await {
            Ok(()) => (error_code::NONE, None),
            Err(code) => (
                code,
                Some("the transaction coordinator is starting; retry".to_string()),
            ),
        },
        KEY_TYPE_SHARE if header.api_version < SHARE_FROM => (
            error_code::UNSUPPORTED_VERSION,
            Some(format!("the share key type needs v{SHARE_FROM}")),
        ),
        // Refused key by key below, without creating the topic.
        KEY_TYPE_SHARE if !share_allowed => (error_code::NONE, None),
        KEY_TYPE_SHARE => match ensure_share_group_state_topic(shard).await {
            Ok(()) => (error_code::NONE, None),
            Err(code) => (
                code,
                Some("the share coordinator is starting; retry".to_string()),
            ),
        },
        other => (
            error_code::INVALID_REQUEST,
            Some(format!("unknown coordinator key type {other}")),
        ),
    };

    let ok = code == error_code::NONE;
    let image = broker.image();
    let coordinators: Vec<Coordinator> = keys
        .into_iter()
        .map(|key| {
            // Kafka asks before anything else: a refused key learns
            // nothing of its coordinator.
            let rule = match req.key_type {
                KEY_TYPE_GROUP => Some(matrix::FIND_COORDINATOR_GROUP),
                KEY_TYPE_TRANSACTION => Some(matrix::FIND_COORDINATOR_TRANSACTIONAL_ID),
                _ => None,
            };
            if let Some(rule) = rule.filter(|r| !access.allows(&image, *r, &key)) {
                return refused(
                    key,
                    rule.denied_error(),
                    format!("not authorized to describe this {}", rule.resource_type),
                );
            }
            if req.key_type == KEY_TYPE_SHARE && !share_allowed {
                return refused(
                    key,
                    error_code::CLUSTER_AUTHORIZATION_FAILED,
                    "only brokers look up share coordinators".into(),
                );
            }
            if req.key_type == KEY_TYPE_GROUP && ok && key.is_empty() {
                return refused(
                    key,
                    error_code::INVALID_GROUP_ID,
                    "the group id is empty".into(),
                );
            }
            if !ok {
                return refused(key, code, message.clone().unwrap_or_default());
            }
            if req.key_type == KEY_TYPE_TRANSACTION && key.is_empty() {
                return refused(
                    key,
                    error_code::INVALID_REQUEST,
                    "the transactional id is empty".into(),
                );
            }
            if req.key_type == KEY_TYPE_SHARE && !is_share_key(&key) {
                return refused(
                    key,
                    error_code::INVALID_REQUEST,
                    "a share coordinator key is groupId:topicId:partition".into(),
                );
            }
            let (topic, what) = match req.key_type {
                KEY_TYPE_TRANSACTION => (TRANSACTION_STATE_TOPIC, "transactional id"),
                KEY_TYPE_SHARE => (SHARE_GROUP_STATE_TOPIC, "share partition"),
                _ => (OFFSETS_TOPIC, "group"),
            };
            let partitions = image.topic(topic).map_or(0, |t| t.partitions.len() as i32);
            // The same mapping for all three (Kafka's `abs(hashCode) %
            // partitions`; a share key is hashed as the string it is).
            let partition = crate::group::offsets_topic::partition_for(&key, partitions);
            let leader = image.partition(topic, partition).map_or(-1, |p| p.leader);
            let endpoint = image
                .brokers
                .get(&leader)
                .filter(|b| !b.fenced)
                .and_then(|b| b.endpoint(listener));
            match endpoint {
                Some((host, port)) => Coordinator {
                    key,
                    node_id: leader,
                    host: host.to_string(),
                    port,
                    error_code: error_code::NONE,
                    error_message: None,
                },
                None => refused(
                    key,
                    error_code::COORDINATOR_NOT_AVAILABLE,
                    format!(
                        "{topic} partition {partition}, which holds this {what}, has no live \
                         leader; retry"
                    ),
                ),
            }
        })
        .collect();
    if header.api_version >= BATCHED_FROM {
        return FindCoordinatorResponse {
            coordinators,
            ..FindCoordinatorResponse::default()
        };
    }
    let first = coordinators.into_iter().next().expect("one key");
    FindCoordinatorResponse {
        throttle_time_ms: 0,
        error_code: first.error_code,
        error_message: first.error_message,
        node_id: first.node_id,
        host: first.host,
        port: first.port,
        coordinators: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::is_share_key;

    #[test]
    fn share_keys_are_checked_as_kafka_checks_them() {
        assert!(is_share_key("group:AAAAAAAAAAAAAAAAAAAAAA:0"));
        assert!(is_share_key("a:b:c:AAAAAAAAAAAAAAAAAAAAAA:12"));
        for bad in [
            "",
            "group",
            "group:topic",
            ":t:0",
            "g::0",
            "g:t:-1",
            "g:t:x",
        ] {
            assert!(!is_share_key(bad), "{bad:?}");
        }
    }
}
