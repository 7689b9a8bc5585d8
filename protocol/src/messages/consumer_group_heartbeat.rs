//! ConsumerGroupHeartbeat (key 68), versions 0-1; flexible in every version.
//!
//! The one request of KIP-848's consumer group protocol: a member joins
//! (epoch 0), heartbeats, reports what it owns and learns its assignment,
//! and leaves (epoch -1, or -2 for a static member that will return). v1
//! adds the subscribed regex and makes the client draw its own member id
//! (KIP-1082).
//!
//! Most request fields are "null when unchanged since the last heartbeat",
//! so they are `Option`s; `rebalance_timeout_ms` uses -1 for that.

use bytes::{BufMut, BytesMut};

use crate::codec::{min_string_bytes, DecodeResult, Reader, Writer};

/// First version with `subscribed_topic_regex`.
const REGEX_FROM: i16 = 1;
/// A topic entry: a uuid, an empty partition array and empty tags.
const MIN_TOPIC_BYTES: usize = 16 + 1 + 1;

/// The partitions of one topic, by topic id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicPartitions {
    pub topic_id: [u8; 16],
    pub partitions: Vec<i32>,
}

impl TopicPartitions {
    fn decode(r: &mut Reader) -> DecodeResult<Self> {
        let topic_id = r.uuid("topic_id")?;
        let partitions = r.array("partitions", true, 4, |r| r.i32("partition"))?;
        r.skip_tagged_fields()?;
        Ok(TopicPartitions {
            topic_id,
            partitions,
        })
    }

    fn encode(&self, w: &mut BytesMut) {
        w.put_slice(&self.topic_id);
        w.put_i32_array(Some(&self.partitions), true);
        w.put_empty_tagged_fields();
    }
}

fn decode_topic_partitions(r: &mut Reader) -> DecodeResult<Vec<TopicPartitions>> {
    r.array(
        "topic_partitions",
        true,
        MIN_TOPIC_BYTES,
        TopicPartitions::decode,
    )
}

