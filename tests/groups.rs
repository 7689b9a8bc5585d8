//! Consumer groups with real, unmodified Kafka clients against a real
//! `pinlog serve` process: the classic group protocol (FindCoordinator,
//! JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch)
//! and the admin side (ListGroups, DescribeGroups, OffsetCommit from an
//! admin client), as kafka-python, confluent-kafka (librdkafka), Kafka's
//! Java client and Kafka's `kafka-consumer-groups` tool use them.
//!
//! The clients run as separate processes: `tests/groups/group_client.py`
//! (kafka-python and confluent-kafka members, a producer, admin and offset
//! helpers) and `tests/groups/java/GroupConsumer.java` (a one-shot consumer,
//! and a long-running member that speaks the script's event format). A
//! member prints one event per line (see the script's doc): its rebalance
//! callbacks, assignments and generation, every record it consumed, its
//! commits; the tests read those files while the members run.
//! Events are `name key=value ...` lines rather than JSON because the
//! dev-dependencies have no JSON parser, and these lines need none.
//! Members stop when a stop file appears, so they close() (commit, then
//! LeaveGroup) like an application does; `kill -9` is the crash.
//!
//! What is checked:
//! - members of one group (kafka-python and librdkafka mixed, so the broker
//!   must pick the protocol they share, "range") share the partitions:
//!   each partition owned by exactly one member, every member owning some;
//! - rebalances on join, on clean leave (faster than the session timeout:
//!   LeaveGroup worked) and on kill -9 (after the session timeout);
//! - at-least-once across all of that; exactly once in sum when members
//!   commit synchronously after each batch and only leave cleanly;
//! - committed offsets survive a clean restart and a kill -9, and members
//!   resume exactly there;
//! - the Java client, and `kafka-consumer-groups` --list / --describe /
//!   --members / --state / --reset-offsets;
//! - a committed offset below the log start (after DeleteRecords) is
//!   handled per `auto.offset.reset`: earliest, latest, and none (error);
//! - assignors: `cooperative-sticky` (librdkafka, kafka-python and Java in
//!   one group) rebalances incrementally on join and on leave, as the
//!   members' rebalance callbacks show; `roundrobin` is picked when it is
//!   the only protocol kafka-python and librdkafka share, and both compute
//!   the same layout as leader;
//! - static membership (`group.instance.id`): a member restarted within its
//!   session timeout takes its old place without a rebalance (librdkafka,
//!   kafka-python and Java), a closed static member stays until its session
//!   times out, and a replaced member's new id is what the coordinator
//!   stores;
//! - `group.max.size`: a member beyond it is refused (each client reports
//!   GROUP_MAX_SIZE_REACHED its own way) without disturbing the group, and
//!   a static member still takes its own place in a full group;
//! - a member that stops polling for longer than `max.poll.interval.ms`
//!   leaves (its client does) and is replaced, then rejoins;
//! - KIP-848's consumer group protocol (`group.protocol=consumer`), in
//!   `groups/kip848.rs`: see its doc.
//! - online migration between the classic and the consumer protocol:
//!   `groups/migration.rs`.
//!
//! The records: `seq` of topic T has key `key-<seq % 37>` and value
//! `T/<seq as 7 digits>/<key>`; the producer reports each record's
//! partition and offset, and every consumed record must match exactly.
//!
//! Every test starts its own broker. A test with a timing check (a
//! rebalance after a clean leave faster than the session timeout, a static
//! member back within its session, a kill noticed within a window, locks
//! that expire on time) runs alone ([`serial`]): each starts up to six
//! client processes, and those checks need the two cores. The others only
//! wait, with bounds tens of seconds above what they need, for members to
//! agree and records to arrive, so two of them may run side by side
//! ([`shared`]); while each ran alone the machine was a third busy. Every
//! wait is bounded; a failure prints every client's output and the tail of
//! the broker log.
//!
//! Missing tools make the tests FAIL with the package to install, because
//! CI installs them all; `PINLOG_SKIP_CLIENT_TESTS=1` skips them instead.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use support::{run_command, tail, wait_timeout, which, Broker, BrokerOpts, CmdOutput};

const GROUPS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/groups");
/// Partitions of the topics the groups share: more than the broker's two
/// shards, and more than the members, so every member can own some.
const PARTITIONS: i32 = 6;
/// Members' `session.timeout.ms`. The clean-leave check needs it well above
/// a normal rebalance (measured here: 0.2 s from the leaver's exit to the
/// new assignment), and the kill -9 check waits for it to run out.
const SESSION_MS: u64 = 6000;
/// Members' `heartbeat.interval.ms`: how soon a member hears of a rebalance.
const HEARTBEAT_MS: u64 = 500;
/// Members' `max.poll.interval.ms`, which is also their rebalance timeout:
/// how long the broker waits for known members to rejoin. Above the session
/// timeout, so that a dead member is expired by its session, not by this.
const MAX_POLL_MS: u64 = 20_000;
/// Limit for a short client step (create, produce a batch, a query).
const STEP_TIMEOUT: Duration = Duration::from_secs(60);
/// Limit for members to agree on an assignment after a membership change.
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an assignment must stay unchanged to count as settled: a member
/// reports its assignment after each poll, so one member's report can lag
/// the others' during a rebalance.
const SETTLE: Duration = Duration::from_millis(600);
/// Limit for consuming everything that was produced.
const CONSUME_TIMEOUT: Duration = Duration::from_secs(60);
/// Limit for a member to close after its stop file appears.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// The scripts' own limit (`--max-seconds`); the test's limits are shorter,
/// so this only ends a member the test forgot.
const SCRIPT_MAX_SECONDS: u64 = 180;
/// How often running members' output is read.
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// Lines of the broker log shown in a failure.
const BROKER_LOG_LINES: usize = 150;

/// A test with a timing check holds this lock alone ([`serial`]); the
/// others hold it shared ([`shared`]), so at most the test harness's two
/// threads run them side by side (see the module doc). A failed test
/// poisons the lock; the next one takes it anyway.
static SERIAL: RwLock<()> = RwLock::new(());

/// For a test with a timing check: it runs alone.
fn serial() -> RwLockWriteGuard<'static, ()> {
    SERIAL
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// For a test without one: it may run beside another such test.
fn shared() -> RwLockReadGuard<'static, ()> {
    SERIAL
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

// ---------------------------------------------------------------------------
// Tools: availability (the pattern of tests/broker/clients.rs).

fn skipped(test: &str) -> bool {
    if !std::env::var("PINLOG_SKIP_CLIENT_TESTS").is_ok_and(|v| v == "1") {
        return false;
    }
    // libtest captures `eprintln!` of passing tests, not the stderr handle.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "*** SKIPPED {test} (PINLOG_SKIP_CLIENT_TESTS=1): consumer groups were NOT checked \
         against this client ***"
    );
    true
}

fn require(ok: bool, what: &str, install: &str) {
    assert!(
        ok,
        "{what} is not available; install it with `{install}` (CI does), \
         or set PINLOG_SKIP_CLIENT_TESTS=1 to skip the client tests"
    );
}

fn require_python_clients() {
    let ok = which("python3").is_some()
        && run_command(
            Command::new("python3").args(["-c", "import kafka, confluent_kafka"]),
            None,
            STEP_TIMEOUT,
        )
        .success();
    require(
        ok,
        "the Python packages kafka-python and confluent-kafka",
        "pip install confluent-kafka 'kafka-python[crc32c,lz4,snappy,zstd]'",
    );
}

/// The Kafka jars, after checking for the JDK the Java members need.
fn kafka_libs() -> PathBuf {
    require(
        which("java").is_some() && which("javac").is_some(),
        "a JDK (java and javac, 17+)",
        "apt-get install openjdk-17-jdk-headless",
    );
    support::kafka_libs()
}

// ---------------------------------------------------------------------------
// Events: what the clients print (the format is in group_client.py's doc).

#[derive(Debug, Clone)]
struct Event {
    ev: String,
    fields: BTreeMap<String, String>,
}

impl Event {
    fn parse(line: &str) -> Option<Event> {
        let mut words = line.split(' ');
        let ev = words.next().filter(|w| !w.is_empty())?.to_string();
        let mut fields = BTreeMap::new();
        for w in words {
            let (k, v) = w.split_once('=')?;
            fields.insert(k.to_string(), v.to_string());
        }
        Some(Event { ev, fields })
    }

    fn get(&self, k: &str) -> Option<&str> {
        self.fields.get(k).map(String::as_str)
    }

    fn int(&self, k: &str) -> Option<i64> {
        self.get(k)?.parse().ok()
    }

    /// `a,b,c` (empty: none).
    fn parts(&self, k: &str) -> Option<Vec<i32>> {
        let v = self.get(k)?;
        if v.is_empty() {
            return Some(Vec::new());
        }
        v.split(',').map(|p| p.parse().ok()).collect()
    }

    /// `partition:offset,...`, `-` for none.
    fn offsets(&self, k: &str) -> Option<BTreeMap<i32, Option<i64>>> {
        let v = self.get(k)?;
        if v.is_empty() {
            return Some(BTreeMap::new());
        }
        v.split(',')
            .map(|pair| {
                let (p, o) = pair.split_once(':')?;
                let o = if o == "-" {
                    None
                } else {
                    Some(o.parse().ok()?)
                };
                Some((p.parse().ok()?, o))
            })
            .collect()
    }

    /// A text field with the script's %-escapes undone, for messages.
    fn text(&self, k: &str) -> String {
        let v = self.get(k).unwrap_or("");
        v.replace("%20", " ")
            .replace("%09", "\t")
            .replace("%0A", "\n")
            .replace("%0D", "\r")
            .replace("%25", "%")
    }
}

/// The events of complete lines: a member killed with SIGKILL may leave a
/// last line without its newline.
fn events(text: &str) -> Vec<Event> {
    let complete = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => "",
    };
    complete.lines().filter_map(Event::parse).collect()
}

/// A consumed record.
#[derive(Debug, Clone)]
struct Rec {
    member: String,
    partition: i32,
    offset: i64,
    seq: u64,
}

fn expected_key(seq: u64) -> String {
    format!("key-{}", seq % 37)
}

fn expected_value(topic: &str, seq: u64) -> String {
    format!("{topic}/{seq:07}/{}", expected_key(seq))
}

/// The records among `events`, checked against the data every producer
/// writes; a record that does not match is a problem.
fn records(member: &str, topic: &str, events: &[Event], problems: &mut Vec<String>) -> Vec<Rec> {
    let mut out = Vec::new();
    for e in events.iter().filter(|e| e.ev == "rec") {
        let (Some(p), Some(o), Some(k), Some(v)) = (e.int("p"), e.int("o"), e.get("k"), e.get("v"))
        else {
            problems.push(format!("{member}: malformed record event {e:?}"));
            continue;
        };
        let seq = v
            .strip_prefix(topic)
            .and_then(|r| r.strip_prefix('/'))
            .and_then(|r| r.get(..7))
            .and_then(|s| s.parse::<u64>().ok());
        match seq {
            Some(seq) if v == expected_value(topic, seq) && k == expected_key(seq) => {
                out.push(Rec {
                    member: member.to_string(),
                    partition: p as i32,
                    offset: o,
                    seq,
                })
            }
            _ => problems.push(format!(
                "{member}: {topic}[{p}]@{o}: key {k:?} value {v:?} is not a record we produced"
            )),
        }
    }
    out
}

/// What a producer delivered: seq -> (partition, offset).
type Delivered = BTreeMap<u64, (i32, i64)>;

fn delivered(events: &[Event]) -> Delivered {
    events
        .iter()
        .filter(|e| e.ev == "dlv")
        .filter_map(|e| Some((e.int("seq")? as u64, (e.int("p")? as i32, e.int("o")?))))
        .collect()
}

