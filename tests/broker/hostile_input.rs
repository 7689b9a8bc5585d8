//! Hostile input against a real `pinlog serve` process.
//!
//! Each test sends one kind of malformed, truncated, oversized or replayed
//! traffic and then checks that the broker process is still alive and still
//! answers an ApiVersions round trip on a fresh connection: a broker that
//! survives garbage but stops accepting clients has failed just the same.
//!
//! Every test starts its own broker so that one test's traffic cannot
//! disturb another's measurements (the RSS check in particular), and every
//! socket read is bounded by a timeout so that a broker that hangs fails the
//! test instead of hanging it.

use crate::support;

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use pinlog::log::batch::{self, BatchIter, BatchSpec, CountRule, RecordSpec};
use pinlog::protocol::api::{ApiKey, SUPPORTED_APIS};
use pinlog::protocol::chunks::RecordData;
use pinlog::protocol::codec::Reader;
use pinlog::protocol::error_code;
use pinlog::protocol::header::{decode_response_header, RequestHeader};
use pinlog::protocol::messages::api_versions::{ApiVersionsRequest, ApiVersionsResponse};
use pinlog::protocol::messages::fetch::{FetchPartition, FetchRequest, FetchResponse, FetchTopic};
use pinlog::protocol::messages::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
use pinlog::protocol::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsResponse, ListOffsetsTopic,
};
use pinlog::protocol::messages::produce::{
    PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData,
};
use support::free_port;
use support::kafka_conn::{read_frame, Conn};
use tempfile::TempDir;

/// Upper bound on any single socket read; a broker that neither answers nor
/// closes within it is hung as far as a client is concerned.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a freshly spawned broker gets to start answering.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// The broker's default `socket.request.max.bytes` (100 MiB).
const SOCKET_REQUEST_MAX_BYTES: i32 = 100 * 1024 * 1024;
/// Largest response these tests accept, so that a corrupt size prefix from
/// the broker cannot make the test itself allocate without bound.
const CLIENT_ID: &str = "hostile-input";

// ---------------------------------------------------------------------------
// A private broker launcher (tests/support/mod.rs did not exist when this
// file was written).
// ---------------------------------------------------------------------------

/// A `pinlog serve` child process on a private data dir and port, killed on
/// drop.
struct Broker {
    child: Child,
    addr: SocketAddr,
    log_path: PathBuf,
    // Held so the data dir outlives the process.
    _dir: TempDir,
}

impl Broker {
    fn start() -> Broker {
        Broker::start_with("")
    }

    /// A broker whose config file also holds `settings` (TOML lines).
    fn start_with(settings: &str) -> Broker {
        // The port is picked by binding port 0 and releasing it, which races
        // with other processes picking ports; a start that fails is retried on
        // a new port before giving up.
        let mut last_log = String::new();
        for _attempt in 0..3 {
            match Broker::try_start(settings) {
                Ok(b) => return b,
                Err(log) => last_log = log,
            }
        }
        panic!("pinlog serve did not start; its log:\n{last_log}");
    }

