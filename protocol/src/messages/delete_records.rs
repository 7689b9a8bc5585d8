//! DeleteRecords (key 21), versions 0-2; flexible from version 2.
//!
//! Moves each partition's log start offset forward (`kafka-delete-records`,
//! `AdminClient.deleteRecords`): records below it can no longer be read, and
//! whole segments below it are deleted. An offset of
//! [`HIGH_WATERMARK`] means "up to the high watermark". Each partition's
//! answer is its new low watermark, the log start offset.

use bytes::{BufMut, BytesMut};

use super::min_topic_bytes;
use crate::codec::{DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 2;

/// The `offset` that asks to delete everything below the high watermark.
pub const HIGH_WATERMARK: i64 = -1;
/// The `low_watermark` Kafka answers with on error.
pub const INVALID_LOW_WATERMARK: i64 = -1;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteRecordsRequest {
    pub topics: Vec<DeleteRecordsTopic>,
    /// How long the broker may wait for replicas to follow.
    pub timeout_ms: i32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteRecordsTopic {
    pub name: String,
    pub partitions: Vec<DeleteRecordsPartition>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteRecordsPartition {
    pub partition_index: i32,
    /// The new log start offset, or [`HIGH_WATERMARK`].
    pub offset: i64,
}

impl DeleteRecordsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        // Index, offset and, when flexible, a tag count.
        let partition_min = 4 + 8 + flexible as usize;
        let topics = r.array("topics", flexible, min_topic_bytes(flexible), |r| {
            let name = r.string("name", flexible)?;
            let partitions = r.array("partitions", flexible, partition_min, |r| {
                let p = DeleteRecordsPartition {
                    partition_index: r.i32("partition_index")?,
                    offset: r.i64("offset")?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(p)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(DeleteRecordsTopic { name, partitions })
        })?;
        let timeout_ms = r.i32("timeout_ms")?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DeleteRecordsRequest { topics, timeout_ms })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_array_len(Some(self.topics.len()), flexible);
        for t in &self.topics {
            w.put_string(&t.name, flexible);
            w.put_array_len(Some(t.partitions.len()), flexible);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i64(p.offset);
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
        w.put_i32(self.timeout_ms);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteRecordsResponse {
    pub throttle_time_ms: i32,
    pub topics: Vec<DeleteRecordsTopicResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteRecordsTopicResult {
    pub name: String,
    pub partitions: Vec<DeleteRecordsPartitionResult>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteRecordsPartitionResult {
    pub partition_index: i32,
    /// The log start offset after the deletion, or
    /// [`INVALID_LOW_WATERMARK`] on error.
    pub low_watermark: i64,
    pub error_code: i16,
}

impl Default for DeleteRecordsPartitionResult {
    fn default() -> Self {
        DeleteRecordsPartitionResult {
            partition_index: 0,
            low_watermark: INVALID_LOW_WATERMARK,
            error_code: 0,
        }
    }
}

impl DeleteRecordsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        // Index, low watermark, error and, when flexible, a tag count.
        let partition_min = 4 + 8 + 2 + flexible as usize;
        let topics = r.array("topics", flexible, min_topic_bytes(flexible), |r| {
            let name = r.string("name", flexible)?;
            let partitions = r.array("partitions", flexible, partition_min, |r| {
                let p = DeleteRecordsPartitionResult {
                    partition_index: r.i32("partition_index")?,
                    low_watermark: r.i64("low_watermark")?,
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
            Ok(DeleteRecordsTopicResult { name, partitions })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DeleteRecordsResponse {
            throttle_time_ms,
            topics,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.topics.len()), flexible);
        for t in &self.topics {
            w.put_string(&t.name, flexible);
            w.put_array_len(Some(t.partitions.len()), flexible);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i64(p.low_watermark);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=2;

    fn request() -> DeleteRecordsRequest {
        DeleteRecordsRequest {
            topics: vec![
                DeleteRecordsTopic {
                    name: "orders".into(),
                    partitions: vec![
                        DeleteRecordsPartition {
                            partition_index: 2,
                            offset: 1 << 35,
                        },
                        DeleteRecordsPartition {
                            partition_index: 0,
                            offset: HIGH_WATERMARK,
                        },
                    ],
                },
                DeleteRecordsTopic {
                    name: "empty".into(),
                    partitions: vec![],
                },
            ],
            timeout_ms: 30_000,
        }
    }

    fn response() -> DeleteRecordsResponse {
        DeleteRecordsResponse {
            throttle_time_ms: 7,
            topics: vec![DeleteRecordsTopicResult {
                name: "orders".into(),
                partitions: vec![
                    DeleteRecordsPartitionResult {
                        partition_index: 2,
                        low_watermark: 1 << 35,
                        error_code: 0,
                    },
                    DeleteRecordsPartitionResult {
                        partition_index: 9,
                        low_watermark: INVALID_LOW_WATERMARK,
                        error_code: 1,
                    },
                ],
            }],
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&request(), v);
            assert_round_trip(&DeleteRecordsRequest::default(), v);
        }
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<DeleteRecordsRequest>(b.freeze(), 2);
        let mut b = BytesMut::new();
        b.put_i32(1);
        b.put_string("t", false);
        b.put_i32(i32::MAX);
        assert_count_too_large::<DeleteRecordsRequest>(b.freeze(), 0);
    }

    conformance_tests!(
        DeleteRecordsRequest,
        DeleteRecordsResponse,
        VERSIONS,
        |_| request(),
        |_| response()
    );
}
