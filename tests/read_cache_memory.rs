//! The read cache bounds the memory it really keeps alive, not just the
//! bytes of its batches (issue 34, "Cache accounting").
//!
//! A read-through reads 4 MiB ahead and caches the whole batches in that
//! buffer as slices of it. Here the log alternates small batches with
//! batches too large to end inside a read-ahead, so every read-through of a
//! small batch caches that batch alone out of a 4 MiB buffer, and the
//! large batches are larger than the whole cache, so nothing evicts the
//! small ones. Counted by batch bytes (50 KB in all), a sequential reader
//! kept every such buffer alive: 100 of them are 400 MiB under a 4 MiB
//! cap. The test reads the whole log in
//! order, as a consumer does, and checks after every read that the cache's
//! own count, and the process's resident memory, stay within the cap plus
//! a named slack.
//!
//! Then the same bound with a cache large enough for its own memory
//! blocks: a log of two and a half times the cache, appended through the
//! leader's copy and read back in order through read-aheads into blocks.
//!
//! It is the only test in this file, so no other test's memory is in the
//! process's resident set while it measures.

mod common;

use bytes::Bytes;
use common::{producer_batch, run};
use pinlog::config::LogConfig;
use pinlog::constants::{
    READ_CACHE_BLOCKS_MIN_CAPACITY_BLOCKS, READ_CACHE_BLOCK_BYTES, READ_CACHE_SPARE_BLOCKS,
};
use pinlog::log::batch_cache::{BatchCache, SharedBatchCache};
use pinlog::log::partition_log::{OpenParams, PartitionLog};
use pinlog::log::read_through;
use pinlog::topic_partition::TopicPartition;

const NOW_MS: i64 = 1_700_000_000_000;
const MIB: usize = 1024 * 1024;
/// The cache's budget: the read-ahead, and less than a large batch.
const CACHE_BYTES: usize = 4 * MIB;
/// Small batches, each read through a 4 MiB buffer of its own.
const SMALL_BATCHES: usize = 100;
/// A large batch is longer than the read-ahead, so that the read-ahead of
/// the small batch before it never holds it whole, and longer than the
/// cache, so that it is never cached and never evicts a small one.
const LARGE_VALUE_BYTES: usize = 5 * MIB;
/// What the process may grow by beyond the cap while reading: the read
/// in flight (its 4 MiB read-ahead, or one large batch and its copy), the
/// response the reader holds, and the allocator's free memory held for
/// reuse. The unbounded accounting grew by 400 MiB here.
const RSS_SLACK_BYTES: usize = 32 * MIB;
/// The second case's cache: large enough that it copies into blocks.
const BLOCK_CACHE_BYTES: usize = READ_CACHE_BLOCKS_MIN_CAPACITY_BLOCKS * READ_CACHE_BLOCK_BYTES;
/// Its log: 160 MiB of 256 KiB batches, two and a half times the cache.
const BLOCK_CASE_BATCHES: usize = 640;
const BLOCK_CASE_VALUE_BYTES: usize = 256 * 1024;
/// Freed blocks a shard keeps for reuse, outside the budget.
const SPARE_BYTES: usize = READ_CACHE_SPARE_BLOCKS * READ_CACHE_BLOCK_BYTES;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1 << 30,
        max_batch_bytes: 2 * LARGE_VALUE_BYTES,
        ..LogConfig::default()
    }
}

fn params() -> OpenParams {
    OpenParams {
        recovery_point: 0,
        log_start_offset: 0,
        clean_shutdown: true,
        now_ms: NOW_MS,
    }
}

async fn open(dir: &std::path::Path, cache: Option<SharedBatchCache>) -> PartitionLog {
    let tp = TopicPartition::new("memory", 0);
    let mut log = PartitionLog::open(dir, tp, config(), params(), cache)
        .await
        .unwrap();
    let leo = log.log_end_offset();
    log.set_high_watermark(leo);
    log
}

/// The process's resident memory, from `/proc/self/statm` (in pages).
fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    pages * page
}

