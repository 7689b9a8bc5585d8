//! The operator CLI (`pinlog topic ...`) against a real broker: each
//! command's table and its `--json` document say the same thing, changes
//! show up in later describes, and failures exit 1 with the broker's
//! reason and a next step; a bad command line exits 2 and an unreachable
//! broker exits 1 saying how to start one.
//!
//! The group commands run against a real consumer group: a kafka-python
//! member (`tests/clients/group_member.py`; CI installs kafka-python, and
//! `PINLOG_SKIP_CLIENT_TESTS=1` skips this part, as in tests/broker/clients.rs).

use crate::common;
use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use bytes::BytesMut;
use pinlog::protocol::codec::Reader;
use pinlog::protocol::header::{decode_response_header, RequestHeader};
use pinlog::protocol::messages::produce::{
    PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData,
};
use serde_json::Value;
use support::cli::{expect_exit, json, run_pinlog, table_rows, COMMAND_TIMEOUT};
use support::{
    free_port, round_trip, run_command, which, Broker, BrokerOpts, CmdOutput, PINLOG_BIN,
};

/// Produce v7: classic encoding, request header v1, response header v0.
const PRODUCE_VERSION: i16 = 7;
const PRODUCE_KEY: i16 = 0;
const TOPIC: &str = "orders";
/// How long the group member may take to join, consume and commit, or to
/// leave.
const MEMBER_TIMEOUT: Duration = Duration::from_secs(60);
const GROUP_MEMBER_SCRIPT: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/group_member.py");

/// Runs `pinlog ARGS` with the broker's address in `--bootstrap-server`
/// (unless `bootstrap` is `None`).
fn pinlog(bootstrap: Option<&str>, args: &[&str]) -> CmdOutput {
    let mut all: Vec<&str> = args.to_vec();
    if let Some(b) = bootstrap {
        all.extend(["--bootstrap-server", b]);
    }
    run_pinlog(&all, None)
}

/// Appends `records` records to partition `partition` of `topic` with
/// pinlog's own codec.
fn produce(broker: &Broker, topic: &str, partition: i32, records: usize) {
    let mut stream = TcpStream::connect(broker.bootstrap()).expect("connect to produce");
    stream
        .set_read_timeout(Some(COMMAND_TIMEOUT))
        .expect("read timeout");
    let mut body = BytesMut::new();
    RequestHeader {
        api_key: PRODUCE_KEY,
        api_version: PRODUCE_VERSION,
        correlation_id: 1,
        client_id: Some("cli-test".into()),
    }
    .encode(&mut body, 1);
    ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 10_000,
        topics: vec![TopicProduceData {
            name: topic.into(),
            partitions: vec![PartitionProduceData {
                index: partition,
                records: Some(common::producer_batch(records, 16, 1_700_000_000_000).freeze()),
            }],
        }],
    }
    .encode(&mut body, PRODUCE_VERSION);
    let resp = round_trip(&mut stream, &body).expect("produce round trip");
    let mut r = Reader::new(resp);
    assert_eq!(decode_response_header(&mut r, 0).unwrap(), 1);
    let resp = ProduceResponse::decode(&mut r, PRODUCE_VERSION).expect("decode produce");
    let p = &resp.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 0, "produce failed: {resp:?}");
}

#[test]
fn bad_command_lines_exit_2_without_a_broker() {
    // A closed port: usage errors must be found before connecting.
    let nowhere = format!("127.0.0.1:{}", free_port());
    for args in [
        &["topic", "create", "t", "--partitions", "0"][..],
        &["topic", "create", "t", "--config", "retention.ms"],
        &["topic", "alter", "t"],
        &["topic", "delete"],
        &["topic", "list", "--timeout", "soon"],
    ] {
        let out = pinlog(Some(&nowhere), args);
        expect_exit(&out, 2);
        assert!(!out.stderr.contains("cannot connect"), "{out}");
    }
    // Setting and removing one key is refused after parsing, also before
    // connecting.
    let out = pinlog(
        Some(&nowhere),
        &[
            "topic",
            "alter",
            "t",
            "--set",
            "a=1",
            "--delete-config",
            "a",
        ],
    );
    expect_exit(&out, 2);
    assert!(out.stderr.contains("more than once"), "{out}");
}

