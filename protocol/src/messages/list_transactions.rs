//! ListTransactions (key 66), versions 0-2; flexible.
//!
//! Admin tools (`kafka-transactions.sh list`, KIP-664) ask each transaction
//! coordinator for the transactional ids it owns, optionally filtered by
//! state and producer id; v1 adds a minimum running time (KIP-994) and v2 a
//! regular expression the transactional id must match (KIP-1152).

use bytes::{BufMut, BytesMut};

use crate::codec::{min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer};

/// Every version is flexible.
const FLEXIBLE: bool = true;
/// First version with `duration_filter`.
const DURATION_FILTER_FROM: i16 = 1;
/// First version with `transactional_id_pattern`.
const PATTERN_FROM: i16 = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListTransactionsRequest {
    /// States to list; empty lists every state.
    pub state_filters: Vec<String>,
    /// Producer ids to list; empty lists every producer.
    pub producer_id_filters: Vec<i64>,
    /// v1+: only transactions running longer than this many ms; -1 (Kafka's
    /// default) for all.
    pub duration_filter: i64,
    /// v2+: a regular expression the transactional id must match; `None`
    /// or empty for all.
    pub transactional_id_pattern: Option<String>,
}

impl Default for ListTransactionsRequest {
    fn default() -> Self {
        ListTransactionsRequest {
            state_filters: Vec::new(),
            producer_id_filters: Vec::new(),
            duration_filter: -1,
            transactional_id_pattern: None,
        }
    }
}

impl ListTransactionsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let mut req = ListTransactionsRequest {
            state_filters: r.array("state_filters", FLEXIBLE, min_string_bytes(FLEXIBLE), |r| {
                r.string("state_filter", FLEXIBLE)
            })?,
            producer_id_filters: r.array("producer_id_filters", FLEXIBLE, 8, |r| {
                r.i64("producer_id_filter")
            })?,
            ..ListTransactionsRequest::default()
        };
        if version >= DURATION_FILTER_FROM {
            req.duration_filter = r.i64("duration_filter")?;
        }
        if version >= PATTERN_FROM {
            req.transactional_id_pattern =
                r.nullable_string("transactional_id_pattern", FLEXIBLE)?;
        }
        r.skip_tagged_fields()?;
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_array_len(Some(self.state_filters.len()), FLEXIBLE);
        for state in &self.state_filters {
            w.put_string(state, FLEXIBLE);
        }
        w.put_array_len(Some(self.producer_id_filters.len()), FLEXIBLE);
        for id in &self.producer_id_filters {
            w.put_i64(*id);
        }
        if version >= DURATION_FILTER_FROM {
            w.put_i64(self.duration_filter);
        }
        if version >= PATTERN_FROM {
            w.put_nullable_string(self.transactional_id_pattern.as_deref(), FLEXIBLE);
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListTransactionsResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    /// The request's state filters that the coordinator does not know.
    pub unknown_state_filters: Vec<String>,
    pub transaction_states: Vec<TransactionState>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransactionState {
    pub transactional_id: String,
    pub producer_id: i64,
    /// Kafka's name of the state: "Empty", "Ongoing", "PrepareCommit", ...
    pub transaction_state: String,
}

impl ListTransactionsResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let (s, t) = (min_string_bytes(FLEXIBLE), min_tags_bytes(FLEXIBLE));
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        let unknown_state_filters = r.array("unknown_state_filters", FLEXIBLE, s, |r| {
            r.string("unknown_state_filter", FLEXIBLE)
        })?;
        // Id, producer id, state and tags.
        let transaction_states = r.array("transaction_states", FLEXIBLE, s + 8 + s + t, |r| {
            let state = TransactionState {
                transactional_id: r.string("transactional_id", FLEXIBLE)?,
                producer_id: r.i64("producer_id")?,
                transaction_state: r.string("transaction_state", FLEXIBLE)?,
            };
            r.skip_tagged_fields()?;
            Ok(state)
        })?;
        r.skip_tagged_fields()?;
        Ok(ListTransactionsResponse {
            throttle_time_ms,
            error_code,
            unknown_state_filters,
            transaction_states,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_array_len(Some(self.unknown_state_filters.len()), FLEXIBLE);
        for state in &self.unknown_state_filters {
            w.put_string(state, FLEXIBLE);
        }
        w.put_array_len(Some(self.transaction_states.len()), FLEXIBLE);
        for state in &self.transaction_states {
            w.put_string(&state.transactional_id, FLEXIBLE);
            w.put_i64(state.producer_id);
            w.put_string(&state.transaction_state, FLEXIBLE);
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=2;

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> ListTransactionsRequest {
        ListTransactionsRequest {
            state_filters: vec!["Ongoing".into(), "PrepareCommit".into()],
            producer_id_filters: vec![1 << 40, 7],
            duration_filter: if version >= DURATION_FILTER_FROM {
                30_000
            } else {
                -1
            },
            transactional_id_pattern: (version >= PATTERN_FROM).then(|| "^txn-.*é$".into()),
        }
    }

    fn response() -> ListTransactionsResponse {
        ListTransactionsResponse {
            throttle_time_ms: 2,
            error_code: 15,
            unknown_state_filters: vec!["Bogus".into()],
            transaction_states: vec![
                TransactionState {
                    transactional_id: "txn-🦀".into(),
                    producer_id: 1 << 40,
                    transaction_state: "Ongoing".into(),
                },
                TransactionState::default(),
            ],
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            let empty_pattern = ListTransactionsRequest {
                transactional_id_pattern: (v >= PATTERN_FROM).then(String::new),
                ..ListTransactionsRequest::default()
            };
            for req in [
                request(v),
                ListTransactionsRequest::default(),
                empty_pattern,
            ] {
                assert_round_trip(&req, v);
            }
            assert_round_trip(&ListTransactionsResponse::default(), v);
        }
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<ListTransactionsRequest>(b.freeze(), 2);
        // Producer ids take 8 bytes each: 3 of them do not fit in 16.
        let mut b = BytesMut::new();
        b.put_uvarint(1);
        b.put_uvarint(4);
        b.put_slice(&[0; 16]);
        assert_count_too_large::<ListTransactionsRequest>(b.freeze(), 0);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i16(0);
        b.put_uvarint(1);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<ListTransactionsResponse>(b.freeze(), 1);
    }

    conformance_tests!(
        ListTransactionsRequest,
        ListTransactionsResponse,
        VERSIONS,
        request,
        |_| response()
    );
}
