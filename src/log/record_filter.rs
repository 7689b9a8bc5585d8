//! The log cleaner's record filter: which records of a batch a clean keeps,
//! and the batch that holds them (Kafka's `MemoryRecords.filterTo` with the
//! cleaner's `RecordFilter`). Pure: bytes in, bytes out.
//!
//! A record stays if it lies past the range the offset map covers or is its
//! key's latest; a tombstone only until its batch's KIP-534 delete horizon,
//! which the first clean that keeps it sets to `now + delete.retention.ms`;
//! a record without a key goes. A batch keeps its base offset, last offset
//! delta, producer fields and codec; only its records thin out. A batch
//! left without records goes, unless it is its idempotent producer's last
//! (producer state is rebuilt from batch headers) or it ends the cleaned
//! range, as in Kafka; then its header stays as an empty batch.

use std::collections::HashMap;

use crate::constants::RECORD_BATCH_HEADER_SIZE;
use crate::log::batch::{self, BatchFields, BatchHeader};
use crate::log::compression::{self, Compression};
use crate::log::offset_map::OffsetMap;
use crate::transaction::partition::AbortedTxn;

/// The data batches of aborted transactions, by producer: the cleaner
/// drops their records (Kafka's cleaner discards aborted data), and never
/// lets them hide an older committed record of the same key.
#[derive(Debug, Default)]
pub struct AbortedBatches {
    /// Per producer, the `[first offset, marker offset]` of each aborted
    /// transaction.
    by_producer: HashMap<i64, Vec<(i64, i64)>>,
}

impl AbortedBatches {
    pub fn new(txns: &[AbortedTxn]) -> Self {
        let mut by_producer: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
        for t in txns {
            by_producer
                .entry(t.producer_id)
                .or_default()
                .push((t.first_offset, t.last_offset));
        }
        AbortedBatches { by_producer }
    }

    /// Whether `h` is a data batch of an aborted transaction.
    pub fn contains(&self, h: &BatchHeader) -> bool {
        h.is_transactional()
            && !h.is_control()
            && self.by_producer.get(&h.producer_id).is_some_and(|ranges| {
                ranges
                    .iter()
                    .any(|(first, last)| (*first..=*last).contains(&h.base_offset))
            })
    }
}

/// Which producers' transactions a clean has seen data of since their last
/// marker, walking the log in offset order (Kafka's
/// `CleanedTransactionMetadata`): a marker whose transaction shows no batch
/// any more has nothing left to commit or abort.
#[derive(Debug, Default)]
pub struct TxnDataSeen {
    with_data: std::collections::HashSet<i64>,
}

impl TxnDataSeen {
    /// A data batch: a transactional one is data of its producer's
    /// transaction, kept or about to go in this clean (either way the next
    /// clean decides its marker).
    pub fn on_data(&mut self, h: &BatchHeader) {
        if h.is_transactional() && !h.is_control() {
            self.with_data.insert(h.producer_id);
        }
    }

    /// A marker: whether its transaction's data is gone.
    pub fn on_marker(&mut self, h: &BatchHeader) -> bool {
        !self.with_data.remove(&h.producer_id)
    }
}

/// What the record filter needs besides the batch.
pub struct FilterContext<'a> {
    pub map: &'a OffsetMap,
    /// Aborted transactions' batches, whose records all go.
    pub aborted: &'a AbortedBatches,
    pub now_ms: i64,
    pub delete_retention_ms: i64,
    pub producer_last_offsets: &'a HashMap<i64, i64>,
    /// The first uncleanable offset: the batch ending just before it stays,
    /// emptied if need be, as Kafka keeps the last offset of a cleaning
    /// round.
    pub upper_bound_offset: i64,
}

/// What became of one batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filtered {
    /// Kept as it was.
    Unchanged,
    /// Kept with fewer records, or with a delete horizon, or emptied.
    Rewritten(Vec<u8>),
    /// Every record went and nothing needs the batch.
    Dropped,
}

