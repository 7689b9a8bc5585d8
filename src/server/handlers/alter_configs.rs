//! AlterConfigs (the legacy, replace-everything form) for topics, groups
//! and the broker's dynamic `log.*` defaults, each resource authorized as
//! in IncrementalAlterConfigs.

use std::rc::Rc;

use crate::controller::topics::duplicated;
use crate::metadata::records::{RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_configs::*;
use crate::server::controller;
use crate::server::handlers::access::Access;
use crate::server::handlers::incremental_alter_configs::{alter_refusal, check_broker, may_alter};
use crate::server::handlers::{duplicate_resource, listener_certificates};
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: AlterConfigsRequest,
    access: &Access<'_>,
) -> AlterConfigsResponse {
    let image = BrokerState::of(shard).image();
    let mut responses = Vec::with_capacity(req.resources.len());
    let duplicates = duplicated(
        req.resources
            .iter()
            .map(|r| (r.resource_type, r.resource_name.clone())),
    );
    for r in req.resources {
        let changes: Vec<(String, Option<String>)> =
            r.configs.into_iter().map(|c| (c.name, c.value)).collect();
        let done = match r.resource_type {
            _ if duplicates.contains(&(r.resource_type, r.resource_name.clone())) => {
                Ok(Err(duplicate_resource()))
            }
            _ if !may_alter(access, &image, r.resource_type, &r.resource_name) => {
                Ok(Err(alter_refusal(r.resource_type)))
            }
            RESOURCE_TOPIC => {
                controller::alter_topic_configs(
                    shard,
                    access.caller(),
                    r.resource_name.clone(),
                    changes,
                    false,
                    req.validate_only,
                )
                .await
            }
            RESOURCE_GROUP => {
                controller::alter_group_configs(
                    shard,
                    access.caller(),
                    r.resource_name.clone(),
                    changes,
                    false,
                    req.validate_only,
                )
                .await
            }
            RESOURCE_BROKER => match check_broker(shard, &r.resource_name) {
                Ok(()) => {
                    listener_certificates::alter_broker_configs(
                        shard,
                        access.caller(),
                        r.resource_name.parse().ok(),
                        changes,
                        false,
                        req.validate_only,
                    )
                    .await
                }
                Err(e) => Ok(Err(e)),
            },
            other => Ok(Err((
                error_code::INVALID_REQUEST,
                format!(
                    "config resource type {other} cannot be altered; use 2 (topic), 4 (broker) or 32 (group)"
                ),
            ))),
        };
        let (code, message) = match done {
            Ok(Ok(())) => (error_code::NONE, None),
            Ok(Err((c, m))) => (c, Some(m)),
            Err(e) => (e.code, Some(e.message)),
        };
        responses.push(AlterConfigsResourceResponse {
            error_code: code,
            error_message: message,
            resource_type: r.resource_type,
            resource_name: r.resource_name,
        });
    }
    AlterConfigsResponse {
        throttle_time_ms: 0,
        responses,
    }
}
