//! Client quotas with real clients: quotas set with Kafka's
//! `kafka-configs.sh` (ConfigCommand), a throttled producer and a
//! throttled consumer held within 10% of their quota over 30 s, and an
//! unthrottled producer on the same shard keeping its rate meanwhile.
//!
//! And, request by request on pinlog's codec (no client needed, a few
//! seconds each): a `controller_mutation_rate` refusing topics with
//! THROTTLING_QUOTA_EXCEEDED and holding a creating loop to its rate, and a
//! `request_percentage` throttling and muting a busy client while an
//! unthrottled neighbour on the same shard is answered at once.
//!
//! Rates are measured after a warm-up: a client may run a second's worth
//! of its quota ahead (`QUOTA_BURST_MS`), and the Java client needs a few
//! seconds to start.
//!
//! `PINLOG_SKIP_CLIENT_TESTS=1` skips the real clients' test.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code;
use pinlog::protocol::messages::create_topics::{
    CreatableTopic, CreateTopicsRequest, CreateTopicsResponse,
};
use pinlog::protocol::messages::metadata::{MetadataRequest, MetadataResponse};
use support::kafka_conn::Conn;
use support::{
    kafka_libs, read_logged, run_command, spawn_logged, which, Broker, BrokerOpts, PINLOG_BIN,
};

const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);
/// Every record's value: 1,000 bytes.
const RECORD_BYTES: usize = 1_000;
const PRODUCER_QUOTA: f64 = 200_000.0;
const CONSUMER_QUOTA: f64 = 300_000.0;
/// The neighbour's fixed rate, records per second (2 MB/s): far above
/// either quota.
const NEIGHBOUR_RATE: usize = 2_000;
/// When the measurement starts and how long it lasts.
const WARM_UP: Duration = Duration::from_secs(8);
const MEASURED: Duration = Duration::from_secs(30);

fn kafka_tool(class: &str, args: &[&str]) -> Command {
    let jars = format!("{}/*", kafka_libs().display());
    let mut cmd = Command::new("java");
    cmd.args(["-XX:TieredStopAtLevel=1", "-cp", &jars])
        .arg(format!("org.apache.kafka.tools.{class}"))
        .args(args);
    cmd
}

fn end_offset(broker: &Broker, topic: &str) -> u64 {
    let out = run_command(
        Command::new(PINLOG_BIN).args([
            "topic",
            "describe",
            topic,
            "--bootstrap-server",
            &broker.bootstrap(),
            "--json",
        ]),
        None,
        Duration::from_secs(30),
    );
    let doc: serde_json::Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| broker.fail(&format!("describe {topic}: {e}\n{out}")));
    doc["topics"][0]["partitions"]
        .as_array()
        .map(|ps| ps.iter().filter_map(|p| p["end_offset"].as_u64()).sum())
        .unwrap_or(0)
}

/// Client processes, killed and reaped on drop.
struct Clients(Vec<std::process::Child>);

impl Clients {
    fn stop(&mut self) {
        for child in &mut self.0 {
            // A client that already exited refuses the kill; either way it
            // is reaped next, and there is nothing else to do.
            let _ = child.kill();
            let _ = child.wait();
        }
        self.0.clear();
    }
}

impl Drop for Clients {
    fn drop(&mut self) {
        self.stop();
    }
}

fn lines(dir: &Path, name: &str) -> u64 {
    read_logged(dir, name)
        .lines()
        .filter(|l| l.starts_with('x'))
        .count() as u64
}

