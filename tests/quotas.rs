//! Client quotas with real clients: quotas set with Kafka's
//! `kafka-configs.sh` (ConfigCommand), a throttled producer and a
//! throttled consumer held within 10% of their quota over 30 s, and an
//! unthrottled producer on the same shard keeping its rate meanwhile.
//!
//! Rates are measured after a warm-up: a client may run a second's worth
//! of its quota ahead (`QUOTA_BURST_MS`), and the Java client needs a few
//! seconds to start.
//!
//! `PINLOG_SKIP_CLIENT_TESTS=1` skips it.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

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
