//! DeleteRecords: move each partition's log start offset forward on its
//! owning shard, deleting the whole segments that fall below it.
//!
//! Kafka's rules (`KafkaApis.handleDeleteRecordsRequest`,
//! `ReplicaManager.deleteRecordsOnLocalLog`,
//! `Partition.deleteRecordsOnLeader`), checked in Kafka's order: a topic
//! without DELETE for the principal gets TOPIC_AUTHORIZATION_FAILED
//! (whether it exists or not), an unknown topic or partition gets UNKNOWN_TOPIC_OR_PARTITION, an
//! internal topic INVALID_TOPIC_EXCEPTION, a topic whose `cleanup.policy`
//! lacks `delete` POLICY_VIOLATION; the offset -1 stands for the high
//! watermark, and an offset that is negative or above the high watermark
//! gets OFFSET_OUT_OF_RANGE. An offset at or below the log start changes
//! nothing and answers with the current log start. Errors answer with a low
//! watermark of -1.
//!
//! With a single replica the new low watermark is final as soon as the owner
//! has moved it, so the request's timeout is never waited on. When any log
//! start moved, the offset checkpoints are rewritten before the answer goes
//! out, so that deleted records stay deleted after a crash (Kafka leaves
//! this to its periodic checkpoint and may bring them back).

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::acl::matrix;
use crate::metadata::dynamic_broker_config;
use crate::metadata::image::MetadataImage;
use crate::metadata::topic_config;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_records::*;
use crate::server::handlers::access::Access;
use crate::server::handlers::error_code_for;
use crate::shard::checkpoints;
use crate::shard::partition_table::ShardId;
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// Kafka's internal topics (`Topic.isInternal`): their records belong to
/// the broker, and DeleteRecords refuses them.
const INTERNAL_TOPICS: &[&str] = &["__consumer_offsets", "__transaction_state"];

/// One partition's share of the request, sent to its owner.
struct PartitionWork {
    slot: usize,
    tp: TopicPartition,
    offset: i64,
}

/// What the owner reports for one partition.
struct Deleted {
    low_watermark: i64,
    error_code: i16,
    /// The log start offset moved.
    moved: bool,
}

impl Deleted {
    fn error(code: i16) -> Self {
        Deleted {
            low_watermark: INVALID_LOW_WATERMARK,
            error_code: code,
            moved: false,
        }
    }
}

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DeleteRecordsRequest,
    access: &Access<'_>,
) -> DeleteRecordsResponse {
    let image = BrokerState::of(shard).image();
    let denied = access.denied(
        &image,
        matrix::DELETE_RECORDS_TOPIC,
        req.topics.iter().map(|t| t.name.as_str()),
    );
    // Work per owning shard; answers keep the request's order.
    let mut by_owner: BTreeMap<ShardId, Vec<PartitionWork>> = BTreeMap::new();
    let mut answers: Vec<(String, i32, Option<Deleted>)> = Vec::new();
    for t in req.topics {
        for p in t.partitions {
            let slot = answers.len();
            let checked = if denied.contains(&t.name) {
                Err(error_code::TOPIC_AUTHORIZATION_FAILED)
            } else {
                check_partition(&image, &t.name, p.partition_index)
            };
            let early = match checked {
                Ok(()) => {
                    let tp = TopicPartition::new(t.name.clone(), p.partition_index);
                    by_owner
                        .entry(shard.owner(&tp))
                        .or_default()
                        .push(PartitionWork {
                            slot,
                            tp,
                            offset: p.offset,
                        });
                    None
                }
                Err(code) => Some(Deleted::error(code)),
            };
            answers.push((t.name.clone(), p.partition_index, early));
        }
    }
    let mut tasks = Vec::new();
    for (owner, work) in by_owner {
        let shard = shard.clone();
        tasks.push(glommio::spawn_local(async move {
            shard
                .submit_to(owner, move |shard| async move {
                    delete_on_owner(&shard, work).await
                })
                .await
        }));
    }
    let mut moved = false;
    for task in tasks {
        match task.await {
            Ok(results) => {
                for (slot, d) in results {
                    moved |= d.moved;
                    answers[slot].2 = Some(d);
                }
            }
            Err(e) => tracing::error!("delete records: owning shard unreachable: {e}"),
        }
    }
    if moved {
        checkpoints::checkpoint_now(shard).await;
    }
    let mut topics: Vec<DeleteRecordsTopicResult> = Vec::new();
    for (name, partition_index, d) in answers {
        let d = d.unwrap_or_else(|| Deleted::error(error_code::UNKNOWN_SERVER_ERROR));
        let result = DeleteRecordsPartitionResult {
            partition_index,
            low_watermark: d.low_watermark,
            error_code: d.error_code,
        };
        match topics.last_mut() {
            Some(last) if last.name == name => last.partitions.push(result),
            _ => topics.push(DeleteRecordsTopicResult {
                name,
                partitions: vec![result],
            }),
        }
    }
    DeleteRecordsResponse {
        throttle_time_ms: 0,
        topics,
    }
}

