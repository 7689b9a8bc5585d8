//! The core balancer's loop (`shard.balancer.enable`): every
//! `shard.balancer.interval.ms` it reads each partition's bytes in and out
//! on every shard (`node/partition_load.rs`), turns them into rates, and asks
//! the pure balancer (`core/src/shard/balancer.rs`) whether a partition should move;
//! if so it moves it live (`moves.rs`), as `pinlog partition move`
//! would. It runs on one shard for the whole broker.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::broker_config::ShardBalancerConfig;
use crate::metadata::OFFSETS_TOPIC;
use crate::node::partition_load::PartitionLoad;
use crate::node::stop::StopHandle;
use crate::server::shard_placement::moves;
use crate::shard::balancer::{decide, BalancerSettings, PartitionRate};
use crate::shard::partition_table::ShardId;
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// The shard the balancer runs on: the one moves run on
/// (`moves.rs`), so it reads their count without a hop.
const BALANCER_SHARD: ShardId = crate::shard::checkpoints::CHECKPOINT_SHARD;
/// How often the loop looks at the stop request while it waits.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// Partitions the balancer moved off a shard, kept on that shard for its
/// metrics.
#[derive(Default)]
struct BalancerMoves(Cell<u64>);

/// How many partitions the balancer moved off `shard`.
pub fn moves_off(shard: &Shard) -> u64 {
    shard.extension::<BalancerMoves>().map_or(0, |m| m.0.get())
}

/// Starts the loop on [`BALANCER_SHARD`] when the balancer is on and there
/// is more than one shard.
pub fn spawn(shard: &Rc<Shard>, config: &ShardBalancerConfig, stop: StopHandle) {
    if !config.enable || shard.id() != BALANCER_SHARD || shard.shard_count() < 2 {
        return;
    }
    let settings = BalancerSettings {
        threshold: config.threshold_percent as f64 / 100.0,
        sustain_ms: config.sustain_ms as i64,
        min_bytes_per_sec: config.min_bytes_per_sec as f64,
    };
    let interval = Duration::from_millis(config.interval_ms);
    tracing::info!(
        interval_ms = config.interval_ms,
        threshold_percent = config.threshold_percent,
        sustain_ms = config.sustain_ms,
        min_bytes_per_sec = config.min_bytes_per_sec,
        "the core balancer is on"
    );
    glommio::spawn_local(run(shard.clone(), settings, interval, stop)).detach();
}

/// Each partition's shard and bytes in + out so far, at one instant.
type Counts = HashMap<TopicPartition, (ShardId, u64)>;

async fn run(shard: Rc<Shard>, settings: BalancerSettings, interval: Duration, stop: StopHandle) {
    // The measurements of the current window, oldest first: the rates are
    // averaged from the oldest to the newest, so a pause in the load or a
    // spike weighs only its share of the window.
    let mut window: VecDeque<(Instant, Counts)> = VecDeque::new();
    let sustain = Duration::from_millis(settings.sustain_ms.max(0) as u64);
    // Moves so far (this loop's and `pinlog partition move`'s): after any
    // move the rates are measured anew, so the balancer never undoes an
    // operator's placement on the strength of rates from before it.
    let mut moves_seen = moves::moves_done(&shard);
    loop {
        let wake = Instant::now() + interval;
        while Instant::now() < wake {
            if stop.is_requested() {
                return;
            }
            glommio::timer::sleep(STOP_CHECK.min(wake - Instant::now())).await;
        }
        let Some(counts) = gather(&shard).await else {
            continue;
        };
        let now = Instant::now();
        let moves = moves::moves_done(&shard);
        if moves != moves_seen {
            moves_seen = moves;
            window.clear();
        }
        window.push_back((now, counts));
        // Keep the newest measurement at least `sustain` old as the start.
        while window.len() > 2 && now.duration_since(window[1].0) >= sustain {
            window.pop_front();
        }
        let (Some((start, before)), Some((_, latest))) = (window.front(), window.back()) else {
            continue;
        };
        let span = now.duration_since(*start);
        let seconds = span.as_secs_f64().max(1e-3);
        let rates: Vec<PartitionRate> = latest
            .iter()
            .filter(|(tp, _)| tp.topic != OFFSETS_TOPIC)
            .map(|(tp, &(s, total))| {
                // Counters start at 0 on the shard a partition moved to.
                let delta = match before.get(tp) {
                    Some(&(was_on, was)) if was_on == s && total >= was => total - was,
                    _ => total,
                };
                PartitionRate {
                    tp: tp.clone(),
                    shard: s,
                    bytes_per_sec: delta as f64 / seconds,
                }
            })
            .collect();
        let Some(planned) = decide(
            &settings,
            span.as_millis() as i64,
            shard.shard_count(),
            &rates,
        ) else {
            continue;
        };
        let mib = |b: f64| b / (1024.0 * 1024.0);
        tracing::info!(
            partition = %planned.tp,
            "balancing the shards: over the last {:.0} s shard {} carried {:.1} MiB/s and shard {} \
             {:.1} MiB/s; moving {} to shard {} should leave {:.1} and {:.1}",
            seconds,
            planned.from,
            mib(planned.loads_before.0),
            planned.to,
            mib(planned.loads_before.1),
            planned.tp,
            planned.to,
            mib(planned.loads_after.0),
            mib(planned.loads_after.1),
        );
        match moves::move_partition(&shard, planned.tp.clone(), planned.to as i64).await {
            Ok(_) => {
                let _ = shard
                    .submit_to(planned.from, |s| async move {
                        let moves = match s.extension::<BalancerMoves>() {
                            Some(m) => m,
                            None => {
                                let m = Rc::new(BalancerMoves::default());
                                s.set_extension(m.clone());
                                m
                            }
                        };
                        moves.0.set(moves.0.get() + 1);
                    })
                    .await;
            }
            Err(e) => tracing::warn!(
                partition = %planned.tp,
                "the core balancer could not move the partition: {}",
                e.message(&planned.tp)
            ),
        }
    }
}

/// Every shard's partitions with their shard and bytes in + out so far;
/// `None` if a shard did not answer (shutting down).
async fn gather(shard: &Rc<Shard>) -> Option<Counts> {
    let mut out = HashMap::new();
    for s in 0..shard.shard_count() {
        let load = shard
            .submit_to(
                s,
                |shard| async move { PartitionLoad::of(&shard).snapshot() },
            )
            .await
            .ok()?;
        for (tp, c) in load {
            out.insert(tp, (s, c.total()));
        }
    }
    Some(out)
}
