//! Kafka's ConfigSource codes (DescribeConfigs, CreateTopics) and the
//! source of a setting's effective value.

use crate::metadata::dynamic_broker_config::{Source, Synonym};

/// Kafka's ConfigSource for a topic's own setting.
pub const CONFIG_SOURCE_DYNAMIC_TOPIC: i8 = 1;
/// Kafka's ConfigSource for a setting left at its default.
pub const CONFIG_SOURCE_DEFAULT: i8 = 5;
/// Kafka's ConfigSource for a dynamic cluster-wide broker default.
pub const CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER: i8 = 3;
/// Kafka's ConfigSource for settings from the broker's config file.
pub const CONFIG_SOURCE_STATIC_BROKER: i8 = 4;

/// Kafka's ConfigSource code of a topic setting's source.
pub fn config_source(source: Source) -> i8 {
    match source {
        Source::Topic => CONFIG_SOURCE_DYNAMIC_TOPIC,
        Source::DynamicBrokerDefault => CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER,
        Source::StaticBroker => CONFIG_SOURCE_STATIC_BROKER,
        Source::Default => CONFIG_SOURCE_DEFAULT,
    }
}

/// Where a setting's effective value comes from: its first synonym.
pub fn effective_source(synonyms: &[Synonym]) -> i8 {
    config_source(synonyms.first().map_or(Source::Default, |s| s.source))
}
