//! Dynamic broker settings: the `log.*` defaults of every topic, changed at
//! runtime with IncrementalAlterConfigs / AlterConfigs on the broker
//! resource, as Kafka's dynamic broker configs are.
//!
//! They are stored in the metadata log under their broker names (resource
//! name "", the cluster-wide default) and apply live: each shard recomputes
//! a topic's effective settings as static broker settings, then dynamic
//! broker defaults, then the topic's own overrides.

use std::collections::BTreeMap;

use crate::broker_config::BrokerConfig;
use crate::metadata::image::MetadataImage;
use crate::metadata::topic_config::{self, ConfigEntry};
use crate::replica::throttle;

/// Where a topic's effective setting comes from (Kafka's ConfigSource).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The topic's own override.
    Topic,
    /// A dynamic broker default.
    DynamicBrokerDefault,
    /// The broker's config file or Kafka's default.
    Default,
}

/// Broker setting name and the topic setting it is the default of. These
/// are the broker settings that can change at runtime.
pub const DYNAMIC_LOG_SETTINGS: &[(&str, &str)] = &[
    ("compression.type", "compression.type"),
    ("log.cleaner.delete.retention.ms", "delete.retention.ms"),
    ("log.cleaner.max.compaction.lag.ms", "max.compaction.lag.ms"),
    (
        "log.cleaner.min.cleanable.ratio",
        "min.cleanable.dirty.ratio",
    ),
    ("log.cleaner.min.compaction.lag.ms", "min.compaction.lag.ms"),
    ("log.cleanup.policy", "cleanup.policy"),
    ("log.flush.interval.messages", "flush.messages"),
    ("log.flush.interval.ms", "flush.ms"),
    ("log.index.interval.bytes", "index.interval.bytes"),
    ("log.index.size.max.bytes", "segment.index.bytes"),
    ("log.message.timestamp.type", "message.timestamp.type"),
    ("log.preallocate", "preallocate"),
    ("log.retention.bytes", "retention.bytes"),
    ("log.retention.ms", "retention.ms"),
    ("log.roll.ms", "segment.ms"),
    ("log.segment.bytes", "segment.bytes"),
    ("message.max.bytes", "max.message.bytes"),
    ("min.insync.replicas", "min.insync.replicas"),
    (
        "unclean.leader.election.enable",
        "unclean.leader.election.enable",
    ),
];

/// Kafka's throttle of moves between log directories, which
/// `kafka-reassign-partitions.sh --replica-alter-log-dirs-throttle` sets.
/// pinlog has one data directory per broker and moves nothing between
/// directories, so setting it is refused with a message (a silently
/// ignored throttle would mislead), and removing it succeeds.
pub const LOG_DIR_THROTTLE: &str = "replica.alter.log.dirs.io.max.bytes.per.second";

/// A listener's TLS settings that change at runtime, per broker, as
/// `listener.name.<listener>.<setting>`: rotating a certificate is an
/// IncrementalAlterConfigs (`kafka-configs.sh --entity-type brokers
/// --entity-name <id>`), and takes effect for new connections at once.
pub const DYNAMIC_LISTENER_TLS_SETTINGS: &[&str] = &[
    "ssl.keystore.location",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.key.password",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
];

/// Settings whose values DescribeConfigs never shows (Kafka's PASSWORD
/// type): a private key and the password of one.
const SENSITIVE_TLS_SETTINGS: &[&str] = &["ssl.keystore.key", "ssl.key.password"];

/// The listener (lower case, as written) and the setting of a dynamic
/// listener TLS setting.
pub fn listener_tls_setting(name: &str) -> Option<(&str, &str)> {
    let (listener, setting) = name.strip_prefix("listener.name.")?.split_once('.')?;
    (!listener.is_empty() && DYNAMIC_LISTENER_TLS_SETTINGS.contains(&setting))
        .then_some((listener, setting))
}

/// Whether `name` is a TLS setting, with a listener prefix or without.
pub fn is_tls_setting(name: &str) -> bool {
    listener_tls_setting(name).is_some() || DYNAMIC_LISTENER_TLS_SETTINGS.contains(&name)
}

/// Whether DescribeConfigs hides the value of `name`.
pub fn is_sensitive(name: &str) -> bool {
    listener_tls_setting(name).is_some_and(|(_, s)| SENSITIVE_TLS_SETTINGS.contains(&s))
        || SENSITIVE_TLS_SETTINGS.contains(&name)
}

/// Settings kept per broker: the replication throttle rates (which have a
/// cluster-wide default too) and the listeners' TLS settings.
pub fn is_per_broker(name: &str) -> bool {
    is_throttle_rate(name) || listener_tls_setting(name).is_some()
}

/// Refuses a TLS setting that cannot be stored as `broker`'s (`None`: the
/// cluster-wide default), saying how to write it.
pub fn check_tls_setting(broker: Option<i32>, name: &str) -> Result<(), String> {
    if !is_tls_setting(name) {
        return Ok(());
    }
    let Some((listener, _)) = listener_tls_setting(name) else {
        return Err(format!(
            "{name} changes at runtime only for one listener: write it as \
             listener.name.<listener>.{name}, for example listener.name.ssl.{name}"
        ));
    };
    if listener.chars().any(|c| c.is_ascii_uppercase()) {
        return Err(format!(
            "{name}: Kafka writes the listener name in lower case: listener.name.{}.",
            listener.to_ascii_lowercase()
        ));
    }
    match broker {
        Some(_) => Ok(()),
        None => Err(format!(
            "{name} is a broker's own certificate setting: alter it for one broker \
             (kafka-configs.sh --entity-type brokers --entity-name <node id>), not as the \
             cluster-wide default"
        )),
    }
}

