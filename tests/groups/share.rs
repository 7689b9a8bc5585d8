//! Share groups (KIP-932) with Kafka's own `KafkaShareConsumer`
//! (`groups/java/ShareConsumer.java`) against one broker: ShareGroupHeartbeat
//! on the group coordinator, ShareFetch and ShareAcknowledge on the
//! partition's leader, the state in `__share_group_state`.
//!
//! What is checked:
//! - three members share one partition: every record is delivered, once,
//!   and more than one member gets records (records of a partition are
//!   handed out by locks, not by exclusive ownership);
//! - explicit acknowledgements: a released record is delivered again with
//!   its delivery count moved on and accepted then; a rejected one is never
//!   delivered again; one released at every delivery is archived at
//!   `group.share.delivery.count.limit` and not delivered past it;
//! - a member killed while it holds records: its connection closes and
//!   they come back to another member at once; a member that hangs
//!   (SIGSTOP) keeps them until their locks expire
//!   (`group.share.record.lock.duration.ms`), and not longer; either way
//!   with their delivery count moved on;
//! - a node killed in a 3-node cluster: no acknowledged record is
//!   delivered again, and every record is delivered;
//! - kafka-share-groups.sh lists the group and describes its members and
//!   offsets (DescribeShareGroupOffsets: the start offset reaches the end
//!   once every record is accepted), resets them to the earliest
//!   (AlterShareGroupOffsets; a new member then reads from offset 0) and
//!   deletes them (DeleteShareGroupOffsets).
//!
//! A share group starts reading a partition at its end
//! (`share.auto.offset.reset=latest`, Kafka's default), so each test first
//! produces single warm-up records (sequence numbers below
//! [`FIRST_SEQ`]) until a member got one; only the records produced after
//! that are checked.

use super::*;

/// The first sequence number the checks cover.
const FIRST_SEQ: u64 = 1000;
/// How long the warm-up may take: the members must join, be assigned the
/// partition and fetch once.
const WARM_UP_TIMEOUT: Duration = Duration::from_secs(45);

impl Scene {
    /// Starts a KafkaShareConsumer member; `props` are more consumer
    /// settings or ShareConsumer.java's `pinlog.*` ones.
    fn share_member(
        &mut self,
        java: &JavaClasses,
        name: &str,
        group: &str,
        topic: &str,
        props: &[&str],
    ) -> usize {
        let stop = self.dir.path().join(format!("{name}.stop"));
        let mut cmd = Command::new("java");
        cmd.args(["-XX:TieredStopAtLevel=1", "-cp", &java.classpath])
            .args(["ShareConsumer", &self.bootstrap(), group, topic, name])
            .arg(&stop)
            .arg(SCRIPT_MAX_SECONDS.to_string())
            .args(props);
        let m = Member::spawn(self.dir.path(), name, cmd);
        self.members.push(m);
        self.members.len() - 1
    }

    /// Produces warm-up records until a member received one.
    fn warm_up_share_group(&mut self, topic: &str) {
        let deadline = Instant::now() + WARM_UP_TIMEOUT;
        let mut seq = 0;
        loop {
            self.produce(topic, seq, 1);
            seq += 1;
            let wait = Instant::now() + Duration::from_secs(2);
            while Instant::now() < wait {
                let (recs, _) = self.all_records(topic);
                if !recs.is_empty() {
                    return;
                }
                std::thread::sleep(POLL_INTERVAL);
            }
            if Instant::now() >= deadline || seq >= FIRST_SEQ {
                self.fail(&format!(
                    "no share group member received a record within {WARM_UP_TIMEOUT:?}"
                ));
            }
        }
    }

    /// Each checked record's deliveries: seq -> (member, delivery count).
    fn share_deliveries(&self, topic: &str) -> BTreeMap<u64, Vec<(String, i64)>> {
        let mut out: BTreeMap<u64, Vec<(String, i64)>> = BTreeMap::new();
        let mut problems = Vec::new();
        for m in &self.members {
            let events = m.events();
            let recs = records(&m.name, topic, &events, &mut problems);
            let counts = events
                .iter()
                .filter(|e| e.ev == "rec")
                .map(|e| e.int("dc").unwrap_or(-1));
            for (r, dc) in recs.iter().zip(counts) {
                if r.seq >= FIRST_SEQ {
                    out.entry(r.seq).or_default().push((m.name.clone(), dc));
                }
            }
        }
        if !problems.is_empty() {
            self.fail(&format!(
                "bad records consumed:\n  {}",
                problems.join("\n  ")
            ));
        }
        out
    }