/// The checks that need only the metadata image.
fn check_partition(image: &MetadataImage, topic: &str, partition: i32) -> Result<(), i16> {
    let Some(t) = image.topic(topic) else {
        return Err(error_code::UNKNOWN_TOPIC_OR_PARTITION);
    };
    if !t.partitions.contains_key(&partition) {
        return Err(error_code::UNKNOWN_TOPIC_OR_PARTITION);
    }
    if INTERNAL_TOPICS.contains(&topic) {
        return Err(error_code::INVALID_TOPIC_EXCEPTION);
    }
    if !topic_config::cleanup_policy_deletes(&dynamic_broker_config::effective_overrides(
        image, &t.configs,
    )) {
        return Err(error_code::POLICY_VIOLATION);
    }
    Ok(())
}

/// The new log start asked for: [`HIGH_WATERMARK`] resolves to `hw`; a
/// negative offset or one above `hw` is out of range.
fn resolve_offset(requested: i64, hw: i64) -> Result<i64, i16> {
    let offset = if requested == HIGH_WATERMARK {
        hw
    } else {
        requested
    };
    if offset < 0 || offset > hw {
        return Err(error_code::OFFSET_OUT_OF_RANGE);
    }
    Ok(offset)
}

async fn delete_on_owner(shard: &Rc<Shard>, work: Vec<PartitionWork>) -> Vec<(usize, Deleted)> {
    let mut out = Vec::with_capacity(work.len());
    for PartitionWork { slot, tp, offset } in work {
        let Some(log) = crate::node::state::led_log(shard, &tp) else {
            out.push((slot, Deleted::error(error_code::NOT_LEADER_OR_FOLLOWER)));
            continue;
        };
        let Ok(mut log) = log.write().await else {
            out.push((slot, Deleted::error(error_code::KAFKA_STORAGE_ERROR)));
            continue;
        };
        let before = log.log_start_offset();
        let target = match resolve_offset(offset, log.high_watermark()) {
            Ok(target) => target,
            Err(code) => {
                out.push((slot, Deleted::error(code)));
                continue;
            }
        };
        match log.delete_records_before(target).await {
            Ok(low_watermark) => {
                if low_watermark > before {
                    tracing::info!(
                        partition = %tp,
                        from = before,
                        to = low_watermark,
                        segments_left = log.segment_count(),
                        "DeleteRecords moved the log start offset"
                    );
                }
                out.push((
                    slot,
                    Deleted {
                        low_watermark,
                        error_code: error_code::NONE,
                        moved: low_watermark > before,
                    },
                ));
            }
            Err(e) => {
                tracing::warn!(partition = %tp, offset = target, "DeleteRecords failed: {e}");
                out.push((slot, Deleted::error(error_code_for(&e))));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::image::{PartitionImage, TopicImage};

    fn image() -> MetadataImage {
        let mut image = MetadataImage::empty();
        let partitions = BTreeMap::from([(
            0,
            PartitionImage {
                replicas: vec![1],
                isr: vec![1],
                leader: 1,
                leader_epoch: 0,
                partition_epoch: 0,
                last_unclean_election_epoch: None,
                elr: Vec::new(),
                last_known_elr: Vec::new(),
                adding_replicas: Vec::new(),
                removing_replicas: Vec::new(),
            },
        )]);
        for (name, policy) in [
            ("orders", None),
            ("changelog", Some("compact")),
            ("mixed", Some("compact,delete")),
            ("__consumer_offsets", None),
        ] {
            image.topics.insert(
                name.to_string(),
                TopicImage {
                    name: name.to_string(),
                    id: Default::default(),
                    partitions: partitions.clone(),
                    configs: policy
                        .map(|p| BTreeMap::from([("cleanup.policy".to_string(), p.to_string())]))
                        .unwrap_or_default(),
                },
            );
        }
        image
    }

    #[test]
    fn partitions_are_checked_in_kafkas_order() {
        let image = image();
        assert_eq!(check_partition(&image, "orders", 0), Ok(()));
        assert_eq!(check_partition(&image, "mixed", 0), Ok(()));
        assert_eq!(
            check_partition(&image, "orders", 1),
            Err(error_code::UNKNOWN_TOPIC_OR_PARTITION)
        );
        assert_eq!(
            check_partition(&image, "nope", 0),
            Err(error_code::UNKNOWN_TOPIC_OR_PARTITION)
        );
        assert_eq!(
            check_partition(&image, "__consumer_offsets", 0),
            Err(error_code::INVALID_TOPIC_EXCEPTION)
        );
        assert_eq!(
            check_partition(&image, "__consumer_offsets", 7),
            Err(error_code::UNKNOWN_TOPIC_OR_PARTITION)
        );
        assert_eq!(
            check_partition(&image, "changelog", 0),
            Err(error_code::POLICY_VIOLATION)
        );
    }

    #[test]
    fn offsets_resolve_against_the_high_watermark() {
        assert_eq!(resolve_offset(HIGH_WATERMARK, 42), Ok(42));
        assert_eq!(resolve_offset(HIGH_WATERMARK, 0), Ok(0));
        assert_eq!(resolve_offset(0, 42), Ok(0));
        assert_eq!(resolve_offset(42, 42), Ok(42));
        assert_eq!(resolve_offset(43, 42), Err(error_code::OFFSET_OUT_OF_RANGE));
        assert_eq!(resolve_offset(-2, 42), Err(error_code::OFFSET_OUT_OF_RANGE));
        assert_eq!(
            resolve_offset(i64::MIN, 42),
            Err(error_code::OFFSET_OUT_OF_RANGE)
        );
    }
}
