//! ShareGroupDescribe (key 77), version 1; flexible in every version.
//!
//! KIP-932's DescribeGroups for share groups: the group and assignment
//! epochs, the assignor, and per member its subscription and assignment.
//! A share group has no target assignment per member and no static
//! members, so the member carries less than ConsumerGroupDescribe's.

use bytes::{BufMut, BytesMut};

use crate::codec::{min_string_bytes, DecodeResult, Reader, Writer};

/// AuthorizedOperations when they were not asked for.
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareGroupDescribeRequest {
    pub group_ids: Vec<String>,
    pub include_authorized_operations: bool,
}

impl ShareGroupDescribeRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let s = min_string_bytes(true);
        let req = ShareGroupDescribeRequest {
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

/// A topic entry: uuid, empty name, empty partitions, tags.
const MIN_TOPIC_BYTES: usize = 16 + 1 + 1 + 1;

/// The Assignment struct: its topic array, then its own tags.
fn decode_assignment(r: &mut Reader) -> DecodeResult<Vec<DescribedTopicPartitions>> {
    let topics = r.array("topic_partitions", true, MIN_TOPIC_BYTES, |r| {
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

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribedMember {
    pub member_id: String,
    pub rack_id: Option<String>,
    pub member_epoch: i32,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub assignment: Vec<DescribedTopicPartitions>,
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
pub struct ShareGroupDescribeResponse {
    pub throttle_time_ms: i32,
    pub groups: Vec<DescribedGroup>,
}

/// A member: 3 strings, a nullable string, an epoch, the topic array, the
/// assignment (array and tags) and its tags.
const MIN_MEMBER_BYTES: usize = 3 + 1 + 4 + 1 + 2 + 1;
/// A group: its code, 4 strings, 2 epochs, the members, operations, tags.
const MIN_GROUP_BYTES: usize = 2 + 4 + 4 + 4 + 1 + 4 + 1;

impl DescribedMember {
    fn decode(r: &mut Reader) -> DecodeResult<Self> {
        let m = DescribedMember {
            member_id: r.string("member_id", true)?,
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
            assignment: decode_assignment(r)?,
        };
        r.skip_tagged_fields()?;
        Ok(m)
    }

    fn encode(&self, w: &mut BytesMut) {
        w.put_string(&self.member_id, true);
        w.put_nullable_string(self.rack_id.as_deref(), true);
        w.put_i32(self.member_epoch);
        w.put_string(&self.client_id, true);
        w.put_string(&self.client_host, true);
        w.put_array_len(Some(self.subscribed_topic_names.len()), true);
        for t in &self.subscribed_topic_names {
            w.put_string(t, true);
        }
        encode_assignment(w, &self.assignment);
        w.put_empty_tagged_fields();
    }
}

impl ShareGroupDescribeResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
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
            g.members = r.array("members", true, MIN_MEMBER_BYTES, DescribedMember::decode)?;
            g.authorized_operations = r.i32("authorized_operations")?;
            r.skip_tagged_fields()?;
            Ok(g)
        })?;
        r.skip_tagged_fields()?;
        Ok(ShareGroupDescribeResponse {
            throttle_time_ms,
            groups,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
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
                m.encode(w);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 1..=1;

    fn request(_version: i16) -> ShareGroupDescribeRequest {
        ShareGroupDescribeRequest {
            group_ids: vec!["queue".into(), "billing-é".into()],
            include_authorized_operations: true,
        }
    }

    fn response(_version: i16) -> ShareGroupDescribeResponse {
        let tp = |id: u8, name: &str, ps: Vec<i32>| DescribedTopicPartitions {
            topic_id: [id; 16],
            topic_name: name.into(),
            partitions: ps,
        };
        ShareGroupDescribeResponse {
            throttle_time_ms: 3,
            groups: vec![
                DescribedGroup {
                    error_code: 0,
                    error_message: Some("ok".into()),
                    group_id: "queue".into(),
                    group_state: "Stable".into(),
                    group_epoch: 4,
                    assignment_epoch: 4,
                    assignor_name: "simple".into(),
                    members: vec![DescribedMember {
                        member_id: "m-1".into(),
                        rack_id: Some("r".into()),
                        member_epoch: 4,
                        client_id: "c".into(),
                        client_host: "/127.0.0.1".into(),
                        subscribed_topic_names: vec!["a".into()],
                        assignment: vec![tp(1, "a", vec![0, 1]), tp(2, "b", vec![])],
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
            assert_round_trip(&ShareGroupDescribeRequest::default(), v);
            assert_round_trip(&ShareGroupDescribeResponse::default(), v);
        }
    }

    /// Bytes worked out by hand from Kafka's JSON schema.
    #[test]
    fn a_request_matches_the_schema() {
        let req = ShareGroupDescribeRequest {
            group_ids: vec!["g".into()],
            include_authorized_operations: false,
        };
        assert_eq!(&encode(&req, 1)[..], &[2, 2, b'g', 0, 0]);
    }

    conformance_tests!(
        ShareGroupDescribeRequest,
        ShareGroupDescribeResponse,
        VERSIONS,
        request,
        response
    );
}
