//! Per-shard metric probes and their Prometheus text rendering.
//!
//! Like Redpanda's probes, each shard counts into its own [`ShardProbe`]
//! (a shard extension of plain `Cell`s and `RefCell`s): a request never
//! touches memory another core writes, so there is no atomic and no shared
//! cache line on the hot path. The cost moves to the scrape instead: the
//! HTTP endpoint on shard 0 asks every shard for a [`ShardSnapshot`] (plain
//! numbers, so it can cross cores) and renders them with [`render`].
//!
//! Latency is kept per API in an HdrHistogram of microseconds, measured from
//! a frame fully read to its response built. The exposition uses fixed
//! Prometheus buckets ([`LATENCY_BUCKET_BOUNDS_US`]) read out of the
//! HdrHistogram at scrape time, so the bucket layout can change without
//! touching the hot path, and the exact sum of latencies is kept beside it
//! for `_sum`.

pub mod http;

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::rc::Rc;
use std::time::Instant;

use hdrhistogram::Histogram;

use crate::log::batch_cache::CacheStats;
use crate::node::partition_load::{LoadCounters, PartitionLoad};
use crate::protocol::api::{ApiKey, SUPPORTED_APIS};
use crate::protocol::chunks::Chunk;
use crate::server::network::dispatch::Outcome;
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// Upper bounds (inclusive, in microseconds) of the Prometheus latency
/// buckets, from 100 µs to 10 s; `+Inf` is implied. Close to Prometheus'
/// default buckets, with more resolution below a millisecond, where a
/// thread-per-core broker answers most requests.
pub const LATENCY_BUCKET_BOUNDS_US: [u64; 16] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// Largest latency the HdrHistogram tells apart; longer requests are counted
/// at this value (they land in `+Inf` either way) and their exact time still
/// goes into `_sum`.
pub const LATENCY_TRACKABLE_MAX_US: u64 = 60_000_000;

/// HdrHistogram precision: 2 significant digits keep each bucket within 1%
/// of its bound at about 20 KiB per histogram (14 APIs per shard); 3 digits
/// would cost about 140 KiB each.
const LATENCY_SIGNIFICANT_DIGITS: u8 = 2;

const _: () = {
    let n = LATENCY_BUCKET_BOUNDS_US.len();
    let mut i = 1;
    while i < n {
        assert!(LATENCY_BUCKET_BOUNDS_US[i - 1] < LATENCY_BUCKET_BOUNDS_US[i]);
        i += 1;
    }
    assert!(LATENCY_BUCKET_BOUNDS_US[0] >= 1);
    // Every finite bucket must be answerable from the histogram.
    assert!(LATENCY_BUCKET_BOUNDS_US[n - 1] < LATENCY_TRACKABLE_MAX_US);
};

/// One API's counters on one shard.
struct ApiProbe {
    /// Requests of this API whose header named it, answered or not.
    requests: Cell<u64>,
    /// Requests that closed the connection instead of being answered
    /// (unsupported version, malformed body).
    errors: Cell<u64>,
    /// Latency of the answered requests (including acks=0 produces).
    latency_us: RefCell<Histogram<u64>>,
    /// Exact sum of the latencies in `latency_us`, for `_sum`.
    latency_sum_us: Cell<u64>,
}

impl ApiProbe {
    fn new() -> ApiProbe {
        ApiProbe {
            requests: Cell::new(0),
            errors: Cell::new(0),
            latency_us: RefCell::new(
                Histogram::new_with_bounds(1, LATENCY_TRACKABLE_MAX_US, LATENCY_SIGNIFICANT_DIGITS)
                    .expect("constant histogram bounds are valid"),
            ),
            latency_sum_us: Cell::new(0),
        }
    }

    fn record_latency(&self, us: u64) {
        self.latency_us.borrow_mut().saturating_record(us);
        add(&self.latency_sum_us, us);
    }

