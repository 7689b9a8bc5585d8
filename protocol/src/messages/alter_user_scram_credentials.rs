//! AlterUserScramCredentials (key 51), version 0; flexible.
//!
//! Deletes and creates (or replaces) users' SCRAM credentials
//! (`kafka-configs.sh --alter --add-config 'SCRAM-SHA-256=[...]'`,
//! `Admin.alterUserScramCredentials`, KIP-554). The client salts and hashes
//! the password itself: the request carries the salt and the salted
//! password, never the password. The response has one result per user.
//! Mechanism codes are those of
//! [`super::describe_user_scram_credentials`].

use bytes::{BufMut, Bytes, BytesMut};

use crate::codec::{
    min_bytes_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

/// Every version is flexible.
const FLEXIBLE: bool = true;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterUserScramCredentialsRequest {
    pub deletions: Vec<ScramCredentialDeletion>,
    pub upsertions: Vec<ScramCredentialUpsertion>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScramCredentialDeletion {
    pub name: String,
    pub mechanism: i8,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScramCredentialUpsertion {
    pub name: String,
    pub mechanism: i8,
    pub iterations: i32,
    /// Sliced from the frame, as is `salted_password`.
    pub salt: Bytes,
    pub salted_password: Bytes,
}

impl AlterUserScramCredentialsRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let (s, b, t) = (
            min_string_bytes(FLEXIBLE),
            min_bytes_bytes(FLEXIBLE),
            min_tags_bytes(FLEXIBLE),
        );
        let deletions = r.array("deletions", FLEXIBLE, s + 1 + t, |r| {
            let deletion = ScramCredentialDeletion {
                name: r.string("name", FLEXIBLE)?,
                mechanism: r.i8("mechanism")?,
            };
            r.skip_tagged_fields()?;
            Ok(deletion)
        })?;
        // Name, mechanism, iterations, salt, salted password and tags.
        let upsertions = r.array("upsertions", FLEXIBLE, s + 1 + 4 + b + b + t, |r| {
            let upsertion = ScramCredentialUpsertion {
                name: r.string("name", FLEXIBLE)?,
                mechanism: r.i8("mechanism")?,
                iterations: r.i32("iterations")?,
                salt: r.bytes("salt", FLEXIBLE)?,
                salted_password: r.bytes("salted_password", FLEXIBLE)?,
            };
            r.skip_tagged_fields()?;
            Ok(upsertion)
        })?;
        r.skip_tagged_fields()?;
        Ok(AlterUserScramCredentialsRequest {
            deletions,
            upsertions,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_array_len(Some(self.deletions.len()), FLEXIBLE);
        for d in &self.deletions {
            w.put_string(&d.name, FLEXIBLE);
            w.put_i8(d.mechanism);
            w.put_empty_tagged_fields();
        }
        w.put_array_len(Some(self.upsertions.len()), FLEXIBLE);
        for u in &self.upsertions {
            w.put_string(&u.name, FLEXIBLE);
            w.put_i8(u.mechanism);
            w.put_i32(u.iterations);
            w.put_nullable_bytes(Some(&u.salt), FLEXIBLE);
            w.put_nullable_bytes(Some(&u.salted_password), FLEXIBLE);
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterUserScramCredentialsResponse {
    pub throttle_time_ms: i32,
    /// One per user named in the request.
    pub results: Vec<AlterUserScramCredentialsResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterUserScramCredentialsResult {
    pub user: String,
    pub error_code: i16,
    pub error_message: Option<String>,
}

impl AlterUserScramCredentialsResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let (s, t) = (min_string_bytes(FLEXIBLE), min_tags_bytes(FLEXIBLE));
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let results = r.array("results", FLEXIBLE, s + 2 + s + t, |r| {
            let result = AlterUserScramCredentialsResult {
                user: r.string("user", FLEXIBLE)?,
                error_code: r.i16("error_code")?,
                error_message: r.nullable_string("error_message", FLEXIBLE)?,
            };
            r.skip_tagged_fields()?;
            Ok(result)
        })?;
        r.skip_tagged_fields()?;
        Ok(AlterUserScramCredentialsResponse {
            throttle_time_ms,
            results,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.results.len()), FLEXIBLE);
        for result in &self.results {
            w.put_string(&result.user, FLEXIBLE);
            w.put_i16(result.error_code);
            w.put_nullable_string(result.error_message.as_deref(), FLEXIBLE);
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::describe_user_scram_credentials::{
        MECHANISM_SCRAM_SHA_256, MECHANISM_SCRAM_SHA_512,
    };
    use crate::messages::test_support::*;

    const VERSION: i16 = 0;

    fn request() -> AlterUserScramCredentialsRequest {
        AlterUserScramCredentialsRequest {
            deletions: vec![ScramCredentialDeletion {
                name: "bob-日".into(),
                mechanism: MECHANISM_SCRAM_SHA_256,
            }],
            upsertions: vec![
                ScramCredentialUpsertion {
                    name: "alice".into(),
                    mechanism: MECHANISM_SCRAM_SHA_512,
                    iterations: 8192,
                    salt: Bytes::from_static(b"0123456789abcdef"),
                    // A SHA-512 digest is 64 bytes; 200 takes a two-byte
                    // compact length.
                    salted_password: Bytes::from(vec![0x5a; 200]),
                },
                ScramCredentialUpsertion::default(),
            ],
        }
    }

    fn response() -> AlterUserScramCredentialsResponse {
        AlterUserScramCredentialsResponse {
            throttle_time_ms: 9,
            results: vec![
                AlterUserScramCredentialsResult {
                    user: "alice".into(),
                    error_code: 0,
                    error_message: None,
                },
                AlterUserScramCredentialsResult {
                    user: "bob-日".into(),
                    // RESOURCE_NOT_FOUND.
                    error_code: 91,
                    error_message: Some("no credential to delete 🦀".into()),
                },
            ],
        }
    }

    #[test]
    fn edge_cases_round_trip() {
        assert_round_trip(&AlterUserScramCredentialsRequest::default(), VERSION);
        assert_round_trip(&AlterUserScramCredentialsResponse::default(), VERSION);
    }

    #[test]
    fn null_salts_are_refused() {
        let mut b = BytesMut::new();
        b.put_uvarint(1);
        b.put_uvarint(2);
        b.put_string("alice", true);
        b.put_i8(1);
        b.put_i32(4096);
        b.put_nullable_bytes(None, true);
        b.put_nullable_bytes(Some(b"x"), true);
        b.put_empty_tagged_fields();
        b.put_empty_tagged_fields();
        assert!(AlterUserScramCredentialsRequest::decode(&mut Reader::new(b.freeze()), 0).is_err());
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_uvarint(1);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<AlterUserScramCredentialsRequest>(b.freeze(), VERSION);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_uvarint(1 << 20);
        b.put_slice(&[0; 16]);
        assert_count_too_large::<AlterUserScramCredentialsResponse>(b.freeze(), VERSION);
    }

    conformance_tests!(
        AlterUserScramCredentialsRequest,
        AlterUserScramCredentialsResponse,
        VERSION..=VERSION,
        |_| request(),
        |_| response()
    );
}
