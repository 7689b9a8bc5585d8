//! DeleteGroups (key 42), versions 0-2; flexible from version 2.
//!
//! Deletes empty groups and their committed offsets. Kafka 4.4 defines a
//! v3 that adds a per-group error message; the `kafka-protocol` crate pinlog
//! is checked against stops at v2, and so do we.

use bytes::{BufMut, BytesMut};

use crate::codec::{min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 2;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteGroupsRequest {
    pub groups_names: Vec<String>,
}

impl DeleteGroupsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let groups_names = r.array("groups_names", flexible, min_string_bytes(flexible), |r| {
            r.string("group", flexible)
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DeleteGroupsRequest { groups_names })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_array_len(Some(self.groups_names.len()), flexible);
        for g in &self.groups_names {
            w.put_string(g, flexible);
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteGroupsResponse {
    pub throttle_time_ms: i32,
    pub results: Vec<DeletableGroupResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeletableGroupResult {
    pub group_id: String,
    pub error_code: i16,
}

impl DeleteGroupsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let result_min = min_string_bytes(flexible) + 2 + min_tags_bytes(flexible);
        let results = r.array("results", flexible, result_min, |r| {
            let result = DeletableGroupResult {
                group_id: r.string("group_id", flexible)?,
                error_code: r.i16("error_code")?,
            };
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(result)
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DeleteGroupsResponse {
            throttle_time_ms,
            results,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.results.len()), flexible);
        for result in &self.results {
            w.put_string(&result.group_id, flexible);
            w.put_i16(result.error_code);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=2;

    fn request() -> DeleteGroupsRequest {
        DeleteGroupsRequest {
            groups_names: vec!["billing".into(), "audit-日".into()],
        }
    }

    fn response() -> DeleteGroupsResponse {
        DeleteGroupsResponse {
            throttle_time_ms: 30,
            results: vec![
                DeletableGroupResult {
                    group_id: "billing".into(),
                    error_code: 0,
                },
                DeletableGroupResult {
                    group_id: "audit-日".into(),
                    error_code: 68,
                },
            ],
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&request(), v);
            assert_round_trip(&DeleteGroupsRequest::default(), v);
        }
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<DeleteGroupsRequest>(b.freeze(), 2);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i32(i32::MAX);
        assert_count_too_large::<DeleteGroupsResponse>(b.freeze(), 1);
    }

    conformance_tests!(
        DeleteGroupsRequest,
        DeleteGroupsResponse,
        VERSIONS,
        |_| request(),
        |_| response()
    );
}