/// Compares what was consumed with what was delivered: every record
/// consumed at all (`exactly_once`: exactly once), at the partition and
/// offset the producer was told, and nothing else.
fn check_consumed(delivered: &Delivered, recs: &[Rec], exactly_once: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen: BTreeMap<u64, Vec<&Rec>> = BTreeMap::new();
    for r in recs {
        match delivered.get(&r.seq) {
            None => problems.push(format!(
                "{}: consumed seq {} at [{}]@{}, which the producer never reported delivered",
                r.member, r.seq, r.partition, r.offset
            )),
            Some(&(p, o)) if (p, o) != (r.partition, r.offset) => problems.push(format!(
                "{}: seq {} consumed at [{}]@{}, but it was delivered to [{p}]@{o}",
                r.member, r.seq, r.partition, r.offset
            )),
            Some(_) => {}
        }
        seen.entry(r.seq).or_default().push(r);
    }
    let missing: Vec<_> = delivered
        .iter()
        .filter(|(seq, _)| !seen.contains_key(seq))
        .collect();
    if !missing.is_empty() {
        problems.push(format!(
            "{} of {} delivered records were never consumed, e.g. (seq, (partition, offset)) {:?}",
            missing.len(),
            delivered.len(),
            &missing[..missing.len().min(10)]
        ));
    }
    if exactly_once {
        let dups: Vec<String> = seen
            .iter()
            .filter(|(_, rs)| rs.len() > 1)
            .map(|(seq, rs)| {
                let by: Vec<String> = rs
                    .iter()
                    .map(|r| format!("{}@[{}]{}", r.member, r.partition, r.offset))
                    .collect();
                format!("seq {seq} by {}", by.join(" and "))
            })
            .collect();
        if !dups.is_empty() {
            problems.push(format!(
                "{} records consumed more than once, e.g. {:?}",
                dups.len(),
                &dups[..dups.len().min(10)]
            ));
        }
    }
    problems
}

// ---------------------------------------------------------------------------
// Members: long-running client processes.

/// One client process whose stdout (events) and stderr go to files, so the
/// test can read them while it runs. Dropping it kills the process.
struct Member {
    name: String,
    what: String,
    child: Option<Child>,
    status: Option<ExitStatus>,
    out: PathBuf,
    err: PathBuf,
    stop: PathBuf,
    /// When the process was seen to exit, for timing a rebalance.
    exited_at: Option<Instant>,
}

impl Member {
    fn spawn(dir: &Path, name: &str, mut cmd: Command) -> Member {
        let out = dir.join(format!("{name}.out"));
        let err = dir.join(format!("{name}.err"));
        let stop = dir.join(format!("{name}.stop"));
        let what = format!("{cmd:?}");
        cmd.stdin(Stdio::null())
            .stdout(File::create(&out).expect("create a member's output file"))
            .stderr(File::create(&err).expect("create a member's error file"));
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
        Member {
            name: name.to_string(),
            what,
            child: Some(child),
            status: None,
            out,
            err,
            stop,
            exited_at: None,
        }
    }

    fn stdout(&self) -> String {
        std::fs::read(&self.out)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    fn stderr(&self) -> String {
        std::fs::read(&self.err)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    fn events(&self) -> Vec<Event> {
        events(&self.stdout())
    }

    /// The assignment it reported last (after its latest poll).
    fn assignment(&self) -> Option<Vec<i32>> {
        self.events()
            .iter()
            .rev()
            .find(|e| e.ev == "assignment")
            .and_then(|e| e.parts("parts"))
    }

    /// `Some(status)` once the process exited.
    fn poll_exit(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            if let Some(child) = &mut self.child {
                if let Some(s) = child.try_wait().expect("poll a member process") {
                    self.status = Some(s);
                    self.exited_at = Some(Instant::now());
                    self.child = None;
                }
            }
        }
        self.status
    }

    fn request_stop(&self) {
        File::create(&self.stop).expect("create a stop file");
    }

    /// Waits at most `timeout` for the process to exit.
    fn wait(&mut self, timeout: Duration) -> Option<ExitStatus> {
        if let Some(child) = &mut self.child {
            if let Some(s) = wait_timeout(child, timeout) {
                self.status = Some(s);
                self.exited_at = Some(Instant::now());
                self.child = None;
            }
        }
        self.status
    }

    /// Sends `signal` to the process (SIGSTOP: it hangs with its
    /// connections open).
    fn signal(&self, signal: i32) {
        if let Some(child) = &self.child {
            // SAFETY: kill(2) on the pid of a child not yet reaped.
            unsafe {
                libc::kill(child.id() as i32, signal);
            }
        }
    }

    /// kill -9, and reap.
    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            self.status = child.wait().ok();
            self.exited_at = Some(Instant::now());
        }
    }

    fn report(&self, stdout_lines: usize) -> String {
        let status = match self.status {
            Some(s) => s.to_string(),
            None if self.child.is_some() => "running".to_string(),
            None => "not running".to_string(),
        };
        format!(
            "=== member {} ({status}) ===\n$ {}\n--- stdout (events) ---\n{}\n--- stderr ---\n{}",
            self.name,
            self.what,
            tail(&self.stdout(), stdout_lines),
            tail(&self.stderr(), 60)
        )
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

// ---------------------------------------------------------------------------
// A scene: one broker, a work directory, the members.

/// How a member is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lib {
    /// kafka-python.
    Kp,
    /// confluent-kafka (librdkafka).
    Ck,
}

impl Lib {
    fn arg(self) -> &'static str {
        match self {
            Lib::Kp => "kp",
            Lib::Ck => "ck",
        }
    }
}

struct Scene {
    // Members first: they are dropped (killed) before the broker.
    members: Vec<Member>,
    broker: Broker,
    /// The other nodes of a cluster scene (`kip848.rs`); none for one
    /// broker.
    others: Vec<Broker>,
    dir: tempfile::TempDir,
}

impl Scene {
    /// A broker set up for group tests: a short initial rebalance delay (a
    /// new group would otherwise wait 3 s for more members), a minimum
    /// session timeout below the members' [`SESSION_MS`], and few offsets
    /// partitions (startup creates them) but more than the two shards, so
    /// groups live on both.
    fn start() -> Scene {
        Scene::start_with(&[])
    }

    /// [`Scene::start`] with more broker settings.
    fn start_with(settings: &[(&str, i64)]) -> Scene {
        require_python_clients();
        let mut opts = BrokerOpts::new()
            .setting("group.initial.rebalance.delay.ms", 300)
            .setting("group.min.session.timeout.ms", 1000)
            .setting("offsets.topic.num.partitions", 4);
        for (k, v) in settings {
            opts = opts.setting(k, *v);
        }
        let broker = Broker::start(opts);
        Scene {
            members: Vec::new(),
            broker,
            others: Vec::new(),
            dir: tempfile::Builder::new()
                .prefix("pinlog-groups-")
                .tempdir()
                .expect("create a temporary directory for the clients"),
        }
    }

