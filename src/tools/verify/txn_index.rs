//! Checks of a segment's aborted-transaction index (`.txnindex`): a whole
//! number of entries of Kafka's format, each inside its segment, in marker
//! order, and each naming an ABORT marker of its producer that the segment
//! really holds. pinlog's open runs the first checks too and rebuilds a
//! failing index from the log; a missing entry (an abort the index does not
//! list) needs the producer state to see, so only recovery finds it.

use super::*;
use crate::log::control_batch;
use crate::log::transaction_index::{check_entries, decode_entries, TXN_INDEX_ENTRY_BYTES};

impl Verifier {
    /// Remembers a valid ABORT marker of the segment being checked.
    pub(super) fn note_abort_marker(&mut self, header: &BatchHeader, batch: &[u8]) {
        if let Ok(Some(m)) = control_batch::marker_of(batch, header) {
            if m.kind.is_abort() {
                self.abort_markers
                    .insert(header.base_offset, header.producer_id);
            }
        }
    }

    /// Checks the `.txnindex` of the segment `[base_offset, next_offset)`
    /// against the ABORT markers [`Self::note_abort_marker`] saw in it.
    pub(super) fn verify_txn_index(&mut self, path: &Path, base_offset: i64, next_offset: i64) {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                self.error(
                    path,
                    Location::File,
                    format!("cannot read the file: {e}"),
                    Action::NoneNeeded,
                );
                return;
            }
        };
        let entries = match decode_entries(&bytes) {
            Ok(entries) => entries,
            Err(reason) => {
                self.error(path, Location::File, reason, Action::RepairedOnOpen);
                return;
            }
        };
        if let Err(reason) = check_entries(&entries, base_offset, next_offset) {
            self.error(path, Location::File, reason, Action::RepairedOnOpen);
            return;
        }
        for (n, e) in entries.iter().enumerate() {
            let location = Location::Entry {
                entry: n as u64,
                byte: (n * TXN_INDEX_ENTRY_BYTES) as u64,
            };
            match self.abort_markers.get(&e.last_offset) {
                Some(producer) if *producer == e.producer_id => {}
                Some(producer) => self.error(
                    path,
                    location,
                    format!(
                        "the ABORT marker at offset {} is producer {producer}'s, not producer {}'s",
                        e.last_offset, e.producer_id
                    ),
                    Action::DeleteIndexes,
                ),
                None => self.error(
                    path,
                    location,
                    format!(
                        "no ABORT marker at offset {} ends producer {}'s transaction: read_committed consumers would drop its committed records",
                        e.last_offset, e.producer_id
                    ),
                    Action::DeleteIndexes,
                ),
            }
        }
    }
}
