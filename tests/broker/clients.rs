//! Real Kafka clients against a real `pinlog serve` process.
//!
//! Each client creates topics (kcat cannot: it relies on auto-creation),
//! produces `RECORDS_PER_CODEC` keyed records with headers under every
//! compression codec (one topic per codec), and consumes them back; the
//! consumed records are then checked exactly (see [`verify`]): every record
//! once, dense offsets from 0, per-partition order, keys and headers intact.
//! The data is a pure function of (codec, sequence number), defined in
//! `tests/clients/spec.py` and repeated in `expected_*` below and in
//! `tests/clients/java/ClientCheck.java`.
//!
//! The clients:
//! - `kcat` from Debian: librdkafka 2.0.2, the old-client check (COMPAT.md
//!   trap 1: it chokes on an ApiVersions v3 reply with default tagged
//!   fields);
//! - confluent-kafka (Python wheel bundling a current librdkafka), with
//!   idempotence on;
//! - kafka-python (pure Python; it opens with ApiVersions v4, COMPAT trap 2);
//! - Apache Kafka's Java client, kafka-clients 4.4 with default producer
//!   settings (idempotence on, acks=all, five requests in flight).
//!
//! After a clean stop, the data files are checked for batches of each codec
//! ([`assert_codecs_on_disk`]), so a codec a client silently dropped is
//! noticed.
//!
//! Crash and restart: the data must read back identically after a clean
//! restart (kcat, confluent-kafka) and after `kill -9` + restart
//! (confluent-kafka; with Java the broker is killed the moment the last send
//! is acknowledged). The other COMPAT traps: auto-creation on and off, and
//! the advertised listener in Metadata; and ApiVersions of an unknown
//! version, without a client.
//!
//! Missing tools make the tests FAIL with the package to install, because
//! CI installs them all; `PINLOG_SKIP_CLIENT_TESTS=1` skips every test here
//! that needs an external client instead.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support;
use crate::support::{kafka_libs, run_command, which, Broker, BrokerOpts, CmdOutput, CutProxy};
use bytes::{BufMut, BytesMut};
use pinlog::protocol::codec::Reader;
use pinlog::protocol::error_code;
use pinlog::protocol::header::decode_response_header;
use pinlog::protocol::messages::api_versions::ApiVersionsResponse;

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];
/// Records per codec (so per topic) and client.
const RECORDS_PER_CODEC: usize = 2000;
/// Partitions of every test topic: more than the broker's 2 shards, so each
/// shard owns several.
const PARTITIONS: usize = 4;
/// Outer limit for one client run. The scripts bound each step themselves
/// (60 s); this catches a client hung outside those limits.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);
/// Limit for a client step that must answer quickly (metadata errors).
const QUICK_TIMEOUT: Duration = Duration::from_secs(30);
const KEYS: usize = 37;
const CLIENTS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients");

// ---------------------------------------------------------------------------
// The expected data (keep in step with tests/clients/spec.py).

fn expected_key(seq: usize) -> String {
    format!("key-{}", seq % KEYS)
}

fn expected_value(codec: &str, seq: usize) -> String {
    format!("{codec}:{seq:06}:{}", "pinlog-".repeat(4 + seq % 16))
}

/// Which headers each record must carry.
#[derive(Clone, Copy)]
enum Headers {
    /// `codec`, `seq`, `dup=a`, `dup=b`: clients that set headers per record.
    PerRecord,
    /// `codec`, `dup=a`, `dup=b`: kcat's `-H` sets the same headers on every
    /// record.
    Kcat,
}

impl Headers {
    fn expected(self, codec: &str, seq: usize) -> String {
        match self {
            Headers::PerRecord => format!("codec={codec},seq={seq},dup=a,dup=b"),
            Headers::Kcat => format!("codec={codec},dup=a,dup=b"),
        }
    }
}

// ---------------------------------------------------------------------------
// Checking what a client consumed.

/// One consumed record: a line `topic\tpartition\toffset\tkey\tvalue\theaders`.
struct Consumed<'a> {
    partition: i32,
    offset: i64,
    key: &'a str,
    value: &'a str,
    headers: &'a str,
}

/// Checks everything a client consumed from topics `<prefix>-<codec>` and
/// panics with a list of problems (and the client's output) if anything is
/// off: a missing, duplicated, altered or unexpected record, an offset gap,
/// per-partition order not kept, a key on two partitions, or all records on
/// one partition.
fn verify(stage: &str, prefix: &str, out: &CmdOutput, headers: Headers) {
    let mut problems = Vec::new();
    let mut by_topic: BTreeMap<&str, Vec<Consumed>> = BTreeMap::new();
    for (n, line) in out.stdout.lines().enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        let parsed = (f.len() == 6)
            .then(|| Some((f[0], f[1].parse().ok()?, f[2].parse().ok()?)))
            .flatten();
        let Some((topic, partition, offset)) = parsed else {
            problems.push(format!("line {}: cannot parse {line:?}", n + 1));
            continue;
        };
        by_topic.entry(topic).or_default().push(Consumed {
            partition,
            offset,
            key: f[3],
            value: f[4],
            headers: f[5],
        });
    }
    for codec in CODECS {
        let topic = format!("{prefix}-{codec}");
        let records = by_topic.remove(topic.as_str()).unwrap_or_default();
        check_topic(&topic, codec, &records, headers, &mut problems);
    }
    for (topic, records) in by_topic {
        problems.push(format!(
            "{} records from unexpected topic {topic:?}",
            records.len()
        ));
    }
    if !problems.is_empty() {
        let shown: Vec<&String> = problems.iter().take(30).collect();
        panic!(
            "{stage}: {} problems in the consumed records; the first ones:\n  {}\n{}",
            problems.len(),
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n  "),
            out.display_with(10)
        );
    }
}

