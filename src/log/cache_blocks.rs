//! Memory for the read cache's copies, in blocks whose pages are taken in
//! bulk and reused.
//!
//! The read cache keeps every byte a leader appends and every byte read
//! through it, so while it grows each of those bytes lands in memory the
//! process touches for the first time. Taken from the general allocator,
//! that memory faults in one 4 KiB page at a time in the middle of the
//! copy: with the cache filling at a gigabyte a second, about a quarter of
//! a broker's CPU (`tuning/results.md`, 2026-12-06). Kafka's page cache
//! takes the same pages without a fault per page.
//!
//! So the cache's copies go into blocks of [`READ_CACHE_BLOCK_BYTES`]:
//! anonymous mappings whose pages are taken [`POPULATE_CHUNK_BYTES`] at a
//! time, just ahead of the copy that needs them (`MADV_POPULATE_WRITE`),
//! rather than a fault per page. The chunk is small enough that taking it
//! stalls the shard no longer than a copy of that size faulting page by
//! page did (a whole block at once stalled it for milliseconds and raised
//! the p99 of produce), and the copy then finds the pages still in the CPU's
//! cache. A block whose last slice is dropped goes back to its shard's
//! spares and is reused, its pages already taken.
//!
//! Spares past [`READ_CACHE_SPARE_BLOCKS`] are unmapped at once, so memory
//! the cache lets go of (a deleted topic) goes back to the kernel. Giving
//! them back lazily instead (`MADV_FREE`, reused if the kernel had not
//! taken their pages) halved the cost of regrowing the cache, but left the
//! machine's free memory to reclaim: other processes' allocations then
//! stalled (memory pressure of 11% with 20 GB available), and the
//! cache's own budget fell with it (`tuning/README.md`, "Read cache
//! memory").
//!
//! Copies of less than half a block share one, bump-allocated; a copy of
//! half a block or more starts a fresh block: a read-ahead keeps it to
//! itself, and a follower's large fetch response leaves its rest to the
//! small copies that follow when it has more room than the block they
//! were cut from. A copy larger than a block, or one made when no mapping
//! can be had, comes from the general allocator as before.
//!
//! The cache counts a block whole while any batch in it is cached, as it
//! counts every buffer its batches keep alive (`batch_cache::Backing`).
//! Blocks are freed on whatever thread drops their last slice (a response
//! may cross shards), hence the spares' mutex; the shard that owns them is
//! the only other party, so it is never contended in practice.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use memmap2::{Advice, MmapMut};

use crate::constants::{READ_CACHE_BLOCK_BYTES, READ_CACHE_SPARE_BLOCKS};
use crate::log::batch_cache::Backing;

/// Bump allocations within a block start on this boundary (a cache line),
/// so that no two copies share one.
const PIECE_ALIGN: usize = 64;

/// A block's pages are taken this many bytes at a time (64 pages), ahead
/// of the copy that reaches them.
pub const POPULATE_CHUNK_BYTES: usize = 256 * 1024;

/// A block's chunks, one bit each: which have their pages taken.
type ChunkMask = u32;
const BLOCK_CHUNKS: usize = READ_CACHE_BLOCK_BYTES / POPULATE_CHUNK_BYTES;
const _: () = assert!(
    READ_CACHE_BLOCK_BYTES % POPULATE_CHUNK_BYTES == 0 && BLOCK_CHUNKS <= ChunkMask::BITS as usize
);

/// `count` chunks from chunk `first`, as a mask.
const fn chunk_run(first: usize, count: usize) -> ChunkMask {
    (((1u64 << count) - 1) << first) as ChunkMask
}

/// The chunks the bytes `[start, end)` of a block lie in.
fn chunks_of(start: usize, end: usize) -> ChunkMask {
    if start >= end {
        return 0;
    }
    let first = start / POPULATE_CHUNK_BYTES;
    let last = (end - 1) / POPULATE_CHUNK_BYTES;
    chunk_run(first, last + 1 - first)
}

/// Counters of a shard's blocks, for the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockStats {
    /// Freed blocks waiting to be used again.
    pub spare_blocks: u64,
    /// Blocks mapped.
    pub mapped: u64,
    /// Freed blocks kept and used again.
    pub reused: u64,
    /// Freed blocks unmapped because enough were spare, or because the
    /// machine was short of memory.
    pub released: u64,
}

