//! RecordBatch v2 headers: validation and header rewrites without decoding
//! the records.
//!
//! Layout (all big-endian), as Kafka's `DefaultRecordBatch` defines it:
//!
//! ```text
//!  0 baseOffset i64      |  8 batchLength i32   | 12 partitionLeaderEpoch i32
//! 16 magic i8            | 17 crc u32 (CRC-32C over bytes 21..end)
//! 21 attributes i16      | 23 lastOffsetDelta i32 | 27 baseTimestamp i64
//! 35 maxTimestamp i64    | 43 producerId i64    | 51 producerEpoch i16
//! 53 baseSequence i32    | 57 recordCount i32   | 61 records...
//! ```
//!
//! The base offset and the partition leader epoch lie outside the CRC, which
//! is why the leader can assign both by patching 12 bytes in place. Only a
//! LogAppendTime rewrite touches CRC-covered bytes, and then the CRC is
//! recomputed over the unchanged record bytes.

use bytes::Bytes;

use crate::constants::{LOG_OVERHEAD, RECORD_BATCH_HEADER_SIZE, RECORD_BATCH_MAGIC_V2};
use crate::error::BatchError;

const BASE_OFFSET_AT: usize = 0;
const LENGTH_AT: usize = 8;
const LEADER_EPOCH_AT: usize = 12;
const MAGIC_AT: usize = 16;
const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
const LAST_OFFSET_DELTA_AT: usize = 23;
const BASE_TIMESTAMP_AT: usize = 27;
const MAX_TIMESTAMP_AT: usize = 35;
const PRODUCER_ID_AT: usize = 43;
const PRODUCER_EPOCH_AT: usize = 51;
const BASE_SEQUENCE_AT: usize = 53;
const RECORD_COUNT_AT: usize = 57;

const COMPRESSION_MASK: i16 = 0x07;
const TIMESTAMP_TYPE_LOG_APPEND: i16 = 0x08;
const TRANSACTIONAL_FLAG: i16 = 0x10;
const CONTROL_FLAG: i16 = 0x20;
/// KIP-534: the base timestamp holds the time after which the log cleaner
/// may drop this batch's tombstones.
const DELETE_HORIZON_FLAG: i16 = 0x40;

/// How strictly the record count is checked against the offset range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountRule {
    /// A batch fresh from a producer: `count == lastOffsetDelta + 1`, count > 0,
    /// as Kafka's `LogValidator` requires.
    Exact,
    /// A batch already in a log (recovery, follower fetch): compaction may have
    /// removed records, so `0 <= count <= lastOffsetDelta + 1`.
    Compacted,
}

/// The decoded fixed-size header of one RecordBatch v2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
}

impl BatchHeader {
    /// Bytes the whole batch occupies, header included.
    pub fn size_bytes(&self) -> usize {
        self.batch_length as usize + LOG_OVERHEAD
    }
    pub fn last_offset(&self) -> i64 {
        // Saturating: the base offset lies outside the CRC, so a damaged
        // one must not overflow.
        self.base_offset
            .saturating_add(self.last_offset_delta as i64)
    }
    /// The offset after this batch: where the next batch must start.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().saturating_add(1)
    }
    /// Compression codec id: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
    pub fn compression(&self) -> u8 {
        (self.attributes & COMPRESSION_MASK) as u8
    }
    pub fn is_log_append_time(&self) -> bool {
        self.attributes & TIMESTAMP_TYPE_LOG_APPEND != 0
    }
    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_FLAG != 0
    }
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_FLAG != 0
    }
    /// When the log cleaner may drop the batch's tombstones (KIP-534): set
    /// by the first clean that kept them, `None` before.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        (self.attributes & DELETE_HORIZON_FLAG != 0).then_some(self.base_timestamp)
    }
}

