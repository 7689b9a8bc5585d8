//! DescribeShareGroupOffsets (KIP-932): each share partition's start
//! offset (the SPSO, below which every record is acknowledged or archived),
//! as the share coordinator stores it, for `kafka-share-groups.sh
//! --describe`. The topics are the request's, or else those the group's
//! members subscribe to; a partition the group never read is left out, as
//! Kafka leaves it out. The lag is known where this broker leads the
//! partition (its high watermark less the start offset and the records
//! already done above it), and -1 elsewhere.

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::group::share::state_records::DELIVERY_COMPLETE_COUNT_UNKNOWN;
use crate::group::share::SharePartitionKey;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_share_group_offsets::*;
use crate::server::handlers::access::Access;
use crate::server::share_state::persister;
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

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
                    let lag = lag_of(shard, &tp, s.start_offset, s.delivery_complete_count).await;
                    described.push(DescribedPartition {
                        partition_index: p,
                        start_offset: s.start_offset,
                        leader_epoch: s.leader_epoch,
                        lag,
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
    DescribedGroup {
        group_id: req.group_id,
        topics,
        error_code: error_code::NONE,
        error_message: None,
    }
}

/// The records of `tp` from `start_offset` to its high watermark not yet
/// acknowledged or archived, where this broker leads `tp`; -1 elsewhere.
async fn lag_of(shard: &Rc<Shard>, tp: &TopicPartition, start_offset: i64, done: i32) -> i64 {
    let owner = shard.owner(tp);
    let tp = tp.clone();
    let hw = shard
        .submit_to(owner, move |s| async move {
            let led = crate::node::replicas::led_partition(&s, &tp)?;
            let log = led.log.read().await.ok()?;
            Some(log.high_watermark())
        })
        .await
        .ok()
        .flatten();
    match hw {
        Some(hw) => {
            let done = if done == DELIVERY_COMPLETE_COUNT_UNKNOWN {
                0
            } else {
                i64::from(done.max(0))
            };
            (hw - start_offset - done).max(0)
        }
        None => -1,
    }
}
