//! DescribeUserScramCredentials (key 50), version 0; flexible.
//!
//! Lists the SCRAM mechanisms and iteration counts each user has
//! credentials for (`kafka-configs.sh --describe --entity-type users`,
//! `Admin.describeUserScramCredentials`, KIP-554); salts and salted
//! passwords never leave the broker. A null user list asks for every user.
//!
//! Mechanisms: 0 UNKNOWN, 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.

use bytes::{BufMut, BytesMut};

use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

/// Every version is flexible.
const FLEXIBLE: bool = true;

/// `mechanism` SCRAM-SHA-256.
pub const MECHANISM_SCRAM_SHA_256: i8 = 1;
/// `mechanism` SCRAM-SHA-512.
pub const MECHANISM_SCRAM_SHA_512: i8 = 2;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeUserScramCredentialsRequest {
    /// The users to describe; `None` for every user with credentials.
    pub users: Option<Vec<String>>,
}

impl DescribeUserScramCredentialsRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let (s, t) = (min_string_bytes(FLEXIBLE), min_tags_bytes(FLEXIBLE));
        let users = r.nullable_array("users", FLEXIBLE, s + t, |r| {
            let name = r.string("name", FLEXIBLE)?;
            r.skip_tagged_fields()?;
            Ok(name)
        })?;
        r.skip_tagged_fields()?;
        Ok(DescribeUserScramCredentialsRequest { users })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_array_len(self.users.as_ref().map(Vec::len), FLEXIBLE);
        for name in self.users.iter().flatten() {
            w.put_string(name, FLEXIBLE);
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeUserScramCredentialsResponse {
    pub throttle_time_ms: i32,
    /// A request-level error, such as CLUSTER_AUTHORIZATION_FAILED.
    pub error_code: i16,
    pub error_message: Option<String>,
    pub results: Vec<DescribeUserScramCredentialsResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeUserScramCredentialsResult {
    pub user: String,
    /// RESOURCE_NOT_FOUND for a user named in the request who has none.
    pub error_code: i16,
    pub error_message: Option<String>,
    pub credential_infos: Vec<CredentialInfo>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CredentialInfo {
    pub mechanism: i8,
    pub iterations: i32,
}

impl DescribeUserScramCredentialsResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let (s, a, t) = (
            min_string_bytes(FLEXIBLE),
            min_array_bytes(FLEXIBLE),
            min_tags_bytes(FLEXIBLE),
        );
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        let error_message = r.nullable_string("error_message", FLEXIBLE)?;
        // User, error, message, credentials and tags.
        let results = r.array("results", FLEXIBLE, s + 2 + s + a + t, |r| {
            let user = r.string("user", FLEXIBLE)?;
            let error_code = r.i16("error_code")?;
            let error_message = r.nullable_string("error_message", FLEXIBLE)?;
            let credential_infos = r.array("credential_infos", FLEXIBLE, 1 + 4 + t, |r| {
                let info = CredentialInfo {
                    mechanism: r.i8("mechanism")?,
                    iterations: r.i32("iterations")?,
                };
                r.skip_tagged_fields()?;
                Ok(info)
            })?;
            r.skip_tagged_fields()?;
            Ok(DescribeUserScramCredentialsResult {
                user,
                error_code,
                error_message,
                credential_infos,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(DescribeUserScramCredentialsResponse {
            throttle_time_ms,
            error_code,
            error_message,
            results,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_nullable_string(self.error_message.as_deref(), FLEXIBLE);
        w.put_array_len(Some(self.results.len()), FLEXIBLE);
        for result in &self.results {
            w.put_string(&result.user, FLEXIBLE);
            w.put_i16(result.error_code);
            w.put_nullable_string(result.error_message.as_deref(), FLEXIBLE);
            w.put_array_len(Some(result.credential_infos.len()), FLEXIBLE);
            for info in &result.credential_infos {
                w.put_i8(info.mechanism);
                w.put_i32(info.iterations);
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSION: i16 = 0;

    fn request() -> DescribeUserScramCredentialsRequest {
        DescribeUserScramCredentialsRequest {
            users: Some(vec!["alice".into(), "bob-日".into()]),
        }
    }

    fn response() -> DescribeUserScramCredentialsResponse {
        DescribeUserScramCredentialsResponse {
            throttle_time_ms: 6,
            error_code: 0,
            error_message: Some("partial 🦀".into()),
            results: vec![
                DescribeUserScramCredentialsResult {
                    user: "alice".into(),
                    error_code: 0,
                    error_message: None,
                    credential_infos: vec![
                        CredentialInfo {
                            mechanism: MECHANISM_SCRAM_SHA_256,
                            iterations: 8192,
                        },
                        CredentialInfo {
                            mechanism: MECHANISM_SCRAM_SHA_512,
                            iterations: 16_384,
                        },
                    ],
                },
                DescribeUserScramCredentialsResult {
                    user: "bob-日".into(),
                    // RESOURCE_NOT_FOUND.
                    error_code: 91,
                    error_message: Some(
                        "Attempt to describe a user credential that does not exist".into(),
                    ),
                    credential_infos: Vec::new(),
                },
            ],
        }
    }

    #[test]
    fn edge_cases_round_trip() {
        // Every user (null) and no user (empty) are different requests.
        let all = DescribeUserScramCredentialsRequest { users: None };
        let none = DescribeUserScramCredentialsRequest {
            users: Some(Vec::new()),
        };
        assert_round_trip(&all, VERSION);
        assert_round_trip(&none, VERSION);
        assert_eq!(&encode(&all, VERSION)[..], [0, 0]);
        assert_eq!(&encode(&none, VERSION)[..], [1, 0]);
        assert_round_trip(&DescribeUserScramCredentialsResponse::default(), VERSION);
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<DescribeUserScramCredentialsRequest>(b.freeze(), VERSION);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i16(0);
        b.put_nullable_string(None, true);
        b.put_uvarint(2);
        b.put_string("u", true);
        b.put_i16(0);
        b.put_nullable_string(None, true);
        b.put_uvarint(1 << 20);
        b.put_slice(&[0; 8]);
        assert_count_too_large::<DescribeUserScramCredentialsResponse>(b.freeze(), VERSION);
    }

    conformance_tests!(
        DescribeUserScramCredentialsRequest,
        DescribeUserScramCredentialsResponse,
        VERSION..=VERSION,
        |_| request(),
        |_| response()
    );
}
