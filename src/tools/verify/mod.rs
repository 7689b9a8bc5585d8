//! `verify_partition_dir`: an offline check of every file in a partition
//! directory, with a suggested action for each problem found.
//!
//! What is checked, per segment (`<base>.log` with its `.index` and
//! `.timeindex`) and then across segments:
//!
//! - **Batches:** every header parses (magic 2, a length that fits the file),
//!   the CRC-32C matches and the record count fits the offset range, exactly
//!   as recovery checks them. The first byte that cannot start a batch ends
//!   the segment's scan; a batch with a bad CRC is reported and stepped over,
//!   so that one report shows all the damage.
//! - **Offsets:** the first batch starts at or after the base offset in the
//!   file name; batches never overlap, within a segment or across segments.
//!   Gaps are allowed, because compaction leaves them.
//! - **Offset index:** what pinlog's open-time sanity check looks at (whole
//!   entries, offsets and positions strictly increasing, positions inside the
//!   file), and what it does not: every entry must point at the start of a
//!   batch whose *last* offset is the entry's offset, which is also what
//!   Kafka's `DumpLogSegments` checks.
//! - **Time index:** timestamps strictly increasing, offsets never going
//!   back, and each entry's offset the last offset of a batch whose max
//!   timestamp is the entry's timestamp (Kafka's check too). A cleanly closed
//!   segment's last entry holds its largest timestamp, which Kafka reads as
//!   the segment's max timestamp without scanning.
//! - **Records** of uncompressed batches: they decode, and the header's max
//!   timestamp is the records' largest (Kafka's broker rewrites the header
//!   from the records; pinlog stores the producer's value).
//! - **Leader epochs:** `leader-epoch-checkpoint` parses (epochs and start
//!   offsets strictly increasing), no entry starts past the log end offset,
//!   and no batch carries an epoch newer than the checkpoint's latest.
//!
//! Each [`Problem`] names the file and the byte, entry or line, and carries
//! an [`Action`]. Actions are specific to how pinlog opens a partition: after
//! a crash (no clean-shutdown marker) only segments from the one holding the
//! recovery point on are rescanned, and a rescan that finds bad bytes
//! truncates there and deletes every later segment; index problems that the
//! open-time sanity check catches are repaired by that rescan, others are not.
//! The recovery point comes from the data directory's
//! `recovery-point-offset-checkpoint` when the partition directory sits in
//! one; for a copy elsewhere, only the newest segment is assumed rescanned.
//!
//! The report's types are in `report.rs`; loading the indexes for the
//! checks is in `indexes.rs`.
//!
//! The verifier never panics on file contents and never fails as a whole:
//! an unreadable file becomes a problem in the report.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use crate::constants::{
    CLEAN_SHUTDOWN_FILE, LEADER_EPOCH_CHECKPOINT_FILE, OFFSET_INDEX_ENTRY_SIZE,
    RECORD_BATCH_HEADER_SIZE, RECOVERY_POINT_CHECKPOINT_FILE, TIME_INDEX_ENTRY_SIZE,
};
use crate::error::LogError;
use crate::log::batch::{read_varint, BatchHeader};
use crate::log::checkpoint;
use crate::log::epoch_cache::EpochEntry;
use crate::tools::dump::{
    decode_offset_entry, decode_time_entry, u32_at, DumpError, FileKind, IndexEntries, InvalidTail,
    LogFileReader, LogItem,
};
use crate::topic_partition::TopicPartition;

/// At most this many problems are listed per file; the rest are counted in
/// [`VerifyReport::problems_not_listed`]. A segment of garbage would
/// otherwise give one problem per index entry.
pub const PROBLEMS_PER_FILE_MAX: usize = 64;

mod indexes;
mod report;
mod txn_index;

pub use self::report::{Action, Location, Problem, Severity, VerifyReport};

/// Checks every segment, index and the epoch checkpoint of the partition
/// directory `dir`. See the module documentation for what is checked.
pub fn verify_partition_dir(dir: &Path) -> VerifyReport {
    let mut verifier = Verifier {
        report: VerifyReport {
            dir: dir.to_path_buf(),
            segments: 0,
            batches: 0,
            log_end_offset: None,
            problems: Vec::new(),
            problems_not_listed: 0,
            errors_not_listed: 0,
        },
        problems_per_file: HashMap::new(),
        highest_batch_epoch: None,
        abort_markers: BTreeMap::new(),
    };
    verifier.verify(dir);
    verifier.report
}

/// The segment files of a directory, by base offset.
#[derive(Default)]
struct DirFiles {
    logs: BTreeMap<i64, PathBuf>,
    offset_indexes: BTreeMap<i64, PathBuf>,
    time_indexes: BTreeMap<i64, PathBuf>,
    txn_indexes: BTreeMap<i64, PathBuf>,
}

/// The first batch with the highest partition leader epoch seen so far.
struct EpochSighting {
    epoch: i32,
    path: PathBuf,
    position: u64,
    base_offset: i64,
}

struct Verifier {
    report: VerifyReport,
    problems_per_file: HashMap<PathBuf, usize>,
    highest_batch_epoch: Option<EpochSighting>,
    /// The ABORT markers of the segment being checked: offset to producer
    /// id, for the checks of its `.txnindex`.
    abort_markers: BTreeMap<i64, i64>,
}

/// An offset-index entry that passed the entry-by-entry checks.
struct OffsetEntry {
    n: u64,
    offset: i64,
    position: u64,
}

/// A time-index entry that passed the entry-by-entry checks.
struct TimeEntry {
    n: u64,
    timestamp: i64,
    offset: i64,
}

/// One segment's files and where it stands in the log.
struct SegmentCtx<'a> {
    base_offset: i64,
    log: &'a Path,
    offset_index: Option<&'a PathBuf>,
    time_index: Option<&'a PathBuf>,
    is_newest: bool,
    /// Whether recovery rescans this segment after an unclean shutdown.
    rescanned_on_recovery: bool,
}

