//! Envelope (key 58), version 0; flexible.
//!
//! How a broker forwards a client's request to the controller (KIP-590):
//! the whole inner request, header included, travels as opaque bytes with
//! the principal it was authenticated as and the client's address, and the
//! controller answers with the inner response, header included, or with an
//! error of its own. The principal is encoded by the forwarding broker's
//! principal serde; Kafka's default is [`DefaultPrincipalData`].
//!
//! The byte fields are slices of the frame, never copied; the inner request
//! is decoded from its slice like any other frame.
//!
//! [`DefaultPrincipalData`]: super::default_principal_data::DefaultPrincipalData

use bytes::{BufMut, Bytes, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

/// Every version is flexible.
const FLEXIBLE: bool = true;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvelopeRequest {
    /// The forwarded request: its header and body.
    pub request_data: Bytes,
    /// The serialized principal the client authenticated as; null when
    /// the forwarding broker has none to send.
    pub request_principal: Option<Bytes>,
    /// The client's IP address: 4 bytes for IPv4, 16 for IPv6.
    pub client_host_address: Bytes,
}

impl EnvelopeRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let req = EnvelopeRequest {
            request_data: r.bytes("request_data", FLEXIBLE)?,
            request_principal: r.nullable_bytes("request_principal", FLEXIBLE)?,
            client_host_address: r.bytes("client_host_address", FLEXIBLE)?,
        };
        r.skip_tagged_fields()?;
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_nullable_bytes(Some(&self.request_data), FLEXIBLE);
        w.put_nullable_bytes(self.request_principal.as_deref(), FLEXIBLE);
        w.put_nullable_bytes(Some(&self.client_host_address), FLEXIBLE);
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvelopeResponse {
    /// The inner response, header included; null (Kafka's default) when
    /// `error_code` says the envelope itself failed.
    pub response_data: Option<Bytes>,
    pub error_code: i16,
}

impl EnvelopeResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let resp = EnvelopeResponse {
            response_data: r.nullable_bytes("response_data", FLEXIBLE)?,
            error_code: r.i16("error_code")?,
        };
        r.skip_tagged_fields()?;
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_nullable_bytes(self.response_data.as_deref(), FLEXIBLE);
        w.put_i16(self.error_code);
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSION: i16 = 0;

    /// A forwarded CreateTopics v7 request header (key 19) and a stand-in
    /// body.
    fn request() -> EnvelopeRequest {
        let mut inner = vec![0, 19, 0, 7, 0, 0, 0, 42, 0, 5];
        inner.extend_from_slice(b"admin");
        inner.extend_from_slice(&[0; 150]);
        EnvelopeRequest {
            request_data: Bytes::from(inner),
            // DefaultPrincipalData of `User:alice`, version first.
            request_principal: Some(Bytes::from_static(b"\0\0\x05User\x06alice\0\0")),
            client_host_address: Bytes::from_static(&[10, 0, 0, 7]),
        }
    }

    fn response() -> EnvelopeResponse {
        EnvelopeResponse {
            response_data: Some(Bytes::from_static(&[0, 0, 0, 42, 0, 0, 0, 0, 0, 1, 0])),
            // NOT_CONTROLLER: Kafka sends it with the inner response null,
            // but the codec carries both.
            error_code: 41,
        }
    }

    #[test]
    fn edge_cases_round_trip() {
        let anonymous = EnvelopeRequest {
            request_principal: None,
            client_host_address: Bytes::from_static(&[
                0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
            ]),
            ..request()
        };
        assert_round_trip(&anonymous, VERSION);
        assert_round_trip(&EnvelopeRequest::default(), VERSION);
        assert_round_trip(&EnvelopeResponse::default(), VERSION);
        assert_eq!(
            &encode(&EnvelopeResponse::default(), VERSION)[..],
            [0, 0, 0, 0]
        );
    }

    #[test]
    fn request_data_is_a_slice_of_the_frame() {
        let frame = encode(&request(), VERSION);
        let base = frame.as_ptr();
        let req = EnvelopeRequest::decode(&mut Reader::new(frame), VERSION).unwrap();
        // The inner request follows its two-byte compact length.
        assert_eq!(req.request_data.as_ptr(), base.wrapping_add(2), "no copy");
    }

    #[test]
    fn null_request_data_is_refused() {
        let frame = Bytes::from_static(&[0, 0, 1, 0]);
        assert!(EnvelopeRequest::decode(&mut Reader::new(frame), VERSION).is_err());
    }

    #[test]
    fn huge_lengths_are_refused() {
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        b.put_slice(&[0; 8]);
        assert!(EnvelopeRequest::decode(&mut Reader::new(b.freeze()), VERSION).is_err());
        let mut b = BytesMut::new();
        b.put_uvarint(1 << 30);
        assert!(EnvelopeResponse::decode(&mut Reader::new(b.freeze()), VERSION).is_err());
    }

    conformance_tests!(
        EnvelopeRequest,
        EnvelopeResponse,
        VERSION..=VERSION,
        |_| request(),
        |_| response()
    );
}
