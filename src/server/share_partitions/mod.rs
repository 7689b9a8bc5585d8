//! Share partitions on the shard that leads their topic partition: the
//! shell around the pure `SharePartition` (`core/src/group/share/partition.rs`).
//!
//! One entry per (share group, topic partition) this shard leads and some
//! member fetched, forgotten again once nothing in it is left that is not
//! durable (no record acquired) after a member's release or a lock expiry
//! ([`SharePartitions::forget_if_idle`]). It is loaded from the share coordinator on first use
//! (ReadShareGroupState, through `share_state::persister`), or initialized
//! there at the group's `share.auto.offset.reset` (Kafka's default,
//! `latest`: the high watermark; `earliest`: the log start; or
//! `by_duration:`) when the group never read the partition. The group's
//! dynamic configs (lock duration, delivery limit, window, isolation) are
//! read at every use.
//!
//! **One change at a time, each durable before it is answered.** Every
//! operation takes the entry's permit, changes the partition (acquire,
//! acknowledge, release, expire), and persists the `StateWrite` it returned
//! with WriteShareGroupState before the permit goes: writes reach the share
//! coordinator in the order they were made, so a later write never lands
//! under an earlier one. An acknowledgement is answered only once its write
//! succeeded. A failed write drops the entry: the next use loads it again
//! from the coordinator, which holds exactly what was made durable, as
//! Kafka rolls its cache back. Acquisitions themselves are not written (an
//! acquired record is stored as available): a crash hands them out again.
//!
//! **Reads.** An acquisition reads the log from the first record the
//! partition could hand out, up to the high watermark and the byte budget,
//! keeps the whole batches read, and acquires offsets inside them only, so
//! every acquired offset is in the bytes the member receives.
//!
//! **Locks.** The core expires due locks on every call; a tick
//! ([`LOCK_EXPIRY_TICK`]) also expires them on idle partitions, so the
//! records come back for other members and their delivery counts are
//! written.

mod read;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use std::time::Duration;

use glommio::sync::RwLock;

use crate::broker_config::share_group::SharePartitionConfig;
use crate::group::share::{SharePartition, SharePartitionKey, StateWrite};
use crate::log::partition_log::PartitionLog;
use crate::metadata::group_config::{AutoOffsetReset, EffectiveGroupConfig, IsolationLevel};
use crate::node::append_waiters::{AppendWait, AppendWaiters};
use crate::node::replicas;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::server::share_state::persister;
use crate::shard::shard::{now_ms, Shard};
use crate::topic_partition::TopicPartition;

pub use self::read::{acknowledge, acquire, release_member, AcquiredRead};

/// How often idle share partitions expire their due locks.
const LOCK_EXPIRY_TICK: Duration = Duration::from_millis(100);
/// The state epoch of a share partition the group never read before.
const INITIAL_STATE_EPOCH: i32 = 0;

/// One share group's share partition of one topic partition.
pub(crate) struct Entry {
    key: SharePartitionKey,
    tp: TopicPartition,
    /// `None` until loaded (or after a failed write dropped it).
    partition: RefCell<Option<SharePartition>>,
    /// The leader epoch it was loaded at: writes carry it, so the share
    /// coordinator fences a deposed leader's writes.
    leader_epoch: Cell<i32>,
    /// The partition's log it was loaded under. A move to another shard
    /// and back keeps the leader epoch but opens a new log: the entry is
    /// then loaded again rather than trusted.
    log: RefCell<Weak<RwLock<PartitionLog>>>,
    /// The group's `share.isolation.level`, as of the entry's latest use
    /// (read with its other configs there, once per use).
    pub(crate) isolation: Cell<IsolationLevel>,
    /// One change (or load) at a time.
    permit: Rc<glommio::sync::Semaphore>,
    /// The partition's earliest lock deadline as of its last change, so
    /// the expiry tick looks at one number per entry rather than at every
    /// record of every window.
    next_deadline: Cell<Option<i64>>,
}

impl Entry {
    /// Notes the earliest lock deadline after a change of the partition.
    pub(crate) fn changed(&self) {
        let next = self
            .partition
            .borrow()
            .as_ref()
            .and_then(SharePartition::next_lock_deadline_ms);
        self.next_deadline.set(next);
    }
}