fn check_topic(
    topic: &str,
    codec: &str,
    records: &[Consumed],
    headers: Headers,
    problems: &mut Vec<String>,
) {
    let mut seen = vec![0usize; RECORDS_PER_CODEC];
    // partition -> (next expected offset, last sequence number)
    let mut partitions: BTreeMap<i32, (i64, Option<usize>)> = BTreeMap::new();
    let mut key_partition: HashMap<&str, i32> = HashMap::new();
    for r in records {
        let at = format!("{topic}[{}]@{}", r.partition, r.offset);
        let seq = r
            .value
            .strip_prefix(codec)
            .and_then(|v| v.strip_prefix(':'))
            .and_then(|v| v.get(..6))
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|&s| s < RECORDS_PER_CODEC);
        let Some(seq) = seq else {
            problems.push(format!("{at}: value {:?} is not one we produced", r.value));
            continue;
        };
        seen[seq] += 1;
        if r.value != expected_value(codec, seq) {
            problems.push(format!("{at}: seq {seq}: value {:?} altered", r.value));
        }
        if r.key != expected_key(seq) {
            problems.push(format!(
                "{at}: seq {seq}: key {:?}, expected {:?}",
                r.key,
                expected_key(seq)
            ));
        }
        let want_headers = headers.expected(codec, seq);
        if r.headers != want_headers {
            problems.push(format!(
                "{at}: seq {seq}: headers {:?}, expected {want_headers:?}",
                r.headers
            ));
        }
        let (next_offset, last_seq) = partitions.entry(r.partition).or_insert((0, None));
        if r.offset != *next_offset {
            problems.push(format!(
                "{at}: offset {} where {next_offset} was next (gap or reordering)",
                r.offset
            ));
        }
        *next_offset = r.offset + 1;
        if let Some(last) = *last_seq {
            if seq <= last {
                problems.push(format!(
                    "{at}: seq {seq} after seq {last}: per-partition order lost"
                ));
            }
        }
        *last_seq = Some(seq);
        if let Some(p) = key_partition.insert(r.key, r.partition) {
            if p != r.partition {
                problems.push(format!("{at}: key {:?} also on partition {p}", r.key));
            }
        }
    }
    let missing: Vec<usize> = (0..RECORDS_PER_CODEC).filter(|&s| seen[s] == 0).collect();
    if !missing.is_empty() {
        problems.push(format!(
            "{topic}: {} of {RECORDS_PER_CODEC} records missing, e.g. seq {:?}",
            missing.len(),
            &missing[..missing.len().min(10)]
        ));
    }
    let dups: Vec<usize> = (0..RECORDS_PER_CODEC).filter(|&s| seen[s] > 1).collect();
    if !dups.is_empty() {
        problems.push(format!(
            "{topic}: {} records consumed more than once, e.g. seq {:?}",
            dups.len(),
            &dups[..dups.len().min(10)]
        ));
    }
    if !records.is_empty() && partitions.len() < 2 {
        problems.push(format!(
            "{topic}: all records on partitions {:?}: keys were not spread",
            partitions.keys().collect::<Vec<_>>()
        ));
    }
}

/// Codecs that librdkafka clients (Debian's kcat with librdkafka 2.0.2,
/// and confluent-kafka with librdkafka 2.16) send UNCOMPRESSED to pinlog.
/// Empty since pinlog advertises FindCoordinator: librdkafka enables LZ4
/// only when the broker advertises it, its marker for "Kafka >= 0.8.2"
/// (debug `feature`: "Feature LZ4: FindCoordinator (0..32767) NOT supported
/// by broker"), and before that it sent lz4 batches uncompressed after
/// logging "Broker does not support compression type lz4: not compressing
/// batch" (debug facility `msg`).
///
/// gzip and snappy were never listed, although librdkafka before the fix of
/// its issue #4956 (kcat's 2.0.2 included) drops them too unless the
/// advertised Produce range includes v0: Apache Kafka 4.x advertises
/// Produce from v0, and refuses v0-v2 requests, for exactly this reason
/// (KAFKA-18659), so a broker that wants old librdkafka clients to compress
/// must do the same.
const LIBRDKAFKA_UNCOMPRESSED: &[&str] = &[];

