//! ShareFetch (key 78), versions 1-2; flexible in every version.
//!
//! A share consumer's fetch (KIP-932): it names the group and member instead
//! of offsets, may carry acknowledgements of records it received before, and
//! gets back records together with the ranges it acquired (with their
//! delivery counts). The share session (epoch 0 opens, -1 closes) plays the
//! part of KIP-227's fetch session. v2 adds the acquire mode (KIP-1206) and
//! Renew acknowledgements (KIP-1222). v0 was Kafka 4.0's early access.
//!
//! Like [`crate::messages::fetch`], the response can be encoded as chunks so
//! that record bytes reach the socket without a copy.

use bytes::{BufMut, Bytes, BytesMut};

use crate::chunks::{ChunkWriter, RecordData};
use crate::codec::{DecodeResult, Reader, Writer};
use crate::messages::fetch::LeaderIdAndEpoch;

/// Acknowledge types, one per offset of an acknowledgement batch (or one
/// for the whole batch).
pub const ACKNOWLEDGE_TYPE_GAP: i8 = 0;
pub const ACKNOWLEDGE_TYPE_ACCEPT: i8 = 1;
pub const ACKNOWLEDGE_TYPE_RELEASE: i8 = 2;
pub const ACKNOWLEDGE_TYPE_REJECT: i8 = 3;
/// v2+ (KIP-1222): extends the acquisition lock instead of ending it.
pub const ACKNOWLEDGE_TYPE_RENEW: i8 = 4;

/// ShareAcquireMode: batches as the log holds them (may exceed MaxRecords).
pub const SHARE_ACQUIRE_MODE_BATCH_OPTIMIZED: i8 = 0;
/// ShareAcquireMode: never more than MaxRecords records.
pub const SHARE_ACQUIRE_MODE_RECORD_LIMIT: i8 = 1;

/// First version with `share_acquire_mode` and `is_renew_ack`.
const RENEW_FROM: i16 = 2;

/// An acknowledgement batch: two offsets, an empty type array, tags.
pub(crate) const MIN_ACK_BATCH_BYTES: usize = 8 + 8 + 1 + 1;
/// A topic of acknowledgements or fetches: uuid, empty array, tags.
pub(crate) const MIN_TOPIC_ID_ENTRY_BYTES: usize = 16 + 1 + 1;

/// Offsets `first_offset..=last_offset` acknowledged with one type each, or
/// one type for them all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AcknowledgementBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub acknowledge_types: Vec<i8>,
}

impl AcknowledgementBatch {
    pub(crate) fn decode(r: &mut Reader) -> DecodeResult<Self> {
        let b = AcknowledgementBatch {
            first_offset: r.i64("first_offset")?,
            last_offset: r.i64("last_offset")?,
            acknowledge_types: r
                .array("acknowledge_types", true, 1, |r| r.i8("acknowledge_type"))?,
        };
        r.skip_tagged_fields()?;
        Ok(b)
    }

    pub(crate) fn encode(&self, w: &mut BytesMut) {
        w.put_i64(self.first_offset);
        w.put_i64(self.last_offset);
        w.put_array_len(Some(self.acknowledge_types.len()), true);
        for t in &self.acknowledge_types {
            w.put_i8(*t);
        }
        w.put_empty_tagged_fields();
    }
}

/// A broker the client should know, for a partition whose leader moved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeEndpoint {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
}

/// A node endpoint: id, empty host, port, null rack, tags.
const MIN_NODE_ENDPOINT_BYTES: usize = 4 + 1 + 4 + 1 + 1;

pub(crate) fn decode_node_endpoints(r: &mut Reader) -> DecodeResult<Vec<NodeEndpoint>> {
    r.array("node_endpoints", true, MIN_NODE_ENDPOINT_BYTES, |r| {
        let n = NodeEndpoint {
            node_id: r.i32("node_id")?,
            host: r.string("host", true)?,
            port: r.i32("port")?,
            rack: r.nullable_string("rack", true)?,
        };
        r.skip_tagged_fields()?;
        Ok(n)
    })
}