/// The share partitions of one shard.
#[derive(Default)]
pub struct SharePartitions {
    entries: RefCell<HashMap<(String, TopicPartition), Rc<Entry>>>,
    ticking: Cell<bool>,
    /// Share fetches that found nothing to acquire and wait, by partition:
    /// a change that makes records of a window acquirable again (a
    /// release, an expired lock) wakes them, as an append does for new
    /// records, rather than leaving them until their `max_wait_ms`.
    acquirable: AppendWaiters,
}

impl SharePartitions {
    pub fn of(shard: &Rc<Shard>) -> Rc<SharePartitions> {
        if let Some(s) = shard.extension::<SharePartitions>() {
            return s;
        }
        let s = Rc::new(SharePartitions::default());
        shard.set_extension(s.clone());
        s
    }

    /// A wait that completes when records of a window of any of `tps`
    /// become acquirable again (see [`SharePartitions::acquirable`]).
    pub fn wait_acquirable(&self, tps: &[TopicPartition]) -> AppendWait {
        self.acquirable.register(tps)
    }

    /// Forgets the share partitions of `tp`: this shard no longer leads
    /// it. Their durable state stays with the share coordinator; their
    /// locks lapse (a new leader loads what was written).
    pub fn on_lost_leadership(&self, tp: &TopicPartition) {
        self.entries.borrow_mut().retain(|(_, t), _| t != tp);
    }

    /// The entry of `group_id`'s share partition of `tp`, loaded, with its
    /// permit held. NOT_LEADER_OR_FOLLOWER when this shard does not lead
    /// `tp`; the persister's error when the state cannot be had.
    pub(crate) async fn entry(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        group_id: &str,
        tp: &TopicPartition,
        topic_id: [u8; 16],
    ) -> Result<(Rc<Entry>, glommio::sync::StaticPermit), i16> {
        self.start_ticking(shard);
        let Some(led) = replicas::led_partition(shard, tp) else {
            return Err(error_code::NOT_LEADER_OR_FOLLOWER);
        };
        let leader_epoch = led.state.borrow().leader_epoch();
        let entry = self
            .entries
            .borrow_mut()
            .entry((group_id.to_string(), tp.clone()))
            .or_insert_with(|| {
                Rc::new(Entry {
                    key: SharePartitionKey {
                        group_id: group_id.to_string(),
                        topic_id,
                        partition: tp.partition,
                    },
                    tp: tp.clone(),
                    partition: RefCell::new(None),
                    leader_epoch: Cell::new(leader_epoch),
                    log: RefCell::new(Weak::new()),
                    isolation: Cell::new(IsolationLevel::default()),
                    permit: Rc::new(glommio::sync::Semaphore::new(1)),
                    next_deadline: Cell::new(None),
                })
            })
            .clone();
        let permit = entry
            .permit
            .acquire_static_permit(1)
            .await
            .map_err(|_| error_code::UNKNOWN_SERVER_ERROR)?;
        if entry.key.topic_id != topic_id {
            // The topic was deleted and created again under its name.
            self.drop_entry(group_id, tp);
            return Err(error_code::UNKNOWN_TOPIC_ID);
        }
        // The group's own share configs over the broker's, read at every
        // use so that kafka-configs.sh changes apply to loaded partitions.
        let group = BrokerState::of(shard).group_config(group_id);
        entry.isolation.set(group.share_isolation_level);
        let same_log = Weak::ptr_eq(&entry.log.borrow(), &Rc::downgrade(&led.log));
        if entry.partition.borrow().is_none()
            || entry.leader_epoch.get() != leader_epoch
            || !same_log
        {
            entry.leader_epoch.set(leader_epoch);
            *entry.log.borrow_mut() = Rc::downgrade(&led.log);
            let loaded = load(shard, &entry, &led.log, &group).await;
            match loaded {
                Ok(p) => *entry.partition.borrow_mut() = Some(p),
                Err(code) => {
                    self.drop_entry(group_id, tp);
                    return Err(code);
                }
            }
        } else if let Some(p) = entry.partition.borrow_mut().as_mut() {
            p.set_config(group.share.partition);
        }
        Ok((entry, permit))
    }

