//! The client side of SCRAM (RFC 5802), which a broker speaks when it
//! logs in to another broker's SASL inter-broker listener. The nonce is
//! the caller's (drawn at random); the password's PBKDF2 runs once per
//! login, on the connection that needs it.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::constant_time_eq;
use super::scram::escape_saslname;
use super::scram_credential::{ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS};

/// `n,,`: no channel binding, no authorization id.
const GS2_HEADER: &str = "n,,";

/// Why a login failed on the client's side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScramClientError {
    /// The server's first message does not parse or does not extend our
    /// nonce: not the server we started with, or not SCRAM.
    InvalidServerFirst(String),
    /// The server asked for an iteration count outside Kafka's bounds.
    Iterations(u32),
    /// The server's signature is wrong: it does not know the credential.
    ServerSignature,
    /// The server answered `e=...`.
    Refused(String),
}

impl std::fmt::Display for ScramClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScramClientError::InvalidServerFirst(why) => {
                write!(f, "invalid SCRAM server-first message: {why}")
            }
            ScramClientError::Iterations(i) => write!(
                f,
                "the server asks for {i} iterations, outside {MIN_ITERATIONS}..={MAX_ITERATIONS}"
            ),
            ScramClientError::ServerSignature => f.write_str(
                "the server's SCRAM signature is wrong: it does not know the credential",
            ),
            ScramClientError::Refused(e) => write!(f, "the server refused the login: {e}"),
        }
    }
}

/// One login.
pub struct ScramClient {
    mechanism: ScramMechanism,
    password: String,
    client_first_bare: String,
    nonce: String,
    /// Set by `client_final`: the server signature to expect.
    expected_server_signature: Option<Vec<u8>>,
}

impl ScramClient {
    /// `nonce` must be printable without `,` (base64 of random bytes is).
    pub fn new(mechanism: ScramMechanism, username: &str, password: &str, nonce: &str) -> Self {
        ScramClient {
            mechanism,
            password: password.to_string(),
            client_first_bare: format!("n={},r={nonce}", escape_saslname(username)),
            nonce: nonce.to_string(),
            expected_server_signature: None,
        }
    }

    pub fn client_first(&self) -> Vec<u8> {
        format!("{GS2_HEADER}{}", self.client_first_bare).into_bytes()
    }

    /// The client-final message for the server-first one.
    pub fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, ScramClientError> {
        let invalid = |why: &str| ScramClientError::InvalidServerFirst(why.to_string());
        let text = std::str::from_utf8(server_first).map_err(|_| invalid("not UTF-8"))?;
        if let Some(e) = text.strip_prefix("e=") {
            return Err(ScramClientError::Refused(e.to_string()));
        }
        let (mut combined, mut salt, mut iterations) = (None, None, None);
        for attribute in text.split(',') {
            match attribute.split_once('=') {
                Some(("r", v)) => combined = Some(v),
                Some(("s", v)) => salt = STANDARD.decode(v).ok(),
                Some(("i", v)) => iterations = v.parse::<u32>().ok(),
                _ => {}
            }
        }
        let combined = combined.ok_or_else(|| invalid("no r= nonce"))?;
        if combined.len() <= self.nonce.len() || !combined.starts_with(&self.nonce) {
            return Err(invalid("the nonce does not extend the client's"));
        }
        let salt = salt.ok_or_else(|| invalid("no s= salt in base64"))?;
        let iterations = iterations.ok_or_else(|| invalid("no i= iteration count"))?;
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(ScramClientError::Iterations(iterations));
        }
        let m = self.mechanism;
        let salted = m
            .salted_password(&self.password, &salt, iterations)
            .map_err(|e| invalid(&e.to_string()))?;
        let client_key = m.hmac_of(&salted, b"Client Key");
        let stored_key = m.hash_of(&client_key);
        let without_proof = format!("c={},r={combined}", STANDARD.encode(GS2_HEADER));
        let auth_message = format!("{},{text},{without_proof}", self.client_first_bare);
        let signature = m.hmac_of(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = m.hmac_of(&salted, b"Server Key");
        self.expected_server_signature = Some(m.hmac_of(&server_key, auth_message.as_bytes()));
        Ok(format!("{without_proof},p={}", STANDARD.encode(proof)).into_bytes())
    }

    /// Checks the server-final message: the server proves it knew the
    /// credential.
    pub fn verify_server_final(&self, server_final: &[u8]) -> Result<(), ScramClientError> {
        let text = String::from_utf8_lossy(server_final);
        if let Some(e) = text.strip_prefix("e=") {
            return Err(ScramClientError::Refused(e.to_string()));
        }
        let signature = text
            .strip_prefix("v=")
            .and_then(|v| STANDARD.decode(v.split(',').next().unwrap_or("")).ok())
            .ok_or(ScramClientError::ServerSignature)?;
        match &self.expected_server_signature {
            Some(expected) if constant_time_eq(&signature, expected) => Ok(()),
            _ => Err(ScramClientError::ServerSignature),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sasl::scram::ScramServer;
    use crate::sasl::scram_credential::ScramCredential;

    #[test]
    fn the_client_logs_in_to_the_server_and_checks_it_back() {
        for m in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            let credential =
                ScramCredential::from_password(m, "broker-secret", b"0123456789abcdef", 4096)
                    .unwrap();
            let mut client = ScramClient::new(m, "broker,1", "broker-secret", "clientnonce");
            let mut server = ScramServer::new(m, b"servernonce").unwrap();
            let first = server.client_first(&client.client_first()).unwrap();
            assert_eq!(first.username, "broker,1");
            let server_first = server.server_first(Some(&credential)).unwrap();
            let client_final = client.client_final(&server_first).unwrap();
            let server_final = server.client_final(&client_final).unwrap();
            client.verify_server_final(&server_final).unwrap();
            assert!(client.verify_server_final(b"v=AAAA").is_err());
        }
    }

    #[test]
    fn a_wrong_password_fails_at_the_server() {
        let m = ScramMechanism::Sha512;
        let credential = ScramCredential::from_password(m, "right", b"salt-salt", 4096).unwrap();
        let mut client = ScramClient::new(m, "u", "wrong", "cn");
        let mut server = ScramServer::new(m, b"sn").unwrap();
        server.client_first(&client.client_first()).unwrap();
        let server_first = server.server_first(Some(&credential)).unwrap();
        let client_final = client.client_final(&server_first).unwrap();
        assert!(server.client_final(&client_final).is_err());
    }

    #[test]
    fn a_server_first_that_does_not_extend_the_nonce_is_refused() {
        let mut client = ScramClient::new(ScramMechanism::Sha256, "u", "p", "abc");
        for bad in [
            &b"r=xyz123,s=c2FsdA==,i=4096"[..],
            b"r=abc,s=c2FsdA==,i=4096",
            b"r=abcd,s=c2FsdA==,i=1",
            b"r=abcd,i=4096",
            b"e=unknown-user",
        ] {
            assert!(client.client_final(bad).is_err(), "{bad:?}");
        }
    }
}