    fn try_start(settings: &str) -> Result<Broker, String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        // Kafka's metrics port is a fixed default; a private one keeps the
        // brokers that tests start in parallel from colliding on it.
        let config = dir.path().join("broker.toml");
        std::fs::write(
            &config,
            format!(
                "\"metrics.listen\" = \"127.0.0.1:{}\"\n{settings}\n",
                free_port()
            ),
        )
        .expect("write broker config");
        let log_path = dir.path().join("broker.log");
        let log = File::create(&log_path).expect("create broker log");
        let child = Command::new(env!("CARGO_BIN_EXE_pinlog"))
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--shards")
            .arg("2")
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn pinlog serve");
        let mut broker = Broker {
            child,
            addr,
            log_path,
            _dir: dir,
        };
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Ok(Some(status)) = broker.child.try_wait() {
                return Err(format!("exited with {status}\n{}", broker.log()));
            }
            if api_versions_round_trip(broker.addr).is_ok() {
                return Ok(broker);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "no answer within {STARTUP_TIMEOUT:?}\n{}",
                    broker.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn connect(&self) -> Conn {
        Conn::open(self.addr, CLIENT_ID, READ_TIMEOUT).expect("connect to broker")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The check every test ends with: the process has not exited and a new
    /// connection still gets an ApiVersions answer.
    fn assert_serving(&mut self, after: &str) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "broker exited ({status}) after {after}; its log:\n{}",
                self.log()
            );
        }
        if let Err(e) = api_versions_round_trip(self.addr) {
            panic!(
                "broker no longer serves a new connection after {after}: {e}; its log:\n{}",
                self.log()
            );
        }
    }

    /// A field of /proc/<pid>/status, in KiB (VmRSS, VmSize, ...).
    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("read /proc/<pid>/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/<pid>/status"))
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            // The broker's own account is usually what explains a failure.
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!("--- last broker log lines ---");
            for l in tail.iter().rev() {
                eprintln!("{l}");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Raw frames; the client is tests/support/kafka_conn.rs.
// ---------------------------------------------------------------------------

/// Frames a request: size prefix, header of `header_version`, body.
fn frame(
    api_key: i16,
    api_version: i16,
    header_version: i16,
    correlation_id: i32,
    body: &[u8],
) -> Vec<u8> {
    let mut b = BytesMut::new();
    b.put_i32(0);
    RequestHeader {
        api_key,
        api_version,
        correlation_id,
        client_id: Some(CLIENT_ID.into()),
    }
    .encode(&mut b, header_version);
    b.put_slice(body);
    let size = (b.len() - 4) as i32;
    b[..4].copy_from_slice(&size.to_be_bytes());
    b.to_vec()
}

/// ApiVersions v3 on a fresh connection: the probe that says the broker still
/// serves. Errors rather than panics so that the launcher can poll with it.
fn api_versions_round_trip(addr: SocketAddr) -> std::io::Result<()> {
    let invalid = |m: String| std::io::Error::new(ErrorKind::InvalidData, m);
    let mut c = Conn::open(addr, CLIENT_ID, READ_TIMEOUT)?;
    let version = 3;
    let req = ApiVersionsRequest {
        client_software_name: CLIENT_ID.into(),
        client_software_version: "1".into(),
    };
    let mut body = BytesMut::new();
    req.encode(&mut body, version);
    let key = ApiKey::ApiVersions;
    c.stream.write_all(&frame(
        key as i16,
        version,
        key.request_header_version(version),
        7,
        &body,
    ))?;
    let mut r = Reader::new(read_frame(&mut c.stream)?);
    let id = decode_response_header(&mut r, key.response_header_version(version))
        .map_err(|e| invalid(e.to_string()))?;
    if id != 7 {
        return Err(invalid(format!("correlation id {id}, expected 7")));
    }
    let resp = ApiVersionsResponse::decode(&mut r, version).map_err(|e| invalid(e.to_string()))?;
    if resp.error_code != error_code::NONE || !resp.api_keys.iter().any(|k| k.api_key == 18) {
        return Err(invalid(format!("unexpected ApiVersions response {resp:?}")));
    }
    Ok(())
}

/// A small deterministic PRNG (xorshift64*): the garbage must be the same on
/// every run so that a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

// ---------------------------------------------------------------------------
// The tests.
// ---------------------------------------------------------------------------

/// The 12-byte ProduceRequest v8 body that makes kafka-protocol 0.18 abort
/// (it reserves a Vec of i32::MAX topics): a null transactional id, acks,
/// timeout, and a topic array claiming i32::MAX entries. pinlog must refuse
/// the count against the bytes that remain and close the connection.
#[test]
fn produce_with_i32_max_topic_count_closes_the_connection() {
    let mut broker = Broker::start();
    let body: [u8; 12] = [
        0xff, 0xff, // transactional_id: null
        0x00, 0x01, // acks: 1
        0x00, 0x00, 0x75, 0x30, // timeout_ms: 30000
        0x7f, 0xff, 0xff, 0xff, // topics: i32::MAX entries
    ];
    let mut c = broker.connect();
    c.send_raw(&frame(0, 8, 1, 1, &body));
    c.assert_closed_by_broker("a Produce v8 claiming i32::MAX topics");
    broker.assert_serving("a Produce v8 claiming i32::MAX topics");
}

/// Random frames with a valid size prefix: half with random bytes all
/// through, half starting with a supported (api key, version) so that the
/// body reaches each API's decoder. Each connection must end (the broker
/// closes on a frame it cannot decode), and the broker must stay up.
#[test]
fn random_garbage_frames_are_survived() {
    let mut broker = Broker::start();
    let mut rng = Rng(0x5eed_0f9a_2ba9_e5c3);
    let mut sizes: Vec<usize> = (0..=24).collect();
    sizes.extend([
        31,
        63,
        64,
        100,
        255,
        256,
        1000,
        4095,
        4096,
        65_535,
        65_536,
        65_537,
        1 << 20,
    ]);
    sizes.extend((0..120).map(|_| rng.below(600) as usize));
    for (i, &size) in sizes.iter().enumerate() {
        let mut body = rng.bytes(size);
        if i % 2 == 1 && size >= 4 {
            let api = &SUPPORTED_APIS[rng.below(SUPPORTED_APIS.len() as u64) as usize];
            let span = (api.max_version - api.min_version + 1) as u64;
            let version = api.min_version + rng.below(span) as i16;
            body[..2].copy_from_slice(&(api.key as i16).to_be_bytes());
            body[2..4].copy_from_slice(&version.to_be_bytes());
        }
        let mut c = broker.connect();
        let mut f = (size as i32).to_be_bytes().to_vec();
        f.extend_from_slice(&body);
        // The broker may close before reading the whole frame; a failed
        // write is then expected, not an error.
        let _ = c.stream.write_all(&f);
        let what = format!(
            "garbage frame #{i} ({size} bytes, starts {:02x?})",
            &body[..body.len().min(8)]
        );
        // A frame that does not decode must make the broker close the
        // connection by itself. One that happens to decode gets an answer;
        // the client then hangs up and the broker must close too.
        let mut buf = [0u8; 4096];
        loop {
            match c.stream.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {
                    let _ = c.stream.shutdown(Shutdown::Write);
                }
                Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("{what}: the broker neither answered nor closed: {e}"),
            }
        }
        if i % 25 == 0 {
            broker.assert_serving(&format!("garbage frame #{i}"));
        }
    }
    broker.assert_serving(&format!("{} garbage frames", sizes.len()));
}

