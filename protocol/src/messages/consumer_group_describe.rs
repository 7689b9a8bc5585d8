//! ConsumerGroupDescribe (key 69), versions 0-1; flexible in every version.
//!
//! KIP-848's DescribeGroups for consumer groups: the group and assignment
//! epochs, the assignor, and per member its subscription, current and
//! target assignments. v1 adds each member's type (KIP-1099); the request
//! is the same in both.

use bytes::{BufMut, BytesMut};

use crate::codec::{min_string_bytes, DecodeResult, Reader, Writer};

/// KIP-1099's member types.
pub const MEMBER_TYPE_UNKNOWN: i8 = -1;
pub const MEMBER_TYPE_CLASSIC: i8 = 0;
pub const MEMBER_TYPE_CONSUMER: i8 = 1;
/// First version with `member_type`.
const MEMBER_TYPE_FROM: i16 = 1;
/// AuthorizedOperations when they were not asked for.
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerGroupDescribeRequest {
    pub group_ids: Vec<String>,
    pub include_authorized_operations: bool,
}

impl ConsumerGroupDescribeRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let s = min_string_bytes(true);
        let req = ConsumerGroupDescribeRequest {
            group_ids: r.array("group_ids", true, s, |r| r.string("group_id", true))?,
            include_authorized_operations: r.bool("include_authorized_operations")?,
        };
        r.skip_tagged_fields()?;
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_array_len(Some(self.group_ids.len()), true);
        for g in &self.group_ids {
            w.put_string(g, true);
        }
        w.put_bool(self.include_authorized_operations);
        w.put_empty_tagged_fields();
    }
}

/// A topic's partitions, by id and name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribedTopicPartitions {
    pub topic_id: [u8; 16],
    pub topic_name: String,
    pub partitions: Vec<i32>,
}

fn decode_assignment(r: &mut Reader) -> DecodeResult<Vec<DescribedTopicPartitions>> {
    let topics = r.array("topic_partitions", true, 16 + 1 + 1 + 1, |r| {
        let t = DescribedTopicPartitions {
            topic_id: r.uuid("topic_id")?,
            topic_name: r.string("topic_name", true)?,
            partitions: r.array("partitions", true, 4, |r| r.i32("partition"))?,
        };
        r.skip_tagged_fields()?;
        Ok(t)
    })?;
    r.skip_tagged_fields()?;
    Ok(topics)
}

fn encode_assignment(w: &mut BytesMut, topics: &[DescribedTopicPartitions]) {
    w.put_array_len(Some(topics.len()), true);
    for t in topics {
        w.put_slice(&t.topic_id);
        w.put_string(&t.topic_name, true);
        w.put_i32_array(Some(&t.partitions), true);
        w.put_empty_tagged_fields();
    }
    w.put_empty_tagged_fields();
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub member_epoch: i32,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    pub assignment: Vec<DescribedTopicPartitions>,
    pub target_assignment: Vec<DescribedTopicPartitions>,
    /// v1+; [`MEMBER_TYPE_UNKNOWN`] below.
    pub member_type: i8,
}

