//! DeleteTopics through the controller (by name; by id from v6).

use std::rc::Rc;

use crate::acl::matrix;
use crate::controller::topics::duplicated;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_topics::*;
use crate::server::controller;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
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
                    Err((code, message)) => DeletableTopicResult {
                        name: Some(name),
                        topic_id: [0; 16],
                        error_code: code,
                        error_message: Some(message),
                    },
                });
            }
        }
        Err(e) => {
            tracing::error!("DeleteTopics failed: {e}");
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
        throttle_time_ms: 0,
        responses,
    }
}
