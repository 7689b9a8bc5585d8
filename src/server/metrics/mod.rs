//! The scrape: each shard's counters gathered into a [`ShardSnapshot`] and
//! rendered as Prometheus text.
//!
//! Like Redpanda's probes, each shard counts into its own [`ShardProbe`]
//! (`network/request_probe.rs`, a shard extension of plain `Cell`s and
//! `RefCell`s): a request never touches memory another core writes, so
//! there is no atomic and no shared cache line on the hot path. The cost
//! moves to the scrape instead: the HTTP endpoint on shard 0 asks every
//! shard for a [`ShardSnapshot`] (plain numbers, so it can cross cores)
//! and renders them with [`render`].
//!
//! Latency is kept per API in an HdrHistogram of microseconds, measured from
//! a frame fully read to its response built. The exposition uses fixed
//! Prometheus buckets ([`LATENCY_BUCKET_BOUNDS_US`]) read out of the
//! HdrHistogram at scrape time, so the bucket layout can change without
//! touching the hot path, and the exact sum of latencies is kept beside it
//! for `_sum`.

pub mod http;

use std::fmt::Write as _;

use crate::log::batch_cache::CacheStats;
use crate::node::partition_load::{LoadCounters, PartitionLoad};
use crate::server::network::request_probe::{ApiSnapshot, ShardProbe, LATENCY_BUCKET_BOUNDS_US};
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// Everything `shard` reports, read on its own thread.
pub fn snapshot(shard: &Shard) -> ShardSnapshot {
    let probe = ShardProbe::of(shard);
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
        apis: probe.api_snapshots(),
        unknown_requests: probe.unknown_requests(),
        bytes_received: probe.bytes_received(),
        bytes_sent: probe.bytes_sent(),
        partitions: shard.local_partitions().len() as u64,
        read_cache,
        metadata_end_offset,
        metadata_image_digest,
        follower_fetch_sessions,
        consumer_fetch_sessions,
        fetch_session_partitions,
        partition_load: PartitionLoad::of(shard).snapshot(),
        balancer_moves: crate::server::shard_placement::balancer::moves_off(shard),
        fetches_of_writes_in_flight: crate::node::in_flight_appends::InFlightAppends::of(shard)
            .fetches_served(),
        fetches_answered_for_gains: crate::node::follower_gains::FollowerGains::of(shard)
            .borrow()
            .answered_early(),
    }
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
    /// Followers' fetches answered from a leader's write still in flight.
    pub fetches_of_writes_in_flight: u64,
    /// Followers' parked fetches answered early because an image gave the
    /// follower a partition on this leader (`node::follower_gains`).
    pub fetches_answered_for_gains: u64,
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
        "Memory the shard's read cache keeps alive: each buffer its batches are cut from, once.",
        |s| s.read_cache.used_bytes,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_read_cache_batch_bytes",
        "gauge",
        "Bytes of the batches in the shard's read cache (at most pinlog_read_cache_bytes).",
        |s| s.read_cache.batch_bytes,
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
        "The shard's read cache budget now: its ceiling, less when the machine is short of memory.",
        |s| s.read_cache.capacity_bytes,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_read_cache_ceiling_bytes",
        "gauge",
        "The most the shard's read cache budget may be: its share of read.cache.bytes or the default.",
        |s| s.read_cache.ceiling_bytes,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_read_cache_spare_bytes",
        "gauge",
        "Freed blocks of the shard's read cache kept for reuse (not in pinlog_read_cache_bytes).",
        |s| s.read_cache.spare_bytes,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_read_cache_blocks_mapped_total",
        "counter",
        "Memory blocks the shard's read cache took from the kernel for its copies.",
        |s| s.read_cache.blocks_mapped,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_read_cache_blocks_reused_total",
        "counter",
        "Freed blocks the shard's read cache used again instead of taking new memory.",
        |s| s.read_cache.blocks_reused,
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
        "pinlog_replica_fetches_of_writes_in_flight_total",
        "counter",
        "Followers' fetches answered with a leader's group commit while its write was still in flight.",
        |s| s.fetches_of_writes_in_flight,
    );
    per_shard(
        &mut out,
        shards,
        "pinlog_replica_fetches_answered_for_gains_total",
        "counter",
        "Followers' parked fetches answered early because the follower gained a partition on this leader.",
        |s| s.fetches_answered_for_gains,
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
    use crate::protocol::api::ApiKey;

    fn probe_snapshot(probe: &ShardProbe, shard: usize) -> ShardSnapshot {
        ShardSnapshot {
            shard,
            apis: probe.api_snapshots(),
            unknown_requests: probe.unknown_requests(),
            bytes_received: probe.bytes_received(),
            bytes_sent: probe.bytes_sent(),
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
            fetches_of_writes_in_flight: 4,
            fetches_answered_for_gains: 2,
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
    fn render_writes_each_family_once_with_every_shard() {
        let p = ShardProbe::new();
        p.record_answered(ApiKey::ApiVersions, 10);
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
            "pinlog_read_cache_batch_bytes",
            "pinlog_read_cache_ceiling_bytes",
            "pinlog_read_cache_spare_bytes",
            "pinlog_read_cache_blocks_mapped_total",
            "pinlog_read_cache_blocks_reused_total",
            "pinlog_fetch_sessions_follower",
            "pinlog_fetch_sessions_consumer",
            "pinlog_fetch_session_partitions",
            "pinlog_replica_fetches_of_writes_in_flight_total",
            "pinlog_replica_fetches_answered_for_gains_total",
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
