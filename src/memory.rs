//! How much memory the read cache may use: a ceiling from the machine's
//! memory (or less when a cgroup, a container or a systemd slice, limits
//! it), and below it a budget that follows the memory that is really free,
//! as the kernel's page cache does for Kafka.
//!
//! Kafka serves a consumer minutes behind from all the memory the machine
//! has free, and the kernel takes that memory back the moment anything
//! else needs it. pinlog's cache is the process's own memory, which the
//! kernel cannot take back; so each shard watches the machine instead
//! (`shard::cache_budget`, once a second) and gives memory back itself.
//!
//! The decision is [`cache_budget`]: a pure function of one
//! [`MemoryReading`] (`/proc/meminfo`, the cgroup's files, pressure stall
//! information) and the shard's cache, unit-tested below. The reading is
//! [`read_memory`]: a few small reads of `/proc` and `/sys` files, which
//! the kernel answers from memory without blocking.
//!
//! The rules, per shard (each shard takes an even share of the free
//! memory, so the shards need not talk to each other):
//! - **Free memory above a headroom may be cached.** The budget is what the
//!   cache holds now plus its share of the free memory beyond
//!   [`headroom_bytes`] (an eighth of the limit, at least
//!   `READ_CACHE_HEADROOM_MIN_BYTES`). The cache's own growth does not move
//!   it (what the cache takes, the free memory loses); another process's
//!   growth lowers it at once.
//! - **Pressure gives memory back even when the counts look fine.** With
//!   the memory pressure (PSI `some avg10`) at `READ_CACHE_PSI_SHRINK_PERCENT`
//!   or more, the budget drops below what the cache holds, by an eighth a
//!   second; at `READ_CACHE_PSI_HOLD_PERCENT` it does not grow.
//! - **Bounds.** Never above the ceiling; never below
//!   `READ_CACHE_FLOOR_BYTES` a shard (tailing readers and followers are
//!   served from it), unless the ceiling itself is lower.
//!
//! An operator's `read.cache.bytes` is the ceiling instead of the default,
//! and stays a hard cap. The budget still shrinks below it when the machine
//! runs short: a cap is a promise not to use more, not a reservation, and
//! a cache that held on while the machine ran out of memory would get the
//! broker killed.

use crate::cgroup::CgroupDir;
use crate::constants::{
    READ_CACHE_CEILING_SPARE_DIVISOR, READ_CACHE_FALLBACK_BYTES, READ_CACHE_FLOOR_BYTES,
    READ_CACHE_HEADROOM_DIVISOR, READ_CACHE_HEADROOM_MIN_BYTES, READ_CACHE_PSI_HOLD_PERCENT,
    READ_CACHE_PSI_SHRINK_PERCENT, READ_CACHE_SHRINK_DIVISOR,
};

/// What the machine says about its memory at one moment. Every field the
/// process could not read is `None` (and the rule that needs it is
/// skipped).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MemoryReading {
    /// `MemTotal` of `/proc/meminfo`.
    pub mem_total_bytes: Option<u64>,
    /// `MemAvailable`: free memory plus what the kernel can reclaim.
    pub mem_available_bytes: Option<u64>,
    /// The cgroup's hard limit: `memory.max` (v2), `memory.limit_in_bytes`
    /// (v1). `None` when unlimited.
    pub cgroup_max_bytes: Option<u64>,
    /// `memory.high` (v2): where the kernel throttles and reclaims.
    pub cgroup_high_bytes: Option<u64>,
    /// What the cgroup uses and cannot easily give back: `memory.current`
    /// (v1: `usage_in_bytes`) less the inactive file cache.
    pub cgroup_used_bytes: Option<u64>,
    /// Memory pressure: the percentage of the last 10 s in which some task
    /// stalled on memory (`some avg10`), the cgroup's when it has one.
    pub pressure_some_avg10: Option<f64>,
}