    fn snapshot(&self, api: ApiKey) -> ApiSnapshot {
        let h = self.latency_us.borrow();
        let mut latency_buckets = [0u64; LATENCY_BUCKET_BOUNDS_US.len()];
        for (slot, bound) in latency_buckets.iter_mut().zip(LATENCY_BUCKET_BOUNDS_US) {
            *slot = h.count_between(0, bound);
        }
        ApiSnapshot {
            api,
            requests: self.requests.get(),
            errors: self.errors.get(),
            latency_buckets,
            latency_count: h.len(),
            latency_sum_us: self.latency_sum_us.get(),
        }
    }
}

/// A shard's metrics, kept as a shard extension and touched only by that
/// shard's thread.
pub struct ShardProbe {
    /// One per API, in [`SUPPORTED_APIS`] order.
    apis: Vec<ApiProbe>,
    /// Frames whose header was unreadable or named an unknown API.
    unknown_requests: Cell<u64>,
    /// Kafka request bytes read, size prefixes included.
    bytes_received: Cell<u64>,
    /// Kafka response bytes written, size prefixes included.
    bytes_sent: Cell<u64>,
}

/// What [`ShardProbe::request_started`] remembers until the request ends.
pub struct RequestTimer {
    api: Option<ApiKey>,
    started: Instant,
}

impl ShardProbe {
    fn new() -> ShardProbe {
        ShardProbe {
            apis: SUPPORTED_APIS.iter().map(|_| ApiProbe::new()).collect(),
            unknown_requests: Cell::new(0),
            bytes_received: Cell::new(0),
            bytes_sent: Cell::new(0),
        }
    }

    /// The probe of `shard`, created on first use so that every shard has
    /// one whether or not it has served a connection yet.
    pub fn of(shard: &Shard) -> Rc<ShardProbe> {
        if let Some(p) = shard.extension::<ShardProbe>() {
            return p;
        }
        let p = Rc::new(ShardProbe::new());
        shard.set_extension(p.clone());
        p
    }

    fn api(&self, key: ApiKey) -> &ApiProbe {
        let i = SUPPORTED_APIS
            .iter()
            .position(|a| a.key == key)
            .expect("every ApiKey has a row in SUPPORTED_APIS");
        &self.apis[i]
    }

    /// Called when a whole request frame (without its 4-byte size prefix)
    /// has been read.
    pub fn request_started(&self, frame: &[u8]) -> RequestTimer {
        add(&self.bytes_received, frame.len() as u64 + 4);
        // The API key is the frame's first field; dispatch decodes it again,
        // which costs less than threading it back out of every return path.
        let api = frame
            .get(..2)
            .and_then(|b| ApiKey::from_i16(i16::from_be_bytes([b[0], b[1]])));
        RequestTimer {
            api,
            started: Instant::now(),
        }
    }

    /// Called when the request's outcome is known (its response built).
    pub fn request_finished(&self, timer: RequestTimer, outcome: &Outcome) {
        let Some(key) = timer.api else {
            add(&self.unknown_requests, 1);
            return;
        };
        let api = self.api(key);
        add(&api.requests, 1);
        match outcome {
            Outcome::Close(_) => add(&api.errors, 1),
            Outcome::Respond(_) | Outcome::NoResponse => {
                let us = u64::try_from(timer.started.elapsed().as_micros()).unwrap_or(u64::MAX);
                api.record_latency(us);
            }
        }
    }

    /// Called after a response has been written to the socket.
    pub fn response_sent(&self, bytes: u64) {
        add(&self.bytes_sent, bytes);
    }