fn i16_at(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn i64_at(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

/// The length of the complete batches at the front of `bytes`. A read of a
/// file range may end inside a batch (as Kafka's reads may); whoever parses
/// it drops that partial batch and reads it again from its offset. A length
/// too small for a batch header (zero padding, say) ends the walk too.
pub fn whole_batches_len(bytes: &[u8]) -> usize {
    let mut end = 0usize;
    while let Some((_, len)) = peek_offset_and_size(&bytes[end..]) {
        let Ok(len) = usize::try_from(len) else { break };
        if len + LOG_OVERHEAD < RECORD_BATCH_HEADER_SIZE {
            break;
        }
        let next = end + LOG_OVERHEAD + len;
        if next > bytes.len() {
            break;
        }
        end = next;
    }
    end
}

/// Reads the base offset and length of the batch at the front of `bytes`
/// without checking anything else. Returns `None` when fewer than
/// [`LOG_OVERHEAD`] bytes remain.
pub fn peek_offset_and_size(bytes: &[u8]) -> Option<(i64, i32)> {
    if bytes.len() < LOG_OVERHEAD {
        return None;
    }
    Some((i64_at(bytes, BASE_OFFSET_AT), i32_at(bytes, LENGTH_AT)))
}

/// Decodes the header of the batch at the front of `bytes`, checking only
/// that the header and the claimed length fit and that the magic is 2.
pub fn parse_header(bytes: &[u8]) -> Result<BatchHeader, BatchError> {
    let header = parse_header_only(bytes)?;
    if bytes.len() < header.size_bytes() {
        return Err(BatchError::Truncated {
            needed: header.size_bytes(),
            available: bytes.len(),
        });
    }
    Ok(header)
}

/// Decodes the fixed header at the front of `bytes` when the batch body may
/// lie beyond them: for scanning a file header by header.
pub fn parse_header_only(bytes: &[u8]) -> Result<BatchHeader, BatchError> {
    if bytes.len() < LOG_OVERHEAD + 5 {
        return Err(BatchError::Truncated {
            needed: LOG_OVERHEAD + 5,
            available: bytes.len(),
        });
    }
    let batch_length = i32_at(bytes, LENGTH_AT);
    let magic = bytes[MAGIC_AT] as i8;
    if magic != RECORD_BATCH_MAGIC_V2 {
        return Err(BatchError::UnsupportedMagic { magic });
    }
    if (batch_length as i64) < (RECORD_BATCH_HEADER_SIZE - LOG_OVERHEAD) as i64 {
        return Err(BatchError::LengthTooSmall {
            length: batch_length,
        });
    }
    if bytes.len() < RECORD_BATCH_HEADER_SIZE {
        return Err(BatchError::Truncated {
            needed: RECORD_BATCH_HEADER_SIZE,
            available: bytes.len(),
        });
    }
    Ok(BatchHeader {
        base_offset: i64_at(bytes, BASE_OFFSET_AT),
        batch_length,
        partition_leader_epoch: i32_at(bytes, LEADER_EPOCH_AT),
        magic,
        crc: i32_at(bytes, CRC_AT) as u32,
        attributes: i16_at(bytes, ATTRIBUTES_AT),
        last_offset_delta: i32_at(bytes, LAST_OFFSET_DELTA_AT),
        base_timestamp: i64_at(bytes, BASE_TIMESTAMP_AT),
        max_timestamp: i64_at(bytes, MAX_TIMESTAMP_AT),
        producer_id: i64_at(bytes, PRODUCER_ID_AT),
        producer_epoch: i16_at(bytes, PRODUCER_EPOCH_AT),
        base_sequence: i32_at(bytes, BASE_SEQUENCE_AT),
        record_count: i32_at(bytes, RECORD_COUNT_AT),
    })
}

/// CRC-32C over the CRC-covered part of a whole batch (attributes..end).
pub fn compute_crc(batch: &[u8]) -> u32 {
    crc32c::crc32c(&batch[ATTRIBUTES_AT..])
}

/// Fully validates the batch at the front of `bytes`: magic, length, CRC and
/// the count/offset-delta relation. Does not look inside the records.
pub fn validate(bytes: &[u8], rule: CountRule) -> Result<BatchHeader, BatchError> {
    let header = parse_header(bytes)?;
    let batch = &bytes[..header.size_bytes()];
    let computed = compute_crc(batch);
    if computed != header.crc {
        return Err(BatchError::CrcMismatch {
            stored: header.crc,
            computed,
        });
    }
    let count = header.record_count;
    let delta = header.last_offset_delta;
    let consistent = match rule {
        CountRule::Exact => count > 0 && delta >= 0 && count as i64 == delta as i64 + 1,
        CountRule::Compacted => count >= 0 && delta >= 0 && count as i64 <= delta as i64 + 1,
    };
    if !consistent {
        return Err(BatchError::InconsistentCount {
            count,
            last_offset_delta: delta,
        });
    }
    Ok(header)
}

/// Iterates over the batches laid end to end in a buffer, validating each.
/// Stops at the first error, which it yields together with the byte position
/// where the bad batch starts.
pub struct BatchIter<'a> {
    bytes: &'a [u8],
    position: usize,
    rule: CountRule,
    failed: bool,
}

impl<'a> BatchIter<'a> {
    pub fn new(bytes: &'a [u8], rule: CountRule) -> Self {
        BatchIter {
            bytes,
            position: 0,
            rule,
            failed: false,
        }
    }
}

impl<'a> Iterator for BatchIter<'a> {
    /// `(position, header)` or `(position, error)`.
    type Item = Result<(usize, BatchHeader), (usize, BatchError)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.position >= self.bytes.len() {
            return None;
        }
        let at = self.position;
        match validate(&self.bytes[at..], self.rule) {
            Ok(h) => {
                self.position += h.size_bytes();
                Some(Ok((at, h)))
            }
            Err(e) => {
                self.failed = true;
                Some(Err((at, e)))
            }
        }
    }
}

