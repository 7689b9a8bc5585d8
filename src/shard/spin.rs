//! How long an idle shard spins before it parks in the kernel, when
//! `shard.spin.before.park.us` is not set: it spins only on cores the
//! broker has to itself.
//!
//! A shard that spins answers the next cross-core hop in microseconds
//! rather than a wake-up later (`cargo bench --bench storage -- hop`: p99
//! 30 µs spinning 50 µs, 1.6 ms parking at once). On a core that serves
//! the broker alone that costs nobody anything. On a core the scheduler
//! also gives to clients, other services or other brokers, the spin is
//! CPU taken from them: 0.1–0.5 of a core per shard at moderate load, for
//! no measurable gain in produce latency there (`tuning/README.md`, "Spin
//! before park"). Under a CPU quota (a container's CPU limit) it is worse:
//! the spin spends the quota, and the kernel then stops the whole broker
//! until the next period.
//!
//! The kernel says when a core is reserved: CPUs isolated from the
//! scheduler (`isolcpus`, `/sys/devices/system/cpu/isolated`), or a cgroup
//! cpuset whose CPUs are the process's alone (cgroup v2's
//! `cpuset.cpus.partition` of `root` or `isolated`, v1's
//! `cpuset.cpu_exclusive`). Only then, with every shard on a CPU of its
//! own and no CPU quota, does a shard spin. The decision is [`choose`], a
//! pure function of one [`CpuReading`]; [`read_cpu`] reads the files.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::cgroup::CgroupDir;
use crate::constants::RESERVED_CORE_SPIN_BEFORE_PARK_US;

/// Where the kernel lists the CPUs isolated from the scheduler.
const ISOLATED_CPUS_PATH: &str = "/sys/devices/system/cpu/isolated";

/// What the machine says about the CPUs this process runs on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuReading {
    /// CPUs isolated from the scheduler's load balancing (`isolcpus`):
    /// nothing runs there unless pinned there.
    pub isolated: BTreeSet<usize>,
    /// The process's cpuset cgroup holds its CPUs exclusively.
    pub exclusive_cpuset: bool,
    /// The process's cgroup limits its CPU time (v2 `cpu.max`, v1
    /// `cpu.cfs_quota_us`).
    pub cpu_quota: bool,
}

/// The spin chosen, and why, for the startup log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpinChoice {
    pub spin: Duration,
    pub reason: &'static str,
}

/// The spin before park for shards on `shard_cpus` (one entry per shard):
/// `explicit` when the operator set `shard.spin.before.park.us`, else
/// [`RESERVED_CORE_SPIN_BEFORE_PARK_US`] when every shard has a reserved
/// CPU of its own and no quota limits the process, else none.
pub fn choose(explicit: Option<u64>, shard_cpus: &[usize], reading: &CpuReading) -> SpinChoice {
    let none = |reason| SpinChoice {
        spin: Duration::ZERO,
        reason,
    };
    if let Some(us) = explicit {
        return SpinChoice {
            spin: Duration::from_micros(us),
            reason: "shard.spin.before.park.us is set",
        };
    }
    if reading.cpu_quota {
        return none("a CPU quota limits the process: spinning would spend it");
    }
    let distinct: BTreeSet<usize> = shard_cpus.iter().copied().collect();
    if distinct.len() < shard_cpus.len() {
        return none("shards share CPUs");
    }
    let reserved = |cpu| reading.exclusive_cpuset || reading.isolated.contains(cpu);
    if shard_cpus.is_empty() || !distinct.iter().all(reserved) {
        return none("the shards' CPUs are shared with other processes");
    }
    SpinChoice {
        spin: Duration::from_micros(RESERVED_CORE_SPIN_BEFORE_PARK_US),
        reason: match reading.exclusive_cpuset {
            true => "the process's cpuset holds its CPUs exclusively",
            false => "the shards' CPUs are isolated from the scheduler (isolcpus)",
        },
    }
}