impl SegmentCtx<'_> {
    /// What to do about bad bytes at `position`: recovery fixes the segments
    /// it rescans, and no others.
    fn damage_action(&self, position: u64, first_lost_offset: i64) -> Action {
        if self.rescanned_on_recovery {
            Action::RecoverTail {
                position,
                first_lost_offset,
            }
        } else {
            Action::Rereplicate {
                segment_base_offset: self.base_offset,
                position,
                first_lost_offset,
            }
        }
    }
}

fn entry_location(n: u64, entry_size_bytes: usize) -> Location {
    Location::Entry {
        entry: n,
        byte: n.saturating_mul(entry_size_bytes as u64),
    }
}

/// `base + delta`, `None` on overflow: headers here are untrusted, and
/// `BatchHeader::last_offset` would overflow on garbage.
fn checked_last_offset(h: &BatchHeader) -> Option<i64> {
    h.base_offset.checked_add(i64::from(h.last_offset_delta))
}

impl Verifier {
    fn problem(
        &mut self,
        severity: Severity,
        path: &Path,
        location: Location,
        description: String,
        action: Action,
    ) {
        let count = self
            .problems_per_file
            .entry(path.to_path_buf())
            .or_insert(0);
        if *count >= PROBLEMS_PER_FILE_MAX {
            self.report.problems_not_listed += 1;
            if severity == Severity::Error {
                self.report.errors_not_listed += 1;
            }
            return;
        }
        *count += 1;
        self.report.problems.push(Problem {
            severity,
            path: path.to_path_buf(),
            location,
            description,
            action,
        });
    }

    fn error(&mut self, path: &Path, location: Location, description: String, action: Action) {
        self.problem(Severity::Error, path, location, description, action);
    }

    fn warning(&mut self, path: &Path, location: Location, description: String, action: Action) {
        self.problem(Severity::Warning, path, location, description, action);
    }

    /// A file that could not be read at all.
    fn read_failure(&mut self, error: DumpError) {
        let (path, position) = match &error {
            DumpError::Read { path, position, .. } => (path.clone(), *position),
            DumpError::UnknownFile { path } | DumpError::Write { path, .. } => (path.clone(), 0),
            DumpError::Checkpoint(_) => (self.report.dir.clone(), 0),
        };
        let location = if position == 0 {
            Location::File
        } else {
            Location::Byte(position)
        };
        self.error(
            &path,
            location,
            format!("cannot read the file: {error}"),
            Action::NoneNeeded,
        );
    }

    fn verify(&mut self, dir: &Path) {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if TopicPartition::is_deleted_dir_name(name) {
            // A deleted partition on its way out: the next start removes it.
            return;
        }
        if TopicPartition::parse_dir_name(name).is_none() {
            self.warning(
                dir,
                Location::File,
                format!("the directory name {name:?} is not <topic>-<partition>, so the broker will not load it"),
                Action::NoneNeeded,
            );
        }
        let Some(files) = self.list(dir) else { return };
        self.report.segments = files.logs.len();
        if files.logs.is_empty() {
            self.warning(
                dir,
                Location::File,
                "no <base offset>.log segment files: is this a partition directory?".to_string(),
                Action::NoneNeeded,
            );
        }

        let newest = files.logs.keys().next_back().copied();
        // As in PartitionLog::open: after an unclean shutdown, the segment
        // holding the recovery point and every later one are rescanned. The
        // newest always is, whatever the recovery point.
        let first_rescanned = self.recovery_point(dir).map(|recovery_point| {
            files
                .logs
                .range(..=recovery_point)
                .next_back()
                .map_or(i64::MIN, |(base, _)| *base)
        });
        let mut previous: Option<(i64, PathBuf)> = None;
        for (&base_offset, log) in &files.logs {
            let ctx = SegmentCtx {
                base_offset,
                log,
                offset_index: files.offset_indexes.get(&base_offset),
                time_index: files.time_indexes.get(&base_offset),
                is_newest: Some(base_offset) == newest,
                rescanned_on_recovery: Some(base_offset) == newest
                    || first_rescanned.is_some_and(|first| base_offset >= first),
            };
            if let Some((previous_next_offset, previous_log)) = &previous {
                if base_offset < *previous_next_offset {
                    self.error(
                        log,
                        Location::File,
                        format!(
                            "the segment starts at offset {base_offset}, but {} holds offsets up to {}: segments overlap",
                            previous_log.display(),
                            previous_next_offset - 1
                        ),
                        Action::ReplicateWholePartition,
                    );
                }
            }
            self.abort_markers.clear();
            let next_offset = self.verify_segment(&ctx);
            if let Some(path) = files.txn_indexes.get(&base_offset) {
                self.verify_txn_index(path, base_offset, next_offset);
            }
            previous = Some((next_offset, log.clone()));
        }
        self.report.log_end_offset = previous.as_ref().map(|(next_offset, _)| *next_offset);

        for (kind, map) in [
            ("offset index", &files.offset_indexes),
            ("time index", &files.time_indexes),
            ("transaction index", &files.txn_indexes),
        ] {
            for (base_offset, path) in map {
                if !files.logs.contains_key(base_offset) {
                    self.warning(
                        path,
                        Location::File,
                        format!("orphaned {kind}: there is no segment {base_offset:020}.log"),
                        Action::RemoveStrayFile,
                    );
                }
            }
        }
        self.verify_epoch_checkpoint(dir);
    }

