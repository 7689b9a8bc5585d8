//! The undo journal: everything done to the backing directory that no sync
//! has made durable yet, and how to take it back.
//!
//! Every change goes straight through to the backing directory, so reads
//! need no overlay; what a power cut must forget is recorded here first, as
//! the way to undo it. A sync drops records (their changes are now
//! durable); a cut undoes the records that are left, newest first.
//!
//! Which sync makes what durable (POSIX, as Kafka and pinlog rely on it):
//! - a file's bytes and length (write, truncate, fallocate): fsync or
//!   fdatasync of that file;
//! - a name (create, mkdir, unlink, rmdir, rename): fsync of the directory
//!   holding it; a rename between two directories needs both.
//!
//! Records point at their files and directories through descriptors, not
//! paths: undoing a directory's rename must not lose the records of the
//! files inside it.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// One change a power cut takes back.
#[derive(Debug)]
pub(crate) enum Undo {
    /// A file's bytes changed (write, truncate, fallocate): set its length
    /// back to `old_len`, then put `old_bytes` back at `offset`.
    Data {
        ino: u64,
        file: Arc<File>,
        offset: u64,
        old_bytes: OldBytes,
        old_len: u64,
    },
    /// A name appeared (create, mknod, mkdir): remove it (a directory with
    /// everything in it).
    Created {
        parent: u64,
        dir: Arc<OwnedFd>,
        name: OsString,
    },
    /// A name went away (unlink, rmdir): its inode waits in the trash as
    /// `trash_name`; move it back.
    Removed {
        parent: u64,
        dir: Arc<OwnedFd>,
        name: OsString,
        trash_name: OsString,
    },
    /// A rename: move it back, and put a replaced target back from the
    /// trash. Durable once both directories are synced.
    Renamed {
        from_parent: u64,
        from_dir: Arc<OwnedFd>,
        from_name: OsString,
        to_parent: u64,
        to_dir: Arc<OwnedFd>,
        to_name: OsString,
        replaced: Option<OsString>,
        synced: [bool; 2],
    },
}

/// The bytes a data change replaced, without their run of trailing zeros,
/// which is kept as a count. A broker's mapped indexes are preallocated
/// sparse files (10 MiB by default) that recovery trims to their few live
/// bytes at every start; keeping each trimmed region whole cost a long
/// power-loss run gigabytes of memory, and every cut as many bytes of
/// zeros written back.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct OldBytes {
    prefix: Vec<u8>,
    zeros: u64,
}

/// How much of a file [`OldBytes`] reads, or writes back as zeros, at once.
const CHUNK: usize = 1 << 20;

impl OldBytes {
    /// Reads `[offset, offset + len)` of `file` (which must hold it).
    pub(crate) fn read(file: &File, offset: u64, len: u64) -> io::Result<OldBytes> {
        let mut old = OldBytes {
            prefix: Vec::new(),
            zeros: 0,
        };
        let mut chunk = vec![0; CHUNK.min(len as usize)];
        let mut at = offset;
        while at < offset + len {
            let n = CHUNK.min((offset + len - at) as usize);
            file.read_exact_at(&mut chunk[..n], at)?;
            old.push(&chunk[..n]);
            at += n as u64;
        }
        old.prefix.shrink_to_fit();
        Ok(old)
    }

    fn push(&mut self, bytes: &[u8]) {
        match bytes.iter().rposition(|b| *b != 0) {
            None => self.zeros += bytes.len() as u64,
            Some(last) => {
                let zeros = self.prefix.len() + self.zeros as usize;
                self.prefix.resize(zeros, 0);
                self.prefix.extend_from_slice(&bytes[..=last]);
                self.zeros = (bytes.len() - last - 1) as u64;
            }
        }
    }

    /// Puts the bytes back at `offset` of `file`, whose bytes from
    /// `zero_from` on are known to be zeros already (a length the file
    /// was just extended from), so that only the zeros below it are
    /// written.
    fn write_back(&self, file: &File, offset: u64, zero_from: u64) -> io::Result<()> {
        file.write_all_at(&self.prefix, offset)?;
        let start = offset + self.prefix.len() as u64;
        let end = (start + self.zeros).min(zero_from.max(start));
        let zeros = vec![0; CHUNK.min((end - start) as usize)];
        let mut at = start;
        while at < end {
            let n = CHUNK.min((end - at) as usize);
            file.write_all_at(&zeros[..n], at)?;
            at += n as u64;
        }
        Ok(())
    }
}

