//! Kafka's text checkpoint files, and replacing them atomically.
//!
//! Kafka keeps small pieces of state in text files, one per partition
//! (`leader-epoch-checkpoint`) or one per data directory
//! (`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`). pinlog
//! reads and writes them byte for byte as Kafka does, so a data directory can
//! move between the two:
//!
//! ```text
//! 0            <- format version; only 0 exists
//! 2            <- number of entries that follow
//! 0 0          <- leader epoch checkpoint: "epoch start_offset"
//! 1 128
//! ```
//!
//! Offset checkpoints hold `topic partition offset` per line instead. Lines
//! end in `'\n'`, as Kafka writes them on Linux.
//!
//! **Reading** is strict where corruption would be silent and lenient where
//! Kafka is: the entry count must match the entry lines, every number must
//! parse, leader epoch entries must be non-negative and strictly increasing
//! (the cache's invariant), and offsets must be non-negative. As in Kafka's
//! `CheckpointReadBuffer`, an empty file or one that stops after the version
//! line reads as no entries: Kafka creates the file empty before its first
//! write. Fields may be separated by any run of ASCII whitespace, and a `"\r"`
//! before the `'\n'` is ignored, as Java's `readLine` and `split("\\s+")` allow.
//! Errors name the file and the 1-based line.
//!
//! **Writing** never leaves a torn file: the contents go to `<name>.tmp`,
//! which is fsync'd and renamed over the target, and then the directory is
//! fsync'd so the rename itself survives a crash. A crash at any point leaves
//! either the old file or the new one. A `.tmp` left by a crash is ignored by
//! readers and overwritten by the next write.
//!
//! The files are a few hundred bytes and written rarely (leader changes,
//! truncations, periodic flushes), so they use plain blocking `std::fs` on
//! glommio's blocking thread pool rather than DMA files: the async wrappers
//! here never block a shard's reactor.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{LogError, LogResult};
use crate::log::epoch_cache::EpochEntry;

/// The only checkpoint format version Kafka has defined
/// (`LeaderEpochCheckpointFile.CURRENT_VERSION`,
/// `OffsetCheckpointFile.CURRENT_VERSION`).
pub const CHECKPOINT_VERSION: i32 = 0;

/// Appended to a checkpoint's file name for the file being written, as Kafka
/// does (`CheckpointFile.tempPath`).
pub const CHECKPOINT_TMP_SUFFIX: &str = ".tmp";

/// One line of a recovery-point or log-start-offset checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCheckpointEntry {
    /// Kafka topic names are limited to `[a-zA-Z0-9._-]`, so never contain
    /// the whitespace that separates fields.
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
}

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

/// Renders a `leader-epoch-checkpoint` file.
pub fn encode_epoch_checkpoint(entries: &[EpochEntry]) -> Vec<u8> {
    let mut text = header(entries.len());
    for entry in entries {
        text.push_str(&format!("{} {}\n", entry.epoch, entry.start_offset));
    }
    text.into_bytes()
}

/// Renders a recovery-point or log-start-offset checkpoint file.
///
/// # Panics
///
/// If a topic name is empty or contains whitespace: such a file could not be
/// read back, so the broker would fail at its next start. Topic names are
/// validated long before they reach storage, so this is a bug, not input.
pub fn encode_offset_checkpoint(entries: &[OffsetCheckpointEntry]) -> Vec<u8> {
    let mut text = header(entries.len());
    for entry in entries {
        assert!(
            !entry.topic.is_empty() && !entry.topic.chars().any(char::is_whitespace),
            "topic name {:?} cannot be written to an offset checkpoint",
            entry.topic
        );
        text.push_str(&format!(
            "{} {} {}\n",
            entry.topic, entry.partition, entry.offset
        ));
    }
    text.into_bytes()
}

fn header(entries_count: usize) -> String {
    format!("{CHECKPOINT_VERSION}\n{entries_count}\n")
}

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