    /// Everything this shard reports, read on its own thread.
    pub fn snapshot(&self, shard: &Shard) -> ShardSnapshot {
        let read_cache = shard.cache().borrow().stats();
        let (metadata_end_offset, metadata_image_digest) =
            match shard.extension::<crate::node::state::BrokerState>() {
                Some(b) => {
                    let image = b.image();
                    ((image.offset + 1).max(0) as u64, image.digest() as u64)
                }
                None => (0, 0),
            };
        let (follower_fetch_sessions, consumer_fetch_sessions, fetch_session_partitions) =
            crate::server::handlers::fetch_sessions::FetchSessions::of(shard).with(|c| {
                let (followers, consumers) = c.count_by_kind();
                (
                    followers as u64,
                    consumers as u64,
                    c.partitions_cached() as u64,
                )
            });
        ShardSnapshot {
            shard: shard.id(),
            apis: SUPPORTED_APIS
                .iter()
                .zip(&self.apis)
                .map(|(a, p)| p.snapshot(a.key))
                .collect(),
            unknown_requests: self.unknown_requests.get(),
            bytes_received: self.bytes_received.get(),
            bytes_sent: self.bytes_sent.get(),
            partitions: shard.local_partitions().len() as u64,
            read_cache,
            metadata_end_offset,
            metadata_image_digest,
            follower_fetch_sessions,
            consumer_fetch_sessions,
            fetch_session_partitions,
            partition_load: PartitionLoad::of(shard).snapshot(),
            balancer_moves: crate::server::shard_placement::balancer::moves_off(shard),
        }
    }
}

/// Counters wrap rather than panic: a wrapped counter is a reset to
/// Prometheus, which it handles, and a panic would take the shard down.
fn add(c: &Cell<u64>, n: u64) {
    c.set(c.get().wrapping_add(n));
}

/// Bytes a response puts on the wire.
pub fn response_bytes(chunks: &[Chunk]) -> u64 {
    chunks.iter().map(|c| c.len() as u64).sum()
}

/// One API's metrics on one shard, at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiSnapshot {
    pub api: ApiKey,
    pub requests: u64,
    pub errors: u64,
    /// Cumulative counts: answered requests that took at most
    /// `LATENCY_BUCKET_BOUNDS_US[i]` µs (to within the histogram's 1%).
    pub latency_buckets: [u64; LATENCY_BUCKET_BOUNDS_US.len()],
    pub latency_count: u64,
    pub latency_sum_us: u64,
}

/// One shard's metrics at one moment: plain numbers, so it can be sent from
/// the shard that took it to the one that renders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardSnapshot {
    pub shard: usize,
    pub apis: Vec<ApiSnapshot>,
    pub unknown_requests: u64,
    pub bytes_received: u64,
    pub bytes_sent: u64,
    pub partitions: u64,
    /// The shard's read cache.
    pub read_cache: CacheStats,
    /// The offset after the last metadata record this shard applied.
    pub metadata_end_offset: u64,
    /// [`MetadataImage::digest`](crate::metadata::image::MetadataImage::digest)
    /// of the shard's image: equal on every shard of every broker that
    /// applied the same records.
    pub metadata_image_digest: u64,
    /// Incremental fetch sessions this shard holds for followers.
    pub follower_fetch_sessions: u64,
    /// Incremental fetch sessions this shard holds for consumers.
    pub consumer_fetch_sessions: u64,
    /// Partitions held by this shard's fetch sessions.
    pub fetch_session_partitions: u64,
    /// Bytes in and out of each partition this shard owns (with traffic).
    pub partition_load: Vec<(TopicPartition, LoadCounters)>,
    /// Partitions the core balancer moved off this shard.
    pub balancer_moves: u64,
}

