//! How much memory this process may use: the machine's, or less when a
//! cgroup (a container, a systemd slice) limits it. Sizes the read cache
//! when `read.cache.bytes` is not set.

use crate::constants::{READ_CACHE_FALLBACK_BYTES, READ_CACHE_MEMORY_DIVISOR};

/// The memory limit in bytes: the smallest of the machine's total memory
/// and the cgroup v2 or v1 limit, whichever are readable.
pub fn memory_limit_bytes() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| mem_total_bytes(&s));
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .filter_map(|p| std::fs::read_to_string(p).ok())
    .filter_map(|s| s.trim().parse::<u64>().ok())
    .min();
    match (total, cgroup) {
        (Some(t), Some(c)) => Some(t.min(c)),
        (t, c) => t.or(c),
    }
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The read cache's size for the whole broker when `read.cache.bytes` is
/// not set: a share of the memory limit.
pub fn default_read_cache_bytes() -> usize {
    match memory_limit_bytes() {
        Some(limit) => usize::try_from(limit / READ_CACHE_MEMORY_DIVISOR).unwrap_or(usize::MAX),
        None => READ_CACHE_FALLBACK_BYTES,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mem_total() {
        let text = "MemTotal:       24584172 kB\nMemFree:        1000 kB\n";
        assert_eq!(mem_total_bytes(text), Some(24584172 * 1024));
        assert_eq!(mem_total_bytes("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn default_is_a_share_of_this_machine() {
        let limit = memory_limit_bytes().expect("Linux reports its memory");
        let cache = default_read_cache_bytes() as u64;
        assert!(cache > 0 && cache <= limit / READ_CACHE_MEMORY_DIVISOR);
    }
}
