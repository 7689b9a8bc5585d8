//! AlterConfigs (key 33), versions 0-2; flexible from version 2.
//!
//! AlterConfigs replaces a resource's whole set of dynamic configs: any key
//! not listed reverts to its default. IncrementalAlterConfigs changes single
//! keys instead, and answers with the same per-resource result, which is
//! why [`AlterConfigsResourceResponse`] is shared with it.

use bytes::{BufMut, BytesMut};

use crate::protocol::codec::{DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 2;

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
        let s = string_min(flexible);
        let t = tags_min(flexible);
        let resource_min = 1 + s + array_min(flexible) + t;
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
        2 + string_min(flexible) + 1 + string_min(flexible) + tags_min(flexible)
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
        Ok(AlterConfigsResponse {
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

    fn encode_req(m: &AlterConfigsRequest, v: i16) -> Bytes {
        let mut b = BytesMut::new();
        m.encode(&mut b, v);
        b.freeze()
    }

    fn encode_resp(m: &AlterConfigsResponse, v: i16) -> Bytes {
        let mut b = BytesMut::new();
        m.encode(&mut b, v);
        b.freeze()
    }

    #[test]
    fn requests_round_trip_at_every_version() {
        for v in VERSIONS {
            let req = request();
            let mut r = Reader::new(encode_req(&req, v));
            assert_eq!(AlterConfigsRequest::decode(&mut r, v).unwrap(), req, "v{v}");
            assert!(r.is_empty(), "v{v} left bytes unread");
        }
    }

    #[test]
    fn responses_round_trip_at_every_version() {
        for v in VERSIONS {
            let resp = response();
            let mut r = Reader::new(encode_resp(&resp, v));
            assert_eq!(
                AlterConfigsResponse::decode(&mut r, v).unwrap(),
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
                    AlterConfigsRequest::decode(&mut Reader::new(req.slice(..n)), v).is_err(),
                    "request v{v} prefix {n}"
                );
            }
            let resp = encode_resp(&response(), v);
            for n in 0..resp.len() {
                assert!(
                    AlterConfigsResponse::decode(&mut Reader::new(resp.slice(..n)), v).is_err(),
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
                let _ = AlterConfigsRequest::decode(&mut Reader::new(bytes.clone()), v);
                let _ = AlterConfigsResponse::decode(&mut Reader::new(bytes.clone()), v);
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
                    let _ = AlterConfigsRequest::decode(&mut Reader::new(bad.clone()), v);
                    let _ = AlterConfigsResponse::decode(&mut Reader::new(bad), v);
                }
            }
        }
    }
}
