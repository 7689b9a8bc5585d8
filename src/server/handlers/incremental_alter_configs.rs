//! IncrementalAlterConfigs for topics: SET and DELETE (APPEND and SUBTRACT
//! apply to list settings, which pinlog's topic settings are not).

use std::rc::Rc;

use crate::metadata::records::RESOURCE_TOPIC;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_configs::AlterConfigsResourceResponse;
use crate::protocol::messages::incremental_alter_configs::*;
use crate::server::controller;
use crate::shard::shard::Shard;

const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut responses = Vec::with_capacity(req.resources.len());
    for r in req.resources {
        let result = if r.resource_type != RESOURCE_TOPIC {
            Err((
                error_code::INVALID_REQUEST,
                "only topic configs can be altered; broker settings come from the config file"
                    .to_string(),
            ))
        } else {
            let mut changes = Vec::new();
            let mut bad = None;
            for c in r.configs {
                match c.config_operation {
                    OP_SET => changes.push((c.name, c.value)),
                    OP_DELETE => changes.push((c.name, None)),
                    op => {
                        bad = Some((
                            error_code::INVALID_CONFIG,
                            format!("operation {op} on {:?} is not supported: topic settings take SET (0) or DELETE (1)", c.name),
                        ))
                    }
                }
            }
            match bad {
                Some(e) => Err(e),
                None => match controller::alter_topic_configs(
                    shard,
                    r.resource_name.clone(),
                    changes,
                    true,
                    req.validate_only,
                )
                .await
                {
                    Ok(r) => r,
                    Err(e) => Err((error_code::KAFKA_STORAGE_ERROR, e.to_string())),
                },
            }
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
