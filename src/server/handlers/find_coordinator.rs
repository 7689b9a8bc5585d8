//! FindCoordinator: a group's coordinator is the leader of its
//! `__consumer_offsets` partition (Kafka's `abs(hash) % partitions`), at its
//! advertised address; the shard that runs it is an internal matter the
//! client never sees. A partition without a live leader answers
//! COORDINATOR_NOT_AVAILABLE, which clients retry.
//!
//! As in Kafka, the first lookup of a group coordinator creates
//! `__consumer_offsets`. Transaction coordinators do not exist in pinlog:
//! those lookups get COORDINATOR_NOT_AVAILABLE with a message that says so.

use std::rc::Rc;

use crate::group::offsets_topic::partition_for;
use crate::metadata::OFFSETS_TOPIC;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::find_coordinator::*;
use crate::server::handlers::offsets_topic::ensure_offsets_topic;
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

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let broker = BrokerState::of(shard);
    let keys = if header.api_version >= BATCHED_FROM {
        req.coordinator_keys.clone()
    } else {
        vec![req.key.clone()]
    };
    let (code, message) = match req.key_type {
        KEY_TYPE_GROUP => match ensure_offsets_topic(shard).await {
            Ok(()) => (error_code::NONE, None),
            Err(code) => (
                code,
                Some("the group coordinator is starting; retry".to_string()),
            ),
        },
        KEY_TYPE_TRANSACTION => (
            error_code::COORDINATOR_NOT_AVAILABLE,
            Some("pinlog does not support transactions yet".to_string()),
        ),
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
            let partitions = image
                .topic(OFFSETS_TOPIC)
                .map_or(0, |t| t.partitions.len() as i32);
            let partition = partition_for(&key, partitions);
            let leader = image
                .partition(OFFSETS_TOPIC, partition)
                .map_or(-1, |p| p.leader);
            match image.brokers.get(&leader).filter(|b| !b.fenced) {
                Some(b) => Coordinator {
                    key,
                    node_id: leader,
                    host: b.host.clone(),
                    port: b.port,
                    error_code: error_code::NONE,
                    error_message: None,
                },
                None => refused(
                    key,
                    error_code::COORDINATOR_NOT_AVAILABLE,
                    format!(
                        "{OFFSETS_TOPIC} partition {partition}, which holds this group, has no \
                         live leader; retry"
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
