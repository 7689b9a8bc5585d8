//! What a connection knows of its peer once it is set up: the listener it
//! came in on, the peer's address, and who the peer is (its principal).
//! Handlers read it: Metadata answers with the listener's endpoints, group
//! membership reports the host, and authorization will ask the principal.

use std::rc::Rc;

use crate::broker_config::listeners::SecurityProtocol;

/// Kafka's principal of a connection that did not authenticate.
pub const ANONYMOUS_PRINCIPAL: &str = "User:ANONYMOUS";

#[derive(Debug, Clone)]
pub struct Session {
    /// The listener's name, upper case (`PLAINTEXT`, `SSL`, ...).
    pub listener: Rc<str>,
    pub protocol: SecurityProtocol,
    /// The peer's IP address.
    pub peer_host: Rc<str>,
    /// `User:<name>`: from the client certificate under mTLS, else
    /// `User:ANONYMOUS`.
    pub principal: Rc<str>,
}

impl Session {
    /// A session for tests and internal callers: PLAINTEXT, anonymous.
    pub fn plaintext(peer_host: &str) -> Session {
        Session {
            listener: crate::broker_config::listeners::DEFAULT_LISTENER_NAME.into(),
            protocol: SecurityProtocol::Plaintext,
            peer_host: peer_host.into(),
            principal: ANONYMOUS_PRINCIPAL.into(),
        }
    }
}
