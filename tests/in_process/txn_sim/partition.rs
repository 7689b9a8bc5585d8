//! A simulated partition leader: the produce path of
//! `src/server/handlers/produce.rs` and `produce_verification.rs` (begin
//! the verification, ask the coordinator, append with the guard) and the
//! marker path of `txn_coordinator/markers.rs`'s `write_marker_on_owner`,
//! each deciding with the real `ProducerStateManager` exactly as
//! `PartitionLog::check_producer_state` and `apply` do. The log is the
//! batch headers and what the ground truth needs of them; answers wait for
//! the high watermark, as acks=all and marker writes do.

use std::collections::BTreeMap;

use pinlog::log::batch::BatchHeader;
use pinlog::log::producer_state::{
    LeaderAppendCheck, MarkersByOffset, ProducerStateManager, TxnVerification, VerificationGuard,
    VerificationNeed,
};
use pinlog::node::error_codes::error_code_for;
use pinlog::protocol::error_code;
use pinlog::server::handlers::produce_verification::produce_error_for;
use pinlog::topic_partition::TopicPartition;
use pinlog::transaction::marker::{MarkerKind, TxnMarker};
use pinlog::transaction::partition::AbortedTxn;

use super::*;

/// Kafka's RecordBatch attribute bits for transactional and control
/// batches.
const TRANSACTIONAL_ATTRIBUTE: i16 = 0x10;
const CONTROL_ATTRIBUTE: i16 = 0x20;
/// A v2 batch header's length after its length field, plus a little per
/// record: only used for positions in error messages.
const HEADER_BATCH_LENGTH: i32 = 49;
/// From an append to the high watermark passing it.
const REPLICATION_MS: Time = 3;
/// How long a leader waits for the coordinator's verification answer
/// (verification.rs's VERIFICATION_TIMEOUT, scaled).
const VERIFY_TIMEOUT_MS: Time = 500;
/// verification.rs: a version 2 add retries CONCURRENT_TRANSACTIONS every
/// 20 ms for up to 100 ms.
const CONCURRENT_RETRY_BACKOFF_MS: Time = 20;
const CONCURRENT_RETRY_MAX_MS: Time = 100;
/// The produce versions the clients speak: v12 is transaction version 2,
/// v11 knows TRANSACTION_ABORTABLE.
const PRODUCE_VERSION_TV2: i16 = 12;
const PRODUCE_VERSION_TV1: i16 = 11;

#[derive(Debug, Clone)]
pub enum EntryKind {
    Data { txn: TxnGid, count: i32 },
    Marker,
}

/// One batch of the simulated log.
#[derive(Debug, Clone)]
pub struct LogEntry {
    pub offset: i64,
    pub pid: i64,
    pub kind: EntryKind,
}

/// A deliberate defect for the checks' self-test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Defect {
    /// Drops the aborted-transaction index entries an ABORT yields.
    IgnoresAborts,
    /// Shows read_committed readers everything below the HW.
    ExposesPastLso,
}

/// A produce waiting for the coordinator's verification.
#[derive(Debug, Clone)]
struct Verifying {
    from: Node,
    produce: ProduceReq,
    guard: VerificationGuard,
    started: Time,
}

pub struct Partition {
    pub index: usize,
    pub tp: TopicPartition,
    pub producers: ProducerStateManager,
    pub log: Vec<LogEntry>,
    pub leo: i64,
    pub hw: i64,
    /// The aborted-transaction index (`.txnindex`).
    pub aborted: Vec<AbortedTxn>,
    verifying: BTreeMap<u64, Verifying>,
    /// Answers held until the HW reaches the offset.
    awaiting_hw: Vec<(i64, Node, Msg)>,
    /// Ground truth: which transaction each producer's open transaction
    /// here belongs to.
    open_txn: BTreeMap<i64, TxnGid>,
    /// The read_committed view is checked up to here.
    pub checked_upto: i64,
    pub defect: Option<Defect>,
}

