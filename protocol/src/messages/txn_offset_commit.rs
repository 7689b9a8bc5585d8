//! TxnOffsetCommit (key 28), versions 0-6; flexible from version 3.
//!
//! A transactional producer commits a consumer group's offsets inside its
//! transaction: the group coordinator holds them back until the
//! transaction's commit marker reaches `__consumer_offsets`, and drops them
//! on an abort. v2 adds each partition's committed leader epoch, v3 the
//! member's generation, id and instance id so that the coordinator can fence
//! zombie consumers (KIP-447). v1, v4 and v5 are the version before on the
//! wire; v4 may answer TRANSACTION_ABORTABLE and v5 comes with the
//! transactions of KIP-890 part 2. v6 names topics by id instead of by name,
//! in the request and in the response (KIP-1319).

use bytes::{BufMut, BytesMut};

use super::min_topic_bytes;
use crate::codec::{min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 3;
/// First version whose partitions carry `committed_leader_epoch`.
const LEADER_EPOCH_FROM: i16 = 2;
/// First version that names the group member.
const MEMBER_FROM: i16 = 3;
/// First version whose topics are named by id, not by name.
pub const TOPIC_ID_FROM: i16 = 6;

/// The smallest topic entry of `version`: its name or id, an empty
/// partition array, and tags.
fn min_topic_entry_bytes(version: i16) -> usize {
    let flexible = version >= FLEXIBLE_FROM;
    if version >= TOPIC_ID_FROM {
        16 + 1 + min_tags_bytes(flexible)
    } else {
        min_topic_bytes(flexible)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnOffsetCommitRequest {
    pub transactional_id: String,
    pub group_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// v3+: the consumer's generation, or -1 (Kafka's default).
    pub generation_id: i32,
    /// v3+: the member id the coordinator assigned, or empty.
    pub member_id: String,
    /// v3+: the static member's `group.instance.id`, or `None`.
    pub group_instance_id: Option<String>,
    pub topics: Vec<TxnOffsetCommitRequestTopic>,
}

impl Default for TxnOffsetCommitRequest {
    fn default() -> Self {
        TxnOffsetCommitRequest {
            transactional_id: String::new(),
            group_id: String::new(),
            producer_id: 0,
            producer_epoch: 0,
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            topics: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnOffsetCommitRequestTopic {
    /// v0-5: the topic's name (empty from v6).
    pub name: String,
    /// v6+: the topic's id (zero before).
    pub topic_id: [u8; 16],
    pub partitions: Vec<TxnOffsetCommitRequestPartition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnOffsetCommitRequestPartition {
    pub partition_index: i32,
    /// The next offset the group will consume.
    pub committed_offset: i64,
    /// v2+: the leader epoch of the last record consumed, or -1 (Kafka's
    /// default) if unknown.
    pub committed_leader_epoch: i32,
    /// Any string the client keeps with the offset; null is allowed.
    pub committed_metadata: Option<String>,
}

impl Default for TxnOffsetCommitRequestPartition {
    fn default() -> Self {
        TxnOffsetCommitRequestPartition {
            partition_index: 0,
            committed_offset: 0,
            committed_leader_epoch: -1,
            committed_metadata: None,
        }
    }
}

impl TxnOffsetCommitRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut req = TxnOffsetCommitRequest {
            transactional_id: r.string("transactional_id", flexible)?,
            group_id: r.string("group_id", flexible)?,
            producer_id: r.i64("producer_id")?,
            producer_epoch: r.i16("producer_epoch")?,
            ..TxnOffsetCommitRequest::default()
        };
        if version >= MEMBER_FROM {
            req.generation_id = r.i32("generation_id")?;
            req.member_id = r.string("member_id", flexible)?;
            req.group_instance_id = r.nullable_string("group_instance_id", flexible)?;
        }
        // Partition, offset, epoch (v2+), metadata and tags.
        let min_partition = 4
            + 8
            + if version >= LEADER_EPOCH_FROM { 4 } else { 0 }
            + min_string_bytes(flexible)
            + min_tags_bytes(flexible);
        req.topics = r.array("topics", flexible, min_topic_entry_bytes(version), |r| {
            let (name, topic_id) = if version >= TOPIC_ID_FROM {
                (String::new(), r.uuid("topic_id")?)
            } else {
                (r.string("name", flexible)?, [0; 16])
            };
            let partitions = r.array("partitions", flexible, min_partition, |r| {
                let mut p = TxnOffsetCommitRequestPartition {
                    partition_index: r.i32("partition_index")?,
                    committed_offset: r.i64("committed_offset")?,
                    ..TxnOffsetCommitRequestPartition::default()
                };
                if version >= LEADER_EPOCH_FROM {
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
            Ok(TxnOffsetCommitRequestTopic {
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
        w.put_string(&self.transactional_id, flexible);
        w.put_string(&self.group_id, flexible);
        w.put_i64(self.producer_id);
        w.put_i16(self.producer_epoch);
        if version >= MEMBER_FROM {
            w.put_i32(self.generation_id);
            w.put_string(&self.member_id, flexible);
            w.put_nullable_string(self.group_instance_id.as_deref(), flexible);
        }
        w.put_array_len(Some(self.topics.len()), flexible);
        for t in &self.topics {
            if version >= TOPIC_ID_FROM {
                w.put_slice(&t.topic_id);
            } else {
                w.put_string(&t.name, flexible);
            }
            w.put_array_len(Some(t.partitions.len()), flexible);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i64(p.committed_offset);
                if version >= LEADER_EPOCH_FROM {
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
pub struct TxnOffsetCommitResponse {
    pub throttle_time_ms: i32,
    pub topics: Vec<TxnOffsetCommitResponseTopic>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnOffsetCommitResponseTopic {
    /// v0-5: the topic's name (empty from v6).
    pub name: String,
    /// v6+: the topic's id (zero before).
    pub topic_id: [u8; 16],
    pub partitions: Vec<TxnOffsetCommitResponsePartition>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnOffsetCommitResponsePartition {
    pub partition_index: i32,
    pub error_code: i16,
}

impl TxnOffsetCommitResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        // Partition, error and tags.
        let min_partition = 4 + 2 + min_tags_bytes(flexible);
        let topics = r.array("topics", flexible, min_topic_entry_bytes(version), |r| {
            let (name, topic_id) = if version >= TOPIC_ID_FROM {
                (String::new(), r.uuid("topic_id")?)
            } else {
                (r.string("name", flexible)?, [0; 16])
            };
            let partitions = r.array("partitions", flexible, min_partition, |r| {
                let p = TxnOffsetCommitResponsePartition {
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
            Ok(TxnOffsetCommitResponseTopic {
                name,
                topic_id,
                partitions,
            })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(TxnOffsetCommitResponse {
            throttle_time_ms,
            topics,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.topics.len()), flexible);
        for t in &self.topics {
            if version >= TOPIC_ID_FROM {
                w.put_slice(&t.topic_id);
            } else {
                w.put_string(&t.name, flexible);
            }
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=6;

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> TxnOffsetCommitRequest {
        let member = version >= MEMBER_FROM;
        TxnOffsetCommitRequest {
            transactional_id: "txn-é-7".into(),
            group_id: "billing-consumers".into(),
            producer_id: 1 << 40,
            producer_epoch: 9,
            generation_id: if member { 17 } else { -1 },
            member_id: if member {
                "consumer-1-4f0c".into()
            } else {
                String::new()
            },
            group_instance_id: member.then(|| "pod-🦀-1".into()),
            topics: vec![
                TxnOffsetCommitRequestTopic {
                    name: by_name(version, "orders"),
                    topic_id: by_id(version, 0x5a),
                    partitions: vec![
                        TxnOffsetCommitRequestPartition {
                            partition_index: 3,
                            committed_offset: 1 << 33,
                            committed_leader_epoch: if version >= LEADER_EPOCH_FROM {
                                12
                            } else {
                                -1
                            },
                            committed_metadata: Some("résumé".into()),
                        },
                        TxnOffsetCommitRequestPartition::default(),
                    ],
                },
                TxnOffsetCommitRequestTopic {
                    name: by_name(version, "empty"),
                    topic_id: by_id(version, 0x11),
                    partitions: Vec::new(),
                },
            ],
        }
    }

    /// A topic's name where `version` carries names, else empty.
    fn by_name(version: i16, name: &str) -> String {
        if version < TOPIC_ID_FROM {
            name.into()
        } else {
            String::new()
        }
    }

    /// A topic id where `version` carries ids, else zero.
    fn by_id(version: i16, byte: u8) -> [u8; 16] {
        if version >= TOPIC_ID_FROM {
            [byte; 16]
        } else {
            [0; 16]
        }
    }

    fn response(version: i16) -> TxnOffsetCommitResponse {
        TxnOffsetCommitResponse {
            throttle_time_ms: 21,
            topics: vec![TxnOffsetCommitResponseTopic {
                name: by_name(version, "orders"),
                topic_id: by_id(version, 0x5a),
                partitions: vec![
                    TxnOffsetCommitResponsePartition {
                        partition_index: 3,
                        error_code: 82,
                    },
                    TxnOffsetCommitResponsePartition::default(),
                ],
            }],
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            let empty_metadata = TxnOffsetCommitRequest {
                topics: vec![TxnOffsetCommitRequestTopic {
                    name: String::new(),
                    topic_id: [0; 16],
                    partitions: vec![TxnOffsetCommitRequestPartition {
                        committed_metadata: Some(String::new()),
                        ..TxnOffsetCommitRequestPartition::default()
                    }],
                }],
                ..TxnOffsetCommitRequest::default()
            };
            for req in [
                request(v),
                TxnOffsetCommitRequest::default(),
                empty_metadata,
            ] {
                assert_round_trip(&req, v);
            }
            assert_round_trip(&TxnOffsetCommitResponse::default(), v);
        }
    }

    /// v6 carries ids only: a name set on the struct does not reach the
    /// wire, and v5 carries no id.
    #[test]
    fn version_6_names_topics_by_id_only() {
        let mut both = request(6);
        both.topics[0].name = "orders".into();
        let back = TxnOffsetCommitRequest::decode(&mut Reader::new(encode(&both, 6)), 6).unwrap();
        assert_eq!(back, request(6));
        let mut both = request(5);
        both.topics[0].topic_id = [7; 16];
        let back = TxnOffsetCommitRequest::decode(&mut Reader::new(encode(&both, 5)), 5).unwrap();
        assert_eq!(back, request(5));
    }

    #[test]
    fn versions_without_member_read_the_defaults() {
        let back =
            TxnOffsetCommitRequest::decode(&mut Reader::new(encode(&request(5), 2)), 2).unwrap();
        assert_eq!(back, request(2));
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_string("txn", true);
        b.put_string("g", true);
        b.put_i64(1);
        b.put_i16(0);
        b.put_i32(-1);
        b.put_string("", true);
        b.put_nullable_string(None, true);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<TxnOffsetCommitRequest>(b.freeze(), 5);
        // One topic whose partition count claims more than the frame holds.
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i32(1);
        b.put_string("t", false);
        b.put_i32(i32::MAX);
        assert_count_too_large::<TxnOffsetCommitResponse>(b.freeze(), 0);
    }

    conformance_tests!(
        TxnOffsetCommitRequest,
        TxnOffsetCommitResponse,
        VERSIONS,
        request,
        response
    );
}
