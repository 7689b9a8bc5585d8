//! AddPartitionsToTxn (key 24), versions 0-5; flexible from version 3.
//!
//! A transactional producer names each partition before its first write to
//! it in a transaction, so that the transaction coordinator knows where to
//! send the commit or abort markers. Versions 0-3 carry one transaction and
//! are the clients'; from v4 a request batches transactions and is sent by
//! brokers, which with `verify_only` ask whether a partition is already in
//! its transaction instead of adding it (KIP-890). v1 and v2 differ from v0
//! only in throttling and errors, and v5 from v4 only in that the answer may
//! be TRANSACTION_ABORTABLE.

use bytes::{BufMut, BytesMut};

use super::min_topic_bytes;
use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 3;
/// First version that batches transactions (`transactions` in the request,
/// `error_code` and `results_by_transaction` in the response).
const BATCHED_FROM: i16 = 4;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddPartitionsToTxnRequest {
    /// v4+: the transactions to add partitions to, or to verify.
    pub transactions: Vec<AddPartitionsToTxnTransaction>,
    /// v0-3: the one transaction's id.
    pub v3_and_below_transactional_id: String,
    /// v0-3: the producer id the transactional id holds.
    pub v3_and_below_producer_id: i64,
    /// v0-3: that producer id's epoch.
    pub v3_and_below_producer_epoch: i16,
    /// v0-3: the partitions to add.
    pub v3_and_below_topics: Vec<AddPartitionsToTxnTopic>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddPartitionsToTxnTransaction {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// Only check that the partitions are in the transaction; add nothing.
    pub verify_only: bool,
    pub topics: Vec<AddPartitionsToTxnTopic>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddPartitionsToTxnTopic {
    pub name: String,
    pub partitions: Vec<i32>,
}

fn decode_topics(r: &mut Reader, flexible: bool) -> DecodeResult<Vec<AddPartitionsToTxnTopic>> {
    r.array("topics", flexible, min_topic_bytes(flexible), |r| {
        let name = r.string("name", flexible)?;
        let partitions = r.array("partitions", flexible, 4, |r| r.i32("partition"))?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(AddPartitionsToTxnTopic { name, partitions })
    })
}

fn encode_topics(w: &mut BytesMut, topics: &[AddPartitionsToTxnTopic], flexible: bool) {
    w.put_array_len(Some(topics.len()), flexible);
    for t in topics {
        w.put_string(&t.name, flexible);
        w.put_i32_array(Some(&t.partitions), flexible);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

impl AddPartitionsToTxnRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut req = AddPartitionsToTxnRequest::default();
        if version >= BATCHED_FROM {
            // Id, producer id and epoch, verify_only, topics and tags.
            let min_transaction = min_string_bytes(flexible)
                + 8
                + 2
                + 1
                + min_array_bytes(flexible)
                + min_tags_bytes(flexible);
            req.transactions = r.array("transactions", flexible, min_transaction, |r| {
                let t = AddPartitionsToTxnTransaction {
                    transactional_id: r.string("transactional_id", flexible)?,
                    producer_id: r.i64("producer_id")?,
                    producer_epoch: r.i16("producer_epoch")?,
                    verify_only: r.bool("verify_only")?,
                    topics: decode_topics(r, flexible)?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(t)
            })?;
        } else {
            req.v3_and_below_transactional_id = r.string("transactional_id", flexible)?;
            req.v3_and_below_producer_id = r.i64("producer_id")?;
            req.v3_and_below_producer_epoch = r.i16("producer_epoch")?;
            req.v3_and_below_topics = decode_topics(r, flexible)?;
        }
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version >= BATCHED_FROM {
            w.put_array_len(Some(self.transactions.len()), flexible);
            for t in &self.transactions {
                w.put_string(&t.transactional_id, flexible);
                w.put_i64(t.producer_id);
                w.put_i16(t.producer_epoch);
                w.put_bool(t.verify_only);
                encode_topics(w, &t.topics, flexible);
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
        } else {
            w.put_string(&self.v3_and_below_transactional_id, flexible);
            w.put_i64(self.v3_and_below_producer_id);
            w.put_i16(self.v3_and_below_producer_epoch);
            encode_topics(w, &self.v3_and_below_topics, flexible);
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddPartitionsToTxnResponse {
    pub throttle_time_ms: i32,
    /// v4+: an error for the whole request.
    pub error_code: i16,
    /// v4+: the results of each transaction of the request.
    pub results_by_transaction: Vec<AddPartitionsToTxnResult>,
    /// v0-3: the results of the request's one transaction.
    pub results_by_topic_v3_and_below: Vec<AddPartitionsToTxnTopicResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddPartitionsToTxnResult {
    pub transactional_id: String,
    pub topic_results: Vec<AddPartitionsToTxnTopicResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddPartitionsToTxnTopicResult {
    pub name: String,
    pub results_by_partition: Vec<AddPartitionsToTxnPartitionResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddPartitionsToTxnPartitionResult {
    pub partition_index: i32,
    pub partition_error_code: i16,
}

fn decode_topic_results(
    r: &mut Reader,
    flexible: bool,
) -> DecodeResult<Vec<AddPartitionsToTxnTopicResult>> {
    // Partition, error and tags.
    let min_partition = 4 + 2 + min_tags_bytes(flexible);
    r.array("topic results", flexible, min_topic_bytes(flexible), |r| {
        let name = r.string("name", flexible)?;
        let results_by_partition =
            r.array("results_by_partition", flexible, min_partition, |r| {
                let p = AddPartitionsToTxnPartitionResult {
                    partition_index: r.i32("partition_index")?,
                    partition_error_code: r.i16("partition_error_code")?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(p)
            })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(AddPartitionsToTxnTopicResult {
            name,
            results_by_partition,
        })
    })
}

fn encode_topic_results(
    w: &mut BytesMut,
    topics: &[AddPartitionsToTxnTopicResult],
    flexible: bool,
) {
    w.put_array_len(Some(topics.len()), flexible);
    for t in topics {
        w.put_string(&t.name, flexible);
        w.put_array_len(Some(t.results_by_partition.len()), flexible);
        for p in &t.results_by_partition {
            w.put_i32(p.partition_index);
            w.put_i16(p.partition_error_code);
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

impl AddPartitionsToTxnResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut resp = AddPartitionsToTxnResponse {
            throttle_time_ms: r.i32("throttle_time_ms")?,
            ..AddPartitionsToTxnResponse::default()
        };
        if version >= BATCHED_FROM {
            resp.error_code = r.i16("error_code")?;
            // Id, topic results and tags.
            let min_result =
                min_string_bytes(flexible) + min_array_bytes(flexible) + min_tags_bytes(flexible);
            resp.results_by_transaction =
                r.array("results_by_transaction", flexible, min_result, |r| {
                    let result = AddPartitionsToTxnResult {
                        transactional_id: r.string("transactional_id", flexible)?,
                        topic_results: decode_topic_results(r, flexible)?,
                    };
                    if flexible {
                        r.skip_tagged_fields()?;
                    }
                    Ok(result)
                })?;
        } else {
            resp.results_by_topic_v3_and_below = decode_topic_results(r, flexible)?;
        }
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        if version >= BATCHED_FROM {
            w.put_i16(self.error_code);
            w.put_array_len(Some(self.results_by_transaction.len()), flexible);
            for result in &self.results_by_transaction {
                w.put_string(&result.transactional_id, flexible);
                encode_topic_results(w, &result.topic_results, flexible);
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
        } else {
            encode_topic_results(w, &self.results_by_topic_v3_and_below, flexible);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=5;

    fn topics() -> Vec<AddPartitionsToTxnTopic> {
        vec![
            AddPartitionsToTxnTopic {
                name: "orders".into(),
                partitions: vec![0, 7, 12],
            },
            AddPartitionsToTxnTopic {
                name: "événements-日".into(),
                partitions: Vec::new(),
            },
        ]
    }

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> AddPartitionsToTxnRequest {
        if version >= BATCHED_FROM {
            AddPartitionsToTxnRequest {
                transactions: vec![
                    AddPartitionsToTxnTransaction {
                        transactional_id: "txn-🦀".into(),
                        producer_id: 1 << 40,
                        producer_epoch: 3,
                        verify_only: true,
                        topics: topics(),
                    },
                    AddPartitionsToTxnTransaction {
                        transactional_id: "txn-2".into(),
                        producer_id: 9,
                        producer_epoch: 1,
                        verify_only: false,
                        topics: Vec::new(),
                    },
                ],
                ..AddPartitionsToTxnRequest::default()
            }
        } else {
            AddPartitionsToTxnRequest {
                transactions: Vec::new(),
                v3_and_below_transactional_id: "txn-🦀".into(),
                v3_and_below_producer_id: 1 << 40,
                v3_and_below_producer_epoch: 3,
                v3_and_below_topics: topics(),
            }
        }
    }

    fn topic_results() -> Vec<AddPartitionsToTxnTopicResult> {
        vec![AddPartitionsToTxnTopicResult {
            name: "orders".into(),
            results_by_partition: vec![
                AddPartitionsToTxnPartitionResult {
                    partition_index: 7,
                    partition_error_code: 48,
                },
                AddPartitionsToTxnPartitionResult::default(),
            ],
        }]
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> AddPartitionsToTxnResponse {
        if version >= BATCHED_FROM {
            AddPartitionsToTxnResponse {
                throttle_time_ms: 12,
                error_code: 51,
                results_by_transaction: vec![AddPartitionsToTxnResult {
                    transactional_id: "txn-🦀".into(),
                    topic_results: topic_results(),
                }],
                results_by_topic_v3_and_below: Vec::new(),
            }
        } else {
            AddPartitionsToTxnResponse {
                throttle_time_ms: 12,
                results_by_topic_v3_and_below: topic_results(),
                ..AddPartitionsToTxnResponse::default()
            }
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            for req in [request(v), AddPartitionsToTxnRequest::default()] {
                assert_round_trip(&req, v);
            }
        }
    }

    #[test]
    fn edge_case_responses_round_trip() {
        for v in VERSIONS {
            for resp in [response(v), AddPartitionsToTxnResponse::default()] {
                assert_round_trip(&resp, v);
            }
        }
    }

    #[test]
    fn batched_fields_are_not_on_the_wire_before_v4() {
        // A v3 encoding of a v4 request carries none of its transactions.
        let back =
            AddPartitionsToTxnRequest::decode(&mut Reader::new(encode(&request(4), 3)), 3).unwrap();
        assert_eq!(back, AddPartitionsToTxnRequest::default());
    }

    #[test]
    fn huge_counts_are_refused() {
        // v4: the transactions count.
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<AddPartitionsToTxnRequest>(b.freeze(), 4);
        // v2: one topic whose partition count claims more than the frame.
        let mut b = BytesMut::new();
        b.put_string("txn", false);
        b.put_i64(1);
        b.put_i16(0);
        b.put_i32(1);
        b.put_string("t", false);
        b.put_i32(i32::MAX);
        assert_count_too_large::<AddPartitionsToTxnRequest>(b.freeze(), 2);
        // v5 response: the results count.
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i16(0);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<AddPartitionsToTxnResponse>(b.freeze(), 5);
        // v0 response: the topics count.
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i32(i32::MAX);
        assert_count_too_large::<AddPartitionsToTxnResponse>(b.freeze(), 0);
    }

    conformance_tests!(
        AddPartitionsToTxnRequest,
        AddPartitionsToTxnResponse,
        VERSIONS,
        request,
        response
    );
}