impl Partition {
    pub fn new(index: usize) -> Self {
        Partition {
            index,
            tp: TopicPartition::new(TOPIC, index as i32),
            producers: ProducerStateManager::new(i64::MAX / 4),
            log: Vec::new(),
            leo: 0,
            hw: 0,
            aborted: Vec::new(),
            verifying: BTreeMap::new(),
            awaiting_hw: Vec::new(),
            open_txn: BTreeMap::new(),
            checked_upto: 0,
            defect: None,
        }
    }

    /// Where read_committed consumers stop (`PartitionLog::last_stable_offset`
    /// with the log start at 0).
    pub fn last_stable_offset(&self) -> i64 {
        if self.defect == Some(Defect::ExposesPastLso) {
            return self.hw;
        }
        self.producers.txns().last_stable_offset(self.hw).max(0)
    }

    /// Whether a read_committed consumer skips the batch at `offset` of
    /// `pid`: an aborted transaction of that producer spans it.
    pub fn aborted_at(&self, pid: i64, offset: i64) -> bool {
        self.aborted
            .iter()
            .any(|a| a.producer_id == pid && a.first_offset <= offset && offset <= a.last_offset)
    }
}

fn header(
    offset: i64,
    pid: i64,
    epoch: i16,
    seq: i32,
    count: i32,
    control: bool,
    now: Time,
) -> BatchHeader {
    BatchHeader {
        base_offset: offset,
        batch_length: HEADER_BATCH_LENGTH + 10 * count,
        partition_leader_epoch: 0,
        magic: 2,
        crc: 0,
        attributes: TRANSACTIONAL_ATTRIBUTE | if control { CONTROL_ATTRIBUTE } else { 0 },
        last_offset_delta: count - 1,
        base_timestamp: now,
        max_timestamp: now,
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: if control { -1 } else { seq },
        record_count: count,
    }
}

impl Sim {
    pub fn partition_receive(&mut self, p: usize, from: Node, msg: Msg) {
        match msg {
            Msg::Produce(produce) => self.partition_produce(p, from, produce),
            Msg::VerifyAnswer { req, code } => self.verify_answer(p, req, code),
            Msg::Marker(marker) => self.partition_marker(p, marker),
            other => panic!("partition {p} got {other:?}"),
        }
    }

    fn produce_version(tv: i16) -> i16 {
        if tv >= 2 {
            PRODUCE_VERSION_TV2
        } else {
            PRODUCE_VERSION_TV1
        }
    }

    fn answer_produce(&mut self, p: usize, to: Node, req: u64, code: i16, offset: i64) {
        self.send(
            Node::Partition(p),
            to,
            Msg::ProduceAnswer { req, code, offset },
        );
    }

    /// produce_verification.rs's `verify_on_owner` for one partition:
    /// verification is on for both versions (version 1 with
    /// `transaction.partition.verification.enable`).
    fn partition_produce(&mut self, p: usize, from: Node, produce: ProduceReq) {
        let supports_epoch_bump = produce.tv >= 2;
        let need = self.partitions[p].producers.begin_verification(
            produce.pid,
            produce.epoch,
            supports_epoch_bump,
            self.now,
        );
        match need {
            Err(current) => {
                self.trace(format!(
                    "p{p}: produce of pid {} epoch {} refused, epoch {current} seen",
                    produce.pid, produce.epoch
                ));
                self.answer_produce(p, from, produce.req, error_code::INVALID_PRODUCER_EPOCH, -1);
            }
            Ok(VerificationNeed::Ongoing) => {
                self.partition_append(p, from, produce, TxnVerification::On(None))
            }
            Ok(VerificationNeed::Verify(guard)) => {
                let req = self.next_req();
                self.partitions[p].verifying.insert(
                    req,
                    Verifying {
                        from,
                        produce,
                        guard,
                        started: self.now,
                    },
                );
                self.ask_coordinator(p, req);
            }
        }
    }

    fn ask_coordinator(&mut self, p: usize, req: u64) {
        let v = &self.partitions[p].verifying[&req];
        let ask = Msg::Verify {
            req,
            tid: v.produce.tid.clone(),
            pid: v.produce.pid,
            epoch: v.produce.epoch,
            partition: p,
            add: v.produce.tv >= 2,
            txn: v.produce.txn,
            instance: v.produce.instance,
        };
        self.send(Node::Partition(p), Node::Coordinator, ask);
        self.after(
            VERIFY_TIMEOUT_MS,
            Event::VerifyTimeout { partition: p, req },
        );
    }

