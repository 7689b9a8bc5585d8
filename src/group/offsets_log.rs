//! Reading a `__consumer_offsets` partition back when its coordinator
//! starts: the last value of every key, as compaction would keep it.

use std::collections::BTreeMap;

use bytes::Bytes;
use glommio::sync::RwLock;

use crate::error::LogError;
use crate::group::offsets_topic::OFFSETS_TOPIC;
use crate::group::schema::RecordKey;
use crate::log::batch::{self, BatchIter, CountRule};
use crate::log::partition_log::PartitionLog;
use crate::topic_partition::TopicPartition;

/// Bytes read per step while loading a partition.
pub const LOAD_READ_BYTES: usize = 1024 * 1024;

/// What a load read: the last value per key (`None`: a tombstone), the keys
/// in the order they first appeared, and how many records were read.
#[derive(Debug, Default)]
pub struct LatestValues {
    pub latest: BTreeMap<RecordKey, Option<Bytes>>,
    pub order: Vec<RecordKey>,
    pub records: usize,
}

/// Reads `tp` from its log start to its log end (not its HW).
///
/// To the log end, as Kafka loads (isolation LOG_END): a new leader's HW is
/// its checkpoint's until the followers fetch again, and may be far behind
/// the commits it holds, which the load would then miss (found by the fault
/// suite: the group's committed offsets went back). A leader never
/// truncates its own log, so what it holds will commit.
pub async fn read_latest_values(
    log: &RwLock<PartitionLog>,
    tp: &TopicPartition,
) -> Result<LatestValues, LogError> {
    let mut out = LatestValues::default();
    let mut next = log.read().await.map(|l| l.log_start_offset()).unwrap_or(0);
    let corrupt = |position: usize, reason: String| LogError::CorruptMetadata {
        position,
        reason: format!("{OFFSETS_TOPIC}-{}: {reason}", tp.partition),
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
            if h.is_control() {
                continue;
            }
            let batch_bytes = &bytes[at..at + h.size_bytes()];
            let iter = batch::records(batch_bytes).map_err(|e| corrupt(at, e.to_string()))?;
            for rec in iter {
                let rec = rec.map_err(|reason| LogError::CorruptMetadata {
                    position: at,
                    reason,
                })?;
                out.records += 1;
                let Some(key) = rec.key else { continue };
                let key = match RecordKey::decode(Bytes::copy_from_slice(key)) {
                    Ok(Some(k)) => k,
                    Ok(None) => continue,
                    Err(e) => {
                        tracing::warn!(
                            partition = tp.partition,
                            "skipping an undecodable key: {e}"
                        );
                        continue;
                    }
                };
                let value = rec.value.map(Bytes::copy_from_slice);
                if out.latest.insert(key.clone(), value).is_none() {
                    out.order.push(key);
                }
            }
        }
        if !advanced {
            break;
        }
        glommio::yield_if_needed().await;
    }
    Ok(out)
}