/// The outcome of [`filter_batch`] with its counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterResult {
    pub filtered: Filtered,
    pub records_in: u64,
    pub records_removed: u64,
    /// Delete horizon of the tombstones the batch keeps, if any.
    pub tombstone_horizon_ms: Option<i64>,
    /// The batch could not be opened (an unknown codec, records that do not
    /// decode) and was kept whole.
    pub kept_whole: bool,
}

/// Applies the cleaner's rule to one whole, validated batch.
pub fn filter_batch(bytes: &[u8], h: &BatchHeader, ctx: &FilterContext<'_>) -> FilterResult {
    let unchanged = |kept_whole| FilterResult {
        filtered: Filtered::Unchanged,
        records_in: h.record_count.max(0) as u64,
        records_removed: 0,
        tombstone_horizon_ms: None,
        kept_whole,
    };
    if h.is_control() {
        // Markers are the caller's (`filter_marker`): whether one may go
        // depends on the batches of its transaction, which this batch
        // alone does not show.
        return unchanged(false);
    }
    let aborted = ctx.aborted.contains(h);
    let body_bytes = &bytes[RECORD_BATCH_HEADER_SIZE..h.size_bytes()];
    let (Some(codec), Ok(body)) = (
        Compression::from_id(h.compression()),
        compression::decompress_records(h.compression(), body_bytes),
    ) else {
        return unchanged(true);
    };
    let mut kept = Vec::new();
    let mut records_in = 0u64;
    for r in batch::records_of_body(&body, h.record_count) {
        let Ok(r) = r else {
            return unchanged(true);
        };
        records_in += 1;
        let offset = h.base_offset.saturating_add(r.offset_delta);
        let keep = if aborted {
            false
        } else if offset > ctx.map.latest_offset() {
            // Past the mapped range: the next clean decides.
            true
        } else if let Some(key) = r.key {
            let latest = offset >= ctx.map.get(key).unwrap_or(-1);
            let retain_deletes = h.delete_horizon_ms().is_none_or(|hz| ctx.now_ms < hz);
            latest && (r.value.is_some() || retain_deletes)
        } else {
            // Kafka's cleaner drops records without a key (a topic that
            // became compacted may hold some).
            false
        };
        if keep {
            kept.push(r);
        }
    }
    let removed = records_in - kept.len() as u64;
    let producer_last = h.producer_id >= 0
        && ctx.producer_last_offsets.get(&h.producer_id) == Some(&h.last_offset());
    let round_last = h.next_offset() == ctx.upper_bound_offset;
    if kept.is_empty() && !(producer_last || round_last) {
        // Kafka's DELETE_EMPTY: an empty batch nothing needs goes, including
        // one an earlier clean kept.
        return FilterResult {
            filtered: Filtered::Dropped,
            records_in,
            records_removed: removed,
            tombstone_horizon_ms: None,
            kept_whole: false,
        };
    }
    let keeps_tombstone = kept.iter().any(|r| r.value.is_none());
    let needs_horizon = keeps_tombstone && h.delete_horizon_ms().is_none();
    let result = |filtered, horizon| FilterResult {
        filtered,
        records_in,
        records_removed: removed,
        tombstone_horizon_ms: horizon,
        kept_whole: false,
    };
    if removed == 0 && !needs_horizon {
        let mut r = unchanged(false);
        r.records_in = records_in;
        r.tombstone_horizon_ms = h.delete_horizon_ms().filter(|_| keeps_tombstone);
        return r;
    }
    if kept.is_empty() {
        // Kafka's empty batch: the header with no records and no codec, both
        // timestamps the old max timestamp.
        let mut fields = BatchFields::of(h);
        fields.set_compression(0);
        fields.clear_delete_horizon();
        fields.base_timestamp = h.max_timestamp;
        return result(
            Filtered::Rewritten(batch::encode_batch(&fields, 0, &[])),
            None,
        );
    }
    let mut fields = BatchFields::of(h);
    let horizon = if needs_horizon {
        let hz = ctx.now_ms.saturating_add(ctx.delete_retention_ms.max(0));
        fields.set_delete_horizon(hz);
        Some(hz)
    } else {
        h.delete_horizon_ms().filter(|_| keeps_tombstone)
    };
    let mut records = Vec::with_capacity(body.len());
    let mut max_timestamp = i64::MIN;
    for r in &kept {
        // A record's timestamp is the base timestamp plus its delta, so a
        // new base timestamp (the delete horizon) moves every delta.
        let timestamp = h.base_timestamp.saturating_add(r.timestamp_delta);
        max_timestamp = max_timestamp.max(timestamp);
        let delta = timestamp.saturating_sub(fields.base_timestamp);
        batch::encode_record(
            &mut records,
            r.offset_delta,
            delta,
            r.key,
            r.value,
            r.headers,
        );
    }
    if !h.is_log_append_time() {
        fields.max_timestamp = max_timestamp;
    }
    let records = match compression::compress_records(codec, &records) {
        Ok(c) => c,
        Err(_) => return unchanged(true),
    };
    result(
        Filtered::Rewritten(batch::encode_batch(&fields, kept.len() as i32, &records)),
        horizon,
    )
}

