//! Broker settings of the share coordinator (KIP-932), with Kafka's names
//! and defaults: where `__share_group_state` lives and how the coordinator
//! writes it. Set in the broker's TOML file like every other setting (see
//! `broker_config/mod.rs`).

/// Kafka's `share.coordinator.state.topic.num.partitions` default.
pub const DEFAULT_SHARE_COORDINATOR_STATE_TOPIC_NUM_PARTITIONS: i32 = 50;
/// Kafka's `share.coordinator.state.topic.replication.factor` default.
pub const DEFAULT_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR: i16 = 3;
/// Kafka's `share.coordinator.state.topic.min.isr` default.
pub const DEFAULT_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR: i32 = 2;
/// Kafka's `share.coordinator.state.topic.segment.bytes` default: 100 MiB.
pub const DEFAULT_SHARE_COORDINATOR_STATE_TOPIC_SEGMENT_BYTES: u64 = 100 * 1024 * 1024;
/// Kafka's `share.coordinator.snapshot.update.records.per.snapshot`
/// default: after this many ShareUpdates the coordinator writes a snapshot
/// instead, so that loading replays a bounded number of records.
pub const DEFAULT_SHARE_COORDINATOR_SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT: u32 = 500;
/// Kafka's `share.coordinator.write.timeout.ms` default: how long a write to
/// `__share_group_state` waits to be replicated.
pub const DEFAULT_SHARE_COORDINATOR_WRITE_TIMEOUT_MS: u64 = 5_000;
/// Kafka's `share.coordinator.state.topic.prune.interval.ms` default: 5
/// minutes between moves of each partition's log start offset.
pub const DEFAULT_SHARE_COORDINATOR_STATE_TOPIC_PRUNE_INTERVAL_MS: u64 = 5 * 60 * 1000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareCoordinatorConfig {
    /// `share.coordinator.state.topic.num.partitions`: fixed when
    /// `__share_group_state` is created.
    pub state_topic_num_partitions: i32,
    /// `share.coordinator.state.topic.replication.factor`: capped at the
    /// live brokers when the topic is created.
    pub state_topic_replication_factor: i16,
    /// `share.coordinator.state.topic.min.isr`: the topic's
    /// `min.insync.replicas`, capped at its replication factor.
    pub state_topic_min_isr: i32,
    /// `share.coordinator.state.topic.segment.bytes`.
    pub state_topic_segment_bytes: u64,
    /// `share.coordinator.snapshot.update.records.per.snapshot`: after this
    /// many ShareUpdates of a share partition the next write is a snapshot.
    pub snapshot_update_records_per_snapshot: u32,
    /// `share.coordinator.write.timeout.ms`.
    pub write_timeout_ms: u64,
    /// `share.coordinator.state.topic.prune.interval.ms`.
    pub state_topic_prune_interval_ms: u64,
}

impl Default for ShareCoordinatorConfig {
    fn default() -> Self {
        ShareCoordinatorConfig {
            state_topic_num_partitions: DEFAULT_SHARE_COORDINATOR_STATE_TOPIC_NUM_PARTITIONS,
            state_topic_replication_factor:
                DEFAULT_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR,
            state_topic_min_isr: DEFAULT_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR,
            state_topic_segment_bytes: DEFAULT_SHARE_COORDINATOR_STATE_TOPIC_SEGMENT_BYTES,
            snapshot_update_records_per_snapshot:
                DEFAULT_SHARE_COORDINATOR_SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT,
            write_timeout_ms: DEFAULT_SHARE_COORDINATOR_WRITE_TIMEOUT_MS,
            state_topic_prune_interval_ms: DEFAULT_SHARE_COORDINATOR_STATE_TOPIC_PRUNE_INTERVAL_MS,
        }
    }
}

/// The setting names this struct takes.
pub const SHARE_COORDINATOR_KEYS: &[&str] = &[
    "share.coordinator.state.topic.num.partitions",
    "share.coordinator.state.topic.replication.factor",
    "share.coordinator.state.topic.min.isr",
    "share.coordinator.state.topic.segment.bytes",
    "share.coordinator.snapshot.update.records.per.snapshot",
    "share.coordinator.write.timeout.ms",
    "share.coordinator.state.topic.prune.interval.ms",
];

impl ShareCoordinatorConfig {
    /// Sets one setting from its integer value, within Kafka's bounds; the
    /// error says what is accepted. `key` must be one of
    /// [`SHARE_COORDINATOR_KEYS`].
    pub fn set(&mut self, key: &str, v: i64) -> Result<(), String> {
        let within = |min: i64, max: i64| {
            if v < min || v > max {
                Err(format!("setting {key:?}: must be between {min} and {max}"))
            } else {
                Ok(v)
            }
        };
        let int = i32::MAX as i64;
        match key {
            "share.coordinator.state.topic.num.partitions" => {
                self.state_topic_num_partitions = within(1, int)? as i32
            }
            "share.coordinator.state.topic.replication.factor" => {
                self.state_topic_replication_factor = within(1, i16::MAX as i64)? as i16
            }
            "share.coordinator.state.topic.min.isr" => {
                self.state_topic_min_isr = within(1, i16::MAX as i64)? as i32
            }
            "share.coordinator.state.topic.segment.bytes" => {
                self.state_topic_segment_bytes = within(1024, int)? as u64
            }
            // Kafka's bounds: 0 (every write a snapshot) to 500.
            "share.coordinator.snapshot.update.records.per.snapshot" => {
                self.snapshot_update_records_per_snapshot = within(0, 500)? as u32
            }
            "share.coordinator.write.timeout.ms" => self.write_timeout_ms = within(1, int)? as u64,
            "share.coordinator.state.topic.prune.interval.ms" => {
                self.state_topic_prune_interval_ms = within(1, int)? as u64
            }
            other => return Err(format!("{other:?} is not a share coordinator setting")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_settable_and_bounds_are_checked() {
        let mut c = ShareCoordinatorConfig::default();
        for key in SHARE_COORDINATOR_KEYS {
            let v = if key.ends_with("segment.bytes") {
                2048
            } else {
                100
            };
            c.set(key, v).unwrap_or_else(|e| panic!("{key}: {e}"));
        }
        assert!(c
            .set("share.coordinator.state.topic.segment.bytes", 100)
            .is_err());
        c.set("share.coordinator.state.topic.segment.bytes", 4096)
            .unwrap();
        assert_eq!(c.state_topic_segment_bytes, 4096);
        assert_eq!(c.snapshot_update_records_per_snapshot, 100);
        assert!(c
            .set(
                "share.coordinator.snapshot.update.records.per.snapshot",
                501
            )
            .is_err());
        assert!(c.set("share.coordinator.write.timeout.ms", 0).is_err());
        assert!(c.set("share.coordinator.nope", 1).is_err());
    }
}
