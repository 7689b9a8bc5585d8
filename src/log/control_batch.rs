//! Transaction marker batches: the control batch that ends a producer's
//! transaction on a partition, in Kafka's exact layout (its
//! `MemoryRecords.withEndTransactionMarker`).
//!
//! One uncompressed RecordBatch v2 with the control and transactional
//! attribute bits, the producer's id and epoch, no sequence (-1), and one
//! record at offset delta 0 whose key and value are the marker
//! (`core/src/transaction/marker.rs`). Only the broker writes these: a
//! Produce carrying a control batch is refused (`partition_log`).

use crate::log::batch::{self, BatchFields, BatchHeader};
use crate::transaction::marker::{MarkerError, TxnMarker};

/// Kafka's control (0x20) and transactional (0x10) attribute bits.
const MARKER_ATTRIBUTES: i16 = 0x20 | 0x10;

/// A producer's marker for one partition, before it has an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkerSpec {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub marker: TxnMarker,
    pub timestamp_ms: i64,
}

/// Encodes a marker batch at offset 0 with no leader epoch; the leader's
/// append assigns both, as it does for producer batches.
pub fn build_marker_batch(spec: &MarkerSpec) -> Vec<u8> {
    let mut body = Vec::with_capacity(32);
    batch::encode_record(
        &mut body,
        0,
        0,
        Some(&spec.marker.encode_key()),
        Some(&spec.marker.encode_value()),
        &[0],
    );
    batch::encode_batch(
        &BatchFields {
            base_offset: 0,
            partition_leader_epoch: -1,
            attributes: MARKER_ATTRIBUTES,
            last_offset_delta: 0,
            base_timestamp: spec.timestamp_ms,
            max_timestamp: spec.timestamp_ms,
            producer_id: spec.producer_id,
            producer_epoch: spec.producer_epoch,
            base_sequence: -1,
        },
        1,
        &body,
    )
}

/// The transaction marker of the control batch at the front of `bytes`
/// (whose header is `h`): `Ok(None)` for a batch that is not a control
/// batch, or a control batch of another type. `Err` says why a control
/// batch holds no readable marker.
pub fn marker_of(bytes: &[u8], h: &BatchHeader) -> Result<Option<TxnMarker>, String> {
    if !h.is_control() {
        return Ok(None);
    }
    let mut records = batch::records(bytes).map_err(|e| e.to_string())?;
    let record = match records.next() {
        Some(Ok(r)) => r,
        Some(Err(e)) => return Err(e.to_string()),
        None => return Err("control batch has no record".to_string()),
    };
    match TxnMarker::decode(record.key, record.value) {
        Ok(m) => Ok(Some(m)),
        Err(MarkerError::NotATransactionMarker { .. }) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::CountRule;
    use crate::transaction::marker::MarkerKind;

    #[test]
    fn a_marker_batch_is_a_valid_control_batch_that_reads_back() {
        let spec = MarkerSpec {
            producer_id: 42,
            producer_epoch: 3,
            marker: TxnMarker {
                kind: MarkerKind::Abort,
                coordinator_epoch: 5,
            },
            timestamp_ms: 1_700_000_000_000,
        };
        let bytes = build_marker_batch(&spec);
        let h = batch::validate(&bytes, CountRule::Exact).unwrap();
        assert!(h.is_control() && h.is_transactional());
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence),
            (42, 3, -1)
        );
        assert_eq!(h.record_count, 1);
        assert_eq!(marker_of(&bytes, &h), Ok(Some(spec.marker)));
    }

    #[test]
    fn data_batches_have_no_marker() {
        let bytes = batch::build_batch(&batch::BatchSpec {
            base_offset: 0,
            leader_epoch: 0,
            base_timestamp: 0,
            records: &[(0, Some(b"k"), b"v")],
        });
        let h = batch::parse_header(&bytes).unwrap();
        assert_eq!(marker_of(&bytes, &h), Ok(None));
    }
}