    /// This partition's entry in the data directory's recovery-point
    /// checkpoint, when the directory sits in a data directory that has one.
    /// A copy elsewhere has none, and the advice then assumes the worst: only
    /// the newest segment is rescanned.
    fn recovery_point(&mut self, dir: &Path) -> Option<i64> {
        let name = dir.file_name()?.to_str()?;
        let tp = TopicPartition::parse_dir_name(name)?;
        let path = dir.parent()?.join(RECOVERY_POINT_CHECKPOINT_FILE);
        let text = match checkpoint::read_checkpoint_file(&path) {
            Ok(Some(text)) => text,
            Ok(None) => return None,
            Err(e) => {
                self.error(
                    &path,
                    Location::File,
                    format!("cannot read the file: {e}"),
                    Action::NoneNeeded,
                );
                return None;
            }
        };
        match checkpoint::decode_offset_checkpoint(&path, &text) {
            Ok(entries) => entries
                .into_iter()
                .find(|e| e.topic == tp.topic && e.partition == tp.partition)
                .map(|e| e.offset),
            Err(LogError::CorruptCheckpoint { line, reason, .. }) => {
                self.error(
                    &path,
                    Location::Line(line),
                    format!("does not parse, so the broker cannot start: {reason}"),
                    Action::RepairOffsetCheckpoint,
                );
                None
            }
            Err(other) => {
                self.error(
                    &path,
                    Location::File,
                    other.to_string(),
                    Action::RepairOffsetCheckpoint,
                );
                None
            }
        }
    }

