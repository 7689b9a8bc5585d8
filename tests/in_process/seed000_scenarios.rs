//! The two failure scenarios of seed 000 (Kafka's partition recovery after
//! failures), replayed step by step on two real replica logs, "broker1" and
//! "broker2", each a `PartitionLog` in its own directory with its own
//! leader-epoch cache.
//!
//! The replication rules are pinlog's own: each replica has a
//! `pinlog::replica::ReplicaState`, the pure core the brokers run. The
//! harness only moves bytes: the follower sends its LEO as the fetch
//! offset, the leader's core records it and decides the HW (the minimum LEO
//! of the ISR), the leader answers with the batches from the fetch offset
//! plus that HW, and the follower appends the leader's bytes unchanged and
//! its core takes the HW from the response. The follower therefore learns
//! each HW one fetch after the leader. Truncation by leader epoch follows
//! the core's `truncation_offset` steps. A crash keeps the HW the replica
//! last knew, as Kafka's `replication-offset-checkpoint` would.
//!
//! A crash flushes the replica's log (the data was on disk) and drops it
//! without `close()`; a restart reopens it as after an unclean shutdown.
//!
//! Each scenario is run twice:
//! - with the pre-0.11 recovery, where a restarted replica truncates its log
//!   to its own HW. The tests assert the bad outcomes the seed describes:
//!   acknowledged data lost, or replicas that disagree on offset 1;
//! - with leader epochs (KIP-101), where a restarted replica asks the leader
//!   with OffsetsForLeaderEpoch and truncates only where its log diverges
//!   from the leader's. The tests assert that nothing is lost and that the
//!   follower's log stays a prefix of the leader's.

use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};

use crate::common::run;
use pinlog::config::LogConfig;
use pinlog::constants::RECORD_BATCH_HEADER_SIZE;
use pinlog::log::batch::{build_batch, BatchIter, BatchSpec, CountRule};
use pinlog::log::epoch_cache::{EpochEntry, UNDEFINED_EPOCH};
use pinlog::log::partition_log::{OpenParams, PartitionLog};
use pinlog::replica::{
    truncation_offset, Assignment, FetchedAnswer, LocalLog, ReplicaState, Transition, Truncation,
    UNKNOWN_BROKER_EPOCH,
};
use pinlog::topic_partition::TopicPartition;

const NOW_MS: i64 = 1_700_000_000_000;
/// Kafka's `replica.lag.time.max.ms`: the scenarios run at one instant, so
/// no follower ever lags out of the ISR by time.
const LAG_TIME_MAX_MS: i64 = 30_000;
/// Both brokers hold a replica.
const REPLICAS: [i32; 2] = [1, 2];

/// One broker's replica of the partition.
struct Replica {
    name: &'static str,
    id: i32,
    data_dir: PathBuf,
    /// `None` while the broker is down.
    log: Option<PartitionLog>,
    /// The replication core; `None` while the broker is down.
    core: Option<ReplicaState>,
    /// The HW this replica knew when it went down, as its HW checkpoint
    /// would hold it.
    checkpointed_hw: i64,
    /// The recovery point at the last flush before a crash.
    recovery_point: i64,
}

impl Replica {
    async fn start(root: &Path, name: &'static str, id: i32) -> Replica {
        let data_dir = root.join(name);
        let log = open_log(&data_dir, 0).await;
        Replica {
            name,
            id,
            data_dir,
            log: Some(log),
            core: Some(ReplicaState::new(id, 0, 0, 0, LAG_TIME_MAX_MS)),
            checkpointed_hw: 0,
            recovery_point: 0,
        }
    }

    fn core(&mut self) -> &mut ReplicaState {
        let name = self.name;
        self.core
            .as_mut()
            .unwrap_or_else(|| panic!("{name} is down"))
    }

    /// The HW as the core decided it.
    fn hw(&self) -> i64 {
        self.core.as_ref().expect("up").high_watermark()
    }

    /// Copies the core's HW into the log, as the broker does.
    fn sync_hw(&mut self) {
        let hw = self.hw();
        self.log().set_high_watermark(hw);
    }

