//! Settings of share groups (KIP-932) that a share partition obeys, with
//! Kafka's names, defaults and bounds. They sit beside the other group
//! settings so that the settings import no subsystem; the pure share
//! partition in `group/share/` reads them.

/// `group.share.record.lock.duration.ms`: how long a member holds the
/// records it acquired before they become available to others again.
pub const DEFAULT_SHARE_GROUP_RECORD_LOCK_DURATION_MS: i64 = 30_000;
/// `group.share.min.record.lock.duration.ms` and `.max.` bound it.
pub const SHARE_GROUP_MIN_RECORD_LOCK_DURATION_MS: i64 = 15_000;
pub const SHARE_GROUP_MAX_RECORD_LOCK_DURATION_MS: i64 = 60_000;
/// `group.share.partition.max.record.locks`: how many records a share
/// partition keeps in flight (its window, SPSO to SPEO) at most.
pub const DEFAULT_SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS: u32 = 2_000;
/// Kafka's bounds of `group.share.partition.max.record.locks`.
pub const SHARE_GROUP_PARTITION_MIN_RECORD_LOCKS: u32 = 100;
pub const SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS_BOUND: u32 = 4_000;
/// `group.share.delivery.count.limit`: a record delivered this many times
/// and then released (or whose lock expired) is archived, not redelivered.
pub const DEFAULT_SHARE_GROUP_DELIVERY_COUNT_LIMIT: i16 = 5;
/// Kafka's bounds of `group.share.delivery.count.limit`
/// (`group.share.max.delivery.count.limit` is the upper one).
pub const SHARE_GROUP_MIN_DELIVERY_COUNT_LIMIT: i16 = 2;
pub const SHARE_GROUP_MAX_DELIVERY_COUNT_LIMIT: i16 = 10;

const _: () = assert!(
    SHARE_GROUP_PARTITION_MIN_RECORD_LOCKS <= DEFAULT_SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS
        && DEFAULT_SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS
            <= SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS_BOUND
);
const _: () = assert!(
    SHARE_GROUP_MIN_DELIVERY_COUNT_LIMIT <= DEFAULT_SHARE_GROUP_DELIVERY_COUNT_LIMIT
        && DEFAULT_SHARE_GROUP_DELIVERY_COUNT_LIMIT <= SHARE_GROUP_MAX_DELIVERY_COUNT_LIMIT
);
const _: () = assert!(
    SHARE_GROUP_MIN_RECORD_LOCK_DURATION_MS <= DEFAULT_SHARE_GROUP_RECORD_LOCK_DURATION_MS
        && DEFAULT_SHARE_GROUP_RECORD_LOCK_DURATION_MS <= SHARE_GROUP_MAX_RECORD_LOCK_DURATION_MS
);

/// `group.share.session.timeout.ms`: a member that has not heartbeated for
/// this long is fenced, and its partitions go to the others.
pub const DEFAULT_SHARE_GROUP_SESSION_TIMEOUT_MS: i32 = 45_000;
/// `group.share.heartbeat.interval.ms`: told to every member.
pub const DEFAULT_SHARE_GROUP_HEARTBEAT_INTERVAL_MS: i32 = 5_000;
/// `group.share.max.size`: members per share group.
pub const DEFAULT_SHARE_GROUP_MAX_SIZE: i32 = 200;

/// What the share-group membership core needs of the settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareGroupConfig {
    /// `group.share.session.timeout.ms`.
    pub session_timeout_ms: i32,
    /// `group.share.heartbeat.interval.ms`.
    pub heartbeat_interval_ms: i32,
    /// `group.share.max.size`.
    pub max_size: i32,
}

impl Default for ShareGroupConfig {
    fn default() -> Self {
        ShareGroupConfig {
            session_timeout_ms: DEFAULT_SHARE_GROUP_SESSION_TIMEOUT_MS,
            heartbeat_interval_ms: DEFAULT_SHARE_GROUP_HEARTBEAT_INTERVAL_MS,
            max_size: DEFAULT_SHARE_GROUP_MAX_SIZE,
        }
    }
}

/// What a share partition needs of the share-group settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharePartitionConfig {
    /// `group.share.record.lock.duration.ms`.
    pub record_lock_duration_ms: i64,
    /// `group.share.partition.max.record.locks`.
    pub max_record_locks: u32,
    /// `group.share.delivery.count.limit`.
    pub delivery_count_limit: i16,
}

impl Default for SharePartitionConfig {
    fn default() -> Self {
        SharePartitionConfig {
            record_lock_duration_ms: DEFAULT_SHARE_GROUP_RECORD_LOCK_DURATION_MS,
            max_record_locks: DEFAULT_SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS,
            delivery_count_limit: DEFAULT_SHARE_GROUP_DELIVERY_COUNT_LIMIT,
        }
    }
}