    fn bootstrap(&self) -> String {
        std::iter::once(&self.broker)
            .chain(&self.others)
            .map(Broker::bootstrap)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Panics with `msg`, every member's output and the broker log's tail.
    fn fail(&self, msg: &str) -> ! {
        let mut reports = String::new();
        for m in &self.members {
            reports.push_str(&m.report(80));
            reports.push('\n');
        }
        for (i, b) in self.others.iter().enumerate() {
            reports.push_str(&format!(
                "--- node {} log, last {BROKER_LOG_LINES} lines ---\n{}\n",
                i + 2,
                tail(&b.log(), BROKER_LOG_LINES)
            ));
        }
        panic!(
            "{msg}\n{reports}--- broker log ({}), last {BROKER_LOG_LINES} lines ---\n{}\n\
             --- end of broker log ---",
            self.broker.log_path().display(),
            tail(&self.broker.log(), BROKER_LOG_LINES)
        );
    }

    /// Runs a short group_client.py step to completion; fails the test if it
    /// does not exit 0.
    fn step<S: AsRef<OsStr>>(&self, args: &[S]) -> (CmdOutput, Vec<Event>) {
        let out = run_command(&mut python(args), None, STEP_TIMEOUT);
        if !out.success() {
            self.fail(&format!("client step failed:\n{out}"));
        }
        let evs = events(&out.stdout);
        (out, evs)
    }

    /// The single event `ev` of a step's output.
    fn one(&self, out: &(CmdOutput, Vec<Event>), ev: &str) -> Event {
        match out.1.iter().find(|e| e.ev == ev) {
            Some(e) => e.clone(),
            None => self.fail(&format!("no {ev:?} event in\n{}", out.0)),
        }
    }

    fn create(&self, topic: &str, partitions: i32, configs: &[&str]) {
        let b = self.bootstrap();
        let mut args = vec!["create", &b, topic];
        let p = partitions.to_string();
        args.push(&p);
        args.extend_from_slice(configs);
        self.step(&args);
    }

    /// Produces `count` records from `start` and returns what was delivered.
    fn produce(&self, topic: &str, start: u64, count: u64) -> Delivered {
        let out = self.step(&[
            "produce",
            &self.bootstrap(),
            topic,
            "--start",
            &start.to_string(),
            "--count",
            &count.to_string(),
        ]);
        let d = delivered(&out.1);
        if d.len() as u64 != count {
            self.fail(&format!(
                "{} of {count} records reported delivered:\n{}",
                d.len(),
                out.0
            ));
        }
        d
    }

    /// (log start offsets, end offsets) per partition.
    fn offsets(&self, topic: &str) -> (BTreeMap<i32, i64>, BTreeMap<i32, i64>) {
        let out = self.step(&["offsets", &self.bootstrap(), topic]);
        let e = self.one(&out, "offsets");
        let flat = |k| -> BTreeMap<i32, i64> {
            e.offsets(k)
                .unwrap_or_else(|| self.fail(&format!("bad offsets event {e:?}")))
                .into_iter()
                .map(|(p, o)| (p, o.unwrap_or(-1)))
                .collect()
        };
        (flat("start"), flat("end"))
    }

    /// Waits until the group's committed offsets (as confluent-kafka reads
    /// them) are `ends`; fails with `context` after `timeout`.
    fn wait_committed_at(
        &self,
        group: &str,
        topic: &str,
        ends: &BTreeMap<i32, i64>,
        timeout: Duration,
        context: &str,
    ) {
        let want = all_some(ends);
        let deadline = Instant::now() + timeout;
        loop {
            let got = self.committed(Lib::Ck, group, topic);
            if got == want {
                return;
            }
            if Instant::now() >= deadline {
                self.fail(&format!(
                    "the commits did not reach the end offsets {ends:?}: committed {got:?}{context}"
                ));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// The group's committed offsets as `lib` reads them (None: nothing
    /// committed).
    fn committed(&self, lib: Lib, group: &str, topic: &str) -> BTreeMap<i32, Option<i64>> {
        let out = self.step(&["committed", lib.arg(), &self.bootstrap(), group, topic]);
        let e = self.one(&out, "committed");
        e.offsets("offsets")
            .unwrap_or_else(|| self.fail(&format!("bad committed event {e:?}")))
    }

    /// Starts a group member; `extra` are more `consume` options. Returns
    /// its index in `self.members`.
    fn member(&mut self, name: &str, lib: Lib, group: &str, topic: &str, extra: &[&str]) -> usize {
        let stop = self.dir.path().join(format!("{name}.stop"));
        let mut args: Vec<String> = vec![
            "consume".into(),
            lib.arg().into(),
            self.bootstrap(),
            group.into(),
            topic.into(),
            "--name".into(),
            name.into(),
            "--stop".into(),
            stop.display().to_string(),
            "--session-ms".into(),
            SESSION_MS.to_string(),
            "--heartbeat-ms".into(),
            HEARTBEAT_MS.to_string(),
            "--max-poll-ms".into(),
            MAX_POLL_MS.to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let m = Member::spawn(self.dir.path(), name, python(&args));
        self.members.push(m);
        self.members.len() - 1
    }

    /// Starts a Java group member (GroupConsumer.java's `member` mode) with
    /// the members' timeouts; `props` are more consumer settings
    /// (`name=value`), which override those. Returns its index.
    fn java_member(
        &mut self,
        java: &JavaClasses,
        name: &str,
        group: &str,
        topic: &str,
        props: &[&str],
    ) -> usize {
        let timeouts = [
            format!("session.timeout.ms={SESSION_MS}"),
            format!("heartbeat.interval.ms={HEARTBEAT_MS}"),
        ];
        self.java_member_with(java, name, group, topic, &timeouts, props)
    }

    /// A Java member with `settings` (then `max.poll.interval.ms` and
    /// `props`) as its consumer settings.
    fn java_member_with(
        &mut self,
        java: &JavaClasses,
        name: &str,
        group: &str,
        topic: &str,
        settings: &[String],
        props: &[&str],
    ) -> usize {
        let stop = self.dir.path().join(format!("{name}.stop"));
        let mut cmd = Command::new("java");
        // C1 only: the JVM starts faster, which keeps a restarted static
        // member well within its session timeout.
        cmd.args(["-XX:TieredStopAtLevel=1", "-cp", &java.classpath])
            .args([
                "GroupConsumer",
                "member",
                &self.bootstrap(),
                group,
                topic,
                name,
            ])
            .arg(&stop)
            .arg(SCRIPT_MAX_SECONDS.to_string())
            .args(settings)
            .arg(format!("max.poll.interval.ms={MAX_POLL_MS}"))
            .args(props);
        let m = Member::spawn(self.dir.path(), name, cmd);
        self.members.push(m);
        self.members.len() - 1
    }

    /// Starts a producer that writes records from `start` at `rate` per
    /// second until its stop file appears.
    fn background_producer(&mut self, name: &str, topic: &str, start: u64, rate: u32) -> usize {
        let stop = self.dir.path().join(format!("{name}.stop"));
        let args: Vec<String> = vec![
            "produce".into(),
            self.bootstrap(),
            topic.into(),
            "--start".into(),
            start.to_string(),
            "--rate".into(),
            rate.to_string(),
            "--stop".into(),
            stop.display().to_string(),
        ];
        let m = Member::spawn(self.dir.path(), name, python(&args));
        self.members.push(m);
        self.members.len() - 1
    }

    fn idx(&self, name: &str) -> usize {
        self.members
            .iter()
            .position(|m| m.name == name)
            .unwrap_or_else(|| panic!("no member {name}"))
    }

    /// Fails the test if any member exited although nobody asked it to.
    fn check_alive(&mut self, names: &[&str]) {
        for name in names {
            let i = self.idx(name);
            if let Some(s) = self.members[i].poll_exit() {
                self.fail(&format!("member {name} exited ({s}) on its own"));
            }
        }
    }

    /// Waits until `names` are exactly the members sharing the topic's
    /// `partitions`: each owns at least one, none is owned twice, none is
    /// unowned; and that stays so for [`SETTLE`]. Returns the assignments
    /// and when they were first seen.
    fn wait_converged(
        &mut self,
        names: &[&str],
        partitions: i32,
        timeout: Duration,
    ) -> (BTreeMap<String, Vec<i32>>, Instant) {
        let deadline = Instant::now() + timeout;
        let mut seen: Option<(BTreeMap<String, Vec<i32>>, Instant)> = None;
        loop {
            self.check_alive(names);
            let now: BTreeMap<String, Vec<i32>> = names
                .iter()
                .map(|n| {
                    let a = self.members[self.idx(n)].assignment().unwrap_or_default();
                    (n.to_string(), a)
                })
                .collect();
            let ok = shares(&now, partitions).is_ok();
            match &seen {
                Some((same, since)) if ok && *same == now => {
                    if since.elapsed() >= SETTLE {
                        return (now, *since);
                    }
                }
                _ => seen = ok.then(|| (now.clone(), Instant::now())),
            }
            if Instant::now() >= deadline {
                let why = shares(&now, partitions).err().unwrap_or_default();
                self.fail(&format!(
                    "members {names:?} did not settle on sharing partitions 0..{partitions} \
                     within {timeout:?}: last reported assignments {now:?} ({why})"
                ));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// Every record consumed by any member so far (killed and stopped ones
    /// included), checked against the data.
    fn all_records(&self, topic: &str) -> (Vec<Rec>, Vec<String>) {
        let mut problems = Vec::new();
        let mut recs = Vec::new();
        for m in &self.members {
            recs.extend(records(&m.name, topic, &m.events(), &mut problems));
        }
        (recs, problems)
    }

    /// Fails unless the records consumed so far are good and cover every
    /// delivered one (at least once).
    fn check_all_consumed(&self, topic: &str, delivered: &Delivered) {
        let (recs, mut problems) = self.all_records(topic);
        problems.extend(check_consumed(delivered, &recs, false));
        if !problems.is_empty() {
            self.fail(&format!("records:\n  {}", problems.join("\n  ")));
        }
    }

    /// Waits until every delivered record was consumed by some member.
    fn wait_consumed(&mut self, topic: &str, delivered: &Delivered, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let (recs, problems) = self.all_records(topic);
            if !problems.is_empty() {
                self.fail(&format!(
                    "bad records consumed:\n  {}",
                    problems.join("\n  ")
                ));
            }
            let got: BTreeSet<u64> = recs.iter().map(|r| r.seq).collect();
            let missing = delivered.keys().filter(|s| !got.contains(s)).count();
            if missing == 0 {
                return;
            }
            if Instant::now() >= deadline {
                let problems = check_consumed(delivered, &recs, false);
                self.fail(&format!(
                    "{missing} of {} delivered records not consumed within {timeout:?}:\n  {}",
                    delivered.len(),
                    problems.join("\n  ")
                ));
            }
            std::thread::sleep(POLL_INTERVAL * 3);
        }
    }

    /// Stops a member cleanly (stop file; it commits per its options,
    /// closes and so leaves the group) and checks it exited 0 after closing.
    fn stop(&mut self, name: &str) {
        let i = self.idx(name);
        self.members[i].request_stop();
        match self.members[i].wait(STOP_TIMEOUT) {
            Some(s) if s.success() => {}
            Some(s) => self.fail(&format!("member {name} exited with {s} when stopped")),
            None => self.fail(&format!(
                "member {name} did not exit within {STOP_TIMEOUT:?} of its stop file"
            )),
        }
        let closed = self.members[i].events().iter().any(|e| e.ev == "closed");
        if !closed {
            self.fail(&format!(
                "member {name} exited without closing its consumer"
            ));
        }
    }

    fn kill9(&mut self, name: &str) {
        let i = self.idx(name);
        self.members[i].kill9();
    }

    fn signal(&self, name: &str, signal: i32) {
        self.members[self.idx(name)].signal(signal);
    }

    /// How many events each member has printed so far: a mark to read the
    /// events of one phase with [`Scene::events_since`].
    fn mark(&self) -> BTreeMap<String, usize> {
        self.members
            .iter()
            .map(|m| (m.name.clone(), m.events().len()))
            .collect()
    }

    /// The events `name` printed after `mark` was taken.
    fn events_since(&self, name: &str, mark: &BTreeMap<String, usize>) -> Vec<Event> {
        let skip = mark.get(name).copied().unwrap_or(0);
        self.members[self.idx(name)]
            .events()
            .into_iter()
            .skip(skip)
            .collect()
    }

    /// The group generation `name` reported last, where its client exposes
    /// it (kafka-python, Java).
    fn generation(&self, name: &str) -> Option<i64> {
        self.members[self.idx(name)]
            .events()
            .iter()
            .rev()
            .find(|e| e.ev == "assignment")
            .and_then(|e| e.int("gen"))
    }

    /// Waits (at most `timeout`) for `name` to print the event `ev`.
    fn wait_event(&mut self, name: &str, ev: &str, timeout: Duration) -> Event {
        let deadline = Instant::now() + timeout;
        loop {
            let i = self.idx(name);
            if let Some(e) = self.members[i].events().into_iter().find(|e| e.ev == ev) {
                return e;
            }
            if let Some(st) = self.members[i].poll_exit() {
                self.fail(&format!(
                    "member {name} exited ({st}) before printing {ev:?}"
                ));
            }
            if Instant::now() >= deadline {
                self.fail(&format!(
                    "member {name} printed no {ev:?} within {timeout:?}"
                ));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// The group as DescribeGroups reports it: the `group` event (state,
    /// assignor, members) and one `member` event per member.
    fn describe(&self, group: &str) -> (Event, Vec<Event>) {
        let out = self.step(&["describe", &self.bootstrap(), group]);
        let g = self.one(&out, "group");
        let members = out.1.iter().filter(|e| e.ev == "member").cloned().collect();
        (g, members)
    }

    /// Stops the background producer `name` and returns what it delivered
    /// (at least `min` records, or the test fails).
    fn stop_producer(&mut self, name: &str, min: usize) -> Delivered {
        let p = self.idx(name);
        self.members[p].request_stop();
        if !self.members[p]
            .wait(STEP_TIMEOUT)
            .is_some_and(|st| st.success())
        {
            self.fail("the producer did not finish cleanly");
        }
        let d = delivered(&self.members[p].events());
        if d.len() < min {
            self.fail(&format!(
                "the producer delivered only {} records, expected at least {min}",
                d.len()
            ));
        }
        d
    }

    /// Runs a member to completion (it stops on its own: --max-records,
    /// --until-end, ...) and returns its events.
    fn run_member(
        &mut self,
        name: &str,
        lib: Lib,
        group: &str,
        topic: &str,
        extra: &[&str],
    ) -> Vec<Event> {
        let i = self.member(name, lib, group, topic, extra);
        match self.members[i].wait(STEP_TIMEOUT) {
            Some(s) if s.success() => self.members[i].events(),
            Some(s) => self.fail(&format!("member {name} exited with {s}")),
            None => self.fail(&format!(
                "member {name} did not finish within {STEP_TIMEOUT:?}"
            )),
        }
    }
}

/// `Ok` when the members' assignments share `0..partitions`: every member
/// owns some, no partition is owned twice or not at all.
fn shares(assignments: &BTreeMap<String, Vec<i32>>, partitions: i32) -> Result<(), String> {
    let mut owner: BTreeMap<i32, &str> = BTreeMap::new();
    for (name, parts) in assignments {
        if parts.is_empty() {
            return Err(format!("{name} owns nothing"));
        }
        for p in parts {
            if let Some(other) = owner.insert(*p, name) {
                return Err(format!("partition {p} owned by {other} and {name}"));
            }
        }
    }
    let unowned: Vec<i32> = (0..partitions).filter(|p| !owner.contains_key(p)).collect();
    if !unowned.is_empty() {
        return Err(format!("partitions {unowned:?} owned by nobody"));
    }
    if let Some(p) = owner.keys().find(|p| !(0..partitions).contains(*p)) {
        return Err(format!("partition {p} does not exist"));
    }
    Ok(())
}

/// group_client.py with `args`, with the script's own time limit.
fn python<S: AsRef<OsStr>>(args: &[S]) -> Command {
    let mut cmd = Command::new("python3");
    cmd.arg(Path::new(GROUPS_DIR).join("group_client.py"))
        .arg("--max-seconds")
        .arg(SCRIPT_MAX_SECONDS.to_string())
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}

/// The first offset each partition was consumed from in `events`.
fn first_offsets(events: &[Event]) -> BTreeMap<i32, i64> {
    let mut first = BTreeMap::new();
    for e in events.iter().filter(|e| e.ev == "rec") {
        if let (Some(p), Some(o)) = (e.int("p"), e.int("o")) {
            first.entry(p as i32).or_insert(o);
        }
    }
    first
}

fn find<'a>(events: &'a [Event], ev: &str) -> Option<&'a Event> {
    events.iter().find(|e| e.ev == ev)
}

/// `Some(offset)` per partition, from a map of end offsets.
fn all_some(m: &BTreeMap<i32, i64>) -> BTreeMap<i32, Option<i64>> {
    m.iter().map(|(p, o)| (*p, Some(*o))).collect()
}

// ---------------------------------------------------------------------------
// 1. Shared partitions, at-least-once with auto-commit.

/// Three kafka-python and two confluent-kafka members of one group share six
/// partitions; every record is consumed at least once, and auto-commit
/// (periodic, and on close) leaves the group's offsets at the end.
#[test]
fn mixed_clients_share_partitions_with_auto_commit() {
    if skipped("mixed_clients_share_partitions_with_auto_commit") {
        return;
    }
    let _shared = shared();
    let mut s = Scene::start();
    let (topic, group) = ("shared", "g-shared");
    s.create(topic, PARTITIONS, &[]);
    let delivered = s.produce(topic, 0, 3000);
    let names = ["kp-1", "kp-2", "ck-1", "kp-3", "ck-2"];
    for name in names {
        let lib = if name.starts_with("kp") {
            Lib::Kp
        } else {
            Lib::Ck
        };
        s.member(name, lib, group, topic, &["--commit", "auto"]);
    }
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    let (assignments, _) = s.wait_converged(&names, PARTITIONS, CONVERGE_TIMEOUT);

    // Auto-commit runs every 500 ms; once every record was consumed and the
    // owners reached the ends, the committed offsets are the end offsets.
    let (_, ends) = s.offsets(topic);
    s.wait_committed_at(
        group,
        topic,
        &ends,
        STEP_TIMEOUT,
        &format!(" (assignments {assignments:?})"),
    );
    for name in names {
        s.stop(name);
    }
    s.check_all_consumed(topic, &delivered);
    // Closing commits again; it must not move anything backwards.
    let want = all_some(&ends);
    let got = s.committed(Lib::Kp, group, topic);
    if got != want {
        s.fail(&format!(
            "after every member closed, committed {got:?}, expected the end offsets {want:?}"
        ));
    }
    s.broker.stop();
}

// ---------------------------------------------------------------------------
// 2. Rebalance on join, clean leave and kill -9, at-least-once.

/// Members join, leave cleanly and die while a producer keeps writing; the
/// partitions move to the members that remain each time, and every record
/// is consumed at least once.
#[test]
fn rebalance_on_join_leave_and_kill9() {
    if skipped("rebalance_on_join_leave_and_kill9") {
        return;
    }
    let _serial = serial();
    let mut s = Scene::start();
    let (topic, group) = ("churn", "g-churn");
    s.create(topic, PARTITIONS, &[]);
    s.background_producer("producer", topic, 0, 150);
    let auto = ["--commit", "auto"];

    s.member("kp-a", Lib::Kp, group, topic, &auto);
    s.member("ck-b", Lib::Ck, group, topic, &auto);
    s.wait_converged(&["kp-a", "ck-b"], PARTITIONS, CONVERGE_TIMEOUT);

    s.member("kp-c", Lib::Kp, group, topic, &auto);
    s.wait_converged(&["kp-a", "ck-b", "kp-c"], PARTITIONS, CONVERGE_TIMEOUT);

    // A clean leave (LeaveGroup) rebalances at once: the others take over
    // well before the leaver's session would have expired.
    s.stop("ck-b");
    let left_at = s.members[s.idx("ck-b")]
        .exited_at
        .expect("stop() saw it exit");
    let (after_leave, at) = s.wait_converged(&["kp-a", "kp-c"], PARTITIONS, CONVERGE_TIMEOUT);
    let leave_took = at.saturating_duration_since(left_at);
    if leave_took >= Duration::from_millis(SESSION_MS) {
        s.fail(&format!(
            "after ck-b closed (LeaveGroup), the others took over its partitions only after \
             {leave_took:?}, not before its session timeout ({SESSION_MS} ms): was the \
             LeaveGroup ignored? assignments {after_leave:?}"
        ));
    }

    s.member("ck-d", Lib::Ck, group, topic, &auto);
    s.wait_converged(&["kp-a", "kp-c", "ck-d"], PARTITIONS, CONVERGE_TIMEOUT);

    // A crash: nothing tells the broker; the session timeout does.
    s.kill9("kp-a");
    let killed_at = Instant::now();
    let limit = Duration::from_millis(SESSION_MS) + CONVERGE_TIMEOUT;
    let (after_kill, at) = s.wait_converged(&["kp-c", "ck-d"], PARTITIONS, limit);
    // For the log of a passing run (`--nocapture`): how long each took.
    eprintln!(
        "rebalance after a clean leave: {leave_took:?}; after kill -9: {:?} (session timeout \
         {SESSION_MS} ms); final assignments {after_kill:?}",
        at.saturating_duration_since(killed_at)
    );

    let p = s.idx("producer");
    s.members[p].request_stop();
    if !s.members[p]
        .wait(STEP_TIMEOUT)
        .is_some_and(|st| st.success())
    {
        s.fail("the producer did not finish cleanly");
    }
    let delivered = delivered(&s.members[p].events());
    if delivered.len() < 500 {
        s.fail(&format!(
            "the producer delivered only {} records",
            delivered.len()
        ));
    }
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    s.stop("kp-c");
    s.stop("ck-d");
    s.check_all_consumed(topic, &delivered);
    s.broker.stop();
}

// ---------------------------------------------------------------------------
// 3. Manual commit: exactly once in sum.

/// Members commit synchronously after writing out each batch, and
/// membership changes only gracefully (a member joins, another closes):
/// then every record is consumed exactly once over all members, because a
/// member's commit of the current generation is accepted while the group
/// prepares a rebalance, and the next owner resumes from it.
#[test]
fn manual_commit_graceful_changes_consume_exactly_once() {
    if skipped("manual_commit_graceful_changes_consume_exactly_once") {
        return;
    }
    let _shared = shared();
    let mut s = Scene::start();
    let (topic, group) = ("exact", "g-exact");
    s.create(topic, PARTITIONS, &[]);
    s.background_producer("producer", topic, 0, 200);
    // Small batches: more commits, more chances to straddle a rebalance.
    let sync = ["--commit", "sync", "--batch", "20"];

    s.member("kp-a", Lib::Kp, group, topic, &sync);
    s.member("ck-b", Lib::Ck, group, topic, &sync);
    s.wait_converged(&["kp-a", "ck-b"], PARTITIONS, CONVERGE_TIMEOUT);
    s.member("ck-c", Lib::Ck, group, topic, &sync);
    s.wait_converged(&["kp-a", "ck-b", "ck-c"], PARTITIONS, CONVERGE_TIMEOUT);
    s.stop("kp-a");
    s.wait_converged(&["ck-b", "ck-c"], PARTITIONS, CONVERGE_TIMEOUT);
    s.member("kp-d", Lib::Kp, group, topic, &sync);
    s.wait_converged(&["ck-b", "ck-c", "kp-d"], PARTITIONS, CONVERGE_TIMEOUT);
    s.stop("ck-b");
    s.wait_converged(&["ck-c", "kp-d"], PARTITIONS, CONVERGE_TIMEOUT);

    let p = s.idx("producer");
    s.members[p].request_stop();
    if !s.members[p]
        .wait(STEP_TIMEOUT)
        .is_some_and(|st| st.success())
    {
        s.fail("the producer did not finish cleanly");
    }
    let delivered = delivered(&s.members[p].events());
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    s.stop("ck-c");
    s.stop("kp-d");

    let failed: Vec<String> = s
        .members
        .iter()
        .flat_map(|m| {
            m.events()
                .into_iter()
                .filter(|e| e.ev == "commit_failed")
                .map(move |e| format!("{}: {} {}", m.name, e.text("name"), e.text("detail")))
        })
        .collect();
    let (recs, mut problems) = s.all_records(topic);
    problems.extend(check_consumed(&delivered, &recs, true));
    if !failed.is_empty() {
        problems.push(format!(
            "{} synchronous commits failed (a member's commit of the current generation must \
             be accepted), e.g. {:?}",
            failed.len(),
            &failed[..failed.len().min(5)]
        ));
    }
    if !problems.is_empty() {
        s.fail(&format!("records:\n  {}", problems.join("\n  ")));
    }
    let (_, ends) = s.offsets(topic);
    let got = s.committed(Lib::Kp, group, topic);
    if got != all_some(&ends) {
        s.fail(&format!(
            "committed {got:?} at the end, expected the end offsets {ends:?}"
        ));
    }
    s.broker.stop();
}

// ---------------------------------------------------------------------------
// 4. Committed offsets survive restarts.

/// A member consumes part of a topic and commits exactly what it consumed;
/// after a clean restart of the broker, and again after kill -9 and
/// restart, a new member of the group reads the committed offsets back
/// (`committed()`) and resumes exactly there. Over the three members every
/// record is consumed exactly once.
#[test]
fn committed_offsets_survive_clean_and_crash_restart() {
    if skipped("committed_offsets_survive_clean_and_crash_restart") {
        return;
    }
    let _shared = shared();
    let mut s = Scene::start();
    let (topic, group) = ("resume", "g-resume");
    s.create(topic, 3, &[]);
    let delivered = s.produce(topic, 0, 600);
    let (_, ends) = s.offsets(topic);
    // partition -> committed offset, as the members committed them.
    let mut committed: BTreeMap<i32, Option<i64>> = ends.keys().map(|p| (*p, None)).collect();

    // Each phase: the member's committed() must be what was committed so
    // far, it must start each partition there (or at 0: earliest), and what
    // it commits is added.
    let phases: [(&str, Lib, &[&str]); 3] = [
        ("kp-first", Lib::Kp, &["--max-records", "250"]),
        ("ck-after-clean-restart", Lib::Ck, &["--max-records", "150"]),
        ("kp-after-kill9", Lib::Kp, &["--until-end"]),
    ];
    for (n, (name, lib, extra)) in phases.iter().enumerate() {
        match n {
            1 => {
                s.broker.stop();
                s.broker.restart();
            }
            2 => {
                s.broker.kill9();
                s.broker.restart();
            }
            _ => {}
        }
        let mut args = vec![
            "--commit",
            "close-sync",
            "--batch",
            "50",
            "--report-committed",
        ];
        args.extend_from_slice(extra);
        let evs = s.run_member(name, *lib, group, topic, &args);
        let reported = find(&evs, "committed").and_then(|e| e.offsets("offsets"));
        if reported.as_ref() != Some(&committed) {
            s.fail(&format!(
                "{name}: committed() reported {reported:?}, but the group committed {committed:?}"
            ));
        }
        for (p, first) in first_offsets(&evs) {
            let want = committed.get(&p).copied().flatten().unwrap_or(0);
            if first != want {
                s.fail(&format!(
                    "{name}: partition {p} resumed at offset {first}, not at the committed \
                     offset {want} (committed: {committed:?})"
                ));
            }
        }
        match evs
            .iter()
            .rev()
            .find(|e| e.ev == "commit")
            .and_then(|e| e.offsets("offsets"))
        {
            Some(c) => committed.extend(c),
            None => s.fail(&format!("{name} committed nothing")),
        }
        // And the broker agrees, through the other client.
        let other = if *lib == Lib::Kp { Lib::Ck } else { Lib::Kp };
        let got = s.committed(other, group, topic);
        if got != committed {
            s.fail(&format!(
                "after {name}: committed offsets read back {got:?}, expected {committed:?}"
            ));
        }
    }
    if committed != all_some(&ends) {
        s.fail(&format!(
            "the last member consumed to the end but committed {committed:?}, not {ends:?}"
        ));
    }
    let (recs, mut problems) = s.all_records(topic);
    problems.extend(check_consumed(&delivered, &recs, true));
    if !problems.is_empty() {
        s.fail(&format!(
            "records over the three members:\n  {}",
            problems.join("\n  ")
        ));
    }
    s.broker.stop();
}

// ---------------------------------------------------------------------------
// 5. The Java client.

/// GroupConsumer.java, compiled once for all the tests of this binary
/// (each javac run costs seconds): into cargo's scratch directory for
/// integration tests, replaced by the first test of every run.
struct JavaClasses {
    classpath: String,
}

impl JavaClasses {
    fn compile(libs: &Path) -> JavaClasses {
        static CLASSPATH: OnceLock<String> = OnceLock::new();
        let classpath = CLASSPATH.get_or_init(|| {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("groups-java-classes");
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("a directory for the compiled classes");
            compile_group_consumer(libs, &dir)
        });
        JavaClasses {
            classpath: classpath.clone(),
        }
    }
}

/// Compiles GroupConsumer.java (and ShareConsumer.java, which uses its
/// event format) into `classes`; returns the classpath to run
/// it with.
fn compile_group_consumer(libs: &Path, classes: &Path) -> String {
    let jars = format!("{}/*", libs.display());
    run_command(
        Command::new("javac")
            .args(["-cp", &jars, "-d"])
            .arg(classes)
            .arg(Path::new(GROUPS_DIR).join("java/GroupConsumer.java"))
            .arg(Path::new(GROUPS_DIR).join("java/ShareConsumer.java")),
        None,
        STEP_TIMEOUT,
    )
    .assert_success();
    format!("{}:{jars}", classes.display())
}

/// kafka-clients 4.4 (classic protocol, the default) subscribes, consumes
/// every record, commits synchronously and closes: it got every record
/// once, and its committed offsets are the end offsets.
#[test]
fn java_consumer_commits_everything() {
    if skipped("java_consumer_commits_everything") {
        return;
    }
    let _shared = shared();
    let libs = kafka_libs();
    let cp = JavaClasses::compile(&libs).classpath;
    let mut s = Scene::start();
    let (topic, group) = ("java", "g-java");
    s.create(topic, PARTITIONS, &[]);
    let delivered = s.produce(topic, 0, 3000);
    let out = run_command(
        Command::new("java")
            // C1 only: a short run, and the JVM starts faster without C2.
            .args(["-XX:TieredStopAtLevel=1", "-cp", &cp, "GroupConsumer"])
            .args([&s.bootstrap(), group, topic, &delivered.len().to_string()]),
        None,
        STEP_TIMEOUT + Duration::from_secs(30),
    );
    if !out.success() {
        s.fail(&format!(
            "the Java consumer failed:\n{}",
            out.display_with(40)
        ));
    }
    let mut problems = Vec::new();
    let mut recs = Vec::new();
    let (mut committed, mut end) = (BTreeMap::new(), BTreeMap::new());
    for line in out.stdout.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        match w.as_slice() {
            ["rec", p, o, k, v] => {
                let e = Event::parse(&format!("rec p={p} o={o} k={k} v={v}"));
                recs.extend(records("java", topic, &Vec::from_iter(e), &mut problems));
            }
            ["committed", p, o] => {
                committed.insert(p.parse::<i32>().unwrap(), o.parse::<i64>().unwrap());
            }
            ["end", p, o] => {
                end.insert(p.parse::<i32>().unwrap(), o.parse::<i64>().unwrap());
            }
            _ => {}
        }
    }
    problems.extend(check_consumed(&delivered, &recs, true));
    let (_, ends) = s.offsets(topic);
    if end != ends {
        problems.push(format!(
            "endOffsets() {end:?}, the broker's end offsets {ends:?}"
        ));
    }
    if committed != ends {
        problems.push(format!(
            "committed() {committed:?} after commitSync, expected {ends:?}"
        ));
    }
    if !problems.is_empty() {
        s.fail(&format!(
            "Java consumer:\n  {}\n{}",
            problems.join("\n  "),
            out.display_with(30)
        ));
    }
    // The same offsets through another client.
    let got = s.committed(Lib::Ck, group, topic);
    if got != all_some(&ends) {
        s.fail(&format!(
            "confluent-kafka reads the Java group's offsets as {got:?}, expected {ends:?}"
        ));
    }
    s.broker.stop();
}

// ---------------------------------------------------------------------------
// 6. kafka-consumer-groups.

/// One table of `kafka-consumer-groups`: rows of named columns.
fn table(stdout: &str, first_column: &str) -> Vec<BTreeMap<String, String>> {
    let mut rows = Vec::new();
    let mut header: Option<Vec<String>> = None;
    for line in stdout.lines() {
        let cells: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        if cells.is_empty() {
            continue;
        }
        if cells[0] == first_column {
            header = Some(cells);
            continue;
        }
        if let Some(h) = &header {
            if cells.len() == h.len() {
                rows.push(h.iter().cloned().zip(cells).collect());
            }
        }
    }
    rows
}

/// Runs `kafka-consumer-groups` (its class, on the Kafka jars) with `args`;
/// fails the test unless it exits 0.
fn consumer_groups_tool(s: &Scene, libs: &Path, args: &[&str]) -> CmdOutput {
    let jars = format!("{}/*", libs.display());
    let out = run_command(
        Command::new("java")
            .args(["-XX:TieredStopAtLevel=1", "-cp", &jars])
            .arg("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand")
            .args(["--bootstrap-server", &s.bootstrap()])
            .args(args),
        None,
        STEP_TIMEOUT,
    );
    if !out.success() {
        s.fail(&format!("kafka-consumer-groups failed:\n{out}"));
    }
    out
}

/// Who `--describe` must show as owning the partitions.
enum Owner<'a> {
    /// The member with this client id, from 127.0.0.1.
    Active(&'a str),
    /// Nobody (`-`): the group is empty.
    Nobody,
}

/// Checks the `--describe` offsets table of `group`/`topic`: one row per
/// partition of `ends`, CURRENT-OFFSET `current(p)`, LOG-END-OFFSET and LAG
/// to match, and the owner.
fn check_describe(
    s: &Scene,
    out: &CmdOutput,
    (group, topic): (&str, &str),
    ends: &BTreeMap<i32, i64>,
    current: &dyn Fn(i32) -> i64,
    owner: Owner,
) {
    let rows = table(&out.stdout, "GROUP");
    let mut problems = Vec::new();
    if rows.len() != ends.len() {
        problems.push(format!(
            "{} rows, expected one per partition ({})",
            rows.len(),
            ends.len()
        ));
    }
    for row in &rows {
        let cell = |c: &str| row.get(c).map(String::as_str).unwrap_or("?");
        let p: i32 = cell("PARTITION").parse().unwrap_or(-1);
        let end = ends.get(&p).copied().unwrap_or(-1);
        let cur = current(p);
        let lag = end - cur;
        if cell("GROUP") != group || cell("TOPIC") != topic {
            problems.push(format!("row {row:?}: not {group}/{topic}"));
        }
        if cell("CURRENT-OFFSET") != cur.to_string()
            || cell("LOG-END-OFFSET") != end.to_string()
            || cell("LAG") != lag.to_string()
        {
            problems.push(format!(
                "partition {p}: expected CURRENT-OFFSET {cur} LOG-END-OFFSET {end} LAG {lag}, \
                 got {row:?}"
            ));
        }
        match owner {
            Owner::Active(client) => {
                if cell("CONSUMER-ID") == "-"
                    || cell("CLIENT-ID") != client
                    || !cell("HOST").contains("127.0.0.1")
                {
                    problems.push(format!(
                        "partition {p}: expected the active member (client id {client}, host \
                         127.0.0.1), got {row:?}"
                    ));
                }
            }
            Owner::Nobody => {
                if cell("CONSUMER-ID") != "-" {
                    problems.push(format!(
                        "partition {p}: a member in an empty group: {row:?}"
                    ));
                }
            }
        }
    }
    if !problems.is_empty() {
        s.fail(&format!("--describe:\n  {}\n{out}", problems.join("\n  ")));
    }
}

/// The single row of a one-row table (`--members`, `--state`), if so.
fn single_row(out: &CmdOutput) -> Option<BTreeMap<String, String>> {
    let mut rows = table(&out.stdout, "GROUP");
    (rows.len() == 1).then(|| rows.remove(0))
}

/// `kafka-consumer-groups --list`, `--describe` (offsets, `--members`,
/// `--state`) while a member is active and after it left, and
/// `--reset-offsets --to-earliest --execute` on the empty group (an
/// OffsetCommit from an admin client).
#[test]
fn kafka_consumer_groups_tool_lists_describes_and_resets() {
    if skipped("kafka_consumer_groups_tool_lists_describes_and_resets") {
        return;
    }
    let _shared = shared();
    let libs = kafka_libs();
    let mut s = Scene::start();
    let (topic, group, client) = ("tool", "g-tool", "pinlog-tool-member");
    s.create(topic, 3, &[]);
    let delivered = s.produce(topic, 0, 300);
    let (_, ends) = s.offsets(topic);
    s.member(client, Lib::Kp, group, topic, &["--commit", "auto"]);
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    s.wait_converged(&[client], 3, CONVERGE_TIMEOUT);
    s.wait_committed_at(group, topic, &ends, STEP_TIMEOUT, "");
    let at_end = |p: i32| ends[&p];

    let list = consumer_groups_tool(&s, &libs, &["--list"]);
    if !list.stdout.lines().any(|l| l.trim() == group) {
        s.fail(&format!("--list does not list {group}:\n{list}"));
    }
    let describe = consumer_groups_tool(&s, &libs, &["--describe", "--group", group]);
    check_describe(
        &s,
        &describe,
        (group, topic),
        &ends,
        &at_end,
        Owner::Active(client),
    );
    let members = consumer_groups_tool(&s, &libs, &["--describe", "--group", group, "--members"]);
    let row = single_row(&members);
    let cell = |row: &Option<BTreeMap<String, String>>, c: &str| {
        row.as_ref()
            .and_then(|r| r.get(c).cloned())
            .unwrap_or_default()
    };
    if cell(&row, "CLIENT-ID") != client || cell(&row, "#PARTITIONS") != "3" {
        s.fail(&format!(
            "--members: expected one member {client} with 3 partitions:\n{members}"
        ));
    }
    let state = consumer_groups_tool(&s, &libs, &["--describe", "--group", group, "--state"]);
    let row = single_row(&state);
    if cell(&row, "STATE") != "Stable"
        || cell(&row, "#MEMBERS") != "1"
        || cell(&row, "ASSIGNMENT-STRATEGY") != "range"
    {
        s.fail(&format!(
            "--state: expected Stable, 1 member, range:\n{state}"
        ));
    }

    s.stop(client);
    let describe = consumer_groups_tool(&s, &libs, &["--describe", "--group", group]);
    check_describe(&s, &describe, (group, topic), &ends, &at_end, Owner::Nobody);
    let state = consumer_groups_tool(&s, &libs, &["--describe", "--group", group, "--state"]);
    let row = single_row(&state);
    if cell(&row, "STATE") != "Empty" || cell(&row, "#MEMBERS") != "0" {
        s.fail(&format!(
            "--state after the member left: expected Empty, 0 members:\n{state}"
        ));
    }

    let reset = consumer_groups_tool(
        &s,
        &libs,
        &[
            "--reset-offsets",
            "--to-earliest",
            "--execute",
            "--group",
            group,
            "--topic",
            topic,
        ],
    );
    let rows = table(&reset.stdout, "GROUP");
    if rows.len() != ends.len()
        || rows
            .iter()
            .any(|r| r.get("NEW-OFFSET").map(String::as_str) != Some("0"))
    {
        s.fail(&format!(
            "--reset-offsets --to-earliest: expected NEW-OFFSET 0 per partition:\n{reset}"
        ));
    }
    let describe = consumer_groups_tool(&s, &libs, &["--describe", "--group", group]);
    check_describe(&s, &describe, (group, topic), &ends, &|_| 0, Owner::Nobody);
    let got = s.committed(Lib::Kp, group, topic);
    let zeros: BTreeMap<i32, Option<i64>> = ends.keys().map(|p| (*p, Some(0))).collect();
    if got != zeros {
        s.fail(&format!(
            "after the reset, committed {got:?}, expected 0 everywhere"
        ));
    }
    s.broker.stop();
}

// ---------------------------------------------------------------------------
// 7. A committed offset below the log start.

/// DeleteRecords moves the log start to K above a group's committed offset
/// (as retention does): on resuming, `auto.offset.reset=earliest` starts at
/// K, `latest` at the end, and `none` surfaces the out-of-range error.
#[test]
fn committed_offset_below_log_start_follows_auto_offset_reset() {
    if skipped("committed_offset_below_log_start_follows_auto_offset_reset") {
        return;
    }
    let _shared = shared();
    let mut s = Scene::start();
    let topic = "trimmed";
    // Small segments, as a retention test would use: the log start then
    // moves inside a segment, not at a segment boundary.
    s.create(topic, 2, &["segment.bytes=1048576", "segment.ms=600000"]);
    s.produce(topic, 0, 400);
    let (_, ends) = s.offsets(topic);
    let (committed_at, k) = (10i64, 100i64);
    let groups = [
        "g-earliest-kp",
        "g-earliest-ck",
        "g-latest-kp",
        "g-none-kp",
        "g-none-ck",
    ];
    let pairs: Vec<String> = ends.keys().map(|p| format!("{p}={committed_at}")).collect();
    for g in groups {
        let mut args = vec!["commit".to_string(), s.bootstrap(), g.into(), topic.into()];
        args.extend(pairs.iter().cloned());
        s.step(&args);
    }
    let mut args = vec!["delete-records".to_string(), s.bootstrap(), topic.into()];
    args.extend(ends.keys().map(|p| format!("{p}={k}")));
    let out = run_command(&mut python(&args), None, STEP_TIMEOUT);
    if !out.success() {
        s.fail(&format!(
            "DeleteRecords failed, so the log start could not be moved (is DeleteRecords \
             served?):\n{out}"
        ));
    }
    let (starts, _) = s.offsets(topic);
    if starts.values().any(|&o| o != k) {
        s.fail(&format!(
            "log start offsets {starts:?} after DeleteRecords to {k}"
        ));
    }
    let want_start: BTreeMap<i32, Option<i64>> =
        ends.keys().map(|p| (*p, Some(committed_at))).collect();
    let check_committed = |s: &Scene, name: &str, evs: &[Event]| {
        let got = find(evs, "committed").and_then(|e| e.offsets("offsets"));
        if got.as_ref() != Some(&want_start) {
            s.fail(&format!(
                "{name}: committed() {got:?}, expected {want_start:?}"
            ));
        }
    };

    for (name, lib, group) in [
        ("earliest-kp", Lib::Kp, groups[0]),
        ("earliest-ck", Lib::Ck, groups[1]),
    ] {
        let evs = s.run_member(
            name,
            lib,
            group,
            topic,
            &["--reset", "earliest", "--until-end", "--commit", "none"],
        );
        check_committed(&s, name, &evs);
        let first = first_offsets(&evs);
        let want: BTreeMap<i32, i64> = ends.keys().map(|p| (*p, k)).collect();
        if first != want {
            s.fail(&format!(
                "{name}: with auto.offset.reset=earliest, first offsets {first:?}, expected the \
                 log start {k} everywhere"
            ));
        }
    }

    let evs = s.run_member(
        "latest-kp",
        Lib::Kp,
        groups[2],
        topic,
        &[
            "--reset",
            "latest",
            "--positions",
            "--positions-wait",
            "15",
            "--commit",
            "none",
        ],
    );
    check_committed(&s, "latest-kp", &evs);
    let positions = find(&evs, "positions").and_then(|e| e.offsets("offsets"));
    if positions != Some(all_some(&ends)) || evs.iter().any(|e| e.ev == "rec") {
        s.fail(&format!(
            "latest-kp: with auto.offset.reset=latest, positions {positions:?} (and {} records), \
             expected the end offsets {ends:?} and no records",
            evs.iter().filter(|e| e.ev == "rec").count()
        ));
    }

    // kafka-python raises OffsetOutOfRangeError from poll(); librdkafka
    // reports _AUTO_OFFSET_RESET naming the broker's "Offset out of range"
    // (and not "no previously committed offset", which would mean the
    // committed offset was not found).
    for (name, lib, group, want, detail) in [
        (
            "none-kp",
            Lib::Kp,
            groups[3],
            "OffsetOutOfRangeError",
            "OffsetOutOfRangeError",
        ),
        (
            "none-ck",
            Lib::Ck,
            groups[4],
            "_AUTO_OFFSET_RESET",
            "Offset out of range",
        ),
    ] {
        let evs = s.run_member(
            name,
            lib,
            group,
            topic,
            &[
                "--reset",
                "none",
                "--exit-on-error",
                "--commit",
                "none",
                "--report-committed",
            ],
        );
        check_committed(&s, name, &evs);
        let err = find(&evs, "error");
        let ok = err.is_some_and(|e| e.text("name") == want && e.text("detail").contains(detail));
        if !ok || evs.iter().any(|e| e.ev == "rec") {
            s.fail(&format!(
                "{name}: with auto.offset.reset=none, expected the error {want} ({detail:?}) \
                 and no records; got error {err:?}"
            ));
        }
    }
    s.broker.stop();
}

// ---------------------------------------------------------------------------
// Helpers of the assignor, static membership and limit tests.

/// The partitions that the rebalance callbacks `ev` (`assigned`, `revoked`,
/// `lost`) got in `events`, together.
fn callback_parts(events: &[Event], ev: &str) -> BTreeSet<i32> {
    events
        .iter()
        .filter(|e| e.ev == ev)
        .flat_map(|e| e.parts("parts").unwrap_or_default())
        .collect()
}

/// Wall-clock milliseconds, as the clients stamp their events (`t`).
fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_millis() as i64
}

fn set(parts: &[i32]) -> BTreeSet<i32> {
    parts.iter().copied().collect()
}

/// What a cooperative rebalance from `before` to `after` must look like to
/// every member in both (the events since `mark`): its callbacks revoked
/// exactly the partitions it gave up and assigned exactly the ones it
/// gained, so a partition it kept was never revoked (an eager rebalance
/// revokes everything and assigns everything again), and nothing was lost.
fn incremental_problems(
    s: &Scene,
    mark: &BTreeMap<String, usize>,
    before: &BTreeMap<String, Vec<i32>>,
    after: &BTreeMap<String, Vec<i32>>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, had) in before {
        let Some(has) = after.get(name) else { continue };
        let (had, has) = (set(had), set(has));
        let evs = s.events_since(name, mark);
        let revoked = callback_parts(&evs, "revoked");
        let assigned = callback_parts(&evs, "assigned");
        let lost = callback_parts(&evs, "lost");
        let gave_up: BTreeSet<i32> = had.difference(&has).copied().collect();
        let gained: BTreeSet<i32> = has.difference(&had).copied().collect();
        let kept: BTreeSet<i32> = had.intersection(&has).copied().collect();
        if !revoked.is_disjoint(&kept) || !assigned.is_disjoint(&kept) {
            problems.push(format!(
                "{name} kept {kept:?} ({had:?} -> {has:?}), but its callbacks revoked \
                 {revoked:?} and assigned {assigned:?}: an eager rebalance, not an incremental one"
            ));
        } else if revoked != gave_up || assigned != gained {
            problems.push(format!(
                "{name} went from {had:?} to {has:?}, but its callbacks revoked {revoked:?} and \
                 assigned {assigned:?}"
            ));
        }
        if !lost.is_empty() {
            problems.push(format!(
                "{name} lost {lost:?} (it was dropped from the group) in a rebalance it took part in"
            ));
        }
    }
    problems
}

// ---------------------------------------------------------------------------
// 8. Assignors: cooperative-sticky.

/// The Java consumer's name of the cooperative-sticky assignor.
const JAVA_COOPERATIVE: &str =
    "partition.assignment.strategy=org.apache.kafka.clients.consumer.CooperativeStickyAssignor";

/// A group of confluent-kafka, kafka-python and Java members that all use
/// `cooperative-sticky` (KIP-429) rebalances incrementally: when a member
/// joins, the others give up only the partitions that move to it, and when
/// one leaves, the others only gain its partitions; a partition a member
/// keeps is never revoked. Every record is consumed at least once.
#[test]
fn cooperative_sticky_rebalances_incrementally() {
    if skipped("cooperative_sticky_rebalances_incrementally") {
        return;
    }
    let _shared = shared();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    let mut s = Scene::start();
    let (topic, group) = ("coop", "g-coop");
    s.create(topic, PARTITIONS, &[]);
    s.background_producer("producer", topic, 0, 150);
    let coop = ["--strategy", "cooperative-sticky"];

    s.member("ck-1", Lib::Ck, group, topic, &coop);
    s.member("kp-1", Lib::Kp, group, topic, &coop);
    let (two, _) = s.wait_converged(&["ck-1", "kp-1"], PARTITIONS, CONVERGE_TIMEOUT);

    // A member joins: cooperative-sticky moves two partitions to it, in two
    // rounds (revoke from the owners, then assign to the newcomer).
    let mark = s.mark();
    s.java_member(&java, "java-1", group, topic, &[JAVA_COOPERATIVE]);
    let (three, _) = s.wait_converged(&["ck-1", "kp-1", "java-1"], PARTITIONS, CONVERGE_TIMEOUT);
    let mut problems = incremental_problems(&s, &mark, &two, &three);
    let assigned = callback_parts(&s.events_since("java-1", &mark), "assigned");
    if assigned != set(&three["java-1"]) {
        problems.push(format!(
            "java-1 joined and owns {:?}, but its callbacks assigned {assigned:?}",
            three["java-1"]
        ));
    }
    if !problems.is_empty() {
        s.fail(&format!(
            "when java-1 joined ({two:?} -> {three:?}):\n  {}",
            problems.join("\n  ")
        ));
    }
    let (g, members) = s.describe(group);
    if g.get("assignor") != Some("cooperative-sticky") || members.len() != 3 {
        s.fail(&format!(
            "DescribeGroups: expected the assignor cooperative-sticky and 3 members, got {g:?}"
        ));
    }

    // A member leaves cleanly: the others only gain its partitions.
    let mark = s.mark();
    s.stop("kp-1");
    let (after_leave, _) = s.wait_converged(&["ck-1", "java-1"], PARTITIONS, CONVERGE_TIMEOUT);
    let problems = incremental_problems(&s, &mark, &three, &after_leave);
    if !problems.is_empty() {
        s.fail(&format!(
            "when kp-1 left ({three:?} -> {after_leave:?}):\n  {}",
            problems.join("\n  ")
        ));
    }

    let delivered = s.stop_producer("producer", 500);
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    s.stop("ck-1");
    s.stop("java-1");
    s.check_all_consumed(topic, &delivered);
    s.broker.stop();
}

// ---------------------------------------------------------------------------
// 9. Assignors: roundrobin.

/// kafka-python offers `range` then `roundrobin`, confluent-kafka only
/// `roundrobin`: the broker must pick the one protocol they share, and each
/// client, as the group's leader, must compute the same round-robin layout
/// (every other partition; `range` would give each a contiguous half).
#[test]
fn roundrobin_is_the_shared_assignor_of_kafka_python_and_librdkafka() {
    if skipped("roundrobin_is_the_shared_assignor_of_kafka_python_and_librdkafka") {
        return;
    }
    let _shared = shared();
    let mut s = Scene::start();
    let (topic, group) = ("rr", "g-rr");
    s.create(topic, PARTITIONS, &[]);
    s.background_producer("producer", topic, 0, 150);
    let alternate: BTreeSet<Vec<i32>> = [vec![0, 2, 4], vec![1, 3, 5]].into();
    let check = |s: &mut Scene, names: [&str; 2], leader: &str| {
        let (a, _) = s.wait_converged(&names, PARTITIONS, CONVERGE_TIMEOUT);
        let layout: BTreeSet<Vec<i32>> = a.values().cloned().collect();
        if layout != alternate {
            s.fail(&format!(
                "with {leader} leading, the members own {a:?}, not the round-robin layout \
                 {alternate:?}"
            ));
        }
        let (g, _) = s.describe(group);
        if g.get("assignor") != Some("roundrobin") {
            s.fail(&format!(
                "DescribeGroups: the group's assignor is not roundrobin: {g:?}"
            ));
        }
    };

    // The first member to join leads the group and computes the
    // assignment: kafka-python first, then librdkafka.
    s.member(
        "kp-1",
        Lib::Kp,
        group,
        topic,
        &["--strategy", "range,roundrobin"],
    );
    s.wait_converged(&["kp-1"], PARTITIONS, CONVERGE_TIMEOUT);
    s.member("ck-1", Lib::Ck, group, topic, &["--strategy", "roundrobin"]);
    check(&mut s, ["kp-1", "ck-1"], "kafka-python");
    s.stop("kp-1");
    s.wait_converged(&["ck-1"], PARTITIONS, CONVERGE_TIMEOUT);
    s.member(
        "kp-2",
        Lib::Kp,
        group,
        topic,
        &["--strategy", "range,roundrobin"],
    );
    check(&mut s, ["ck-1", "kp-2"], "librdkafka");

    let delivered = s.stop_producer("producer", 500);
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    s.stop("ck-1");
    s.stop("kp-2");
    s.check_all_consumed(topic, &delivered);
    s.broker.stop();
}

// ---------------------------------------------------------------------------
// 10. Static membership (KIP-345).

/// Problems if `name` saw any rebalance callback since `mark`, or its
/// generation is no longer `generation` (when its client reports one).
fn undisturbed(
    s: &Scene,
    name: &str,
    mark: &BTreeMap<String, usize>,
    generation: Option<i64>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let callbacks: Vec<String> = s
        .events_since(name, mark)
        .iter()
        .filter(|e| ["assigned", "revoked", "lost"].contains(&e.ev.as_str()))
        .map(|e| format!("{} {}", e.ev, e.get("parts").unwrap_or("")))
        .collect();
    if !callbacks.is_empty() {
        problems.push(format!(
            "{name} went through a rebalance: its callbacks {callbacks:?}"
        ));
    }
    let now = s.generation(name);
    if generation.is_some() && now != generation {
        problems.push(format!(
            "{name}'s generation moved from {generation:?} to {now:?}"
        ));
    }
    problems
}

/// Two static members (`group.instance.id`), confluent-kafka and
/// kafka-python. Each in turn is killed with -9 and restarted with the same
/// instance id within its session timeout: the group does not rebalance
/// (the other member's callbacks are not called, the generation stays) and
/// the new process gets the old one's partitions back. Then a static
/// member closes, which does not leave the group (static members do not
/// send LeaveGroup), so it stays listed until its session times out; then
/// it is removed and its partitions move to the other member.
#[test]
fn static_members_restart_without_rebalance_and_expire_after_session() {
    if skipped("static_members_restart_without_rebalance_and_expire_after_session") {
        return;
    }
    let _serial = serial();
    let mut s = Scene::start();
    let (topic, group) = ("static", "g-static");
    s.create(topic, PARTITIONS, &[]);
    s.background_producer("producer", topic, 0, 150);
    let ck_static = ["--instance-id", "inst-ck"];
    let kp_static = ["--instance-id", "inst-kp"];

    s.member("ck-1", Lib::Ck, group, topic, &ck_static);
    s.member("kp-1", Lib::Kp, group, topic, &kp_static);
    let (a0, _) = s.wait_converged(&["ck-1", "kp-1"], PARTITIONS, CONVERGE_TIMEOUT);
    let gen0 = s.generation("kp-1");
    let (_, members) = s.describe(group);
    let instances: BTreeSet<&str> = members.iter().filter_map(|m| m.get("instance")).collect();
    if instances != BTreeSet::from(["inst-ck", "inst-kp"]) {
        s.fail(&format!(
            "DescribeGroups lists the instance ids {instances:?}, expected inst-ck and inst-kp: \
             {members:?}"
        ));
    }

    // Each member in turn: kill -9, restart at once with the same id.
    let rounds = [
        ("ck-1", "ck-2", Lib::Ck, &ck_static, "kp-1"),
        ("kp-1", "kp-2", Lib::Kp, &kp_static, "ck-2"),
    ];
    let mut current = a0.clone();
    for (old, new, lib, instance, other) in rounds {
        let other_generation = s.generation(other);
        let mark = s.mark();
        s.kill9(old);
        let killed_ms = wall_ms();
        s.member(new, lib, group, topic, instance);
        let (a, _) = s.wait_converged(&[new, other], PARTITIONS, CONVERGE_TIMEOUT);
        let mut problems = undisturbed(&s, other, &mark, other_generation);
        if a[new] != current[old] || a[other] != current[other] {
            problems.push(format!(
                "the assignment changed from {current:?} to {a:?}: {new} should have {old}'s \
                 partitions and {other} its own"
            ));
        }
        // kafka-python reports the generation it was given: the group's
        // current one, which must be the one before the restart.
        if new == "kp-2" && s.generation("kp-2") != gen0 {
            problems.push(format!(
                "kp-2 joined in generation {:?}, not in the group's generation {gen0:?}",
                s.generation("kp-2")
            ));
        }
        if !problems.is_empty() {
            let took = s
                .events_since(new, &mark)
                .iter()
                .find(|e| e.ev == "assigned")
                .and_then(|e| e.int("t"))
                .map(|t| t - killed_ms);
            s.fail(&format!(
                "{old} killed and restarted as {new} with the same group.instance.id (it got its \
                 partitions {took:?} ms after the kill; the session timeout is {SESSION_MS} \
                 ms):\n  {}",
                problems.join("\n  ")
            ));
        }
        current = [
            (new.to_string(), a[new].clone()),
            (other.to_string(), a[other].clone()),
        ]
        .into();
    }

    // A static member that closes stays a member until its session ends.
    let mark = s.mark();
    s.stop("ck-2");
    let closed_at = s.members[s.idx("ck-2")]
        .exited_at
        .expect("stop() saw it exit");
    let (g, members) = s.describe(group);
    let listed = members.iter().any(|m| m.get("instance") == Some("inst-ck"));
    if closed_at.elapsed() < Duration::from_millis(SESSION_MS / 2) && !listed {
        s.fail(&format!(
            "right after the static member ck-2 closed, DescribeGroups no longer lists it \
             (state {:?}, members {members:?}): it was removed before its session timeout",
            g.get("state")
        ));
    }
    let limit = Duration::from_millis(SESSION_MS) + CONVERGE_TIMEOUT;
    let (after, at) = s.wait_converged(&["kp-2"], PARTITIONS, limit);
    let took = at.saturating_duration_since(closed_at);
    if took < Duration::from_millis(SESSION_MS / 2) {
        s.fail(&format!(
            "kp-2 took over the static member's partitions {took:?} after it closed, before \
             its session timeout ({SESSION_MS} ms) could have run out: {after:?}"
        ));
    }
    let moved = callback_parts(&s.events_since("kp-2", &mark), "assigned");
    if !moved.is_superset(&set(&current["ck-2"])) {
        s.fail(&format!(
            "kp-2's callbacks assigned {moved:?}, not ck-2's partitions {:?}",
            current["ck-2"]
        ));
    }
    eprintln!(
        "the closed static member's partitions moved after {took:?} (session timeout \
         {SESSION_MS} ms)"
    );

    let delivered = s.stop_producer("producer", 500);
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    s.stop("kp-2");
    s.check_all_consumed(topic, &delivered);
    s.broker.stop();
}

/// The Java consumer as a static member: it joins alone, a kafka-python
/// static member joins (so the Java member rejoins once, in a later
/// generation), then the Java member is killed with -9 and restarted with
/// the same `group.instance.id` within its session timeout. As with the
/// other clients (above), the group must not rebalance: kafka-python's
/// callbacks are not called, its generation stays, and the new Java process
/// gets the old one's partitions in the same generation.
///
/// The Java client's subscription (ConsumerProtocolSubscription v2+)
/// carries the generation it last joined in, and a new process sends -1, so
/// its metadata differs from what the old process last sent although its
/// protocols are the same. Kafka only rebalances a rejoining static member
/// of a Stable group if the group's protocol would change.
#[test]
fn java_static_member_restarts_without_rebalance() {
    if skipped("java_static_member_restarts_without_rebalance") {
        return;
    }
    let _serial = serial();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    let mut s = Scene::start();
    let (topic, group) = ("jstatic", "g-jstatic");
    s.create(topic, PARTITIONS, &[]);
    s.background_producer("producer", topic, 0, 150);
    let java_static = "group.instance.id=inst-java";

    s.java_member(&java, "java-1", group, topic, &[java_static]);
    s.wait_converged(&["java-1"], PARTITIONS, CONVERGE_TIMEOUT);
    s.member("kp-1", Lib::Kp, group, topic, &["--instance-id", "inst-kp"]);
    let (before, _) = s.wait_converged(&["java-1", "kp-1"], PARTITIONS, CONVERGE_TIMEOUT);
    let generation = s.generation("kp-1");

    let mark = s.mark();
    s.kill9("java-1");
    let killed_ms = wall_ms();
    s.java_member(&java, "java-2", group, topic, &[java_static]);
    let (after, _) = s.wait_converged(&["java-2", "kp-1"], PARTITIONS, CONVERGE_TIMEOUT);
    let mut problems = undisturbed(&s, "kp-1", &mark, generation);
    if after["java-2"] != before["java-1"] || after["kp-1"] != before["kp-1"] {
        problems.push(format!(
            "the assignment changed from {before:?} to {after:?}"
        ));
    }
    if s.generation("java-2") != generation {
        problems.push(format!(
            "java-2 joined in generation {:?}, not in the group's generation {generation:?}",
            s.generation("java-2")
        ));
    }
    if !problems.is_empty() {
        let took = s
            .events_since("java-2", &mark)
            .iter()
            .find(|e| e.ev == "assigned")
            .and_then(|e| e.int("t"))
            .map(|t| t - killed_ms);
        s.fail(&format!(
            "java-1 killed and restarted as java-2 with the same group.instance.id (it got its \
             partitions {took:?} ms after the kill; the session timeout is {SESSION_MS} ms), \
             and the group rebalanced (the broker log says why):\n  {}",
            problems.join("\n  ")
        ));
    }

    let delivered = s.stop_producer("producer", 300);
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    // Static members do not leave when they close: the broker expires them
    // after it stops, which does not matter here.
    s.stop("java-2");
    s.stop("kp-1");
    s.check_all_consumed(topic, &delivered);
    s.broker.stop();
}

/// A static member replaced without a rebalance (a new process, a new
/// member id) is what the coordinator must store: after the broker
/// restarts, the group it loads from `__consumer_offsets` has the new
/// member id under the instance id, as DescribeGroups showed before the
/// restart. With the old id stored, the live member would be fenced
/// (FENCED_INSTANCE_ID, fatal to the clients) by its first heartbeat to the
/// restarted coordinator.
///
/// The members are killed before the broker restarts: the check is on what
/// was stored, and DescribeGroups reads the loaded group before their
/// sessions expire.
#[test]
fn static_member_replacement_survives_a_coordinator_restart() {
    if skipped("static_member_replacement_survives_a_coordinator_restart") {
        return;
    }
    let _serial = serial();
    let mut s = Scene::start();
    let (topic, group) = ("sstored", "g-sstored");
    s.create(topic, PARTITIONS, &[]);
    s.produce(topic, 0, 300);
    let ck_static = ["--instance-id", "inst-ck"];
    s.member("ck-1", Lib::Ck, group, topic, &ck_static);
    s.member("kp-1", Lib::Kp, group, topic, &["--instance-id", "inst-kp"]);
    s.wait_converged(&["ck-1", "kp-1"], PARTITIONS, CONVERGE_TIMEOUT);
    let mark = s.mark();
    s.kill9("ck-1");
    s.member("ck-2", Lib::Ck, group, topic, &ck_static);
    s.wait_converged(&["ck-2", "kp-1"], PARTITIONS, CONVERGE_TIMEOUT);
    let problems = undisturbed(&s, "kp-1", &mark, s.generation("kp-1"));
    if !problems.is_empty() {
        s.fail(&format!(
            "the static member's restart rebalanced the group:\n  {}",
            problems.join("\n  ")
        ));
    }
    let ids = |members: &[Event]| -> BTreeMap<String, String> {
        members
            .iter()
            .filter_map(|m| Some((m.get("instance")?.to_string(), m.get("id")?.to_string())))
            .collect()
    };
    let (_, members) = s.describe(group);
    let live = ids(&members);
    if live.len() != 2 {
        s.fail(&format!(
            "DescribeGroups before the restart: expected the two static members, got \
             {members:?}"
        ));
    }

    s.kill9("ck-2");
    s.kill9("kp-1");
    s.broker.stop();
    s.broker.restart();
    let (g, members) = s.describe(group);
    let loaded = ids(&members);
    if loaded != live {
        s.fail(&format!(
            "after the restart the coordinator loaded the group (state {:?}) with the members \
             {loaded:?} (instance id -> member id), but before it the members were {live:?}: \
             the replacement of a static member was not stored",
            g.get("state")
        ));
    }
    s.broker.stop();
}

// ---------------------------------------------------------------------------
// 11. group.max.size.

/// With `group.max.size = 2`, a third member is refused: kafka-python
/// raises GroupMaxSizeReachedError, librdkafka reports
/// GROUP_MAX_SIZE_REACHED, the Java client throws
/// GroupMaxSizeReachedException; none of them gets a partition, and the two
/// members keep theirs (no rebalance) and keep consuming. A static member
/// restarted with its instance id is not a third member: it takes its old
/// place.
#[test]
fn group_max_size_refuses_a_third_member() {
    if skipped("group_max_size_refuses_a_third_member") {
        return;
    }
    let _serial = serial();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    let mut s = Scene::start_with(&[("group.max.size", 2)]);
    let (topic, group) = ("full", "g-full");
    s.create(topic, PARTITIONS, &[]);
    s.background_producer("producer", topic, 0, 150);
    let ck_static = ["--instance-id", "inst-ck"];
    s.member("ck-1", Lib::Ck, group, topic, &ck_static);
    s.member("kp-1", Lib::Kp, group, topic, &[]);
    let (two, _) = s.wait_converged(&["ck-1", "kp-1"], PARTITIONS, CONVERGE_TIMEOUT);
    let generation = s.generation("kp-1");
    let mark = s.mark();

    // If a member were let in, it would consume a record and stop, rather
    // than wait out the step's time limit.
    let refused = ["--exit-on-error", "--commit", "none", "--max-records", "1"];
    for (name, lib, want) in [
        ("kp-3", Lib::Kp, "GroupMaxSizeReachedError"),
        ("ck-3", Lib::Ck, "GROUP_MAX_SIZE_REACHED"),
    ] {
        let evs = s.run_member(name, lib, group, topic, &refused);
        let err = find(&evs, "error");
        let got = callback_parts(&evs, "assigned");
        if err.map(|e| e.text("name")).as_deref() != Some(want) || !got.is_empty() {
            s.fail(&format!(
                "{name}, a third member of a group limited to 2: expected the error {want} and \
                 no partitions; got error {err:?}, partitions {got:?}"
            ));
        }
    }
    let i = s.java_member(&java, "java-3", group, topic, &[]);
    match s.members[i].wait(CONVERGE_TIMEOUT) {
        Some(st) if st.success() => {}
        Some(st) => s.fail(&format!("java-3 exited with {st}")),
        None => s.fail(&format!(
            "java-3, a third member of a group limited to 2, was not refused within \
             {CONVERGE_TIMEOUT:?}"
        )),
    }
    let evs = s.members[i].events();
    let err = find(&evs, "error");
    let got = callback_parts(&evs, "assigned");
    if err.and_then(|e| e.get("name")) != Some("GroupMaxSizeReachedException") || !got.is_empty() {
        s.fail(&format!(
            "java-3: expected GroupMaxSizeReachedException and no partitions; got error {err:?}, \
             partitions {got:?}"
        ));
    }
    let (still, _) = s.wait_converged(&["ck-1", "kp-1"], PARTITIONS, CONVERGE_TIMEOUT);
    let mut problems = undisturbed(&s, "kp-1", &mark, generation);
    problems.extend(undisturbed(&s, "ck-1", &mark, None));
    if still != two {
        problems.push(format!("the assignment changed from {two:?} to {still:?}"));
    }
    if !problems.is_empty() {
        s.fail(&format!(
            "the refused members disturbed the group:\n  {}",
            problems.join("\n  ")
        ));
    }

    // A full group still takes back a static member's new process.
    let mark = s.mark();
    s.kill9("ck-1");
    s.member("ck-2", Lib::Ck, group, topic, &ck_static);
    let (back, _) = s.wait_converged(&["ck-2", "kp-1"], PARTITIONS, CONVERGE_TIMEOUT);
    let mut problems = undisturbed(&s, "kp-1", &mark, generation);
    if back["ck-2"] != two["ck-1"] {
        problems.push(format!(
            "ck-2 owns {:?}, not ck-1's {:?}",
            back["ck-2"], two["ck-1"]
        ));
    }
    let refusals: Vec<Event> = s
        .events_since("ck-2", &mark)
        .into_iter()
        .filter(|e| e.ev.contains("error"))
        .collect();
    if !refusals.is_empty() {
        problems.push(format!("ck-2 reported errors: {refusals:?}"));
    }
    if !problems.is_empty() {
        s.fail(&format!(
            "a static member restarted into a full group:\n  {}",
            problems.join("\n  ")
        ));
    }

    let delivered = s.stop_producer("producer", 500);
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    s.stop("ck-2");
    s.stop("kp-1");
    let (recs, mut problems) = s.all_records(topic);
    problems.extend(check_consumed(&delivered, &recs, false));
    let third: Vec<&Rec> = recs.iter().filter(|r| r.member.ends_with("-3")).collect();
    if !third.is_empty() {
        problems.push(format!("refused members consumed {} records", third.len()));
    }
    if !problems.is_empty() {
        s.fail(&format!("records:\n  {}", problems.join("\n  ")));
    }
    s.broker.stop();
}

// ---------------------------------------------------------------------------
// 12. max.poll.interval.ms.

/// The stalled member's `session.timeout.ms`: librdkafka requires it not to
/// exceed `max.poll.interval.ms`.
const STALL_SESSION_MS: u64 = 2000;
/// The stalled member's `max.poll.interval.ms`.
const STALL_MAX_POLL_MS: u64 = 3000;
/// How long the stalled member does not poll: well beyond its
/// `max.poll.interval.ms` plus a rebalance, so the others take over while
/// it is still stalled.
const STALL_SECONDS: u64 = 10;

/// A member that stops polling (an application stuck in processing) for
/// longer than its `max.poll.interval.ms` keeps heartbeating from its
/// client's background thread, so its session never runs out; its client
/// leaves the group instead, and the others take over its partitions while
/// it is still stalled. When it polls again it rejoins and the partitions
/// are shared again. Once with librdkafka (which then reports
/// _MAX_POLL_EXCEEDED) and once with kafka-python (which reports its
/// partitions lost); every record is consumed at least once.
#[test]
fn member_that_stops_polling_is_replaced_then_rejoins() {
    if skipped("member_that_stops_polling_is_replaced_then_rejoins") {
        return;
    }
    let _serial = serial();
    let mut s = Scene::start();
    let (topic, group) = ("stall", "g-stall");
    s.create(topic, PARTITIONS, &[]);
    s.background_producer("producer", topic, 0, 150);
    let (session, max_poll, seconds) = (
        STALL_SESSION_MS.to_string(),
        STALL_MAX_POLL_MS.to_string(),
        STALL_SECONDS.to_string(),
    );
    let stall = [
        "--session-ms",
        session.as_str(),
        "--max-poll-ms",
        max_poll.as_str(),
        "--stall-after",
        "50",
        "--stall-seconds",
        seconds.as_str(),
    ];
    s.member("kp-1", Lib::Kp, group, topic, &[]);
    s.wait_converged(&["kp-1"], PARTITIONS, CONVERGE_TIMEOUT);

    let mut others = vec!["kp-1"];
    for (name, lib, evidence) in [
        ("ck-stall", Lib::Ck, "error"),
        ("kp-stall", Lib::Kp, "lost"),
    ] {
        s.member(name, lib, group, topic, &stall);
        let mut all = others.clone();
        all.push(name);
        s.wait_converged(&all, PARTITIONS, CONVERGE_TIMEOUT);
        let stalled = s.wait_event(name, "stall", CONVERGE_TIMEOUT);
        let limit = Duration::from_secs(STALL_SECONDS) + CONVERGE_TIMEOUT;
        s.wait_converged(&others, PARTITIONS, limit);
        let i = s.idx(name);
        if let Some(resumed) = find(&s.members[i].events(), "resume") {
            s.fail(&format!(
                "{others:?} took over {name}'s partitions only after it polled again \
                 ({resumed:?}; it stalled at {stalled:?}): its max.poll.interval.ms \
                 ({STALL_MAX_POLL_MS} ms) did not take it out of the group"
            ));
        }
        let replaced_ms = wall_ms() - stalled.int("t").unwrap_or(0);
        s.wait_event(name, "resume", limit);
        s.wait_converged(&all, PARTITIONS, CONVERGE_TIMEOUT);
        let evs = s.members[i].events();
        let seen = match evidence {
            "error" => evs
                .iter()
                .any(|e| e.ev == "error" && e.get("name") == Some("_MAX_POLL_EXCEEDED")),
            _ => evs.iter().any(|e| e.ev == "lost"),
        };
        if !seen {
            s.fail(&format!(
                "{name} rejoined, but did not report that it had been out of the group \
                 (_MAX_POLL_EXCEEDED for librdkafka, lost partitions for kafka-python)"
            ));
        }
        eprintln!("{name}: the others owned every partition {replaced_ms} ms into its stall");
        others.push(name);
    }

    let delivered = s.stop_producer("producer", 500);
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    for name in others {
        s.stop(name);
    }
    s.check_all_consumed(topic, &delivered);
    s.broker.stop();
}

// ---------------------------------------------------------------------------
// 5. A coordinator loads a large offsets partition.

/// Found by the fault suite's long run: the coordinator loads its
/// `__consumer_offsets` partitions in 1 MiB reads, and a read that ended
/// inside a batch failed the whole load as a corrupt log, so a group whose
/// partition had grown past 1 MiB lost its committed offsets at the next
/// load. Commits with 4000-byte metadata grow one partition past 1 MiB;
/// after a restart the last commit must be read back.
#[test]
fn coordinator_loads_an_offsets_partition_larger_than_one_read() {
    if skipped("coordinator_loads_an_offsets_partition_larger_than_one_read") {
        return;
    }
    let _shared = shared();
    require_python_clients();
    let mut broker = Broker::start(BrokerOpts::new().setting("offsets.topic.num.partitions", 1));
    let script = r#"
import sys
from confluent_kafka import Consumer, TopicPartition
bootstrap, mode = sys.argv[1], sys.argv[2]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "big-offsets",
              "enable.auto.commit": False})
tp = lambda o=None, m=None: TopicPartition("big", 0, o, metadata=m) if o is not None else TopicPartition("big", 0)
if mode == "commit":
    for o in range(400):
        c.commit(offsets=[tp(o, "m%03d-" % o + "x" * 3990)], asynchronous=False)
    print("COMMITTED 400")
else:
    got = c.committed([tp()], timeout=30)[0]
    print("OFFSET %d %s" % (got.offset, (got.metadata or "")[:5]))
c.close()
"#;
    let run = |mode: &str, broker: &Broker| {
        run_command(
            Command::new("python3").args(["-c", script, &broker.bootstrap(), mode]),
            None,
            STEP_TIMEOUT,
        )
    };
    let created = run_command(
        Command::new(support::PINLOG_BIN).args([
            "topic",
            "create",
            "big",
            "--partitions",
            "1",
            "--bootstrap-server",
            &broker.bootstrap(),
        ]),
        None,
        STEP_TIMEOUT,
    );
    assert!(created.success(), "{created}");
    let out = run("commit", &broker);
    assert!(out.stdout.contains("COMMITTED 400"), "{out}");
    broker.restart();
    let out = run("fetch", &broker);
    assert!(
        out.stdout.contains("OFFSET 399 m399-"),
        "the last commit was not loaded back after the restart:\n{out}\n{}",
        tail(&broker.log(), BROKER_LOG_LINES)
    );
}

// ---------------------------------------------------------------------------
// KIP-848's consumer group protocol, with the same scenes and members.

#[path = "groups/kip848.rs"]
mod kip848;

#[path = "groups/migration.rs"]
mod migration;

#[path = "groups/share.rs"]
mod share;
