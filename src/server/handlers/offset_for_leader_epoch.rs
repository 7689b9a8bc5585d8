//! OffsetForLeaderEpoch: the end offset of a leader epoch, from the
//! partition's epoch cache (Kafka's `endOffsetForEpoch`).

use std::rc::Rc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_for_leader_epoch::*;
use crate::server::handlers::access::Access;
use crate::server::handlers::{check_leader_epoch, error_code_for};
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: OffsetForLeaderEpochRequest,
    access: &Access<'_>,
) -> OffsetForLeaderEpochResponse {
    let image = BrokerState::of(shard).image();
    // Kafka's rules: a follower's CLUSTER_ACTION covers every topic; a
    // client needs DESCRIBE on each.
    let as_cluster = access.allows_cluster(&image, matrix::OFFSET_FOR_LEADER_EPOCH_CLUSTER);
    let mut topics = Vec::with_capacity(req.topics.len());
    for t in req.topics {
        let mut partitions = Vec::with_capacity(t.partitions.len());
        let allowed =
            as_cluster || access.allows(&image, matrix::OFFSET_FOR_LEADER_EPOCH_TOPIC, &t.topic);
        for p in t.partitions {
            let mut out = EpochEndOffset {
                error_code: error_code::NONE,
                partition: p.partition,
                leader_epoch: -1,
                end_offset: -1,
            };
            if !allowed {
                out.error_code = error_code::TOPIC_AUTHORIZATION_FAILED;
                partitions.push(out);
                continue;
            }
            if let Err(code) =
                check_leader_epoch(&image, &t.topic, p.partition, p.current_leader_epoch)
            {
                out.error_code = code;
                partitions.push(out);
                continue;
            }
            let tp = TopicPartition::new(t.topic.clone(), p.partition);
            let requested = p.leader_epoch;
            let answer = shard
                .submit_to(shard.owner(&tp), move |shard| async move {
                    // Only the leader's epoch cache is the reference.
                    let log = crate::node::state::led_log(&shard, &tp)?;
                    let log = log.read().await.ok()?;
                    Some(log.end_offset_for_epoch(requested))
                })
                .await;
            match answer {
                Ok(Some((epoch, end))) => {
                    out.leader_epoch = epoch;
                    out.end_offset = end;
                }
                Ok(None) => out.error_code = error_code::NOT_LEADER_OR_FOLLOWER,
                Err(e) => out.error_code = error_code_for(&e),
            }
            partitions.push(out);
        }
        topics.push(OffsetForLeaderTopicResult {
            topic: t.topic,
            partitions,
        });
    }
    OffsetForLeaderEpochResponse {
        throttle_time_ms: 0,
        topics,
    }
}