/// Sets the base offset of a batch in place. The field lies outside the CRC.
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) {
    batch[BASE_OFFSET_AT..BASE_OFFSET_AT + 8].copy_from_slice(&base_offset.to_be_bytes());
}

/// Sets the partition leader epoch of a batch in place. Outside the CRC.
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    batch[LEADER_EPOCH_AT..LEADER_EPOCH_AT + 4].copy_from_slice(&epoch.to_be_bytes());
}

/// Rewrites a batch for `message.timestamp.type=LogAppendTime`: marks the
/// timestamp type, sets the max timestamp to `now_ms`, and recomputes the CRC.
/// Record bytes are not touched; consumers take the batch's max timestamp as
/// every record's timestamp under LogAppendTime.
pub fn set_log_append_time(batch: &mut [u8], now_ms: i64) {
    let attributes = i16_at(batch, ATTRIBUTES_AT) | TIMESTAMP_TYPE_LOG_APPEND;
    batch[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    batch[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8].copy_from_slice(&now_ms.to_be_bytes());
    let crc = compute_crc(batch);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Cuts `parts` (whole batches back to back) into their batches, as
/// `headers` describes them in order: (index of the part, header, the
/// batch's bytes, sharing the part's buffer).
pub fn split_parts<'a>(parts: &'a [Bytes], headers: &'a [BatchHeader]) -> SplitParts<'a> {
    SplitParts {
        parts,
        headers: headers.iter(),
        part: 0,
        at: 0,
    }
}

/// The iterator of [`split_parts`].
pub struct SplitParts<'a> {
    parts: &'a [Bytes],
    headers: std::slice::Iter<'a, BatchHeader>,
    part: usize,
    at: usize,
}

impl<'a> Iterator for SplitParts<'a> {
    type Item = (usize, &'a BatchHeader, Bytes);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let part = self.parts.get(self.part)?;
            if self.at >= part.len() {
                self.part += 1;
                self.at = 0;
                continue;
            }
            let h = self.headers.next().expect("headers describe the parts");
            let bytes = part.slice(self.at..self.at + h.size_bytes());
            self.at += h.size_bytes();
            return Some((self.part, h, bytes));
        }
    }
}

/// One record of a built batch: (timestamp delta, key, value).
pub type RecordSpec<'a> = (i64, Option<&'a [u8]>, &'a [u8]);

/// Parameters of a test or tool batch built by [`build_batch`].
#[derive(Debug, Clone)]
pub struct BatchSpec<'a> {
    pub base_offset: i64,
    pub leader_epoch: i32,
    pub base_timestamp: i64,
    /// `(timestamp delta, key, value)` per record.
    pub records: &'a [RecordSpec<'a>],
}

fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Encodes an uncompressed RecordBatch v2 with the given records. Producers
/// build batches themselves; this exists for the tools, tests and benches.
pub fn build_batch(spec: &BatchSpec<'_>) -> Vec<u8> {
    let records: Vec<KeyedRecordSpec> = spec
        .records
        .iter()
        .map(|(ts_delta, key, value)| (*ts_delta, *key, Some(*value)))
        .collect();
    build_keyed_batch(
        spec.base_offset,
        spec.leader_epoch,
        spec.base_timestamp,
        &records,
    )
}