    fn list(&mut self, dir: &Path) -> Option<DirFiles> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => {
                self.error(
                    dir,
                    Location::File,
                    format!("cannot list the directory: {e}"),
                    Action::NoneNeeded,
                );
                return None;
            }
        };
        let mut files = DirFiles::default();
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    self.error(
                        dir,
                        Location::File,
                        format!("cannot list the directory: {e}"),
                        Action::NoneNeeded,
                    );
                    return None;
                }
            };
            let path = entry.path();
            match FileKind::of(&path) {
                Some(FileKind::Log { base_offset }) => {
                    files.logs.insert(base_offset, path);
                }
                Some(FileKind::OffsetIndex { base_offset }) => {
                    files.offset_indexes.insert(base_offset, path);
                }
                Some(FileKind::TimeIndex { base_offset }) => {
                    files.time_indexes.insert(base_offset, path);
                }
                Some(FileKind::TxnIndex { base_offset }) => {
                    files.txn_indexes.insert(base_offset, path);
                }
                Some(FileKind::LeaderEpochCheckpoint | FileKind::OffsetCheckpoint) => {}
                None => {
                    let name = entry.file_name();
                    let name = name.to_string_lossy();
                    if [".log", ".index", ".timeindex", ".txnindex"]
                        .iter()
                        .any(|suffix| name.ends_with(suffix))
                    {
                        self.warning(
                            &path,
                            Location::File,
                            "the name is not <20-digit base offset>.<suffix>".to_string(),
                            Action::RemoveStrayFile,
                        );
                    }
                }
            }
        }
        Some(files)
    }

    /// Checks one segment and returns the offset after its last readable
    /// batch (its base offset when it has none).
    fn verify_segment(&mut self, ctx: &SegmentCtx<'_>) -> i64 {
        let mut reader = match LogFileReader::open(ctx.log) {
            Ok(reader) => reader,
            Err(e) => {
                self.read_failure(e);
                return ctx.base_offset;
            }
        };
        let log_len = reader.len_bytes();
        let offset_entries = match ctx.offset_index {
            Some(path) => self.load_offset_index(path, ctx.base_offset),
            None => {
                self.missing_index(ctx, "index", log_len);
                Vec::new()
            }
        };
        let time_entries = match ctx.time_index {
            Some(path) => self.load_time_index(path, ctx.base_offset, log_len),
            None => {
                self.missing_index(ctx, "timeindex", log_len);
                Vec::new()
            }
        };
        let offset_index_path = ctx.offset_index.cloned().unwrap_or_default();
        let time_index_path = ctx.time_index.cloned().unwrap_or_default();

        let mut next_offset = ctx.base_offset;
        let mut offset_cursor = 0usize;
        let mut time_cursor = 0usize;
        let mut previous_batch: Option<(u64, i64, i64)> = None;
        let mut max_timestamp: Option<(i64, i64)> = None;
        let mut tail: Option<InvalidTail> = None;
        loop {
            let item = match reader.next_item() {
                Ok(Some(item)) => item,
                Ok(None) => break,
                Err(e) => {
                    self.read_failure(e);
                    break;
                }
            };
            let (position, header, error) = match item {
                LogItem::Batch {
                    position,
                    header,
                    error,
                } => (position, header, error),
                LogItem::Unreadable(invalid) => {
                    self.unreadable_tail(ctx, &invalid, next_offset);
                    tail = Some(invalid);
                    break;
                }
            };
            self.report.batches += 1;
            let location = Location::Byte(position);
            if let Some(error) = &error {
                // The header fields under the CRC are suspect: report the
                // batch, step over it, and check nothing else against it.
                self.error(
                    ctx.log,
                    location,
                    format!(
                        "invalid batch (base offset {}, {} bytes): {error}",
                        header.base_offset,
                        header.size_bytes()
                    ),
                    ctx.damage_action(position, next_offset),
                );
                self.advance_offset_entries(
                    &offset_index_path,
                    &offset_entries,
                    &mut offset_cursor,
                    position,
                    previous_batch,
                );
                if let Some(last_offset) = checked_last_offset(&header) {
                    while time_entries
                        .get(time_cursor)
                        .is_some_and(|entry| entry.offset <= last_offset)
                    {
                        time_cursor += 1;
                    }
                    previous_batch = Some((position, header.base_offset, last_offset));
                }
                continue;
            }
            let Some(last_offset) = checked_last_offset(&header) else {
                self.error(
                    ctx.log,
                    location,
                    format!(
                        "base offset {} plus last offset delta {} overflows",
                        header.base_offset, header.last_offset_delta
                    ),
                    ctx.damage_action(position, next_offset),
                );
                continue;
            };
            if header.base_offset < next_offset {
                let description = match previous_batch {
                    None => format!(
                        "the first batch starts at offset {}, below the segment's base offset {}",
                        header.base_offset, ctx.base_offset
                    ),
                    Some((previous_position, _, previous_last)) => format!(
                        "the batch starts at offset {} but the batch at byte {previous_position} ends at offset {previous_last}: offsets must increase",
                        header.base_offset
                    ),
                };
                self.error(
                    ctx.log,
                    location,
                    description,
                    ctx.damage_action(position, next_offset),
                );
            } else if last_offset - ctx.base_offset > i64::from(i32::MAX) {
                self.error(
                    ctx.log,
                    location,
                    format!(
                        "last offset {last_offset} is more than 2^31-1 past the segment's base offset {}: indexes cannot address it",
                        ctx.base_offset
                    ),
                    ctx.damage_action(position, next_offset),
                );
            }
            self.check_records(ctx, position, &header, last_offset, reader.batch_bytes());
            self.note_abort_marker(&header, reader.batch_bytes());
            if max_timestamp.is_none_or(|(ts, _)| header.max_timestamp > ts) {
                max_timestamp = Some((header.max_timestamp, last_offset));
            }
            self.note_epoch(ctx.log, position, &header);

            if let Some(entry) = self.advance_offset_entries(
                &offset_index_path,
                &offset_entries,
                &mut offset_cursor,
                position,
                previous_batch,
            ) {
                if entry.offset != last_offset {
                    self.error(
                        &offset_index_path,
                        entry_location(entry.n, OFFSET_INDEX_ENTRY_SIZE),
                        format!(
                            "offset {} is indexed at byte {position}, but the batch there holds offsets {}..={last_offset} (Kafka: index offset {}, log offset {last_offset})",
                            entry.offset, header.base_offset, entry.offset
                        ),
                        Action::DeleteIndexes,
                    );
                }
            }
            // Time-index entries up to this batch's last offset.
            while let Some(entry) = time_entries.get(time_cursor) {
                if entry.offset > last_offset {
                    break;
                }
                time_cursor += 1;
                if entry.offset != last_offset {
                    self.error(
                        &time_index_path,
                        entry_location(entry.n, TIME_INDEX_ENTRY_SIZE),
                        format!(
                            "offset {} is not the last offset of a batch (the next batch, at byte {position}, holds offsets {}..={last_offset})",
                            entry.offset, header.base_offset
                        ),
                        Action::DeleteIndexes,
                    );
                } else if entry.timestamp != header.max_timestamp {
                    self.error(
                        &time_index_path,
                        entry_location(entry.n, TIME_INDEX_ENTRY_SIZE),
                        format!(
                            "timestamp {} is indexed for offset {}, but the batch at byte {position} ending there has max timestamp {}",
                            entry.timestamp, entry.offset, header.max_timestamp
                        ),
                        Action::DeleteIndexes,
                    );
                }
            }
            previous_batch = Some((position, header.base_offset, last_offset));
            next_offset = next_offset.max(last_offset.saturating_add(1));
        }

        // Entries past the last batch. Those in an unreadable tail go with
        // it: the action for the tail rebuilds the indexes too.
        let valid_end = tail.as_ref().map_or(log_len, |t| t.position);
        for entry in offset_entries.get(offset_cursor..).unwrap_or_default() {
            let location = entry_location(entry.n, OFFSET_INDEX_ENTRY_SIZE);
            if entry.position < valid_end {
                self.error(
                    &offset_index_path,
                    location,
                    format!(
                        "offset {} is indexed at byte {}, inside the last batch rather than at its start",
                        entry.offset, entry.position
                    ),
                    Action::DeleteIndexes,
                );
            } else if tail.is_none() {
                // The file ends at a batch boundary, but the index knew of
                // more: the segment lost whole batches.
                self.error(
                    &offset_index_path,
                    location,
                    format!(
                        "offset {} is indexed at byte {}, past the end of the {log_len}-byte segment: the segment may have lost batches at its end",
                        entry.offset, entry.position
                    ),
                    Action::RepairedOnOpen,
                );
            }
        }
        if tail.is_none() {
            for entry in time_entries.get(time_cursor..).unwrap_or_default() {
                self.error(
                    &time_index_path,
                    entry_location(entry.n, TIME_INDEX_ENTRY_SIZE),
                    format!(
                        "offset {} is past the segment's last batch, which ends at offset {}",
                        entry.offset,
                        next_offset - 1
                    ),
                    Action::DeleteIndexes,
                );
            }
            // A clean close appends the segment's largest timestamp; Kafka
            // reads it back as the segment's max timestamp without a scan.
            // An index with other problems gets rebuilt anyway, so this
            // would only repeat them.
            if let (Some((segment_max, at_offset)), Some(path)) = (max_timestamp, ctx.time_index) {
                let last_indexed = time_entries.last().map(|e| e.timestamp);
                let already_reported = self.problems_per_file.contains_key(path);
                if segment_max >= 0
                    && !already_reported
                    && last_indexed.is_none_or(|ts| ts < segment_max)
                {
                    self.warning(
                        path,
                        Location::File,
                        format!(
                            "the last entry is not the segment's largest timestamp {segment_max} (at offset {at_offset}); a clean close or roll appends it, so the segment was not closed cleanly. pinlog rescans for it, but Kafka would take {} as the segment's max timestamp for time retention and ListOffsets",
                            last_indexed.map_or_else(|| "none".to_string(), |ts| ts.to_string())
                        ),
                        Action::DeleteIndexes,
                    );
                }
            }
        }
        next_offset
    }

    /// Reports offset-index entries that point between batch starts, up to
    /// the batch at `position`, and returns the entry that points at it.
    /// Entries are strictly increasing in position, so there is at most one.
    fn advance_offset_entries<'e>(
        &mut self,
        path: &Path,
        entries: &'e [OffsetEntry],
        cursor: &mut usize,
        position: u64,
        previous_batch: Option<(u64, i64, i64)>,
    ) -> Option<&'e OffsetEntry> {
        while let Some(entry) = entries.get(*cursor) {
            if entry.position > position {
                return None;
            }
            *cursor += 1;
            if entry.position == position {
                return Some(entry);
            }
            let inside = previous_batch
                .map(|(p, base, last)| {
                    format!(", inside the batch at byte {p} (offsets {base}..={last})")
                })
                .unwrap_or_default();
            self.error(
                path,
                entry_location(entry.n, OFFSET_INDEX_ENTRY_SIZE),
                format!(
                    "offset {} is indexed at byte {}, which is not the start of a batch{inside}",
                    entry.offset, entry.position
                ),
                Action::DeleteIndexes,
            );
        }
        None
    }

    fn missing_index(&mut self, ctx: &SegmentCtx<'_>, suffix: &str, log_len: u64) {
        if log_len == 0 {
            return;
        }
        let path = ctx.log.with_extension(suffix);
        self.warning(
            &path,
            Location::File,
            format!("missing, but {} holds {log_len} bytes", ctx.log.display()),
            Action::MissingIndex,
        );
    }

    /// Reports a tail of a `.log` file that holds no readable batch.
    fn unreadable_tail(&mut self, ctx: &SegmentCtx<'_>, tail: &InvalidTail, next_offset: i64) {
        let location = Location::Byte(tail.position);
        if tail.all_zero {
            // After a crash the newest segment ends in DMA padding, and
            // recovery cuts it; in an older segment it never should.
            let severity = if ctx.is_newest {
                Severity::Warning
            } else {
                Severity::Error
            };
            self.problem(
                severity,
                ctx.log,
                location,
                format!(
                    "the last {} bytes are zeros, not batches: padding or preallocated space that a clean shutdown trims",
                    tail.len_bytes
                ),
                Action::TrimZeroTail {
                    position: tail.position,
                },
            );
        } else {
            self.error(
                ctx.log,
                location,
                format!(
                    "the last {} bytes hold no readable batch: {}",
                    tail.len_bytes, tail.reason
                ),
                ctx.damage_action(tail.position, next_offset),
            );
        }
    }

    /// Decodes the records of an uncompressed batch: Kafka's broker and
    /// consumers decode them, pinlog's produce path does not.
    fn check_records(
        &mut self,
        ctx: &SegmentCtx<'_>,
        position: u64,
        header: &BatchHeader,
        last_offset: i64,
        batch: &[u8],
    ) {
        if header.compression() != 0 || header.record_count == 0 {
            return;
        }
        match records_max_timestamp(batch, header) {
            Err(reason) => self.error(
                ctx.log,
                Location::Byte(position),
                format!("the CRC matches but the records do not decode: {reason}"),
                Action::SkipPoisonBatch {
                    next_offset: last_offset.saturating_add(1),
                },
            ),
            Ok(records_max)
                if !header.is_log_append_time() && records_max != header.max_timestamp =>
            {
                self.warning(
                    ctx.log,
                    Location::Byte(position),
                    format!(
                        "the header's max timestamp {} is not the records' largest timestamp {records_max}: the time index follows the header, so Kafka's DumpLogSegments reports a timestamp mismatch for an entry on this batch, and Kafka's broker would have rewritten the header from the records",
                        header.max_timestamp
                    ),
                    Action::NoneNeeded,
                );
            }
            Ok(_) => {}
        }
    }

    fn note_epoch(&mut self, path: &Path, position: u64, header: &BatchHeader) {
        let epoch = header.partition_leader_epoch;
        if epoch >= 0
            && self
                .highest_batch_epoch
                .as_ref()
                .is_none_or(|seen| epoch > seen.epoch)
        {
            self.highest_batch_epoch = Some(EpochSighting {
                epoch,
                path: path.to_path_buf(),
                position,
                base_offset: header.base_offset,
            });
        }
    }

    fn verify_epoch_checkpoint(&mut self, dir: &Path) {
        let path = dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
        let entries: Vec<EpochEntry> = match checkpoint::read_checkpoint_file(&path) {
            // A missing checkpoint reads as no epochs, as in Kafka.
            Ok(None) => Vec::new(),
            Ok(Some(text)) => match checkpoint::decode_epoch_checkpoint(&path, &text) {
                Ok(entries) => entries,
                Err(LogError::CorruptCheckpoint { line, reason, .. }) => {
                    self.error(
                        &path,
                        Location::Line(line),
                        format!(
                            "does not parse, so the broker cannot open the partition: {reason}"
                        ),
                        Action::RepairEpochCheckpoint,
                    );
                    return;
                }
                Err(other) => {
                    self.error(
                        &path,
                        Location::File,
                        other.to_string(),
                        Action::RepairEpochCheckpoint,
                    );
                    return;
                }
            },
            Err(e) => {
                self.error(
                    &path,
                    Location::File,
                    format!("cannot read the file: {e}"),
                    Action::NoneNeeded,
                );
                return;
            }
        };
        if let Some(log_end_offset) = self.report.log_end_offset {
            for (i, entry) in entries.iter().enumerate() {
                if entry.start_offset > log_end_offset {
                    // Lines 1 and 2 are the version and the count.
                    self.error(
                        &path,
                        Location::Line(i + 3),
                        format!(
                            "epoch {} starts at offset {}, past the log end offset {log_end_offset}",
                            entry.epoch, entry.start_offset
                        ),
                        Action::CheckForLostData { log_end_offset },
                    );
                }
            }
        }
        let latest = entries.last().map(|e| e.epoch);
        if let Some(seen) = self.highest_batch_epoch.take() {
            if latest.is_none_or(|latest| seen.epoch > latest) {
                let known = latest.map_or_else(
                    || "has no entries".to_string(),
                    |e| format!("ends at epoch {e}"),
                );
                self.warning(
                    &seen.path,
                    Location::Byte(seen.position),
                    format!(
                        "the batch at offset {} has partition leader epoch {}, but {LEADER_EPOCH_CHECKPOINT_FILE} {known}: OffsetsForLeaderEpoch answers from the checkpoint",
                        seen.base_offset, seen.epoch
                    ),
                    Action::RepairEpochCheckpoint,
                );
            }
        }
    }
}

