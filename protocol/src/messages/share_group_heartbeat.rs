//! ShareGroupHeartbeat (key 76), version 1; flexible in every version.
//!
//! KIP-932's membership request: a share consumer joins (epoch 0), heartbeats
//! and learns its assignment, and leaves (epoch -1). Unlike KIP-848 there is
//! no reconciliation: a member never reports what it owns, and one partition
//! may be assigned to several members at once. v0 was Kafka 4.0's early
//! access and is gone.
//!
//! The request's nullable fields mean "unchanged since the last heartbeat".

use bytes::{BufMut, BytesMut};

use crate::codec::{min_string_bytes, DecodeResult, Reader, Writer};

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

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareGroupHeartbeatRequest {
    pub group_id: String,
    /// Drawn by the consumer, kept for its whole life.
    pub member_id: String,
    /// 0 to join, -1 to leave.
    pub member_epoch: i32,
    pub rack_id: Option<String>,
    pub subscribed_topic_names: Option<Vec<String>>,
}

impl ShareGroupHeartbeatRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let s = min_string_bytes(true);
        let req = ShareGroupHeartbeatRequest {
            group_id: r.string("group_id", true)?,
            member_id: r.string("member_id", true)?,
            member_epoch: r.i32("member_epoch")?,
            rack_id: r.nullable_string("rack_id", true)?,
            subscribed_topic_names: r.nullable_array("subscribed_topic_names", true, s, |r| {
                r.string("topic", true)
            })?,
        };
        r.skip_tagged_fields()?;
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_string(&self.group_id, true);
        w.put_string(&self.member_id, true);
        w.put_i32(self.member_epoch);
        w.put_nullable_string(self.rack_id.as_deref(), true);
        w.put_array_len(self.subscribed_topic_names.as_ref().map(Vec::len), true);
        for t in self.subscribed_topic_names.iter().flatten() {
            w.put_string(t, true);
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareGroupHeartbeatResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub member_id: Option<String>,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    /// `None` when the assignment did not change; the partitions the
    /// member may fetch from now otherwise.
    pub assignment: Option<Vec<TopicPartitions>>,
}

impl ShareGroupHeartbeatResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let mut resp = ShareGroupHeartbeatResponse {
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
            let topics = r.array(
                "topic_partitions",
                true,
                MIN_TOPIC_BYTES,
                TopicPartitions::decode,
            )?;
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
                w.put_array_len(Some(topics.len()), true);
                for t in topics {
                    t.encode(w);
                }
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 1..=1;

    fn request(_version: i16) -> ShareGroupHeartbeatRequest {
        ShareGroupHeartbeatRequest {
            group_id: "queue".into(),
            member_id: "m-é-1".into(),
            member_epoch: 7,
            rack_id: Some("rack-a".into()),
            subscribed_topic_names: Some(vec!["a".into(), "b".into()]),
        }
    }

    fn response(_version: i16) -> ShareGroupHeartbeatResponse {
        ShareGroupHeartbeatResponse {
            throttle_time_ms: 10,
            error_code: 0,
            error_message: Some("fine".into()),
            member_id: Some("m-1".into()),
            member_epoch: 8,
            heartbeat_interval_ms: 5000,
            assignment: Some(vec![
                TopicPartitions {
                    topic_id: [1; 16],
                    partitions: vec![1, 0],
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
            assert_round_trip(&ShareGroupHeartbeatRequest::default(), v);
            assert_round_trip(&ShareGroupHeartbeatResponse::default(), v);
            let empty = ShareGroupHeartbeatResponse {
                assignment: Some(vec![]),
                ..Default::default()
            };
            assert_round_trip(&empty, v);
        }
    }

    /// Bytes worked out by hand from Kafka's JSON schema: a leave.
    #[test]
    fn a_leave_request_matches_the_schema() {
        let req = ShareGroupHeartbeatRequest {
            group_id: "g".into(),
            member_id: "m".into(),
            member_epoch: -1,
            ..Default::default()
        };
        let want: &[u8] = &[
            2, b'g', // GroupId
            2, b'm', // MemberId
            0xff, 0xff, 0xff, 0xff, // MemberEpoch -1
            0,    // RackId null
            0,    // SubscribedTopicNames null
            0,    // tagged fields
        ];
        assert_eq!(&encode(&req, 1)[..], want);
    }

    #[test]
    fn a_huge_topic_count_is_refused_before_allocating() {
        let mut b = BytesMut::new();
        b.put_string("g", true);
        b.put_string("m", true);
        b.put_i32(0);
        b.put_nullable_string(None, true);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<ShareGroupHeartbeatRequest>(b.freeze(), 1);
    }

    conformance_tests!(
        ShareGroupHeartbeatRequest,
        ShareGroupHeartbeatResponse,
        VERSIONS,
        request,
        response
    );
}
