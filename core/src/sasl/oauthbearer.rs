//! The server side of OAUTHBEARER (RFC 7628, KIP-255), with Kafka's
//! `OAuthBearerSaslServer` and `OAuthBearerClientInitialResponse`
//! semantics.
//!
//! ```text
//! client: n,[a=authzid],%x01auth=Bearer <token>%x01[key=value%x01]*%x01
//! server: ""                                  token valid: complete
//!     or: {"status":"invalid_token"}           token refused: a challenge
//! client: %x01                                 the client gives up
//! server: fails, with the JSON as the error the client sees
//! ```
//!
//! The token is checked by a validator the caller passes in, so this
//! state machine serves both [`super::jwt::validate_unsecured`] and
//! [`super::jwks::validate_signed`]; the caller closes over `now_ms`.
//!
//! # Where pinlog differs from Kafka
//!
//! After its JSON error Kafka treats any message but `%x01` as a new
//! initial response, so a client may try token after token on one
//! connection. Kafka's client never does; pinlog accepts only `%x01`
//! there, so one connection is one token attempt.

use std::fmt;

use super::jwt::{TokenError, ValidatedToken};
use super::scram::unescape_saslname;
use super::{SASL_EXTENSIONS_MAX, SASL_MESSAGE_BYTES_MAX};

/// The separator of RFC 7628's key/value pairs.
const SEPARATOR: char = '\u{1}';
/// The key that carries the token (`auth=Bearer <token>`).
pub const AUTH_KEY: &str = "auth";

/// The client's initial response, parsed.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientInitialResponse {
    /// The `a=` authorization id, unescaped; empty when absent.
    pub authorization_id: String,
    pub token: String,
    /// The other key/value pairs (SASL extensions, KIP-342), in order, a
    /// repeated key's last value kept as Kafka's map keeps it.
    pub extensions: Vec<(String, String)>,
}

impl fmt::Debug for ClientInitialResponse {
    // The token is a bearer credential: keep it out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientInitialResponse")
            .field("authorization_id", &self.authorization_id)
            .field("extensions", &self.extensions)
            .finish_non_exhaustive()
    }
}

impl ClientInitialResponse {
    /// Parses an initial response by `OAuthBearerClientInitialResponse`'s
    /// pattern: gs2 header `n,` with an optional `a=saslname`, then
    /// `%x01`, pairs of `[A-Za-z]+` = printable ASCII, space, tab, CR or
    /// LF, each ended by `%x01`, and a final `%x01`. `auth` is required
    /// and must be `Bearer` (any case), spaces, then a token of
    /// `[-_.a-zA-Z0-9]`.
    pub fn parse(message: &[u8]) -> Result<ClientInitialResponse, OAuthBearerError> {
        if message.len() > SASL_MESSAGE_BYTES_MAX {
            return Err(OAuthBearerError::MessageTooLarge { len: message.len() });
        }
        let invalid = OAuthBearerError::InvalidInitialResponse;
        let text = std::str::from_utf8(message).map_err(|_| invalid("not UTF-8"))?;
        let rest = text.strip_prefix("n,").ok_or(invalid("no gs2 header n,"))?;
        let (authzid, rest) = rest
            .split_once(',')
            .ok_or(invalid("the gs2 header has no second ','"))?;
        let authorization_id = match authzid {
            "" => String::new(),
            a => a
                .strip_prefix("a=")
                .and_then(unescape_saslname)
                .ok_or(invalid("the gs2 authzid is not a=saslname"))?,
        };
        let pairs = rest
            .strip_prefix(SEPARATOR)
            .and_then(|r| r.strip_suffix(SEPARATOR))
            .ok_or(invalid("the pairs are not framed by %x01"))?;
        let mut auth = None;
        let mut extensions: Vec<(String, String)> = Vec::new();
        // Each pair ends with %x01, so splitting leaves an empty last part.
        let mut parts: Vec<&str> = pairs.split(SEPARATOR).collect();
        if parts.pop() != Some("") {
            return Err(invalid("a key/value pair is not ended by %x01"));
        }
        for pair in parts {
            let (key, value) = pair
                .split_once('=')
                .ok_or(invalid("a key/value pair has no '='"))?;
            if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(invalid("a key is not letters"));
            }
            let value_ok = !value.is_empty()
                && value.bytes().all(|b| {
                    (0x21..=0x7e).contains(&b) || matches!(b, b' ' | b'\t' | b'\r' | b'\n')
                });
            if !value_ok {
                return Err(invalid("a value has characters outside printable ASCII"));
            }
            if key == AUTH_KEY {
                auth = Some(value);
                continue;
            }
            extensions.retain(|(k, _)| k != key);
            if extensions.len() == SASL_EXTENSIONS_MAX {
                return Err(invalid("too many extensions"));
            }
            extensions.push((key.to_string(), value.to_string()));
        }
        let auth = auth.ok_or(OAuthBearerError::NoAuth)?;
        let (scheme, token) = auth
            .split_once(' ')
            .ok_or(invalid("invalid 'auth' format"))?;
        let token = token.trim_start_matches(' ');
        let scheme_ok = !scheme.is_empty()
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_');
        let token_ok = !token.is_empty()
            && token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !scheme_ok || !token_ok {
            return Err(invalid("invalid 'auth' format"));
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(OAuthBearerError::InvalidScheme {
                scheme: scheme.to_string(),
            });
        }
        Ok(ClientInitialResponse {
            authorization_id,
            token: token.to_string(),
            extensions,
        })
    }
}