/// The replication throttle rates (`core/src/replica/throttle.rs`): dynamic
/// broker settings of the cluster or of one broker.
pub fn is_throttle_rate(name: &str) -> bool {
    name == throttle::LEADER_RATE || name == throttle::FOLLOWER_RATE
}

/// Drops the removals of the log-directory throttle from `changes` (it
/// cannot be set), and refuses setting it.
pub fn without_log_dir_throttle_removals(
    changes: Vec<(String, Option<String>)>,
) -> Result<Vec<(String, Option<String>)>, String> {
    let mut kept = Vec::with_capacity(changes.len());
    for (name, value) in changes {
        if name != LOG_DIR_THROTTLE {
            kept.push((name, value));
        } else if value.is_some() {
            return Err(format!(
                "{name}: pinlog has one data directory per broker and moves no replica \
                 between directories, so there is nothing to throttle; run \
                 kafka-reassign-partitions.sh without --replica-alter-log-dirs-throttle"
            ));
        }
    }
    Ok(kept)
}

/// The topic setting a dynamic broker setting is the default of.
pub fn topic_name(broker_name: &str) -> Option<&'static str> {
    DYNAMIC_LOG_SETTINGS
        .iter()
        .find(|(b, _)| *b == broker_name)
        .map(|(_, t)| *t)
}

/// The broker-level name of a topic setting (`segment.bytes` is
/// `log.segment.bytes` on the broker).
pub fn broker_name(topic_name: &str) -> String {
    DYNAMIC_LOG_SETTINGS
        .iter()
        .find(|(_, t)| *t == topic_name)
        .map(|(b, _)| b.to_string())
        .unwrap_or_else(|| format!("log.{topic_name}"))
}

/// The names that can change at runtime, for error messages.
pub fn dynamic_names() -> String {
    DYNAMIC_LOG_SETTINGS
        .iter()
        .map(|(b, _)| *b)
        .chain([throttle::LEADER_RATE, throttle::FOLLOWER_RATE])
        .map(str::to_string)
        .chain(
            DYNAMIC_LISTENER_TLS_SETTINGS
                .iter()
                .map(|s| format!("listener.name.<listener>.{s} (per broker)")),
        )
        .collect::<Vec<_>>()
        .join(", ")
}

/// Dynamic broker defaults under topic names.
pub fn broker_defaults(image: &MetadataImage) -> BTreeMap<String, String> {
    image
        .broker_configs
        .iter()
        .filter_map(|(name, v)| topic_name(name).map(|t| (t.to_string(), v.clone())))
        .collect()
}

/// A topic's settings above the static broker defaults: the dynamic broker
/// defaults, overridden by the topic's own settings.
pub fn effective_overrides(
    image: &MetadataImage,
    topic: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut all = broker_defaults(image);
    all.extend(topic.iter().map(|(k, v)| (k.clone(), v.clone())));
    all
}

/// Every setting of a topic with its effective value and where it comes
/// from.
pub fn describe_topic(
    broker: &BrokerConfig,
    image: &MetadataImage,
    topic: &BTreeMap<String, String>,
) -> Vec<(ConfigEntry, Source)> {
    let dynamic = broker_defaults(image);
    topic_config::describe(broker, &effective_overrides(image, topic))
        .into_iter()
        .map(|e| {
            let source = if topic.contains_key(e.name) {
                Source::Topic
            } else if dynamic.contains_key(e.name) {
                Source::DynamicBrokerDefault
            } else {
                Source::Default
            };
            (e, source)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listener_tls_settings_are_per_broker_and_prefixed() {
        assert_eq!(
            listener_tls_setting("listener.name.ssl.ssl.keystore.location"),
            Some(("ssl", "ssl.keystore.location"))
        );
        assert_eq!(listener_tls_setting("ssl.keystore.location"), None);
        assert_eq!(
            listener_tls_setting("listener.name.ssl.ssl.cipher.suites"),
            None
        );
        assert!(is_per_broker("listener.name.internal.ssl.key.password"));
        assert!(is_sensitive("listener.name.internal.ssl.key.password"));
        assert!(is_sensitive("listener.name.internal.ssl.keystore.key"));
        assert!(!is_sensitive(
            "listener.name.internal.ssl.keystore.location"
        ));
        assert!(check_tls_setting(Some(1), "listener.name.ssl.ssl.keystore.location").is_ok());
        let e = check_tls_setting(None, "listener.name.ssl.ssl.keystore.location").unwrap_err();
        assert!(e.contains("--entity-name"), "{e}");
        let e = check_tls_setting(Some(1), "ssl.keystore.location").unwrap_err();
        assert!(e.contains("listener.name.<listener>."), "{e}");
        let e = check_tls_setting(Some(1), "listener.name.SSL.ssl.keystore.location").unwrap_err();
        assert!(e.contains("lower case"), "{e}");
        assert!(check_tls_setting(None, "log.retention.ms").is_ok());
    }

    #[test]
    fn names_map_both_ways() {
        for (b, t) in DYNAMIC_LOG_SETTINGS {
            assert_eq!(topic_name(b), Some(*t));
            assert_eq!(broker_name(t), *b);
        }
        assert_eq!(topic_name("listen"), None);
    }

    #[test]
    fn topic_overrides_beat_dynamic_broker_defaults() {
        let mut image = MetadataImage::empty();
        image
            .broker_configs
            .insert("log.retention.ms".into(), "1000".into());
        image
            .broker_configs
            .insert("log.segment.bytes".into(), "4096".into());
        let topic: BTreeMap<String, String> =
            [("retention.ms".to_string(), "5".to_string())].into();
        let e = effective_overrides(&image, &topic);
        assert_eq!(e["retention.ms"], "5");
        assert_eq!(e["segment.bytes"], "4096");
    }
}
