//! What `verify_partition_dir` reports: each problem with its file,
//! place, severity and suggested action, and the report's text form.

use super::*;

/// Whether a problem makes the partition unfit to serve as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Data is unreadable, inconsistent or would be lost; fails
    /// [`VerifyReport::is_ok`].
    Error,
    /// Expected after an unclean shutdown, harmless for pinlog, or only a
    /// difference from what Kafka would have written.
    Warning,
}

/// Where in a file a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// The file as a whole (missing, unreadable, misnamed).
    File,
    /// A byte position in a `.log` file.
    Byte(u64),
    /// An index entry: its number from 0 and the byte where it starts.
    Entry { entry: u64, byte: u64 },
    /// A 1-based line of a checkpoint file.
    Line(usize),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File => Ok(()),
            Location::Byte(position) => write!(f, " at byte {position}"),
            Location::Entry { entry, byte } => write!(f, " entry {entry} (byte {byte})"),
            Location::Line(line) => write!(f, " line {line}"),
        }
    }
}

/// What an operator should do about a problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// pinlog's sanity check finds this when it opens the partition and
    /// rebuilds the segment's indexes by rescanning it.
    RepairedOnOpen,
    /// Damage in a segment that recovery rescans after an unclean shutdown
    /// (the newest one, or any from the one holding the recovery point on):
    /// it truncates at the first bad byte.
    RecoverTail {
        position: u64,
        first_lost_offset: i64,
    },
    /// Damage in an older segment, which recovery does not rescan.
    Rereplicate {
        segment_base_offset: i64,
        position: u64,
        first_lost_offset: i64,
    },
    /// Segments overlap: no recovery step repairs that.
    ReplicateWholePartition,
    /// Zeros at the end of a `.log`: cut them off; no records are lost.
    TrimZeroTail { position: u64 },
    /// Index contents that the sanity check misses.
    DeleteIndexes,
    /// An index file is missing.
    MissingIndex,
    /// A batch whose CRC is right but whose records do not decode.
    SkipPoisonBatch { next_offset: i64 },
    /// The leader-epoch checkpoint is unreadable or behind the batches.
    RepairEpochCheckpoint,
    /// The data directory's recovery-point checkpoint does not parse.
    RepairOffsetCheckpoint,
    /// The epoch checkpoint knows offsets that the segments do not hold.
    CheckForLostData { log_end_offset: i64 },
    /// A file the broker ignores.
    RemoveStrayFile,
    /// Nothing to do for pinlog; the description says why it is reported.
    NoneNeeded,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::RepairedOnOpen => write!(
                f,
                "none needed: the broker's sanity check finds this when it opens the partition \
                 and rebuilds the segment's indexes by rescanning the segment"
            ),
            Action::RecoverTail {
                position,
                first_lost_offset,
            } => write!(
                f,
                "stop the broker, delete the clean-shutdown marker ({CLEAN_SHUTDOWN_FILE}) in the \
                 data directory and restart it: recovery rescans this segment (it is the newest, \
                 or lies at or after the recovery point), truncates it at byte {position} and \
                 deletes any later segment, dropping offsets from {first_lost_offset} on, which a \
                 follower re-fetches from the leader"
            ),
            Action::Rereplicate {
                segment_base_offset,
                position,
                first_lost_offset,
            } => write!(
                f,
                "a restart does not repair this: the segment lies below the recovery point, \
                 which recovery does not rescan. Stop the broker and delete the partition \
                 directory so that it re-replicates from the leader. With no other replica, \
                 set this partition's entry in {RECOVERY_POINT_CHECKPOINT_FILE} to \
                 {segment_base_offset} and delete {CLEAN_SHUTDOWN_FILE} instead: recovery then \
                 truncates this segment at byte {position} and deletes every later segment, \
                 losing offsets from {first_lost_offset} on"
            ),
            Action::ReplicateWholePartition => write!(
                f,
                "stop the broker and delete the partition directory so that it re-replicates \
                 from the leader: recovery rescans segments one by one and cannot repair \
                 segments that overlap"
            ),
            Action::TrimZeroTail { position } => write!(
                f,
                "stop the broker and cut the file back to {position} bytes \
                 (truncate -s {position} <file>): the zeros hold no records, so nothing is lost. \
                 Left alone, reads that reach them fail, and recovery of this segment would \
                 delete every later segment"
            ),
            Action::DeleteIndexes => write!(
                f,
                "stop the broker and delete this segment's .index, .timeindex and .txnindex: the \
                 open-time sanity check does not catch this. With an index missing, pinlog (as \
                 Kafka) recovers the segment on open and rebuilds all three from the log"
            ),
            Action::MissingIndex => write!(
                f,
                "none needed for correctness: pinlog recreates a missing index empty, so reads \
                 of this segment scan it from its start; Kafka rebuilds it from the log"
            ),
            Action::SkipPoisonBatch { next_offset } => write!(
                f,
                "consumers cannot decode this batch and stop at it. Once no consumer needs \
                 these records, delete everything below offset {next_offset} with DeleteRecords \
                 (kafka-delete-records.sh). pinlog stored it because it checks batch headers, \
                 not records, on produce"
            ),
            Action::RepairEpochCheckpoint => write!(
                f,
                "stop the broker and rewrite {LEADER_EPOCH_CHECKPOINT_FILE} from the batches' \
                 partitionLeaderEpoch (the first batch of each epoch gives its start offset; \
                 dump the .log files to see them), or delete it: the broker then starts with an \
                 empty epoch cache, and followers truncate to the high watermark instead of \
                 asking OffsetsForLeaderEpoch"
            ),
            Action::RepairOffsetCheckpoint => write!(
                f,
                "stop the broker and fix this file, or delete it: every partition in the data \
                 directory then counts as having recovery point 0 (after an unclean shutdown \
                 each is rescanned from its first segment) and log start offset 0 (each starts \
                 at its first segment)"
            ),
            Action::CheckForLostData { log_end_offset } => write!(
                f,
                "the segments end at offset {log_end_offset}, before offsets that the checkpoint \
                 says were written: look for missing or truncated segment files. The broker \
                 drops these entries when it opens the partition"
            ),
            Action::RemoveStrayFile => write!(
                f,
                "the broker ignores this file: remove it, or restore the segment it belongs to"
            ),
            Action::NoneNeeded => write!(f, "none needed for pinlog"),
        }
    }
}