/// The largest record timestamp of an uncompressed v2 batch, walking its
/// records. Errors say why the records do not decode.
fn records_max_timestamp(batch: &[u8], header: &BatchHeader) -> Result<i64, String> {
    let mut position = RECORD_BATCH_HEADER_SIZE;
    let mut max_timestamp = i64::MIN;
    let mut records: i64 = 0;
    while position < batch.len() {
        let rest = batch.get(position..).unwrap_or_default();
        let (length, length_bytes) = read_varint(rest).ok_or_else(|| {
            format!("record {records}: the length at byte {position} is not a varint")
        })?;
        let start = position + length_bytes;
        let end = usize::try_from(length)
            .ok()
            .and_then(|length| start.checked_add(length))
            .filter(|&end| end <= batch.len())
            .ok_or_else(|| {
                format!("record {records}: length {length} at byte {position} runs past the batch")
            })?;
        let body = batch.get(start..end).unwrap_or_default();
        // The body starts with the record's attributes byte.
        let (timestamp_delta, _) = body
            .get(1..)
            .and_then(read_varint)
            .ok_or_else(|| format!("record {records}: no timestamp delta at byte {start}"))?;
        max_timestamp = max_timestamp.max(header.base_timestamp.saturating_add(timestamp_delta));
        records += 1;
        position = end;
    }
    if records != i64::from(header.record_count) {
        return Err(format!(
            "the header counts {} records but the batch holds {records}",
            header.record_count
        ));
    }
    Ok(max_timestamp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::{build_batch, BatchSpec, RecordSpec};

    /// A partition directory written by hand: segments of `batches_per_segment`
    /// batches of 3 records, an index entry for every batch after the first
    /// and a time index entry for every batch, all as pinlog writes them.
    struct Fixture {
        _root: tempfile::TempDir,
        dir: PathBuf,
        /// (segment base, batch positions, batch lengths)
        segments: Vec<(i64, Vec<u64>, Vec<usize>)>,
    }

    fn batch(base_offset: i64, leader_epoch: i32, base_timestamp: i64) -> Vec<u8> {
        let records: Vec<RecordSpec> = (0..3)
            .map(|i| (i, Some(&b"key"[..]), &b"value-bytes"[..]))
            .collect();
        build_batch(&BatchSpec {
            base_offset,
            leader_epoch,
            base_timestamp,
            records: &records,
        })
    }

    fn fixture(segment_count: usize, batches_per_segment: usize) -> Fixture {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("topic-0");
        std::fs::create_dir(&dir).expect("mkdir");
        let mut segments = Vec::new();
        let mut offset = 0i64;
        for s in 0..segment_count {
            let base = offset;
            let (mut log, mut index, mut time_index) = (Vec::new(), Vec::new(), Vec::new());
            let (mut positions, mut lengths) = (Vec::new(), Vec::new());
            for b in 0..batches_per_segment {
                let bytes = batch(offset, s as i32, 1_000 + offset);
                let last = offset + 2;
                if b > 0 {
                    index.extend_from_slice(&((last - base) as u32).to_be_bytes());
                    index.extend_from_slice(&(log.len() as u32).to_be_bytes());
                }
                time_index.extend_from_slice(&(1_000 + offset + 2).to_be_bytes());
                time_index.extend_from_slice(&((last - base) as u32).to_be_bytes());
                positions.push(log.len() as u64);
                lengths.push(bytes.len());
                log.extend_from_slice(&bytes);
                offset += 3;
            }
            for (suffix, bytes) in [("log", &log), ("index", &index), ("timeindex", &time_index)] {
                std::fs::write(dir.join(format!("{base:020}.{suffix}")), bytes).expect("write");
            }
            segments.push((base, positions, lengths));
        }
        let mut epochs = format!("0\n{segment_count}\n");
        for (s, (base, _, _)) in segments.iter().enumerate() {
            epochs.push_str(&format!("{s} {base}\n"));
        }
        std::fs::write(dir.join(LEADER_EPOCH_CHECKPOINT_FILE), epochs).expect("write");
        Fixture {
            _root: root,
            dir,
            segments,
        }
    }

    impl Fixture {
        fn path(&self, segment: usize, suffix: &str) -> PathBuf {
            self.dir
                .join(format!("{:020}.{suffix}", self.segments[segment].0))
        }
        fn modify(&self, segment: usize, suffix: &str, f: impl FnOnce(&mut Vec<u8>)) {
            let path = self.path(segment, suffix);
            let mut bytes = std::fs::read(&path).expect("read");
            f(&mut bytes);
            std::fs::write(&path, bytes).expect("write");
        }
    }

    fn only_error(report: &VerifyReport) -> &Problem {
        let errors: Vec<&Problem> = report.errors().collect();
        assert_eq!(errors.len(), 1, "{report}");
        errors[0]
    }

    #[test]
    fn a_consistent_directory_is_ok() {
        let f = fixture(3, 5);
        let report = verify_partition_dir(&f.dir);
        assert!(report.is_ok(), "{report}");
        assert!(report.problems.is_empty(), "{report}");
        assert_eq!(report.segments, 3);
        assert_eq!(report.batches, 15);
        assert_eq!(report.log_end_offset, Some(45));
    }

    #[test]
    fn flipped_byte_in_an_older_segment_needs_re_replication() {
        let f = fixture(3, 5);
        let at = f.segments[1].1[2] as usize + 70;
        f.modify(1, "log", |b| b[at] ^= 0x10);
        let report = verify_partition_dir(&f.dir);
        let problem = only_error(&report);
        assert_eq!(problem.path, f.path(1, "log"));
        assert_eq!(problem.location, Location::Byte(f.segments[1].1[2]));
        assert!(problem.description.contains("CRC mismatch"), "{problem}");
        assert_eq!(
            problem.action,
            Action::Rereplicate {
                segment_base_offset: 15,
                position: f.segments[1].1[2],
                first_lost_offset: 21,
            }
        );
    }

    #[test]
    fn damage_at_or_after_the_recovery_point_is_left_to_recovery() {
        let f = fixture(3, 2);
        let at = f.segments[1].1[1] as usize + 70;
        f.modify(1, "log", |b| b[at] ^= 0x10);
        let checkpoint = f
            .dir
            .parent()
            .expect("data dir")
            .join(RECOVERY_POINT_CHECKPOINT_FILE);
        let action_with = |text: Option<&str>| {
            match text {
                Some(text) => std::fs::write(&checkpoint, text).expect("write"),
                None => {
                    let _ = std::fs::remove_file(&checkpoint);
                }
            }
            let report = verify_partition_dir(&f.dir);
            only_error(&report).action.clone()
        };
        let recover = Action::RecoverTail {
            position: f.segments[1].1[1],
            first_lost_offset: 9,
        };
        // Segment 1 holds offsets 6..=11; the recovery point 8 lies in it.
        assert_eq!(action_with(Some("0\n1\ntopic 0 8\n")), recover);
        assert_eq!(action_with(Some("0\n2\nother 0 99\ntopic 0 0\n")), recover);
        let rereplicate = Action::Rereplicate {
            segment_base_offset: 6,
            position: f.segments[1].1[1],
            first_lost_offset: 9,
        };
        assert_eq!(action_with(Some("0\n1\ntopic 0 18\n")), rereplicate);
        // No entry for this partition, or no checkpoint: assume the worst.
        assert_eq!(action_with(Some("0\n1\nother 0 0\n")), rereplicate);
        assert_eq!(action_with(None), rereplicate);

        std::fs::write(&checkpoint, "0\n2\ntopic 0 1\n").expect("write");
        let report = verify_partition_dir(&f.dir);
        let errors: Vec<&Problem> = report.errors().collect();
        assert_eq!(errors.len(), 2, "{report}");
        assert!(errors.iter().any(|p| p.path == checkpoint
            && p.location == Location::Line(4)
            && p.action == Action::RepairOffsetCheckpoint));
    }

    #[test]
    fn torn_tail_of_the_newest_segment_is_left_to_recovery() {
        let f = fixture(2, 4);
        let last = f.segments[1].1[3];
        f.modify(1, "log", |b| b.truncate(last as usize + 30));
        let report = verify_partition_dir(&f.dir);
        let problem = only_error(&report);
        assert_eq!(problem.path, f.path(1, "log"));
        assert_eq!(problem.location, Location::Byte(last));
        assert_eq!(
            problem.action,
            Action::RecoverTail {
                position: last,
                first_lost_offset: 21
            }
        );
        assert_eq!(report.log_end_offset, Some(21));
        // The time index entry for the lost batch goes with the tail.
        assert!(problem
            .to_string()
            .contains("suggested action: stop the broker"));
    }

    #[test]
    fn zero_padding_is_a_warning_only_in_the_newest_segment() {
        let f = fixture(2, 2);
        f.modify(1, "log", |b| b.resize(4096, 0));
        let report = verify_partition_dir(&f.dir);
        assert!(report.is_ok(), "{report}");
        let warning = report.warnings().next().expect("warning");
        assert!(matches!(warning.action, Action::TrimZeroTail { .. }));

        f.modify(0, "log", |b| b.resize(4096, 0));
        let report = verify_partition_dir(&f.dir);
        let problem = only_error(&report);
        assert_eq!(problem.path, f.path(0, "log"));
        let end = (f.segments[0].1[1] as usize + f.segments[0].2[1]) as u64;
        assert_eq!(problem.action, Action::TrimZeroTail { position: end });
    }

    #[test]
    fn garbled_index_entries_are_found_by_number() {
        let f = fixture(2, 6);
        // Entry 2 of segment 0's offset index: point it one byte off.
        f.modify(0, "index", |b| b[2 * 8 + 7] ^= 0x01);
        let report = verify_partition_dir(&f.dir);
        let problem = only_error(&report);
        assert_eq!(problem.path, f.path(0, "index"));
        assert_eq!(problem.location, Location::Entry { entry: 2, byte: 16 });
        assert_eq!(problem.action, Action::DeleteIndexes);

        // A wrong timestamp in the time index.
        let f = fixture(2, 6);
        f.modify(1, "timeindex", |b| b[3 * 12 + 7] ^= 0x01);
        let report = verify_partition_dir(&f.dir);
        let problem = only_error(&report);
        assert_eq!(problem.path, f.path(1, "timeindex"));
        assert_eq!(problem.location, Location::Entry { entry: 3, byte: 36 });
        assert!(problem.description.contains("max timestamp"), "{problem}");

        // Offsets going backwards are what the open-time check catches.
        let f = fixture(1, 6);
        f.modify(0, "index", |b| b[3 * 8 + 3] = 1);
        let report = verify_partition_dir(&f.dir);
        let problem = only_error(&report);
        assert_eq!(problem.location, Location::Entry { entry: 3, byte: 24 });
        assert_eq!(problem.action, Action::RepairedOnOpen);
    }

    #[test]
    fn untrimmed_indexes_and_missing_final_time_entry_are_warnings() {
        // After a crash: zero-filled preallocation and no final entry. The
        // broker rebuilds both indexes, so only the zeros are reported.
        let f = fixture(1, 4);
        f.modify(0, "index", |b| b.resize(b.len() + 80, 0));
        f.modify(0, "timeindex", |b| {
            b.truncate(b.len() - 12);
            b.resize(b.len() + 120, 0);
        });
        let report = verify_partition_dir(&f.dir);
        assert!(report.is_ok(), "{report}");
        let warnings: Vec<&Problem> = report.warnings().collect();
        assert_eq!(warnings.len(), 2, "{report}");
        assert!(warnings
            .iter()
            .all(|w| w.action == Action::RepairedOnOpen && w.description.contains("not trimmed")));

        // A trimmed index without its final entry passes every open-time
        // check, but Kafka would read a wrong max timestamp from it.
        let f = fixture(1, 4);
        f.modify(0, "timeindex", |b| b.truncate(b.len() - 12));
        let report = verify_partition_dir(&f.dir);
        assert!(report.is_ok(), "{report}");
        let warnings: Vec<&Problem> = report.warnings().collect();
        assert_eq!(warnings.len(), 1, "{report}");
        assert!(warnings[0].description.contains("largest timestamp 1011"));
        assert_eq!(warnings[0].action, Action::DeleteIndexes);
    }

    #[test]
    fn overlapping_segments_are_reported() {
        let f = fixture(2, 2);
        let second = f.path(1, "log");
        let overlapping = f.dir.join(format!("{:020}.log", 4));
        std::fs::rename(second, &overlapping).expect("rename");
        for suffix in ["index", "timeindex"] {
            std::fs::remove_file(f.path(1, suffix)).expect("remove");
        }
        let report = verify_partition_dir(&f.dir);
        let errors: Vec<&Problem> = report.errors().collect();
        assert!(
            errors
                .iter()
                .any(|p| p.path == overlapping && p.action == Action::ReplicateWholePartition),
            "{report}"
        );
    }

    #[test]
    fn epoch_checkpoint_problems() {
        let f = fixture(2, 2);
        let path = f.dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
        std::fs::write(&path, "0\n2\n0 0\n1 x\n").expect("write");
        let report = verify_partition_dir(&f.dir);
        let problem = only_error(&report);
        assert_eq!(
            (problem.path.clone(), problem.location),
            (path.clone(), Location::Line(4))
        );
        assert_eq!(problem.action, Action::RepairEpochCheckpoint);

        std::fs::write(&path, "0\n2\n0 0\n1 13\n").expect("write");
        let report = verify_partition_dir(&f.dir);
        let problem = only_error(&report);
        assert_eq!(problem.location, Location::Line(4));
        assert_eq!(
            problem.action,
            Action::CheckForLostData { log_end_offset: 12 }
        );

        // Batches of epoch 1 with a checkpoint that stops at epoch 0.
        std::fs::write(&path, "0\n1\n0 0\n").expect("write");
        let report = verify_partition_dir(&f.dir);
        assert!(report.is_ok(), "{report}");
        let warning = report.warnings().next().expect("warning");
        assert_eq!(warning.path, f.path(1, "log"));
        assert_eq!(warning.location, Location::Byte(0));
    }

    #[test]
    fn header_max_timestamp_must_match_the_records() {
        let f = fixture(1, 2);
        f.modify(0, "log", |b| {
            // Raise the second batch's header max timestamp and fix its CRC:
            // the batch is valid, but the records disagree.
            let at = f.segments[0].1[1] as usize;
            let mut one = b[at..].to_vec();
            let ts = i64::from_be_bytes(one[35..43].try_into().expect("8 bytes")) + 5;
            one[35..43].copy_from_slice(&ts.to_be_bytes());
            let crc = crate::log::batch::compute_crc(&one);
            one[17..21].copy_from_slice(&crc.to_be_bytes());
            b.truncate(at);
            b.extend_from_slice(&one);
        });
        let report = verify_partition_dir(&f.dir);
        assert!(
            report
                .warnings()
                .any(|w| w.description.contains("not the records' largest timestamp")),
            "{report}"
        );
    }

    #[test]
    fn problems_per_file_are_capped() {
        let f = fixture(1, 100);
        f.modify(0, "timeindex", |b| {
            for entry in b.chunks_mut(12) {
                entry[7] ^= 0x01;
            }
        });
        let report = verify_partition_dir(&f.dir);
        assert_eq!(report.problems.len(), PROBLEMS_PER_FILE_MAX, "{report}");
        assert_eq!(report.problems_not_listed, 100 - 64);
        assert_eq!(report.errors_not_listed, 100 - 64);
        assert!(!report.is_ok());
    }

    #[test]
    fn random_damage_never_panics() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let f = fixture(2, 3);
        for _ in 0..200 {
            let segment = (next() % 2) as usize;
            let suffix = ["log", "index", "timeindex"][(next() % 3) as usize];
            let original = std::fs::read(f.path(segment, suffix)).expect("read");
            let mut damaged = original.clone();
            if !damaged.is_empty() {
                for _ in 0..1 + next() % 3 {
                    let at = (next() as usize) % damaged.len();
                    damaged[at] = next() as u8;
                }
                if next() % 4 == 0 {
                    damaged.truncate((next() as usize) % damaged.len());
                }
            }
            std::fs::write(f.path(segment, suffix), &damaged).expect("write");
            let _ = verify_partition_dir(&f.dir).to_string();
            std::fs::write(f.path(segment, suffix), &original).expect("restore");
        }
        assert!(verify_partition_dir(&f.dir).is_ok());
    }
}
