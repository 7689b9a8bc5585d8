//! Building and reading RecordBatch v2.
//!
//! The producer builds batches record by record straight into one reused
//! buffer, in exactly the layout of pinlog's
//! `pinlog::log::batch::build_batch` (a unit test checks byte equality),
//! using pinlog's header constants and CRC. `build_batch` itself takes the
//! whole record list up front and allocates per record, which would cost
//! the producer more CPU than the broker spends storing the batch; on a
//! two-core machine the client's CPU is the broker's CPU.
//!
//! The consumer validates every fetched batch with pinlog's
//! `validate` (length, magic, CRC-32C, counts), decompresses it if needed,
//! and walks the records with pinlog's `records` iterator.

use bytes::{BufMut, Bytes, BytesMut};
use pinlog::constants::{LOG_OVERHEAD, RECORD_BATCH_HEADER_SIZE, RECORD_BATCH_MAGIC_V2};
use pinlog::log::batch::{self as pbatch, BatchHeader, CountRule};

use crate::compression::{self, Compression, Compressor};
use crate::constants::DECOMPRESSED_BATCH_MAX_BYTES;

/// Offset of the CRC and of the attributes in a batch (Kafka's layout; see
/// `pinlog::log::batch`).
const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
/// Producers send no leader epoch, producer id, epoch or sequence.
const NO_PARTITION_LEADER_EPOCH: i32 = -1;
const NO_PRODUCER_ID: i64 = -1;
const NO_PRODUCER_EPOCH: i16 = -1;
const NO_SEQUENCE: i32 = -1;

/// Bytes of a zig-zag varint.
fn varint_len(v: i64) -> usize {
    let z = ((v << 1) ^ (v >> 63)) as u64;
    (64 - z.max(1).leading_zeros() as usize).div_ceil(7)
}

fn put_varint(out: &mut BytesMut, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.put_u8((z as u8) | 0x80);
        z >>= 7;
    }
    out.put_u8(z as u8);
}

/// Bytes one record takes in a batch, length prefix included.
pub fn record_size(
    ts_delta: i64,
    offset_delta: i64,
    key_len: Option<usize>,
    value_len: usize,
) -> usize {
    let body = body_size(ts_delta, offset_delta, key_len, value_len);
    varint_len(body as i64) + body
}

fn body_size(ts_delta: i64, offset_delta: i64, key_len: Option<usize>, value_len: usize) -> usize {
    1 // attributes
        + varint_len(ts_delta)
        + varint_len(offset_delta)
        + key_len.map_or(varint_len(-1), |k| varint_len(k as i64) + k)
        + varint_len(value_len as i64)
        + value_len
        + 1 // header count (0)
}

/// One batch under construction. The records go straight after a
/// placeholder header; `finish` fills in the header (and compresses).
pub struct BatchBuilder {
    buf: BytesMut,
    /// Output of compression, reused.
    zbuf: BytesMut,
    count: i32,
    base_timestamp: i64,
    max_timestamp: i64,
}

impl BatchBuilder {
    pub fn new(capacity: usize) -> BatchBuilder {
        let mut b = BatchBuilder {
            buf: BytesMut::with_capacity(capacity + RECORD_BATCH_HEADER_SIZE),
            zbuf: BytesMut::new(),
            count: 0,
            base_timestamp: 0,
            max_timestamp: 0,
        };
        b.reset();
        b
    }