/// One record of [`build_keyed_batch`]: (timestamp delta, key, value), where
/// a `None` value is a tombstone.
pub type KeyedRecordSpec<'a> = (i64, Option<&'a [u8]>, Option<&'a [u8]>);

/// Encodes an uncompressed RecordBatch v2 whose values may be null
/// (tombstones), for tests and tools.
pub fn build_keyed_batch(
    base_offset: i64,
    leader_epoch: i32,
    base_timestamp: i64,
    records: &[KeyedRecordSpec<'_>],
) -> Vec<u8> {
    let mut body = Vec::new();
    let mut max_ts = base_timestamp;
    for (i, (ts_delta, key, value)) in records.iter().enumerate() {
        encode_record(&mut body, i as i64, *ts_delta, *key, *value, &[0]);
        max_ts = max_ts.max(base_timestamp + ts_delta);
    }
    let count = records.len() as i32;
    encode_batch(
        &BatchFields {
            base_offset,
            partition_leader_epoch: leader_epoch,
            attributes: 0,
            last_offset_delta: (count - 1).max(0),
            base_timestamp,
            max_timestamp: max_ts,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
        },
        count,
        &body,
    )
}

/// The header fields of a batch to encode; the length, magic, CRC and
/// record count follow from the records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchFields {
    pub base_offset: i64,
    pub partition_leader_epoch: i32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
}

impl BatchFields {
    /// The fields of an existing batch, to re-encode it.
    pub fn of(h: &BatchHeader) -> BatchFields {
        BatchFields {
            base_offset: h.base_offset,
            partition_leader_epoch: h.partition_leader_epoch,
            attributes: h.attributes,
            last_offset_delta: h.last_offset_delta,
            base_timestamp: h.base_timestamp,
            max_timestamp: h.max_timestamp,
            producer_id: h.producer_id,
            producer_epoch: h.producer_epoch,
            base_sequence: h.base_sequence,
        }
    }
    /// Marks the batch with a KIP-534 delete horizon, which takes the place
    /// of the base timestamp.
    pub fn set_delete_horizon(&mut self, horizon_ms: i64) {
        self.attributes |= DELETE_HORIZON_FLAG;
        self.base_timestamp = horizon_ms;
    }
    /// Removes the delete-horizon flag (the base timestamp is the caller's).
    pub fn clear_delete_horizon(&mut self) {
        self.attributes &= !DELETE_HORIZON_FLAG;
    }
    /// Sets the compression codec bits (0: none).
    pub fn set_compression(&mut self, codec: u8) {
        self.attributes = (self.attributes & !COMPRESSION_MASK) | (codec as i16 & COMPRESSION_MASK);
    }
}

/// Encodes a whole RecordBatch v2 around `records` (the encoded records, or
/// their compressed form), computing the length and the CRC.
pub fn encode_batch(fields: &BatchFields, record_count: i32, records: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(RECORD_BATCH_HEADER_SIZE + records.len());
    b.extend_from_slice(&fields.base_offset.to_be_bytes());
    let length = (RECORD_BATCH_HEADER_SIZE - LOG_OVERHEAD + records.len()) as i32;
    b.extend_from_slice(&length.to_be_bytes());
    b.extend_from_slice(&fields.partition_leader_epoch.to_be_bytes());
    b.push(RECORD_BATCH_MAGIC_V2 as u8);
    b.extend_from_slice(&[0; 4]); // crc, filled below
    b.extend_from_slice(&fields.attributes.to_be_bytes());
    b.extend_from_slice(&fields.last_offset_delta.to_be_bytes());
    b.extend_from_slice(&fields.base_timestamp.to_be_bytes());
    b.extend_from_slice(&fields.max_timestamp.to_be_bytes());
    b.extend_from_slice(&fields.producer_id.to_be_bytes());
    b.extend_from_slice(&fields.producer_epoch.to_be_bytes());
    b.extend_from_slice(&fields.base_sequence.to_be_bytes());
    b.extend_from_slice(&record_count.to_be_bytes());
    b.extend_from_slice(records);
    let crc = compute_crc(&b);
    b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    b
}

