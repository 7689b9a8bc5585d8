//! DescribeClientQuotas (key 48), versions 0-1; flexible from version 1.
//!
//! Reads the quotas of client entities (`kafka-configs.sh --describe
//! --entity-type users`, `Admin.describeClientQuotas`, KIP-546). An entity
//! is a set of (type, name) components, the types being `user`,
//! `client-id` and `ip`; a null name is the type's default entity. The
//! request filters components by name, by default-ness, or by presence,
//! and with `strict` it asks for entities with no other components.
//!
//! [`EntityData`] is shared with AlterClientQuotas, whose entities have the
//! same encoding.

use bytes::{BufMut, BytesMut};

use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 1;

/// `match_type`: the component's name equals `match` (a null `match` is
/// the default entity).
pub const MATCH_TYPE_EXACT: i8 = 0;
/// `match_type`: the component is the default entity of its type.
pub const MATCH_TYPE_DEFAULT: i8 = 1;
/// `match_type`: the entity has a component of this type, whatever its name.
pub const MATCH_TYPE_SPECIFIED: i8 = 2;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeClientQuotasRequest {
    pub components: Vec<ComponentData>,
    /// Only entities with no components beyond those filtered.
    pub strict: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComponentData {
    pub entity_type: String,
    pub match_type: i8,
    /// The name to match with [`MATCH_TYPE_EXACT`]; null otherwise.
    pub match_: Option<String>,
}

impl DescribeClientQuotasRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let (s, t) = (min_string_bytes(flexible), min_tags_bytes(flexible));
        let components = r.array("components", flexible, s + 1 + s + t, |r| {
            let component = ComponentData {
                entity_type: r.string("entity_type", flexible)?,
                match_type: r.i8("match_type")?,
                match_: r.nullable_string("match", flexible)?,
            };
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(component)
        })?;
        let strict = r.bool("strict")?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DescribeClientQuotasRequest { components, strict })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_array_len(Some(self.components.len()), flexible);
        for c in &self.components {
            w.put_string(&c.entity_type, flexible);
            w.put_i8(c.match_type);
            w.put_nullable_string(c.match_.as_deref(), flexible);
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
        w.put_bool(self.strict);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeClientQuotasResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    /// Null when the request failed (Kafka's error responses send null).
    pub entries: Option<Vec<EntryData>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryData {
    pub entity: Vec<EntityData>,
    pub values: Vec<ValueData>,
}

/// One component of a client entity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntityData {
    /// `user`, `client-id` or `ip`.
    pub entity_type: String,
    /// Null for the type's default entity.
    pub entity_name: Option<String>,
}

/// The smallest encoding of an [`EntityData`].
pub(crate) const fn min_entity_bytes(flexible: bool) -> usize {
    2 * min_string_bytes(flexible) + min_tags_bytes(flexible)
}

impl EntityData {
    pub(crate) fn decode(r: &mut Reader, flexible: bool) -> DecodeResult<Self> {
        let entity = EntityData {
            entity_type: r.string("entity_type", flexible)?,
            entity_name: r.nullable_string("entity_name", flexible)?,
        };
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(entity)
    }

