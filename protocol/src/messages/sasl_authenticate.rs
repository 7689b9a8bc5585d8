//! SaslAuthenticate (key 36), versions 0-2; flexible from version 2.
//!
//! Carries the SASL tokens of the mechanism chosen by SaslHandshake v1,
//! one exchange per request, as opaque bytes (sliced from the frame, never
//! copied). Version 1 (KIP-368) adds `session_lifetime_ms` to the response:
//! once it has passed, the client must re-authenticate on the connection
//! or have it closed.

use bytes::{BufMut, Bytes, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 2;
/// First version whose response carries `session_lifetime_ms`.
const SESSION_LIFETIME_FROM: i16 = 1;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaslAuthenticateRequest {
    /// The client's token, as the SASL mechanism defines it.
    pub auth_bytes: Bytes,
}

impl SaslAuthenticateRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let auth_bytes = r.bytes("auth_bytes", flexible)?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(SaslAuthenticateRequest { auth_bytes })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_nullable_bytes(Some(&self.auth_bytes), flexible);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaslAuthenticateResponse {
    pub error_code: i16,
    pub error_message: Option<String>,
    /// The server's token, as the SASL mechanism defines it.
    pub auth_bytes: Bytes,
    /// Version 1 on: how long the session may last before the client must
    /// re-authenticate; 0 (Kafka's default, and the only value before
    /// version 1) for no limit.
    pub session_lifetime_ms: i64,
}

impl SaslAuthenticateResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut resp = SaslAuthenticateResponse {
            error_code: r.i16("error_code")?,
            error_message: r.nullable_string("error_message", flexible)?,
            auth_bytes: r.bytes("auth_bytes", flexible)?,
            session_lifetime_ms: 0,
        };
        if version >= SESSION_LIFETIME_FROM {
            resp.session_lifetime_ms = r.i64("session_lifetime_ms")?;
        }
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i16(self.error_code);
        w.put_nullable_string(self.error_message.as_deref(), flexible);
        w.put_nullable_bytes(Some(&self.auth_bytes), flexible);
        if version >= SESSION_LIFETIME_FROM {
            w.put_i64(self.session_lifetime_ms);
        }
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=2;

    fn request() -> SaslAuthenticateRequest {
        SaslAuthenticateRequest {
            auth_bytes: Bytes::from_static(b"\0alice\0alice-secret"),
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> SaslAuthenticateResponse {
        SaslAuthenticateResponse {
            // SASL_AUTHENTICATION_FAILED.
            error_code: 58,
            error_message: Some("Authentication failed: Invalid username or password".into()),
            auth_bytes: Bytes::from(vec![0xa5; 200]),
            session_lifetime_ms: if version >= SESSION_LIFETIME_FROM {
                3_600_000
            } else {
                0
            },
        }
    }

    #[test]
    fn edge_cases_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&SaslAuthenticateRequest::default(), v);
            assert_round_trip(&SaslAuthenticateResponse::default(), v);
        }
    }

    /// The layout of each version, laid out by hand from Kafka's schema:
    /// INT32 then compact lengths, and the lifetime from version 1.
    #[test]
    fn each_version_has_kafkas_layout() {
        let req = SaslAuthenticateRequest {
            auth_bytes: Bytes::from_static(b"ab"),
        };
        assert_eq!(&encode(&req, 0)[..], b"\0\0\0\x02ab");
        assert_eq!(&encode(&req, 1)[..], b"\0\0\0\x02ab");
        assert_eq!(&encode(&req, 2)[..], b"\x03ab\0");
        let resp = SaslAuthenticateResponse {
            error_code: 0,
            error_message: None,
            auth_bytes: Bytes::new(),
            session_lifetime_ms: 0x0102,
        };
        assert_eq!(
            &encode(&resp, 1)[..],
            b"\0\0\xff\xff\0\0\0\0\0\0\0\0\0\0\x01\x02"
        );
        assert_eq!(&encode(&resp, 2)[..], b"\0\0\0\x01\0\0\0\0\0\0\x01\x02\0");
    }

    #[test]
    fn null_auth_bytes_are_refused() {
        let null = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff]);
        assert!(SaslAuthenticateRequest::decode(&mut Reader::new(null), 0).is_err());
    }

    #[test]
    fn auth_bytes_are_slices_of_the_frame() {
        let frame = encode(&request(), 2);
        let base = frame.as_ptr();
        let req = SaslAuthenticateRequest::decode(&mut Reader::new(frame), 2).unwrap();
        assert_eq!(req.auth_bytes.as_ptr(), base.wrapping_add(1), "no copy");
    }

    #[test]
    fn huge_lengths_are_refused() {
        let mut b = BytesMut::new();
        b.put_i32(i32::MAX);
        b.put_slice(b"abc");
        let err = SaslAuthenticateRequest::decode(&mut Reader::new(b.freeze()), 1).unwrap_err();
        assert!(matches!(err, DecodeError::Truncated { .. }), "{err:?}");
    }

    conformance_tests!(
        SaslAuthenticateRequest,
        SaslAuthenticateResponse,
        VERSIONS,
        |_| request(),
        response
    );
}
