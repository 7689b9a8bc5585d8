//! The per-shard read cache: whole record batches kept in memory, the way
//! the page cache keeps recent data for Kafka. Appends fill it (tailing
//! consumers and followers never touch the disk), and so do reads that
//! missed it and went to the segment files (read-through), so a second
//! reader, or a re-read, is served from memory.
//!
//! One cache serves every partition of a shard and is bounded in bytes
//! (`read.cache.bytes`, split over the shards). Eviction is least recently
//! used, by batch: a batch's recency is its last append, fill or read, so a
//! range read together ages together.
//!
//! A partition's cached batches need not be contiguous. Each batch records
//! whether the cached batch before it is also the batch before it in the
//! log (`follows_previous`), and a read returns batches only while that
//! holds: it never skips a batch that is in the log but not in the cache.
//! Offsets alone cannot say so, because compaction leaves gaps in them.
//!
//! Every change that removes bytes from a log (truncation, retention,
//! DeleteRecords, compaction's swap, deletion) removes the affected batches
//! here and bumps the partition's generation. A fill carries the generation
//! that the log had when the read was planned, and is dropped if it
//! changed: a disk read that raced such a change must not cache what the
//! log no longer holds.
//!
//! The cache is shard-local (`Rc<RefCell<_>>`); no borrow is held across an
//! await.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use bytes::Bytes;

/// Identifies a partition log within one shard's cache.
pub type CacheKey = u64;

#[derive(Debug, Clone)]
pub struct CachedBatch {
    pub base_offset: i64,
    pub last_offset: i64,
    pub bytes: Bytes,
}

/// What a read that missed the cache needs to fill it afterwards.
#[derive(Clone)]
pub struct CacheFill {
    pub cache: SharedBatchCache,
    pub key: CacheKey,
    /// The partition's generation when the read was planned.
    pub generation: u64,
}

impl CacheFill {
    /// Caches `batches`, consecutive in the log, unless the log changed
    /// since the read was planned.
    pub fn fill(&self, batches: Vec<CachedBatch>) {
        self.cache
            .borrow_mut()
            .fill(self.key, self.generation, batches);
    }
}

/// The cache's counters, for the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub capacity_bytes: u64,
    pub used_bytes: u64,
    pub batches: u64,
    /// Reads answered from memory, and reads that went to the disk.
    pub hits: u64,
    pub misses: u64,
    /// Batches dropped to make room (not counting truncation and deletion).
    pub evictions: u64,
    /// Bytes cached from appends and from disk reads.
    pub appended_bytes: u64,
    pub filled_bytes: u64,
}

#[derive(Debug)]
struct Entry {
    last_offset: i64,
    bytes: Bytes,
    /// Key of this batch in the LRU order.
    tick: u64,
    /// The cached batch before this one is the batch before it in the log.
    follows_previous: bool,
}

#[derive(Debug, Default)]
struct PartitionEntries {
    batches: BTreeMap<i64, Entry>,
    generation: u64,
}

/// Shard-wide read cache.
#[derive(Debug)]
pub struct BatchCache {
    capacity_bytes: usize,
    used_bytes: usize,
    partitions: HashMap<CacheKey, PartitionEntries>,
    /// Least recently used first: tick → (partition, base offset).
    lru: BTreeMap<u64, (CacheKey, i64)>,
    next_tick: u64,
    next_key: CacheKey,
    stats: CacheStats,
}

pub type SharedBatchCache = Rc<RefCell<BatchCache>>;

impl BatchCache {
    pub fn new(capacity_bytes: usize) -> Self {
        BatchCache {
            capacity_bytes,
            used_bytes: 0,
            partitions: HashMap::new(),
            lru: BTreeMap::new(),
            next_tick: 0,
            next_key: 0,
            stats: CacheStats::default(),
        }
    }

    pub fn shared(capacity_bytes: usize) -> SharedBatchCache {
        Rc::new(RefCell::new(Self::new(capacity_bytes)))
    }

