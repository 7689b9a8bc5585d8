//! IncrementalAlterConfigs (key 44), versions 0-1; flexible from version 1.
//!
//! Unlike AlterConfigs, each config names an operation, so unlisted keys are
//! left alone. Kafka reuses the names `AlterConfigsResource` and
//! `AlterableConfig` for this API's (different) request elements, and so do
//! we; the response element is the very same as AlterConfigs', and is
//! re-exported from there.

use bytes::{BufMut, BytesMut};

use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

pub use super::alter_configs::AlterConfigsResourceResponse;

const FLEXIBLE_FROM: i16 = 1;

/// `AlterableConfig::config_operation`: set the key to `value`.
pub const OP_SET: i8 = 0;
/// Remove the key, reverting it to its default.
pub const OP_DELETE: i8 = 1;
/// Add `value`'s items to a list-valued key.
pub const OP_APPEND: i8 = 2;
/// Remove `value`'s items from a list-valued key.
pub const OP_SUBTRACT: i8 = 3;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IncrementalAlterConfigsRequest {
    pub resources: Vec<AlterConfigsResource>,
    pub validate_only: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterConfigsResource {
    /// 2 = topic, 4 = broker, 8 = broker logger.
    pub resource_type: i8,
    pub resource_name: String,
    pub configs: Vec<AlterableConfig>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterableConfig {
    pub name: String,
    /// One of [`OP_SET`], [`OP_DELETE`], [`OP_APPEND`], [`OP_SUBTRACT`].
    pub config_operation: i8,
    pub value: Option<String>,
}

impl IncrementalAlterConfigsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let s = min_string_bytes(flexible);
        let t = min_tags_bytes(flexible);
        let resource_min = 1 + s + min_array_bytes(flexible) + t;
        let resources = r.array("resources", flexible, resource_min, |r| {
            let resource_type = r.i8("resource_type")?;
            let resource_name = r.string("resource_name", flexible)?;
            let configs = r.array("configs", flexible, s + 1 + s + t, |r| {
                let config = AlterableConfig {
                    name: r.string("name", flexible)?,
                    config_operation: r.i8("config_operation")?,
                    value: r.nullable_string("value", flexible)?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(config)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(AlterConfigsResource {
                resource_type,
                resource_name,
                configs,
            })
        })?;
        let validate_only = r.bool("validate_only")?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(IncrementalAlterConfigsRequest {
            resources,
            validate_only,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_array_len(Some(self.resources.len()), flexible);
        for res in &self.resources {
            w.put_i8(res.resource_type);
            w.put_string(&res.resource_name, flexible);
            w.put_array_len(Some(res.configs.len()), flexible);
            for c in &res.configs {
                w.put_string(&c.name, flexible);
                w.put_i8(c.config_operation);
                w.put_nullable_string(c.value.as_deref(), flexible);
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
        w.put_bool(self.validate_only);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IncrementalAlterConfigsResponse {
    pub throttle_time_ms: i32,
    pub responses: Vec<AlterConfigsResourceResponse>,
}

impl IncrementalAlterConfigsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let (throttle_time_ms, responses) =
            super::alter_configs::decode_response_body(r, version >= FLEXIBLE_FROM)?;
        Ok(IncrementalAlterConfigsResponse {
            throttle_time_ms,
            responses,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        super::alter_configs::encode_response_body(
            w,
            flexible,
            self.throttle_time_ms,
            &self.responses,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=1;

    /// A request with a non-default value in every field (both versions
    /// carry the same fields).
    fn request() -> IncrementalAlterConfigsRequest {
        IncrementalAlterConfigsRequest {
            resources: vec![
                AlterConfigsResource {
                    resource_type: 2,
                    resource_name: "orders".into(),
                    configs: vec![
                        AlterableConfig {
                            name: "retention.ms".into(),
                            config_operation: OP_SET,
                            value: Some("1000".into()),
                        },
                        AlterableConfig {
                            name: "cleanup.policy".into(),
                            config_operation: OP_APPEND,
                            value: Some("compact".into()),
                        },
                        AlterableConfig {
                            name: "segment.ms".into(),
                            config_operation: OP_DELETE,
                            value: None,
                        },
                    ],
                },
                AlterConfigsResource {
                    resource_type: 4,
                    resource_name: "1".into(),
                    configs: vec![],
                },
            ],
            validate_only: true,
        }
    }

    fn response() -> IncrementalAlterConfigsResponse {
        IncrementalAlterConfigsResponse {
            throttle_time_ms: 8,
            responses: vec![
                AlterConfigsResourceResponse {
                    error_code: 40,
                    error_message: Some("invalid value".into()),
                    resource_type: 2,
                    resource_name: "orders".into(),
                },
                AlterConfigsResourceResponse {
                    error_code: 0,
                    error_message: None,
                    resource_type: 4,
                    resource_name: "1".into(),
                },
            ],
        }
    }

    conformance_tests!(
        IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsResponse,
        VERSIONS,
        |_| request(),
        |_| response()
    );
}