/// A block's mapping, and which of its chunks have their pages taken.
struct Mapping {
    map: MmapMut,
    /// All of them once the block has been used to its end.
    populated: ChunkMask,
}

/// A shard's freed blocks, waiting to be used again. Shared with every
/// block, which comes back here when its last slice is dropped.
#[derive(Default)]
pub struct SpareBlocks {
    blocks: Mutex<Vec<Mapping>>,
    mapped: AtomicU64,
    reused: AtomicU64,
    released: AtomicU64,
}

impl SpareBlocks {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Mapping>> {
        // A panic while the lock is held leaves a valid Vec.
        self.blocks.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn spare_count(&self) -> usize {
        self.lock().len()
    }

    /// A spare block, or a new mapping (its pages not yet taken); `None`
    /// when the kernel refuses the mapping.
    fn take(&self) -> Option<Mapping> {
        if let Some(mapping) = self.lock().pop() {
            self.reused.fetch_add(1, Ordering::Relaxed);
            return Some(mapping);
        }
        let map = MmapMut::map_anon(READ_CACHE_BLOCK_BYTES).ok()?;
        self.mapped.fetch_add(1, Ordering::Relaxed);
        Some(Mapping { map, populated: 0 })
    }

    /// Unmaps every spare (after the lock is released): the machine is
    /// short of memory, and spares are outside the cache's budget.
    fn release_all(&self) {
        let spares = std::mem::take(&mut *self.lock());
        self.released
            .fetch_add(spares.len() as u64, Ordering::Relaxed);
        drop(spares);
    }

    /// A freed block: kept while fewer than [`READ_CACHE_SPARE_BLOCKS`]
    /// wait, unmapped otherwise (after the lock is released).
    fn give_back(&self, mapping: Mapping) {
        let mut blocks = self.lock();
        if blocks.len() < READ_CACHE_SPARE_BLOCKS {
            blocks.push(mapping);
        } else {
            drop(blocks);
            self.released.fetch_add(1, Ordering::Relaxed);
            drop(mapping);
        }
    }
}

/// One block in use: its mapping, and the spares it goes back to.
struct Block {
    map: Option<MmapMut>,
    /// The mapping's first byte, taken once: slices read and write through
    /// it, never through `map`.
    start: NonNull<u8>,
    /// The chunks whose pages are taken; only grows.
    populated: AtomicU32,
    spares: Arc<SpareBlocks>,
}

// SAFETY: a block's bytes are reached only through the slices the
// allocator hands out, which never overlap: one mutable owner per range
// until it is frozen, shared reads after.
unsafe impl Send for Block {}
unsafe impl Sync for Block {}

impl Block {
    fn new(mapping: Mapping, spares: Arc<SpareBlocks>) -> Block {
        let Mapping { mut map, populated } = mapping;
        let start = NonNull::new(map.as_mut_ptr()).expect("a mapping is never at address 0");
        Block {
            map: Some(map),
            start,
            populated: AtomicU32::new(populated),
            spares,
        }
    }

    fn backing(&self) -> Backing {
        Backing::block(self.start.as_ptr() as usize, READ_CACHE_BLOCK_BYTES)
    }

