//! Reading a `__consumer_offsets` partition back when its coordinator
//! starts: the last value of every key, as compaction would keep it. A
//! transaction's offsets count from its COMMIT marker on (an ABORT drops
//! them); those whose transaction is still open at the log end come back
//! as pending.

use std::collections::BTreeMap;

use bytes::Bytes;
use glommio::sync::RwLock;

use crate::error::LogError;
use crate::group::consumer::{replay_into, ConsumerGroup, ConsumerGroupRecord};
use crate::group::schema::RecordKey;
use crate::group::share::{ShareGroup, ShareGroupRecord};
use crate::log::partition_log::PartitionLog;
use crate::node::internal_log::{scan_to_end, Scanned};
use crate::topic_partition::TopicPartition;

/// What a load read: the last value per key (`None`: a tombstone), the keys
/// in the order they first appeared, and how many records were read.
#[derive(Debug, Default)]
pub struct LatestValues {
    pub latest: BTreeMap<RecordKey, Option<Bytes>>,
    pub order: Vec<RecordKey>,
    pub records: usize,
    /// Records of transactions still open at the log end, by producer id.
    pub pending: BTreeMap<i64, Vec<(RecordKey, Option<Bytes>)>>,
    /// The KIP-848 consumer groups, rebuilt by replaying their records in
    /// log order (`ConsumerGroup::replay`, as the coordinator applies them
    /// when it writes them).
    pub consumer_groups: BTreeMap<String, ConsumerGroup>,
    /// The share groups (KIP-932), rebuilt the same way.
    pub share_groups: BTreeMap<String, ShareGroup>,
}

/// Reads `tp` from its log start to its log end (see
/// [`scan_to_end`] for why not to its HW).
pub async fn read_latest_values(
    log: &RwLock<PartitionLog>,
    tp: &TopicPartition,
) -> Result<LatestValues, LogError> {
    let mut out = LatestValues::default();
    let mut open: BTreeMap<i64, Vec<(RecordKey, Option<Bytes>)>> = BTreeMap::new();
    out.records = scan_to_end(log, tp, |scanned| {
        let (header, key, value) = match scanned {
            Scanned::Marker { header, marker } => {
                let decided = open.remove(&header.producer_id).unwrap_or_default();
                if !marker.kind.is_abort() {
                    for (key, value) in decided {
                        if out.latest.insert(key.clone(), value).is_none() {
                            out.order.push(key);
                        }
                    }
                }
                return;
            }
            Scanned::Record { header, key, value } => (header, key, value),
        };
        let Some(key) = key else { return };
        let key = match RecordKey::decode(Bytes::copy_from_slice(key)) {
            Ok(Some(k)) => k,
            Ok(None) => {
                let value = value.map(Bytes::copy_from_slice);
                match ConsumerGroupRecord::decode(Bytes::copy_from_slice(key), value.clone()) {
                    Ok(Some(r)) => replay_into(&mut out.consumer_groups, &r),
                    Ok(None) => {
                        match ShareGroupRecord::decode(Bytes::copy_from_slice(key), value) {
                            Ok(Some(r)) => {
                                crate::group::share::replay_into(&mut out.share_groups, &r)
                            }
                            Ok(None) => {}
                            Err(e) => tracing::warn!(
                                partition = tp.partition,
                                "skipping an undecodable share group record: {e}"
                            ),
                        }
                    }
                    Err(e) => tracing::warn!(
                        partition = tp.partition,
                        "skipping an undecodable consumer group record: {e}"
                    ),
                }
                return;
            }
            Err(e) => {
                tracing::warn!(partition = tp.partition, "skipping an undecodable key: {e}");
                return;
            }
        };
        let value = value.map(Bytes::copy_from_slice);
        if header.is_transactional() && header.producer_id >= 0 {
            open.entry(header.producer_id)
                .or_default()
                .push((key, value));
            return;
        }
        if out.latest.insert(key.clone(), value).is_none() {
            out.order.push(key);
        }
    })
    .await?;
    out.pending = open;
    Ok(out)
}
