//! Replication throttles, as Kafka's: a byte rate that catch-up replication
//! may take, on the leader side (`leader.replication.throttled.rate`) and
//! the follower side (`follower.replication.throttled.rate`), applied only
//! to the replicas a topic lists (`leader.replication.throttled.replicas`,
//! `follower.replication.throttled.replicas`) and only while they are out
//! of the ISR. `kafka-reassign-partitions.sh --throttle` sets all four and
//! `--verify` removes them once the reassignment is done.
//!
//! Pure: the caller passes the clock in. Kafka measures the rate over
//! `replication.quota.window.num` (11) windows of
//! `replication.quota.window.size.seconds` (1 s); so does this.

use std::collections::VecDeque;

/// Kafka's `replication.quota.window.num` default.
pub const REPLICATION_QUOTA_WINDOW_NUM: usize = 11;
/// Kafka's `replication.quota.window.size.seconds` default, in ms.
pub const REPLICATION_QUOTA_WINDOW_MS: i64 = 1_000;

/// The broker setting of the leader side's rate, in bytes per second.
pub const LEADER_RATE: &str = "leader.replication.throttled.rate";
/// The broker setting of the follower side's rate, in bytes per second.
pub const FOLLOWER_RATE: &str = "follower.replication.throttled.rate";
/// The topic setting naming the replicas throttled on the leader side.
pub const LEADER_REPLICAS: &str = "leader.replication.throttled.replicas";
/// The topic setting naming the replicas throttled on the follower side.
pub const FOLLOWER_REPLICAS: &str = "follower.replication.throttled.replicas";

/// A byte rate measured over sliding windows, and its limit.
#[derive(Debug, Clone)]
pub struct ReplicationQuota {
    /// Bytes per second; `None` is no limit (Kafka's Long.MAX_VALUE).
    limit: Option<u64>,
    /// (window index, bytes recorded in it), oldest first.
    windows: VecDeque<(i64, u64)>,
}

impl Default for ReplicationQuota {
    fn default() -> Self {
        Self::new(None)
    }
}

impl ReplicationQuota {
    pub fn new(limit: Option<u64>) -> Self {
        ReplicationQuota {
            limit,
            windows: VecDeque::new(),
        }
    }

    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// Changes the limit; what was recorded still counts.
    pub fn set_limit(&mut self, limit: Option<u64>) {
        self.limit = limit;
    }

    /// Counts `bytes` replicated at `now_ms`.
    pub fn record(&mut self, bytes: u64, now_ms: i64) {
        let window = now_ms.div_euclid(REPLICATION_QUOTA_WINDOW_MS);
        self.expire(window);
        match self.windows.back_mut() {
            Some((w, b)) if *w == window => *b += bytes,
            _ => self.windows.push_back((window, bytes)),
        }
    }

    /// The measured rate in bytes per second. As Kafka's `Rate`, the
    /// elapsed time counts at least all windows but the current one, so a
    /// first burst does not read as an enormous rate.
    pub fn rate(&mut self, now_ms: i64) -> f64 {
        let window = now_ms.div_euclid(REPLICATION_QUOTA_WINDOW_MS);
        self.expire(window);
        let total: u64 = self.windows.iter().map(|(_, b)| b).sum();
        let oldest_start = self
            .windows
            .front()
            .map_or(now_ms, |(w, _)| w * REPLICATION_QUOTA_WINDOW_MS);
        let floor = (REPLICATION_QUOTA_WINDOW_NUM as i64 - 1) * REPLICATION_QUOTA_WINDOW_MS;
        let elapsed_ms = (now_ms - oldest_start).max(floor).max(1);
        total as f64 * 1000.0 / elapsed_ms as f64
    }

    /// Whether the measured rate is above the limit.
    pub fn is_exceeded(&mut self, now_ms: i64) -> bool {
        match self.limit {
            None => false,
            Some(limit) => self.rate(now_ms) > limit as f64,
        }
    }

    fn expire(&mut self, current_window: i64) {
        let oldest_kept = current_window - (REPLICATION_QUOTA_WINDOW_NUM as i64 - 1);
        while self.windows.front().is_some_and(|(w, _)| *w < oldest_kept) {
            self.windows.pop_front();
        }
    }
}

/// A topic's list of throttled replicas: `*` for all, or
/// `partition:broker` pairs separated by commas (Kafka's format).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ThrottledReplicas {
    #[default]
    None,
    All,
    Listed(Vec<(i32, i32)>),
}

