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
use crate::quota::mutation;
use crate::server::controller::{self, NewPartitions};
use crate::server::handlers::access::Access;
use crate::server::handlers::quota;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
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
    // KIP-599: the partitions each topic adds, charged before the
    // controller decides and given back for the topics it refuses.
    let mut quota = quota::mutation_quota(
        shard,
        header,
        access,
        mutation::CREATE_PARTITIONS_STRICT_SINCE_VERSION,
    );
    let added = |t: &CreatePartitionsTopic| -> Option<u64> {
        let now = image.topic(&t.name)?.partitions.len();
        u64::try_from(t.count)
            .ok()?
            .checked_sub(now as u64)
            .filter(|n| *n > 0)
    };
    let (throttled, mut charged) = quota::charge_topics(
        &mut quota,
        req.topics
            .iter()
            .filter(|t| !denied.contains(&t.name) && !duplicates.contains(&t.name))
            .map(|t| (t.name.as_str(), added(t))),
    );
    drop(image);
    let (topics, refused): (Vec<_>, Vec<_>) = req
        .topics
        .into_iter()
        .partition(|t| !denied.contains(&t.name));
    let (topics, over_quota): (Vec<_>, Vec<_>) = topics
        .into_iter()
        .partition(|t| !throttled.contains(&t.name));
    results.extend(over_quota.into_iter().map(|t| {
        let (code, message) = quota::throttled_topic_error();
        CreatePartitionsTopicResult {
            name: t.name,
            error_code: code,
            error_message: Some(message),
        }
    }));
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
                    Err((c, m)) => {
                        if let Some(n) = charged.remove(&name) {
                            quota.refund(n);
                        }
                        (c, Some(m))
                    }
                };
                results.push(CreatePartitionsTopicResult {
                    name,
                    error_code: code,
                    error_message: message,
                });
            }
        }
        Err(e) => {
            charged.values().for_each(|n| quota.refund(*n));
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
        throttle_time_ms: quota.throttle_time_ms(),
        results,
    }
}
