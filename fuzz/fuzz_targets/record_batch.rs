//! Fuzzes RecordBatch v2 handling in `src/log/batch.rs` on arbitrary bytes:
//! `validate`, `BatchIter`, `records()` and `first_offset_at_or_after`, the
//! functions that read producer-supplied batch bytes (Produce) and on-disk
//! bytes (recovery, log dump/verify, ListOffsets by timestamp).
//!
//! A CRC-32C gates everything after the header in `validate`, and random
//! bytes almost never carry a correct one, so the input is run twice: once
//! as it is, and once with the CRC of every batch whose header parses
//! rewritten to match, so that the count checks and the walk from batch to
//! batch are reached too. `records()` and `first_offset_at_or_after` do not
//! check the CRC and see the raw bytes either way.
//!
//! Properties checked, beyond "no panic": what `BatchIter` accepts, `validate`
//! accepts at the same position with the same header; accepted batches fit
//! the input and tile it without gaps; the record walk yields at most the
//! header's record count.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pinlog::log::batch::{
    compute_crc, first_offset_at_or_after, parse_header, parse_header_only, peek_offset_and_size,
    records, validate, BatchIter, CountRule,
};

/// Where the CRC sits in a batch header (see the layout in batch.rs).
const CRC_AT: usize = 17;

/// Rewrites the CRC of each batch laid end to end in `bytes` whose header
/// parses and fits, stopping at the first that does not.
fn fix_crcs(bytes: &mut [u8]) {
    let mut at = 0;
    while let Ok(h) = parse_header(&bytes[at..]) {
        let batch = &mut bytes[at..at + h.size_bytes()];
        let crc = compute_crc(batch);
        batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        at += h.size_bytes();
    }
}

fn exercise(bytes: &[u8]) {
    let _ = peek_offset_and_size(bytes);
    let _ = parse_header_only(bytes);
    for rule in [CountRule::Exact, CountRule::Compacted] {
        let first = validate(bytes, rule);
        let mut expected_at = 0;
        for (i, item) in BatchIter::new(bytes, rule).enumerate() {
            match item {
                Ok((at, h)) => {
                    assert_eq!(at, expected_at, "batches must tile the buffer");
                    let end = at + h.size_bytes();
                    assert!(end <= bytes.len(), "accepted batch runs past the input");
                    assert_eq!(validate(&bytes[at..], rule), Ok(h));
                    if i == 0 {
                        assert_eq!(first, Ok(h));
                    }
                    walk_records(&bytes[at..end]);
                    expected_at = end;
                }
                Err((at, e)) => {
                    assert_eq!(at, expected_at, "the error is reported where it starts");
                    if i == 0 {
                        assert_eq!(first, Err(e));
                    }
                }
            }
        }
    }
    // Unvalidated bytes, as a log dump of a corrupt file would hand them.
    walk_records(bytes);
}

/// Walks the records of the batch at the front of `batch` and looks up
/// timestamps in it, as ListOffsets does.
fn walk_records(batch: &[u8]) {
    if let Ok(iter) = records(batch) {
        let count = parse_header(batch)
            .expect("records() parsed it")
            .record_count;
        // A failing record is yielded once, in place of the rest.
        assert!(iter.count() as i64 <= count.max(0) as i64);
    }
    for target in [i64::MIN, 0, i64::MAX] {
        let _ = first_offset_at_or_after(batch, target);
    }
}

fuzz_target!(|data: &[u8]| {
    exercise(data);
    let mut fixed = data.to_vec();
    fix_crcs(&mut fixed);
    if fixed != data {
        exercise(&fixed);
    }
});
