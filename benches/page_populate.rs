//! What a growing read cache pays for its memory: taking the pages of its
//! 4 MiB blocks (`src/log/cache_blocks.rs`) 256 KiB at a time with
//! `MADV_POPULATE_WRITE`, as 4 KiB pages (what the cache does) and as
//! 2 MiB transparent huge pages (`MADV_HUGEPAGE`, blocks 2 MiB aligned),
//! alternating, each round mapping and filling fresh blocks, then copying
//! into each chunk as the cache's copies do. Prints CPU seconds per GB
//! and the longest single populate call (how long a shard would stall),
//! and what giving the blocks back costs.
//!
//! Two more rows fill blocks that were used before, as the cache reuses a
//! freed block: "kept" blocks still hold their pages (a spare), "lazily
//! freed" ones were given back with `MADV_FREE` and taken again before the
//! kernel needed their pages (populated again from the start, as the cache
//! must, since the kernel may have taken any of them).
//!
//! `cargo bench --bench page_populate` (1 GiB a round, 3 rounds each);
//! `PINLOG_BENCH_GIB=4 PINLOG_BENCH_ROUNDS=2 cargo bench --bench page_populate`.
//!
//! Multi-size THP (64 KiB or 512 KiB folios) is the same run with
//! `/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled` set to
//! `never` and a smaller size's to `madvise`: the "huge" rows then use it.

use std::time::{Duration, Instant};

use memmap2::{Advice, MmapMut, UncheckedAdvice};

const BLOCK_BYTES: usize = 4 << 20;
const CHUNK_BYTES: usize = 256 << 10;
const HUGE_PAGE_BYTES: usize = 2 << 20;

fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Where a round's blocks come from.
#[derive(Clone, Copy, PartialEq)]
enum Pages {
    /// Fresh mappings, 4 KiB pages.
    Fresh,
    /// Fresh mappings, transparent huge pages.
    Huge,
    /// Blocks filled before and kept with their pages.
    Kept,
    /// Blocks filled before and then given back with `MADV_FREE`.
    LazilyFreed,
}

impl Pages {
    fn name(self) -> &'static str {
        match self {
            Pages::Fresh => "4 KiB, fresh",
            Pages::Huge => "huge, fresh",
            Pages::Kept => "4 KiB, kept",
            Pages::LazilyFreed => "4 KiB, lazily freed",
        }
    }
}

/// A mapping with one huge page more than a block, and where the 2 MiB
/// aligned block inside it starts; its edges are never touched.
fn map_block(huge: bool) -> (MmapMut, usize) {
    let map = MmapMut::map_anon(BLOCK_BYTES + HUGE_PAGE_BYTES).expect("mmap");
    let at = (map.as_ptr() as usize).next_multiple_of(HUGE_PAGE_BYTES) - map.as_ptr() as usize;
    if huge {
        map.advise_range(Advice::HugePage, at, BLOCK_BYTES)
            .expect("MADV_HUGEPAGE");
    }
    (map, at)
}

/// Populates and copies into every chunk of the block at `at`; returns the
/// longest populate call.
fn fill_block(map: &mut MmapMut, at: usize, source: &[u8]) -> Duration {
    let mut longest = Duration::ZERO;
    for chunk in (at..at + BLOCK_BYTES).step_by(CHUNK_BYTES) {
        let t = Instant::now();
        map.advise_range(Advice::PopulateWrite, chunk, CHUNK_BYTES)
            .expect("MADV_POPULATE_WRITE (Linux 5.14 or later)");
        longest = longest.max(t.elapsed());
        map[chunk..chunk + CHUNK_BYTES].copy_from_slice(source);
    }
    longest
}

/// What one round cost.
struct Round {
    /// CPU seconds to fill the blocks (blocks used before are prepared
    /// outside the clock).
    fill: f64,
    /// CPU seconds to give the blocks back: their `MADV_FREE` calls for
    /// lazily freed ones (made before the fill), unmapping them after it
    /// for fresh ones, nothing for kept ones.
    give_back: f64,
    /// The longest populate call.
    longest: Duration,
}

/// Fills `bytes` of blocks taken as `pages` says.
fn fill(bytes: usize, pages: Pages) -> Round {
    let source = vec![7u8; CHUNK_BYTES];
    let count = bytes / BLOCK_BYTES;
    let fresh = matches!(pages, Pages::Fresh | Pages::Huge);
    let mut blocks: Vec<(MmapMut, usize)> = Vec::with_capacity(count);
    let mut freeing = 0.0;
    if !fresh {
        for _ in 0..count {
            let (mut map, at) = map_block(false);
            fill_block(&mut map, at, &source);
            if pages == Pages::LazilyFreed {
                let before = cpu_seconds();
                // SAFETY: nothing borrows the mapping's bytes; the next
                // fill writes before it reads.
                unsafe { map.unchecked_advise_range(UncheckedAdvice::Free, at, BLOCK_BYTES) }
                    .expect("MADV_FREE (Linux 4.5 or later)");
                freeing += cpu_seconds() - before;
            }
            blocks.push((map, at));
        }
    }
    let start = cpu_seconds();
    let mut longest = Duration::ZERO;
    if fresh {
        for _ in 0..count {
            let (mut map, at) = map_block(pages == Pages::Huge);
            longest = longest.max(fill_block(&mut map, at, &source));
            blocks.push((map, at));
        }
    } else {
        for (map, at) in &mut blocks {
            longest = longest.max(fill_block(map, *at, &source));
        }
    }
    let fill = cpu_seconds() - start;
    let give_back = if fresh {
        let before = cpu_seconds();
        drop(blocks);
        cpu_seconds() - before
    } else {
        freeing
    };
    Round {
        fill,
        give_back,
        longest,
    }
}

fn main() {
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let bytes = env("PINLOG_BENCH_GIB", 1) << 30;
    let rounds = env("PINLOG_BENCH_ROUNDS", 3);
    println!("| round | pages | fill, CPU s per GB | give back, CPU s per GB | longest populate of 256 KiB (ms) |");
    println!("|---|---|---|---|---|");
    for round in 1..=rounds {
        for pages in [Pages::Fresh, Pages::Huge, Pages::Kept, Pages::LazilyFreed] {
            let r = fill(bytes, pages);
            let per_gb = |cpu: f64| cpu / (bytes as f64 / 1e9);
            println!(
                "| {round} | {} | {:.3} | {:.3} | {:.2} |",
                pages.name(),
                per_gb(r.fill),
                per_gb(r.give_back),
                r.longest.as_secs_f64() * 1e3
            );
        }
    }
}
