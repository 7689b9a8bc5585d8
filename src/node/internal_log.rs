//! Writing to a partition of an internal topic (`__consumer_offsets`,
//! `__transaction_state`) as its leader, and waiting until the write is
//! replicated: what the group and transaction coordinators do before a
//! change takes effect in their memory; and reading one back when a
//! coordinator loads it.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use glommio::sync::RwLock;

use crate::constants::RECORD_BATCH_HEADER_SIZE;
use crate::error::LogError;
use crate::log::batch::{self, BatchHeader, BatchIter, CountRule};
use crate::log::control_batch;
use crate::log::partition_log::{AppendInfo, AppendOrigin, LeaderAppend, PartitionLog};
use crate::log::producer_state::TxnVerification;
use crate::node::replicas::{self, wait_for_high_watermark, HighWatermarkWait};
use crate::shard::shard::{now_ms, Shard};
use crate::topic_partition::TopicPartition;
use crate::transaction::marker::TxnMarker;

/// Why a write did not become durable.
#[derive(Debug)]
pub enum InternalWriteError {
    /// This broker does not lead the partition (any more).
    NotLeader,
    /// The log was closed or taken offline under the write.
    Unavailable,
    /// The ISR did not catch up within the timeout: the write is in the
    /// leader's log but may be lost with a failover.
    Timeout,
    /// The log refused the write.
    Log(LogError),
}

/// The producer whose transaction a coordinator's records belong to
/// (KIP-447's transactional offset commits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnProducer {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The guard of the partition's verification with the transaction
    /// coordinator, when the batch may open a transaction there.
    pub verification: TxnVerification,
}

/// Appends `records` (key, value or tombstone) in one batch to `tp`, which
/// this shard must lead, and waits until the high watermark passes it or
/// `timeout` passes. Answered only once replicated: a write the ISR does
/// not hold could vanish with a failover (Kafka's acks=all for coordinator
/// state). With `producer`, the batch is that producer's transactional
/// batch: its records count only once the transaction commits, and it is
/// appended with `producer.verification` (KIP-890).
pub async fn append_replicated(
    shard: &Shard,
    tp: &TopicPartition,
    records: &[(Bytes, Option<Bytes>)],
    producer: Option<TxnProducer>,
    timeout: Duration,
) -> Result<AppendInfo, InternalWriteError> {
    let Some(led) = replicas::led_partition(shard, tp) else {
        return Err(InternalWriteError::NotLeader);
    };
    let now = now_ms();
    let specs: Vec<batch::KeyedRecordSpec<'_>> = records
        .iter()
        .map(|(k, v)| (0, Some(&k[..]), v.as_deref()))
        .collect();
    // The leader epoch is the log's append sets; the batch's is rewritten.
    let mut bytes = batch::build_keyed_batch(0, -1, now, &specs);
    if let Some(p) = producer {
        let h = batch::parse_header(&bytes).expect("a batch just built");
        let mut fields = batch::BatchFields::of(&h);
        fields.producer_id = p.producer_id;
        fields.producer_epoch = p.producer_epoch;
        // Kafka's coordinator writes sequence 0; nothing checks it.
        fields.base_sequence = 0;
        fields.attributes |= TRANSACTIONAL_FLAG;
        bytes = batch::encode_batch(&fields, h.record_count, &bytes[RECORD_BATCH_HEADER_SIZE..]);
    }
    let append = LeaderAppend {
        batches: BytesMut::from(&bytes[..]).into(),
        log_append_time_ms: None,
        origin: AppendOrigin::Coordinator,
        verification: producer.map_or(TxnVerification::Off, |p| p.verification),
    };
    let (epoch, info) = {
        let mut log = led
            .log
            .write()
            .await
            .map_err(|_| InternalWriteError::Unavailable)?;
        if !replicas::still_local(shard, tp, &led.log) {
            return Err(InternalWriteError::NotLeader);
        }
        // Leadership may have moved while the lock was taken: the epoch
        // that counts is the one current at the write.
        let epoch = {
            let state = led.state.borrow();
            if !state.is_leader() {
                return Err(InternalWriteError::NotLeader);
            }
            state.leader_epoch()
        };
        let r = log
            .append_many_as_leader(vec![append], epoch, now)
            .await
            .pop()
            .expect("one result per append");
        if r.is_ok() {
            replicas::after_append(shard, tp, &mut log);
        }
        (epoch, r.map_err(InternalWriteError::Log)?)
    };
    let wait = wait_for_high_watermark(
        shard,
        tp,
        epoch,
        info.last_offset + 1,
        // A leader is always in its ISR: the wait never ends early; an ISR
        // below the topic's minimum shows as a timeout, as in Kafka.
        1,
        timeout,
    )
    .await;
    match wait {
        HighWatermarkWait::Reached => Ok(info),
        HighWatermarkWait::TimedOut | HighWatermarkWait::BelowMinIsr(_) => {
            Err(InternalWriteError::Timeout)
        }
        HighWatermarkWait::LostLeadership => Err(InternalWriteError::NotLeader),
    }
}

