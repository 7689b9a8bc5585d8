//! DescribeAcls (key 29), versions 1-3; flexible from version 2.
//!
//! Lists the ACL bindings that match a filter (`kafka-acls.sh --list`,
//! `Admin.describeAcls`), grouped by resource pattern. Kafka 4.0 removed
//! version 0, which had no pattern type (KIP-896), so every version here
//! carries one; version 3 differs from version 2 only in allowing the USER
//! resource type (KIP-749).
//!
//! The numeric codes are Kafka's enums. Resource types: 1 ANY, 2 TOPIC,
//! 3 GROUP, 4 CLUSTER, 5 TRANSACTIONAL_ID, 6 DELEGATION_TOKEN, 7 USER.
//! Pattern types: 1 ANY, 2 MATCH, 3 LITERAL, 4 PREFIXED. Operations: 1 ANY,
//! 2 ALL, 3 READ, 4 WRITE, 5 CREATE, 6 DELETE, 7 ALTER, 8 DESCRIBE,
//! 9 CLUSTER_ACTION, 10 DESCRIBE_CONFIGS, 11 ALTER_CONFIGS,
//! 12 IDEMPOTENT_WRITE, 13 CREATE_TOKENS, 14 DESCRIBE_TOKENS,
//! 15 TWO_PHASE_COMMIT. Permission types: 1 ANY, 2 DENY, 3 ALLOW. (0 is
//! UNKNOWN in each.)

use bytes::{BufMut, BytesMut};

use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 2;

/// `pattern_type` LITERAL: the resource name is matched exactly (or is `*`
/// for every resource); Kafka's default for the field.
pub const PATTERN_TYPE_LITERAL: i8 = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeAclsRequest {
    pub resource_type_filter: i8,
    /// `None` matches any resource name.
    pub resource_name_filter: Option<String>,
    pub pattern_type_filter: i8,
    /// `None` matches any principal.
    pub principal_filter: Option<String>,
    /// `None` matches any host.
    pub host_filter: Option<String>,
    pub operation: i8,
    pub permission_type: i8,
}

impl Default for DescribeAclsRequest {
    fn default() -> Self {
        DescribeAclsRequest {
            resource_type_filter: 0,
            resource_name_filter: None,
            pattern_type_filter: PATTERN_TYPE_LITERAL,
            principal_filter: None,
            host_filter: None,
            operation: 0,
            permission_type: 0,
        }
    }
}

impl DescribeAclsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let req = DescribeAclsRequest {
            resource_type_filter: r.i8("resource_type_filter")?,
            resource_name_filter: r.nullable_string("resource_name_filter", flexible)?,
            pattern_type_filter: r.i8("pattern_type_filter")?,
            principal_filter: r.nullable_string("principal_filter", flexible)?,
            host_filter: r.nullable_string("host_filter", flexible)?,
            operation: r.i8("operation")?,
            permission_type: r.i8("permission_type")?,
        };
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i8(self.resource_type_filter);
        w.put_nullable_string(self.resource_name_filter.as_deref(), flexible);
        w.put_i8(self.pattern_type_filter);
        w.put_nullable_string(self.principal_filter.as_deref(), flexible);
        w.put_nullable_string(self.host_filter.as_deref(), flexible);
        w.put_i8(self.operation);
        w.put_i8(self.permission_type);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeAclsResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub resources: Vec<DescribeAclsResource>,
}

/// One resource pattern and the ACLs bound to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeAclsResource {
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    pub acls: Vec<AclDescription>,
}

