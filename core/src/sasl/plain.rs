//! SASL/PLAIN (RFC 4616) with Kafka's `PlainSaslServer` and
//! `PlainServerCallbackHandler` semantics: one message,
//! `[authzid] NUL authcid NUL passwd`, checked against the `user_<name>`
//! table of the listener's JAAS config ([`super::jaas`]).
//!
//! PLAIN sends the password in clear: Kafka offers it on TLS listeners in
//! practice, and so should pinlog's operators.
//!
//! # Where pinlog is stricter than Kafka
//!
//! Kafka splits the message into at most three NUL-separated tokens and
//! drops anything after a third NUL, so `a NUL u NUL p NUL junk` logs in
//! with password `p`; and a message with one NUL gets "password not
//! specified". RFC 4616 forbids NUL in every field, so pinlog refuses any
//! message without exactly two NULs, with Kafka's own "expected 3 tokens"
//! text. A message that is not UTF-8 is refused too (Java would replace
//! the bad bytes and compare the result).

use std::collections::BTreeMap;
use std::fmt;

use super::{constant_time_eq, SASL_MESSAGE_BYTES_MAX};

/// The tokens of a PLAIN message: authzid, authcid, password.
const PLAIN_TOKENS: usize = 3;

/// The users PLAIN accepts and their passwords (the JAAS `user_<name>`
/// options).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PlainUsers {
    passwords: BTreeMap<String, String>,
}

impl fmt::Debug for PlainUsers {
    // Names only: the passwords stay out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.passwords.keys()).finish()
    }
}

impl PlainUsers {
    pub fn new(users: impl IntoIterator<Item = (String, String)>) -> PlainUsers {
        PlainUsers {
            passwords: users.into_iter().collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.passwords.len()
    }

    pub fn is_empty(&self) -> bool {
        self.passwords.is_empty()
    }

    pub fn contains(&self, username: &str) -> bool {
        self.passwords.contains_key(username)
    }

    /// Whether `password` is `username`'s. The comparison takes time that
    /// depends on the attempt's length only; an unknown user is compared
    /// against an empty string, so the work is of the same kind.
    pub fn verify(&self, username: &str, password: &str) -> bool {
        match self.passwords.get(username) {
            Some(expected) => constant_time_eq(password.as_bytes(), expected.as_bytes()),
            None => {
                // Kafka's handler returns false for a user with no entry;
                // run a comparison anyway so the path costs the same.
                let _ = constant_time_eq(password.as_bytes(), b"\0");
                false
            }
        }
    }
}

/// A parsed PLAIN message.
#[derive(Clone, PartialEq, Eq)]
pub struct PlainResponse<'a> {
    /// Empty when the client sent none.
    pub authorization_id: &'a str,
    pub username: &'a str,
    pub password: &'a str,
}

impl fmt::Debug for PlainResponse<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlainResponse")
            .field("authorization_id", &self.authorization_id)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// Splits a PLAIN message into its three fields.
pub fn parse_response(message: &[u8]) -> Result<PlainResponse<'_>, PlainError> {
    if message.len() > SASL_MESSAGE_BYTES_MAX {
        return Err(PlainError::MessageTooLarge { len: message.len() });
    }
    let text = std::str::from_utf8(message).map_err(|_| PlainError::NotUtf8)?;
    let tokens: Vec<&str> = text.split('\0').collect();
    let [authorization_id, username, password] = tokens[..] else {
        return Err(PlainError::Tokens {
            count: tokens.len(),
        });
    };
    debug_assert_eq!(tokens.len(), PLAIN_TOKENS);
    if username.is_empty() {
        return Err(PlainError::NoUsername);
    }
    if password.is_empty() {
        return Err(PlainError::NoPassword);
    }
    Ok(PlainResponse {
        authorization_id,
        username,
        password,
    })
}

/// Authenticates one PLAIN message and returns the authorization id (the
/// username). Kafka's order: the password first, then the authzid, so a
/// mismatched authzid is reported only to a client that knew the password.
pub fn authenticate(message: &[u8], users: &PlainUsers) -> Result<String, PlainError> {
    let response = parse_response(message)?;
    if !users.verify(response.username, response.password) {
        return Err(PlainError::InvalidCredentials);
    }
    if !response.authorization_id.is_empty() && response.authorization_id != response.username {
        return Err(PlainError::AuthorizationIdMismatch);
    }
    Ok(response.username.to_string())
}

/// Why a PLAIN authentication failed. The texts are Kafka's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlainError {
    MessageTooLarge {
        len: usize,
    },
    NotUtf8,
    /// Not exactly two NULs: `count` NUL-separated tokens.
    Tokens {
        count: usize,
    },
    NoUsername,
    NoPassword,
    /// An unknown user or a wrong password: one error for both.
    InvalidCredentials,
    AuthorizationIdMismatch,
}

