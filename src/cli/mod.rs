//! The operator commands: `pinlog topic ...`, `pinlog group ...`,
//! `pinlog cluster describe`, and for a secured cluster `pinlog acl ...`,
//! `pinlog user ...` (SCRAM credentials) and `pinlog quota ...`, which
//! speak the Kafka protocol to a running broker, like Kafka's
//! `kafka-topics.sh`, `kafka-configs.sh`, `kafka-consumer-groups.sh` and
//! `kafka-acls.sh`.
//!
//! Every command prints an aligned table (or a sentence) for people and,
//! with `--json`, one JSON document for scripts. Errors go to stderr with a
//! next step when one is known; the exit code is 0 on success, 1 when the
//! operation failed or the broker could not be reached, and 2 for a bad
//! command line.
//!
//! Layout: `client.rs` is the blocking Kafka client (`security.rs` its
//! `--command-config`), `topic.rs`, `group/`, `cluster.rs`, `partition.rs`,
//! `acl.rs`, `user.rs` and `quota.rs` the commands, `table.rs` the output,
//! `error.rs` the errors and exit codes. Each command first gathers what the broker says into
//! plain structs, then renders them, so the rendering is tested without a
//! broker.

pub mod acl;
pub mod client;
pub mod cluster;
pub mod error;
pub mod group;
pub mod partition;
pub mod quota;
pub mod security;
pub mod table;
pub mod topic;
pub mod user;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::{ArgGroup, Args, Subcommand};

use crate::acl::PatternType;
use crate::cli::client::DEFAULT_BOOTSTRAP_SERVER;
use crate::cli::error::{CliError, CliResult, EXIT_OK};
use crate::sasl::scram_credential::{ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS};

/// `--timeout` when not given; the same value as
/// [`client::DEFAULT_TIMEOUT`], in the form the flag takes (a unit test
/// keeps the two equal).
pub const DEFAULT_TIMEOUT_TEXT: &str = "30s";

/// Options every operator command takes.
#[derive(Args, Debug, Clone)]
pub struct ConnectArgs {
    /// The broker to talk to, HOST:PORT.
    #[arg(
        long,
        global = true,
        env = "PINLOG_BOOTSTRAP_SERVER",
        default_value = DEFAULT_BOOTSTRAP_SERVER,
        value_name = "HOST:PORT"
    )]
    pub bootstrap_server: String,
    /// Bound on connecting and on each request, e.g. 500ms, 10s, 2m.
    #[arg(long, global = true, default_value = DEFAULT_TIMEOUT_TEXT, value_parser = parse_duration)]
    pub timeout: Duration,
    /// Print one JSON document for scripts instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// Kafka client properties for a secured listener (security.protocol,
    /// ssl.truststore.location, sasl.mechanism, sasl.jaas.config, ...), as
    /// Kafka's tools take them.
    #[arg(long, global = true, value_name = "FILE")]
    pub command_config: Option<std::path::PathBuf>,
}

impl ConnectArgs {
    /// Connects to the cluster as `--command-config` says.
    pub fn cluster(&self) -> CliResult<client::Cluster> {
        let security = match &self.command_config {
            Some(path) => security::ClientSecurity::load(path)?,
            None => security::ClientSecurity::default(),
        };
        client::Cluster::connect_secured(&self.bootstrap_server, self.timeout, security)
    }
}