impl MemoryReading {
    /// The memory this process may use: the smallest of the machine's and
    /// the cgroup's limits.
    pub fn limit_bytes(&self) -> Option<u64> {
        [
            self.mem_total_bytes,
            self.cgroup_max_bytes,
            self.cgroup_high_bytes,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The memory free for the taking: the machine's `MemAvailable`, or
    /// less when the cgroup is nearer its limit.
    pub fn free_bytes(&self) -> Option<u64> {
        let cgroup = match (self.cgroup_max_bytes, self.cgroup_high_bytes) {
            (None, None) => None,
            (max, high) => {
                let limit = max.into_iter().chain(high).min()?;
                Some(limit.saturating_sub(self.cgroup_used_bytes.unwrap_or(0)))
            }
        };
        match (self.mem_available_bytes, cgroup) {
            (Some(a), Some(c)) => Some(a.min(c)),
            (a, c) => a.or(c),
        }
    }
}

/// Memory the cache leaves free for everything else (connections, indexes,
/// other processes): an eighth of the limit, at least
/// `READ_CACHE_HEADROOM_MIN_BYTES`, at most half the limit.
pub fn headroom_bytes(limit_bytes: u64) -> u64 {
    (limit_bytes / READ_CACHE_HEADROOM_DIVISOR)
        .max(READ_CACHE_HEADROOM_MIN_BYTES)
        .min(limit_bytes / 2)
}

/// The read cache's size for the whole broker when `read.cache.bytes` is
/// not set, from one reading: the limit less a quarter of it
/// (`READ_CACHE_CEILING_SPARE_DIVISOR`). It is a ceiling: the budget under
/// it follows the free memory.
pub fn default_ceiling_bytes(reading: &MemoryReading) -> u64 {
    match reading.limit_bytes() {
        Some(limit) => limit - limit / READ_CACHE_CEILING_SPARE_DIVISOR,
        None => READ_CACHE_FALLBACK_BYTES as u64,
    }
}

/// One shard's cache, as the budget decision sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardCache {
    /// The memory its batches keep alive now.
    pub used_bytes: u64,
    /// Its budget now.
    pub budget_bytes: u64,
    /// The most it may ever hold: its share of `read.cache.bytes`, or of
    /// the default ceiling.
    pub ceiling_bytes: u64,
    /// The shards sharing the free memory evenly.
    pub shards: u64,
}

/// The shard's cache budget given what the machine says now (see the
/// module's rules). Pure: the shard's watch reads the files around it.
pub fn cache_budget(reading: &MemoryReading, cache: ShardCache) -> u64 {
    let shards = cache.shards.max(1);
    let floor = (READ_CACHE_FLOOR_BYTES / shards).min(cache.ceiling_bytes);
    let mut budget = match (reading.free_bytes(), reading.limit_bytes()) {
        (Some(free), Some(limit)) => {
            let spare = free as i128 - headroom_bytes(limit) as i128;
            (cache.used_bytes as i128 + spare / shards as i128).max(0) as u64
        }
        // Nothing to go by: the ceiling, as before the watch.
        _ => cache.ceiling_bytes,
    };
    match reading.pressure_some_avg10 {
        Some(p) if p >= READ_CACHE_PSI_SHRINK_PERCENT => {
            let smaller = cache.used_bytes - cache.used_bytes / READ_CACHE_SHRINK_DIVISOR;
            budget = budget.min(smaller);
        }
        Some(p) if p >= READ_CACHE_PSI_HOLD_PERCENT => {
            budget = budget.min(cache.budget_bytes.max(floor));
        }
        _ => {}
    }
    let budget = budget.clamp(floor, cache.ceiling_bytes);
    debug_assert!(budget <= cache.ceiling_bytes);
    budget
}

/// Reads the machine's memory now. Each file is small and answered from
/// kernel memory; a missing file leaves its fields `None`.
pub fn read_memory() -> MemoryReading {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let cgroup = memory_cgroup();
    let pressure = cgroup
        .as_ref()
        .and_then(cgroup_pressure)
        .or_else(|| read_pressure("/proc/pressure/memory"));
    MemoryReading {
        mem_total_bytes: meminfo_bytes(&meminfo, "MemTotal:"),
        mem_available_bytes: meminfo_bytes(&meminfo, "MemAvailable:"),
        cgroup_max_bytes: cgroup.as_ref().and_then(cgroup_max_bytes),
        cgroup_high_bytes: cgroup.as_ref().and_then(cgroup_high_bytes),
        cgroup_used_bytes: cgroup.as_ref().and_then(cgroup_used_bytes),
        pressure_some_avg10: pressure,
    }
}

/// The read cache's ceiling for the whole broker when `read.cache.bytes`
/// is not set.
pub fn default_read_cache_bytes() -> usize {
    usize::try_from(default_ceiling_bytes(&read_memory())).unwrap_or(usize::MAX)
}

/// A `/proc/meminfo` field, in bytes.
fn meminfo_bytes(meminfo: &str, field: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// `some avg10` of a pressure file.
fn read_pressure(path: &str) -> Option<f64> {
    parse_pressure(&std::fs::read_to_string(path).ok()?)
}

fn parse_pressure(text: &str) -> Option<f64> {
    let some = text.lines().find(|l| l.starts_with("some "))?;
    let avg10 = some
        .split_whitespace()
        .find_map(|f| f.strip_prefix("avg10="))?;
    avg10.parse().ok()
}

/// A limit file: a number, or `max` (v2) or a number past any machine's
/// memory (v1's "unlimited") for none.
fn parse_limit(text: &str) -> Option<u64> {
    const UNLIMITED_ABOVE: u64 = 1 << 60;
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|&n| n < UNLIMITED_ABOVE)
}

/// A field of a cgroup's `memory.stat`.
fn stat_field(stat: &str, field: &str) -> Option<u64> {
    stat.lines().find_map(|l| {
        let mut parts = l.split_whitespace();
        (parts.next() == Some(field)).then(|| parts.next()?.parse().ok())?
    })
}

/// This process's memory cgroup: the v1 memory hierarchy when it is
/// mounted, else the v2 one.
fn memory_cgroup() -> Option<CgroupDir> {
    CgroupDir::find("memory", "memory.limit_in_bytes")
}

fn cgroup_max_bytes(cgroup: &CgroupDir) -> Option<u64> {
    parse_limit(&cgroup.read(match cgroup.v2 {
        true => "memory.max",
        false => "memory.limit_in_bytes",
    })?)
}

fn cgroup_high_bytes(cgroup: &CgroupDir) -> Option<u64> {
    parse_limit(&cgroup.read("memory.high").filter(|_| cgroup.v2)?)
}

fn cgroup_used_bytes(cgroup: &CgroupDir) -> Option<u64> {
    let current = cgroup
        .read(match cgroup.v2 {
            true => "memory.current",
            false => "memory.usage_in_bytes",
        })?
        .trim()
        .parse::<u64>()
        .ok()?;
    let inactive_file = cgroup
        .read("memory.stat")
        .and_then(|s| stat_field(&s, "inactive_file"))
        .unwrap_or(0);
    Some(current.saturating_sub(inactive_file))
}

fn cgroup_pressure(cgroup: &CgroupDir) -> Option<f64> {
    parse_pressure(&cgroup.read("memory.pressure").filter(|_| cgroup.v2)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;
    const GIB: u64 = 1024 * MIB;

    /// A 24 GiB machine, no cgroup limit, no pressure, `available` free.
    fn machine(available: u64) -> MemoryReading {
        MemoryReading {
            mem_total_bytes: Some(24 * GIB),
            mem_available_bytes: Some(available),
            ..MemoryReading::default()
        }
    }

    fn shard(used: u64, budget: u64) -> ShardCache {
        ShardCache {
            used_bytes: used,
            budget_bytes: budget,
            ceiling_bytes: 9 * GIB,
            shards: 2,
        }
    }

    #[test]
    fn reads_meminfo_pressure_and_limits() {
        let text = "MemTotal:       24584172 kB\nMemFree:        1000 kB\n\
                    MemAvailable:   2000 kB\n";
        assert_eq!(meminfo_bytes(text, "MemTotal:"), Some(24584172 * 1024));
        assert_eq!(meminfo_bytes(text, "MemAvailable:"), Some(2000 * 1024));
        assert_eq!(meminfo_bytes("MemFree: 1 kB\n", "MemTotal:"), None);
        let psi = "some avg10=12.34 avg60=1.00 avg300=0.00 total=99\n\
                   full avg10=0.50 avg60=0.00 avg300=0.00 total=9\n";
        assert_eq!(parse_pressure(psi), Some(12.34));
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("9223372036854771712\n"), None, "v1 unlimited");
        assert_eq!(parse_limit("4294967296\n"), Some(4 * GIB));
        let stat = "active_file 10\ninactive_file 4096\nfile 9\n";
        assert_eq!(stat_field(stat, "inactive_file"), Some(4096));
        assert_eq!(stat_field(stat, "total_inactive_file"), None);
    }

    #[test]
    fn the_limit_is_the_smallest_of_the_machine_and_the_cgroup() {
        let mut r = machine(20 * GIB);
        assert_eq!(r.limit_bytes(), Some(24 * GIB));
        assert_eq!(default_ceiling_bytes(&r), 18 * GIB);
        r.cgroup_max_bytes = Some(8 * GIB);
        r.cgroup_high_bytes = Some(6 * GIB);
        r.cgroup_used_bytes = Some(2 * GIB);
        assert_eq!(r.limit_bytes(), Some(6 * GIB));
        // The cgroup has 4 GiB left before memory.high, less than the
        // machine's 20: the cgroup's counts.
        assert_eq!(r.free_bytes(), Some(4 * GIB));
        assert_eq!(default_ceiling_bytes(&r), 6 * GIB / 4 * 3);
        let unknown = MemoryReading::default();
        assert_eq!(
            default_ceiling_bytes(&unknown),
            READ_CACHE_FALLBACK_BYTES as u64
        );
    }

    #[test]
    fn free_memory_above_the_headroom_is_shared_by_the_shards() {
        // 24 GiB: a 3 GiB headroom. 11 GiB free: 8 GiB spare, 4 per shard.
        let b = cache_budget(&machine(11 * GIB), shard(GIB, GIB));
        assert_eq!(b, 5 * GIB);
        // The caches' own growth (2 GiB on each shard) leaves the budget
        // where it was.
        let b = cache_budget(&machine(7 * GIB), shard(3 * GIB, 5 * GIB));
        assert_eq!(b, 5 * GIB);
        // Plenty free: the ceiling.
        assert_eq!(cache_budget(&machine(23 * GIB), shard(0, 0)), 9 * GIB);
    }

    #[test]
    fn another_process_taking_memory_shrinks_the_budget_below_what_is_cached() {
        // 1 GiB free, 2 GiB short of the headroom: each shard gives 1 back.
        let b = cache_budget(&machine(GIB), shard(4 * GIB, 6 * GIB));
        assert_eq!(b, 3 * GIB);
        // Never below the floor.
        let b = cache_budget(&machine(0), shard(MIB, 6 * GIB));
        assert_eq!(b, READ_CACHE_FLOOR_BYTES / 2);
    }

    #[test]
    fn pressure_gives_memory_back_and_then_holds_it() {
        let mut r = machine(20 * GIB);
        r.pressure_some_avg10 = Some(READ_CACHE_PSI_SHRINK_PERCENT);
        // Plenty looks free, but tasks stall: give back an eighth.
        let b = cache_budget(&r, shard(8 * GIB, 9 * GIB));
        assert_eq!(b, 7 * GIB);
        r.pressure_some_avg10 = Some(READ_CACHE_PSI_HOLD_PERCENT);
        assert_eq!(
            cache_budget(&r, shard(7 * GIB, 7 * GIB)),
            7 * GIB,
            "no growth"
        );
        r.pressure_some_avg10 = Some(0.0);
        assert_eq!(
            cache_budget(&r, shard(7 * GIB, 7 * GIB)),
            9 * GIB,
            "grows back"
        );
    }

    #[test]
    fn an_operators_cap_is_never_exceeded_but_may_be_undercut() {
        let capped = ShardCache {
            ceiling_bytes: 512 * MIB,
            ..shard(0, 512 * MIB)
        };
        assert_eq!(cache_budget(&machine(23 * GIB), capped), 512 * MIB);
        let low = ShardCache {
            used_bytes: 512 * MIB,
            ..capped
        };
        assert_eq!(
            cache_budget(&machine(GIB), low),
            READ_CACHE_FLOOR_BYTES / 2,
            "the machine ran short"
        );
        // A cap below the floor stays the cap; zero stays off.
        let tiny = ShardCache {
            ceiling_bytes: MIB,
            ..shard(0, MIB)
        };
        assert_eq!(cache_budget(&machine(0), tiny), MIB);
        let off = ShardCache {
            ceiling_bytes: 0,
            ..shard(0, 0)
        };
        assert_eq!(cache_budget(&machine(23 * GIB), off), 0);
    }

    #[test]
    fn without_readings_the_budget_is_the_ceiling() {
        assert_eq!(
            cache_budget(&MemoryReading::default(), shard(GIB, GIB)),
            9 * GIB
        );
    }

    #[test]
    fn this_machine_reads() {
        let r = read_memory();
        let limit = r.limit_bytes().expect("Linux reports its memory");
        assert!(r.free_bytes().is_some_and(|f| f <= limit));
        let ceiling = default_read_cache_bytes() as u64;
        assert!(ceiling > 0 && ceiling <= limit);
    }

    use crate::cgroup::tests::write;

    /// The memory cgroup `text` names, under `root`.
    fn files_in(text: &str, root: &std::path::Path) -> Option<CgroupDir> {
        CgroupDir::find_in(text, root, "memory", "memory.limit_in_bytes")
    }

    #[test]
    fn finds_a_v2_cgroup_below_the_mount_and_reads_its_files() {
        let root = tempfile::tempdir().unwrap();
        write(root.path(), "cgroup.controllers", "cpu memory\n");
        let dir = root.path().join("system.slice/pinlog.service");
        write(&dir, "memory.max", "4294967296\n");
        write(&dir, "memory.high", "max\n");
        write(&dir, "memory.current", "1073741824\n");
        write(&dir, "memory.stat", "anon 1\ninactive_file 268435456\n");
        write(
            &dir,
            "memory.pressure",
            "some avg10=2.50 avg60=0 avg300=0 total=1\n",
        );
        let c = files_in("0::/system.slice/pinlog.service\n", root.path()).unwrap();
        assert!(c.v2);
        assert_eq!(cgroup_max_bytes(&c), Some(4 * GIB));
        assert_eq!(cgroup_high_bytes(&c), None);
        assert_eq!(
            cgroup_used_bytes(&c),
            Some(768 * MIB),
            "less the inactive file cache"
        );
        assert_eq!(cgroup_pressure(&c), Some(2.5));
        // Inside a cgroup namespace the path is the mount's root.
        write(root.path(), "memory.max", "max\n");
        let c = files_in("0::/\n", root.path()).unwrap();
        assert_eq!((c.dir.as_path(), cgroup_max_bytes(&c)), (root.path(), None));
    }

    #[test]
    fn finds_a_v1_memory_cgroup_and_falls_back_to_its_mount() {
        let root = tempfile::tempdir().unwrap();
        let mount = root.path().join("memory");
        write(&mount, "memory.limit_in_bytes", "9223372036854771712\n");
        let dir = mount.join("process_api/abc");
        write(&dir, "memory.limit_in_bytes", "2147483648\n");
        write(&dir, "memory.usage_in_bytes", "1073741824\n");
        write(&dir, "memory.stat", "cache 5\ninactive_file 1073741824\n");
        let text = "5:devices:/\n4:memory:/process_api/abc\n0::/\n";
        let c = files_in(text, root.path()).unwrap();
        assert!(!c.v2);
        assert_eq!(cgroup_max_bytes(&c), Some(2 * GIB));
        assert_eq!(cgroup_used_bytes(&c), Some(0));
        assert_eq!(
            (cgroup_high_bytes(&c), cgroup_pressure(&c)),
            (None, None),
            "v2 only"
        );
        // A path that is not mounted here: the mount's own (unlimited) files.
        let c = files_in("4:memory:/elsewhere\n", root.path()).unwrap();
        assert_eq!((c.dir.clone(), cgroup_max_bytes(&c)), (mount, None));
        assert!(files_in("1:cpu:/\n", root.path()).is_none());
    }
}
