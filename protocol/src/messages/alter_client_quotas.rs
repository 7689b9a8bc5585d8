//! AlterClientQuotas (key 49), versions 0-1; flexible from version 1.
//!
//! Sets or removes quotas of client entities (`kafka-configs.sh --alter
//! --entity-type users --add-config producer_byte_rate=...`,
//! `Admin.alterClientQuotas`, KIP-546). Entities are encoded as in
//! DescribeClientQuotas ([`EntityData`]); the response has one entry per
//! entity of the request.

use bytes::{BufMut, BytesMut};

use super::describe_client_quotas::{min_entity_bytes, same_bits, EntityData};
use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 1;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterClientQuotasRequest {
    pub entries: Vec<EntryData>,
    /// Check the changes, apply none.
    pub validate_only: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryData {
    pub entity: Vec<EntityData>,
    pub ops: Vec<OpData>,
}

/// Equal when the values have the same bits, as for DescribeClientQuotas'
/// values.
#[derive(Debug, Clone, Default)]
pub struct OpData {
    /// The quota's name, such as `consumer_byte_rate`.
    pub key: String,
    /// The new value; ignored when `remove` is set.
    pub value: f64,
    /// Remove the quota instead of setting it.
    pub remove: bool,
}

impl PartialEq for OpData {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && same_bits(self.value, other.value) && self.remove == other.remove
    }
}

impl Eq for OpData {}

impl AlterClientQuotasRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let (s, a, t) = (
            min_string_bytes(flexible),
            min_array_bytes(flexible),
            min_tags_bytes(flexible),
        );
        let entries = r.array("entries", flexible, a + a + t, |r| {
            let entity = r.array("entity", flexible, min_entity_bytes(flexible), |r| {
                EntityData::decode(r, flexible)
            })?;
            let ops = r.array("ops", flexible, s + 8 + 1 + t, |r| {
                let op = OpData {
                    key: r.string("key", flexible)?,
                    value: r.f64("value")?,
                    remove: r.bool("remove")?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(op)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(EntryData { entity, ops })
        })?;
        let validate_only = r.bool("validate_only")?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(AlterClientQuotasRequest {
            entries,
            validate_only,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_array_len(Some(self.entries.len()), flexible);
        for entry in &self.entries {
            w.put_array_len(Some(entry.entity.len()), flexible);
            for e in &entry.entity {
                e.encode(w, flexible);
            }
            w.put_array_len(Some(entry.ops.len()), flexible);
            for op in &entry.ops {
                w.put_string(&op.key, flexible);
                w.put_f64(op.value);
                w.put_bool(op.remove);
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
pub struct AlterClientQuotasResponse {
    pub throttle_time_ms: i32,
    pub entries: Vec<EntryResult>,
}

/// The outcome for one entity of the request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryResult {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub entity: Vec<EntityData>,
}

impl AlterClientQuotasResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let (s, a, t) = (
            min_string_bytes(flexible),
            min_array_bytes(flexible),
            min_tags_bytes(flexible),
        );
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let entries = r.array("entries", flexible, 2 + s + a + t, |r| {
            let error_code = r.i16("error_code")?;
            let error_message = r.nullable_string("error_message", flexible)?;
            let entity = r.array("entity", flexible, min_entity_bytes(flexible), |r| {
                EntityData::decode(r, flexible)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(EntryResult {
                error_code,
                error_message,
                entity,
            })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(AlterClientQuotasResponse {
            throttle_time_ms,
            entries,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.entries.len()), flexible);
        for entry in &self.entries {
            w.put_i16(entry.error_code);
            w.put_nullable_string(entry.error_message.as_deref(), flexible);
            w.put_array_len(Some(entry.entity.len()), flexible);
            for e in &entry.entity {
                e.encode(w, flexible);
            }
            if flexible {
                w.put_empty_tagged_fields();
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=1;

    fn alice() -> Vec<EntityData> {
        vec![
            EntityData {
                entity_type: "user".into(),
                entity_name: Some("alice-é".into()),
            },
            EntityData {
                entity_type: "client-id".into(),
                entity_name: None,
            },
        ]
    }

    fn request() -> AlterClientQuotasRequest {
        AlterClientQuotasRequest {
            entries: vec![
                EntryData {
                    entity: alice(),
                    ops: vec![
                        OpData {
                            key: "producer_byte_rate".into(),
                            value: 2_097_152.0,
                            remove: false,
                        },
                        OpData {
                            key: "consumer_byte_rate".into(),
                            value: 0.0,
                            remove: true,
                        },
                    ],
                },
                EntryData {
                    entity: vec![EntityData {
                        entity_type: "ip".into(),
                        entity_name: Some("10.0.0.9".into()),
                    }],
                    ops: vec![OpData {
                        key: "connection_creation_rate".into(),
                        value: 0.25,
                        remove: false,
                    }],
                },
            ],
            validate_only: true,
        }
    }

    fn response() -> AlterClientQuotasResponse {
        AlterClientQuotasResponse {
            throttle_time_ms: 2,
            entries: vec![
                EntryResult {
                    error_code: 0,
                    error_message: None,
                    entity: alice(),
                },
                EntryResult {
                    // INVALID_REQUEST.
                    error_code: 42,
                    error_message: Some("Unknown quota key 🦀".into()),
                    entity: Vec::new(),
                },
            ],
        }
    }

    #[test]
    fn edge_cases_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&AlterClientQuotasRequest::default(), v);
            assert_round_trip(&AlterClientQuotasResponse::default(), v);
        }
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_i32(1);
        b.put_i32(i32::MAX);
        b.put_slice(&[0; 8]);
        assert_count_too_large::<AlterClientQuotasRequest>(b.freeze(), 0);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<AlterClientQuotasResponse>(b.freeze(), 1);
    }

    conformance_tests!(
        AlterClientQuotasRequest,
        AlterClientQuotasResponse,
        VERSIONS,
        |_| request(),
        |_| response()
    );
}