    /// Waits until `done` holds of the deliveries, or fails after `timeout`.
    fn wait_deliveries(
        &self,
        topic: &str,
        timeout: Duration,
        what: &str,
        done: impl Fn(&BTreeMap<u64, Vec<(String, i64)>>) -> bool,
    ) -> BTreeMap<u64, Vec<(String, i64)>> {
        let deadline = Instant::now() + timeout;
        loop {
            let d = self.share_deliveries(topic);
            if done(&d) {
                return d;
            }
            if Instant::now() >= deadline {
                self.fail(&format!("{what} within {timeout:?}; deliveries: {d:?}"));
            }
            std::thread::sleep(POLL_INTERVAL * 3);
        }
    }
}

/// kafka-share-groups.sh's class, with `args`.
fn share_groups_tool(s: &Scene, libs: &Path, args: &[&str]) -> CmdOutput {
    let mut cmd = Command::new("java");
    cmd.args(["-cp", &format!("{}/*", libs.display())])
        .arg("org.apache.kafka.tools.consumer.group.ShareGroupCommand")
        .args(["--bootstrap-server", &s.bootstrap()])
        .args(args);
    run_command(&mut cmd, None, STEP_TIMEOUT)
}

#[test]
fn share_members_share_a_partition_and_each_record_is_delivered_once() {
    if skipped("share_members_share_a_partition_and_each_record_is_delivered_once") {
        return;
    }
    let _shared = shared();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    let mut s = Scene::start();
    let topic = "queue";
    s.create(topic, 1, &[]);
    for name in ["s1", "s2", "s3"] {
        // Small fetches, so one member does not take every record at once.
        s.share_member(&java, name, "workers", topic, &["max.poll.records=20"]);
    }
    s.warm_up_share_group(topic);
    let count = 600;
    s.produce(topic, FIRST_SEQ, count);
    let d = s.wait_deliveries(
        topic,
        Duration::from_secs(60),
        "every record delivered",
        |d| d.len() as u64 == count,
    );
    let twice: Vec<_> = d.iter().filter(|(_, v)| v.len() != 1).collect();
    if !twice.is_empty() {
        s.fail(&format!("records delivered more than once: {twice:?}"));
    }
    let members: BTreeSet<&String> = d.values().flatten().map(|(m, _)| m).collect();
    if members.len() < 2 {
        s.fail(&format!("one partition's records went to {members:?} only"));
    }

    let listed = share_groups_tool(&s, &libs, &["--list"]);
    listed.assert_success();
    assert!(
        listed.stdout.lines().any(|l| l.trim() == "workers"),
        "kafka-share-groups --list:\n{listed}"
    );
    let described = share_groups_tool(
        &s,
        &libs,
        &["--describe", "--members", "--group", "workers"],
    );
    described.assert_success();
    let rows = described
        .stdout
        .lines()
        .filter(|l| l.starts_with("workers"))
        .count();
    assert_eq!(rows, 3, "three members described:\n{described}");
    for name in ["s1", "s2", "s3"] {
        s.stop(name);
    }
    // Every record was accepted (the last ones as the members closed): the
    // share-partition start offset is the end of the partition, no lag.
    let (_, ends) = s.offsets(topic);
    let offsets = share_groups_tool(&s, &libs, &["--describe", "--group", "workers"]);
    offsets.assert_success();
    let rows = table(&offsets.stdout, "GROUP");
    let row = rows
        .iter()
        .find(|r| r.get("TOPIC").map(String::as_str) == Some(topic))
        .unwrap_or_else(|| s.fail(&format!("no row of {topic} in\n{offsets}")));
    assert_eq!(
        row.get("START-OFFSET").and_then(|o| o.parse::<i64>().ok()),
        Some(ends[&0]),
        "the start offset is the partition's end once everything is accepted:\n{offsets}"
    );
    assert_eq!(row.get("LAG").map(String::as_str), Some("0"), "{offsets}");

    // The group is empty: its offsets reset to the earliest (AlterShareGroupOffsets) ...
    let reset = share_groups_tool(
        &s,
        &libs,
        &[
            "--reset-offsets",
            "--to-earliest",
            "--execute",
            "--group",
            "workers",
            "--topic",
            topic,
        ],
    );
    reset.assert_success();
    let offsets = share_groups_tool(&s, &libs, &["--describe", "--group", "workers"]);
    let rows = table(&offsets.stdout, "GROUP");
    let start = rows
        .iter()
        .find(|r| r.get("TOPIC").map(String::as_str) == Some(topic))
        .and_then(|r| r.get("START-OFFSET"))
        .and_then(|o| o.parse::<i64>().ok());
    assert_eq!(
        start,
        Some(0),
        "after --reset-offsets --to-earliest:\n{reset}\n{offsets}"
    );
    // A member of the reset group reads from the earliest offset: the
    // partition's leader forgot the group's share partition as its members
    // left, and loads the reset state instead of resuming from memory.
    s.share_member(&java, "s4", "workers", topic, &[]);
    let deadline = Instant::now() + WARM_UP_TIMEOUT;
    while !s.members[s.idx("s4")]
        .events()
        .iter()
        .any(|e| e.ev == "rec" && e.int("o") == Some(0))
    {
        if Instant::now() >= deadline {
            s.fail(&format!(
                "after --reset-offsets --to-earliest, a new member did not get offset 0 within \
                 {WARM_UP_TIMEOUT:?}"
            ));
        }
        std::thread::sleep(POLL_INTERVAL * 3);
    }
    s.stop("s4");
    // ... and are deleted (DeleteShareGroupOffsets).
    let deleted = share_groups_tool(
        &s,
        &libs,
        &["--delete-offsets", "--group", "workers", "--topic", topic],
    );
    deleted.assert_success();
    let offsets = share_groups_tool(&s, &libs, &["--describe", "--group", "workers"]);
    assert!(
        !table(&offsets.stdout, "GROUP")
            .iter()
            .any(|r| r.get("TOPIC").map(String::as_str) == Some(topic)),
        "after --delete-offsets:\n{deleted}\n{offsets}"
    );
    // The empty group itself is deleted (DeleteGroups), and is gone.
    let removed = share_groups_tool(&s, &libs, &["--delete", "--group", "workers"]);
    removed.assert_success();
    let listed = share_groups_tool(&s, &libs, &["--list"]);
    listed.assert_success();
    assert!(
        !listed.stdout.lines().any(|l| l.trim() == "workers"),
        "the group is still listed after --delete:\n{removed}\n{listed}"
    );
}