/// Frames whose size prefix promises more than arrives.
#[test]
fn truncated_frames_are_survived() {
    let mut broker = Broker::start();

    // A size prefix cut in half, then the client goes away.
    let mut c = broker.connect();
    c.send_raw(&[0x00, 0x00]);
    drop(c);
    broker.assert_serving("a frame cut inside its size prefix");

    // A frame that says 100 bytes, holds a valid Metadata header and stops
    // after 10 more bytes; the client closes.
    let mut c = broker.connect();
    let mut f = frame(3, 1, 1, 1, &[]);
    f[..4].copy_from_slice(&100i32.to_be_bytes());
    f.extend_from_slice(&[0u8; 10]);
    c.send_raw(&f);
    drop(c);
    broker.assert_serving("a frame closed after part of its body");

    // The same but the client stays connected: the broker waits for the
    // rest on that connection while serving others.
    let mut stalled = broker.connect();
    let mut f = frame(3, 1, 1, 1, &[]);
    f[..4].copy_from_slice(&1000i32.to_be_bytes());
    stalled.send_raw(&f);
    broker.assert_serving("a stalled partial frame on another connection");
    drop(stalled);
    broker.assert_serving("a stalled partial frame whose client closed");
}

/// Negative and oversized size prefixes close the connection before anything
/// of the claimed size is allocated; a legal but huge size that never
/// arrives must not be allocated up front either.
#[test]
fn negative_and_oversized_lengths_close_without_allocating() {
    let mut broker = Broker::start();
    // Warm up: the first connections allocate per-connection state, which is
    // not what is measured here.
    for _ in 0..3 {
        broker.assert_serving("warm-up");
    }
    let rss_before = broker.status_kib("VmRSS");
    let vm_before = broker.status_kib("VmSize");

    for size in [-1i32, -2, i32::MIN] {
        let mut c = broker.connect();
        c.send_raw(&size.to_be_bytes());
        c.assert_closed_by_broker(&format!("frame size {size}"));
    }
    broker.assert_serving("negative frame sizes");

    for size in [
        SOCKET_REQUEST_MAX_BYTES + 1,
        SOCKET_REQUEST_MAX_BYTES * 2,
        i32::MAX,
    ] {
        let mut c = broker.connect();
        // A real header after the size, so that only the size is wrong.
        let mut f = frame(18, 0, 1, 1, &[]);
        f[..4].copy_from_slice(&size.to_be_bytes());
        // The broker may close after the 4 size bytes, before the rest.
        let _ = c.stream.write_all(&f);
        c.assert_closed_by_broker(&format!("frame size {size}"));
    }
    broker.assert_serving("oversized frame sizes");

    // Exactly socket.request.max.bytes is legal: the broker must wait for the
    // bytes, reading them as they come, not reserve 100 MiB up front.
    let mut pending = Vec::new();
    for _ in 0..4 {
        let mut c = broker.connect();
        let mut f = frame(18, 0, 1, 1, &[]);
        f[..4].copy_from_slice(&SOCKET_REQUEST_MAX_BYTES.to_be_bytes());
        c.send_raw(&f);
        pending.push(c);
    }
    // The round trip on a fresh connection orders this after the broker has
    // accepted (and started reading) the pending ones.
    broker.assert_serving("frames announcing socket.request.max.bytes");
    std::thread::sleep(Duration::from_millis(200));
    let rss_pending = broker.status_kib("VmRSS");
    let vm_pending = broker.status_kib("VmSize");
    drop(pending);
    broker.assert_serving("frames announcing socket.request.max.bytes, closed");
    let rss_after = broker.status_kib("VmRSS");

    eprintln!(
        "VmRSS kB: before {rss_before}, pending {rss_pending}, after {rss_after}; \
         VmSize kB: before {vm_before}, pending {vm_pending}"
    );
    // 100 MiB is the size that must not show up; 32 MiB leaves room for
    // allocator noise and buffers while still catching a single claimed
    // frame being reserved.
    const LIMIT_KIB: u64 = 32 * 1024;
    for (when, rss) in [
        ("while frames were pending", rss_pending),
        ("after", rss_after),
    ] {
        assert!(
            rss.saturating_sub(rss_before) < LIMIT_KIB,
            "VmRSS grew from {rss_before} kB to {rss} kB {when}"
        );
    }
    // Untouched allocations do not show in RSS but do in the address space:
    // any one of the four pending 100 MiB frames reserved up front would.
    assert!(
        vm_pending.saturating_sub(vm_before) < LIMIT_KIB * 2,
        "VmSize grew from {vm_before} kB to {vm_pending} kB with four 100 MiB frames pending"
    );
}

