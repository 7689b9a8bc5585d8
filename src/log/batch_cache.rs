//! The per-shard read cache: whole record batches kept in memory, the way
//! the page cache keeps recent data for Kafka. Appends fill it (tailing
//! consumers and followers never touch the disk), and so do reads that
//! missed it and went to the segment files (read-through), so a second
//! reader, or a re-read, is served from memory.
//!
//! One cache serves every partition of a shard and is bounded in bytes
//! (`read.cache.bytes`, split over the shards, and lowered while the
//! machine is short of memory: `shard::cache_budget`). Eviction is least
//! recently used, by batch: a batch's recency is its last append, fill or
//! read, so a range read together ages together.
//!
//! **Real memory, not batch bytes.** A cached batch is a `Bytes` slice of
//! the buffer it arrived in (a 4 MiB read-ahead, a produce request's
//! records, a follower's fetch response), and keeps that whole buffer
//! alive. The cache therefore counts each buffer once, whole, for as long
//! as any of its batches is cached ([`Backing`]); `used_bytes` is that
//! sum, and it is what the capacity bounds. Counting the buffer rather than
//! copying every batch out of it keeps the common case free: a
//! sequential reader's read-ahead is cached whole, and its batches age and
//! leave together. Where a buffer is mostly dead weight (its cached
//! batches are less than `1/READ_CACHE_SPARSE_BUFFER_DIVISOR` of it: a fill
//! that found most of its batches already cached, or evictions that kept a
//! few recently read batches), the survivors are copied into buffers of
//! their own and the big one is let go: the copy costs at most that
//! fraction of the buffer, once. A buffer larger than the whole cache is
//! never kept; its batches are copied out (or not cached, when a batch
//! alone is larger). The filler names the smallest buffer it knows
//! (`Backing`): the read-ahead buffer, the request's records, a fetch
//! response's frame, or the cache block any of them is in. Allocation
//! around that buffer which the filler cannot see (a frame reader's spare
//! room) is not counted.
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
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

use bytes::Bytes;

use crate::constants::{
    READ_CACHE_BLOCKS_MIN_CAPACITY_BLOCKS, READ_CACHE_BLOCK_BYTES, READ_CACHE_SPARSE_BUFFER_DIVISOR,
};
use crate::log::cache_blocks::{BlockPiece, CacheBlocks, CacheCopy};

/// Identifies a partition log within one shard's cache.
pub type CacheKey = u64;

/// The buffer a cached batch's bytes are a slice of, and so keep alive:
/// the address of its first byte and its length. While any batch of it is
/// cached the buffer is alive, so its address names no other buffer; two
/// `Backing`s that overlap (never expected) are both counted, which only
/// over-counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Backing {
    start: usize,
    len: usize,
}

