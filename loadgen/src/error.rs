//! The load generator's error: what failed, against which broker, and why.

use std::fmt;
use std::io;

use pinlog::protocol::codec::DecodeError;

#[derive(Debug)]
pub enum Error {
    /// A socket operation failed (including timeouts and a closed peer).
    Io {
        op: String,
        addr: String,
        source: io::Error,
    },
    /// The broker sent something we could not decode or did not expect.
    Protocol { addr: String, detail: String },
    /// The broker answered with an error code.
    Broker {
        addr: String,
        what: String,
        code: i16,
    },
    /// A bad combination of options, found after parsing.
    Usage(String),
    /// Anything else, with its context.
    Other(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn io(op: impl Into<String>, addr: &str, source: io::Error) -> Error {
        Error::Io {
            op: op.into(),
            addr: addr.to_string(),
            source,
        }
    }

    pub fn decode(addr: &str, what: &str, e: DecodeError) -> Error {
        Error::Protocol {
            addr: addr.to_string(),
            detail: format!("cannot decode {what}: {e}"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { op, addr, source } => {
                let why = match source.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                        "timed out (the broker stopped answering)".to_string()
                    }
                    io::ErrorKind::UnexpectedEof => "the broker closed the connection".to_string(),
                    io::ErrorKind::ConnectionRefused => {
                        "connection refused (is the broker running?)".to_string()
                    }
                    io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => {
                        format!("the broker dropped the connection ({source})")
                    }
                    _ => source.to_string(),
                };
                write!(f, "{op} {addr}: {why}")
            }
            Error::Protocol { addr, detail } => write!(f, "protocol error from {addr}: {detail}"),
            Error::Broker { addr, what, code } => {
                write!(
                    f,
                    "{what} failed on {addr}: Kafka error {code} ({})",
                    error_name(*code)
                )
            }
            Error::Usage(m) | Error::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

/// Kafka's name for the error codes a load generator is likely to see.
pub fn error_name(code: i16) -> &'static str {
    use pinlog::protocol::error_code as e;
    match code {
        e::NONE => "NONE",
        e::UNKNOWN_SERVER_ERROR => "UNKNOWN_SERVER_ERROR",
        e::OFFSET_OUT_OF_RANGE => "OFFSET_OUT_OF_RANGE",
        e::CORRUPT_MESSAGE => "CORRUPT_MESSAGE",
        e::UNKNOWN_TOPIC_OR_PARTITION => "UNKNOWN_TOPIC_OR_PARTITION",
        e::LEADER_NOT_AVAILABLE => "LEADER_NOT_AVAILABLE",
        e::NOT_LEADER_OR_FOLLOWER => "NOT_LEADER_OR_FOLLOWER",
        e::REQUEST_TIMED_OUT => "REQUEST_TIMED_OUT",
        e::MESSAGE_TOO_LARGE => "MESSAGE_TOO_LARGE",
        e::INVALID_TOPIC_EXCEPTION => "INVALID_TOPIC_EXCEPTION",
        e::RECORD_LIST_TOO_LARGE => "RECORD_LIST_TOO_LARGE",
        e::NOT_ENOUGH_REPLICAS => "NOT_ENOUGH_REPLICAS",
        e::INVALID_REQUIRED_ACKS => "INVALID_REQUIRED_ACKS",
        e::INVALID_TIMESTAMP => "INVALID_TIMESTAMP",
        e::UNSUPPORTED_VERSION => "UNSUPPORTED_VERSION",
        e::TOPIC_ALREADY_EXISTS => "TOPIC_ALREADY_EXISTS",
        e::INVALID_PARTITIONS => "INVALID_PARTITIONS",
        e::INVALID_REPLICATION_FACTOR => "INVALID_REPLICATION_FACTOR",
        e::INVALID_REQUEST => "INVALID_REQUEST",
        e::POLICY_VIOLATION => "POLICY_VIOLATION",
        e::KAFKA_STORAGE_ERROR => "KAFKA_STORAGE_ERROR",
        e::UNSUPPORTED_COMPRESSION_TYPE => "UNSUPPORTED_COMPRESSION_TYPE",
        e::INVALID_RECORD => "INVALID_RECORD",
        _ => "see Kafka's error table",
    }
}