/// Checks, on a STOPPED broker's files, that each `<prefix>-<codec>` topic
/// really holds batches compressed with that codec: a client may fall back
/// to uncompressed batches where compression does not pay, but it must
/// never use another codec, and most records must be compressed. This makes
/// sure each codec was exercised rather than silently ignored. Codecs in
/// `uncompressed` are expected to have been sent uncompressed instead.
fn assert_codecs_on_disk(broker: &Broker, prefix: &str, uncompressed: &[&str]) {
    for codec in CODECS {
        let topic = format!("{prefix}-{codec}");
        // codec name -> records in batches with that codec
        let mut records: BTreeMap<String, u64> = BTreeMap::new();
        for p in 0..PARTITIONS {
            let dir = broker.data_dir().join(format!("{topic}-{p}"));
            for log in files_with_extension(&dir, "log") {
                let mut dump = Vec::new();
                pinlog::tools::dump::dump_file(&log, &mut dump)
                    .unwrap_or_else(|e| panic!("dump {}: {e}", log.display()));
                for line in String::from_utf8_lossy(&dump).lines() {
                    if !line.starts_with("baseOffset:") {
                        continue;
                    }
                    let field = |name: &str| {
                        line.split(' ')
                            .skip_while(|w| *w != name)
                            .nth(1)
                            .unwrap_or_else(|| panic!("no {name} in dump line {line:?}"))
                            .to_string()
                    };
                    let count: u64 = field("count:").parse().expect("numeric count");
                    *records.entry(field("compresscodec:")).or_default() += count;
                }
            }
        }
        let total: u64 = records.values().sum();
        let with_codec = records.get(codec).copied().unwrap_or(0);
        let others: Vec<&String> = records
            .keys()
            .filter(|c| *c != codec && *c != "none")
            .collect();
        assert_eq!(
            total, RECORDS_PER_CODEC as u64,
            "{topic}: records per batch codec on disk {records:?}"
        );
        if uncompressed.contains(&codec) {
            assert!(
                records.keys().all(|c| c == "none"),
                "{topic}: records per batch codec on disk {records:?}: this client used to send \
                 {codec} uncompressed to pinlog and now compresses it; update the list of \
                 codecs it sends uncompressed"
            );
        } else {
            assert!(
                others.is_empty() && with_codec * 2 > total,
                "{topic}: records per batch codec on disk {records:?}: expected most records in \
                 {codec} batches. If the producer logged 'Broker does not support compression \
                 type', it read pinlog's ApiVersions as lacking {codec}; see LIBRDKAFKA_UNCOMPRESSED"
            );
        }
    }
}

fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

fn topics(prefix: &str) -> Vec<String> {
    CODECS.iter().map(|c| format!("{prefix}-{c}")).collect()
}

// ---------------------------------------------------------------------------
// The clients: availability and invocation.

fn skip_requested() -> bool {
    std::env::var("PINLOG_SKIP_CLIENT_TESTS").is_ok_and(|v| v == "1")
}

/// `true` when the test must stop here: skipping was asked for. Says so
/// where the operator sees it (libtest captures `eprintln!` of passing
/// tests, but not writes to the stderr handle).
fn skipped(test: &str) -> bool {
    if !skip_requested() {
        return false;
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "*** SKIPPED {test} (PINLOG_SKIP_CLIENT_TESTS=1): pinlog was NOT checked against this client ***"
    );
    true
}

/// Panics with what to install when `ok` is false.
fn require(ok: bool, what: &str, install: &str) {
    assert!(
        ok,
        "{what} is not available; install it with `{install}` (CI does), \
         or set PINLOG_SKIP_CLIENT_TESTS=1 to skip the client tests"
    );
}

fn require_kcat() {
    let ok = which("kcat").is_some()
        && run_command(Command::new("kcat").arg("-V"), None, QUICK_TIMEOUT).success();
    require(ok, "kcat", "apt-get install kcat");
}

/// Checks that `python3` can import what `check` imports.
fn require_python(check: &str, what: &str, install: &str) {
    let ok = which("python3").is_some()
        && run_command(
            Command::new("python3").args(["-c", check]),
            None,
            QUICK_TIMEOUT,
        )
        .success();
    require(ok, what, install);
}

fn require_confluent_kafka() {
    require_python(
        "import confluent_kafka",
        "the Python package confluent-kafka",
        "pip install confluent-kafka",
    );
}

fn require_kafka_python() {
    // kafka-python imports fine without its codec extras, then cannot
    // compress or read compressed batches.
    require_python(
        "import kafka.codec as c; assert c.has_gzip() and c.has_snappy() and c.has_lz4() \
         and c.has_zstd()",
        "kafka-python with its codec extras",
        "pip install 'kafka-python[crc32c,lz4,snappy,zstd]'",
    );
}

/// A Python client script of tests/clients with its arguments.
fn python<S: AsRef<OsStr>>(script: &str, args: &[S]) -> Command {
    let mut cmd = Command::new("python3");
    cmd.arg(Path::new(CLIENTS_DIR).join(script))
        .args(args)
        // Never leave __pycache__ (of spec.py) in the source tree.
        .env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}

/// Runs a client step that talks to `broker`; on failure panics with the
/// client's output and the broker's log.
fn run_against(broker: &Broker, mut cmd: Command, stdin: Option<&[u8]>) -> CmdOutput {
    let out = run_command(&mut cmd, stdin, CLIENT_TIMEOUT);
    if !out.success() {
        broker.fail(&format!("client step failed:\n{out}"));
    }
    out
}

/// Compiles ClientCheck.java and FetchSessionCheck.java into `classes` and returns the classpath to
/// run it with.
fn compile_java_client(classes: &Path) -> String {
    require(
        which("java").is_some() && which("javac").is_some(),
        "a JDK (java and javac, 17+)",
        "apt-get install openjdk-17-jdk-headless",
    );
    let libs = kafka_libs();
    let jars = format!("{}/*", libs.display());
    run_command(
        Command::new("javac")
            .args(["-cp", &jars, "-d"])
            .arg(classes)
            .arg(Path::new(CLIENTS_DIR).join("java/ClientCheck.java"))
            .arg(Path::new(CLIENTS_DIR).join("java/FetchSessionCheck.java")),
        None,
        CLIENT_TIMEOUT,
    )
    .assert_success();
    format!("{}:{jars}", classes.display())
}