pub(crate) fn encode_node_endpoints(w: &mut BytesMut, nodes: &[NodeEndpoint]) {
    w.put_array_len(Some(nodes.len()), true);
    for n in nodes {
        w.put_i32(n.node_id);
        w.put_string(&n.host, true);
        w.put_i32(n.port);
        w.put_nullable_string(n.rack.as_deref(), true);
        w.put_empty_tagged_fields();
    }
}

/// The CurrentLeader struct (not tagged here, unlike Fetch's).
pub(crate) fn decode_current_leader(r: &mut Reader) -> DecodeResult<LeaderIdAndEpoch> {
    let l = LeaderIdAndEpoch {
        leader_id: r.i32("leader_id")?,
        leader_epoch: r.i32("leader_epoch")?,
    };
    r.skip_tagged_fields()?;
    Ok(l)
}

pub(crate) fn encode_current_leader(w: &mut BytesMut, l: &LeaderIdAndEpoch) {
    w.put_i32(l.leader_id);
    w.put_i32(l.leader_epoch);
    w.put_empty_tagged_fields();
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareFetchPartition {
    pub partition_index: i32,
    pub acknowledgement_batches: Vec<AcknowledgementBatch>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareFetchTopic {
    pub topic_id: [u8; 16],
    pub partitions: Vec<ShareFetchPartition>,
}

/// Partitions the session no longer fetches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForgottenTopic {
    pub topic_id: [u8; 16],
    pub partitions: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareFetchRequest {
    pub group_id: Option<String>,
    pub member_id: Option<String>,
    /// 0 opens a share session, -1 closes it, else one more than the last.
    pub share_session_epoch: i32,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub max_bytes: i32,
    pub max_records: i32,
    pub batch_size: i32,
    /// v2+; batch-optimized below.
    pub share_acquire_mode: i8,
    /// v2+; false below.
    pub is_renew_ack: bool,
    pub topics: Vec<ShareFetchTopic>,
    pub forgotten_topics_data: Vec<ForgottenTopic>,
}

impl Default for ShareFetchRequest {
    fn default() -> Self {
        ShareFetchRequest {
            group_id: None,
            member_id: None,
            share_session_epoch: 0,
            max_wait_ms: 0,
            min_bytes: 0,
            max_bytes: i32::MAX,
            max_records: 0,
            batch_size: 0,
            share_acquire_mode: SHARE_ACQUIRE_MODE_BATCH_OPTIMIZED,
            is_renew_ack: false,
            topics: Vec::new(),
            forgotten_topics_data: Vec::new(),
        }
    }
}

/// A fetch partition: its index, an empty batch array, tags.
const MIN_FETCH_PARTITION_BYTES: usize = 4 + 1 + 1;

impl ShareFetchRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let mut req = ShareFetchRequest {
            group_id: r.nullable_string("group_id", true)?,
            member_id: r.nullable_string("member_id", true)?,
            share_session_epoch: r.i32("share_session_epoch")?,
            max_wait_ms: r.i32("max_wait_ms")?,
            min_bytes: r.i32("min_bytes")?,
            max_bytes: r.i32("max_bytes")?,
            max_records: r.i32("max_records")?,
            batch_size: r.i32("batch_size")?,
            ..Default::default()
        };
        if version >= RENEW_FROM {
            req.share_acquire_mode = r.i8("share_acquire_mode")?;
            req.is_renew_ack = r.bool("is_renew_ack")?;
        }
        req.topics = r.array("topics", true, MIN_TOPIC_ID_ENTRY_BYTES, |r| {
            let topic_id = r.uuid("topic_id")?;
            let partitions = r.array("partitions", true, MIN_FETCH_PARTITION_BYTES, |r| {
                let p = ShareFetchPartition {
                    partition_index: r.i32("partition_index")?,
                    acknowledgement_batches: r.array(
                        "acknowledgement_batches",
                        true,
                        MIN_ACK_BATCH_BYTES,
                        AcknowledgementBatch::decode,
                    )?,
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(ShareFetchTopic {
                topic_id,
                partitions,
            })
        })?;
        req.forgotten_topics_data = r.array(
            "forgotten_topics_data",
            true,
            MIN_TOPIC_ID_ENTRY_BYTES,
            |r| {
                let t = ForgottenTopic {
                    topic_id: r.uuid("topic_id")?,
                    partitions: r.array("partitions", true, 4, |r| r.i32("partition"))?,
                };
                r.skip_tagged_fields()?;
                Ok(t)
            },
        )?;
        r.skip_tagged_fields()?;
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_nullable_string(self.group_id.as_deref(), true);
        w.put_nullable_string(self.member_id.as_deref(), true);
        w.put_i32(self.share_session_epoch);
        w.put_i32(self.max_wait_ms);
        w.put_i32(self.min_bytes);
        w.put_i32(self.max_bytes);
        w.put_i32(self.max_records);
        w.put_i32(self.batch_size);
        if version >= RENEW_FROM {
            w.put_i8(self.share_acquire_mode);
            w.put_bool(self.is_renew_ack);
        }
        w.put_array_len(Some(self.topics.len()), true);
        for t in &self.topics {
            w.put_slice(&t.topic_id);
            w.put_array_len(Some(t.partitions.len()), true);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_array_len(Some(p.acknowledgement_batches.len()), true);
                for b in &p.acknowledgement_batches {
                    b.encode(w);
                }
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        w.put_array_len(Some(self.forgotten_topics_data.len()), true);
        for t in &self.forgotten_topics_data {
            w.put_slice(&t.topic_id);
            w.put_i32_array(Some(&t.partitions), true);
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

/// Offsets `first_offset..=last_offset`, acquired by this fetch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcquiredRecords {
    pub first_offset: i64,
    pub last_offset: i64,
    /// How many times these records have been delivered, this one included.
    pub delivery_count: i16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareFetchPartitionData {
    pub partition_index: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    /// The outcome of the acknowledgements this request carried.
    pub acknowledge_error_code: i16,
    pub acknowledge_error_message: Option<String>,
    pub current_leader: LeaderIdAndEpoch,
    /// Not nullable from v1.
    pub records: RecordData,
    pub acquired_records: Vec<AcquiredRecords>,
}

impl Default for ShareFetchPartitionData {
    fn default() -> Self {
        ShareFetchPartitionData {
            partition_index: 0,
            error_code: 0,
            error_message: None,
            acknowledge_error_code: 0,
            acknowledge_error_message: None,
            current_leader: LeaderIdAndEpoch::default(),
            records: RecordData::Bytes(Bytes::new()),
            acquired_records: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareFetchTopicResponse {
    pub topic_id: [u8; 16],
    pub partitions: Vec<ShareFetchPartitionData>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareFetchResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    /// `group.share.record.lock.duration.ms` as the group has it.
    pub acquisition_lock_timeout_ms: i32,
    pub responses: Vec<ShareFetchTopicResponse>,
    pub node_endpoints: Vec<NodeEndpoint>,
}

/// A partition: index, 2 codes, 2 null messages, the leader struct, empty
/// records, an empty acquired array, tags.
const MIN_PARTITION_DATA_BYTES: usize = 4 + 2 + 1 + 2 + 1 + (4 + 4 + 1) + 1 + 1 + 1;
/// An acquired range: 2 offsets, a count, tags.
const MIN_ACQUIRED_BYTES: usize = 8 + 8 + 2 + 1;

impl ShareFetchResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let mut resp = ShareFetchResponse {
            throttle_time_ms: r.i32("throttle_time_ms")?,
            error_code: r.i16("error_code")?,
            error_message: r.nullable_string("error_message", true)?,
            acquisition_lock_timeout_ms: r.i32("acquisition_lock_timeout_ms")?,
            ..Default::default()
        };
        resp.responses = r.array("responses", true, MIN_TOPIC_ID_ENTRY_BYTES, |r| {
            let topic_id = r.uuid("topic_id")?;
            let partitions = r.array("partitions", true, MIN_PARTITION_DATA_BYTES, |r| {
                let p = ShareFetchPartitionData {
                    partition_index: r.i32("partition_index")?,
                    error_code: r.i16("error_code")?,
                    error_message: r.nullable_string("error_message", true)?,
                    acknowledge_error_code: r.i16("acknowledge_error_code")?,
                    acknowledge_error_message: r
                        .nullable_string("acknowledge_error_message", true)?,
                    current_leader: decode_current_leader(r)?,
                    records: RecordData::Bytes(r.bytes("records", true)?),
                    acquired_records: r.array(
                        "acquired_records",
                        true,
                        MIN_ACQUIRED_BYTES,
                        |r| {
                            let a = AcquiredRecords {
                                first_offset: r.i64("first_offset")?,
                                last_offset: r.i64("last_offset")?,
                                delivery_count: r.i16("delivery_count")?,
                            };
                            r.skip_tagged_fields()?;
                            Ok(a)
                        },
                    )?,
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(ShareFetchTopicResponse {
                topic_id,
                partitions,
            })
        })?;
        resp.node_endpoints = decode_node_endpoints(r)?;
        r.skip_tagged_fields()?;
        Ok(resp)
    }

    /// Encodes the response into `w`: ordinary fields into `w.buf()`, each
    /// partition's record data as its own chunks after its length prefix,
    /// so records are never copied. This is the broker's path.
    pub fn encode_chunked(&self, w: &mut ChunkWriter, _version: i16) {
        let b = w.buf();
        b.put_i32(self.throttle_time_ms);
        b.put_i16(self.error_code);
        b.put_nullable_string(self.error_message.as_deref(), true);
        b.put_i32(self.acquisition_lock_timeout_ms);
        b.put_array_len(Some(self.responses.len()), true);
        for t in &self.responses {
            let b = w.buf();
            b.put_slice(&t.topic_id);
            b.put_array_len(Some(t.partitions.len()), true);
            for p in &t.partitions {
                let b = w.buf();
                b.put_i32(p.partition_index);
                b.put_i16(p.error_code);
                b.put_nullable_string(p.error_message.as_deref(), true);
                b.put_i16(p.acknowledge_error_code);
                b.put_nullable_string(p.acknowledge_error_message.as_deref(), true);
                encode_current_leader(b, &p.current_leader);
                b.put_uvarint(p.records.len() as u64 + 1);
                w.push_records(&p.records);
                let b = w.buf();
                b.put_array_len(Some(p.acquired_records.len()), true);
                for a in &p.acquired_records {
                    b.put_i64(a.first_offset);
                    b.put_i64(a.last_offset);
                    b.put_i16(a.delivery_count);
                    b.put_empty_tagged_fields();
                }
                b.put_empty_tagged_fields();
            }
            w.buf().put_empty_tagged_fields();
        }
        encode_node_endpoints(w.buf(), &self.node_endpoints);
        w.buf().put_empty_tagged_fields();
    }

    /// Encodes the response into one buffer, copying the records. For
    /// clients and tests, whose record data is in memory.
    ///
    /// # Panics
    ///
    /// If any partition's records include a file range, which cannot be
    /// copied without I/O: the broker must use
    /// [`ShareFetchResponse::encode_chunked`].
    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let mut cw = ChunkWriter::new();
        self.encode_chunked(&mut cw, version);
        match cw.into_bytes() {
            Some(bytes) => w.extend_from_slice(&bytes),
            None => panic!("ShareFetchResponse::encode cannot copy file-range records"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 1..=2;

    fn request(version: i16) -> ShareFetchRequest {
        ShareFetchRequest {
            group_id: Some("queue".into()),
            member_id: Some("m-é".into()),
            share_session_epoch: 3,
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 1 << 20,
            max_records: 500,
            batch_size: 100,
            share_acquire_mode: if version >= 2 {
                SHARE_ACQUIRE_MODE_RECORD_LIMIT
            } else {
                SHARE_ACQUIRE_MODE_BATCH_OPTIMIZED
            },
            is_renew_ack: version >= 2,
            topics: vec![ShareFetchTopic {
                topic_id: [5; 16],
                partitions: vec![
                    ShareFetchPartition {
                        partition_index: 0,
                        acknowledgement_batches: vec![
                            AcknowledgementBatch {
                                first_offset: 10,
                                last_offset: 12,
                                acknowledge_types: vec![
                                    ACKNOWLEDGE_TYPE_ACCEPT,
                                    ACKNOWLEDGE_TYPE_GAP,
                                    ACKNOWLEDGE_TYPE_REJECT,
                                ],
                            },
                            AcknowledgementBatch {
                                first_offset: 13,
                                last_offset: 20,
                                acknowledge_types: vec![ACKNOWLEDGE_TYPE_RELEASE],
                            },
                        ],
                    },
                    ShareFetchPartition {
                        partition_index: 4,
                        acknowledgement_batches: vec![],
                    },
                ],
            }],
            forgotten_topics_data: vec![ForgottenTopic {
                topic_id: [6; 16],
                partitions: vec![1, 2],
            }],
        }
    }

    fn response(_version: i16) -> ShareFetchResponse {
        ShareFetchResponse {
            throttle_time_ms: 2,
            error_code: 0,
            error_message: Some("fine".into()),
            acquisition_lock_timeout_ms: 30_000,
            responses: vec![ShareFetchTopicResponse {
                topic_id: [5; 16],
                partitions: vec![
                    ShareFetchPartitionData {
                        partition_index: 0,
                        error_code: 0,
                        error_message: None,
                        acknowledge_error_code: 124,
                        acknowledge_error_message: Some("not acquired".into()),
                        current_leader: LeaderIdAndEpoch {
                            leader_id: 1,
                            leader_epoch: 7,
                        },
                        records: RecordData::Bytes(Bytes::from_static(b"some batches")),
                        acquired_records: vec![
                            AcquiredRecords {
                                first_offset: 21,
                                last_offset: 30,
                                delivery_count: 1,
                            },
                            AcquiredRecords {
                                first_offset: 32,
                                last_offset: 32,
                                delivery_count: 3,
                            },
                        ],
                    },
                    ShareFetchPartitionData {
                        partition_index: 1,
                        error_code: 6,
                        ..Default::default()
                    },
                ],
            }],
            node_endpoints: vec![NodeEndpoint {
                node_id: 1,
                host: "b1".into(),
                port: 9092,
                rack: Some("r".into()),
            }],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&ShareFetchRequest::default(), v);
            assert_round_trip(&ShareFetchResponse::default(), v);
        }
    }

    /// v2 adds two bytes after BatchSize: the acquire mode and the renew flag.
    #[test]
    fn v2_adds_the_acquire_mode_and_renew_flag() {
        let req = ShareFetchRequest::default();
        let v1 = encode(&req, 1);
        let v2 = encode(&req, 2);
        assert_eq!(v2.len(), v1.len() + 2);
        // GroupId null, MemberId null, 6 int32s, then v2's two bytes.
        assert_eq!(&v2[2 + 24..2 + 24 + 2], &[0, 0]);
    }

    /// Records are not nullable from v1: a null length is refused.
    #[test]
    fn null_records_are_refused() {
        let mut resp = response(1);
        resp.responses[0].partitions.truncate(1);
        resp.responses[0].partitions[0].records = RecordData::Bytes(Bytes::new());
        resp.responses[0].partitions[0].acquired_records.clear();
        resp.node_endpoints.clear();
        let good = encode(&resp, 1).to_vec();
        // Empty records are the compact length 1, followed by the empty
        // acquired array (1), the partition's tags (0), the topic's tags
        // (0), the node endpoints (1) and the response's tags (0).
        let at = good.len() - 6;
        assert_eq!(&good[at..], &[1, 1, 0, 0, 1, 0]);
        let mut bad = good.clone();
        bad[at] = 0;
        let r = ShareFetchResponse::decode(&mut Reader::new(Bytes::from(bad)), 1);
        assert!(matches!(
            r,
            Err(crate::codec::DecodeError::UnexpectedNull { .. })
        ));
    }

    #[test]
    fn a_huge_acknowledge_type_count_is_refused_before_allocating() {
        let mut b = BytesMut::new();
        b.put_i64(0);
        b.put_i64(0);
        b.put_uvarint(1 << 30);
        let r = AcknowledgementBatch::decode(&mut Reader::new(b.freeze()));
        assert!(matches!(
            r,
            Err(crate::codec::DecodeError::CountTooLarge { .. })
        ));
    }

    conformance_tests!(
        ShareFetchRequest,
        ShareFetchResponse,
        VERSIONS,
        request,
        response
    );
}
