//! Stress of the one pattern that corrupted the heap under glommio 0.9: a
//! task with a kept `JoinHandle` that waits for a reply from another shard,
//! is awaited, and has its handle dropped, while the other shard's thread
//! drops the task's waker (see `src/shard/cross_shard.rs`).
//!
//! Both shards ask each other at full speed from short-lived spawned tasks,
//! through both cross-shard entry points (`ping`, a plain request, and
//! `submit_to`, a closure), and a share of the tasks is cancelled while its
//! request is in flight. A use-after-free shows up as an abort ("double free
//! detected in tcache 2") or a "Waker invariant broken" panic, either of
//! which fails this test binary. The run is bounded in time; set
//! `PINLOG_STRESS_SECS` for a longer one by hand.

use std::time::{Duration, Instant};

use pinlog::shard::runtime::{run_shards, ShardConfig, Shutdown};

/// How long the stress runs in CI.
const DEFAULT_STRESS_SECS: u64 = 8;
/// Tasks spawned, awaited and dropped per wave.
const TASKS_PER_WAVE: usize = 64;
/// One task in this many is dropped while its request is in flight.
const CANCEL_ONE_IN: usize = 8;

fn stress_duration() -> Duration {
    let secs = std::env::var("PINLOG_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_STRESS_SECS);
    Duration::from_secs(secs)
}

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    answered: u64,
    cancelled: u64,
}

#[test]
fn cross_shard_asks_from_spawned_awaited_and_dropped_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ShardConfig::new(dir.path());
    // Two shards even on a one-core machine: the pattern needs two threads.
    config.shard_count = 2;
    config.read_cache_bytes = 1 << 20;
    let duration = stress_duration();
    let started = Instant::now();
    let out = run_shards(config, Shutdown::Clean, move |shard| async move {
        let peer = (shard.id() + 1) % shard.shard_count();
        let deadline = Instant::now() + duration;
        let mut counts = Counts::default();
        let mut wave = 0usize;
        while Instant::now() < deadline {
            let tasks: Vec<_> = (0..TASKS_PER_WAVE)
                .map(|i| {
                    let shard = shard.clone();
                    let by_closure = (wave + i) % 2 == 0;
                    glommio::spawn_local(async move {
                        if by_closure {
                            shard
                                .submit_to(peer, |owner| async move { owner.id() })
                                .await
                        } else {
                            shard.ping(peer).await
                        }
                    })
                })
                .collect();
            for (i, task) in tasks.into_iter().enumerate() {
                if i % CANCEL_ONE_IN == 0 {
                    // Dropping a `Task` cancels it, whatever its request is
                    // doing on the peer.
                    drop(task);
                    counts.cancelled += 1;
                } else {
                    let answered_by = task.await.expect("the peer shard answers");
                    assert_eq!(answered_by, peer, "the reply came from the asked shard");
                    counts.answered += 1;
                }
            }
            wave += 1;
        }
        counts
    })
    .expect("the shards run");
    let elapsed = started.elapsed();
    let total: u64 = out.results.iter().map(|c| c.answered).sum();
    let cancelled: u64 = out.results.iter().map(|c| c.cancelled).sum();
    eprintln!(
        "cross-shard stress: {total} answered and {cancelled} cancelled asks in {:.1} s ({:.0} asks/s)",
        elapsed.as_secs_f64(),
        (total + cancelled) as f64 / elapsed.as_secs_f64()
    );
    assert!(out.clean, "the shards stopped cleanly");
    assert!(
        total > 10_000,
        "the stress made too few cross-shard calls to mean anything: {total}"
    );
}
