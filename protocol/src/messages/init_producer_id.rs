//! InitProducerId (key 22), versions 0-5; flexible from version 2.
//!
//! Idempotent producers send it without a transactional id to obtain a
//! producer id and epoch. From v3 a producer may also send the id and epoch
//! it already holds (both -1 otherwise) so that the broker can bump the
//! epoch instead of handing out a new id. v4 and v5 are v3 on the wire: v4
//! may answer PRODUCER_FENCED and v5 TRANSACTION_ABORTABLE (KIP-890).

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitProducerIdRequest {
    /// `None` for a producer that is idempotent but not transactional.
    pub transactional_id: Option<String>,
    pub transaction_timeout_ms: i32,
    /// v3+; -1 when the producer holds no id.
    pub producer_id: i64,
    /// v3+; -1 when the producer holds no id.
    pub producer_epoch: i16,
}

impl Default for InitProducerIdRequest {
    fn default() -> Self {
        InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: 0,
            producer_id: -1,
            producer_epoch: -1,
        }
    }
}

impl InitProducerIdRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut req = InitProducerIdRequest {
            transactional_id: r.nullable_string("transactional_id", flexible)?,
            transaction_timeout_ms: r.i32("transaction_timeout_ms")?,
            ..InitProducerIdRequest::default()
        };
        if version >= 3 {
            req.producer_id = r.i64("producer_id")?;
            req.producer_epoch = r.i16("producer_epoch")?;
        }
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_nullable_string(self.transactional_id.as_deref(), flexible);
        w.put_i32(self.transaction_timeout_ms);
        if version >= 3 {
            w.put_i64(self.producer_id);
            w.put_i16(self.producer_epoch);
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitProducerIdResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    /// -1 on error.
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl Default for InitProducerIdResponse {
    fn default() -> Self {
        InitProducerIdResponse {
            throttle_time_ms: 0,
            error_code: 0,
            producer_id: -1,
            producer_epoch: 0,
        }
    }
}

impl InitProducerIdResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let resp = InitProducerIdResponse {
            throttle_time_ms: r.i32("throttle_time_ms")?,
            error_code: r.i16("error_code")?,
            producer_id: r.i64("producer_id")?,
            producer_epoch: r.i16("producer_epoch")?,
        };
        if version >= FLEXIBLE_FROM {
            r.skip_tagged_fields()?;
        }
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_i64(self.producer_id);
        w.put_i16(self.producer_epoch);
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

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> InitProducerIdRequest {
        let v3 = version >= 3;
        InitProducerIdRequest {
            transactional_id: Some("txn-1".into()),
            transaction_timeout_ms: 60_000,
            producer_id: if v3 { 4242 } else { -1 },
            producer_epoch: if v3 { 7 } else { -1 },
        }
    }

    fn response() -> InitProducerIdResponse {
        InitProducerIdResponse {
            throttle_time_ms: 9,
            error_code: 90,
            producer_id: 1 << 40,
            producer_epoch: 3,
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            for req in [request(v), InitProducerIdRequest::default()] {
                assert_round_trip(&req, v);
            }
        }
    }

    conformance_tests!(
        InitProducerIdRequest,
        InitProducerIdResponse,
        VERSIONS,
        request,
        |_| response()
    );
}
