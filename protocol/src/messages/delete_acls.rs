//! DeleteAcls (key 31), versions 1-3; flexible from version 2.
//!
//! Deletes every ACL binding that matches each filter (`kafka-acls.sh
//! --remove`, `Admin.deleteAcls`) and answers, per filter, with the
//! bindings it matched, each with its own result. Kafka 4.0 removed version
//! 0, which had no pattern type (KIP-896); version 3 differs from version 2
//! only in allowing the USER resource type (KIP-749). The numeric codes are
//! listed in [`super::describe_acls`].

use bytes::{BufMut, BytesMut};

use super::describe_acls::PATTERN_TYPE_LITERAL;
use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 2;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteAclsRequest {
    pub filters: Vec<DeleteAclsFilter>,
}

/// Which bindings to delete; a `None` string matches any value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteAclsFilter {
    pub resource_type_filter: i8,
    pub resource_name_filter: Option<String>,
    pub pattern_type_filter: i8,
    pub principal_filter: Option<String>,
    pub host_filter: Option<String>,
    pub operation: i8,
    pub permission_type: i8,
}

impl Default for DeleteAclsFilter {
    fn default() -> Self {
        DeleteAclsFilter {
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

impl DeleteAclsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let (s, t) = (min_string_bytes(flexible), min_tags_bytes(flexible));
        // Four codes, three strings and tags.
        let filters = r.array("filters", flexible, 4 + 3 * s + t, |r| {
            let filter = DeleteAclsFilter {
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
            Ok(filter)
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DeleteAclsRequest { filters })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_array_len(Some(self.filters.len()), flexible);
        for f in &self.filters {
            w.put_i8(f.resource_type_filter);
            w.put_nullable_string(f.resource_name_filter.as_deref(), flexible);
            w.put_i8(f.pattern_type_filter);
            w.put_nullable_string(f.principal_filter.as_deref(), flexible);
            w.put_nullable_string(f.host_filter.as_deref(), flexible);
            w.put_i8(f.operation);
            w.put_i8(f.permission_type);
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
pub struct DeleteAclsResponse {
    pub throttle_time_ms: i32,
    /// One per filter of the request, in its order.
    pub filter_results: Vec<DeleteAclsFilterResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteAclsFilterResult {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub matching_acls: Vec<DeleteAclsMatchingAcl>,
}

/// A binding the filter matched, and whether deleting it worked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteAclsMatchingAcl {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission_type: i8,
}

impl Default for DeleteAclsMatchingAcl {
    fn default() -> Self {
        DeleteAclsMatchingAcl {
            error_code: 0,
            error_message: None,
            resource_type: 0,
            resource_name: String::new(),
            pattern_type: PATTERN_TYPE_LITERAL,
            principal: String::new(),
            host: String::new(),
            operation: 0,
            permission_type: 0,
        }
    }
}

impl DeleteAclsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let (s, a, t) = (
            min_string_bytes(flexible),
            min_array_bytes(flexible),
            min_tags_bytes(flexible),
        );
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        // Error, message, the matches and tags.
        let filter_results = r.array("filter_results", flexible, 2 + s + a + t, |r| {
            let error_code = r.i16("error_code")?;
            let error_message = r.nullable_string("error_message", flexible)?;
            // Error, four codes, four strings and tags.
            let matching_acls = r.array("matching_acls", flexible, 2 + 4 + 4 * s + t, |r| {
                let acl = DeleteAclsMatchingAcl {
                    error_code: r.i16("error_code")?,
                    error_message: r.nullable_string("error_message", flexible)?,
                    resource_type: r.i8("resource_type")?,
                    resource_name: r.string("resource_name", flexible)?,
                    pattern_type: r.i8("pattern_type")?,
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
            Ok(DeleteAclsFilterResult {
                error_code,
                error_message,
                matching_acls,
            })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DeleteAclsResponse {
            throttle_time_ms,
            filter_results,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.filter_results.len()), flexible);
        for result in &self.filter_results {
            w.put_i16(result.error_code);
            w.put_nullable_string(result.error_message.as_deref(), flexible);
            w.put_array_len(Some(result.matching_acls.len()), flexible);
            for acl in &result.matching_acls {
                w.put_i16(acl.error_code);
                w.put_nullable_string(acl.error_message.as_deref(), flexible);
                w.put_i8(acl.resource_type);
                w.put_string(&acl.resource_name, flexible);
                w.put_i8(acl.pattern_type);
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

    fn request() -> DeleteAclsRequest {
        DeleteAclsRequest {
            filters: vec![
                DeleteAclsFilter {
                    resource_type_filter: 2,
                    resource_name_filter: Some("orders".into()),
                    pattern_type_filter: 2,
                    principal_filter: Some("User:mallory-é".into()),
                    host_filter: Some("10.0.0.9".into()),
                    operation: 4,
                    permission_type: 2,
                },
                // Matches every binding.
                DeleteAclsFilter {
                    resource_type_filter: 1,
                    pattern_type_filter: 1,
                    operation: 1,
                    permission_type: 1,
                    ..DeleteAclsFilter::default()
                },
            ],
        }
    }

    fn response() -> DeleteAclsResponse {
        DeleteAclsResponse {
            throttle_time_ms: 8,
            filter_results: vec![
                DeleteAclsFilterResult {
                    error_code: 0,
                    error_message: None,
                    matching_acls: vec![
                        DeleteAclsMatchingAcl {
                            error_code: 0,
                            error_message: None,
                            resource_type: 2,
                            resource_name: "orders".into(),
                            pattern_type: 4,
                            principal: "User:mallory-é".into(),
                            host: "10.0.0.9".into(),
                            operation: 4,
                            permission_type: 2,
                        },
                        DeleteAclsMatchingAcl {
                            // SECURITY_DISABLED.
                            error_code: 54,
                            error_message: Some("No authorizer is configured 🦀".into()),
                            ..DeleteAclsMatchingAcl::default()
                        },
                    ],
                },
                DeleteAclsFilterResult {
                    error_code: 42,
                    error_message: Some("Invalid filter".into()),
                    matching_acls: Vec::new(),
                },
            ],
        }
    }

    #[test]
    fn edge_cases_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&DeleteAclsRequest::default(), v);
            assert_round_trip(&DeleteAclsResponse::default(), v);
        }
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_i32(i32::MAX);
        b.put_slice(&[0; 16]);
        assert_count_too_large::<DeleteAclsRequest>(b.freeze(), 1);
        // One filter result whose match count claims more than the frame.
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_uvarint(2);
        b.put_i16(0);
        b.put_nullable_string(None, true);
        b.put_uvarint(u32::MAX as u64);
        b.put_slice(&[0; 8]);
        assert_count_too_large::<DeleteAclsResponse>(b.freeze(), 2);
    }

    conformance_tests!(
        DeleteAclsRequest,
        DeleteAclsResponse,
        VERSIONS,
        |_| request(),
        |_| response()
    );
}