/// An API key pinlog does not know closes the connection, as in Kafka.
#[test]
fn unknown_api_key_closes_the_connection() {
    let mut broker = Broker::start();
    let mut c = broker.connect();
    c.send_raw(&frame(999, 0, 1, 1, &[]));
    c.assert_closed_by_broker("API key 999");
    let mut c = broker.connect();
    c.send_raw(&frame(-1, 0, 1, 2, &[]));
    c.assert_closed_by_broker("API key -1");
    broker.assert_serving("unknown API keys");
}

/// An unsupported version of a known API closes the connection; ApiVersions
/// is the exception and answers v0 with UNSUPPORTED_VERSION and its table,
/// which is how kafka-python (which starts high) learns what to use.
#[test]
fn unsupported_versions() {
    let mut broker = Broker::start();

    let mut c = broker.connect();
    c.send_raw(&frame(ApiKey::Metadata as i16, 99, 2, 1, &[0x01, 0x00]));
    c.assert_closed_by_broker("Metadata v99");
    broker.assert_serving("Metadata v99");

    let mut c = broker.connect();
    // A v99 client would send a flexible (v2) header and body; the broker
    // must not need to parse either to answer.
    c.send_raw(&frame(
        ApiKey::ApiVersions as i16,
        99,
        2,
        42,
        &[0x00, 0x00, 0x00],
    ));
    let mut r = Reader::new(read_frame(&mut c.stream).expect("ApiVersions v99 response"));
    // ApiVersions responses always use header v0, whatever the version.
    assert_eq!(decode_response_header(&mut r, 0).unwrap(), 42);
    let resp = ApiVersionsResponse::decode(&mut r, 0).expect("a v0-encoded body");
    assert!(r.is_empty(), "{} bytes after the v0 body", r.remaining());
    assert_eq!(resp.error_code, error_code::UNSUPPORTED_VERSION);
    // Every API pinlog serves is listed, up to the highest version it
    // decodes. (Minimums may be advertised lower than what is served:
    // Produce is, for old librdkafka's sake.)
    let mut got: Vec<(i16, i16)> = resp
        .api_keys
        .iter()
        .map(|k| (k.api_key, k.max_version))
        .collect();
    let mut want: Vec<(i16, i16)> = SUPPORTED_APIS
        .iter()
        .filter(|a| !a.key.is_pinlog_only())
        .map(|a| (a.key as i16, a.max_version))
        .collect();
    got.sort();
    want.sort();
    assert_eq!(
        got, want,
        "the api_keys table of the UNSUPPORTED_VERSION reply"
    );
    // The client then retries at a version it found in the table, on the
    // same connection, and gets the same table without the error.
    let mut r = c.call(ApiKey::ApiVersions, 0, |_| {});
    let ok = ApiVersionsResponse::decode(&mut r, 0).unwrap();
    assert_eq!(ok.error_code, error_code::NONE);
    assert_eq!(ok.api_keys, resp.api_keys);
    broker.assert_serving("ApiVersions v99");
}