    /// The controller's assignment: `leader` leads `epoch` with `isr`.
    fn assign(&mut self, leader: i32, epoch: i32, partition_epoch: i32, isr: &[i32]) -> Transition {
        let t = self.core().apply_assignment(
            &Assignment {
                leader,
                leader_epoch: epoch,
                partition_epoch,
                replicas: REPLICAS.to_vec(),
                isr: isr.to_vec(),
                // The seed's scenarios run with Kafka's default
                // min.insync.replicas: the HW moves with any ISR.
                min_isr: 1,
            },
            NOW_MS,
        );
        self.sync_hw();
        t
    }

    /// Follows `leader` in `epoch` (both replicas in the ISR).
    fn follow(&mut self, leader: i32, epoch: i32) {
        self.assign(leader, epoch, epoch, &REPLICAS);
    }

    fn log(&mut self) -> &mut PartitionLog {
        let name = self.name;
        self.log
            .as_mut()
            .unwrap_or_else(|| panic!("{name} is down"))
    }

    fn leo(&self) -> i64 {
        let name = self.name;
        self.log
            .as_ref()
            .unwrap_or_else(|| panic!("{name} is down"))
            .log_end_offset()
    }

    /// `(HW, LEO)`, the pair the seed writes as `[HW=.., LEO=..]`.
    fn state(&self) -> (i64, i64) {
        (self.hw(), self.leo())
    }

    /// The broker dies. Its log was flushed, so every batch it holds is on
    /// disk; only the in-memory state (and any response in flight) is lost.
    async fn crash(&mut self) {
        let log = self.log();
        log.flush().await.expect("flush before the crash");
        self.recovery_point = log.recovery_point();
        drop(self.log.take());
        self.checkpointed_hw = self.core.take().expect("up").high_watermark();
    }

    /// The broker restarts: the log is recovered as after an unclean
    /// shutdown, and the HW comes back from the harness's checkpoint.
    async fn restart(&mut self) {
        assert!(self.log.is_none(), "{} is already up", self.name);
        self.log = Some(open_log(&self.data_dir, self.recovery_point).await);
        let (start, end) = (self.log().log_start_offset(), self.leo());
        self.core = Some(ReplicaState::new(
            self.id,
            start,
            end,
            self.checkpointed_hw,
            LAG_TIME_MAX_MS,
        ));
        self.sync_hw();
    }

    /// A producer's message, appended by this replica as leader of `epoch`.
    async fn produce(&mut self, value: &[u8], epoch: i32) -> i64 {
        let info = self
            .log()
            .append_as_leader(one_record_batch(value), epoch, None, NOW_MS)
            .await
            .expect("leader append");
        let leo = self.leo();
        self.core().on_appended(leo);
        self.sync_hw();
        info.first_offset
    }

    /// Becoming leader of `epoch` (with both replicas in the ISR, as in the
    /// seed) records the epoch's start at the LEO, as the core's transition
    /// says (Kafka's `makeLeader` → `maybeAssignEpochStartOffset`).
    async fn become_leader(&mut self, epoch: i32) {
        let id = self.id;
        let t = self.assign(id, epoch, epoch, &REPLICAS);
        let Transition::BecameLeader { epoch_start_offset } = t else {
            panic!("{} did not become leader: {t:?}", self.name);
        };
        self.log()
            .assign_epoch_start_offset(epoch, epoch_start_offset)
            .await
            .expect("assign the new epoch's start offset");
    }

    /// The record values in offset order, with their offsets.
    async fn records(&mut self) -> Vec<(i64, Vec<u8>)> {
        let bytes = self.log().read_all().await.expect("read the whole log");
        records_of(&bytes)
    }

    /// The value stored at `offset`, if the log holds it.
    async fn value_at(&mut self, offset: i64) -> Option<Vec<u8>> {
        self.records()
            .await
            .into_iter()
            .find(|(o, _)| *o == offset)
            .map(|(_, v)| v)
    }

    async fn bytes(&mut self) -> Vec<u8> {
        self.log().read_all().await.expect("read the whole log")
    }

    fn epochs(&mut self) -> Vec<(i32, i64)> {
        self.log()
            .epoch_cache()
            .entries()
            .iter()
            .map(|e: &EpochEntry| (e.epoch, e.start_offset))
            .collect()
    }
}

async fn open_log(data_dir: &Path, recovery_point: i64) -> PartitionLog {
    std::fs::create_dir_all(data_dir).expect("create the broker's data dir");
    PartitionLog::open(
        data_dir,
        TopicPartition::new("seed000", 0),
        LogConfig::default(),
        OpenParams {
            recovery_point,
            log_start_offset: 0,
            clean_shutdown: false,
            now_ms: NOW_MS,
        },
        None,
    )
    .await
    .expect("open the replica log")
}

