//! OffsetForLeaderEpoch (key 23), versions 2-4; v4 is the first flexible
//! version.
//!
//! v2 is the floor because it is the first version with the current leader
//! epoch used for fencing. Consumers send this request after a leader
//! change to detect log truncation (KIP-320); followers send it to find
//! where their log diverges.

use bytes::{BufMut, BytesMut};

use super::min_topic_bytes;
use crate::codec::{DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 4;

/// `replica_id` of a consumer.
pub const CONSUMER_REPLICA_ID: i32 = -1;
/// `replica_id` Kafka assigns to v2 requests, which carry none: "a debug
/// consumer or a replica using an old version of the protocol".
pub const DEBUGGING_REPLICA_ID: i32 = -2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetForLeaderEpochRequest {
    /// v3+; [`DEBUGGING_REPLICA_ID`] otherwise, which is Kafka's default.
    /// A v2 request therefore cannot tell a consumer from a follower, and
    /// librdkafka consumers send v2: do not treat -2 as a broker id, and do
    /// not make the answer depend on it (Kafka's does not).
    pub replica_id: i32,
    pub topics: Vec<OffsetForLeaderTopic>,
}

impl Default for OffsetForLeaderEpochRequest {
    fn default() -> Self {
        OffsetForLeaderEpochRequest {
            replica_id: DEBUGGING_REPLICA_ID,
            topics: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetForLeaderTopic {
    pub topic: String,
    pub partitions: Vec<OffsetForLeaderPartition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetForLeaderPartition {
    pub partition: i32,
    /// The requester's view of the current epoch, for fencing; -1 to skip
    /// the check.
    pub current_leader_epoch: i32,
    /// The epoch whose end offset is asked for.
    pub leader_epoch: i32,
}

impl Default for OffsetForLeaderPartition {
    fn default() -> Self {
        OffsetForLeaderPartition {
            partition: 0,
            current_leader_epoch: -1,
            leader_epoch: 0,
        }
    }
}

impl OffsetForLeaderEpochRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let replica_id = if version >= 3 {
            r.i32("replica_id")?
        } else {
            DEBUGGING_REPLICA_ID
        };
        // Three int32s and, when flexible, a tag count.
        let min_partition = 12 + flexible as usize;
        let topics = r.array("topics", flexible, min_topic_bytes(flexible), |r| {
            let topic = r.string("topic", flexible)?;
            let partitions = r.array("partitions", flexible, min_partition, |r| {
                let p = OffsetForLeaderPartition {
                    partition: r.i32("partition")?,
                    current_leader_epoch: r.i32("current_leader_epoch")?,
                    leader_epoch: r.i32("leader_epoch")?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(p)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(OffsetForLeaderTopic { topic, partitions })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(OffsetForLeaderEpochRequest { replica_id, topics })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version >= 3 {
            w.put_i32(self.replica_id);
        }
        w.put_array_len(Some(self.topics.len()), flexible);
        for t in &self.topics {
            w.put_string(&t.topic, flexible);
            w.put_array_len(Some(t.partitions.len()), flexible);
            for p in &t.partitions {
                w.put_i32(p.partition);
                w.put_i32(p.current_leader_epoch);
                w.put_i32(p.leader_epoch);
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
pub struct OffsetForLeaderEpochResponse {
    pub throttle_time_ms: i32,
    pub topics: Vec<OffsetForLeaderTopicResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetForLeaderTopicResult {
    pub topic: String,
    pub partitions: Vec<EpochEndOffset>,
}

/// One partition's answer. Note that the error code comes before the
/// partition index on the wire, unlike in most responses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochEndOffset {
    pub error_code: i16,
    pub partition: i32,
    /// The largest epoch at or below the requested one, or -1 if unknown.
    pub leader_epoch: i32,
    /// The end offset of `leader_epoch`, or -1 if unknown.
    pub end_offset: i64,
}

impl Default for EpochEndOffset {
    fn default() -> Self {
        EpochEndOffset {
            error_code: 0,
            partition: 0,
            leader_epoch: -1,
            end_offset: -1,
        }
    }
}

impl OffsetForLeaderEpochResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        // Error, partition, epoch, end offset and, when flexible, a tag count.
        let min_partition = 2 + 4 + 4 + 8 + flexible as usize;
        let topics = r.array("topics", flexible, min_topic_bytes(flexible), |r| {
            let topic = r.string("topic", flexible)?;
            let partitions = r.array("partitions", flexible, min_partition, |r| {
                let p = EpochEndOffset {
                    error_code: r.i16("error_code")?,
                    partition: r.i32("partition")?,
                    leader_epoch: r.i32("leader_epoch")?,
                    end_offset: r.i64("end_offset")?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(p)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(OffsetForLeaderTopicResult { topic, partitions })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(OffsetForLeaderEpochResponse {
            throttle_time_ms,
            topics,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.topics.len()), flexible);
        for t in &self.topics {
            w.put_string(&t.topic, flexible);
            w.put_array_len(Some(t.partitions.len()), flexible);
            for p in &t.partitions {
                w.put_i16(p.error_code);
                w.put_i32(p.partition);
                w.put_i32(p.leader_epoch);
                w.put_i64(p.end_offset);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 2..=4;

    fn request(version: i16) -> OffsetForLeaderEpochRequest {
        OffsetForLeaderEpochRequest {
            replica_id: if version >= 3 {
                CONSUMER_REPLICA_ID
            } else {
                DEBUGGING_REPLICA_ID
            },
            topics: vec![
                OffsetForLeaderTopic {
                    topic: "orders".into(),
                    partitions: vec![
                        OffsetForLeaderPartition {
                            partition: 1,
                            current_leader_epoch: 7,
                            leader_epoch: 5,
                        },
                        OffsetForLeaderPartition::default(),
                    ],
                },
                OffsetForLeaderTopic {
                    topic: "empty".into(),
                    partitions: vec![],
                },
            ],
        }
    }

    fn response() -> OffsetForLeaderEpochResponse {
        OffsetForLeaderEpochResponse {
            throttle_time_ms: 15,
            topics: vec![OffsetForLeaderTopicResult {
                topic: "orders".into(),
                partitions: vec![
                    EpochEndOffset {
                        error_code: 74,
                        partition: 1,
                        leader_epoch: 5,
                        end_offset: 12345,
                    },
                    EpochEndOffset::default(),
                ],
            }],
        }
    }

    #[test]
    fn v2_requests_read_as_debugging_replica() {
        let m = OffsetForLeaderEpochRequest::decode(&mut Reader::new(encode(&request(4), 2)), 2)
            .unwrap();
        assert_eq!(m.replica_id, DEBUGGING_REPLICA_ID);
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_i32(-1);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<OffsetForLeaderEpochRequest>(b.freeze(), 4);
    }

    conformance_tests!(
        OffsetForLeaderEpochRequest,
        OffsetForLeaderEpochResponse,
        VERSIONS,
        request,
        |_| response()
    );
}