/// The Prometheus text exposition format version [`render`] writes.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Renders snapshots in the Prometheus text format (version 0.0.4). Each
/// metric family is written once with its `# HELP` and `# TYPE`, followed
/// by every shard's samples, as the format requires.
pub fn render(shards: &[ShardSnapshot]) -> String {
    let mut out = String::new();
    per_api(
        &mut out,
        shards,
        "pinlog_requests_total",
        "counter",
        "Kafka requests received, by API.",
        |a| a.requests,
    );
    per_api(
        &mut out,
        shards,
        "pinlog_request_errors_total",
        "counter",
        "Kafka requests that closed the connection instead of being answered \
         (unsupported version, malformed body), by API.",
        |a| a.errors,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_requests_unknown_total",
        "counter",
        "Kafka request frames with an unreadable header or an unknown API key.",
        |s| s.unknown_requests,
    );
    family_header(
        &mut out,
        "pinlog_request_latency_seconds",
        "histogram",
        "Time from a Kafka request read to its response built, by API.",
    );
    for s in shards {
        for a in &s.apis {
            let labels = format!("shard=\"{}\",api=\"{}\"", s.shard, a.api.name());
            for (count, bound) in a.latency_buckets.iter().zip(LATENCY_BUCKET_BOUNDS_US) {
                let _ = writeln!(
                    out,
                    "pinlog_request_latency_seconds_bucket{{{labels},le=\"{}\"}} {count}",
                    micros_as_seconds(bound)
                );
            }
            let _ = writeln!(
                out,
                "pinlog_request_latency_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                a.latency_count
            );
            let _ = writeln!(
                out,
                "pinlog_request_latency_seconds_sum{{{labels}}} {}",
                micros_as_seconds(a.latency_sum_us)
            );
            let _ = writeln!(
                out,
                "pinlog_request_latency_seconds_count{{{labels}}} {}",
                a.latency_count
            );
        }
    }
    per_shard(
        &mut out,
        shards,
        "pinlog_bytes_received_total",
        "counter",
        "Kafka request bytes read from clients.",
        |s| s.bytes_received,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_bytes_sent_total",
        "counter",
        "Kafka response bytes written to clients.",
        |s| s.bytes_sent,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_partitions",
        "gauge",
        "Partitions this shard owns and has open.",
        |s| s.partitions,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_read_cache_hits_total",
        "counter",
        "Reads served from the shard's read cache.",
        |s| s.read_cache.hits,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_read_cache_misses_total",
        "counter",
        "Reads the shard's read cache could not serve (they went to the disk).",
        |s| s.read_cache.misses,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_read_cache_evictions_total",
        "counter",
        "Batches the shard's read cache dropped to make room.",
        |s| s.read_cache.evictions,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_read_cache_appended_bytes_total",
        "counter",
        "Bytes the shard's read cache took from appends.",
        |s| s.read_cache.appended_bytes,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_read_cache_filled_bytes_total",
        "counter",
        "Bytes the shard's read cache took from disk reads (read-through).",
        |s| s.read_cache.filled_bytes,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_read_cache_bytes",
        "gauge",
        "Bytes of batches held in the shard's read cache.",
        |s| s.read_cache.used_bytes,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_read_cache_batches",
        "gauge",
        "Batches held in the shard's read cache.",
        |s| s.read_cache.batches,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_read_cache_capacity_bytes",
        "gauge",
        "The shard's share of read.cache.bytes.",
        |s| s.read_cache.capacity_bytes,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_metadata_end_offset",
        "gauge",
        "The offset after the last metadata record the shard applied.",
        |s| s.metadata_end_offset,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_metadata_image_digest",
        "gauge",
        "CRC32C of the shard's metadata image: equal wherever the same records were applied.",
        |s| s.metadata_image_digest,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_fetch_sessions_follower",
        "gauge",
        "Incremental fetch sessions the shard holds for followers' replica fetchers.",
        |s| s.follower_fetch_sessions,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_fetch_sessions_consumer",
        "gauge",
        "Incremental fetch sessions the shard holds for consumers.",
        |s| s.consumer_fetch_sessions,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_fetch_session_partitions",
        "gauge",
        "Partitions held by the shard's fetch sessions (Kafka's NumIncrementalFetchPartitionsCached).",
        |s| s.fetch_session_partitions,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_shard_balancer_moves_total",
        "counter",
        "Partitions the core balancer moved off the shard (shard.balancer.enable).",
        |s| s.balancer_moves,
    );
    per_partition(
        &mut out,
        shards,
        "pinlog_partition_bytes_in_total",
        "Bytes of batches appended to the partition on its shard, as leader or follower, \
         since it came to the shard.",
        |c| c.bytes_in,
    );
    per_partition(
        &mut out,
        shards,
        "pinlog_partition_bytes_out_total",
        "Bytes of the partition read for fetches, by consumers and followers, since it came \
         to the shard.",
        |c| c.bytes_out,
    );
    out
}

