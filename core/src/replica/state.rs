//! [`ReplicaState`]: one partition's replication state and its rules.

use std::collections::BTreeMap;

/// The epoch Kafka uses for "no epoch" (`UNDEFINED_EPOCH`).
const UNDEFINED_EPOCH: i32 = -1;
/// A follower LEO the leader has not heard yet.
const UNKNOWN_OFFSET: i64 = -1;
/// "No broker" in leader fields.
const NO_LEADER: i32 = -1;
/// A broker epoch the leader does not know; the controller accepts it for
/// a member already in the ISR.
pub const UNKNOWN_BROKER_EPOCH: i64 = -1;

/// What this replica does for its partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Serves produce and fetch, tracks followers, computes the HW.
    Leader,
    /// Fetches from `leader` (`None` while the partition has no leader).
    Follower { leader: Option<i32> },
}

/// The partition's replica assignment as the committed metadata image holds
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub leader: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// The topic's `min.insync.replicas`, capped at the replication factor
    /// (`controller::partitions::effective_min_isr`): the leader advances
    /// the HW only while the committed ISR has this many members (KIP-966).
    pub min_isr: usize,
}

/// An ISR change for the leader to propose with AlterPartition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterIsr {
    pub leader_epoch: i32,
    /// The partition epoch the change is based on (compare-and-set).
    pub partition_epoch: i32,
    pub new_isr: Vec<i32>,
}

/// What a follower's fetch changed on the leader.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FollowerFetch {
    /// The new HW, when it advanced.
    pub high_watermark_advanced: Option<i64>,
    /// An expansion to propose: the follower caught up.
    pub expand: Option<AlterIsr>,
}

/// Why a follower's fetch was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchRefused {
    /// This replica does not lead the partition.
    NotLeader,
    /// The fetching broker holds no replica of the partition.
    NotAReplica,
}

/// What the leader knows of one follower (Kafka's `ReplicaState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FollowerProgress {
    /// The fetch offset of its last fetch: everything below is in its log.
    log_end_offset: i64,
    /// When it last had everything the leader had (`lastCaughtUpTimeMs`).
    last_caught_up_ms: i64,
    /// The leader's LEO at the follower's previous fetch.
    last_fetch_leader_leo: i64,
    last_fetch_ms: i64,
    /// The follower's broker epoch when it made the fetch that set
    /// `log_end_offset` (-1: unknown). An ISR expansion sends it (KIP-903),
    /// and the controller refuses the expansion if the broker registered
    /// again since: a restart after a power loss may have cost it the
    /// records that fetch reported.
    broker_epoch: i64,
}

impl FollowerProgress {
    fn reset(in_sync: bool, now_ms: i64) -> Self {
        FollowerProgress {
            log_end_offset: UNKNOWN_OFFSET,
            // An ISR member gets a full lag period to show up (Kafka's
            // `resetReplicaState`).
            last_caught_up_ms: if in_sync { now_ms } else { 0 },
            last_fetch_leader_leo: UNKNOWN_OFFSET,
            last_fetch_ms: 0,
            broker_epoch: UNKNOWN_BROKER_EPOCH,
        }
    }
}

/// One partition's replication state on one broker.
#[derive(Debug, Clone)]
pub struct ReplicaState {
    local_id: i32,
    role: Role,
    leader_epoch: i32,
    /// The epoch in which this replica last became leader from another
    /// role. Later epochs that keep it leader (a reassignment that removes
    /// a replica bumps the epoch) do not move it: the log was never
    /// truncated meanwhile, so what it appended since is still there.
    leading_since_epoch: i32,
    partition_epoch: i32,
    replicas: Vec<i32>,
    /// The committed ISR.
    isr: Vec<i32>,
    /// An AlterPartition in flight: the ISR it proposes.
    pending_isr: Option<Vec<i32>>,
    followers: BTreeMap<i32, FollowerProgress>,
    log_start_offset: i64,
    /// The end of what this replica has written.
    log_end_offset: i64,
    /// As leader, the end of the append whose write is in flight, or the
    /// LEO when none is. Followers may fetch up to it, so that their fetch
    /// and write overlap the leader's own write; the HW counts only what
    /// the leader has written (`log_end_offset`), so nothing is
    /// acknowledged before the leader's write completes.
    fetchable_end: i64,
    high_watermark: i64,
    /// The first offset of the current leader epoch on this leader: a
    /// follower joins the ISR only once it has reached it (KAFKA-7128).
    epoch_start_offset: i64,
    /// The highest HW this replica served as leader: consumers may have
    /// read below it, so only an unclean election may truncate below it.
    exposed: i64,
    replica_lag_time_max_ms: i64,
    /// See [`Assignment::min_isr`].
    min_isr: usize,
}

impl ReplicaState {
    /// A replica of a partition whose log spans `[log_start, log_end)`, with
    /// `checkpointed_hw` from `replication-offset-checkpoint`. It has no role
    /// until its first assignment.
    pub fn new(
        local_id: i32,
        log_start: i64,
        log_end: i64,
        checkpointed_hw: i64,
        replica_lag_time_max_ms: i64,
    ) -> Self {
        ReplicaState {
            local_id,
            role: Role::Follower { leader: None },
            leader_epoch: UNDEFINED_EPOCH,
            leading_since_epoch: UNDEFINED_EPOCH,
            partition_epoch: UNDEFINED_EPOCH,
            replicas: Vec::new(),
            isr: Vec::new(),
            pending_isr: None,
            followers: BTreeMap::new(),
            log_start_offset: log_start,
            log_end_offset: log_end,
            fetchable_end: log_end,
            high_watermark: checkpointed_hw.clamp(log_start, log_end.max(log_start)),
            epoch_start_offset: log_end,
            exposed: log_start,
            replica_lag_time_max_ms,
            min_isr: 1,
        }
    }