impl Backing {
    /// `buffer` itself: batches cut from it keep all of it alive.
    pub fn of(buffer: &Bytes) -> Backing {
        Backing {
            start: buffer.as_ptr() as usize,
            len: buffer.len(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A block of the cache's own memory (`cache_blocks`), from its first
    /// byte.
    pub(crate) fn block(start: usize, len: usize) -> Backing {
        Backing { start, len }
    }

    /// Whether `bytes` lies inside this buffer.
    pub(crate) fn holds(&self, bytes: &Bytes) -> bool {
        let at = bytes.as_ptr() as usize;
        bytes.is_empty() || (at >= self.start && at + bytes.len() <= self.start + self.len)
    }
}

#[derive(Debug, Clone)]
pub struct CachedBatch {
    pub base_offset: i64,
    pub last_offset: i64,
    pub bytes: Bytes,
    /// The buffer `bytes` is a slice of.
    pub backing: Backing,
}

impl CachedBatch {
    /// A batch that is its own buffer (or whose buffer is `bytes` as far
    /// as the caller knows).
    pub fn owned(base_offset: i64, last_offset: i64, bytes: Bytes) -> CachedBatch {
        let backing = Backing::of(&bytes);
        CachedBatch {
            base_offset,
            last_offset,
            bytes,
            backing,
        }
    }
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
    /// The budget now: what `used_bytes` may reach.
    pub capacity_bytes: u64,
    /// The most the budget may become.
    pub ceiling_bytes: u64,
    /// The memory the cached batches keep alive: each buffer once, whole.
    pub used_bytes: u64,
    /// The cached batches' own bytes (at most `used_bytes`).
    pub batch_bytes: u64,
    pub batches: u64,
    /// Buffers the cached batches keep alive.
    pub buffers: u64,
    /// Reads answered from memory, and reads that went to the disk.
    pub hits: u64,
    pub misses: u64,
    /// Batches dropped to make room (not counting truncation and deletion).
    pub evictions: u64,
    /// Bytes cached from appends and from disk reads.
    pub appended_bytes: u64,
    pub filled_bytes: u64,
    /// Bytes copied out of buffers that were mostly dead weight.
    pub copied_bytes: u64,
    /// Memory in freed blocks kept for reuse (`cache_blocks`): not part of
    /// `used_bytes`, and at most `READ_CACHE_SPARE_BLOCKS` blocks.
    pub spare_bytes: u64,
    /// Blocks mapped, and freed blocks used again.
    pub blocks_mapped: u64,
    pub blocks_reused: u64,
}

#[derive(Debug)]
struct Entry {
    last_offset: i64,
    bytes: Bytes,
    backing: Backing,
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

/// One buffer that cached batches keep alive.
#[derive(Debug, Default)]
struct BufferUse {
    /// The cached batches' bytes in it.
    batch_bytes: usize,
    /// Its cached batches: (partition, base offset).
    batches: BTreeSet<(CacheKey, i64)>,
}

/// Shard-wide read cache.
#[derive(Debug)]
pub struct BatchCache {
    /// The budget now, at most `ceiling_bytes`.
    capacity_bytes: usize,
    /// The most the budget may be: the shard's share of
    /// `read.cache.bytes` or of the default.
    ceiling_bytes: usize,
    /// Bytes of the buffers in `buffers`, each counted once.
    used_bytes: usize,
    batch_bytes: usize,
    partitions: HashMap<CacheKey, PartitionEntries>,
    buffers: HashMap<Backing, BufferUse>,
    /// Least recently used first: tick → (partition, base offset).
    lru: BTreeMap<u64, (CacheKey, i64)>,
    next_tick: u64,
    next_key: CacheKey,
    stats: CacheStats,
    /// The memory appends and fills copy into.
    blocks: CacheBlocks,
}

pub type SharedBatchCache = Rc<RefCell<BatchCache>>;

impl BatchCache {
    pub fn new(capacity_bytes: usize) -> Self {
        BatchCache {
            capacity_bytes,
            ceiling_bytes: capacity_bytes,
            used_bytes: 0,
            batch_bytes: 0,
            partitions: HashMap::new(),
            buffers: HashMap::new(),
            lru: BTreeMap::new(),
            next_tick: 0,
            next_key: 0,
            stats: CacheStats::default(),
            blocks: CacheBlocks::default(),
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
        self.forget(key, |_| true);
        self.partitions.remove(&key);
    }

    /// The memory the cached batches keep alive, each buffer counted once.
    pub fn used_bytes(&self) -> usize {
        self.used_bytes
    }
    /// The cached batches' own bytes.
    pub fn batch_bytes(&self) -> usize {
        self.batch_bytes
    }
    pub fn capacity_bytes(&self) -> usize {
        self.capacity_bytes
    }
    pub fn ceiling_bytes(&self) -> usize {
        self.ceiling_bytes
    }

    /// Changes the budget, never past the ceiling (the shard's memory
    /// watch does, as the machine's free memory comes and goes), evicting
    /// down to a lower one at once.
    /// A budget below what the cache holds (the machine is short of
    /// memory) also gives the spare blocks back to the kernel, since they
    /// are outside it; one too small for blocks lets go of the open one.
    pub fn set_capacity(&mut self, capacity_bytes: usize) {
        self.capacity_bytes = capacity_bytes.min(self.ceiling_bytes);
        let short = self.used_bytes > self.capacity_bytes;
        if !self.uses_blocks() {
            self.blocks.close_open_block();
        }
        self.evict_to_capacity();
        // After the eviction, whose blocks come back as spares.
        if short {
            self.blocks.release_spares();
        }
        assert!(self.used_bytes <= self.capacity_bytes);
    }

    pub fn stats(&self) -> CacheStats {
        let blocks = self.blocks.stats();
        CacheStats {
            spare_bytes: blocks.spare_blocks * READ_CACHE_BLOCK_BYTES as u64,
            blocks_mapped: blocks.mapped,
            blocks_reused: blocks.reused,
            capacity_bytes: self.capacity_bytes as u64,
            ceiling_bytes: self.ceiling_bytes as u64,
            used_bytes: self.used_bytes as u64,
            batch_bytes: self.batch_bytes as u64,
            batches: self.lru.len() as u64,
            buffers: self.buffers.len() as u64,
            ..self.stats
        }
    }

    /// Whether copies for this cache go into blocks: only while its budget
    /// holds enough of them that one block, counted whole, is a small
    /// share of it. The budget changes only in `set_capacity`, which lets
    /// go of the open block when this turns false.
    fn uses_blocks(&self) -> bool {
        self.capacity_bytes >= READ_CACHE_BLOCKS_MIN_CAPACITY_BLOCKS * READ_CACHE_BLOCK_BYTES
    }

    /// A copy of `bytes` to append and cache (a leader's copy of a
    /// producer's records): in the cache's blocks when it uses them.
    pub fn copy(&mut self, bytes: &[u8]) -> CacheCopy {
        if self.uses_blocks() {
            self.blocks.copy(bytes)
        } else {
            CacheCopy::Heap(bytes::BytesMut::from(bytes))
        }
    }

    /// `len` bytes of a block to read into and cache (a read-ahead of
    /// half a block or more, which takes a block of its own); `None` when
    /// the cache does not use blocks or the read is smaller or larger. A
    /// smaller read would share a block that it alone could not keep from
    /// being sparse, so the fill would copy its batches out again.
    pub fn block_piece(&mut self, len: usize) -> Option<BlockPiece> {
        if len * 2 < READ_CACHE_BLOCK_BYTES || !self.uses_blocks() {
            return None;
        }
        self.blocks.piece(len)
    }

    /// `len` bytes of a block to receive a frame into whose records the
    /// cache will keep (a follower's fetch response); small frames share a
    /// block as a leader's copies do, and a large one leaves the rest of
    /// its block to them (`CacheBlocks::frame_piece`). `None` when the
    /// cache does not use blocks or the frame is larger than a block.
    pub fn frame_piece(&mut self, len: usize) -> Option<BlockPiece> {
        if !self.uses_blocks() {
            return None;
        }
        self.blocks.frame_piece(len)
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
        self.append(key, vec![batch]);
    }

    /// Caches batches just appended, in order, at the log end of `key`.
    pub fn append(&mut self, key: CacheKey, batches: Vec<CachedBatch>) {
        for batch in batches {
            self.append_one(key, batch);
        }
        self.evict_to_capacity();
        self.check_invariants();
    }

    fn append_one(&mut self, key: CacheKey, batch: CachedBatch) {
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
        let mut backings: Vec<Backing> = Vec::new();
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
            if backings.last() != Some(&batch.backing) {
                backings.push(batch.backing);
            }
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
        // A fill that found most of what it read already cached keeps only
        // a little of its buffer: copy that out rather than pin it all.
        for backing in backings {
            self.release_if_sparse(backing);
        }
        self.evict_to_capacity();
        self.check_invariants();
    }

    /// Adds one batch. A batch whose buffer alone exceeds the capacity is
    /// copied out first, so that no buffer the cache cannot hold is
    /// pinned by it.
    fn put(&mut self, key: CacheKey, mut batch: CachedBatch, follows_previous: bool) {
        assert!(
            batch.backing.holds(&batch.bytes),
            "a cached batch lies inside the buffer its filler names"
        );
        if batch.backing.len() > self.capacity_bytes {
            self.stats.copied_bytes += batch.bytes.len() as u64;
            batch = CachedBatch::owned(
                batch.base_offset,
                batch.last_offset,
                Bytes::copy_from_slice(&batch.bytes),
            );
        }
        // Callers never put a batch that is cached; if one did, the old
        // entry must leave the counts with it.
        self.remove_entry(key, batch.base_offset);
        let tick = self.next_tick;
        self.next_tick += 1;
        let size = batch.bytes.len();
        let p = self.partitions.get_mut(&key).expect("caller checked");
        let replaced = p.batches.insert(
            batch.base_offset,
            Entry {
                last_offset: batch.last_offset,
                bytes: batch.bytes,
                backing: batch.backing,
                tick,
                follows_previous,
            },
        );
        assert!(replaced.is_none(), "removed above");
        self.lru.insert(tick, (key, batch.base_offset));
        self.batch_bytes += size;
        self.account(batch.backing, key, batch.base_offset, size);
    }

    /// Counts a batch of `size` bytes in `backing`, and the buffer itself
    /// when it is new.
    fn account(&mut self, backing: Backing, key: CacheKey, base: i64, size: usize) {
        let buffer = self.buffers.entry(backing).or_insert_with(|| {
            self.used_bytes += backing.len();
            BufferUse::default()
        });
        buffer.batch_bytes += size;
        buffer.batches.insert((key, base));
    }

    /// Stops counting a batch; the buffer goes when its last batch does.
    fn unaccount(&mut self, backing: Backing, key: CacheKey, base: i64, size: usize) {
        let Some(buffer) = self.buffers.get_mut(&backing) else {
            return;
        };
        buffer.batch_bytes -= size;
        buffer.batches.remove(&(key, base));
        if buffer.batches.is_empty() {
            self.buffers.remove(&backing);
            self.used_bytes -= backing.len();
        }
    }

    /// When the cached batches of `backing` are a small fraction of it,
    /// copies each into a buffer of its own and lets the big one go.
    /// The block copies are still being cut from is sparse until it is
    /// full; copying out of it would free nothing.
    fn release_if_sparse(&mut self, backing: Backing) {
        if self.blocks.is_open(backing) {
            return;
        }
        let Some(buffer) = self.buffers.get(&backing) else {
            return;
        };
        if buffer
            .batch_bytes
            .saturating_mul(READ_CACHE_SPARSE_BUFFER_DIVISOR)
            >= backing.len()
        {
            return;
        }
        let batches: Vec<(CacheKey, i64)> = buffer.batches.iter().copied().collect();
        for (key, base) in batches {
            let Some(e) = self
                .partitions
                .get_mut(&key)
                .and_then(|p| p.batches.get_mut(&base))
            else {
                continue;
            };
            let copy = Bytes::copy_from_slice(&e.bytes);
            let size = copy.len();
            e.bytes = copy;
            e.backing = Backing::of(&e.bytes);
            let own = e.backing;
            self.stats.copied_bytes += size as u64;
            self.unaccount(backing, key, base, size);
            self.account(own, key, base, size);
        }
        debug_assert!(!self.buffers.contains_key(&backing));
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

    /// Evicts least recently used batches until the buffers they keep
    /// alive fit the capacity. Evicting a batch frees memory only with the
    /// last batch of its buffer: while the next victim is in the same
    /// buffer (a sequential reader's read-ahead ages together) eviction
    /// goes on through it; when eviction leaves a buffer whose remaining
    /// batches are more recent than others and are a small part of it,
    /// they are copied out, so that a few recently read batches never keep
    /// a large buffer, or the eviction of everything older, going.
    fn evict_to_capacity(&mut self) {
        while self.used_bytes > self.capacity_bytes {
            let Some((_, (key, base))) = self.lru.pop_first() else {
                return;
            };
            self.stats.evictions += 1;
            let Some(backing) = self.remove_entry(key, base) else {
                continue;
            };
            let next_in_same_buffer = self.lru.first_key_value().is_some_and(|(_, &(k, b))| {
                self.partitions
                    .get(&k)
                    .and_then(|p| p.batches.get(&b))
                    .is_some_and(|e| e.backing == backing)
            });
            if !next_in_same_buffer {
                self.release_if_sparse(backing);
            }
        }
    }

    /// Removes one batch; the batch after it no longer follows a cached
    /// one. Returns the buffer it was in.
    fn remove_entry(&mut self, key: CacheKey, base: i64) -> Option<Backing> {
        let p = self.partitions.get_mut(&key)?;
        let e = p.batches.remove(&base)?;
        self.lru.remove(&e.tick);
        if let Some((_, next)) = p.batches.range_mut(base..).next() {
            next.follows_previous = false;
        }
        self.batch_bytes -= e.bytes.len();
        self.unaccount(e.backing, key, base, e.bytes.len());
        Some(e.backing)
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
        let mut thinned: Vec<Backing> = Vec::new();
        for base in bases {
            if let Some(backing) = self.remove_entry(key, base) {
                if thinned.last() != Some(&backing) {
                    thinned.push(backing);
                }
            }
        }
        // What the change left of a buffer (the batches below a truncation
        // point, say) may be a sliver of it.
        thinned.sort_unstable();
        thinned.dedup();
        for backing in thinned {
            self.release_if_sparse(backing);
        }
        self.check_invariants();
    }

    /// The counters agree with the entries. O(buffers), so checked in
    /// the unit tests and debug builds only; the release build keeps the
    /// cheap asserts.
    fn check_invariants(&self) {
        if cfg!(any(test, debug_assertions)) {
            let used: usize = self.buffers.keys().map(|b| b.len()).sum();
            let batches: usize = self.buffers.values().map(|u| u.batches.len()).sum();
            let bytes: usize = self.buffers.values().map(|u| u.batch_bytes).sum();
            assert_eq!(used, self.used_bytes, "each buffer is counted once");
            assert_eq!(batches, self.lru.len(), "each batch is in one buffer");
            assert_eq!(bytes, self.batch_bytes);
        }
        assert!(
            self.batch_bytes <= self.used_bytes,
            "batches lie inside their buffers"
        );
        assert!(
            self.used_bytes <= self.capacity_bytes,
            "the budget bounds the buffers"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(base: i64, last: i64, size: usize) -> CachedBatch {
        CachedBatch::owned(base, last, Bytes::from(vec![0u8; size]))
    }

    fn bases(c: &mut BatchCache, key: CacheKey, offset: i64) -> Option<usize> {
        c.read(key, offset, i64::MAX, usize::MAX, true)
            .map(|r| r.len())
    }

    /// A batch copied into the cache's memory, as a leader's copy is.
    fn copied(c: &mut BatchCache, base: i64, size: usize) -> CachedBatch {
        let (bytes, backing) = c.copy(&vec![base as u8; size]).freeze();
        CachedBatch {
            base_offset: base,
            last_offset: base,
            bytes,
            backing,
        }
    }

    const BLOCKS_MIN_CAPACITY: usize =
        READ_CACHE_BLOCKS_MIN_CAPACITY_BLOCKS * READ_CACHE_BLOCK_BYTES;

    #[test]
    fn batches_copied_into_a_block_count_it_once_and_freed_blocks_wait_as_spares() {
        let mut c = BatchCache::new(BLOCKS_MIN_CAPACITY);
        let key = c.register();
        let batches: Vec<CachedBatch> = (0..3).map(|i| copied(&mut c, i, 1000)).collect();
        assert!(batches.iter().all(|b| b.backing == batches[0].backing));
        c.append(key, batches);
        assert_eq!(c.used_bytes(), READ_CACHE_BLOCK_BYTES, "the block, once");
        assert_eq!(c.batch_bytes(), 3000);
        assert_eq!(c.stats().buffers, 1);
        c.truncate(key, 0);
        assert_eq!(c.used_bytes(), 0);
        // The allocator still cuts small copies from the block; once it
        // moves on, the freed block waits as a spare, its memory not counted.
        c.blocks.close_open_block();
        assert_eq!(c.stats().spare_bytes, READ_CACHE_BLOCK_BYTES as u64);
        let again = copied(&mut c, 5, 1000);
        assert_eq!(c.stats().blocks_reused, 1);
        assert_eq!(c.stats().blocks_mapped, 1);
        assert_eq!(c.stats().spare_bytes, 0);
        drop(again);
    }

    #[test]
    fn a_block_stays_counted_whole_while_its_batches_are_a_quarter_of_it() {
        let mut c = BatchCache::new(BLOCKS_MIN_CAPACITY);
        let key = c.register();
        let mib = 1024 * 1024;
        let batches: Vec<CachedBatch> = (0..3).map(|i| copied(&mut c, i, mib)).collect();
        let first = batches[0].backing;
        assert!(batches.iter().all(|b| b.backing == first));
        c.append(key, batches);
        // A copy that does not fit opens another block, so the first is no
        // longer cut from.
        let next = copied(&mut c, 3, mib + 1);
        assert_ne!(next.backing, first);
        drop(next);
        for (keep, batch_bytes) in [(2, 2 * mib), (1, mib)] {
            c.truncate(key, keep);
            assert_eq!(
                c.used_bytes(),
                READ_CACHE_BLOCK_BYTES,
                "{keep} batches left"
            );
            assert_eq!(c.batch_bytes(), batch_bytes);
        }
        assert_eq!(c.stats().copied_bytes, 0);
        c.truncate(key, 0);
        assert_eq!(c.used_bytes(), 0);
        assert_eq!(c.stats().spare_bytes, READ_CACHE_BLOCK_BYTES as u64);
    }

    #[test]
    fn the_block_being_cut_from_is_not_copied_out_while_sparse() {
        let mut c = BatchCache::new(BLOCKS_MIN_CAPACITY);
        let key = c.register();
        let batches: Vec<CachedBatch> = (0..2).map(|i| copied(&mut c, i, 1000)).collect();
        c.append(key, batches);
        c.truncate(key, 1);
        assert_eq!(c.used_bytes(), READ_CACHE_BLOCK_BYTES);
        assert_eq!(c.stats().copied_bytes, 0);
    }

    #[test]
    fn a_budget_below_what_is_held_gives_the_spare_blocks_back() {
        let mut c = BatchCache::new(2 * BLOCKS_MIN_CAPACITY);
        let key = c.register();
        let blocks = 2 * READ_CACHE_BLOCKS_MIN_CAPACITY_BLOCKS;
        for i in 0..blocks as i64 {
            let b = copied(&mut c, i, READ_CACHE_BLOCK_BYTES);
            c.insert(key, b);
        }
        c.truncate(key, blocks as i64 - 4);
        assert!(c.stats().spare_bytes > 0, "freed blocks wait as spares");
        // A budget the cache still fits keeps them.
        c.set_capacity(2 * BLOCKS_MIN_CAPACITY - READ_CACHE_BLOCK_BYTES);
        assert!(c.stats().spare_bytes > 0);
        // One below what it holds gives them back, and a budget too small
        // for blocks copies into allocations of their own from then on.
        c.set_capacity(2 * READ_CACHE_BLOCK_BYTES);
        assert_eq!(c.stats().spare_bytes, 0);
        assert!(c.used_bytes() <= 2 * READ_CACHE_BLOCK_BYTES);
        let b = copied(&mut c, blocks as i64, 1000);
        assert_eq!(b.backing, Backing::of(&b.bytes));
    }

    #[test]
    fn a_cache_too_small_for_blocks_copies_into_allocations_of_their_own() {
        let mut c = BatchCache::new(BLOCKS_MIN_CAPACITY - 1);
        let key = c.register();
        let b = copied(&mut c, 0, 1000);
        assert_eq!(b.backing, Backing::of(&b.bytes));
        c.insert(key, b);
        assert_eq!(c.used_bytes(), 1000);
        assert!(c.block_piece(READ_CACHE_BLOCK_BYTES).is_none());
        assert_eq!(c.stats().blocks_mapped, 0);
    }

    #[test]
    fn eviction_of_a_blocks_last_batch_frees_the_block_for_reuse() {
        let mut c = BatchCache::new(BLOCKS_MIN_CAPACITY);
        let key = c.register();
        // Read-aheads of a whole block each, one more than fits.
        for i in 0..=READ_CACHE_BLOCKS_MIN_CAPACITY_BLOCKS as i64 {
            let mut piece = c.block_piece(READ_CACHE_BLOCK_BYTES).expect("a block");
            piece.write_at(0, &vec![i as u8; READ_CACHE_BLOCK_BYTES]);
            let (bytes, backing) = CacheCopy::Block(piece).freeze();
            c.fill(
                key,
                c.partitions[&key].generation,
                vec![CachedBatch {
                    base_offset: i,
                    last_offset: i,
                    bytes,
                    backing,
                }],
            );
        }
        assert!(c.used_bytes() <= c.capacity_bytes());
        assert_eq!(c.stats().evictions, 1);
        assert_eq!(c.stats().spare_bytes, READ_CACHE_BLOCK_BYTES as u64);
        // The next read-ahead reuses the evicted block's memory.
        assert!(c.block_piece(READ_CACHE_BLOCK_BYTES).is_some());
        assert_eq!(c.stats().blocks_reused, 1);
        // Every cached batch still reads back as written.
        for i in 1..=READ_CACHE_BLOCKS_MIN_CAPACITY_BLOCKS as i64 {
            let got = c.read(key, i, i + 1, usize::MAX, true).expect("cached");
            assert!(got[0].iter().all(|&x| x == i as u8));
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

    const MIB: usize = 1024 * 1024;

    /// `count` batches of `size` bytes, one after another from `base` (one
    /// offset each), cut from one buffer of `buffer_len` bytes.
    fn cut(base: i64, count: usize, size: usize, buffer_len: usize) -> Vec<CachedBatch> {
        let buffer = Bytes::from(vec![1u8; buffer_len]);
        (0..count)
            .map(|i| CachedBatch {
                base_offset: base + i as i64,
                last_offset: base + i as i64,
                bytes: buffer.slice(i * size..(i + 1) * size),
                backing: Backing::of(&buffer),
            })
            .collect()
    }

    #[test]
    fn a_buffer_is_counted_once_and_whole_while_any_batch_keeps_it() {
        let cache = BatchCache::shared(64 * MIB);
        let k = cache.borrow_mut().register();
        let ticket = BatchCache::fill_ticket(&cache, k).unwrap();
        // A 4 MiB read-ahead holding 1,000 batches of 4,000 bytes.
        ticket.fill(cut(0, 1000, 4000, 4 * MIB));
        let mut c = cache.borrow_mut();
        assert_eq!(c.used_bytes(), 4 * MIB, "the buffer, once");
        assert_eq!(c.batch_bytes(), 4_000_000);
        assert_eq!(c.stats().buffers, 1);
        assert_eq!(c.stats().copied_bytes, 0, "a dense buffer is kept as it is");
        // Truncating half of it frees nothing: the rest keeps it alive.
        c.truncate(k, 500);
        assert_eq!(c.used_bytes(), 4 * MIB);
        // Truncating to a sliver copies the sliver out and lets it go.
        c.truncate(k, 10);
        assert_eq!(c.used_bytes(), 40_000);
        assert_eq!(c.stats().buffers, 10);
        assert_eq!(c.stats().copied_bytes, 40_000);
        assert_eq!(
            bases(&mut c, k, 0),
            Some(10),
            "the copies still read as one run"
        );
        c.unregister(k);
        assert_eq!(
            (c.used_bytes(), c.batch_bytes(), c.stats().buffers),
            (0, 0, 0)
        );
    }

    /// The reader issue 34 names: each read-ahead buffer is 4 MiB and only
    /// one small batch of it is new to the cache (the rest was cached
    /// already, or is not a whole batch). Counted by batch, 100 such reads
    /// kept 400 MiB alive under a 1 MiB cap.
    #[test]
    fn a_sequential_reader_cannot_pin_big_buffers_through_small_batches() {
        let cap = MIB;
        let cache = BatchCache::shared(cap);
        let k = cache.borrow_mut().register();
        for i in 0..100 {
            let ticket = BatchCache::fill_ticket(&cache, k).unwrap();
            ticket.fill(cut(i, 1, 1000, 4 * MIB));
            let c = cache.borrow();
            assert!(c.used_bytes() <= cap, "read {i}: {} bytes", c.used_bytes());
        }
        let c = cache.borrow();
        assert_eq!(
            c.used_bytes(),
            100 * 1000,
            "each batch copied into its own buffer"
        );
        assert_eq!(c.stats().batches, 100);
    }

    #[test]
    fn eviction_frees_a_buffer_with_its_last_batch_or_copies_out_recent_survivors() {
        let cache = BatchCache::shared(10 * MIB);
        let (a, b) = {
            let mut c = cache.borrow_mut();
            (c.register(), c.register())
        };
        let fill = |key, batches| BatchCache::fill_ticket(&cache, key).unwrap().fill(batches);
        // Two 4 MiB buffers of 100 batches of 40,000 bytes each.
        fill(a, cut(0, 100, 40_000, 4 * MIB));
        fill(b, cut(0, 100, 40_000, 4 * MIB));
        // A reader of partition a keeps its first 10 batches recent.
        assert_eq!(
            cache
                .borrow_mut()
                .read(a, 0, 10, usize::MAX, true)
                .unwrap()
                .len(),
            10
        );
        // A third buffer: a's 90 old batches go first, leaving its 10 recent
        // ones (under a quarter of the buffer), which are copied out
        // instead of evicting b's too.
        fill(b, cut(100, 100, 40_000, 4 * MIB));
        let mut c = cache.borrow_mut();
        assert!(c.used_bytes() <= 10 * MIB);
        assert_eq!(c.stats().evictions, 90);
        assert_eq!(c.stats().copied_bytes, 400_000);
        assert_eq!(bases(&mut c, a, 0), Some(10));
        assert_eq!(bases(&mut c, b, 0), Some(200));
        assert_eq!(c.used_bytes(), 8 * MIB + 400_000);
    }

    #[test]
    fn a_sequential_reader_ages_buffers_out_whole_without_copies() {
        let cache = BatchCache::shared(8 * MIB);
        let k = cache.borrow_mut().register();
        for i in 0..20 {
            let ticket = BatchCache::fill_ticket(&cache, k).unwrap();
            ticket.fill(cut(i * 100, 100, 40_000, 4 * MIB));
            let mut c = cache.borrow_mut();
            assert!(c.used_bytes() <= 8 * MIB);
            // The reader reads what was filled, in order.
            let read = c.read(k, i * 100, (i + 1) * 100, usize::MAX, true);
            assert_eq!(read.map(|r| r.len()), Some(100));
        }
        let c = cache.borrow();
        assert_eq!(c.stats().copied_bytes, 0);
        assert_eq!(c.stats().buffers, 2);
    }

    #[test]
    fn a_lower_capacity_evicts_at_once_and_a_buffer_larger_than_the_cache_is_copied_from() {
        let mut c = BatchCache::new(8 * MIB);
        let k = c.register();
        c.append(k, cut(0, 100, 40_000, 4 * MIB));
        c.append(k, cut(100, 100, 40_000, 4 * MIB));
        assert_eq!(c.used_bytes(), 8 * MIB);
        c.set_capacity(5 * MIB);
        assert_eq!(c.used_bytes(), 4 * MIB, "the older buffer went");
        assert!(bases(&mut c, k, 0).is_none());
        assert_eq!(c.capacity_bytes(), 5 * MIB);
        c.set_capacity(MIB);
        assert_eq!(c.used_bytes(), 0);
        c.set_capacity(64 * MIB);
        assert_eq!(c.capacity_bytes(), 8 * MIB, "never past the ceiling");
        c.set_capacity(MIB);
        // A batch cut from a buffer bigger than the whole cache is copied.
        c.append(k, cut(200, 1, 40_000, 4 * MIB));
        assert_eq!(c.used_bytes(), 40_000);
        assert_eq!(bases(&mut c, k, 200), Some(1));
    }
}