/// A counter per partition, labelled with the shard that owns it.
fn per_partition(
    out: &mut String,
    shards: &[ShardSnapshot],
    name: &str,
    help: &str,
    value: impl Fn(&LoadCounters) -> u64,
) {
    family_header(out, name, "counter", help);
    for s in shards {
        for (tp, c) in &s.partition_load {
            let _ = writeln!(
                out,
                "{name}{{shard=\"{}\",topic=\"{}\",partition=\"{}\"}} {}",
                s.shard,
                tp.topic,
                tp.partition,
                value(c)
            );
        }
    }
}

// Writing to a String cannot fail, hence the ignored fmt results below.

fn family_header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn per_shard(
    out: &mut String,
    shards: &[ShardSnapshot],
    name: &str,
    kind: &str,
    help: &str,
    value: impl Fn(&ShardSnapshot) -> u64,
) {
    family_header(out, name, kind, help);
    for s in shards {
        let _ = writeln!(out, "{name}{{shard=\"{}\"}} {}", s.shard, value(s));
    }
}

fn per_api(
    out: &mut String,
    shards: &[ShardSnapshot],
    name: &str,
    kind: &str,
    help: &str,
    value: impl Fn(&ApiSnapshot) -> u64,
) {
    family_header(out, name, kind, help);
    for s in shards {
        for a in &s.apis {
            let _ = writeln!(
                out,
                "{name}{{shard=\"{}\",api=\"{}\"}} {}",
                s.shard,
                a.api.name(),
                value(a)
            );
        }
    }
}