    fn reset(&mut self) {
        self.buf.clear();
        self.buf.put_bytes(0, RECORD_BATCH_HEADER_SIZE);
        self.count = 0;
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn count(&self) -> i32 {
        self.count
    }

    /// Bytes of the batch so far, uncompressed.
    #[cfg(test)]
    pub fn size_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Bytes the batch would have after appending a record at `timestamp`.
    pub fn size_with(&self, timestamp: i64, key_len: Option<usize>, value_len: usize) -> usize {
        let ts_delta = if self.count == 0 {
            0
        } else {
            timestamp - self.base_timestamp
        };
        self.buf.len() + record_size(ts_delta, self.count as i64, key_len, value_len)
    }

    /// Appends a record whose value is `value_head` followed by
    /// `value_tail` (the stamp and the payload, without joining them first).
    pub fn append(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value_head: &[u8],
        value_tail: &[u8],
    ) {
        if self.count == 0 {
            self.base_timestamp = timestamp;
            self.max_timestamp = timestamp;
        }
        let ts_delta = timestamp - self.base_timestamp;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        let offset_delta = self.count as i64;
        let value_len = value_head.len() + value_tail.len();
        let body = body_size(ts_delta, offset_delta, key.map(<[u8]>::len), value_len);
        self.buf.reserve(varint_len(body as i64) + body);
        put_varint(&mut self.buf, body as i64);
        self.buf.put_u8(0); // attributes
        put_varint(&mut self.buf, ts_delta);
        put_varint(&mut self.buf, offset_delta);
        match key {
            Some(k) => {
                put_varint(&mut self.buf, k.len() as i64);
                self.buf.put_slice(k);
            }
            None => put_varint(&mut self.buf, -1),
        }
        put_varint(&mut self.buf, value_len as i64);
        self.buf.put_slice(value_head);
        self.buf.put_slice(value_tail);
        put_varint(&mut self.buf, 0); // headers
        self.count += 1;
    }

    /// Completes the batch (compressing the records with `compressor`, if
    /// any) and returns its bytes; the builder is empty again afterwards.
    /// The returned `Bytes` shares the builder's buffer, which is reclaimed
    /// for the next batch once the caller drops it.
    pub fn finish(&mut self, compressor: Option<&mut Compressor>) -> std::io::Result<Bytes> {
        assert!(self.count > 0, "finish() on an empty batch");
        let codec = compressor.as_ref().map_or(Compression::None, |c| c.kind());
        let out = if codec == Compression::None {
            &mut self.buf
        } else {
            let c = compressor.expect("a compressor for a compressed batch");
            self.zbuf.clear();
            self.zbuf
                .reserve(RECORD_BATCH_HEADER_SIZE + self.buf.len() / 2);
            self.zbuf.put_slice(&[0; RECORD_BATCH_HEADER_SIZE]);
            c.compress(&self.buf[RECORD_BATCH_HEADER_SIZE..], &mut self.zbuf)?;
            &mut self.zbuf
        };
        write_header(
            out,
            codec,
            self.count,
            self.base_timestamp,
            self.max_timestamp,
        );
        let bytes = out.split().freeze();
        self.reset();
        Ok(bytes)
    }
}

/// Fills the 61-byte header at the front of `batch` and its CRC.
fn write_header(batch: &mut [u8], codec: Compression, count: i32, base_ts: i64, max_ts: i64) {
    let length = (batch.len() - LOG_OVERHEAD) as i32;
    let mut h = &mut batch[..RECORD_BATCH_HEADER_SIZE];
    h.put_i64(0); // base offset: the broker assigns it
    h.put_i32(length);
    h.put_i32(NO_PARTITION_LEADER_EPOCH);
    h.put_i8(RECORD_BATCH_MAGIC_V2);
    h.put_u32(0); // CRC, below
    h.put_i16(codec.id() as i16);
    h.put_i32(count - 1);
    h.put_i64(base_ts);
    h.put_i64(max_ts);
    h.put_i64(NO_PRODUCER_ID);
    h.put_i16(NO_PRODUCER_EPOCH);
    h.put_i32(NO_SEQUENCE);
    h.put_i32(count);
    debug_assert!(h.is_empty());
    let crc = pbatch::compute_crc(batch);
    batch[CRC_AT..ATTRIBUTES_AT].copy_from_slice(&crc.to_be_bytes());
}

/// What a consumer learns from one fetched records section.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Consumed {
    /// Offset to fetch next: past the last whole batch.
    pub next_offset: Option<i64>,
    pub batches: u64,
    /// Wire bytes of the whole batches.
    pub batch_bytes: u64,
}

/// Walks the whole batches in `records` (a fetched records section, whose
/// last batch may be cut short by the fetch size), validating each (the
/// CRC too when `check_crc`) and
/// handing every record at or after `from_offset` to `on_record(offset,
/// value)`. A batch
/// that fails validation or decoding is an error: the consumer reports it.
pub fn read_batches(
    records: &[u8],
    from_offset: i64,
    check_crc: bool,
    scratch: &mut Vec<u8>,
    mut on_record: impl FnMut(i64, &[u8]),
) -> Result<Consumed, String> {
    let mut out = Consumed::default();
    let mut at = 0;
    while at < records.len() {
        let rest = &records[at..];
        // A batch cut short by the fetch size ends the section, as in Kafka.
        let header = match pbatch::parse_header(rest) {
            Ok(h) => h,
            Err(pinlog::error::BatchError::Truncated { .. }) => break,
            Err(e) => return Err(format!("batch at byte {at}: {e}")),
        };
        let batch = &rest[..header.size_bytes()];
        if check_crc {
            pbatch::validate(batch, CountRule::Compacted)
                .map_err(|e| format!("batch at offset {}: {e}", header.base_offset))?;
        }
        if !header.is_control() && header.last_offset() >= from_offset {
            walk_records(batch, &header, from_offset, scratch, &mut on_record)?;
        }
        out.next_offset = Some(header.next_offset());
        out.batches += 1;
        out.batch_bytes += batch.len() as u64;
        at += batch.len();
    }
    Ok(out)
}