#[test]
fn an_unreachable_broker_exits_1_and_says_how_to_start_one() {
    let nowhere = format!("127.0.0.1:{}", free_port());
    for args in [
        &["topic", "list"][..],
        &["topic", "describe", "x", "--json"],
    ] {
        let out = pinlog(Some(&nowhere), args);
        expect_exit(&out, 1);
        assert!(out.stderr.contains(&nowhere), "{out}");
        assert!(out.stderr.contains("is the broker running?"), "{out}");
        assert!(out.stderr.contains("pinlog serve"), "{out}");
        assert!(out.stderr.contains("--bootstrap-server"), "{out}");
        assert!(out.stdout.is_empty(), "{out}");
    }
}

#[test]
fn topic_commands_against_a_broker() {
    let mut broker = Broker::start(BrokerOpts::new().setting("auto.create.topics.enable", false));
    let b = broker.bootstrap();
    let b = Some(b.as_str());

    // Nothing yet.
    let out = pinlog(b, &["topic", "list"]);
    expect_exit(&out, 0);
    assert!(out.stdout.contains("No topics"), "{out}");
    assert_eq!(
        json(&pinlog(b, &["topic", "list", "--json"]))["topics"],
        Value::Array(vec![])
    );

    // Create, and the errors of creating.
    let out = pinlog(
        b,
        &[
            "topic",
            "create",
            TOPIC,
            "--partitions",
            "3",
            "--config",
            "retention.ms=86400000",
        ],
    );
    expect_exit(&out, 0);
    assert!(
        out.stdout
            .contains("Created topic \"orders\": 3 partitions"),
        "{out}"
    );
    let out = pinlog(b, &["topic", "create", TOPIC]);
    expect_exit(&out, 1);
    assert!(out.stderr.contains("TOPIC_ALREADY_EXISTS"), "{out}");
    assert!(out.stderr.contains("pinlog topic describe"), "{out}");
    let created = json(&pinlog(
        b,
        &["topic", "create", TOPIC, "--if-not-exists", "--json"],
    ));
    assert_eq!(created["created"], false);
    let out = pinlog(
        b,
        &["topic", "create", "bad", "--config", "retention.ms=soon"],
    );
    expect_exit(&out, 1);
    // The broker's own message is shown.
    assert!(out.stderr.contains("INVALID_CONFIG"), "{out}");
    assert!(out.stderr.contains("\"soon\""), "{out}");
    let extra = json(&pinlog(b, &["topic", "create", "audit", "--json"]));
    assert_eq!(extra["created"], true);
    assert_eq!(extra["partitions"], 1);
    assert_eq!(extra["topic_id"].as_str().map(str::len), Some(22));

    produce(&broker, TOPIC, 0, 5);
    produce(&broker, TOPIC, 2, 2);
    produce(&broker, TOPIC, 2, 1);

    // list: the table and the JSON agree.
    let out = pinlog(b, &["topic", "list"]);
    expect_exit(&out, 0);
    let rows = table_rows(&out.stdout, "TOPIC");
    assert_eq!(
        rows,
        vec![
            vec!["audit", "1", "1", "no"],
            vec!["orders", "3", "1", "no"],
        ],
        "{out}"
    );
    let listed = json(&pinlog(b, &["topic", "list", "--json"]));
    let from_json: Vec<Vec<String>> = listed["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            vec![
                t["name"].as_str().unwrap().to_string(),
                t["partitions"].to_string(),
                t["replication_factor"].to_string(),
                if t["internal"] == true { "yes" } else { "no" }.to_string(),
            ]
        })
        .collect();
    assert_eq!(from_json, rows);

    // describe: partitions with their offsets, and the topic's own setting.
    let out = pinlog(b, &["topic", "describe", TOPIC]);
    expect_exit(&out, 0);
    assert!(out.stdout.starts_with("Topic: orders  TopicId: "), "{out}");
    assert!(
        out.stdout.contains("Configs: retention.ms=86400000\n"),
        "{out}"
    );
    let rows = table_rows(&out.stdout, "PARTITION");
    // PARTITION LEADER SHARD REPLICAS ISR START-OFFSET END-OFFSET: the
    // default shard is a stable hash of the partition.
    assert_eq!(
        rows,
        vec![
            vec!["0", "1", "0", "1", "1", "0", "5"],
            vec!["1", "1", "1", "1", "1", "0", "0"],
            vec!["2", "1", "0", "1", "1", "0", "3"],
        ],
        "{out}"
    );
    let described = json(&pinlog(b, &["topic", "describe", TOPIC, "--json"]));
    let t = &described["topics"][0];
    assert_eq!(t["name"], TOPIC);
    assert_eq!(t["partition_count"], 3);
    assert_eq!(t["configs"]["retention.ms"], "86400000");
    assert_eq!(t["topic_id"].as_str().map(str::len), Some(22), "{t}");
    for (i, row) in rows.iter().enumerate() {
        let p = &t["partitions"][i];
        assert_eq!(p["partition"].to_string(), row[0]);
        assert_eq!(p["leader"].to_string(), row[1]);
        assert_eq!(p["leader_shard"].to_string(), row[2]);
        assert_eq!(p["start_offset"].to_string(), row[5]);
        assert_eq!(p["end_offset"].to_string(), row[6]);
        assert_eq!(p["error"], Value::Null);
    }

    // partition move: to the other shard, then refusals.
    let out = pinlog(b, &["partition", "move", "orders-1", "--shard", "0"]);
    expect_exit(&out, 0);
    assert_eq!(
        out.stdout, "Moved orders-1 on broker 1 from shard 1 to shard 0.\n",
        "{out}"
    );
    let out = pinlog(b, &["topic", "describe", TOPIC]);
    assert_eq!(table_rows(&out.stdout, "PARTITION")[1][2], "0", "{out}");
    let out = pinlog(b, &["partition", "move", "orders-1", "--shard", "7"]);
    expect_exit(&out, 1);
    assert!(
        out.stderr
            .contains("shard 7 does not exist: this broker runs 2 shards"),
        "{out}"
    );
    let out = pinlog(b, &["partition", "move", "orders", "--shard", "0"]);
    expect_exit(&out, 2);
    assert!(out.stderr.contains("is not TOPIC-PARTITION"), "{out}");
    let out = pinlog(
        b,
        &[
            "partition",
            "move",
            "orders-1",
            "--shard",
            "0",
            "--broker",
            "9",
        ],
    );
    expect_exit(&out, 2);
    assert!(
        out.stderr.contains("broker 9 holds no replica of orders-1"),
        "{out}"
    );
    // Back where the hash puts it: nothing left to remember.
    let out = pinlog(b, &["partition", "move", "orders-1", "--shard", "1"]);
    expect_exit(&out, 0);
    // With no names: every topic.
    let all = json(&pinlog(b, &["topic", "describe", "--json"]));
    let names: Vec<&str> = all["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["audit", TOPIC]);

    // An unknown topic: exit 1, and what to do.
    let out = pinlog(b, &["topic", "describe", "nope"]);
    expect_exit(&out, 1);
    assert!(out.stderr.contains("topic \"nope\""), "{out}");
    assert!(out.stderr.contains("UNKNOWN_TOPIC_OR_PARTITION"), "{out}");
    assert!(out.stderr.contains("pinlog topic list"), "{out}");
    // Describing it did not create it.
    let out = pinlog(b, &["topic", "list"]);
    assert!(!out.stdout.contains("nope"), "{out}");

    // alter: more partitions, a changed and a removed setting.
    let out = pinlog(
        b,
        &[
            "topic",
            "alter",
            TOPIC,
            "--partitions",
            "4",
            "--set",
            "segment.bytes=1048576",
            "--delete-config",
            "retention.ms",
        ],
    );
    expect_exit(&out, 0);
    assert!(out.stdout.contains("now has 4 partitions"), "{out}");
    let t = json(&pinlog(b, &["topic", "describe", TOPIC, "--json"]))["topics"][0].clone();
    assert_eq!(t["partition_count"], 4);
    assert_eq!(t["configs"]["segment.bytes"], "1048576");
    assert_eq!(t["configs"].get("retention.ms"), None, "{t}");
    assert_eq!(t["partitions"][0]["end_offset"], 5, "data kept: {t}");
    let out = pinlog(b, &["topic", "alter", TOPIC, "--partitions", "2"]);
    expect_exit(&out, 1);
    assert!(out.stderr.contains("INVALID_PARTITIONS"), "{out}");
    let out = pinlog(b, &["topic", "alter", TOPIC, "--set", "retention.ms=-7x"]);
    expect_exit(&out, 1);
    assert!(out.stderr.contains("INVALID_CONFIG"), "{out}");
    let out = pinlog(b, &["topic", "alter", "nope", "--set", "retention.ms=1"]);
    expect_exit(&out, 1);
    assert!(out.stderr.contains("UNKNOWN_TOPIC_OR_PARTITION"), "{out}");

    // delete: one that exists and one that does not.
    let deleted = pinlog(b, &["topic", "delete", TOPIC, "nope", "--json"]);
    expect_exit(&deleted, 1);
    let v: Value = serde_json::from_str(&deleted.stdout).expect("JSON even on a partial failure");
    assert_eq!(v["topics"][0]["deleted"], true);
    assert_eq!(
        v["topics"][1]["error"]["name"],
        "UNKNOWN_TOPIC_OR_PARTITION"
    );
    assert!(deleted.stderr.contains("topic \"nope\""), "{deleted}");
    expect_exit(&pinlog(b, &["topic", "delete", TOPIC, "--if-exists"]), 0);
    // Its directories are renamed at once and removed in the background.
    let data_dir = broker.data_dir();
    assert!(!data_dir.join(format!("{TOPIC}-0")).exists());
    let leftovers = || -> Vec<String> {
        std::fs::read_dir(&data_dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with(TOPIC))
            .collect()
    };
    support::wait_for(Duration::from_secs(10), || leftovers().is_empty());
    assert!(leftovers().is_empty(), "{:?}", leftovers());

    // The environment variable stands in for --bootstrap-server.
    let mut cmd = Command::new(PINLOG_BIN);
    cmd.args(["topic", "list", "--json"])
        .env("PINLOG_BOOTSTRAP_SERVER", broker.bootstrap());
    let listed = json(&run_command(&mut cmd, None, COMMAND_TIMEOUT));
    assert_eq!(listed["topics"][0]["name"], "audit");
    assert_eq!(listed["topics"].as_array().unwrap().len(), 1);

    broker.stop();
}

