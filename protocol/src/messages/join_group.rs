//! JoinGroup (key 11), versions 0-9; flexible from version 6.
//!
//! The first step of the classic group protocol: each member sends the
//! protocols it supports, the coordinator picks one, and the leader's
//! response lists every member with its metadata so that the leader can
//! compute the assignment it then hands over in SyncGroup.
//!
//! Kafka 4 still accepts v0 and v1 of this API: KIP-896 removed the old
//! versions of many APIs in 4.0, but JoinGroup's JSON keeps 0-9 valid.
//!
//! Protocol metadata is opaque to the broker (a consumer's subscription, a
//! Connect worker's state): it is carried as `Bytes` sliced from the frame,
//! never parsed.

use bytes::{BufMut, Bytes, BytesMut};

use crate::codec::{
    min_bytes_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 6;
/// First version whose response may carry a null `protocol_name`.
const NULLABLE_PROTOCOL_NAME_FROM: i16 = 7;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupRequest {
    pub group_id: String,
    pub session_timeout_ms: i32,
    /// v1+; -1 (Kafka's default) in a v0 request, where the session timeout
    /// serves as the rebalance timeout too.
    pub rebalance_timeout_ms: i32,
    /// Empty on a member's first join; from v4 the coordinator then answers
    /// MEMBER_ID_REQUIRED with an id to join again with.
    pub member_id: String,
    /// v5+: the static member's `group.instance.id` (KIP-345), or `None` for
    /// a dynamic member.
    pub group_instance_id: Option<String>,
    /// "consumer" for consumers, "connect" for Connect workers.
    pub protocol_type: String,
    /// The protocols the member supports, in its order of preference.
    pub protocols: Vec<JoinGroupRequestProtocol>,
    /// v8+: why the member (re)joins (KIP-800), for the coordinator's log.
    pub reason: Option<String>,
}

impl Default for JoinGroupRequest {
    fn default() -> Self {
        JoinGroupRequest {
            group_id: String::new(),
            session_timeout_ms: 0,
            rebalance_timeout_ms: -1,
            member_id: String::new(),
            group_instance_id: None,
            protocol_type: String::new(),
            protocols: Vec::new(),
            reason: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JoinGroupRequestProtocol {
    /// An assignor's name, such as "range" or "cooperative-sticky".
    pub name: String,
    /// Opaque to the broker.
    pub metadata: Bytes,
}

impl JoinGroupRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut req = JoinGroupRequest {
            group_id: r.string("group_id", flexible)?,
            session_timeout_ms: r.i32("session_timeout_ms")?,
            ..JoinGroupRequest::default()
        };
        if version >= 1 {
            req.rebalance_timeout_ms = r.i32("rebalance_timeout_ms")?;
        }
        req.member_id = r.string("member_id", flexible)?;
        if version >= 5 {
            req.group_instance_id = r.nullable_string("group_instance_id", flexible)?;
        }
        req.protocol_type = r.string("protocol_type", flexible)?;
        let min_protocol =
            min_string_bytes(flexible) + min_bytes_bytes(flexible) + min_tags_bytes(flexible);
        req.protocols = r.array("protocols", flexible, min_protocol, |r| {
            let p = JoinGroupRequestProtocol {
                name: r.string("name", flexible)?,
                metadata: r.bytes("metadata", flexible)?,
            };
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(p)
        })?;
        if version >= 8 {
            req.reason = r.nullable_string("reason", flexible)?;
        }
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_string(&self.group_id, flexible);
        w.put_i32(self.session_timeout_ms);
        if version >= 1 {
            w.put_i32(self.rebalance_timeout_ms);
        }
        w.put_string(&self.member_id, flexible);
        if version >= 5 {
            w.put_nullable_string(self.group_instance_id.as_deref(), flexible);
        }
        w.put_string(&self.protocol_type, flexible);
        w.put_array_len(Some(self.protocols.len()), flexible);
        for p in &self.protocols {
            w.put_string(&p.name, flexible);
            w.put_nullable_bytes(Some(&p.metadata), flexible);
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
        if version >= 8 {
            w.put_nullable_string(self.reason.as_deref(), flexible);
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupResponse {
    /// v2+.
    pub throttle_time_ms: i32,
    pub error_code: i16,
    /// -1 (Kafka's default) on error.
    pub generation_id: i32,
    /// v7+ (KIP-559); `None` on error.
    pub protocol_type: Option<String>,
    /// The protocol the coordinator chose. Null is valid on the wire only
    /// from v7; before that `None` is written as the empty string, which is
    /// what Kafka sends there on error, and decodes back as `Some("")`.
    pub protocol_name: Option<String>,
    /// The leader's member id.
    pub leader: String,
    /// v9+: the leader must not compute a new assignment (KIP-814). Set
    /// when a static leader rejoins a stable group: it learns the members
    /// without the group rebalancing.
    pub skip_assignment: bool,
    /// The id of the member this response is for.
    pub member_id: String,
    /// Every member and its metadata, in the leader's response only; empty
    /// for the followers.
    pub members: Vec<JoinGroupResponseMember>,
}

impl Default for JoinGroupResponse {
    fn default() -> Self {
        JoinGroupResponse {
            throttle_time_ms: 0,
            error_code: 0,
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            member_id: String::new(),
            members: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JoinGroupResponseMember {
    pub member_id: String,
    /// v5+.
    pub group_instance_id: Option<String>,
    /// The metadata the member sent for the chosen protocol; opaque.
    pub metadata: Bytes,
}

impl JoinGroupResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut resp = JoinGroupResponse::default();
        if version >= 2 {
            resp.throttle_time_ms = r.i32("throttle_time_ms")?;
        }
        resp.error_code = r.i16("error_code")?;
        resp.generation_id = r.i32("generation_id")?;
        if version >= NULLABLE_PROTOCOL_NAME_FROM {
            resp.protocol_type = r.nullable_string("protocol_type", flexible)?;
            resp.protocol_name = r.nullable_string("protocol_name", flexible)?;
        } else {
            resp.protocol_name = Some(r.string("protocol_name", flexible)?);
        }
        resp.leader = r.string("leader", flexible)?;
        if version >= 9 {
            resp.skip_assignment = r.bool("skip_assignment")?;
        }
        resp.member_id = r.string("member_id", flexible)?;
        let s = min_string_bytes(flexible);
        let min_member = s
            + if version >= 5 { s } else { 0 }
            + min_bytes_bytes(flexible)
            + min_tags_bytes(flexible);
        resp.members = r.array("members", flexible, min_member, |r| {
            let mut m = JoinGroupResponseMember {
                member_id: r.string("member_id", flexible)?,
                ..JoinGroupResponseMember::default()
            };
            if version >= 5 {
                m.group_instance_id = r.nullable_string("group_instance_id", flexible)?;
            }
            m.metadata = r.bytes("metadata", flexible)?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(m)
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version >= 2 {
            w.put_i32(self.throttle_time_ms);
        }
        w.put_i16(self.error_code);
        w.put_i32(self.generation_id);
        if version >= NULLABLE_PROTOCOL_NAME_FROM {
            w.put_nullable_string(self.protocol_type.as_deref(), flexible);
            w.put_nullable_string(self.protocol_name.as_deref(), flexible);
        } else {
            w.put_string(self.protocol_name.as_deref().unwrap_or(""), flexible);
        }
        w.put_string(&self.leader, flexible);
        if version >= 9 {
            w.put_bool(self.skip_assignment);
        }
        w.put_string(&self.member_id, flexible);
        w.put_array_len(Some(self.members.len()), flexible);
        for m in &self.members {
            w.put_string(&m.member_id, flexible);
            if version >= 5 {
                w.put_nullable_string(m.group_instance_id.as_deref(), flexible);
            }
            w.put_nullable_bytes(Some(&m.metadata), flexible);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=9;

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> JoinGroupRequest {
        JoinGroupRequest {
            group_id: "billing-consumers".into(),
            session_timeout_ms: 45_000,
            rebalance_timeout_ms: if version >= 1 { 300_000 } else { -1 },
            member_id: "consumer-1-4f0c".into(),
            group_instance_id: (version >= 5).then(|| "pod-é-3".into()),
            protocol_type: "consumer".into(),
            protocols: vec![
                JoinGroupRequestProtocol {
                    name: "cooperative-sticky".into(),
                    metadata: Bytes::from_static(&[0, 3, 0, 0, 0, 1, 0, 6, b'o']),
                },
                JoinGroupRequestProtocol {
                    name: "range".into(),
                    metadata: Bytes::new(),
                },
            ],
            reason: (version >= 8).then(|| "rebalance failed due to 🦀".into()),
        }
    }

    /// A leader's response with a non-default value in every field
    /// `version` carries.
    fn response(version: i16) -> JoinGroupResponse {
        JoinGroupResponse {
            throttle_time_ms: if version >= 2 { 12 } else { 0 },
            error_code: 79,
            generation_id: 5,
            protocol_type: (version >= NULLABLE_PROTOCOL_NAME_FROM).then(|| "consumer".into()),
            protocol_name: Some("range".into()),
            leader: "consumer-1-4f0c".into(),
            skip_assignment: version >= 9,
            member_id: "consumer-2-9a1b".into(),
            members: vec![
                JoinGroupResponseMember {
                    member_id: "consumer-1-4f0c".into(),
                    group_instance_id: (version >= 5).then(|| "pod-1".into()),
                    metadata: Bytes::from_static(b"\x00\x03subscription"),
                },
                JoinGroupResponseMember {
                    member_id: "consumer-2-9a1b".into(),
                    group_instance_id: None,
                    metadata: Bytes::new(),
                },
            ],
        }
    }

    /// An error response as a coordinator sends it: null protocol fields
    /// where the version allows them.
    fn error_response(version: i16) -> JoinGroupResponse {
        JoinGroupResponse {
            error_code: 25,
            protocol_name: (version < NULLABLE_PROTOCOL_NAME_FROM).then(String::new),
            ..JoinGroupResponse::default()
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            for req in [request(v), JoinGroupRequest::default()] {
                assert_round_trip(&req, v);
            }
        }
    }

    #[test]
    fn edge_case_responses_round_trip() {
        for v in VERSIONS {
            for resp in [response(v), error_response(v)] {
                assert_round_trip(&resp, v);
            }
        }
    }

    #[test]
    fn a_null_protocol_name_is_the_empty_string_before_v7() {
        let resp = JoinGroupResponse::default();
        for v in 0..NULLABLE_PROTOCOL_NAME_FROM {
            let back = JoinGroupResponse::decode(&mut Reader::new(encode(&resp, v)), v).unwrap();
            assert_eq!(back.protocol_name.as_deref(), Some(""), "v{v}");
        }
        let v = NULLABLE_PROTOCOL_NAME_FROM;
        let back = JoinGroupResponse::decode(&mut Reader::new(encode(&resp, v)), v).unwrap();
        assert_eq!(back.protocol_name, None);
    }

    #[test]
    fn metadata_is_a_slice_of_the_frame() {
        let frame = encode(&request(9), 9);
        let (start, end) = (
            frame.as_ptr() as usize,
            frame.as_ptr() as usize + frame.len(),
        );
        let req = JoinGroupRequest::decode(&mut Reader::new(frame.clone()), 9).unwrap();
        let at = req.protocols[0].metadata.as_ptr() as usize;
        assert!((start..end).contains(&at), "metadata was copied");
    }

    #[test]
    fn huge_counts_are_refused() {
        // Flexible: group id, timeouts, member id, null instance id,
        // protocol type, then a protocol count of u32::MAX - 1.
        let mut b = BytesMut::new();
        b.put_string("g", true);
        b.put_i32(10_000);
        b.put_i32(10_000);
        b.put_string("", true);
        b.put_nullable_string(None, true);
        b.put_string("consumer", true);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<JoinGroupRequest>(b.freeze(), 9);
        // Classic: throttle, error, generation, protocol name, leader,
        // member id, then an INT32 member count with nothing behind it.
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i16(0);
        b.put_i32(1);
        b.put_string("range", false);
        b.put_string("m", false);
        b.put_string("m", false);
        b.put_i32(i32::MAX);
        assert_count_too_large::<JoinGroupResponse>(b.freeze(), 2);
    }

    conformance_tests!(
        JoinGroupRequest,
        JoinGroupResponse,
        VERSIONS,
        request,
        response
    );
}
