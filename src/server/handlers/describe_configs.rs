//! DescribeConfigs for topics (effective values with their source), for
//! groups (their own configs over the broker's `group.*` settings) and for
//! the broker (static settings, and the dynamic defaults set at runtime).
//! Each resource is authorized on its own, as Kafka's `ConfigHelper` does
//! (`acl::matrix::describe_configs_rule`): DESCRIBE_CONFIGS on the topic,
//! the group, or the cluster for a broker, a broker logger or client
//! metrics; a refusal is that resource's error, not the request's.

use std::rc::Rc;

use crate::acl::matrix;
use crate::metadata::dynamic_broker_config;
use crate::metadata::dynamic_broker_config::Synonym;
use crate::metadata::group_config::EffectiveGroupConfig;
use crate::metadata::records::{RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC};
use crate::metadata::topic_config;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_configs::*;
use crate::replica::throttle;
use crate::server::handlers::access::{Access, AUTHORIZATION_FAILED};
use crate::server::handlers::config_sources::{
    config_source, effective_source, CONFIG_SOURCE_DEFAULT, CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER,
};
use crate::shard::shard::Shard;

/// Kafka's ConfigSource for a dynamic setting of one broker.
const CONFIG_SOURCE_DYNAMIC_BROKER: i8 = 2;
/// Kafka's ConfigSource for a group's own config (`GROUP_CONFIG`).
const CONFIG_SOURCE_GROUP: i8 = 8;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DescribeConfigsRequest,
    access: &Access<'_>,
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
        let refused = matrix::describe_configs_rule(r.resource_type)
            .filter(|rule| !access.allows_named(&image, *rule, &r.resource_name));
        if let Some(rule) = refused {
            result.error_code = rule.denied_error();
            result.error_message = Some(AUTHORIZATION_FAILED.into());
            results.push(result);
            continue;
        }
        match r.resource_type {
            RESOURCE_TOPIC => match image.topic(&r.resource_name) {
                Some(t) => {
                    for (e, synonyms) in
                        dynamic_broker_config::describe_topic(&broker.config, &image, &t.configs)
                    {
                        if wanted(e.name) {
                            result.configs.push(DescribeConfigsResourceResult {
                                name: e.name.to_string(),
                                value: Some(e.value),
                                read_only: false,
                                config_source: effective_source(&synonyms),
                                is_sensitive: false,
                                synonyms: if req.include_synonyms {
                                    described_synonyms(synonyms)
                                } else {
                                    Vec::new()
                                },
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
                let dynamic = dynamic_broker_config::broker_defaults(&image);
                // The replication throttle rates: this broker's own, else
                // the cluster's, else Kafka's default (no limit).
                let node: Option<i32> = r.resource_name.parse().ok();
                for name in [throttle::LEADER_RATE, throttle::FOLLOWER_RATE] {
                    if !wanted(name) {
                        continue;
                    }
                    let own = node.and_then(|n| image.per_broker_configs.get(&n)?.get(name));
                    let synonyms: Vec<DescribeConfigsSynonym> = [
                        (own, CONFIG_SOURCE_DYNAMIC_BROKER),
                        (
                            image.broker_configs.get(name),
                            CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER,
                        ),
                        (Some(&i64::MAX.to_string()), CONFIG_SOURCE_DEFAULT),
                    ]
                    .into_iter()
                    .filter_map(|(value, source)| {
                        Some(DescribeConfigsSynonym {
                            name: name.to_string(),
                            value: Some(value?.clone()),
                            source,
                        })
                    })
                    .collect();
                    result.configs.push(DescribeConfigsResourceResult {
                        name: name.to_string(),
                        value: synonyms[0].value.clone(),
                        read_only: false,
                        config_source: synonyms[0].source,
                        is_sensitive: false,
                        synonyms: if req.include_synonyms {
                            synonyms
                        } else {
                            Vec::new()
                        },
                        ..Default::default()
                    });
                }
                // The listeners' rotated TLS settings: this broker's own;
                // a key or a password is never shown (Kafka's PASSWORD).
                let own_tls = node.and_then(|n| image.per_broker_configs.get(&n));
                for (name, value) in own_tls.into_iter().flatten() {
                    if dynamic_broker_config::listener_tls_setting(name).is_none() || !wanted(name)
                    {
                        continue;
                    }
                    let sensitive = dynamic_broker_config::is_sensitive(name);
                    result.configs.push(DescribeConfigsResourceResult {
                        name: name.clone(),
                        value: (!sensitive).then(|| value.clone()),
                        read_only: false,
                        config_source: CONFIG_SOURCE_DYNAMIC_BROKER,
                        is_sensitive: sensitive,
                        ..Default::default()
                    });
                }
                for (e, synonyms) in
                    dynamic_broker_config::broker_synonyms(&broker.config, &dynamic)
                {
                    if topic_config::is_topic_only(e.name) {
                        continue;
                    }
                    let name = dynamic_broker_config::broker_name(e.name);
                    if wanted(&name) {
                        let changeable = dynamic_broker_config::topic_name(&name).is_some();
                        result.configs.push(DescribeConfigsResourceResult {
                            name,
                            value: Some(e.value),
                            read_only: !changeable,
                            config_source: effective_source(&synonyms),
                            is_sensitive: false,
                            synonyms: if req.include_synonyms {
                                described_synonyms(synonyms)
                            } else {
                                Vec::new()
                            },
                            ..Default::default()
                        });
                    }
                }
            }
            RESOURCE_GROUP => {
                // A group without configs of its own describes the
                // broker's, as Kafka's does (it need not exist).
                let own = image.group_configs.get(&r.resource_name);
                let effective = EffectiveGroupConfig::of(
                    &broker.config.consumer_group,
                    &broker.config.share_group,
                    own,
                );
                for (name, value, is_own) in effective.describe(own) {
                    if wanted(name) {
                        // Kafka marks what the group does not set as a
                        // default, whatever the broker's setting.
                        let source = if is_own {
                            CONFIG_SOURCE_GROUP
                        } else {
                            CONFIG_SOURCE_DEFAULT
                        };
                        // Kafka's one synonym of a group config: itself,
                        // from where its value came (a group config's
                        // name is no broker setting's).
                        let synonyms = if req.include_synonyms {
                            vec![DescribeConfigsSynonym {
                                name: name.to_string(),
                                value: Some(value.clone()),
                                source,
                            }]
                        } else {
                            Vec::new()
                        };
                        result.configs.push(DescribeConfigsResourceResult {
                            name: name.to_string(),
                            value: Some(value),
                            read_only: false,
                            config_source: source,
                            is_sensitive: false,
                            synonyms,
                            ..Default::default()
                        });
                    }
                }
            }
            other => {
                result.error_code = error_code::INVALID_REQUEST;
                result.error_message = Some(format!(
                    "config resource type {other} is not supported; use 2 (topic), 4 (broker) or 32 (group)"
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

/// The synonyms as DescribeConfigs answers them.
fn described_synonyms(synonyms: Vec<Synonym>) -> Vec<DescribeConfigsSynonym> {
    synonyms
        .into_iter()
        .map(|s| DescribeConfigsSynonym {
            name: s.name,
            value: Some(s.value),
            source: config_source(s.source),
        })
        .collect()
}