/// Produces `batch` to partition 0 of `topic` with acks=-1 (Produce v8) and
/// returns (error code, base offset).
fn produce(c: &mut Conn, topic: &str, batch: Vec<u8>) -> (i16, i64) {
    let req = ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 30_000,
        topics: vec![TopicProduceData {
            name: topic.into(),
            partitions: vec![PartitionProduceData {
                index: 0,
                records: Some(Bytes::from(batch)),
            }],
        }],
    };
    let mut r = c.call(ApiKey::Produce, 8, |w| req.encode(w, 8));
    let resp = ProduceResponse::decode(&mut r, 8).unwrap();
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// Fetches partition 0 of `topic` from `fetch_offset` (Fetch v11, no
/// wait), asking `max_bytes` for the response and for the partition.
/// Returns the record bytes and the high watermark; any error fails.
fn fetch(c: &mut Conn, topic: &str, fetch_offset: i64, max_bytes: i32) -> (Bytes, i64) {
    let mut r = c.call(ApiKey::Fetch, 11, |w| {
        FetchRequest {
            max_wait_ms: 0,
            min_bytes: 0,
            max_bytes,
            topics: vec![FetchTopic {
                topic: topic.into(),
                partitions: vec![FetchPartition {
                    partition: 0,
                    fetch_offset,
                    partition_max_bytes: max_bytes,
                    ..Default::default()
                }],
            }],
            ..Default::default()
        }
        .encode(w, 11)
    });
    let fetched = FetchResponse::decode(&mut r, 11).unwrap();
    let p = &fetched.responses[0].partitions[0];
    assert_eq!(p.error_code, error_code::NONE, "{p:?}");
    let Some(RecordData::Bytes(data)) = &p.records else {
        panic!("fetch returned no record bytes: {p:?}");
    };
    (data.clone(), p.high_watermark)
}

