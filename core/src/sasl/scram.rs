//! The server side of a SCRAM exchange (RFC 5802, RFC 7677), with Kafka's
//! `ScramSaslServer` semantics.
//!
//! ```text
//! client-first  n,[a=authzid],n=saslname,r=cnonce[,ext=value]*
//!   -> ScramServer::client_first -> ClientFirst (the caller looks up the user)
//!   -> ScramServer::server_first(credential) -> r=cnonce+snonce,s=salt,i=n
//! client-final  c=biws,r=cnonce+snonce[,ext]*,p=proof
//!   -> ScramServer::client_final -> v=server-signature
//! ```
//!
//! # Decisions, and where they follow Kafka
//!
//! - **Channel binding:** only the gs2 flag `n` is accepted, as Kafka's
//!   message pattern does; `y` and `p=` are refused. Kafka never offers
//!   `SCRAM-*-PLUS`, so a client sending `y` is confused about the server,
//!   and `p` asks for binding the server cannot give. The client-final
//!   `c=` must be the base64 of the client-first's gs2 header (`biws` for
//!   `n,,`): Kafka leaves that to the proof, which covers `c=`; checking it
//!   first gives a clearer error and the same outcome.
//! - **Unknown users:** Kafka fails at client-first when the credential
//!   lookup finds nothing ("Invalid user credentials"), a `SaslException`,
//!   so the client sees only the generic failure text, but one round trip
//!   earlier than for a wrong password. RFC 5802 section 9 suggests a
//!   made-up salt instead; pinlog mirrors Kafka, so clients see the same
//!   behaviour from both brokers. [`ScramServer::server_first`] takes an
//!   `Option` and fails on `None`.
//! - **The authzid** (`a=`) must be empty or the username, checked after
//!   the lookup as Kafka does, so that a mismatch (which Kafka reports in
//!   clear) is reported only for a user that exists.
//! - **Extensions:** Kafka knows one, `tokenauth=true` (delegation tokens,
//!   KIP-48), and ignores others. [`ClientFirst`] surfaces all of them; the
//!   caller looks up a delegation token instead of a user when
//!   `token_auth` is set, or passes `None` if it has no tokens.
//! - **`m=`** (reserved-mext): RFC 5802 says its presence must fail the
//!   exchange. Kafka's pattern accepts and drops it, after which the proof
//!   fails; pinlog refuses it at once.
//! - **The AuthMessage** is built from the messages as received, as RFC
//!   5802 defines it. Kafka rebuilds the bare client-first from its parsed
//!   extension map and the client-final without its extensions, which
//!   gives the same bytes for every message Kafka's client sends.
//! - **Usernames:** Kafka's pattern admits ASCII only; pinlog admits any
//!   UTF-8 but NUL, `,` and a bare `=`, as RFC 5802 does. Escapes are
//!   `=2C` for `,` and `=3D` for `=`; any other `=` fails.
//!
//! Any error moves the server to a failed state in which every further
//! message fails: an exchange is never resumed.

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::constant_time_eq;
use super::scram_credential::{ScramCredential, ScramMechanism, MIN_ITERATIONS};
use super::{SASL_EXTENSIONS_MAX, SASL_MESSAGE_BYTES_MAX};

/// Kafka's only SCRAM extension: the username is a delegation token id.
pub const TOKEN_AUTH_EXTENSION: &str = "tokenauth";
/// Random bytes a server nonce should carry (Kafka draws 130 bits). The
/// shell draws them and passes [`printable_nonce`] of them to
/// [`ScramServer::new`].
pub const SERVER_NONCE_RANDOM_BYTES: usize = 18;

/// Encodes random bytes as a server nonce: base64 has no `,`, so the
/// result is a valid RFC 5802 `printable`.
pub fn printable_nonce(random: &[u8]) -> String {
    STANDARD.encode(random)
}

/// Escapes a username as a `saslname` (`,` to `=2C`, `=` to `=3D`), as a
/// client writes it.
pub fn escape_saslname(username: &str) -> String {
    username.replace('=', "=3D").replace(',', "=2C")
}

/// Reverses [`escape_saslname`], refusing any other use of `=` (Kafka's
/// `ScramFormatter.username`). `None` for an invalid or empty name.
pub fn unescape_saslname(saslname: &str) -> Option<String> {
    if saslname.is_empty() || saslname.contains('\0') || saslname.contains(',') {
        return None;
    }
    let mut out = String::with_capacity(saslname.len());
    let mut rest = saslname;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        let escape = rest.get(at..at + 3)?;
        match escape {
            "=2C" => out.push(','),
            "=3D" => out.push('='),
            _ => return None,
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Some(out)
}

/// What the client's first message says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    /// The unescaped username (a token id when `token_auth`).
    pub username: String,
    /// The `a=` authorization id, unescaped, if the client sent one.
    pub authorization_id: Option<String>,
    pub client_nonce: String,
    /// `tokenauth=true` (case-insensitive, as Kafka reads it): look the
    /// username up as a delegation token.
    pub token_auth: bool,
    /// Every extension, in the order sent.
    pub extensions: Vec<(String, String)>,
}

enum State {
    AwaitClientFirst,
    AwaitCredential {
        first: ClientFirst,
        /// The gs2 header as sent (`n,,` or `n,a=...,`): `c=` must be its
        /// base64.
        gs2_header: String,
        client_first_bare: String,
    },
    AwaitClientFinal {
        gs2_header: String,
        /// `client-first-message-bare "," server-first-message`.
        auth_message_prefix: String,
        combined_nonce: String,
        client_nonce: String,
        credential: ScramCredential,
    },
    Complete,
    Failed,
}

