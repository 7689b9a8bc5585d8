//! The FUSE side: a pass-through to the backing directory that records,
//! before each change, how to undo it (`journal.rs`).
//!
//! Inode numbers are the backing file system's (the backing root's and 1
//! swap places, since FUSE's root is 1). Every reply is cached by the
//! kernel for no time at all, and no open keeps the page cache, so that
//! after a cut the kernel asks again instead of showing what was lost.
//! Data reaches this file system even when the caller opened with
//! O_DIRECT or maps the file: the kernel sends every write here (there is
//! no writeback cache and no kernel passthrough).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{DirEntryExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use crate::journal::{CutMode, CutReport, Journal, OldBytes, Undo};

/// The backing directory's entry that holds removed inodes until their
/// removal is durable; the mount does not show it.
pub(crate) const TRASH_NAME: &str = ".powerfs-trash";

/// How long the kernel may cache an answer: not at all (see above).
const TTL: Duration = Duration::ZERO;

/// Everything behind the mount, under one lock: the session thread serves
/// requests with it, a cut takes it from the test's thread.
#[derive(Debug)]
pub(crate) struct State {
    backing: PathBuf,
    /// The backing root's own inode number.
    root_ino: u64,
    /// FUSE inode number to path relative to `backing`, as last looked up.
    paths: HashMap<u64, PathBuf>,
    /// Open file handles: the backing file each one reads and writes.
    handles: HashMap<u64, Arc<File>>,
    next_handle: u64,
    /// Bumped by every cut: an inode number the kernel saw before a cut may
    /// name another file after it.
    generation: u64,
    journal: Journal,
}

pub(crate) type Shared = Arc<Mutex<State>>;

fn errno(e: io::Error) -> Errno {
    Errno::from(e)
}

impl State {
    pub(crate) fn new(backing: &Path) -> io::Result<State> {
        let backing = backing.canonicalize()?;
        let trash = backing.join(TRASH_NAME);
        if trash.exists() {
            // A previous mount's leftovers: it ended without a cut, so
            // what waited there was never durably removed; forget it.
            std::fs::remove_dir_all(&trash)?;
        }
        std::fs::create_dir(&trash)?;
        let trash_fd: OwnedFd = File::open(&trash)?.into();
        let root_ino = std::fs::metadata(&backing)?.ino();
        let mut paths = HashMap::new();
        paths.insert(1, PathBuf::new());
        Ok(State {
            backing,
            root_ino,
            paths,
            handles: HashMap::new(),
            next_handle: 1,
            generation: 0,
            journal: Journal::new(trash_fd),
        })
    }

    fn fuse_ino(&self, backing_ino: u64) -> u64 {
        if backing_ino == self.root_ino {
            1
        } else if backing_ino == 1 {
            self.root_ino
        } else {
            backing_ino
        }
    }

    fn path(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        self.paths
            .get(&ino.0)
            .map(|p| self.backing.join(p))
            .ok_or(Errno::ESTALE)
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<(PathBuf, PathBuf), Errno> {
        if parent.0 == 1 && name == TRASH_NAME {
            return Err(Errno::ENOENT);
        }
        let rel = self.paths.get(&parent.0).ok_or(Errno::ESTALE)?.join(name);
        Ok((self.backing.join(&rel), rel))
    }

    fn dir_fd(&self, parent: INodeNo) -> Result<Arc<OwnedFd>, Errno> {
        let file = File::open(self.path(parent)?).map_err(errno)?;
        Ok(Arc::new(file.into()))
    }

    fn attr(&self, m: &Metadata) -> FileAttr {
        let time = |secs: i64, nsecs: i64| {
            if secs >= 0 {
                UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32)
            } else {
                UNIX_EPOCH
            }
        };
        let ft = m.file_type();
        let kind = if ft.is_dir() {
            FileType::Directory
        } else if ft.is_symlink() {
            FileType::Symlink
        } else {
            FileType::RegularFile
        };
        FileAttr {
            ino: INodeNo(self.fuse_ino(m.ino())),
            size: m.size(),
            blocks: m.blocks(),
            atime: time(m.atime(), m.atime_nsec()),
            mtime: time(m.mtime(), m.mtime_nsec()),
            ctime: time(m.ctime(), m.ctime_nsec()),
            crtime: UNIX_EPOCH,
            kind,
            perm: (m.mode() & 0o7777) as u16,
            nlink: m.nlink() as u32,
            uid: m.uid(),
            gid: m.gid(),
            rdev: m.rdev() as u32,
            blksize: m.blksize() as u32,
            flags: 0,
        }
    }

