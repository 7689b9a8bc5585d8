//! OffsetCommit: from group members (with their generation) and from
//! admin tools and standalone consumers (generation -1, empty groups only).

use std::rc::Rc;

use crate::group::coordinator::{on_coordinator, CommitPartition, GroupCoordinator};
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_commit::*;
use crate::shard::shard::Shard;

/// First version whose partitions carry the committed leader epoch.
const LEADER_EPOCH_FROM: i16 = 6;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let with_epoch = header.api_version >= LEADER_EPOCH_FROM;
    let topics: Vec<(String, Vec<CommitPartition>)> = req
        .topics
        .into_iter()
        .map(|t| {
            let parts = t
                .partitions
                .into_iter()
                .map(|p| CommitPartition {
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: if with_epoch {
                        p.committed_leader_epoch
                    } else {
                        -1
                    },
                    metadata: p.committed_metadata,
                })
                .collect();
            (t.name, parts)
        })
        .collect();
    let every = |code: i16, topics: &[(String, Vec<CommitPartition>)]| {
        topics
            .iter()
            .map(|(t, ps)| (t.clone(), ps.iter().map(|p| (p.partition, code)).collect()))
            .collect::<Vec<_>>()
    };
    let results = if req.group_id.is_empty() {
        every(error_code::INVALID_GROUP_ID, &topics)
    } else {
        let fallback = topics.clone();
        let (group_id, generation, member_id, instance_id) = (
            req.group_id.clone(),
            req.generation_id_or_member_epoch,
            req.member_id,
            req.group_instance_id,
        );
        on_coordinator(
            shard,
            &req.group_id,
            move |c: Rc<GroupCoordinator>, s, p| {
                c.commit(s, p, group_id, generation, member_id, instance_id, topics)
            },
        )
        .await
        .unwrap_or_else(|code| every(code, &fallback))
    };
    OffsetCommitResponse {
        throttle_time_ms: 0,
        topics: results
            .into_iter()
            .map(|(name, parts)| OffsetCommitResponseTopic {
                name,
                partitions: parts
                    .into_iter()
                    .map(
                        |(partition_index, error_code)| OffsetCommitResponsePartition {
                            partition_index,
                            error_code,
                        },
                    )
                    .collect(),
            })
            .collect(),
    }
}