impl ThrottledReplicas {
    /// Parses the setting's value; the error says what is wrong.
    pub fn parse(value: &str) -> Result<Self, String> {
        let value = value.trim();
        if value.is_empty() {
            return Ok(ThrottledReplicas::None);
        }
        if value == "*" {
            return Ok(ThrottledReplicas::All);
        }
        let mut out = Vec::new();
        for item in value.split(',') {
            let item = item.trim();
            let pair = item.split_once(':').and_then(|(p, b)| {
                Some((p.trim().parse::<i32>().ok()?, b.trim().parse::<i32>().ok()?))
            });
            match pair {
                Some((p, b)) if p >= 0 && b >= 0 => out.push((p, b)),
                _ => {
                    return Err(format!(
                        "{item:?} is not partition:broker; give `*` or a list such as 0:1,0:2,1:3"
                    ))
                }
            }
        }
        Ok(ThrottledReplicas::Listed(out))
    }

    /// Whether the replica of `partition` on `broker` is listed.
    pub fn covers(&self, partition: i32, broker: i32) -> bool {
        match self {
            ThrottledReplicas::None => false,
            ThrottledReplicas::All => true,
            ThrottledReplicas::Listed(pairs) => pairs.contains(&(partition, broker)),
        }
    }
}

/// Parses a throttle rate setting: bytes per second, at least 1. Kafka's
/// default, Long.MAX_VALUE, means no limit.
pub fn parse_rate(value: &str) -> Result<Option<u64>, String> {
    match value.trim().parse::<i64>() {
        Ok(i64::MAX) => Ok(None),
        Ok(v) if v >= 1 => Ok(Some(v as u64)),
        _ => Err(format!(
            "{value:?} is not a rate: give bytes per second, at least 1"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_stream_at_the_limit_is_not_exceeded_and_above_it_is() {
        let mut q = ReplicationQuota::new(Some(1_000_000));
        // 0.9 MB every second for 20 s.
        for s in 0..20 {
            q.record(900_000, s * 1000);
            assert!(!q.is_exceeded(s * 1000 + 999), "second {s}");
        }
        // Then 2 MB a second: within a few windows the average passes 1 MB/s.
        let mut exceeded_at = None;
        for s in 20..40 {
            q.record(2_000_000, s * 1000);
            if q.is_exceeded(s * 1000 + 999) {
                exceeded_at.get_or_insert(s);
            }
        }
        let at = exceeded_at.expect("2 MB/s exceeds 1 MB/s");
        assert!(at < 30, "exceeded only at second {at}");
    }

    #[test]
    fn a_first_burst_is_spread_over_the_whole_window() {
        let mut q = ReplicationQuota::new(Some(1_000_000));
        // 5 MB at once: 5 MB over the 10 s floor is 0.5 MB/s.
        q.record(5_000_000, 0);
        assert!(!q.is_exceeded(10));
        q.record(6_000_000, 20);
        assert!(q.is_exceeded(30));
        // Old windows expire: 11 s later the bytes no longer count.
        assert!(!q.is_exceeded(12_000));
        assert_eq!(q.rate(12_000), 0.0);
    }

    #[test]
    fn no_limit_is_never_exceeded() {
        let mut q = ReplicationQuota::default();
        q.record(u64::MAX / 4, 0);
        assert!(!q.is_exceeded(1));
        q.set_limit(Some(1));
        assert!(q.is_exceeded(1));
    }

    #[test]
    fn replica_lists_parse_as_kafka_writes_them() {
        assert_eq!(ThrottledReplicas::parse(""), Ok(ThrottledReplicas::None));
        assert_eq!(ThrottledReplicas::parse(" * "), Ok(ThrottledReplicas::All));
        let l = ThrottledReplicas::parse("0:1,0:2, 3:1").unwrap();
        assert!(l.covers(0, 2) && l.covers(3, 1));
        assert!(!l.covers(1, 1) && !l.covers(0, 3));
        assert!(ThrottledReplicas::All.covers(7, 9));
        assert!(!ThrottledReplicas::None.covers(0, 0));
        for bad in ["0", "a:1", "0:1,", "-1:2", "1:2:3"] {
            assert!(ThrottledReplicas::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rates_are_positive_or_kafkas_no_limit() {
        assert_eq!(parse_rate("1048576"), Ok(Some(1_048_576)));
        assert_eq!(parse_rate("9223372036854775807"), Ok(None));
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("-5").is_err());
        assert!(parse_rate("fast").is_err());
    }
}
