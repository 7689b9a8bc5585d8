//! Topic-level settings: names, validation, and their effective values
//! (a topic override, else the broker default), as Kafka defines them.

use std::collections::BTreeMap;

use crate::broker_config::{BrokerConfig, TimestampType};
use crate::config::{CleanupPolicy, LogConfig};
use crate::replica::throttle::{self, ThrottledReplicas};

/// One setting as DescribeConfigs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub name: &'static str,
    pub value: String,
    /// The topic overrides the broker default.
    pub is_override: bool,
}

#[derive(Clone, Copy)]
enum Kind {
    /// Non-negative integer.
    Count,
    /// Integer where -1 means unlimited.
    LongOrUnlimited,
    Bool,
    /// A fraction in `[0, 1]`.
    Ratio,
    CleanupPolicy,
    TimestampType,
    Compression,
    /// `*` or `partition:broker` pairs (the replication throttles' lists).
    ThrottledReplicas,
}

/// Every topic setting pinlog accepts, with how to check it.
const DEFINITIONS: &[(&str, Kind)] = &[
    ("cleanup.policy", Kind::CleanupPolicy),
    ("compression.type", Kind::Compression),
    ("delete.retention.ms", Kind::Count),
    ("flush.messages", Kind::Count),
    ("flush.ms", Kind::Count),
    (throttle::FOLLOWER_REPLICAS, Kind::ThrottledReplicas),
    ("index.interval.bytes", Kind::Count),
    (throttle::LEADER_REPLICAS, Kind::ThrottledReplicas),
    ("max.compaction.lag.ms", Kind::Count),
    ("max.message.bytes", Kind::Count),
    ("message.timestamp.type", Kind::TimestampType),
    ("min.cleanable.dirty.ratio", Kind::Ratio),
    ("min.compaction.lag.ms", Kind::Count),
    ("min.insync.replicas", Kind::Count),
    ("preallocate", Kind::Bool),
    ("retention.bytes", Kind::LongOrUnlimited),
    ("retention.ms", Kind::LongOrUnlimited),
    ("segment.bytes", Kind::Count),
    ("segment.index.bytes", Kind::Count),
    ("segment.ms", Kind::Count),
    ("unclean.leader.election.enable", Kind::Bool),
];

/// Checks one topic setting; the error says what is accepted.
pub fn validate(name: &str, value: &str) -> Result<(), String> {
    let Some((_, kind)) = DEFINITIONS.iter().find(|(n, _)| *n == name) else {
        let known: Vec<&str> = DEFINITIONS.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "unknown topic config {name:?}; supported: {}",
            known.join(", ")
        ));
    };
    let ok = match kind {
        Kind::Count => value.parse::<u64>().is_ok(),
        Kind::LongOrUnlimited => value.parse::<i64>().is_ok_and(|v| v >= -1),
        Kind::Bool => matches!(value, "true" | "false"),
        Kind::Ratio => value.parse::<f64>().is_ok_and(|v| (0.0..=1.0).contains(&v)),
        Kind::CleanupPolicy => CleanupPolicy::parse(value).is_some(),
        Kind::TimestampType => matches!(value, "CreateTime" | "LogAppendTime"),
        Kind::Compression => matches!(
            value,
            "producer" | "uncompressed" | "gzip" | "snappy" | "lz4" | "zstd"
        ),
        Kind::ThrottledReplicas => {
            return ThrottledReplicas::parse(value)
                .map(|_| ())
                .map_err(|e| format!("{name}: {e}"))
        }
    };
    let also = match (name, kind) {
        ("segment.bytes", _) => value
            .parse::<u64>()
            // Kafka's range: an int of at least 14. Index entries hold
            // 32-bit positions, so a larger segment would fail its appends.
            .is_ok_and(|v| (14..=i32::MAX as u64).contains(&v)),
        ("min.insync.replicas", _) => value.parse::<u64>().is_ok_and(|v| v >= 1),
        // Kafka's range: at least 1 ms, at most Long.MAX_VALUE.
        ("max.compaction.lag.ms", _) => value
            .parse::<u64>()
            .is_ok_and(|v| (1..=i64::MAX as u64).contains(&v)),
        ("delete.retention.ms" | "min.compaction.lag.ms", _) => {
            value.parse::<u64>().is_ok_and(|v| v <= i64::MAX as u64)
        }
        _ => true,
    };
    if ok && also {
        Ok(())
    } else {
        Err(format!("invalid value {value:?} for topic config {name:?}"))
    }
}