impl State {
    fn name(&self) -> &'static str {
        match self {
            State::AwaitClientFirst => "RECEIVE_CLIENT_FIRST_MESSAGE",
            State::AwaitCredential { .. } => "AWAIT_CREDENTIAL",
            State::AwaitClientFinal { .. } => "RECEIVE_CLIENT_FINAL_MESSAGE",
            State::Complete => "COMPLETE",
            State::Failed => "FAILED",
        }
    }
}

/// One SCRAM exchange on one connection.
pub struct ScramServer {
    mechanism: ScramMechanism,
    server_nonce: String,
    state: State,
}

impl ScramServer {
    /// A server for one exchange. `server_nonce` must be printable ASCII
    /// without `,` (RFC 5802's `printable`): pass [`printable_nonce`] of
    /// [`SERVER_NONCE_RANDOM_BYTES`] fresh random bytes.
    pub fn new(mechanism: ScramMechanism, server_nonce: &[u8]) -> Result<ScramServer, ScramError> {
        let nonce = std::str::from_utf8(server_nonce)
            .ok()
            .filter(|n| is_printable(n))
            .ok_or(ScramError::InvalidServerNonce)?;
        Ok(ScramServer {
            mechanism,
            server_nonce: nonce.to_string(),
            state: State::AwaitClientFirst,
        })
    }

    pub fn mechanism(&self) -> ScramMechanism {
        self.mechanism
    }

    /// Whether the client has proved its password.
    pub fn is_complete(&self) -> bool {
        matches!(self.state, State::Complete)
    }

    /// Parses the client-first message. The caller then looks up the
    /// credential for `username` and calls [`ScramServer::server_first`].
    pub fn client_first(&mut self, message: &[u8]) -> Result<ClientFirst, ScramError> {
        if !matches!(self.state, State::AwaitClientFirst) {
            return Err(self.fail_unexpected());
        }
        match parse_client_first(message) {
            Ok((first, gs2_header, client_first_bare)) => {
                self.state = State::AwaitCredential {
                    first: first.clone(),
                    gs2_header,
                    client_first_bare,
                };
                Ok(first)
            }
            Err(e) => self.fail(e),
        }
    }

    /// The server-first message for the credential the caller found, or a
    /// failure for `None` (an unknown user or token).
    pub fn server_first(
        &mut self,
        credential: Option<&ScramCredential>,
    ) -> Result<Vec<u8>, ScramError> {
        // Any early return below leaves the exchange failed.
        let (first, gs2_header, client_first_bare) =
            match std::mem::replace(&mut self.state, State::Failed) {
                State::AwaitCredential {
                    first,
                    gs2_header,
                    client_first_bare,
                } => (first, gs2_header, client_first_bare),
                other => {
                    return Err(ScramError::UnexpectedMessage {
                        state: other.name(),
                    })
                }
            };
        // Kafka's order: the lookup, then the authzid, then the iterations.
        let Some(credential) = credential else {
            return Err(ScramError::UnknownUser);
        };
        if first
            .authorization_id
            .as_ref()
            .is_some_and(|a| !a.is_empty() && *a != first.username)
        {
            return Err(ScramError::AuthorizationIdMismatch);
        }
        if credential.iterations < MIN_ITERATIONS {
            return Err(ScramError::TooFewIterations {
                iterations: credential.iterations,
            });
        }
        if !credential.fits(self.mechanism) || credential.salt.is_empty() {
            return Err(ScramError::CorruptCredential);
        }
        let combined_nonce = format!("{}{}", first.client_nonce, self.server_nonce);
        let server_first = format!(
            "r={combined_nonce},s={},i={}",
            STANDARD.encode(&credential.salt),
            credential.iterations
        );
        self.state = State::AwaitClientFinal {
            gs2_header,
            auth_message_prefix: format!("{client_first_bare},{server_first}"),
            combined_nonce,
            client_nonce: first.client_nonce.clone(),
            credential: credential.clone(),
        };
        Ok(server_first.into_bytes())
    }

    /// Checks the client-final message's channel binding, nonce and proof,
    /// and returns the server-final message (`v=` and the server
    /// signature) that proves the server knew the credential too.
    pub fn client_final(&mut self, message: &[u8]) -> Result<Vec<u8>, ScramError> {
        // Any early return below leaves the exchange failed.
        let (gs2_header, auth_message_prefix, combined_nonce, client_nonce, credential) =
            match std::mem::replace(&mut self.state, State::Failed) {
                State::AwaitClientFinal {
                    gs2_header,
                    auth_message_prefix,
                    combined_nonce,
                    client_nonce,
                    credential,
                } => (
                    gs2_header,
                    auth_message_prefix,
                    combined_nonce,
                    client_nonce,
                    credential,
                ),
                other => {
                    return Err(ScramError::UnexpectedMessage {
                        state: other.name(),
                    })
                }
            };
        let final_message = parse_client_final(message)?;
        let channel_binding = STANDARD.decode(final_message.channel_binding).ok();
        if channel_binding.as_deref() != Some(gs2_header.as_bytes()) {
            return Err(ScramError::ChannelBindingMismatch);
        }
        if !nonce_matches(final_message.nonce, &combined_nonce, &client_nonce) {
            return Err(ScramError::NonceMismatch);
        }
        let proof = STANDARD
            .decode(final_message.proof)
            .map_err(|_| ScramError::InvalidClientFinal("the proof is not base64"))?;
        if proof.len() != self.mechanism.key_len() {
            return Err(ScramError::InvalidProof);
        }
        let auth_message = format!("{auth_message_prefix},{}", final_message.without_proof);
        let m = self.mechanism;
        // ClientKey = ClientProof XOR ClientSignature; its hash must be the
        // StoredKey.
        let client_signature = m.hmac_of(&credential.stored_key, auth_message.as_bytes());
        let client_key: Vec<u8> = proof
            .iter()
            .zip(&client_signature)
            .map(|(p, s)| p ^ s)
            .collect();
        if !constant_time_eq(&m.hash_of(&client_key), &credential.stored_key) {
            return Err(ScramError::InvalidProof);
        }
        let server_signature = m.hmac_of(&credential.server_key, auth_message.as_bytes());
        self.state = State::Complete;
        Ok(format!("v={}", STANDARD.encode(server_signature)).into_bytes())
    }