/// A producer batch holding one record with `value`.
fn one_record_batch(value: &[u8]) -> BytesMut {
    let records = [(0i64, None, value)];
    BytesMut::from(
        &build_batch(&BatchSpec {
            base_offset: 0,
            leader_epoch: -1,
            base_timestamp: NOW_MS,
            records: &records,
        })[..],
    )
}

fn read_varint(bytes: &[u8], at: &mut usize) -> i64 {
    let mut shift = 0;
    let mut z: u64 = 0;
    loop {
        let b = bytes[*at];
        *at += 1;
        z |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// `(offset, value)` of every record in uncompressed batches laid end to end.
fn records_of(bytes: &[u8]) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    for item in BatchIter::new(bytes, CountRule::Compacted) {
        let (position, header) = item.expect("a valid batch");
        let mut at = position + RECORD_BATCH_HEADER_SIZE;
        for _ in 0..header.record_count {
            let length = read_varint(bytes, &mut at) as usize;
            let record_end = at + length;
            at += 1; // attributes
            read_varint(bytes, &mut at); // timestamp delta
            let offset_delta = read_varint(bytes, &mut at);
            let key_len = read_varint(bytes, &mut at);
            if key_len > 0 {
                at += key_len as usize;
            }
            let value_len = read_varint(bytes, &mut at) as usize;
            out.push((
                header.base_offset + offset_delta,
                bytes[at..at + value_len].to_vec(),
            ));
            at = record_end;
        }
    }
    out
}

/// What the leader sends back for one Fetch.
struct FetchResponse {
    records: Vec<u8>,
    high_watermark: i64,
    /// The fetch offset lay past the leader's log end (OFFSET_OUT_OF_RANGE).
    out_of_range: bool,
}

/// The leader's half of a Fetch from follower `follower_id` at
/// `fetch_offset` (the follower's LEO): its core records the fetch and
/// decides the HW; the answer carries the batches from there and that HW.
async fn leader_handle_fetch(
    leader: &mut Replica,
    follower_id: i32,
    fetch_offset: i64,
) -> FetchResponse {
    let leo = leader.leo();
    if fetch_offset > leo {
        return FetchResponse {
            records: Vec::new(),
            high_watermark: leader.hw(),
            out_of_range: true,
        };
    }
    leader
        .core()
        .on_follower_fetch(follower_id, fetch_offset, NOW_MS, UNKNOWN_BROKER_EPOCH)
        .expect("the leader's core accepts its follower's fetch");
    leader.sync_hw();
    let read = leader
        .log()
        .read(fetch_offset, 1 << 20, leo, true)
        .await
        .expect("leader read for a fetch");
    FetchResponse {
        records: read.to_vec().await.expect("fetched bytes"),
        high_watermark: leader.hw(),
        out_of_range: false,
    }
}

/// The follower's half: append the leader's bytes as they are, then let the
/// core take the HW from the response (never past the follower's own LEO).
async fn follower_handle_response(follower: &mut Replica, response: FetchResponse) {
    if response.out_of_range {
        // Kafka before leader epochs: the follower is ahead of the leader, so
        // it truncates to the HW the leader reports and fetches again. (Old
        // Kafka truncated to the leader's log end, which is the same offset
        // in this scenario.)
        let hw = response.high_watermark;
        follower
            .log()
            .truncate_to(hw, NOW_MS)
            .await
            .expect("truncate to the leader's HW");
        let leo = follower.leo();
        assert_eq!(follower.core().on_truncated(leo, false), None);
        follower.core().on_leader_high_watermark(hw);
        follower.sync_hw();
        return;
    }
    if !response.records.is_empty() {
        follower
            .log()
            .append_as_follower(Bytes::from(response.records), NOW_MS)
            .await
            .expect("follower append");
    }
    // The one call the broker's fetcher makes for a fetched answer.
    let leo = follower.leo();
    follower.core().on_fetched(&FetchedAnswer {
        log_end_offset: leo,
        leader_high_watermark: Some(response.high_watermark),
        leader_log_start: 0,
        log_start: 0,
    });
    follower.sync_hw();
}

/// One complete Fetch round trip.
async fn fetch(follower: &mut Replica, leader: &mut Replica) {
    let fetch_offset = follower.leo();
    let response = leader_handle_fetch(leader, follower.id, fetch_offset).await;
    follower_handle_response(follower, response).await;
}

/// Pre-0.11 Kafka's recovery: a restarted replica truncates its log to its
/// own high watermark, which may be stale.
async fn truncate_to_own_high_watermark(replica: &mut Replica) {
    let hw = replica.hw();
    replica
        .log()
        .truncate_to(hw, NOW_MS)
        .await
        .expect("truncate to the own HW");
    let leo = replica.leo();
    assert_eq!(replica.core().on_truncated(leo, false), None);
}

/// OffsetsForLeaderEpoch and the core's truncation steps (KIP-279): the
/// follower sends its latest epoch; the leader answers with the largest
/// epoch it has at or below it and where that epoch ends in its log; the
/// core says where to truncate and whether to ask again. `unclean` says an
/// unclean election allows truncating below an HW the follower served.
/// Returns the leader's first answer.
async fn truncate_by_leader_epoch(
    follower: &mut Replica,
    leader: &mut Replica,
    unclean: bool,
) -> (i32, i64) {
    let mut first = None;
    for _ in 0..8 {
        let requested = follower
            .log()
            .epoch_cache()
            .latest_epoch()
            .expect("a replica that held data knows its epochs");
        let (epoch, end_offset) = leader.log().end_offset_for_epoch(requested);
        assert_ne!(epoch, UNDEFINED_EPOCH, "the leader knows the epoch");
        first.get_or_insert((epoch, end_offset));
        let step = {
            let log = follower.log();
            let local = LocalLog {
                log_start_offset: log.log_start_offset(),
                log_end_offset: log.log_end_offset(),
                end_offset_for: |e: i32| log.end_offset_for_epoch(e),
            };
            truncation_offset(epoch, end_offset, requested, &local)
        };
        let (target, done) = match step {
            Truncation::To(o) => (o, true),
            Truncation::ThenAskAgain(o) => (o, false),
        };
        if target < follower.leo() {
            follower
                .log()
                .truncate_to(target, NOW_MS)
                .await
                .expect("truncate to the leader's epoch end");
            let leo = follower.leo();
            assert_eq!(follower.core().on_truncated(leo, unclean), None);
            follower.sync_hw();
        }
        if done {
            return first.expect("asked once");
        }
    }
    panic!("the truncation did not converge in 8 rounds");
}

/// Asserts the replication invariant: the follower's log is a prefix of the
/// leader's, batch for batch and byte for byte.
async fn assert_follower_is_prefix(follower: &mut Replica, leader: &mut Replica, when: &str) {
    let f = follower.bytes().await;
    let l = leader.bytes().await;
    assert!(
        f.len() <= l.len() && l[..f.len()] == f[..],
        "{when}: {}'s log {:?} is not a prefix of leader {}'s log {:?}",
        follower.name,
        records_of(&f),
        leader.name,
        records_of(&l)
    );
}

/// The common start of both scenarios, the seed's steps 1 to 3: Broker1
/// leads epoch 0 and holds "A" and "B", Broker2 follows with both, and
/// Broker2 crashes before it learns that the HW moved to 2.
async fn steps_1_to_3(root: &Path) -> (Replica, Replica) {
    let mut b1 = Replica::start(root, "broker1", 1).await;
    let mut b2 = Replica::start(root, "broker2", 2).await;

    // Initially the leader is on Broker1 and the follower on Broker2, both at
    // [HW=1, LEO=1]: "A" at offset 0 is replicated and committed.
    b1.become_leader(0).await;
    b2.follow(1, 0);
    assert_eq!(b1.produce(b"A", 0).await, 0);
    fetch(&mut b2, &mut b1).await;
    fetch(&mut b2, &mut b1).await;
    assert_eq!(b1.state(), (1, 1));
    assert_eq!(b2.state(), (1, 1));
    assert_follower_is_prefix(&mut b2, &mut b1, "initial state").await;

    // Step 1, "a new message is written to the leader": it goes to the
    // leader first, whose LEO becomes 2.
    assert_eq!(b1.produce(b"B", 0).await, 1);
    assert_eq!(b1.state(), (1, 2));

    // Step 2, "first Fetch between leader and follower": the request carries
    // the follower's LEO=1, so the leader cannot move its HW and only returns
    // the records; the follower appends them and its LEO points at 2.
    fetch(&mut b2, &mut b1).await;
    assert_eq!(b1.state(), (1, 2));
    assert_eq!(b2.state(), (1, 2));
    assert_follower_is_prefix(&mut b2, &mut b1, "step 2").await;

    // Step 3, "second Fetch, the follower crashes": the request carries
    // LEO=2, every follower holds the new message, so the leader moves its
    // HW to 2 and returns it in the response. But Broker2 crashes before it
    // processes the response: Leader [HW=2, LEO=2], Follower [HW=1, LEO=2].
    let fetch_offset = b2.leo();
    let lost_response = leader_handle_fetch(&mut b1, 2, fetch_offset).await;
    assert_eq!(lost_response.high_watermark, 2);
    b2.crash().await;
    drop(lost_response);
    assert_eq!(b1.state(), (2, 2));
    assert_eq!(b2.checkpointed_hw, 1, "Broker2 never learned HW=2");
    (b1, b2)
}

/// Step 4 with the pre-0.11 rule: Broker2 truncates to its own HW and loses
/// offset 1; then Broker1 crashes before Broker2 can fetch it again.
async fn step_4_with_high_watermark(b1: &mut Replica, b2: &mut Replica) {
    // Step 4, "the follower recovers, but the leader crashes": Broker2
    // restarts and truncates its log by its own HW=1, removing every message
    // at or above it, so Follower [HW=1, LEO=1] and the message at offset 1
    // is gone from the follower. It starts fetching again, but Broker1 goes
    // down first and offset 1 never reaches Broker2.
    b2.restart().await;
    truncate_to_own_high_watermark(b2).await;
    assert_eq!(b2.state(), (1, 1));
    assert_eq!(b2.value_at(1).await, None, "offset 1 is gone from Broker2");
    b1.crash().await;
}

/// Step 4 with leader epochs: Broker2 asks the leader where to truncate, the
/// leader dies before answering, and Broker2 keeps its whole log.
async fn step_4_with_leader_epoch(b1: &mut Replica, b2: &mut Replica) {
    // Step 4, "the follower tries to recover, but the leader crashes":
    // Broker2 restarts and first sends OffsetsForLeaderEpoch to the leader to
    // learn where to recover to. Broker1 goes down before it answers, so the
    // follower truncates nothing and stays at Follower [HW=1, LEO=2].
    b2.restart().await;
    b1.crash().await;
    assert_eq!(b2.state(), (1, 2));
    assert_eq!(b2.value_at(1).await.as_deref(), Some(&b"B"[..]));
}

#[test]
fn data_loss_scenario_with_high_watermark_truncation_loses_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    run(move || async move {
        let (mut b1, mut b2) = steps_1_to_3(&root).await;
        step_4_with_high_watermark(&mut b1, &mut b2).await;

        // Step 5, "Broker2 becomes the new leader, Broker1 restarts and
        // syncs": Broker1 recovers and becomes a follower at [HW=2, LEO=2]
        // (truncating to its own HW=2 removes nothing). Broker2 is elected
        // leader at [HW=1, LEO=1]. Broker1 fetches from it, gets the leader's
        // HW=1 from the response and truncates its log to it: the message at
        // offset 1 is now lost for good.
        b1.restart().await;
        truncate_to_own_high_watermark(&mut b1).await;
        assert_eq!(b1.state(), (2, 2));
        b2.become_leader(1).await;
        b1.follow(2, 1);
        assert_eq!(b2.state(), (1, 1));
        fetch(&mut b1, &mut b2).await;

        // The bad outcome: "B" was committed (the leader's HW passed it), yet
        // neither replica holds offset 1 any more.
        assert_eq!(b1.state(), (1, 1));
        assert_eq!(b2.state(), (1, 1));
        for replica in [&mut b1, &mut b2] {
            assert_eq!(
                replica.records().await,
                vec![(0, b"A".to_vec())],
                "{} lost offset 1",
                replica.name
            );
        }
    });
}