    pub fn role(&self) -> Role {
        self.role
    }
    pub fn is_leader(&self) -> bool {
        self.role == Role::Leader
    }
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }
    /// Whether this replica has led without interruption since
    /// `leader_epoch` (an epoch in which it led): then a batch it appended
    /// in that epoch is still in its log, and a wait for the HW to pass it
    /// may go on, as Kafka's delayed produce does across such epochs.
    pub fn has_led_since(&self, leader_epoch: i32) -> bool {
        self.is_leader() && self.leading_since_epoch <= leader_epoch
    }
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }
    /// The committed ISR.
    pub fn isr(&self) -> &[i32] {
        &self.isr
    }
    pub fn pending_isr(&self) -> Option<&[i32]> {
        self.pending_isr.as_deref()
    }

    /// The ISR the HW must wait for: the committed ISR plus the members a
    /// pending expansion adds, and members a pending shrink removes still
    /// count until it commits (KIP-497).
    pub fn maximal_isr(&self) -> Vec<i32> {
        let mut all = self.isr.clone();
        for r in self.pending_isr.iter().flatten() {
            if !all.contains(r) {
                all.push(*r);
            }
        }
        all
    }

    /// The committed ISR size, for `min.insync.replicas` checks: a pending
    /// expansion does not count yet.
    pub fn in_sync_count(&self) -> usize {
        self.isr.len()
    }

    /// Kafka's `min.insync.replicas` rule for acks=all writes, the one door
    /// for its three checks (before the append, under the log's lock;
    /// while waiting for the HW; after the HW passed the batch): the
    /// committed ISR's size when it is below `min_insync`.
    pub fn below_min_insync(&self, min_insync: usize) -> Option<usize> {
        let in_sync = self.in_sync_count();
        (in_sync < min_insync).then_some(in_sync)
    }

    /// Applies the assignment the metadata image holds. Returns what changed
    /// for this replica.
    pub fn apply_assignment(&mut self, a: &Assignment, now_ms: i64) -> Transition {
        let epochs_before = (self.leader_epoch, self.partition_epoch);
        let leader_hw_before = self.is_leader().then_some(self.high_watermark);
        let transition = self.take_assignment(a, now_ms);
        assert!(
            (self.leader_epoch, self.partition_epoch) >= epochs_before,
            "the (leader, partition) epochs went back from {epochs_before:?} to {:?}",
            (self.leader_epoch, self.partition_epoch)
        );
        if let (Some(before), true) = (leader_hw_before, self.is_leader()) {
            assert!(
                self.high_watermark >= before,
                "the leader's HW went back from {before} to {}",
                self.high_watermark
            );
        }
        self.check_invariants();
        transition
    }

    fn take_assignment(&mut self, a: &Assignment, now_ms: i64) -> Transition {
        if a.leader_epoch < self.leader_epoch
            || (a.leader_epoch == self.leader_epoch && a.partition_epoch < self.partition_epoch)
        {
            // An older image than one already applied.
            return Transition::Unchanged;
        }
        let new_epoch = a.leader_epoch != self.leader_epoch;
        self.replicas = a.replicas.clone();
        assert!(a.min_isr >= 1, "min.insync.replicas is at least 1");
        self.min_isr = a.min_isr;
        if a.leader == self.local_id {
            let was_leader = self.is_leader();
            // A pending change was based on the partition epoch held so far.
            // Any newer one settles it: either it is the change committed,
            // or the controller moved past its base and refuses it. The
            // image that committed it may never arrive by itself (a
            // snapshot, or images applied together), so waiting for one
            // whose ISR equals the proposal could block the ISR for good.
            let settled = a.partition_epoch > self.partition_epoch;
            self.partition_epoch = a.partition_epoch;
            self.isr = a.isr.clone();
            if settled || new_epoch {
                self.pending_isr = None;
            }
            if new_epoch || !was_leader {
                if !was_leader {
                    self.leading_since_epoch = a.leader_epoch;
                }
                self.leader_epoch = a.leader_epoch;
                self.role = Role::Leader;
                self.pending_isr = None;
                self.epoch_start_offset = self.log_end_offset;
                self.followers = self
                    .replicas
                    .iter()
                    .filter(|&&r| r != self.local_id)
                    .map(|&r| (r, FollowerProgress::reset(self.isr.contains(&r), now_ms)))
                    .collect();
                self.advance_high_watermark();
                return Transition::BecameLeader {
                    epoch_start_offset: self.log_end_offset,
                };
            }
            // Same leadership: the ISR or the replica set changed.
            let keep: Vec<i32> = self
                .replicas
                .iter()
                .copied()
                .filter(|&r| r != self.local_id)
                .collect();
            self.followers.retain(|r, _| keep.contains(r));
            for r in keep {
                self.followers
                    .entry(r)
                    .or_insert_with(|| FollowerProgress::reset(false, now_ms));
            }
            let advanced = self.advance_high_watermark();
            return Transition::IsrChanged {
                high_watermark_advanced: advanced,
            };
        }
        let leader = (a.leader != NO_LEADER).then_some(a.leader);
        let changed_leader = self.role != Role::Follower { leader };
        self.leader_epoch = a.leader_epoch;
        self.partition_epoch = a.partition_epoch;
        self.isr = a.isr.clone();
        self.pending_isr = None;
        self.followers.clear();
        self.role = Role::Follower { leader };
        if new_epoch || changed_leader {
            Transition::BecameFollower { leader }
        } else {
            Transition::Unchanged
        }
    }

    /// The local log's end moved (a leader's append, a follower's append of
    /// fetched batches). Returns the new HW when it advanced.
    pub fn on_appended(&mut self, log_end_offset: i64) -> Option<i64> {
        assert!(
            log_end_offset >= self.log_end_offset,
            "an append moved the LEO back from {} to {log_end_offset}",
            self.log_end_offset
        );
        self.log_end_offset = log_end_offset;
        self.fetchable_end = log_end_offset;
        let advanced = if self.is_leader() {
            self.advance_high_watermark()
        } else {
            None
        };
        self.check_invariants();
        advanced
    }

    /// As leader, an append up to `end` is being written: followers may
    /// fetch it now. [`ReplicaState::on_appended`] ends it, with the log
    /// end the write left (the old one when it failed).
    pub fn on_append_started(&mut self, end: i64) {
        assert!(
            self.is_leader(),
            "an append started on a replica that does not lead"
        );
        assert!(
            end >= self.fetchable_end,
            "an append in flight moved the fetchable end back from {} to {end}",
            self.fetchable_end
        );
        self.fetchable_end = end;
        self.check_invariants();
    }

    /// The broker epoch `replica` had when it made the fetch the leader
    /// last counted (KIP-903's epoch for AlterPartition's `NewIsrWithEpochs`),
    /// or [`UNKNOWN_BROKER_EPOCH`].
    pub fn fetched_broker_epoch(&self, replica: i32) -> i64 {
        self.followers
            .get(&replica)
            .map_or(UNKNOWN_BROKER_EPOCH, |p| p.broker_epoch)
    }

    /// As leader, whether any other replica fetches from this one: an
    /// append in flight is worth sharing only then.
    pub fn has_followers(&self) -> bool {
        !self.followers.is_empty()
    }

    /// A follower fetched from `fetch_offset`: everything below it is in its
    /// log. Kafka's `updateFollowerFetchState` and `maybeExpandIsr`. The
    /// offset may be past the leader's LEO, up to the end of its append in
    /// flight: the follower wrote that append before the leader did.
    /// `broker_epoch` is the follower's broker epoch as this broker's image
    /// holds it when it serves the fetch. The follower's broker is
    /// registered, unfenced and not shutting down: see
    /// [`ReplicaState::on_follower_fetch_from`].
    pub fn on_follower_fetch(
        &mut self,
        replica: i32,
        fetch_offset: i64,
        now_ms: i64,
        broker_epoch: i64,
    ) -> Result<FollowerFetch, FetchRefused> {
        self.on_follower_fetch_from(replica, fetch_offset, now_ms, broker_epoch, true)
    }

    /// [`ReplicaState::on_follower_fetch`], where `isr_eligible` says
    /// whether the follower's broker may join the ISR as this broker's image
    /// has it (Kafka's `isReplicaIsrEligible`, KIP-841): not when it is
    /// fenced, in controlled shutdown, or not registered. Its fetch still
    /// counts for its LEO and the HW; it is only not proposed for the ISR,
    /// where the controller would refuse it (INELIGIBLE_REPLICA) and the
    /// pending expansion would hold the HW for a broker that may be gone.
    pub fn on_follower_fetch_from(
        &mut self,
        replica: i32,
        fetch_offset: i64,
        now_ms: i64,
        broker_epoch: i64,
        isr_eligible: bool,
    ) -> Result<FollowerFetch, FetchRefused> {
        if !self.is_leader() {
            return Err(FetchRefused::NotLeader);
        }
        let leader_leo = self.log_end_offset;
        let Some(p) = self.followers.get_mut(&replica) else {
            return Err(FetchRefused::NotAReplica);
        };
        if fetch_offset >= leader_leo {
            p.last_caught_up_ms = now_ms;
        } else if p.last_fetch_leader_leo != UNKNOWN_OFFSET
            && fetch_offset >= p.last_fetch_leader_leo
        {
            // It has all the leader had at its previous fetch.
            p.last_caught_up_ms = p.last_caught_up_ms.max(p.last_fetch_ms);
        }
        p.last_fetch_leader_leo = leader_leo;
        p.last_fetch_ms = now_ms;
        p.log_end_offset = fetch_offset.min(self.fetchable_end);
        p.broker_epoch = broker_epoch;
        let follower_leo = p.log_end_offset;
        let mut out = FollowerFetch {
            high_watermark_advanced: self.advance_high_watermark(),
            expand: None,
        };
        let joins = isr_eligible
            && !self.isr.contains(&replica)
            && self.pending_isr.is_none()
            && follower_leo >= self.high_watermark
            && follower_leo >= self.epoch_start_offset;
        if joins {
            let mut new_isr = self.isr.clone();
            new_isr.push(replica);
            self.pending_isr = Some(new_isr.clone());
            out.expand = Some(AlterIsr {
                leader_epoch: self.leader_epoch,
                partition_epoch: self.partition_epoch,
                new_isr,
            });
        }
        self.check_invariants();
        Ok(out)
    }

    /// Periodic check (Kafka's `maybeShrinkIsr`): ISR members that have not
    /// caught up for `replica.lag.time.max.ms` are proposed for removal.
    pub fn tick(&mut self, now_ms: i64) -> Option<AlterIsr> {
        if !self.is_leader() || self.pending_isr.is_some() {
            return None;
        }
        let lagging: Vec<i32> = self
            .isr
            .iter()
            .copied()
            .filter(|&r| r != self.local_id)
            .filter(|r| {
                self.followers
                    .get(r)
                    .is_none_or(|p| now_ms - p.last_caught_up_ms > self.replica_lag_time_max_ms)
            })
            .collect();
        if lagging.is_empty() {
            return None;
        }
        let new_isr: Vec<i32> = self
            .isr
            .iter()
            .copied()
            .filter(|r| !lagging.contains(r))
            .collect();
        self.pending_isr = Some(new_isr.clone());
        Some(AlterIsr {
            leader_epoch: self.leader_epoch,
            partition_epoch: self.partition_epoch,
            new_isr,
        })
    }

    /// The change in flight, to send again when its outcome is unknown (no
    /// answer): it may have been committed, so it stays pending, and the
    /// HW keeps waiting for every member it adds (Kafka retries
    /// AlterPartition until the controller answers).
    pub fn pending_alter(&self) -> Option<AlterIsr> {
        if !self.is_leader() {
            return None;
        }
        self.pending_isr.as_ref().map(|isr| AlterIsr {
            leader_epoch: self.leader_epoch,
            partition_epoch: self.partition_epoch,
            new_isr: isr.clone(),
        })
    }

    /// The controller refused `change`, answering with its own partition
    /// epoch for the partition (`None` when it gave none). Only a refusal
    /// at the epoch the change was based on proves that nothing committed
    /// it: then the next fetch or tick may propose again. A newer epoch
    /// there may hold this very change, committed by an earlier attempt
    /// whose answer was lost (found by the simulation, seed 20262160:
    /// clearing it let the HW pass a member the controller had added, and
    /// that member then led without the exposed records); it stays pending
    /// until the image brings that epoch.
    pub fn on_alter_isr_refused(&mut self, change: &AlterIsr, controller_epoch: Option<i32>) {
        if self.pending_alter().as_ref() != Some(change) {
            return;
        }
        if controller_epoch.is_some_and(|e| e == change.partition_epoch) {
            self.pending_isr = None;
        }
    }

    /// A follower's fetched answer for this partition, after its batches
    /// (if any) were appended: the one call the fetcher makes for it. The
    /// LEO moves, the HW follows the leader's (unless a test hook holds
    /// it), and the log start follows the leader's up to the HW (Kafka's
    /// `maybeIncrementLogStartOffset`).
    pub fn on_fetched(&mut self, answer: &FetchedAnswer) -> FetchedActions {
        if answer.log_end_offset != self.log_end_offset {
            self.on_appended(answer.log_end_offset);
        }
        let Some(leader_hw) = answer.leader_high_watermark else {
            return FetchedActions {
                high_watermark: None,
                log_start: None,
            };
        };
        self.on_leader_high_watermark(leader_hw);
        // Records the leader deleted (DeleteRecords, or retention under a
        // setting only the leader has) go here too, never past this
        // replica's HW, which a log start may not pass.
        let target = answer.leader_log_start.min(self.high_watermark);
        FetchedActions {
            high_watermark: Some(self.high_watermark),
            log_start: (target > answer.log_start).then_some(target),
        }
    }

    /// A follower got the leader's HW in a fetch response: its own HW is
    /// the smaller of that and its LEO.
    pub fn on_leader_high_watermark(&mut self, leader_hw: i64) {
        if self.is_leader() {
            return;
        }
        self.high_watermark = leader_hw
            .min(self.log_end_offset)
            .max(self.log_start_offset);
        self.check_invariants();
    }

    /// The local log was truncated to `log_end_offset`. `unclean` says an
    /// unclean election allowed losing records a consumer may have read.
    /// Returns the HW this replica served as leader when the truncation
    /// went below it with no unclean election to explain it: a broken
    /// invariant (tests assert it never happens), which the broker reports
    /// loudly rather than stopping every partition it holds.
    #[must_use = "a loss of served records must be reported"]
    pub fn on_truncated(&mut self, log_end_offset: i64, unclean: bool) -> Option<i64> {
        let served = self.exposed;
        self.log_end_offset = log_end_offset;
        self.fetchable_end = log_end_offset;
        // A truncation below the log start restarts the log lower (after an
        // unclean election): the HW's floor must come down with it, or the
        // next leader HW would lift this replica's HW past its log end.
        self.log_start_offset = self.log_start_offset.min(log_end_offset);
        self.high_watermark = self.high_watermark.min(log_end_offset);
        self.exposed = self.exposed.min(log_end_offset);
        self.check_invariants();
        (!unclean && log_end_offset < served).then_some(served)
    }

    /// The log was emptied and restarted at `offset` (a follower behind the
    /// leader's log start).
    pub fn on_restarted_at(&mut self, offset: i64) {
        assert!(
            offset >= self.exposed,
            "restarting at {offset} would drop records this replica served"
        );
        self.log_start_offset = offset;
        self.log_end_offset = offset;
        self.fetchable_end = offset;
        self.high_watermark = offset;
        self.check_invariants();
    }

    /// Kafka's `maybeIncrementLeaderHW`: the minimum LEO over the maximal
    /// ISR; it never goes back. With the ELR (KIP-966) it does not move
    /// while the committed ISR is below `min.insync.replicas`: replicas that
    /// left the ISR then are eligible to lead, so they must hold every
    /// record below the HW. A pending expansion does not count: the
    /// controller forms the ELR from the committed ISR.
    fn advance_high_watermark(&mut self) -> Option<i64> {
        if !self.is_leader() || self.isr.len() < self.min_isr {
            return None;
        }
        let mut new_hw = self.log_end_offset;
        for r in self.maximal_isr() {
            if r == self.local_id {
                continue;
            }
            let leo = self
                .followers
                .get(&r)
                .map_or(UNKNOWN_OFFSET, |p| p.log_end_offset);
            if leo == UNKNOWN_OFFSET {
                // Not heard from yet in this leadership: it holds the HW.
                return None;
            }
            new_hw = new_hw.min(leo);
        }
        if new_hw <= self.high_watermark {
            return None;
        }
        self.high_watermark = new_hw;
        self.exposed = self.exposed.max(new_hw);
        self.check_hw_within_isr();
        Some(new_hw)
    }

    /// What holds after every change, checked by every mutator in release
    /// builds too: the HW is never above this replica's log end (a log
    /// whose start is past its end holds the HW at its start).
    /// `apply_assignment` also checks that the leader and partition epochs
    /// never go back, and that the HW never goes back while this replica
    /// keeps leading; the HW only rises otherwise by construction
    /// (`advance_high_watermark`).
    fn check_invariants(&self) {
        assert!(
            self.fetchable_end >= self.log_end_offset,
            "the fetchable end {} is below the log end {}",
            self.fetchable_end,
            self.log_end_offset
        );
        assert!(
            self.high_watermark <= self.log_end_offset.max(self.log_start_offset),
            "HW {} is above the log end {} (log start {})",
            self.high_watermark,
            self.log_end_offset,
            self.log_start_offset
        );
    }

    /// On a leader that just advanced its HW: the HW is at most the LEO of
    /// every member of the maximal ISR whose LEO it knows. Checked when the
    /// HW moves, not after every fetch: a follower that lost its unflushed
    /// tail to a power loss reports a lower LEO later, and the HW it was
    /// part of stays (the records are on the other members).
    fn check_hw_within_isr(&self) {
        if !self.is_leader() {
            return;
        }
        for r in self.maximal_isr() {
            let leo = if r == self.local_id {
                self.log_end_offset
            } else {
                match self.followers.get(&r) {
                    Some(p) if p.log_end_offset != UNKNOWN_OFFSET => p.log_end_offset,
                    _ => continue,
                }
            };
            assert!(
                self.high_watermark <= leo,
                "HW {} is above the LEO {leo} of ISR member {r}",
                self.high_watermark
            );
        }
    }
}

