//! PartitionShards (pinlog's own API): where this broker keeps each named
//! partition, and live moves between its shards (`server/shard_placement/moves.rs`).
//! Moves run one after another, in request order.

use std::rc::Rc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::partition_shards::*;
use crate::server::handlers::access::Access;
use crate::server::shard_placement::moves::{self, MoveError};
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: PartitionShardsRequest,
    access: &Access<'_>,
) -> PartitionShardsResponse {
    let allowed = access.allows_cluster(&BrokerState::of(shard).image(), matrix::PARTITION_SHARDS);
    let mut topics = Vec::with_capacity(req.topics.len());
    for t in req.topics {
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in t.partitions {
            let tp = TopicPartition::new(t.name.clone(), p.partition_index);
            if !allowed {
                partitions.push(PartitionShardsPartitionResponse {
                    partition_index: p.partition_index,
                    error_code: error_code::CLUSTER_AUTHORIZATION_FAILED,
                    error_message: Some(
                        "locating or moving partitions needs ALTER on the cluster".into(),
                    ),
                    shard: -1,
                    previous_shard: -1,
                });
                continue;
            }
            let answer = if p.target_shard == NO_MOVE {
                moves::shard_holding(shard, &tp)
                    .await
                    .map(|s| (s as i32, -1))
            } else {
                moves::move_partition(shard, tp.clone(), p.target_shard as i64)
                    .await
                    .map(|m| (m.to as i32, m.from as i32))
            };
            partitions.push(match answer {
                Ok((shard, previous_shard)) => PartitionShardsPartitionResponse {
                    partition_index: p.partition_index,
                    error_code: error_code::NONE,
                    error_message: None,
                    shard,
                    previous_shard,
                },
                Err(e) => {
                    if matches!(e, MoveError::Failed(_)) {
                        tracing::error!(partition = %tp, "{}", e.message(&tp));
                    }
                    PartitionShardsPartitionResponse {
                        partition_index: p.partition_index,
                        error_code: e.error_code(),
                        error_message: Some(e.message(&tp)),
                        shard: -1,
                        previous_shard: -1,
                    }
                }
            });
        }
        topics.push(PartitionShardsTopicResponse {
            name: t.name,
            partitions,
        });
    }
    PartitionShardsResponse {
        throttle_time_ms: 0,
        shard_count: shard.shard_count() as i32,
        topics,
    }
}