    fn verify_answer(&mut self, p: usize, req: u64, code: i16) {
        let Some(v) = self.partitions[p].verifying.remove(&req) else {
            return;
        };
        let add = v.produce.tv >= 2;
        if add
            && code == error_code::CONCURRENT_TRANSACTIONS
            && self.now - v.started < CONCURRENT_RETRY_MAX_MS
        {
            // The previous transaction is completing: ask again shortly.
            let again = self.next_req();
            self.partitions[p].verifying.insert(again, v);
            self.after(
                CONCURRENT_RETRY_BACKOFF_MS,
                Event::VerifyRetry {
                    partition: p,
                    req: again,
                },
            );
            return;
        }
        if code != error_code::NONE {
            let answer = produce_error_for(code, Self::produce_version(v.produce.tv));
            self.trace(format!(
                "p{p}: the coordinator did not verify pid {} epoch {} (txn {}): {code} -> {answer}",
                v.produce.pid, v.produce.epoch, v.produce.txn
            ));
            self.answer_produce(p, v.from, v.produce.req, answer, -1);
            return;
        }
        self.partition_append(p, v.from, v.produce, TxnVerification::On(Some(v.guard)));
    }

    pub fn verify_retry(&mut self, p: usize, req: u64) {
        if self.partitions[p].verifying.contains_key(&req) {
            self.ask_coordinator(p, req);
        }
    }

    /// No answer from the coordinator: verification.rs's
    /// COORDINATOR_NOT_AVAILABLE.
    pub fn verify_timeout(&mut self, p: usize, req: u64) {
        if self.partitions[p].verifying.contains_key(&req) {
            self.verify_answer(p, req, error_code::COORDINATOR_NOT_AVAILABLE);
        }
    }

    /// The append itself: `check_leader_append`, then `apply`.
    fn partition_append(
        &mut self,
        p: usize,
        from: Node,
        r: ProduceReq,
        verification: TxnVerification,
    ) {
        let now = self.now;
        let part = &mut self.partitions[p];
        let h = header(part.leo, r.pid, r.epoch, r.seq, r.count, false, now);
        let check = part
            .producers
            .check_leader_append(&part.tp, &[h], verification);
        match check {
            Err(e) => {
                self.trace(format!("p{p}: produce of txn {} refused: {e}", r.txn));
                self.answer_produce(p, from, r.req, error_code_for(&e), -1);
            }
            Ok(LeaderAppendCheck::Duplicate {
                first_offset,
                last_offset,
                ..
            }) => {
                self.trace(format!(
                    "p{p}: produce of txn {} is a duplicate at {first_offset}",
                    r.txn
                ));
                let answer = Msg::ProduceAnswer {
                    req: r.req,
                    code: error_code::NONE,
                    offset: first_offset,
                };
                self.await_hw(p, last_offset + 1, from, answer);
            }
            Ok(LeaderAppendCheck::Append) => {
                let open_before = part
                    .producers
                    .entry(r.pid)
                    .is_some_and(|e| e.current_txn_first_offset >= 0);
                let offset = part.leo;
                part.log.push(LogEntry {
                    offset,
                    pid: r.pid,
                    kind: EntryKind::Data {
                        txn: r.txn,
                        count: r.count,
                    },
                });
                let aborted = part.producers.apply(&[h], &MarkersByOffset::new());
                assert!(aborted.is_empty(), "a data batch aborted something");
                part.leo += i64::from(r.count);
                let joined = if open_before {
                    part.open_txn.get(&r.pid).copied()
                } else {
                    part.open_txn.insert(r.pid, r.txn);
                    None
                };
                let leo = part.leo;
                self.trace(format!(
                    "p{p}: appended txn {} pid {} epoch {} seq {} x{} at {offset}",
                    r.txn, r.pid, r.epoch, r.seq, r.count
                ));
                if let Some(owner) = joined.filter(|o| *o != r.txn) {
                    self.violation(format!(
                        "p{p}: a batch of txn {} joined txn {owner}'s open transaction (KAFKA-17754)",
                        r.txn
                    ));
                }
                self.check_not_zombie(r.instance, &format!("a produce to p{p}"));
                let answer = Msg::ProduceAnswer {
                    req: r.req,
                    code: error_code::NONE,
                    offset,
                };
                self.await_hw(p, leo, from, answer);
            }
        }
    }