/// A follower's fetched answer for one partition, after its batches were
/// appended ([`ReplicaState::on_fetched`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchedAnswer {
    /// The log end after the append.
    pub log_end_offset: i64,
    /// The leader's HW; `None` when a test hook holds this replica's HW.
    pub leader_high_watermark: Option<i64>,
    /// The leader's log start.
    pub leader_log_start: i64,
    /// This replica's log start now.
    pub log_start: i64,
}

/// What the fetcher carries out for a fetched answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchedActions {
    /// The replica's HW, for the log (unless a test hook holds it).
    pub high_watermark: Option<i64>,
    /// Move the log start up to this offset.
    pub log_start: Option<i64>,
}

/// What [`ReplicaState::apply_assignment`] changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Unchanged,
    /// Leader of a new epoch: record `[epoch, epoch_start_offset]` in the
    /// epoch cache before accepting writes.
    BecameLeader {
        epoch_start_offset: i64,
    },
    /// Follower of a new epoch or leader: find the divergence point and
    /// truncate before fetching.
    BecameFollower {
        leader: Option<i32>,
    },
    /// Same leadership, new ISR or replicas.
    IsrChanged {
        high_watermark_advanced: Option<i64>,
    },
}

/// The next step of a follower's truncation, from the leader's
/// OffsetsForLeaderEpoch answer for the follower's latest epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truncation {
    /// Truncate here; the logs agree below it. Then fetch.
    To(i64),
    /// Truncate here and ask again with the (new) latest local epoch: the
    /// leader has an epoch this follower does not know (KIP-279's loop).
    ThenAskAgain(i64),
}