#[derive(Subcommand, Debug, Clone)]
pub enum TopicCommand {
    /// Create a topic.
    Create {
        /// The topic's name.
        name: String,
        /// Number of partitions.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..))]
        partitions: i32,
        /// Copies of each partition (1 on a single broker).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i16).range(1..))]
        replication_factor: i16,
        /// A topic setting, KEY=VALUE (e.g. retention.ms=86400000); repeatable.
        #[arg(long = "config", value_name = "KEY=VALUE", value_parser = parse_key_value)]
        configs: Vec<(String, String)>,
        /// Succeed, changing nothing, when the topic already exists.
        #[arg(long)]
        if_not_exists: bool,
    },
    /// List topics with their partition counts.
    List {
        /// Also list internal topics (such as __consumer_offsets).
        #[arg(long)]
        include_internal: bool,
    },
    /// Show partitions (leader, replicas, ISR, start and end offsets) and
    /// the settings that differ from the defaults. All topics when none are
    /// named.
    Describe {
        /// Topics to describe (default: all).
        names: Vec<String>,
        /// With no names: include internal topics too.
        #[arg(long)]
        include_internal: bool,
    },
    /// Delete topics and all their data.
    Delete {
        /// Topics to delete.
        #[arg(required = true)]
        names: Vec<String>,
        /// Succeed for topics that do not exist.
        #[arg(long)]
        if_exists: bool,
    },
    /// Add partitions and change or remove topic settings.
    #[command(group(
        ArgGroup::new("change")
            .required(true)
            .multiple(true)
            .args(["partitions", "set", "delete_config"])
    ))]
    Alter {
        /// The topic to change.
        name: String,
        /// The new, larger, partition count.
        #[arg(long, value_parser = clap::value_parser!(i32).range(1..))]
        partitions: Option<i32>,
        /// Set a topic setting, KEY=VALUE; repeatable.
        #[arg(long, value_name = "KEY=VALUE", value_parser = parse_key_value)]
        set: Vec<(String, String)>,
        /// Remove a topic's own value of a setting, back to the broker
        /// default; repeatable.
        #[arg(long, value_name = "KEY")]
        delete_config: Vec<String>,
    },
}

#[derive(Subcommand, Debug, Clone)]
pub enum GroupCommand {
    /// List consumer groups with their state.
    List,
    /// Show a group's members, their partitions, and each partition's
    /// committed offset, end offset and lag.
    Describe {
        /// The group's id.
        group: String,
    },
    /// Move a group's committed offsets. Prints the plan unless --execute.
    #[command(group(
        ArgGroup::new("target")
            .required(true)
            .args(["to_earliest", "to_latest", "to_offset", "shift_by", "to_datetime"])
    ))]
    ResetOffsets {
        /// The group's id.
        group: String,
        /// TOPIC or TOPIC:P,P,... (partitions); repeatable.
        #[arg(long = "topic", required = true, value_name = "TOPIC[:P,...]", value_parser = group::parse_topic_spec)]
        topics: Vec<group::TopicSpec>,
        /// To each partition's log start offset.
        #[arg(long)]
        to_earliest: bool,
        /// To each partition's end offset (nothing left to consume).
        #[arg(long)]
        to_latest: bool,
        /// To this offset (clamped to the partition's offsets).
        #[arg(long, value_name = "OFFSET")]
        to_offset: Option<i64>,
        /// By this many from the committed offset; negative goes back.
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        shift_by: Option<i64>,
        /// To the first offset at or after a time, ISO 8601
        /// (2024-05-01T12:00:00Z, 2024-05-01T14:00:00+02:00, 2024-05-01).
        #[arg(long, value_name = "TIME", value_parser = group::parse_datetime_ms)]
        to_datetime: Option<i64>,
        /// Print the plan only (the default).
        #[arg(long, conflicts_with = "execute")]
        dry_run: bool,
        /// Commit the new offsets. The group must have no active members.
        #[arg(long)]
        execute: bool,
    },
}

/// Runs a topic command and turns its outcome into the exit code, printing
/// the error and a next step on stderr.
pub fn run_topic(conn: &ConnectArgs, command: TopicCommand) -> ExitCode {
    finish(topic::run(conn, command, &mut std::io::stdout().lock()))
}

/// What `pinlog cluster` does.
#[derive(Subcommand, Debug, Clone)]
pub enum PartitionCommand {
    /// Move a partition to another shard (core) of a broker, live: the
    /// broker closes it on its shard and opens it on the new one, and
    /// keeps the placement across restarts. Clients retry through the
    /// move (at most a retriable error). `pinlog topic describe` shows
    /// each partition's shard on its leader.
    Move {
        /// The partition, TOPIC-PARTITION (for example orders-3).
        partition: String,
        /// The shard to move it to, from 0 to the broker's shard count - 1.
        #[arg(long, value_parser = clap::value_parser!(i32).range(0..))]
        shard: i32,
        /// The broker whose replica to move (default: the leader's).
        #[arg(long)]
        broker: Option<i32>,
    },
}