fn java<S: AsRef<OsStr>>(classpath: &str, args: &[S]) -> Command {
    let mut cmd = Command::new("java");
    // C1 only: these runs are short, and the JVM starts faster without C2.
    cmd.args(["-XX:TieredStopAtLevel=1", "-cp", classpath, "ClientCheck"])
        .args(args);
    cmd
}

/// The arguments of the create, produce and consume steps of a client
/// program (the Python scripts, ClientCheck.java) for the topics
/// `<prefix>-<codec>`.
struct Steps {
    create: Vec<String>,
    produce: Vec<String>,
    consume: Vec<String>,
}

fn steps(broker: &Broker, prefix: &str) -> Steps {
    let b = broker.bootstrap();
    let topics = topics(prefix);
    let args = |first: &[String], rest: &[String]| [first, rest].concat();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let codecs = s(&CODECS);
    Steps {
        create: args(&s(&["create", &b, &PARTITIONS.to_string()]), &topics),
        produce: args(
            &s(&["produce", &b, &RECORDS_PER_CODEC.to_string(), prefix]),
            &codecs,
        ),
        consume: args(&s(&["consume", &b]), &topics),
    }
}

fn kcat(broker: &Broker, args: &[&str]) -> Command {
    let mut cmd = Command::new("kcat");
    cmd.args(["-b", &broker.bootstrap()]).args(args);
    cmd
}

/// kcat's producer input for one codec: `key|value` lines.
fn kcat_input(codec: &str) -> Vec<u8> {
    let mut input = String::new();
    for seq in 0..RECORDS_PER_CODEC {
        input.push_str(&format!(
            "{}|{}\n",
            expected_key(seq),
            expected_value(codec, seq)
        ));
    }
    input.into_bytes()
}

/// kcat consuming each `<prefix>-<codec>` topic to its end, one line per
/// record in the format of [`verify`].
fn kcat_consume(broker: &Broker, prefix: &str) -> CmdOutput {
    let mut all: Option<CmdOutput> = None;
    for topic in topics(prefix) {
        let out = run_against(
            broker,
            kcat(
                broker,
                &[
                    "-C",
                    "-t",
                    &topic,
                    "-o",
                    "beginning",
                    "-e",
                    "-f",
                    "%t\t%p\t%o\t%k\t%s\t%h\n",
                ],
            ),
            None,
        );
        match &mut all {
            None => all = Some(out),
            Some(a) => {
                a.stdout.push_str(&out.stdout);
                a.stderr.push_str(&out.stderr);
                a.what = format!("kcat -C for every topic {prefix}-*");
            }
        }
    }
    all.expect("at least one codec")
}

// ---------------------------------------------------------------------------
// Round trips with each client.

/// Debian's kcat (librdkafka 2.0.2): produce under every codec into
/// auto-created topics, consume, then read the same data after a clean
/// restart.
#[test]
fn kcat_all_codecs_and_clean_restart() {
    if skipped("kcat_all_codecs_and_clean_restart") {
        return;
    }
    require_kcat();
    // kcat cannot create topics: auto-creation makes them, with
    // num.partitions partitions.
    let mut broker = Broker::start(BrokerOpts::new().setting("num.partitions", PARTITIONS as i64));
    for codec in CODECS {
        let topic = format!("kcat-{codec}");
        let header = format!("codec={codec}");
        run_against(
            &broker,
            kcat(
                &broker,
                &[
                    "-P", "-t", &topic, "-K", "|", "-z", codec, "-H", &header, "-H", "dup=a", "-H",
                    "dup=b",
                ],
            ),
            Some(&kcat_input(codec)),
        );
    }
    verify(
        "kcat",
        "kcat",
        &kcat_consume(&broker, "kcat"),
        Headers::Kcat,
    );

    broker.stop();
    broker.restart();
    verify(
        "kcat after a clean restart",
        "kcat",
        &kcat_consume(&broker, "kcat"),
        Headers::Kcat,
    );
    broker.stop();
    // Last, so that a codec sent uncompressed does not hide the checks above.
    assert_codecs_on_disk(&broker, "kcat", LIBRDKAFKA_UNCOMPRESSED);
}

/// confluent-kafka with idempotence: round trip, then the same data after
/// kill -9 + restart, and after a clean restart.
#[test]
fn confluent_kafka_all_codecs_crash_and_clean_restart() {
    if skipped("confluent_kafka_all_codecs_crash_and_clean_restart") {
        return;
    }
    require_confluent_kafka();
    let mut broker = Broker::start(BrokerOpts::new());
    let steps = steps(&broker, "ck");
    run_against(&broker, python("confluent_client.py", &steps.create), None);
    run_against(&broker, python("confluent_client.py", &steps.produce), None);
    let consume_all =
        |broker: &Broker| run_against(broker, python("confluent_client.py", &steps.consume), None);
    verify(
        "confluent-kafka",
        "ck",
        &consume_all(&broker),
        Headers::PerRecord,
    );

    broker.kill9();
    broker.restart();
    verify(
        "confluent-kafka after kill -9 + restart",
        "ck",
        &consume_all(&broker),
        Headers::PerRecord,
    );

    broker.stop();
    broker.restart();
    verify(
        "confluent-kafka after a clean restart",
        "ck",
        &consume_all(&broker),
        Headers::PerRecord,
    );
    broker.stop();
    assert_codecs_on_disk(&broker, "ck", LIBRDKAFKA_UNCOMPRESSED);
}

