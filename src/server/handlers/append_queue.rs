//! Group commit of produce requests, per partition, on its owning shard.
//!
//! A leader append is answered only once its bytes are in the segment file
//! (direct I/O), so a partition that took requests one at a time would pay
//! the disk's write latency per request and keep the disk at a queue depth
//! of one. Instead every produce request for a partition joins that
//! partition's queue. A writer task drains it: it takes everything queued
//! (up to [`GROUP_COMMIT_MAX_BYTES`]), appends it with one write, answers
//! each request, and takes what queued meanwhile. Partitions have writers
//! of their own, so a shard keeps a write in flight for every partition
//! being produced to, and a request's partitions are appended concurrently.
//!
//! Order: requests are appended in the order they were submitted, which is
//! the order a connection's requests arrive in. The writer is a detached
//! task, so a client that disconnects cannot cancel a write half-done.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use bytes::Bytes;
use futures_channel::oneshot;

use crate::constants::GROUP_COMMIT_MAX_BYTES;
use crate::error::LogError;
use crate::log::partition_log::{AppendInfo, AppendOrigin, LeaderAppend, LeaderWrite};
use crate::log::producer_state::TxnVerification;
use crate::node::append_waiters::AppendWaiters;
use crate::node::in_flight_appends::{InFlightAppend, InFlightAppends};
use crate::node::replicas;
use crate::shard::shard::{now_ms, Shard};
use crate::topic_partition::TopicPartition;

/// One produce request's batches for one partition.
pub struct QueuedAppend {
    pub records: Bytes,
    /// The topic uses LogAppendTime: the writer stamps the group's time.
    pub log_append_time: bool,
    /// acks=all: the topic's `min.insync.replicas`. The writer refuses the
    /// batches while the committed ISR is smaller, decided under the log's
    /// lock together with the leadership, as Kafka's
    /// `appendRecordsToLeader` does under its ISR lock.
    pub acks_all_min_insync: Option<usize>,
    /// KIP-890: how the transactional batches were verified.
    pub verification: TxnVerification,
}

/// A written (or deduplicated) append.
#[derive(Debug, Clone, Copy)]
pub struct AppendDone {
    pub info: AppendInfo,
    /// The leader epoch the batches were written under.
    pub leader_epoch: i32,
    pub log_start_offset: i64,
    /// The LogAppendTime stamped, if the topic uses it.
    pub log_append_time_ms: Option<i64>,
}

/// Why an append was not written.
#[derive(Debug)]
pub enum AppendFailure {
    /// This broker no longer led the partition when the group was written.
    NotLeader,
    /// acks=all, and the committed ISR was below `min.insync.replicas`:
    /// nothing was written.
    NotEnoughReplicas { in_sync: usize, min_insync: usize },
    /// The partition is closing or closed (deleted, moved, shutting down).
    Closed,
    /// The log refused the batches or failed to write them.
    Log(LogError),
}

pub type AppendOutcome = Result<AppendDone, AppendFailure>;

struct Waiting {
    append: QueuedAppend,
    answer: oneshot::Sender<AppendOutcome>,
}

/// The shard's queues of partitions being written. A partition has an entry
/// exactly while its writer runs.
#[derive(Default)]
pub struct AppendQueues {
    queues: RefCell<HashMap<TopicPartition, VecDeque<Waiting>>>,
}

impl AppendQueues {
    fn of(shard: &Shard) -> Rc<AppendQueues> {
        if let Some(q) = shard.extension::<AppendQueues>() {
            return q;
        }
        let q = Rc::new(AppendQueues::default());
        shard.set_extension(q.clone());
        q
    }

    /// Takes the next group for `tp`'s writer, or ends the writer (removing
    /// the entry) when nothing is queued. One borrow: a request submitted
    /// after this finds either a queue that will be drained or none.
    fn next_group(&self, tp: &TopicPartition) -> Option<Vec<Waiting>> {
        let mut queues = self.queues.borrow_mut();
        let queue = queues.get_mut(tp)?;
        if queue.is_empty() {
            queues.remove(tp);
            return None;
        }
        let mut group = Vec::new();
        let mut bytes = 0usize;
        while let Some(next) = queue.front() {
            let len = next.append.records.len();
            if !group.is_empty() && bytes + len > GROUP_COMMIT_MAX_BYTES {
                break;
            }
            bytes += len;
            group.push(queue.pop_front().expect("front exists"));
        }
        Some(group)
    }
}