/// Applies the cleaner's rule to a transaction marker (Kafka's cleaner for
/// control batches). `data_gone`: the clean saw no batch of the marker's
/// transaction, so nothing in the log needs the marker to be committed or
/// aborted any more. Such a marker first gets a delete horizon of
/// `now + delete.retention.ms`, so that a consumer in the middle of
/// reading the transaction still meets its end; a clean after the horizon
/// drops it. A producer's last batch, and the batch that ends the cleaned
/// range, stay.
pub fn filter_marker(
    bytes: &[u8],
    h: &BatchHeader,
    ctx: &FilterContext<'_>,
    data_gone: bool,
) -> FilterResult {
    let records_in = h.record_count.max(0) as u64;
    let result = |filtered, records_removed, horizon| FilterResult {
        filtered,
        records_in,
        records_removed,
        tombstone_horizon_ms: horizon,
        kept_whole: false,
    };
    let producer_last = h.producer_id >= 0
        && ctx.producer_last_offsets.get(&h.producer_id) == Some(&h.last_offset());
    let round_last = h.next_offset() == ctx.upper_bound_offset;
    // Past the range this clean decides, a marker may not even be
    // replicated yet: followers must still fetch it.
    let past_range = h.base_offset > ctx.map.latest_offset();
    if !data_gone || producer_last || round_last || past_range {
        return result(Filtered::Unchanged, 0, None);
    }
    match h.delete_horizon_ms() {
        Some(horizon) if ctx.now_ms >= horizon => result(Filtered::Dropped, records_in, None),
        Some(horizon) => result(Filtered::Unchanged, 0, Some(horizon)),
        None => {
            let horizon = ctx.now_ms.saturating_add(ctx.delete_retention_ms.max(0));
            match with_base_timestamp(bytes, h, horizon) {
                Some(stamped) => result(Filtered::Rewritten(stamped), 0, Some(horizon)),
                // A marker that does not decode was refused on append;
                // should one be here, it stays as it is.
                None => result(Filtered::Unchanged, 0, None),
            }
        }
    }
}

