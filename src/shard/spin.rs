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
//! v2 cpuset partition (`cpuset.cpus.partition` of `root` or `isolated`),
//! whose CPUs the kernel takes away from every process outside the
//! process's cgroup. (v1's `cpuset.cpu_exclusive` does not count: it only
//! keeps sibling cpusets off those CPUs, and every process of the root
//! cpuset may still run there.) Only then, with every shard on a CPU of
//! its own and no CPU quota on the process's cgroup or any above it, does
//! a shard spin. Whatever else the operator runs in that same cgroup
//! shares the CPUs; set `shard.spin.before.park.us = 0` there. The
//! decision is [`choose`], a pure function of one [`CpuReading`];
//! [`read_cpu`] reads the files.

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
    /// The process's cgroup is a cpuset partition: its CPUs are the
    /// cgroup's alone.
    pub exclusive_cpuset: bool,
    /// The process's cgroup, or one above it, limits its CPU time (v2
    /// `cpu.max`, v1 `cpu.cfs_quota_us`).
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
    let no_spin = |reason| SpinChoice {
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
        return no_spin("a CPU quota limits the process: spinning would spend it");
    }
    let distinct: BTreeSet<usize> = shard_cpus.iter().copied().collect();
    if distinct.len() < shard_cpus.len() {
        return no_spin("shards share CPUs");
    }
    let reserved = |cpu| reading.exclusive_cpuset || reading.isolated.contains(cpu);
    if shard_cpus.is_empty() {
        return no_spin("no shard CPUs");
    }
    if !distinct.iter().all(reserved) {
        return no_spin("the kernel reserves none, or not all, of the shards' CPUs");
    }
    SpinChoice {
        spin: Duration::from_micros(RESERVED_CORE_SPIN_BEFORE_PARK_US),
        reason: match reading.exclusive_cpuset {
            true => "the process's cgroup is a cpuset partition",
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

/// Whether a cpuset cgroup is a partition, whose CPUs no process outside
/// it may use: cgroup v2 only (v1's `cpu_exclusive` keeps only sibling
/// cpusets off the CPUs). The root cgroup holds every CPU of the machine,
/// which says nothing of this process.
fn exclusive_cpuset(cgroup: &CgroupDir) -> bool {
    if cgroup.is_root() || !cgroup.v2 {
        return false;
    }
    // "root" or "isolated", possibly followed by " invalid (...)" when the
    // kernel could not grant it.
    let partition = cgroup.read("cpuset.cpus.partition").unwrap_or_default();
    let partition = partition.trim();
    partition == "root" || partition == "isolated"
}

/// Whether a cpu cgroup, or one of its ancestors (a systemd slice's
/// `CPUQuota`, a pod's limit), limits the process's CPU time.
fn cpu_quota(cgroup: &CgroupDir) -> bool {
    cgroup.lineage().any(|c| own_cpu_quota(&c))
}

/// Whether one cgroup sets a CPU quota.
fn own_cpu_quota(cgroup: &CgroupDir) -> bool {
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
        write(
            &dir,
            "cpuset.cpus.partition",
            "isolated invalid (no CPUs)\n",
        );
        assert!(!exclusive_cpuset(&c));
        write(&dir, "cpuset.cpus.partition", "isolated\n");
        assert!(exclusive_cpuset(&c));
        // A quota on a parent (a slice) limits the process too.
        let child = dir.join("pinlog.service");
        write(&child, "cpu.max", "max 100000\n");
        write(&dir, "cpu.max", "50000 100000\n");
        assert!(cpu_quota(&v2("0::/pinlog.slice/pinlog.service\n")));
        // The root cgroup is every CPU of the machine: not a reservation.
        assert!(!exclusive_cpuset(&v2("0::/\n")));

        // v1: cpu_exclusive is no reservation (processes of the root
        // cpuset still run there); quota -1 is none.
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
        assert!(!c.is_root() && !exclusive_cpuset(&c));
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
    }

    #[test]
    fn the_reason_says_which_reservation() {
        let isolated = CpuReading {
            isolated: BTreeSet::from([1]),
            ..CpuReading::default()
        };
        assert_eq!(
            choose(None, &[1], &isolated).reason,
            "the shards' CPUs are isolated from the scheduler (isolcpus)"
        );
        let partition = CpuReading {
            exclusive_cpuset: true,
            ..CpuReading::default()
        };
        assert_eq!(
            choose(None, &[1], &partition).reason,
            "the process's cgroup is a cpuset partition"
        );
    }

    #[test]
    fn this_machine_reads() {
        // Whatever the machine says, the choice is one of the two spins.
        let reading = read_cpu();
        let cpus = crate::shard::runtime::online_cpus();
        let spin = choose(None, &cpus, &reading).spin;
        assert!(
            spin == Duration::ZERO || spin == reserved_spin(),
            "{spin:?}"
        );
    }
}