/// Appends one record in Kafka's `DefaultRecord` layout. `headers` is the
/// encoded header section: the header count varint and the headers (`[0]`
/// for none).
pub fn encode_record(
    out: &mut Vec<u8>,
    offset_delta: i64,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[u8],
) {
    let mut rec = Vec::with_capacity(
        16 + key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len) + headers.len(),
    );
    rec.push(0); // attributes: unused in v2
    put_varint(&mut rec, timestamp_delta);
    put_varint(&mut rec, offset_delta);
    for field in [key, value] {
        match field {
            Some(bytes) => {
                put_varint(&mut rec, bytes.len() as i64);
                rec.extend_from_slice(bytes);
            }
            None => put_varint(&mut rec, -1),
        }
    }
    rec.extend_from_slice(headers);
    put_varint(out, rec.len() as i64);
    out.extend_from_slice(&rec);
}

/// One record of an uncompressed batch, borrowed from the batch bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub offset_delta: i64,
    pub timestamp_delta: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub header_count: i64,
    /// The encoded header section: the count and the headers, as stored.
    pub headers: &'a [u8],
}

/// Walks the records of an uncompressed batch (Kafka's `DefaultRecord`
/// layout). Yields an error, once, at the first record that does not decode;
/// every length is checked against the batch before it is used.
pub struct RecordIter<'a> {
    bytes: &'a [u8],
    position: usize,
    remaining: i32,
    failed: bool,
}

/// Records of the whole batch at the front of `batch`. Compressed batches
/// yield an error: pinlog never decompresses on the data path.
pub fn records(batch: &[u8]) -> Result<RecordIter<'_>, BatchError> {
    let h = parse_header(batch)?;
    if h.compression() != 0 {
        return Err(BatchError::Compressed {
            codec: h.compression(),
        });
    }
    Ok(records_of_body(
        &batch[RECORD_BATCH_HEADER_SIZE..h.size_bytes()],
        h.record_count,
    ))
}

/// Records laid end to end in `body` (a batch's record section, after any
/// decompression); `count` is the batch's record count.
pub fn records_of_body(body: &[u8], count: i32) -> RecordIter<'_> {
    RecordIter {
        bytes: body,
        position: 0,
        remaining: count.max(0),
        failed: false,
    }
}

/// Checks that every record of a batch has a key, as Kafka's `LogValidator`
/// requires for compacted topics: the cleaner keeps the latest record of
/// each key, and a record without one has no latest.
pub fn check_keys(batch: &[u8]) -> Result<(), BatchError> {
    let h = parse_header(batch)?;
    let body = crate::log::compression::decompress_records(
        h.compression(),
        &batch[RECORD_BATCH_HEADER_SIZE..h.size_bytes()],
    )
    .map_err(|reason| BatchError::InvalidRecords { reason })?;
    for (index, r) in records_of_body(&body, h.record_count).enumerate() {
        let r = r.map_err(|reason| BatchError::InvalidRecords { reason })?;
        if r.key.is_none() {
            return Err(BatchError::MissingKey {
                offset_delta: r.offset_delta,
                index,
            });
        }
    }
    Ok(())
}

impl<'a> RecordIter<'a> {
    fn field(&self, at: usize) -> Option<(i64, usize)> {
        read_varint(self.bytes.get(at..)?)
    }
    fn sized(&self, at: usize) -> Option<(Option<&'a [u8]>, usize)> {
        let (len, n) = self.field(at)?;
        if len < 0 {
            return Some((None, at + n));
        }
        let start = at + n;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        Some((Some(self.bytes.get(start..end)?), end))
    }
    fn decode_one(&self) -> Option<(Record<'a>, usize)> {
        let (len, n) = self.field(self.position)?;
        let body_start = self.position + n;
        let body_end = body_start.checked_add(usize::try_from(len).ok()?)?;
        if body_end > self.bytes.len() {
            return None;
        }
        let at = body_start + 1; // attributes
        let (timestamp_delta, n1) = self.field(at)?;
        let (offset_delta, n2) = self.field(at + n1)?;
        let (key, at) = self.sized(at + n1 + n2)?;
        let (value, at) = self.sized(at)?;
        let (header_count, _) = self.field(at)?;
        Some((
            Record {
                offset_delta,
                timestamp_delta,
                key,
                value,
                header_count,
                headers: self.bytes.get(at..body_end)?,
            },
            body_end,
        ))
    }
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<Record<'a>, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.remaining == 0 {
            return None;
        }
        match self.decode_one() {
            Some((record, end)) => {
                self.position = end;
                self.remaining -= 1;
                Some(Ok(record))
            }
            None => {
                self.failed = true;
                Some(Err(format!(
                    "record at byte {} does not decode",
                    self.position
                )))
            }
        }
    }
}

