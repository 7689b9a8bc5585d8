//! Broker settings of the group coordinator, with Kafka's names and
//! defaults. They are set in the broker's TOML file like every other
//! setting (see `broker_config/mod.rs`); they live with the settings so
//! that the settings import no subsystem.

/// Kafka's `offsets.topic.num.partitions` default.
pub const DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS: i32 = 50;
/// Kafka's `offsets.topic.replication.factor` default.
pub const DEFAULT_OFFSETS_TOPIC_REPLICATION_FACTOR: i16 = 3;
/// Kafka's `offsets.topic.segment.bytes` default: 100 MiB, small so that
/// compaction gets to most of the topic.
pub const DEFAULT_OFFSETS_TOPIC_SEGMENT_BYTES: u64 = 100 * 1024 * 1024;
/// Kafka's `offsets.commit.timeout.ms` default: how long a group write
/// (an offset commit, a member or assignment record) waits to be
/// replicated before the request is answered COORDINATOR_NOT_AVAILABLE.
pub const DEFAULT_OFFSETS_COMMIT_TIMEOUT_MS: u64 = 5000;
/// Kafka's `offsets.retention.minutes` default: 7 days.
pub const DEFAULT_OFFSETS_RETENTION_MINUTES: i64 = 7 * 24 * 60;
/// Kafka's `offsets.retention.check.interval.ms` default: 10 minutes.
pub const DEFAULT_OFFSETS_RETENTION_CHECK_INTERVAL_MS: u64 = 10 * 60 * 1000;
/// Kafka's `offset.metadata.max.bytes` default.
pub const DEFAULT_OFFSET_METADATA_MAX_BYTES: usize = 4096;
/// Kafka's `group.initial.rebalance.delay.ms` default.
pub const DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS: i64 = 3000;
/// Kafka's `group.min.session.timeout.ms` default.
pub const DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS: i32 = 6000;
/// Kafka's `group.max.session.timeout.ms` default: 30 minutes.
pub const DEFAULT_GROUP_MAX_SESSION_TIMEOUT_MS: i32 = 30 * 60 * 1000;
/// Kafka's `group.max.size` default: unlimited.
pub const DEFAULT_GROUP_MAX_SIZE: i32 = i32::MAX;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    /// `offsets.topic.num.partitions`: fixed when `__consumer_offsets` is
    /// created.
    pub offsets_topic_num_partitions: i32,
    /// `offsets.topic.replication.factor`: capped at the live brokers when
    /// the topic is created, so a single node still gets one.
    pub offsets_topic_replication_factor: i16,
    /// `offsets.topic.segment.bytes`.
    pub offsets_topic_segment_bytes: u64,
    /// `offsets.commit.timeout.ms`: how long a write to `__consumer_offsets`
    /// waits for the ISR.
    pub offsets_commit_timeout_ms: u64,
    /// `offsets.retention.minutes`: how long an empty group keeps its
    /// committed offsets.
    pub offsets_retention_minutes: i64,
    /// `offsets.retention.check.interval.ms`.
    pub offsets_retention_check_interval_ms: u64,
    /// `offset.metadata.max.bytes`: longest metadata string of a commit.
    pub offset_metadata_max_bytes: usize,
    /// `group.initial.rebalance.delay.ms`: how long a new group waits for
    /// more members before its first generation.
    pub initial_rebalance_delay_ms: i64,
    /// `group.min.session.timeout.ms`.
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`.
    pub max_session_timeout_ms: i32,
    /// `group.max.size`.
    pub max_size: i32,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            offsets_topic_num_partitions: DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS,
            offsets_topic_replication_factor: DEFAULT_OFFSETS_TOPIC_REPLICATION_FACTOR,
            offsets_topic_segment_bytes: DEFAULT_OFFSETS_TOPIC_SEGMENT_BYTES,
            offsets_commit_timeout_ms: DEFAULT_OFFSETS_COMMIT_TIMEOUT_MS,
            offsets_retention_minutes: DEFAULT_OFFSETS_RETENTION_MINUTES,
            offsets_retention_check_interval_ms: DEFAULT_OFFSETS_RETENTION_CHECK_INTERVAL_MS,
            offset_metadata_max_bytes: DEFAULT_OFFSET_METADATA_MAX_BYTES,
            initial_rebalance_delay_ms: DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS,
            min_session_timeout_ms: DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS,
            max_session_timeout_ms: DEFAULT_GROUP_MAX_SESSION_TIMEOUT_MS,
            max_size: DEFAULT_GROUP_MAX_SIZE,
        }
    }
}

/// The setting names this struct takes.
pub const GROUP_KEYS: &[&str] = &[
    "offsets.topic.num.partitions",
    "offsets.topic.replication.factor",
    "offsets.topic.segment.bytes",
    "offsets.commit.timeout.ms",
    "offsets.retention.minutes",
    "offsets.retention.check.interval.ms",
    "offset.metadata.max.bytes",
    "group.initial.rebalance.delay.ms",
    "group.min.session.timeout.ms",
    "group.max.session.timeout.ms",
    "group.max.size",
];

impl GroupConfig {
    /// Sets one setting from its integer value; the error says what is
    /// accepted. `key` must be one of [`GROUP_KEYS`].
    pub fn set(&mut self, key: &str, v: i64) -> Result<(), String> {
        let positive_i32 = |min: i64| {
            if v < min || v > i32::MAX as i64 {
                Err(format!(
                    "setting {key:?}: must be between {min} and {}",
                    i32::MAX
                ))
            } else {
                Ok(v as i32)
            }
        };
        let non_negative =
            || u64::try_from(v).map_err(|_| format!("setting {key:?}: must not be negative"));
        match key {
            "offsets.topic.num.partitions" => self.offsets_topic_num_partitions = positive_i32(1)?,
            "offsets.topic.replication.factor" => {
                self.offsets_topic_replication_factor = positive_i32(1)?.min(i16::MAX as i32) as i16
            }
            "offsets.topic.segment.bytes" => self.offsets_topic_segment_bytes = non_negative()?,
            "offsets.commit.timeout.ms" => self.offsets_commit_timeout_ms = positive_i32(1)? as u64,
            "offsets.retention.minutes" => self.offsets_retention_minutes = positive_i32(1)? as i64,
            "offsets.retention.check.interval.ms" => {
                self.offsets_retention_check_interval_ms = positive_i32(1)? as u64
            }
            "offset.metadata.max.bytes" => {
                self.offset_metadata_max_bytes = positive_i32(0)? as usize
            }
            "group.initial.rebalance.delay.ms" => {
                self.initial_rebalance_delay_ms = positive_i32(0)? as i64
            }
            "group.min.session.timeout.ms" => self.min_session_timeout_ms = positive_i32(0)?,
            "group.max.session.timeout.ms" => self.max_session_timeout_ms = positive_i32(0)?,
            "group.max.size" => self.max_size = positive_i32(1)?,
            other => return Err(format!("{other:?} is not a group coordinator setting")),
        }
        Ok(())
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.min_session_timeout_ms > self.max_session_timeout_ms {
            return Err(format!(
                "group.min.session.timeout.ms ({}) is larger than group.max.session.timeout.ms ({})",
                self.min_session_timeout_ms, self.max_session_timeout_ms
            ));
        }
        Ok(())
    }

    pub fn offsets_retention_ms(&self) -> i64 {
        self.offsets_retention_minutes.saturating_mul(60_000)
    }
}
