//! UnregisterBroker (key 64), version 0, flexible: removes a broker's
//! registration from the cluster (`kafka-cluster.sh unregister`).

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnregisterBrokerRequest {
    pub broker_id: i32,
}

impl UnregisterBrokerRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let broker_id = r.i32("broker_id")?;
        r.skip_tagged_fields()?;
        Ok(UnregisterBrokerRequest { broker_id })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.broker_id);
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnregisterBrokerResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
}

impl UnregisterBrokerResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        let error_message = r.nullable_string("error_message", true)?;
        r.skip_tagged_fields()?;
        Ok(UnregisterBrokerResponse {
            throttle_time_ms,
            error_code,
            error_message,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_nullable_string(self.error_message.as_deref(), true);
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    fn request() -> UnregisterBrokerRequest {
        UnregisterBrokerRequest { broker_id: 3 }
    }

    fn response() -> UnregisterBrokerResponse {
        UnregisterBrokerResponse {
            throttle_time_ms: 5,
            error_code: 102,
            error_message: Some("broker 3 is not registered".into()),
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        assert_round_trip(&request(), 0);
        assert_round_trip(&response(), 0);
        assert_round_trip(&UnregisterBrokerResponse::default(), 0);
    }

    conformance_tests!(
        UnregisterBrokerRequest,
        UnregisterBrokerResponse,
        0..=0,
        |_| request(),
        |_| response()
    );
}