#[test]
fn share_acknowledgements_release_reject_and_the_delivery_limit() {
    if skipped("share_acknowledgements_release_reject_and_the_delivery_limit") {
        return;
    }
    let _shared = shared();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    let mut s = Scene::start_with(&[("group.share.delivery.count.limit", 3)]);
    let topic = "acks";
    s.create(topic, 1, &[]);
    // Rejects multiples of 7, releases multiples of 11 at every delivery,
    // releases multiples of 5 at the first (ShareConsumer.java's order).
    s.share_member(
        &java,
        "a1",
        "ackers",
        topic,
        &[
            "pinlog.reject=7",
            "pinlog.release.always=11",
            "pinlog.release.first=5",
        ],
    );
    s.warm_up_share_group(topic);
    let count = 200;
    s.produce(topic, FIRST_SEQ, count);
    let expected = |seq: u64| -> Vec<i64> {
        if seq % 7 == 0 {
            vec![1]
        } else if seq % 11 == 0 {
            vec![1, 2, 3]
        } else if seq % 5 == 0 {
            vec![1, 2]
        } else {
            vec![1]
        }
    };
    let complete = |d: &BTreeMap<u64, Vec<(String, i64)>>| {
        (FIRST_SEQ..FIRST_SEQ + count)
            .all(|seq| d.get(&seq).map_or(0, Vec::len) >= expected(seq).len())
    };
    s.wait_deliveries(topic, Duration::from_secs(60), "every delivery", complete);
    // Nothing more comes: rejected and archived records stay done. A
    // fixed wait is the check: it looks for deliveries that must not come.
    std::thread::sleep(Duration::from_secs(3));
    let d = s.share_deliveries(topic);
    let mut problems = Vec::new();
    for seq in FIRST_SEQ..FIRST_SEQ + count {
        let got: Vec<i64> = d
            .get(&seq)
            .map(|v| v.iter().map(|(_, dc)| *dc).collect())
            .unwrap_or_default();
        if got != expected(seq) {
            problems.push(format!(
                "seq {seq}: delivery counts {got:?}, expected {:?}",
                expected(seq)
            ));
        }
    }
    if !problems.is_empty() {
        s.fail(&problems.join("\n"));
    }
    s.stop("a1");
}