/// Parses a `leader-epoch-checkpoint` file. `path_for_errors` only labels
/// errors. The entries returned always satisfy
/// [`crate::log::epoch_cache::LeaderEpochCache::from_entries`].
pub fn decode_epoch_checkpoint(path_for_errors: &Path, text: &[u8]) -> LogResult<Vec<EpochEntry>> {
    let mut previous: Option<EpochEntry> = None;
    decode_entries(path_for_errors, text, |fields| {
        let [epoch, start_offset] = fields else {
            return Err(format!(
                "expected 2 fields \"epoch start_offset\", found {}",
                fields.len()
            ));
        };
        let entry = EpochEntry {
            epoch: parse_number(epoch, "epoch")?,
            start_offset: parse_number(start_offset, "start offset")?,
        };
        if entry.epoch < 0 || entry.start_offset < 0 {
            return Err(format!("negative epoch or start offset in {entry}"));
        }
        if let Some(previous) = previous {
            if entry.epoch <= previous.epoch || entry.start_offset <= previous.start_offset {
                return Err(format!(
                    "{entry} does not strictly follow {previous}: epochs and start offsets must both increase"
                ));
            }
        }
        previous = Some(entry);
        Ok(entry)
    })
}

/// Parses a recovery-point or log-start-offset checkpoint file.
/// `path_for_errors` only labels errors.
pub fn decode_offset_checkpoint(
    path_for_errors: &Path,
    text: &[u8],
) -> LogResult<Vec<OffsetCheckpointEntry>> {
    decode_entries(path_for_errors, text, |fields| {
        let [topic, partition, offset] = fields else {
            return Err(format!(
                "expected 3 fields \"topic partition offset\", found {}",
                fields.len()
            ));
        };
        let entry = OffsetCheckpointEntry {
            topic: (*topic).to_owned(),
            partition: parse_number(partition, "partition")?,
            offset: parse_number(offset, "offset")?,
        };
        if entry.partition < 0 || entry.offset < 0 {
            return Err(format!(
                "negative partition {} or offset {}",
                entry.partition, entry.offset
            ));
        }
        Ok(entry)
    })
}

/// The shared frame of every checkpoint: version line, count line, then one
/// entry per line, each handed to `parse_entry` split into fields.
fn decode_entries<T>(
    path: &Path,
    text: &[u8],
    mut parse_entry: impl FnMut(&[&str]) -> Result<T, String>,
) -> LogResult<Vec<T>> {
    let corrupt = |line: usize, reason: String| LogError::CorruptCheckpoint {
        path: path.to_path_buf(),
        line,
        reason,
    };

    if text.is_empty() {
        // Kafka creates the file empty before its first write.
        return Ok(Vec::new());
    }
    // A final '\n' terminates the last line rather than starting an empty one.
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    let mut lines = body.split(|&byte| byte == b'\n').enumerate().map(
        |(index, raw_line)| -> LogResult<(usize, &str)> {
            let line_number = index + 1;
            let raw_line = raw_line.strip_suffix(b"\r").unwrap_or(raw_line);
            std::str::from_utf8(raw_line)
                .map(|line| (line_number, line))
                .map_err(|e| corrupt(line_number, format!("not valid UTF-8: {e}")))
        },
    );

    // `split` yields at least one item, even for an empty body.
    let Some(version_line) = lines.next() else {
        return Ok(Vec::new());
    };
    let (line_number, version_text) = version_line?;
    let version: i32 = parse_number(version_text.trim(), "version")
        .map_err(|reason| corrupt(line_number, reason))?;
    if version != CHECKPOINT_VERSION {
        return Err(corrupt(
            line_number,
            format!("unsupported version {version}; only version {CHECKPOINT_VERSION} is known"),
        ));
    }

    let Some(count_line) = lines.next() else {
        // Kafka reads a file that ends after its version as empty.
        return Ok(Vec::new());
    };
    let (count_line_number, count_text) = count_line?;
    let entries_count: i32 = parse_number(count_text.trim(), "entry count")
        .map_err(|reason| corrupt(count_line_number, reason))?;
    let entries_count = usize::try_from(entries_count).map_err(|_| {
        corrupt(
            count_line_number,
            format!("negative entry count {entries_count}"),
        )
    })?;

    // Bound the allocation by what the file can hold, not by what its count
    // line claims: a corrupt count must not exhaust memory.
    let mut entries = Vec::with_capacity(entries_count.min(text.len() / 2));
    for line in lines {
        let (line_number, entry_text) = line?;
        if entries.len() == entries_count {
            return Err(corrupt(
                line_number,
                format!(
                    "more entry lines than the count of {entries_count} on line {count_line_number}"
                ),
            ));
        }
        let fields: Vec<&str> = entry_text.split_ascii_whitespace().collect();
        let entry = parse_entry(&fields).map_err(|reason| corrupt(line_number, reason))?;
        entries.push(entry);
    }
    if entries.len() != entries_count {
        // Point at the line where the first missing entry should have been.
        return Err(corrupt(
            count_line_number + entries.len() + 1,
            format!(
                "expected {entries_count} entries as line {count_line_number} says, found {}",
                entries.len()
            ),
        ));
    }
    Ok(entries)
}

