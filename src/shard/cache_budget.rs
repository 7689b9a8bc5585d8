//! Each shard's watch over the machine's memory: every
//! `READ_CACHE_CHECK_INTERVAL_MS` it reads `/proc/meminfo`, the cgroup's
//! limits and the memory pressure (`memory::read_memory`), and sets its
//! read cache's budget to what `memory::cache_budget` decides from them. A
//! lower budget evicts at once, and the memory freed goes back to the
//! kernel (`malloc_trim`), so another process can have it. So does memory
//! the cache let go of for any other reason (a deleted topic, retention, a
//! truncation): the kernel drops a deleted file's page cache at once, and
//! an operator who deletes a large topic expects the same here.
//!
//! One glommio timer a shard, no spinning: a check is three small reads of
//! files the kernel answers from memory, and the decision. Each shard
//! decides for its own cache from its share of the free memory, so the
//! shards never wait on each other.

use std::time::Duration;

use crate::constants::{READ_CACHE_CHECK_INTERVAL_MS, READ_CACHE_GIVE_BACK_MIN_BYTES};
use crate::log::batch_cache::SharedBatchCache;
use crate::memory::{self, ShardCache};

/// Sets the budget once now and then every check interval, while
/// `keep_going` says so.
pub async fn watch(cache: SharedBatchCache, shards: usize, keep_going: impl Fn() -> bool) {
    let interval = Duration::from_millis(READ_CACHE_CHECK_INTERVAL_MS);
    let mut watch = BudgetWatch::default();
    while keep_going() {
        let outcome = watch.check(&cache, shards, &memory::read_memory());
        if outcome.give_back {
            give_back_freed_memory();
        }
        crate::ticks::sleep_to_next_tick(interval).await;
    }
}

/// What one check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckOutcome {
    /// The cache's budget from now on.
    pub budget_bytes: usize,
    /// The cache holds at least [`READ_CACHE_GIVE_BACK_MIN_BYTES`] less
    /// than at the last check (evicted for a lower budget, or let go of by
    /// a deletion, retention or truncation), so the allocator's free pages
    /// should go back to the kernel.
    pub give_back: bool,
}

/// A shard's watch between checks: the memory its cache held at the last
/// one, to notice what was let go of since.
#[derive(Debug, Default)]
pub struct BudgetWatch {
    used_at_last_check: usize,
}

impl BudgetWatch {
    /// One check against `reading`: sets the cache's budget, and says
    /// whether enough memory was let go of to give back.
    pub fn check(
        &mut self,
        cache: &SharedBatchCache,
        shards: usize,
        reading: &memory::MemoryReading,
    ) -> CheckOutcome {
        let budget_bytes = check(cache, shards, reading);
        let used = cache.borrow().used_bytes();
        let freed = self.used_at_last_check.saturating_sub(used);
        self.used_at_last_check = used;
        let give_back = freed >= READ_CACHE_GIVE_BACK_MIN_BYTES;
        if give_back {
            tracing::debug!(
                freed,
                used,
                budget_bytes,
                "the read cache let go of memory; giving it back to the kernel"
            );
        }
        CheckOutcome {
            budget_bytes,
            give_back,
        }
    }
}

/// One check against `reading`: sets and returns the cache's budget (a
/// lower one evicts at once).
pub fn check(cache: &SharedBatchCache, shards: usize, reading: &memory::MemoryReading) -> usize {
    let now = {
        let c = cache.borrow();
        ShardCache {
            used_bytes: c.used_bytes() as u64,
            budget_bytes: c.capacity_bytes() as u64,
            ceiling_bytes: c.ceiling_bytes() as u64,
            shards: shards as u64,
        }
    };
    let budget = usize::try_from(memory::cache_budget(reading, now)).unwrap_or(usize::MAX);
    if budget as u64 == now.budget_bytes {
        return budget;
    }
    let freed = {
        let mut c = cache.borrow_mut();
        let before = c.used_bytes();
        c.set_capacity(budget);
        before - c.used_bytes()
    };
    if freed > 0 {
        tracing::debug!(
            budget,
            freed,
            free = ?reading.free_bytes(),
            pressure = ?reading.pressure_some_avg10,
            "the read cache's budget fell; evicted"
        );
    }
    budget
}