/// Reads the machine's CPU reservations now.
pub fn read_cpu() -> CpuReading {
    let isolated = std::fs::read_to_string(ISOLATED_CPUS_PATH)
        .map(|text| parse_cpu_list(&text))
        .unwrap_or_default();
    let cpuset = CgroupDir::find("cpuset", "cpuset.cpus");
    let cpu = CgroupDir::find("cpu", "cpu.cfs_quota_us");
    CpuReading {
        isolated,
        exclusive_cpuset: cpuset.as_ref().is_some_and(exclusive_cpuset),
        cpu_quota: cpu.as_ref().is_some_and(cpu_quota),
    }
}

/// Whether a cpuset cgroup holds its CPUs exclusively. The root cgroup
/// holds every CPU of the machine, which says nothing of this process.
fn exclusive_cpuset(cgroup: &CgroupDir) -> bool {
    if cgroup.is_root() {
        return false;
    }
    if cgroup.v2 {
        // "root" or "isolated", possibly followed by " invalid (...)" when
        // the kernel could not grant it.
        let partition = cgroup.read("cpuset.cpus.partition").unwrap_or_default();
        let partition = partition.trim();
        return partition == "root" || partition == "isolated";
    }
    cgroup
        .read("cpuset.cpu_exclusive")
        .as_deref()
        .map(str::trim)
        == Some("1")
}

/// Whether a cpu cgroup limits the process's CPU time.
fn cpu_quota(cgroup: &CgroupDir) -> bool {
    if cgroup.v2 {
        // "max 100000" for none, "QUOTA PERIOD" for a limit.
        let max = cgroup.read("cpu.max").unwrap_or_default();
        return max.split_whitespace().next().is_some_and(|q| q != "max");
    }
    let quota = cgroup.read("cpu.cfs_quota_us").unwrap_or_default();
    quota.trim().parse::<i64>().is_ok_and(|q| q > 0)
}

