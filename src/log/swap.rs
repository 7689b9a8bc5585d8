//! Swapping cleaned segments in for the segments they replace, and
//! finishing or undoing a swap a crash interrupted (Kafka's
//! `replaceSegments` and the swap-file handling of its `LogLoader`).
//!
//! **The swap protocol** (Kafka's `replaceSegments`), for one group of old
//! segments replaced by one cleaned segment whose base offset is the first
//! old segment's (`X`). The cleaned files `X.{index,timeindex,log}.cleaned`
//! were written and fdatasync'ed before the swap starts, with
//! `X.txnindex.cleaned` when the group has aborted transactions.
//! 1. Rename the cleaned files to `.swap`, the log file last, and fsync the
//!    directory. `X.log.swap` existing is the commit point: recovery then
//!    finishes the swap; before it, recovery deletes the `.cleaned` files and
//!    the old segments are untouched.
//! 2. Delete every old segment of the group, then fsync the directory.
//!    After a crash here recovery deletes what is left of them, as Kafka's
//!    log loader does: the segments whose base offsets fall in the swap
//!    file's offset range `[X, next offset of its last batch)`, and `X`
//!    itself. Old segments of the group past that range may survive. That
//!    is safe: they are exactly the segments from which the clean kept no
//!    record. Each record in them is overwritten by a later record, which
//!    lies at a higher offset and so is still in the log (untouched, after
//!    the swap's range); or it is a tombstone past its horizon, whose key's
//!    older records the clean dropped; or it has no key. No key reads an
//!    older value, and no deleted key comes back; the next clean removes
//!    them.
//! 3. Rename the `.swap` files to their final names (log last) and fsync
//!    the directory. A crash between the renames leaves a `.log.swap` that
//!    recovery renames; an index renamed before the crash is deleted as one
//!    of the "old" files and rebuilt, since indexes derive from the log.
//!
//! Between steps the directory fsyncs order the steps on disk, so no crash
//! can leave the new segment under its final name beside an old one.
//!
//! `PartitionLog::replace_segments` runs the steps under the log's write
//! lock; `complete_interrupted_swaps` runs before a partition's segments are
//! opened.

use std::path::{Path, PathBuf};

use crate::error::{LogError, LogResult};
use crate::log::batch;
use crate::log::segment::{
    parse_segment_file_name, segment_file_path, CLEANED_FILE_SUFFIX, OPTIONAL_FILE_KINDS,
    SEGMENT_FILE_KINDS, SWAP_FILE_SUFFIX,
};

/// A step of the cleaner's segment swap at which a test can stop, leaving
/// the files as a crash there would (a named failure point).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwapFailpoint {
    /// The `.cleaned` files are written and flushed; nothing renamed.
    BeforeSwap,
    /// The `.swap` files are in place (the commit point); old segments intact.
    AfterSwapCommitted,
    /// The first of the replaced segments is deleted, the others are not.
    AfterFirstOldDeleted,
    /// Every replaced segment is deleted; the `.swap` files are not renamed.
    AfterOldDeleted,
}

/// Step 1: renames `<base>.*.cleaned` to `.swap`, the log file last, and
/// makes the renames durable. Once this returns the swap is committed.
pub async fn commit_cleaned(dir: &Path, base: i64) -> LogResult<()> {
    for kind in SEGMENT_FILE_KINDS {
        rename(
            kind,
            &suffixed(dir, base, kind, CLEANED_FILE_SUFFIX),
            &suffixed(dir, base, kind, SWAP_FILE_SUFFIX),
        )
        .await?;
    }
    sync_dir(dir).await
}

/// Step 3: renames `<base>.*.swap` to the final names, the log file last,
/// and makes the renames durable.
pub async fn rename_swap_to_final(dir: &Path, base: i64) -> LogResult<()> {
    for kind in SEGMENT_FILE_KINDS {
        rename(
            kind,
            &suffixed(dir, base, kind, SWAP_FILE_SUFFIX),
            &segment_file_path(dir, base, kind),
        )
        .await?;
    }
    sync_dir(dir).await
}

/// Deletes the files of an aborted clean: `<base>.*.cleaned`.
pub async fn delete_cleaned_files(dir: &Path, base: i64) -> LogResult<()> {
    for kind in SEGMENT_FILE_KINDS {
        let path = suffixed(dir, base, kind, CLEANED_FILE_SUFFIX);
        match glommio::io::remove(&path).await {
            Ok(()) => {}
            Err(e) => {
                let e = std::io::Error::from(e);
                if e.kind() != std::io::ErrorKind::NotFound {
                    return Err(LogError::io("delete cleaned file", &path, base, e));
                }
            }
        }
    }
    Ok(())
}

/// `<base>.<kind><suffix>`, as `00000000000000000000.log.cleaned`.
fn suffixed(dir: &Path, base: i64, kind: &str, suffix: &str) -> PathBuf {
    let mut p = segment_file_path(dir, base, kind).into_os_string();
    p.push(suffix);
    PathBuf::from(p)
}