/// kafka-python: round trip under every codec.
#[test]
fn kafka_python_all_codecs() {
    if skipped("kafka_python_all_codecs") {
        return;
    }
    require_kafka_python();
    let mut broker = Broker::start(BrokerOpts::new());
    let steps = steps(&broker, "kp");
    run_against(
        &broker,
        python("kafka_python_client.py", &steps.create),
        None,
    );
    run_against(
        &broker,
        python("kafka_python_client.py", &steps.produce),
        None,
    );
    let out = run_against(
        &broker,
        python("kafka_python_client.py", &steps.consume),
        None,
    );
    verify("kafka-python", "kp", &out, Headers::PerRecord);
    broker.stop();
    assert_codecs_on_disk(&broker, "kp", &[]);
}

/// kafka-clients 4.4 with default producer settings; the broker is killed
/// (kill -9) as soon as every send is acknowledged, so acknowledged records
/// must survive a crash.
#[test]
fn java_kafka_clients_all_codecs_survive_crash() {
    if skipped("java_kafka_clients_all_codecs_survive_crash") {
        return;
    }
    let classes = tempfile::tempdir().expect("temporary directory for classes");
    let cp = compile_java_client(classes.path());
    let mut broker = Broker::start(BrokerOpts::new());
    let steps = steps(&broker, "jv");
    run_against(&broker, java(&cp, &steps.create), None);
    run_against(&broker, java(&cp, &steps.produce), None);

    broker.kill9();
    broker.restart();
    let out = run_against(&broker, java(&cp, &steps.consume), None);
    verify(
        "kafka-clients (produced, then kill -9 + restart)",
        "jv",
        &out,
        Headers::PerRecord,
    );
    broker.stop();
    assert_codecs_on_disk(&broker, "jv", &[]);
}

// ---------------------------------------------------------------------------
// COMPAT.md traps.

/// Trap 4, auto-creation on (Kafka's default): a Metadata request and a
/// Produce for unknown topics create them with num.partitions partitions.
#[test]
fn auto_create_enabled_creates_topics_on_metadata_and_produce() {
    if skipped("auto_create_enabled_creates_topics_on_metadata_and_produce") {
        return;
    }
    require_kcat();
    let mut broker = Broker::start(BrokerOpts::new().setting("num.partitions", 3));
    // `kcat -L -t T` sends Metadata for T with auto-creation allowed.
    let md = run_against(
        &broker,
        kcat(&broker, &["-L", "-t", "auto-by-metadata"]),
        None,
    );
    assert!(
        md.stdout
            .contains("topic \"auto-by-metadata\" with 3 partitions"),
        "Metadata did not auto-create the topic:\n{md}"
    );
    run_against(
        &broker,
        kcat(&broker, &["-P", "-t", "auto-by-produce", "-K", "|"]),
        Some(b"k|hello\n"),
    );
    let all = run_against(&broker, kcat(&broker, &["-L"]), None);
    for topic in ["auto-by-metadata", "auto-by-produce"] {
        assert!(
            all.stdout
                .contains(&format!("topic \"{topic}\" with 3 partitions")),
            "{topic} is not listed with 3 partitions:\n{all}"
        );
    }
    let read = run_against(
        &broker,
        kcat(
            &broker,
            &[
                "-C",
                "-t",
                "auto-by-produce",
                "-o",
                "beginning",
                "-e",
                "-f",
                "%k|%s\n",
            ],
        ),
        None,
    );
    assert_eq!(read.stdout, "k|hello\n", "{read}");
    broker.stop();
}

/// Trap 4, auto-creation off: clients learn UNKNOWN_TOPIC_OR_PARTITION at
/// once, instead of waiting for a silent timeout, and nothing is created.
#[test]
fn auto_create_disabled_unknown_topic_fails_fast() {
    if skipped("auto_create_disabled_unknown_topic_fails_fast") {
        return;
    }
    require_kcat();
    require_confluent_kafka();
    let mut broker = Broker::start(BrokerOpts::new().setting("auto.create.topics.enable", false));
    let md = run_command(
        &mut kcat(&broker, &["-L", "-t", "no-such-topic", "-m", "10"]),
        None,
        QUICK_TIMEOUT,
    );
    assert!(
        md.stdout.contains("Unknown topic or partition")
            || md.stderr.contains("Unknown topic or partition"),
        "kcat -L for an unknown topic should report UNKNOWN_TOPIC_OR_PARTITION:\n{md}"
    );

    // confluent_client.py explains the two limits it sets.
    let b = broker.bootstrap();
    let out = run_command(
        &mut python(
            "confluent_client.py",
            &["unknown-topic", &b, "no-such-topic"],
        ),
        None,
        QUICK_TIMEOUT,
    );
    out.assert_success();
    let line = |prefix: &str| {
        out.stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} line:\n{out}"))
            .to_string()
    };
    assert!(
        line("metadata error=").starts_with("metadata error=UNKNOWN_TOPIC_OR_PART "),
        "Metadata for an unknown topic should carry UNKNOWN_TOPIC_OR_PARTITION:\n{out}"
    );
    // librdkafka reports the broker's error code (current versions) or its
    // local _UNKNOWN_TOPIC (older ones); a broker that stays silent shows up
    // as _MSG_TIMED_OUT instead.
    let produce = line("produce error=");
    assert!(
        produce.starts_with("produce error=UNKNOWN_TOPIC_OR_PART ")
            || produce.starts_with("produce error=_UNKNOWN_TOPIC "),
        "producing to an unknown topic should fail with 'unknown topic', \
         not a message timeout:\n{out}"
    );
    assert!(
        out.elapsed < Duration::from_secs(15),
        "the unknown-topic errors took {:?}:\n{out}",
        out.elapsed
    );

    let all = run_against(&broker, kcat(&broker, &["-L"]), None);
    assert!(
        !all.stdout.contains("no-such-topic")
            && !broker.data_dir().join("no-such-topic-0").exists(),
        "the topic was created although auto.create.topics.enable=false:\n{all}"
    );
    broker.stop();
}

