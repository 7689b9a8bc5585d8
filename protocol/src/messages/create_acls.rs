//! CreateAcls (key 30), versions 1-3; flexible from version 2.
//!
//! Adds ACL bindings (`kafka-acls.sh --add`, `Admin.createAcls`); the
//! response has one result per creation, in request order. Kafka 4.0
//! removed version 0, which had no pattern type (KIP-896); version 3
//! differs from version 2 only in allowing the USER resource type
//! (KIP-749). The numeric codes are listed in [`super::describe_acls`].

use bytes::{BufMut, BytesMut};

use super::describe_acls::PATTERN_TYPE_LITERAL;
use crate::codec::{min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 2;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreateAclsRequest {
    pub creations: Vec<AclCreation>,
}

/// One ACL binding to create: a resource pattern and an access entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclCreation {
    pub resource_type: i8,
    pub resource_name: String,
    pub resource_pattern_type: i8,
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission_type: i8,
}

impl Default for AclCreation {
    fn default() -> Self {
        AclCreation {
            resource_type: 0,
            resource_name: String::new(),
            resource_pattern_type: PATTERN_TYPE_LITERAL,
            principal: String::new(),
            host: String::new(),
            operation: 0,
            permission_type: 0,
        }
    }
}

impl CreateAclsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let (s, t) = (min_string_bytes(flexible), min_tags_bytes(flexible));
        // Three codes, three strings, the pattern type and tags.
        let creations = r.array("creations", flexible, 1 + s + 1 + s + s + 1 + 1 + t, |r| {
            let creation = AclCreation {
                resource_type: r.i8("resource_type")?,
                resource_name: r.string("resource_name", flexible)?,
                resource_pattern_type: r.i8("resource_pattern_type")?,
                principal: r.string("principal", flexible)?,
                host: r.string("host", flexible)?,
                operation: r.i8("operation")?,
                permission_type: r.i8("permission_type")?,
            };
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(creation)
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(CreateAclsRequest { creations })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_array_len(Some(self.creations.len()), flexible);
        for c in &self.creations {
            w.put_i8(c.resource_type);
            w.put_string(&c.resource_name, flexible);
            w.put_i8(c.resource_pattern_type);
            w.put_string(&c.principal, flexible);
            w.put_string(&c.host, flexible);
            w.put_i8(c.operation);
            w.put_i8(c.permission_type);
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreateAclsResponse {
    pub throttle_time_ms: i32,
    /// One per creation of the request, in its order.
    pub results: Vec<AclCreationResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclCreationResult {
    pub error_code: i16,
    pub error_message: Option<String>,
}

impl CreateAclsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let (s, t) = (min_string_bytes(flexible), min_tags_bytes(flexible));
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let results = r.array("results", flexible, 2 + s + t, |r| {
            let result = AclCreationResult {
                error_code: r.i16("error_code")?,
                error_message: r.nullable_string("error_message", flexible)?,
            };
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(result)
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(CreateAclsResponse {
            throttle_time_ms,
            results,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.results.len()), flexible);
        for result in &self.results {
            w.put_i16(result.error_code);
            w.put_nullable_string(result.error_message.as_deref(), flexible);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 1..=3;

    /// `kafka-acls.sh --add --allow-principal User:alice --operation Read
    /// --topic orders --resource-pattern-type prefixed`, and a deny.
    fn request() -> CreateAclsRequest {
        CreateAclsRequest {
            creations: vec![
                AclCreation {
                    resource_type: 2,
                    resource_name: "orders".into(),
                    resource_pattern_type: 4,
                    principal: "User:alice".into(),
                    host: "*".into(),
                    operation: 3,
                    permission_type: 3,
                },
                AclCreation {
                    resource_type: 3,
                    resource_name: "billing-日".into(),
                    resource_pattern_type: PATTERN_TYPE_LITERAL,
                    principal: "User:mallory".into(),
                    host: "10.0.0.9".into(),
                    operation: 2,
                    permission_type: 2,
                },
            ],
        }
    }

    fn response() -> CreateAclsResponse {
        CreateAclsResponse {
            throttle_time_ms: 12,
            results: vec![
                AclCreationResult::default(),
                AclCreationResult {
                    // INVALID_REQUEST.
                    error_code: 42,
                    error_message: Some("Invalid resource pattern type 🦀".into()),
                },
            ],
        }
    }

    #[test]
    fn edge_cases_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&CreateAclsRequest::default(), v);
            assert_round_trip(
                &CreateAclsRequest {
                    creations: vec![AclCreation::default()],
                },
                v,
            );
            assert_round_trip(&CreateAclsResponse::default(), v);
        }
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_i32(i32::MAX);
        assert_count_too_large::<CreateAclsRequest>(b.freeze(), 1);
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<CreateAclsRequest>(b.freeze(), 2);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_uvarint(1 << 20);
        b.put_slice(&[0; 64]);
        assert_count_too_large::<CreateAclsResponse>(b.freeze(), 3);
    }

    conformance_tests!(
        CreateAclsRequest,
        CreateAclsResponse,
        VERSIONS,
        |_| request(),
        |_| response()
    );
}
