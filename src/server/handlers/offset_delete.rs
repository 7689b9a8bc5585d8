//! OffsetDelete: removes committed offsets of partitions a group no longer
//! consumes (refused per partition while members subscribe to the topic).

use std::rc::Rc;

use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_delete::*;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    let topics: Vec<(String, Vec<i32>)> = req
        .topics
        .into_iter()
        .map(|t| (t.name, t.partitions))
        .collect();
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
        Ok(results) => OffsetDeleteResponse {
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
        },
    }
}