/// A three-node cluster (RF 3 everywhere): a node is killed while members
/// consume. Every record is still delivered, and no record whose
/// acknowledgement the member saw committed (commitSync returned) is ever
/// delivered again: the acknowledgement was durable in `__share_group_state`
/// before it was answered, wherever its share coordinator and the
/// partition's leader moved. At the end kafka-share-groups.sh shows no lag
/// on any partition, wherever it is led.
#[test]
fn share_acknowledgements_survive_a_node_killed_in_a_cluster() {
    if skipped("share_acknowledgements_survive_a_node_killed_in_a_cluster") {
        return;
    }
    let _serial = serial();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    require_python_clients();
    let opts = BrokerOpts::new()
        .setting("offsets.topic.num.partitions", 3)
        .setting("share.coordinator.state.topic.num.partitions", 3);
    let mut nodes = support::Cluster::start(3, opts).nodes;
    let broker = nodes.remove(0);
    let mut s = Scene {
        members: Vec::new(),
        broker,
        others: nodes,
        dir: tempfile::Builder::new()
            .prefix("pinlog-groups-")
            .tempdir()
            .expect("create a temporary directory for the clients"),
    };
    let topic = "failover-queue";
    s.create(topic, 3, &["--replication-factor", "3"]);
    for name in ["k1", "k2"] {
        s.share_member(
            &java,
            name,
            "survivors",
            topic,
            &["pinlog.explicit=true", "max.poll.records=50"],
        );
    }
    s.warm_up_share_group(topic);
    // Every partition must have been read once before the records are
    // produced: the group starts a partition at its end when it first
    // reads it. kafka-share-groups shows a partition once it has state.
    let deadline = Instant::now() + WARM_UP_TIMEOUT;
    loop {
        let offsets = share_groups_tool(&s, &libs, &["--describe", "--group", "survivors"]);
        let rows = table(&offsets.stdout, "GROUP")
            .iter()
            .filter(|r| r.get("TOPIC").map(String::as_str) == Some(topic))
            .count();
        if rows == 3 {
            break;
        }
        if Instant::now() >= deadline {
            s.fail(&format!(
                "not every partition was read within {WARM_UP_TIMEOUT:?}:\n{offsets}"
            ));
        }
        std::thread::sleep(POLL_INTERVAL * 3);
    }
    let first = 300;
    s.produce(topic, FIRST_SEQ, first);
    s.wait_deliveries(topic, Duration::from_secs(60), "the first records", |d| {
        d.len() as u64 >= first / 2
    });
    s.others[0].kill9();
    let second = 300;
    s.produce(topic, FIRST_SEQ + first, second);
    let total = first + second;
    let d = s.wait_deliveries(
        topic,
        Duration::from_secs(90),
        "every record delivered",
        |d| d.len() as u64 == total,
    );
    // Acknowledgements a commitSync returned for are durable from the
    // moment it returned (the event's time `t`). A record acquired again
    // before that may legitimately come back: its first leader died before
    // the acknowledgement reached the share coordinator, and the client
    // then acknowledged the new delivery.
    let mut durable: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for m in &s.members {
        let mut pending: Vec<(i64, i64)> = Vec::new();
        for e in m.events() {
            match e.ev.as_str() {
                "ack" => pending.push((e.int("p").unwrap_or(-1), e.int("o").unwrap_or(-1))),
                "committed" => {
                    let at = e.int("t").unwrap_or(i64::MAX);
                    for po in pending.drain(..) {
                        durable.entry(po).or_insert(at);
                    }
                }
                "commit_failed" => pending.clear(),
                _ => {}
            }
        }
    }
    let mut redelivered: BTreeSet<(i64, i64)> = BTreeSet::new();
    for m in &s.members {
        for e in m.events().iter().filter(|e| e.ev == "rec") {
            let po = (e.int("p").unwrap_or(-1), e.int("o").unwrap_or(-1));
            let at = e.int("t").unwrap_or(i64::MIN);
            if durable.get(&po).is_some_and(|committed| at > *committed) {
                redelivered.insert(po);
            }
        }
    }
    if !redelivered.is_empty() {
        let mut seen = Vec::new();
        for m in &s.members {
            for e in m.events() {
                let po = (e.int("p").unwrap_or(-1), e.int("o").unwrap_or(-1));
                let first = redelivered.iter().take(3).any(|r| *r == po);
                if (e.ev == "rec" || e.ev == "ack") && first
                    || e.ev.starts_with("commit")
                    || e.ev == "error"
                {
                    seen.push(format!("{} {e:?}", m.name));
                }
            }
        }
        s.fail(&format!(
            "records delivered again after their acknowledgement was committed: {redelivered:?}\n{}",
            seen.join("\n")
        ));
    }
    if durable.len() < (total / 2) as usize {
        s.fail(&format!(
            "only {} acknowledgements were committed; deliveries: {d:?}",
            durable.len()
        ));
    }
    for name in ["k1", "k2"] {
        s.stop(name);
    }
    // Every record is accepted, so no partition lags, including those led
    // by a broker other than the group's coordinator (their high
    // watermarks come from their leaders).
    let offsets = share_groups_tool(&s, &libs, &["--describe", "--group", "survivors"]);
    offsets.assert_success();
    let lags: Vec<Option<String>> = table(&offsets.stdout, "GROUP")
        .iter()
        .filter(|r| r.get("TOPIC").map(String::as_str) == Some(topic))
        .map(|r| r.get("LAG").cloned())
        .collect();
    if lags.len() != 3 || lags.iter().any(|l| l.as_deref() != Some("0")) {
        s.fail(&format!(
            "every partition's lag is 0 once every record is accepted:\n{offsets}"
        ));
    }
}

