//! Who a connection's peer is, and how the bytes between them are
//! protected: the connection's session (listener, peer, principal) and
//! the TLS configurations of the listeners, of the broker's connections
//! to other brokers and of the CLI. The network edge
//! (`server/network/`) runs the handshakes and SASL with them; the
//! handlers read the session's principal. The pure decisions (settings,
//! principal mapping, SASL mechanisms, ACLs, quotas) are in pinlog-core.

pub mod controller_channel;
pub mod listener_tls;
pub mod session;
pub mod tls;
pub mod tls_socket;