/// Offsets of the producer fields in a RecordBatch v2 header (see the
/// layout in `src/log/batch.rs`), which `build_batch` leaves at -1.
const PRODUCER_ID_AT: usize = 43;
const PRODUCER_EPOCH_AT: usize = 51;
const BASE_SEQUENCE_AT: usize = 53;
const CRC_AT: usize = 17;

/// An idempotent producer whose first Produce response was lost resends the
/// same batch: the broker must recognise the sequence, not append the
/// records twice, and answer with the first append's base offset.
#[test]
fn idempotent_retry_is_appended_once() {
    let mut broker = Broker::start();
    let topic = "hostile-idempotent";
    let mut c = broker.connect();

    c.create_topic(topic, 1, &[]);

    let mut r = c.call(ApiKey::InitProducerId, 1, |w| {
        InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: 60_000,
            ..Default::default()
        }
        .encode(w, 1)
    });
    let pid = InitProducerIdResponse::decode(&mut r, 1).unwrap();
    assert_eq!(pid.error_code, error_code::NONE, "{pid:?}");
    assert!(pid.producer_id >= 0, "{pid:?}");

    let values: Vec<Vec<u8>> = (0..3).map(|i| format!("value-{i}").into_bytes()).collect();
    let records: Vec<RecordSpec> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (i as i64, None, &v[..]))
        .collect();
    let mut batch = batch::build_batch(&BatchSpec {
        base_offset: 0,
        leader_epoch: -1,
        base_timestamp: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64,
        records: &records,
    });
    batch[PRODUCER_ID_AT..PRODUCER_ID_AT + 8].copy_from_slice(&pid.producer_id.to_be_bytes());
    batch[PRODUCER_EPOCH_AT..PRODUCER_EPOCH_AT + 2].copy_from_slice(&0i16.to_be_bytes());
    batch[BASE_SEQUENCE_AT..BASE_SEQUENCE_AT + 4].copy_from_slice(&0i32.to_be_bytes());
    let crc = batch::compute_crc(&batch);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    let h = batch::validate(&batch, CountRule::Exact).expect("the patched batch is valid");
    assert_eq!(
        (h.producer_id, h.producer_epoch, h.base_sequence),
        (pid.producer_id, 0, 0)
    );

    let produce = ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 30_000,
        topics: vec![TopicProduceData {
            name: topic.into(),
            partitions: vec![PartitionProduceData {
                index: 0,
                records: Some(Bytes::from(batch)),
            }],
        }],
    };
    let mut answers = Vec::new();
    for attempt in 0..2 {
        let mut r = c.call(ApiKey::Produce, 8, |w| produce.encode(w, 8));
        let resp = ProduceResponse::decode(&mut r, 8).unwrap();
        let p = &resp.responses[0].partition_responses[0];
        assert_eq!(
            p.error_code,
            error_code::NONE,
            "attempt {attempt}: {resp:?}"
        );
        answers.push(p.base_offset);
    }
    assert_eq!(
        answers[0], answers[1],
        "the retry must be answered with the original base offset"
    );
    assert_eq!(answers[0], 0);

    let (data, high_watermark) = fetch(&mut c, topic, 0, 1 << 20);
    let batches: Vec<_> = BatchIter::new(&data, CountRule::Compacted)
        .collect::<Result<_, _>>()
        .expect("fetched batches validate");
    let fetched_records: i64 = batches.iter().map(|(_, h)| h.record_count as i64).sum();
    assert_eq!(
        batches.len(),
        1,
        "the batch must be stored once: {batches:?}"
    );
    assert_eq!(fetched_records, records.len() as i64);
    assert_eq!(
        high_watermark,
        records.len() as i64,
        "log end offset == record count"
    );
    broker.assert_serving("an idempotent retry");
}

