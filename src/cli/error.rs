//! What can go wrong in an operator command, told so that the operator
//! knows what to do next, and the exit code each kind maps to.

use std::fmt;
use std::io;
use std::time::Duration;

use crate::protocol::error_code;

/// Exit code of a command that did what it was asked.
pub const EXIT_OK: u8 = 0;
/// Exit code when the broker refused or failed the operation, or could not
/// be reached.
pub const EXIT_OPERATION_FAILED: u8 = 1;
/// Exit code for a bad command line (clap uses the same for its own
/// parse errors).
pub const EXIT_USAGE: u8 = 2;

#[derive(Debug)]
pub enum CliError {
    /// A bad combination of arguments found after parsing.
    Usage(String),
    /// No connection could be made to `addr`.
    Unreachable { addr: String, source: io::Error },
    /// A socket operation failed after connecting.
    Io {
        op: String,
        addr: String,
        source: io::Error,
        timeout: Duration,
    },
    /// The broker sent something we could not decode or did not expect.
    Protocol { addr: String, detail: String },
    /// The broker answered with an error code for `what` (a topic, a group,
    /// a partition).
    Broker {
        what: String,
        code: i16,
        message: Option<String>,
    },
    /// Several operations of one command failed; each was already reported.
    Partial { failed: usize, total: usize },
    /// Anything else, with its context.
    Other(String),
    /// An error whose next step the command knows better than the error
    /// code does (a missing user: `pinlog user list`).
    WithHint { error: Box<CliError>, hint: String },
}

pub type CliResult<T> = Result<T, CliError>;

impl CliError {
    pub fn broker(what: impl Into<String>, code: i16, message: Option<String>) -> CliError {
        CliError::Broker {
            what: what.into(),
            code,
            message,
        }
    }

    /// This error with `hint` as its next step.
    pub fn with_hint(self, hint: impl Into<String>) -> CliError {
        CliError::WithHint {
            error: Box::new(self),
            hint: hint.into(),
        }
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => EXIT_USAGE,
            CliError::WithHint { error, .. } => error.exit_code(),
            _ => EXIT_OPERATION_FAILED,
        }
    }

    /// A next step for the operator, when one is known.
    pub fn hint(&self) -> Option<String> {
        match self {
            CliError::WithHint { hint, .. } => Some(hint.clone()),
            CliError::Unreachable { .. } => Some(
                "is the broker running? start it with `pinlog serve`, or pass --bootstrap-server"
                    .into(),
            ),
            CliError::Io { source, .. } if is_timeout(source) => Some(
                "the broker did not answer in time; check that it is healthy, or raise --timeout"
                    .into(),
            ),
            CliError::Broker { code, .. } => hint_for_code(*code).map(str::to_string),
            _ => None,
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) => f.write_str(m),
            CliError::Unreachable { addr, source } => {
                write!(f, "cannot connect to the broker at {addr}: {source}")
            }
            CliError::Io {
                op,
                addr,
                source,
                timeout,
            } => {
                if is_timeout(source) {
                    write!(f, "{op} {addr}: no answer within {timeout:?}")
                } else if source.kind() == io::ErrorKind::UnexpectedEof {
                    write!(f, "{op} {addr}: the broker closed the connection")
                } else {
                    write!(f, "{op} {addr}: {source}")
                }
            }
            CliError::Protocol { addr, detail } => {
                write!(f, "unexpected answer from {addr}: {detail}")
            }
            CliError::Broker {
                what,
                code,
                message,
            } => {
                write!(f, "{what}: {} ({code})", error_name(*code))?;
                if let Some(m) = message.as_deref().filter(|m| !m.is_empty()) {
                    write!(f, ": {m}")?;
                }
                Ok(())
            }
            CliError::Partial { failed, total } => {
                write!(f, "{failed} of {total} operations failed")
            }
            CliError::Other(m) => f.write_str(m),
            CliError::WithHint { error, .. } => error.fmt(f),
        }
    }
}

impl std::error::Error for CliError {}