    /// WriteTxnMarkers on one partition: `check_marker`, then `apply` with
    /// the marker, and its aborted entry into the index.
    fn partition_marker(&mut self, p: usize, mk: MarkerReq) {
        let now = self.now;
        let part = &mut self.partitions[p];
        let marker = TxnMarker {
            kind: if mk.commit {
                MarkerKind::Commit
            } else {
                MarkerKind::Abort
            },
            coordinator_epoch: mk.coordinator_epoch,
        };
        let offset = part.leo;
        let checked = part
            .producers
            .check_marker(&part.tp, mk.pid, mk.epoch, &marker, mk.tv, offset);
        let answer = |code| Msg::MarkerAnswer {
            tid: mk.tid.clone(),
            round: mk.round,
            coordinator_epoch: mk.coordinator_epoch,
            partition: p,
            code,
        };
        if let Err(e) = checked {
            let code = error_code_for(&e);
            self.trace(format!("p{p}: marker refused: {e}"));
            match code {
                error_code::TRANSACTION_COORDINATOR_FENCED => {
                    self.truth.stats.markers_refused_coordinator_fenced += 1
                }
                error_code::INVALID_PRODUCER_EPOCH => {
                    self.truth.stats.markers_refused_producer_epoch += 1
                }
                _ => {}
            }
            self.send(Node::Partition(p), Node::Coordinator, answer(code));
            return;
        }
        let h = header(offset, mk.pid, mk.epoch, -1, 1, true, now);
        let ends = part
            .producers
            .entry(mk.pid)
            .is_some_and(|e| e.current_txn_first_offset >= 0);
        part.log.push(LogEntry {
            offset,
            pid: mk.pid,
            kind: EntryKind::Marker,
        });
        let aborted = part
            .producers
            .apply(&[h], &MarkersByOffset::from([(offset, marker)]));
        if part.defect != Some(Defect::IgnoresAborts) {
            part.aborted.extend(aborted);
        }
        part.leo += 1;
        let ended = if ends {
            part.open_txn.remove(&mk.pid)
        } else {
            None
        };
        let leo = part.leo;
        self.trace(format!(
            "p{p}: {} marker pid {} epoch {} coordinator epoch {} at {offset} (ends txn {ended:?})",
            super::coordinator::outcome(mk.commit),
            mk.pid,
            mk.epoch,
            mk.coordinator_epoch
        ));
        if let Some(ended) = ended {
            if mk.owner != Some(ended) {
                self.violation(format!(
                    "p{p}: the marker of txn {:?} ended txn {ended} (a late marker)",
                    mk.owner
                ));
            }
        }
        self.await_hw(p, leo, Node::Coordinator, answer(error_code::NONE));
    }

    fn await_hw(&mut self, p: usize, offset: i64, to: Node, answer: Msg) {
        let part = &mut self.partitions[p];
        if part.hw >= offset {
            self.send(Node::Partition(p), to, answer);
            return;
        }
        part.awaiting_hw.push((offset, to, answer));
        let hw = part.leo;
        self.after(REPLICATION_MS, Event::HwTick { partition: p, hw });
    }

    /// The followers caught up to `hw`: markers below it are stable, held
    /// answers go out, and the read_committed view grows.
    pub fn hw_tick(&mut self, p: usize, hw: i64) {
        let part = &mut self.partitions[p];
        if hw <= part.hw {
            return;
        }
        part.hw = hw;
        part.producers.on_high_watermark(hw);
        let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut part.awaiting_hw)
            .into_iter()
            .partition(|(offset, _, _)| *offset <= hw);
        part.awaiting_hw = waiting;
        for (_, to, answer) in ready {
            self.send(Node::Partition(p), to, answer);
        }
        self.check_read_committed(p);
    }
}