#[derive(Subcommand, Debug, Clone)]
pub enum ClusterCommand {
    /// Show the brokers (id, address, rack, the active controller) and the
    /// metadata quorum (leader, epoch, high watermark, each member's log end
    /// offset and lag).
    Describe,
}

/// What `pinlog acl` does (like kafka-acls.sh). ACLs apply under an
/// authorizer (`authorizer.class.name`); the commands need a super user or
/// ALTER (add, remove) or DESCRIBE (list) on the cluster.
#[derive(Subcommand, Debug, Clone)]
pub enum AclCommand {
    /// List ACLs: every one, or those of the resources named.
    List {
        #[command(flatten)]
        resources: acl::ResourceArgs,
        /// How the resource names are compared: literal (the default with
        /// a resource), prefixed, match (every ACL that applies to the
        /// literal name: its own, prefixes of it, `*`) or any.
        #[arg(long, value_name = "TYPE", value_parser = acl::parse_filter_pattern_type)]
        resource_pattern_type: Option<PatternType>,
        /// Only the ACLs that name this principal, e.g. User:alice.
        #[arg(long, value_name = "TYPE:NAME")]
        principal: Option<String>,
    },
    /// Allow or deny principals operations on resources.
    #[command(group(
        ArgGroup::new("principals")
            .required(true)
            .multiple(true)
            .args(["allow_principals", "deny_principals"])
    ))]
    Add {
        #[command(flatten)]
        resources: acl::ResourceArgs,
        #[command(flatten)]
        entries: acl::EntryArgs,
        /// literal (the default): the name exactly, or every name for `*`;
        /// prefixed: every name that starts with it.
        #[arg(long, value_name = "TYPE", default_value = "literal", value_parser = acl::parse_pattern_type)]
        resource_pattern_type: PatternType,
    },
    /// Remove the ACLs the options describe, and show what was removed.
    /// `--operation Any` removes a principal's ACLs for every operation.
    #[command(group(
        ArgGroup::new("principals")
            .required(true)
            .multiple(true)
            .args(["allow_principals", "deny_principals"])
    ))]
    Remove {
        #[command(flatten)]
        resources: acl::ResourceArgs,
        #[command(flatten)]
        entries: acl::EntryArgs,
        /// literal (the default) or prefixed, as the ACLs were added.
        #[arg(long, value_name = "TYPE", default_value = "literal", value_parser = acl::parse_pattern_type)]
        resource_pattern_type: PatternType,
    },
}

/// What `pinlog user` does: SCRAM credentials (like kafka-configs.sh
/// --entity-type users with SCRAM-SHA-256/512). Super users only.
#[derive(Subcommand, Debug, Clone)]
pub enum UserCommand {
    /// List users with SCRAM credentials: each mechanism and its iterations.
    List {
        /// Users to show (default: every user with a credential).
        users: Vec<String>,
    },
    /// Set a user's password for SCRAM, read from --password-file or from
    /// stdin (never from the command line). The salt and the salted
    /// password are made here; the password is not sent.
    SetPassword {
        /// The user's name (alice logs in as User:alice).
        user: String,
        /// SCRAM-SHA-256 or SCRAM-SHA-512; repeatable, to set both.
        #[arg(long = "mechanism", value_name = "MECHANISM", required = true, value_parser = user::parse_scram_mechanism)]
        mechanisms: Vec<ScramMechanism>,
        /// PBKDF2 iterations, from 4096 to 16384.
        #[arg(
            long,
            default_value_t = user::DEFAULT_ITERATIONS,
            value_parser = clap::value_parser!(u32).range(i64::from(MIN_ITERATIONS)..=i64::from(MAX_ITERATIONS))
        )]
        iterations: u32,
        /// A file holding the password (one line); without it, stdin.
        #[arg(long, value_name = "FILE")]
        password_file: Option<std::path::PathBuf>,
    },
    /// Delete a user's SCRAM credential for a mechanism.
    Delete {
        /// The user's name.
        user: String,
        /// SCRAM-SHA-256 or SCRAM-SHA-512; repeatable.
        #[arg(long = "mechanism", value_name = "MECHANISM", required = true, value_parser = user::parse_scram_mechanism)]
        mechanisms: Vec<ScramMechanism>,
    },
}

