//! The operations ShareFetch and ShareAcknowledge run on the shard that
//! leads a topic partition: acknowledge, acquire (reading the records it
//! hands out), release a member's records.

use std::rc::Rc;

use bytes::Bytes;

use crate::constants::LOG_OVERHEAD;
use crate::log::batch;
use crate::log::read_through;
use crate::metadata::group_config::IsolationLevel;
use crate::node::replicas;
use crate::protocol::error_code;
use crate::protocol::messages::share_fetch::{AcknowledgementBatch, AcquiredRecords};
use crate::shard::shard::{now_ms, Shard};
use crate::topic_partition::TopicPartition;
use crate::transaction::partition::AbortedTxn;

use super::SharePartitions;

/// What an acquisition hands a member: whole batches, and the offsets in
/// them that are the member's.
#[derive(Debug, Default)]
pub struct AcquiredRead {
    pub error_code: i16,
    pub records: Vec<Bytes>,
    pub acquired: Vec<AcquiredRecords>,
    /// The end of what could be handed out (the high watermark, or the
    /// LSO under read_committed) when the acquisition found nothing new
    /// there: a fetch that then waits for appends answers at once if the
    /// end has moved past it meanwhile. `None` when an append would not
    /// help (an error, or a window full of locked records).
    pub seen_end: Option<i64>,
}

impl AcquiredRead {
    fn error(code: i16) -> AcquiredRead {
        AcquiredRead {
            error_code: code,
            ..AcquiredRead::default()
        }
    }

    fn nothing_below(end: i64) -> AcquiredRead {
        AcquiredRead {
            seen_end: Some(end),
            ..AcquiredRead::default()
        }
    }

    pub fn record_count(&self) -> i64 {
        self.acquired
            .iter()
            .map(|a| a.last_offset - a.first_offset + 1)
            .sum()
    }
}

/// Applies `member`'s acknowledgements of `tp` and makes them durable:
/// `Ok` once written, else the error the partition answers with (a
/// refused acknowledgement changes nothing).
pub async fn acknowledge(
    shard: &Rc<Shard>,
    group_id: &str,
    member_id: &str,
    tp: &TopicPartition,
    topic_id: [u8; 16],
    batches: &[AcknowledgementBatch],
) -> Result<(), (i16, Option<String>)> {
    let partitions = SharePartitions::of(shard);
    let (entry, _permit) = partitions
        .entry(shard, group_id, tp, topic_id)
        .await
        .map_err(|code| (code, None))?;
    let outcome = match entry.partition.borrow_mut().as_mut() {
        Some(p) => p.acknowledge(member_id, batches, now_ms()),
        None => return Err((error_code::UNKNOWN_SERVER_ERROR, None)),
    };
    entry.changed();
    partitions
        .persist(shard, &entry, outcome.state_write)
        .await
        .map_err(|code| (code, None))?;
    match outcome.error {
        Some(e) => Err((e.error_code, Some(e.message))),
        None => Ok(()),
    }
}

/// Acquires up to `max_records` records of `tp` for `member_id`, reading at
/// most about `max_bytes` (always at least one whole batch).
pub async fn acquire(
    shard: &Rc<Shard>,
    group_id: &str,
    member_id: &str,
    tp: &TopicPartition,
    topic_id: [u8; 16],
    max_records: u32,
    max_bytes: usize,
) -> AcquiredRead {
    let partitions = SharePartitions::of(shard);
    let (entry, _permit) = match partitions.entry(shard, group_id, tp, topic_id).await {
        Ok(e) => e,
        Err(code) => return AcquiredRead::error(code),
    };
    let now = now_ms();
    let start = match entry.partition.borrow().as_ref() {
        Some(p) if p.is_full(now) => return AcquiredRead::default(),
        Some(p) => p.first_acquirable_offset(now),
        None => return AcquiredRead::error(error_code::UNKNOWN_SERVER_ERROR),
    };
    let Some(led) = replicas::led_partition(shard, tp) else {
        return AcquiredRead::error(error_code::NOT_LEADER_OR_FOLLOWER);
    };
    // Under read_committed only what is below the last stable offset is
    // handed out, and records of aborted transactions are archived.
    let read_committed = entry.isolation.get() == IsolationLevel::ReadCommitted;
    let (result, fetchable_end, aborted) = {
        let Ok(mut log) = led.log.write().await else {
            return AcquiredRead::error(error_code::KAFKA_STORAGE_ERROR);
        };
        let end = if read_committed {
            log.last_stable_offset()
        } else {
            log.high_watermark()
        };
        if start >= end {
            return AcquiredRead::nothing_below(end);
        }
        let aborted = if read_committed {
            log.aborted_txns(start, end)
        } else {
            Vec::new()
        };
        (
            log.read(start, max_bytes.max(1), end, true).await,
            end,
            aborted,
        )
    };
    let chunks = match result {
        Ok(r) => read_through::into_memory(r).await,
        Err(e) => Err(e),
    };
    let chunks = match chunks {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(partition = %tp, "share fetch cannot read the log: {e}");
            return AcquiredRead::error(error_code::KAFKA_STORAGE_ERROR);
        }
    };
    let (batches, read_end) = whole_batches_from(&chunks, start);
    let end = fetchable_end.min(read_end);
    if end <= start {
        return AcquiredRead::nothing_below(fetchable_end);
    }
    let (mut acquisition, archived) = {
        let mut partition = entry.partition.borrow_mut();
        let Some(p) = partition.as_mut() else {
            return AcquiredRead::error(error_code::UNKNOWN_SERVER_ERROR);
        };
        let mut acquisition = p.acquire_from(member_id, max_records, start, end, now_ms());
        let aborted_ranges = aborted_batches(&batches, &aborted);
        let archived = if aborted_ranges.is_empty() {
            None
        } else {
            p.archive_acquired(member_id, &aborted_ranges, &mut acquisition.acquired)
        };
        (acquisition, archived)
    };
    entry.changed();
    // The acquisition itself is not written, but the locks it expired on
    // the way, and the aborted records it archived, are; if that fails,
    // the entry is gone and so is what was acquired here: the member gets
    // nothing rather than unknown records.
    for write in [acquisition.state_write.take(), archived] {
        if let Err(code) = partitions.persist(shard, &entry, write).await {
            return AcquiredRead::error(code);
        }
    }
    let (Some(first), Some(last)) = (
        acquisition.acquired.first().map(|a| a.first_offset),
        acquisition.acquired.last().map(|a| a.last_offset),
    ) else {
        // Everything read was another member's or archived.
        return AcquiredRead::nothing_below(fetchable_end);
    };
    AcquiredRead {
        seen_end: Some(fetchable_end),
        error_code: error_code::NONE,
        records: batches
            .into_iter()
            .filter(|b| b.last >= first && b.base <= last)
            .map(|b| b.bytes)
            .collect(),
        acquired: acquisition.acquired,
    }
}