/// One thing wrong in a partition directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub severity: Severity,
    pub path: PathBuf,
    pub location: Location,
    pub description: String,
    pub action: Action,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(
            f,
            "{severity}: {}{}: {}\n  suggested action: {}",
            self.path.display(),
            self.location,
            self.description,
            self.action
        )
    }
}

/// The result of [`verify_partition_dir`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    pub dir: PathBuf,
    /// `.log` files found.
    pub segments: usize,
    /// Batches whose header could be read, valid or not.
    pub batches: u64,
    /// One past the last readable batch of the newest segment (its base
    /// offset when it is empty); `None` with no segments.
    pub log_end_offset: Option<i64>,
    pub problems: Vec<Problem>,
    /// Problems found past [`PROBLEMS_PER_FILE_MAX`] in some file.
    pub problems_not_listed: u64,
    /// How many of those were errors.
    pub errors_not_listed: u64,
}

impl VerifyReport {
    /// True when no problem is an [`Severity::Error`].
    pub fn is_ok(&self) -> bool {
        self.errors().next().is_none() && self.errors_not_listed == 0
    }

    pub fn errors(&self) -> impl Iterator<Item = &Problem> {
        self.problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Problem> {
        self.problems
            .iter()
            .filter(|p| p.severity == Severity::Warning)
    }
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let log_end = self
            .log_end_offset
            .map_or_else(|| "none".to_string(), |o| o.to_string());
        writeln!(
            f,
            "{}: {} segments, {} batches, log end offset {log_end}: {} errors, {} warnings{}",
            self.dir.display(),
            self.segments,
            self.batches,
            self.errors().count(),
            self.warnings().count(),
            if self.is_ok() { " (OK)" } else { "" }
        )?;
        for problem in &self.problems {
            writeln!(f, "{problem}")?;
        }
        if self.problems_not_listed > 0 {
            writeln!(
                f,
                "... and {} more problems not listed, {} of them errors (at most {PROBLEMS_PER_FILE_MAX} per file)",
                self.problems_not_listed, self.errors_not_listed
            )?;
        }
        Ok(())
    }
}