/// What `pinlog quota` does: client quotas per user, client id, or both
/// (like kafka-configs.sh --entity-type users|clients). Super users only.
#[derive(Subcommand, Debug, Clone)]
pub enum QuotaCommand {
    /// List quotas: every entity's, or those that involve the user or
    /// client id given.
    List {
        #[command(flatten)]
        entity: quota::EntityArgs,
    },
    /// Set quota values of an entity (the others it has stay).
    #[command(group(
        ArgGroup::new("entity")
            .required(true)
            .multiple(true)
            .args(["user", "user_default", "client_id", "client_id_default"])
    ))]
    #[command(group(
        ArgGroup::new("values")
            .required(true)
            .multiple(true)
            .args(["producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"])
    ))]
    Set {
        #[command(flatten)]
        entity: quota::EntityArgs,
        #[command(flatten)]
        values: quota::QuotaValues,
    },
    /// Remove quota keys of an entity (producer_byte_rate,
    /// consumer_byte_rate, request_percentage, controller_mutation_rate).
    #[command(group(
        ArgGroup::new("entity")
            .required(true)
            .multiple(true)
            .args(["user", "user_default", "client_id", "client_id_default"])
    ))]
    Remove {
        /// The keys to remove.
        #[arg(required = true, value_name = "KEY", value_parser = quota::parse_quota_key)]
        keys: Vec<String>,
        #[command(flatten)]
        entity: quota::EntityArgs,
    },
}

/// Runs an ACL command; see [`run_topic`].
pub fn run_acl(conn: &ConnectArgs, command: AclCommand) -> ExitCode {
    finish(acl::run(conn, command, &mut std::io::stdout().lock()))
}

/// Runs a user command; see [`run_topic`].
pub fn run_user(conn: &ConnectArgs, command: UserCommand) -> ExitCode {
    finish(user::run(conn, command, &mut std::io::stdout().lock()))
}

/// Runs a quota command; see [`run_topic`].
pub fn run_quota(conn: &ConnectArgs, command: QuotaCommand) -> ExitCode {
    finish(quota::run(conn, command, &mut std::io::stdout().lock()))
}

/// Runs a cluster command; see [`run_topic`].
pub fn run_cluster(conn: &ConnectArgs, command: ClusterCommand) -> ExitCode {
    finish(cluster::run(conn, command, &mut std::io::stdout().lock()))
}

/// Runs a partition command; see [`run_topic`].
pub fn run_partition(conn: &ConnectArgs, command: PartitionCommand) -> ExitCode {
    finish(partition::run(conn, command, &mut std::io::stdout().lock()))
}

/// Runs a group command; see [`run_topic`].
pub fn run_group(conn: &ConnectArgs, command: GroupCommand) -> ExitCode {
    finish(group::run(conn, command, &mut std::io::stdout().lock()))
}

fn finish(result: CliResult<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::from(EXIT_OK),
        Err(e) => {
            eprintln!("error: {e}");
            if let Some(hint) = e.hint() {
                eprintln!("  {hint}");
            }
            ExitCode::from(e.exit_code())
        }
    }
}

/// Writes command output; a closed stdout (`| head`) ends the command
/// quietly with an error rather than a panic.
pub(crate) fn emit(out: &mut dyn Write, text: &str) -> CliResult<()> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| CliError::Other(format!("cannot write the output: {e}")))
}

/// Parses `KEY=VALUE` (the value may contain `=` and may be empty).
pub fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        Some(_) => Err(format!("{s:?} has no key before '='")),
        None => Err(format!("{s:?} is not KEY=VALUE")),
    }
}

/// Parses a duration: a number with a unit of `ms`, `s`, `m` or `h`, or a
/// bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a duration such as 500ms, 10s or 2m"))?;
    let d = match unit {
        "ms" => Duration::from_millis(n),
        "" | "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        _ => return Err(format!("{s:?} has unit {unit:?}; use ms, s, m or h")),
    };
    if d.is_zero() {
        return Err("the timeout must be above zero".into());
    }
    Ok(d)
}