fn walk_records(
    batch: &[u8],
    header: &BatchHeader,
    from_offset: i64,
    scratch: &mut Vec<u8>,
    on_record: &mut impl FnMut(i64, &[u8]),
) -> Result<(), String> {
    let plain: &[u8] = if header.compression() == 0 {
        batch
    } else {
        // Rebuild an uncompressed batch (header with the codec bits and
        // length rewritten, then the records) so that pinlog's record
        // iterator can walk it. Its CRC is stale, which `records` does not
        // check.
        scratch.clear();
        scratch.extend_from_slice(&batch[..RECORD_BATCH_HEADER_SIZE]);
        compression::decompress(
            header.compression(),
            &batch[RECORD_BATCH_HEADER_SIZE..],
            scratch,
            DECOMPRESSED_BATCH_MAX_BYTES,
        )
        .map_err(|e| format!("batch at offset {}: {e}", header.base_offset))?;
        let length = (scratch.len() - LOG_OVERHEAD) as i32;
        scratch[8..12].copy_from_slice(&length.to_be_bytes());
        let attributes = header.attributes & !0x07;
        scratch[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
        scratch
    };
    let iter = pbatch::records(plain)
        .map_err(|e| format!("batch at offset {}: {e}", header.base_offset))?;
    for r in iter {
        let r = r.map_err(|e| format!("batch at offset {}: {e}", header.base_offset))?;
        let offset = header.base_offset + r.offset_delta;
        if offset >= from_offset {
            on_record(offset, r.value.unwrap_or(&[]));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinlog::log::batch::{build_batch, BatchSpec, RecordSpec};

    #[test]
    fn varint_lengths() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            -65,
            8191,
            8192,
            1 << 40,
            i64::MAX,
            i64::MIN,
        ] {
            let mut b = BytesMut::new();
            put_varint(&mut b, v);
            assert_eq!(varint_len(v), b.len(), "{v}");
        }
    }

    #[test]
    fn uncompressed_batches_match_pinlogs_build_batch_byte_for_byte() {
        let value: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        let keys = [Some(&b"k-0001"[..]), None, Some(&b""[..]), None];
        let base_ts = 1_700_000_000_000;
        let specs: Vec<RecordSpec> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| ((i * 7) as i64, *k, &value[..]))
            .collect();
        let expected = build_batch(&BatchSpec {
            base_offset: 0,
            leader_epoch: NO_PARTITION_LEADER_EPOCH,
            base_timestamp: base_ts,
            records: &specs,
        });
        let mut b = BatchBuilder::new(4096);
        for (ts_delta, key, v) in &specs {
            let predicted = b.size_with(base_ts + ts_delta, key.map(<[u8]>::len), v.len());
            b.append(base_ts + ts_delta, *key, &v[..10], &v[10..]);
            assert_eq!(b.size_bytes(), predicted);
        }
        let got = b.finish(None).unwrap();
        assert_eq!(&got[..], &expected[..]);
        pbatch::validate(&got, CountRule::Exact).unwrap();
    }

    #[test]
    fn compressed_batches_validate_and_read_back() {
        for kind in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let mut c = Compressor::new(kind).unwrap();
            let mut b = BatchBuilder::new(64 * 1024);
            let payload = vec![b'x'; 1000];
            // Two batches from the same builder: the buffer is reused.
            let mut section = BytesMut::new();
            for batch_no in 0..2i64 {
                for i in 0..50i64 {
                    let stamp = (batch_no * 50 + i).to_be_bytes();
                    b.append(1000 + i, Some(b"key"), &stamp, &payload);
                }
                let mut bytes = b.finish(Some(&mut c)).unwrap().to_vec();
                let h = pbatch::validate(&bytes, CountRule::Exact).unwrap();
                assert_eq!(h.compression(), kind.id());
                assert_eq!(h.record_count, 50);
                assert!(bytes.len() < 50 * 1000, "{kind:?} compressed");
                // As a broker would store it: offsets assigned in place.
                pbatch::set_base_offset(&mut bytes, batch_no * 50);
                section.extend_from_slice(&bytes);
            }
            // Read from offset 30, with a cut-short third batch at the end.
            section.extend_from_slice(&section.clone()[..40]);
            let mut seen = Vec::new();
            let mut scratch = Vec::new();
            let got = read_batches(&section, 30, true, &mut scratch, |offset, value| {
                let stamp = i64::from_be_bytes(value[..8].try_into().unwrap());
                assert_eq!(stamp, offset, "{kind:?}");
                assert_eq!(value.len(), 1008);
                seen.push(offset);
            })
            .unwrap();
            assert_eq!(seen, (30..100).collect::<Vec<_>>(), "{kind:?}");
            assert_eq!(got.next_offset, Some(100));
            assert_eq!(got.batches, 2);
        }
    }

    #[test]
    fn corrupt_batches_are_reported() {
        let mut b = BatchBuilder::new(1024);
        b.append(1, None, b"hello", b"");
        let mut bytes = b.finish(None).unwrap().to_vec();
        let last = bytes.len() - 2;
        bytes[last] ^= 0xff;
        let err = read_batches(&bytes, 0, true, &mut Vec::new(), |_, _| {}).unwrap_err();
        assert!(err.contains("CRC") || err.contains("crc"), "{err}");
        // Without the check, the (still well-formed) batch reads.
        let mut n = 0;
        read_batches(&bytes, 0, false, &mut Vec::new(), |_, _| n += 1).unwrap();
        assert_eq!(n, 1);
    }
}
