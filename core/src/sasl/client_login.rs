//! A client's side of a SASL login with a username and password (PLAIN or
//! SCRAM), as a sequence of messages: what a broker sends to another
//! broker's SASL listener and what pinlog's commands send. The caller
//! carries the messages in SaslAuthenticate requests; the nonce is the
//! caller's.

use super::scram_client::{ScramClient, ScramClientError};
use super::scram_credential::ScramMechanism;
use super::Mechanism;

/// SaslAuthenticate rounds of one login: PLAIN takes one, SCRAM two.
pub const LOGIN_ROUNDS_MAX: usize = 3;

pub enum ClientLogin {
    Plain {
        username: String,
        password: String,
    },
    Scram {
        client: Box<ScramClient>,
        rounds: usize,
    },
}

impl ClientLogin {
    /// A login with `mechanism`; `None` for one without a password
    /// (OAUTHBEARER).
    pub fn new(mechanism: Mechanism, username: &str, password: &str, nonce: &str) -> Option<Self> {
        match ScramMechanism::from_mechanism(mechanism) {
            Some(m) => Some(ClientLogin::Scram {
                client: Box::new(ScramClient::new(m, username, password, nonce)),
                rounds: 0,
            }),
            None if mechanism == Mechanism::Plain => Some(ClientLogin::Plain {
                username: username.to_string(),
                password: password.to_string(),
            }),
            None => None,
        }
    }

    /// The first message.
    pub fn first(&self) -> Vec<u8> {
        match self {
            ClientLogin::Plain { username, password } => {
                format!("\0{username}\0{password}").into_bytes()
            }
            ClientLogin::Scram { client, .. } => client.client_first(),
        }
    }

    /// The server's answer to the last message: the next message to send,
    /// or `None` when the login is done (for SCRAM, once the server has
    /// proved it knows the credential).
    pub fn answer(&mut self, server: &[u8]) -> Result<Option<Vec<u8>>, ScramClientError> {
        match self {
            ClientLogin::Plain { .. } => Ok(None),
            ClientLogin::Scram { client, rounds } => {
                *rounds += 1;
                if *rounds == 1 {
                    client.client_final(server).map(Some)
                } else {
                    client.verify_server_final(server).map(|()| None)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sasl::plain::{authenticate, PlainUsers};
    use crate::sasl::scram::ScramServer;
    use crate::sasl::scram_credential::ScramCredential;

    #[test]
    fn plain_is_one_message() {
        let mut login = ClientLogin::new(Mechanism::Plain, "admin", "secret", "n").unwrap();
        let users = PlainUsers::new([("admin".to_string(), "secret".to_string())]);
        assert_eq!(authenticate(&login.first(), &users).unwrap(), "admin");
        assert_eq!(login.answer(b"").unwrap(), None);
        assert!(ClientLogin::new(Mechanism::OAuthBearer, "a", "b", "n").is_none());
    }

    #[test]
    fn scram_is_two_rounds_and_checks_the_server() {
        let m = ScramMechanism::Sha512;
        let credential = ScramCredential::from_password(m, "pw", b"0123456789ab", 4096).unwrap();
        let mut login = ClientLogin::new(Mechanism::ScramSha512, "u", "pw", "cnonce").unwrap();
        let mut server = ScramServer::new(m, b"snonce").unwrap();
        server.client_first(&login.first()).unwrap();
        let server_first = server.server_first(Some(&credential)).unwrap();
        let last = login.answer(&server_first).unwrap().unwrap();
        let server_final = server.client_final(&last).unwrap();
        assert_eq!(login.answer(&server_final).unwrap(), None);
    }
}