/// Trap 3: Metadata returns the advertised host:port, never a hard-coded
/// 9092, and clients follow it.
#[test]
fn metadata_returns_the_advertised_listener() {
    if skipped("metadata_returns_the_advertised_listener") {
        return;
    }
    require_kcat();
    // Default: the listen address is advertised.
    let mut plain = Broker::start(BrokerOpts::new());
    let md = run_against(&plain, kcat(&plain, &["-L"]), None);
    let want = format!("broker 1 at {}", plain.advertised());
    assert!(md.stdout.contains(&want), "expected {want:?} in:\n{md}");
    assert!(!md.stdout.contains(":9092"), "9092 in Metadata:\n{md}");
    plain.stop();

    // An advertised name different from the listen address: Metadata
    // returns it, and a client bootstrapped on 127.0.0.1 then connects to
    // it for produce and fetch.
    let mut named = Broker::start(BrokerOpts::new().advertise_host("localhost"));
    let md = run_against(&named, kcat(&named, &["-L"]), None);
    let want = format!("broker 1 at localhost:{}", named.port());
    assert!(md.stdout.contains(&want), "expected {want:?} in:\n{md}");
    run_against(
        &named,
        kcat(&named, &["-P", "-t", "advertised", "-K", "|"]),
        Some(b"k|via the advertised listener\n"),
    );
    let read = run_against(
        &named,
        kcat(
            &named,
            &[
                "-C",
                "-t",
                "advertised",
                "-o",
                "beginning",
                "-e",
                "-f",
                "%k|%s\n",
            ],
        ),
        None,
    );
    assert_eq!(read.stdout, "k|via the advertised listener\n", "{read}");
    named.stop();
}

/// A restarted broker opens its listeners only once every partition it
/// leads is led again: a client connecting at once finds a leader for
/// each, on whichever shard its connection lands. A fresh-clone CI run
/// once saw NOT_LEADER_OR_FOLLOWER there, because the second shard served
/// before the first image after catch-up was applied.
#[test]
fn a_restarted_broker_serves_with_its_partitions_led() {
    if skipped("a_restarted_broker_serves_with_its_partitions_led") {
        return;
    }
    require_kcat();
    const TOPIC: &str = "led-at-once";
    const RESTARTS: usize = 3;
    // Connections per restart: SO_REUSEPORT spreads them over both shards.
    const PROBES: usize = 6;
    const LED_PARTITIONS: i64 = 48;
    let mut broker = Broker::start(
        BrokerOpts::new()
            .shards(2)
            .setting("num.partitions", LED_PARTITIONS),
    );
    run_against(
        &broker,
        kcat(&broker, &["-P", "-t", TOPIC, "-K", "|"]),
        Some(b"k|creates the topic\n"),
    );
    for restart in 0..RESTARTS {
        if restart % 2 == 0 {
            broker.kill9();
        } else {
            broker.stop();
        }
        broker.restart();
        // ListOffsets (kcat -Q) is answered by a partition's leader
        // replica only, not from the metadata image alone.
        let query: Vec<String> = (0..LED_PARTITIONS)
            .flat_map(|p| ["-t".to_string(), format!("{TOPIC}:{p}:-1")])
            .collect();
        let mut args = vec!["-Q", "-J"];
        args.extend(query.iter().map(String::as_str));
        for probe in 0..PROBES {
            let out = run_against(&broker, kcat(&broker, &args), None);
            let json: serde_json::Value = serde_json::from_str(out.stdout.trim())
                .unwrap_or_else(|e| broker.fail(&format!("kcat -Q -J is not JSON ({e}):\n{out}")));
            let answered = (0..LED_PARTITIONS)
                .filter(|p| {
                    let part = &json[TOPIC][p.to_string()];
                    part.get("error").is_none() && part["offset"].as_i64().is_some_and(|o| o >= 0)
                })
                .count();
            if answered as i64 != LED_PARTITIONS {
                broker.fail(&format!(
                    "restart {restart}, probe {probe}: only {answered} of {LED_PARTITIONS} \
                     partitions answered ListOffsets as soon as the broker answered:\n{out}"
                ));
            }
        }
    }
    broker.stop();
}

