//! A power-loss file system for tests (issue 34): a FUSE mount that passes
//! everything through to a backing directory but can, in one step, forget
//! every change that no fsync or fdatasync made durable, as a machine
//! losing power would.
//!
//! ```no_run
//! let fs = pinlog_powerfs::PowerFs::mount("mnt".as_ref(), "backing".as_ref()).unwrap();
//! // ... run a broker with its data directory under `mnt`, kill it ...
//! fs.power_cut(pinlog_powerfs::CutMode::DropAll).unwrap();
//! // ... restart the broker on what survived ...
//! ```
//!
//! The model (`journal.rs`): changes go straight to the backing directory,
//! and each is first recorded as the way to undo it. fsync or fdatasync of
//! a file makes its bytes and length durable; fsync of a directory makes
//! the names created, removed and renamed in it durable (a rename between
//! directories needs both). A cut undoes the rest, newest first, or keeps
//! a random prefix of each file's data changes (a disk's write cache).
//! File modes, owners and times are not modelled; symlinks and hard links
//! are not offered.
//!
//! Direct I/O: the kernel sends O_DIRECT reads and writes, io_uring's
//! included, to this file system like any other (the mount asks for no
//! writeback cache and no passthrough), so every byte a writer hands over
//! passes the journal. Shared mappings work through the page cache: a dirty
//! page reaches the file system when it is written back, which fsync and
//! msync force; [`PowerFs::power_cut`] writes back what a dead process
//! left dirty before it cuts, so a late writeback cannot resurrect it.

mod fs;
mod journal;

use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use journal::{CutMode, CutReport};

/// A mounted power-loss file system, served by a thread of this process.
/// Dropping it unmounts.
pub struct PowerFs {
    state: fs::Shared,
    mountpoint: PathBuf,
    session: Option<fuser::BackgroundSession>,
}

impl PowerFs {
    /// Mounts at `mountpoint` (an existing, empty directory) over `backing`
    /// (an existing directory, whose contents count as durable). Needs
    /// root, or a setuid fusermount3.
    pub fn mount(mountpoint: &Path, backing: &Path) -> io::Result<PowerFs> {
        let state = Arc::new(Mutex::new(fs::State::new(backing)?));
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            fuser::MountOption::FSName("pinlog-powerfs".to_string()),
            fuser::MountOption::Subtype("pinlog-powerfs".to_string()),
        ];
        let session = fuser::spawn_mount(
            fs::PowerFs {
                state: Arc::clone(&state),
            },
            mountpoint,
            &config,
        )?;
        Ok(PowerFs {
            state,
            mountpoint: mountpoint.to_path_buf(),
            session: Some(session),
        })
    }

    /// Where it is mounted.
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// Changes not yet made durable by a sync.
    pub fn pending(&self) -> usize {
        self.lock().pending()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, fs::State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The power cut: forgets, in one step, every change that no sync made
    /// durable (all of them, or with [`CutMode::KeepRandomPrefix`] all but
    /// a random prefix of each file's). Kill the processes writing here
    /// first: a power cut stops them too.
    pub fn power_cut(&self, mode: CutMode) -> io::Result<CutReport> {
        // Pages a killed process left dirty in a shared mapping reach us
        // only when the kernel writes them back: do that now, as plain
        // (unsynced) writes, so that none arrives after the cut.
        let root = std::fs::File::open(&self.mountpoint)?;
        // SAFETY: syncfs(2) on a descriptor we own.
        if unsafe { libc::syncfs(root.as_raw_fd()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let (report, inos) = self.lock().cut(mode)?;
        // The kernel's cached pages of those files may hold what was lost.
        // Without the lock: invalidating may ask this file system.
        if let Some(session) = &self.session {
            let notifier = session.notifier();
            for ino in inos {
                // An inode the kernel no longer holds answers ENOENT.
                let _ = notifier.inval_inode(fuser::INodeNo(ino), 0, 0);
            }
        }
        Ok(report)
    }

    /// Unmounts and waits for the serving thread.
    pub fn unmount(mut self) -> io::Result<()> {
        match self.session.take() {
            Some(session) => ended_by_unmount(session.umount_and_join()),
            None => Ok(()),
        }
    }
}

/// The serving thread's result once the file system was unmounted. Its
/// read of the FUSE device ends with ENODEV, which fuser counts as a
/// clean end, or (1 run in about 30 here) with ECONNABORTED when the
/// kernel aborted the connection as the unmount tore it down; fuser
/// reports that as an error, but the mount is gone either way and nothing
/// was left unanswered that a test could still observe.
fn ended_by_unmount(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => Ok(()),
        other => other,
    }
}

impl Drop for PowerFs {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            if let Err(e) = ended_by_unmount(session.umount_and_join()) {
                eprintln!("pinlog-powerfs: unmount {}: {e}", self.mountpoint.display());
            }
        }
    }
}
