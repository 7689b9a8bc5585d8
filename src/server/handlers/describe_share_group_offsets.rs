//! DescribeShareGroupOffsets (KIP-932): each share partition's start
//! offset (the SPSO, below which every record is acknowledged or archived),
//! as the share coordinator stores it, for `kafka-share-groups.sh
//! --describe`. The topics are the request's, or else those the group's
//! members subscribe to; a partition the group never read is left out, as
//! Kafka leaves it out. The lag (KIP-1226) is the partition's high
//! watermark less the start offset and the records already done above it.
//! The high watermark comes from this broker where it leads the partition,
//! and otherwise from the leader, with one ListOffsets per leader (Kafka's
//! coordinator asks the leaders too); -1 where no leader answers.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::time::Duration;

use futures_lite::FutureExt;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::group::share::state_records::DELIVERY_COMPLETE_COUNT_UNKNOWN;
use crate::group::share::SharePartitionKey;
use crate::node::state::BrokerState;
use crate::protocol::api::ApiKey;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_share_group_offsets::*;
use crate::protocol::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsResponse, ListOffsetsTopic,
    LATEST_TIMESTAMP,
};
use crate::server::handlers::access::Access;
use crate::server::replication::kafka_peer::{inter_broker_security, KafkaPeer};
use crate::server::share_state::persister;
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// The ListOffsets version asked of a leader for the lag.
const LIST_OFFSETS_VERSION: i16 = 6;
/// ListOffsets' replica id of a client that is not a follower.
const CONSUMER_REPLICA_ID: i32 = -1;
/// ListOffsets' isolation level that answers the high watermark.
const READ_UNCOMMITTED: i8 = 0;
/// ListOffsets' current leader epoch of a caller that fences nothing.
const ANY_LEADER_EPOCH: i32 = -1;
/// How long a leader may take to give its high watermarks, connecting
/// included; past it the lag shows as unknown (-1) rather than holding up
/// the describe. The leaders are asked at once.
const LAG_LIST_OFFSETS_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest ListOffsets answer read: far above what the partitions of
/// one group's topics take (about 30 bytes each).
const LIST_OFFSETS_MAX_RESPONSE_BYTES: usize = 16 << 20;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DescribeShareGroupOffsetsRequest,
    access: &Access<'_>,
) -> DescribeShareGroupOffsetsResponse {
    let mut groups = Vec::with_capacity(req.groups.len());
    for g in req.groups {
        groups.push(describe_group(shard, g, access).await);
    }
    DescribeShareGroupOffsetsResponse {
        throttle_time_ms: 0,
        groups,
    }
}