    /// Takes the pages of the chunks `[start, end)` lies in that are not
    /// taken yet, one call per run of them. Only those: a small copy cut
    /// past a large piece still being read in must not take the pages
    /// between them in one stall. Kernels before 5.14 lack
    /// `MADV_POPULATE_WRITE`: there the pages fault in on first touch, as
    /// the general allocator's do.
    fn populate(&self, start: usize, end: usize) {
        let missing = chunks_of(start, end) & !self.populated.load(Ordering::Relaxed);
        if missing == 0 {
            return;
        }
        if let Some(map) = &self.map {
            let mut left = missing;
            while left != 0 {
                let first = left.trailing_zeros() as usize;
                let count = (left >> first).trailing_ones() as usize;
                let _ = map.advise_range(
                    Advice::PopulateWrite,
                    first * POPULATE_CHUNK_BYTES,
                    count * POPULATE_CHUNK_BYTES,
                );
                left &= !chunk_run(first, count);
            }
        }
        self.populated.fetch_or(missing, Ordering::Relaxed);
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        if let Some(map) = self.map.take() {
            let populated = *self.populated.get_mut();
            self.spares.give_back(Mapping { map, populated });
        }
    }
}

/// A range of a block, written by its one owner and then frozen into
/// [`Bytes`] that keep the block alive.
pub struct BlockPiece {
    block: Arc<Block>,
    offset: usize,
    len: usize,
}

impl BlockPiece {
    fn as_slice(&self) -> &[u8] {
        // SAFETY: offset + len is within the block (`CacheBlocks::piece`),
        // whose mapping lives as long as `block`.
        unsafe { std::slice::from_raw_parts(self.block.start.as_ptr().add(self.offset), self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and no other piece covers this range: the
        // allocator hands each range out once, and a piece is not Clone.
        unsafe {
            std::slice::from_raw_parts_mut(self.block.start.as_ptr().add(self.offset), self.len)
        }
    }

    /// Copies `data` to `at` within the piece, taking the block's pages
    /// in bulk first. Pieces are written front to back, as they are cut.
    pub fn write_at(&mut self, at: usize, data: &[u8]) {
        let start = self.offset + at;
        self.block.populate(start, start + data.len());
        self.as_mut_slice()[at..at + data.len()].copy_from_slice(data);
    }

    /// `len` bytes of the piece from `at`, to be written in place (a
    /// socket read into them), their pages taken first. Never read bytes
    /// not written since the piece was cut: until written they hold an
    /// earlier copy's bytes, or zeros. Write a large piece a
    /// [`POPULATE_CHUNK_BYTES`] at a time, front to back, as `write_at`
    /// does: taking a whole fresh block's pages in one call stalls the
    /// shard for milliseconds.
    pub fn writable(&mut self, at: usize, len: usize) -> &mut [u8] {
        let start = self.offset + at;
        self.block.populate(start, start + len);
        &mut self.as_mut_slice()[at..at + len]
    }
}

impl AsRef<[u8]> for BlockPiece {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

/// A copy of bytes for the read cache, mutable until frozen (a leader
/// rewrites its batches' offsets): in a block, or from the general
/// allocator.
pub enum CacheCopy {
    Heap(BytesMut),
    Block(BlockPiece),
}

impl CacheCopy {
    /// The bytes, and the buffer the cache counts for them.
    pub fn freeze(self) -> (Bytes, Backing) {
        match self {
            CacheCopy::Heap(b) => {
                let bytes = b.freeze();
                let backing = Backing::of(&bytes);
                (bytes, backing)
            }
            CacheCopy::Block(piece) => {
                let backing = piece.block.backing();
                (Bytes::from_owner(piece), backing)
            }
        }
    }
}

impl From<BytesMut> for CacheCopy {
    fn from(b: BytesMut) -> CacheCopy {
        CacheCopy::Heap(b)
    }
}

impl Deref for CacheCopy {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            CacheCopy::Heap(b) => b,
            CacheCopy::Block(p) => p.as_slice(),
        }
    }
}

impl DerefMut for CacheCopy {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            CacheCopy::Heap(b) => b,
            CacheCopy::Block(p) => p.as_mut_slice(),
        }
    }
}

impl std::fmt::Debug for CacheCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            CacheCopy::Heap(_) => "heap",
            CacheCopy::Block(_) => "block",
        };
        write!(f, "CacheCopy({kind}, {} bytes)", self.len())
    }
}

/// One shard's block allocator.
#[derive(Default)]
pub struct CacheBlocks {
    /// The block small copies are cut from, and how much of it is used.
    open: Option<(Arc<Block>, usize)>,
    spares: Arc<SpareBlocks>,
}

impl std::fmt::Debug for CacheBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheBlocks")
            .field("open_used", &self.open.as_ref().map(|(_, used)| *used))
            .field("spares", &self.spares.spare_count())
            .finish()
    }
}