#[test]
fn throttled_clients_keep_to_their_quota_and_a_neighbour_keeps_its_rate() {
    if std::env::var_os("PINLOG_SKIP_CLIENT_TESTS").is_some() {
        eprintln!("PINLOG_SKIP_CLIENT_TESTS is set: skipped");
        return;
    }
    assert!(
        which("java").is_some() && which("kcat").is_some(),
        "java and kcat are needed (apt-get install default-jdk-headless kcat), or set \
         PINLOG_SKIP_CLIENT_TESTS=1"
    );
    // One shard: the throttled clients and the neighbour share it.
    let broker = Broker::start(BrokerOpts::new().shards(1));
    let b = broker.bootstrap();
    for (entity, config) in [
        (
            "slow-producer",
            format!("producer_byte_rate={PRODUCER_QUOTA}"),
        ),
        (
            "slow-consumer",
            format!("consumer_byte_rate={CONSUMER_QUOTA}"),
        ),
    ] {
        let out = run_command(
            &mut kafka_tool(
                "ConfigCommand",
                &[
                    "--bootstrap-server",
                    &b,
                    "--alter",
                    "--entity-type",
                    "clients",
                    "--entity-name",
                    entity,
                    "--add-config",
                    &config,
                ],
            ),
            None,
            CLIENT_TIMEOUT,
        );
        if !out.success() {
            broker.fail(&format!("kafka-configs.sh --alter {entity}:\n{out}"));
        }
    }
    let described = run_command(
        &mut kafka_tool(
            "ConfigCommand",
            &[
                "--bootstrap-server",
                &b,
                "--describe",
                "--entity-type",
                "clients",
            ],
        ),
        None,
        CLIENT_TIMEOUT,
    );
    assert!(
        described.stdout.contains("producer_byte_rate=200000.0")
            && described.stdout.contains("consumer_byte_rate=300000.0"),
        "{described}"
    );

    // 30 MB for the consumer to read, written unthrottled.
    let fill = run_command(
        &mut kafka_tool(
            "ProducerPerformance",
            &[
                "--topic",
                "quota-read",
                "--num-records",
                "30000",
                "--record-size",
                "1000",
                "--throughput",
                "-1",
                "--producer-props",
                &format!("bootstrap.servers={b}"),
            ],
        ),
        None,
        CLIENT_TIMEOUT,
    );
    assert!(fill.success(), "{fill}");

    let dir = broker.root().to_path_buf();
    let producer = |client_id: &str, topic: &str, throughput: &str| {
        let mut cmd = Command::new("java");
        cmd.args([
            "-XX:TieredStopAtLevel=1",
            "-cp",
            &format!("{}/*", kafka_libs().display()),
            "org.apache.kafka.tools.ProducerPerformance",
            "--topic",
            topic,
            "--num-records",
            "10000000",
            "--record-size",
            &RECORD_BYTES.to_string(),
            "--throughput",
            throughput,
            "--producer-props",
            &format!("bootstrap.servers={b}"),
            &format!("client.id={client_id}"),
        ]);
        cmd
    };
    // The clients are killed when the guard drops, also when the test
    // fails half way: a client left running would find a later test's
    // broker on a reused port.
    let mut clients = Clients(vec![
        spawn_logged(
            &mut producer("slow-producer", "quota-slow", "-1"),
            &dir,
            "slow",
        ),
        spawn_logged(
            &mut producer("fast-producer", "quota-fast", &NEIGHBOUR_RATE.to_string()),
            &dir,
            "neighbour",
        ),
        spawn_logged(
            Command::new("kcat").args([
                "-b",
                &b,
                "-t",
                "quota-read",
                "-C",
                "-u",
                "-q",
                "-o",
                "beginning",
                "-f",
                "x\n",
                "-X",
                "client.id=slow-consumer",
            ]),
            &dir,
            "consumer",
        ),
    ]);

    let started = Instant::now();
    std::thread::sleep(WARM_UP);
    let at_start = (
        end_offset(&broker, "quota-slow"),
        end_offset(&broker, "quota-fast"),
        lines(&dir, "consumer"),
        Instant::now(),
    );
    std::thread::sleep(MEASURED.saturating_sub(started.elapsed() - WARM_UP));
    let at_end = (
        end_offset(&broker, "quota-slow"),
        end_offset(&broker, "quota-fast"),
        lines(&dir, "consumer"),
        Instant::now(),
    );
    clients.stop();
    let seconds = (at_end.3 - at_start.3).as_secs_f64();
    let rate = |from: u64, to: u64| (to - from) as f64 * RECORD_BYTES as f64 / seconds;
    let produced = rate(at_start.0, at_end.0);
    let neighbour_rate = rate(at_start.1, at_end.1);
    let consumed = rate(at_start.2, at_end.2);
    let report = format!(
        "over {seconds:.1} s: throttled producer {produced:.0} B/s (quota {PRODUCER_QUOTA}), \
         throttled consumer {consumed:.0} B/s (quota {CONSUMER_QUOTA}), neighbour {neighbour_rate:.0} B/s \
         (asked {} B/s)",
        NEIGHBOUR_RATE * RECORD_BYTES
    );
    eprintln!("{report}");
    let within = |rate: f64, quota: f64| (rate - quota).abs() <= 0.10 * quota;
    if !within(produced, PRODUCER_QUOTA) || !within(consumed, CONSUMER_QUOTA) {
        broker.fail(&format!(
            "a throttled client left its quota by more than 10%: {report}\n--- slow producer ---\n{}",
            support::tail(&read_logged(&dir, "slow"), 10)
        ));
    }
    if neighbour_rate < 0.9 * (NEIGHBOUR_RATE * RECORD_BYTES) as f64 {
        broker.fail(&format!(
            "the unthrottled neighbour lost its rate: {report}\n{}",
            support::tail(&read_logged(&dir, "neighbour"), 10)
        ));
    }
}

