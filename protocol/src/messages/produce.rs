//! Produce (key 0), versions 3-12; v9 is the first flexible version.
//!
//! v3 is the floor because it is the first version that carries
//! RecordBatch v2 (and the transactional id); pinlog stores nothing older.
//! Version 10 adds the response's tagged fields `CurrentLeader` and
//! `NodeEndpoints` (KIP-951), which pinlog never sets, so they are not
//! modelled (a response without them is what Kafka sends when the leader
//! did not move) and are skipped like any unknown tag when read. Version
//! 11 (TRANSACTION_ABORTABLE) and 12 (transaction version 2, KIP-890) only
//! change what the versions mean, not their bytes.
//!
//! A request with `acks == 0` gets no response at all: that is decided by
//! the connection, not here, but it is why the response type is never built
//! for such requests.
//!
//! Record data is kept as a `Bytes` slice of the request frame, so the
//! batches reach the log without a copy.

use bytes::{BufMut, Bytes, BytesMut};

use super::min_topic_bytes;
use crate::codec::{DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 9;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProduceRequest {
    /// The transactional id, or `None` for a non-transactional producer.
    pub transactional_id: Option<String>,
    /// 0 (no response), 1 (leader only) or -1 (full ISR). Kafka's default,
    /// and so `Default`'s, is 0: a hand-built request that forgets to set it
    /// is fire-and-forget.
    pub acks: i16,
    pub timeout_ms: i32,
    pub topics: Vec<TopicProduceData>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicProduceData {
    pub name: String,
    pub partitions: Vec<PartitionProduceData>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionProduceData {
    pub index: i32,
    /// RecordBatch bytes as a slice of the request frame; `None` when the
    /// client sent a null record set.
    pub records: Option<Bytes>,
}

impl ProduceRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let transactional_id = r.nullable_string("transactional_id", flexible)?;
        let acks = r.i16("acks")?;
        let timeout_ms = r.i32("timeout_ms")?;
        // A partition is at least its index, a records length and, when
        // flexible, a tagged-field count.
        let min_partition = if flexible { 6 } else { 8 };
        let topics = r.array("topics", flexible, min_topic_bytes(flexible), |r| {
            let name = r.string("topic name", flexible)?;
            let partitions = r.array("partitions", flexible, min_partition, |r| {
                let index = r.i32("partition index")?;
                let records = r.nullable_bytes("records", flexible)?;
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(PartitionProduceData { index, records })
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(TopicProduceData { name, partitions })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(ProduceRequest {
            transactional_id,
            acks,
            timeout_ms,
            topics,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_nullable_string(self.transactional_id.as_deref(), flexible);
        w.put_i16(self.acks);
        w.put_i32(self.timeout_ms);
        w.put_array_len(Some(self.topics.len()), flexible);
        for t in &self.topics {
            w.put_string(&t.name, flexible);
            w.put_array_len(Some(t.partitions.len()), flexible);
            for p in &t.partitions {
                w.put_i32(p.index);
                w.put_nullable_bytes(p.records.as_deref(), flexible);
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
pub struct ProduceResponse {
    pub responses: Vec<TopicProduceResponse>,
    pub throttle_time_ms: i32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicProduceResponse {
    pub name: String,
    pub partition_responses: Vec<PartitionProduceResponse>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionProduceResponse {
    pub index: i32,
    pub error_code: i16,
    /// Offset of the first record appended, or -1 on error.
    pub base_offset: i64,
    /// The broker's append time for `LogAppendTime` topics, else -1.
    pub log_append_time_ms: i64,
    /// v5+; -1 otherwise.
    pub log_start_offset: i64,
    /// v8+; empty otherwise.
    pub record_errors: Vec<BatchIndexAndErrorMessage>,
    /// v8+; `None` otherwise.
    pub error_message: Option<String>,
}

impl Default for PartitionProduceResponse {
    fn default() -> Self {
        PartitionProduceResponse {
            index: 0,
            error_code: 0,
            base_offset: 0,
            log_append_time_ms: -1,
            log_start_offset: -1,
            record_errors: Vec::new(),
            error_message: None,
        }
    }
}

/// A record that made the broker drop its whole batch (KIP-467), v8+.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchIndexAndErrorMessage {
    pub batch_index: i32,
    pub batch_index_error_message: Option<String>,
}

/// The smallest encoding of a partition response at `version`.
fn min_partition_response_bytes(version: i16, flexible: bool) -> usize {
    // index, error code, base offset, log append time.
    let mut n = 4 + 2 + 8 + 8;
    if version >= 5 {
        n += 8;
    }
    if version >= 8 {
        // An empty record-errors array and a null error message.
        n += if flexible { 1 + 1 } else { 4 + 2 };
    }
    if flexible {
        n += 1;
    }
    n
}

impl ProduceResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let min_partition = min_partition_response_bytes(version, flexible);
        let responses = r.array("responses", flexible, min_topic_bytes(flexible), |r| {
            let name = r.string("topic name", flexible)?;
            let partition_responses =
                r.array("partition_responses", flexible, min_partition, |r| {
                    let mut p = PartitionProduceResponse {
                        index: r.i32("partition index")?,
                        error_code: r.i16("error_code")?,
                        base_offset: r.i64("base_offset")?,
                        log_append_time_ms: r.i64("log_append_time_ms")?,
                        ..Default::default()
                    };
                    if version >= 5 {
                        p.log_start_offset = r.i64("log_start_offset")?;
                    }
                    if version >= 8 {
                        // A batch index and a null message: 4 + 2 bytes, or
                        // 4 + 1 plus a tag count when flexible, 6 either way.
                        p.record_errors = r.array("record_errors", flexible, 6, |r| {
                            let batch_index = r.i32("batch_index")?;
                            let batch_index_error_message =
                                r.nullable_string("batch_index_error_message", flexible)?;
                            if flexible {
                                r.skip_tagged_fields()?;
                            }
                            Ok(BatchIndexAndErrorMessage {
                                batch_index,
                                batch_index_error_message,
                            })
                        })?;
                        p.error_message = r.nullable_string("error_message", flexible)?;
                    }
                    if flexible {
                        // v10+ puts CurrentLeader (tag 0) here; pinlog does not
                        // advertise v10, so it is skipped like any unknown tag.
                        r.skip_tagged_fields()?;
                    }
                    Ok(p)
                })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(TopicProduceResponse {
                name,
                partition_responses,
            })
        })?;
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(ProduceResponse {
            responses,
            throttle_time_ms,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_array_len(Some(self.responses.len()), flexible);
        for t in &self.responses {
            w.put_string(&t.name, flexible);
            w.put_array_len(Some(t.partition_responses.len()), flexible);
            for p in &t.partition_responses {
                w.put_i32(p.index);
                w.put_i16(p.error_code);
                w.put_i64(p.base_offset);
                w.put_i64(p.log_append_time_ms);
                if version >= 5 {
                    w.put_i64(p.log_start_offset);
                }
                if version >= 8 {
                    w.put_array_len(Some(p.record_errors.len()), flexible);
                    for e in &p.record_errors {
                        w.put_i32(e.batch_index);
                        w.put_nullable_string(e.batch_index_error_message.as_deref(), flexible);
                        if flexible {
                            w.put_empty_tagged_fields();
                        }
                    }
                    w.put_nullable_string(p.error_message.as_deref(), flexible);
                }
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
        w.put_i32(self.throttle_time_ms);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::DecodeError;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 3..=9;

    fn request(_version: i16) -> ProduceRequest {
        ProduceRequest {
            transactional_id: Some("txn-1".into()),
            acks: 1,
            timeout_ms: 1500,
            topics: vec![
                TopicProduceData {
                    name: "orders".into(),
                    partitions: vec![
                        PartitionProduceData {
                            index: 3,
                            records: Some(Bytes::from_static(b"batch-bytes")),
                        },
                        PartitionProduceData {
                            index: 4,
                            records: None,
                        },
                    ],
                },
                TopicProduceData {
                    name: "empty".into(),
                    partitions: vec![],
                },
            ],
        }
    }

    fn response(version: i16) -> ProduceResponse {
        let mut p = PartitionProduceResponse {
            index: 7,
            error_code: 87,
            base_offset: 1 << 40,
            log_append_time_ms: 1_700_000_000_000,
            ..Default::default()
        };
        if version >= 5 {
            p.log_start_offset = 12;
        }
        if version >= 8 {
            p.record_errors = vec![
                BatchIndexAndErrorMessage {
                    batch_index: 2,
                    batch_index_error_message: Some("bad key".into()),
                },
                BatchIndexAndErrorMessage {
                    batch_index: 5,
                    batch_index_error_message: None,
                },
            ];
            p.error_message = Some("invalid record".into());
        }
        ProduceResponse {
            responses: vec![TopicProduceResponse {
                name: "orders".into(),
                partition_responses: vec![p, PartitionProduceResponse::default()],
            }],
            throttle_time_ms: 250,
        }
    }

    #[test]
    fn records_are_slices_of_the_frame() {
        for v in VERSIONS {
            let frame = encode(&request(v), v);
            let range = frame.as_ptr_range();
            let m = ProduceRequest::decode(&mut Reader::new(frame.clone()), v).unwrap();
            let records = m.topics[0].partitions[0].records.as_ref().unwrap();
            assert!(
                range.contains(&records.as_ptr()),
                "v{v}: records were copied"
            );
        }
    }

    #[test]
    fn huge_topic_count_is_refused_without_allocating() {
        // Null transactional id, acks, timeout, then a topic array that
        // claims i32::MAX entries: 12 bytes in all.
        let body: [u8; 12] = [
            0xff, 0xff, 0x00, 0x01, 0x00, 0x00, 0x75, 0x30, 0x7f, 0xff, 0xff, 0xff,
        ];
        let err =
            ProduceRequest::decode(&mut Reader::new(Bytes::copy_from_slice(&body)), 8).unwrap_err();
        assert!(matches!(err, DecodeError::CountTooLarge { .. }), "{err}");

        // The same in the compact encoding of v9: a 5-byte varint count.
        let mut b = BytesMut::new();
        b.put_uvarint(0);
        b.put_i16(1);
        b.put_i32(30_000);
        b.put_uvarint(u32::MAX as u64);
        let err = ProduceRequest::decode(&mut Reader::new(b.freeze()), 9).unwrap_err();
        assert!(matches!(err, DecodeError::CountTooLarge { .. }), "{err}");
    }

    #[test]
    fn unknown_tags_are_skipped() {
        // A v9 response whose partition carries a v10 CurrentLeader tag.
        let mut b = BytesMut::new();
        b.put_uvarint(2); // one topic
        b.put_string("t", true);
        b.put_uvarint(2); // one partition
        b.put_i32(0);
        b.put_i16(6);
        b.put_i64(-1);
        b.put_i64(-1);
        b.put_i64(-1);
        b.put_uvarint(1); // no record errors
        b.put_uvarint(0); // null error message
        b.put_uvarint(1); // one tagged field
        b.put_uvarint(0);
        b.put_uvarint(9);
        b.put_i32(2);
        b.put_i32(5);
        b.put_uvarint(0);
        b.put_uvarint(0); // topic tags
        b.put_i32(0);
        b.put_uvarint(0);
        let m = ProduceResponse::decode(&mut Reader::new(b.freeze()), 9).unwrap();
        assert_eq!(m.responses[0].partition_responses[0].error_code, 6);
    }

    #[test]
    fn absent_fields_hold_kafka_defaults() {
        let m = ProduceResponse::decode(&mut Reader::new(encode(&response(9), 3)), 3).unwrap();
        let p = &m.responses[0].partition_responses[0];
        assert_eq!(p.log_start_offset, -1);
        assert!(p.record_errors.is_empty());
        assert_eq!(p.error_message, None);
    }

    conformance_tests!(ProduceRequest, ProduceResponse, VERSIONS, request, response);
}
