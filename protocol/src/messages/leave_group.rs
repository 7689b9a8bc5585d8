//! LeaveGroup (key 13), versions 0-5; flexible from version 4.
//!
//! Up to v2 a member leaves by itself, naming its own `member_id`. From v3
//! (KIP-345) the request lists any number of members, each by member id
//! or by `group.instance.id`, so that an admin can remove static members;
//! the response then answers each one, besides the top-level error code.

use bytes::{BufMut, BytesMut};

use crate::codec::{min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 4;
/// First version with the `members` arrays (KIP-345).
const BATCHED_FROM: i16 = 3;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaveGroupRequest {
    pub group_id: String,
    /// v0-2: the member that leaves.
    pub member_id: String,
    /// v3+: the members that leave.
    pub members: Vec<MemberIdentity>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberIdentity {
    /// Empty when the member is named by `group_instance_id` alone.
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// v5+: why the member leaves (KIP-800), for the coordinator's log.
    pub reason: Option<String>,
}

impl LeaveGroupRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut req = LeaveGroupRequest {
            group_id: r.string("group_id", flexible)?,
            ..LeaveGroupRequest::default()
        };
        if version < BATCHED_FROM {
            req.member_id = r.string("member_id", flexible)?;
        } else {
            let s = min_string_bytes(flexible);
            let min_member = s + s + if version >= 5 { s } else { 0 } + min_tags_bytes(flexible);
            req.members = r.array("members", flexible, min_member, |r| {
                let mut m = MemberIdentity {
                    member_id: r.string("member_id", flexible)?,
                    group_instance_id: r.nullable_string("group_instance_id", flexible)?,
                    reason: None,
                };
                if version >= 5 {
                    m.reason = r.nullable_string("reason", flexible)?;
                }
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(m)
            })?;
        }
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_string(&self.group_id, flexible);
        if version < BATCHED_FROM {
            w.put_string(&self.member_id, flexible);
        } else {
            w.put_array_len(Some(self.members.len()), flexible);
            for m in &self.members {
                w.put_string(&m.member_id, flexible);
                w.put_nullable_string(m.group_instance_id.as_deref(), flexible);
                if version >= 5 {
                    w.put_nullable_string(m.reason.as_deref(), flexible);
                }
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

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaveGroupResponse {
    /// v1+.
    pub throttle_time_ms: i32,
    /// The group-level error; per-member errors are in `members`.
    pub error_code: i16,
    /// v3+: one per member of the request.
    pub members: Vec<MemberResponse>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberResponse {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub error_code: i16,
}

impl LeaveGroupResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut resp = LeaveGroupResponse::default();
        if version >= 1 {
            resp.throttle_time_ms = r.i32("throttle_time_ms")?;
        }
        resp.error_code = r.i16("error_code")?;
        if version >= BATCHED_FROM {
            let s = min_string_bytes(flexible);
            let min_member = s + s + 2 + min_tags_bytes(flexible);
            resp.members = r.array("members", flexible, min_member, |r| {
                let m = MemberResponse {
                    member_id: r.string("member_id", flexible)?,
                    group_instance_id: r.nullable_string("group_instance_id", flexible)?,
                    error_code: r.i16("error_code")?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(m)
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
        w.put_i16(self.error_code);
        if version >= BATCHED_FROM {
            w.put_array_len(Some(self.members.len()), flexible);
            for m in &self.members {
                w.put_string(&m.member_id, flexible);
                w.put_nullable_string(m.group_instance_id.as_deref(), flexible);
                w.put_i16(m.error_code);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=5;

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> LeaveGroupRequest {
        if version < BATCHED_FROM {
            return LeaveGroupRequest {
                group_id: "billing-consumers".into(),
                member_id: "consumer-1-4f0c".into(),
                members: Vec::new(),
            };
        }
        LeaveGroupRequest {
            group_id: "billing-consumers".into(),
            member_id: String::new(),
            members: vec![
                MemberIdentity {
                    member_id: "consumer-1-4f0c".into(),
                    group_instance_id: None,
                    reason: (version >= 5).then(|| "the consumer is being closed".into()),
                },
                MemberIdentity {
                    member_id: String::new(),
                    group_instance_id: Some("pod-é-2".into()),
                    reason: None,
                },
            ],
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> LeaveGroupResponse {
        LeaveGroupResponse {
            throttle_time_ms: if version >= 1 { 8 } else { 0 },
            error_code: 16,
            members: if version >= BATCHED_FROM {
                vec![
                    MemberResponse {
                        member_id: "consumer-1-4f0c".into(),
                        group_instance_id: None,
                        error_code: 0,
                    },
                    MemberResponse {
                        member_id: String::new(),
                        group_instance_id: Some("pod-é-2".into()),
                        error_code: 25,
                    },
                ]
            } else {
                Vec::new()
            },
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            for req in [request(v), LeaveGroupRequest::default()] {
                assert_round_trip(&req, v);
            }
        }
    }

    #[test]
    fn edge_case_responses_round_trip() {
        for v in VERSIONS {
            for resp in [response(v), LeaveGroupResponse::default()] {
                assert_round_trip(&resp, v);
            }
        }
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_string("g", true);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<LeaveGroupRequest>(b.freeze(), 5);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i16(0);
        b.put_i32(i32::MAX);
        assert_count_too_large::<LeaveGroupResponse>(b.freeze(), 3);
    }

    conformance_tests!(
        LeaveGroupRequest,
        LeaveGroupResponse,
        VERSIONS,
        request,
        response
    );
}