#[test]
fn a_sequential_reader_keeps_the_cache_within_its_cap_in_real_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let blocks_dir = tempfile::tempdir().unwrap();
    let blocks_path = blocks_dir.path().to_path_buf();
    run(move || async move {
        // Written without a cache, so that every read goes to the disk.
        let mut log = open(&path, None).await;
        for _ in 0..SMALL_BATCHES {
            log.append_as_leader(producer_batch(1, 500, NOW_MS), 0, None, NOW_MS)
                .await
                .unwrap();
            let large = producer_batch(1, LARGE_VALUE_BYTES, NOW_MS);
            log.append_as_leader(large, 0, None, NOW_MS).await.unwrap();
        }
        log.flush().await.unwrap();
        log.close().await.unwrap();

        let cache = BatchCache::shared(CACHE_BYTES);
        let mut log = open(&path, Some(cache.clone())).await;
        let leo = log.log_end_offset();
        assert_eq!(leo, 2 * SMALL_BATCHES as i64);
        // The first read brings in glommio's I/O buffers; measure after it.
        let first = log.read(0, 1, leo, true).await.unwrap();
        drop(read_through::into_memory(first).await.unwrap());
        let baseline = resident_bytes();
        let mut peak = baseline;
        let mut read_bytes = 0usize;
        for offset in 1..leo {
            let r = log.read(offset, 1, leo, true).await.unwrap();
            let parts: Vec<Bytes> = read_through::into_memory(r).await.unwrap();
            read_bytes += parts.iter().map(|p| p.len()).sum::<usize>();
            drop(parts);
            let c = cache.borrow();
            assert!(
                c.used_bytes() <= CACHE_BYTES,
                "offset {offset}: the cache counts {} bytes",
                c.used_bytes()
            );
            peak = peak.max(resident_bytes());
        }
        assert!(
            read_bytes > SMALL_BATCHES * LARGE_VALUE_BYTES,
            "read it all"
        );
        let stats = cache.borrow().stats();
        let grown = peak.saturating_sub(baseline);
        eprintln!(
            "resident grew by {} MiB (cap {} MiB, slack {} MiB); cache: {stats:?}",
            grown / MIB,
            CACHE_BYTES / MIB,
            RSS_SLACK_BYTES / MIB
        );
        assert!(
            grown <= CACHE_BYTES + RSS_SLACK_BYTES,
            "resident memory grew by {grown} bytes"
        );
        // Each small batch was copied out of the buffer it was read in.
        assert!(stats.copied_bytes > 0);
        log.close().await.unwrap();

        // Again with a cache large enough for the cache's own blocks
        // (`log::cache_blocks`): the leader's copies and the read-aheads
        // fill 4 MiB blocks, each counted whole, and blocks freed by
        // eviction wait as spares outside the budget, a few at most.
        let cache = BatchCache::shared(BLOCK_CACHE_BYTES);
        let mut log = open(&blocks_path, Some(cache.clone())).await;
        for _ in 0..BLOCK_CASE_BATCHES {
            let batch = producer_batch(1, BLOCK_CASE_VALUE_BYTES, NOW_MS);
            let copy = log.copy_for_append(&batch);
            log.append_as_leader(copy, 0, None, NOW_MS).await.unwrap();
            assert!(cache.borrow().used_bytes() <= BLOCK_CACHE_BYTES);
        }
        assert!(
            cache.borrow().stats().blocks_mapped > 0,
            "appends used blocks"
        );
        log.flush().await.unwrap();
        log.close().await.unwrap();
        let cache = BatchCache::shared(BLOCK_CACHE_BYTES);
        let mut log = open(&blocks_path, Some(cache.clone())).await;
        let leo = log.log_end_offset();
        let first = log.read(0, 1, leo, true).await.unwrap();
        drop(read_through::into_memory(first).await.unwrap());
        let baseline = resident_bytes();
        let mut peak = baseline;
        for offset in 1..leo {
            let r = log.read(offset, 1, leo, true).await.unwrap();
            drop(read_through::into_memory(r).await.unwrap());
            assert!(cache.borrow().used_bytes() <= BLOCK_CACHE_BYTES);
            peak = peak.max(resident_bytes());
        }
        let stats = cache.borrow().stats();
        let grown = peak.saturating_sub(baseline);
        eprintln!(
            "with blocks: resident grew by {} MiB (cap {} MiB, spares and slack {} MiB); cache: {stats:?}",
            grown / MIB,
            BLOCK_CACHE_BYTES / MIB,
            (SPARE_BYTES + RSS_SLACK_BYTES) / MIB
        );
        assert!(stats.evictions > 0, "the log is larger than the cache");
        assert!(
            stats.blocks_reused > 0,
            "evicted blocks were read into again"
        );
        assert!(
            grown <= BLOCK_CACHE_BYTES + SPARE_BYTES + RSS_SLACK_BYTES,
            "resident memory grew by {grown} bytes with blocks"
        );
        log.close().await.unwrap();
    });
}