impl CacheBlocks {
    /// A copy of `bytes`: in a block when it is at most a block, from the
    /// general allocator otherwise.
    pub fn copy(&mut self, bytes: &[u8]) -> CacheCopy {
        match self.piece(bytes.len()) {
            Some(mut piece) => {
                piece.write_at(0, bytes);
                CacheCopy::Block(piece)
            }
            None => CacheCopy::Heap(BytesMut::from(bytes)),
        }
    }

    /// `len` bytes of a block, to be written with
    /// [`BlockPiece::write_at`] (until then they hold zeros or an earlier
    /// copy's bytes). A piece of half a block or more (a read-ahead) takes a
    /// block of its own: what the read caches of it may be a sliver, which
    /// the cache then copies out to free the block. `None` for an empty or
    /// oversized copy, or when the kernel refuses a new mapping.
    pub fn piece(&mut self, len: usize) -> Option<BlockPiece> {
        self.cut(len, false)
    }

    /// [`piece`](Self::piece) for a follower's fetch response, whose
    /// records the cache keeps whole: one of half a block or more starts a
    /// fresh block, whose rest takes the small copies that follow when it
    /// has more room than the open block. A 2.1 MiB response would
    /// otherwise hold a block of its own, counted whole, with 1.9 MiB of it
    /// never used.
    pub fn frame_piece(&mut self, len: usize) -> Option<BlockPiece> {
        self.cut(len, true)
    }

    fn cut(&mut self, len: usize, share_rest: bool) -> Option<BlockPiece> {
        if len == 0 || len > READ_CACHE_BLOCK_BYTES {
            return None;
        }
        if len * 2 >= READ_CACHE_BLOCK_BYTES {
            let block = self.take_block()?;
            let used = len.next_multiple_of(PIECE_ALIGN);
            let open_room = self
                .open
                .as_ref()
                .map_or(0, |(_, open_used)| READ_CACHE_BLOCK_BYTES - open_used);
            if share_rest && READ_CACHE_BLOCK_BYTES.saturating_sub(used) > open_room {
                self.open = Some((block.clone(), used));
            }
            return Some(BlockPiece {
                block,
                offset: 0,
                len,
            });
        }
        let fits = self
            .open
            .as_ref()
            .is_some_and(|(_, used)| used + len <= READ_CACHE_BLOCK_BYTES);
        if !fits {
            // The rest of the old block stays unused; the cache counts it
            // whole while any of its batches is cached.
            self.open = Some((self.take_block()?, 0));
        }
        let (block, used) = self.open.as_mut().expect("opened above");
        let offset = *used;
        *used = (offset + len).next_multiple_of(PIECE_ALIGN);
        Some(BlockPiece {
            block: block.clone(),
            offset,
            len,
        })
    }

    fn take_block(&mut self) -> Option<Arc<Block>> {
        let mapping = self.spares.take()?;
        Some(Arc::new(Block::new(mapping, self.spares.clone())))
    }

    /// Lets go of the block small copies are cut from: it is freed (to
    /// the spares) with its last slice.
    pub fn close_open_block(&mut self) {
        self.open = None;
    }

    /// Whether `backing` is the block small copies are being cut from.
    pub fn is_open(&self, backing: Backing) -> bool {
        self.open
            .as_ref()
            .is_some_and(|(block, _)| block.backing() == backing)
    }

    /// Gives the spare blocks back to the kernel.
    pub fn release_spares(&self) {
        self.spares.release_all();
    }