    fn fail(&mut self, error: ScramError) -> Result<ClientFirst, ScramError> {
        self.state = State::Failed;
        Err(error)
    }

    fn fail_unexpected(&mut self) -> ScramError {
        let state = self.state.name();
        self.state = State::Failed;
        ScramError::UnexpectedMessage { state }
    }
}

/// RFC 5802's `printable`: %x21-2B / %x2D-7E, and at least one.
fn is_printable(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',')
}

fn utf8(message: &[u8]) -> Result<&str, ScramError> {
    if message.len() > SASL_MESSAGE_BYTES_MAX {
        return Err(ScramError::MessageTooLarge { len: message.len() });
    }
    std::str::from_utf8(message).map_err(|_| ScramError::NotUtf8)
}

/// Parses `,name=value` extensions (RFC 5802's `attr-val`, with Kafka's
/// `[A-Za-z]+` names and values of any character but `,` and NUL).
fn parse_extensions<'a>(
    attributes: impl Iterator<Item = &'a str>,
    invalid: fn(&'static str) -> ScramError,
) -> Result<Vec<(String, String)>, ScramError> {
    let mut extensions = Vec::new();
    for attribute in attributes {
        let (name, value) = attribute
            .split_once('=')
            .ok_or(invalid("an extension has no '='"))?;
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(invalid("an extension's name is not letters"));
        }
        if value.is_empty() || value.contains('\0') {
            return Err(invalid("an extension's value is empty or has NUL"));
        }
        if extensions.len() == SASL_EXTENSIONS_MAX {
            return Err(invalid("too many extensions"));
        }
        extensions.push((name.to_string(), value.to_string()));
    }
    Ok(extensions)
}

/// The parsed client-first, its gs2 header and its bare part.
fn parse_client_first(message: &[u8]) -> Result<(ClientFirst, String, String), ScramError> {
    let text = utf8(message)?;
    let invalid = ScramError::InvalidClientFirst;
    // gs2-header = gs2-cbind-flag "," [ authzid ] ","
    let (flag, rest) = text.split_once(',').ok_or(invalid("no gs2 header"))?;
    match flag {
        "n" => {}
        "y" => return Err(ScramError::ChannelBindingUnsupported { flag: "y" }),
        f if f.starts_with("p=") => {
            return Err(ScramError::ChannelBindingUnsupported { flag: "p" })
        }
        _ => return Err(invalid("the gs2 channel binding flag is not 'n'")),
    }
    let (authzid, bare) = rest
        .split_once(',')
        .ok_or(invalid("the gs2 header has no second ','"))?;
    let authorization_id = match authzid {
        "" => None,
        a => Some(
            a.strip_prefix("a=")
                .and_then(unescape_saslname)
                .ok_or(invalid("the gs2 authzid is not a=saslname"))?,
        ),
    };
    let gs2_header = text[..text.len() - bare.len()].to_string();
    let mut attributes = bare.split(',');
    let mut username_attribute = attributes.next().unwrap_or_default();
    if username_attribute.starts_with("m=") {
        return Err(ScramError::ReservedMext);
    }
    username_attribute = username_attribute
        .strip_prefix("n=")
        .ok_or(invalid("no n=username"))?;
    let username = unescape_saslname(username_attribute).ok_or(ScramError::InvalidUsername)?;
    let client_nonce = attributes
        .next()
        .and_then(|r| r.strip_prefix("r="))
        .filter(|r| is_printable(r))
        .ok_or(invalid("no r=nonce of printable characters"))?;
    let extensions = parse_extensions(attributes, invalid)?;
    let token_auth = extensions
        .iter()
        .rev()
        .find(|(name, _)| name == TOKEN_AUTH_EXTENSION)
        .is_some_and(|(_, value)| value.eq_ignore_ascii_case("true"));
    let first = ClientFirst {
        username,
        authorization_id,
        client_nonce: client_nonce.to_string(),
        token_auth,
        extensions,
    };
    Ok((first, gs2_header, bare.to_string()))
}

struct ClientFinal<'a> {
    channel_binding: &'a str,
    nonce: &'a str,
    without_proof: &'a str,
    proof: &'a str,
}