    /// Looks `rel` up in the backing directory and remembers its inode.
    fn entry(&mut self, full: &Path, rel: PathBuf) -> Result<FileAttr, Errno> {
        let m = std::fs::symlink_metadata(full).map_err(errno)?;
        let attr = self.attr(&m);
        self.paths.insert(attr.ino.0, rel);
        Ok(attr)
    }

    /// Records how to undo a change of `file`'s bytes in
    /// `[offset, offset + len)` (and of its length to `new_len`).
    fn record_data(
        &mut self,
        ino: INodeNo,
        file: &Arc<File>,
        offset: u64,
        len: u64,
    ) -> io::Result<()> {
        let old_len = file.metadata()?.len();
        let end = (offset.saturating_add(len)).min(old_len);
        let old_bytes = OldBytes::read(file, offset, end.saturating_sub(offset))?;
        self.journal.push(Undo::Data {
            ino: ino.0,
            file: Arc::clone(file),
            offset,
            old_bytes,
            old_len,
        });
        Ok(())
    }

    fn set_len(&mut self, ino: INodeNo, file: &Arc<File>, len: u64) -> io::Result<()> {
        let old_len = file.metadata()?.len();
        if old_len != len {
            self.record_data(ino, file, len.min(old_len), old_len.saturating_sub(len))?;
            file.set_len(len)?;
        }
        Ok(())
    }

    fn open_backing(path: &Path) -> io::Result<File> {
        OpenOptions::new().read(true).write(true).open(path)
    }

    fn new_handle(&mut self, file: File) -> u64 {
        let fh = self.next_handle;
        self.next_handle += 1;
        self.handles.insert(fh, Arc::new(file));
        fh
    }

    fn handle(&self, fh: FileHandle) -> Result<Arc<File>, Errno> {
        self.handles.get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    /// Moves the inode table's paths under `from` to `to` after a rename.
    fn renamed(&mut self, from: &Path, to: &Path) {
        for path in self.paths.values_mut() {
            if let Ok(rest) = path.strip_prefix(from) {
                *path = to.join(rest);
            }
        }
    }

    fn forget_path(&mut self, rel: &Path) {
        self.paths.retain(|ino, p| *ino == 1 || !p.starts_with(rel));
    }

    /// The power cut. Open handles stay usable but see the surviving
    /// image; callers kill the writers first, as a power cut would.
    pub(crate) fn cut(&mut self, mode: CutMode) -> io::Result<(CutReport, Vec<u64>)> {
        let report = self.journal.cut(mode)?;
        self.generation += 1;
        let inos: Vec<u64> = self.paths.keys().copied().collect();
        self.paths.retain(|ino, _| *ino == 1);
        Ok((report, inos))
    }

    pub(crate) fn pending(&self) -> usize {
        self.journal.pending()
    }

    fn remove(&mut self, parent: INodeNo, name: &OsStr, dir: bool) -> Result<(), Errno> {
        let (full, rel) = self.child(parent, name)?;
        let m = std::fs::symlink_metadata(&full).map_err(errno)?;
        if dir != m.is_dir() {
            return Err(if dir { Errno::ENOTDIR } else { Errno::EISDIR });
        }
        if dir && std::fs::read_dir(&full).map_err(errno)?.next().is_some() {
            return Err(Errno::ENOTEMPTY);
        }
        let dir_fd = self.dir_fd(parent)?;
        let name = name.to_os_string();
        let trash_name = self.journal.move_to_trash(&dir_fd, &name).map_err(errno)?;
        self.journal.push(Undo::Removed {
            parent: parent.0,
            dir: dir_fd,
            name,
            trash_name,
        });
        self.forget_path(&rel);
        Ok(())
    }

    fn rename(
        &mut self,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
    ) -> Result<(), Errno> {
        let (from, from_rel) = self.child(parent, name)?;
        let (to, to_rel) = self.child(newparent, newname)?;
        let source = std::fs::symlink_metadata(&from).map_err(errno)?;
        let from_dir = self.dir_fd(parent)?;
        let to_dir = self.dir_fd(newparent)?;
        let mut replaced = None;
        match std::fs::symlink_metadata(&to) {
            Ok(target) => {
                if flags.bits() & libc::RENAME_NOREPLACE != 0 {
                    return Err(Errno::EEXIST);
                }
                if target.ino() == source.ino() {
                    return Ok(());
                }
                if target.is_dir() != source.is_dir() {
                    return Err(if target.is_dir() {
                        Errno::EISDIR
                    } else {
                        Errno::ENOTDIR
                    });
                }
                if target.is_dir() && std::fs::read_dir(&to).map_err(errno)?.next().is_some() {
                    return Err(Errno::ENOTEMPTY);
                }
                let name = newname.to_os_string();
                replaced = Some(self.journal.move_to_trash(&to_dir, &name).map_err(errno)?);
                self.forget_path(&to_rel);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(errno(e)),
        }
        if flags.bits() & !libc::RENAME_NOREPLACE != 0 {
            return Err(Errno::EINVAL);
        }
        std::fs::rename(&from, &to).map_err(errno)?;
        self.journal.push(Undo::Renamed {
            from_parent: parent.0,
            from_dir,
            from_name: name.to_os_string(),
            to_parent: newparent.0,
            to_dir,
            to_name: newname.to_os_string(),
            replaced,
            synced: [false; 2],
        });
        self.renamed(&from_rel, &to_rel);
        Ok(())
    }

    fn create(
        &mut self,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        kind: FileType,
    ) -> Result<(FileAttr, Option<File>), Errno> {
        let (full, rel) = self.child(parent, name)?;
        let dir_fd = self.dir_fd(parent)?;
        let file = match kind {
            FileType::Directory => {
                std::fs::create_dir(&full).map_err(errno)?;
                None
            }
            _ => Some(
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .mode(mode & 0o7777)
                    .open(&full)
                    .map_err(errno)?,
            ),
        };
        std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode & 0o7777))
            .map_err(errno)?;
        self.journal.push(Undo::Created {
            parent: parent.0,
            dir: dir_fd,
            name: name.to_os_string(),
        });
        Ok((self.entry(&full, rel)?, file))
    }
}

