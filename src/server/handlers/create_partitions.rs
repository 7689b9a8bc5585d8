//! CreatePartitions through the controller.

use std::rc::Rc;

use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::create_partitions::*;
use crate::server::controller::{self, NewPartitions};
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let mut results = Vec::new();
    let asks: Vec<NewPartitions> = req
        .topics
        .into_iter()
        .map(|t| NewPartitions {
            topic: t.name,
            count: t.count,
            assignments: t
                .assignments
                .map(|a| a.into_iter().map(|a| a.broker_ids).collect()),
        })
        .collect();
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
            for ask in asks {
                results.push(CreatePartitionsTopicResult {
                    name: ask.topic,
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
