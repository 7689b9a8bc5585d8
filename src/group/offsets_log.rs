//! Reading a `__consumer_offsets` partition back when its coordinator
//! starts: the last value of every key, as compaction would keep it.

use std::collections::BTreeMap;

use bytes::Bytes;
use glommio::sync::RwLock;

use crate::error::LogError;
use crate::group::schema::RecordKey;
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
}

/// Reads `tp` from its log start to its log end (see
/// [`scan_to_end`] for why not to its HW).
pub async fn read_latest_values(
    log: &RwLock<PartitionLog>,
    tp: &TopicPartition,
) -> Result<LatestValues, LogError> {
    let mut out = LatestValues::default();
    out.records = scan_to_end(log, tp, |scanned| {
        let Scanned::Record { key, value, .. } = scanned else {
            return;
        };
        let Some(key) = key else { return };
        let key = match RecordKey::decode(Bytes::copy_from_slice(key)) {
            Ok(Some(k)) => k,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(partition = tp.partition, "skipping an undecodable key: {e}");
                return;
            }
        };
        let value = value.map(Bytes::copy_from_slice);
        if out.latest.insert(key.clone(), value).is_none() {
            out.order.push(key);
        }
    })
    .await?;
    Ok(out)
}
