//! OffsetFetch (key 9), versions 1-10; flexible from version 6.
//!
//! Consumers call it on their group coordinator to learn where the group
//! committed. v10 (Kafka 4.1+) names topics by id instead of by name, in
//! the request and the response.
//!
//! The request has two shapes, and Kafka keeps both fields in one message,
//! as we do:
//!
//! * v1-v7 ask about one group: `group_id` and `topics`, where a null
//!   `topics` (v2+) asks for every topic the group committed.
//! * v8+ ask about several groups at once: `groups`, each with its own
//!   nullable `topics`; v9 adds the member id and epoch of KIP-848 consumers.
//!
//! Each field holds its empty default in the versions that lack it.
//! [`OffsetFetchRequest::into_groups`] folds both shapes into the second, so
//! a handler need not care which one arrived. The response mirrors the
//! request: per-topic results and one error code up to v7, per-group results
//! from v8.

use bytes::{BufMut, BytesMut};

use super::{min_topic_bytes, put_topic_name_or_id, read_topic_name_or_id};
use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 6;
/// First version with the multi-group form.
const GROUPS_FROM: i16 = 8;
/// The first version that names topics by id (and no longer by name).
pub const TOPIC_ID_FROM: i16 = 10;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchRequest {
    /// v1-v7.
    pub group_id: String,
    /// v1-v7; `None` (a null array, v2+) asks for every committed topic.
    /// Kafka allows the null only from v2; pinlog reads and writes it at v1
    /// too, as the meaning is clear and kafka-protocol does the same.
    pub topics: Option<Vec<OffsetFetchRequestTopic>>,
    /// v8+.
    pub groups: Vec<OffsetFetchRequestGroup>,
    /// v7+: answer UNSTABLE_OFFSET_COMMIT rather than an offset that a
    /// pending transaction may still change.
    pub require_stable: bool,
}

