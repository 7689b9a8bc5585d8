//! `pinlog-loadgen`: a load generator for Kafka-compatible brokers.
//!
//! It speaks the Kafka protocol through pinlog's own codec (the `pinlog`
//! library crate), so it drives pinlog, Apache Kafka or any other
//! Kafka-compatible broker the same way. See `run.rs` for how a run is put
//! together, `producer.rs` for the open-loop scheduling and `consumer.rs`
//! for what the consumer measures.
//!
//! Runtime: plain threads with blocking sockets (two threads per producer
//! connection, one per consumer connection). That keeps the client simple
//! and cheap on CPU, which matters when it shares a two-core machine with
//! the broker it measures.

mod batch;
mod client;
mod clock;
mod cluster;
mod compression;
mod constants;
mod consumer;
mod error;
mod plot;
mod producer;
mod report;
mod run;
mod soak;
mod stats;
mod storm;
mod transport;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::compression::Compression;
use crate::constants::{
    DEFAULT_BATCH_BYTES, DEFAULT_BOOTSTRAP, DEFAULT_FETCH_MAX_WAIT_MS, DEFAULT_LINGER_MS,
    DEFAULT_MAX_IN_FLIGHT, DEFAULT_RECORD_SIZE, DEFAULT_REQUEST_TIMEOUT_MS, DEFAULT_TOPIC,
};
use crate::producer::KeySpace;