/// Found by the `record_batch` fuzz target: the CRC and the batch header can
/// be perfectly valid while a record inside claims an offset delta of
/// i64::MAX. pinlog does not look inside records on Produce, and ListOffsets
/// by timestamp adds that delta to the batch's base offset. The broker must
/// either refuse the batch or answer the lookup with an offset inside the
/// log, and in both cases stay up.
#[test]
fn record_with_i64_max_offset_delta_then_list_offsets_by_timestamp() {
    let mut broker = Broker::start();
    let topic = "hostile-offset-delta";
    let mut c = broker.connect();
    c.create_topic(topic, 1, &[]);

    // An honest first batch, so that the hostile one lands at base offset 1
    // (at base offset 0 the sum would not overflow).
    let first = batch::build_batch(&BatchSpec {
        base_offset: 0,
        leader_epoch: -1,
        base_timestamp: 1_000,
        records: &[(0, None, b"honest")],
    });
    assert_eq!(produce(&mut c, topic, first), (error_code::NONE, 0));

    // A one-record batch whose record says offset delta i64::MAX; the header
    // (count 1, last offset delta 0) and the CRC are correct.
    let template = batch::build_batch(&BatchSpec {
        base_offset: 0,
        leader_epoch: -1,
        base_timestamp: 2_000,
        records: &[(0, None, b"x")],
    });
    let header_len = 61;
    let mut record = vec![0u8]; // attributes
    record.push(0); // timestamp delta 0
    put_varlong(&mut record, i64::MAX); // offset delta
    put_varlong(&mut record, -1); // null key
    put_varlong(&mut record, 1); // value length
    record.push(b'x');
    record.push(0); // no headers
    let mut hostile = template[..header_len].to_vec();
    put_varlong(&mut hostile, record.len() as i64);
    hostile.extend_from_slice(&record);
    let length = (hostile.len() - 12) as i32;
    hostile[8..12].copy_from_slice(&length.to_be_bytes());
    let crc = batch::compute_crc(&hostile);
    hostile[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    batch::validate(&hostile, CountRule::Exact).expect("header and CRC are valid");

    let (error, base_offset) = produce(&mut c, topic, hostile);
    let log_end = if error == error_code::NONE {
        assert_eq!(base_offset, 1);
        2
    } else {
        1
    };

    // The first record at or after t=1500 is the hostile one, if stored.
    let mut r = c.call(ApiKey::ListOffsets, 1, |w| {
        ListOffsetsRequest {
            replica_id: -1,
            isolation_level: 0,
            topics: vec![ListOffsetsTopic {
                name: topic.into(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: 0,
                    timestamp: 1_500,
                    ..Default::default()
                }],
            }],
        }
        .encode(w, 1)
    });
    let resp = ListOffsetsResponse::decode(&mut r, 1).unwrap();
    let p = &resp.topics[0].partitions[0];
    if p.error_code == error_code::NONE && p.offset != -1 {
        assert!(
            (0..log_end).contains(&p.offset),
            "ListOffsets answered offset {} for a log of {log_end} records",
            p.offset
        );
    }
    broker.assert_serving("a record claiming offset delta i64::MAX");
}