/// The offset ranges of the data batches in `batches` that belong to one
/// of the `aborted` transactions: a transactional batch of an aborted
/// producer from that transaction's first offset up to its ABORT marker.
fn aborted_batches(batches: &[ReadBatch], aborted: &[AbortedTxn]) -> Vec<(i64, i64)> {
    batches
        .iter()
        .filter(|b| {
            b.txn_producer_id.is_some_and(|pid| {
                aborted.iter().any(|t| {
                    t.producer_id == pid && t.first_offset <= b.base && b.base < t.last_offset
                })
            })
        })
        .map(|b| (b.base, b.last))
        .collect()
}

/// Releases every record `member_id` holds in `tp`: its share session
/// closed. Acquisitions live only in memory, so where `tp`'s share
/// partition is not loaded the member holds nothing. The entry is then
/// forgotten if nothing in it is left that is not durable.
pub async fn release_member(
    shard: &Rc<Shard>,
    group_id: &str,
    member_id: &str,
    tp: &TopicPartition,
) {
    let partitions = SharePartitions::of(shard);
    let Some((entry, _permit)) = partitions.loaded_entry(shard, group_id, tp).await else {
        return;
    };
    let write = match entry.partition.borrow_mut().as_mut() {
        Some(p) => p.release_member(member_id, now_ms()),
        None => return,
    };
    entry.changed();
    // A failed write is logged, and drops the entry, by `persist`: the
    // records come back from the coordinator's state, still available.
    if partitions.persist(shard, &entry, write).await.is_ok() {
        partitions.forget_if_idle(&entry);
    }
}

/// One whole batch an acquisition read.
struct ReadBatch {
    base: i64,
    last: i64,
    bytes: Bytes,
    /// The producer of a transactional data batch (not a marker).
    txn_producer_id: Option<i64>,
}

/// The whole batches of `chunks` that reach `start` or past it, and the
/// offset after the last whole batch (a batch cut off by the byte budget
/// is left for the next fetch).
fn whole_batches_from(chunks: &[Bytes], start: i64) -> (Vec<ReadBatch>, i64) {
    let mut out = Vec::new();
    let mut end = start;
    for chunk in chunks {
        let mut at = 0usize;
        while at < chunk.len() {
            let Some((_, length)) = batch::peek_offset_and_size(&chunk[at..]) else {
                return (out, end);
            };
            let size = (length.max(0) as usize).saturating_add(LOG_OVERHEAD);
            if at + size > chunk.len() {
                return (out, end);
            }
            let Ok(header) = batch::parse_header_only(&chunk[at..at + size]) else {
                return (out, end);
            };
            let last = header.last_offset();
            if last >= start {
                out.push(ReadBatch {
                    base: header.base_offset,
                    last,
                    bytes: chunk.slice(at..at + size),
                    txn_producer_id: (header.is_transactional() && !header.is_control())
                        .then_some(header.producer_id),
                });
                end = end.max(last + 1);
            }
            at += size;
        }
    }
    (out, end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::{build_batch, BatchSpec};

    fn batch_at(base: i64, records: usize) -> Vec<u8> {
        let specs: Vec<batch::RecordSpec<'_>> = vec![(0, None, b"v".as_slice()); records];
        build_batch(&BatchSpec {
            base_offset: base,
            leader_epoch: 0,
            base_timestamp: 0,
            records: &specs,
        })
    }

    #[test]
    fn whole_batches_from_keeps_whole_batches_that_reach_the_start() {
        let mut bytes = batch_at(0, 3);
        bytes.extend(batch_at(3, 2));
        let cut = batch_at(5, 4);
        bytes.extend(&cut[..cut.len() / 2]);
        let (batches, end) = whole_batches_from(&[Bytes::from(bytes)], 4);
        assert_eq!(batches.len(), 1, "the first ends before 4, the last is cut");
        assert_eq!((batches[0].base, batches[0].last), (3, 4));
        assert_eq!(batches[0].txn_producer_id, None);
        assert_eq!(end, 5);
        let (none, end) = whole_batches_from(&[Bytes::from(cut[..10].to_vec())], 5);
        assert!(none.is_empty());
        assert_eq!(end, 5);
    }
}
