//! IncrementalAlterConfigs (key 44), versions 0-1; flexible from version 1.
//!
//! Unlike AlterConfigs, each config names an operation, so unlisted keys are
//! left alone. Kafka reuses the names `AlterConfigsResource` and
//! `AlterableConfig` for this API's (different) request elements, and so do
//! we; the response element is the very same as AlterConfigs', and is
//! re-exported from there.

use bytes::{BufMut, BytesMut};

use crate::protocol::codec::{DecodeResult, Reader, Writer};

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

/// Smallest encoding of a string: an INT16 length or a one-byte compact one.
const fn string_min(flexible: bool) -> usize {
    if flexible {
        1
    } else {
        2
    }
}

/// Smallest encoding of an array: an INT32 count or a one-byte compact one.
const fn array_min(flexible: bool) -> usize {
    if flexible {
        1
    } else {
        4
    }
}

/// Smallest tagged-field section: one byte in flexible versions, else none.
const fn tags_min(flexible: bool) -> usize {
    if flexible {
        1
    } else {
        0
    }
}

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
        let s = string_min(flexible);
        let t = tags_min(flexible);
        let resource_min = 1 + s + array_min(flexible) + t;
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
        let flexible = version >= FLEXIBLE_FROM;
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
        Ok(IncrementalAlterConfigsResponse {
            throttle_time_ms,
            responses,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.responses.len()), flexible);
        for res in &self.responses {
            res.encode(w, flexible);
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use proptest::prelude::*;

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

    fn encode_req(m: &IncrementalAlterConfigsRequest, v: i16) -> Bytes {
        let mut b = BytesMut::new();
        m.encode(&mut b, v);
        b.freeze()
    }

    fn encode_resp(m: &IncrementalAlterConfigsResponse, v: i16) -> Bytes {
        let mut b = BytesMut::new();
        m.encode(&mut b, v);
        b.freeze()
    }

    #[test]
    fn requests_round_trip_at_every_version() {
        for v in VERSIONS {
            let req = request();
            let mut r = Reader::new(encode_req(&req, v));
            assert_eq!(
                IncrementalAlterConfigsRequest::decode(&mut r, v).unwrap(),
                req,
                "v{v}"
            );
            assert!(r.is_empty(), "v{v} left bytes unread");
        }
    }

    #[test]
    fn responses_round_trip_at_every_version() {
        for v in VERSIONS {
            let resp = response();
            let mut r = Reader::new(encode_resp(&resp, v));
            assert_eq!(
                IncrementalAlterConfigsResponse::decode(&mut r, v).unwrap(),
                resp,
                "v{v}"
            );
            assert!(r.is_empty(), "v{v} left bytes unread");
        }
    }

    #[test]
    fn every_strict_prefix_fails_to_decode() {
        for v in VERSIONS {
            let req = encode_req(&request(), v);
            for n in 0..req.len() {
                assert!(
                    IncrementalAlterConfigsRequest::decode(&mut Reader::new(req.slice(..n)), v)
                        .is_err(),
                    "request v{v} prefix {n}"
                );
            }
            let resp = encode_resp(&response(), v);
            for n in 0..resp.len() {
                assert!(
                    IncrementalAlterConfigsResponse::decode(&mut Reader::new(resp.slice(..n)), v)
                        .is_err(),
                    "response v{v} prefix {n}"
                );
            }
        }
    }

    proptest! {
        #[test]
        fn decoding_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let bytes = Bytes::from(bytes);
            for v in VERSIONS {
                let _ = IncrementalAlterConfigsRequest::decode(&mut Reader::new(bytes.clone()), v);
                let _ = IncrementalAlterConfigsResponse::decode(&mut Reader::new(bytes.clone()), v);
            }
        }

        #[test]
        fn decoding_corrupted_messages_never_panics(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        ) {
            for v in VERSIONS {
                for good in [encode_req(&request(), v), encode_resp(&response(), v)] {
                    let mut bad = good.to_vec();
                    for (at, byte) in &edits {
                        let i = at % bad.len();
                        bad[i] = *byte;
                    }
                    let bad = Bytes::from(bad);
                    let _ = IncrementalAlterConfigsRequest::decode(&mut Reader::new(bad.clone()), v);
                    let _ = IncrementalAlterConfigsResponse::decode(&mut Reader::new(bad), v);
                }
            }
        }
    }
}
