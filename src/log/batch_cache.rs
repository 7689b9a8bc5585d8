//! The per-shard tail cache: recently appended batches kept in memory so that
//! tailing consumers and followers are served without touching the disk.
//!
//! One cache serves every partition of a shard and is bounded in bytes.
//! Eviction is oldest-appended first across the shard, which keeps each
//! partition's cached batches a contiguous run ending at its log end: a read
//! either finds its offset in that run or goes to the segment files.
//! The cache is shard-local (`Rc<RefCell<_>>`); no borrow is held across an
//! await.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
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

/// Shard-wide tail cache.
#[derive(Debug)]
pub struct BatchCache {
    capacity_bytes: usize,
    used_bytes: usize,
    /// Append order across partitions: (partition, base offset, size).
    order: VecDeque<(CacheKey, i64, usize)>,
    partitions: HashMap<CacheKey, BTreeMap<i64, CachedBatch>>,
    next_key: CacheKey,
    hits: u64,
    misses: u64,
}

pub type SharedBatchCache = Rc<RefCell<BatchCache>>;

impl BatchCache {
    pub fn new(capacity_bytes: usize) -> Self {
        BatchCache {
            capacity_bytes,
            used_bytes: 0,
            order: VecDeque::new(),
            partitions: HashMap::new(),
            next_key: 0,
            hits: 0,
            misses: 0,
        }
    }

    pub fn shared(capacity_bytes: usize) -> SharedBatchCache {
        Rc::new(RefCell::new(Self::new(capacity_bytes)))
    }

    /// A fresh key for a partition log opened on this shard.
    pub fn register(&mut self) -> CacheKey {
        self.next_key += 1;
        self.next_key
    }

    pub fn used_bytes(&self) -> usize {
        self.used_bytes
    }
    pub fn capacity_bytes(&self) -> usize {
        self.capacity_bytes
    }
    /// (hits, misses) since start.
    pub fn hit_counts(&self) -> (u64, u64) {
        (self.hits, self.misses)
    }

    /// Caches a batch just appended at the log end of `key`.
    pub fn insert(&mut self, key: CacheKey, batch: CachedBatch) {
        let size = batch.bytes.len();
        if size > self.capacity_bytes {
            return;
        }
        let entries = self.partitions.entry(key).or_default();
        if let Some((_, last)) = entries.last_key_value() {
            // Contiguity: a gap (e.g. after truncate-and-restart) resets the run.
            if batch.base_offset != last.last_offset + 1 {
                let dropped: usize = entries.values().map(|b| b.bytes.len()).sum();
                entries.clear();
                self.used_bytes -= dropped;
                self.forget_stale_order();
            }
        }
        let entries = self.partitions.entry(key).or_default();
        entries.insert(batch.base_offset, batch.clone());
        self.order.push_back((key, batch.base_offset, size));
        self.used_bytes += size;
        while self.used_bytes > self.capacity_bytes {
            self.evict_oldest();
        }
    }

    fn evict_oldest(&mut self) {
        let Some((key, base, _)) = self.order.pop_front() else {
            return;
        };
        if let Some(entries) = self.partitions.get_mut(&key) {
            // Entries may already be gone through truncation; evict only the
            // oldest cached batch so the run stays contiguous.
            if let Some(first) = entries.first_key_value().map(|(k, _)| *k) {
                if first <= base {
                    if let Some(b) = entries.remove(&first) {
                        self.used_bytes -= b.bytes.len();
                    }
                }
            }
            if entries.is_empty() {
                self.partitions.remove(&key);
            }
        }
    }

    /// Batches of `key` starting with the one that contains `offset`, whole,
    /// stopping before `max_offset` (exclusive) and after `max_bytes` (at
    /// least one batch when `min_one`). `None` when `offset` is not cached.
    pub fn read(
        &mut self,
        key: CacheKey,
        offset: i64,
        max_offset: i64,
        max_bytes: usize,
        min_one: bool,
    ) -> Option<Vec<Bytes>> {
        let entries = self.partitions.get(&key);
        let start = entries.and_then(|e| {
            e.range(..=offset)
                .next_back()
                .filter(|(_, b)| b.last_offset >= offset)
                .map(|(k, _)| *k)
        });
        let (Some(entries), Some(start)) = (entries, start) else {
            self.misses += 1;
            return None;
        };
        self.hits += 1;
        let mut out = Vec::new();
        let mut total = 0usize;
        for b in entries.range(start..).map(|(_, b)| b) {
            if b.base_offset >= max_offset {
                break;
            }
            let fits = total + b.bytes.len() <= max_bytes;
            if !(fits || min_one && out.is_empty()) {
                break;
            }
            total += b.bytes.len();
            out.push(b.bytes.clone());
        }
        Some(out)
    }

    /// Forgets every cached batch of `key` whose last offset is at least
    /// `offset`: the log was truncated there.
    pub fn truncate(&mut self, key: CacheKey, offset: i64) {
        if let Some(entries) = self.partitions.get_mut(&key) {
            let doomed: Vec<i64> = entries
                .iter()
                .filter(|(_, b)| b.last_offset >= offset)
                .map(|(k, _)| *k)
                .collect();
            for k in doomed {
                if let Some(b) = entries.remove(&k) {
                    self.used_bytes -= b.bytes.len();
                }
            }
        }
        self.forget_stale_order();
    }

    /// Forgets every cached batch of `key` below `offset`: the log start moved.
    pub fn truncate_front(&mut self, key: CacheKey, offset: i64) {
        if let Some(entries) = self.partitions.get_mut(&key) {
            let doomed: Vec<i64> = entries
                .iter()
                .filter(|(_, b)| b.last_offset < offset)
                .map(|(k, _)| *k)
                .collect();
            for k in doomed {
                if let Some(b) = entries.remove(&k) {
                    self.used_bytes -= b.bytes.len();
                }
            }
        }
        self.forget_stale_order();
    }

    /// Forgets the partition entirely (deleted or closed).
    pub fn remove(&mut self, key: CacheKey) {
        if let Some(entries) = self.partitions.remove(&key) {
            self.used_bytes -= entries.values().map(|b| b.bytes.len()).sum::<usize>();
        }
        self.forget_stale_order();
    }

    /// Drops eviction-order entries whose batch is gone, so that the order
    /// queue stays bounded by the number of cached batches. Only truncation
    /// and removal (rare: leader changes, deletes) pay for this scan.
    fn forget_stale_order(&mut self) {
        let partitions = &self.partitions;
        self.order.retain(|(k, base, _)| {
            partitions
                .get(k)
                .is_some_and(|entries| entries.contains_key(base))
        });
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
    }

    #[test]
    fn eviction_is_bounded_and_keeps_runs_contiguous() {
        let mut c = BatchCache::new(250);
        let a = c.register();
        let b = c.register();
        c.insert(a, batch(0, 0, 100));
        c.insert(b, batch(0, 0, 100));
        c.insert(a, batch(1, 1, 100));
        assert!(c.used_bytes() <= 250);
        assert!(c.read(a, 0, i64::MAX, 1000, true).is_none());
        assert_eq!(c.read(a, 1, i64::MAX, 1000, true).unwrap().len(), 1);
        assert_eq!(c.read(b, 0, i64::MAX, 1000, true).unwrap().len(), 1);
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
        // A non-contiguous insert resets the run instead of leaving a hole.
        c.insert(k, batch(100, 100, 10));
        assert!(c.read(k, 0, i64::MAX, 1000, true).is_none());
        assert_eq!(c.used_bytes(), 10);
    }
}
