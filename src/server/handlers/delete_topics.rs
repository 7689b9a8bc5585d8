//! DeleteTopics through the controller (by name; by id from v6).

use std::rc::Rc;

use crate::acl::matrix;
use crate::controller::topics::duplicated;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_topics::*;
use crate::quota::mutation;
use crate::server::controller;
use crate::server::handlers::access::Access;
use crate::server::handlers::quota;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: DeleteTopicsRequest,
    access: &Access<'_>,
) -> DeleteTopicsResponse {
    let image = BrokerState::of(shard).image();
    let mut responses = Vec::new();
    let mut names: Vec<String> = req.topic_names.clone();
    // An id given more than once is refused once, as Kafka does; names
    // given more than once are the controller's to refuse.
    let duplicate_ids = duplicated(
        req.topics
            .iter()
            .filter(|t| t.name.is_none())
            .map(|t| t.topic_id),
    );
    for id in &duplicate_ids {
        responses.push(DeletableTopicResult {
            name: None,
            topic_id: *id,
            error_code: error_code::INVALID_REQUEST,
            error_message: Some(
                "this topic id is given more than once in the request; give each topic once".into(),
            ),
        });
    }
    for t in &req.topics {
        match &t.name {
            Some(n) => names.push(n.clone()),
            None if duplicate_ids.contains(&t.topic_id) => {}
            None => match image.topic_names_by_id.get(&t.topic_id) {
                Some(n) => names.push(n.clone()),
                None => responses.push(DeletableTopicResult {
                    name: None,
                    topic_id: t.topic_id,
                    error_code: error_code::UNKNOWN_TOPIC_OR_PARTITION,
                    error_message: Some("no topic has this id".into()),
                }),
            },
        }
    }
    let denied = access.denied(
        &image,
        matrix::DELETE_TOPICS_TOPIC,
        names.iter().map(String::as_str),
    );
    names.retain(|n| {
        let refused = denied.contains(n);
        if refused {
            responses.push(DeletableTopicResult {
                name: Some(n.clone()),
                topic_id: [0; 16],
                error_code: error_code::TOPIC_AUTHORIZATION_FAILED,
                error_message: Some("Authorization failed.".into()),
            });
        }
        !refused
    });
    // KIP-599: each topic's partitions, charged before the controller
    // decides and given back for the topics it refuses.
    let mut quota = quota::mutation_quota(
        shard,
        header,
        access,
        mutation::DELETE_TOPICS_STRICT_SINCE_VERSION,
    );
    let (throttled, mut charged) = quota::charge_topics(
        &mut quota,
        names.iter().map(|n| {
            let partitions = image.topic(n).map(|t| t.partitions.len() as u64);
            (n.as_str(), partitions.filter(|p| *p > 0))
        }),
    );
    names.retain(|n| {
        let over_quota = throttled.contains(n);
        if over_quota {
            let (code, message) = quota::throttled_topic_error();
            responses.push(DeletableTopicResult {
                name: Some(n.clone()),
                topic_id: image.topic(n).map_or([0; 16], |t| t.id),
                error_code: code,
                error_message: Some(message),
            });
        }
        !over_quota
    });
    match controller::delete_topics(shard, access.caller(), names.clone()).await {
        Ok(results) => {
            for (name, r) in results {
                responses.push(match r {
                    Ok(id) => DeletableTopicResult {
                        name: Some(name),
                        topic_id: id,
                        error_code: error_code::NONE,
                        error_message: None,
                    },
                    Err((code, message)) => {
                        if let Some(n) = charged.remove(&name) {
                            quota.refund(n);
                        }
                        DeletableTopicResult {
                            name: Some(name),
                            topic_id: [0; 16],
                            error_code: code,
                            error_message: Some(message),
                        }
                    }
                });
            }
        }
        Err(e) => {
            tracing::error!("DeleteTopics failed: {e}");
            charged.values().for_each(|n| quota.refund(*n));
            for name in names {
                responses.push(DeletableTopicResult {
                    name: Some(name),
                    topic_id: [0; 16],
                    error_code: e.code,
                    error_message: Some(e.to_string()),
                });
            }
        }
    }
    DeleteTopicsResponse {
        throttle_time_ms: quota.throttle_time_ms(),
        responses,
    }
}
