//! OffsetCommit (key 8), versions 2-10; flexible from version 8.
//!
//! v2 is the floor because Kafka 4.0 removed v0 and v1 (KIP-896). v9 is v8
//! on the wire; it tells the broker that the client understands the errors
//! of the consumer group protocol of KIP-848. v10 (Kafka 4.1+) names topics
//! by id instead of by name, in the request and the response.

use bytes::{BufMut, BytesMut};

use super::{min_topic_bytes, put_topic_name_or_id, read_topic_name_or_id};
use crate::codec::{min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 8;
/// The first version that names topics by id (and no longer by name).
pub const TOPIC_ID_FROM: i16 = 10;
/// Versions that carry `retention_time_ms`; v5 left retention to the
/// broker's `offsets.retention.minutes`.
const RETENTION_VERSIONS: std::ops::RangeInclusive<i16> = 2..=4;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitRequest {
    pub group_id: String,
    /// The classic group's generation, or the member epoch under the
    /// consumer group protocol. -1 (Kafka's default) for a commit from
    /// outside the group, such as an admin's or a consumer's without group
    /// membership, which the coordinator accepts only for an empty group.
    pub generation_id_or_member_epoch: i32,
    /// Empty for a commit from outside the group.
    pub member_id: String,
    /// v7+: the static member's `group.instance.id`, or `None`.
    pub group_instance_id: Option<String>,
    /// v2-4: how long to keep the offsets, or -1 (Kafka's default) for the
    /// broker's retention.
    pub retention_time_ms: i64,
    pub topics: Vec<OffsetCommitRequestTopic>,
}

impl Default for OffsetCommitRequest {
    fn default() -> Self {
        OffsetCommitRequest {
            group_id: String::new(),
            generation_id_or_member_epoch: -1,
            member_id: String::new(),
            group_instance_id: None,
            retention_time_ms: -1,
            topics: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetCommitRequestTopic {
    /// v2-9; empty from v10.
    pub name: String,
    /// v10+; zero before.
    pub topic_id: [u8; 16],
    pub partitions: Vec<OffsetCommitRequestPartition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitRequestPartition {
    pub partition_index: i32,
    /// The next offset the group will consume, not the last one consumed.
    pub committed_offset: i64,
    /// v6+: the leader epoch of the last record consumed, for truncation
    /// detection on resume (KIP-320), or -1 (Kafka's default) if unknown.
    pub committed_leader_epoch: i32,
    /// Any string the client keeps with the offset; null is allowed.
    pub committed_metadata: Option<String>,
}

impl Default for OffsetCommitRequestPartition {
    fn default() -> Self {
        OffsetCommitRequestPartition {
            partition_index: 0,
            committed_offset: 0,
            committed_leader_epoch: -1,
            committed_metadata: None,
        }
    }
}

impl OffsetCommitRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut req = OffsetCommitRequest {
            group_id: r.string("group_id", flexible)?,
            generation_id_or_member_epoch: r.i32("generation_id_or_member_epoch")?,
            member_id: r.string("member_id", flexible)?,
            ..OffsetCommitRequest::default()
        };
        if version >= 7 {
            req.group_instance_id = r.nullable_string("group_instance_id", flexible)?;
        }
        if RETENTION_VERSIONS.contains(&version) {
            req.retention_time_ms = r.i64("retention_time_ms")?;
        }
        // Partition, offset, epoch (v6+), metadata and tags.
        let min_partition = 4
            + 8
            + if version >= 6 { 4 } else { 0 }
            + min_string_bytes(flexible)
            + min_tags_bytes(flexible);
        req.topics = r.array("topics", flexible, min_topic_bytes(flexible), |r| {
            let (name, topic_id) = read_topic_name_or_id(r, version >= TOPIC_ID_FROM, flexible)?;
            let partitions = r.array("partitions", flexible, min_partition, |r| {
                let mut p = OffsetCommitRequestPartition {
                    partition_index: r.i32("partition_index")?,
                    committed_offset: r.i64("committed_offset")?,
                    ..OffsetCommitRequestPartition::default()
                };
                if version >= 6 {
                    p.committed_leader_epoch = r.i32("committed_leader_epoch")?;
                }
                p.committed_metadata = r.nullable_string("committed_metadata", flexible)?;
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(p)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(OffsetCommitRequestTopic {
                name,
                topic_id,
                partitions,
            })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_string(&self.group_id, flexible);
        w.put_i32(self.generation_id_or_member_epoch);
        w.put_string(&self.member_id, flexible);
        if version >= 7 {
            w.put_nullable_string(self.group_instance_id.as_deref(), flexible);
        }
        if RETENTION_VERSIONS.contains(&version) {
            w.put_i64(self.retention_time_ms);
        }
        w.put_array_len(Some(self.topics.len()), flexible);
        for t in &self.topics {
            put_topic_name_or_id(w, &t.name, &t.topic_id, version >= TOPIC_ID_FROM, flexible);
            w.put_array_len(Some(t.partitions.len()), flexible);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i64(p.committed_offset);
                if version >= 6 {
                    w.put_i32(p.committed_leader_epoch);
                }
                w.put_nullable_string(p.committed_metadata.as_deref(), flexible);
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

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetCommitResponse {
    /// v3+.
    pub throttle_time_ms: i32,
    pub topics: Vec<OffsetCommitResponseTopic>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetCommitResponseTopic {
    /// v2-9; empty from v10.
    pub name: String,
    /// v10+; zero before.
    pub topic_id: [u8; 16],
    pub partitions: Vec<OffsetCommitResponsePartition>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetCommitResponsePartition {
    pub partition_index: i32,
    pub error_code: i16,
}

impl OffsetCommitResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut resp = OffsetCommitResponse::default();
        if version >= 3 {
            resp.throttle_time_ms = r.i32("throttle_time_ms")?;
        }
        // Partition, error and tags.
        let min_partition = 4 + 2 + min_tags_bytes(flexible);
        resp.topics = r.array("topics", flexible, min_topic_bytes(flexible), |r| {
            let (name, topic_id) = read_topic_name_or_id(r, version >= TOPIC_ID_FROM, flexible)?;
            let partitions = r.array("partitions", flexible, min_partition, |r| {
                let p = OffsetCommitResponsePartition {
                    partition_index: r.i32("partition_index")?,
                    error_code: r.i16("error_code")?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(p)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(OffsetCommitResponseTopic {
                name,
                topic_id,
                partitions,
            })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version >= 3 {
            w.put_i32(self.throttle_time_ms);
        }
        w.put_array_len(Some(self.topics.len()), flexible);
        for t in &self.topics {
            put_topic_name_or_id(w, &t.name, &t.topic_id, version >= TOPIC_ID_FROM, flexible);
            w.put_array_len(Some(t.partitions.len()), flexible);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i16(p.error_code);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 2..=10;

    /// The name below v10, the id from v10.
    fn named(version: i16, name: &str, id: u8) -> (String, [u8; 16]) {
        name_or_id(version, TOPIC_ID_FROM, name, id)
    }

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> OffsetCommitRequest {
        OffsetCommitRequest {
            group_id: "billing-consumers".into(),
            generation_id_or_member_epoch: 5,
            member_id: "consumer-1-4f0c".into(),
            group_instance_id: (version >= 7).then(|| "pod-é-1".into()),
            retention_time_ms: if RETENTION_VERSIONS.contains(&version) {
                86_400_000
            } else {
                -1
            },
            topics: vec![
                OffsetCommitRequestTopic {
                    name: named(version, "orders", 0x5a).0,
                    topic_id: named(version, "orders", 0x5a).1,
                    partitions: vec![
                        OffsetCommitRequestPartition {
                            partition_index: 3,
                            committed_offset: 1 << 40,
                            committed_leader_epoch: if version >= 6 { 12 } else { -1 },
                            committed_metadata: Some("🦀 resumed".into()),
                        },
                        OffsetCommitRequestPartition::default(),
                    ],
                },
                OffsetCommitRequestTopic {
                    name: named(version, "empty", 0x11).0,
                    topic_id: named(version, "empty", 0x11).1,
                    partitions: Vec::new(),
                },
            ],
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> OffsetCommitResponse {
        OffsetCommitResponse {
            throttle_time_ms: if version >= 3 { 20 } else { 0 },
            topics: vec![OffsetCommitResponseTopic {
                name: named(version, "orders", 0x5a).0,
                topic_id: named(version, "orders", 0x5a).1,
                partitions: vec![
                    OffsetCommitResponsePartition {
                        partition_index: 3,
                        error_code: 22,
                    },
                    OffsetCommitResponsePartition::default(),
                ],
            }],
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            for req in [request(v), OffsetCommitRequest::default()] {
                assert_round_trip(&req, v);
            }
        }
    }

    #[test]
    fn edge_case_responses_round_trip() {
        for v in VERSIONS {
            for resp in [response(v), OffsetCommitResponse::default()] {
                assert_round_trip(&resp, v);
            }
        }
    }

    /// v10's bytes, from Kafka 4.4's OffsetCommitRequest.json: the topic's
    /// 16-byte id where v9 had its name.
    #[test]
    fn v10_names_topics_by_id() {
        let req = OffsetCommitRequest {
            group_id: "g".into(),
            generation_id_or_member_epoch: 3,
            member_id: "m".into(),
            topics: vec![OffsetCommitRequestTopic {
                name: String::new(),
                topic_id: [7; 16],
                partitions: vec![OffsetCommitRequestPartition {
                    partition_index: 1,
                    committed_offset: 42,
                    committed_leader_epoch: 2,
                    committed_metadata: None,
                }],
            }],
            ..OffsetCommitRequest::default()
        };
        let mut want = vec![
            2, b'g', // GroupId
            0, 0, 0, 3, // GenerationIdOrMemberEpoch
            2, b'm', // MemberId
            0,    // GroupInstanceId: null
            2,    // Topics: one
        ];
        want.extend_from_slice(&[7; 16]); // TopicId
        want.extend_from_slice(&[
            2, // Partitions: one
            0, 0, 0, 1, // PartitionIndex
            0, 0, 0, 0, 0, 0, 0, 42, // CommittedOffset
            0, 0, 0, 2, // CommittedLeaderEpoch
            0, // CommittedMetadata: null
            0, 0, 0, // tags: partition, topic, request
        ]);
        assert_eq!(&encode(&req, 10)[..], &want[..]);
        let resp = OffsetCommitResponse {
            throttle_time_ms: 0,
            topics: vec![OffsetCommitResponseTopic {
                name: String::new(),
                topic_id: [7; 16],
                partitions: vec![OffsetCommitResponsePartition {
                    partition_index: 1,
                    error_code: 100,
                }],
            }],
        };
        let mut want = vec![0, 0, 0, 0, 2];
        want.extend_from_slice(&[7; 16]);
        want.extend_from_slice(&[2, 0, 0, 0, 1, 0, 100, 0, 0, 0]);
        assert_eq!(&encode(&resp, 10)[..], &want[..]);
    }

    #[test]
    fn versions_without_retention_read_it_as_the_broker_default() {
        let req = request(4);
        let back = OffsetCommitRequest::decode(&mut Reader::new(encode(&req, 5)), 5).unwrap();
        assert_eq!(back.retention_time_ms, -1);
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_string("g", true);
        b.put_i32(-1);
        b.put_string("", true);
        b.put_nullable_string(None, true);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<OffsetCommitRequest>(b.freeze(), 9);
        // One topic whose partition count claims more than the frame holds.
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i32(1);
        b.put_string("t", false);
        b.put_i32(i32::MAX);
        assert_count_too_large::<OffsetCommitResponse>(b.freeze(), 3);
    }

    conformance_tests!(
        OffsetCommitRequest,
        OffsetCommitResponse,
        VERSIONS,
        request,
        response
    );
}