/// What a follower knows of its own log, for [`truncation_offset`].
#[derive(Debug, Clone, Copy)]
pub struct LocalLog<F: Fn(i32) -> (i32, i64)> {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// The epoch cache's `end_offset_for`: the largest local epoch at or
    /// below the one given, and where it ends.
    pub end_offset_for: F,
}

/// Where a follower truncates (Kafka's `getOffsetTruncationState`), given
/// the leader's answer (`leader_epoch`, `leader_end_offset`) to
/// OffsetsForLeaderEpoch for `asked_epoch`, the follower's latest epoch.
pub fn truncation_offset<F: Fn(i32) -> (i32, i64)>(
    leader_epoch: i32,
    leader_end_offset: i64,
    asked_epoch: i32,
    local: &LocalLog<F>,
) -> Truncation {
    let leo = local.log_end_offset;
    if leader_end_offset < 0 {
        // The leader knows nothing at or below our epoch (an empty log):
        // nothing of ours is shared with it.
        return Truncation::To(local.log_start_offset);
    }
    if leader_epoch == UNDEFINED_EPOCH {
        // Our epoch is older than the leader's first: its log starts at
        // `leader_end_offset`, and below that we cannot compare.
        return Truncation::To(leader_end_offset.min(leo));
    }
    if leader_epoch == asked_epoch {
        return Truncation::To(leader_end_offset.min(leo));
    }
    let (local_epoch, local_end) = (local.end_offset_for)(leader_epoch);
    if local_epoch == UNDEFINED_EPOCH || local_end < 0 {
        // All our epochs are newer than any the leader has at this point.
        return Truncation::To(local.log_start_offset);
    }
    if local_epoch == leader_epoch {
        return Truncation::To(leader_end_offset.min(local_end).min(leo));
    }
    // We lack the leader's epoch: cut our newer epochs and ask again.
    Truncation::ThenAskAgain(local_end.min(leo))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAG: i64 = 30_000;

    fn assignment(leader: i32, epoch: i32, isr: &[i32]) -> Assignment {
        Assignment {
            leader,
            leader_epoch: epoch,
            partition_epoch: epoch,
            replicas: vec![1, 2, 3],
            isr: isr.to_vec(),
            min_isr: 1,
        }
    }

    fn leader_of_three() -> ReplicaState {
        let mut s = ReplicaState::new(1, 0, 0, 0, LAG);
        let t = s.apply_assignment(&assignment(1, 1, &[1, 2, 3]), 0);
        assert_eq!(
            t,
            Transition::BecameLeader {
                epoch_start_offset: 0
            }
        );
        s
    }

    #[test]
    #[should_panic(expected = "is above the log end")]
    fn an_hw_above_the_log_end_breaks_an_invariant() {
        let mut s = ReplicaState::new(1, 0, 10, 10, LAG);
        s.apply_assignment(&assignment(2, 1, &[1, 2, 3]), 0);
        s.high_watermark = 11;
        s.check_invariants();
    }

    #[test]
    #[should_panic(expected = "is above the LEO")]
    fn a_leader_hw_above_an_isr_members_leo_breaks_an_invariant() {
        let mut s = leader_of_three();
        s.on_appended(10);
        s.on_follower_fetch(2, 10, 0, UNKNOWN_BROKER_EPOCH).unwrap();
        s.on_follower_fetch(3, 4, 0, UNKNOWN_BROKER_EPOCH).unwrap();
        assert_eq!(s.high_watermark(), 4);
        s.high_watermark = 5;
        s.check_hw_within_isr();
    }

    #[test]
    fn an_older_assignment_changes_nothing() {
        let mut s = leader_of_three();
        s.apply_assignment(&assignment(1, 3, &[1, 2, 3]), 0);
        assert_eq!(
            s.apply_assignment(&assignment(2, 2, &[2, 3]), 0),
            Transition::Unchanged
        );
        assert!(s.is_leader());
        assert_eq!(s.leader_epoch(), 3);
    }

    #[test]
    fn acks_all_needs_min_insync_members_of_the_committed_isr() {
        let mut s = leader_of_three();
        assert_eq!(s.below_min_insync(3), None);
        assert_eq!(s.below_min_insync(4), Some(3));
        s.on_appended(10);
        s.on_follower_fetch(2, 10, 0, UNKNOWN_BROKER_EPOCH).unwrap();
        // Replica 3 lags and is proposed for removal: until the image
        // commits it, the committed ISR still counts it.
        s.tick(LAG + 1).expect("3 lags");
        assert_eq!(s.below_min_insync(3), None);
        s.apply_assignment(&assignment(1, 1, &[1, 2]), LAG + 1);
        assert_eq!(s.below_min_insync(3), Some(2));
        assert_eq!(s.below_min_insync(2), None);
    }

    #[test]
    fn a_fetched_answer_moves_the_leo_the_hw_and_the_log_start_up_to_the_hw() {
        let mut f = ReplicaState::new(2, 0, 0, 0, LAG);
        f.apply_assignment(&assignment(1, 1, &[1, 2, 3]), 0);
        let answer = |leo, hw, leader_start, start| FetchedAnswer {
            log_end_offset: leo,
            leader_high_watermark: hw,
            leader_log_start: leader_start,
            log_start: start,
        };
        // The leader's HW is ahead of what this replica holds: its HW stops
        // at its LEO, and the log start at its HW.
        let a = f.on_fetched(&answer(10, Some(12), 11, 0));
        assert_eq!(
            a,
            FetchedActions {
                high_watermark: Some(10),
                log_start: Some(10)
            }
        );
        // A log start already there, or a leader's behind it: no move.
        let a = f.on_fetched(&answer(15, Some(12), 4, 10));
        assert_eq!(
            a,
            FetchedActions {
                high_watermark: Some(12),
                log_start: None
            }
        );
        // A test hook holds the HW: only the LEO moves.
        let a = f.on_fetched(&answer(20, None, 18, 10));
        assert_eq!(
            a,
            FetchedActions {
                high_watermark: None,
                log_start: None
            }
        );
        assert_eq!(f.high_watermark(), 12);
    }

    #[test]
    fn single_replica_hw_follows_the_log_end() {
        let mut s = ReplicaState::new(1, 0, 0, 0, LAG);
        s.apply_assignment(
            &Assignment {
                leader: 1,
                leader_epoch: 0,
                partition_epoch: 0,
                replicas: vec![1],
                isr: vec![1],
                min_isr: 1,
            },
            0,
        );
        assert_eq!(s.on_appended(5), Some(5));
        assert_eq!(s.high_watermark(), 5);
    }

    #[test]
    fn leadership_counts_as_continuous_across_epochs_only_while_it_lasts() {
        let mut s = leader_of_three();
        assert!(s.has_led_since(1));
        // A reassignment removes replica 3: the epoch moves, the leader
        // stays, and what it appended in epoch 1 is still in its log.
        let mut a = assignment(1, 2, &[1, 2]);
        a.replicas = vec![1, 2];
        assert!(matches!(
            s.apply_assignment(&a, 0),
            Transition::BecameLeader { .. }
        ));
        assert!(s.has_led_since(1) && s.has_led_since(2));
        // It follows for an epoch and leads again: its log may have been
        // truncated meanwhile, so epochs before the gap no longer count.
        s.apply_assignment(&assignment(2, 3, &[1, 2]), 0);
        assert!(!s.has_led_since(1) && !s.has_led_since(2));
        s.apply_assignment(&assignment(1, 4, &[1, 2]), 0);
        assert!(s.has_led_since(4));
        assert!(!s.has_led_since(2), "epoch 2 was before the gap");
        assert!(!s.has_led_since(3), "epoch 3 was another leader's");
    }

    #[test]
    fn hw_waits_for_every_isr_member() {
        let mut s = leader_of_three();
        assert_eq!(s.on_appended(10), None, "followers not heard from yet");
        assert_eq!(
            s.on_follower_fetch(2, 10, 1, UNKNOWN_BROKER_EPOCH)
                .unwrap()
                .high_watermark_advanced,
            None
        );
        let f = s.on_follower_fetch(3, 4, 1, UNKNOWN_BROKER_EPOCH).unwrap();
        assert_eq!(f.high_watermark_advanced, Some(4));
        let f = s.on_follower_fetch(3, 10, 2, UNKNOWN_BROKER_EPOCH).unwrap();
        assert_eq!(f.high_watermark_advanced, Some(10));
        assert_eq!(s.high_watermark(), 10);
    }

    #[test]
    fn hw_never_goes_back() {
        let mut s = leader_of_three();
        s.on_appended(10);
        s.on_follower_fetch(2, 10, 1, UNKNOWN_BROKER_EPOCH).unwrap();
        s.on_follower_fetch(3, 10, 1, UNKNOWN_BROKER_EPOCH).unwrap();
        assert_eq!(s.high_watermark(), 10);
        // A follower that restarted and fetches from an older offset.
        let f = s.on_follower_fetch(3, 3, 2, UNKNOWN_BROKER_EPOCH).unwrap();
        assert_eq!(f.high_watermark_advanced, None);
        assert_eq!(s.high_watermark(), 10);
    }

    #[test]
    fn lagging_follower_is_proposed_for_removal_and_counts_until_committed() {
        let mut s = leader_of_three();
        s.on_appended(10);
        s.on_follower_fetch(2, 10, 1_000, UNKNOWN_BROKER_EPOCH)
            .unwrap();
        s.on_follower_fetch(3, 2, 1_000, UNKNOWN_BROKER_EPOCH)
            .unwrap();
        assert_eq!(s.high_watermark(), 2);
        // Follower 2 keeps up; 3 stops fetching.
        s.on_follower_fetch(2, 10, LAG, UNKNOWN_BROKER_EPOCH)
            .unwrap();
        assert_eq!(s.tick(LAG), None, "3 still within its lag allowance");
        s.on_follower_fetch(2, 10, LAG + 2_000, UNKNOWN_BROKER_EPOCH)
            .unwrap();
        let shrink = s.tick(LAG + 2_000).expect("3 lags");
        assert_eq!(shrink.new_isr, vec![1, 2]);
        assert_eq!(shrink.partition_epoch, 1);
        // Until it commits, 3 still holds the HW back.
        assert_eq!(s.high_watermark(), 2);
        assert_eq!(s.tick(LAG + 3_000), None, "one change in flight at a time");
        let t = s.apply_assignment(
            &Assignment {
                partition_epoch: 2,
                ..assignment(1, 1, &[1, 2])
            },
            LAG + 3_000,
        );
        assert_eq!(
            t,
            Transition::IsrChanged {
                high_watermark_advanced: Some(10)
            }
        );
        assert_eq!(s.in_sync_count(), 2);
    }

    /// Found by the simulation (tests/in_process/simulation.rs, seed 2219): the image
    /// that committed a shrink was lost, the next one (the controller
    /// fencing another member) had a different ISR, and the pending change
    /// then blocked every later ISR change for good.
    #[test]
    fn a_newer_partition_epoch_settles_a_pending_change_whatever_its_isr() {
        let mut s = leader_of_three();
        s.on_appended(10);
        s.on_follower_fetch(2, 10, 1_000, UNKNOWN_BROKER_EPOCH)
            .unwrap();
        s.on_follower_fetch(3, 10, 1_000, UNKNOWN_BROKER_EPOCH)
            .unwrap();
        s.on_follower_fetch(2, 10, LAG + 2_000, UNKNOWN_BROKER_EPOCH)
            .unwrap();
        let shrink = s.tick(LAG + 2_000).expect("3 lags");
        assert_eq!(shrink.new_isr, vec![1, 2]);
        // Committed at partition epoch 2 (never seen here), then the
        // controller fenced 2 at epoch 3.
        s.apply_assignment(
            &Assignment {
                partition_epoch: 3,
                ..assignment(1, 1, &[1])
            },
            LAG + 3_000,
        );
        assert_eq!(s.pending_isr(), None);
        // The followers are back and caught up: an expansion is proposed.
        let f = s
            .on_follower_fetch(2, 10, LAG + 4_000, UNKNOWN_BROKER_EPOCH)
            .unwrap();
        assert_eq!(f.expand.map(|c| c.new_isr), Some(vec![1, 2]));
        // An older or equal image does not settle the change in flight.
        s.apply_assignment(
            &Assignment {
                partition_epoch: 3,
                ..assignment(1, 1, &[1])
            },
            LAG + 5_000,
        );
        assert_eq!(s.pending_isr(), Some(&[1, 2][..]));
    }

    #[test]
    fn caught_up_follower_is_proposed_for_the_isr_and_counts_only_when_committed() {
        let mut s = ReplicaState::new(1, 0, 0, 0, LAG);
        s.apply_assignment(&assignment(1, 1, &[1, 2]), 0);
        s.on_appended(10);
        s.on_follower_fetch(2, 10, 1, UNKNOWN_BROKER_EPOCH).unwrap();
        assert_eq!(s.high_watermark(), 10);
        let f = s.on_follower_fetch(3, 5, 1, UNKNOWN_BROKER_EPOCH).unwrap();
        assert_eq!(f.expand, None, "below the HW");
        let f = s.on_follower_fetch(3, 10, 2, UNKNOWN_BROKER_EPOCH).unwrap();
        let expand = f.expand.expect("caught up");
        assert_eq!(expand.new_isr, vec![1, 2, 3]);
        assert_eq!(s.in_sync_count(), 2, "not committed yet");
        // The pending member now holds the HW too (maximal ISR).
        s.on_appended(20);
        s.on_follower_fetch(2, 20, 3, UNKNOWN_BROKER_EPOCH).unwrap();
        assert_eq!(s.high_watermark(), 10);
        s.apply_assignment(
            &Assignment {
                partition_epoch: 2,
                ..assignment(1, 1, &[1, 2, 3])
            },
            4,
        );
        assert_eq!(s.in_sync_count(), 3);
        assert_eq!(s.pending_isr(), None);
    }

    #[test]
    fn follower_must_reach_the_epoch_start_to_join() {
        let mut s = ReplicaState::new(1, 0, 10, 4, LAG);
        s.apply_assignment(&assignment(1, 2, &[1]), 0);
        assert_eq!(s.high_watermark(), 10, "alone in the ISR");
        let f = s.on_follower_fetch(2, 8, 1, UNKNOWN_BROKER_EPOCH).unwrap();
        assert_eq!(f.expand, None);
        let f = s.on_follower_fetch(2, 10, 1, UNKNOWN_BROKER_EPOCH).unwrap();
        assert!(f.expand.is_some());
    }

    #[test]
    fn refused_alter_lets_the_leader_propose_again() {
        let mut s = leader_of_three();
        s.on_appended(1);
        assert!(s.tick(LAG + 1).is_some());
        assert!(s.tick(LAG + 2).is_none());
        let change = s.pending_alter().expect("pending");
        // A refusal from a controller already past the change's base
        // epoch may hide an earlier commit of it: it stays pending.
        s.on_alter_isr_refused(&change, Some(change.partition_epoch + 1));
        assert_eq!(s.pending_alter(), Some(change.clone()));
        assert!(s.tick(LAG + 3).is_none());
        s.on_alter_isr_refused(&change, None);
        assert!(s.tick(LAG + 3).is_none());
        // At its own base epoch nothing committed it.
        s.on_alter_isr_refused(&change, Some(change.partition_epoch));
        assert_eq!(s.pending_alter(), None);
        assert!(s.tick(LAG + 4).is_some());
    }

    #[test]
    fn an_expansion_without_an_answer_keeps_the_hw_waiting_for_the_new_member() {
        let mut s = leader_of_three();
        // Follower 3 drops out of the ISR, then catches up again.
        s.on_appended(10);
        s.on_follower_fetch(2, 10, 1, UNKNOWN_BROKER_EPOCH).unwrap();
        let shrink = s.tick(LAG + 1).expect("3 is lagging");
        assert_eq!(shrink.new_isr, vec![1, 2]);
        s.apply_assignment(
            &Assignment {
                leader: 1,
                leader_epoch: s.leader_epoch(),
                partition_epoch: shrink.partition_epoch + 1,
                replicas: vec![1, 2, 3],
                isr: vec![1, 2],
                min_isr: 1,
            },
            LAG + 1,
        );
        let grow = s
            .on_follower_fetch(3, 10, LAG + 2, UNKNOWN_BROKER_EPOCH)
            .unwrap()
            .expand
            .expect("3 caught up");
        // No answer: the expansion may have been committed. Retried as is,
        // and 3 still holds the HW back.
        assert_eq!(s.pending_alter(), Some(grow));
        s.on_appended(20);
        s.on_follower_fetch(2, 20, LAG + 3, UNKNOWN_BROKER_EPOCH)
            .unwrap();
        assert_eq!(s.high_watermark(), 10, "3 has only 10");
    }

    #[test]
    fn fetch_from_a_non_replica_or_on_a_follower_is_refused() {
        let mut s = leader_of_three();
        assert_eq!(
            s.on_follower_fetch(9, 0, 0, UNKNOWN_BROKER_EPOCH),
            Err(FetchRefused::NotAReplica)
        );
        let mut f = ReplicaState::new(2, 0, 0, 0, LAG);
        f.apply_assignment(&assignment(1, 1, &[1, 2, 3]), 0);
        assert_eq!(
            f.on_follower_fetch(3, 0, 0, UNKNOWN_BROKER_EPOCH),
            Err(FetchRefused::NotLeader)
        );
    }

    #[test]
    fn follower_hw_is_min_of_leader_hw_and_own_leo() {
        let mut f = ReplicaState::new(2, 0, 0, 0, LAG);
        let t = f.apply_assignment(&assignment(1, 1, &[1, 2, 3]), 0);
        assert_eq!(t, Transition::BecameFollower { leader: Some(1) });
        f.on_appended(5);
        f.on_leader_high_watermark(8);
        assert_eq!(f.high_watermark(), 5);
        f.on_appended(9);
        f.on_leader_high_watermark(8);
        assert_eq!(f.high_watermark(), 8);
    }

    #[test]
    fn new_leader_keeps_its_hw_until_followers_report() {
        let mut s = ReplicaState::new(2, 0, 10, 7, LAG);
        s.apply_assignment(&assignment(1, 1, &[1, 2, 3]), 0);
        let t = s.apply_assignment(&assignment(2, 2, &[2, 3]), 5);
        assert_eq!(
            t,
            Transition::BecameLeader {
                epoch_start_offset: 10
            }
        );
        assert_eq!(s.high_watermark(), 7);
        s.on_follower_fetch(3, 10, 6, UNKNOWN_BROKER_EPOCH).unwrap();
        assert_eq!(s.high_watermark(), 10);
    }

    #[test]
    fn stale_assignments_are_ignored() {
        let mut s = leader_of_three();
        let t = s.apply_assignment(&assignment(2, 0, &[2]), 0);
        assert_eq!(t, Transition::Unchanged);
        assert!(s.is_leader());
    }

    #[test]
    fn same_epoch_same_leader_is_unchanged_for_a_follower() {
        let mut f = ReplicaState::new(2, 0, 0, 0, LAG);
        f.apply_assignment(&assignment(1, 1, &[1, 2, 3]), 0);
        let t = f.apply_assignment(
            &Assignment {
                partition_epoch: 2,
                ..assignment(1, 1, &[1, 2])
            },
            0,
        );
        assert_eq!(t, Transition::Unchanged);
        assert_eq!(f.isr(), &[1, 2]);
    }

    #[test]
    fn truncating_below_a_served_hw_is_reported_as_a_loss() {
        let mut s = ReplicaState::new(1, 0, 0, 0, LAG);
        s.apply_assignment(&assignment(1, 1, &[1]), 0);
        s.on_appended(10);
        s.apply_assignment(&assignment(2, 2, &[2]), 0);
        assert_eq!(s.on_truncated(12, false), None, "above the served HW");
        assert_eq!(s.on_truncated(5, false), Some(10));
        assert_eq!(s.high_watermark(), 5);
        // Reported once: the served HW is now the log's end.
        assert_eq!(s.on_truncated(5, false), None);
    }

    #[test]
    fn a_truncation_below_the_log_start_brings_the_hw_floor_down() {
        // A follower whose log starts at 100 (retention) truncates to 40,
        // below it, after an unclean election: its log restarts at 40.
        let mut s = ReplicaState::new(1, 100, 120, 100, LAG);
        s.apply_assignment(&assignment(2, 1, &[2]), 0);
        assert_eq!(s.on_truncated(40, true), None);
        s.on_leader_high_watermark(90);
        assert_eq!(s.high_watermark(), 40, "never past the log end");
    }

    #[test]
    fn unclean_truncation_below_the_served_hw_is_allowed() {
        let mut s = ReplicaState::new(1, 0, 0, 0, LAG);
        s.apply_assignment(&assignment(1, 1, &[1]), 0);
        s.on_appended(10);
        s.apply_assignment(&assignment(2, 2, &[2]), 0);
        assert_eq!(s.on_truncated(5, true), None);
        assert_eq!(s.high_watermark(), 5);
    }

    #[test]
    fn truncation_offset_follows_kip_279() {
        // Local epochs: 1 @0, 3 @10, LEO 15.
        let local = LocalLog {
            log_start_offset: 0,
            log_end_offset: 15,
            end_offset_for: |e: i32| match e {
                1 | 2 => (1, 10),
                3.. => (3, 15),
                _ => (UNDEFINED_EPOCH, -1),
            },
        };
        // The leader has our epoch 3 until 12.
        assert_eq!(truncation_offset(3, 12, 3, &local), Truncation::To(12));
        // The leader ends our epoch at 20: nothing to cut.
        assert_eq!(truncation_offset(3, 20, 3, &local), Truncation::To(15));
        // The leader never had epoch 3, and has an epoch 2 we lack: cut our
        // epoch 3 and ask again with epoch 1.
        assert_eq!(
            truncation_offset(2, 8, 3, &local),
            Truncation::ThenAskAgain(10)
        );
        // Its epoch 1 ends at 7: so does ours from now on.
        assert_eq!(truncation_offset(1, 7, 3, &local), Truncation::To(7));
        assert_eq!(truncation_offset(1, 11, 3, &local), Truncation::To(10));
        // The leader's log begins after our epoch.
        assert_eq!(
            truncation_offset(UNDEFINED_EPOCH, 4, 0, &local),
            Truncation::To(4)
        );
        // An empty leader.
        assert_eq!(
            truncation_offset(UNDEFINED_EPOCH, -1, 3, &local),
            Truncation::To(0)
        );
    }

    /// Replication overlapping the leader's write (issue 33, direction 3):
    /// followers may fetch and write an append before the leader's own
    /// write completes; the HW waits for both, in either order.
    #[test]
    fn an_append_in_flight_is_fetchable_but_counts_for_the_hw_only_once_written() {
        for leader_first in [true, false] {
            let mut s = leader_of_three();
            s.on_appended(10);
            s.on_follower_fetch(2, 10, 0, UNKNOWN_BROKER_EPOCH).unwrap();
            s.on_follower_fetch(3, 10, 0, UNKNOWN_BROKER_EPOCH).unwrap();
            assert_eq!(s.high_watermark(), 10);
            s.on_append_started(15);
            assert_eq!(s.fetchable_end, 15);
            assert_eq!(s.log_end_offset, 10);
            if leader_first {
                assert_eq!(s.on_appended(15), None, "no follower has the append yet");
                assert_eq!(s.fetchable_end, 15);
            }
            // Both followers wrote the append and fetch past it.
            let f2 = s.on_follower_fetch(2, 15, 1, UNKNOWN_BROKER_EPOCH).unwrap();
            let f3 = s.on_follower_fetch(3, 15, 1, UNKNOWN_BROKER_EPOCH).unwrap();
            if leader_first {
                assert_eq!(f2.high_watermark_advanced, None, "3 lacks it still");
                assert_eq!(f3.high_watermark_advanced, Some(15));
            } else {
                assert_eq!(f2.high_watermark_advanced, None);
                assert_eq!(
                    f3.high_watermark_advanced, None,
                    "the leader's own write is still in flight"
                );
                assert_eq!(s.high_watermark(), 10);
                assert_eq!(s.on_appended(15), Some(15));
            }
            assert_eq!(s.high_watermark(), 15);
            assert_eq!(s.fetchable_end, 15);
        }
    }

    #[test]
    fn a_fetch_past_the_append_in_flight_counts_only_up_to_its_end() {
        let mut s = leader_of_three();
        s.on_appended(10);
        s.on_append_started(15);
        s.on_follower_fetch(2, 99, 0, UNKNOWN_BROKER_EPOCH).unwrap();
        s.on_follower_fetch(3, 99, 0, UNKNOWN_BROKER_EPOCH).unwrap();
        assert_eq!(s.on_appended(15), Some(15));
    }

    #[test]
    fn a_failed_write_leaves_the_hw_at_what_the_leader_wrote() {
        let mut s = leader_of_three();
        s.on_appended(10);
        s.on_append_started(15);
        s.on_follower_fetch(2, 15, 0, UNKNOWN_BROKER_EPOCH).unwrap();
        let f3 = s.on_follower_fetch(3, 15, 0, UNKNOWN_BROKER_EPOCH).unwrap();
        assert_eq!(
            f3.high_watermark_advanced,
            Some(10),
            "what the leader wrote"
        );
        // The write failed: the log end did not move. The followers hold
        // records the leader lacks, none of them acknowledged.
        assert_eq!(s.on_appended(10), None);
        assert_eq!(s.high_watermark(), 10);
        assert_eq!(s.fetchable_end, 10);
        s.on_append_started(12);
        assert_eq!(s.on_appended(12), Some(12));
    }

    #[test]
    fn a_truncation_ends_an_append_in_flight() {
        let mut s = leader_of_three();
        s.on_appended(10);
        s.on_append_started(15);
        let _ = s.on_truncated(8, true);
        assert_eq!(s.fetchable_end, 8);
    }

    #[test]
    fn a_follower_whose_broker_may_not_join_the_isr_is_not_proposed() {
        let mut s = ReplicaState::new(1, 0, 0, 0, LAG);
        s.apply_assignment(&assignment(1, 1, &[1, 2]), 0);
        s.on_appended(10);
        s.on_follower_fetch(2, 10, 0, UNKNOWN_BROKER_EPOCH).unwrap();
        // Broker 3 is fenced (or shutting down) in this broker's image: its
        // caught-up fetch counts, but no expansion is proposed or pending.
        let f = s
            .on_follower_fetch_from(3, 10, 1, UNKNOWN_BROKER_EPOCH, false)
            .unwrap();
        assert_eq!(f.expand, None);
        assert_eq!(s.pending_isr(), None);
        assert_eq!(s.maximal_isr(), vec![1, 2]);
        // Once eligible, the next fetch proposes it.
        let f = s
            .on_follower_fetch_from(3, 10, 2, UNKNOWN_BROKER_EPOCH, true)
            .unwrap();
        assert_eq!(f.expand.map(|c| c.new_isr), Some(vec![1, 2, 3]));
    }

    #[test]
    fn an_expansion_names_the_broker_epoch_its_member_fetched_with() {
        let mut s = ReplicaState::new(1, 0, 0, 0, LAG);
        s.apply_assignment(&assignment(1, 1, &[1, 2]), 0);
        s.on_appended(10);
        assert_eq!(s.fetched_broker_epoch(3), UNKNOWN_BROKER_EPOCH);
        let f = s.on_follower_fetch(3, 10, 0, 41).unwrap();
        assert_eq!(f.expand.expect("3 caught up").new_isr, vec![1, 2, 3]);
        assert_eq!(s.fetched_broker_epoch(3), 41);
        s.on_follower_fetch(3, 10, 1, 42).unwrap();
        assert_eq!(s.fetched_broker_epoch(3), 42);
    }

    #[test]
    fn only_a_replicated_leader_has_followers_to_share_a_write_with() {
        assert!(leader_of_three().has_followers());
        let mut alone = ReplicaState::new(1, 0, 0, 0, LAG);
        alone.apply_assignment(
            &Assignment {
                replicas: vec![1],
                isr: vec![1],
                ..assignment(1, 1, &[1])
            },
            0,
        );
        assert!(alone.is_leader() && !alone.has_followers());
    }

    #[test]
    #[should_panic(expected = "does not lead")]
    fn only_a_leader_starts_an_append() {
        let mut s = ReplicaState::new(2, 0, 0, 0, LAG);
        s.apply_assignment(&assignment(1, 1, &[1, 2, 3]), 0);
        s.on_append_started(5);
    }
}