    pub fn stats(&self) -> BlockStats {
        BlockStats {
            spare_blocks: self.spares.spare_count() as u64,
            mapped: self.spares.mapped.load(Ordering::Relaxed),
            reused: self.spares.reused.load(Ordering::Relaxed),
            released: self.spares.released.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_CHUNKS: ChunkMask = chunk_run(0, BLOCK_CHUNKS);

    #[test]
    fn small_copies_share_a_block_without_overlapping() {
        let mut blocks = CacheBlocks::default();
        let (a, backing_a) = blocks.copy(&[1u8; 1000]).freeze();
        let (b, backing_b) = blocks.copy(&[2u8; 3000]).freeze();
        assert_eq!(backing_a, backing_b, "one block");
        assert_eq!(backing_a.len(), READ_CACHE_BLOCK_BYTES);
        assert!(a.iter().all(|&x| x == 1) && a.len() == 1000);
        assert!(b.iter().all(|&x| x == 2) && b.len() == 3000);
        let (a_end, b_start) = (a.as_ptr() as usize + a.len(), b.as_ptr() as usize);
        assert!(a_end <= b_start, "the second copy starts after the first");
        assert_eq!(b_start % PIECE_ALIGN, 0);
        assert_eq!(blocks.stats().mapped, 1);
    }

    #[test]
    fn a_leader_rewrites_its_copy_before_freezing_it() {
        let mut blocks = CacheBlocks::default();
        let mut copy = blocks.copy(b"abcdef");
        copy[0] = b'X';
        let (bytes, _) = copy.freeze();
        assert_eq!(&bytes[..], b"Xbcdef");
    }

    #[test]
    fn a_read_ahead_takes_a_block_of_its_own_and_large_copies_use_the_heap() {
        let mut blocks = CacheBlocks::default();
        let (small, small_backing) = blocks.copy(&[0u8; 100]).freeze();
        // A read-ahead is written piece by piece, past several chunks.
        let half = READ_CACHE_BLOCK_BYTES / 2;
        let mut piece = blocks.piece(half).expect("a block");
        let third = half / 3;
        for (i, at) in [0, third, 2 * third].into_iter().enumerate() {
            let end = if i == 2 { half } else { at + third };
            piece.write_at(at, &vec![i as u8 + 1; end - at]);
        }
        assert_eq!(
            piece.block.populated.load(Ordering::Relaxed),
            chunks_of(0, half),
            "pages taken chunk by chunk, up to the end written"
        );
        let (read, read_backing) = CacheCopy::Block(piece).freeze();
        assert_ne!(small_backing, read_backing);
        assert_eq!(
            read_backing,
            Backing::block(read.as_ptr() as usize, READ_CACHE_BLOCK_BYTES),
            "the read-ahead starts its block"
        );
        assert!(read[..third].iter().all(|&x| x == 1));
        assert!(read[third..2 * third].iter().all(|&x| x == 2));
        assert!(read[2 * third..].iter().all(|&x| x == 3));
        let big = blocks.copy(&vec![0u8; READ_CACHE_BLOCK_BYTES + 1]);
        assert!(matches!(big, CacheCopy::Heap(_)));
        let (big, big_backing) = big.freeze();
        assert_eq!(big_backing, Backing::of(&big));
        assert!(blocks.piece(0).is_none());
        // The small copies still share the block opened first.
        let (next, next_backing) = blocks.copy(&[0u8; 100]).freeze();
        assert_eq!(next_backing, small_backing);
        drop((small, next));
    }

    #[test]
    fn small_copies_after_a_large_frame_share_its_block_when_it_has_more_room() {
        let mut blocks = CacheBlocks::default();
        // The open block is three quarters used.
        let quarter = READ_CACHE_BLOCK_BYTES / 4;
        let first: Vec<_> = (0..3)
            .map(|_| blocks.copy(&vec![1u8; quarter]).freeze())
            .collect();
        let open_backing = first[0].1;
        assert!(first.iter().all(|(_, b)| *b == open_backing));
        // A read-ahead of 2.1 MiB keeps its block to itself: the read may
        // cache a sliver of it, which the cache then copies out.
        let large_len = READ_CACHE_BLOCK_BYTES / 2 + 100 * 1024;
        let read_ahead = blocks.piece(large_len).expect("a block");
        let (_, after_read_ahead) = blocks.copy(&[5u8; 1000]).freeze();
        assert_eq!(after_read_ahead, open_backing);
        // A follower's 2.1 MiB frame starts a fresh block with more room
        // left than the open one: the small copies that follow fill it.
        let mut large = blocks.frame_piece(large_len).expect("a block");
        large.write_at(0, &vec![2u8; large_len]);
        let (large, large_backing) = CacheCopy::Block(large).freeze();
        assert_ne!(large_backing, open_backing);
        let (small, small_backing) = blocks.copy(&[3u8; 1000]).freeze();
        assert_eq!(
            small_backing, large_backing,
            "the small copy fills the frame's block"
        );
        let (large_end, small_start) = (
            large.as_ptr() as usize + large.len(),
            small.as_ptr() as usize,
        );
        assert!(large_end <= small_start, "after the frame");
        assert!(large.iter().all(|&x| x == 2) && small.iter().all(|&x| x == 3));
        // A whole-block frame leaves no room: the open block stays.
        let whole = blocks.frame_piece(READ_CACHE_BLOCK_BYTES).expect("a block");
        let (next, next_backing) = blocks.copy(&[4u8; 1000]).freeze();
        assert_eq!(next_backing, large_backing);
        assert_eq!(blocks.stats().mapped, 4);
        drop((first, read_ahead, large, small, whole, next));
    }

    #[test]
    fn a_small_copy_past_a_frame_still_being_read_takes_only_its_own_pages() {
        let mut blocks = CacheBlocks::default();
        let len = READ_CACHE_BLOCK_BYTES * 3 / 4;
        let mut frame = blocks.frame_piece(len).expect("a block");
        // The socket has filled the frame's first chunk so far.
        frame.writable(0, POPULATE_CHUNK_BYTES).fill(6);
        // A leader's copy is cut past the frame meanwhile.
        let (small, small_backing) = blocks.copy(&[7u8; 1000]).freeze();
        assert_eq!(
            small_backing,
            Backing::block(frame.block.start.as_ptr() as usize, READ_CACHE_BLOCK_BYTES)
        );
        let small_at = small.as_ptr() as usize - frame.block.start.as_ptr() as usize;
        assert_eq!(
            frame.block.populated.load(Ordering::Relaxed),
            chunks_of(0, POPULATE_CHUNK_BYTES) | chunks_of(small_at, small_at + small.len()),
            "the chunks between the two are not taken in one stall"
        );
        // The rest of the frame arrives, chunk by chunk.
        let mut at = POPULATE_CHUNK_BYTES;
        while at < len {
            let chunk = (len - at).min(POPULATE_CHUNK_BYTES);
            frame.writable(at, chunk).fill(6);
            at += chunk;
        }
        let (frame, _) = CacheCopy::Block(frame).freeze();
        assert!(frame.iter().all(|&x| x == 6) && small.iter().all(|&x| x == 7));
    }

    #[test]
    fn a_freed_block_is_reused_with_its_pages_and_spares_past_the_limit_are_released() {
        let mut blocks = CacheBlocks::default();
        let count = READ_CACHE_SPARE_BLOCKS + 3;
        let mut held: Vec<(Bytes, Backing)> = (0..count)
            .map(|i| blocks.copy(&vec![i as u8; READ_CACHE_BLOCK_BYTES]).freeze())
            .collect();
        assert_eq!(blocks.stats().mapped as usize, count);
        // A slice of the first block dropped on another thread (a response
        // sent by another shard) frees it there.
        let (first, first_backing) = held.remove(0);
        std::thread::spawn(move || drop(first)).join().unwrap();
        assert_eq!(blocks.spares.spare_count(), 1);
        let piece = blocks.piece(READ_CACHE_BLOCK_BYTES).expect("a block");
        assert_eq!(
            piece.block.populated.load(Ordering::Relaxed),
            ALL_CHUNKS,
            "its pages are still taken"
        );
        let mut copy = CacheCopy::Block(piece);
        copy.fill(3);
        let (reused, backing) = copy.freeze();
        assert_eq!(backing, first_backing, "the freed block, not a new one");
        held.clear();
        drop(reused);
        let stats = blocks.stats();
        assert_eq!(stats.mapped as usize, count, "no new mapping");
        assert_eq!(stats.reused, 1);
        assert_eq!(stats.spare_blocks as usize, READ_CACHE_SPARE_BLOCKS);
        assert_eq!(
            stats.released as usize,
            count - READ_CACHE_SPARE_BLOCKS,
            "every block past the spares' limit went back to the kernel"
        );
    }

    #[test]
    fn a_block_outlives_the_allocator_while_a_slice_holds_it() {
        let mut blocks = CacheBlocks::default();
        let (bytes, _) = blocks.copy(b"still here").freeze();
        drop(blocks);
        assert_eq!(&bytes[..], b"still here");
    }
}
