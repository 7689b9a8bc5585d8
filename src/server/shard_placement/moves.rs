//! Live moves of a partition from one shard (core) of this broker to
//! another: `pinlog partition move` and the core balancer.
//!
//! The steps, each on the shard it concerns:
//! 1. The old owner lets go: the log leaves its table of open logs (so new
//!    requests answer NOT_LEADER_OR_FOLLOWER, which clients retry after a
//!    metadata refresh), the replica state goes (waiting acks=all produces
//!    and fetches answer now), and once the work in flight on the log is
//!    done (its write lock) the log is closed cleanly: flushed, producer
//!    snapshot written. A request that still holds the log finds it fenced.
//! 2. Every shard's partition table names the new owner.
//! 3. The new owner opens the log from where the old one left it (no
//!    recovery: it was closed cleanly) and takes up the role the current
//!    metadata image gives this broker, leader or follower, in the same
//!    leader epoch. Nothing is copied: both shards share the data
//!    directory.
//! 4. The placement is written to the data directory's `shard-placement`
//!    file, so that a restart keeps it.
//!
//! Why the data directory and not metadata records: shards are a property
//! of one broker's process (its core count, its `num.shards`), which no
//! other broker needs to know, and a restart with fewer shards must be
//! free to ignore a placement.
//!
//! Requests for the partition during the move are answered with
//! NOT_LEADER_OR_FOLLOWER, not held and forwarded to the new shard:
//! produce requests queued on the old shard, forwarded one by one, could
//! reach the new one in another order, and an idempotent producer would
//! then see OUT_OF_ORDER_SEQUENCE. The client's own retry keeps its order,
//! as after a leader change.
//!
//! Moves run one at a time, on the checkpoint shard, with the periodic
//! offset checkpoints held off: for a moment the partition is open on
//! neither shard, and a checkpoint written then would leave it out.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use crate::error::LogError;
use crate::log::data_dir::PartitionOffsets;
use crate::node::partition_load::PartitionLoad;
use crate::node::replicas;
use crate::protocol::error_code;
use crate::server::share_partitions::SharePartitions;
use crate::shard::partition_table::ShardId;
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// How many moves this broker has made, counted on the shard that runs
/// them (moves run one at a time there): the core balancer starts a new
/// measurement window when it changes, whoever moved.
#[derive(Default)]
struct MovesDone(Cell<u64>);

/// The moves done so far; call on the shard that runs them
/// ([`crate::shard::checkpoints::CHECKPOINT_SHARD`]).
pub fn moves_done(shard: &Shard) -> u64 {
    shard.extension::<MovesDone>().map_or(0, |m| m.0.get())
}

fn count_move(shard: &Shard) {
    let done = match shard.extension::<MovesDone>() {
        Some(m) => m,
        None => {
            let m = Rc::new(MovesDone::default());
            shard.set_extension(m.clone());
            m
        }
    };
    done.0.set(done.0.get() + 1);
}

/// A move that was done (or had nothing to do: `from == to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moved {
    pub from: ShardId,
    pub to: ShardId,
}

/// Why a move was refused or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MoveError {
    /// This broker holds no replica of the partition.
    NotHere,
    /// The target shard does not exist.
    NoSuchShard { shard: i64, shard_count: usize },
    /// An internal topic's partition: its state (the groups of a
    /// `__consumer_offsets` partition) lives beside it on its shard.
    Internal,
    /// The move started and failed (an I/O error); the log says more.
    Failed(String),
}

impl MoveError {
    pub fn error_code(&self) -> i16 {
        match self {
            MoveError::NotHere => error_code::UNKNOWN_TOPIC_OR_PARTITION,
            MoveError::NoSuchShard { .. } | MoveError::Internal => error_code::INVALID_REQUEST,
            MoveError::Failed(_) => error_code::KAFKA_STORAGE_ERROR,
        }
    }

    pub fn message(&self, tp: &TopicPartition) -> String {
        match self {
            MoveError::NotHere => format!("this broker holds no replica of {tp}"),
            MoveError::NoSuchShard { shard, shard_count } => format!(
                "shard {shard} does not exist: this broker runs {shard_count} shards, 0 to {}",
                shard_count - 1
            ),
            MoveError::Internal => format!(
                "{tp} belongs to an internal topic, whose state lives on its shard; it stays \
                 where it is"
            ),
            MoveError::Failed(why) => format!("moving {tp} failed: {why}"),
        }
    }
}