/// A running `group_member.py`: killed when dropped, so a failing test
/// leaves no process behind.
struct GroupMember {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl GroupMember {
    /// Starts a member that consumes `count` records of `topic` in `group`
    /// and commits; returns once it says how many it consumed.
    fn start(broker: &Broker, topic: &str, group: &str, client_id: &str, count: usize) -> Self {
        let mut child = Command::new("python3")
            .arg(Path::new(GROUP_MEMBER_SCRIPT))
            .args([
                &broker.bootstrap(),
                topic,
                group,
                client_id,
                &count.to_string(),
            ])
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start group_member.py");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut member = GroupMember {
            child,
            stdin,
            lines,
        };
        let ready = member.expect_line("ready");
        assert_eq!(
            ready,
            format!("ready {count}"),
            "the member consumed too little"
        );
        member
    }

    fn expect_line(&mut self, prefix: &str) -> String {
        match self.lines.recv_timeout(MEMBER_TIMEOUT) {
            Ok(line) if line.starts_with(prefix) => line,
            other => panic!("group member: expected {prefix:?}, got {other:?}"),
        }
    }

    /// Leaves the group and waits for the process to exit.
    fn close(mut self) {
        let mut stdin = self.stdin.take().expect("open stdin");
        stdin
            .write_all(b"close\n")
            .expect("tell the member to close");
        drop(stdin);
        self.expect_line("closed");
        let status = self.child.wait().expect("reap the member");
        assert!(status.success(), "group member exited with {status}");
    }
}

