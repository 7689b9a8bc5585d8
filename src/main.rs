//! The `pinlog` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "pinlog",
    version,
    about = "A Kafka-compatible, thread-per-core commit-log broker"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the broker. With no flags: data in ./pinlog-data, listening and
    /// advertising 127.0.0.1:9092, one shard per online core.
    Serve {
        /// Data directory (Kafka's log.dirs).
        #[arg(long, env = "PINLOG_DATA_DIR")]
        data_dir: Option<PathBuf>,
        /// Address to listen on, HOST:PORT.
        #[arg(long, env = "PINLOG_LISTEN")]
        listen: Option<String>,
        /// Address clients are told to connect to, HOST:PORT (default: --listen).
        #[arg(long, env = "PINLOG_ADVERTISE")]
        advertise: Option<String>,
        /// Number of shards (default: one per online core).
        #[arg(long, env = "PINLOG_SHARDS")]
        shards: Option<usize>,
        /// TOML file with Kafka-named settings (flags and PINLOG_* win over it).
        #[arg(long, env = "PINLOG_CONFIG")]
        config: Option<PathBuf>,
        /// This node's id (Kafka's node.id; default 1).
        #[arg(long, env = "PINLOG_NODE_ID")]
        node_id: Option<i32>,
        /// Roles of this node: broker,controller (Kafka's process.roles; the default).
        #[arg(long, env = "PINLOG_PROCESS_ROLES")]
        process_roles: Option<String>,
        /// The metadata quorum's voters, ID@HOST:PORT,... at their controller
        /// listeners (Kafka's controller.quorum.voters; default: this node alone).
        #[arg(long, env = "PINLOG_CONTROLLER_QUORUM_VOTERS")]
        controller_quorum_voters: Option<String>,
        /// Address for controller traffic, HOST:PORT (default: this node's
        /// entry in --controller-quorum-voters).
        #[arg(long, env = "PINLOG_CONTROLLER_LISTEN")]
        controller_listen: Option<String>,
    },
    /// Run the storage engine end to end on pinned shards: append, restart
    /// cleanly, crash with a torn write, recover.
    Demo {
        /// Data directory (Kafka's log.dirs layout).
        #[arg(long, default_value = "./pinlog-data", env = "PINLOG_DATA_DIR")]
        data_dir: PathBuf,
        /// Number of shards (default: one per online core).
        #[arg(long, env = "PINLOG_SHARDS")]
        shards: Option<usize>,
        /// Partitions of the demo topic.
        #[arg(long, default_value_t = 8)]
        partitions: i32,
        /// Records to append in each append phase.
        #[arg(long, default_value_t = 400_000)]
        records: u64,
        /// Bytes per record value.
        #[arg(long, default_value_t = 1024)]
        record_size: usize,
        /// Records per batch.
        #[arg(long, default_value_t = 64)]
        batch_records: usize,
    },
    /// Manage topics on a running broker: create, list, describe, delete,
    /// alter (like kafka-topics.sh and kafka-configs.sh).
    Topic {
        #[command(flatten)]
        conn: pinlog::cli::ConnectArgs,
        #[command(subcommand)]
        command: pinlog::cli::TopicCommand,
    },
    /// Move partitions between the shards (cores) of a broker, live.
    Partition {
        #[command(flatten)]
        conn: pinlog::cli::ConnectArgs,
        #[command(subcommand)]
        command: pinlog::cli::PartitionCommand,
    },
    /// Inspect consumer groups and move their committed offsets (like
    /// kafka-consumer-groups.sh).
    Group {
        #[command(flatten)]
        conn: pinlog::cli::ConnectArgs,
        #[command(subcommand)]
        command: pinlog::cli::GroupCommand,
    },
    /// Show the brokers and the metadata quorum (like kafka-cluster.sh and
    /// kafka-metadata-quorum.sh describe).
    Cluster {
        #[command(flatten)]
        conn: pinlog::cli::ConnectArgs,
        #[command(subcommand)]
        command: pinlog::cli::ClusterCommand,
    },
    /// Manage ACLs (like kafka-acls.sh): list, add, remove.
    Acl {
        #[command(flatten)]
        conn: pinlog::cli::ConnectArgs,
        #[command(subcommand)]
        command: pinlog::cli::AclCommand,
    },
    /// Manage users' SCRAM credentials: list, set-password, delete (like
    /// kafka-configs.sh --entity-type users).
    User {
        #[command(flatten)]
        conn: pinlog::cli::ConnectArgs,
        #[command(subcommand)]
        command: pinlog::cli::UserCommand,
    },
    /// Manage client quotas per user and client id: list, set, remove (like
    /// kafka-configs.sh --entity-type users|clients).
    Quota {
        #[command(flatten)]
        conn: pinlog::cli::ConnectArgs,
        #[command(subcommand)]
        command: pinlog::cli::QuotaCommand,
    },
    /// Inspect log files offline.
    Log {
        #[command(subcommand)]
        command: LogCommand,
    },
}

