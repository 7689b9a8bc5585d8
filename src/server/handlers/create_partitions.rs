//! CreatePartitions through the controller.

use std::rc::Rc;

use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::create_partitions::*;
use crate::server::controller;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let mut results = Vec::new();
    let mut asks = Vec::new();
    for t in req.topics {
        if t.assignments.is_some() {
            results.push(CreatePartitionsTopicResult {
                name: t.name,
                error_code: error_code::INVALID_REPLICA_ASSIGNMENT,
                error_message: Some(
                    "manual replica assignments are not supported by a single-node pinlog".into(),
                ),
            });
        } else {
            asks.push((t.name, t.count));
        }
    }
    match controller::create_partitions(shard, asks.clone(), req.validate_only).await {
        Ok(done) => {
            for (name, r) in done {
                let (code, message) = match r {
                    Ok(()) => (error_code::NONE, None),
                    Err((c, m)) => (c, Some(m)),
                };
                results.push(CreatePartitionsTopicResult {
                    name,
                    error_code: code,
                    error_message: message,
                });
            }
        }
        Err(e) => {
            for (name, _) in asks {
                results.push(CreatePartitionsTopicResult {
                    name,
                    error_code: e.code,
                    error_message: Some(e.to_string()),
                });
            }
        }
    }
    CreatePartitionsResponse {
        throttle_time_ms: 0,
        results,
    }
}