/// What becomes of records a member holds when it goes away without
/// acknowledging them, in two phases on one broker:
/// - **killed** (kill -9): its connection closes, and the broker releases
///   what its share session held at once, as Kafka's disconnect listener
///   does. A member already in a long poll
///   ([`RESCUER_FETCH_MAX_WAIT_MS`]) gets them well before their locks
///   would have expired: the release wakes it.
/// - **hung** (SIGSTOP): its connection stays open, so its records stay
///   locked until `group.share.record.lock.duration.ms`; then a member in a
///   long poll gets them, woken by the expiry, and not before.
///
/// Either way they come back with their delivery count moved on.
#[test]
fn share_records_of_a_dead_member_come_back_at_once_and_of_a_hung_one_when_their_locks_expire() {
    if skipped(
        "share_records_of_a_dead_member_come_back_at_once_and_of_a_hung_one_when_their_locks_expire",
    ) {
        return;
    }
    let _serial = serial();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    let lock = Duration::from_millis(LOCK_MS as u64);
    let mut s = Scene::start_with(&[("group.share.record.lock.duration.ms", LOCK_MS)]);
    let topic = "locks";
    s.create(topic, 1, &[]);
    // Warm up with a member that acknowledges, so the partition's state
    // exists; it stops before the holders start.
    s.share_member(&java, "w", "lockers", topic, &[]);
    s.warm_up_share_group(topic);
    s.stop("w");

    // Killed: the rescuer is in the group, long-polling, when the holder
    // dies.
    let killed = FIRST_SEQ..FIRST_SEQ + HELD_RECORDS;
    hold_records(&mut s, &java, "dead", topic, killed.clone());
    start_rescuer(&mut s, &java, "rescuer-1", topic);
    wait_assigned(&s, &libs, "rescuer-1", topic);
    let killed_at = Instant::now();
    s.kill9("dead");
    let rescued_in = rescue(&mut s, topic, "rescuer-1", killed, killed_at);
    eprintln!("a killed member's records reached the rescuer {rescued_in:?} after the kill");
    if rescued_in >= lock / 2 {
        s.fail(&format!(
            "a killed member's records came back {rescued_in:?} after the kill, as if they \
             waited for their {LOCK_MS} ms locks: its connection's close did not release them"
        ));
    }
    stop_long_polling(
        &mut s,
        &java,
        "rescuer-1",
        topic,
        FIRST_SEQ + 2 * HELD_RECORDS,
    );

    // Hung: the rescuer joins once the holder is stopped.
    let hung = FIRST_SEQ + HELD_RECORDS..FIRST_SEQ + 2 * HELD_RECORDS;
    hold_records(&mut s, &java, "hung", topic, hung.clone());
    let stopped_at = Instant::now();
    s.signal("hung", libc::SIGSTOP);
    start_rescuer(&mut s, &java, "rescuer-2", topic);
    let rescued_in = rescue(&mut s, topic, "rescuer-2", hung, stopped_at);
    eprintln!(
        "a hung member's records reached the rescuer {rescued_in:?} after it stopped (locks: {lock:?})"
    );
    if rescued_in < lock / 2 {
        s.fail(&format!(
            "a hung member's records came back {rescued_in:?} after it stopped, before their \
             locks expired"
        ));
    }
    // Soon after they expired, not once the rescuer's long poll, begun
    // before the expiry, ran out.
    let woken_by = lock + RESCUE_AFTER_EXPIRY_MAX;
    if rescued_in > woken_by {
        s.fail(&format!(
            "a hung member's records came back {rescued_in:?} after it stopped, not within \
             {woken_by:?}: the rescuer's share fetch waited out its \
             {RESCUER_FETCH_MAX_WAIT_MS} ms instead of waking when the locks expired"
        ));
    }
    // The test is over: nothing the members hold matters any more, and a
    // clean close would wait out the rescuer's long poll.
    s.kill9("hung");
    s.kill9("rescuer-2");
}