/// Topic settings with no broker default (the replication throttles'
/// replica lists): a broker's DescribeConfigs leaves them out.
pub fn is_topic_only(name: &str) -> bool {
    name == throttle::LEADER_REPLICAS || name == throttle::FOLLOWER_REPLICAS
}

/// Broker defaults for every topic setting, as strings.
fn defaults(broker: &BrokerConfig) -> BTreeMap<&'static str, String> {
    let l = &broker.log;
    let ts = match broker.message_timestamp_type {
        TimestampType::CreateTime => "CreateTime",
        TimestampType::LogAppendTime => "LogAppendTime",
    };
    [
        ("cleanup.policy", l.cleanup_policy.to_string()),
        ("compression.type", "producer".to_string()),
        ("delete.retention.ms", l.delete_retention_ms.to_string()),
        ("flush.messages", l.flush_messages.to_string()),
        ("flush.ms", l.flush_ms.to_string()),
        (throttle::FOLLOWER_REPLICAS, String::new()),
        ("index.interval.bytes", l.index_interval_bytes.to_string()),
        (throttle::LEADER_REPLICAS, String::new()),
        ("max.compaction.lag.ms", l.max_compaction_lag_ms.to_string()),
        ("max.message.bytes", l.max_batch_bytes.to_string()),
        ("message.timestamp.type", ts.to_string()),
        (
            "min.cleanable.dirty.ratio",
            l.min_cleanable_dirty_ratio.to_string(),
        ),
        ("min.compaction.lag.ms", l.min_compaction_lag_ms.to_string()),
        ("min.insync.replicas", "1".to_string()),
        ("preallocate", l.preallocate.to_string()),
        ("retention.bytes", l.retention_bytes.to_string()),
        ("retention.ms", l.retention_ms.to_string()),
        ("segment.bytes", l.segment_bytes.to_string()),
        ("segment.index.bytes", l.segment_index_bytes.to_string()),
        ("segment.ms", l.segment_ms.to_string()),
        ("unclean.leader.election.enable", "false".to_string()),
    ]
    .into_iter()
    .collect()
}

/// Every topic setting with its effective value.
pub fn describe(broker: &BrokerConfig, overrides: &BTreeMap<String, String>) -> Vec<ConfigEntry> {
    defaults(broker)
        .into_iter()
        .map(|(name, default)| match overrides.get(name) {
            Some(v) => ConfigEntry {
                name,
                value: v.clone(),
                is_override: true,
            },
            None => ConfigEntry {
                name,
                value: default,
                is_override: false,
            },
        })
        .collect()
}

/// The log settings of a topic: overrides on top of broker defaults.
/// Overrides were validated when set; a bad one falls back to the default.
pub fn log_config(broker: &BrokerConfig, overrides: &BTreeMap<String, String>) -> LogConfig {
    let mut c = broker.log.clone();
    let get = |k: &str| overrides.get(k).map(String::as_str);
    let num = |k: &str| get(k).and_then(|v| v.parse::<u64>().ok());
    let signed = |k: &str| get(k).and_then(|v| v.parse::<i64>().ok());
    if let Some(v) = num("segment.bytes") {
        c.segment_bytes = v;
    }
    if let Some(v) = signed("segment.ms") {
        c.segment_ms = v;
    }
    if let Some(v) = num("segment.index.bytes") {
        c.segment_index_bytes = v;
    }
    if let Some(v) = num("index.interval.bytes") {
        c.index_interval_bytes = v;
    }
    if let Some(v) = num("flush.messages") {
        c.flush_messages = v;
    }
    if let Some(v) = num("flush.ms") {
        c.flush_ms = v;
    }
    if let Some(v) = signed("retention.ms") {
        c.retention_ms = v;
    }
    if let Some(v) = signed("retention.bytes") {
        c.retention_bytes = v;
    }
    if let Some(v) = num("max.message.bytes") {
        c.max_batch_bytes = v as usize;
    }
    if let Some(v) = get("preallocate") {
        c.preallocate = v == "true";
    }
    if let Some(v) = get("cleanup.policy").and_then(CleanupPolicy::parse) {
        c.cleanup_policy = v;
    }
    if let Some(v) = signed("delete.retention.ms") {
        c.delete_retention_ms = v;
    }
    if let Some(v) = get("min.cleanable.dirty.ratio").and_then(|v| v.parse::<f64>().ok()) {
        c.min_cleanable_dirty_ratio = v;
    }
    if let Some(v) = signed("min.compaction.lag.ms") {
        c.min_compaction_lag_ms = v;
    }
    if let Some(v) = signed("max.compaction.lag.ms") {
        c.max_compaction_lag_ms = v;
    }
    c
}