/// `c=cbind,r=nonce[,ext]*,p=proof`: the proof is always last.
/// Whether the client-final message's nonce is the one the server sent
/// (RFC 5802: client nonce then server nonce), as Kafka 4 checks it. Also
/// accepted: the client nonce once more in front of it, which librdkafka
/// before 2.6.1 sends (its issue #4895; Debian's and Ubuntu's kcat ship
/// such versions). The server's nonce, what defeats a replay, is checked
/// whole either way.
fn nonce_matches(sent: &str, combined: &str, client_nonce: &str) -> bool {
    sent == combined || sent.strip_prefix(client_nonce) == Some(combined)
}

fn parse_client_final(message: &[u8]) -> Result<ClientFinal<'_>, ScramError> {
    let text = utf8(message)?;
    let invalid = ScramError::InvalidClientFinal;
    let (without_proof, proof) = text.rsplit_once(",p=").ok_or(invalid("no p=proof last"))?;
    let mut attributes = without_proof.split(',');
    let channel_binding = attributes
        .next()
        .and_then(|c| c.strip_prefix("c="))
        .ok_or(invalid("no c=channel-binding first"))?;
    let nonce = attributes
        .next()
        .and_then(|r| r.strip_prefix("r="))
        .filter(|r| is_printable(r))
        .ok_or(invalid("no r=nonce second"))?;
    parse_extensions(attributes, invalid)?;
    Ok(ClientFinal {
        channel_binding,
        nonce,
        without_proof,
        proof,
    })
}

/// Why a SCRAM exchange failed. The texts are Kafka's where Kafka has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScramError {
    /// The shell's nonce is not printable ASCII without `,`: a bug.
    InvalidServerNonce,
    MessageTooLarge {
        len: usize,
    },
    NotUtf8,
    InvalidClientFirst(&'static str),
    InvalidClientFinal(&'static str),
    /// gs2 flag `y` or `p`: pinlog, like Kafka, offers no channel binding.
    ChannelBindingUnsupported {
        flag: &'static str,
    },
    /// The reserved `m=` attribute, which RFC 5802 says must fail.
    ReservedMext,
    /// A saslname with an `=` that is not `=2C` or `=3D`.
    InvalidUsername,
    /// The caller found no credential (or no delegation token).
    UnknownUser,
    AuthorizationIdMismatch,
    TooFewIterations {
        iterations: u32,
    },
    /// A credential whose keys do not fit the mechanism, or with no salt.
    CorruptCredential,
    ChannelBindingMismatch,
    NonceMismatch,
    InvalidProof,
    /// A message after the exchange finished or failed, or a call out of
    /// order.
    UnexpectedMessage {
        state: &'static str,
    },
}

impl ScramError {
    /// Whether Kafka sends this text to the client (a
    /// `SaslAuthenticationException`); otherwise the client gets
    /// [`generic_failure_message`](super::generic_failure_message).
    pub fn is_client_visible(&self) -> bool {
        matches!(self, ScramError::AuthorizationIdMismatch)
    }
}

impl fmt::Display for ScramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScramError::InvalidServerNonce => {
                f.write_str("The server nonce is not printable ASCII without ','")
            }
            ScramError::MessageTooLarge { len } => write!(
                f,
                "SCRAM message of {len} bytes exceeds {SASL_MESSAGE_BYTES_MAX}"
            ),
            ScramError::NotUtf8 => f.write_str("SCRAM message is not UTF-8"),
            ScramError::InvalidClientFirst(why) => {
                write!(f, "Invalid SCRAM client first message format: {why}")
            }
            ScramError::InvalidClientFinal(why) => {
                write!(f, "Invalid SCRAM client final message format: {why}")
            }
            ScramError::ChannelBindingUnsupported { flag } => write!(
                f,
                "Invalid SCRAM client first message format: channel binding flag '{flag}' is not supported, only 'n'"
            ),
            ScramError::ReservedMext => f.write_str(
                "Invalid SCRAM client first message format: the reserved m= attribute is not supported",
            ),
            ScramError::InvalidUsername => f.write_str("Invalid username"),
            ScramError::UnknownUser => f.write_str("Authentication failed: Invalid user credentials"),
            ScramError::AuthorizationIdMismatch => f.write_str(
                "Authentication failed: Client requested an authorization id that is different from username",
            ),
            ScramError::TooFewIterations { iterations } => write!(
                f,
                "Iterations {iterations} is less than the minimum {MIN_ITERATIONS}"
            ),
            ScramError::CorruptCredential => {
                f.write_str("Authentication failed: Credentials could not be obtained")
            }
            ScramError::ChannelBindingMismatch => f.write_str(
                "Invalid channel binding in the final client message: it must be the gs2 header",
            ),
            ScramError::NonceMismatch => {
                f.write_str("Invalid client nonce in the final client message.")
            }
            ScramError::InvalidProof => f.write_str("Invalid client credentials"),
            ScramError::UnexpectedMessage { state } => {
                write!(f, "Unexpected challenge in Sasl server state {state}")
            }
        }
    }
}

impl std::error::Error for ScramError {}

#[cfg(test)]
mod nonce_tests {
    use super::nonce_matches;