/// `h`'s batch with the delete-horizon flag and `horizon` as its base
/// timestamp, each record's timestamp delta moved so that its timestamp
/// stays. `None` if its records do not decode.
fn with_base_timestamp(bytes: &[u8], h: &BatchHeader, horizon: i64) -> Option<Vec<u8>> {
    let body_bytes = &bytes[RECORD_BATCH_HEADER_SIZE..h.size_bytes()];
    let codec = Compression::from_id(h.compression())?;
    let body = compression::decompress_records(h.compression(), body_bytes).ok()?;
    let mut fields = BatchFields::of(h);
    fields.set_delete_horizon(horizon);
    let mut records = Vec::with_capacity(body.len());
    for r in batch::records_of_body(&body, h.record_count) {
        let r = r.ok()?;
        let timestamp = h.base_timestamp.saturating_add(r.timestamp_delta);
        let delta = timestamp.saturating_sub(fields.base_timestamp);
        batch::encode_record(
            &mut records,
            r.offset_delta,
            delta,
            r.key,
            r.value,
            r.headers,
        );
    }
    let records = compression::compress_records(codec, &records).ok()?;
    Some(batch::encode_batch(&fields, h.record_count, &records))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::{build_keyed_batch, CountRule, KeyedRecordSpec};

    const NOW: i64 = 1_000_000;

    fn keyed(base: i64, recs: &[(&str, Option<&str>)]) -> Vec<u8> {
        let specs: Vec<KeyedRecordSpec> = recs
            .iter()
            .enumerate()
            .map(|(i, (k, v))| (i as i64, Some(k.as_bytes()), v.map(str::as_bytes)))
            .collect();
        build_keyed_batch(base, 0, 5_000, &specs)
    }

    fn records_of(bytes: &[u8]) -> Vec<(i64, String, Option<String>, i64)> {
        let h = batch::validate(bytes, CountRule::Compacted).unwrap();
        let body = compression::decompress_records(
            h.compression(),
            &bytes[RECORD_BATCH_HEADER_SIZE..h.size_bytes()],
        )
        .unwrap();
        batch::records_of_body(&body, h.record_count)
            .map(|r| {
                let r = r.unwrap();
                (
                    h.base_offset + r.offset_delta,
                    String::from_utf8(r.key.unwrap().to_vec()).unwrap(),
                    r.value.map(|v| String::from_utf8(v.to_vec()).unwrap()),
                    h.base_timestamp + r.timestamp_delta,
                )
            })
            .collect()
    }

    fn map_of(entries: &[(&str, i64)], latest: i64) -> OffsetMap {
        let mut m = OffsetMap::new(1 << 20, 0.9, 100);
        for (k, o) in entries {
            m.put(k.as_bytes(), *o);
        }
        m.update_latest_offset(latest);
        m
    }

    #[test]
    fn filter_keeps_latest_values_and_offsets() {
        let b = keyed(10, &[("a", Some("1")), ("b", Some("2")), ("a", Some("3"))]);
        let h = batch::validate(&b, CountRule::Exact).unwrap();
        let map = map_of(&[("a", 12), ("b", 11)], 12);
        let none = HashMap::new();
        let ctx = FilterContext {
            aborted: &AbortedBatches::default(),
            map: &map,
            now_ms: NOW,
            delete_retention_ms: 100,
            producer_last_offsets: &none,
            upper_bound_offset: i64::MAX,
        };
        let r = filter_batch(&b, &h, &ctx);
        assert_eq!((r.records_in, r.records_removed), (3, 1));
        let Filtered::Rewritten(out) = r.filtered else {
            panic!("{r:?}")
        };
        let h2 = batch::validate(&out, CountRule::Compacted).unwrap();
        assert_eq!(
            (h2.base_offset, h2.last_offset_delta, h2.record_count),
            (10, 2, 2)
        );
        assert_eq!(
            records_of(&out),
            vec![
                (11, "b".into(), Some("2".into()), 5_001),
                (12, "a".into(), Some("3".into()), 5_002)
            ]
        );
        // Everything current: the batch is kept byte for byte.
        let map = map_of(&[("a", 12), ("b", 11)], 9);
        let ctx = FilterContext { map: &map, ..ctx };
        assert_eq!(filter_batch(&b, &h, &ctx).filtered, Filtered::Unchanged);
    }

    #[test]
    fn tombstones_get_a_horizon_then_go_after_it() {
        let b = keyed(0, &[("a", None)]);
        let h = batch::validate(&b, CountRule::Exact).unwrap();
        let map = map_of(&[("a", 0)], 0);
        let none = HashMap::new();
        let ctx = FilterContext {
            aborted: &AbortedBatches::default(),
            map: &map,
            now_ms: NOW,
            delete_retention_ms: 100,
            producer_last_offsets: &none,
            upper_bound_offset: i64::MAX,
        };
        let r = filter_batch(&b, &h, &ctx);
        assert_eq!(r.tombstone_horizon_ms, Some(NOW + 100));
        let Filtered::Rewritten(stamped) = r.filtered else {
            panic!("{r:?}")
        };
        let hs = batch::validate(&stamped, CountRule::Compacted).unwrap();
        assert_eq!(hs.delete_horizon_ms(), Some(NOW + 100));
        // The record keeps its timestamp under the new base timestamp.
        assert_eq!(records_of(&stamped)[0].3, 5_000);
        // Before the horizon the stamped tombstone stays as it is.
        let ctx = FilterContext {
            now_ms: NOW + 99,
            ..ctx
        };
        let r = filter_batch(&stamped, &hs, &ctx);
        assert_eq!(r.filtered, Filtered::Unchanged);
        assert_eq!(r.tombstone_horizon_ms, Some(NOW + 100));
        // At the horizon it goes, and the empty batch with it...
        let ctx = FilterContext {
            now_ms: NOW + 100,
            ..ctx
        };
        assert_eq!(
            filter_batch(&stamped, &hs, &ctx).filtered,
            Filtered::Dropped
        );
        // ...unless it ends the cleanable range: then an empty header stays.
        let ctx = FilterContext {
            upper_bound_offset: 1,
            ..ctx
        };
        let Filtered::Rewritten(empty) = filter_batch(&stamped, &hs, &ctx).filtered else {
            panic!()
        };
        let he = batch::validate(&empty, CountRule::Compacted).unwrap();
        assert_eq!(
            (he.record_count, he.base_offset, he.last_offset_delta),
            (0, 0, 0)
        );
        assert_eq!(he.delete_horizon_ms(), None);
    }

    #[test]
    fn the_last_batch_of_a_producer_survives_empty() {
        let mut b = keyed(20, &[("a", Some("old"))]);
        // Give it a producer id (CRC-covered: re-encode).
        let h = batch::validate(&b, CountRule::Exact).unwrap();
        let mut f = BatchFields::of(&h);
        f.producer_id = 7;
        f.producer_epoch = 0;
        f.base_sequence = 3;
        b = batch::encode_batch(&f, 1, &b[RECORD_BATCH_HEADER_SIZE..]);
        let h = batch::validate(&b, CountRule::Exact).unwrap();
        let map = map_of(&[("a", 50)], 50);
        let producers: HashMap<i64, i64> = [(7, 20)].into_iter().collect();
        let ctx = FilterContext {
            aborted: &AbortedBatches::default(),
            map: &map,
            now_ms: NOW,
            delete_retention_ms: 100,
            producer_last_offsets: &producers,
            upper_bound_offset: i64::MAX,
        };
        let Filtered::Rewritten(out) = filter_batch(&b, &h, &ctx).filtered else {
            panic!()
        };
        let ho = batch::validate(&out, CountRule::Compacted).unwrap();
        assert_eq!(
            (
                ho.record_count,
                ho.producer_id,
                ho.base_sequence,
                ho.last_offset()
            ),
            (0, 7, 3, 20)
        );
        let other: HashMap<i64, i64> = [(7, 99)].into_iter().collect();
        let ctx = FilterContext {
            producer_last_offsets: &other,
            ..ctx
        };
        assert_eq!(filter_batch(&b, &h, &ctx).filtered, Filtered::Dropped);
    }

    #[test]
    fn an_aborted_transactions_batch_loses_every_record() {
        let b = keyed(20, &[("a", Some("aborted")), ("b", Some("aborted"))]);
        let h = batch::validate(&b, CountRule::Exact).unwrap();
        let mut f = BatchFields::of(&h);
        f.producer_id = 7;
        f.producer_epoch = 0;
        f.base_sequence = 0;
        f.attributes |= 0x10;
        let b = batch::encode_batch(&f, 2, &b[RECORD_BATCH_HEADER_SIZE..]);
        let h = batch::validate(&b, CountRule::Exact).unwrap();
        let abort = |first, last| AbortedTxn {
            producer_id: 7,
            first_offset: first,
            last_offset: last,
            last_stable_offset: last + 1,
        };
        // The keys are their own latest, and still the batch goes.
        let map = map_of(&[("a", 20), ("b", 21)], 30);
        let none = HashMap::new();
        let aborted = AbortedBatches::new(&[abort(20, 25)]);
        let ctx = FilterContext {
            aborted: &aborted,
            map: &map,
            now_ms: NOW,
            delete_retention_ms: 100,
            producer_last_offsets: &none,
            upper_bound_offset: i64::MAX,
        };
        let r = filter_batch(&b, &h, &ctx);
        assert_eq!((r.filtered, r.records_removed), (Filtered::Dropped, 2));
        // Another producer's abort, or one that ended before it, is not this.
        for other in [
            AbortedBatches::new(&[AbortedTxn {
                producer_id: 8,
                ..abort(20, 25)
            }]),
            AbortedBatches::new(&[abort(0, 19)]),
        ] {
            let ctx = FilterContext {
                aborted: &other,
                ..ctx
            };
            assert_eq!(filter_batch(&b, &h, &ctx).filtered, Filtered::Unchanged);
        }
    }

    #[test]
    fn compressed_batches_are_filtered_and_keep_their_codec() {
        let plain = keyed(0, &[("a", Some("1")), ("b", Some("2")), ("a", Some("3"))]);
        let h = batch::validate(&plain, CountRule::Exact).unwrap();
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let body =
                compression::compress_records(codec, &plain[RECORD_BATCH_HEADER_SIZE..]).unwrap();
            let mut f = BatchFields::of(&h);
            f.set_compression(codec.id());
            let b = batch::encode_batch(&f, 3, &body);
            let hb = batch::validate(&b, CountRule::Exact).unwrap();
            let map = map_of(&[("a", 2), ("b", 1)], 2);
            let none = HashMap::new();
            let ctx = FilterContext {
                aborted: &AbortedBatches::default(),
                map: &map,
                now_ms: NOW,
                delete_retention_ms: 100,
                producer_last_offsets: &none,
                upper_bound_offset: i64::MAX,
            };
            let Filtered::Rewritten(out) = filter_batch(&b, &hb, &ctx).filtered else {
                panic!("{codec:?}")
            };
            let ho = batch::validate(&out, CountRule::Compacted).unwrap();
            assert_eq!(ho.compression(), codec.id(), "{codec:?}");
            let keys: Vec<_> = records_of(&out).into_iter().map(|r| (r.0, r.1)).collect();
            assert_eq!(keys, vec![(1, "b".into()), (2, "a".into())], "{codec:?}");
        }
    }

    #[test]
    fn unknown_codecs_and_keyless_records() {
        let b = keyed(0, &[("a", Some("1"))]);
        let h = batch::validate(&b, CountRule::Exact).unwrap();
        let mut f = BatchFields::of(&h);
        f.set_compression(6);
        let odd = batch::encode_batch(&f, 1, &b[RECORD_BATCH_HEADER_SIZE..]);
        let ho = batch::validate(&odd, CountRule::Exact).unwrap();
        let map = map_of(&[("a", 5)], 5);
        let none = HashMap::new();
        let ctx = FilterContext {
            aborted: &AbortedBatches::default(),
            map: &map,
            now_ms: NOW,
            delete_retention_ms: 100,
            producer_last_offsets: &none,
            upper_bound_offset: i64::MAX,
        };
        let r = filter_batch(&odd, &ho, &ctx);
        assert!(r.kept_whole);
        assert_eq!(r.filtered, Filtered::Unchanged);
        // A record without a key is dropped, as Kafka's cleaner does.
        let nokey = build_keyed_batch(0, 0, 1, &[(0, None, Some(b"v"))]);
        let hn = batch::validate(&nokey, CountRule::Exact).unwrap();
        assert_eq!(filter_batch(&nokey, &hn, &ctx).filtered, Filtered::Dropped);
        assert!(matches!(
            batch::check_keys(&nokey),
            Err(crate::error::BatchError::MissingKey { .. })
        ));
        assert!(batch::check_keys(&b).is_ok());
    }
}
