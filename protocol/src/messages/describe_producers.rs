//! DescribeProducers (key 61), version 0; flexible.
//!
//! Admin tools (`kafka-transactions.sh describe-producers`, KIP-664) ask a
//! partition's leader for the producers it keeps state for: each one's
//! epoch, last sequence and timestamp, and the first offset of its open
//! transaction, which is how a hanging transaction is found.

use bytes::{BufMut, BytesMut};

use super::min_topic_bytes;
use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

/// Every version is flexible.
const FLEXIBLE: bool = true;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeProducersRequest {
    pub topics: Vec<TopicRequest>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicRequest {
    pub name: String,
    pub partition_indexes: Vec<i32>,
}

impl DescribeProducersRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let topics = r.array("topics", FLEXIBLE, min_topic_bytes(FLEXIBLE), |r| {
            let name = r.string("name", FLEXIBLE)?;
            let partition_indexes = r.array("partition_indexes", FLEXIBLE, 4, |r| {
                r.i32("partition_index")
            })?;
            r.skip_tagged_fields()?;
            Ok(TopicRequest {
                name,
                partition_indexes,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(DescribeProducersRequest { topics })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_array_len(Some(self.topics.len()), FLEXIBLE);
        for t in &self.topics {
            w.put_string(&t.name, FLEXIBLE);
            w.put_i32_array(Some(&t.partition_indexes), FLEXIBLE);
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeProducersResponse {
    pub throttle_time_ms: i32,
    pub topics: Vec<TopicResponse>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicResponse {
    pub name: String,
    pub partitions: Vec<PartitionResponse>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionResponse {
    pub partition_index: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub active_producers: Vec<ProducerState>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerState {
    pub producer_id: i64,
    /// An INT32 here, although epochs are INT16 everywhere else.
    pub producer_epoch: i32,
    /// -1 (Kafka's default) if the producer has sent nothing yet.
    pub last_sequence: i32,
    /// -1 (Kafka's default) if unknown.
    pub last_timestamp: i64,
    pub coordinator_epoch: i32,
    /// The first offset of the producer's open transaction, or -1 (Kafka's
    /// default) if it has none.
    pub current_txn_start_offset: i64,
}

impl Default for ProducerState {
    fn default() -> Self {
        ProducerState {
            producer_id: 0,
            producer_epoch: 0,
            last_sequence: -1,
            last_timestamp: -1,
            coordinator_epoch: 0,
            current_txn_start_offset: -1,
        }
    }
}

impl DescribeProducersResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let (s, a, t) = (
            min_string_bytes(FLEXIBLE),
            min_array_bytes(FLEXIBLE),
            min_tags_bytes(FLEXIBLE),
        );
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        // Partition, error, message, producers and tags.
        let min_partition = 4 + 2 + s + a + t;
        // Producer id, epoch, sequence, timestamp, coordinator epoch, start
        // offset and tags.
        let min_producer = 8 + 4 + 4 + 8 + 4 + 8 + t;
        let topics = r.array("topics", FLEXIBLE, min_topic_bytes(FLEXIBLE), |r| {
            let name = r.string("name", FLEXIBLE)?;
            let partitions = r.array("partitions", FLEXIBLE, min_partition, |r| {
                let partition_index = r.i32("partition_index")?;
                let error_code = r.i16("error_code")?;
                let error_message = r.nullable_string("error_message", FLEXIBLE)?;
                let active_producers =
                    r.array("active_producers", FLEXIBLE, min_producer, |r| {
                        let p = ProducerState {
                            producer_id: r.i64("producer_id")?,
                            producer_epoch: r.i32("producer_epoch")?,
                            last_sequence: r.i32("last_sequence")?,
                            last_timestamp: r.i64("last_timestamp")?,
                            coordinator_epoch: r.i32("coordinator_epoch")?,
                            current_txn_start_offset: r.i64("current_txn_start_offset")?,
                        };
                        r.skip_tagged_fields()?;
                        Ok(p)
                    })?;
                r.skip_tagged_fields()?;
                Ok(PartitionResponse {
                    partition_index,
                    error_code,
                    error_message,
                    active_producers,
                })
            })?;
            r.skip_tagged_fields()?;
            Ok(TopicResponse { name, partitions })
        })?;
        r.skip_tagged_fields()?;
        Ok(DescribeProducersResponse {
            throttle_time_ms,
            topics,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.topics.len()), FLEXIBLE);
        for t in &self.topics {
            w.put_string(&t.name, FLEXIBLE);
            w.put_array_len(Some(t.partitions.len()), FLEXIBLE);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i16(p.error_code);
                w.put_nullable_string(p.error_message.as_deref(), FLEXIBLE);
                w.put_array_len(Some(p.active_producers.len()), FLEXIBLE);
                for producer in &p.active_producers {
                    w.put_i64(producer.producer_id);
                    w.put_i32(producer.producer_epoch);
                    w.put_i32(producer.last_sequence);
                    w.put_i64(producer.last_timestamp);
                    w.put_i32(producer.coordinator_epoch);
                    w.put_i64(producer.current_txn_start_offset);
                    w.put_empty_tagged_fields();
                }
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSION: i16 = 0;

    fn request() -> DescribeProducersRequest {
        DescribeProducersRequest {
            topics: vec![
                TopicRequest {
                    name: "orders".into(),
                    partition_indexes: vec![0, 2],
                },
                TopicRequest {
                    name: "événements".into(),
                    partition_indexes: Vec::new(),
                },
            ],
        }
    }

    fn response() -> DescribeProducersResponse {
        DescribeProducersResponse {
            throttle_time_ms: 4,
            topics: vec![TopicResponse {
                name: "orders".into(),
                partitions: vec![
                    PartitionResponse {
                        partition_index: 2,
                        error_code: 6,
                        error_message: Some("not the leader 🦀".into()),
                        active_producers: vec![
                            ProducerState {
                                producer_id: 1 << 40,
                                producer_epoch: 70_000,
                                last_sequence: 41,
                                last_timestamp: 1_700_000_000_456,
                                coordinator_epoch: 9,
                                current_txn_start_offset: 1 << 33,
                            },
                            ProducerState::default(),
                        ],
                    },
                    PartitionResponse::default(),
                ],
            }],
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        assert_round_trip(&request(), VERSION);
        assert_round_trip(&DescribeProducersRequest::default(), VERSION);
        assert_round_trip(&DescribeProducersResponse::default(), VERSION);
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<DescribeProducersRequest>(b.freeze(), VERSION);
        // One partition whose producer count claims more than the frame.
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_uvarint(2);
        b.put_string("t", true);
        b.put_uvarint(2);
        b.put_i32(0);
        b.put_i16(0);
        b.put_nullable_string(None, true);
        b.put_uvarint(u32::MAX as u64);
        b.put_slice(&[0; 8]);
        assert_count_too_large::<DescribeProducersResponse>(b.freeze(), VERSION);
    }

    conformance_tests!(
        DescribeProducersRequest,
        DescribeProducersResponse,
        VERSION..=VERSION,
        |_| request(),
        |_| response()
    );
}
