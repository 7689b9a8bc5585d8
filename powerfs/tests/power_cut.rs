//! The power-loss file system forgets exactly what it should: each test
//! mounts it, makes changes with and without the sync that makes them
//! durable, cuts the power, and reads what survived through the mount.
//!
//! Mounting needs root and /dev/fuse; without them every test prints
//! `NOT RUN` and passes.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use pinlog_powerfs::{CutMode, CutReport, PowerFs};

struct Fixture {
    fs: Option<PowerFs>,
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(test: &str) -> Option<Fixture> {
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/fuse").exists() {
            eprintln!("{test}: NOT RUN (needs root and /dev/fuse)");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("powerfs-test-")
            .tempdir()
            .expect("a temporary directory");
        std::fs::create_dir(dir.path().join("mnt")).expect("mkdir mnt");
        std::fs::create_dir(dir.path().join("backing")).expect("mkdir backing");
        let fs = PowerFs::mount(&dir.path().join("mnt"), &dir.path().join("backing"))
            .expect("mount the power-loss file system");
        Some(Fixture { fs: Some(fs), dir })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join("mnt").join(name)
    }

    fn cut(&self, mode: CutMode) -> CutReport {
        self.fs
            .as_ref()
            .expect("mounted")
            .power_cut(mode)
            .expect("power cut")
    }

    fn pending(&self) -> usize {
        self.fs.as_ref().expect("mounted").pending()
    }

    /// Creates `name` with `bytes`, durably (file and directory synced).
    fn durable_file(&self, name: &str, bytes: &[u8]) {
        let mut f = File::create(self.path(name)).expect("create");
        f.write_all(bytes).expect("write");
        f.sync_all().expect("fsync");
        sync_dir(&self.path(name).parent().expect("a parent").to_path_buf());
    }

    fn read(&self, name: &str) -> Option<Vec<u8>> {
        std::fs::read(self.path(name)).ok()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // Unmount before the temporary directory goes.
        if let Some(fs) = self.fs.take() {
            fs.unmount().expect("unmount");
        }
    }
}

fn sync_dir(dir: &PathBuf) {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .expect("fsync directory");
}

#[test]
fn unsynced_writes_are_lost_and_fsynced_ones_kept() {
    let Some(fx) = Fixture::new("unsynced_writes") else {
        return;
    };
    fx.durable_file("f", b"");
    let mut f = OpenOptions::new().append(true).open(fx.path("f")).unwrap();
    f.write_all(b"durable ").unwrap();
    f.sync_all().unwrap();
    f.write_all(b"lost").unwrap();
    drop(f);
    // An overwrite (not through O_APPEND, which would append).
    let f = OpenOptions::new().write(true).open(fx.path("f")).unwrap();
    f.write_at(b"X", 0).unwrap();
    drop(f);
    assert_eq!(
        fx.read("f").unwrap(),
        b"Xurable lost",
        "reads see every write"
    );
    assert!(fx.pending() > 0);
    let report = fx.cut(CutMode::DropAll);
    assert_eq!(report.data_undone, 2);
    assert_eq!(fx.read("f").unwrap(), b"durable ");
    assert_eq!(fx.pending(), 0);
}

#[test]
fn fdatasync_keeps_data() {
    let Some(fx) = Fixture::new("fdatasync") else {
        return;
    };
    fx.durable_file("f", b"a");
    let f = OpenOptions::new().write(true).open(fx.path("f")).unwrap();
    f.write_all_at(b"bc", 1).unwrap();
    f.sync_data().unwrap();
    f.write_all_at(b"d", 3).unwrap();
    drop(f);
    fx.cut(CutMode::DropAll);
    assert_eq!(fx.read("f").unwrap(), b"abc");
}

#[test]
fn a_created_file_needs_its_directory_synced() {
    let Some(fx) = Fixture::new("create") else {
        return;
    };
    // Two directories: a directory's fsync makes every name in it durable.
    for d in ["d", "e"] {
        std::fs::create_dir(fx.path(d)).unwrap();
    }
    sync_dir(&fx.path(""));
    for name in ["d/unnamed", "e/named"] {
        let mut f = File::create(fx.path(name)).unwrap();
        f.write_all(b"data").unwrap();
        f.sync_all().unwrap();
    }
    sync_dir(&fx.path("e"));
    fx.cut(CutMode::DropAll);
    assert_eq!(fx.read("d/unnamed"), None, "file fsync alone keeps no name");
    assert_eq!(fx.read("e/named").unwrap(), b"data");
}