/// Renames one file of a segment; a missing optional one (a segment
/// without a transaction index) is fine.
async fn rename(kind: &str, from: &Path, to: &Path) -> LogResult<()> {
    match glommio::io::rename(from, to).await {
        Ok(()) => Ok(()),
        Err(e) => {
            let e = std::io::Error::from(e);
            if e.kind() == std::io::ErrorKind::NotFound && OPTIONAL_FILE_KINDS.contains(&kind) {
                return Ok(());
            }
            Err(LogError::io("rename segment file", from, -1, e))
        }
    }
}

/// fsync of a directory, so that renames and deletions in it are durable,
/// on glommio's blocking pool.
pub async fn sync_dir(dir: &Path) -> LogResult<()> {
    let d = dir.to_path_buf();
    crate::blocking_pool::run(move || std::fs::File::open(&d).and_then(|f| f.sync_all()))
        .await
        .map_err(|e| LogError::io("fsync partition dir", dir, -1, e))
}

fn sync_dir_blocking(dir: &Path) -> LogResult<()> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| LogError::io("fsync partition dir", dir, -1, e))
}

/// Recovery of an interrupted clean, before the segments are opened (see the
/// module docs): `.cleaned` files are
/// deleted, a `<X>.log.swap` is finished by deleting the segments in its
/// offset range and renaming it, and index `.swap` files without a log
/// `.swap` are deleted. Blocking file calls, like the rest of opening.
/// Returns the number of swaps finished.
pub fn complete_interrupted_swaps(dir: &Path) -> LogResult<usize> {
    let list_err = |e| LogError::io("list partition dir", dir, -1, e);
    let mut log_swaps = Vec::new();
    let mut index_swaps = Vec::new();
    let mut segment_files = Vec::new();
    let mut removed_any = false;
    for entry in std::fs::read_dir(dir).map_err(list_err)? {
        let entry = entry.map_err(list_err)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.ends_with(CLEANED_FILE_SUFFIX) {
            tracing::info!(file = %entry.path().display(), "deleting the file of an interrupted clean");
            remove_file(&entry.path())?;
            removed_any = true;
        } else if let Some(stem) = name.strip_suffix(SWAP_FILE_SUFFIX) {
            if let Some(base) = parse_segment_file_name(stem, "log") {
                log_swaps.push(base);
            } else if let Some(base) = SEGMENT_FILE_KINDS
                .iter()
                .filter(|k| **k != "log")
                .find_map(|k| parse_segment_file_name(stem, k))
            {
                index_swaps.push((base, entry.path()));
            }
        } else if let Some(base) = SEGMENT_FILE_KINDS
            .iter()
            .find_map(|k| parse_segment_file_name(name, k))
        {
            segment_files.push((base, entry.path()));
        }
    }
    log_swaps.sort_unstable();
    for &base in &log_swaps {
        let swap = suffixed(dir, base, "log", SWAP_FILE_SUFFIX);
        // An empty cleaned segment replaces at least the one it is named
        // after.
        let end = swap_file_end_offset(&swap)?.max(base + 1);
        for (_, path) in segment_files
            .iter()
            .filter(|(b, _)| (base..end).contains(b))
        {
            tracing::info!(
                file = %path.display(),
                swap = %swap.display(),
                "finishing an interrupted clean: deleting a replaced segment file"
            );
            remove_if_exists(path)?;
        }
        sync_dir_blocking(dir)?;
        for kind in SEGMENT_FILE_KINDS {
            let from = suffixed(dir, base, kind, SWAP_FILE_SUFFIX);
            if from.exists() {
                let to = segment_file_path(dir, base, kind);
                std::fs::rename(&from, &to)
                    .map_err(|e| LogError::io("rename swap file", &from, base, e))?;
            }
        }
        tracing::info!(segment = %swap.display(), end_offset = end, "finished an interrupted clean's swap");
        removed_any = true;
    }
    for (base, path) in index_swaps {
        if !log_swaps.contains(&base) {
            remove_file(&path)?;
            removed_any = true;
        }
    }
    if removed_any {
        sync_dir_blocking(dir)?;
    }
    Ok(log_swaps.len())
}

/// The offset after the last whole batch of a swap file, -1 when it holds
/// none. The file was fdatasync'ed before it
/// was renamed, so its batches are whole; reading stops at anything else.
fn swap_file_end_offset(path: &Path) -> LogResult<i64> {
    use std::os::unix::fs::FileExt;
    let file =
        std::fs::File::open(path).map_err(|e| LogError::io("open swap file", path, -1, e))?;
    let len = file
        .metadata()
        .map_err(|e| LogError::io("stat swap file", path, -1, e))?
        .len();
    let mut end = -1;
    let mut position = 0u64;
    let mut head = [0u8; crate::constants::RECORD_BATCH_HEADER_SIZE];
    while position + head.len() as u64 <= len {
        file.read_exact_at(&mut head, position)
            .map_err(|e| LogError::io("read swap file", path, -1, e))?;
        let Ok(h) = batch::parse_header_only(&head) else {
            break;
        };
        if position + h.size_bytes() as u64 > len {
            break;
        }
        end = h.next_offset();
        position += h.size_bytes() as u64;
    }
    Ok(end)
}

fn remove_file(path: &Path) -> LogResult<()> {
    std::fs::remove_file(path).map_err(|e| LogError::io("remove file", path, -1, e))
}

fn remove_if_exists(path: &Path) -> LogResult<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(LogError::io("remove file", path, -1, e))
        }
        _ => Ok(()),
    }
}