#[test]
fn data_loss_scenario_with_leader_epoch_truncation_keeps_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    run(move || async move {
        let (mut b1, mut b2) = steps_1_to_3(&root).await;
        step_4_with_leader_epoch(&mut b1, &mut b2).await;

        // Step 5, "Broker2 becomes the new leader and updates the
        // LeaderEpoch": the moment it is elected it records LeaderEpoch
        // [epoch=1, startOffset=2] and moves its HW to 2 once its follower
        // confirms offset 2, so Leader [HW=2, LEO=2]; the message at offset 1
        // is not lost.
        b2.become_leader(1).await;
        assert_eq!(b2.epochs(), vec![(0, 0), (1, 2)]);

        // Broker1 restarts as the follower. It asks the new leader where its
        // latest epoch (0) ends: at offset 2, which is its own LEO, so it
        // truncates nothing.
        b1.restart().await;
        b1.follow(2, 1);
        assert_eq!(
            truncate_by_leader_epoch(&mut b1, &mut b2, false).await,
            (0, 2),
            "epoch 0 ends where epoch 1 starts"
        );
        assert_eq!(b1.leo(), 2);
        assert_follower_is_prefix(&mut b1, &mut b2, "after OffsetsForLeaderEpoch").await;
        fetch(&mut b1, &mut b2).await;
        fetch(&mut b1, &mut b2).await;
        assert_eq!(b2.state(), (2, 2));
        assert_eq!(b1.state(), (2, 2));

        // No data loss: offset 1 still holds "B" on both replicas, and the
        // two logs are the same bytes.
        for replica in [&mut b1, &mut b2] {
            assert_eq!(
                replica.records().await,
                vec![(0, b"A".to_vec()), (1, b"B".to_vec())],
                "{} keeps offset 1",
                replica.name
            );
        }
        assert_eq!(b1.bytes().await, b2.bytes().await);
    });
}