/// Moves `tp` to shard `to` of this broker. Callable from any shard.
pub async fn move_partition(
    shard: &Rc<Shard>,
    tp: TopicPartition,
    to: i64,
) -> Result<Moved, MoveError> {
    let shard_count = shard.shard_count();
    let to = match usize::try_from(to) {
        Ok(s) if s < shard_count => s,
        _ => {
            return Err(MoveError::NoSuchShard {
                shard: to,
                shard_count,
            })
        }
    };
    if crate::metadata::is_internal_topic(&tp.topic) || tp.topic == crate::metadata::METADATA_TOPIC
    {
        return Err(MoveError::Internal);
    }
    crate::shard::checkpoints::with_checkpoints_held(shard, move |shard| async move {
        move_held(&shard, tp, to).await
    })
    .await
    .unwrap_or_else(|e| Err(MoveError::Failed(e.to_string())))
}

/// The shard that holds `tp` open on this broker.
pub async fn shard_holding(shard: &Rc<Shard>, tp: &TopicPartition) -> Result<ShardId, MoveError> {
    let owner = shard.owner(tp);
    let tp = tp.clone();
    let open = shard
        .submit_to(owner, move |s| async move { s.local_log(&tp).is_some() })
        .await
        .map_err(|e| MoveError::Failed(e.to_string()))?;
    if open {
        Ok(owner)
    } else {
        Err(MoveError::NotHere)
    }
}

async fn move_held(shard: &Rc<Shard>, tp: TopicPartition, to: ShardId) -> Result<Moved, MoveError> {
    let failed = |e: LogError| MoveError::Failed(e.to_string());
    let from = shard_holding(shard, &tp).await?;
    if from == to {
        return Ok(Moved { from, to });
    }
    let started = Instant::now();
    let released = {
        let tp = tp.clone();
        shard
            .submit_to(from, move |s| async move { release(&s, &tp).await })
            .await
            .map_err(failed)?
    };
    let offsets = match released {
        Ok(offsets) => offsets,
        Err(e) => {
            // Closed with an I/O error: the partition is offline, and stays
            // with its shard, which opens it again on the next image.
            let tp = tp.clone();
            let _ = shard
                .submit_to(from, move |s| async move { s.finish_move_out(&tp) })
                .await;
            return Err(failed(e));
        }
    };
    for s in 0..shard.shard_count() {
        let tp = tp.clone();
        shard
            .submit_to(s, move |s| async move { s.set_owner(tp, to) })
            .await
            .map_err(failed)?;
    }
    let adopted = {
        let tp = tp.clone();
        shard
            .submit_to(to, move |s| async move {
                s.hand_over(offsets);
                let r = crate::server::image_applier::adopt_partition(&s, tp.clone()).await;
                s.finish_move_in(&tp);
                r
            })
            .await
            .map_err(failed)?
    };
    {
        let tp = tp.clone();
        shard
            .submit_to(from, move |s| async move { s.finish_move_out(&tp) })
            .await
            .map_err(failed)?;
    }
    let placement = shard.placement();
    if let Err(e) =
        crate::log::data_dir::write_shard_placement(&shard.config().data_dir, placement).await
    {
        tracing::error!(
            partition = %tp,
            "recording the move in the shard-placement file failed: {e}; after a restart the \
             partition is back on shard {}",
            from
        );
    }
    count_move(shard);
    adopted.map_err(failed)?;
    tracing::info!(
        partition = %tp,
        from,
        to,
        "moved the partition to shard {to} in {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    Ok(Moved { from, to })
}

/// Step 1 on the old owner; returns where the log stands once closed.
async fn release(shard: &Rc<Shard>, tp: &TopicPartition) -> Result<PartitionOffsets, LogError> {
    let Some(log) = shard.detach_for_move(tp) else {
        return Err(LogError::Offline {
            partition: tp.to_string(),
            reason: "closed while the move began".into(),
        });
    };
    // Produces waiting for the HW and fetches waiting for data answer now
    // (the state is gone: NOT_LEADER_OR_FOLLOWER); the follower fetcher
    // drops the partition from its next round.
    replicas::forget(shard, tp);
    PartitionLoad::of(shard).forget(tp);
    // Its share partitions go too: the shard it moves to loads their
    // durable state, and a copy left here would answer (and write) from
    // stale memory if the partition came back at the same leader epoch.
    SharePartitions::of(shard).on_lost_leadership(tp);
    shard.close_for_move(tp, log).await
}