    /// A fresh key for a partition log opened on this shard.
    pub fn register(&mut self) -> CacheKey {
        self.next_key += 1;
        self.partitions
            .insert(self.next_key, PartitionEntries::default());
        self.next_key
    }

    /// Forgets a closed partition log: its batches, and its key, so that a
    /// fill still in flight for it caches nothing.
    pub fn unregister(&mut self, key: CacheKey) {
        if let Some(p) = self.partitions.remove(&key) {
            for entry in p.batches.values() {
                self.lru.remove(&entry.tick);
                self.used_bytes -= entry.bytes.len();
            }
        }
    }

    pub fn used_bytes(&self) -> usize {
        self.used_bytes
    }
    pub fn capacity_bytes(&self) -> usize {
        self.capacity_bytes
    }
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            capacity_bytes: self.capacity_bytes as u64,
            used_bytes: self.used_bytes as u64,
            batches: self.lru.len() as u64,
            ..self.stats
        }
    }

    /// The partition's generation, for a fill planned now; `None` for a
    /// key that is not registered.
    pub fn fill_ticket(cache: &SharedBatchCache, key: CacheKey) -> Option<CacheFill> {
        let generation = cache.borrow().partitions.get(&key)?.generation;
        Some(CacheFill {
            cache: cache.clone(),
            key,
            generation,
        })
    }

    /// Caches a batch just appended at the log end of `key`.
    pub fn insert(&mut self, key: CacheKey, batch: CachedBatch) {
        let size = batch.bytes.len();
        if size > self.capacity_bytes {
            return;
        }
        let Some(p) = self.partitions.get_mut(&key) else {
            return;
        };
        // Anything cached at or past the new batch is stale: the log was
        // truncated there without the cache being told. Never expected.
        let stale: Vec<i64> = p
            .batches
            .range(..)
            .rev()
            .take_while(|(_, e)| e.last_offset >= batch.base_offset)
            .map(|(b, _)| *b)
            .collect();
        for base in stale {
            self.remove_entry(key, base);
        }
        let p = self.partitions.get_mut(&key).expect("registered above");
        let follows_previous = p
            .batches
            .last_key_value()
            .is_some_and(|(_, e)| e.last_offset + 1 == batch.base_offset);
        self.stats.appended_bytes += size as u64;
        self.put(key, batch, follows_previous);
        self.evict_to_capacity();
    }

    /// Caches `batches`, consecutive in the log of `key`, read from its
    /// segment files; dropped if `generation` is not the partition's.
    pub fn fill(&mut self, key: CacheKey, generation: u64, batches: Vec<CachedBatch>) {
        if self
            .partitions
            .get(&key)
            .is_none_or(|p| p.generation != generation)
        {
            return;
        }
        // Whether the batch before the current one (in the log) is cached,
        // as the entry right before it.
        let mut previous_cached: Option<i64> = None;
        for batch in batches {
            let size = batch.bytes.len();
            let base = batch.base_offset;
            let p = self.partitions.get_mut(&key).expect("checked above");
            let before = p
                .batches
                .range(..=batch.last_offset)
                .next_back()
                .map(|(b, e)| (*b, e.last_offset, e.tick));
            let follows_previous = match before {
                Some((b, _, old_tick)) if b == base => {
                    // Already cached: it now counts as recently used, and
                    // follows the fill's previous batch if that is cached.
                    if previous_cached.is_some() {
                        if let Some(e) = p.batches.get_mut(&base) {
                            e.follows_previous = true;
                        }
                    }
                    self.touch(key, base, old_tick);
                    previous_cached = Some(base);
                    continue;
                }
                // Overlaps a cached batch with another base: never expected
                // while the generation matches. Cache nothing further.
                Some((_, last, _)) if last >= base => break,
                Some((b, last, _)) => previous_cached == Some(b) || last + 1 == base,
                None => false,
            };
            if size > self.capacity_bytes {
                previous_cached = None;
                continue;
            }
            self.stats.filled_bytes += size as u64;
            let last_offset = batch.last_offset;
            self.put(key, batch, follows_previous);
            // The cached batch after it may be its successor in the log.
            let p = self.partitions.get_mut(&key).expect("checked above");
            // Offsets only grow along the log, so a cached batch that starts
            // right after this one is its successor, compacted log or not.
            if let Some((&next_base, next)) = p.batches.range_mut(base + 1..).next() {
                if next_base == last_offset + 1 {
                    next.follows_previous = true;
                }
            }
            previous_cached = Some(base);
        }
        self.evict_to_capacity();
    }

    fn put(&mut self, key: CacheKey, batch: CachedBatch, follows_previous: bool) {
        let tick = self.next_tick;
        self.next_tick += 1;
        let size = batch.bytes.len();
        let p = self.partitions.get_mut(&key).expect("caller checked");
        p.batches.insert(
            batch.base_offset,
            Entry {
                last_offset: batch.last_offset,
                bytes: batch.bytes,
                tick,
                follows_previous,
            },
        );
        self.lru.insert(tick, (key, batch.base_offset));
        self.used_bytes += size;
    }

    fn touch(&mut self, key: CacheKey, base: i64, old_tick: u64) {
        let tick = self.next_tick;
        self.next_tick += 1;
        self.lru.remove(&old_tick);
        self.lru.insert(tick, (key, base));
        if let Some(e) = self
            .partitions
            .get_mut(&key)
            .and_then(|p| p.batches.get_mut(&base))
        {
            e.tick = tick;
        }
    }

    fn evict_to_capacity(&mut self) {
        while self.used_bytes > self.capacity_bytes {
            let Some((_, (key, base))) = self.lru.pop_first() else {
                return;
            };
            self.stats.evictions += 1;
            self.remove_entry(key, base);
        }
    }

    /// Removes one batch; the batch after it no longer follows a cached one.
    fn remove_entry(&mut self, key: CacheKey, base: i64) {
        let Some(p) = self.partitions.get_mut(&key) else {
            return;
        };
        if let Some(e) = p.batches.remove(&base) {
            self.lru.remove(&e.tick);
            self.used_bytes -= e.bytes.len();
            if let Some((_, next)) = p.batches.range_mut(base..).next() {
                next.follows_previous = false;
            }
        }
    }

    /// Batches of `key` starting with the one that contains `offset`, whole,
    /// stopping before `max_offset` (exclusive), after `max_bytes` (at
    /// least one batch when `min_one`), and at the first batch of the log
    /// that is not cached. `None` when `offset` is not cached.
    pub fn read(
        &mut self,
        key: CacheKey,
        offset: i64,
        max_offset: i64,
        max_bytes: usize,
        min_one: bool,
    ) -> Option<Vec<Bytes>> {
        let start = self.partitions.get(&key).and_then(|p| {
            p.batches
                .range(..=offset)
                .next_back()
                .filter(|(_, e)| e.last_offset >= offset)
                .map(|(b, _)| *b)
        });
        let Some(start) = start else {
            self.stats.misses += 1;
            return None;
        };
        self.stats.hits += 1;
        let mut out = Vec::new();
        let mut touched = Vec::new();
        let mut total = 0usize;
        let p = &self.partitions[&key];
        for (base, e) in p.batches.range(start..) {
            if *base >= max_offset || (!out.is_empty() && !e.follows_previous) {
                break;
            }
            let fits = total + e.bytes.len() <= max_bytes;
            if !(fits || min_one && out.is_empty()) {
                break;
            }
            total += e.bytes.len();
            out.push(e.bytes.clone());
            touched.push((*base, e.tick));
        }
        for (base, tick) in touched {
            self.touch(key, base, tick);
        }
        Some(out)
    }

    /// Forgets every cached batch of `key` whose last offset is at least
    /// `offset`: the log was truncated there.
    pub fn truncate(&mut self, key: CacheKey, offset: i64) {
        self.forget(key, |e| e.last_offset >= offset);
    }

    /// Forgets every cached batch of `key` below `offset`: the log start
    /// moved, or compaction replaced the segments below it.
    pub fn truncate_front(&mut self, key: CacheKey, offset: i64) {
        self.forget(key, |e| e.last_offset < offset);
    }

    /// Forgets every cached batch of `key` (the log was emptied); the key
    /// stays registered.
    pub fn remove(&mut self, key: CacheKey) {
        self.forget(key, |_| true);
    }

    fn forget(&mut self, key: CacheKey, doomed: impl Fn(&Entry) -> bool) {
        let Some(p) = self.partitions.get_mut(&key) else {
            return;
        };
        p.generation += 1;
        let bases: Vec<i64> = p
            .batches
            .iter()
            .filter(|(_, e)| doomed(e))
            .map(|(b, _)| *b)
            .collect();
        for base in bases {
            self.remove_entry(key, base);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(base: i64, last: i64, size: usize) -> CachedBatch {
        CachedBatch {
            base_offset: base,
            last_offset: last,
            bytes: Bytes::from(vec![0u8; size]),
        }
    }

    fn bases(c: &mut BatchCache, key: CacheKey, offset: i64) -> Option<usize> {
        c.read(key, offset, i64::MAX, usize::MAX, true)
            .map(|r| r.len())
    }

    #[test]
    fn serves_contiguous_tail_and_respects_limits() {
        let mut c = BatchCache::new(1000);
        let k = c.register();
        c.insert(k, batch(0, 9, 100));
        c.insert(k, batch(10, 19, 100));
        c.insert(k, batch(20, 29, 100));
        let r = c.read(k, 15, i64::MAX, 150, true).unwrap();
        assert_eq!(r.len(), 1, "second batch would exceed max bytes");
        let r = c.read(k, 15, i64::MAX, 1000, true).unwrap();
        assert_eq!(r.len(), 2);
        let r = c.read(k, 0, 20, 1000, true).unwrap();
        assert_eq!(r.len(), 2, "stops before max offset");
        let r = c.read(k, 0, i64::MAX, 10, true).unwrap();
        assert_eq!(r.len(), 1, "min one batch");
        assert!(c.read(k, 0, i64::MAX, 10, false).unwrap().is_empty());
        assert!(c.read(k, 30, i64::MAX, 10, true).is_none());
        assert_eq!((c.stats().hits, c.stats().misses), (5, 1));
    }

    #[test]
    fn evicts_the_least_recently_used_batch() {
        let mut c = BatchCache::new(300);
        let a = c.register();
        let b = c.register();
        c.insert(a, batch(0, 0, 100));
        c.insert(a, batch(1, 1, 100));
        c.insert(a, batch(2, 2, 100));
        // Reading batch 0 makes batch 1 the least recently used.
        assert_eq!(c.read(a, 0, 1, 1000, true).unwrap().len(), 1);
        c.insert(b, batch(0, 0, 100));
        assert!(c.used_bytes() <= 300);
        assert_eq!(c.stats().evictions, 1);
        assert!(bases(&mut c, a, 1).is_none(), "batch 1 was evicted");
        // A read never skips the evicted batch: it stops before the hole.
        assert_eq!(bases(&mut c, a, 0), Some(1));
        assert_eq!(bases(&mut c, a, 2), Some(1));
        assert_eq!(bases(&mut c, b, 0), Some(1));
    }

    #[test]
    fn fills_link_batches_read_together_even_across_compaction_gaps() {
        let cache = BatchCache::shared(10_000);
        let k = cache.borrow_mut().register();
        let ticket = BatchCache::fill_ticket(&cache, k).unwrap();
        // Compaction left offset gaps: 5..9 and 13..19 are not in the log.
        ticket.fill(vec![batch(0, 4, 10), batch(10, 12, 10), batch(20, 20, 10)]);
        let mut c = cache.borrow_mut();
        assert_eq!(bases(&mut c, k, 0), Some(3));
        assert_eq!(bases(&mut c, k, 11), Some(2));
        // An offset in a gap is not known to be there: a miss, not a skip.
        assert!(bases(&mut c, k, 7).is_none());
        assert_eq!(c.stats().filled_bytes, 30);
    }

    #[test]
    fn a_fill_joins_cached_neighbours_only_when_offsets_prove_it() {
        let cache = BatchCache::shared(10_000);
        let k = cache.borrow_mut().register();
        cache.borrow_mut().insert(k, batch(100, 109, 10));
        let ticket = BatchCache::fill_ticket(&cache, k).unwrap();
        ticket.fill(vec![batch(80, 89, 10), batch(90, 99, 10)]);
        assert_eq!(bases(&mut cache.borrow_mut(), k, 80), Some(3));
        // 60..69 may or may not hold batches: 50..59 must not lead to 70.
        ticket.fill(vec![batch(50, 59, 10)]);
        ticket.fill(vec![batch(70, 79, 10)]);
        let mut c = cache.borrow_mut();
        assert_eq!(bases(&mut c, k, 50), Some(1));
        assert_eq!(bases(&mut c, k, 70), Some(4), "79 + 1 = 80 proves it");
        // Filling what is cached only refreshes it.
        drop(c);
        ticket.fill(vec![batch(90, 99, 10)]);
        assert_eq!(cache.borrow().used_bytes(), 50);
    }

    #[test]
    fn a_fill_planned_before_a_truncation_caches_nothing() {
        let cache = BatchCache::shared(10_000);
        let k = cache.borrow_mut().register();
        cache.borrow_mut().insert(k, batch(0, 9, 10));
        for change in 0..4 {
            let ticket = BatchCache::fill_ticket(&cache, k).unwrap();
            match change {
                0 => cache.borrow_mut().truncate(k, 5),
                1 => cache.borrow_mut().truncate_front(k, 5),
                2 => cache.borrow_mut().remove(k),
                _ => cache.borrow_mut().unregister(k),
            }
            ticket.fill(vec![batch(0, 9, 10), batch(10, 19, 10)]);
            assert_eq!(cache.borrow().used_bytes(), 0, "change {change}");
        }
    }

    #[test]
    fn truncation_drops_batches_at_and_after_offset() {
        let mut c = BatchCache::new(10_000);
        let k = c.register();
        for i in 0..5 {
            c.insert(k, batch(i * 10, i * 10 + 9, 10));
        }
        c.truncate(k, 25);
        assert!(c.read(k, 25, i64::MAX, 1000, true).is_none());
        assert_eq!(c.read(k, 0, i64::MAX, 1000, true).unwrap().len(), 2);
        assert_eq!(c.used_bytes(), 20);
        // A batch after a gap is cached, but not served as following.
        c.insert(k, batch(100, 100, 10));
        assert_eq!(bases(&mut c, k, 0), Some(2));
        assert_eq!(bases(&mut c, k, 100), Some(1));
        assert_eq!(c.used_bytes(), 30);
        c.truncate_front(k, 15);
        assert!(bases(&mut c, k, 5).is_none());
        assert_eq!(bases(&mut c, k, 15), Some(1));
        assert_eq!(c.stats().batches, 2);
    }

    #[test]
    fn oversized_batches_are_not_cached() {
        let mut c = BatchCache::new(50);
        let k = c.register();
        c.insert(k, batch(0, 0, 51));
        c.insert(k, batch(1, 1, 50));
        assert_eq!(c.used_bytes(), 50);
        assert!(bases(&mut c, k, 0).is_none());
        assert_eq!(bases(&mut c, k, 1), Some(1));
    }
}
