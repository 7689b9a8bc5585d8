//! Produce: validate, append on the owning shard, answer per partition.
//!
//! acks=0 and acks=1 answer after the leader's append. acks=-1 (all) checks
//! `min.insync.replicas` against the committed ISR before the append, under
//! the log's lock with the leadership (`append_queue.rs`;
//! NOT_ENOUGH_REPLICAS), then waits until the HW passes the batch: the ISR
//! holds it. If the ISR shrank below `min.insync.replicas` meanwhile, the
//! answer is NOT_ENOUGH_REPLICAS_AFTER_APPEND; if the wait outlives the
//! request's timeout, REQUEST_TIMED_OUT; if leadership moved,
//! NOT_LEADER_OR_FOLLOWER. All of them are retriable.

use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;

use bytes::Bytes;

use crate::acl::matrix;
use crate::broker_config::TimestampType;
use crate::error::LogError;
use crate::metadata::dynamic_broker_config;
use crate::metadata::topic_config;
use crate::node::replicas::{self, wait_for_high_watermark, HighWatermarkWait};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::produce::*;
use crate::server::handlers::access::Access;
use crate::server::handlers::append_queue::{self, AppendFailure, QueuedAppend};
use crate::server::handlers::error_code_for;
use crate::server::handlers::produce_verification::{verify_on_owner, TxnBatch};
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// One partition's share of a produce request, sent to its owner:
/// (response slot, partition, records, leader epoch, LogAppendTime?).
struct PartitionWork {
    slot: usize,
    tp: TopicPartition,
    records: Bytes,
    log_append_time: bool,
    /// The topic's `min.insync.replicas`, for acks=all.
    min_insync: usize,
    /// Its batch is transactional: the producer that sent it (KIP-890).
    txn: Option<TxnBatch>,
}

/// What every partition of one request shares.
#[derive(Clone)]
struct Acks {
    all: bool,
    timeout: std::time::Duration,
    /// The request's version and transactional id, for KIP-890's
    /// verification of transactional batches.
    version: i16,
    transactional_id: Option<String>,
}

/// What the owner reports for one partition.
struct Appended {
    error_code: i16,
    error_message: Option<String>,
    base_offset: i64,
    log_append_time_ms: i64,
    log_start_offset: i64,
}

