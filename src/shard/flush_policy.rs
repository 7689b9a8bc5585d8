//! The flush policy's timer (`flush.ms`, `flush.messages`) without a walk
//! over every partition on every tick.
//!
//! Kafka's own flusher is off by default (`log.flush.scheduler.interval.ms`
//! is Long.MAX_VALUE), and so is the policy (`flush.ms` and
//! `flush.messages` are Long.MAX_VALUE): the log relies on replication and
//! on the OS. pinlog checks the policy on the shard's 50 ms timer tick, so
//! a topic that sets it is served on time; but taking every partition's
//! write lock 20 times a second, as the tick did, was a fifth of the CPU of
//! an idle broker with a thousand partitions. So the tick looks only at the
//! partitions whose policy is set, found by a scan of every partition each
//! [`FLUSH_POLICY_RESCAN`]: a change of `flush.ms` takes effect within that.

use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use glommio::sync::RwLock;

use crate::error::LogResult;
use crate::log::partition_log::PartitionLog;
use crate::shard::shard::Shard;

/// How often every partition is looked at for a flush policy that is set.
pub const FLUSH_POLICY_RESCAN: Duration = Duration::from_secs(1);

/// The partitions of one shard whose flush policy is set, as of the last
/// scan (none yet: the first tick scans).
#[derive(Default)]
pub struct FlushWatch {
    watched: Vec<Weak<RwLock<PartitionLog>>>,
    scanned_at: Option<Instant>,
}

impl FlushWatch {
    /// One tick: rescans the shard's partitions when `FLUSH_POLICY_RESCAN`
    /// has passed, then applies the policy to the watched ones.
    pub async fn tick(&mut self, shard: &Shard, now: Instant, now_ms: i64) -> LogResult<()> {
        if self
            .scanned_at
            .is_none_or(|at| now.duration_since(at) >= FLUSH_POLICY_RESCAN)
        {
            self.scanned_at = Some(now);
            self.watched.clear();
            for log in shard.local_logs() {
                // A read lock: a partition without a policy costs no more.
                let Ok(l) = log.read().await else { continue };
                if l.has_flush_policy() {
                    self.watched.push(Rc::downgrade(&log));
                }
            }
        }
        // A partition deleted since the scan is gone (or offline).
        for log in self.watched.iter().filter_map(Weak::upgrade) {
            // A closed lock is a partition closed since the scan.
            let Ok(mut log) = log.write().await else {
                continue;
            };
            if !log.is_offline() {
                log.maybe_flush(now_ms).await?;
            }
        }
        Ok(())
    }
}
