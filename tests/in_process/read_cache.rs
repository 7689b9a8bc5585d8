//! The read cache never serves bytes that the log no longer holds.
//!
//! Each case fills the cache with the whole log, appends and reads through
//! it (disk reads that fill it), then changes the log the way truncation,
//! retention, DeleteRecords and compaction do, and reads every offset
//! again. The model is the log's files, read without the cache: every read
//! must start with the batch that holds its offset (or the next one, where
//! compaction left a gap) and go on with the batches that follow it in the
//! files, byte for byte. A cache that kept a removed batch, or joined two
//! batches with one missing between them, fails.

use std::path::Path;

use crate::common::{producer_batch, run, SeededRng};
use bytes::{Bytes, BytesMut};
use glommio::sync::RwLock;
use pinlog::config::{CleanupPolicy, LogConfig};
use pinlog::constants::{READ_CACHE_BLOCKS_MIN_CAPACITY_BLOCKS, READ_CACHE_BLOCK_BYTES};
use pinlog::error::LogError;
use pinlog::log::batch::{build_keyed_batch, BatchIter, CountRule, KeyedRecordSpec};
use pinlog::log::batch_cache::{BatchCache, SharedBatchCache};
use pinlog::log::cache_blocks::CacheCopy;
use pinlog::log::cleaner::{self, CleanOutcome, CleanerOptions};
use pinlog::log::partition_log::{OpenParams, PartitionLog};
use pinlog::log::read_through;
use pinlog::topic_partition::TopicPartition;

const NOW_MS: i64 = 1_700_000_000_000;
/// Large enough for the whole log, so that nothing is evicted and every
/// stale batch would still be there to be served, and for the cache to
/// copy into its blocks (`READ_CACHE_BLOCKS_MIN_CAPACITY_BLOCKS`), which
/// changes reuse after batches are dropped.
const CACHE_BYTES: usize = 64 << 20;
const _: () =
    assert!(CACHE_BYTES >= READ_CACHE_BLOCKS_MIN_CAPACITY_BLOCKS * READ_CACHE_BLOCK_BYTES);

fn config(compact: bool) -> LogConfig {
    LogConfig {
        segment_bytes: 8 * 1024,
        index_interval_bytes: 512,
        segment_index_bytes: 4096,
        cleanup_policy: if compact {
            CleanupPolicy::COMPACT
        } else {
            CleanupPolicy::DELETE
        },
        delete_retention_ms: 0,
        ..LogConfig::default()
    }
}

async fn open(dir: &Path, compact: bool, cache: SharedBatchCache) -> PartitionLog {
    let params = OpenParams {
        recovery_point: 0,
        log_start_offset: 0,
        clean_shutdown: true,
        now_ms: NOW_MS,
    };
    let tp = TopicPartition::new("cached", 0);
    let mut log = PartitionLog::open(dir, tp, config(compact), params, Some(cache))
        .await
        .unwrap();
    let leo = log.log_end_offset();
    log.set_high_watermark(leo);
    log
}