/// Microseconds as a decimal number of seconds without trailing zeros
/// (`250` → `0.00025`, `1_000_000` → `1`), computed in integers so bucket
/// labels never carry float noise and stay identical from scrape to scrape.
fn micros_as_seconds(us: u64) -> String {
    let (whole, frac) = (us / 1_000_000, us % 1_000_000);
    if frac == 0 {
        return whole.to_string();
    }
    let digits = format!("{frac:06}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe_snapshot(probe: &ShardProbe, shard: usize) -> ShardSnapshot {
        ShardSnapshot {
            shard,
            apis: SUPPORTED_APIS
                .iter()
                .zip(&probe.apis)
                .map(|(a, p)| p.snapshot(a.key))
                .collect(),
            unknown_requests: probe.unknown_requests.get(),
            bytes_received: probe.bytes_received.get(),
            bytes_sent: probe.bytes_sent.get(),
            partitions: 3,
            read_cache: CacheStats {
                hits: 7,
                misses: 2,
                used_bytes: 4096,
                ..CacheStats::default()
            },
            metadata_end_offset: 12,
            metadata_image_digest: 99,
            follower_fetch_sessions: 1,
            consumer_fetch_sessions: 0,
            fetch_session_partitions: 5,
            partition_load: vec![(
                TopicPartition::new("orders", 2),
                LoadCounters {
                    bytes_in: 1000,
                    bytes_out: 3000,
                },
            )],
            balancer_moves: 1,
        }
    }

    fn timer(api: Option<ApiKey>) -> RequestTimer {
        RequestTimer {
            api,
            started: Instant::now(),
        }
    }

    #[test]
    fn seconds_labels_are_exact() {
        assert_eq!(micros_as_seconds(0), "0");
        assert_eq!(micros_as_seconds(100), "0.0001");
        assert_eq!(micros_as_seconds(250), "0.00025");
        assert_eq!(micros_as_seconds(2_500_000), "2.5");
        assert_eq!(micros_as_seconds(10_000_000), "10");
        assert_eq!(micros_as_seconds(1_234_567), "1.234567");
    }

    #[test]
    fn request_outcomes_are_counted_per_api() {
        let p = ShardProbe::new();
        let frame = (ApiKey::Metadata as i16).to_be_bytes();
        let t = p.request_started(&frame);
        assert_eq!(t.api, Some(ApiKey::Metadata));
        p.request_finished(t, &Outcome::NoResponse);
        p.request_finished(timer(Some(ApiKey::Metadata)), &Outcome::Close("x".into()));
        p.request_finished(timer(None), &Outcome::Close("x".into()));
        let unknown = p.request_started(&[0x7f, 0x7f, 0, 0]);
        assert_eq!(unknown.api, None);
        p.response_sent(10);
        let s = probe_snapshot(&p, 0);
        let m = &s.apis[SUPPORTED_APIS
            .iter()
            .position(|a| a.key == ApiKey::Metadata)
            .unwrap()];
        assert_eq!((m.requests, m.errors, m.latency_count), (2, 1, 1));
        assert_eq!(s.unknown_requests, 1);
        assert_eq!(s.bytes_received, 2 + 4 + 4 + 4);
        assert_eq!(s.bytes_sent, 10);
    }

    #[test]
    fn latency_buckets_are_cumulative() {
        let p = ShardProbe::new();
        for us in [50, 200, 3_000, 20_000_000, 100_000_000] {
            p.api(ApiKey::Produce).record_latency(us);
        }
        let s = probe_snapshot(&p, 0);
        let a = &s.apis[0];
        assert_eq!(a.api, ApiKey::Produce);
        // Beyond the trackable maximum a value is clamped in the buckets but
        // exact in the sum.
        assert_eq!(a.latency_count, 5);
        assert_eq!(a.latency_sum_us, 120_003_250);
        assert_eq!(a.latency_buckets[0], 1, "≤100 µs");
        assert_eq!(a.latency_buckets[1], 2, "≤250 µs");
        assert_eq!(a.latency_buckets[5], 3, "≤5 ms");
        assert_eq!(*a.latency_buckets.last().unwrap(), 3, "≤10 s");
        assert!(a.latency_buckets.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn render_writes_each_family_once_with_every_shard() {
        let p = ShardProbe::new();
        p.api(ApiKey::ApiVersions).record_latency(10);
        p.api(ApiKey::ApiVersions).requests.set(1);
        let text = render(&[probe_snapshot(&p, 0), probe_snapshot(&p, 1)]);
        for family in [
            "pinlog_requests_total",
            "pinlog_request_errors_total",
            "pinlog_request_latency_seconds",
            "pinlog_bytes_received_total",
            "pinlog_bytes_sent_total",
            "pinlog_partitions",
            "pinlog_read_cache_hits_total",
            "pinlog_read_cache_misses_total",
            "pinlog_read_cache_evictions_total",
            "pinlog_read_cache_appended_bytes_total",
            "pinlog_read_cache_filled_bytes_total",
            "pinlog_metadata_end_offset",
            "pinlog_metadata_image_digest",
            "pinlog_read_cache_bytes",
            "pinlog_read_cache_batches",
            "pinlog_read_cache_capacity_bytes",
            "pinlog_fetch_sessions_follower",
            "pinlog_fetch_sessions_consumer",
            "pinlog_fetch_session_partitions",
        ] {
            assert_eq!(
                text.matches(&format!("# TYPE {family} ")).count(),
                1,
                "{family}"
            );
        }
        assert!(text.contains("pinlog_requests_total{shard=\"1\",api=\"ApiVersions\"} 1\n"));
        assert!(text.contains(
            "pinlog_request_latency_seconds_bucket{shard=\"0\",api=\"ApiVersions\",le=\"0.0001\"} 1\n"
        ));
        assert!(text.contains(
            "pinlog_request_latency_seconds_bucket{shard=\"0\",api=\"ApiVersions\",le=\"+Inf\"} 1\n"
        ));
        assert!(
            text.contains("pinlog_request_latency_seconds_count{shard=\"0\",api=\"Fetch\"} 0\n")
        );
        assert!(text.contains("pinlog_partitions{shard=\"1\"} 3\n"));
        assert!(text.contains(
            "pinlog_partition_bytes_out_total{shard=\"1\",topic=\"orders\",partition=\"2\"} 3000\n"
        ));
        assert!(text.contains("pinlog_shard_balancer_moves_total{shard=\"0\"} 1\n"));
        assert!(text.contains("pinlog_read_cache_bytes{shard=\"0\"} 4096\n"));
        // Every sample line is `name{labels} value` with a numeric value.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, value) = line.rsplit_once(' ').expect(line);
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
    }
}