/// A completed OAUTHBEARER authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthBearerSession {
    pub token: ValidatedToken,
    pub extensions: Vec<(String, String)>,
}

/// What the server answers a client message with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OAuthBearerStep {
    /// Authenticated: answer with an empty challenge.
    Complete(OAuthBearerSession),
    /// The token was refused: send this JSON error as the challenge and
    /// wait for the client's `%x01`.
    Challenge(Vec<u8>),
}

enum State {
    AwaitInitialResponse,
    /// The JSON error was sent; the client must answer `%x01`.
    AwaitErrorAck {
        json: String,
    },
    Complete,
    Failed,
}

/// One OAUTHBEARER exchange on one connection.
pub struct OAuthBearerServer {
    state: State,
}

impl Default for OAuthBearerServer {
    fn default() -> Self {
        OAuthBearerServer::new()
    }
}

impl OAuthBearerServer {
    pub fn new() -> OAuthBearerServer {
        OAuthBearerServer {
            state: State::AwaitInitialResponse,
        }
    }

    pub fn is_complete(&self) -> bool {
        matches!(self.state, State::Complete)
    }

    /// Takes the client's next message. `validate` checks the token (and
    /// is called at most once).
    pub fn evaluate(
        &mut self,
        message: &[u8],
        validate: impl FnOnce(&str) -> Result<ValidatedToken, TokenError>,
    ) -> Result<OAuthBearerStep, OAuthBearerError> {
        match std::mem::replace(&mut self.state, State::Failed) {
            State::AwaitInitialResponse => {}
            State::AwaitErrorAck { json } => {
                return Err(if message == [SEPARATOR as u8] {
                    OAuthBearerError::TokenRejected { json }
                } else {
                    OAuthBearerError::UnexpectedMessage {
                        state: "AWAIT_ERROR_ACK",
                    }
                });
            }
            State::Complete => {
                return Err(OAuthBearerError::UnexpectedMessage { state: "COMPLETE" })
            }
            State::Failed => return Err(OAuthBearerError::UnexpectedMessage { state: "FAILED" }),
        }
        let response = ClientInitialResponse::parse(message)?;
        let token = match validate(&response.token) {
            Ok(token) => token,
            Err(error) => {
                let json = json_error(&error);
                self.state = State::AwaitErrorAck { json: json.clone() };
                return Ok(OAuthBearerStep::Challenge(json.into_bytes()));
            }
        };
        if !response.authorization_id.is_empty() && response.authorization_id != token.principal {
            return Err(OAuthBearerError::AuthorizationIdMismatch {
                authorization_id: response.authorization_id,
                principal: token.principal,
            });
        }
        self.state = State::Complete;
        Ok(OAuthBearerStep::Complete(OAuthBearerSession {
            token,
            extensions: response.extensions,
        }))
    }
}