impl Default for DescribedMember {
    fn default() -> Self {
        DescribedMember {
            member_id: String::new(),
            instance_id: None,
            rack_id: None,
            member_epoch: 0,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_topic_names: Vec::new(),
            subscribed_topic_regex: None,
            assignment: Vec::new(),
            target_assignment: Vec::new(),
            member_type: MEMBER_TYPE_UNKNOWN,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedGroup {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub group_id: String,
    pub group_state: String,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub assignor_name: String,
    pub members: Vec<DescribedMember>,
    pub authorized_operations: i32,
}

impl Default for DescribedGroup {
    fn default() -> Self {
        DescribedGroup {
            error_code: 0,
            error_message: None,
            group_id: String::new(),
            group_state: String::new(),
            group_epoch: 0,
            assignment_epoch: 0,
            assignor_name: String::new(),
            members: Vec::new(),
            authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerGroupDescribeResponse {
    pub throttle_time_ms: i32,
    pub groups: Vec<DescribedGroup>,
}

/// A member: 3 strings, 2 nullable strings, an epoch, an array, 2
/// assignments and its tags.
const MIN_MEMBER_BYTES: usize = 3 + 2 + 4 + 1 + 2 * 2 + 1;
/// A group: its code, 4 strings, 2 epochs, the members, operations, tags.
const MIN_GROUP_BYTES: usize = 2 + 4 + 4 + 4 + 1 + 4 + 1;

impl ConsumerGroupDescribeResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let groups = r.array("groups", true, MIN_GROUP_BYTES, |r| {
            let mut g = DescribedGroup {
                error_code: r.i16("error_code")?,
                error_message: r.nullable_string("error_message", true)?,
                group_id: r.string("group_id", true)?,
                group_state: r.string("group_state", true)?,
                group_epoch: r.i32("group_epoch")?,
                assignment_epoch: r.i32("assignment_epoch")?,
                assignor_name: r.string("assignor_name", true)?,
                ..Default::default()
            };
            g.members = r.array("members", true, MIN_MEMBER_BYTES, |r| {
                let mut m = DescribedMember {
                    member_id: r.string("member_id", true)?,
                    instance_id: r.nullable_string("instance_id", true)?,
                    rack_id: r.nullable_string("rack_id", true)?,
                    member_epoch: r.i32("member_epoch")?,
                    client_id: r.string("client_id", true)?,
                    client_host: r.string("client_host", true)?,
                    subscribed_topic_names: r.array(
                        "subscribed_topic_names",
                        true,
                        min_string_bytes(true),
                        |r| r.string("topic", true),
                    )?,
                    subscribed_topic_regex: r.nullable_string("subscribed_topic_regex", true)?,
                    assignment: decode_assignment(r)?,
                    target_assignment: decode_assignment(r)?,
                    member_type: MEMBER_TYPE_UNKNOWN,
                };
                if version >= MEMBER_TYPE_FROM {
                    m.member_type = r.i8("member_type")?;
                }
                r.skip_tagged_fields()?;
                Ok(m)
            })?;
            g.authorized_operations = r.i32("authorized_operations")?;
            r.skip_tagged_fields()?;
            Ok(g)
        })?;
        r.skip_tagged_fields()?;
        Ok(ConsumerGroupDescribeResponse {
            throttle_time_ms,
            groups,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.groups.len()), true);
        for g in &self.groups {
            w.put_i16(g.error_code);
            w.put_nullable_string(g.error_message.as_deref(), true);
            w.put_string(&g.group_id, true);
            w.put_string(&g.group_state, true);
            w.put_i32(g.group_epoch);
            w.put_i32(g.assignment_epoch);
            w.put_string(&g.assignor_name, true);
            w.put_array_len(Some(g.members.len()), true);
            for m in &g.members {
                w.put_string(&m.member_id, true);
                w.put_nullable_string(m.instance_id.as_deref(), true);
                w.put_nullable_string(m.rack_id.as_deref(), true);
                w.put_i32(m.member_epoch);
                w.put_string(&m.client_id, true);
                w.put_string(&m.client_host, true);
                w.put_array_len(Some(m.subscribed_topic_names.len()), true);
                for t in &m.subscribed_topic_names {
                    w.put_string(t, true);
                }
                w.put_nullable_string(m.subscribed_topic_regex.as_deref(), true);
                encode_assignment(w, &m.assignment);
                encode_assignment(w, &m.target_assignment);
                if version >= MEMBER_TYPE_FROM {
                    w.put_i8(m.member_type);
                }
                w.put_empty_tagged_fields();
            }
            w.put_i32(g.authorized_operations);
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=1;

    fn request(_version: i16) -> ConsumerGroupDescribeRequest {
        ConsumerGroupDescribeRequest {
            group_ids: vec!["orders".into(), "billing-é".into()],
            include_authorized_operations: true,
        }
    }

    fn response(version: i16) -> ConsumerGroupDescribeResponse {
        let tp = |id: u8, name: &str, ps: Vec<i32>| DescribedTopicPartitions {
            topic_id: [id; 16],
            topic_name: name.into(),
            partitions: ps,
        };
        ConsumerGroupDescribeResponse {
            throttle_time_ms: 3,
            groups: vec![
                DescribedGroup {
                    error_code: 0,
                    error_message: Some("ok".into()),
                    group_id: "orders".into(),
                    group_state: "Stable".into(),
                    group_epoch: 4,
                    assignment_epoch: 4,
                    assignor_name: "uniform".into(),
                    members: vec![DescribedMember {
                        member_id: "m-1".into(),
                        instance_id: Some("pod-1".into()),
                        rack_id: Some("r".into()),
                        member_epoch: 4,
                        client_id: "c".into(),
                        client_host: "/127.0.0.1".into(),
                        subscribed_topic_names: vec!["a".into()],
                        subscribed_topic_regex: Some("a.*".into()),
                        assignment: vec![tp(1, "a", vec![0, 1])],
                        target_assignment: vec![tp(1, "a", vec![0]), tp(2, "b", vec![])],
                        member_type: if version >= 1 {
                            MEMBER_TYPE_CONSUMER
                        } else {
                            MEMBER_TYPE_UNKNOWN
                        },
                    }],
                    authorized_operations: 0x7f,
                },
                DescribedGroup {
                    error_code: 69,
                    group_id: "gone".into(),
                    group_state: "Dead".into(),
                    ..Default::default()
                },
            ],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&ConsumerGroupDescribeRequest::default(), v);
            assert_round_trip(&ConsumerGroupDescribeResponse::default(), v);
        }
    }

    /// v0 has no member type: a v1 member's type is not written at v0.
    #[test]
    fn member_type_is_only_in_v1() {
        let r1 = encode(&response(1), 1);
        let r0 = encode(&response(0), 0);
        assert_eq!(r1.len(), r0.len() + 1);
    }

    conformance_tests!(
        ConsumerGroupDescribeRequest,
        ConsumerGroupDescribeResponse,
        VERSIONS,
        request,
        response
    );
}