#[test]
fn divergence_scenario_with_high_watermark_truncation_diverges() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    run(move || async move {
        let (mut b1, mut b2) = steps_1_to_3(&root).await;
        step_4_with_high_watermark(&mut b1, &mut b2).await;

        // Step 5, "Broker2 becomes the new leader and a new message is
        // written": Broker1 recovers as a follower at [HW=2, LEO=2]. Broker2
        // is elected leader at [HW=1, LEO=1]. A produce request reaches the
        // new leader first and "C" is written at offset 1: Leader [HW=1,
        // LEO=2]. Then Broker1's fetch arrives carrying LEO=2, so the leader
        // moves its HW: Leader [HW=2, LEO=2].
        b1.restart().await;
        truncate_to_own_high_watermark(&mut b1).await;
        assert_eq!(b1.state(), (2, 2));
        b2.become_leader(1).await;
        b1.follow(2, 1);
        assert_eq!(b2.produce(b"C", 1).await, 1);
        assert_eq!(b2.state(), (1, 2));
        fetch(&mut b1, &mut b2).await;

        // The bad outcome: both replicas agree on [HW=2, LEO=2], yet offset 1
        // holds "B" on the follower and "C" on the leader.
        assert_eq!(b1.state(), (2, 2));
        assert_eq!(b2.state(), (2, 2));
        assert_eq!(b1.value_at(1).await.as_deref(), Some(&b"B"[..]));
        assert_eq!(b2.value_at(1).await.as_deref(), Some(&b"C"[..]));
        assert_ne!(b1.bytes().await, b2.bytes().await, "the replicas diverged");
    });
}