impl Appended {
    fn error(code: i16, message: Option<String>) -> Self {
        Appended {
            error_code: code,
            error_message: message,
            base_offset: -1,
            log_append_time_ms: -1,
            log_start_offset: -1,
        }
    }
}

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: ProduceRequest,
    access: &Access<'_>,
) -> ProduceResponse {
    let broker = BrokerState::of(shard);
    let image = broker.image();
    let valid_acks = matches!(req.acks, -1..=1);
    // Kafka's rules: transactional records need WRITE on their
    // transactional id (else the whole request is refused), and each topic
    // needs WRITE.
    let (txn_refused, denied) = if access.is_enabled() {
        let transactional = req.topics.iter().flat_map(|t| &t.partitions).any(|p| {
            p.records
                .as_ref()
                .is_some_and(|r| transactional_batch(r).is_some())
        });
        let txn_refused = transactional
            && !req
                .transactional_id
                .as_deref()
                .is_some_and(|id| access.allows(&image, matrix::PRODUCE_TRANSACTIONAL_ID, id));
        let topics = req.topics.iter().map(|t| t.name.as_str());
        (
            txn_refused,
            access.denied(&image, matrix::PRODUCE_TOPIC, topics),
        )
    } else {
        (false, HashSet::new())
    };
    // Work per owning shard, keeping the request's order for the answer.
    let mut by_owner: BTreeMap<usize, Vec<PartitionWork>> = BTreeMap::new();
    let mut answers: Vec<(String, i32, Option<Appended>)> = Vec::new();
    for t in req.topics {
        for p in t.partitions {
            let slot = answers.len();
            let tp = TopicPartition::new(t.name.clone(), p.index);
            let early = if txn_refused {
                Some(Appended::error(
                    error_code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                    None,
                ))
            } else if !denied.is_empty() && denied.contains(&t.name) {
                Some(Appended::error(
                    error_code::TOPIC_AUTHORIZATION_FAILED,
                    None,
                ))
            } else if !valid_acks {
                Some(Appended::error(error_code::INVALID_REQUIRED_ACKS, None))
            } else if crate::metadata::is_internal_topic(&t.name) {
                // Kafka refuses client writes to its internal topics: the
                // coordinators alone write their state.
                Some(Appended::error(
                    error_code::INVALID_TOPIC_EXCEPTION,
                    Some(format!(
                        "{} is internal; only its coordinator writes it (commit offsets with \
                         OffsetCommit, transactions through the transaction APIs)",
                        t.name
                    )),
                ))
            } else if image.partition(&t.name, p.index).is_some() {
                match p.records {
                    // Kafka accepts exactly one batch per partition from v3 on;
                    // that also keeps an idempotent retry all-or-nothing.
                    Some(records) if !records.is_empty() && !holds_one_batch(&records) => {
                        Some(Appended::error(
                            error_code::INVALID_RECORD,
                            Some(
                                "produce requests must hold exactly one record batch per partition"
                                    .into(),
                            ),
                        ))
                    }
                    Some(records) if !records.is_empty() => {
                        let topic = image.topic(&t.name).expect("partition implies topic");
                        let overrides =
                            dynamic_broker_config::effective_overrides(&image, &topic.configs);
                        let append_time = topic_config::timestamp_type(&broker.config, &overrides)
                            == TimestampType::LogAppendTime;
                        by_owner
                            .entry(shard.owner(&tp))
                            .or_default()
                            .push(PartitionWork {
                                slot,
                                tp,
                                log_append_time: append_time,
                                min_insync: topic_config::min_insync_replicas(&overrides),
                                txn: transactional_batch(&records),
                                records,
                            });
                        None
                    }
                    _ => Some(Appended::error(
                        error_code::INVALID_RECORD,
                        Some("the produce request holds no records for this partition".into()),
                    )),
                }
            } else {
                Some(Appended::error(
                    error_code::UNKNOWN_TOPIC_OR_PARTITION,
                    None,
                ))
            };
            answers.push((t.name.clone(), p.index, early));
        }
    }
    let acks = Acks {
        all: req.acks == -1,
        timeout: std::time::Duration::from_millis(req.timeout_ms.max(0) as u64),
        version: header.api_version,
        transactional_id: req.transactional_id.clone(),
    };
    let mut tasks = Vec::new();
    for (owner, work) in by_owner {
        let (shard, acks) = (shard.clone(), acks.clone());
        tasks.push(glommio::spawn_local(async move {
            let result = shard
                .submit_to(owner, move |shard| async move {
                    append_on_owner(&shard, work, acks).await
                })
                .await;
            result
        }));
    }
    for task in tasks {
        match task.await {
            Ok(results) => {
                for (slot, a) in results {
                    answers[slot].2 = Some(a);
                }
            }
            Err(e) => tracing::error!("produce: owning shard unreachable: {e}"),
        }
    }
    let mut responses: Vec<TopicProduceResponse> = Vec::new();
    for (topic, index, a) in answers {
        let a = a.unwrap_or_else(|| Appended::error(error_code::UNKNOWN_SERVER_ERROR, None));
        let pr = PartitionProduceResponse {
            index,
            error_code: a.error_code,
            base_offset: a.base_offset,
            log_append_time_ms: a.log_append_time_ms,
            log_start_offset: a.log_start_offset,
            record_errors: Vec::new(),
            error_message: a.error_message,
        };
        match responses.last_mut() {
            Some(last) if last.name == topic => last.partition_responses.push(pr),
            _ => responses.push(TopicProduceResponse {
                name: topic,
                partition_responses: vec![pr],
            }),
        }
    }
    ProduceResponse {
        responses,
        throttle_time_ms: 0,
    }
}