impl Drop for GroupMember {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn kafka_python_available() -> bool {
    if std::env::var("PINLOG_SKIP_CLIENT_TESTS").is_ok_and(|v| v == "1") {
        eprintln!("PINLOG_SKIP_CLIENT_TESTS=1: skipping the group commands test");
        return false;
    }
    let ok = which("python3").is_some()
        && run_command(
            Command::new("python3").args(["-c", "import kafka"]),
            None,
            COMMAND_TIMEOUT,
        )
        .success();
    assert!(
        ok,
        "kafka-python is not available; install it with `pip install kafka-python` (CI does), \
         or set PINLOG_SKIP_CLIENT_TESTS=1 to skip the client tests"
    );
    true
}

/// (partition, current offset, log end offset, lag) of each describe row,
/// from the JSON.
fn offsets_of(described: &Value) -> Vec<(i64, i64, i64, i64)> {
    described["offsets"]
        .as_array()
        .expect("offsets")
        .iter()
        .map(|o| {
            (
                o["partition"].as_i64().unwrap(),
                o["current_offset"].as_i64().unwrap(),
                o["log_end_offset"].as_i64().unwrap(),
                o["lag"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn group_commands_against_a_broker() {
    if !kafka_python_available() {
        return;
    }
    const GROUP: &str = "billing";
    const CLIENT_ID: &str = "billing-1";
    const PER_PARTITION: usize = 10;
    const CONSUMED: usize = 20;
    let mut broker = Broker::start(BrokerOpts::new());
    let b = broker.bootstrap();
    let b = Some(b.as_str());
    expect_exit(
        &pinlog(b, &["topic", "create", TOPIC, "--partitions", "3"]),
        0,
    );
    for p in 0..3 {
        produce(&broker, TOPIC, p, PER_PARTITION);
    }
    let out = pinlog(b, &["group", "describe", GROUP]);
    expect_exit(&out, 1);
    assert!(out.stderr.contains("GROUP_ID_NOT_FOUND"), "{out}");
    assert!(out.stderr.contains("pinlog group list"), "{out}");

    let member = GroupMember::start(&broker, TOPIC, GROUP, CLIENT_ID, CONSUMED);

    // list: the table and the JSON agree.
    let out = pinlog(b, &["group", "list"]);
    expect_exit(&out, 0);
    assert_eq!(
        table_rows(&out.stdout, "GROUP"),
        vec![vec![GROUP, "Stable", "consumer"]],
        "{out}"
    );
    let listed = json(&pinlog(b, &["group", "list", "--json"]));
    assert_eq!(listed["groups"][0]["group"], GROUP);
    assert_eq!(listed["groups"][0]["state"], "Stable");
    assert_eq!(listed["groups"][0]["protocol_type"], "consumer");

    // describe: one member owning every partition; 20 of 30 consumed.
    let out = pinlog(b, &["group", "describe", GROUP]);
    expect_exit(&out, 0);
    assert!(
        out.stdout
            .starts_with("Group: billing  State: Stable  Members: 1"),
        "{out}"
    );
    let rows = table_rows(&out.stdout, "TOPIC");
    let described = json(&pinlog(b, &["group", "describe", GROUP, "--json"]));
    assert_eq!(described["state"], "Stable");
    let member_id = described["members"][0]["member_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(member_id.starts_with(CLIENT_ID), "{described}");
    assert_eq!(described["members"][0]["client_id"], CLIENT_ID);
    assert_eq!(
        described["members"][0]["assignment"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let offsets = offsets_of(&described);
    assert_eq!(offsets.len(), 3, "{described}");
    assert_eq!(offsets.iter().map(|o| o.1).sum::<i64>(), CONSUMED as i64);
    assert_eq!(
        described["total_lag"],
        (3 * PER_PARTITION - CONSUMED) as i64
    );
    assert_eq!(rows.len(), 3, "{out}");
    for (row, (p, current, end, lag)) in rows.iter().zip(&offsets) {
        assert_eq!(
            row[..6],
            [
                TOPIC.to_string(),
                p.to_string(),
                current.to_string(),
                end.to_string(),
                lag.to_string(),
                member_id.clone()
            ],
            "{out}"
        );
        assert_eq!(row[7], CLIENT_ID, "{out}");
        assert_eq!(*end, PER_PARTITION as i64);
    }

    // An active group: the plan is shown, but --execute is refused.
    let out = pinlog(
        b,
        &[
            "group",
            "reset-offsets",
            GROUP,
            "--topic",
            TOPIC,
            "--to-earliest",
        ],
    );
    expect_exit(&out, 0);
    assert!(out.stdout.contains("Dry run"), "{out}");
    assert!(out.stderr.contains("--execute will be refused"), "{out}");
    let out = pinlog(
        b,
        &[
            "group",
            "reset-offsets",
            GROUP,
            "--topic",
            TOPIC,
            "--to-earliest",
            "--execute",
        ],
    );
    expect_exit(&out, 1);
    assert!(
        out.stderr
            .contains("the group has active members; stop the consumers first"),
        "{out}"
    );

    member.close();

    let out = pinlog(b, &["group", "describe", GROUP]);
    expect_exit(&out, 0);
    assert!(out.stdout.contains("State: Empty"), "{out}");
    assert!(out.stdout.contains("has no active members"), "{out}");
    // The dry run changed nothing.
    let described = json(&pinlog(b, &["group", "describe", GROUP, "--json"]));
    assert_eq!(offsets_of(&described), offsets);

    // Now the resets go through.
    let reset = json(&pinlog(
        b,
        &[
            "group",
            "reset-offsets",
            GROUP,
            "--topic",
            TOPIC,
            "--to-earliest",
            "--execute",
            "--json",
        ],
    ));
    assert_eq!(reset["executed"], true);
    let described = json(&pinlog(b, &["group", "describe", GROUP, "--json"]));
    assert_eq!(
        described["total_lag"],
        (3 * PER_PARTITION) as i64,
        "{described}"
    );
    let out = pinlog(
        b,
        &[
            "group",
            "reset-offsets",
            GROUP,
            "--topic",
            "orders:1",
            "--shift-by",
            "4",
            "--execute",
        ],
    );
    expect_exit(&out, 0);
    assert!(out.stdout.contains("Committed the new offsets"), "{out}");
    // Past every record's time: the end of each log.
    let out = pinlog(
        b,
        &[
            "group",
            "reset-offsets",
            GROUP,
            "--topic",
            "orders:2",
            "--to-datetime",
            "2100-01-01T00:00:00Z",
            "--execute",
        ],
    );
    expect_exit(&out, 0);
    let described = json(&pinlog(b, &["group", "describe", GROUP, "--json"]));
    let current: Vec<i64> = offsets_of(&described).iter().map(|o| o.1).collect();
    assert_eq!(current, [0, 4, PER_PARTITION as i64], "{described}");

    // A partition the topic does not have.
    let out = pinlog(
        b,
        &[
            "group",
            "reset-offsets",
            GROUP,
            "--topic",
            "orders:9",
            "--to-latest",
        ],
    );
    expect_exit(&out, 1);
    assert!(out.stderr.contains("no partition 9"), "{out}");

    broker.stop();
}

#[test]
fn cluster_describe_shows_the_brokers_and_the_quorum() {
    let broker = Broker::start(BrokerOpts::new());
    let b = broker.bootstrap();
    // A topic, so the metadata log is not empty.
    expect_exit(&pinlog(Some(&b), &["topic", "create", "c1"]), 0);
    let out = pinlog(Some(&b), &["cluster", "describe", "--json"]);
    let v = json(expect_exit(&out, 0));
    assert_eq!(v["controller_id"], 1, "{v}");
    assert_eq!(v["brokers"][0]["id"], 1, "{v}");
    assert_eq!(v["brokers"][0]["address"], b.as_str(), "{v}");
    assert_eq!(v["quorum"]["leader"], 1, "{v}");
    assert!(v["quorum"]["high_watermark"].as_i64().unwrap() > 0, "{v}");
    assert_eq!(v["quorum"]["members"][0]["role"], "leader", "{v}");
    assert_eq!(v["quorum"]["members"][0]["lag"], 0, "{v}");
    let text = pinlog(Some(&b), &["cluster", "describe"]);
    let text = &expect_exit(&text, 0).stdout;
    assert!(text.contains("the active controller is 1"), "{text}");
    assert!(text.contains("Metadata quorum: leader 1"), "{text}");
}