/// Kafka's transactional attribute bit.
const TRANSACTIONAL_FLAG: i16 = 0x10;

/// Bytes read per step while a coordinator loads a partition.
pub const LOAD_READ_BYTES: usize = 1024 * 1024;

/// What a load finds in an internal topic's partition, batch by batch.
#[derive(Debug)]
pub enum Scanned<'a> {
    /// One record of a data batch.
    Record {
        header: &'a BatchHeader,
        key: Option<&'a [u8]>,
        value: Option<&'a [u8]>,
    },
    /// A transaction marker: it ends `header.producer_id`'s transaction.
    Marker {
        header: &'a BatchHeader,
        marker: TxnMarker,
    },
}

/// Reads `tp` from its log start to its log end (not its HW) and shows
/// every record and marker to `visit`, in log order. Returns the number of
/// records read.
///
/// To the log end, as Kafka loads (isolation LOG_END): a new leader's HW is
/// its checkpoint's until the followers fetch again, and may be far behind
/// the writes it holds, which the load would then miss (found by the fault
/// suite: a group's committed offsets went back). A leader never truncates
/// its own log, so what it holds will commit.
pub async fn scan_to_end(
    log: &RwLock<PartitionLog>,
    tp: &TopicPartition,
    mut visit: impl FnMut(Scanned<'_>),
) -> Result<usize, LogError> {
    let mut records = 0usize;
    let mut next = log.read().await.map(|l| l.log_start_offset()).unwrap_or(0);
    let corrupt = |position: usize, reason: String| LogError::CorruptMetadata {
        position,
        reason: format!("{tp}: {reason}"),
    };
    loop {
        let bytes = {
            let mut l = log.write().await.map_err(|_| LogError::Offline {
                partition: tp.to_string(),
                reason: "closed while loading".into(),
            })?;
            let end = l.log_end_offset();
            if next >= end {
                break;
            }
            let r = l.read(next, LOAD_READ_BYTES, end, true).await?;
            if r.slices.is_empty() {
                break;
            }
            r.to_vec().await?
        };
        // The read may end inside a batch; the next round reads it from its
        // offset. (With nothing whole, the first batch is malformed: it was
        // read whole, and the parse below says why.)
        let whole = batch::whole_batches_len(&bytes);
        let bytes = if whole > 0 {
            &bytes[..whole]
        } else {
            &bytes[..]
        };
        let mut advanced = false;
        for item in BatchIter::new(bytes, CountRule::Compacted) {
            let (at, h) = item.map_err(|(at, e)| corrupt(at, e.to_string()))?;
            next = next.max(h.next_offset());
            advanced = true;
            let batch_bytes = &bytes[at..at + h.size_bytes()];
            if h.is_control() {
                match control_batch::marker_of(batch_bytes, &h) {
                    Ok(Some(marker)) => visit(Scanned::Marker { header: &h, marker }),
                    Ok(None) => {}
                    Err(reason) => return Err(corrupt(at, reason)),
                }
                continue;
            }
            let iter = batch::records(batch_bytes).map_err(|e| corrupt(at, e.to_string()))?;
            for rec in iter {
                let rec = rec.map_err(|reason| corrupt(at, reason))?;
                records += 1;
                visit(Scanned::Record {
                    header: &h,
                    key: rec.key,
                    value: rec.value,
                });
            }
        }
        if !advanced {
            break;
        }
        glommio::yield_if_needed().await;
    }
    Ok(records)
}
