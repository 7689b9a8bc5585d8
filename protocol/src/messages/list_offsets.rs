//! ListOffsets (key 2), versions 1-7; v6 is the first flexible version.
//!
//! v1 is the floor because v0 answers with an array of offsets
//! (`MaxNumOffsets`) rather than one. v7 adds no field, only the
//! [`MAX_TIMESTAMP`] query (KIP-734); a broker must not answer it at lower
//! versions. Versions 8+ add tiered-storage queries and a timeout, which
//! pinlog does not advertise.

use bytes::{BufMut, BytesMut};

use super::min_topic_bytes;
use crate::codec::{DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 6;

/// Special `timestamp` values in a request partition.
pub const LATEST_TIMESTAMP: i64 = -1;
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// The offset of the record with the largest timestamp; v7+.
pub const MAX_TIMESTAMP: i64 = -3;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOffsetsRequest {
    /// The requesting broker's id, or -1 for a consumer. Kafka gives the
    /// field no default, so `Default` leaves it 0: set it explicitly.
    pub replica_id: i32,
    /// v2+; 0 (read uncommitted) otherwise. Read committed answers
    /// `LATEST_TIMESTAMP` with the last stable offset instead of the high
    /// watermark.
    pub isolation_level: i8,
    pub topics: Vec<ListOffsetsTopic>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOffsetsTopic {
    pub name: String,
    pub partitions: Vec<ListOffsetsPartition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsPartition {
    pub partition_index: i32,
    /// v4+; -1 (do not fence) otherwise.
    pub current_leader_epoch: i32,
    /// A timestamp in ms, or one of the special values above.
    pub timestamp: i64,
}

impl Default for ListOffsetsPartition {
    fn default() -> Self {
        ListOffsetsPartition {
            partition_index: 0,
            current_leader_epoch: -1,
            timestamp: 0,
        }
    }
}

impl ListOffsetsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let replica_id = r.i32("replica_id")?;
        let isolation_level = if version >= 2 {
            r.i8("isolation_level")?
        } else {
            0
        };
        // Partition index, timestamp, the v4+ epoch and the tag count.
        let min_partition = 4 + 8 + if version >= 4 { 4 } else { 0 } + flexible as usize;
        let topics = r.array("topics", flexible, min_topic_bytes(flexible), |r| {
            let name = r.string("topic name", flexible)?;
            let partitions = r.array("partitions", flexible, min_partition, |r| {
                let mut p = ListOffsetsPartition {
                    partition_index: r.i32("partition_index")?,
                    ..Default::default()
                };
                if version >= 4 {
                    p.current_leader_epoch = r.i32("current_leader_epoch")?;
                }
                p.timestamp = r.i64("timestamp")?;
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(p)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(ListOffsetsTopic { name, partitions })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(ListOffsetsRequest {
            replica_id,
            isolation_level,
            topics,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.replica_id);
        if version >= 2 {
            w.put_i8(self.isolation_level);
        }
        w.put_array_len(Some(self.topics.len()), flexible);
        for t in &self.topics {
            w.put_string(&t.name, flexible);
            w.put_array_len(Some(t.partitions.len()), flexible);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                if version >= 4 {
                    w.put_i32(p.current_leader_epoch);
                }
                w.put_i64(p.timestamp);
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
pub struct ListOffsetsResponse {
    /// v2+; 0 otherwise.
    pub throttle_time_ms: i32,
    pub topics: Vec<ListOffsetsTopicResponse>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOffsetsTopicResponse {
    pub name: String,
    pub partitions: Vec<ListOffsetsPartitionResponse>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsPartitionResponse {
    pub partition_index: i32,
    pub error_code: i16,
    /// The timestamp of the returned offset's record, -1 when the query was
    /// `LATEST_TIMESTAMP`/`EARLIEST_TIMESTAMP` or nothing matched.
    pub timestamp: i64,
    /// -1 when no record has a timestamp at or after the query.
    pub offset: i64,
    /// v4+; -1 otherwise.
    pub leader_epoch: i32,
}

impl Default for ListOffsetsPartitionResponse {
    fn default() -> Self {
        ListOffsetsPartitionResponse {
            partition_index: 0,
            error_code: 0,
            timestamp: -1,
            offset: -1,
            leader_epoch: -1,
        }
    }
}

impl ListOffsetsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let throttle_time_ms = if version >= 2 {
            r.i32("throttle_time_ms")?
        } else {
            0
        };
        // Index, error, timestamp, offset, the v4+ epoch and the tag count.
        let min_partition = 4 + 2 + 8 + 8 + if version >= 4 { 4 } else { 0 } + flexible as usize;
        let topics = r.array("topics", flexible, min_topic_bytes(flexible), |r| {
            let name = r.string("topic name", flexible)?;
            let partitions = r.array("partitions", flexible, min_partition, |r| {
                let mut p = ListOffsetsPartitionResponse {
                    partition_index: r.i32("partition_index")?,
                    error_code: r.i16("error_code")?,
                    timestamp: r.i64("timestamp")?,
                    offset: r.i64("offset")?,
                    ..Default::default()
                };
                if version >= 4 {
                    p.leader_epoch = r.i32("leader_epoch")?;
                }
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(p)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(ListOffsetsTopicResponse { name, partitions })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(ListOffsetsResponse {
            throttle_time_ms,
            topics,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version >= 2 {
            w.put_i32(self.throttle_time_ms);
        }
        w.put_array_len(Some(self.topics.len()), flexible);
        for t in &self.topics {
            w.put_string(&t.name, flexible);
            w.put_array_len(Some(t.partitions.len()), flexible);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i16(p.error_code);
                w.put_i64(p.timestamp);
                w.put_i64(p.offset);
                if version >= 4 {
                    w.put_i32(p.leader_epoch);
                }
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 1..=7;

    fn request(version: i16) -> ListOffsetsRequest {
        let mut p = ListOffsetsPartition {
            partition_index: 5,
            timestamp: 1_700_000_000_000,
            ..Default::default()
        };
        if version >= 4 {
            p.current_leader_epoch = 9;
        }
        ListOffsetsRequest {
            replica_id: -1,
            isolation_level: if version >= 2 { 1 } else { 0 },
            topics: vec![
                ListOffsetsTopic {
                    name: "orders".into(),
                    partitions: vec![
                        p,
                        ListOffsetsPartition {
                            partition_index: 6,
                            timestamp: EARLIEST_TIMESTAMP,
                            ..Default::default()
                        },
                    ],
                },
                ListOffsetsTopic {
                    name: "empty".into(),
                    partitions: vec![],
                },
            ],
        }
    }

    fn response(version: i16) -> ListOffsetsResponse {
        let mut p = ListOffsetsPartitionResponse {
            partition_index: 5,
            error_code: 74,
            timestamp: 1_700_000_000_123,
            offset: 4242,
            ..Default::default()
        };
        if version >= 4 {
            p.leader_epoch = 9;
        }
        ListOffsetsResponse {
            throttle_time_ms: if version >= 2 { 30 } else { 0 },
            topics: vec![ListOffsetsTopicResponse {
                name: "orders".into(),
                partitions: vec![p, ListOffsetsPartitionResponse::default()],
            }],
        }
    }

    #[test]
    fn absent_fields_hold_kafka_defaults() {
        let m = ListOffsetsRequest::decode(&mut Reader::new(encode(&request(7), 1)), 1).unwrap();
        assert_eq!(m.isolation_level, 0);
        assert_eq!(m.topics[0].partitions[0].current_leader_epoch, -1);
        let m = ListOffsetsResponse::decode(&mut Reader::new(encode(&response(7), 3)), 3).unwrap();
        assert_eq!(m.topics[0].partitions[0].leader_epoch, -1);
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_i32(-1);
        b.put_i8(0);
        b.put_i32(i32::MAX);
        assert_count_too_large::<ListOffsetsRequest>(b.freeze(), 5);
    }

    conformance_tests!(
        ListOffsetsRequest,
        ListOffsetsResponse,
        VERSIONS,
        request,
        response
    );
}
