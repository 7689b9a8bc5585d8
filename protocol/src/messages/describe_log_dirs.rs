//! DescribeLogDirs (key 35), versions 1-4; flexible from version 2.
//!
//! Admin tools (`kafka-log-dirs --describe`) ask each broker which log
//! directories it has and how large each partition's log is there. v3 adds
//! a top-level error code and v4 the volume's total and usable bytes.
//! Kafka 4.0 dropped v0; Kafka 4.4 defines a v5 (a "cordoned" flag per
//! directory) that the `kafka-protocol` crate pinlog is checked against does
//! not know, so we stop at v4.

use bytes::{BufMut, BytesMut};

use super::min_topic_bytes;
use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 2;

/// `total_bytes` and `usable_bytes` when unknown (Kafka's default).
pub const UNKNOWN_BYTES: i64 = -1;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeLogDirsRequest {
    /// `None` (a null array) asks about every partition.
    pub topics: Option<Vec<DescribableLogDirTopic>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribableLogDirTopic {
    pub topic: String,
    pub partitions: Vec<i32>,
}

impl DescribeLogDirsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let topics = r.nullable_array("topics", flexible, min_topic_bytes(flexible), |r| {
            let topic = r.string("topic", flexible)?;
            let partitions = r.array("partitions", flexible, 4, |r| r.i32("partition"))?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(DescribableLogDirTopic { topic, partitions })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DescribeLogDirsRequest { topics })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        match &self.topics {
            None => w.put_array_len(None, flexible),
            Some(topics) => {
                w.put_array_len(Some(topics.len()), flexible);
                for t in topics {
                    w.put_string(&t.topic, flexible);
                    w.put_array_len(Some(t.partitions.len()), flexible);
                    for p in &t.partitions {
                        w.put_i32(*p);
                    }
                    if flexible {
                        w.put_empty_tagged_fields();
                    }
                }
            }
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeLogDirsResponse {
    pub throttle_time_ms: i32,
    /// v3+.
    pub error_code: i16,
    pub results: Vec<DescribeLogDirsResult>,
}

/// One log directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeLogDirsResult {
    pub error_code: i16,
    /// The directory's absolute path.
    pub log_dir: String,
    pub topics: Vec<DescribeLogDirsTopic>,
    /// v4+; the volume's size, or [`UNKNOWN_BYTES`].
    pub total_bytes: i64,
    /// v4+; the bytes still usable on the volume, or [`UNKNOWN_BYTES`].
    pub usable_bytes: i64,
}

impl Default for DescribeLogDirsResult {
    fn default() -> Self {
        DescribeLogDirsResult {
            error_code: 0,
            log_dir: String::new(),
            topics: Vec::new(),
            total_bytes: UNKNOWN_BYTES,
            usable_bytes: UNKNOWN_BYTES,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeLogDirsTopic {
    pub name: String,
    pub partitions: Vec<DescribeLogDirsPartition>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeLogDirsPartition {
    pub partition_index: i32,
    /// Bytes of the partition's segments.
    pub partition_size: i64,
    /// How far the log end trails the high watermark (current logs) or the
    /// current log's end (future logs).
    pub offset_lag: i64,
    /// Whether this is a future log that AlterReplicaLogDirs is filling.
    pub is_future_key: bool,
}

impl DescribeLogDirsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let error_code = if version >= 3 {
            r.i16("error_code")?
        } else {
            0
        };
        let t = min_tags_bytes(flexible);
        let result_min = 2
            + min_string_bytes(flexible)
            + min_array_bytes(flexible)
            + if version >= 4 { 8 + 8 } else { 0 }
            + t;
        // Index, size, lag, future flag and the tag count.
        let partition_min = 4 + 8 + 8 + 1 + t;
        let results = r.array("results", flexible, result_min, |r| {
            let mut result = DescribeLogDirsResult {
                error_code: r.i16("error_code")?,
                log_dir: r.string("log_dir", flexible)?,
                ..DescribeLogDirsResult::default()
            };
            result.topics = r.array("topics", flexible, min_topic_bytes(flexible), |r| {
                let name = r.string("name", flexible)?;
                let partitions = r.array("partitions", flexible, partition_min, |r| {
                    let p = DescribeLogDirsPartition {
                        partition_index: r.i32("partition_index")?,
                        partition_size: r.i64("partition_size")?,
                        offset_lag: r.i64("offset_lag")?,
                        is_future_key: r.bool("is_future_key")?,
                    };
                    if flexible {
                        r.skip_tagged_fields()?;
                    }
                    Ok(p)
                })?;
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(DescribeLogDirsTopic { name, partitions })
            })?;
            if version >= 4 {
                result.total_bytes = r.i64("total_bytes")?;
                result.usable_bytes = r.i64("usable_bytes")?;
            }
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(result)
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DescribeLogDirsResponse {
            throttle_time_ms,
            error_code,
            results,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        if version >= 3 {
            w.put_i16(self.error_code);
        }
        w.put_array_len(Some(self.results.len()), flexible);
        for result in &self.results {
            w.put_i16(result.error_code);
            w.put_string(&result.log_dir, flexible);
            w.put_array_len(Some(result.topics.len()), flexible);
            for t in &result.topics {
                w.put_string(&t.name, flexible);
                w.put_array_len(Some(t.partitions.len()), flexible);
                for p in &t.partitions {
                    w.put_i32(p.partition_index);
                    w.put_i64(p.partition_size);
                    w.put_i64(p.offset_lag);
                    w.put_bool(p.is_future_key);
                    if flexible {
                        w.put_empty_tagged_fields();
                    }
                }
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
            if version >= 4 {
                w.put_i64(result.total_bytes);
                w.put_i64(result.usable_bytes);
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
    use bytes::Bytes;

    const VERSIONS: std::ops::RangeInclusive<i16> = 1..=4;

    fn request() -> DescribeLogDirsRequest {
        DescribeLogDirsRequest {
            topics: Some(vec![
                DescribableLogDirTopic {
                    topic: "orders".into(),
                    partitions: vec![0, 1, 11],
                },
                DescribableLogDirTopic {
                    topic: "none".into(),
                    partitions: vec![],
                },
            ]),
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> DescribeLogDirsResponse {
        let v4 = version >= 4;
        DescribeLogDirsResponse {
            throttle_time_ms: 3,
            error_code: if version >= 3 { 31 } else { 0 },
            results: vec![
                DescribeLogDirsResult {
                    error_code: 0,
                    log_dir: "/var/lib/pinlog".into(),
                    topics: vec![DescribeLogDirsTopic {
                        name: "orders".into(),
                        partitions: vec![
                            DescribeLogDirsPartition {
                                partition_index: 11,
                                partition_size: 5 << 30,
                                offset_lag: 4,
                                is_future_key: true,
                            },
                            DescribeLogDirsPartition::default(),
                        ],
                    }],
                    total_bytes: if v4 { 1 << 40 } else { UNKNOWN_BYTES },
                    usable_bytes: if v4 { 1 << 39 } else { UNKNOWN_BYTES },
                },
                DescribeLogDirsResult {
                    error_code: 56,
                    log_dir: "/mnt/broken".into(),
                    ..DescribeLogDirsResult::default()
                },
            ],
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&request(), v);
            assert_round_trip(&DescribeLogDirsRequest { topics: None }, v);
        }
    }

    #[test]
    fn null_topics_mean_every_partition() {
        assert_eq!(
            DescribeLogDirsRequest::decode(&mut Reader::new(Bytes::from_static(&[0, 0])), 2)
                .unwrap(),
            DescribeLogDirsRequest { topics: None }
        );
        let v1 = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(
            DescribeLogDirsRequest::decode(&mut Reader::new(v1), 1)
                .unwrap()
                .topics,
            None
        );
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_i32(i32::MAX);
        assert_count_too_large::<DescribeLogDirsRequest>(b.freeze(), 1);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i16(0);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<DescribeLogDirsResponse>(b.freeze(), 4);
    }

    conformance_tests!(
        DescribeLogDirsRequest,
        DescribeLogDirsResponse,
        VERSIONS,
        |_| request(),
        response
    );
}