    /// Persists `write` of `entry` (its permit held); on failure drops the
    /// entry so the next use reloads what is durable.
    pub(crate) async fn persist(
        &self,
        shard: &Rc<Shard>,
        entry: &Entry,
        write: Option<StateWrite>,
    ) -> Result<(), i16> {
        let Some(write) = write else {
            return Ok(());
        };
        let state_epoch = match entry.partition.borrow().as_ref() {
            Some(p) => p.state_epoch(),
            None => return Err(error_code::UNKNOWN_SERVER_ERROR),
        };
        let result = persister::write_state(
            shard,
            &entry.key,
            state_epoch,
            entry.leader_epoch.get(),
            &write,
        )
        .await;
        tracing::debug!(
            group = %entry.key.group_id,
            partition = %entry.tp,
            leader_epoch = entry.leader_epoch.get(),
            state_epoch,
            "share partition state written ({result:?}): {write:?}"
        );
        let acquirable = result.is_ok()
            && entry
                .partition
                .borrow()
                .as_ref()
                .is_some_and(|p| p.has_acquirable_records(now_ms()));
        if acquirable {
            self.acquirable.notify(&entry.tp);
        }
        if let Err(code) = result {
            tracing::warn!(
                group = %entry.key.group_id,
                partition = %entry.tp,
                code,
                "writing share partition state failed; it will be loaded again from the share coordinator"
            );
            *entry.partition.borrow_mut() = None;
            self.drop_entry(&entry.key.group_id, &entry.tp);
        }
        result
    }

    /// The entry of `group_id`'s share partition of `tp` with its permit
    /// held, if it is loaded here under the partition's current leadership
    /// and log; `None` otherwise, and then nothing of it is held in memory
    /// (a release has nothing to release).
    pub(crate) async fn loaded_entry(
        &self,
        shard: &Rc<Shard>,
        group_id: &str,
        tp: &TopicPartition,
    ) -> Option<(Rc<Entry>, glommio::sync::StaticPermit)> {
        let entry = self
            .entries
            .borrow()
            .get(&(group_id.to_string(), tp.clone()))
            .cloned()?;
        let permit = entry.permit.acquire_static_permit(1).await.ok()?;
        let led = replicas::led_partition(shard, tp)?;
        let current = entry.partition.borrow().is_some()
            && entry.leader_epoch.get() == led.state.borrow().leader_epoch()
            && Weak::ptr_eq(&entry.log.borrow(), &Rc::downgrade(&led.log));
        current.then_some((entry, permit))
    }

    /// Forgets `entry` (its permit held) when all it holds is durable (no
    /// record is acquired) and no other task holds or waits for it: its
    /// next use loads it from the share coordinator again. So a group whose
    /// members left keeps nothing here, and a group deleted, or whose
    /// offsets were reset, starts from what the coordinator holds rather
    /// than from this memory.
    pub(crate) fn forget_if_idle(&self, entry: &Rc<Entry>) {
        // The map's reference and the caller's: nobody else's.
        let idle = entry.next_deadline.get().is_none() && Rc::strong_count(entry) == 2;
        if !idle {
            return;
        }
        let mut entries = self.entries.borrow_mut();
        let key = (entry.key.group_id.clone(), entry.tp.clone());
        if entries.get(&key).is_some_and(|e| Rc::ptr_eq(e, entry)) {
            entries.remove(&key);
        }
    }

    fn drop_entry(&self, group_id: &str, tp: &TopicPartition) {
        self.entries
            .borrow_mut()
            .remove(&(group_id.to_string(), tp.clone()));
    }

    fn start_ticking(self: &Rc<Self>, shard: &Rc<Shard>) {
        if self.ticking.replace(true) {
            return;
        }
        let (me, shard) = (Rc::downgrade(self), shard.clone());
        glommio::spawn_local(async move {
            loop {
                crate::ticks::sleep_to_next_tick(LOCK_EXPIRY_TICK).await;
                let Some(me) = me.upgrade() else { return };
                me.expire_due_locks(&shard).await;
            }
        })
        .detach();
    }