/// The topic's `message.timestamp.type`.
pub fn timestamp_type(
    broker: &BrokerConfig,
    overrides: &BTreeMap<String, String>,
) -> TimestampType {
    match overrides.get("message.timestamp.type").map(String::as_str) {
        Some("LogAppendTime") => TimestampType::LogAppendTime,
        Some("CreateTime") => TimestampType::CreateTime,
        _ => broker.message_timestamp_type,
    }
}

/// The topic's `min.insync.replicas` (Kafka's default 1): how many ISR
/// members an acks=all write needs.
pub fn min_insync_replicas(overrides: &BTreeMap<String, String>) -> usize {
    overrides
        .get("min.insync.replicas")
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&v| v >= 1)
        .unwrap_or(1)
}

/// The topic's `unclean.leader.election.enable` (Kafka's default false).
pub fn unclean_leader_election(overrides: &BTreeMap<String, String>) -> bool {
    overrides
        .get("unclean.leader.election.enable")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// Whether the topic's `cleanup.policy` includes `delete` (the broker
/// default does). Kafka refuses DeleteRecords on a compact-only topic: its
/// old records are meant to be removed by compaction alone.
pub fn cleanup_policy_deletes(overrides: &BTreeMap<String, String>) -> bool {
    overrides
        .get("cleanup.policy")
        .is_none_or(|policy| policy.split(',').any(|p| p.trim() == "delete"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_compact_only_topics_refuse_deletion() {
        let with = |policy: &str| BTreeMap::from([("cleanup.policy".to_string(), policy.into())]);
        assert!(cleanup_policy_deletes(&BTreeMap::new()));
        assert!(cleanup_policy_deletes(&with("delete")));
        assert!(cleanup_policy_deletes(&with("compact,delete")));
        assert!(cleanup_policy_deletes(&with("delete,compact")));
        assert!(!cleanup_policy_deletes(&with("compact")));
    }

    #[test]
    fn validation_names_what_is_wrong() {
        assert!(validate("retention.ms", "-1").is_ok());
        assert!(validate("retention.ms", "-2").is_err());
        assert!(validate("segment.bytes", "10").is_err());
        // Kafka's int range: 32-bit positions in the index.
        assert!(validate("segment.bytes", "2147483647").is_ok());
        assert!(validate("segment.bytes", "2147483648").is_err());
        assert!(validate("cleanup.policy", "compact,delete").is_ok());
        assert!(validate("cleanup.policy", "compact,compact").is_err());
        assert!(validate("min.cleanable.dirty.ratio", "0.25").is_ok());
        assert!(validate("min.cleanable.dirty.ratio", "1.5").is_err());
        assert!(validate("max.compaction.lag.ms", "0").is_err());
        assert!(validate("delete.retention.ms", "0").is_ok());
        assert!(validate("min.compaction.lag.ms", "-1").is_err());
        let e = validate("retention.msx", "1").unwrap_err();
        assert!(e.contains("unknown topic config"), "{e}");
    }

    #[test]
    fn overrides_win_over_broker_defaults() {
        let broker = BrokerConfig::default();
        let mut o = BTreeMap::new();
        o.insert("segment.bytes".to_string(), "1048576".to_string());
        let c = log_config(&broker, &o);
        assert_eq!(c.segment_bytes, 1 << 20);
        assert_eq!(c.retention_ms, broker.log.retention_ms);
        o.insert("cleanup.policy".to_string(), "compact".to_string());
        o.insert("min.cleanable.dirty.ratio".to_string(), "0.1".to_string());
        o.insert("delete.retention.ms".to_string(), "100".to_string());
        let c = log_config(&broker, &o);
        assert_eq!(c.cleanup_policy, CleanupPolicy::COMPACT);
        assert_eq!(c.min_cleanable_dirty_ratio, 0.1);
        assert_eq!(c.delete_retention_ms, 100);
        assert_eq!(c.max_compaction_lag_ms, i64::MAX);
        let d = describe(&broker, &o);
        let seg = d.iter().find(|e| e.name == "segment.bytes").unwrap();
        assert!(seg.is_override);
        assert!(
            !d.iter()
                .find(|e| e.name == "retention.ms")
                .unwrap()
                .is_override
        );
    }

    #[test]
    fn throttled_replica_lists_are_validated() {
        for name in [throttle::LEADER_REPLICAS, throttle::FOLLOWER_REPLICAS] {
            assert!(validate(name, "0:1,1:2").is_ok());
            assert!(validate(name, "*").is_ok());
            assert!(validate(name, "").is_ok());
            let err = validate(name, "0-1").unwrap_err();
            assert!(err.contains("partition:broker"), "{err}");
            assert!(is_topic_only(name));
        }
    }
}