impl SharePartitionConfig {
    /// Refuses values outside Kafka's bounds, naming the setting.
    pub fn validate(&self) -> Result<(), String> {
        let lock = self.record_lock_duration_ms;
        if !(SHARE_GROUP_MIN_RECORD_LOCK_DURATION_MS..=SHARE_GROUP_MAX_RECORD_LOCK_DURATION_MS)
            .contains(&lock)
        {
            return Err(format!(
                "group.share.record.lock.duration.ms={lock} is outside \
                 [{SHARE_GROUP_MIN_RECORD_LOCK_DURATION_MS}, {SHARE_GROUP_MAX_RECORD_LOCK_DURATION_MS}]"
            ));
        }
        let locks = self.max_record_locks;
        if !(SHARE_GROUP_PARTITION_MIN_RECORD_LOCKS..=SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS_BOUND)
            .contains(&locks)
        {
            return Err(format!(
                "group.share.partition.max.record.locks={locks} is outside \
                 [{SHARE_GROUP_PARTITION_MIN_RECORD_LOCKS}, {SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS_BOUND}]"
            ));
        }
        let limit = self.delivery_count_limit;
        if !(SHARE_GROUP_MIN_DELIVERY_COUNT_LIMIT..=SHARE_GROUP_MAX_DELIVERY_COUNT_LIMIT)
            .contains(&limit)
        {
            return Err(format!(
                "group.share.delivery.count.limit={limit} is outside \
                 [{SHARE_GROUP_MIN_DELIVERY_COUNT_LIMIT}, {SHARE_GROUP_MAX_DELIVERY_COUNT_LIMIT}]"
            ));
        }
        Ok(())
    }
}

/// The setting names [`ShareGroupSettings::set`] takes.
pub const SHARE_GROUP_KEYS: &[&str] = &[
    "group.share.session.timeout.ms",
    "group.share.heartbeat.interval.ms",
    "group.share.max.size",
    "group.share.record.lock.duration.ms",
    "group.share.partition.max.record.locks",
    "group.share.delivery.count.limit",
];

/// Every share-group setting of the broker: the membership's and the
/// share partitions'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShareGroupSettings {
    pub group: ShareGroupConfig,
    pub partition: SharePartitionConfig,
}

impl ShareGroupSettings {
    /// Sets one setting; the error names it and says what is accepted.
    pub fn set(&mut self, key: &str, value: i64) -> Result<(), String> {
        let positive_i32 = || {
            i32::try_from(value)
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| format!("setting {key:?}: must be between 1 and {}", i32::MAX))
        };
        match key {
            "group.share.session.timeout.ms" => self.group.session_timeout_ms = positive_i32()?,
            "group.share.heartbeat.interval.ms" => {
                self.group.heartbeat_interval_ms = positive_i32()?
            }
            "group.share.max.size" => self.group.max_size = positive_i32()?,
            "group.share.record.lock.duration.ms" => {
                self.partition.record_lock_duration_ms = i64::from(positive_i32()?)
            }
            "group.share.partition.max.record.locks" => {
                self.partition.max_record_locks = positive_i32()? as u32
            }
            "group.share.delivery.count.limit" => {
                self.partition.delivery_count_limit = i16::try_from(value)
                    .map_err(|_| format!("setting {key:?}: {value} is not a delivery count"))?
            }
            other => return Err(format!("{other:?} is not a share group setting")),
        }
        Ok(())
    }

    /// Kafka's bounds, and a heartbeat interval below the session timeout.
    pub fn validate(&self) -> Result<(), String> {
        self.partition.validate()?;
        if self.group.heartbeat_interval_ms >= self.group.session_timeout_ms {
            return Err(format!(
                "group.share.heartbeat.interval.ms ({}) must be lower than \
                 group.share.session.timeout.ms ({})",
                self.group.heartbeat_interval_ms, self.group.session_timeout_ms
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_set_by_kafkas_names_and_checked() {
        let mut s = ShareGroupSettings::default();
        s.validate().unwrap();
        s.set("group.share.record.lock.duration.ms", 15_000)
            .unwrap();
        s.set("group.share.delivery.count.limit", 2).unwrap();
        s.set("group.share.heartbeat.interval.ms", 1_000).unwrap();
        assert_eq!(s.partition.record_lock_duration_ms, 15_000);
        assert_eq!(s.partition.delivery_count_limit, 2);
        s.validate().unwrap();
        s.set("group.share.session.timeout.ms", 500).unwrap();
        assert!(s.validate().unwrap_err().contains("heartbeat"));
        assert!(s.set("group.share.max.size", 0).is_err());
        assert!(s.set("group.share.nope", 1).is_err());
    }

    #[test]
    fn defaults_are_kafkas_and_valid() {
        let c = SharePartitionConfig::default();
        assert_eq!(c.record_lock_duration_ms, 30_000);
        assert_eq!(c.max_record_locks, 2_000);
        assert_eq!(c.delivery_count_limit, 5);
        c.validate().unwrap();
    }

    #[test]
    fn values_outside_kafkas_bounds_are_refused_by_name() {
        let bad = SharePartitionConfig {
            delivery_count_limit: 11,
            ..Default::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .contains("group.share.delivery.count.limit"));
        let bad = SharePartitionConfig {
            max_record_locks: 99,
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().contains("max.record.locks"));
        let bad = SharePartitionConfig {
            record_lock_duration_ms: 1_000,
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().contains("lock.duration"));
    }
}