#[derive(Parser, Debug)]
#[command(
    name = "pinlog-loadgen",
    version,
    about = "Load generator for Kafka-compatible brokers (pinlog, Apache Kafka)",
    long_about = "Load generator for Kafka-compatible brokers (pinlog, Apache Kafka).\n\n\
        Speaks the Kafka protocol with pinlog's codec. Open loop with --rate: records are \
        scheduled by intended send time and latency is measured from it, so broker stalls \
        are not hidden (no coordinated omission). Progress goes to stderr every second; \
        the report (or --json) to stdout. MB = 2^20 bytes of record values."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Produce records; latency is from intended send time to acknowledgement.
    Produce {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        produce: ProduceArgs,
    },
    /// Consume records: catch up from the earliest offset (to the end offsets at
    /// start), or tail with --from latest; latency is each fetch's round trip.
    Consume {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        consume: ConsumeArgs,
        /// Where to start in each partition.
        #[arg(long, value_enum, default_value_t = StartAt::Earliest)]
        from: StartAt,
        /// Same as --consumers: one connection per consumer.
        #[arg(long, conflicts_with = "consumers")]
        connections: Option<usize>,
    },
    /// Produce and consume at once; latency is from intended send time (stamped
    /// in each record value) to consumption.
    E2e {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        produce: ProduceArgs,
        #[command(flatten)]
        consume: ConsumeArgs,
    },
    /// A soak: an e2e run while group members join, commit, leave and die,
    /// and clients are killed mid-request; fails if the broker misbehaves
    /// or stops (see soak.rs). Run by hand before each milestone, e.g.
    /// `soak --duration 5m --rate 20000`.
    Soak {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        produce: ProduceArgs,
        #[command(flatten)]
        consume: ConsumeArgs,
        #[command(flatten)]
        soak: SoakArgs,
    },
    /// A connection storm: threads that connect, log in and close, over and
    /// over (TCP, TLS and SASL as --command-config says, then ApiVersions);
    /// reports connections per second and the time to a ready connection.
    Connect {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        storm: StormArgs,
    },
    /// Draw latency by percentile from .hgrm files (written by --histogram),
    /// several runs overlaid.
    Plot {
        /// The SVG file to write.
        #[arg(long)]
        out: PathBuf,
        /// Title above the plot.
        #[arg(long, default_value = "Latency by percentile")]
        title: String,
        /// Label of the latency axis (.hgrm files from this tool are in ms).
        #[arg(long, default_value = "latency (ms)")]
        y_label: String,
        /// .hgrm files; each becomes one line, named after its file.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Broker to bootstrap from (HOST:PORT).
    #[arg(long, default_value = DEFAULT_BOOTSTRAP)]
    pub bootstrap: String,
    #[arg(long, default_value = DEFAULT_TOPIC)]
    pub topic: String,
    /// Create the topic with this many partitions if it is missing (default:
    /// the broker's default; `consume` creates it only when this is given).
    #[arg(long)]
    pub partitions: Option<i32>,
    /// How long to run after warmup (e.g. 30s, 500ms, 2m). Default: 10s
    /// unless --records is given.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// How many records to produce (or consume) after warmup.
    #[arg(long)]
    pub records: Option<u64>,
    /// Run this long before measuring (e.g. 5s).
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,
    /// Print the report as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write the latency percentile distribution (HdrHistogram .hgrm, ms).
    #[arg(long)]
    pub histogram: Option<PathBuf>,
    /// Draw this run's latency by percentile into an SVG file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Timeout of every connect, request and response; a broker that stops
    /// answering ends the run with an error after this long.
    #[arg(long, default_value_t = DEFAULT_REQUEST_TIMEOUT_MS)]
    pub request_timeout_ms: u64,
    /// Kafka client properties for every connection: security.protocol
    /// (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), ssl.truststore.*,
    /// ssl.keystore.* (PEM) and sasl.mechanism with sasl.jaas.config
    /// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), as Kafka's tools read them.
    #[arg(long)]
    pub command_config: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct StormArgs {
    /// Threads connecting at once.
    #[arg(long, default_value_t = 8)]
    pub threads: usize,
}

#[derive(Args, Debug, Clone)]
pub struct ProduceArgs {
    /// Bytes of each record value.
    #[arg(long, default_value_t = DEFAULT_RECORD_SIZE)]
    pub record_size: usize,
    /// Record keys: random keys spread uniformly over partitions, or none
    /// (sticky partitioning).
    #[arg(long, value_enum, default_value_t = KeySpace::None)]
    pub key_space: KeySpace,
    /// Close a batch when the next record would make it larger than this
    /// (Kafka's batch.size).
    #[arg(long, default_value_t = DEFAULT_BATCH_BYTES)]
    pub batch_bytes: usize,
    /// Close a batch this long after its first record (Kafka's linger.ms).
    #[arg(long, default_value_t = DEFAULT_LINGER_MS)]
    pub linger_ms: u64,
    /// 0 (no response), 1 (leader) or all (-1).
    #[arg(long, value_parser = parse_acks, default_value = "all")]
    pub acks: i16,
    /// Compress batches as Kafka's producer does.
    #[arg(long, value_enum, default_value_t = Compression::None)]
    pub compression: Compression,
    /// Producer connections (a writer and a reader thread each); partitions
    /// are split among them.
    #[arg(long, visible_alias = "connections", default_value_t = 1)]
    pub producers: usize,
    /// Records per second over all producers (open loop); flat out if unset.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Produce requests in flight per connection.
    #[arg(long, default_value_t = DEFAULT_MAX_IN_FLIGHT)]
    pub max_in_flight: usize,
}

#[derive(Args, Debug, Clone)]
pub struct ConsumeArgs {
    /// Consumer connections (one thread each); partitions are split among them.
    #[arg(long, default_value_t = 1)]
    pub consumers: usize,
    /// How long the broker may hold a fetch that finds no data.
    #[arg(long, default_value_t = DEFAULT_FETCH_MAX_WAIT_MS)]
    pub fetch_max_wait_ms: i32,
    /// Skip the CRC-32C check of fetched batches (Kafka's check.crcs=false).
    #[arg(long)]
    pub no_crc_check: bool,
}

#[derive(Args, Debug, Clone)]
pub struct SoakArgs {
    /// Group members churning in one group (join, commit, leave or die).
    #[arg(long, default_value_t = 4)]
    pub members: usize,
    /// Threads sending requests and closing their connections before the
    /// answer.
    #[arg(long, default_value_t = 2)]
    pub killers: usize,
    /// Seed of the members' and killers' random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StartAt {
    Earliest,
    Latest,
}

/// "10", "10s", "250ms", "2m", "1.5s".
fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (try 10s, 500ms, 2m)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("unknown unit {unit:?} in {s:?} (ms, s, m, h)")),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("{s:?} is not a non-negative duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn parse_acks(s: &str) -> Result<i16, String> {
    match s {
        "all" | "-1" => Ok(-1),
        "0" => Ok(0),
        "1" => Ok(1),
        _ => Err(format!("acks must be 0, 1 or all, not {s:?}")),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let common = match &cli.command {
        Command::Produce { common, .. }
        | Command::Consume { common, .. }
        | Command::E2e { common, .. }
        | Command::Soak { common, .. }
        | Command::Connect { common, .. } => Some(common),
        Command::Plot { .. } => None,
    };
    if let Some(path) = common.and_then(|c| c.command_config.as_ref()) {
        // A storm's connections stand for new clients: no TLS resumption.
        let fresh_sessions = matches!(cli.command, Command::Connect { .. });
        if let Err(e) = transport::configure(path, fresh_sessions) {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    }
    match cli.command {
        Command::Plot {
            out,
            title,
            y_label,
            files,
        } => run::plot_files(&out, &title, &y_label, &files),
        Command::Produce { common, produce } => {
            run::finish(&common, run::produce(&common, &produce))
        }
        Command::Consume {
            common,
            mut consume,
            from,
            connections,
        } => {
            consume.consumers = connections.unwrap_or(consume.consumers);
            run::finish(&common, run::consume(&common, &consume, from))
        }
        Command::E2e {
            common,
            produce,
            consume,
        } => run::finish(&common, run::e2e(&common, &produce, &consume)),
        Command::Soak {
            common,
            produce,
            consume,
            soak,
        } => run::finish(&common, soak::soak(&common, &produce, &consume, &soak)),
        Command::Connect { common, storm } => {
            run::finish(&common, storm::connect_storm(&common, &storm))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5y").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn acks_parse() {
        assert_eq!(parse_acks("all").unwrap(), -1);
        assert_eq!(parse_acks("1").unwrap(), 1);
        assert!(parse_acks("2").is_err());
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "pinlog-loadgen",
            "produce",
            "--connections",
            "3",
            "--acks",
            "1",
            "--compression",
            "lz4",
            "--duration",
            "5s",
        ])
        .unwrap();
        match cli.command {
            Command::Produce { produce, common } => {
                assert_eq!(produce.producers, 3);
                assert_eq!(produce.acks, 1);
                assert_eq!(produce.compression, Compression::Lz4);
                assert_eq!(common.duration, Some(Duration::from_secs(5)));
            }
            other => panic!("{other:?}"),
        }
        // consume takes --connections for --consumers; e2e has both flags
        // (one per side) without a clash.
        let cli = Cli::try_parse_from(["pinlog-loadgen", "consume", "--connections", "4"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Consume {
                connections: Some(4),
                ..
            }
        ));
        assert!(
            Cli::try_parse_from(["x", "consume", "--connections", "4", "--consumers", "2"])
                .is_err()
        );
        let cli =
            Cli::try_parse_from(["x", "e2e", "--connections", "3", "--consumers", "2"]).unwrap();
        match cli.command {
            Command::E2e {
                produce, consume, ..
            } => {
                assert_eq!((produce.producers, consume.consumers), (3, 2));
            }
            other => panic!("{other:?}"),
        }
    }
}