/// Stops `name`, a member in a long poll, cleanly and without waiting that
/// poll out: its client sends the close (which acknowledges what it got)
/// only once the parked share fetch is answered, so one record (`wake_seq`,
/// outside every range the test checks) is produced after the stop file to
/// answer it. When the woken fetch brought that record after the member's
/// last poll, the close releases it; another member then takes and accepts
/// it, so that it is not the first record of the next phase's holder.
fn stop_long_polling(s: &mut Scene, java: &JavaClasses, name: &str, topic: &str, wake_seq: u64) {
    let i = s.idx(name);
    s.members[i].request_stop();
    s.produce(topic, wake_seq, 1);
    s.stop(name);
    let got = |d: &BTreeMap<u64, Vec<(String, i64)>>, member: &str| {
        d.get(&wake_seq)
            .is_some_and(|v| v.iter().any(|(m, _)| m == member))
    };
    if got(&s.share_deliveries(topic), name) {
        return;
    }
    s.share_member(java, "drain", "lockers", topic, &[]);
    s.wait_deliveries(
        topic,
        Duration::from_secs(30),
        "the released wake-up record delivered to drain",
        |d| got(d, "drain"),
    );
    s.stop("drain");
}

/// The records' lock duration in that test.
const LOCK_MS: i64 = 15_000;
/// The records produced for a holder to take, in each phase.
const HELD_RECORDS: u64 = 20;

/// Starts `name`, which takes records and then sleeps without
/// acknowledging them, and produces `seqs` once it has fetched; returns
/// once it holds some of them.
fn hold_records(
    s: &mut Scene,
    java: &JavaClasses,
    name: &str,
    topic: &str,
    seqs: std::ops::Range<u64>,
) {
    s.share_member(
        java,
        name,
        "lockers",
        topic,
        &["pinlog.explicit=true", "pinlog.sleep.ms=120000"],
    );
    // It must have joined and fetched before the records exist, or it may
    // not be the one that gets them.
    s.wait_event(name, "polled", Duration::from_secs(30));
    s.produce(topic, seqs.start, seqs.end - seqs.start);
    s.wait_deliveries(
        topic,
        Duration::from_secs(30),
        &format!("{name} got records"),
        |d| {
            d.range(seqs.clone())
                .any(|(_, v)| v.iter().any(|(m, _)| m == name))
        },
    );
}