/// Kafka's `jsonErrorResponse`: `{"status":"..."}`, with `, "scope":"..."`
/// for a missing scope. (Kafka never sends `openid-configuration` from its
/// own validators.)
fn json_error(error: &TokenError) -> String {
    let status = serde_json::Value::from(error.status());
    match error.error_scope() {
        Some(scope) => format!(
            "{{\"status\":{status}, \"scope\":{}}}",
            serde_json::Value::from(scope)
        ),
        None => format!("{{\"status\":{status}}}"),
    }
}

/// Why an OAUTHBEARER exchange failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OAuthBearerError {
    MessageTooLarge {
        len: usize,
    },
    InvalidInitialResponse(&'static str),
    NoAuth,
    InvalidScheme {
        scheme: String,
    },
    /// The client answered the JSON error with `%x01`: the exchange fails
    /// with the JSON as the message the client sees.
    TokenRejected {
        json: String,
    },
    AuthorizationIdMismatch {
        authorization_id: String,
        principal: String,
    },
    UnexpectedMessage {
        state: &'static str,
    },
}

impl OAuthBearerError {
    /// Whether Kafka sends this text to the client (a
    /// `SaslAuthenticationException`); otherwise the client gets
    /// [`generic_failure_message`](super::generic_failure_message).
    pub fn is_client_visible(&self) -> bool {
        matches!(
            self,
            OAuthBearerError::TokenRejected { .. }
                | OAuthBearerError::AuthorizationIdMismatch { .. }
        )
    }
}

impl fmt::Display for OAuthBearerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OAuthBearerError::MessageTooLarge { len } => write!(
                f,
                "OAUTHBEARER message of {len} bytes exceeds {SASL_MESSAGE_BYTES_MAX}"
            ),
            OAuthBearerError::InvalidInitialResponse(why) => {
                write!(f, "Invalid OAUTHBEARER client first message: {why}")
            }
            OAuthBearerError::NoAuth => {
                f.write_str("Invalid OAUTHBEARER client first message: 'auth' not specified")
            }
            OAuthBearerError::InvalidScheme { scheme } => write!(
                f,
                "Invalid scheme in OAUTHBEARER client first message: {scheme}"
            ),
            OAuthBearerError::TokenRejected { json } => f.write_str(json),
            OAuthBearerError::AuthorizationIdMismatch {
                authorization_id,
                principal,
            } => write!(
                f,
                "Authentication failed: Client requested an authorization id ({authorization_id}) that is different from the token's principal name ({principal})"
            ),
            OAuthBearerError::UnexpectedMessage { state } => {
                write!(f, "Unexpected OAUTHBEARER message in state {state}")
            }
        }
    }
}