/// Queues `append` for `tp`, which this shard owns, and starts its writer if
/// none runs. The receiver gets the outcome once the append is written.
/// Submission is synchronous, so requests submitted in some order are
/// written in that order.
pub fn submit(
    shard: &Rc<Shard>,
    tp: &TopicPartition,
    append: QueuedAppend,
) -> oneshot::Receiver<AppendOutcome> {
    let (answer, rx) = oneshot::channel();
    let queues = AppendQueues::of(shard);
    let waiting = Waiting { append, answer };
    let start_writer = {
        let mut map = queues.queues.borrow_mut();
        match map.get_mut(tp) {
            Some(queue) => {
                queue.push_back(waiting);
                false
            }
            None => {
                map.insert(tp.clone(), VecDeque::from([waiting]));
                true
            }
        }
    };
    if start_writer {
        let shard = shard.clone();
        let tp = tp.clone();
        glommio::spawn_local(async move {
            while let Some(group) = queues.next_group(&tp) {
                write_group(&shard, &tp, group).await;
            }
        })
        .detach();
    }
    rx
}

/// Appends one group under the partition's write lock and answers it.
async fn write_group(shard: &Rc<Shard>, tp: &TopicPartition, group: Vec<Waiting>) {
    let answer_all = |group: Vec<Waiting>, failure: fn() -> AppendFailure| {
        for w in group {
            // A request whose client went away has dropped its receiver.
            let _ = w.answer.send(Err(failure()));
        }
    };
    let Some(led) = replicas::led_partition(shard, tp) else {
        return answer_all(group, || AppendFailure::NotLeader);
    };
    let Ok(mut log) = led.log.write().await else {
        return answer_all(group, || AppendFailure::Closed);
    };
    if !replicas::still_local(shard, tp, &led.log) {
        // Moved to another shard while this group waited for the lock.
        drop(log);
        return answer_all(group, || AppendFailure::Closed);
    }
    // Leadership may have moved while the lock was taken: the epoch that
    // counts is the one current when the batches are written, and the ISR
    // that acks=all needs is the one current then too.
    let (leader_epoch, group) = {
        let state = led.state.borrow();
        if !state.is_leader() {
            drop(state);
            drop(log);
            return answer_all(group, || AppendFailure::NotLeader);
        }
        let mut accepted = Vec::with_capacity(group.len());
        for w in group {
            let refused = w.append.acks_all_min_insync.and_then(|min_insync| {
                state
                    .below_min_insync(min_insync)
                    .map(|in_sync| AppendFailure::NotEnoughReplicas {
                        in_sync,
                        min_insync,
                    })
            });
            match refused {
                Some(failure) => {
                    let _ = w.answer.send(Err(failure));
                }
                None => accepted.push(w),
            }
        }
        (state.leader_epoch(), accepted)
    };
    if group.is_empty() {
        return;
    }
    let now = now_ms();
    let group_bytes: usize = group.iter().map(|w| w.append.records.len()).sum();
    crate::node::partition_load::PartitionLoad::of(shard).record_in(tp, group_bytes as u64);
    let mut answers = Vec::with_capacity(group.len());
    let mut appends = Vec::with_capacity(group.len());
    for w in group {
        let log_append_time_ms = w.append.log_append_time.then_some(now);
        // The leader rewrites offsets and the epoch in the batch headers, so
        // it needs its own mutable copy of the bytes.
        appends.push(LeaderAppend {
            batches: log.copy_for_append(&w.append.records),
            log_append_time_ms,
            origin: AppendOrigin::Client,
            verification: w.append.verification,
        });
        answers.push((w.answer, log_append_time_ms));
    }
    // Followers may fetch each write of the group while it is in flight
    // (`node::in_flight_appends`); the HW waits for the leader's write.
    let in_flight = InFlightAppends::of(shard);
    let published = Cell::new(false);
    let on_write = |w: LeaderWrite<'_>| {
        let mut state = led.state.borrow_mut();
        if !state.is_leader() || !state.has_followers() {
            // Nobody to share the write with (replication factor 1: the
            // laptop's case). Transitions take the log's lock, which this
            // writer holds, so leadership does not change meanwhile.
            return;
        }
        let group =
            InFlightAppend::new(w.parts, w.headers, w.log_start_offset, w.last_stable_offset);
        state.on_append_started(group.end_offset());
        drop(state);
        in_flight.publish(tp, group);
        published.set(true);
        AppendWaiters::of(shard).notify_followers(tp);
    };
    let results = log
        .append_many_as_leader_observed(appends, leader_epoch, now, &on_write)
        .await;
    in_flight.clear(tp);
    // After a published write, even a failed one: the state's end of what
    // followers may fetch falls back to what the log holds.
    if published.get()
        || results
            .iter()
            .any(|r| matches!(r, Ok(info) if !info.duplicate))
    {
        replicas::after_append(shard, tp, &mut log);
    }
    let log_start_offset = log.log_start_offset();
    drop(log);
    for ((answer, log_append_time_ms), result) in answers.into_iter().zip(results) {
        let outcome = result
            .map(|info| AppendDone {
                info,
                leader_epoch,
                log_start_offset,
                log_append_time_ms,
            })
            .map_err(AppendFailure::Log);
        let _ = answer.send(outcome);
    }
}