/// Starts a member in a long poll, so that only a wake-up, not its wait
/// running out, brings records to it quickly.
fn start_rescuer(s: &mut Scene, java: &JavaClasses, name: &str, topic: &str) {
    s.share_member(
        java,
        name,
        "lockers",
        topic,
        &[
            &format!("fetch.max.wait.ms={RESCUER_FETCH_MAX_WAIT_MS}"),
            // Above the long poll, so the client waits it out.
            "request.timeout.ms=60000",
        ],
    );
}

/// Waits until kafka-share-groups.sh shows member `client` of "lockers"
/// assigned `topic`: its client then fetches from it.
fn wait_assigned(s: &Scene, libs: &Path, client: &str, topic: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let described =
            share_groups_tool(s, libs, &["--describe", "--members", "--group", "lockers"]);
        let assigned = table(&described.stdout, "GROUP").iter().any(|r| {
            r.get("CLIENT-ID").map(String::as_str) == Some(client)
                && r.get("ASSIGNMENT").is_some_and(|a| a.contains(topic))
        });
        if assigned {
            return;
        }
        if Instant::now() >= deadline {
            s.fail(&format!(
                "{client} was not assigned {topic} within 30 s:\n{described}"
            ));
        }
        std::thread::sleep(POLL_INTERVAL * 3);
    }
}

/// Waits until `rescuer` got every record of `seqs`, checks that those
/// another member held came with delivery count 2, and returns how long
/// after `since` that took.
fn rescue(
    s: &mut Scene,
    topic: &str,
    rescuer: &str,
    seqs: std::ops::Range<u64>,
    since: Instant,
) -> Duration {
    let d = s.wait_deliveries(
        topic,
        Duration::from_secs(60),
        &format!("every record delivered to {rescuer}"),
        |d| {
            seqs.clone().all(|seq| {
                d.get(&seq)
                    .is_some_and(|v| v.iter().any(|(m, _)| m == rescuer))
            })
        },
    );
    let rescued_in = since.elapsed();
    let problems: Vec<String> = d
        .range(seqs)
        .filter(|(_, v)| v.len() > 1)
        .filter(|(_, v)| v.iter().find(|(m, _)| m == rescuer).map(|(_, dc)| *dc) != Some(2))
        .map(|(seq, v)| format!("seq {seq}: {v:?}"))
        .collect();
    if !problems.is_empty() {
        s.fail(&format!(
            "records another member held came back to {rescuer} without their delivery count \
             moved on:\n{}",
            problems.join("\n")
        ));
    }
    rescued_in
}

/// The rescuer's `fetch.max.wait.ms`: a share fetch that finds nothing
/// waits this long unless woken (pinlog caps it at 30 s).
const RESCUER_FETCH_MAX_WAIT_MS: u64 = 29_000;
/// How long after their locks expire the held records may take to reach
/// the rescuer: the expiry tick, the state write, the client's delivery
/// and the harness's polling, far below the long poll's remaining wait.
const RESCUE_AFTER_EXPIRY_MAX: Duration = Duration::from_secs(9);

/// Kafka's ConfigCommand (kafka-configs.sh) on a group.
fn group_configs_tool(s: &Scene, libs: &Path, group: &str, args: &[&str]) -> CmdOutput {
    let mut cmd = Command::new("java");
    cmd.args(["-cp", &format!("{}/*", libs.display())])
        .arg("org.apache.kafka.tools.ConfigCommand")
        .args(["--bootstrap-server", &s.bootstrap()])
        .args(["--entity-type", "groups", "--entity-name", group])
        .args(args);
    run_command(&mut cmd, None, STEP_TIMEOUT)
}

/// The values of every record `member` was delivered, in order.
fn delivered_values(s: &Scene, member: &str) -> Vec<String> {
    s.members[s.idx(member)]
        .events()
        .iter()
        .filter(|e| e.ev == "rec")
        .filter_map(|e| e.get("v").map(str::to_string))
        .collect()
}