/// The `fuser` file system over the shared state.
pub(crate) struct PowerFs {
    pub(crate) state: Shared,
}

impl PowerFs {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic in another request leaves the state as that request
        // left it; every request checks what it needs.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn empty(reply: ReplyEmpty, r: Result<(), Errno>) {
    match r {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

impl Filesystem for PowerFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let mut s = self.lock();
        let generation = Generation(s.generation);
        match s
            .child(parent, name)
            .and_then(|(full, rel)| s.entry(&full, rel))
        {
            Ok(attr) => reply.entry(&TTL, &attr, generation),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let s = self.lock();
        let m = match fh.and_then(|fh| s.handles.get(&fh.0)) {
            Some(file) => file.metadata().map_err(errno),
            None => s
                .path(ino)
                .and_then(|p| std::fs::symlink_metadata(p).map_err(errno)),
        };
        match m {
            Ok(m) => reply.attr(&TTL, &s.attr(&m)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mut s = self.lock();
        let r = (|| {
            let path = s.path(ino)?;
            if let Some(len) = size {
                let file = match fh.and_then(|fh| s.handles.get(&fh.0)) {
                    Some(file) => Arc::clone(file),
                    None => Arc::new(State::open_backing(&path).map_err(errno)?),
                };
                s.set_len(ino, &file, len).map_err(errno)?;
            }
            if let Some(mode) = mode {
                let perms = std::fs::Permissions::from_mode(mode & 0o7777);
                std::fs::set_permissions(&path, perms).map_err(errno)?;
            }
            // Owners and times pass as they are: no test of ours needs them.
            std::fs::symlink_metadata(&path).map_err(errno)
        })();
        match r {
            Ok(m) => reply.attr(&TTL, &s.attr(&m)),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG {
            return reply.error(Errno::EPERM);
        }
        let mut s = self.lock();
        let generation = Generation(s.generation);
        match s.create(parent, name, mode & !umask, FileType::RegularFile) {
            Ok((attr, _)) => reply.entry(&TTL, &attr, generation),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let mut s = self.lock();
        let generation = Generation(s.generation);
        match s.create(parent, name, mode & !umask, FileType::Directory) {
            Ok((attr, _)) => reply.entry(&TTL, &attr, generation),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        empty(reply, self.lock().remove(parent, name, false));
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        empty(reply, self.lock().remove(parent, name, true));
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        empty(
            reply,
            self.lock().rename(parent, name, newparent, newname, flags),
        );
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let mut s = self.lock();
        let r = (|| {
            let file = State::open_backing(&s.path(ino)?).map_err(errno)?;
            let fh = s.new_handle(file);
            if flags.0 & libc::O_TRUNC != 0 {
                let file = s.handle(FileHandle(fh))?;
                s.set_len(ino, &file, 0).map_err(errno)?;
            }
            Ok(fh)
        })();
        match r {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let mut s = self.lock();
        let generation = Generation(s.generation);
        match s.create(parent, name, mode & !umask, FileType::RegularFile) {
            Ok((attr, Some(file))) => {
                let fh = s.new_handle(file);
                reply.created(&TTL, &attr, generation, FileHandle(fh), FopenFlags::empty())
            }
            Ok((_, None)) => reply.error(Errno::EIO),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let file = match self.lock().handle(fh) {
            Ok(file) => file,
            Err(e) => return reply.error(e),
        };
        let mut buf = vec![0; size as usize];
        let mut filled = 0;
        while filled < buf.len() {
            match file.read_at(&mut buf[filled..], offset + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return reply.error(errno(e)),
            }
        }
        reply.data(&buf[..filled]);
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let mut s = self.lock();
        let r = (|| {
            let file = s.handle(fh)?;
            s.record_data(ino, &file, offset, data.len() as u64)
                .map_err(errno)?;
            file.write_all_at(data, offset).map_err(errno)
        })();
        match r {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // close(2) makes nothing durable.
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.lock().handles.remove(&fh.0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        // fdatasync and fsync alike: the length is part of the data an
        // append needs, and pinlog's metadata is all in names.
        self.lock().journal.sync_file(ino.0);
        reply.ok();
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(0), FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let s = self.lock();
        let r = (|| {
            let path = s.path(ino)?;
            let mut entries = vec![
                (ino.0, FileType::Directory, OsString::from(".")),
                (1, FileType::Directory, OsString::from("..")),
            ];
            for e in std::fs::read_dir(path).map_err(errno)? {
                let e = e.map_err(errno)?;
                if ino.0 == 1 && e.file_name() == TRASH_NAME {
                    continue;
                }
                let ft = e.file_type().map_err(errno)?;
                let kind = if ft.is_dir() {
                    FileType::Directory
                } else if ft.is_symlink() {
                    FileType::Symlink
                } else {
                    FileType::RegularFile
                };
                entries.push((s.fuse_ino(e.ino()), kind, e.file_name()));
            }
            Ok(entries)
        })();
        match r {
            Ok(entries) => {
                for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize)
                {
                    if reply.add(INodeNo(ino), i as u64 + 1, kind, name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = self.lock().journal.sync_dir(ino.0).map_err(errno);
        empty(reply, r);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let s = self.lock();
        let r = (|| {
            let path = std::ffi::CString::new(s.backing.as_os_str().as_encoded_bytes())
                .map_err(|_| Errno::EINVAL)?;
            // SAFETY: statvfs(3) fills the zeroed struct we pass; the path
            // is a valid C string.
            let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
            if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
                return Err(errno(io::Error::last_os_error()));
            }
            Ok(st)
        })();
        match r {
            Ok(st) => reply.statfs(
                st.f_blocks,
                st.f_bfree,
                st.f_bavail,
                st.f_files,
                st.f_ffree,
                st.f_bsize as u32,
                st.f_namemax as u32,
                st.f_frsize as u32,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let mut s = self.lock();
        let r = (|| {
            let file = s.handle(fh)?;
            let len = file.metadata().map_err(errno)?.len();
            let keep_size = mode & libc::FALLOC_FL_KEEP_SIZE != 0;
            if mode & !libc::FALLOC_FL_KEEP_SIZE == 0 {
                // Reserving blocks changes no byte; only a longer file is
                // a change to undo.
                if !keep_size && offset + length > len {
                    s.record_data(ino, &file, len, 0).map_err(errno)?;
                }
            } else {
                // Punching or zeroing changes the range's bytes.
                s.record_data(ino, &file, offset, length).map_err(errno)?;
            }
            // SAFETY: fallocate(2) on a descriptor the handle owns.
            let rc = unsafe {
                libc::fallocate(
                    file.as_raw_fd(),
                    mode,
                    offset as libc::off_t,
                    length as libc::off_t,
                )
            };
            if rc != 0 {
                return Err(errno(io::Error::last_os_error()));
            }
            Ok(())
        })();
        empty(reply, r);
    }
}