#[test]
fn divergence_scenario_with_leader_epoch_truncation_stays_consistent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    run(move || async move {
        let (mut b1, mut b2) = steps_1_to_3(&root).await;
        step_4_with_leader_epoch(&mut b1, &mut b2).await;

        // Step 5, "Broker2 becomes the new leader and a new message is
        // written": Broker2 is elected and records [epoch=1, startOffset=2],
        // since with leader epochs it kept "B". The produce request reaches
        // it first and "C" is written at offset 2.
        b2.become_leader(1).await;
        assert_eq!(b2.produce(b"C", 1).await, 2);
        assert_eq!(b2.epochs(), vec![(0, 0), (1, 2)]);

        // Broker1 restarts and asks the new leader with OffsetsForLeaderEpoch
        // before it fetches: epoch 0 ends at 2, its own LEO, so nothing of
        // its log conflicts with the leader's and nothing is truncated.
        b1.restart().await;
        b1.follow(2, 1);
        assert_eq!(
            truncate_by_leader_epoch(&mut b1, &mut b2, false).await,
            (0, 2)
        );
        assert_follower_is_prefix(&mut b1, &mut b2, "after OffsetsForLeaderEpoch").await;
        fetch(&mut b1, &mut b2).await;
        assert_follower_is_prefix(&mut b1, &mut b2, "after the first fetch").await;
        fetch(&mut b1, &mut b2).await;
        assert_follower_is_prefix(&mut b1, &mut b2, "after the second fetch").await;

        // After catching up both logs are byte-identical batch for batch,
        // offset 1 holds "B" on both, and their epoch caches agree.
        assert_eq!(b1.state(), (3, 3));
        assert_eq!(b2.state(), (3, 3));
        let expected = vec![(0, b"A".to_vec()), (1, b"B".to_vec()), (2, b"C".to_vec())];
        assert_eq!(b1.records().await, expected);
        assert_eq!(b2.records().await, expected);
        assert_eq!(b1.bytes().await, b2.bytes().await);
        assert_eq!(b1.epochs(), b2.epochs());
    });
}

