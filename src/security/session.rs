//! What a connection knows of its peer once it is set up: the listener it
//! came in on, the peer's address, and who the peer is (its principal).
//! Handlers read it: Metadata answers with the listener's endpoints, group
//! membership reports the host, authorization asks the principal, and
//! share sessions are bound to the connection.

use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

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
    /// This connection's number, unique in the process; 0 for internal
    /// callers, which have no connection to close.
    pub connection_id: u64,
}

/// The last connection number given out.
static LAST_CONNECTION_ID: AtomicU64 = AtomicU64::new(0);

/// A number for a new connection, never 0 and never given twice.
pub fn next_connection_id() -> u64 {
    LAST_CONNECTION_ID.fetch_add(1, Ordering::Relaxed) + 1
}

impl Session {
    /// A session for tests and internal callers: PLAINTEXT, anonymous.
    pub fn plaintext(peer_host: &str) -> Session {
        Session {
            listener: crate::broker_config::listeners::DEFAULT_LISTENER_NAME.into(),
            protocol: SecurityProtocol::Plaintext,
            peer_host: peer_host.into(),
            principal: ANONYMOUS_PRINCIPAL.into(),
            connection_id: 0,
        }
    }
}