impl PlainError {
    /// Whether Kafka sends this text to the client (a
    /// `SaslAuthenticationException`); otherwise the client gets
    /// [`generic_failure_message`](super::generic_failure_message).
    pub fn is_client_visible(&self) -> bool {
        matches!(
            self,
            PlainError::InvalidCredentials | PlainError::AuthorizationIdMismatch
        )
    }
}

impl fmt::Display for PlainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlainError::MessageTooLarge { len } => write!(
                f,
                "Invalid SASL/PLAIN response: {len} bytes exceeds {SASL_MESSAGE_BYTES_MAX}"
            ),
            PlainError::NotUtf8 => f.write_str("Invalid SASL/PLAIN response: not UTF-8"),
            PlainError::Tokens { count } => write!(
                f,
                "Invalid SASL/PLAIN response: expected {PLAIN_TOKENS} tokens, got {count}"
            ),
            PlainError::NoUsername => f.write_str("Authentication failed: username not specified"),
            PlainError::NoPassword => f.write_str("Authentication failed: password not specified"),
            PlainError::InvalidCredentials => {
                f.write_str("Authentication failed: Invalid username or password")
            }
            PlainError::AuthorizationIdMismatch => f.write_str(
                "Authentication failed: Client requested an authorization id that is different from username",
            ),
        }
    }
}

impl std::error::Error for PlainError {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn users() -> PlainUsers {
        PlainUsers::new([
            ("admin".to_string(), "admin-secret".to_string()),
            ("alice".to_string(), "alice-secret".to_string()),
        ])
    }

    #[test]
    fn success_with_and_without_authzid() {
        assert_eq!(
            authenticate(b"\0alice\0alice-secret", &users()).as_deref(),
            Ok("alice")
        );
        assert_eq!(
            authenticate(b"alice\0alice\0alice-secret", &users()).as_deref(),
            Ok("alice")
        );
    }

    #[test]
    fn wrong_password_and_unknown_user_fail_alike() {
        for message in [
            &b"\0alice\0admin-secret"[..],
            b"\0alice\0alice-secre",
            b"\0alice\0alice-secrett",
            b"\0mallory\0alice-secret",
            b"\0Alice\0alice-secret",
        ] {
            let err = authenticate(message, &users()).unwrap_err();
            assert_eq!(err, PlainError::InvalidCredentials);
            assert!(err.is_client_visible());
            assert_eq!(
                err.to_string(),
                "Authentication failed: Invalid username or password"
            );
        }
    }

    #[test]
    fn authzid_must_match_after_the_password() {
        assert_eq!(
            authenticate(b"admin\0alice\0alice-secret", &users()),
            Err(PlainError::AuthorizationIdMismatch)
        );
        // With a wrong password, the mismatch is not what is reported.
        assert_eq!(
            authenticate(b"admin\0alice\0nope", &users()),
            Err(PlainError::InvalidCredentials)
        );
    }

    #[test]
    fn malformed_messages_name_what_is_wrong() {
        let cases: &[(&[u8], PlainError)] = &[
            (b"", PlainError::Tokens { count: 1 }),
            (b"alice", PlainError::Tokens { count: 1 }),
            (b"\0alice", PlainError::Tokens { count: 2 }),
            (b"\0alice\0pw\0", PlainError::Tokens { count: 4 }),
            (
                b"\0alice\0alice-secret\0junk",
                PlainError::Tokens { count: 4 },
            ),
            (b"\0\0pw", PlainError::NoUsername),
            (b"\0alice\0", PlainError::NoPassword),
            (b"\0al\xffice\0pw", PlainError::NotUtf8),
        ];
        for (message, expected) in cases {
            assert_eq!(authenticate(message, &users()).as_ref(), Err(expected));
            assert!(!expected.is_client_visible());
        }
        assert_eq!(
            PlainError::Tokens { count: 4 }.to_string(),
            "Invalid SASL/PLAIN response: expected 3 tokens, got 4"
        );
        let huge = vec![b'a'; SASL_MESSAGE_BYTES_MAX + 1];
        assert_eq!(
            parse_response(&huge),
            Err(PlainError::MessageTooLarge { len: huge.len() })
        );
    }

    #[test]
    fn debug_hides_passwords() {
        let shown = format!(
            "{:?} {:?}",
            users(),
            parse_response(b"\0alice\0alice-secret").unwrap()
        );
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("alice"));
    }

    #[test]
    fn table_queries() {
        let users = users();
        assert_eq!(users.len(), 2);
        assert!(!users.is_empty());
        assert!(users.contains("admin"));
        assert!(!users.contains("mallory"));
        assert!(PlainUsers::default().is_empty());
        assert!(!PlainUsers::default().verify("admin", ""));
    }

    proptest! {
        #[test]
        fn never_panics(message in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = authenticate(&message, &users());
        }
    }
}
