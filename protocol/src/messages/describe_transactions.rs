//! DescribeTransactions (key 65), version 0; flexible.
//!
//! Admin tools (`kafka-transactions.sh describe`, KIP-664) ask a transaction
//! coordinator for the state of the transactional ids it owns: the producer
//! id and epoch, the timeout, when the open transaction began and the
//! partitions in it.

use bytes::{BufMut, BytesMut};

use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

/// Every version is flexible.
const FLEXIBLE: bool = true;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeTransactionsRequest {
    /// Empty asks about nothing (and gets no results).
    pub transactional_ids: Vec<String>,
}

impl DescribeTransactionsRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let transactional_ids = r.array(
            "transactional_ids",
            FLEXIBLE,
            min_string_bytes(FLEXIBLE),
            |r| r.string("transactional_id", FLEXIBLE),
        )?;
        r.skip_tagged_fields()?;
        Ok(DescribeTransactionsRequest { transactional_ids })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_array_len(Some(self.transactional_ids.len()), FLEXIBLE);
        for id in &self.transactional_ids {
            w.put_string(id, FLEXIBLE);
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeTransactionsResponse {
    pub throttle_time_ms: i32,
    pub transaction_states: Vec<TransactionState>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransactionState {
    pub error_code: i16,
    pub transactional_id: String,
    /// Kafka's name of the state: "Empty", "Ongoing", "PrepareCommit", ...
    pub transaction_state: String,
    pub transaction_timeout_ms: i32,
    /// When the open transaction began, in ms since the epoch; -1 if none.
    pub transaction_start_time_ms: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The partitions in the open transaction; while it is being committed
    /// or aborted, only those still without a marker.
    pub topics: Vec<TopicData>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicData {
    pub topic: String,
    pub partitions: Vec<i32>,
}

impl DescribeTransactionsResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let (s, a, t) = (
            min_string_bytes(FLEXIBLE),
            min_array_bytes(FLEXIBLE),
            min_tags_bytes(FLEXIBLE),
        );
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        // Error, id, state, timeout, start time, producer id and epoch,
        // topics and tags.
        let min_state = 2 + s + s + 4 + 8 + 8 + 2 + a + t;
        let transaction_states = r.array("transaction_states", FLEXIBLE, min_state, |r| {
            let state = TransactionState {
                error_code: r.i16("error_code")?,
                transactional_id: r.string("transactional_id", FLEXIBLE)?,
                transaction_state: r.string("transaction_state", FLEXIBLE)?,
                transaction_timeout_ms: r.i32("transaction_timeout_ms")?,
                transaction_start_time_ms: r.i64("transaction_start_time_ms")?,
                producer_id: r.i64("producer_id")?,
                producer_epoch: r.i16("producer_epoch")?,
                topics: r.array("topics", FLEXIBLE, s + a + t, |r| {
                    let topic = r.string("topic", FLEXIBLE)?;
                    let partitions = r.array("partitions", FLEXIBLE, 4, |r| r.i32("partition"))?;
                    r.skip_tagged_fields()?;
                    Ok(TopicData { topic, partitions })
                })?,
            };
            r.skip_tagged_fields()?;
            Ok(state)
        })?;
        r.skip_tagged_fields()?;
        Ok(DescribeTransactionsResponse {
            throttle_time_ms,
            transaction_states,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.transaction_states.len()), FLEXIBLE);
        for state in &self.transaction_states {
            w.put_i16(state.error_code);
            w.put_string(&state.transactional_id, FLEXIBLE);
            w.put_string(&state.transaction_state, FLEXIBLE);
            w.put_i32(state.transaction_timeout_ms);
            w.put_i64(state.transaction_start_time_ms);
            w.put_i64(state.producer_id);
            w.put_i16(state.producer_epoch);
            w.put_array_len(Some(state.topics.len()), FLEXIBLE);
            for topic in &state.topics {
                w.put_string(&topic.topic, FLEXIBLE);
                w.put_i32_array(Some(&topic.partitions), FLEXIBLE);
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

    fn request() -> DescribeTransactionsRequest {
        DescribeTransactionsRequest {
            transactional_ids: vec!["txn-1".into(), "txn-日本".into()],
        }
    }

    fn response() -> DescribeTransactionsResponse {
        DescribeTransactionsResponse {
            throttle_time_ms: 5,
            transaction_states: vec![
                TransactionState {
                    error_code: 0,
                    transactional_id: "txn-1".into(),
                    transaction_state: "Ongoing".into(),
                    transaction_timeout_ms: 60_000,
                    transaction_start_time_ms: 1_700_000_000_123,
                    producer_id: 1 << 40,
                    producer_epoch: 3,
                    topics: vec![
                        TopicData {
                            topic: "orders".into(),
                            partitions: vec![0, 5],
                        },
                        TopicData {
                            topic: "audit-🦀".into(),
                            partitions: Vec::new(),
                        },
                    ],
                },
                TransactionState {
                    error_code: 105,
                    transactional_id: "txn-日本".into(),
                    ..TransactionState::default()
                },
            ],
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        assert_round_trip(&request(), VERSION);
        assert_round_trip(&DescribeTransactionsRequest::default(), VERSION);
        assert_round_trip(&DescribeTransactionsResponse::default(), VERSION);
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<DescribeTransactionsRequest>(b.freeze(), VERSION);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<DescribeTransactionsResponse>(b.freeze(), VERSION);
    }

    conformance_tests!(
        DescribeTransactionsRequest,
        DescribeTransactionsResponse,
        VERSION..=VERSION,
        |_| request(),
        |_| response()
    );
}