/// Group configs through kafka-configs.sh: a share group set to
/// `share.auto.offset.reset=earliest` reads records produced before it
/// first came, and one also set to `share.isolation.level=read_committed`
/// gets exactly the committed records of transactions, never an aborted
/// one, while a read_uncommitted group gets them all. A bad value is
/// refused with Kafka's message, and --describe shows what was set.
#[test]
fn share_group_configs_reset_earliest_and_read_committed() {
    if skipped("share_group_configs_reset_earliest_and_read_committed") {
        return;
    }
    let _shared = shared();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    require_python_clients();
    let mut s = Scene::start();
    // Two partitions: 10 records committed, 10 aborted, 10 committed.
    let out = run_command(
        Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/clients/txn_check.py"
            ))
            .args(["confluent", &s.bootstrap(), "sharetx"]),
        None,
        STEP_TIMEOUT,
    );
    if !out.success() {
        s.fail(&format!("the transactional producer failed:\n{out}"));
    }
    let topic = "sharetx-out";
    let refused = group_configs_tool(
        &s,
        &libs,
        "committed",
        &["--alter", "--add-config", "share.isolation.level=dirty"],
    );
    if refused.success() || !format!("{refused}").contains("read_committed") {
        s.fail(&format!(
            "a bad isolation level was not refused as it should be:\n{refused}"
        ));
    }
    for (group, isolation) in [
        ("committed", "read_committed"),
        ("everything", "read_uncommitted"),
    ] {
        let set = group_configs_tool(
            &s,
            &libs,
            group,
            &[
                "--alter",
                "--add-config",
                &format!("share.auto.offset.reset=earliest,share.isolation.level={isolation}"),
            ],
        );
        if !set.success() {
            s.fail(&format!(
                "kafka-configs.sh --alter on group {group} failed:\n{set}"
            ));
        }
    }
    let described = group_configs_tool(&s, &libs, "committed", &["--describe"]);
    let text = described.stdout.clone();
    if !described.success()
        || !text.contains("share.auto.offset.reset=earliest")
        || !text.contains("share.isolation.level=read_committed")
        // Kafka's synonym of a group config: itself, set by the group.
        || !text.contains("synonyms={DYNAMIC_GROUP_CONFIG:share.isolation.level=read_committed}")
    {
        s.fail(&format!(
            "kafka-configs.sh --describe does not show the group's configs:\n{described}"
        ));
    }
    s.share_member(&java, "rc", "committed", topic, &[]);
    s.share_member(&java, "ru", "everything", topic, &[]);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (rc, ru) = (delivered_values(&s, "rc"), delivered_values(&s, "ru"));
        if rc.len() >= 20 && ru.len() >= 30 {
            break;
        }
        if Instant::now() >= deadline {
            s.fail(&format!(
                "the share groups did not read the records from the start within 60 s: \
                 read_committed got {rc:?}, read_uncommitted got {ru:?}"
            ));
        }
        std::thread::sleep(POLL_INTERVAL);
    }
    // Nothing more to come: each member polled empty after its last record
    // (the broker had nothing left to hand it), so what it got is all.
    let drained = |name: &str| {
        let events = s.members[s.idx(name)].events();
        let last_rec = events.iter().rposition(|e| e.ev == "rec");
        events
            .iter()
            .enumerate()
            .any(|(i, e)| e.ev == "polled" && e.int("n") == Some(0) && Some(i) > last_rec)
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(drained("rc") && drained("ru")) {
        if Instant::now() >= deadline {
            s.fail("the share group members did not poll empty within 30 s after their records");
        }
        std::thread::sleep(POLL_INTERVAL);
    }
    let mut rc = delivered_values(&s, "rc");
    rc.sort();
    let mut want: Vec<String> = (0..10)
        .flat_map(|i| [format!("committed-1-{i}"), format!("committed-2-{i}")])
        .collect();
    want.sort();
    if rc != want {
        s.fail(&format!(
            "read_committed share group: expected the 20 committed records once each, got {rc:?}"
        ));
    }
    let ru = delivered_values(&s, "ru");
    if ru.len() != 30 || ru.iter().filter(|v| v.starts_with("aborted-")).count() != 10 {
        s.fail(&format!(
            "read_uncommitted share group: expected all 30 records once each, got {ru:?}"
        ));
    }
    let removed = group_configs_tool(
        &s,
        &libs,
        "committed",
        &["--alter", "--delete-config", "share.isolation.level"],
    );
    let after = group_configs_tool(&s, &libs, "committed", &["--describe"]);
    if !removed.success() || after.stdout.contains("share.isolation.level") {
        s.fail(&format!(
            "--delete-config did not remove the config:\n{removed}\n{after}"
        ));
    }
    for name in ["rc", "ru"] {
        s.stop(name);
    }
}