/// Zig-zag varint of a 64-bit value, as records encode their fields.
fn put_varlong(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// A fetch that asks for everything (`max_bytes` and `partition_max_bytes`
/// of i32::MAX) from data no longer in the read cache gets at most the
/// broker's `fetch.max.bytes`, as from Kafka. Before that cap, such a
/// fetch read the whole rest of the segment into memory, up to
/// `log.segment.bytes` (1 GiB by default), and sent it.
#[test]
fn fetch_asking_for_everything_gets_at_most_fetch_max_bytes() {
    const FETCH_MAX_BYTES: usize = 64 * 1024;
    const BATCHES: usize = 40;
    const RECORDS_PER_BATCH: usize = 40;
    const VALUE_BYTES: usize = 1000;
    // A small read cache, so the first batches are evicted by the later
    // ones and the fetch reads them from the segment.
    let mut broker = Broker::start_with(&format!(
        "\"fetch.max.bytes\" = {FETCH_MAX_BYTES}\n\"read.cache.bytes\" = 1048576"
    ));
    let topic = "hostile-fetch-everything";
    let mut c = broker.connect();
    c.create_topic(topic, 1, &[]);
    let value = vec![b'v'; VALUE_BYTES];
    let mut batch_bytes = 0;
    for b in 0..BATCHES {
        let records: Vec<RecordSpec> = (0..RECORDS_PER_BATCH)
            .map(|i| (i as i64, None, &value[..]))
            .collect();
        let batch = batch::build_batch(&BatchSpec {
            base_offset: 0,
            leader_epoch: -1,
            base_timestamp: 1_700_000_000_000,
            records: &records,
        });
        batch_bytes = batch.len();
        let (code, base) = produce(&mut c, topic, batch);
        assert_eq!(code, error_code::NONE, "produce of batch {b}");
        assert_eq!(base, (b * RECORDS_PER_BATCH) as i64);
    }
    assert!(
        2 * batch_bytes > FETCH_MAX_BYTES && batch_bytes < FETCH_MAX_BYTES,
        "the test needs exactly one batch ({batch_bytes} bytes) to fit the cap"
    );

    for fetch_offset in [0, RECORDS_PER_BATCH as i64] {
        let (data, _) = fetch(&mut c, topic, fetch_offset, i32::MAX);
        assert!(
            data.len() <= FETCH_MAX_BYTES,
            "a fetch from offset {fetch_offset} returned {} bytes, over fetch.max.bytes \
             ({FETCH_MAX_BYTES})",
            data.len()
        );
        let batches: Vec<_> = BatchIter::new(&data, CountRule::Compacted)
            .collect::<Result<_, _>>()
            .expect("fetched batches validate");
        assert_eq!(batches.len(), 1, "one whole batch fits the cap");
        assert_eq!(batches[0].1.base_offset, fetch_offset);
    }
    broker.assert_serving("fetches asking for everything");
}

/// Offset of the attributes in a RecordBatch v2 header.
const ATTRIBUTES_AT: usize = 21;

/// A Produce whose batch has the control flag set (a forged transaction
/// marker) is refused with INVALID_RECORD, as Kafka's LogValidator refuses
/// it: accepted, one with another producer's id would move that producer's
/// epoch and fence it.
#[test]
fn control_batches_from_clients_are_refused() {
    let mut broker = Broker::start();
    let topic = "hostile-control";
    let mut c = broker.connect();
    c.create_topic(topic, 1, &[]);
    let value = b"marker".to_vec();
    let records: Vec<RecordSpec> = vec![(0, None, &value[..])];
    let plain = batch::build_batch(&BatchSpec {
        base_offset: 0,
        leader_epoch: -1,
        base_timestamp: 1_700_000_000_000,
        records: &records,
    });
    let mut b = plain.clone();
    let attributes = i16::from_be_bytes([b[ATTRIBUTES_AT], b[ATTRIBUTES_AT + 1]]) | 0x20;
    b[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    let crc = batch::compute_crc(&b);
    b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    let h = batch::validate(&b, CountRule::Exact).expect("the patched batch is valid");
    assert!(h.is_control());
    let (code, _) = produce(&mut c, topic, b);
    assert_eq!(code, error_code::INVALID_RECORD);
    // An ordinary batch still goes in, at offset 0: nothing was appended.
    assert_eq!(produce(&mut c, topic, plain), (error_code::NONE, 0));
    broker.assert_serving("a control batch from a client");
}