/// A batch whose values carry `tag`, so that bytes written after a change
/// differ from the bytes they replace at the same offsets.
fn tagged_batch(rng: &mut SeededRng, tag: u8) -> BytesMut {
    let records = rng.between(1, 6) as usize;
    let mut b = producer_batch(records, rng.between(10, 300) as usize, NOW_MS);
    // The last value byte: inside the CRC, so the batch is rebuilt below.
    let len = b.len();
    b[len - 1] = tag;
    let n = b.len();
    let crc = crc32c::crc32c(&b[21..n]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

/// A keyed batch of `count` records over a few keys.
fn keyed_batch(rng: &mut SeededRng, count: usize) -> BytesMut {
    let keys: Vec<String> = (0..count)
        .map(|_| format!("key-{}", rng.below(8)))
        .collect();
    let values: Vec<String> = (0..count)
        .map(|_| format!("value-{}", rng.next_u64()))
        .collect();
    let specs: Vec<KeyedRecordSpec> = keys
        .iter()
        .zip(&values)
        .enumerate()
        .map(|(i, (k, v))| (i as i64, Some(k.as_bytes()), Some(v.as_bytes())))
        .collect();
    BytesMut::from(&build_keyed_batch(0, -1, NOW_MS, &specs)[..])
}

/// Appends as the produce path does: the leader's copy is the cache's.
async fn append(log: &mut PartitionLog, batch: BytesMut) {
    let copy = log.copy_for_append(&batch);
    log.append_as_leader(copy, 0, None, NOW_MS).await.unwrap();
    let leo = log.log_end_offset();
    log.set_high_watermark(leo);
}

/// Appends as a follower does: one to three batches tagged `tag`, given
/// their offsets from the log end on, arrive in one fetch response that was
/// read into the cache's blocks (`BatchCache::frame_piece`), as the replica
/// fetcher reads it.
async fn append_fetched(
    log: &mut PartitionLog,
    cache: &SharedBatchCache,
    rng: &mut SeededRng,
    tag: u8,
) {
    let mut next = log.log_end_offset();
    let mut frame = Vec::new();
    for _ in 0..rng.between(1, 4) {
        let mut b = tagged_batch(rng, tag);
        // The base offset is outside the CRC; the last offset delta follows
        // the attributes.
        b[0..8].copy_from_slice(&next.to_be_bytes());
        next += i32::from_be_bytes(b[23..27].try_into().unwrap()) as i64 + 1;
        frame.extend_from_slice(&b);
    }
    let mut piece = cache
        .borrow_mut()
        .frame_piece(frame.len())
        .expect("the cache uses blocks");
    piece.writable(0, frame.len()).copy_from_slice(&frame);
    let (bytes, backing) = CacheCopy::Block(piece).freeze();
    log.append_fetched(bytes, backing, NOW_MS).await.unwrap();
    let leo = log.log_end_offset();
    log.set_high_watermark(leo);
}

/// Reads from `offset` through the cache, as the fetch path does: a miss is
/// read from the file and fills the cache. Returns the bytes and whether
/// the cache served them.
async fn read(log: &mut PartitionLog, offset: i64) -> Result<(Bytes, bool), LogError> {
    let leo = log.log_end_offset();
    let r = log.read(offset, 1 << 20, leo, true).await?;
    let from_cache = r.from_cache;
    let parts = read_through::into_memory(r).await?;
    Ok((Bytes::from(parts.concat()), from_cache))
}

/// The batches in the files: (base offset, last offset, bytes).
async fn files(log: &mut PartitionLog) -> Vec<(i64, i64, Bytes)> {
    let all = Bytes::from(log.read_all().await.unwrap());
    BatchIter::new(&all, CountRule::Compacted)
        .map(|r| {
            let (at, h) = r.expect("valid batch");
            (
                h.base_offset,
                h.last_offset(),
                all.slice(at..at + h.size_bytes()),
            )
        })
        .collect()
}

/// Reads every offset of the log (twice: the second read must hit the
/// cache) and checks each against the files.
async fn check_every_offset(log: &mut PartitionLog, ctx: &str) {
    let model = files(log).await;
    let start = log.log_start_offset();
    let leo = log.log_end_offset();
    for offset in start..leo {
        let Some(first) = model.iter().position(|(_, last, _)| *last >= offset) else {
            panic!("{ctx}: offset {offset} is below the LEO {leo} but in no batch");
        };
        let expected: Vec<u8> = model[first..]
            .iter()
            .flat_map(|(_, _, b)| b.iter().copied())
            .collect();
        for pass in 0..2 {
            let (got, from_cache) = read(log, offset)
                .await
                .unwrap_or_else(|e| panic!("{ctx}: read({offset}): {e}"));
            let what = format!("{ctx}: read({offset}) pass {pass} (from cache: {from_cache})");
            assert!(
                got.len() >= model[first].2.len(),
                "{what}: {} bytes, less than the batch at {}",
                got.len(),
                model[first].0
            );
            assert!(
                got[..] == expected[..got.len()],
                "{what}: bytes differ from the files from offset {}",
                model[first].0
            );
            if pass == 1 {
                let in_gap = offset < model[first].0;
                assert!(
                    from_cache || in_gap,
                    "{what}: a re-read must be served from memory"
                );
            }
        }
    }
    // Below the log start, nothing is served, cached or not.
    if start > 0 {
        assert!(
            matches!(
                read(log, start - 1).await,
                Err(LogError::OffsetOutOfRange { .. })
            ),
            "{ctx}: read below the log start {start}"
        );
    }
}

/// Appends `batches` tagged batches to a new log and closes it, so that the
/// next open starts with an empty cache.
async fn write_closed_log(dir: &Path, rng: &mut SeededRng, batches: usize) {
    let mut log = open(dir, false, BatchCache::shared(CACHE_BYTES)).await;
    for _ in 0..batches {
        append(&mut log, tagged_batch(rng, 1)).await;
    }
    log.close().await.unwrap();
}

/// A log of `batches` appended, closed and reopened with an empty cache, so
/// that reads go to the files and fill the cache.
async fn filled_log(
    dir: &Path,
    rng: &mut SeededRng,
    compact: bool,
    batches: usize,
) -> (PartitionLog, SharedBatchCache) {
    let mut log = open(dir, compact, BatchCache::shared(CACHE_BYTES)).await;
    for _ in 0..batches {
        let b = if compact {
            let n = rng.between(1, 5) as usize;
            keyed_batch(rng, n)
        } else {
            tagged_batch(rng, 1)
        };
        append(&mut log, b).await;
    }
    log.close().await.unwrap();
    let cache = BatchCache::shared(CACHE_BYTES);
    let mut log = open(dir, compact, cache.clone()).await;
    assert!(log.segment_count() > 3, "the case needs several segments");
    check_every_offset(&mut log, "before the change").await;
    let stats = cache.borrow().stats();
    assert!(stats.filled_bytes > 0, "reads filled the cache: {stats:?}");
    (log, cache)
}

#[test]
fn truncation_then_new_appends_replace_cached_batches() {
    for seed in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        run(move || async move {
            let rng = &mut SeededRng(seed);
            let (mut log, cache) = filled_log(&path, rng, false, 120).await;
            let leo = log.log_end_offset();
            let to = rng.between(1, leo as u64 - 1) as i64;
            log.truncate_to(to, NOW_MS).await.unwrap();
            // Other bytes at the same offsets: a stale cache would serve the
            // old ones.
            for _ in 0..30 {
                let b = tagged_batch(rng, 2);
                append(&mut log, b).await;
            }
            let stats = cache.borrow().stats();
            assert!(
                stats.blocks_mapped > 0,
                "the new appends were copied into the cache's blocks: {stats:?}"
            );
            check_every_offset(&mut log, &format!("seed {seed}: truncated to {to}")).await;
        });
    }
}

/// A follower's fetched batches sit in blocks shared by several responses;
/// truncating to the leader's divergence point must drop them, and the
/// leader's other bytes at the same offsets must be what is served.
#[test]
fn a_followers_fetched_batches_are_replaced_after_truncation() {
    for seed in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        run(move || async move {
            let rng = &mut SeededRng(seed);
            let cache = BatchCache::shared(CACHE_BYTES);
            let mut log = open(&path, false, cache.clone()).await;
            for _ in 0..40 {
                append_fetched(&mut log, &cache, rng, 1).await;
            }
            let stats = cache.borrow().stats();
            assert_eq!(
                stats.blocks_mapped, 1,
                "the responses share a block: {stats:?}"
            );
            check_every_offset(&mut log, &format!("seed {seed}: fetched")).await;
            let leo = log.log_end_offset();
            let to = rng.between(1, leo as u64 - 1) as i64;
            log.truncate_to(to, NOW_MS).await.unwrap();
            for _ in 0..15 {
                append_fetched(&mut log, &cache, rng, 2).await;
            }
            check_every_offset(&mut log, &format!("seed {seed}: truncated to {to}")).await;
        });
    }
}

