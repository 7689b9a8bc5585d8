//! DescribeConfigs for topics (effective values with their source) and for
//! the broker (its static settings).

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::metadata::records::{RESOURCE_BROKER, RESOURCE_TOPIC};
use crate::metadata::topic_config;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_configs::*;
use crate::server::handlers::create_topics::{CONFIG_SOURCE_DEFAULT, CONFIG_SOURCE_DYNAMIC_TOPIC};
use crate::server::state::BrokerState;
use crate::shard::shard::Shard;

/// Kafka's ConfigSource for settings from the broker's config file.
const CONFIG_SOURCE_STATIC_BROKER: i8 = 4;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let broker = BrokerState::of(shard);
    let image = broker.image();
    let mut results = Vec::with_capacity(req.resources.len());
    for r in req.resources {
        let wanted = |name: &str| {
            r.configuration_keys
                .as_ref()
                .is_none_or(|keys| keys.iter().any(|k| k == name))
        };
        let mut result = DescribeConfigsResult {
            error_code: error_code::NONE,
            error_message: None,
            resource_type: r.resource_type,
            resource_name: r.resource_name.clone(),
            configs: Vec::new(),
        };
        match r.resource_type {
            RESOURCE_TOPIC => match image.topic(&r.resource_name) {
                Some(t) => {
                    for e in topic_config::describe(&broker.config, &t.configs) {
                        if wanted(e.name) {
                            result.configs.push(DescribeConfigsResourceResult {
                                name: e.name.to_string(),
                                value: Some(e.value),
                                read_only: false,
                                config_source: if e.is_override {
                                    CONFIG_SOURCE_DYNAMIC_TOPIC
                                } else {
                                    CONFIG_SOURCE_DEFAULT
                                },
                                is_sensitive: false,
                                ..Default::default()
                            });
                        }
                    }
                }
                None => {
                    result.error_code = error_code::UNKNOWN_TOPIC_OR_PARTITION;
                    result.error_message =
                        Some(format!("topic {:?} does not exist", r.resource_name));
                }
            },
            RESOURCE_BROKER => {
                for e in topic_config::describe(&broker.config, &BTreeMap::new()) {
                    let name = broker_name(e.name);
                    if wanted(&name) {
                        result.configs.push(DescribeConfigsResourceResult {
                            name,
                            value: Some(e.value),
                            read_only: true,
                            config_source: CONFIG_SOURCE_STATIC_BROKER,
                            is_sensitive: false,
                            ..Default::default()
                        });
                    }
                }
            }
            other => {
                result.error_code = error_code::INVALID_REQUEST;
                result.error_message = Some(format!(
                    "config resource type {other} is not supported; use 2 (topic) or 4 (broker)"
                ));
            }
        }
        results.push(result);
    }
    DescribeConfigsResponse {
        throttle_time_ms: 0,
        results,
    }
}

/// The broker-level name of a topic setting (`segment.bytes` is
/// `log.segment.bytes` on the broker, and so on).
fn broker_name(topic_name: &str) -> String {
    match topic_name {
        "max.message.bytes" => "message.max.bytes".into(),
        "segment.ms" => "log.roll.ms".into(),
        "segment.index.bytes" => "log.index.size.max.bytes".into(),
        "index.interval.bytes" => "log.index.interval.bytes".into(),
        "flush.messages" => "log.flush.interval.messages".into(),
        "flush.ms" => "log.flush.interval.ms".into(),
        "message.timestamp.type"
        | "min.insync.replicas"
        | "compression.type"
        | "unclean.leader.election.enable" => topic_name.into(),
        other => format!("log.{other}"),
    }
}
