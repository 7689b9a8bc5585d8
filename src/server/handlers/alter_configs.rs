//! AlterConfigs (the legacy, replace-everything form) for topics.

use std::rc::Rc;

use crate::metadata::records::RESOURCE_TOPIC;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_configs::*;
use crate::server::controller;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let mut responses = Vec::with_capacity(req.resources.len());
    for r in req.resources {
        let (code, message) = if r.resource_type != RESOURCE_TOPIC {
            (
                error_code::INVALID_REQUEST,
                Some(
                    "only topic configs can be altered; broker settings come from the config file"
                        .to_string(),
                ),
            )
        } else {
            let changes = r.configs.into_iter().map(|c| (c.name, c.value)).collect();
            match controller::alter_topic_configs(
                shard,
                r.resource_name.clone(),
                changes,
                false,
                req.validate_only,
            )
            .await
            {
                Ok(Ok(())) => (error_code::NONE, None),
                Ok(Err((c, m))) => (c, Some(m)),
                Err(e) => (error_code::KAFKA_STORAGE_ERROR, Some(e.to_string())),
            }
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