#[test]
fn a_new_directory_and_its_files_vanish_without_the_parent_synced() {
    let Some(fx) = Fixture::new("mkdir") else {
        return;
    };
    std::fs::create_dir(fx.path("d")).unwrap();
    fx.durable_file("d/f", b"data");
    fx.cut(CutMode::DropAll);
    assert!(!fx.path("d").exists());
    std::fs::create_dir(fx.path("d")).unwrap();
    sync_dir(&fx.path(""));
    fx.durable_file("d/f", b"data");
    fx.cut(CutMode::DropAll);
    assert_eq!(fx.read("d/f").unwrap(), b"data");
}

#[test]
fn a_rename_without_a_directory_sync_is_undone() {
    let Some(fx) = Fixture::new("rename") else {
        return;
    };
    fx.durable_file("a", b"A");
    fx.durable_file("b", b"B");
    std::fs::rename(fx.path("a"), fx.path("b")).unwrap();
    assert_eq!(fx.read("b").unwrap(), b"A");
    fx.cut(CutMode::DropAll);
    assert_eq!(fx.read("a").unwrap(), b"A", "the old name is back");
    assert_eq!(fx.read("b").unwrap(), b"B", "the replaced file is back");
    std::fs::rename(fx.path("a"), fx.path("b")).unwrap();
    sync_dir(&fx.path(""));
    fx.cut(CutMode::DropAll);
    assert_eq!(fx.read("a"), None);
    assert_eq!(fx.read("b").unwrap(), b"A");
    let names: Vec<_> = std::fs::read_dir(fx.path("")).unwrap().collect();
    assert_eq!(names.len(), 1, "only b, and no trash: {names:?}");
}

#[test]
fn unlink_and_rmdir_are_undone_without_a_directory_sync() {
    let Some(fx) = Fixture::new("unlink") else {
        return;
    };
    std::fs::create_dir(fx.path("d")).unwrap();
    sync_dir(&fx.path(""));
    fx.durable_file("f", b"F");
    std::fs::remove_file(fx.path("f")).unwrap();
    std::fs::remove_dir(fx.path("d")).unwrap();
    assert!(!fx.path("f").exists() && !fx.path("d").exists());
    fx.cut(CutMode::DropAll);
    assert_eq!(fx.read("f").unwrap(), b"F");
    assert!(fx.path("d").is_dir());
    std::fs::remove_file(fx.path("f")).unwrap();
    sync_dir(&fx.path(""));
    fx.cut(CutMode::DropAll);
    assert!(!fx.path("f").exists());
}

#[test]
fn truncate_is_undone_without_a_sync() {
    let Some(fx) = Fixture::new("truncate") else {
        return;
    };
    let bytes: Vec<u8> = (0..8192u32).map(|i| i as u8).collect();
    fx.durable_file("f", &bytes);
    let f = OpenOptions::new().write(true).open(fx.path("f")).unwrap();
    f.set_len(100).unwrap();
    drop(f);
    fx.cut(CutMode::DropAll);
    assert_eq!(fx.read("f").unwrap(), bytes);
    let f = OpenOptions::new().write(true).open(fx.path("f")).unwrap();
    f.set_len(100).unwrap();
    f.sync_data().unwrap();
    drop(f);
    // O_TRUNC is a truncate too.
    File::create(fx.path("f")).unwrap();
    assert_eq!(fx.read("f").unwrap().len(), 0);
    fx.cut(CutMode::DropAll);
    assert_eq!(fx.read("f").unwrap(), &bytes[..100]);
}

/// A 4 KiB-aligned buffer for O_DIRECT.
struct Aligned(Vec<u8>, usize);

impl Aligned {
    fn filled(byte: u8) -> Aligned {
        let mut v = vec![byte; 8192];
        let skip = v.as_ptr().align_offset(4096);
        v.truncate(skip + 4096);
        Aligned(v, skip)
    }

    fn bytes(&self) -> &[u8] {
        &self.0[self.1..]
    }
}

