//! AddOffsetsToTxn (key 25), versions 0-4; flexible from version 3.
//!
//! A transactional producer that will commit consumer offsets in its
//! transaction (`sendOffsetsToTransaction`) first tells the transaction
//! coordinator which group's offsets it will commit, so that the commit or
//! abort marker also reaches that group's `__consumer_offsets` partition.
//! v1, v2 and v4 differ from the version before only in throttling and in
//! the errors they may answer (PRODUCER_FENCED from v2, TRANSACTION_ABORTABLE
//! from v4).

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 3;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddOffsetsToTxnRequest {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The group whose offsets the transaction will commit.
    pub group_id: String,
}

impl AddOffsetsToTxnRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let req = AddOffsetsToTxnRequest {
            transactional_id: r.string("transactional_id", flexible)?,
            producer_id: r.i64("producer_id")?,
            producer_epoch: r.i16("producer_epoch")?,
            group_id: r.string("group_id", flexible)?,
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
        w.put_string(&self.group_id, flexible);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddOffsetsToTxnResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
}

impl AddOffsetsToTxnResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let resp = AddOffsetsToTxnResponse {
            throttle_time_ms: r.i32("throttle_time_ms")?,
            error_code: r.i16("error_code")?,
        };
        if version >= FLEXIBLE_FROM {
            r.skip_tagged_fields()?;
        }
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        if version >= FLEXIBLE_FROM {
            w.put_empty_tagged_fields();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=4;

    fn request() -> AddOffsetsToTxnRequest {
        AddOffsetsToTxnRequest {
            transactional_id: "txn-é-1".into(),
            producer_id: 1 << 40,
            producer_epoch: 4,
            group_id: "billing-consumers".into(),
        }
    }

    fn response() -> AddOffsetsToTxnResponse {
        AddOffsetsToTxnResponse {
            throttle_time_ms: 8,
            error_code: 47,
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            for req in [request(), AddOffsetsToTxnRequest::default()] {
                assert_round_trip(&req, v);
            }
        }
    }

    #[test]
    fn huge_lengths_are_refused() {
        // A compact string length far past the frame's end.
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert!(AddOffsetsToTxnRequest::decode(&mut Reader::new(b.freeze()), 3).is_err());
        let mut b = BytesMut::new();
        b.put_i16(i16::MAX);
        assert!(AddOffsetsToTxnRequest::decode(&mut Reader::new(b.freeze()), 0).is_err());
    }

    conformance_tests!(
        AddOffsetsToTxnRequest,
        AddOffsetsToTxnResponse,
        VERSIONS,
        |_| request(),
        |_| response()
    );
}