/// Trap 2, without a client: an ApiVersions request of a version the broker
/// does not know is answered as v0 with UNSUPPORTED_VERSION and the
/// supported range, which any client can decode.
#[test]
fn api_versions_of_unknown_version_is_answered_as_v0() {
    let mut broker = Broker::start(BrokerOpts::new());
    let addr: std::net::SocketAddr = broker.bootstrap().parse().expect("socket address");
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(QUICK_TIMEOUT))
        .expect("read timeout");
    let (version, correlation_id) = (99i16, 42i32);
    let mut req = BytesMut::new();
    // Header v2 as a flexible client would send; the broker must not need
    // to understand the body.
    req.put_i16(18);
    req.put_i16(version);
    req.put_i32(correlation_id);
    req.put_i16(4);
    req.put_slice(b"test");
    req.put_u8(0);
    req.put_u8(0);
    let resp = support::round_trip(&mut stream, &req)
        .unwrap_or_else(|e| broker.fail(&format!("ApiVersions v{version}: {e}")));
    let mut r = Reader::new(resp);
    assert_eq!(decode_response_header(&mut r, 0).unwrap(), correlation_id);
    let body = ApiVersionsResponse::decode(&mut r, 0).expect("decodes as v0");
    assert_eq!(body.error_code, error_code::UNSUPPORTED_VERSION);
    let own = body
        .api_keys
        .iter()
        .find(|k| k.api_key == 18)
        .expect("the reply lists ApiVersions itself");
    assert!(own.min_version == 0 && own.max_version >= 3, "{own:?}");
    broker.stop();
}

/// The Java consumer (kafka-clients 4.4 uses incremental fetch sessions)
/// through a dropped connection, a seek, a rebalance and partitions removed
/// and re-added (tests/clients/java/FetchSessionCheck.java). See
/// [`check_fetch_sessions`].
#[test]
fn java_consumer_fetch_sessions_survive_cut_seek_rebalance_and_reassign() {
    if skipped("java_consumer_fetch_sessions_survive_cut_seek_rebalance_and_reassign") {
        return;
    }
    let classes = tempfile::tempdir().unwrap();
    let cp = compile_java_client(classes.path());
    check_fetch_sessions("java", |args| {
        let mut cmd = Command::new("java");
        cmd.args(["-XX:TieredStopAtLevel=1", "-cp", &cp, "FetchSessionCheck"])
            .args(args);
        cmd
    });
}

/// The same with kafka-python, whose 3.x consumer has Kafka's fetch-session
/// handler (tests/clients/fetch_session_check.py).
#[test]
#[ignore = "open bug: in 2 of 4 full runs on 2026-12-02 the lone kafka-python member stopped \
            heartbeating right after its group became stable (see tests/README.md); run with \
            -- --ignored"]
fn kafka_python_fetch_sessions_survive_cut_seek_rebalance_and_reassign() {
    if skipped("kafka_python_fetch_sessions_survive_cut_seek_rebalance_and_reassign") {
        return;
    }
    require_kafka_python();
    check_fetch_sessions("kafka-python", |args| {
        python("fetch_session_check.py", args)
    });
}