#[test]
fn o_direct_writes_need_fdatasync() {
    let Some(fx) = Fixture::new("o_direct") else {
        return;
    };
    fx.durable_file("f", b"");
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(fx.path("f"))
        .expect("O_DIRECT open through FUSE");
    f.write_all_at(Aligned::filled(1).bytes(), 0).unwrap();
    f.sync_data().unwrap();
    f.write_all_at(Aligned::filled(2).bytes(), 4096).unwrap();
    let mut back = Aligned::filled(0);
    let skip = back.1;
    f.read_exact_at(&mut back.0[skip..], 4096).unwrap();
    assert_eq!(back.bytes(), Aligned::filled(2).bytes(), "O_DIRECT reads");
    drop(f);
    fx.cut(CutMode::DropAll);
    assert_eq!(fx.read("f").unwrap(), Aligned::filled(1).bytes());
}

#[test]
fn io_uring_direct_writes_need_fdatasync() {
    let Some(fx) = Fixture::new("io_uring") else {
        return;
    };
    fx.durable_file("f", b"");
    let path = fx.path("f");
    // glommio's DMA files: O_DIRECT, reads and writes through io_uring,
    // fdatasync through io_uring, as pinlog's segments.
    let read_back = glommio::LocalExecutorBuilder::default()
        .spawn(move || async move {
            let file = glommio::io::OpenOptions::new()
                .read(true)
                .write(true)
                .dma_open(&path)
                .await
                .expect("dma open");
            for (i, byte) in [1u8, 2].into_iter().enumerate() {
                let mut buf = file.alloc_dma_buffer(4096);
                buf.as_bytes_mut().fill(byte);
                file.write_at(buf, i as u64 * 4096)
                    .await
                    .expect("dma write");
                if byte == 1 {
                    file.fdatasync().await.expect("fdatasync");
                }
            }
            let read = file.read_at_aligned(4096, 4096).await.expect("dma read");
            let read = read.to_vec();
            file.close().await.expect("close");
            read
        })
        .expect("start an executor")
        .join()
        .expect("the executor's thread");
    assert_eq!(read_back, vec![2u8; 4096], "io_uring O_DIRECT reads");
    fx.cut(CutMode::DropAll);
    assert_eq!(fx.read("f").unwrap(), vec![1u8; 4096]);
}

#[test]
fn stores_to_a_shared_mapping_need_a_sync() {
    let Some(fx) = Fixture::new("mmap") else {
        return;
    };
    fx.durable_file("f", &[0u8; 8192]);
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(fx.path("f"))
        .unwrap();
    // SAFETY: no one else maps or truncates the file during the test.
    let mut map = unsafe { memmap2::MmapMut::map_mut(&f) }.expect("mmap through FUSE");
    map[0] = 1;
    map.flush().expect("msync");
    f.sync_data().unwrap();
    map[4096] = 2;
    drop(map);
    drop(f);
    fx.cut(CutMode::DropAll);
    let after = fx.read("f").unwrap();
    assert_eq!((after[0], after[4096]), (1, 0));
}

#[test]
fn a_write_cache_keeps_a_prefix_of_each_files_writes() {
    let Some(fx) = Fixture::new("write_cache") else {
        return;
    };
    let mut lengths = std::collections::BTreeSet::new();
    for seed in 0..16u64 {
        fx.durable_file("f", b"");
        let mut f = OpenOptions::new().append(true).open(fx.path("f")).unwrap();
        for c in b"abcdefgh" {
            f.write_all(&[*c]).unwrap();
        }
        drop(f);
        let report = fx.cut(CutMode::KeepRandomPrefix { seed });
        let after = fx.read("f").unwrap();
        assert_eq!(after, b"abcdefgh"[..after.len()], "seed {seed}: a prefix");
        assert_eq!(report.data_kept, after.len(), "seed {seed}");
        lengths.insert(after.len());
    }
    assert!(
        lengths.len() > 3,
        "the prefix varies with the seed: {lengths:?}"
    );
}

#[test]
fn the_mount_shows_the_backing_directory_without_its_trash() {
    let Some(fx) = Fixture::new("pass_through") else {
        return;
    };
    fx.durable_file("f", b"F");
    std::fs::remove_file(fx.path("f")).unwrap();
    fx.durable_file("g", b"G");
    let names: Vec<String> = std::fs::read_dir(fx.path(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["g".to_string()]);
    assert!(fx.dir.path().join("backing/g").exists(), "written through");
}
