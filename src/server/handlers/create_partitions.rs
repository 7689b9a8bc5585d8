//! CreatePartitions through the controller. Kafka's rule: ALTER on each
//! topic, else TOPIC_AUTHORIZATION_FAILED for it; a topic named twice is
//! the controller's to refuse (INVALID_REQUEST), unauthorized or not, as
//! Kafka's controller refuses duplicates before it authorizes.

use std::rc::Rc;

use crate::acl::matrix;
use crate::controller::topics::duplicated;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::create_partitions::*;
use crate::server::controller::{self, NewPartitions};
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: CreatePartitionsRequest,
    access: &Access<'_>,
) -> CreatePartitionsResponse {
    let mut results = Vec::new();
    let image = BrokerState::of(shard).image();
    let duplicates = duplicated(req.topics.iter().map(|t| t.name.clone()));
    let denied = access.denied(
        &image,
        matrix::CREATE_PARTITIONS_TOPIC,
        req.topics
            .iter()
            .map(|t| t.name.as_str())
            .filter(|n| !duplicates.contains(*n)),
    );
    drop(image);
    let (topics, refused): (Vec<_>, Vec<_>) = req
        .topics
        .into_iter()
        .partition(|t| !denied.contains(&t.name));
    results.extend(refused.into_iter().map(|t| CreatePartitionsTopicResult {
        name: t.name,
        error_code: error_code::TOPIC_AUTHORIZATION_FAILED,
        error_message: Some("Authorization failed.".into()),
    }));
    let asks: Vec<NewPartitions> = topics
        .into_iter()
        .map(|t| NewPartitions {
            topic: t.name,
            count: t.count,
            assignments: t
                .assignments
                .map(|a| a.into_iter().map(|a| a.broker_ids).collect()),
        })
        .collect();
    match controller::create_partitions(shard, access.caller(), asks.clone(), req.validate_only)
        .await
    {
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
