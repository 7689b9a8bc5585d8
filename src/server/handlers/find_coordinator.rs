//! FindCoordinator: every group's coordinator is this broker (one node);
//! the shard that runs it is an internal matter the client never sees.
//!
//! As in Kafka, the first lookup of a group coordinator creates
//! `__consumer_offsets`. Transaction coordinators do not exist in pinlog:
//! those lookups get COORDINATOR_NOT_AVAILABLE with a message that says so.

use std::rc::Rc;

use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::find_coordinator::*;
use crate::server::offsets_topic::ensure_offsets_topic;
use crate::shard::shard::Shard;

/// First version that looks up a batch of keys.
const BATCHED_FROM: i16 = 4;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let broker = BrokerState::of(shard);
    let (host, port) = broker.config.advertised_host_port();
    let node = broker.node_id();
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
    let coordinators: Vec<Coordinator> = keys
        .into_iter()
        .map(|key| {
            let (code, message) = if req.key_type == KEY_TYPE_GROUP && ok && key.is_empty() {
                (
                    error_code::INVALID_GROUP_ID,
                    Some("the group id is empty".to_string()),
                )
            } else {
                (code, message.clone())
            };
            Coordinator {
                key,
                node_id: if code == error_code::NONE { node } else { -1 },
                host: if code == error_code::NONE {
                    host.clone()
                } else {
                    String::new()
                },
                port: if code == error_code::NONE { port } else { -1 },
                error_code: code,
                error_message: message,
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