fn encode_topic_partitions(w: &mut BytesMut, list: Option<&[TopicPartitions]>) {
    w.put_array_len(list.map(<[_]>::len), true);
    for t in list.unwrap_or_default() {
        t.encode(w);
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupHeartbeatRequest {
    pub group_id: String,
    /// Drawn by the client from v1; in v0 empty on a join, and the
    /// coordinator draws it.
    pub member_id: String,
    /// 0 to join, -1 to leave, -2 for a static member's temporary leave.
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// -1 when unchanged.
    pub rebalance_timeout_ms: i32,
    pub subscribed_topic_names: Option<Vec<String>>,
    /// v1+.
    pub subscribed_topic_regex: Option<String>,
    pub server_assignor: Option<String>,
    /// What the member owns; `None` when unchanged.
    pub topic_partitions: Option<Vec<TopicPartitions>>,
}

impl Default for ConsumerGroupHeartbeatRequest {
    fn default() -> Self {
        ConsumerGroupHeartbeatRequest {
            group_id: String::new(),
            member_id: String::new(),
            member_epoch: 0,
            instance_id: None,
            rack_id: None,
            rebalance_timeout_ms: -1,
            subscribed_topic_names: None,
            subscribed_topic_regex: None,
            server_assignor: None,
            topic_partitions: None,
        }
    }
}

impl ConsumerGroupHeartbeatRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let s = min_string_bytes(true);
        let mut req = ConsumerGroupHeartbeatRequest {
            group_id: r.string("group_id", true)?,
            member_id: r.string("member_id", true)?,
            member_epoch: r.i32("member_epoch")?,
            instance_id: r.nullable_string("instance_id", true)?,
            rack_id: r.nullable_string("rack_id", true)?,
            rebalance_timeout_ms: r.i32("rebalance_timeout_ms")?,
            subscribed_topic_names: r.nullable_array("subscribed_topic_names", true, s, |r| {
                r.string("topic", true)
            })?,
            ..Default::default()
        };
        if version >= REGEX_FROM {
            req.subscribed_topic_regex = r.nullable_string("subscribed_topic_regex", true)?;
        }
        req.server_assignor = r.nullable_string("server_assignor", true)?;
        req.topic_partitions = r.nullable_array(
            "topic_partitions",
            true,
            MIN_TOPIC_BYTES,
            TopicPartitions::decode,
        )?;
        r.skip_tagged_fields()?;
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_string(&self.group_id, true);
        w.put_string(&self.member_id, true);
        w.put_i32(self.member_epoch);
        w.put_nullable_string(self.instance_id.as_deref(), true);
        w.put_nullable_string(self.rack_id.as_deref(), true);
        w.put_i32(self.rebalance_timeout_ms);
        w.put_array_len(self.subscribed_topic_names.as_ref().map(Vec::len), true);
        for t in self.subscribed_topic_names.iter().flatten() {
            w.put_string(t, true);
        }
        if version >= REGEX_FROM {
            w.put_nullable_string(self.subscribed_topic_regex.as_deref(), true);
        }
        w.put_nullable_string(self.server_assignor.as_deref(), true);
        encode_topic_partitions(w, self.topic_partitions.as_deref());
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerGroupHeartbeatResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub member_id: Option<String>,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    /// `None` when the assignment did not change; the partitions the
    /// member may use now otherwise.
    pub assignment: Option<Vec<TopicPartitions>>,
}

impl ConsumerGroupHeartbeatResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let mut resp = ConsumerGroupHeartbeatResponse {
            throttle_time_ms: r.i32("throttle_time_ms")?,
            error_code: r.i16("error_code")?,
            error_message: r.nullable_string("error_message", true)?,
            member_id: r.nullable_string("member_id", true)?,
            member_epoch: r.i32("member_epoch")?,
            heartbeat_interval_ms: r.i32("heartbeat_interval_ms")?,
            assignment: None,
        };
        // A nullable struct: an INT8 -1 for null, 1 before its fields.
        if r.i8("assignment")? >= 0 {
            let topics = decode_topic_partitions(r)?;
            r.skip_tagged_fields()?;
            resp.assignment = Some(topics);
        }
        r.skip_tagged_fields()?;
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_nullable_string(self.error_message.as_deref(), true);
        w.put_nullable_string(self.member_id.as_deref(), true);
        w.put_i32(self.member_epoch);
        w.put_i32(self.heartbeat_interval_ms);
        match &self.assignment {
            None => w.put_i8(-1),
            Some(topics) => {
                w.put_i8(1);
                encode_topic_partitions(w, Some(topics));
                w.put_empty_tagged_fields();
            }
        }
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=1;

    fn request(version: i16) -> ConsumerGroupHeartbeatRequest {
        ConsumerGroupHeartbeatRequest {
            group_id: "orders".into(),
            member_id: "m-é-1".into(),
            member_epoch: 7,
            instance_id: Some("pod-1".into()),
            rack_id: Some("rack-a".into()),
            rebalance_timeout_ms: 300_000,
            subscribed_topic_names: Some(vec!["a".into(), "b".into()]),
            subscribed_topic_regex: (version >= 1).then(|| "orders-.*".into()),
            server_assignor: Some("range".into()),
            topic_partitions: Some(vec![TopicPartitions {
                topic_id: [7; 16],
                partitions: vec![0, 2],
            }]),
        }
    }

    fn response(_version: i16) -> ConsumerGroupHeartbeatResponse {
        ConsumerGroupHeartbeatResponse {
            throttle_time_ms: 10,
            error_code: 0,
            error_message: Some("fine".into()),
            member_id: Some("m-1".into()),
            member_epoch: 8,
            heartbeat_interval_ms: 5000,
            assignment: Some(vec![
                TopicPartitions {
                    topic_id: [1; 16],
                    partitions: vec![1],
                },
                TopicPartitions {
                    topic_id: [2; 16],
                    partitions: vec![],
                },
            ]),
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&ConsumerGroupHeartbeatRequest::default(), v);
            assert_round_trip(&ConsumerGroupHeartbeatResponse::default(), v);
            let empty = ConsumerGroupHeartbeatResponse {
                assignment: Some(vec![]),
                ..Default::default()
            };
            assert_round_trip(&empty, v);
        }
    }

    /// Bytes worked out by hand from Kafka's JSON schema: a v0 leave.
    #[test]
    fn a_leave_request_matches_the_schema() {
        let req = ConsumerGroupHeartbeatRequest {
            group_id: "g".into(),
            member_id: "m".into(),
            member_epoch: -1,
            ..Default::default()
        };
        let want: &[u8] = &[
            2, b'g', // GroupId
            2, b'm', // MemberId
            0xff, 0xff, 0xff, 0xff, // MemberEpoch -1
            0,    // InstanceId null
            0,    // RackId null
            0xff, 0xff, 0xff, 0xff, // RebalanceTimeoutMs -1
            0,    // SubscribedTopicNames null
            0,    // ServerAssignor null
            0,    // TopicPartitions null
            0,    // tagged fields
        ];
        assert_eq!(&encode(&req, 0)[..], want);
        let mut v1 = want.to_vec();
        v1.insert(15, 0); // SubscribedTopicRegex null, after the names
        assert_eq!(&encode(&req, 1)[..], &v1[..]);
    }

    #[test]
    fn a_null_assignment_is_an_int8_minus_one() {
        let resp = ConsumerGroupHeartbeatResponse::default();
        let bytes = encode(&resp, 1);
        // ..., HeartbeatIntervalMs, Assignment -1, tagged fields.
        assert_eq!(&bytes[bytes.len() - 2..], &[0xff, 0]);
    }

    conformance_tests!(
        ConsumerGroupHeartbeatRequest,
        ConsumerGroupHeartbeatResponse,
        VERSIONS,
        request,
        response
    );
}