    #[test]
    fn the_nonce_is_the_servers_whole_or_old_librdkafkas_doubled_one() {
        assert!(nonce_matches("CCSS", "CCSS", "CC"));
        assert!(nonce_matches("CCCCSS", "CCSS", "CC"));
        assert!(!nonce_matches("CCSX", "CCSS", "CC"));
        assert!(!nonce_matches("XXCCSS", "CCSS", "CC"));
        assert!(!nonce_matches("CC", "CCSS", "CC"));
        assert!(!nonce_matches("CCCCCCSS", "CCSS", "CC"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // RFC 7677 section 3.
    const RFC_CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
    const RFC_SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    const RFC_SALT_B64: &str = "W22ZaJ0SNY7soEsUEjb6gQ==";
    const RFC_SERVER_FIRST: &str =
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    const RFC_CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const RFC_SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    fn rfc_credential() -> ScramCredential {
        let salt = STANDARD.decode(RFC_SALT_B64).unwrap();
        ScramCredential::from_password(ScramMechanism::Sha256, "pencil", &salt, 4096).unwrap()
    }

    /// A server that has answered the RFC's client-first.
    fn rfc_server_after_first() -> ScramServer {
        let mut server =
            ScramServer::new(ScramMechanism::Sha256, RFC_SERVER_NONCE.as_bytes()).unwrap();
        server.client_first(RFC_CLIENT_FIRST.as_bytes()).unwrap();
        server.server_first(Some(&rfc_credential())).unwrap();
        server
    }

    /// The client side, written from RFC 5802 section 3, to drive the
    /// server where no published vector exists.
    struct TestClient {
        mechanism: ScramMechanism,
        password: &'static str,
        gs2_header: String,
        bare: String,
        nonce: &'static str,
    }

    impl TestClient {
        fn new(mechanism: ScramMechanism, user: &str, password: &'static str) -> TestClient {
            let nonce = "fyko+d2lbbFgONRv9qkxdawL";
            TestClient {
                mechanism,
                password,
                gs2_header: "n,,".to_string(),
                bare: format!("n={},r={nonce}", escape_saslname(user)),
                nonce,
            }
        }

        fn first(&self) -> String {
            format!("{}{}", self.gs2_header, self.bare)
        }

        /// The client-final for this server-first, and the server-final
        /// the client expects back.
        fn finish(&self, server_first: &str) -> (String, String) {
            let mut combined = "";
            let mut salt = Vec::new();
            let mut iterations = 0;
            for attribute in server_first.split(',') {
                let (k, v) = attribute.split_once('=').unwrap();
                match k {
                    "r" => combined = v,
                    "s" => salt = STANDARD.decode(v).unwrap(),
                    "i" => iterations = v.parse().unwrap(),
                    _ => panic!("unexpected attribute {k}"),
                }
            }
            assert!(combined.starts_with(self.nonce));
            let m = self.mechanism;
            let salted = m.salted_password(self.password, &salt, iterations).unwrap();
            let client_key = m.hmac_of(&salted, b"Client Key");
            let stored_key = m.hash_of(&client_key);
            let without_proof = format!(
                "c={},r={combined}",
                STANDARD.encode(self.gs2_header.as_bytes())
            );
            let auth = format!("{},{server_first},{without_proof}", self.bare);
            let signature = m.hmac_of(&stored_key, auth.as_bytes());
            let proof: Vec<u8> = client_key
                .iter()
                .zip(&signature)
                .map(|(a, b)| a ^ b)
                .collect();
            let server_key = m.hmac_of(&salted, b"Server Key");
            let verifier = m.hmac_of(&server_key, auth.as_bytes());
            (
                format!("{without_proof},p={}", STANDARD.encode(proof)),
                format!("v={}", STANDARD.encode(verifier)),
            )
        }
    }

    #[test]
    fn rfc7677_vector_gives_the_exact_server_messages() {
        let mut server =
            ScramServer::new(ScramMechanism::Sha256, RFC_SERVER_NONCE.as_bytes()).unwrap();
        let first = server.client_first(RFC_CLIENT_FIRST.as_bytes()).unwrap();
        assert_eq!(
            first,
            ClientFirst {
                username: "user".into(),
                authorization_id: None,
                client_nonce: "rOprNGfwEbeRWgbNEkqO".into(),
                token_auth: false,
                extensions: vec![],
            }
        );
        let server_first = server.server_first(Some(&rfc_credential())).unwrap();
        assert_eq!(String::from_utf8(server_first).unwrap(), RFC_SERVER_FIRST);
        assert!(!server.is_complete());
        let server_final = server.client_final(RFC_CLIENT_FINAL.as_bytes()).unwrap();
        assert_eq!(String::from_utf8(server_final).unwrap(), RFC_SERVER_FINAL);
        assert!(server.is_complete());
    }

    #[test]
    fn the_test_client_reproduces_the_rfc_vector() {
        // Checks the test client itself before it checks SHA-512.
        let mut client = TestClient::new(ScramMechanism::Sha256, "user", "pencil");
        client.bare = "n=user,r=rOprNGfwEbeRWgbNEkqO".into();
        client.nonce = "rOprNGfwEbeRWgbNEkqO";
        let (client_final, server_final) = client.finish(RFC_SERVER_FIRST);
        assert_eq!(client_final, RFC_CLIENT_FINAL);
        assert_eq!(server_final, RFC_SERVER_FINAL);
    }

    fn round_trip(
        mechanism: ScramMechanism,
        user: &str,
        password: &'static str,
        stored_password: &str,
    ) -> Result<(), ScramError> {
        let credential =
            ScramCredential::from_password(mechanism, stored_password, b"some salt", 4096).unwrap();
        let client = TestClient::new(mechanism, user, password);
        let nonce = printable_nonce(&[7u8; SERVER_NONCE_RANDOM_BYTES]);
        let mut server = ScramServer::new(mechanism, nonce.as_bytes()).unwrap();
        let first = server.client_first(client.first().as_bytes())?;
        assert_eq!(first.username, user);
        let server_first = server.server_first(Some(&credential))?;
        let (client_final, expected) = client.finish(std::str::from_utf8(&server_first).unwrap());
        let server_final = server.client_final(client_final.as_bytes())?;
        assert_eq!(String::from_utf8(server_final).unwrap(), expected);
        assert!(server.is_complete());
        Ok(())
    }

    #[test]
    fn sha512_round_trip_with_the_test_client() {
        round_trip(
            ScramMechanism::Sha512,
            "alice",
            "alice-secret",
            "alice-secret",
        )
        .unwrap();
        round_trip(
            ScramMechanism::Sha256,
            "alice",
            "alice-secret",
            "alice-secret",
        )
        .unwrap();
    }

    #[test]
    fn wrong_password_fails_the_proof_and_the_exchange() {
        for m in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            assert_eq!(
                round_trip(m, "alice", "wrong", "alice-secret"),
                Err(ScramError::InvalidProof)
            );
        }
        let mut server = rfc_server_after_first();
        let tampered = RFC_CLIENT_FINAL.replace("p=dHzb", "p=dHzc");
        assert_eq!(
            server.client_final(tampered.as_bytes()),
            Err(ScramError::InvalidProof)
        );
        assert!(!server.is_complete());
        // A failed exchange stays failed, even for the right proof.
        assert_eq!(
            server.client_final(RFC_CLIENT_FINAL.as_bytes()),
            Err(ScramError::UnexpectedMessage { state: "FAILED" })
        );
        assert!(!ScramError::InvalidProof.is_client_visible());
    }

    #[test]
    fn a_short_or_long_proof_is_an_invalid_proof() {
        for proof in ["AAAA", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="] {
            let mut server = rfc_server_after_first();
            let message = format!(
                "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p={proof}"
            );
            assert_eq!(
                server.client_final(message.as_bytes()),
                Err(ScramError::InvalidProof)
            );
        }
    }

    #[test]
    fn wrong_nonce_is_refused() {
        let mut server = rfc_server_after_first();
        let other = RFC_CLIENT_FINAL.replace("$k0,", "$k1,");
        assert_eq!(
            server.client_final(other.as_bytes()),
            Err(ScramError::NonceMismatch)
        );
        // The client's nonce alone, without the server's, is refused too.
        let mut server = rfc_server_after_first();
        let short = RFC_CLIENT_FINAL.replace("%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", "");
        assert_eq!(
            server.client_final(short.as_bytes()),
            Err(ScramError::NonceMismatch)
        );
    }

    #[test]
    fn replay_against_a_new_server_nonce_is_refused() {
        let mut server = ScramServer::new(ScramMechanism::Sha256, b"another-nonce").unwrap();
        server.client_first(RFC_CLIENT_FIRST.as_bytes()).unwrap();
        server.server_first(Some(&rfc_credential())).unwrap();
        assert_eq!(
            server.client_final(RFC_CLIENT_FINAL.as_bytes()),
            Err(ScramError::NonceMismatch)
        );
    }

    #[test]
    fn messages_out_of_order_fail() {
        let mut server = rfc_server_after_first();
        server.client_final(RFC_CLIENT_FINAL.as_bytes()).unwrap();
        // A replayed final after success.
        assert_eq!(
            server.client_final(RFC_CLIENT_FINAL.as_bytes()),
            Err(ScramError::UnexpectedMessage { state: "COMPLETE" })
        );
        assert!(!server.is_complete());
        // A final before the first; a second first; server_first twice.
        let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
        assert_eq!(
            server.client_final(RFC_CLIENT_FINAL.as_bytes()),
            Err(ScramError::UnexpectedMessage {
                state: "RECEIVE_CLIENT_FIRST_MESSAGE"
            })
        );
        let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
        server.client_first(RFC_CLIENT_FIRST.as_bytes()).unwrap();
        assert_eq!(
            server.client_first(RFC_CLIENT_FIRST.as_bytes()),
            Err(ScramError::UnexpectedMessage {
                state: "AWAIT_CREDENTIAL"
            })
        );
        let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
        assert_eq!(
            server.server_first(Some(&rfc_credential())),
            Err(ScramError::UnexpectedMessage {
                state: "RECEIVE_CLIENT_FIRST_MESSAGE"
            })
        );
    }

    #[test]
    fn tampered_channel_binding_is_refused() {
        // y,, (eSws), the empty string, and not base64 at all.
        for binding in ["eSws", "", "biws!", "cCx0bHMtdW5pcXVlLCw="] {
            let mut server = rfc_server_after_first();
            let message = RFC_CLIENT_FINAL.replace("c=biws", &format!("c={binding}"));
            assert_eq!(
                server.client_final(message.as_bytes()),
                Err(ScramError::ChannelBindingMismatch),
                "{binding}"
            );
        }
    }

    #[test]
    fn channel_binding_flags_other_than_n_are_refused() {
        for (message, flag) in [
            ("y,,n=user,r=abc", "y"),
            ("p=tls-unique,,n=user,r=abc", "p"),
        ] {
            let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
            assert_eq!(
                server.client_first(message.as_bytes()),
                Err(ScramError::ChannelBindingUnsupported { flag })
            );
        }
    }

    #[test]
    fn garbled_client_first_messages_are_refused() {
        let cases: &[(&[u8], ScramError)] = &[
            (b"", ScramError::InvalidClientFirst("no gs2 header")),
            (b"n", ScramError::InvalidClientFirst("no gs2 header")),
            (
                b"n,",
                ScramError::InvalidClientFirst("the gs2 header has no second ','"),
            ),
            (
                b"x,,n=user,r=abc",
                ScramError::InvalidClientFirst("the gs2 channel binding flag is not 'n'"),
            ),
            (
                b"n,user,n=user,r=abc",
                ScramError::InvalidClientFirst("the gs2 authzid is not a=saslname"),
            ),
            (b"n,,m=ext,n=user,r=abc", ScramError::ReservedMext),
            (
                b"n,,r=abc,n=user",
                ScramError::InvalidClientFirst("no n=username"),
            ),
            (
                b"n,,n=user",
                ScramError::InvalidClientFirst("no r=nonce of printable characters"),
            ),
            (
                b"n,,n=user,r=",
                ScramError::InvalidClientFirst("no r=nonce of printable characters"),
            ),
            (
                b"n,,n=user,r=a b",
                ScramError::InvalidClientFirst("no r=nonce of printable characters"),
            ),
            (b"n,,n=,r=abc", ScramError::InvalidUsername),
            (b"n,,n=us=er,r=abc", ScramError::InvalidUsername),
            (b"n,,n=user=2,r=abc", ScramError::InvalidUsername),
            (
                b"n,,n=user,r=abc,",
                ScramError::InvalidClientFirst("an extension has no '='"),
            ),
            (
                b"n,,n=user,r=abc,t0ken=x",
                ScramError::InvalidClientFirst("an extension's name is not letters"),
            ),
            (
                b"n,,n=user,r=abc,tokenauth=",
                ScramError::InvalidClientFirst("an extension's value is empty or has NUL"),
            ),
            (b"n,,n=us\xffer,r=abc", ScramError::NotUtf8),
        ];
        for (message, expected) in cases {
            let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
            assert_eq!(
                server.client_first(message).as_ref(),
                Err(expected),
                "{}",
                String::from_utf8_lossy(message)
            );
            assert!(!server.is_complete());
        }
        let huge = vec![b'a'; SASL_MESSAGE_BYTES_MAX + 1];
        let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
        assert_eq!(
            server.client_first(&huge),
            Err(ScramError::MessageTooLarge { len: huge.len() })
        );
    }

    #[test]
    fn garbled_client_final_messages_are_refused() {
        let nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let cases = [
            (String::new(), "no p=proof last"),
            (
                format!("r={nonce},c=biws,p=AAAA"),
                "no c=channel-binding first",
            ),
            ("c=biws,p=AAAA".to_string(), "no r=nonce second"),
            ("c=biws,x=1,p=AAAA".to_string(), "no r=nonce second"),
            (
                format!("c=biws,r={nonce},1=2,p=AAAA"),
                "an extension's name is not letters",
            ),
            (
                format!("c=biws,r={nonce},p=!!!!"),
                "the proof is not base64",
            ),
        ];
        for (message, why) in cases {
            let mut server = rfc_server_after_first();
            assert_eq!(
                server.client_final(message.as_bytes()),
                Err(ScramError::InvalidClientFinal(why)),
                "{message}"
            );
        }
    }

    #[test]
    fn client_final_extensions_are_covered_by_the_proof() {
        // An extension the client did not sign (added by a man in the
        // middle) changes the AuthMessage, so the proof fails.
        let mut server = rfc_server_after_first();
        let with_extension = RFC_CLIENT_FINAL.replace(",p=", ",foo=bar,p=");
        assert_eq!(
            server.client_final(with_extension.as_bytes()),
            Err(ScramError::InvalidProof)
        );
    }

    #[test]
    fn saslname_escaping() {
        assert_eq!(escape_saslname("a,b=c"), "a=2Cb=3Dc");
        assert_eq!(unescape_saslname("a=2Cb=3Dc").as_deref(), Some("a,b=c"));
        assert_eq!(unescape_saslname("=3D=2C").as_deref(), Some("=,"));
        assert_eq!(unescape_saslname("plain").as_deref(), Some("plain"));
        for bad in ["", "a=", "a=2", "a=2c", "a=3d", "a=41", "a,b", "a\0b", "=="] {
            assert_eq!(unescape_saslname(bad), None, "{bad}");
        }
        for name in ["user", "a,b", "x=y", "=,=,", "ünïcødé"] {
            assert_eq!(
                unescape_saslname(&escape_saslname(name)).as_deref(),
                Some(name)
            );
        }
        // A username with both characters authenticates end to end.
        round_trip(ScramMechanism::Sha256, "team,a=b", "pw", "pw").unwrap();
    }

    #[test]
    fn unknown_user_fails_at_server_first_with_the_generic_error() {
        let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
        server.client_first(b"n,,n=nobody,r=abc").unwrap();
        let err = server.server_first(None).unwrap_err();
        assert_eq!(err, ScramError::UnknownUser);
        assert!(!err.is_client_visible());
        assert_eq!(
            err.to_string(),
            "Authentication failed: Invalid user credentials"
        );
        assert_eq!(
            server.client_final(RFC_CLIENT_FINAL.as_bytes()),
            Err(ScramError::UnexpectedMessage { state: "FAILED" })
        );
    }

    #[test]
    fn authzid_must_be_the_username() {
        let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
        let first = server.client_first(b"n,a=admin,n=user,r=abc").unwrap();
        assert_eq!(first.authorization_id.as_deref(), Some("admin"));
        let err = server.server_first(Some(&rfc_credential())).unwrap_err();
        assert_eq!(err, ScramError::AuthorizationIdMismatch);
        assert!(err.is_client_visible());
        // For an unknown user the mismatch is not revealed.
        let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
        server.client_first(b"n,a=admin,n=nobody,r=abc").unwrap();
        assert_eq!(server.server_first(None), Err(ScramError::UnknownUser));
        // The same name, escaped, is fine; so is the RFC exchange under it,
        // whose c= is then the base64 of "n,a=user,".
        let mut server =
            ScramServer::new(ScramMechanism::Sha256, RFC_SERVER_NONCE.as_bytes()).unwrap();
        server
            .client_first(b"n,a=user,n=user,r=rOprNGfwEbeRWgbNEkqO")
            .unwrap();
        server.server_first(Some(&rfc_credential())).unwrap();
        // The RFC's c=biws no longer matches the gs2 header.
        assert_eq!(
            server.client_final(RFC_CLIENT_FINAL.as_bytes()),
            Err(ScramError::ChannelBindingMismatch)
        );
    }

    #[test]
    fn authzid_exchange_with_the_test_client() {
        let credential =
            ScramCredential::from_password(ScramMechanism::Sha512, "pw", b"salt", 4096).unwrap();
        let mut client = TestClient::new(ScramMechanism::Sha512, "a,b", "pw");
        client.gs2_header = "n,a=a=2Cb,".into();
        let mut server = ScramServer::new(ScramMechanism::Sha512, b"srv").unwrap();
        let first = server.client_first(client.first().as_bytes()).unwrap();
        assert_eq!(first.authorization_id.as_deref(), Some("a,b"));
        let server_first = server.server_first(Some(&credential)).unwrap();
        let (client_final, expected) = client.finish(std::str::from_utf8(&server_first).unwrap());
        assert_eq!(
            server.client_final(client_final.as_bytes()).unwrap(),
            expected.into_bytes()
        );
    }

    #[test]
    fn token_auth_and_other_extensions_are_surfaced() {
        let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
        let first = server
            .client_first(b"n,,n=tokenid,r=abc,tokenauth=TRUE,other=x y")
            .unwrap();
        assert!(first.token_auth);
        assert_eq!(
            first.extensions,
            vec![
                ("tokenauth".to_string(), "TRUE".to_string()),
                ("other".to_string(), "x y".to_string())
            ]
        );
        let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
        let first = server
            .client_first(b"n,,n=u,r=abc,tokenauth=false")
            .unwrap();
        assert!(!first.token_auth);
        let many: String = (0..=SASL_EXTENSIONS_MAX).map(|_| ",x=1").collect();
        let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
        assert_eq!(
            server.client_first(format!("n,,n=u,r=abc{many}").as_bytes()),
            Err(ScramError::InvalidClientFirst("too many extensions"))
        );
    }

    #[test]
    fn a_weak_or_mismatched_stored_credential_is_refused() {
        let mut weak = rfc_credential();
        weak.iterations = MIN_ITERATIONS - 1;
        let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
        server.client_first(RFC_CLIENT_FIRST.as_bytes()).unwrap();
        assert_eq!(
            server.server_first(Some(&weak)),
            Err(ScramError::TooFewIterations {
                iterations: MIN_ITERATIONS - 1
            })
        );
        // A SHA-256 credential offered to a SHA-512 exchange.
        let mut server = ScramServer::new(ScramMechanism::Sha512, b"n").unwrap();
        server.client_first(RFC_CLIENT_FIRST.as_bytes()).unwrap();
        assert_eq!(
            server.server_first(Some(&rfc_credential())),
            Err(ScramError::CorruptCredential)
        );
    }

    #[test]
    fn server_nonce_must_be_printable() {
        for bad in [&b""[..], b"a,b", b"a b", b"\xff", b"\x7f"] {
            assert_eq!(
                ScramServer::new(ScramMechanism::Sha256, bad).err(),
                Some(ScramError::InvalidServerNonce)
            );
        }
        let nonce = printable_nonce(&[0xff; SERVER_NONCE_RANDOM_BYTES]);
        assert!(ScramServer::new(ScramMechanism::Sha256, nonce.as_bytes()).is_ok());
    }

    #[test]
    fn every_truncation_of_valid_messages_is_handled() {
        for end in 0..RFC_CLIENT_FIRST.len() {
            let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
            let _ = server.client_first(&RFC_CLIENT_FIRST.as_bytes()[..end]);
        }
        for end in 0..RFC_CLIENT_FINAL.len() {
            let mut server = rfc_server_after_first();
            assert!(server
                .client_final(&RFC_CLIENT_FINAL.as_bytes()[..end])
                .is_err());
        }
    }

    proptest! {
        #[test]
        fn client_messages_never_panic(first in proptest::collection::vec(any::<u8>(), 0..64),
                                       last in proptest::collection::vec(any::<u8>(), 0..128)) {
            let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
            let _ = server.client_first(&first);
            let mut server = rfc_server_after_first();
            prop_assert!(server.client_final(&last).is_err());
        }

        #[test]
        fn structured_client_first_never_panics(text in "[nya-z=,0-9 ]{0,40}") {
            let mut server = ScramServer::new(ScramMechanism::Sha256, b"n").unwrap();
            let _ = server.client_first(text.as_bytes());
        }
    }
}
