//! What a growing read cache pays for its memory: taking the pages of its
//! 4 MiB blocks (`src/log/cache_blocks.rs`) 256 KiB at a time with
//! `MADV_POPULATE_WRITE`, as 4 KiB pages (what the cache does) and as
//! 2 MiB transparent huge pages (`MADV_HUGEPAGE`, blocks 2 MiB aligned),
//! alternating, each round mapping and filling fresh blocks, then copying
//! into each chunk as the cache's copies do. Prints CPU seconds per GB
//! and the longest single populate call (how long a shard would stall).
//!
//! `cargo bench --bench page_populate` (1 GiB a round, 3 rounds each);
//! `PINLOG_BENCH_GIB=4 PINLOG_BENCH_ROUNDS=2 cargo bench --bench page_populate`.
//!
//! Multi-size THP (64 KiB or 512 KiB folios) is the same run with
//! `/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled` set to
//! `never` and a smaller size's to `madvise`: the "huge" rows then use it.

use std::time::{Duration, Instant};

use memmap2::{Advice, MmapMut};

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

/// Maps and fills `bytes` of blocks; returns the CPU seconds taken, the
/// longest populate call, and the mappings (dropped by the caller, after
/// the clock stops).
fn fill(bytes: usize, huge: bool) -> (f64, Duration, Vec<MmapMut>) {
    let source = vec![7u8; CHUNK_BYTES];
    let start = cpu_seconds();
    let mut longest = Duration::ZERO;
    let mut maps = Vec::new();
    for _ in 0..bytes / BLOCK_BYTES {
        // One huge page more than the block, so that a 2 MiB aligned block
        // fits inside; the edges are never touched.
        let mut map = MmapMut::map_anon(BLOCK_BYTES + HUGE_PAGE_BYTES).expect("mmap");
        let at = (map.as_ptr() as usize).next_multiple_of(HUGE_PAGE_BYTES) - map.as_ptr() as usize;
        if huge {
            map.advise_range(Advice::HugePage, at, BLOCK_BYTES)
                .expect("MADV_HUGEPAGE");
        }
        for chunk in (at..at + BLOCK_BYTES).step_by(CHUNK_BYTES) {
            let t = Instant::now();
            map.advise_range(Advice::PopulateWrite, chunk, CHUNK_BYTES)
                .expect("MADV_POPULATE_WRITE (Linux 5.14 or later)");
            longest = longest.max(t.elapsed());
            map[chunk..chunk + CHUNK_BYTES].copy_from_slice(&source);
        }
        maps.push(map);
    }
    (cpu_seconds() - start, longest, maps)
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
    println!("| round | pages | CPU s per GB | longest populate of 256 KiB (ms) |");
    println!("|---|---|---|---|");
    for round in 1..=rounds {
        for huge in [false, true] {
            let (cpu, longest, maps) = fill(bytes, huge);
            drop(maps);
            println!(
                "| {round} | {} | {:.3} | {:.2} |",
                if huge { "huge" } else { "4 KiB" },
                cpu / (bytes as f64 / 1e9),
                longest.as_secs_f64() * 1e3
            );
        }
    }
}