/// What a cut keeps of the changes no sync made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutMode {
    /// Nothing: every unsynced change is lost.
    DropAll,
    /// A disk with a write cache: of each file's unsynced data changes a
    /// random prefix (possibly all, possibly none) survives, chosen from
    /// this seed. Names are all lost.
    KeepRandomPrefix { seed: u64 },
}

/// What one cut took back.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CutReport {
    /// Data changes undone.
    pub data_undone: usize,
    /// Data changes a write-cache cut kept.
    pub data_kept: usize,
    /// Name changes undone.
    pub names_undone: usize,
}

/// The records, in the order their changes were made.
#[derive(Debug)]
pub(crate) struct Journal {
    records: BTreeMap<u64, Undo>,
    next_seq: u64,
    /// The trash directory (inside the backing directory, hidden from the
    /// mount): removed inodes wait here until their removal is durable.
    trash: Arc<OwnedFd>,
    next_trash: u64,
}

/// A path through which `name` in the directory `dir` can be reached
/// without knowing the directory's own path.
pub(crate) fn at(dir: &OwnedFd, name: &OsString) -> PathBuf {
    let mut path = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
    path.push(name);
    path
}

fn remove_any(path: &PathBuf) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// A small deterministic generator (splitmix64): the cut's randomness
/// replays from its seed.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Journal {
    pub(crate) fn new(trash: OwnedFd) -> Journal {
        Journal {
            records: BTreeMap::new(),
            next_seq: 0,
            trash: Arc::new(trash),
            next_trash: 0,
        }
    }

    /// Unsynced changes recorded.
    pub(crate) fn pending(&self) -> usize {
        self.records.len()
    }

    pub(crate) fn push(&mut self, undo: Undo) {
        self.records.insert(self.next_seq, undo);
        self.next_seq += 1;
    }

    /// Moves `name` in `dir` into the trash; returns its name there.
    pub(crate) fn move_to_trash(&mut self, dir: &OwnedFd, name: &OsString) -> io::Result<OsString> {
        let trash_name = OsString::from(format!("{}", self.next_trash));
        self.next_trash += 1;
        std::fs::rename(at(dir, name), at(&self.trash, &trash_name))?;
        Ok(trash_name)
    }

    fn empty_trash(&self, trash_name: &OsString) -> io::Result<()> {
        remove_any(&at(&self.trash, trash_name))
    }

    /// fsync or fdatasync of file `ino`: its data changes are durable.
    pub(crate) fn sync_file(&mut self, ino: u64) {
        self.records
            .retain(|_, r| !matches!(r, Undo::Data { ino: i, .. } if *i == ino));
    }

    /// fsync of directory `ino`: the name changes in it are durable.
    pub(crate) fn sync_dir(&mut self, ino: u64) -> io::Result<()> {
        let mut durable = Vec::new();
        for (seq, r) in self.records.iter_mut() {
            let done = match r {
                Undo::Created { parent, .. } | Undo::Removed { parent, .. } => *parent == ino,
                Undo::Renamed {
                    from_parent,
                    to_parent,
                    synced,
                    ..
                } => {
                    synced[0] |= *from_parent == ino;
                    synced[1] |= *to_parent == ino;
                    synced[0] && synced[1]
                }
                Undo::Data { .. } => false,
            };
            if done {
                durable.push(*seq);
            }
        }
        for seq in durable {
            match self.records.remove(&seq) {
                Some(Undo::Removed { trash_name, .. })
                | Some(Undo::Renamed {
                    replaced: Some(trash_name),
                    ..
                }) => self.empty_trash(&trash_name)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// The power cut: undoes every record, newest first (a write-cache cut
    /// keeps a random prefix of each file's data changes). Afterwards the
    /// backing directory holds exactly what the syncs made durable.
    pub(crate) fn cut(&mut self, mode: CutMode) -> io::Result<CutReport> {
        let mut report = CutReport::default();
        if let CutMode::KeepRandomPrefix { seed } = mode {
            let mut rng = SplitMix(seed);
            let mut per_file: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
            for (seq, r) in &self.records {
                if let Undo::Data { ino, .. } = r {
                    per_file.entry(*ino).or_default().push(*seq);
                }
            }
            let mut kept = HashSet::new();
            for seqs in per_file.values() {
                let keep = (rng.next() % (seqs.len() as u64 + 1)) as usize;
                kept.extend(seqs[..keep].iter().copied());
            }
            report.data_kept = kept.len();
            self.records.retain(|seq, _| !kept.contains(seq));
        }
        while let Some((_, r)) = self.records.pop_last() {
            match r {
                Undo::Data {
                    file,
                    offset,
                    old_bytes,
                    old_len,
                    ..
                } => {
                    // Past the file's present length, the extension to
                    // `old_len` reads as zeros.
                    let present = file.metadata()?.len();
                    file.set_len(old_len)?;
                    old_bytes.write_back(&file, offset, present)?;
                    report.data_undone += 1;
                }
                Undo::Created { dir, name, .. } => {
                    remove_any(&at(&dir, &name))?;
                    report.names_undone += 1;
                }
                Undo::Removed {
                    dir,
                    name,
                    trash_name,
                    ..
                } => {
                    std::fs::rename(at(&self.trash, &trash_name), at(&dir, &name))?;
                    report.names_undone += 1;
                }
                Undo::Renamed {
                    from_dir,
                    from_name,
                    to_dir,
                    to_name,
                    replaced,
                    ..
                } => {
                    std::fs::rename(at(&to_dir, &to_name), at(&from_dir, &from_name))?;
                    if let Some(trash_name) = replaced {
                        std::fs::rename(at(&self.trash, &trash_name), at(&to_dir, &to_name))?;
                    }
                    report.names_undone += 1;
                }
            }
        }
        let left = std::fs::read_dir(at(&self.trash, &OsString::new()))?.count();
        assert_eq!(left, 0, "the trash is empty after a cut");
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Live bytes, a zero run inside them, a nonzero byte past the first
    /// chunk, then a long zero tail: what a trimmed index looks like.
    fn sample() -> Vec<u8> {
        let mut bytes = vec![0u8; 3 * CHUNK + 777];
        bytes[..3].copy_from_slice(&[1, 2, 3]);
        bytes[CHUNK + 5] = 9;
        bytes
    }

    fn file_with(bytes: &[u8]) -> (tempfile::NamedTempFile, File) {
        let tmp = tempfile::NamedTempFile::new().expect("a temporary file");
        let file = tmp.reopen().expect("open it");
        file.write_all_at(bytes, 0).expect("write");
        (tmp, file)
    }

    fn contents(file: &File) -> Vec<u8> {
        let mut out = vec![0; file.metadata().expect("stat").len() as usize];
        file.read_exact_at(&mut out, 0).expect("read");
        out
    }

    #[test]
    fn keeps_the_trailing_zeros_as_a_count() {
        let bytes = sample();
        let (_tmp, file) = file_with(&bytes);
        let old = OldBytes::read(&file, 0, bytes.len() as u64).expect("read");
        assert_eq!(old.prefix.len(), CHUNK + 6);
        assert_eq!(old.prefix.len() as u64 + old.zeros, bytes.len() as u64);
        assert_eq!(old.prefix[..], bytes[..CHUNK + 6]);
        let zeros = OldBytes::read(&file, (CHUNK + 6) as u64, 100).expect("read");
        assert_eq!((zeros.prefix.len(), zeros.zeros), (0, 100));
    }

    #[test]
    fn an_overwrite_is_undone_zeros_included() {
        let bytes = sample();
        let (_tmp, file) = file_with(&bytes);
        let old = OldBytes::read(&file, 2, bytes.len() as u64 - 2).expect("read");
        file.write_all_at(&vec![0xff; bytes.len() - 2], 2)
            .expect("overwrite");
        let present = file.metadata().expect("stat").len();
        old.write_back(&file, 2, present).expect("write back");
        assert_eq!(contents(&file), bytes);
    }

    #[test]
    fn a_truncate_is_undone_from_the_extension() {
        let bytes = sample();
        let (_tmp, file) = file_with(&bytes);
        let old = OldBytes::read(&file, 10, bytes.len() as u64 - 10).expect("read");
        file.set_len(10).expect("truncate");
        file.set_len(bytes.len() as u64).expect("extend");
        old.write_back(&file, 10, 10).expect("write back");
        assert_eq!(contents(&file), bytes);
    }
}
