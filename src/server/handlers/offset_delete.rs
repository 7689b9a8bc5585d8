//! OffsetDelete: removes committed offsets of partitions a group no longer
//! consumes (refused per partition while members subscribe to the topic).
//!
//! Kafka's rules: DELETE on the group, else GROUP_AUTHORIZATION_FAILED for
//! the whole request; READ on each topic, else TOPIC_AUTHORIZATION_FAILED
//! for its partitions; then an unknown topic or partition gets
//! UNKNOWN_TOPIC_OR_PARTITION, and the rest go to the coordinator.

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_delete::*;
use crate::server::handlers::access::{partition_refusal, Access};
use crate::shard::shard::Shard;

/// Partitions by topic, each with its error code.
type TopicCodes = Vec<(String, Vec<(i32, i16)>)>;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: OffsetDeleteRequest,
    access: &Access<'_>,
) -> OffsetDeleteResponse {
    let image = BrokerState::of(shard).image();
    if !access.allows(&image, matrix::OFFSET_DELETE_GROUP, &req.group_id) {
        return OffsetDeleteResponse {
            error_code: error_code::GROUP_AUTHORIZATION_FAILED,
            throttle_time_ms: 0,
            topics: Vec::new(),
        };
    }
    let denied = access.denied(
        &image,
        matrix::OFFSET_DELETE_TOPIC,
        req.topics.iter().map(|t| t.name.as_str()),
    );
    let mut refused: TopicCodes = Vec::new();
    let mut topics: Vec<(String, Vec<i32>)> = Vec::with_capacity(req.topics.len());
    for t in req.topics {
        let mut asked = Vec::with_capacity(t.partitions.len());
        let mut answered = Vec::new();
        for p in t.partitions {
            let known = image.partition(&t.name, p).is_some();
            match partition_refusal(denied.contains(&t.name), known) {
                Some(code) => answered.push((p, code)),
                None => asked.push(p),
            }
        }
        if !answered.is_empty() {
            refused.push((t.name.clone(), answered));
        }
        if !asked.is_empty() {
            topics.push((t.name, asked));
        }
    }
    drop(image);
    let result = if req.group_id.is_empty() {
        Err(error_code::INVALID_GROUP_ID)
    } else {
        let gid = req.group_id.clone();
        match on_coordinator(
            shard,
            &req.group_id,
            move |c: Rc<GroupCoordinator>, s, p| c.delete_offsets(s, p, gid, topics),
        )
        .await
        {
            Ok(r) => r,
            Err(c) if c == error_code::COORDINATOR_NOT_AVAILABLE => {
                Err(error_code::GROUP_ID_NOT_FOUND)
            }
            Err(c) => Err(c),
        }
    };
    match result {
        Err(code) => OffsetDeleteResponse {
            error_code: code,
            throttle_time_ms: 0,
            topics: Vec::new(),
        },
        Ok(mut results) => {
            results.extend(refused);
            OffsetDeleteResponse {
                error_code: error_code::NONE,
                throttle_time_ms: 0,
                topics: results
                    .into_iter()
                    .map(|(name, parts)| OffsetDeleteResponseTopic {
                        name,
                        partitions: parts
                            .into_iter()
                            .map(
                                |(partition_index, error_code)| OffsetDeleteResponsePartition {
                                    partition_index,
                                    error_code,
                                },
                            )
                            .collect(),
                    })
                    .collect(),
            }
        }
    }
}