/// Kafka's name of an error code, as its tools print it.
pub fn error_name(code: i16) -> &'static str {
    use error_code::*;
    match code {
        NONE => "NONE",
        UNKNOWN_SERVER_ERROR => "UNKNOWN_SERVER_ERROR",
        OFFSET_OUT_OF_RANGE => "OFFSET_OUT_OF_RANGE",
        CORRUPT_MESSAGE => "CORRUPT_MESSAGE",
        UNKNOWN_TOPIC_OR_PARTITION => "UNKNOWN_TOPIC_OR_PARTITION",
        LEADER_NOT_AVAILABLE => "LEADER_NOT_AVAILABLE",
        NOT_LEADER_OR_FOLLOWER => "NOT_LEADER_OR_FOLLOWER",
        REQUEST_TIMED_OUT => "REQUEST_TIMED_OUT",
        COORDINATOR_LOAD_IN_PROGRESS => "COORDINATOR_LOAD_IN_PROGRESS",
        COORDINATOR_NOT_AVAILABLE => "COORDINATOR_NOT_AVAILABLE",
        NOT_COORDINATOR => "NOT_COORDINATOR",
        INVALID_TOPIC_EXCEPTION => "INVALID_TOPIC_EXCEPTION",
        ILLEGAL_GENERATION => "ILLEGAL_GENERATION",
        INVALID_GROUP_ID => "INVALID_GROUP_ID",
        UNKNOWN_MEMBER_ID => "UNKNOWN_MEMBER_ID",
        REBALANCE_IN_PROGRESS => "REBALANCE_IN_PROGRESS",
        TOPIC_AUTHORIZATION_FAILED => "TOPIC_AUTHORIZATION_FAILED",
        GROUP_AUTHORIZATION_FAILED => "GROUP_AUTHORIZATION_FAILED",
        UNSUPPORTED_VERSION => "UNSUPPORTED_VERSION",
        TOPIC_ALREADY_EXISTS => "TOPIC_ALREADY_EXISTS",
        INVALID_PARTITIONS => "INVALID_PARTITIONS",
        INVALID_REPLICATION_FACTOR => "INVALID_REPLICATION_FACTOR",
        INVALID_REPLICA_ASSIGNMENT => "INVALID_REPLICA_ASSIGNMENT",
        INVALID_CONFIG => "INVALID_CONFIG",
        INVALID_REQUEST => "INVALID_REQUEST",
        POLICY_VIOLATION => "POLICY_VIOLATION",
        KAFKA_STORAGE_ERROR => "KAFKA_STORAGE_ERROR",
        NON_EMPTY_GROUP => "NON_EMPTY_GROUP",
        OFFSET_METADATA_TOO_LARGE => "OFFSET_METADATA_TOO_LARGE",
        INVALID_COMMIT_OFFSET_SIZE => "INVALID_COMMIT_OFFSET_SIZE",
        FENCED_INSTANCE_ID => "FENCED_INSTANCE_ID",
        GROUP_ID_NOT_FOUND => "GROUP_ID_NOT_FOUND",
        OFFSET_NOT_AVAILABLE => "OFFSET_NOT_AVAILABLE",
        UNSTABLE_OFFSET_COMMIT => "UNSTABLE_OFFSET_COMMIT",
        NOT_CONTROLLER => "NOT_CONTROLLER",
        CLUSTER_AUTHORIZATION_FAILED => "CLUSTER_AUTHORIZATION_FAILED",
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED => "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        SECURITY_DISABLED => "SECURITY_DISABLED",
        UNSUPPORTED_SASL_MECHANISM => "UNSUPPORTED_SASL_MECHANISM",
        ILLEGAL_SASL_STATE => "ILLEGAL_SASL_STATE",
        SASL_AUTHENTICATION_FAILED => "SASL_AUTHENTICATION_FAILED",
        RESOURCE_NOT_FOUND => "RESOURCE_NOT_FOUND",
        DUPLICATE_RESOURCE => "DUPLICATE_RESOURCE",
        UNACCEPTABLE_CREDENTIAL => "UNACCEPTABLE_CREDENTIAL",
        _ => "UNKNOWN_ERROR_CODE",
    }
}