/// Section 2.2 of the seed: where the divergence of scenario 2 really comes
/// from under leader epochs, a follower outside the ISR and an unclean
/// election. Here the answer to OffsetsForLeaderEpoch does require a
/// truncation, and it removes exactly the conflicting message.
#[test]
fn unclean_election_divergence_is_repaired_by_leader_epoch_truncation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    run(move || async move {
        let mut b1 = Replica::start(&root, "broker1", 1).await;
        let mut b2 = Replica::start(&root, "broker2", 2).await;
        b1.become_leader(0).await;
        b2.follow(1, 0);
        b1.produce(b"A", 0).await;
        fetch(&mut b2, &mut b1).await;
        fetch(&mut b2, &mut b1).await;
        assert_eq!(b2.state(), (1, 1));

        // Step 1, "the follower is not in the ISR, and the leader crashes
        // while it syncs": outside the ISR the follower does not hold back
        // the leader's HW, so the leader commits "B" alone. The follower's
        // fetch for it never gets an answer because the leader goes down.
        // The controller took Broker2 out of the ISR (partition epoch 1).
        b1.assign(1, 0, 1, &[1]);
        b1.produce(b"B", 0).await;
        let fetch_offset = b2.leo();
        let lost = leader_handle_fetch(&mut b1, 2, fetch_offset).await;
        assert_eq!(lost.high_watermark, 2);
        b1.crash().await;
        drop(lost);
        assert_eq!(b2.state(), (1, 1));

        // Step 2, "unclean election: Broker2 becomes the leader and a new
        // message is written": on election it records LeaderEpoch
        // [epoch=1, startOffset=1] at Leader [HW=1, LEO=1], then takes a
        // produce request, and its LEO becomes 2.
        b2.become_leader(1).await;
        assert_eq!(b2.epochs(), vec![(0, 0), (1, 1)]);
        assert_eq!(b2.produce(b"C", 1).await, 1);
        assert_eq!(b2.leo(), 2);

        // Step 3, "Broker1 restarts and recovers as a follower": it first
        // sends OffsetsForLeaderEpoch to the new leader, which answers with
        // epoch 0 ending at 1. Its LEO (2) is past that, so it truncates and
        // drops its "B" at offset 1; from there it only lags the leader and
        // catches up by fetching.
        b1.restart().await;
        b1.follow(2, 1);
        assert_eq!(
            truncate_by_leader_epoch(&mut b1, &mut b2, true).await,
            (0, 1)
        );
        assert_eq!(b1.leo(), 1);
        assert_eq!(b1.epochs(), vec![(0, 0)]);
        assert_follower_is_prefix(&mut b1, &mut b2, "after the truncation").await;
        fetch(&mut b1, &mut b2).await;
        assert_follower_is_prefix(&mut b1, &mut b2, "after the first fetch").await;
        fetch(&mut b1, &mut b2).await;

        let expected = vec![(0, b"A".to_vec()), (1, b"C".to_vec())];
        assert_eq!(b1.records().await, expected);
        assert_eq!(b2.records().await, expected);
        assert_eq!(b1.bytes().await, b2.bytes().await);
        assert_eq!(b1.epochs(), vec![(0, 0), (1, 1)], "learned from the batch");
        assert_eq!(b1.state(), (2, 2));
        assert_eq!(b2.state(), (2, 2));
    });
}
