//! SaslHandshake (key 17), versions 0-1; never flexible.
//!
//! The first step of SASL authentication: the client names the mechanism it
//! wants (`PLAIN`, `SCRAM-SHA-256`, ...) and the broker answers with the
//! mechanisms it has enabled. After a version 0 handshake the SASL tokens
//! follow as raw size-prefixed frames outside the Kafka protocol; after a
//! version 1 handshake they travel in SaslAuthenticate requests, which is
//! what every client since Kafka 1.0 sends. Kafka 4.x still accepts both
//! versions (version 0 is deprecated). The version cannot be bumped to a
//! flexible one without breaking clients of Kafka 2.4 and older
//! (KAFKA-9577), so it never was.

use bytes::{BufMut, BytesMut};

use crate::codec::{min_string_bytes, DecodeResult, Reader, Writer};

/// No version is flexible.
const FLEXIBLE: bool = false;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaslHandshakeRequest {
    /// The SASL mechanism the client chose.
    pub mechanism: String,
}

impl SaslHandshakeRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        Ok(SaslHandshakeRequest {
            mechanism: r.string("mechanism", FLEXIBLE)?,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_string(&self.mechanism, FLEXIBLE);
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaslHandshakeResponse {
    pub error_code: i16,
    /// The mechanisms enabled on the listener, which the client reports
    /// when its own choice is not among them.
    pub mechanisms: Vec<String>,
}

impl SaslHandshakeResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let error_code = r.i16("error_code")?;
        let mechanisms = r.array("mechanisms", FLEXIBLE, min_string_bytes(FLEXIBLE), |r| {
            r.string("mechanism", FLEXIBLE)
        })?;
        Ok(SaslHandshakeResponse {
            error_code,
            mechanisms,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i16(self.error_code);
        w.put_array_len(Some(self.mechanisms.len()), FLEXIBLE);
        for m in &self.mechanisms {
            w.put_string(m, FLEXIBLE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=1;

    fn request() -> SaslHandshakeRequest {
        SaslHandshakeRequest {
            mechanism: "SCRAM-SHA-512".into(),
        }
    }

    fn response() -> SaslHandshakeResponse {
        SaslHandshakeResponse {
            // UNSUPPORTED_SASL_MECHANISM.
            error_code: 33,
            mechanisms: vec!["PLAIN".into(), "SCRAM-SHA-256".into(), "OAUTHBEARER".into()],
        }
    }

    #[test]
    fn edge_cases_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&SaslHandshakeRequest::default(), v);
            assert_round_trip(&SaslHandshakeResponse::default(), v);
        }
    }

    /// `PLAIN` as Kafka's Java client sends it: an INT16 length, then the
    /// name; the same bytes at both versions.
    #[test]
    fn request_has_kafkas_layout() {
        let m = SaslHandshakeRequest {
            mechanism: "PLAIN".into(),
        };
        for v in VERSIONS {
            assert_eq!(&encode(&m, v)[..], b"\x00\x05PLAIN", "v{v}");
        }
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_i16(0);
        b.put_i32(i32::MAX);
        assert_count_too_large::<SaslHandshakeResponse>(b.freeze(), 1);
    }

    conformance_tests!(
        SaslHandshakeRequest,
        SaslHandshakeResponse,
        VERSIONS,
        |_| request(),
        |_| response()
    );
}
