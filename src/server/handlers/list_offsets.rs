//! ListOffsets: earliest, latest, by timestamp, and max timestamp.

use std::rc::Rc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::fetch::READ_COMMITTED;
use crate::protocol::messages::list_offsets::*;
use crate::server::handlers::access::Access;
use crate::server::handlers::{check_leader_epoch, error_code_for};
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: ListOffsetsRequest,
    access: &Access<'_>,
) -> ListOffsetsResponse {
    let image = BrokerState::of(shard).image();
    // KIP-98: a read_committed consumer's end of the log is the LSO.
    let read_committed = req.isolation_level == READ_COMMITTED;
    let mut topics = Vec::with_capacity(req.topics.len());
    for t in req.topics {
        let mut partitions = Vec::with_capacity(t.partitions.len());
        let allowed = access.allows(&image, matrix::LIST_OFFSETS_TOPIC, &t.name);
        for p in t.partitions {
            let mut resp = ListOffsetsPartitionResponse {
                partition_index: p.partition_index,
                error_code: error_code::NONE,
                timestamp: -1,
                offset: -1,
                leader_epoch: -1,
            };
            if !allowed {
                resp.error_code = error_code::TOPIC_AUTHORIZATION_FAILED;
                partitions.push(resp);
                continue;
            }
            let epoch = match check_leader_epoch(
                &image,
                &t.name,
                p.partition_index,
                p.current_leader_epoch,
            ) {
                Ok(e) => e,
                Err(code) => {
                    resp.error_code = code;
                    partitions.push(resp);
                    continue;
                }
            };
            if p.timestamp == MAX_TIMESTAMP && header.api_version < 7 {
                resp.error_code = error_code::UNSUPPORTED_VERSION;
                partitions.push(resp);
                continue;
            }
            let tp = TopicPartition::new(t.name.clone(), p.partition_index);
            let owner = shard.owner(&tp);
            let timestamp = p.timestamp;
            let answer = shard
                .submit_to(owner, move |shard| async move {
                    let log = crate::node::state::led_log(&shard, &tp)
                        .ok_or(error_code::NOT_LEADER_OR_FOLLOWER)?;
                    let log = log
                        .read()
                        .await
                        .map_err(|_| error_code::KAFKA_STORAGE_ERROR)?;
                    let found = match timestamp {
                        LATEST_TIMESTAMP if read_committed => Some((-1, log.last_stable_offset())),
                        LATEST_TIMESTAMP => Some((-1, log.high_watermark())),
                        EARLIEST_TIMESTAMP => Some((-1, log.log_start_offset())),
                        MAX_TIMESTAMP => {
                            log.max_timestamp_offset().map(|t| (t.timestamp, t.offset))
                        }
                        ts => log
                            .offset_for_timestamp(ts)
                            .await
                            .map_err(|e| error_code_for(&e))?
                            .map(|t| (t.timestamp, t.offset)),
                    };
                    let epoch_of =
                        |offset: i64| log.epoch_cache().epoch_for_offset(offset).unwrap_or(-1);
                    Ok::<_, i16>(found.map(|(ts, off)| (ts, off, epoch_of(off))))
                })
                .await;
            match answer {
                Ok(Ok(Some((ts, offset, found_epoch)))) => {
                    resp.timestamp = ts;
                    resp.offset = offset;
                    resp.leader_epoch = if found_epoch >= 0 { found_epoch } else { epoch };
                }
                Ok(Ok(None)) => {}
                Ok(Err(code)) => resp.error_code = code,
                Err(e) => resp.error_code = error_code_for(&e),
            }
            partitions.push(resp);
        }
        topics.push(ListOffsetsTopicResponse {
            name: t.name,
            partitions,
        });
    }
    ListOffsetsResponse {
        throttle_time_ms: 0,
        topics,
    }
}
