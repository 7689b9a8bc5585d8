//! The replication state of every partition a shard owns, beside its log.
//!
//! Each local replica has a [`ReplicaState`] (the pure rules in
//! `crate::replica`) kept here, on the shard that owns the log. The helpers
//! below are the only places that move a log's HW: they feed the state an
//! event and copy the HW it decides into the log, which serves consumers up
//! to it, then wake the fetches and produces waiting on the partition.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use glommio::sync::RwLock;

use crate::log::partition_log::PartitionLog;
use crate::node::append_waiters::AppendWaiters;
use crate::replica::ReplicaState;
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// A shard's replica states, by partition.
#[derive(Default)]
pub struct Replicas {
    states: RefCell<HashMap<TopicPartition, Rc<RefCell<ReplicaState>>>>,
}

/// A partition this broker leads: its log and its replica state.
pub struct LedPartition {
    pub log: Rc<RwLock<PartitionLog>>,
    pub state: Rc<RefCell<ReplicaState>>,
}

impl Replicas {
    pub fn of(shard: &Shard) -> Rc<Replicas> {
        if let Some(r) = shard.extension::<Replicas>() {
            return r;
        }
        let r = Rc::new(Replicas::default());
        shard.set_extension(r.clone());
        r
    }

    pub fn get(&self, tp: &TopicPartition) -> Option<Rc<RefCell<ReplicaState>>> {
        self.states.borrow().get(tp).cloned()
    }

    /// The replica state of `tp`, made from its log and the checkpointed HW
    /// the first time.
    pub fn get_or_create(
        &self,
        tp: &TopicPartition,
        log: &PartitionLog,
        local_id: i32,
        checkpointed_hw: i64,
        lag_time_max_ms: i64,
    ) -> Rc<RefCell<ReplicaState>> {
        self.states
            .borrow_mut()
            .entry(tp.clone())
            .or_insert_with(|| {
                Rc::new(RefCell::new(ReplicaState::new(
                    local_id,
                    log.log_start_offset(),
                    log.log_end_offset(),
                    checkpointed_hw,
                    lag_time_max_ms,
                )))
            })
            .clone()
    }

    pub fn remove(&self, tp: &TopicPartition) {
        self.states.borrow_mut().remove(tp);
    }

    /// Every local partition and its state.
    pub fn all(&self) -> Vec<(TopicPartition, Rc<RefCell<ReplicaState>>)> {
        self.states
            .borrow()
            .iter()
            .map(|(tp, s)| (tp.clone(), s.clone()))
            .collect()
    }
}

/// `tp`'s log and state if this broker leads it. The replica state decides,
/// not the image: the state becomes leader only once the epoch cache has
/// the new epoch.
pub fn led_partition(shard: &Shard, tp: &TopicPartition) -> Option<LedPartition> {
    let state = Replicas::of(shard).get(tp)?;
    if !state.borrow().is_leader() {
        return None;
    }
    let log = shard.local_log(tp)?;
    Some(LedPartition { log, state })
}

/// Whether `log` is still `tp`'s log on this shard. A request that took
/// the log before awaiting its lock checks this once it holds the lock: a
/// move to another shard may have closed it meanwhile, and the request
/// then answers as on a broker that no longer leads (a retriable error).
pub fn still_local(shard: &Shard, tp: &TopicPartition, log: &Rc<RwLock<PartitionLog>>) -> bool {
    shard
        .local_log(tp)
        .is_some_and(|current| Rc::ptr_eq(&current, log))
}

/// After an append on the leader (or a follower's append of fetched
/// batches): moves the state's LEO, copies an advanced HW into the log, and
/// wakes the waiting fetches and produces.
///
/// A leader's HW may have advanced before, without the log's lock, while
/// its write was in flight (a follower's fetch of it), so the log takes the
/// state's HW whether or not this append moved it.
pub fn after_append(shard: &Shard, tp: &TopicPartition, log: &mut PartitionLog) {
    if let Some(state) = Replicas::of(shard).get(tp) {
        let mut state = state.borrow_mut();
        state.on_appended(log.log_end_offset());
        let hw = state.high_watermark();
        if state.is_leader() && hw > log.high_watermark() {
            log.set_high_watermark(hw);
        }
    }
    AppendWaiters::of(shard).notify(tp);
}

