//! SyncGroup (key 14), versions 0-5; flexible from version 4.
//!
//! The second step of the classic group protocol: after JoinGroup, the
//! leader sends every member's assignment and the followers send none; each
//! member's response carries its own. Assignments are opaque to the broker
//! and are carried as `Bytes` sliced from the frame.

use bytes::{BufMut, Bytes, BytesMut};

use crate::codec::{
    min_bytes_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 4;
/// First version that carries the protocol type and name (KIP-559).
const PROTOCOL_FROM: i16 = 5;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncGroupRequest {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    /// v3+: the static member's `group.instance.id`, or `None`.
    pub group_instance_id: Option<String>,
    /// v5+; the coordinator answers INCONSISTENT_GROUP_PROTOCOL when it
    /// differs from the group's. `None` skips the check.
    pub protocol_type: Option<String>,
    /// v5+; checked like `protocol_type`.
    pub protocol_name: Option<String>,
    /// The leader's assignment of every member; empty from a follower.
    pub assignments: Vec<SyncGroupRequestAssignment>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncGroupRequestAssignment {
    pub member_id: String,
    /// Opaque to the broker.
    pub assignment: Bytes,
}

impl SyncGroupRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut req = SyncGroupRequest {
            group_id: r.string("group_id", flexible)?,
            generation_id: r.i32("generation_id")?,
            member_id: r.string("member_id", flexible)?,
            ..SyncGroupRequest::default()
        };
        if version >= 3 {
            req.group_instance_id = r.nullable_string("group_instance_id", flexible)?;
        }
        if version >= PROTOCOL_FROM {
            req.protocol_type = r.nullable_string("protocol_type", flexible)?;
            req.protocol_name = r.nullable_string("protocol_name", flexible)?;
        }
        let min_assignment =
            min_string_bytes(flexible) + min_bytes_bytes(flexible) + min_tags_bytes(flexible);
        req.assignments = r.array("assignments", flexible, min_assignment, |r| {
            let a = SyncGroupRequestAssignment {
                member_id: r.string("member_id", flexible)?,
                assignment: r.bytes("assignment", flexible)?,
            };
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(a)
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_string(&self.group_id, flexible);
        w.put_i32(self.generation_id);
        w.put_string(&self.member_id, flexible);
        if version >= 3 {
            w.put_nullable_string(self.group_instance_id.as_deref(), flexible);
        }
        if version >= PROTOCOL_FROM {
            w.put_nullable_string(self.protocol_type.as_deref(), flexible);
            w.put_nullable_string(self.protocol_name.as_deref(), flexible);
        }
        w.put_array_len(Some(self.assignments.len()), flexible);
        for a in &self.assignments {
            w.put_string(&a.member_id, flexible);
            w.put_nullable_bytes(Some(&a.assignment), flexible);
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
pub struct SyncGroupResponse {
    /// v1+.
    pub throttle_time_ms: i32,
    pub error_code: i16,
    /// v5+; `None` on error.
    pub protocol_type: Option<String>,
    /// v5+; `None` on error.
    pub protocol_name: Option<String>,
    /// This member's assignment; opaque, and empty on error.
    pub assignment: Bytes,
}

impl SyncGroupResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut resp = SyncGroupResponse::default();
        if version >= 1 {
            resp.throttle_time_ms = r.i32("throttle_time_ms")?;
        }
        resp.error_code = r.i16("error_code")?;
        if version >= PROTOCOL_FROM {
            resp.protocol_type = r.nullable_string("protocol_type", flexible)?;
            resp.protocol_name = r.nullable_string("protocol_name", flexible)?;
        }
        resp.assignment = r.bytes("assignment", flexible)?;
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
        w.put_i16(self.error_code);
        if version >= PROTOCOL_FROM {
            w.put_nullable_string(self.protocol_type.as_deref(), flexible);
            w.put_nullable_string(self.protocol_name.as_deref(), flexible);
        }
        w.put_nullable_bytes(Some(&self.assignment), flexible);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=5;

    /// A leader's request with a non-default value in every field `version`
    /// carries.
    fn request(version: i16) -> SyncGroupRequest {
        let v5 = version >= PROTOCOL_FROM;
        SyncGroupRequest {
            group_id: "billing-consumers".into(),
            generation_id: 5,
            member_id: "consumer-1-4f0c".into(),
            group_instance_id: (version >= 3).then(|| "pod-1".into()),
            protocol_type: v5.then(|| "consumer".into()),
            protocol_name: v5.then(|| "range".into()),
            assignments: vec![
                SyncGroupRequestAssignment {
                    member_id: "consumer-1-4f0c".into(),
                    assignment: Bytes::from_static(&[0, 3, 0, 0, 0, 1, 0, 6]),
                },
                SyncGroupRequestAssignment {
                    member_id: "consumer-é-2".into(),
                    assignment: Bytes::new(),
                },
            ],
        }
    }

    /// A response with a non-default value in every field `version`
    /// carries.
    fn response(version: i16) -> SyncGroupResponse {
        let v5 = version >= PROTOCOL_FROM;
        SyncGroupResponse {
            throttle_time_ms: if version >= 1 { 40 } else { 0 },
            error_code: 27,
            protocol_type: v5.then(|| "consumer".into()),
            protocol_name: v5.then(|| "range".into()),
            assignment: Bytes::from_static(&[0, 3, 0, 0, 0, 1]),
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            for req in [request(v), SyncGroupRequest::default()] {
                assert_round_trip(&req, v);
            }
        }
    }

    #[test]
    fn edge_case_responses_round_trip() {
        for v in VERSIONS {
            for resp in [response(v), SyncGroupResponse::default()] {
                assert_round_trip(&resp, v);
            }
        }
    }

    #[test]
    fn a_null_assignment_is_refused() {
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i16(0);
        b.put_nullable_bytes(None, false);
        assert!(SyncGroupResponse::decode(&mut Reader::new(b.freeze()), 1).is_err());
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_string("g", false);
        b.put_i32(1);
        b.put_string("m", false);
        b.put_i32(i32::MAX);
        assert_count_too_large::<SyncGroupRequest>(b.freeze(), 0);
    }

    conformance_tests!(
        SyncGroupRequest,
        SyncGroupResponse,
        VERSIONS,
        request,
        response
    );
}