async fn append_on_owner(
    shard: &Rc<Shard>,
    work: Vec<PartitionWork>,
    acks: Acks,
) -> Vec<(usize, Appended)> {
    let mut out = Vec::with_capacity(work.len());
    let txn_batches: Vec<(TopicPartition, Option<TxnBatch>)> =
        work.iter().map(|w| (w.tp.clone(), w.txn)).collect();
    let verified = verify_on_owner(
        shard,
        acks.transactional_id.as_deref(),
        acks.version,
        &txn_batches,
    )
    .await;
    // Every partition is queued before any is awaited, so the request's
    // partitions are written concurrently: (answer index, partition,
    // min.insync.replicas, outcome).
    let mut submitted = Vec::with_capacity(work.len());
    for (
        PartitionWork {
            slot,
            tp,
            records,
            log_append_time,
            min_insync,
            txn: _,
        },
        verified,
    ) in work.into_iter().zip(verified)
    {
        let verification = match verified {
            Ok(v) => v,
            Err((code, message)) => {
                tracing::debug!(partition = %tp, code, "transactional produce refused: {message}");
                out.push((slot, Appended::error(code, Some(message))));
                continue;
            }
        };
        // Leadership and the ISR are looked up once, by the writer, under
        // the log's lock.
        let outcome = append_queue::submit(
            shard,
            &tp,
            QueuedAppend {
                records,
                log_append_time,
                acks_all_min_insync: acks.all.then_some(min_insync),
                verification,
            },
        );
        submitted.push((out.len(), tp, min_insync, outcome));
        out.push((
            slot,
            Appended::error(error_code::UNKNOWN_SERVER_ERROR, None),
        ));
    }
    // acks=all: (answer index, partition, leader epoch, offset the HW must
    // reach, min.insync.replicas), waited for after every append.
    let mut awaiting = Vec::new();
    for (i, tp, min_insync, outcome) in submitted {
        let outcome = outcome.await.unwrap_or(Err(AppendFailure::Closed));
        out[i].1 = match outcome {
            Ok(done) => {
                let info = done.info;
                if acks.all {
                    awaiting.push((i, tp, done.leader_epoch, info.last_offset + 1, min_insync));
                }
                Appended {
                    error_code: error_code::NONE,
                    error_message: None,
                    base_offset: info.first_offset,
                    // A retried batch answers with the original's time.
                    log_append_time_ms: match done.log_append_time_ms {
                        Some(_) if info.duplicate => info.max_timestamp,
                        Some(t) => t,
                        None => -1,
                    },
                    log_start_offset: done.log_start_offset,
                }
            }
            Err(AppendFailure::NotLeader) => {
                Appended::error(error_code::NOT_LEADER_OR_FOLLOWER, None)
            }
            Err(AppendFailure::NotEnoughReplicas {
                in_sync,
                min_insync,
            }) => Appended::error(
                error_code::NOT_ENOUGH_REPLICAS,
                Some(format!(
                    "the ISR of {tp} has {in_sync} replicas, below min.insync.replicas \
                     {min_insync}"
                )),
            ),
            Err(AppendFailure::Closed) => Appended::error(
                error_code::NOT_LEADER_OR_FOLLOWER,
                Some(format!("{tp} is closing on this broker")),
            ),
            Err(AppendFailure::Log(e)) => {
                if matches!(e, LogError::Io { .. } | LogError::Offline { .. }) {
                    tracing::error!(partition = %tp, "produce failed: {e}");
                } else if matches!(
                    e,
                    LogError::OutOfOrderSequence { .. } | LogError::InvalidProducerEpoch { .. }
                ) {
                    // Rare, and it makes an idempotent producer bump its
                    // epoch, after which its unacknowledged batches can be
                    // written twice: an operator needs to see it.
                    tracing::info!(partition = %tp, "produce refused: {e}");
                } else {
                    tracing::debug!(partition = %tp, "produce refused: {e}");
                }
                Appended::error(error_code_for(&e), Some(e.to_string()))
            }
        };
    }
    // The waits overlap: the slowest partition decides the answer's time.
    let deadline = std::time::Instant::now() + acks.timeout;
    for (i, tp, leader_epoch, offset, min_insync) in awaiting {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let wait =
            wait_for_high_watermark(shard, &tp, leader_epoch, offset, min_insync, left).await;
        let failed = match wait {
            HighWatermarkWait::BelowMinIsr(in_sync) => Some((
                error_code::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                format!(
                    "written, but the ISR of {tp} shrank to {in_sync}, below \
                     min.insync.replicas {min_insync}, and the HW waits until it grows again"
                ),
            )),
            HighWatermarkWait::Reached => {
                let below = replicas::Replicas::of(shard)
                    .get(&tp)
                    .map_or(Some(0), |s| s.borrow().below_min_insync(min_insync));
                below.map(|in_sync| {
                    (
                        error_code::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                        format!(
                            "written, but the ISR of {tp} shrank to {in_sync}, below \
                             min.insync.replicas {min_insync}"
                        ),
                    )
                })
            }
            HighWatermarkWait::TimedOut => Some((
                error_code::REQUEST_TIMED_OUT,
                format!("the ISR of {tp} did not replicate the batch within the request timeout"),
            )),
            HighWatermarkWait::LostLeadership => Some((
                error_code::NOT_LEADER_OR_FOLLOWER,
                format!("leadership of {tp} moved before the ISR replicated the batch"),
            )),
        };
        if let Some((code, message)) = failed {
            out[i].1 = Appended::error(code, Some(message));
        }
    }
    out
}

/// The producer of `records`' batch if it is transactional (and not a
/// control batch, which the owner refuses from a producer anyway).
fn transactional_batch(records: &[u8]) -> Option<TxnBatch> {
    let h = crate::log::batch::parse_header_only(records).ok()?;
    (h.is_transactional() && !h.is_control() && h.producer_id >= 0).then_some(TxnBatch {
        producer_id: h.producer_id,
        producer_epoch: h.producer_epoch,
    })
}

/// Whether `records` is exactly one batch as its length field says. Full
/// validation happens on the owning shard.
fn holds_one_batch(records: &[u8]) -> bool {
    crate::log::batch::peek_offset_and_size(records).is_some_and(|(_, len)| {
        len >= 0 && len as usize + crate::constants::LOG_OVERHEAD == records.len()
    })
}