/// Reads the records of an uncompressed batch and returns the `(offset,
/// timestamp)` of the first record whose timestamp is at least `target_ms`.
/// Returns `None` for compressed batches or malformed record bytes; callers
/// then fall back to the batch's base offset.
pub fn first_offset_at_or_after(batch: &[u8], target_ms: i64) -> Option<(i64, i64)> {
    // Fully validated: the bytes may come from a damaged segment, and the
    // offset arithmetic below relies on a sane offset delta.
    let h = validate(batch, CountRule::Compacted).ok()?;
    if h.compression() != 0 {
        return None;
    }
    if h.is_log_append_time() {
        return (h.max_timestamp >= target_ms).then_some((h.base_offset, h.max_timestamp));
    }
    for r in records(batch).ok()? {
        let r = r.ok()?;
        let timestamp = h.base_timestamp.saturating_add(r.timestamp_delta);
        if timestamp >= target_ms {
            // Record offset deltas are not covered by any range check of
            // their own: keep the answer inside the batch.
            let offset = h
                .base_offset
                .saturating_add(r.offset_delta)
                .clamp(h.base_offset, h.last_offset());
            return Some((offset, timestamp));
        }
    }
    None
}

/// A zigzag varint (Kafka's `ByteUtils.readVarlong`): its value and the
/// bytes it took; `None` if `b` ends inside it or it runs past 10 bytes.
/// The one varint decoder of a record's fields (the wire codec reads its
/// varints with `protocol::codec::Reader`).
pub fn read_varint(b: &[u8]) -> Option<(i64, usize)> {
    let mut z: u64 = 0;
    for (i, byte) in b.iter().enumerate().take(10) {
        z |= ((byte & 0x7f) as u64) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((((z >> 1) as i64) ^ -((z & 1) as i64), i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_decode_like_kafka() {
        assert_eq!(read_varint(&[0x00]), Some((0, 1)));
        assert_eq!(read_varint(&[0x01]), Some((-1, 1)));
        assert_eq!(read_varint(&[0x02]), Some((1, 1)));
        assert_eq!(read_varint(&[0xac, 0x02]), Some((150, 2)));
        assert_eq!(read_varint(&[0x80]), None);
        assert_eq!(read_varint(&[0xff; 12]), None);
    }

    #[test]
    fn record_iterator_yields_keys_values_and_deltas() {
        let b = sample(3);
        let recs: Vec<_> = records(&b).unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[2].offset_delta, 2);
        assert_eq!(recs[2].timestamp_delta, 2);
        assert_eq!(recs[0].key, Some(&b"key"[..]));
        assert_eq!(recs[0].value, Some(&[7u8; 10][..]));
        let mut bad = b.clone();
        let n = bad.len();
        bad.truncate(n - 3);
        bad[LENGTH_AT..LENGTH_AT + 4]
            .copy_from_slice(&((n - 3 - LOG_OVERHEAD) as i32).to_be_bytes());
        let results: Vec<_> = records(&bad).unwrap().collect();
        assert!(results.last().unwrap().is_err());
    }

    fn sample(n: usize) -> Vec<u8> {
        let value = [7u8; 10];
        let recs: Vec<RecordSpec> = (0..n)
            .map(|i| (i as i64, Some(&b"key"[..]), &value[..]))
            .collect();
        build_batch(&BatchSpec {
            base_offset: 0,
            leader_epoch: 0,
            base_timestamp: 1_000,
            records: &recs,
        })
    }

    #[test]
    fn valid_batch_round_trips_its_header() {
        let b = sample(3);
        let h = validate(&b, CountRule::Exact).unwrap();
        assert_eq!(h.record_count, 3);
        assert_eq!(h.last_offset_delta, 2);
        assert_eq!(h.size_bytes(), b.len());
        assert_eq!(h.max_timestamp, 1_002);
    }

    #[test]
    fn offset_and_epoch_rewrites_keep_the_crc_valid() {
        let mut b = sample(2);
        set_base_offset(&mut b, 1234);
        set_partition_leader_epoch(&mut b, 7);
        let h = validate(&b, CountRule::Exact).unwrap();
        assert_eq!(h.base_offset, 1234);
        assert_eq!(h.partition_leader_epoch, 7);
        assert_eq!(h.last_offset(), 1235);
    }

    #[test]
    fn log_append_time_recomputes_the_crc() {
        let mut b = sample(2);
        set_log_append_time(&mut b, 99_999);
        let h = validate(&b, CountRule::Exact).unwrap();
        assert!(h.is_log_append_time());
        assert_eq!(h.max_timestamp, 99_999);
    }

    #[test]
    fn flipped_record_byte_fails_the_crc() {
        let mut b = sample(2);
        let last = b.len() - 1;
        b[last] ^= 0x40;
        assert!(matches!(
            validate(&b, CountRule::Exact),
            Err(BatchError::CrcMismatch { .. })
        ));
    }

    #[test]
    fn old_magic_is_rejected_with_a_typed_error() {
        for magic in [0u8, 1] {
            let mut b = sample(1);
            b[MAGIC_AT] = magic;
            assert_eq!(
                validate(&b, CountRule::Exact),
                Err(BatchError::UnsupportedMagic { magic: magic as i8 })
            );
        }
    }

    #[test]
    fn truncated_and_undersized_batches_are_rejected() {
        let b = sample(2);
        assert!(matches!(
            validate(&b[..b.len() - 1], CountRule::Exact),
            Err(BatchError::Truncated { .. })
        ));
        assert!(matches!(
            validate(&b[..10], CountRule::Exact),
            Err(BatchError::Truncated { .. })
        ));
        let mut small = b.clone();
        small[LENGTH_AT..LENGTH_AT + 4].copy_from_slice(&10i32.to_be_bytes());
        assert!(matches!(
            validate(&small, CountRule::Exact),
            Err(BatchError::LengthTooSmall { .. })
        ));
        let mut negative = b;
        negative[LENGTH_AT..LENGTH_AT + 4].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(validate(&negative, CountRule::Exact).is_err());
    }

    #[test]
    fn count_must_match_offset_delta_for_fresh_batches() {
        let mut b = sample(3);
        b[RECORD_COUNT_AT..RECORD_COUNT_AT + 4].copy_from_slice(&2i32.to_be_bytes());
        let crc = compute_crc(&b);
        b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            validate(&b, CountRule::Exact),
            Err(BatchError::InconsistentCount { .. })
        ));
        // A compacted batch may hold fewer records than its offset range.
        assert!(validate(&b, CountRule::Compacted).is_ok());
    }

    #[test]
    fn iterator_reports_position_of_first_bad_batch() {
        let mut all = sample(1);
        let second = sample(2);
        let at = all.len();
        all.extend_from_slice(&second);
        all.extend_from_slice(&[0u8; 30]);
        let items: Vec<_> = BatchIter::new(&all, CountRule::Compacted).collect();
        assert_eq!(items.len(), 3);
        assert_eq!(items[1].as_ref().unwrap().0, at);
        assert_eq!(items[2].as_ref().unwrap_err().0, at + second.len());
    }

    #[test]
    fn finds_first_record_at_timestamp() {
        let b = sample(5); // timestamps 1000..=1004
        assert_eq!(first_offset_at_or_after(&b, 1_003), Some((3, 1_003)));
        assert_eq!(first_offset_at_or_after(&b, 0), Some((0, 1_000)));
        assert_eq!(first_offset_at_or_after(&b, 2_000), None);
    }

    /// A fuzz finding (fuzz/regressions/record_batch): a negative last offset
    /// delta from a damaged segment must not panic the timestamp lookup.
    #[test]
    fn negative_offset_delta_never_panics_timestamp_lookup() {
        let bytes: [u8; 76] = [
            0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 64, 255, 255, 255, 255, 2, 219, 94, 156, 221, 0, 0,
            244, 255, 255, 255, 0, 0, 1, 139, 207, 229, 104, 0, 0, 0, 1, 139, 207, 229, 104, 0,
            255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 0, 137, 79, 104,
            0, 0, 0, 1, 139, 207, 229, 104, 1, 255, 255, 255, 255, 255, 0,
        ];
        assert_eq!(first_offset_at_or_after(&bytes, 0), None);
        let _ = validate(&bytes, CountRule::Compacted);
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut seed = 0x9e3779b97f4a7c15u64;
        for len in 0..400 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed as u8
                })
                .collect();
            let _ = validate(&bytes, CountRule::Compacted);
            let _ = first_offset_at_or_after(&bytes, 0);
            let _ = BatchIter::new(&bytes, CountRule::Exact).count();
        }
    }
}