impl Default for DescribeAclsResource {
    fn default() -> Self {
        DescribeAclsResource {
            resource_type: 0,
            resource_name: String::new(),
            pattern_type: PATTERN_TYPE_LITERAL,
            acls: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclDescription {
    /// `User:alice`, or `User:*` for every user.
    pub principal: String,
    /// An IP address, or `*` for every host.
    pub host: String,
    pub operation: i8,
    pub permission_type: i8,
}

impl DescribeAclsResponse {
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
        // Type, name, pattern type, ACLs and tags.
        let resources = r.array("resources", flexible, 1 + s + 1 + a + t, |r| {
            let resource_type = r.i8("resource_type")?;
            let resource_name = r.string("resource_name", flexible)?;
            let pattern_type = r.i8("pattern_type")?;
            // Principal, host, operation, permission and tags.
            let acls = r.array("acls", flexible, s + s + 1 + 1 + t, |r| {
                let acl = AclDescription {
                    principal: r.string("principal", flexible)?,
                    host: r.string("host", flexible)?,
                    operation: r.i8("operation")?,
                    permission_type: r.i8("permission_type")?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(acl)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(DescribeAclsResource {
                resource_type,
                resource_name,
                pattern_type,
                acls,
            })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DescribeAclsResponse {
            throttle_time_ms,
            error_code,
            error_message,
            resources,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_nullable_string(self.error_message.as_deref(), flexible);
        w.put_array_len(Some(self.resources.len()), flexible);
        for resource in &self.resources {
            w.put_i8(resource.resource_type);
            w.put_string(&resource.resource_name, flexible);
            w.put_i8(resource.pattern_type);
            w.put_array_len(Some(resource.acls.len()), flexible);
            for acl in &resource.acls {
                w.put_string(&acl.principal, flexible);
                w.put_string(&acl.host, flexible);
                w.put_i8(acl.operation);
                w.put_i8(acl.permission_type);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 1..=3;

    /// `kafka-acls.sh --list --topic orders --principal User:alice` at
    /// version 3, with a host filter too.
    fn request() -> DescribeAclsRequest {
        DescribeAclsRequest {
            resource_type_filter: 2,
            resource_name_filter: Some("orders-é".into()),
            pattern_type_filter: 2,
            principal_filter: Some("User:alice".into()),
            host_filter: Some("10.0.0.7".into()),
            operation: 3,
            permission_type: 3,
        }
    }

    fn response() -> DescribeAclsResponse {
        DescribeAclsResponse {
            throttle_time_ms: 5,
            error_code: 31,
            error_message: Some("Cluster authorization failed 🦀".into()),
            resources: vec![
                DescribeAclsResource {
                    resource_type: 2,
                    resource_name: "orders".into(),
                    pattern_type: 4,
                    acls: vec![
                        AclDescription {
                            principal: "User:alice".into(),
                            host: "*".into(),
                            operation: 3,
                            permission_type: 3,
                        },
                        AclDescription {
                            principal: "User:mallory".into(),
                            host: "10.0.0.9".into(),
                            operation: 4,
                            permission_type: 2,
                        },
                    ],
                },
                DescribeAclsResource::default(),
            ],
        }
    }

    #[test]
    fn edge_cases_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&DescribeAclsRequest::default(), v);
            assert_round_trip(&DescribeAclsResponse::default(), v);
        }
    }

    /// A filter that matches everything, laid out by hand from Kafka's
    /// schema: INT16 null strings before version 2, compact ones after.
    #[test]
    fn each_version_has_kafkas_layout() {
        let any = DescribeAclsRequest {
            resource_type_filter: 1,
            resource_name_filter: None,
            pattern_type_filter: 1,
            principal_filter: None,
            host_filter: None,
            operation: 1,
            permission_type: 1,
        };
        let v1 = [1, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff, 1, 1];
        assert_eq!(&encode(&any, 1)[..], v1);
        for v in 2..=3 {
            assert_eq!(&encode(&any, v)[..], [1, 0, 1, 0, 0, 1, 1, 0], "v{v}");
        }
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i16(0);
        b.put_nullable_string(None, false);
        b.put_i32(i32::MAX);
        assert_count_too_large::<DescribeAclsResponse>(b.freeze(), 1);
        // One resource whose ACL count claims more than the frame.
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i16(0);
        b.put_nullable_string(None, true);
        b.put_uvarint(2);
        b.put_i8(2);
        b.put_string("t", true);
        b.put_i8(3);
        b.put_uvarint(u32::MAX as u64);
        b.put_slice(&[0; 8]);
        assert_count_too_large::<DescribeAclsResponse>(b.freeze(), 3);
    }

    conformance_tests!(
        DescribeAclsRequest,
        DescribeAclsResponse,
        VERSIONS,
        |_| request(),
        |_| response()
    );
}
