//! AlterConfigs (key 33), versions 0-2; flexible from version 2.
//!
//! AlterConfigs replaces a resource's whole set of dynamic configs: any key
//! not listed reverts to its default. IncrementalAlterConfigs changes single
//! keys instead, and answers with the same per-resource result, which is
//! why [`AlterConfigsResourceResponse`] is shared with it.

use bytes::{BufMut, BytesMut};

use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 2;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterConfigsRequest {
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
    pub value: Option<String>,
}

impl AlterConfigsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let s = min_string_bytes(flexible);
        let t = min_tags_bytes(flexible);
        let resource_min = 1 + s + min_array_bytes(flexible) + t;
        let resources = r.array("resources", flexible, resource_min, |r| {
            let resource_type = r.i8("resource_type")?;
            let resource_name = r.string("resource_name", flexible)?;
            let configs = r.array("configs", flexible, s + s + t, |r| {
                let config = AlterableConfig {
                    name: r.string("name", flexible)?,
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
        Ok(AlterConfigsRequest {
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
pub struct AlterConfigsResponse {
    pub throttle_time_ms: i32,
    pub responses: Vec<AlterConfigsResourceResponse>,
}

/// One resource's outcome, in AlterConfigs and IncrementalAlterConfigs
/// responses alike.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterConfigsResourceResponse {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub resource_type: i8,
    pub resource_name: String,
}

impl AlterConfigsResourceResponse {
    /// Smallest encoding of one result, for bounding the array count.
    pub(crate) const fn min_size(flexible: bool) -> usize {
        2 + min_string_bytes(flexible) + 1 + min_string_bytes(flexible) + min_tags_bytes(flexible)
    }

    /// Reads one result; `flexible` says whether the API version that carries
    /// it uses compact encodings and tagged fields.
    pub(crate) fn decode(r: &mut Reader, flexible: bool) -> DecodeResult<Self> {
        let result = AlterConfigsResourceResponse {
            error_code: r.i16("error_code")?,
            error_message: r.nullable_string("error_message", flexible)?,
            resource_type: r.i8("resource_type")?,
            resource_name: r.string("resource_name", flexible)?,
        };
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(result)
    }

    pub(crate) fn encode(&self, w: &mut BytesMut, flexible: bool) {
        w.put_i16(self.error_code);
        w.put_nullable_string(self.error_message.as_deref(), flexible);
        w.put_i8(self.resource_type);
        w.put_string(&self.resource_name, flexible);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

impl AlterConfigsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let (throttle_time_ms, responses) = decode_response_body(r, version >= FLEXIBLE_FROM)?;
        Ok(AlterConfigsResponse {
            throttle_time_ms,
            responses,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        encode_response_body(w, flexible, self.throttle_time_ms, &self.responses);
    }
}

/// The body of AlterConfigs and IncrementalAlterConfigs responses alike:
/// throttle time, per-resource results and (when flexible) tags.
pub(crate) fn decode_response_body(
    r: &mut Reader,
    flexible: bool,
) -> DecodeResult<(i32, Vec<AlterConfigsResourceResponse>)> {
    let throttle_time_ms = r.i32("throttle_time_ms")?;
    let responses = r.array(
        "responses",
        flexible,
        AlterConfigsResourceResponse::min_size(flexible),
        |r| AlterConfigsResourceResponse::decode(r, flexible),
    )?;
    if flexible {
        r.skip_tagged_fields()?;
    }
    Ok((throttle_time_ms, responses))
}

pub(crate) fn encode_response_body(
    w: &mut BytesMut,
    flexible: bool,
    throttle_time_ms: i32,
    responses: &[AlterConfigsResourceResponse],
) {
    w.put_i32(throttle_time_ms);
    w.put_array_len(Some(responses.len()), flexible);
    for res in responses {
        res.encode(w, flexible);
    }
    if flexible {
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=2;

    /// A request with a non-default value in every field (all versions carry
    /// the same fields).
    fn request() -> AlterConfigsRequest {
        AlterConfigsRequest {
            resources: vec![
                AlterConfigsResource {
                    resource_type: 2,
                    resource_name: "orders".into(),
                    configs: vec![
                        AlterableConfig {
                            name: "retention.ms".into(),
                            value: Some("1000".into()),
                        },
                        AlterableConfig {
                            name: "cleanup.policy".into(),
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

    fn response() -> AlterConfigsResponse {
        AlterConfigsResponse {
            throttle_time_ms: 6,
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
        AlterConfigsRequest,
        AlterConfigsResponse,
        VERSIONS,
        |_| request(),
        |_| response()
    );
}
