//! What the power-loss tests share (`tests/broker/power_loss.rs`,
//! `tests/clusters/replication_power_loss.rs`): the seed that replays a run's cuts, the
//! cut modes drawn from it, and a power-loss file system mounted in a
//! temporary directory of its own.

use std::path::PathBuf;

use pinlog_powerfs::{CutMode, PowerFs};

/// Replays a run: the seed of its random choices.
pub const SEED_ENV: &str = "PINLOG_POWER_LOSS_SEED";

/// splitmix64: every choice of a run replays from its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Half the cuts model a disk with a write cache: a random prefix of
    /// each file's unsynced writes survives (torn tails). The others drop
    /// every unsynced change.
    pub fn cut_mode(&mut self) -> CutMode {
        if self.next() % 2 == 0 {
            CutMode::DropAll
        } else {
            CutMode::KeepRandomPrefix { seed: self.next() }
        }
    }
}

/// The seed [`SEED_ENV`] names, or a new one from the clock.
pub fn seed_from_env() -> u64 {
    std::env::var(SEED_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
}

/// A power-loss file system over a backing directory, both in a new
/// temporary directory (named with `prefix`). After a test's panic the
/// directory is kept, and its path printed: the backing directory holds
/// the data as the file system last served it.
pub struct PowerDisk {
    fs: Option<PowerFs>,
    /// Where a broker's data directory goes, inside the mount.
    pub data: PathBuf,
    dir: Option<tempfile::TempDir>,
}

impl PowerDisk {
    pub fn mount(prefix: &str) -> PowerDisk {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .expect("a temporary directory");
        let (mnt, backing) = (dir.path().join("mnt"), dir.path().join("backing"));
        std::fs::create_dir(&mnt).expect("mkdir mnt");
        std::fs::create_dir(&backing).expect("mkdir backing");
        let fs = PowerFs::mount(&mnt, &backing).expect("mount the power-loss file system");
        PowerDisk {
            fs: Some(fs),
            data: mnt.join("data"),
            dir: Some(dir),
        }
    }

    pub fn fs(&self) -> &PowerFs {
        self.fs.as_ref().expect("mounted until dropped")
    }

    /// Unmounts, checking that the file system ended cleanly.
    pub fn unmount(mut self) {
        if let Some(fs) = self.fs.take() {
            fs.unmount().expect("unmount");
        }
    }
}

impl Drop for PowerDisk {
    fn drop(&mut self) {
        // Unmounted first (the file system's own drop), then the directory.
        drop(self.fs.take());
        if std::thread::panicking() {
            if let Some(dir) = self.dir.take() {
                eprintln!(
                    "kept the power-loss disk for inspection (the data under backing/): {}",
                    dir.keep().display()
                );
            }
        }
    }
}