/// Returns freed heap pages to the kernel. glibc keeps what the cache
/// freed for its own reuse (buffers of 4 MiB come from its arenas once one
/// was freed), where the kernel cannot give it to anyone else; then a
/// smaller cache would free nothing that another process could use.
/// `malloc_trim` releases every arena's free pages; it runs at most once a
/// check interval, and only after the cache let go of at least
/// [`READ_CACHE_GIVE_BACK_MIN_BYTES`].
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists, under
    // its locks; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch_cache::{BatchCache, CachedBatch};
    use crate::memory::MemoryReading;
    use bytes::Bytes;

    const MIB: u64 = 1024 * 1024;
    const GIB: u64 = 1024 * MIB;

    fn reading(available: u64, pressure: f64) -> MemoryReading {
        MemoryReading {
            mem_total_bytes: Some(24 * GIB),
            mem_available_bytes: Some(available),
            pressure_some_avg10: Some(pressure),
            ..MemoryReading::default()
        }
    }

    #[test]
    fn a_check_shrinks_the_cache_under_pressure_and_grows_it_back() {
        let cache = BatchCache::shared(512 * MIB as usize);
        let k = cache.borrow_mut().register();
        for i in 0..256 {
            let batch = CachedBatch::owned(i, i, Bytes::from(vec![1u8; MIB as usize]));
            cache.borrow_mut().insert(k, batch);
        }
        assert_eq!(cache.borrow().used_bytes(), 256 * MIB as usize);
        // Plenty free: the ceiling.
        assert_eq!(
            check(&cache, 1, &reading(20 * GIB, 0.0)),
            512 * MIB as usize
        );
        // Tasks stall on memory: an eighth goes back, and is evicted.
        assert_eq!(
            check(&cache, 1, &reading(20 * GIB, 50.0)),
            224 * MIB as usize
        );
        assert_eq!(cache.borrow().used_bytes(), 224 * MIB as usize);
        // The pressure is gone: back to the ceiling.
        assert_eq!(
            check(&cache, 1, &reading(20 * GIB, 0.0)),
            512 * MIB as usize
        );
        assert_eq!(cache.borrow().stats().ceiling_bytes, 512 * MIB);
    }

    /// A deleted topic's batches leave the cache without any change of
    /// budget; the next check still gives their memory back (a broker
    /// that deleted a 15 GiB topic kept all of it resident before).
    #[test]
    fn memory_the_cache_let_go_of_is_given_back_once() {
        let cache = BatchCache::shared(512 * MIB as usize);
        let k = cache.borrow_mut().register();
        for i in 0..128 {
            let batch = CachedBatch::owned(i, i, Bytes::from(vec![1u8; MIB as usize]));
            cache.borrow_mut().insert(k, batch);
        }
        let mut watch = BudgetWatch::default();
        let plenty = reading(20 * GIB, 0.0);
        // Filling is not letting go.
        assert!(!watch.check(&cache, 1, &plenty).give_back);
        // A few batches gone: below the threshold, kept for reuse.
        cache.borrow_mut().truncate(k, 120);
        assert!(!watch.check(&cache, 1, &plenty).give_back);
        // The partition deleted: 120 MiB let go of, given back once.
        cache.borrow_mut().unregister(k);
        let outcome = watch.check(&cache, 1, &plenty);
        assert_eq!(outcome.budget_bytes, 512 * MIB as usize);
        assert!(outcome.give_back);
        assert!(!watch.check(&cache, 1, &plenty).give_back);
    }

    /// An eviction for a lower budget counts as letting go, as before.
    #[test]
    fn an_eviction_under_pressure_gives_back() {
        let cache = BatchCache::shared(1024 * MIB as usize);
        let k = cache.borrow_mut().register();
        for i in 0..1024 {
            let batch = CachedBatch::owned(i, i, Bytes::from(vec![1u8; MIB as usize]));
            cache.borrow_mut().insert(k, batch);
        }
        let mut watch = BudgetWatch::default();
        assert!(!watch.check(&cache, 1, &reading(20 * GIB, 0.0)).give_back);
        // An eighth of 1 GiB is evicted: 128 MiB.
        let outcome = watch.check(&cache, 1, &reading(20 * GIB, 50.0));
        assert_eq!(outcome.budget_bytes, 896 * MIB as usize);
        assert!(outcome.give_back);
    }
}