fn parse_number<N>(field: &str, what: &str) -> Result<N, String>
where
    N: std::str::FromStr,
    N::Err: fmt::Display,
{
    field
        .parse()
        .map_err(|e| format!("{what} {field:?} is not a valid number: {e}"))
}

// ---------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------

/// Replaces `path` with `contents` so that a crash leaves either the old or
/// the new file, never a mix: writes `<path>.tmp`, fsyncs it, renames it over
/// `path`, then fsyncs the parent directory so the rename is durable.
///
/// Blocks the calling thread on disk I/O; on a shard use [`write_atomically`].
/// Every step's error is returned, and says which step failed.
pub fn write_atomically_blocking(path: &Path, contents: &[u8]) -> io::Result<()> {
    let tmp_path = tmp_path_for(path);
    let mut tmp_file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp_path)
        .map_err(step_failed("create", &tmp_path))?;
    tmp_file
        .write_all(contents)
        .map_err(step_failed("write", &tmp_path))?;
    // Durability comes from this fsync, so the close below has nothing left
    // to report that matters.
    tmp_file
        .sync_all()
        .map_err(step_failed("fsync", &tmp_path))?;
    drop(tmp_file);

    fs::rename(&tmp_path, path).map_err(step_failed("rename over target", &tmp_path))?;

    let dir = parent_dir(path);
    File::open(dir)
        .and_then(|dir_file| dir_file.sync_all())
        .map_err(step_failed("fsync directory", dir))?;
    Ok(())
}

/// [`write_atomically_blocking`] on glommio's blocking thread pool, so the
/// shard's reactor keeps serving while the disk syncs.
///
/// Must be awaited inside a glommio executor.
pub async fn write_atomically(path: PathBuf, contents: Vec<u8>) -> LogResult<()> {
    let (path, result) = crate::blocking_pool::run(move || {
        let result = write_atomically_blocking(&path, &contents);
        (path, result)
    })
    .await;
    result.map_err(|e| LogError::io("write checkpoint", path, -1, e))
}

/// Reads a whole checkpoint file; `Ok(None)` when it does not exist.
///
/// This blocks the calling thread, which is acceptable only at startup and
/// during recovery, before the shard serves requests. Once serving, use
/// [`read_epoch_checkpoint`] or [`read_offset_checkpoint`], which run it on
/// the blocking pool.
pub fn read_checkpoint_file(path: &Path) -> LogResult<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(contents) => Ok(Some(contents)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(LogError::io("read checkpoint", path, -1, e)),
    }
}

/// Reads and parses a `leader-epoch-checkpoint` without blocking the shard.
/// A missing file reads as no entries, as in Kafka (which creates it empty).
pub async fn read_epoch_checkpoint(path: &Path) -> LogResult<Vec<EpochEntry>> {
    match read_checkpoint_file_async(path).await? {
        Some(text) => decode_epoch_checkpoint(path, &text),
        None => Ok(Vec::new()),
    }
}

/// Persists the leader epoch cache's entries atomically.
pub async fn write_epoch_checkpoint(path: &Path, entries: &[EpochEntry]) -> LogResult<()> {
    write_atomically(path.to_path_buf(), encode_epoch_checkpoint(entries)).await
}

/// Reads and parses a recovery-point or log-start-offset checkpoint without
/// blocking the shard. A missing file reads as no entries, as in Kafka.
pub async fn read_offset_checkpoint(path: &Path) -> LogResult<Vec<OffsetCheckpointEntry>> {
    match read_checkpoint_file_async(path).await? {
        Some(text) => decode_offset_checkpoint(path, &text),
        None => Ok(Vec::new()),
    }
}

/// Persists a recovery-point or log-start-offset checkpoint atomically.
pub async fn write_offset_checkpoint(
    path: &Path,
    entries: &[OffsetCheckpointEntry],
) -> LogResult<()> {
    write_atomically(path.to_path_buf(), encode_offset_checkpoint(entries)).await
}

async fn read_checkpoint_file_async(path: &Path) -> LogResult<Option<Vec<u8>>> {
    let path = path.to_path_buf();
    crate::blocking_pool::run(move || read_checkpoint_file(&path)).await
}

/// `<path>.tmp`, Kafka's name for a checkpoint being written.
pub fn tmp_path_for(path: &Path) -> PathBuf {
    let mut tmp_path = OsString::from(path.as_os_str());
    tmp_path.push(CHECKPOINT_TMP_SUFFIX);
    PathBuf::from(tmp_path)
}

