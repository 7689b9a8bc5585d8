//! The offset checkpoints while the broker runs: one shard writes every
//! shard's recovery points and log start offsets, one write at a time, and
//! work that must not race a write (a partition moving between shards)
//! holds them off.

use std::rc::Rc;

use crate::shard::partition_table::ShardId;
use crate::shard::shard::Shard;

/// The shard that writes the offset checkpoints while the broker runs.
pub const CHECKPOINT_SHARD: ShardId = 0;

/// Serialises the checkpoint writes on [`CHECKPOINT_SHARD`]: the periodic
/// timer and DeleteRecords write the same files through the same temporary
/// files, and two writes interleaved could rename a mix of both into place.
struct CheckpointLock(glommio::sync::Semaphore);

/// Writes the recovery-point and log-start checkpoints now, after any write
/// already under way, and returns once they are durable. Callable from any
/// shard; DeleteRecords uses it so that a moved log start offset survives a
/// crash. Failures are logged here, like those of the periodic writes.
pub async fn checkpoint_now(shard: &Rc<Shard>) {
    let written = shard
        .submit_to(CHECKPOINT_SHARD, |shard| async move {
            checkpoint_all(&shard).await;
        })
        .await;
    if let Err(e) = written {
        tracing::error!("writing offset checkpoints failed: {e}");
    }
}

/// Runs `work` on [`CHECKPOINT_SHARD`] with the checkpoint writes held off
/// until it ends. A partition moving between shards is open on neither for
/// a moment, and a checkpoint written then would leave it out: a crash
/// would then forget its log start offset (DeleteRecords).
pub async fn with_checkpoints_held<R, F, Fut>(
    shard: &Rc<Shard>,
    work: F,
) -> crate::error::LogResult<R>
where
    R: Send + 'static,
    F: FnOnce(Rc<Shard>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = R> + 'static,
{
    shard
        .submit_to(CHECKPOINT_SHARD, |shard| async move {
            let lock = shard
                .extension::<CheckpointLock>()
                .expect("the checkpoint lock is installed first thing at startup");
            // The semaphore is never closed, so the permit always comes.
            let _permit = lock.0.acquire_permit(1).await;
            work(shard).await
        })
        .await
}

/// Gathers every shard's partition offsets and writes the recovery-point
/// and log-start checkpoints. Runs on [`CHECKPOINT_SHARD`] only.
pub async fn checkpoint_all(shard: &Rc<Shard>) {
    assert_eq!(
        shard.id(),
        CHECKPOINT_SHARD,
        "one writer of the checkpoints"
    );
    let lock = shard
        .extension::<CheckpointLock>()
        .expect("the checkpoint lock is installed first thing at startup");
    // The semaphore is never closed, so the permit always comes.
    let Ok(_permit) = lock.0.acquire_permit(1).await else {
        return;
    };
    let mut offsets = Vec::new();
    for s in 0..shard.shard_count() {
        match shard
            .submit_to(s, |shard| async move { shard.local_offsets().await })
            .await
        {
            Ok(o) => offsets.extend(o),
            Err(e) => {
                tracing::warn!("checkpoint skipped: shard {s} unreachable: {e}");
                return;
            }
        }
    }
    offsets.sort_by(|a, b| a.tp.cmp(&b.tp));
    let dir = shard.config().data_dir.clone();
    if let Err(e) = crate::log::data_dir::write_checkpoints(&dir, offsets).await {
        tracing::error!("writing offset checkpoints failed: {e}");
        // As Kafka's checkpoint files do, a checkpoint that cannot be
        // written fails the data directory, and a broker of a cluster
        // stops (`lifecycle::storage_failure`). A full disk shows here
        // first while the active segments still write into the room
        // allocated ahead of them.
        let failures = shard.storage_failures();
        failures.set(failures.get() + 1);
    }
}

/// Installs the lock on the checkpoint shard; first thing at startup.
pub fn install(shard: &Rc<Shard>) {
    if shard.id() == CHECKPOINT_SHARD {
        shard.set_extension(Rc::new(CheckpointLock(glommio::sync::Semaphore::new(1))));
    }
}