/// Copies the state's HW into the log (after an ISR change, a follower's
/// fetch or a leader's fetch response) and wakes waiters if it moved.
pub fn sync_high_watermark(shard: &Shard, tp: &TopicPartition, log: &mut PartitionLog) {
    let Some(state) = Replicas::of(shard).get(tp) else {
        return;
    };
    let hw = state.borrow().high_watermark();
    if hw != log.high_watermark() {
        log.set_high_watermark(hw);
        AppendWaiters::of(shard).notify(tp);
    }
}

/// Forgets `tp`'s replica state (the replica is deleted, or moves to
/// another shard) and wakes the produces and fetches waiting on it: they
/// find no state and answer NOT_LEADER_OR_FOLLOWER now, not at their
/// timeout, as Kafka completes its delayed requests when a replica goes.
pub fn forget(shard: &Shard, tp: &TopicPartition) {
    Replicas::of(shard).remove(tp);
    AppendWaiters::of(shard).notify(tp);
}

/// Wakes the produces and fetches waiting on `tp` after its replica state
/// changed role, leader epoch or ISR. A waiting acks=all produce must
/// answer at once when its leader epoch ended (NOT_LEADER_OR_FOLLOWER) or
/// the ISR fell below `min.insync.replicas`
/// (NOT_ENOUGH_REPLICAS_AFTER_APPEND), and a consumer's long poll on a
/// replica that stopped leading answers so the client looks up the new
/// leader. Without it they wait for their timeout: a 30 s stall of the
/// producer's connection, whose later requests queue behind the answer.
pub fn after_transition(shard: &Shard, tp: &TopicPartition) {
    AppendWaiters::of(shard).notify(tp);
}

/// How a wait for the HW ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HighWatermarkWait {
    Reached,
    TimedOut,
    /// The committed ISR is below `min.insync.replicas` (its size): the
    /// leader does not advance the HW meanwhile (KIP-966), so waiting on is
    /// pointless; acks=all answers NOT_ENOUGH_REPLICAS_AFTER_APPEND.
    BelowMinIsr(usize),
    /// This replica stopped leading (or its state went) since the write's
    /// leader epoch: the write may be truncated by the new leader; the
    /// client retries.
    LostLeadership,
}

/// Waits until the HW of `tp`, led by this broker in `leader_epoch`,
/// reaches `offset` (acks=all, group writes), `timeout` passes, or the
/// committed ISR is found below `min_insync` replicas.
pub async fn wait_for_high_watermark(
    shard: &Shard,
    tp: &TopicPartition,
    leader_epoch: i32,
    offset: i64,
    min_insync: usize,
    timeout: std::time::Duration,
) -> HighWatermarkWait {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let Some(state) = Replicas::of(shard).get(tp) else {
            return HighWatermarkWait::LostLeadership;
        };
        {
            let s = state.borrow();
            // A leader epoch that ended while this replica kept leading
            // (a reassignment bumped it) does not end the wait: the batch
            // is still in the log, and Kafka's delayed produce waits on.
            if !s.has_led_since(leader_epoch) {
                return HighWatermarkWait::LostLeadership;
            }
            if s.high_watermark() >= offset {
                return HighWatermarkWait::Reached;
            }
            if let Some(in_sync) = s.below_min_insync(min_insync) {
                return HighWatermarkWait::BelowMinIsr(in_sync);
            }
        }
        let now = std::time::Instant::now();
        if now >= deadline {
            return HighWatermarkWait::TimedOut;
        }
        // Registered before the next await, so no wake-up is missed.
        let wait = AppendWaiters::of(shard).register(std::slice::from_ref(tp));
        futures_lite::future::or(wait, glommio::timer::sleep(deadline - now)).await;
    }
}
