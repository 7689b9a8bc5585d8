//! TxnOffsetCommit: a transactional producer commits a group's offsets
//! inside its transaction (`sendOffsetsToTransaction`), at the group's
//! coordinator. They count once the transaction commits
//! (`group/coordinator/txn_offsets.rs`); from v3 the request names the
//! group member, which the coordinator checks (KIP-447), so a zombie
//! instance of a rebalanced member is refused.

use std::rc::Rc;

use crate::group::coordinator::{on_coordinator, CommitPartition, GroupCoordinator};
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::txn_offset_commit::*;
use crate::shard::shard::Shard;

/// First version whose partitions carry the committed leader epoch.
const LEADER_EPOCH_FROM: i16 = 2;
/// Clients before this version know INVALID_PRODUCER_EPOCH, not
/// PRODUCER_FENCED (KIP-588).
const PRODUCER_FENCED_FROM: i16 = 2;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
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
        let (group_id, producer, generation, member_id, instance_id) = (
            req.group_id.clone(),
            (req.producer_id, req.producer_epoch),
            req.generation_id,
            req.member_id,
            req.group_instance_id,
        );
        on_coordinator(
            shard,
            &req.group_id,
            move |c: Rc<GroupCoordinator>, s, p| {
                c.txn_commit(
                    s,
                    p,
                    group_id,
                    producer,
                    generation,
                    member_id,
                    instance_id,
                    topics,
                )
            },
        )
        .await
        .unwrap_or_else(|code| every(code, &fallback))
    };
    let old_client = header.api_version < PRODUCER_FENCED_FROM;
    TxnOffsetCommitResponse {
        throttle_time_ms: 0,
        topics: results
            .into_iter()
            .map(|(name, parts)| TxnOffsetCommitResponseTopic {
                name,
                partitions: parts
                    .into_iter()
                    .map(|(partition_index, code)| TxnOffsetCommitResponsePartition {
                        partition_index,
                        error_code: if old_client && code == error_code::PRODUCER_FENCED {
                            error_code::INVALID_PRODUCER_EPOCH
                        } else {
                            code
                        },
                    })
                    .collect(),
            })
            .collect(),
    }
}