impl Default for OffsetFetchRequest {
    fn default() -> Self {
        OffsetFetchRequest {
            group_id: String::new(),
            // Kafka's default for the field: an empty, not a null, array.
            topics: Some(Vec::new()),
            groups: Vec::new(),
            require_stable: false,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetFetchRequestTopic {
    /// v1-9; empty from v10.
    pub name: String,
    /// v10+; zero before.
    pub topic_id: [u8; 16],
    pub partition_indexes: Vec<i32>,
}

/// One group of a v8+ request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchRequestGroup {
    pub group_id: String,
    /// v9+; `None` for a classic-protocol consumer or an admin client.
    pub member_id: Option<String>,
    /// v9+; -1 unless a KIP-848 consumer sends it.
    pub member_epoch: i32,
    /// `None` (a null array) asks for every committed topic.
    pub topics: Option<Vec<OffsetFetchRequestTopic>>,
}

impl Default for OffsetFetchRequestGroup {
    fn default() -> Self {
        OffsetFetchRequestGroup {
            group_id: String::new(),
            member_id: None,
            member_epoch: -1,
            topics: Some(Vec::new()),
        }
    }
}

impl OffsetFetchRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut req = OffsetFetchRequest::default();
        if version < GROUPS_FROM {
            req.group_id = r.string("group_id", flexible)?;
            req.topics = decode_topics(r, version)?;
        } else {
            let s = min_string_bytes(flexible);
            let group_min = s
                + if version >= 9 { s + 4 } else { 0 }
                + min_array_bytes(flexible)
                + min_tags_bytes(flexible);
            req.groups = r.array("groups", flexible, group_min, |r| {
                let mut group = OffsetFetchRequestGroup {
                    group_id: r.string("group_id", flexible)?,
                    ..OffsetFetchRequestGroup::default()
                };
                if version >= 9 {
                    group.member_id = r.nullable_string("member_id", flexible)?;
                    group.member_epoch = r.i32("member_epoch")?;
                }
                group.topics = decode_topics(r, version)?;
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(group)
            })?;
        }
        if version >= 7 {
            req.require_stable = r.bool("require_stable")?;
        }
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version < GROUPS_FROM {
            w.put_string(&self.group_id, flexible);
            encode_topics(w, self.topics.as_deref(), version);
        } else {
            w.put_array_len(Some(self.groups.len()), flexible);
            for g in &self.groups {
                w.put_string(&g.group_id, flexible);
                if version >= 9 {
                    w.put_nullable_string(g.member_id.as_deref(), flexible);
                    w.put_i32(g.member_epoch);
                }
                encode_topics(w, g.topics.as_deref(), version);
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
        }
        if version >= 7 {
            w.put_bool(self.require_stable);
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }

    /// The groups asked about, whichever shape `version` uses: a v1-v7
    /// request becomes its one group, with no member id.
    pub fn into_groups(self, version: i16) -> Vec<OffsetFetchRequestGroup> {
        if version >= GROUPS_FROM {
            return self.groups;
        }
        vec![OffsetFetchRequestGroup {
            group_id: self.group_id,
            member_id: None,
            member_epoch: -1,
            topics: self.topics,
        }]
    }
}

fn decode_topics(
    r: &mut Reader,
    version: i16,
) -> DecodeResult<Option<Vec<OffsetFetchRequestTopic>>> {
    let flexible = version >= FLEXIBLE_FROM;
    r.nullable_array("topics", flexible, min_topic_bytes(flexible), |r| {
        let (name, topic_id) = read_topic_name_or_id(r, version >= TOPIC_ID_FROM, flexible)?;
        let partition_indexes = r.array("partition_indexes", flexible, 4, |r| {
            r.i32("partition_index")
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(OffsetFetchRequestTopic {
            name,
            topic_id,
            partition_indexes,
        })
    })
}

fn encode_topics(w: &mut BytesMut, topics: Option<&[OffsetFetchRequestTopic]>, version: i16) {
    let flexible = version >= FLEXIBLE_FROM;
    let Some(topics) = topics else {
        w.put_array_len(None, flexible);
        return;
    };
    w.put_array_len(Some(topics.len()), flexible);
    for t in topics {
        put_topic_name_or_id(w, &t.name, &t.topic_id, version >= TOPIC_ID_FROM, flexible);
        w.put_array_len(Some(t.partition_indexes.len()), flexible);
        for p in &t.partition_indexes {
            w.put_i32(*p);
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetFetchResponse {
    /// v3+.
    pub throttle_time_ms: i32,
    /// v1-v7.
    pub topics: Vec<OffsetFetchResponseTopic>,
    /// v2-v7: the group-level error (coordinator, authorization).
    pub error_code: i16,
    /// v8+.
    pub groups: Vec<OffsetFetchResponseGroup>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetFetchResponseTopic {
    /// v1-9; empty from v10.
    pub name: String,
    /// v10+; zero before.
    pub topic_id: [u8; 16],
    pub partitions: Vec<OffsetFetchResponsePartition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchResponsePartition {
    pub partition_index: i32,
    /// -1 when the group committed nothing for the partition.
    pub committed_offset: i64,
    /// v5+; -1 when unknown.
    pub committed_leader_epoch: i32,
    /// What the consumer committed alongside the offset.
    pub metadata: Option<String>,
    pub error_code: i16,
}

impl Default for OffsetFetchResponsePartition {
    fn default() -> Self {
        OffsetFetchResponsePartition {
            partition_index: 0,
            committed_offset: -1,
            committed_leader_epoch: -1,
            metadata: None,
            error_code: 0,
        }
    }
}

/// One group of a v8+ response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetFetchResponseGroup {
    pub group_id: String,
    pub topics: Vec<OffsetFetchResponseTopic>,
    pub error_code: i16,
}

impl OffsetFetchResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut resp = OffsetFetchResponse::default();
        if version >= 3 {
            resp.throttle_time_ms = r.i32("throttle_time_ms")?;
        }
        if version < GROUPS_FROM {
            resp.topics = decode_results(r, version)?;
            if version >= 2 {
                resp.error_code = r.i16("error_code")?;
            }
        } else {
            let group_min = min_string_bytes(flexible)
                + min_array_bytes(flexible)
                + 2
                + min_tags_bytes(flexible);
            resp.groups = r.array("groups", flexible, group_min, |r| {
                let group_id = r.string("group_id", flexible)?;
                let topics = decode_results(r, version)?;
                let error_code = r.i16("error_code")?;
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(OffsetFetchResponseGroup {
                    group_id,
                    topics,
                    error_code,
                })
            })?;
        }
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
        if version < GROUPS_FROM {
            encode_results(w, &self.topics, version);
            if version >= 2 {
                w.put_i16(self.error_code);
            }
        } else {
            w.put_array_len(Some(self.groups.len()), flexible);
            for g in &self.groups {
                w.put_string(&g.group_id, flexible);
                encode_results(w, &g.topics, version);
                w.put_i16(g.error_code);
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

fn decode_results(r: &mut Reader, version: i16) -> DecodeResult<Vec<OffsetFetchResponseTopic>> {
    let flexible = version >= FLEXIBLE_FROM;
    // Index, offset, epoch (v5+), metadata, error and the tag count.
    let partition_min = 4
        + 8
        + if version >= 5 { 4 } else { 0 }
        + min_string_bytes(flexible)
        + 2
        + min_tags_bytes(flexible);
    r.array("topics", flexible, min_topic_bytes(flexible), |r| {
        let (name, topic_id) = read_topic_name_or_id(r, version >= TOPIC_ID_FROM, flexible)?;
        let partitions = r.array("partitions", flexible, partition_min, |r| {
            let mut p = OffsetFetchResponsePartition {
                partition_index: r.i32("partition_index")?,
                committed_offset: r.i64("committed_offset")?,
                ..OffsetFetchResponsePartition::default()
            };
            if version >= 5 {
                p.committed_leader_epoch = r.i32("committed_leader_epoch")?;
            }
            p.metadata = r.nullable_string("metadata", flexible)?;
            p.error_code = r.i16("error_code")?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(p)
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(OffsetFetchResponseTopic {
            name,
            topic_id,
            partitions,
        })
    })
}

fn encode_results(w: &mut BytesMut, topics: &[OffsetFetchResponseTopic], version: i16) {
    let flexible = version >= FLEXIBLE_FROM;
    w.put_array_len(Some(topics.len()), flexible);
    for t in topics {
        put_topic_name_or_id(w, &t.name, &t.topic_id, version >= TOPIC_ID_FROM, flexible);
        w.put_array_len(Some(t.partitions.len()), flexible);
        for p in &t.partitions {
            w.put_i32(p.partition_index);
            w.put_i64(p.committed_offset);
            if version >= 5 {
                w.put_i32(p.committed_leader_epoch);
            }
            w.put_nullable_string(p.metadata.as_deref(), flexible);
            w.put_i16(p.error_code);
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
    use bytes::Bytes;

    const VERSIONS: std::ops::RangeInclusive<i16> = 1..=10;

    /// The name below v10, the id from v10.
    fn named(version: i16, name: &str, id: u8) -> (String, [u8; 16]) {
        name_or_id(version, TOPIC_ID_FROM, name, id)
    }

    fn topics(version: i16) -> Vec<OffsetFetchRequestTopic> {
        vec![
            OffsetFetchRequestTopic {
                name: named(version, "orders", 0x5a).0,
                topic_id: named(version, "orders", 0x5a).1,
                partition_indexes: vec![0, 3, 7],
            },
            OffsetFetchRequestTopic {
                name: named(version, "audit", 0x11).0,
                topic_id: named(version, "audit", 0x11).1,
                partition_indexes: vec![],
            },
        ]
    }

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> OffsetFetchRequest {
        let mut req = OffsetFetchRequest {
            require_stable: version >= 7,
            ..OffsetFetchRequest::default()
        };
        if version < GROUPS_FROM {
            req.group_id = "billing".into();
            req.topics = Some(topics(version));
        } else {
            let v9 = version >= 9;
            req.groups = vec![
                OffsetFetchRequestGroup {
                    group_id: "billing".into(),
                    member_id: v9.then(|| "member-1".into()),
                    member_epoch: if v9 { 12 } else { -1 },
                    topics: Some(topics(version)),
                },
                OffsetFetchRequestGroup {
                    group_id: "everything".into(),
                    topics: None,
                    ..OffsetFetchRequestGroup::default()
                },
            ];
        }
        req
    }

    /// The "all topics" form of the single-group request.
    fn request_all_topics() -> OffsetFetchRequest {
        OffsetFetchRequest {
            group_id: "billing".into(),
            topics: None,
            ..OffsetFetchRequest::default()
        }
    }

    fn results(version: i16) -> Vec<OffsetFetchResponseTopic> {
        vec![
            OffsetFetchResponseTopic {
                name: named(version, "orders", 0x5a).0,
                topic_id: named(version, "orders", 0x5a).1,
                partitions: vec![
                    OffsetFetchResponsePartition {
                        partition_index: 3,
                        committed_offset: 1 << 33,
                        committed_leader_epoch: if version >= 5 { 4 } else { -1 },
                        metadata: Some("consumer-7".into()),
                        error_code: 0,
                    },
                    OffsetFetchResponsePartition {
                        partition_index: 7,
                        error_code: 3,
                        ..OffsetFetchResponsePartition::default()
                    },
                ],
            },
            OffsetFetchResponseTopic {
                name: named(version, "audit", 0x11).0,
                topic_id: named(version, "audit", 0x11).1,
                partitions: vec![],
            },
        ]
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> OffsetFetchResponse {
        let mut resp = OffsetFetchResponse {
            throttle_time_ms: if version >= 3 { 25 } else { 0 },
            ..OffsetFetchResponse::default()
        };
        if version < GROUPS_FROM {
            resp.topics = results(version);
            resp.error_code = if version >= 2 { 16 } else { 0 };
        } else {
            resp.groups = vec![
                OffsetFetchResponseGroup {
                    group_id: "billing".into(),
                    topics: results(version),
                    error_code: 0,
                },
                OffsetFetchResponseGroup {
                    group_id: "gone".into(),
                    topics: vec![],
                    error_code: 69,
                },
            ];
        }
        resp
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&request(v), v);
            if v < GROUPS_FROM {
                assert_round_trip(&request_all_topics(), v);
            }
        }
    }

    #[test]
    fn null_topics_read_as_all_topics() {
        // v7: group "g", a null topic array, require_stable, no tags.
        let frame = Bytes::from_static(&[2, b'g', 0, 1, 0]);
        let req = OffsetFetchRequest::decode(&mut Reader::new(frame), 7).unwrap();
        assert_eq!(req.group_id, "g");
        assert_eq!(req.topics, None);
        assert!(req.require_stable);
    }

    #[test]
    fn both_shapes_become_groups() {
        let single = request(7).into_groups(7);
        assert_eq!(
            single,
            vec![OffsetFetchRequestGroup {
                group_id: "billing".into(),
                member_id: None,
                member_epoch: -1,
                topics: Some(topics(7)),
            }]
        );
        assert_eq!(request(9).into_groups(9), request(9).groups);
        assert_eq!(request_all_topics().into_groups(2)[0].topics, None);
    }

    /// v10's bytes, from Kafka 4.4's OffsetFetch JSON: each topic's 16-byte
    /// id where v9 had its name.
    #[test]
    fn v10_names_topics_by_id() {
        let req = OffsetFetchRequest {
            groups: vec![OffsetFetchRequestGroup {
                group_id: "g".into(),
                member_id: Some("m".into()),
                member_epoch: 4,
                topics: Some(vec![OffsetFetchRequestTopic {
                    name: String::new(),
                    topic_id: [7; 16],
                    partition_indexes: vec![2],
                }]),
            }],
            ..OffsetFetchRequest::default()
        };
        let mut want = vec![
            2, // Groups: one
            2, b'g', // GroupId
            2, b'm', // MemberId
            0, 0, 0, 4, // MemberEpoch
            2, // Topics: one
        ];
        want.extend_from_slice(&[7; 16]); // TopicId
        want.extend_from_slice(&[
            2, 0, 0, 0, 2, // PartitionIndexes [2]
            0, 0, // tags: topic, group
            0, // RequireStable
            0, // tags
        ]);
        assert_eq!(&encode(&req, 10)[..], &want[..]);
        let resp = OffsetFetchResponse {
            groups: vec![OffsetFetchResponseGroup {
                group_id: "g".into(),
                topics: vec![OffsetFetchResponseTopic {
                    name: String::new(),
                    topic_id: [7; 16],
                    partitions: vec![OffsetFetchResponsePartition {
                        partition_index: 2,
                        committed_offset: 9,
                        committed_leader_epoch: -1,
                        metadata: None,
                        error_code: 100,
                    }],
                }],
                error_code: 0,
            }],
            ..OffsetFetchResponse::default()
        };
        let mut want = vec![0, 0, 0, 0, 2, 2, b'g', 2];
        want.extend_from_slice(&[7; 16]);
        want.extend_from_slice(&[
            2, // Partitions: one
            0, 0, 0, 2, // PartitionIndex
            0, 0, 0, 0, 0, 0, 0, 9, // CommittedOffset
            0xff, 0xff, 0xff, 0xff, // CommittedLeaderEpoch
            0,    // Metadata: null
            0, 100, // ErrorCode
            0, 0, // tags: partition, topic
            0, 0, // group ErrorCode
            0, 0, // tags: group, response
        ]);
        assert_eq!(&encode(&resp, 10)[..], &want[..]);
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<OffsetFetchRequest>(b.freeze(), 8);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i32(i32::MAX);
        assert_count_too_large::<OffsetFetchResponse>(b.freeze(), 3);
    }

    conformance_tests!(
        OffsetFetchRequest,
        OffsetFetchResponse,
        VERSIONS,
        request,
        response
    );
}
