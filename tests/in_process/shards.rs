//! The shard runtime: pinning, ownership, cross-shard requests, clean and
//! crash restarts.

use std::time::Duration;

use bytes::BytesMut;
use pinlog::log::batch::{build_batch, BatchSpec, RecordSpec};
use pinlog::shard::runtime::{run_shards, ShardConfig, Shutdown};
use pinlog::topic_partition::TopicPartition;

fn config(dir: &std::path::Path) -> ShardConfig {
    let mut c = ShardConfig::new(dir);
    // Two shards even on a one-core machine, so cross-shard paths run.
    c.shard_count = 2;
    c.log_defaults.segment_bytes = 256 * 1024;
    c.read_cache_bytes = 1 << 20;
    c
}

fn batch(n: usize) -> BytesMut {
    let value = [b'v'; 100];
    let recs: Vec<RecordSpec> = (0..n).map(|i| (i as i64, None, &value[..])).collect();
    BytesMut::from(
        &build_batch(&BatchSpec {
            base_offset: 0,
            leader_epoch: 0,
            base_timestamp: 1_000,
            records: &recs,
        })[..],
    )
}

/// The CPUs the calling thread may run on.
fn my_affinity() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

#[test]
fn shard_threads_are_pinned_to_distinct_cores() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ShardConfig::new(dir.path());
    let cpus = c.cpus.clone();
    c.shard_count = cpus.len();
    let out = run_shards(c, Shutdown::Clean, |shard| async move {
        (shard.id(), my_affinity())
    })
    .unwrap();
    let mut seen = Vec::new();
    for (id, affinity) in out.results {
        assert_eq!(
            affinity,
            vec![cpus[id]],
            "shard {id} must run on exactly its core"
        );
        seen.push(affinity[0]);
    }
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), cpus.len(), "each shard has its own core");
}

#[test]
fn appends_route_to_owners_and_survive_clean_and_crash_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let topics: Vec<TopicPartition> = (0..6).map(|p| TopicPartition::new("t", p)).collect();

    // Every shard appends to every partition; half the appends hop.
    let tps = topics.clone();
    let out = run_shards(config(dir.path()), Shutdown::Clean, move |shard| {
        let tps = tps.clone();
        async move {
            for tp in &tps {
                if shard.owner(tp) == shard.id() {
                    shard.open_partition(tp.clone(), None).await.unwrap();
                }
            }
            glommio::timer::sleep(Duration::from_millis(50)).await;
            for round in 0..20 {
                for tp in &tps {
                    let info = shard.append(tp.clone(), batch(5), 0).await.unwrap();
                    assert_eq!(info.last_offset - info.first_offset, 4, "round {round}");
                }
            }
            shard.flush_all().await.unwrap();
        }
    })
    .unwrap();
    assert!(!out.startup.clean_shutdown, "fresh directory");
    assert!(out.clean);
    assert!(dir.path().join(".kafka_cleanshutdown").exists());
    assert!(dir.path().join("recovery-point-offset-checkpoint").exists());

    // Clean restart: every partition holds 2 shards x 20 rounds x 5 records,
    // readable from any shard, and nothing is scanned.
    let tps = topics.clone();
    let out = run_shards(config(dir.path()), Shutdown::Clean, move |shard| {
        let tps = tps.clone();
        async move {
            for tp in &tps {
                let view = shard
                    .set_high_watermark(tp.clone(), i64::MAX)
                    .await
                    .unwrap();
                assert_eq!(view.log_end_offset, 200, "{tp}");
                let batches = shard.read(tp.clone(), 0, 1 << 20).await.unwrap();
                assert!(!batches.is_empty());
            }
            shard.local_summaries().await
        }
    })
    .unwrap();
    assert!(out.startup.clean_shutdown);
    let summaries: Vec<_> = out.results.into_iter().flatten().collect();
    assert_eq!(summaries.len(), 6);
    assert!(summaries.iter().all(|s| s.recovery.segments_recovered == 0));
    assert!(!dir.path().join(".kafka_cleanshutdown").exists() || out.clean);

    // Append more, then crash: no marker, no close.
    let tps = topics.clone();
    run_shards(config(dir.path()), Shutdown::SimulateCrash, move |shard| {
        let tps = tps.clone();
        async move {
            for tp in &tps {
                if shard.owner(tp) == shard.id() {
                    shard.append(tp.clone(), batch(10), 1).await.unwrap();
                }
            }
        }
    })
    .unwrap();
    assert!(!dir.path().join(".kafka_cleanshutdown").exists());

    // Recovery finds every appended batch (the bytes reached the disk).
    let out = run_shards(config(dir.path()), Shutdown::Clean, |shard| async move {
        shard.local_summaries().await
    })
    .unwrap();
    assert!(!out.startup.clean_shutdown);
    let summaries: Vec<_> = out.results.into_iter().flatten().collect();
    assert_eq!(summaries.len(), 6);
    for s in &summaries {
        assert_eq!(s.log_end_offset, 210, "{}", s.tp);
        assert!(
            s.recovery.segments_recovered > 0,
            "{} must be scanned after a crash",
            s.tp
        );
    }
}