    /// Expires the due locks of every loaded entry, writing what changed.
    async fn expire_due_locks(self: &Rc<Self>, shard: &Rc<Shard>) {
        let now = now_ms();
        let due: Vec<Rc<Entry>> = self
            .entries
            .borrow()
            .values()
            .filter(|e| e.next_deadline.get().is_some_and(|d| d <= now))
            .cloned()
            .collect();
        for entry in due {
            let Ok(_permit) = entry.permit.acquire_permit(1).await else {
                continue;
            };
            // Only while this shard still leads it under the log it was
            // loaded with: stale memory must not be written.
            let current = replicas::led_partition(shard, &entry.tp)
                .is_some_and(|led| Weak::ptr_eq(&entry.log.borrow(), &Rc::downgrade(&led.log)));
            if !current {
                self.drop_entry(&entry.key.group_id, &entry.tp);
                continue;
            }
            let write = match entry.partition.borrow_mut().as_mut() {
                Some(p) => p.expire_locks(now_ms()),
                None => continue,
            };
            entry.changed();
            // A failed write is logged, and drops the entry, by `persist`.
            if self.persist(shard, &entry, write).await.is_ok() {
                self.forget_if_idle(&entry);
            }
        }
    }
}

/// Loads a share partition from the share coordinator, or initializes its
/// state there where the group's `share.auto.offset.reset` says.
async fn load(
    shard: &Rc<Shard>,
    entry: &Entry,
    log: &glommio::sync::RwLock<crate::log::partition_log::PartitionLog>,
    group: &EffectiveGroupConfig,
) -> Result<SharePartition, i16> {
    let config: SharePartitionConfig = group.share.partition;
    let reset = group.share_auto_offset_reset;
    let (log_start, high_watermark, reset_offset) = {
        let l = log
            .read()
            .await
            .map_err(|_| error_code::NOT_LEADER_OR_FOLLOWER)?;
        let reset_offset = match reset {
            AutoOffsetReset::Latest => l.high_watermark(),
            AutoOffsetReset::Earliest => l.log_start_offset(),
            // The first record at most that old; the end when none is.
            AutoOffsetReset::ByDuration(ms) => l
                .offset_for_timestamp(now_ms().saturating_sub(ms))
                .await
                .map_err(|e| crate::node::error_codes::error_code_for(&e))?
                .map_or(l.high_watermark(), |t| t.offset.min(l.high_watermark())),
        };
        (l.log_start_offset(), l.high_watermark(), reset_offset)
    };
    let leader_epoch = entry.leader_epoch.get();
    let read = persister::read_state(shard, &entry.key, leader_epoch).await?;
    tracing::debug!(
        group = %entry.key.group_id,
        partition = %entry.tp,
        leader_epoch,
        high_watermark,
        "share partition state read: {read:?}"
    );
    let mut partition = match read {
        Some(state) => SharePartition::load(
            config,
            state.state_epoch,
            state.start_offset.max(0),
            &state.state_batches,
        )
        .map_err(|e| {
            tracing::error!(
                group = %entry.key.group_id,
                partition = %entry.tp,
                "the share coordinator's state of this share partition is unusable: {}",
                e.0
            );
            error_code::UNKNOWN_SERVER_ERROR
        })?,
        None => {
            persister::initialize_state(shard, &entry.key, INITIAL_STATE_EPOCH, reset_offset)
                .await?;
            tracing::info!(
                group = %entry.key.group_id,
                partition = %entry.tp,
                "share group starts reading the partition at offset {reset_offset} \
                 (share.auto.offset.reset={reset:?})"
            );
            SharePartition::new(config, INITIAL_STATE_EPOCH, reset_offset)
        }
    };
    // Records that retention or DeleteRecords removed are archived.
    if let Some(write) = partition.on_log_start_offset(log_start) {
        persister::write_state(
            shard,
            &entry.key,
            partition.state_epoch(),
            leader_epoch,
            &write,
        )
        .await?;
    }
    Ok(partition)
}