#[derive(Subcommand)]
enum LogCommand {
    /// Print batches, index entries or checkpoint entries of each file, like
    /// kafka-dump-log.sh.
    Dump {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Check a partition directory; exits non-zero and says where when it is
    /// corrupt.
    Verify {
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // openraft narrates every election at info and warns on every
                // failed RPC to a stopped voter (several a second); pinlog
                // logs leader changes and what operators act on itself.
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,openraft=error")),
        )
        .with_writer(std::io::stderr)
        // A closed stderr (a log piped into `head`) must not panic a shard.
        .log_internal_errors(false)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve {
            data_dir,
            listen,
            advertise,
            shards,
            config,
            node_id,
            process_roles,
            controller_quorum_voters,
            controller_listen,
        } => {
            // The settings file is read here, in the shell: the settings
            // themselves (pinlog-core) do no I/O.
            let config_file = match config {
                Some(path) => match std::fs::read_to_string(&path) {
                    Ok(text) => Some(pinlog::broker_config::ConfigFile { path, text }),
                    Err(e) => {
                        eprintln!(
                            "error: cannot read config file {}: {e}; check the path given to --config",
                            path.display()
                        );
                        return ExitCode::from(2);
                    }
                },
                None => None,
            };
            let overrides = pinlog::broker_config::Overrides {
                data_dir,
                listen,
                advertise,
                shards,
                config_file,
                node_id,
                process_roles,
                controller_quorum_voters,
                controller_listen,
            };
            let config = match pinlog::broker_config::BrokerConfig::load(&overrides) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            match pinlog::server::lifecycle::broker::serve(config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Demo {
            data_dir,
            shards,
            partitions,
            records,
            record_size,
            batch_records,
        } => {
            if shards == Some(0) || partitions <= 0 || batch_records == 0 {
                eprintln!("error: --shards, --partitions and --batch-records must be at least 1");
                return ExitCode::from(2);
            }
            let opts = pinlog::demo::DemoOptions {
                data_dir,
                shards,
                partitions,
                records,
                record_size,
                batch_records,
            };
            match pinlog::demo::run_demo(opts) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Topic { conn, command } => pinlog::cli::run_topic(&conn, command),
        Command::Group { conn, command } => pinlog::cli::run_group(&conn, command),
        Command::Partition { conn, command } => pinlog::cli::run_partition(&conn, command),
        Command::Cluster { conn, command } => pinlog::cli::run_cluster(&conn, command),
        Command::Acl { conn, command } => pinlog::cli::run_acl(&conn, command),
        Command::User { conn, command } => pinlog::cli::run_user(&conn, command),
        Command::Quota { conn, command } => pinlog::cli::run_quota(&conn, command),
        Command::Log { command } => run_log_command(command),
    }
}

fn run_log_command(command: LogCommand) -> ExitCode {
    match command {
        LogCommand::Dump { files } => {
            // Like other Unix filters, stop quietly when the reader (`head`)
            // goes away. Only this offline command does this; servers must
            // keep SIGPIPE ignored.
            // SAFETY: setting a signal disposition before any threads start.
            unsafe {
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            }
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            let mut failed = false;
            for f in files {
                if let Err(e) = pinlog::tools::dump::dump_file(&f, &mut out) {
                    eprintln!("error: cannot dump {}: {e}", f.display());
                    failed = true;
                }
            }
            if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        LogCommand::Verify { dirs } => {
            let mut failed = false;
            for d in dirs {
                let report = pinlog::tools::verify::verify_partition_dir(&d);
                print!("{report}");
                failed |= !report.is_ok();
            }
            if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
    }
}