/// A timeout as the `timeout_ms` field of a request, saturated.
pub(crate) fn timeout_ms(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::client::DEFAULT_TIMEOUT;
    use clap::{CommandFactory, Parser};

    #[derive(Parser, Debug)]
    struct TestCli {
        #[command(flatten)]
        conn: ConnectArgs,
        #[command(subcommand)]
        command: TestCommand,
    }

    #[derive(Subcommand, Debug)]
    enum TestCommand {
        #[command(subcommand)]
        Topic(TopicCommand),
        #[command(subcommand)]
        Group(GroupCommand),
        #[command(subcommand)]
        Acl(AclCommand),
        #[command(subcommand)]
        User(UserCommand),
        #[command(subcommand)]
        Quota(QuotaCommand),
    }

    fn parse(args: &[&str]) -> Result<TestCli, clap::Error> {
        TestCli::try_parse_from(std::iter::once("pinlog").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_line_is_well_formed() {
        TestCli::command().debug_assert();
    }

    #[test]
    fn default_timeout_text_matches_the_constant() {
        assert_eq!(parse_duration(DEFAULT_TIMEOUT_TEXT), Ok(DEFAULT_TIMEOUT));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("10 days").is_err());
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn key_values() {
        assert_eq!(
            parse_key_value("retention.ms=1000"),
            Ok(("retention.ms".into(), "1000".into()))
        );
        assert_eq!(parse_key_value("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert_eq!(parse_key_value("a="), Ok(("a".into(), "".into())));
        assert!(parse_key_value("=1").is_err());
        assert!(parse_key_value("retention.ms").is_err());
    }

    #[test]
    fn topic_arguments_are_validated() {
        let cli = parse(&[
            "topic",
            "create",
            "t",
            "--partitions",
            "3",
            "--config",
            "a=1",
        ])
        .unwrap();
        assert_eq!(cli.conn.bootstrap_server, DEFAULT_BOOTSTRAP_SERVER);
        assert!(!cli.conn.json);
        match cli.command {
            TestCommand::Topic(TopicCommand::Create {
                partitions,
                replication_factor,
                configs,
                ..
            }) => {
                assert_eq!((partitions, replication_factor), (3, 1));
                assert_eq!(configs, vec![("a".to_string(), "1".to_string())]);
            }
            other => panic!("{other:?}"),
        }
        // Global options go anywhere after the subcommand.
        let cli = parse(&["topic", "list", "--json", "--bootstrap-server", "h:1"]).unwrap();
        assert!(cli.conn.json);
        assert_eq!(cli.conn.bootstrap_server, "h:1");

        let usage = |args: &[&str]| {
            let e = parse(args).unwrap_err();
            assert_eq!(e.exit_code(), i32::from(error::EXIT_USAGE), "{args:?}: {e}");
        };
        usage(&["topic", "create", "t", "--partitions", "0"]);
        usage(&["topic", "create", "t", "--config", "novalue"]);
        usage(&["topic", "delete"]);
        usage(&["topic", "alter", "t"]);
        usage(&["topic", "list", "--timeout", "soon"]);
        assert!(parse(&["topic", "alter", "t", "--delete-config", "retention.ms"]).is_ok());
    }

    #[test]
    fn reset_offsets_takes_exactly_one_target() {
        let usage = |args: &[&str]| {
            let e = parse(args).unwrap_err();
            assert_eq!(e.exit_code(), i32::from(error::EXIT_USAGE), "{args:?}: {e}");
        };
        usage(&["group", "reset-offsets", "g", "--topic", "t"]);
        usage(&[
            "group",
            "reset-offsets",
            "g",
            "--topic",
            "t",
            "--to-earliest",
            "--to-latest",
        ]);
        usage(&["group", "reset-offsets", "g", "--to-earliest"]);
        usage(&[
            "group",
            "reset-offsets",
            "g",
            "--topic",
            "t",
            "--to-earliest",
            "--dry-run",
            "--execute",
        ]);
        usage(&[
            "group",
            "reset-offsets",
            "g",
            "--topic",
            "t:x",
            "--to-earliest",
        ]);
        let cli = parse(&[
            "group",
            "reset-offsets",
            "g",
            "--topic",
            "t:0,2",
            "--shift-by",
            "-5",
        ])
        .unwrap();
        match cli.command {
            TestCommand::Group(GroupCommand::ResetOffsets {
                topics,
                shift_by,
                execute,
                ..
            }) => {
                assert_eq!(shift_by, Some(-5));
                assert!(!execute);
                assert_eq!(topics[0].topic, "t");
                assert_eq!(topics[0].partitions, Some(vec![0, 2]));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn security_commands_check_their_arguments() {
        let usage = |args: &[&str]| {
            let e = parse(args).unwrap_err();
            assert_eq!(e.exit_code(), i32::from(error::EXIT_USAGE), "{args:?}: {e}");
        };
        // ACLs: a principal and an operation, by Kafka's names.
        usage(&["acl", "add", "--topic", "t", "--operation", "Read"]);
        usage(&["acl", "add", "--topic", "t", "--allow-principal", "User:a"]);
        usage(&[
            "acl",
            "add",
            "--topic",
            "t",
            "--allow-principal",
            "alice",
            "--operation",
            "Read",
        ]);
        usage(&[
            "acl",
            "add",
            "--topic",
            "t",
            "--allow-principal",
            "User:a",
            "--operation",
            "Reed",
        ]);
        usage(&[
            "acl",
            "add",
            "--topic",
            "t",
            "--allow-principal",
            "User:a",
            "--operation",
            "Read",
            "--resource-pattern-type",
            "match",
        ]);
        usage(&["acl", "list", "--resource-pattern-type", "fuzzy"]);
        let cli = parse(&[
            "acl",
            "add",
            "--topic",
            "t",
            "--deny-principal",
            "User:a",
            "--operation",
            "Read",
            "--operation",
            "describe_configs",
            "--resource-pattern-type",
            "PREFIXED",
        ])
        .unwrap();
        match cli.command {
            TestCommand::Acl(AclCommand::Add {
                entries,
                resource_pattern_type,
                ..
            }) => {
                assert_eq!(resource_pattern_type, PatternType::Prefixed);
                assert_eq!(entries.hosts, vec!["*".to_string()]);
                assert_eq!(
                    entries.operations,
                    vec![
                        crate::acl::AclOperation::Read,
                        crate::acl::AclOperation::DescribeConfigs
                    ]
                );
            }
            other => panic!("{other:?}"),
        }
        // SCRAM: a SCRAM mechanism, iterations in Kafka's range.
        usage(&["user", "set-password", "alice"]);
        usage(&["user", "set-password", "alice", "--mechanism", "PLAIN"]);
        usage(&[
            "user",
            "set-password",
            "alice",
            "--mechanism",
            "SCRAM-SHA-256",
            "--iterations",
            "100",
        ]);
        usage(&[
            "user",
            "set-password",
            "alice",
            "--mechanism",
            "SCRAM-SHA-256",
            "--iterations",
            "16385",
        ]);
        usage(&["user", "delete", "alice"]);
        let cli = parse(&[
            "user",
            "set-password",
            "alice",
            "--mechanism",
            "SCRAM-SHA-512",
        ])
        .unwrap();
        match cli.command {
            TestCommand::User(UserCommand::SetPassword { iterations, .. }) => {
                assert_eq!(iterations, user::DEFAULT_ITERATIONS)
            }
            other => panic!("{other:?}"),
        }
        // Quotas: an entity, a value, known keys.
        usage(&["quota", "set", "--producer-byte-rate", "1024"]);
        usage(&["quota", "set", "--user", "alice"]);
        usage(&[
            "quota",
            "set",
            "--user",
            "alice",
            "--user-default",
            "--producer-byte-rate",
            "1",
        ]);
        usage(&[
            "quota",
            "set",
            "--user",
            "alice",
            "--producer-byte-rate",
            "0",
        ]);
        usage(&[
            "quota",
            "set",
            "--user",
            "alice",
            "--request-percentage",
            "-5",
        ]);
        usage(&["quota", "remove", "--user", "alice"]);
        usage(&["quota", "remove", "bytes", "--user", "alice"]);
        usage(&["quota", "remove", "producer_byte_rate"]);
        assert!(parse(&[
            "quota",
            "remove",
            "producer_byte_rate",
            "--client-id-default"
        ])
        .is_ok());
        assert!(parse(&["quota", "list", "--user-default"]).is_ok());
    }
}
