//! The invariants (numbered as in `tests/in_process/txn_simulation.rs`), checked
//! against the ground truth. Invariants 5 (zombies, late EndTxns) and 6
//! (legal transitions) are checked where they could break, in the
//! coordinator and partition code; invariant 1 each time a partition's
//! high watermark moves; 2, 3 and 4 after the heal phase.

use pinlog::transaction::metadata::TxnState;

use super::coordinator::outcome;
use super::partition::EntryKind;
use super::*;

impl Sim {
    /// Invariant 1, on what a read_committed reader of `p` may read now:
    /// every batch wholly below the LSO and outside the aborted index
    /// belongs to a transaction the coordinator decided to commit.
    pub fn check_read_committed(&mut self, p: usize) {
        let part = &self.partitions[p];
        let lso = part.last_stable_offset();
        let mut bad = Vec::new();
        let mut seen = Vec::new();
        // Up to the first batch not wholly below the LSO: checked next time.
        let mut upto = lso;
        for e in part.log.iter().filter(|e| e.offset >= part.checked_upto) {
            let EntryKind::Data { txn, count } = e.kind else {
                continue;
            };
            if e.offset + i64::from(count) > lso {
                upto = upto.min(e.offset);
                break;
            }
            if part.aborted_at(e.pid, e.offset) {
                continue;
            }
            seen.push((p, e.offset));
            match self.truth.decided.get(&txn) {
                Some(true) => {}
                decided => bad.push(format!(
                    "p{p}: a read_committed reader sees offset {} of txn {txn}, decided {:?} (LSO {lso})",
                    e.offset,
                    decided.map(|c| outcome(*c))
                )),
            }
        }
        self.partitions[p].checked_upto = self.partitions[p].checked_upto.max(upto);
        self.truth.seen_visible.extend(seen);
        for b in bad {
            self.violation(b);
        }
    }

    /// After the heal phase: nothing hangs (4), every transaction is
    /// all-or-nothing on every partition (2), and what clients were told
    /// is what happened (3).
    pub fn final_checks(&mut self) {
        let mut bad = Vec::new();
        if !self.coordinator.up || !self.coordinator.loaded {
            bad.push("4: no coordinator after healing".to_string());
        }
        for e in self.coordinator.entries() {
            let m = &e.metadata;
            if !m.state.is_idle() || e.pending.is_some() {
                bad.push(format!(
                    "4: {} is still {:?} (pending {:?}) after healing",
                    m.transactional_id, m.state, e.pending
                ));
            }
            assert_ne!(m.state, TxnState::Dead, "ids do not expire in a run");
        }
        if self.coordinator.busy() > 0 {
            bad.push(format!(
                "4: the coordinator still has {} writes or marker tasks",
                self.coordinator.busy()
            ));
        }
        let busy = self.clients_busy();
        if !busy.is_empty() {
            bad.push(format!(
                "4: instances {busy:?} are still in a transaction after healing"
            ));
        }
        for part in &self.partitions {
            let p = part.index;
            let lso = part.last_stable_offset();
            if lso != part.hw || part.hw != part.leo {
                bad.push(format!(
                    "4: p{p}: LSO {lso}, HW {}, LEO {} after healing; open {:?}",
                    part.hw,
                    part.leo,
                    part.producers.txns().ongoing().collect::<Vec<_>>()
                ));
            }
            for e in &part.log {
                let EntryKind::Data { txn, count } = e.kind else {
                    continue;
                };
                let visible =
                    e.offset + i64::from(count) <= lso && !part.aborted_at(e.pid, e.offset);
                let decided = self.truth.decided.get(&txn).copied();
                if decided.is_none() {
                    bad.push(format!(
                        "2: p{p}: offset {} of txn {txn}, which was never decided",
                        e.offset
                    ));
                } else if visible != (decided == Some(true)) {
                    bad.push(format!(
                        "2: p{p}: offset {} of txn {txn} (decided {}) is {}",
                        e.offset,
                        outcome(decided == Some(true)),
                        if visible { "visible" } else { "hidden" }
                    ));
                }
            }
        }
        for &(p, offset) in &self.truth.seen_visible {
            let part = &self.partitions[p];
            let still = part
                .log
                .iter()
                .find(|e| e.offset == offset)
                .is_some_and(|e| !part.aborted_at(e.pid, e.offset));
            if !still {
                bad.push(format!(
                    "1: p{p}: offset {offset} was read_committed, then hidden"
                ));
            }
        }
        for (&txn, &commit) in &self.truth.told {
            let decided = self.truth.decided.get(&txn).copied();
            if decided != Some(commit) {
                bad.push(format!(
                    "3: txn {txn}: the client was told {}, the coordinator decided {:?}",
                    outcome(commit),
                    decided.map(outcome)
                ));
            }
        }
        for a in &self.truth.acked {
            let part = &self.partitions[a.partition];
            let found = part.log.iter().find(|e| e.offset == a.offset);
            let Some(EntryKind::Data { txn, .. }) = found.map(|e| &e.kind) else {
                bad.push(format!(
                    "3: p{}: acknowledged offset {} holds no data",
                    a.partition, a.offset
                ));
                continue;
            };
            if *txn != a.txn {
                bad.push(format!(
                    "3: p{}: acknowledged offset {} of txn {} holds txn {txn}",
                    a.partition, a.offset, a.txn
                ));
            }
        }
        for b in bad {
            self.violation(b);
        }
    }
}
