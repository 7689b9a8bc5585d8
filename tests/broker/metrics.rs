//! The Prometheus endpoint of a real `pinlog serve` process with two shards.
//!
//! Requests go in over pinlog's own codec, then `GET /metrics` over a raw
//! socket must show every shard's series and request counts that moved by
//! exactly what was sent. Every wait is bounded, and the broker is stopped
//! with SIGTERM as an operator would, so the test also checks that the
//! endpoint does not hold up shutdown.

use crate::support;

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::time::Duration;

use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code;
use pinlog::protocol::messages::api_versions::{ApiVersionsRequest, ApiVersionsResponse};
use pinlog::protocol::messages::metadata::{MetadataRequest, MetadataResponse};
use support::kafka_conn::Conn;
use support::{free_port, run_command, Broker, BrokerOpts, PINLOG_BIN};

/// Upper bound on any socket read or write.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a broker that cannot start gets to exit.
const EXIT_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest metrics page the test reads.
const RESPONSE_MAX_BYTES: usize = 4 * 1024 * 1024;
const CLIENT_ID: &str = "metrics-test";
const SHARDS: usize = 2;

/// A two-shard broker with `metrics.listen` on a port of the test's choice,
/// so the test knows where to scrape.
fn start_broker() -> (Broker, SocketAddr) {
    let metrics_addr = local_addr(free_port());
    let broker = Broker::start(
        BrokerOpts::new()
            .shards(SHARDS)
            .setting("metrics.listen", metrics_addr.to_string()),
    );
    (broker, metrics_addr)
}

fn kafka_addr(broker: &Broker) -> SocketAddr {
    local_addr(broker.port())
}

fn local_addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn connect(addr: SocketAddr) -> std::io::Result<TcpStream> {
    let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    Ok(stream)
}

// ---------------------------------------------------------------------------
// A minimal blocking Kafka client on pinlog's own codec.
// ---------------------------------------------------------------------------

impl Conn {
    fn api_versions(&mut self) {
        let version = 3;
        let mut r = self.call(ApiKey::ApiVersions, version, |w| {
            ApiVersionsRequest {
                client_software_name: CLIENT_ID.into(),
                client_software_version: "1".into(),
            }
            .encode(w, version)
        });
        let resp = ApiVersionsResponse::decode(&mut r, version).expect("decode ApiVersions");
        assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
    }

    fn metadata(&mut self) -> MetadataResponse {
        let version = 12;
        let mut r = self.call(ApiKey::Metadata, version, |w| {
            MetadataRequest {
                allow_auto_topic_creation: false,
                ..Default::default()
            }
            .encode(w, version)
        });
        MetadataResponse::decode(&mut r, version).expect("decode Metadata response")
    }
}

fn invalid(e: impl ToString) -> std::io::Error {
    std::io::Error::new(ErrorKind::InvalidData, e.to_string())
}

// ---------------------------------------------------------------------------
// HTTP and the Prometheus text format.
// ---------------------------------------------------------------------------

/// `GET path` over a raw socket; returns (status line, headers, body). The
/// endpoint closes the connection after one response, so the body runs to
/// the end of the stream.
fn http_get(addr: SocketAddr, path: &str) -> std::io::Result<(String, String, String)> {
    let mut s = connect(addr)?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: {CLIENT_ID}\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    s.take(RESPONSE_MAX_BYTES as u64 + 1)
        .read_to_end(&mut raw)?;
    if raw.len() > RESPONSE_MAX_BYTES {
        return Err(invalid("metrics response too large"));
    }
    let text = String::from_utf8(raw).map_err(invalid)?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| invalid(format!("no end of headers in {text:?}")))?;
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    Ok((status.to_string(), headers.to_string(), body.to_string()))
}