/// Sets `key=value` for the client id `client_id` with `pinlog quota set`.
fn set_client_quota(broker: &Broker, client_id: &str, flag: &str, value: &str) {
    let out = run_command(
        Command::new(PINLOG_BIN).args([
            "quota",
            "set",
            "--client-id",
            client_id,
            flag,
            value,
            "--bootstrap-server",
            &broker.bootstrap(),
        ]),
        None,
        Duration::from_secs(30),
    );
    if !out.success() {
        broker.fail(&format!(
            "pinlog quota set {client_id} {flag} {value}:\n{out}"
        ));
    }
}

fn connect(broker: &Broker, client_id: &'static str, timeout: Duration) -> Conn {
    let addr = broker
        .bootstrap()
        .parse()
        .expect("the bootstrap is an address");
    Conn::open(addr, client_id, timeout).unwrap_or_else(|e| broker.fail(&format!("connect: {e}")))
}

/// The first CreateTopics version that answers THROTTLING_QUOTA_EXCEEDED,
/// and one before it, which is throttled instead.
const CREATE_TOPICS_STRICT: i16 = 6;
const CREATE_TOPICS_PERMISSIVE: i16 = 5;
/// How long the creating loop runs.
const MUTATION_LOOP: Duration = Duration::from_secs(4);
/// Kafka's bucket at a rate of 1/s: `controller.quota.window.num` (11)
/// times `controller.quota.window.size.seconds` (1).
const MUTATION_BURST: u64 = 11;

fn create_topic(conn: &mut Conn, name: &str, version: i16) -> CreateTopicsResponse {
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.to_string(),
            num_partitions: 1,
            replication_factor: 1,
            assignments: Vec::new(),
            configs: Vec::new(),
        }],
        timeout_ms: 30_000,
        validate_only: false,
    };
    let mut r = conn.call(ApiKey::CreateTopics, version, |w| req.encode(w, version));
    CreateTopicsResponse::decode(&mut r, version).expect("CreateTopics response")
}

#[test]
fn a_controller_mutation_rate_refuses_topics_in_debt_and_holds_the_rate() {
    let broker = Broker::start(BrokerOpts::new().shards(1));
    set_client_quota(&broker, "mutator", "--controller-mutation-rate", "1");
    // A refused request mutes the connection for its throttle (at most a
    // second here), so the reads wait longer than that.
    let mut conn = connect(&broker, "mutator", Duration::from_secs(10));
    let started = Instant::now();
    let (mut accepted, mut refused) = (0u64, 0u64);
    let mut first_refusal: Option<(Instant, u64)> = None;
    let mut i = 0;
    while started.elapsed() < MUTATION_LOOP {
        i += 1;
        let resp = create_topic(&mut conn, &format!("mutation-{i}"), CREATE_TOPICS_STRICT);
        let topic = &resp.topics[0];
        match topic.error_code {
            error_code::NONE => accepted += 1,
            error_code::THROTTLING_QUOTA_EXCEEDED => {
                refused += 1;
                first_refusal.get_or_insert((Instant::now(), accepted));
                assert!(
                    (1..=1_000).contains(&resp.throttle_time_ms),
                    "a refusal's throttle: {resp:?}"
                );
            }
            other => broker.fail(&format!("CreateTopics answered {other}: {resp:?}")),
        }
    }
    let Some((refused_at, accepted_before)) = first_refusal else {
        broker.fail(&format!(
            "{accepted} topics in {MUTATION_LOOP:?} and no refusal"
        ));
    };
    // The burst, the one overshoot Kafka allows and what the bucket
    // refilled while they were created; then one a second.
    let refill = (refused_at - started).as_secs_f64().ceil() as u64;
    assert!(
        (MUTATION_BURST + 1..=MUTATION_BURST + 1 + refill).contains(&accepted_before),
        "{accepted_before} topics accepted before the first refusal"
    );
    let seconds = refused_at.elapsed().as_secs_f64();
    let after = (accepted - accepted_before) as f64;
    eprintln!(
        "{accepted} accepted, {refused} refused; {after} in the {seconds:.1} s after the first refusal"
    );
    assert!(
        (after - seconds).abs() <= 1.5,
        "{after} topics accepted in the {seconds:.1} s after the first refusal, at 1/s"
    );
    // An older version, whose clients do not know the error: accepted and
    // throttled by the debt.
    let resp = create_topic(&mut conn, "mutation-old", CREATE_TOPICS_PERMISSIVE);
    assert_eq!(resp.topics[0].error_code, error_code::NONE, "{resp:?}");
    assert!(resp.throttle_time_ms > 0, "{resp:?}");
}

