//! IncrementalAlterConfigs for topics, groups and the broker's dynamic
//! `log.*` defaults: SET and DELETE (APPEND and SUBTRACT apply to list settings,
//! which pinlog's are not). Each resource is authorized on its own after
//! the duplicates are refused, as Kafka's controller does: ALTER_CONFIGS
//! on the topic, the group, or the cluster for a broker
//! (`acl::matrix::alter_configs_rule`).

use std::rc::Rc;

use crate::acl::matrix;
use crate::controller::topics::duplicated;
use crate::metadata::image::MetadataImage;
use crate::metadata::records::{RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_configs::AlterConfigsResourceResponse;
use crate::protocol::messages::incremental_alter_configs::*;
use crate::server::controller;
use crate::server::handlers::access::{Access, AUTHORIZATION_FAILED};
use crate::server::handlers::{duplicate_resource, listener_certificates};
use crate::shard::shard::Shard;

const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: IncrementalAlterConfigsRequest,
    access: &Access<'_>,
) -> IncrementalAlterConfigsResponse {
    let image = BrokerState::of(shard).image();
    let mut responses = Vec::with_capacity(req.resources.len());
    let duplicates = duplicated(
        req.resources
            .iter()
            .map(|r| (r.resource_type, r.resource_name.clone())),
    );
    for r in req.resources {
        let result = match (r.resource_type, check_broker(shard, &r.resource_name)) {
            _ if duplicates.contains(&(r.resource_type, r.resource_name.clone())) => {
                Err(duplicate_resource())
            }
            _ if !may_alter(access, &image, r.resource_type, &r.resource_name) => {
                Err(alter_refusal(r.resource_type))
            }
            (RESOURCE_TOPIC | RESOURCE_GROUP, _) | (RESOURCE_BROKER, Ok(())) => {
                let mut changes = Vec::new();
                let mut bad = None;
                for c in r.configs {
                    match c.config_operation {
                        OP_SET => changes.push((c.name, c.value)),
                        OP_DELETE => changes.push((c.name, None)),
                        op => {
                            bad = Some((
                                error_code::INVALID_CONFIG,
                                format!("operation {op} on {:?} is not supported: pinlog's settings take SET (0) or DELETE (1)", c.name),
                            ))
                        }
                    }
                }
                match bad {
                    Some(e) => Err(e),
                    None => {
                        let done = if r.resource_type == RESOURCE_GROUP {
                            controller::alter_group_configs(
                                shard,
                                access.caller(),
                                r.resource_name.clone(),
                                changes,
                                true,
                                req.validate_only,
                            )
                            .await
                        } else if r.resource_type == RESOURCE_TOPIC {
                            controller::alter_topic_configs(
                                shard,
                                access.caller(),
                                r.resource_name.clone(),
                                changes,
                                true,
                                req.validate_only,
                            )
                            .await
                        } else {
                            listener_certificates::alter_broker_configs(
                                shard,
                                access.caller(),
                                r.resource_name.parse().ok(),
                                changes,
                                true,
                                req.validate_only,
                            )
                            .await
                        };
                        match done {
                            Ok(r) => r,
                            Err(e) => Err((e.code, e.message)),
                        }
                    }
                }
            }
            (RESOURCE_BROKER, Err(e)) => Err(e),
            (other, _) => Err((
                error_code::INVALID_REQUEST,
                format!(
                    "config resource type {other} cannot be altered; use 2 (topic), 4 (broker) or 32 (group)"
                ),
            )),
        };
        let (code, message) = match result {
            Ok(()) => (error_code::NONE, None),
            Err((c, m)) => (c, Some(m)),
        };
        responses.push(AlterConfigsResourceResponse {
            error_code: code,
            error_message: message,
            resource_type: r.resource_type,
            resource_name: r.resource_name,
        });
    }
    IncrementalAlterConfigsResponse {
        throttle_time_ms: 0,
        responses,
    }
}

/// Whether the principal may alter the configs of the resource
/// `resource_type`/`name`; a type Kafka does not know is left to be
/// refused as invalid.
pub fn may_alter(
    access: &Access<'_>,
    image: &MetadataImage,
    resource_type: i8,
    name: &str,
) -> bool {
    matrix::alter_configs_rule(resource_type)
        .is_none_or(|rule| access.allows_named(image, rule, name))
}

/// The refusal of a resource [`may_alter`] refused: the error of its
/// resource type (TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED).
pub fn alter_refusal(resource_type: i8) -> (i16, String) {
    let code = matrix::alter_configs_rule(resource_type)
        .map_or(error_code::CLUSTER_AUTHORIZATION_FAILED, |rule| {
            rule.denied_error()
        });
    (code, AUTHORIZATION_FAILED.to_string())
}

/// A broker resource names the cluster-wide default ("") or this broker.
pub fn check_broker(shard: &Rc<Shard>, name: &str) -> Result<(), (i16, String)> {
    let node = BrokerState::of(shard).node_id();
    if name.is_empty() || name == node.to_string() {
        Ok(())
    } else {
        Err((
            error_code::INVALID_REQUEST,
            format!("broker {name:?} is not this broker (node {node}); use \"\" for the cluster-wide default"),
        ))
    }
}