impl std::error::Error for OAuthBearerError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sasl::jwt::tests::unsecured;
    use crate::sasl::jwt::{validate_unsecured, UnsecuredValidatorConfig};
    use proptest::prelude::*;

    const NOW_MS: i64 = 1_700_000_000_000;

    fn message(authzid: &str, token: &str, extensions: &str) -> Vec<u8> {
        format!("n,{authzid},\u{1}auth=Bearer {token}\u{1}{extensions}\u{1}").into_bytes()
    }

    fn good_token() -> String {
        unsecured(r#"{"sub":"alice","exp":1700000060,"iat":1699999990}"#)
    }

    fn unsecured_validator(token: &str) -> Result<ValidatedToken, TokenError> {
        validate_unsecured(token, &UnsecuredValidatorConfig::default(), NOW_MS)
    }

    #[test]
    fn parses_kafkas_client_message() {
        let parsed = ClientInitialResponse::parse(&message(
            "a=alice",
            "abc.def-_.",
            "traceId=123\u{1}tenant=a b\u{1}",
        ))
        .unwrap();
        assert_eq!(parsed.authorization_id, "alice");
        assert_eq!(parsed.token, "abc.def-_.");
        assert_eq!(
            parsed.extensions,
            vec![
                ("traceId".to_string(), "123".to_string()),
                ("tenant".to_string(), "a b".to_string())
            ]
        );
        assert!(!format!("{parsed:?}").contains("abc.def"));
        // The scheme in any case, several spaces, no authzid.
        let parsed = ClientInitialResponse::parse(b"n,,\x01auth=bEaReR   tok\x01\x01").unwrap();
        assert_eq!(parsed.token, "tok");
        assert_eq!(parsed.authorization_id, "");
        // A repeated extension keeps its last value.
        let parsed = ClientInitialResponse::parse(&message("", "t", "k=1\u{1}k=2\u{1}")).unwrap();
        assert_eq!(parsed.extensions, vec![("k".to_string(), "2".to_string())]);
    }

    #[test]
    fn malformed_initial_responses_are_refused() {
        let cases: &[(&[u8], OAuthBearerError)] = &[
            (
                b"",
                OAuthBearerError::InvalidInitialResponse("no gs2 header n,"),
            ),
            (
                b"y,,\x01auth=Bearer t\x01\x01",
                OAuthBearerError::InvalidInitialResponse("no gs2 header n,"),
            ),
            (
                b"n,\x01auth=Bearer t\x01\x01",
                OAuthBearerError::InvalidInitialResponse("the gs2 header has no second ','"),
            ),
            (
                b"n,alice,\x01auth=Bearer t\x01\x01",
                OAuthBearerError::InvalidInitialResponse("the gs2 authzid is not a=saslname"),
            ),
            (
                b"n,,auth=Bearer t\x01\x01",
                OAuthBearerError::InvalidInitialResponse("the pairs are not framed by %x01"),
            ),
            (
                b"n,,\x01auth=Bearer t\x01",
                OAuthBearerError::InvalidInitialResponse("a key/value pair is not ended by %x01"),
            ),
            (
                b"n,,\x01auth=Bearer t",
                OAuthBearerError::InvalidInitialResponse("the pairs are not framed by %x01"),
            ),
            (b"n,,\x01\x01", OAuthBearerError::NoAuth),
            (b"n,,\x01k=v\x01\x01", OAuthBearerError::NoAuth),
            (
                b"n,,\x01auth\x01\x01",
                OAuthBearerError::InvalidInitialResponse("a key/value pair has no '='"),
            ),
            (
                b"n,,\x01k1=v\x01auth=Bearer t\x01\x01",
                OAuthBearerError::InvalidInitialResponse("a key is not letters"),
            ),
            (
                b"n,,\x01k=\x7f\x01auth=Bearer t\x01\x01",
                OAuthBearerError::InvalidInitialResponse(
                    "a value has characters outside printable ASCII",
                ),
            ),
            (
                b"n,,\x01auth=Bearer\x01\x01",
                OAuthBearerError::InvalidInitialResponse("invalid 'auth' format"),
            ),
            (
                b"n,,\x01auth=Bearer a+b\x01\x01",
                OAuthBearerError::InvalidInitialResponse("invalid 'auth' format"),
            ),
            (
                b"n,,\x01auth=Bearer \x01\x01",
                OAuthBearerError::InvalidInitialResponse("invalid 'auth' format"),
            ),
            (
                b"n,,\x01auth=Basic dXNlcg\x01\x01",
                OAuthBearerError::InvalidScheme {
                    scheme: "Basic".into(),
                },
            ),
            (
                b"n,,\x01auth=Bearer t\xff\x01\x01",
                OAuthBearerError::InvalidInitialResponse("not UTF-8"),
            ),
        ];
        for (bytes, expected) in cases {
            assert_eq!(
                ClientInitialResponse::parse(bytes).as_ref(),
                Err(expected),
                "{}",
                String::from_utf8_lossy(bytes)
            );
            assert!(!expected.is_client_visible());
        }
        // Distinct keys (a repeated key replaces, it does not add).
        let many: String = (0..=SASL_EXTENSIONS_MAX)
            .map(|i| format!("k{}=v\u{1}", "x".repeat(i)))
            .collect();
        assert_eq!(
            ClientInitialResponse::parse(&message("", "t", &many)),
            Err(OAuthBearerError::InvalidInitialResponse(
                "too many extensions"
            ))
        );
    }

    #[test]
    fn a_good_unsecured_token_completes() {
        let mut server = OAuthBearerServer::new();
        let step = server
            .evaluate(&message("a=alice", &good_token(), ""), unsecured_validator)
            .unwrap();
        let OAuthBearerStep::Complete(session) = step else {
            panic!("expected completion, got {step:?}");
        };
        assert_eq!(session.token.principal, "alice");
        assert_eq!(session.token.expiry_ms, 1_700_000_060_000);
        assert!(server.is_complete());
        // Nothing more is accepted.
        assert_eq!(
            server.evaluate(b"\x01", unsecured_validator),
            Err(OAuthBearerError::UnexpectedMessage { state: "COMPLETE" })
        );
    }

    #[test]
    fn a_refused_token_gets_the_json_error_then_fails_on_the_ack() {
        let expired = unsecured(r#"{"sub":"alice","exp":1600000000}"#);
        let mut server = OAuthBearerServer::new();
        let step = server
            .evaluate(&message("", &expired, ""), unsecured_validator)
            .unwrap();
        assert_eq!(
            step,
            OAuthBearerStep::Challenge(br#"{"status":"invalid_token"}"#.to_vec())
        );
        assert!(!server.is_complete());
        let err = server.evaluate(b"\x01", unsecured_validator).unwrap_err();
        assert_eq!(
            err,
            OAuthBearerError::TokenRejected {
                json: r#"{"status":"invalid_token"}"#.into()
            }
        );
        assert!(err.is_client_visible());
        assert_eq!(err.to_string(), r#"{"status":"invalid_token"}"#);
        // A second token after the error is not accepted (one attempt).
        let mut server = OAuthBearerServer::new();
        server
            .evaluate(&message("", &expired, ""), unsecured_validator)
            .unwrap();
        assert_eq!(
            server.evaluate(&message("", &good_token(), ""), unsecured_validator),
            Err(OAuthBearerError::UnexpectedMessage {
                state: "AWAIT_ERROR_ACK"
            })
        );
    }

    #[test]
    fn insufficient_scope_names_the_required_scope() {
        let config = UnsecuredValidatorConfig {
            required_scope: vec!["LOGIN_TO_KAFKA".into()],
            ..Default::default()
        };
        let mut server = OAuthBearerServer::new();
        let step = server
            .evaluate(&message("", &good_token(), ""), |t| {
                validate_unsecured(t, &config, NOW_MS)
            })
            .unwrap();
        assert_eq!(
            step,
            OAuthBearerStep::Challenge(
                br#"{"status":"insufficient_scope", "scope":"[LOGIN_TO_KAFKA]"}"#.to_vec()
            )
        );
    }

    #[test]
    fn authzid_must_be_the_principal() {
        let mut server = OAuthBearerServer::new();
        let err = server
            .evaluate(&message("a=bob", &good_token(), ""), unsecured_validator)
            .unwrap_err();
        assert!(err.is_client_visible());
        assert!(err.to_string().contains("(bob)") && err.to_string().contains("(alice)"));
        assert!(!server.is_complete());
    }

    #[test]
    fn the_validator_is_not_called_for_a_malformed_message() {
        let mut server = OAuthBearerServer::new();
        let result = server.evaluate(b"n,,\x01\x01", |_| panic!("validator called"));
        assert_eq!(result, Err(OAuthBearerError::NoAuth));
        assert_eq!(
            server.evaluate(b"\x01", unsecured_validator),
            Err(OAuthBearerError::UnexpectedMessage { state: "FAILED" })
        );
    }

    #[test]
    fn every_truncation_is_handled() {
        let full = message("a=alice", &good_token(), "k=v\u{1}");
        for end in 0..full.len() {
            let mut server = OAuthBearerServer::new();
            let _ = server.evaluate(&full[..end], unsecured_validator);
            assert!(!server.is_complete());
        }
    }

    proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80),
                        text in "[n,a=\u{1}authBer kv.0-9]{0,60}") {
            let mut server = OAuthBearerServer::new();
            let _ = server.evaluate(&bytes, unsecured_validator);
            let mut server = OAuthBearerServer::new();
            let _ = server.evaluate(text.as_bytes(), unsecured_validator);
        }
    }
}
