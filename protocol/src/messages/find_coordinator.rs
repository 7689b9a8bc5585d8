//! FindCoordinator (key 10), versions 0-6; flexible from version 3.
//!
//! A client asks which broker coordinates a consumer group, a transactional
//! id or (v6+) a share group. Up to v3 a request names one key and the
//! response answers at its top level. From v4 (KIP-699) a request names any
//! number of keys of one type, and the response carries one [`Coordinator`]
//! per key instead of the top-level fields. [`FindCoordinatorRequest::keys`]
//! reads both forms alike. Versions 5 and 6 change no field: they tell the
//! broker that the client understands TRANSACTION_ABORTABLE (v5) and share
//! groups (v6).

use bytes::{BufMut, BytesMut};

use crate::codec::{min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 3;
/// First version with `coordinator_keys` and `coordinators` (KIP-699).
const BATCHED_FROM: i16 = 4;

/// `key_type` of a consumer group; the only type a v0 request can ask for.
pub const KEY_TYPE_GROUP: i8 = 0;
/// `key_type` of a transactional id.
pub const KEY_TYPE_TRANSACTION: i8 = 1;
/// `key_type` of a share group (KIP-932), v6+.
pub const KEY_TYPE_SHARE: i8 = 2;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FindCoordinatorRequest {
    /// v0-3: the one key asked about.
    pub key: String,
    /// v1+; a v0 request reads as [`KEY_TYPE_GROUP`].
    pub key_type: i8,
    /// v4+: every key asked about, all of `key_type`.
    pub coordinator_keys: Vec<String>,
}

impl FindCoordinatorRequest {
    /// The keys asked about at `version`: `coordinator_keys` from v4, else
    /// the single `key`.
    pub fn keys(&self, version: i16) -> &[String] {
        if version >= BATCHED_FROM {
            &self.coordinator_keys
        } else {
            std::slice::from_ref(&self.key)
        }
    }

    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut req = FindCoordinatorRequest::default();
        if version < BATCHED_FROM {
            req.key = r.string("key", flexible)?;
        }
        if version >= 1 {
            req.key_type = r.i8("key_type")?;
        }
        if version >= BATCHED_FROM {
            req.coordinator_keys = r.array(
                "coordinator_keys",
                flexible,
                min_string_bytes(flexible),
                |r| r.string("coordinator_key", flexible),
            )?;
        }
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version < BATCHED_FROM {
            w.put_string(&self.key, flexible);
        }
        if version >= 1 {
            w.put_i8(self.key_type);
        }
        if version >= BATCHED_FROM {
            w.put_array_len(Some(self.coordinator_keys.len()), flexible);
            for key in &self.coordinator_keys {
                w.put_string(key, flexible);
            }
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

/// The answer. Kafka answers an error with node -1, an empty host and port
/// -1; the fields here default to 0 as in Kafka's message definition, so a
/// handler sets those itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FindCoordinatorResponse {
    /// v1+.
    pub throttle_time_ms: i32,
    /// v0-3.
    pub error_code: i16,
    /// v1-3.
    pub error_message: Option<String>,
    /// v0-3.
    pub node_id: i32,
    /// v0-3.
    pub host: String,
    /// v0-3.
    pub port: i32,
    /// v4+: one per key of the request.
    pub coordinators: Vec<Coordinator>,
}

/// The coordinator of one key (v4+).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coordinator {
    pub key: String,
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
}

impl FindCoordinatorResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut resp = FindCoordinatorResponse::default();
        if version >= 1 {
            resp.throttle_time_ms = r.i32("throttle_time_ms")?;
        }
        if version < BATCHED_FROM {
            resp.error_code = r.i16("error_code")?;
            if version >= 1 {
                resp.error_message = r.nullable_string("error_message", flexible)?;
            }
            resp.node_id = r.i32("node_id")?;
            resp.host = r.string("host", flexible)?;
            resp.port = r.i32("port")?;
        } else {
            let s = min_string_bytes(flexible);
            // Key, node, host, port, error code, message and tags.
            let min_coordinator = s + 4 + s + 4 + 2 + s + min_tags_bytes(flexible);
            resp.coordinators = r.array("coordinators", flexible, min_coordinator, |r| {
                let c = Coordinator {
                    key: r.string("key", flexible)?,
                    node_id: r.i32("node_id")?,
                    host: r.string("host", flexible)?,
                    port: r.i32("port")?,
                    error_code: r.i16("error_code")?,
                    error_message: r.nullable_string("error_message", flexible)?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(c)
            })?;
        }
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version >= 1 {
            w.put_i32(self.throttle_time_ms);
        }
        if version < BATCHED_FROM {
            w.put_i16(self.error_code);
            if version >= 1 {
                w.put_nullable_string(self.error_message.as_deref(), flexible);
            }
            w.put_i32(self.node_id);
            w.put_string(&self.host, flexible);
            w.put_i32(self.port);
        } else {
            w.put_array_len(Some(self.coordinators.len()), flexible);
            for c in &self.coordinators {
                w.put_string(&c.key, flexible);
                w.put_i32(c.node_id);
                w.put_string(&c.host, flexible);
                w.put_i32(c.port);
                w.put_i16(c.error_code);
                w.put_nullable_string(c.error_message.as_deref(), flexible);
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=6;

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> FindCoordinatorRequest {
        let batched = version >= BATCHED_FROM;
        FindCoordinatorRequest {
            key: if batched {
                String::new()
            } else {
                "payments-é".into()
            },
            key_type: if version >= 1 {
                KEY_TYPE_TRANSACTION
            } else {
                KEY_TYPE_GROUP
            },
            coordinator_keys: if batched {
                vec!["txn-1".into(), String::new(), "txn-🦀".into()]
            } else {
                Vec::new()
            },
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> FindCoordinatorResponse {
        if version >= BATCHED_FROM {
            FindCoordinatorResponse {
                throttle_time_ms: 25,
                coordinators: vec![
                    Coordinator {
                        key: "txn-1".into(),
                        node_id: 3,
                        host: "broker-3.example".into(),
                        port: 9092,
                        error_code: 0,
                        error_message: None,
                    },
                    Coordinator {
                        key: "txn-2".into(),
                        node_id: -1,
                        host: String::new(),
                        port: -1,
                        error_code: 15,
                        error_message: Some("coordinator not available".into()),
                    },
                ],
                ..FindCoordinatorResponse::default()
            }
        } else {
            FindCoordinatorResponse {
                throttle_time_ms: if version >= 1 { 25 } else { 0 },
                error_code: 14,
                error_message: (version >= 1).then(|| "loading".into()),
                node_id: 7,
                host: "broker-7.example".into(),
                port: 19092,
                coordinators: Vec::new(),
            }
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            for req in [request(v), FindCoordinatorRequest::default()] {
                assert_round_trip(&req, v);
            }
        }
    }

    #[test]
    fn edge_case_responses_round_trip() {
        for v in VERSIONS {
            for resp in [response(v), FindCoordinatorResponse::default()] {
                assert_round_trip(&resp, v);
            }
        }
    }

    #[test]
    fn keys_reads_the_single_and_the_batched_form_alike() {
        for v in VERSIONS {
            let req = request(v);
            let want: Vec<String> = if v >= BATCHED_FROM {
                req.coordinator_keys.clone()
            } else {
                vec![req.key.clone()]
            };
            assert_eq!(req.keys(v), &want[..], "v{v}");
        }
    }

    #[test]
    fn v0_requests_read_as_group_lookups() {
        let bytes = encode(&request(3), 0);
        let req = FindCoordinatorRequest::decode(&mut Reader::new(bytes), 0).unwrap();
        assert_eq!(req.key_type, KEY_TYPE_GROUP);
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_i8(KEY_TYPE_GROUP);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<FindCoordinatorRequest>(b.freeze(), 4);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<FindCoordinatorResponse>(b.freeze(), 6);
    }

    conformance_tests!(
        FindCoordinatorRequest,
        FindCoordinatorResponse,
        VERSIONS,
        request,
        response
    );
}