/// The directory whose entry the rename changes; a bare file name lives in
/// the current directory.
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Which step of an atomic write failed, kept as the cause's context.
#[derive(Debug)]
struct StepError {
    step: &'static str,
    path: PathBuf,
    source: io::Error,
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.step, self.path.display(), self.source)
    }
}

impl std::error::Error for StepError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Wraps an I/O error with the step and file, keeping its kind so callers
/// can still match on it.
fn step_failed<'a>(step: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> io::Error + 'a {
    move |source| {
        io::Error::new(
            source.kind(),
            StepError {
                step,
                path: path.to_path_buf(),
                source,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::epoch_cache::LeaderEpochCache;
    use proptest::prelude::*;

    fn entry(epoch: i32, start_offset: i64) -> EpochEntry {
        EpochEntry {
            epoch,
            start_offset,
        }
    }

    fn offset_entry(topic: &str, partition: i32, offset: i64) -> OffsetCheckpointEntry {
        OffsetCheckpointEntry {
            topic: topic.to_owned(),
            partition,
            offset,
        }
    }

    fn path() -> &'static Path {
        Path::new("/data/t-0/leader-epoch-checkpoint")
    }

    /// The line of a `CorruptCheckpoint` error, or a failure naming what came
    /// back instead.
    fn corrupt_line<T: fmt::Debug>(result: LogResult<T>) -> usize {
        match result {
            Err(LogError::CorruptCheckpoint {
                path: error_path,
                line,
                ..
            }) => {
                assert_eq!(error_path, path());
                line
            }
            other => panic!("expected CorruptCheckpoint, got {other:?}"),
        }
    }

    // ---- formats ----

    #[test]
    fn kafka_sample_epoch_checkpoint_parses() {
        let entries = decode_epoch_checkpoint(path(), b"0\n2\n0 0\n1 128\n").unwrap();
        assert_eq!(entries, [entry(0, 0), entry(1, 128)]);
        assert!(LeaderEpochCache::from_entries(entries).is_ok());
    }

    #[test]
    fn kafka_sample_offset_checkpoint_parses() {
        let text = b"0\n3\norders 0 1500\norders 1 7\n__consumer_offsets 49 0\n";
        let entries = decode_offset_checkpoint(path(), text).unwrap();
        assert_eq!(
            entries,
            [
                offset_entry("orders", 0, 1500),
                offset_entry("orders", 1, 7),
                offset_entry("__consumer_offsets", 49, 0),
            ]
        );
    }

    #[test]
    fn encoding_matches_kafka_byte_for_byte() {
        assert_eq!(
            encode_epoch_checkpoint(&[entry(0, 0), entry(1, 128)]),
            b"0\n2\n0 0\n1 128\n"
        );
        assert_eq!(encode_epoch_checkpoint(&[]), b"0\n0\n");
        assert_eq!(
            encode_offset_checkpoint(&[offset_entry("t.a-b_c", 3, 42)]),
            b"0\n1\nt.a-b_c 3 42\n"
        );
    }

    #[test]
    fn epoch_checkpoint_round_trips() {
        for entries in [
            vec![],
            vec![entry(0, 0)],
            vec![entry(0, 0), entry(3, 17), entry(i32::MAX, i64::MAX)],
        ] {
            let text = encode_epoch_checkpoint(&entries);
            assert_eq!(decode_epoch_checkpoint(path(), &text).unwrap(), entries);
        }
    }

    #[test]
    fn offset_checkpoint_round_trips() {
        for entries in [
            vec![],
            vec![offset_entry("a", 0, 0)],
            vec![
                offset_entry("a", 0, 5),
                offset_entry("b", i32::MAX, i64::MAX),
            ],
        ] {
            let text = encode_offset_checkpoint(&entries);
            assert_eq!(decode_offset_checkpoint(path(), &text).unwrap(), entries);
        }
    }

    #[test]
    #[should_panic(expected = "cannot be written")]
    fn encoding_a_topic_with_whitespace_panics() {
        encode_offset_checkpoint(&[offset_entry("bad topic", 0, 0)]);
    }

    #[test]
    fn empty_or_version_only_file_reads_as_no_entries_like_kafka() {
        assert!(decode_epoch_checkpoint(path(), b"").unwrap().is_empty());
        assert!(decode_epoch_checkpoint(path(), b"0\n").unwrap().is_empty());
        assert!(decode_offset_checkpoint(path(), b"0").unwrap().is_empty());
    }

    #[test]
    fn tolerates_what_java_readline_and_split_tolerate() {
        // No final newline, CRLF endings, and runs of spaces or tabs.
        let entries = decode_epoch_checkpoint(path(), b"0\r\n2\r\n0  0\r\n1\t128").unwrap();
        assert_eq!(entries, [entry(0, 0), entry(1, 128)]);
    }

    // ---- corruption ----

    #[test]
    fn corrupt_inputs_name_the_right_line() {
        let cases: &[(&[u8], usize)] = &[
            (b"1\n0\n", 1),               // unknown version
            (b"x\n0\n", 1),               // version not a number
            (b"\n0\n", 1),                // blank version line
            (b"0\nmany\n", 2),            // count not a number
            (b"0\n-1\n", 2),              // negative count
            (b"0\n99999999999\n", 2),     // count overflows i32
            (b"0\n2\n0 0\n", 4),          // too few entries: line 4 missing
            (b"0\n0\n0 0\n", 3),          // more entries than the count
            (b"0\n1\n0 0\n1 5\n", 4),     // one entry too many
            (b"0\n2\n0 0\n\n", 4),        // blank entry line
            (b"0\n1\n0\n", 3),            // one field
            (b"0\n1\n0 0 0\n", 3),        // three fields
            (b"0\n1\n0 x\n", 3),          // offset not a number
            (b"0\n1\n3000000000 0\n", 3), // epoch overflows i32
            (b"0\n1\n-1 0\n", 3),         // negative epoch
            (b"0\n1\n0 -4\n", 3),         // negative start offset
            (b"0\n2\n0 0\n0 5\n", 4),     // repeated epoch
            (b"0\n2\n1 5\n2 5\n", 4),     // repeated start offset
            (b"0\n2\n2 5\n1 9\n", 4),     // decreasing epoch
            (b"0\n2\n0 0\n1 \xff\n", 4),  // invalid UTF-8
        ];
        for &(text, expected_line) in cases {
            let line = corrupt_line(decode_epoch_checkpoint(path(), text));
            assert_eq!(
                line,
                expected_line,
                "for {:?}",
                String::from_utf8_lossy(text)
            );
        }
    }

    #[test]
    fn corrupt_offset_checkpoints_name_the_right_line() {
        let cases: &[(&[u8], usize)] = &[
            (b"0\n1\ntopic 0\n", 3),
            (b"0\n1\ntopic x 5\n", 3),
            (b"0\n1\ntopic 0 5 9\n", 3),
            (b"0\n1\ntopic -1 5\n", 3),
            (b"0\n2\na 0 1\nb 0 -2\n", 4),
            (b"0\n3\na 0 1\nb 0 2\n", 5),
        ];
        for &(text, expected_line) in cases {
            let line = corrupt_line(decode_offset_checkpoint(path(), text));
            assert_eq!(
                line,
                expected_line,
                "for {:?}",
                String::from_utf8_lossy(text)
            );
        }
    }

    #[test]
    fn huge_entry_count_does_not_allocate_it() {
        let text = format!("0\n{}\n0 0\n", i32::MAX);
        assert_eq!(
            corrupt_line(decode_epoch_checkpoint(path(), text.as_bytes())),
            4
        );
    }

    proptest! {
        #[test]
        fn decoding_random_bytes_never_panics(text in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_epoch_checkpoint(path(), &text);
            let _ = decode_offset_checkpoint(path(), &text);
        }

        #[test]
        fn decoding_checkpoint_like_text_never_panics(
            text in "[0-9 \\-\\n\\ra-z\\t]{0,80}"
        ) {
            let _ = decode_epoch_checkpoint(path(), text.as_bytes());
            let _ = decode_offset_checkpoint(path(), text.as_bytes());
        }

        #[test]
        fn decoded_epoch_entries_always_build_a_cache(
            text in "0\n[0-3]\n([0-9]{1,2} [0-9]{1,3}\n){0,4}"
        ) {
            if let Ok(entries) = decode_epoch_checkpoint(path(), text.as_bytes()) {
                prop_assert!(LeaderEpochCache::from_entries(entries).is_ok());
            }
        }
    }

    // ---- files ----

    fn dir_names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn atomic_write_creates_then_replaces_and_leaves_no_tmp() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("leader-epoch-checkpoint");

        write_atomically_blocking(&target, b"0\n1\n0 0\n").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"0\n1\n0 0\n");
        write_atomically_blocking(&target, b"0\n0\n").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"0\n0\n");

        assert_eq!(dir_names(dir.path()), ["leader-epoch-checkpoint"]);
    }

    #[test]
    fn atomic_write_overwrites_a_stale_tmp_left_by_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("recovery-point-offset-checkpoint");
        fs::write(tmp_path_for(&target), b"torn garbage that is longer").unwrap();

        write_atomically_blocking(&target, b"0\n0\n").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"0\n0\n");
        assert_eq!(dir_names(dir.path()), ["recovery-point-offset-checkpoint"]);
    }

    #[test]
    fn atomic_write_reports_the_failing_step() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("missing-dir").join("checkpoint");
        let error = write_atomically_blocking(&target, b"0\n0\n").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
        assert!(error.to_string().starts_with("create "), "{error}");

        // Renaming a file over a non-empty directory fails after the tmp
        // file was written and synced.
        let occupied = dir.path().join("occupied");
        fs::create_dir(&occupied).unwrap();
        fs::write(occupied.join("x"), b"").unwrap();
        let error = write_atomically_blocking(&occupied, b"0\n0\n").unwrap_err();
        assert!(error.to_string().starts_with("rename "), "{error}");
    }

    #[test]
    fn tmp_path_appends_suffix_to_the_file_name() {
        assert_eq!(
            tmp_path_for(Path::new("/d/leader-epoch-checkpoint")),
            Path::new("/d/leader-epoch-checkpoint.tmp")
        );
        assert_eq!(parent_dir(Path::new("file")), Path::new("."));
        assert_eq!(parent_dir(Path::new("/d/file")), Path::new("/d"));
    }

    #[test]
    fn reading_a_missing_file_gives_none() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("log-start-offset-checkpoint");
        assert_eq!(read_checkpoint_file(&target).unwrap(), None);
        fs::write(&target, b"0\n0\n").unwrap();
        assert_eq!(read_checkpoint_file(&target).unwrap().unwrap(), b"0\n0\n");
        // A directory where the file should be is an I/O error, not "missing".
        assert!(matches!(
            read_checkpoint_file(dir.path()),
            Err(LogError::Io { .. })
        ));
    }

    #[test]
    fn async_checkpoints_round_trip_inside_glommio() {
        let dir = tempfile::tempdir().unwrap();
        let dir_path = dir.path().to_path_buf();
        glommio::LocalExecutorBuilder::default()
            .make()
            .unwrap()
            .run(async move {
                let raw = dir_path.join("raw");
                write_atomically(raw.clone(), b"hello".to_vec())
                    .await
                    .unwrap();
                assert_eq!(fs::read(&raw).unwrap(), b"hello");

                let epochs_path = dir_path.join("leader-epoch-checkpoint");
                assert!(read_epoch_checkpoint(&epochs_path)
                    .await
                    .unwrap()
                    .is_empty());
                let mut cache = LeaderEpochCache::new();
                cache.assign(0, 0).unwrap();
                cache.assign(1, 128).unwrap();
                write_epoch_checkpoint(&epochs_path, cache.entries())
                    .await
                    .unwrap();
                assert_eq!(fs::read(&epochs_path).unwrap(), b"0\n2\n0 0\n1 128\n");
                let read_back = read_epoch_checkpoint(&epochs_path).await.unwrap();
                assert_eq!(LeaderEpochCache::from_entries(read_back).unwrap(), cache);

                let offsets_path = dir_path.join("recovery-point-offset-checkpoint");
                let offsets = vec![offset_entry("t", 0, 10), offset_entry("t", 1, 20)];
                write_offset_checkpoint(&offsets_path, &offsets)
                    .await
                    .unwrap();
                assert_eq!(
                    read_offset_checkpoint(&offsets_path).await.unwrap(),
                    offsets
                );

                let error = write_atomically(dir_path.join("no/such/dir"), Vec::new())
                    .await
                    .unwrap_err();
                assert!(
                    matches!(
                        error,
                        LogError::Io {
                            op: "write checkpoint",
                            offset: -1,
                            ..
                        }
                    ),
                    "{error:?}"
                );
                fs::write(&epochs_path, b"0\n1\n").unwrap();
                assert!(matches!(
                    read_epoch_checkpoint(&epochs_path).await,
                    Err(LogError::CorruptCheckpoint { line: 3, .. })
                ));
            });
        assert_eq!(
            dir_names(dir.path()),
            [
                "leader-epoch-checkpoint",
                "raw",
                "recovery-point-offset-checkpoint"
            ]
        );
    }
}