/// Runs a fetch-session client (`client` builds its command from the
/// arguments BOOTSTRAP TOPIC PARTITIONS CUT_REQUEST_FILE CUT_DONE_FILE) and
/// checks that every phase finished. After each phase's trigger the
/// client's next fetch is a full fetch that may name its old session
/// (KIP-227: session id with epoch 0); a broker that refused it kept the
/// consumer in a loop of rejected fetches, and the phase after it timed
/// out. The connections are cut by a proxy in front of the broker, so the
/// broker keeps the session the client then names.
fn check_fetch_sessions(label: &str, client: impl FnOnce(&[String]) -> Command) {
    let proxy = CutProxy::start();
    // One shard: sessions live on the connection's shard, and with two the
    // reconnection may land on the other one, which knows no such session
    // (FETCH_SESSION_ID_NOT_FOUND, from which clients start over): the
    // case under test would then happen only half of the time.
    let broker = Broker::start(
        BrokerOpts::new()
            .shards(1)
            .advertise(&proxy.addr())
            .setting("group.initial.rebalance.delay.ms", 0),
    );
    proxy.forward_to(&broker.bootstrap());
    let signals = tempfile::tempdir().unwrap();
    let cut_request = signals.path().join("cut-request");
    let cut_done = signals.path().join("cut-done");
    let args: Vec<String> = vec![
        proxy.addr(),
        "fetch-sessions".into(),
        PARTITIONS.to_string(),
        cut_request.display().to_string(),
        cut_done.display().to_string(),
    ];
    let mut child = support::spawn_logged(&mut client(&args), signals.path(), label);
    let deadline = std::time::Instant::now() + FETCH_SESSION_CHECK_TIMEOUT;
    let mut cut = 0;
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the client") {
            break status;
        }
        if cut == 0 && cut_request.exists() {
            cut = proxy.cut_all();
            std::fs::write(&cut_done, b"").unwrap();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            broker.fail(&format!(
                "{label} did not finish within {FETCH_SESSION_CHECK_TIMEOUT:?}:\n{}",
                support::read_logged(signals.path(), label)
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = support::read_logged(signals.path(), label);
    if !status.success() || !out.contains("\ndone") {
        broker.fail(&format!("{label} failed ({status}):\n{out}"));
    }
    assert!(
        cut > 0,
        "the proxy cut no connection: the cut phase tested nothing"
    );
    for phase in [
        "subscribe",
        "connection cut",
        "seek",
        "rebalance join",
        "rebalance leave",
        "reassign",
    ] {
        assert!(
            out.contains(&format!("phase {phase} ok")),
            "{label}: phase {phase} did not finish:\n{out}"
        );
    }
}

/// Outer limit of one fetch-session client run: six phases of at most 60 s
/// each would be 6 minutes; a healthy run takes about 15 s.
const FETCH_SESSION_CHECK_TIMEOUT: Duration = Duration::from_secs(300);

/// kafkajs's node_modules, installed by tests/clients/kafkajs/install.sh (a
/// no-op when it is there; `tests/run` runs it beforehand).
fn kafkajs_modules() -> String {
    require(
        which("node").is_some() && which("npm").is_some(),
        "node and npm",
        "apt-get install nodejs npm",
    );
    let script = Path::new(CLIENTS_DIR).join("kafkajs/install.sh");
    let out = run_command(&mut Command::new(&script), None, Duration::from_secs(300));
    require(
        out.success(),
        &format!("kafkajs (installing it failed:\n{out})"),
        "tests/clients/kafkajs/install.sh",
    );
    out.stdout.trim().to_string()
}

/// kafkajs 2 (npm), which a new user may well try first: topic admin,
/// produce, a consumer group with auto-commit, then ListGroups (while the
/// group is live and after it emptied), DescribeGroups, the committed
/// offsets against the end offsets, and deletes. ListGroups used to answer
/// COORDINATOR_LOAD_IN_PROGRESS for good on a running broker: offsets
/// partitions opened after the image changed were only loaded when a
/// request asked for them.
#[test]
fn kafkajs_admin_produce_group_and_list_groups() {
    if skipped("kafkajs_admin_produce_group_and_list_groups") {
        return;
    }
    let modules = kafkajs_modules();
    let broker = Broker::start(BrokerOpts::new().setting("group.initial.rebalance.delay.ms", 0));
    let mut cmd = Command::new("node");
    cmd.arg(Path::new(CLIENTS_DIR).join("kafkajs/kafkajs_client.js"))
        .args([broker.bootstrap().as_str(), "kafkajs-topic", "2000"])
        .env("NODE_PATH", &modules)
        .env("KAFKAJS_NO_PARTITIONER_WARNING", "1");
    let out = run_against(&broker, cmd, None);
    let line = out.stdout.lines().last().unwrap_or_default();
    let result: serde_json::Value = serde_json::from_str(line)
        .unwrap_or_else(|e| broker.fail(&format!("kafkajs printed no result ({e}):\n{out}")));
    let expect = |key: &str, want: serde_json::Value| {
        if result[key] != want {
            broker.fail(&format!(
                "kafkajs: {key} = {}, expected {want}:\n{out}",
                result[key]
            ));
        }
    };
    expect("created", true.into());
    expect("listed", true.into());
    expect("consumed", 2000.into());
    expect("groupListedWhileLive", true.into());
    expect("groupListed", true.into());
    expect("groupState", "Empty".into());
    expect("committed", 2000.into());
    expect("endOffsets", 2000.into());
    expect("partitions", 3.into());
    expect("deleted", true.into());
}

/// Kafka's own `kafka-metadata-quorum.sh` (MetadataQuorumCommand) against
/// the single-node quorum: `describe --status` and `--replication` used to
/// fail with UNSUPPORTED_VERSION for DESCRIBE_QUORUM.
#[test]
fn kafka_metadata_quorum_tool_describes_the_quorum() {
    if skipped("kafka_metadata_quorum_tool_describes_the_quorum") {
        return;
    }
    require(
        which("java").is_some(),
        "a JDK (java, 17+)",
        "apt-get install openjdk-17-jdk-headless",
    );
    let libs = kafka_libs();
    let jars = format!("{}/*", libs.display());
    let broker = Broker::start(BrokerOpts::new());
    // Something in the metadata log, so the high watermark is not 0.
    let bootstrap = broker.bootstrap();
    run_against(
        &broker,
        python(
            "kafka_python_admin.py",
            &["create", bootstrap.as_str(), "quorum-t", "2", "1048576"],
        ),
        None,
    );
    let tool = |what: &str| {
        let mut cmd = Command::new("java");
        cmd.args(["-XX:TieredStopAtLevel=1", "-cp", &jars])
            .arg("org.apache.kafka.tools.MetadataQuorumCommand")
            .args(["--bootstrap-server", &broker.bootstrap(), "describe", what]);
        run_against(&broker, cmd, None).stdout
    };
    let status = tool("--status");
    let field = |name: &str| -> String {
        status
            .lines()
            .find_map(|l| {
                l.strip_prefix(name)
                    .map(|v| v.trim_start_matches(':').trim().to_string())
            })
            .unwrap_or_else(|| broker.fail(&format!("no {name} in:\n{status}")))
    };
    assert_eq!(field("LeaderId"), "1", "{status}");
    let hw: i64 = field("HighWatermark").parse().unwrap();
    assert!(hw > 0, "the metadata log holds the topic: {status}");
    assert_eq!(field("MaxFollowerLag"), "0", "{status}");
    assert!(field("CurrentVoters").contains("\"id\": 1"), "{status}");
    assert!(field("ClusterId").len() >= 22, "{status}");
    let replication = tool("--replication");
    let row = replication
        .lines()
        .find(|l| l.split_whitespace().next() == Some("1"))
        .unwrap_or_else(|| broker.fail(&format!("no row for node 1:\n{replication}")));
    assert!(row.contains("Leader"), "{replication}");
    assert!(
        row.contains(&hw.to_string()),
        "log end offset is the high watermark: {replication}"
    );
}