#[test]
fn a_read_through_that_races_a_truncation_caches_nothing_stale() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let rng = &mut SeededRng(7);
        write_closed_log(&path, rng, 120).await;
        // Small: the batches appended after the truncation are evicted
        // before the raced fill lands, so nothing else keeps it out.
        let cache = BatchCache::shared(16 * 1024);
        let mut log = open(&path, false, cache.clone()).await;
        let leo = log.log_end_offset();
        let from = *log.segment_base_offsets().last().unwrap();
        // The read is planned under the lock. Before its file range is
        // read, the log is truncated below that segment (whose file is
        // deleted, but still open for the read) and written again.
        let planned = log.read(from, 1 << 20, leo, true).await.unwrap();
        assert!(planned.fill.is_some(), "a miss carries a fill");
        log.truncate_to(leo / 4, NOW_MS).await.unwrap();
        while log.log_end_offset() < leo + 400 {
            append(&mut log, tagged_batch(rng, 2)).await;
        }
        let filled_before = cache.borrow().stats().filled_bytes;
        let old_bytes = read_through::into_memory(planned).await.unwrap();
        assert!(
            !old_bytes.is_empty(),
            "the raced read returns the old bytes"
        );
        assert_eq!(
            cache.borrow().stats().filled_bytes,
            filled_before,
            "a fill planned before the truncation is dropped"
        );
        check_every_offset(&mut log, "after the raced fill").await;
    });
}