/// Samples by series (`name{labels}`), checking each line's shape.
fn parse_samples(body: &str) -> BTreeMap<String, f64> {
    let mut samples = BTreeMap::new();
    for line in body.lines() {
        if line.is_empty() || line.starts_with("# HELP ") || line.starts_with("# TYPE ") {
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("malformed sample line {line:?}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("non-numeric value in {line:?}"));
        assert!(
            samples.insert(series.to_string(), value).is_none(),
            "series {series} appears twice"
        );
    }
    samples
}

fn scrape(addr: SocketAddr) -> BTreeMap<String, f64> {
    let (status, headers, body) = http_get(addr, "/metrics").expect("GET /metrics");
    assert_eq!(status, "HTTP/1.1 200 OK", "{headers}\n{body}");
    assert!(
        headers
            .to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{headers}"
    );
    parse_samples(&body)
}

fn sample(samples: &BTreeMap<String, f64>, series: &str) -> f64 {
    *samples
        .get(series)
        .unwrap_or_else(|| panic!("no series {series} in the scrape"))
}

/// A per-API series summed over the shards.
fn api_total(samples: &BTreeMap<String, f64>, name: &str, api: &str) -> f64 {
    (0..SHARDS)
        .map(|s| sample(samples, &format!("{name}{{shard=\"{s}\",api=\"{api}\"}}")))
        .sum()
}

/// A per-shard series summed over the shards.
fn shard_total(samples: &BTreeMap<String, f64>, name: &str) -> f64 {
    (0..SHARDS)
        .map(|s| sample(samples, &format!("{name}{{shard=\"{s}\"}}")))
        .sum()
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[test]
fn metrics_endpoint_reports_every_shard() {
    let (mut broker, metrics_addr) = start_broker();
    let before = scrape(metrics_addr);

    // Every shard's series exist from the start, whether or not it has had a
    // connection yet.
    for s in 0..SHARDS {
        for name in [
            "pinlog_bytes_received_total",
            "pinlog_bytes_sent_total",
            "pinlog_partitions",
            "pinlog_read_cache_hits_total",
            "pinlog_read_cache_misses_total",
            "pinlog_read_cache_evictions_total",
            "pinlog_read_cache_bytes",
            "pinlog_read_cache_capacity_bytes",
        ] {
            sample(&before, &format!("{name}{{shard=\"{s}\"}}"));
        }
        for api in ["ApiVersions", "Metadata", "Produce", "Fetch"] {
            let labels = format!("shard=\"{s}\",api=\"{api}\"");
            sample(&before, &format!("pinlog_requests_total{{{labels}}}"));
            sample(&before, &format!("pinlog_request_errors_total{{{labels}}}"));
            sample(
                &before,
                &format!("pinlog_request_latency_seconds_bucket{{{labels},le=\"+Inf\"}}"),
            );
            sample(
                &before,
                &format!("pinlog_request_latency_seconds_bucket{{{labels},le=\"0.001\"}}"),
            );
            sample(
                &before,
                &format!("pinlog_request_latency_seconds_sum{{{labels}}}"),
            );
            sample(
                &before,
                &format!("pinlog_request_latency_seconds_count{{{labels}}}"),
            );
        }
    }

    // Several connections, so that SO_REUSEPORT spreads them over shards.
    const CONNECTIONS: usize = 8;
    const API_VERSIONS_PER_CONNECTION: usize = 3;
    const METADATA_PER_CONNECTION: usize = 2;
    for _ in 0..CONNECTIONS {
        let mut c =
            Conn::open(kafka_addr(&broker), CLIENT_ID, IO_TIMEOUT).expect("connect to the broker");
        for _ in 0..API_VERSIONS_PER_CONNECTION {
            c.api_versions();
        }
        for _ in 0..METADATA_PER_CONNECTION {
            c.metadata();
        }
    }
    Conn::open(kafka_addr(&broker), CLIENT_ID, IO_TIMEOUT)
        .expect("connect to the broker")
        .create_topic("metrics-topic", 4, &[]);

    let after = scrape(metrics_addr);
    // Requests are counted before their response is written, so by now the
    // counts are exact: this test is the broker's only client.
    let moved =
        |name: &str, api: &str| api_total(&after, name, api) - api_total(&before, name, api);
    let api_versions = (CONNECTIONS * API_VERSIONS_PER_CONNECTION) as f64;
    let metadata = (CONNECTIONS * METADATA_PER_CONNECTION) as f64;
    assert_eq!(moved("pinlog_requests_total", "ApiVersions"), api_versions);
    assert_eq!(moved("pinlog_requests_total", "Metadata"), metadata);
    assert_eq!(moved("pinlog_requests_total", "CreateTopics"), 1.0);
    assert_eq!(moved("pinlog_request_errors_total", "Metadata"), 0.0);
    let latency =
        |series: &str, api: &str| moved(&format!("pinlog_request_latency_seconds_{series}"), api);
    assert_eq!(latency("count", "Metadata"), metadata);
    assert!(latency("sum", "Metadata") > 0.0);
    for s in 0..SHARDS {
        // Buckets are cumulative and end at the count.
        let labels = format!("shard=\"{s}\",api=\"Metadata\"");
        let buckets: Vec<f64> = after
            .iter()
            .filter(|(k, _)| {
                k.starts_with(&format!("pinlog_request_latency_seconds_bucket{{{labels},"))
            })
            .map(|(_, v)| *v)
            .collect();
        assert!(buckets.len() > 2, "{buckets:?}");
        let inf = sample(
            &after,
            &format!("pinlog_request_latency_seconds_bucket{{{labels},le=\"+Inf\"}}"),
        );
        let count = sample(
            &after,
            &format!("pinlog_request_latency_seconds_count{{{labels}}}"),
        );
        assert_eq!(inf, count);
        assert!(buckets.iter().all(|b| *b <= inf), "{buckets:?}");
    }
    assert!(
        shard_total(&after, "pinlog_bytes_received_total")
            > shard_total(&before, "pinlog_bytes_received_total")
    );
    assert!(
        shard_total(&after, "pinlog_bytes_sent_total")
            > shard_total(&before, "pinlog_bytes_sent_total")
    );
    // The new topic's partitions are spread over the shards.
    assert_eq!(
        shard_total(&after, "pinlog_partitions") - shard_total(&before, "pinlog_partitions"),
        4.0
    );

    // Anything but GET /metrics is not found.
    let (status, _, _) = http_get(metrics_addr, "/").expect("GET /");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    // An oversized request head is refused, not buffered.
    let mut s = connect(metrics_addr).expect("connect to metrics");
    let filler = "a".repeat(16 * 1024);
    // The endpoint may answer and close before it has read everything.
    let _ = write!(s, "GET /metrics HTTP/1.1\r\nX-Filler: {filler}\r\n\r\n");
    let mut answer = String::new();
    let _ = s.take(4096).read_to_string(&mut answer);
    assert!(
        answer.starts_with("HTTP/1.1 431 "),
        "answer to an oversized head: {answer:?}"
    );
    // A client that connects and says nothing does not hold up a scrape.
    let idle = connect(metrics_addr).expect("connect to metrics");
    scrape(metrics_addr);
    drop(idle);

    // SIGTERM; asserts exit 0 and a clean shutdown.
    broker.stop();
    // The endpoint closed with the broker.
    assert!(TcpListener::bind(metrics_addr).is_ok());
}

/// A second broker configured with a metrics port that a running broker
/// holds must refuse to start, not share the port (glommio's own bind sets
/// SO_REUSEPORT, which would let both listen and split the scrapes).
#[test]
fn metrics_port_in_use_is_a_clear_startup_error() {
    let (mut first, metrics_addr) = start_broker();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("pinlog.toml");
    std::fs::write(
        &config,
        format!("\"metrics.listen\" = \"{metrics_addr}\"\n"),
    )
    .expect("write the second broker's settings");
    let second = run_command(
        Command::new(PINLOG_BIN)
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .arg("--listen")
            .arg(local_addr(free_port()).to_string())
            .arg("--shards")
            .arg(SHARDS.to_string())
            .arg("--config")
            .arg(&config)
            .env("NO_COLOR", "1"),
        None,
        EXIT_TIMEOUT,
    );
    assert!(
        !second.timed_out(),
        "the second broker kept running:\n{second}"
    );
    assert!(!second.success(), "the second broker started:\n{second}");
    assert!(
        second.stderr.contains(&format!(
            "metrics.listen {metrics_addr} is in use; set another in the config file"
        )),
        "{second}"
    );
    // The first broker still owns the endpoint.
    scrape(metrics_addr);
    first.stop();
}