    pub(crate) fn encode(&self, w: &mut BytesMut, flexible: bool) {
        w.put_string(&self.entity_type, flexible);
        w.put_nullable_string(self.entity_name.as_deref(), flexible);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

/// Equal when the keys are and the values have the same bits, so that a
/// value survives a round trip exactly, NaN and -0.0 included (see
/// [`same_bits`]).
#[derive(Debug, Clone, Default)]
pub struct ValueData {
    /// The quota's name, such as `producer_byte_rate`.
    pub key: String,
    pub value: f64,
}

impl PartialEq for ValueData {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && same_bits(self.value, other.value)
    }
}

impl Eq for ValueData {}

/// Whether two FLOAT64 fields hold the same wire bytes. A codec's equality
/// is the wire's: with `==`, a NaN from a peer would not equal itself after
/// a round trip, and 0.0 would equal -0.0, which encodes differently.
pub(crate) fn same_bits(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits()
}

impl DescribeClientQuotasResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let (s, a, t) = (
            min_string_bytes(flexible),
            min_array_bytes(flexible),
            min_tags_bytes(flexible),
        );
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        let error_message = r.nullable_string("error_message", flexible)?;
        let entries = r.nullable_array("entries", flexible, a + a + t, |r| {
            let entity = r.array("entity", flexible, min_entity_bytes(flexible), |r| {
                EntityData::decode(r, flexible)
            })?;
            let values = r.array("values", flexible, s + 8 + t, |r| {
                let value = ValueData {
                    key: r.string("key", flexible)?,
                    value: r.f64("value")?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(value)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(EntryData { entity, values })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DescribeClientQuotasResponse {
            throttle_time_ms,
            error_code,
            error_message,
            entries,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_nullable_string(self.error_message.as_deref(), flexible);
        w.put_array_len(self.entries.as_ref().map(Vec::len), flexible);
        for entry in self.entries.iter().flatten() {
            w.put_array_len(Some(entry.entity.len()), flexible);
            for e in &entry.entity {
                e.encode(w, flexible);
            }
            w.put_array_len(Some(entry.values.len()), flexible);
            for v in &entry.values {
                w.put_string(&v.key, flexible);
                w.put_f64(v.value);
                if flexible {
                    w.put_empty_tagged_fields();
                }
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

    /// Alice's quotas under any client id, and nothing else.
    fn request() -> DescribeClientQuotasRequest {
        DescribeClientQuotasRequest {
            components: vec![
                ComponentData {
                    entity_type: "user".into(),
                    match_type: MATCH_TYPE_EXACT,
                    match_: Some("alice-é".into()),
                },
                ComponentData {
                    entity_type: "client-id".into(),
                    match_type: MATCH_TYPE_SPECIFIED,
                    match_: None,
                },
            ],
            strict: true,
        }
    }

    fn response() -> DescribeClientQuotasResponse {
        DescribeClientQuotasResponse {
            throttle_time_ms: 3,
            error_code: 0,
            error_message: Some("ok 🦀".into()),
            entries: Some(vec![
                EntryData {
                    entity: vec![
                        EntityData {
                            entity_type: "user".into(),
                            entity_name: Some("alice-é".into()),
                        },
                        EntityData {
                            entity_type: "client-id".into(),
                            entity_name: None,
                        },
                    ],
                    values: vec![
                        ValueData {
                            key: "producer_byte_rate".into(),
                            value: 1_048_576.0,
                        },
                        ValueData {
                            key: "request_percentage".into(),
                            value: 12.5,
                        },
                    ],
                },
                EntryData::default(),
            ]),
        }
    }

    #[test]
    fn edge_cases_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&DescribeClientQuotasRequest::default(), v);
            assert_round_trip(&DescribeClientQuotasResponse::default(), v);
            // A failed describe: null entries, which is not an empty list.
            let failed = DescribeClientQuotasResponse {
                error_code: 42,
                error_message: Some("Invalid match type".into()),
                entries: None,
                ..response()
            };
            assert_round_trip(&failed, v);
            let empty = DescribeClientQuotasResponse {
                entries: Some(Vec::new()),
                ..failed
            };
            assert_round_trip(&empty, v);
        }
    }

    /// Values are IEEE 754 doubles, big-endian, as Java writes them.
    #[test]
    fn values_are_big_endian_doubles() {
        let resp = DescribeClientQuotasResponse {
            entries: Some(vec![EntryData {
                entity: Vec::new(),
                values: vec![ValueData {
                    key: "k".into(),
                    value: 1.5,
                }],
            }]),
            ..DescribeClientQuotasResponse::default()
        };
        let bytes = encode(&resp, 1);
        let value = 1.5f64.to_be_bytes();
        // throttle, error, null message, entries, empty entity, values, key.
        let at = 4 + 2 + 1 + 1 + 1 + 1 + 2;
        assert_eq!(&bytes[at..at + 8], value);
    }

    #[test]
    fn values_round_trip_bit_for_bit() {
        for value in [f64::NAN, -0.0, 0.0, f64::INFINITY, f64::MIN_POSITIVE / 2.0] {
            let resp = DescribeClientQuotasResponse {
                entries: Some(vec![EntryData {
                    entity: Vec::new(),
                    values: vec![ValueData {
                        key: "k".into(),
                        value,
                    }],
                }]),
                ..DescribeClientQuotasResponse::default()
            };
            assert_round_trip(&resp, 1);
        }
        let zero = |value| ValueData {
            key: "k".into(),
            value,
        };
        assert_ne!(zero(0.0), zero(-0.0));
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_i32(i32::MAX);
        assert_count_too_large::<DescribeClientQuotasRequest>(b.freeze(), 0);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i16(0);
        b.put_nullable_string(None, true);
        b.put_uvarint(2);
        b.put_uvarint(1);
        b.put_uvarint(u32::MAX as u64);
        b.put_slice(&[0; 8]);
        assert_count_too_large::<DescribeClientQuotasResponse>(b.freeze(), 1);
    }

    conformance_tests!(
        DescribeClientQuotasRequest,
        DescribeClientQuotasResponse,
        VERSIONS,
        |_| request(),
        |_| response()
    );
}