/// What to do about an error code, for the codes an operator can act on.
fn hint_for_code(code: i16) -> Option<&'static str> {
    use error_code::*;
    Some(match code {
        // RESOURCE_NOT_FOUND is named by the command that meets it, which
        // knows what is missing.
        UNKNOWN_TOPIC_OR_PARTITION => "see the topics that exist with `pinlog topic list`",
        TOPIC_ALREADY_EXISTS => {
            "see it with `pinlog topic describe NAME`, or change it with `pinlog topic alter`"
        }
        INVALID_CONFIG => "see a topic's settings with `pinlog topic describe NAME`",
        INVALID_REPLICATION_FACTOR => {
            "the replication factor cannot exceed the live brokers; see them with `pinlog cluster describe`"
        }
        NOT_CONTROLLER | REQUEST_TIMED_OUT => {
            "the controller quorum has no reachable leader (it may be electing one); try again in a moment, and check `pinlog cluster describe`"
        }
        INVALID_TOPIC_EXCEPTION => {
            "topic names use ASCII letters, digits, '.', '_' and '-', at most 249 of them"
        }
        COORDINATOR_LOAD_IN_PROGRESS | COORDINATOR_NOT_AVAILABLE | NOT_COORDINATOR => {
            "the group coordinator is moving or starting; try again in a moment"
        }
        REBALANCE_IN_PROGRESS | UNKNOWN_MEMBER_ID | ILLEGAL_GENERATION | NON_EMPTY_GROUP => {
            "the group has active members; stop the consumers first"
        }
        GROUP_ID_NOT_FOUND => "see the groups that exist with `pinlog group list`",
        UNSUPPORTED_VERSION => "the broker does not speak a version of this API that pinlog knows",
        CLUSTER_AUTHORIZATION_FAILED | TOPIC_AUTHORIZATION_FAILED | GROUP_AUTHORIZATION_FAILED
        | TRANSACTIONAL_ID_AUTHORIZATION_FAILED => {
            "the principal of --command-config may not do this; use a super user (super.users), \
             or grant the operation with `pinlog acl add`"
        }
        SECURITY_DISABLED => {
            "the broker runs without an authorizer; set authorizer.class.name (README: Securing a cluster)"
        }
        UNACCEPTABLE_CREDENTIAL => "SCRAM credentials take 4096 to 16384 iterations and a non-empty user name",
        _ => return None,
    })
}

/// Reports every failure of a command that did several things: one is the
/// command's error; several are each printed here, with their next step,
/// and the command fails with how many did.
pub fn report_failures(mut failures: Vec<CliError>, total: usize) -> CliResult<()> {
    match failures.len() {
        0 => Ok(()),
        1 => Err(failures.pop().expect("one")),
        n => {
            for f in &failures {
                eprintln!("error: {f}");
                if let Some(h) = f.hint() {
                    eprintln!("  {h}");
                }
            }
            Err(CliError::Partial { failed: n, total })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_separate_usage_from_failures() {
        assert_eq!(CliError::Usage("x".into()).exit_code(), EXIT_USAGE);
        let e = CliError::Unreachable {
            addr: "127.0.0.1:1".into(),
            source: io::ErrorKind::ConnectionRefused.into(),
        };
        assert_eq!(e.exit_code(), EXIT_OPERATION_FAILED);
        assert!(e.hint().unwrap().contains("pinlog serve"));
        assert!(e.hint().unwrap().contains("--bootstrap-server"));
    }

    #[test]
    fn broker_errors_name_the_code_and_keep_the_message() {
        let e = CliError::broker(
            "topic \"t\"",
            error_code::INVALID_CONFIG,
            Some("retention.ms must be a number".into()),
        );
        assert_eq!(
            e.to_string(),
            "topic \"t\": INVALID_CONFIG (40): retention.ms must be a number"
        );
        let e = CliError::broker("group \"g\"", error_code::NON_EMPTY_GROUP, None);
        assert_eq!(e.to_string(), "group \"g\": NON_EMPTY_GROUP (68)");
        assert_eq!(
            e.hint().as_deref(),
            Some("the group has active members; stop the consumers first")
        );
    }

    #[test]
    fn a_commands_own_hint_wins_and_keeps_the_error() {
        let e = CliError::broker("user \"bob\"", error_code::RESOURCE_NOT_FOUND, None)
            .with_hint("see the users with `pinlog user list`");
        assert_eq!(e.to_string(), "user \"bob\": RESOURCE_NOT_FOUND (91)");
        assert_eq!(e.exit_code(), EXIT_OPERATION_FAILED);
        assert_eq!(
            e.hint().as_deref(),
            Some("see the users with `pinlog user list`")
        );
        let usage = CliError::Usage("x".into()).with_hint("y");
        assert_eq!(usage.exit_code(), EXIT_USAGE);
        assert!(
            CliError::broker("cluster", error_code::SECURITY_DISABLED, None)
                .hint()
                .unwrap()
                .contains("authorizer.class.name")
        );
    }
}