#[test]
fn retention_and_delete_records_drop_cached_batches_below_the_log_start() {
    for seed in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        run(move || async move {
            let rng = &mut SeededRng(100 + seed);
            let (mut log, cache) = filled_log(&path, rng, false, 120).await;
            let before = cache.borrow().used_bytes();
            // Retention by size: keep about half of the log.
            let mut config = log.config().clone();
            config.retention_bytes = (log.size_bytes() / 2) as i64;
            log.set_config(config);
            let deleted = log.apply_retention(NOW_MS).await.unwrap();
            assert!(deleted > 0, "retention deleted segments");
            assert!(cache.borrow().used_bytes() < before);
            check_every_offset(&mut log, &format!("seed {seed}: after retention")).await;
            // DeleteRecords to an offset inside a batch and a segment.
            let start = log.log_start_offset();
            let to = rng.between(start as u64 + 1, log.log_end_offset() as u64 - 1) as i64;
            log.delete_records_before(to).await.unwrap();
            assert_eq!(log.log_start_offset(), to);
            check_every_offset(&mut log, &format!("seed {seed}: after DeleteRecords({to})")).await;
        });
    }
}

#[test]
fn compaction_swaps_out_the_cached_uncleaned_batches() {
    for seed in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        run(move || async move {
            let rng = &mut SeededRng(200 + seed);
            let (log, _cache) = filled_log(&path, rng, true, 150).await;
            let size_before = {
                let lock = RwLock::new(log);
                let options = CleanerOptions {
                    dedupe_buffer_bytes: 1 << 20,
                    io_buffer_bytes: 4096,
                    failpoint: None,
                };
                let size_before = lock.read().await.unwrap().size_bytes();
                let outcome = cleaner::clean_log(&lock, &options, NOW_MS + 1, &|| false)
                    .await
                    .unwrap();
                assert!(
                    matches!(outcome, CleanOutcome::Cleaned(_)),
                    "seed {seed}: expected a clean, got {outcome:?}"
                );
                let mut log = lock.into_inner().unwrap_or_else(|_| panic!("lock"));
                assert!(log.size_bytes() < size_before, "the clean removed records");
                check_every_offset(&mut log, &format!("seed {seed}: after compaction")).await;
                size_before
            };
            assert!(size_before > 0);
        });
    }
}

/// A read that misses the cache reads on past the fetch's byte limit (here
/// to the segment's written end, which is under `READ_AHEAD_BYTES`), returns
/// only the whole batches within the limit, and caches the rest: the fetch
/// that follows finds its batches in memory, the one the limit cut too.
#[test]
fn a_miss_reads_ahead_and_the_next_fetch_hits_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        write_closed_log(&path, &mut SeededRng(7), 60).await;
        let cache = BatchCache::shared(CACHE_BYTES);
        let mut log = open(&path, false, cache.clone()).await;
        let model = files(&mut log).await;
        let leo = log.log_end_offset();

        // The limit cuts the second batch in two.
        let limit = model[0].2.len() + model[1].2.len() / 2;
        let r = log.read(0, limit, leo, true).await.unwrap();
        assert!(!r.from_cache);
        let got = read_through::into_memory(r).await.unwrap().concat();
        assert_eq!(got, model[0].2, "only the whole batch within the limit");
        let stats = cache.borrow().stats();
        assert!(
            stats.filled_bytes as usize > limit,
            "read on past the limit: {stats:?}"
        );

        let (got, from_cache) = read(&mut log, model[1].0).await.unwrap();
        assert!(from_cache, "the next fetch is served from memory");
        let expected: Vec<u8> = model[1..]
            .iter()
            .flat_map(|(_, _, b)| b.iter().copied())
            .collect();
        assert!(got.len() >= model[1].2.len());
        assert_eq!(got[..], expected[..got.len()]);
        assert_eq!(cache.borrow().stats().misses, 1, "one disk read in all");
    });
}

/// A partition deleted while a request still holds its log, and a log
/// dropped without a close (as one an I/O error took offline), give their
/// room in the read cache back: the first at once, the second when the
/// last holder lets go.
#[test]
fn a_deleted_or_dropped_log_gives_its_cache_room_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let cache = BatchCache::shared(CACHE_BYTES);
        let mut rng = SeededRng(7);
        let mut log = open(&path.join("a"), false, cache.clone()).await;
        for tag in 0..10 {
            append(&mut log, tagged_batch(&mut rng, tag)).await;
        }
        assert!(cache.borrow().used_bytes() > 0);
        log.mark_deleted();
        assert_eq!(cache.borrow().used_bytes(), 0, "deleted: freed at once");
        drop(log);

        let mut log = open(&path.join("b"), false, cache.clone()).await;
        for tag in 0..10 {
            append(&mut log, tagged_batch(&mut rng, tag)).await;
        }
        assert!(cache.borrow().used_bytes() > 0);
        drop(log);
        assert_eq!(cache.borrow().used_bytes(), 0, "dropped: freed");
    });
}