fn metadata(conn: &mut Conn) -> MetadataResponse {
    const VERSION: i16 = 12;
    let req = MetadataRequest {
        topics: Some(Vec::new()),
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    let mut r = conn.call(ApiKey::Metadata, VERSION, |w| req.encode(w, VERSION));
    MetadataResponse::decode(&mut r, VERSION).expect("Metadata response")
}

/// A share of a thread so small (1 µs of handling a second) that a
/// Metadata request or two exceed it, by about the whole second Kafka
/// caps a request throttle at.
const BUSY_REQUEST_PERCENTAGE: &str = "0.0001";
/// How many requests the busy client may send before it is throttled.
const REQUESTS_BEFORE_THROTTLE_MAX: usize = 100;
/// How much sooner than its throttle a muted client may be answered: the
/// clocks of the test and the broker are read at different moments.
const MUTE_SLACK: Duration = Duration::from_millis(20);
/// How quickly the unthrottled neighbour must be answered meanwhile.
const NEIGHBOUR_LATENCY_MAX: Duration = Duration::from_millis(200);

#[test]
fn a_request_percentage_throttles_and_mutes_its_client_and_not_a_neighbour() {
    let broker = Broker::start(BrokerOpts::new().shards(1));
    set_client_quota(
        &broker,
        "busy",
        "--request-percentage",
        BUSY_REQUEST_PERCENTAGE,
    );
    let mut busy = connect(&broker, "busy", Duration::from_secs(10));
    let mut neighbour = connect(&broker, "neighbour", Duration::from_secs(10));
    let throttle_ms = (0..REQUESTS_BEFORE_THROTTLE_MAX)
        .map(|_| metadata(&mut busy).throttle_time_ms)
        .find(|ms| *ms > 0)
        .unwrap_or_else(|| {
            broker.fail(&format!(
                "{REQUESTS_BEFORE_THROTTLE_MAX} requests at request_percentage                  {BUSY_REQUEST_PERCENTAGE} and no throttle"
            ))
        });
    assert!(
        throttle_ms <= 1_000,
        "Kafka caps a request throttle at a window: {throttle_ms}"
    );
    // Muted: the next request is read only when the throttle is over,
    // while the neighbour is answered at once.
    let sent = Instant::now();
    let id = busy.send(ApiKey::Metadata, 12, |w| {
        MetadataRequest {
            topics: Some(Vec::new()),
            allow_auto_topic_creation: false,
            ..Default::default()
        }
        .encode(w, 12)
    });
    for _ in 0..3 {
        let asked = Instant::now();
        let resp = metadata(&mut neighbour);
        assert_eq!(resp.throttle_time_ms, 0, "the neighbour is not throttled");
        assert!(
            asked.elapsed() < NEIGHBOUR_LATENCY_MAX,
            "neighbour: {:?}",
            asked.elapsed()
        );
    }
    busy.receive(ApiKey::Metadata, 12, id);
    let muted = sent.elapsed();
    let throttle = Duration::from_millis(throttle_ms as u64);
    assert!(
        muted + MUTE_SLACK >= throttle,
        "answered after {muted:?}, throttled for {throttle:?}"
    );
}
