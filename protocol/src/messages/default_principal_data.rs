//! DefaultPrincipalData, version 0; flexible. Not an API: Kafka's encoding
//! of a `KafkaPrincipal` (`DefaultKafkaPrincipalBuilder`), which a broker
//! puts in an Envelope's `request_principal` when it forwards a client's
//! request to the controller.
//!
//! The bytes start with the INT16 version, as Kafka's
//! `DefaultKafkaPrincipalBuilder.serialize` writes them; [`Self::decode`]
//! and [`Self::encode`] are the data after it, like every message body,
//! and [`Self::from_bytes`] and [`Self::to_bytes`] add the version.

use bytes::{BufMut, Bytes, BytesMut};

use crate::codec::{DecodeError, DecodeResult, Reader, Writer};

/// Every version is flexible.
const FLEXIBLE: bool = true;
/// The only version.
pub const VERSION: i16 = 0;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DefaultPrincipalData {
    /// The principal type, `User` for every principal Kafka builds.
    pub type_: String,
    pub name: String,
    /// Whether the client authenticated with a delegation token.
    pub token_authenticated: bool,
}

impl DefaultPrincipalData {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let p = DefaultPrincipalData {
            type_: r.string("type", FLEXIBLE)?,
            name: r.string("name", FLEXIBLE)?,
            token_authenticated: r.bool("token_authenticated")?,
        };
        r.skip_tagged_fields()?;
        Ok(p)
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_string(&self.type_, FLEXIBLE);
        w.put_string(&self.name, FLEXIBLE);
        w.put_bool(self.token_authenticated);
        w.put_empty_tagged_fields();
    }

    /// Reads an Envelope's `request_principal`: the version, then the data,
    /// and nothing after it. A version other than 0 is refused.
    pub fn from_bytes(bytes: Bytes) -> DecodeResult<Self> {
        let mut r = Reader::new(bytes);
        let version = r.i16("principal version")?;
        if version != VERSION {
            return Err(DecodeError::Invalid(format!(
                "principal data version {version}; only {VERSION} is defined"
            )));
        }
        let p = Self::decode(&mut r, version)?;
        if !r.is_empty() {
            return Err(DecodeError::Invalid(format!(
                "{} bytes after the principal data",
                r.remaining()
            )));
        }
        Ok(p)
    }

    /// The bytes of an Envelope's `request_principal`.
    pub fn to_bytes(&self) -> Bytes {
        let mut w = BytesMut::new();
        w.put_i16(VERSION);
        self.encode(&mut w, VERSION);
        w.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    fn alice() -> DefaultPrincipalData {
        DefaultPrincipalData {
            type_: "User".into(),
            name: "alice-é".into(),
            token_authenticated: true,
        }
    }

    #[test]
    fn round_trips() {
        assert_round_trip(&alice(), VERSION);
        assert_round_trip(&DefaultPrincipalData::default(), VERSION);
        assert_eq!(
            DefaultPrincipalData::from_bytes(alice().to_bytes()),
            Ok(alice())
        );
    }

    #[test]
    fn every_strict_prefix_fails_to_decode() {
        assert_every_strict_prefix_fails(&alice(), VERSION);
        let full = alice().to_bytes();
        for n in 0..full.len() {
            assert!(
                DefaultPrincipalData::from_bytes(full.slice(..n)).is_err(),
                "{n}"
            );
        }
    }

    /// `User:alice`, not token-authenticated, laid out by hand from Kafka's
    /// schema, version first.
    #[test]
    fn has_kafkas_layout() {
        let p = DefaultPrincipalData {
            type_: "User".into(),
            name: "alice".into(),
            token_authenticated: false,
        };
        let mut expected = vec![0, 0, 5];
        expected.extend_from_slice(b"User");
        expected.push(6);
        expected.extend_from_slice(b"alice");
        expected.extend_from_slice(&[0, 0]);
        assert_eq!(&p.to_bytes()[..], expected);
    }

    #[test]
    fn other_versions_and_trailing_bytes_are_refused() {
        let mut v1 = alice().to_bytes().to_vec();
        v1[1] = 1;
        assert!(DefaultPrincipalData::from_bytes(Bytes::from(v1)).is_err());
        let mut trailing = alice().to_bytes().to_vec();
        trailing.push(0);
        assert!(DefaultPrincipalData::from_bytes(Bytes::from(trailing)).is_err());
    }

    proptest::proptest! {
        #[test]
        fn decoding_random_bytes_never_panics(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..128),
        ) {
            let bytes = Bytes::from(bytes);
            let _ = DefaultPrincipalData::from_bytes(bytes.clone());
            decode_ignoring_errors::<DefaultPrincipalData, DefaultPrincipalData>(&bytes, VERSION);
        }

        #[test]
        fn decoding_corrupted_principals_never_panics(
            edits in proptest::collection::vec(
                (proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>()),
                1..8,
            ),
        ) {
            let bad = corrupt(&alice().to_bytes(), &edits);
            let _ = DefaultPrincipalData::from_bytes(bad.clone());
            decode_ignoring_errors::<DefaultPrincipalData, DefaultPrincipalData>(&bad, VERSION);
        }
    }
}