async fn describe_group(
    shard: &Rc<Shard>,
    req: DescribeGroupRequest,
    access: &Access<'_>,
) -> DescribedGroup {
    let image = BrokerState::of(shard).image();
    let refused = |code: i16, message: Option<String>| DescribedGroup {
        group_id: req.group_id.clone(),
        error_code: code,
        error_message: message,
        ..DescribedGroup::default()
    };
    if !access.allows(
        &image,
        matrix::DESCRIBE_SHARE_GROUP_OFFSETS_GROUP,
        &req.group_id,
    ) {
        return refused(error_code::GROUP_AUTHORIZATION_FAILED, None);
    }
    let gid = req.group_id.clone();
    let subscribed = on_coordinator(
        shard,
        &req.group_id,
        move |c: Rc<GroupCoordinator>, s, p| c.share_group_topics(s, p, gid),
    )
    .await
    .and_then(|r| r);
    // Which partitions: the request's, or every partition of the group's
    // topics.
    let wanted: Vec<(String, Vec<i32>)> = match (req.topics, subscribed) {
        (_, Err(code)) => {
            let message = (code == error_code::GROUP_ID_NOT_FOUND)
                .then(|| format!("Group {} is not a share group.", req.group_id));
            return refused(code, message);
        }
        (Some(topics), Ok(_)) => topics
            .into_iter()
            .map(|t| (t.topic_name, t.partitions))
            .collect(),
        (None, Ok(names)) => names
            .into_iter()
            .filter_map(|n| {
                let t = image.topic(&n)?;
                let parts = t.partitions.keys().copied().collect();
                Some((n, parts))
            })
            .collect(),
    };
    let mut topics = Vec::new();
    // The partitions whose lag is still to be had: where they are in
    // `topics`, and their records already done above the start offset.
    let mut lag_pending: Vec<(usize, usize, TopicPartition, i32)> = Vec::new();
    for (name, partitions) in wanted {
        if !access.allows(&image, matrix::DESCRIBE_SHARE_GROUP_OFFSETS_TOPIC, &name) {
            continue;
        }
        let Some(topic) = image.topic(&name) else {
            topics.push(DescribedTopic {
                topic_name: name,
                topic_id: [0; 16],
                partitions: partitions
                    .into_iter()
                    .map(|p| DescribedPartition {
                        partition_index: p,
                        start_offset: -1,
                        leader_epoch: -1,
                        lag: -1,
                        error_code: error_code::UNKNOWN_TOPIC_OR_PARTITION,
                        error_message: None,
                    })
                    .collect(),
            });
            continue;
        };
        let mut described = Vec::new();
        for p in partitions {
            let key = SharePartitionKey {
                group_id: req.group_id.clone(),
                topic_id: topic.id,
                partition: p,
            };
            match persister::read_summary(shard, &key).await {
                Ok(None) => {}
                Ok(Some(s)) => {
                    let tp = TopicPartition::new(name.clone(), p);
                    lag_pending.push((
                        topics.len(),
                        described.len(),
                        tp,
                        s.delivery_complete_count,
                    ));
                    described.push(DescribedPartition {
                        partition_index: p,
                        start_offset: s.start_offset,
                        leader_epoch: s.leader_epoch,
                        lag: -1,
                        error_code: error_code::NONE,
                        error_message: None,
                    });
                }
                Err(code) => described.push(DescribedPartition {
                    partition_index: p,
                    start_offset: -1,
                    leader_epoch: -1,
                    lag: -1,
                    error_code: code,
                    error_message: None,
                }),
            }
        }
        if !described.is_empty() {
            topics.push(DescribedTopic {
                topic_name: name,
                topic_id: topic.id,
                partitions: described,
            });
        }
    }
    let lagging: Vec<TopicPartition> = lag_pending.iter().map(|(_, _, tp, _)| tp.clone()).collect();
    let high_watermarks = high_watermarks(shard, &lagging).await;
    for (t, p, tp, done) in lag_pending {
        let described = &mut topics[t].partitions[p];
        if let Some(&hw) = high_watermarks.get(&tp) {
            described.lag = lag(hw, described.start_offset, done);
        }
    }
    DescribedGroup {
        group_id: req.group_id,
        topics,
        error_code: error_code::NONE,
        error_message: None,
    }
}

/// The records from `start_offset` to `high_watermark` not yet
/// acknowledged or archived.
fn lag(high_watermark: i64, start_offset: i64, done: i32) -> i64 {
    let done = if done == DELIVERY_COMPLETE_COUNT_UNKNOWN {
        0
    } else {
        i64::from(done.max(0))
    };
    (high_watermark - start_offset - done).max(0)
}

