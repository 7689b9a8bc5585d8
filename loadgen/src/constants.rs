//! Every fixed limit and default of the load generator in one place, with
//! compile-time checks of how they relate.
//!
//! Defaults that mirror a Kafka client setting name it, so that a run with
//! default flags is comparable with Kafka's own perf tools.

use std::time::Duration;

/// Client id sent in every request header.
pub const CLIENT_ID: &str = "pinlog-loadgen";
/// Software name and version in ApiVersions v3+ (KIP-511).
pub const CLIENT_SOFTWARE_NAME: &str = "pinlog-loadgen";
pub const CLIENT_SOFTWARE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Bootstrap address when `--bootstrap` is not given (Kafka's port).
pub const DEFAULT_BOOTSTRAP: &str = "127.0.0.1:9092";
pub const DEFAULT_TOPIC: &str = "loadgen";
/// Run length when neither `--duration` nor `--records` is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// Upper bound on any single request: connect, write, or wait for the
/// response. A broker that stops answering ends the run after this long.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 10_000;
/// Connection attempts (at startup) before giving up on a broker.
pub const CONNECT_ATTEMPTS: u32 = 5;
/// Pause between connection attempts; doubles after each failure.
pub const CONNECT_BACKOFF: Duration = Duration::from_millis(200);
/// Metadata polls while waiting for a new topic's partitions to get leaders.
pub const METADATA_ATTEMPTS: u32 = 50;
/// Pause between those polls (so at most 5 s in all).
pub const METADATA_BACKOFF: Duration = Duration::from_millis(100);
/// Largest response frame accepted. A fetch response is bounded by
/// `FETCH_MAX_BYTES` plus per-partition overhead; anything larger means a
/// misbehaving peer.
pub const RESPONSE_MAX_BYTES: usize = 2 * FETCH_MAX_BYTES;
/// Read buffer of each connection: most produce responses and fetch headers
/// fit in one read.
pub const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Kafka's `batch.size` default.
pub const DEFAULT_BATCH_BYTES: usize = 16 * 1024;
/// Largest `--batch-bytes`: beyond Kafka's `message.max.bytes` (1 MiB) brokers
/// refuse batches unless configured otherwise, and 16 MiB bounds the buffers.
pub const BATCH_BYTES_MAX: usize = 16 * 1024 * 1024;
/// Kafka 4's `linger.ms` default.
pub const DEFAULT_LINGER_MS: u64 = 5;
/// Kafka's `max.request.size` default: a produce request carries ready
/// batches up to this size (or one batch, if a batch is larger).
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;
/// Kafka's `max.in.flight.requests.per.connection` default.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 5;
/// Largest `--max-in-flight`: pinlog serves at most 64 requests per
/// connection at once, and more would only queue in the broker.
pub const MAX_IN_FLIGHT_LIMIT: usize = 64;
/// Default `--record-size`: the 1 KiB records of the benchmark workloads.
pub const DEFAULT_RECORD_SIZE: usize = 1024;
/// Largest `--record-size`; a record must fit in a batch.
pub const RECORD_SIZE_MAX: usize = BATCH_BYTES_MAX / 2;
/// Largest `--producers` / `--consumers` (one or two threads each) and
/// `connect --threads`.
pub const WORKERS_MAX: usize = 256;
/// Record values are slices of a pool of random text this large (shared by
/// all producers; see `producer::payload_pool`).
pub const PAYLOAD_POOL_BYTES: usize = 4 * 1024 * 1024;
/// Length of a generated key (`--key-space uniform`): 16 hex digits.
pub const KEY_BYTES: usize = 16;

/// Every record value starts with this stamp when it is large enough: a
/// magic, the run id, and the intended send time (Unix ns). The consumer of
/// `e2e` reads it back to measure produce-to-consume latency.
pub const STAMP_MAGIC: [u8; 4] = *b"PLG1";
pub const STAMP_BYTES: usize = 16;

/// Kafka's `fetch.max.wait.ms` default.
pub const DEFAULT_FETCH_MAX_WAIT_MS: i32 = 500;
/// Kafka's `fetch.max.bytes` default.
pub const FETCH_MAX_BYTES: usize = 50 * 1024 * 1024;
/// Kafka's `max.partition.fetch.bytes` default.
pub const FETCH_PARTITION_MAX_BYTES: usize = 1024 * 1024;
/// Largest decompressed records section accepted from one batch. A
/// compressed batch is at most a partition fetch, and no Kafka codec
/// expands real record data 64-fold; more is treated as hostile.
pub const DECOMPRESSED_BATCH_MAX_BYTES: usize = 64 * FETCH_PARTITION_MAX_BYTES;

/// Progress line interval.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);
/// Histograms record microseconds up to one hour, with 3 significant digits
/// (0.1% resolution).
pub const HISTOGRAM_MAX_US: u64 = 3_600_000_000;
pub const HISTOGRAM_SIGFIGS: u8 = 3;
/// `.hgrm` output is in milliseconds, the unit HdrHistogram's own plotter
/// and wrk2 use; histograms hold microseconds.
pub const HGRM_UNIT_SCALE: f64 = 1000.0;
/// Steps per half distance to 100% in the `.hgrm` percentile listing
/// (HdrHistogram's `outputPercentileDistribution` default).
pub const HGRM_TICKS_PER_HALF_DISTANCE: u32 = 5;

const _: () = assert!(RECORD_SIZE_MAX < BATCH_BYTES_MAX);
const _: () = assert!(DEFAULT_BATCH_BYTES <= BATCH_BYTES_MAX);
const _: () = assert!(DEFAULT_MAX_IN_FLIGHT <= MAX_IN_FLIGHT_LIMIT);
const _: () = assert!(FETCH_PARTITION_MAX_BYTES <= FETCH_MAX_BYTES);
const _: () = assert!(RESPONSE_MAX_BYTES > FETCH_MAX_BYTES);
const _: () = assert!(FETCH_MAX_BYTES <= i32::MAX as usize);
const _: () = assert!(STAMP_BYTES == STAMP_MAGIC.len() + 4 + 8);
const _: () = assert!(MAX_REQUEST_BYTES >= DEFAULT_BATCH_BYTES);
