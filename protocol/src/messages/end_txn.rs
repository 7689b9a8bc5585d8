//! EndTxn (key 26), versions 0-5; flexible from version 3.
//!
//! A transactional producer asks its transaction coordinator to commit or
//! abort the open transaction; the coordinator then writes the markers to
//! every partition the transaction touched. From v5 (KIP-890 part 2) the
//! coordinator bumps the producer epoch at the end of every transaction and
//! answers with the producer id and epoch to use next. v1, v2 and v4 differ
//! from the version before only in throttling and in the errors they may
//! answer.

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 3;
/// First version whose response carries the producer id and epoch.
const EPOCH_BUMP_FROM: i16 = 5;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndTxnRequest {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// True to commit, false to abort.
    pub committed: bool,
}

impl EndTxnRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let req = EndTxnRequest {
            transactional_id: r.string("transactional_id", flexible)?,
            producer_id: r.i64("producer_id")?,
            producer_epoch: r.i16("producer_epoch")?,
            committed: r.bool("committed")?,
        };
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_string(&self.transactional_id, flexible);
        w.put_i64(self.producer_id);
        w.put_i16(self.producer_epoch);
        w.put_bool(self.committed);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndTxnResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    /// v5+: the producer id for the next transaction; -1 otherwise.
    pub producer_id: i64,
    /// v5+: the (bumped) epoch for the next transaction; -1 otherwise.
    pub producer_epoch: i16,
}

impl Default for EndTxnResponse {
    fn default() -> Self {
        EndTxnResponse {
            throttle_time_ms: 0,
            error_code: 0,
            producer_id: -1,
            producer_epoch: -1,
        }
    }
}

impl EndTxnResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let mut resp = EndTxnResponse {
            throttle_time_ms: r.i32("throttle_time_ms")?,
            error_code: r.i16("error_code")?,
            ..EndTxnResponse::default()
        };
        if version >= EPOCH_BUMP_FROM {
            resp.producer_id = r.i64("producer_id")?;
            resp.producer_epoch = r.i16("producer_epoch")?;
        }
        if version >= FLEXIBLE_FROM {
            r.skip_tagged_fields()?;
        }
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        if version >= EPOCH_BUMP_FROM {
            w.put_i64(self.producer_id);
            w.put_i16(self.producer_epoch);
        }
        if version >= FLEXIBLE_FROM {
            w.put_empty_tagged_fields();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=5;

    fn request() -> EndTxnRequest {
        EndTxnRequest {
            transactional_id: "txn-🦀-1".into(),
            producer_id: 1 << 40,
            producer_epoch: 6,
            committed: true,
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> EndTxnResponse {
        let v5 = version >= EPOCH_BUMP_FROM;
        EndTxnResponse {
            throttle_time_ms: 14,
            error_code: 90,
            producer_id: if v5 { 4242 } else { -1 },
            producer_epoch: if v5 { 7 } else { -1 },
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            let abort = EndTxnRequest {
                committed: false,
                ..request()
            };
            for req in [request(), abort, EndTxnRequest::default()] {
                assert_round_trip(&req, v);
            }
        }
    }

    #[test]
    fn edge_case_responses_round_trip() {
        for v in VERSIONS {
            for resp in [response(v), EndTxnResponse::default()] {
                assert_round_trip(&resp, v);
            }
        }
    }

    #[test]
    fn versions_before_v5_read_no_producer_id() {
        let back = EndTxnResponse::decode(&mut Reader::new(encode(&response(5), 4)), 4).unwrap();
        assert_eq!((back.producer_id, back.producer_epoch), (-1, -1));
    }

    #[test]
    fn huge_lengths_are_refused() {
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert!(EndTxnRequest::decode(&mut Reader::new(b.freeze()), 5).is_err());
        let mut b = BytesMut::new();
        b.put_i16(i16::MAX);
        assert!(EndTxnRequest::decode(&mut Reader::new(b.freeze()), 0).is_err());
    }

    conformance_tests!(
        EndTxnRequest,
        EndTxnResponse,
        VERSIONS,
        |_| request(),
        response
    );
}
