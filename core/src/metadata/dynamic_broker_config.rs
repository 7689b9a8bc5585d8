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
    /// The broker's config file.
    StaticBroker,
    /// Kafka's default.
    Default,
}

/// One place a setting's value may come from, and the value there: what
/// DescribeConfigs lists as its synonyms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synonym {
    pub name: String,
    pub value: String,
    pub source: Source,
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

/// Every setting of a topic with its effective value and its synonyms in
/// Kafka's order of precedence: the topic's own value, the dynamic broker
/// default, the config file's value, Kafka's default, each under its own
/// name (the last three under the broker setting's). The first synonym is
/// where the effective value comes from.
pub fn describe_topic(
    broker: &BrokerConfig,
    image: &MetadataImage,
    topic: &BTreeMap<String, String>,
) -> Vec<(ConfigEntry, Vec<Synonym>)> {
    let dynamic = broker_defaults(image);
    // `topic_config::describe` lists the same settings in one order.
    topic_config::describe(broker, &effective_overrides(image, topic))
        .into_iter()
        .zip(broker_synonyms(broker, &dynamic))
        .map(|(e, (b, below))| {
            debug_assert_eq!(e.name, b.name);
            let own = topic.get(e.name).map(|v| Synonym {
                name: e.name.to_string(),
                value: v.clone(),
                source: Source::Topic,
            });
            let synonyms = own.into_iter().chain(below).collect();
            (e, synonyms)
        })
        .collect()
}

/// The topic settings' broker defaults (under topic names), each with its
/// synonyms below a topic's own value: the dynamic broker default in
/// `dynamic` (under topic names), the config file's value, Kafka's
/// default, under the broker setting's name.
pub fn broker_synonyms(
    broker: &BrokerConfig,
    dynamic: &BTreeMap<String, String>,
) -> Vec<(ConfigEntry, Vec<Synonym>)> {
    let none = BTreeMap::new();
    let kafka = topic_config::describe(&BrokerConfig::default(), &none);
    topic_config::describe(broker, dynamic)
        .into_iter()
        .zip(topic_config::describe(broker, &none))
        .zip(kafka)
        .map(|((effective, file), kafka)| {
            debug_assert!(effective.name == file.name && file.name == kafka.name);
            // A topic-only setting has no broker setting behind it: its
            // default goes under its own name.
            let name = if topic_config::is_topic_only(effective.name) {
                effective.name.to_string()
            } else {
                broker_name(effective.name)
            };
            let mut synonyms = Vec::new();
            if let Some(v) = dynamic.get(effective.name) {
                synonyms.push(Synonym {
                    name: name.clone(),
                    value: v.clone(),
                    source: Source::DynamicBrokerDefault,
                });
            }
            // The file may name a few settings as topics do
            // (`message.timestamp.type`).
            if broker.file_settings.contains(&name) || broker.file_settings.contains(effective.name)
            {
                synonyms.push(Synonym {
                    name: name.clone(),
                    value: file.value,
                    source: Source::StaticBroker,
                });
            }
            synonyms.push(Synonym {
                name,
                value: kafka.value,
                source: Source::Default,
            });
            (effective, synonyms)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(synonyms: &[Synonym]) -> Vec<(&str, &str, Source)> {
        synonyms
            .iter()
            .map(|s| (s.name.as_str(), s.value.as_str(), s.source))
            .collect()
    }

    #[test]
    fn topic_settings_list_their_synonyms_in_kafkas_order() {
        let mut broker = BrokerConfig::default();
        broker.log.retention_ms = 3_600_000;
        broker.file_settings.insert("log.retention.ms".into());
        let mut image = MetadataImage::default();
        image
            .broker_configs
            .insert("log.retention.ms".into(), "7200000".into());
        let topic = BTreeMap::from([("retention.ms".to_string(), "60000".to_string())]);
        let described = describe_topic(&broker, &image, &topic);
        let synonyms_of = |name: &str| {
            let (e, s) = described.iter().find(|(e, _)| e.name == name).unwrap();
            (e.value.clone(), listed(s))
        };
        let kafka_default = (7 * 24 * 3_600_000i64).to_string();
        assert_eq!(
            synonyms_of("retention.ms"),
            (
                "60000".to_string(),
                vec![
                    ("retention.ms", "60000", Source::Topic),
                    ("log.retention.ms", "7200000", Source::DynamicBrokerDefault),
                    ("log.retention.ms", "3600000", Source::StaticBroker),
                    ("log.retention.ms", kafka_default.as_str(), Source::Default),
                ]
            )
        );
        // Set nowhere: Kafka's default alone, under the broker's name.
        let (value, synonyms) = synonyms_of("segment.bytes");
        assert_eq!(
            synonyms,
            vec![("log.segment.bytes", value.as_str(), Source::Default)]
        );
        // The broker resource: the same without the topic's own value.
        let at_broker = broker_synonyms(&broker, &broker_defaults(&image));
        let (e, s) = at_broker
            .iter()
            .find(|(e, _)| e.name == "retention.ms")
            .unwrap();
        assert_eq!(e.value, "7200000");
        assert_eq!(listed(s)[0].2, Source::DynamicBrokerDefault);
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn a_setting_the_file_names_as_topics_do_is_the_files() {
        let broker = BrokerConfig::load(&crate::broker_config::Overrides {
            config_file: Some(crate::broker_config::ConfigFile {
                path: "pinlog.toml".into(),
                text: "message.timestamp.type = \"LogAppendTime\"\n".into(),
            }),
            ..Default::default()
        })
        .unwrap();
        let described = describe_topic(&broker, &MetadataImage::default(), &BTreeMap::new());
        let (e, s) = described
            .iter()
            .find(|(e, _)| e.name == "message.timestamp.type")
            .unwrap();
        assert_eq!(e.value, "LogAppendTime");
        assert_eq!(s[0].source, Source::StaticBroker);
        assert_eq!(s[0].value, "LogAppendTime");
    }

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
