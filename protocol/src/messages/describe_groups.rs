//! DescribeGroups (key 15), versions 0-6; flexible from version 5.
//!
//! Admin tools (`kafka-consumer-groups --describe`) ask a group's
//! coordinator for its state, protocol and members. v3 adds authorized
//! operations, v4 the static member id (`group.instance.id`), and v6
//! (KIP-1043) an error message, with GROUP_ID_NOT_FOUND for an unknown group
//! instead of an empty "Dead" group.

use bytes::{BufMut, Bytes, BytesMut};

use super::metadata::AUTHORIZED_OPERATIONS_OMITTED;
use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 5;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeGroupsRequest {
    pub groups: Vec<String>,
    /// v3+.
    pub include_authorized_operations: bool,
}

impl DescribeGroupsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let groups = r.array("groups", flexible, min_string_bytes(flexible), |r| {
            r.string("group", flexible)
        })?;
        let include_authorized_operations = if version >= 3 {
            r.bool("include_authorized_operations")?
        } else {
            false
        };
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DescribeGroupsRequest {
            groups,
            include_authorized_operations,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_array_len(Some(self.groups.len()), flexible);
        for g in &self.groups {
            w.put_string(g, flexible);
        }
        if version >= 3 {
            w.put_bool(self.include_authorized_operations);
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeGroupsResponse {
    /// v1+.
    pub throttle_time_ms: i32,
    pub groups: Vec<DescribedGroup>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedGroup {
    pub error_code: i16,
    /// v6+.
    pub error_message: Option<String>,
    pub group_id: String,
    /// "Stable", "PreparingRebalance", "Empty", "Dead", ...; or empty.
    pub group_state: String,
    /// "consumer" for consumer groups; or empty.
    pub protocol_type: String,
    /// The chosen assignor (Stable groups only); or empty.
    pub protocol_data: String,
    pub members: Vec<DescribedGroupMember>,
    /// v3+; [`AUTHORIZED_OPERATIONS_OMITTED`] unless requested.
    pub authorized_operations: i32,
}

impl Default for DescribedGroup {
    fn default() -> Self {
        DescribedGroup {
            error_code: 0,
            error_message: None,
            group_id: String::new(),
            group_state: String::new(),
            protocol_type: String::new(),
            protocol_data: String::new(),
            members: Vec::new(),
            authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribedGroupMember {
    pub member_id: String,
    /// v4+; the static member id, `None` for dynamic members.
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// The member's subscription for the chosen protocol (Stable groups).
    pub member_metadata: Bytes,
    /// The assignment the leader gave the member (Stable groups).
    pub member_assignment: Bytes,
}

impl DescribeGroupsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let s = min_string_bytes(flexible);
        // Byte fields share the string's smallest length: INT32 vs INT16,
        // but a compact length is one byte either way.
        let b = if flexible { 1 } else { 4 };
        let t = min_tags_bytes(flexible);
        let throttle_time_ms = if version >= 1 {
            r.i32("throttle_time_ms")?
        } else {
            0
        };
        let member_min = s + if version >= 4 { s } else { 0 } + s + s + b + b + t;
        let group_min = 2
            + if version >= 6 { s } else { 0 }
            + 4 * s
            + min_array_bytes(flexible)
            + if version >= 3 { 4 } else { 0 }
            + t;
        let groups = r.array("groups", flexible, group_min, |r| {
            let mut g = DescribedGroup {
                error_code: r.i16("error_code")?,
                ..DescribedGroup::default()
            };
            if version >= 6 {
                g.error_message = r.nullable_string("error_message", flexible)?;
            }
            g.group_id = r.string("group_id", flexible)?;
            g.group_state = r.string("group_state", flexible)?;
            g.protocol_type = r.string("protocol_type", flexible)?;
            g.protocol_data = r.string("protocol_data", flexible)?;
            g.members = r.array("members", flexible, member_min, |r| {
                let mut m = DescribedGroupMember {
                    member_id: r.string("member_id", flexible)?,
                    ..DescribedGroupMember::default()
                };
                if version >= 4 {
                    m.group_instance_id = r.nullable_string("group_instance_id", flexible)?;
                }
                m.client_id = r.string("client_id", flexible)?;
                m.client_host = r.string("client_host", flexible)?;
                m.member_metadata = r.bytes("member_metadata", flexible)?;
                m.member_assignment = r.bytes("member_assignment", flexible)?;
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(m)
            })?;
            if version >= 3 {
                g.authorized_operations = r.i32("authorized_operations")?;
            }
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(g)
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DescribeGroupsResponse {
            throttle_time_ms,
            groups,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version >= 1 {
            w.put_i32(self.throttle_time_ms);
        }
        w.put_array_len(Some(self.groups.len()), flexible);
        for g in &self.groups {
            w.put_i16(g.error_code);
            if version >= 6 {
                w.put_nullable_string(g.error_message.as_deref(), flexible);
            }
            w.put_string(&g.group_id, flexible);
            w.put_string(&g.group_state, flexible);
            w.put_string(&g.protocol_type, flexible);
            w.put_string(&g.protocol_data, flexible);
            w.put_array_len(Some(g.members.len()), flexible);
            for m in &g.members {
                w.put_string(&m.member_id, flexible);
                if version >= 4 {
                    w.put_nullable_string(m.group_instance_id.as_deref(), flexible);
                }
                w.put_string(&m.client_id, flexible);
                w.put_string(&m.client_host, flexible);
                w.put_nullable_bytes(Some(&m.member_metadata), flexible);
                w.put_nullable_bytes(Some(&m.member_assignment), flexible);
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
            if version >= 3 {
                w.put_i32(g.authorized_operations);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=6;

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> DescribeGroupsRequest {
        DescribeGroupsRequest {
            groups: vec!["billing".into(), "".into(), "audit-é".into()],
            include_authorized_operations: version >= 3,
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> DescribeGroupsResponse {
        DescribeGroupsResponse {
            throttle_time_ms: if version >= 1 { 40 } else { 0 },
            groups: vec![
                DescribedGroup {
                    error_code: 0,
                    error_message: None,
                    group_id: "billing".into(),
                    group_state: "Stable".into(),
                    protocol_type: "consumer".into(),
                    protocol_data: "range".into(),
                    members: vec![
                        DescribedGroupMember {
                            member_id: "consumer-1-4f2a".into(),
                            group_instance_id: (version >= 4).then(|| "instance-1".into()),
                            client_id: "consumer-1".into(),
                            client_host: "/127.0.0.1".into(),
                            member_metadata: Bytes::from_static(&[0, 3, 0, 0, 0, 1]),
                            member_assignment: Bytes::from_static(&[0, 3, 9]),
                        },
                        DescribedGroupMember::default(),
                    ],
                    authorized_operations: if version >= 3 {
                        0x0f00
                    } else {
                        AUTHORIZED_OPERATIONS_OMITTED
                    },
                },
                DescribedGroup {
                    error_code: 69,
                    error_message: (version >= 6).then(|| "group gone not found".into()),
                    group_id: "gone".into(),
                    group_state: "Dead".into(),
                    ..DescribedGroup::default()
                },
            ],
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&request(v), v);
            assert_round_trip(&DescribeGroupsRequest::default(), v);
        }
    }

    #[test]
    fn member_bytes_are_slices_of_the_frame() {
        let frame = encode(&response(6), 6);
        let range = frame.as_ptr() as usize..frame.as_ptr() as usize + frame.len();
        let resp = DescribeGroupsResponse::decode(&mut Reader::new(frame.clone()), 6).unwrap();
        let metadata = &resp.groups[0].members[0].member_metadata;
        assert!(range.contains(&(metadata.as_ptr() as usize)), "no copy");
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_i32(i32::MAX);
        assert_count_too_large::<DescribeGroupsRequest>(b.freeze(), 0);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<DescribeGroupsResponse>(b.freeze(), 5);
    }

    conformance_tests!(
        DescribeGroupsRequest,
        DescribeGroupsResponse,
        VERSIONS,
        request,
        response
    );
}
