//! Loading a segment's offset and time index for the checks, with the
//! problems of the files themselves.

use super::*;

impl Verifier {
    /// Reads the offset index and checks each entry on its own and against
    /// the previous one, as pinlog's open-time sanity check does. Returns the
    /// entries that passed, for the checks against the log (which also
    /// catch positions past the end of the file).
    pub(super) fn load_offset_index(&mut self, path: &Path, base_offset: i64) -> Vec<OffsetEntry> {
        let mut good = Vec::new();
        let mut previous: Option<(i64, u64)> = None;
        self.walk_index(path, OFFSET_INDEX_ENTRY_SIZE, |n, bytes| {
            let relative_offset = u32_at(bytes, 0);
            let (offset, position) = decode_offset_entry(base_offset, bytes);
            let position = u64::from(position);
            if relative_offset > i32::MAX as u32 {
                return Some(format!(
                    "relative offset {relative_offset} is above 2^31-1; Kafka reads it as negative"
                ));
            }
            if let Some((previous_offset, previous_position)) =
                previous.filter(|(o, p)| offset <= *o || position <= *p)
            {
                return Some(format!(
                    "entry (offset {offset}, byte {position}) does not increase on the previous one (offset {previous_offset}, byte {previous_position})"
                ));
            }
            previous = Some((offset, position));
            good.push(OffsetEntry {
                n,
                offset,
                position,
            });
            None
        });
        good
    }

    /// Like [`Verifier::load_offset_index`], for the time index.
    pub(super) fn load_time_index(
        &mut self,
        path: &Path,
        base_offset: i64,
        log_len: u64,
    ) -> Vec<TimeEntry> {
        let mut good = Vec::new();
        let mut previous: Option<(i64, i64)> = None;
        self.walk_index(path, TIME_INDEX_ENTRY_SIZE, |n, bytes| {
            let relative_offset = u32_at(bytes, 8);
            let (timestamp, offset) = decode_time_entry(base_offset, bytes);
            if log_len == 0 {
                return Some("the segment is empty, so its time index must be too".to_string());
            }
            if relative_offset > i32::MAX as u32 {
                return Some(format!(
                    "relative offset {relative_offset} is above 2^31-1; Kafka reads it as negative"
                ));
            }
            match previous {
                Some((previous_timestamp, _)) if timestamp <= previous_timestamp => {
                    return Some(format!(
                        "timestamp {timestamp} is not larger than the previous entry's {previous_timestamp} (Kafka: out of order timestamp)"
                    ))
                }
                Some((_, previous_offset)) if offset < previous_offset => {
                    return Some(format!(
                        "offset {offset} is smaller than the previous entry's {previous_offset}"
                    ))
                }
                _ => {}
            }
            previous = Some((timestamp, offset));
            good.push(TimeEntry {
                n,
                timestamp,
                offset,
            });
            None
        });
        good
    }

    /// Walks an index file's entries, as both indexes share their layout
    /// rules: it reports a file it cannot read, zero-filled preallocation
    /// (and a non-zero entry after it), and a partial last entry, and hands
    /// every other entry to `check`, whose problem it reports.
    fn walk_index(
        &mut self,
        path: &Path,
        entry_size: usize,
        mut check: impl FnMut(u64, &[u8]) -> Option<String>,
    ) {
        let mut entries = match IndexEntries::open(path, entry_size) {
            Ok(entries) => entries,
            Err(e) => return self.read_failure(e),
        };
        let mut zero_from: Option<u64> = None;
        loop {
            let (n, bytes) = match entries.next_entry() {
                Ok(Some(entry)) => entry,
                Ok(None) => break,
                Err(e) => {
                    self.read_failure(e);
                    break;
                }
            };
            let location = entry_location(n, entry_size);
            let all_zero = bytes.iter().all(|&b| b == 0);
            if let Some(first_zero) = zero_from {
                if !all_zero {
                    self.error(
                        path,
                        location,
                        format!("a non-zero entry follows the zero-filled entries that start at entry {first_zero}"),
                        Action::RepairedOnOpen,
                    );
                }
                continue;
            }
            if n > 0 && all_zero {
                zero_from = Some(n);
                continue;
            }
            if let Some(description) = check(n, bytes) {
                self.error(path, location, description, Action::RepairedOnOpen);
            }
        }
        if let Some(first_zero) = zero_from {
            self.warning(
                path,
                entry_location(first_zero, entry_size),
                format!(
                    "the index was not trimmed: entries {first_zero}..{} are zero-filled preallocation (the broker did not shut down cleanly)",
                    entries.whole_entries()
                ),
                Action::RepairedOnOpen,
            );
        }
        if let Some(tail) = entries.partial_tail() {
            self.error(
                path,
                Location::Entry {
                    entry: entries.whole_entries(),
                    byte: tail.position,
                },
                tail.reason,
                Action::RepairedOnOpen,
            );
        }
    }
}