/// The high watermarks of `tps` that can be had: this broker's where it
/// leads, the leaders' (ListOffsets, latest) elsewhere.
async fn high_watermarks(
    shard: &Rc<Shard>,
    tps: &[TopicPartition],
) -> HashMap<TopicPartition, i64> {
    let broker = BrokerState::of(shard);
    let image = broker.image();
    let mut by_leader: BTreeMap<i32, Vec<TopicPartition>> = BTreeMap::new();
    for tp in tps {
        let leader = image
            .topic(&tp.topic)
            .and_then(|t| t.partitions.get(&tp.partition))
            .map_or(-1, |p| p.leader);
        by_leader.entry(leader).or_default().push(tp.clone());
    }
    let mut out = HashMap::new();
    // The other leaders are asked all at once, each for at most
    // LAG_LIST_OFFSETS_TIMEOUT, while this broker's own are read. Their
    // tasks do network I/O on this shard only, never wait on another
    // shard's reply, so keeping their handles is safe.
    let mut asked = Vec::new();
    for (leader, tps) in by_leader {
        if leader == broker.node_id() {
            for tp in tps {
                if let Some(hw) = local_high_watermark(shard, &tp).await {
                    out.insert(tp, hw);
                }
            }
            continue;
        }
        let addr = image
            .brokers
            .get(&leader)
            .filter(|_| image.is_live_broker(leader))
            .map(|b| format!("{}:{}", b.host, b.port));
        let Some(addr) = addr else { continue };
        let shard = shard.clone();
        asked.push(glommio::spawn_local(async move {
            let answer = async { Some(leader_high_watermarks(&shard, &addr, &tps).await) }
                .or(async {
                    glommio::timer::sleep(LAG_LIST_OFFSETS_TIMEOUT).await;
                    None
                })
                .await;
            match answer {
                Some(Ok(hws)) => hws,
                Some(Err(e)) => {
                    tracing::debug!(leader, "no high watermarks from the leader for a share group's lag: {e}");
                    Vec::new()
                }
                None => {
                    tracing::debug!(leader, "the leader gave no high watermarks for a share group's lag within {LAG_LIST_OFFSETS_TIMEOUT:?}");
                    Vec::new()
                }
            }
        }));
    }
    for answer in asked {
        out.extend(answer.await);
    }
    out
}

/// `tp`'s high watermark where this broker leads it.
async fn local_high_watermark(shard: &Rc<Shard>, tp: &TopicPartition) -> Option<i64> {
    let tp = tp.clone();
    shard
        .submit_to(shard.owner(&tp), move |s| async move {
            let led = crate::node::replicas::led_partition(&s, &tp)?;
            let log = led.log.read().await.ok()?;
            Some(log.high_watermark())
        })
        .await
        .ok()
        .flatten()
}

/// The high watermarks of `tps` from their leader at `addr`: one
/// ListOffsets for the latest offsets, read uncommitted.
async fn leader_high_watermarks(
    shard: &Rc<Shard>,
    addr: &str,
    tps: &[TopicPartition],
) -> std::io::Result<Vec<(TopicPartition, i64)>> {
    let mut topics: BTreeMap<&str, Vec<ListOffsetsPartition>> = BTreeMap::new();
    for tp in tps {
        topics
            .entry(&tp.topic)
            .or_default()
            .push(ListOffsetsPartition {
                partition_index: tp.partition,
                current_leader_epoch: ANY_LEADER_EPOCH,
                timestamp: LATEST_TIMESTAMP,
            });
    }
    let request = ListOffsetsRequest {
        replica_id: CONSUMER_REPLICA_ID,
        isolation_level: READ_UNCOMMITTED,
        topics: topics
            .into_iter()
            .map(|(name, partitions)| ListOffsetsTopic {
                name: name.to_string(),
                partitions,
            })
            .collect(),
    };
    let mut peer = KafkaPeer::new(
        addr.to_string(),
        format!(
            "pinlog-share-lag-{}-shard-{}",
            BrokerState::of(shard).node_id(),
            shard.id()
        ),
        inter_broker_security(shard),
    );
    let response = peer
        .call(
            ApiKey::ListOffsets,
            LIST_OFFSETS_VERSION,
            |w| request.encode(w, LIST_OFFSETS_VERSION),
            |r| ListOffsetsResponse::decode(r, LIST_OFFSETS_VERSION),
            LAG_LIST_OFFSETS_TIMEOUT,
            LIST_OFFSETS_MAX_RESPONSE_BYTES,
        )
        .await?;
    Ok(response
        .topics
        .into_iter()
        .flat_map(|t| {
            let name = t.name;
            t.partitions
                .into_iter()
                .filter(|p| p.error_code == error_code::NONE && p.offset >= 0)
                .map(move |p| {
                    (
                        TopicPartition::new(name.clone(), p.partition_index),
                        p.offset,
                    )
                })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lag_counts_what_is_not_yet_done_above_the_start_offset() {
        assert_eq!(lag(100, 40, 10), 50);
        assert_eq!(lag(100, 40, DELIVERY_COMPLETE_COUNT_UNKNOWN), 60);
        // A start offset past a high watermark read a moment earlier.
        assert_eq!(lag(100, 120, 0), 0);
    }
}