/// A kernel CPU list (`0-3,8,10-11`); malformed parts are skipped.
fn parse_cpu_list(text: &str) -> BTreeSet<usize> {
    let mut cpus = BTreeSet::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    cpus.extend(a..=b);
                }
            }
            None => {
                if let Ok(cpu) = part.parse() {
                    cpus.insert(cpu);
                }
            }
        }
    }
    cpus
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cgroup::tests::write;

    fn reserved_spin() -> Duration {
        Duration::from_micros(RESERVED_CORE_SPIN_BEFORE_PARK_US)
    }

    #[test]
    fn parses_kernel_cpu_lists() {
        assert_eq!(parse_cpu_list("\n"), BTreeSet::new());
        assert_eq!(
            parse_cpu_list("0-2,5,7-8\n"),
            BTreeSet::from([0, 1, 2, 5, 7, 8])
        );
        assert_eq!(parse_cpu_list("x,3,4-"), BTreeSet::from([3]));
    }

    #[test]
    fn shared_cores_do_not_spin_and_reserved_ones_do() {
        let shared = CpuReading::default();
        assert_eq!(choose(None, &[0, 1], &shared).spin, Duration::ZERO);
        let isolated = CpuReading {
            isolated: BTreeSet::from([2, 3]),
            ..CpuReading::default()
        };
        assert_eq!(choose(None, &[2, 3], &isolated).spin, reserved_spin());
        // One shard on a core the scheduler shares: none spin.
        assert_eq!(choose(None, &[1, 2], &isolated).spin, Duration::ZERO);
        let exclusive = CpuReading {
            exclusive_cpuset: true,
            ..CpuReading::default()
        };
        assert_eq!(choose(None, &[0, 1], &exclusive).spin, reserved_spin());
    }

    #[test]
    fn a_quota_or_shards_sharing_a_cpu_never_spin() {
        let reading = CpuReading {
            isolated: BTreeSet::from([0, 1]),
            exclusive_cpuset: true,
            cpu_quota: true,
        };
        assert_eq!(choose(None, &[0, 1], &reading).spin, Duration::ZERO);
        let reading = CpuReading {
            cpu_quota: false,
            ..reading
        };
        assert_eq!(choose(None, &[0, 1, 0], &reading).spin, Duration::ZERO);
        assert_eq!(choose(None, &[], &reading).spin, Duration::ZERO);
    }

    #[test]
    fn the_operators_setting_wins() {
        let reading = CpuReading {
            cpu_quota: true,
            ..CpuReading::default()
        };
        let choice = choose(Some(20), &[0, 0], &reading);
        assert_eq!(choice.spin, Duration::from_micros(20));
        assert_eq!(choice.reason, "shard.spin.before.park.us is set");
        assert_eq!(
            choose(Some(0), &[0], &CpuReading::default()).spin,
            Duration::ZERO
        );
    }

    #[test]
    fn reads_cpuset_partitions_and_quotas_of_both_versions() {
        let root = tempfile::tempdir().unwrap();
        // v2: a partition root with exclusive CPUs, and a quota of 2 CPUs.
        write(root.path(), "cgroup.controllers", "cpuset cpu\n");
        write(root.path(), "cpuset.cpus.partition", "root\n");
        let dir = root.path().join("pinlog.slice");
        write(&dir, "cpuset.cpus.partition", "root\n");
        write(&dir, "cpu.max", "200000 100000\n");
        let v2 =
            |path: &str| CgroupDir::find_in(path, root.path(), "cpuset", "cpuset.cpus").unwrap();
        let c = v2("0::/pinlog.slice\n");
        assert!(exclusive_cpuset(&c) && cpu_quota(&c));
        write(&dir, "cpuset.cpus.partition", "root invalid (no CPUs)\n");
        write(&dir, "cpu.max", "max 100000\n");
        assert!(!exclusive_cpuset(&c) && !cpu_quota(&c));
        write(&dir, "cpuset.cpus.partition", "isolated\n");
        assert!(exclusive_cpuset(&c));
        // The root cgroup is every CPU of the machine: not a reservation.
        assert!(!exclusive_cpuset(&v2("0::/\n")));

        // v1: cpu_exclusive in a cpuset below the root; quota -1 is none.
        let root = tempfile::tempdir().unwrap();
        let cpuset = root.path().join("cpuset");
        write(&cpuset, "cpuset.cpus", "0-3\n");
        write(&cpuset, "cpuset.cpu_exclusive", "1\n");
        write(&cpuset.join("pinlog"), "cpuset.cpu_exclusive", "1\n");
        let cpu = root.path().join("cpu");
        write(&cpu, "cpu.cfs_quota_us", "-1\n");
        write(&cpu.join("pinlog"), "cpu.cfs_quota_us", "150000\n");
        let text = "8:cpuset:/pinlog\n5:cpu,cpuacct:/pinlog\n";
        let c = CgroupDir::find_in(text, root.path(), "cpuset", "cpuset.cpus").unwrap();
        assert!(exclusive_cpuset(&c));
        let c = CgroupDir::find_in(text, root.path(), "cpu", "cpu.cfs_quota_us").unwrap();
        assert!(cpu_quota(&c));
        let c = CgroupDir::find_in(
            "8:cpuset:/\n5:cpu:/\n",
            root.path(),
            "cpu",
            "cpu.cfs_quota_us",
        )
        .unwrap();
        assert!(!cpu_quota(&c));
        let c = CgroupDir::find_in("8:cpuset:/\n", root.path(), "cpuset", "cpuset.cpus").unwrap();
        assert!(!exclusive_cpuset(&c), "the root cpuset is always exclusive");
    }

    #[test]
    fn this_machine_reads() {
        // Whatever it says, it decides without panicking.
        let reading = read_cpu();
        let cpus = crate::shard::runtime::online_cpus();
        let _ = choose(None, &cpus, &reading);
    }
}
