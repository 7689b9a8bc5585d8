//! Broker settings of the transaction coordinator, with Kafka's names and
//! defaults. Set in the broker's TOML file like every other setting (see
//! `broker_config/mod.rs`).

/// Kafka's `transaction.state.log.num.partitions` default.
pub const DEFAULT_TRANSACTION_STATE_LOG_NUM_PARTITIONS: i32 = 50;
/// Kafka's `transaction.state.log.replication.factor` default.
pub const DEFAULT_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: i16 = 3;
/// Kafka's `transaction.state.log.min.isr` default.
pub const DEFAULT_TRANSACTION_STATE_LOG_MIN_ISR: i32 = 2;
/// Kafka's `transaction.state.log.segment.bytes` default: 100 MiB.
pub const DEFAULT_TRANSACTION_STATE_LOG_SEGMENT_BYTES: u64 = 100 * 1024 * 1024;
/// Kafka's `transaction.max.timeout.ms` default: 15 minutes.
pub const DEFAULT_TRANSACTION_MAX_TIMEOUT_MS: i32 = 900_000;
/// Kafka's `transaction.abort.timed.out.transaction.cleanup.interval.ms`
/// default: 10 seconds.
pub const DEFAULT_TRANSACTION_ABORT_INTERVAL_MS: u64 = 10_000;
/// Kafka's `transactional.id.expiration.ms` default: 7 days.
pub const DEFAULT_TRANSACTIONAL_ID_EXPIRATION_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// Kafka's `transaction.remove.expired.transaction.cleanup.interval.ms`
/// default: 1 hour.
pub const DEFAULT_TRANSACTION_REMOVE_EXPIRED_INTERVAL_MS: u64 = 60 * 60 * 1000;

/// `transaction.partition.verification.enable` (Kafka's default: true): a
/// leader verifies a transaction-version-1 producer's first batch of a
/// transaction with the coordinator (KIP-890 part 1). Version 2 producers
/// are always verified: that is how their partitions join the transaction.
pub const PARTITION_VERIFICATION_KEY: &str = "transaction.partition.verification.enable";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionConfig {
    /// `transaction.state.log.num.partitions`: fixed when
    /// `__transaction_state` is created.
    pub state_log_num_partitions: i32,
    /// `transaction.state.log.replication.factor`: capped at the live
    /// brokers when the topic is created, so a single node still gets one.
    pub state_log_replication_factor: i16,
    /// `transaction.state.log.min.isr`: the topic's `min.insync.replicas`,
    /// capped at its replication factor.
    pub state_log_min_isr: i32,
    /// `transaction.state.log.segment.bytes`.
    pub state_log_segment_bytes: u64,
    /// `transaction.max.timeout.ms`: the longest `transaction.timeout.ms` a
    /// producer may ask for.
    pub max_timeout_ms: i32,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
    pub abort_interval_ms: u64,
    /// `transactional.id.expiration.ms`: how long an idle id is kept.
    pub id_expiration_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`.
    pub remove_expired_interval_ms: u64,
    /// [`PARTITION_VERIFICATION_KEY`].
    pub partition_verification_enable: bool,
}

impl Default for TransactionConfig {
    fn default() -> Self {
        TransactionConfig {
            state_log_num_partitions: DEFAULT_TRANSACTION_STATE_LOG_NUM_PARTITIONS,
            state_log_replication_factor: DEFAULT_TRANSACTION_STATE_LOG_REPLICATION_FACTOR,
            state_log_min_isr: DEFAULT_TRANSACTION_STATE_LOG_MIN_ISR,
            state_log_segment_bytes: DEFAULT_TRANSACTION_STATE_LOG_SEGMENT_BYTES,
            max_timeout_ms: DEFAULT_TRANSACTION_MAX_TIMEOUT_MS,
            abort_interval_ms: DEFAULT_TRANSACTION_ABORT_INTERVAL_MS,
            id_expiration_ms: DEFAULT_TRANSACTIONAL_ID_EXPIRATION_MS,
            remove_expired_interval_ms: DEFAULT_TRANSACTION_REMOVE_EXPIRED_INTERVAL_MS,
            partition_verification_enable: true,
        }
    }
}

/// The setting names this struct takes.
pub const TRANSACTION_KEYS: &[&str] = &[
    "transaction.state.log.num.partitions",
    "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr",
    "transaction.state.log.segment.bytes",
    "transaction.max.timeout.ms",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms",
    "transactional.id.expiration.ms",
    "transaction.remove.expired.transaction.cleanup.interval.ms",
];

impl TransactionConfig {
    /// Sets one setting from its integer value; the error says what is
    /// accepted. `key` must be one of [`TRANSACTION_KEYS`].
    pub fn set(&mut self, key: &str, v: i64) -> Result<(), String> {
        let at_least = |min: i64, max: i64| {
            if v < min || v > max {
                Err(format!("setting {key:?}: must be between {min} and {max}"))
            } else {
                Ok(v)
            }
        };
        let int = i32::MAX as i64;
        match key {
            "transaction.state.log.num.partitions" => {
                self.state_log_num_partitions = at_least(1, int)? as i32
            }
            "transaction.state.log.replication.factor" => {
                self.state_log_replication_factor = at_least(1, i16::MAX as i64)? as i16
            }
            "transaction.state.log.min.isr" => self.state_log_min_isr = at_least(1, int)? as i32,
            "transaction.state.log.segment.bytes" => {
                self.state_log_segment_bytes = at_least(1024, int)? as u64
            }
            "transaction.max.timeout.ms" => self.max_timeout_ms = at_least(1, int)? as i32,
            "transaction.abort.timed.out.transaction.cleanup.interval.ms" => {
                self.abort_interval_ms = at_least(1, int)? as u64
            }
            "transactional.id.expiration.ms" => self.id_expiration_ms = at_least(1, int)?,
            "transaction.remove.expired.transaction.cleanup.interval.ms" => {
                self.remove_expired_interval_ms = at_least(1, int)? as u64
            }
            other => {
                return Err(format!(
                    "{other:?} is not a transaction coordinator setting"
                ))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_settable_and_bounds_are_checked() {
        let mut c = TransactionConfig::default();
        for key in TRANSACTION_KEYS {
            c.set(key, 2048).unwrap();
        }
        assert_eq!(c.max_timeout_ms, 2048);
        assert!(c.set("transaction.max.timeout.ms", 0).is_err());
        assert!(c.set("transaction.state.log.segment.bytes", 10).is_err());
        assert!(c.set("transaction.nope", 1).is_err());
    }
}
