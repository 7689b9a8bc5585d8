//! KIP-848's consumer group protocol (ConsumerGroupHeartbeat) with real
//! clients on one broker: Kafka's Java client and confluent-kafka
//! (librdkafka) with `group.protocol=consumer`, and `kafka-consumer-groups`.
//!
//! The broker runs with short consumer-group timeouts
//! (`group.consumer.session.timeout.ms` [`CONSUMER_SESSION_MS`], heartbeat
//! interval [`CONSUMER_HEARTBEAT_MS`]): under this protocol the session
//! lives on the broker, and the clients refuse to be told one (COMPAT.md's
//! trap 9: a killed member holds its partitions for the broker's session).
//!
//! What is checked:
//! - three Java members share a topic (each partition owned once, every
//!   record consumed, the auto-commits reach the broker); one leaves
//!   cleanly and one is killed, and the last one takes over every
//!   partition (for the killed one, after its closed connection's
//!   heartbeat interval and grace, before its session would expire);
//! - `kafka-consumer-groups` lists the group with its type "Consumer",
//!   describes its members and their assignments, and resets the offsets
//!   of the group once it is empty;
//! - the range and uniform assignors (`group.remote.assignor`);
//! - a static member (`group.instance.id`) closed and restarted within its
//!   session keeps its partitions, and the other member is not disturbed;
//! - a broker-side regular expression (SubscriptionPattern) picks up a
//!   topic created after the member joined;
//! - confluent-kafka with `group.protocol=consumer` alongside a Java member.

use super::*;

/// `group.consumer.session.timeout.ms` of the test broker.
const CONSUMER_SESSION_MS: i64 = 6000;
/// `group.consumer.heartbeat.interval.ms` of the test broker.
const CONSUMER_HEARTBEAT_MS: i64 = 500;
/// `group.consumer.disconnect.grace.ms`: pinlog's default.
const DISCONNECT_GRACE_MS: i64 = 2000;

/// A broker whose consumer groups time out quickly.
fn consumer_scene() -> Scene {
    Scene::start_with(&[
        ("group.consumer.min.session.timeout.ms", CONSUMER_SESSION_MS),
        ("group.consumer.session.timeout.ms", CONSUMER_SESSION_MS),
        (
            "group.consumer.min.heartbeat.interval.ms",
            CONSUMER_HEARTBEAT_MS,
        ),
        (
            "group.consumer.heartbeat.interval.ms",
            CONSUMER_HEARTBEAT_MS,
        ),
    ])
}

impl Scene {
    /// Starts a Java member with `group.protocol=consumer` (and none of the
    /// classic timeouts, which that protocol refuses); `props` are more
    /// consumer settings. Returns its index.
    fn java_consumer_member(
        &mut self,
        java: &JavaClasses,
        name: &str,
        group: &str,
        topic: &str,
        props: &[&str],
    ) -> usize {
        let protocol = ["group.protocol=consumer".to_string()];
        self.java_member_with(java, name, group, topic, &protocol, props)
    }

    /// The `tps` (topic:partition) of the last assignment `name` reported.
    fn topic_assignment(&self, name: &str) -> BTreeSet<String> {
        self.members[self.idx(name)]
            .events()
            .iter()
            .rev()
            .find(|e| e.ev == "assignment")
            .and_then(|e| e.get("tps"))
            .map(|v| {
                v.split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Three Java members of one consumer group share a topic, a clean leave
/// and a kill -9 hand their partitions to the last one, everything is
/// consumed and committed; kafka-consumer-groups lists, describes and then
/// resets the group.
#[test]
fn kip848_java_members_share_leave_crash_and_the_tool_sees_them() {
    if skipped("kip848_java_members_share_leave_crash_and_the_tool_sees_them") {
        return;
    }
    let _serial = serial();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    let mut s = consumer_scene();
    let (topic, group) = ("kip848", "g-kip848");
    s.create(topic, PARTITIONS, &[]);
    let mut delivered = s.produce(topic, 0, 600);
    for name in ["j1", "j2", "j3"] {
        s.java_consumer_member(&java, name, group, topic, &[]);
    }
    s.wait_converged(&["j1", "j2", "j3"], PARTITIONS, CONVERGE_TIMEOUT);
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);

    // The tool sees a consumer group with three members.
    let list = consumer_groups_tool(&s, &libs, &["--list", "--type"]);
    let row = list
        .stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(group))
        .unwrap_or_else(|| s.fail(&format!("--list --type does not show {group}:\n{list}")));
    if !row.contains("Consumer") {
        s.fail(&format!(
            "--list --type: {group} is not of type Consumer:\n{list}"
        ));
    }
    let members = consumer_groups_tool(&s, &libs, &["--describe", "--group", group, "--members"]);
    for name in ["j1", "j2", "j3"] {
        if !members.stdout.contains(name) {
            s.fail(&format!(
                "--describe --members does not show {name}:\n{members}"
            ));
        }
    }
    let state = consumer_groups_tool(&s, &libs, &["--describe", "--group", group, "--state"]);
    if !state.stdout.contains("Stable") {
        s.fail(&format!(
            "--describe --state: the group is not Stable:\n{state}"
        ));
    }

    // A clean leave: the two others take its partitions.
    s.stop("j3");
    s.wait_converged(&["j1", "j2"], PARTITIONS, CONVERGE_TIMEOUT);
    // A crash: the killed process's connections close, and the last
    // member gets everything once the killed one's heartbeat interval and
    // group.consumer.disconnect.grace.ms have passed without a heartbeat
    // on another connection: sooner than its session would have expired
    // (at least the session timeout less one heartbeat interval after
    // the kill), and not at the close itself.
    let killed = Instant::now();
    s.kill9("j2");
    s.wait_converged(&["j1"], PARTITIONS, CONVERGE_TIMEOUT);
    let took = killed.elapsed();
    let disconnect_deadline =
        Duration::from_millis((CONSUMER_HEARTBEAT_MS + DISCONNECT_GRACE_MS) as u64);
    let session_floor = Duration::from_millis((CONSUMER_SESSION_MS - CONSUMER_HEARTBEAT_MS) as u64);
    if took < disconnect_deadline - Duration::from_millis(200) || took >= session_floor {
        s.fail(&format!(
            "the killed member's partitions moved after {took:?}: expected after about {disconnect_deadline:?} (its closed connection's grace), before {session_floor:?} (the earliest its session could expire)"
        ));
    }
    let more = s.produce(topic, 600, 300);
    delivered.extend(more);
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);

    // Its auto-commits reach the end offsets (OffsetCommit with the member
    // epoch), as another client reads them back.
    let (_, ends) = s.offsets(topic);
    s.wait_committed_at(group, topic, &ends, CONVERGE_TIMEOUT, "");
    s.stop("j1");

    // Empty now: the tool resets its offsets, as for a classic group.
    let reset = consumer_groups_tool(
        &s,
        &libs,
        &[
            "--reset-offsets",
            "--group",
            group,
            "--topic",
            topic,
            "--to-earliest",
            "--execute",
        ],
    );
    let committed = s.committed(Lib::Ck, group, topic);
    if committed.values().any(|o| *o != Some(0)) {
        s.fail(&format!(
            "after --reset-offsets --to-earliest the group committed {committed:?}:\n{reset}"
        ));
    }
}

/// `group.remote.assignor=range` gives two members contiguous halves of a
/// topic; `uniform` (the default) also shares it evenly.
#[test]
fn kip848_range_and_uniform_assignors() {
    if skipped("kip848_range_and_uniform_assignors") {
        return;
    }
    let _shared = shared();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    let mut s = consumer_scene();
    s.create("assign", PARTITIONS, &[]);
    for name in ["r1", "r2"] {
        s.java_consumer_member(
            &java,
            name,
            "g-range",
            "assign",
            &["group.remote.assignor=range"],
        );
    }
    let (range, _) = s.wait_converged(&["r1", "r2"], PARTITIONS, CONVERGE_TIMEOUT);
    let mut halves: Vec<Vec<i32>> = range.values().cloned().collect();
    halves.sort();
    if halves != vec![vec![0, 1, 2], vec![3, 4, 5]] {
        s.fail(&format!("range did not give contiguous halves: {range:?}"));
    }
    for name in ["u1", "u2"] {
        s.java_consumer_member(
            &java,
            name,
            "g-uniform",
            "assign",
            &["group.remote.assignor=uniform"],
        );
    }
    let (uniform, _) = s.wait_converged(&["u1", "u2"], PARTITIONS, CONVERGE_TIMEOUT);
    if uniform.values().any(|a| a.len() != 3) {
        s.fail(&format!("uniform did not share 3 and 3: {uniform:?}"));
    }
    let described = consumer_groups_tool(
        &s,
        &libs,
        &["--describe", "--group", "g-range", "--state", "--verbose"],
    );
    if !described.stdout.contains("range") {
        s.fail(&format!(
            "--describe --state --verbose does not name the range assignor:\n{described}"
        ));
    }
}

/// A static member closed and restarted within its session keeps its
/// partitions, and the other member's assignment does not move.
#[test]
fn kip848_static_member_restarts_with_its_partitions() {
    if skipped("kip848_static_member_restarts_with_its_partitions") {
        return;
    }
    let _serial = serial();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    let mut s = consumer_scene();
    s.create("static", PARTITIONS, &[]);
    s.java_consumer_member(&java, "s1", "g-static", "static", &["group.instance.id=i1"]);
    s.java_consumer_member(&java, "s2", "g-static", "static", &["group.instance.id=i2"]);
    let (before, _) = s.wait_converged(&["s1", "s2"], PARTITIONS, CONVERGE_TIMEOUT);
    let mark = s.mark();
    s.stop("s1");
    // Back under the same instance id, well within the session timeout.
    s.java_consumer_member(
        &java,
        "s1b",
        "g-static",
        "static",
        &["group.instance.id=i1"],
    );
    let (mut after, _) = s.wait_converged(&["s1b", "s2"], PARTITIONS, CONVERGE_TIMEOUT);
    let back = after.remove("s1b").unwrap_or_default();
    after.insert("s1".to_string(), back);
    if after != before {
        s.fail(&format!(
            "the static member came back to {after:?}, not its old place {before:?}"
        ));
    }
    let moved: Vec<Event> = s
        .events_since("s2", &mark)
        .into_iter()
        .filter(|e| matches!(e.ev.as_str(), "assigned" | "revoked" | "lost"))
        .filter(|e| e.parts("parts").is_some_and(|p| !p.is_empty()))
        .collect();
    if !moved.is_empty() {
        s.fail(&format!(
            "the other member's partitions moved while the static member restarted: {moved:?}"
        ));
    }
}

/// A broker-side regular expression picks up a topic created after the
/// member joined.
#[test]
fn kip848_regex_subscription_picks_up_a_new_topic() {
    if skipped("kip848_regex_subscription_picks_up_a_new_topic") {
        return;
    }
    let _shared = shared();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    let mut s = consumer_scene();
    s.create("rx-a", 2, &[]);
    s.create("other", 2, &[]);
    s.java_consumer_member(&java, "x1", "g-regex", "unused", &["pinlog.pattern=rx-.*"]);
    let want_a: BTreeSet<String> = ["rx-a:0", "rx-a:1"].iter().map(|s| s.to_string()).collect();
    let ok = support::wait_for(CONVERGE_TIMEOUT, || s.topic_assignment("x1") == want_a);
    if !ok {
        let described = consumer_groups_tool(
            &s,
            &libs,
            &["--describe", "--group", "g-regex", "--members", "--verbose"],
        );
        s.fail(&format!(
            "the regex member holds {:?}, not {want_a:?}; the group:\n{described}",
            s.topic_assignment("x1")
        ));
    }
    s.create("rx-b", 3, &[]);
    let mut want = want_a.clone();
    want.extend(["rx-b:0", "rx-b:1", "rx-b:2"].iter().map(|s| s.to_string()));
    let ok = support::wait_for(CONVERGE_TIMEOUT, || s.topic_assignment("x1") == want);
    if !ok {
        s.fail(&format!(
            "after rx-b was created the regex member holds {:?}, not {want:?}",
            s.topic_assignment("x1")
        ));
    }
    let delivered = s.produce("rx-b", 0, 100);
    s.wait_consumed("rx-b", &delivered, CONSUME_TIMEOUT);
}

/// confluent-kafka with `group.protocol=consumer` shares a topic with a
/// Java member of the same consumer group and consumes its share.
#[test]
fn kip848_confluent_kafka_and_java_share_a_group() {
    if skipped("kip848_confluent_kafka_and_java_share_a_group") {
        return;
    }
    let _shared = shared();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    let mut s = consumer_scene();
    let topic = "kip848-ck";
    s.create(topic, PARTITIONS, &[]);
    let delivered = s.produce(topic, 0, 600);
    s.member(
        "c1",
        Lib::Ck,
        "g-ck",
        topic,
        &["--group-protocol", "consumer"],
    );
    s.java_consumer_member(&java, "j1", "g-ck", topic, &[]);
    s.wait_converged(&["c1", "j1"], PARTITIONS, CONVERGE_TIMEOUT);
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    s.stop("c1");
    s.wait_converged(&["j1"], PARTITIONS, CONVERGE_TIMEOUT);
    s.stop("j1");
}

/// A three-node cluster: the group's coordinator is killed; the new one
/// rebuilds the group from its records in `__consumer_offsets`, and the
/// members keep their partitions (no member epoch moves, no partition is
/// revoked) and keep consuming.
#[test]
fn kip848_coordinator_failover_keeps_the_assignment() {
    if skipped("kip848_coordinator_failover_keeps_the_assignment") {
        return;
    }
    let _serial = serial();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    require_python_clients();
    let opts = BrokerOpts::new()
        .setting("group.consumer.min.session.timeout.ms", CONSUMER_SESSION_MS)
        .setting("group.consumer.session.timeout.ms", CONSUMER_SESSION_MS)
        .setting(
            "group.consumer.min.heartbeat.interval.ms",
            CONSUMER_HEARTBEAT_MS,
        )
        .setting(
            "group.consumer.heartbeat.interval.ms",
            CONSUMER_HEARTBEAT_MS,
        )
        .setting("offsets.topic.num.partitions", 3);
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
    let (topic, group) = ("failover", "g-failover");
    s.create(topic, PARTITIONS, &["--replication-factor", "3"]);
    let mut delivered = s.produce(topic, 0, 300);
    for name in ["f1", "f2"] {
        s.java_consumer_member(&java, name, group, topic, &[]);
    }
    let (before, _) = s.wait_converged(&["f1", "f2"], PARTITIONS, CONVERGE_TIMEOUT);
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    let epochs: Vec<Option<i64>> = ["f1", "f2"].iter().map(|n| s.generation(n)).collect();

    let id = coordinator(&s, &libs, group);
    let mark = s.mark();
    match id {
        1 => s.broker.kill9(),
        n => s.others[n - 2].kill9(),
    }

    // The members go on consuming from the new coordinator's group.
    let more = s.produce(topic, 300, 300);
    delivered.extend(more);
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    let (after, _) = s.wait_converged(&["f1", "f2"], PARTITIONS, CONVERGE_TIMEOUT);
    if after != before {
        s.fail(&format!(
            "the assignment moved across the coordinator failover: {before:?} -> {after:?}"
        ));
    }
    let now: Vec<Option<i64>> = ["f1", "f2"].iter().map(|n| s.generation(n)).collect();
    if now != epochs {
        s.fail(&format!(
            "member epochs moved across the failover: {epochs:?} -> {now:?}"
        ));
    }
    for name in ["f1", "f2"] {
        let moved: Vec<Event> = s
            .events_since(name, &mark)
            .into_iter()
            .filter(|e| matches!(e.ev.as_str(), "revoked" | "lost"))
            .filter(|e| e.parts("parts").is_some_and(|p| !p.is_empty()))
            .collect();
        if !moved.is_empty() {
            s.fail(&format!(
                "{name} gave partitions up across the failover: {moved:?}"
            ));
        }
    }
    let now_at = coordinator(&s, &libs, group);
    if now_at == id {
        s.fail(&format!(
            "node {id} was killed but still coordinates {group}"
        ));
    }
    // The rebuilt group is still the tool's, with both members.
    let members = consumer_groups_tool(&s, &libs, &["--describe", "--group", group, "--members"]);
    for name in ["f1", "f2"] {
        if !members.stdout.contains(name) {
            s.fail(&format!(
                "after the failover --members does not show {name}:\n{members}"
            ));
        }
    }
    s.stop("f1");
    s.stop("f2");
}

/// The node that coordinates `group`, as `--describe --state` names it
/// (`host:port  (id)`).
fn coordinator(s: &Scene, libs: &Path, group: &str) -> usize {
    let state = consumer_groups_tool(s, libs, &["--describe", "--group", group, "--state"]);
    state
        .stdout
        .lines()
        .find_map(|l| {
            let open = l.find('(')?;
            let close = l[open..].find(')')? + open;
            l[open + 1..close].trim().parse().ok()
        })
        .unwrap_or_else(|| s.fail(&format!("no coordinator id in\n{state}")))
}

/// Kafka's answers where the two protocols meet, and the member checks of
/// offset commits and fetches, with exact requests: a classic JoinGroup of
/// another protocol type on a consumer group with members is
/// INCONSISTENT_GROUP_PROTOCOL, a consumer's is taken in (MEMBER_ID_REQUIRED
/// first); a ConsumerGroupHeartbeat on a classic group whose member's
/// subscription is not the consumer protocol cannot upgrade it:
/// GROUP_ID_NOT_FOUND; each Describe API calls the other type's group not
/// found; OffsetCommit and OffsetFetch want the member's current epoch
/// (STALE_MEMBER_EPOCH) from a known member (UNKNOWN_MEMBER_ID).
#[test]
fn kip848_protocol_boundaries_and_member_epochs_on_offsets() {
    use pinlog::protocol::api::ApiKey;
    use pinlog::protocol::error_code::*;
    use pinlog::protocol::messages::*;
    use support::kafka_conn::Conn;
    if skipped("kip848_protocol_boundaries_and_member_epochs_on_offsets") {
        return;
    }
    let _serial = serial();
    let s = consumer_scene();
    s.create("edges", 2, &[]);
    let addr: std::net::SocketAddr = s.broker.bootstrap().parse().expect("an address");
    let mut c = Conn::open(addr, "pinlog-kip848-test", STEP_TIMEOUT).expect("connect");
    // FindCoordinator creates __consumer_offsets; a group's first requests
    // may meet its load.
    let retrying = |c: &mut Conn, call: &dyn Fn(&mut Conn) -> i16| -> i16 {
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let code = call(c);
            let transient = [
                COORDINATOR_NOT_AVAILABLE,
                COORDINATOR_LOAD_IN_PROGRESS,
                NOT_COORDINATOR,
            ];
            if !transient.contains(&code) || Instant::now() >= deadline {
                return code;
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    };
    let heartbeat =
        |c: &mut Conn, req: &consumer_group_heartbeat::ConsumerGroupHeartbeatRequest| {
            let mut r = c.call(ApiKey::ConsumerGroupHeartbeat, 1, |w| req.encode(w, 1));
            consumer_group_heartbeat::ConsumerGroupHeartbeatResponse::decode(&mut r, 1)
                .expect("decode ConsumerGroupHeartbeat")
        };
    let join = consumer_group_heartbeat::ConsumerGroupHeartbeatRequest {
        group_id: "g-edges".into(),
        member_id: "edge-member-0000000000001".into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["edges".into()]),
        topic_partitions: Some(Vec::new()),
        ..Default::default()
    };
    // As every client does first: FindCoordinator (it creates the offsets
    // topic).
    let find = find_coordinator::FindCoordinatorRequest {
        key: "g-edges".into(),
        key_type: 0,
        coordinator_keys: Vec::new(),
    };
    let mut r = c.call(ApiKey::FindCoordinator, 3, |w| find.encode(w, 3));
    find_coordinator::FindCoordinatorResponse::decode(&mut r, 3).expect("decode FindCoordinator");
    let code = retrying(&mut c, &|c| heartbeat(c, &join).error_code);
    assert_eq!(code, NONE, "a KIP-848 join");
    let joined = heartbeat(
        &mut c,
        &consumer_group_heartbeat::ConsumerGroupHeartbeatRequest {
            member_epoch: 0,
            ..join.clone()
        },
    );
    assert_eq!(joined.error_code, NONE);
    let epoch = joined.member_epoch;
    assert!(epoch >= 1, "{joined:?}");

    // A classic member of another protocol type may not join it; a
    // consumer's classic join is taken in (the online migration), starting
    // with KIP-394's member id.
    let classic_join = join_group::JoinGroupRequest {
        group_id: "g-edges".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        protocol_type: "consumer".into(),
        protocols: vec![join_group::JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: bytes::Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 0]),
        }],
        ..Default::default()
    };
    let other_type = join_group::JoinGroupRequest {
        protocol_type: "connect".into(),
        ..classic_join.clone()
    };
    let mut r = c.call(ApiKey::JoinGroup, 5, |w| other_type.encode(w, 5));
    let resp = join_group::JoinGroupResponse::decode(&mut r, 5).expect("decode JoinGroup");
    assert_eq!(resp.error_code, INCONSISTENT_GROUP_PROTOCOL, "{resp:?}");
    let mut r = c.call(ApiKey::JoinGroup, 5, |w| classic_join.encode(w, 5));
    let resp = join_group::JoinGroupResponse::decode(&mut r, 5).expect("decode JoinGroup");
    assert_eq!(resp.error_code, MEMBER_ID_REQUIRED, "{resp:?}");
    assert!(!resp.member_id.is_empty(), "{resp:?}");

    // DescribeGroups v6 does not know it; ConsumerGroupDescribe does.
    let req = describe_groups::DescribeGroupsRequest {
        groups: vec!["g-edges".into()],
        include_authorized_operations: false,
    };
    let mut r = c.call(ApiKey::DescribeGroups, 6, |w| req.encode(w, 6));
    let resp = describe_groups::DescribeGroupsResponse::decode(&mut r, 6).expect("decode");
    assert_eq!(resp.groups[0].error_code, GROUP_ID_NOT_FOUND, "{resp:?}");
    let req = consumer_group_describe::ConsumerGroupDescribeRequest {
        group_ids: vec!["g-edges".into(), "no-such-group".into()],
        include_authorized_operations: false,
    };
    let mut r = c.call(ApiKey::ConsumerGroupDescribe, 1, |w| req.encode(w, 1));
    let resp =
        consumer_group_describe::ConsumerGroupDescribeResponse::decode(&mut r, 1).expect("decode");
    let g = &resp.groups[0];
    assert_eq!(g.error_code, NONE, "{resp:?}");
    assert_eq!(g.members.len(), 1);
    assert_eq!(g.members[0].member_epoch, epoch);
    assert_eq!(g.members[0].member_type, 1, "a consumer-protocol member");
    assert_eq!(resp.groups[1].error_code, GROUP_ID_NOT_FOUND);

    // Commits and fetches with the member's epoch.
    let commit_partitions = |c: &mut Conn, member: &str, epoch: i32, ps: &[i32]| -> Vec<i16> {
        let req = offset_commit::OffsetCommitRequest {
            group_id: "g-edges".into(),
            generation_id_or_member_epoch: epoch,
            member_id: member.into(),
            topics: vec![offset_commit::OffsetCommitRequestTopic {
                name: "edges".into(),
                topic_id: [0; 16],
                partitions: ps
                    .iter()
                    .map(|p| offset_commit::OffsetCommitRequestPartition {
                        partition_index: *p,
                        committed_offset: 0,
                        ..Default::default()
                    })
                    .collect(),
            }],
            ..Default::default()
        };
        let mut r = c.call(ApiKey::OffsetCommit, 9, |w| req.encode(w, 9));
        let resp = offset_commit::OffsetCommitResponse::decode(&mut r, 9).expect("decode");
        resp.topics[0]
            .partitions
            .iter()
            .map(|p| p.error_code)
            .collect()
    };
    let commit = |c: &mut Conn, member: &str, epoch: i32| -> i16 {
        commit_partitions(c, member, epoch, &[0])[0]
    };
    let member = join.member_id.as_str();
    assert_eq!(commit(&mut c, member, epoch), NONE);
    assert_eq!(commit(&mut c, member, epoch + 1), STALE_MEMBER_EPOCH);
    assert_eq!(commit(&mut c, "someone-else", epoch), UNKNOWN_MEMBER_ID);
    assert_eq!(
        commit(&mut c, "", -1),
        UNKNOWN_MEMBER_ID,
        "an admin's commit to a live group"
    );
    let fetch = |c: &mut Conn, member: Option<&str>, epoch: i32| -> i16 {
        let req = offset_fetch::OffsetFetchRequest {
            groups: vec![offset_fetch::OffsetFetchRequestGroup {
                group_id: "g-edges".into(),
                member_id: member.map(str::to_string),
                member_epoch: epoch,
                topics: None,
            }],
            ..Default::default()
        };
        let mut r = c.call(ApiKey::OffsetFetch, 9, |w| req.encode(w, 9));
        let resp = offset_fetch::OffsetFetchResponse::decode(&mut r, 9).expect("decode");
        resp.groups[0].error_code
    };
    assert_eq!(fetch(&mut c, Some(member), epoch), NONE);
    assert_eq!(fetch(&mut c, Some(member), epoch - 1), STALE_MEMBER_EPOCH);
    assert_eq!(
        fetch(&mut c, Some("someone-else"), epoch),
        UNKNOWN_MEMBER_ID
    );
    assert_eq!(fetch(&mut c, None, -1), NONE, "an admin's fetch");

    // Kafka 4.4's assignment epochs (KIP-1251): a second member joins, the
    // first gives up one partition and moves to the new epoch, keeping the
    // other, which it was given at the old epoch. A commit still in flight
    // with the old epoch is the owner's commit for the kept partition, and
    // is refused for the partition it gave up (the whole request, as Kafka
    // refuses it).
    let second = "edge-member-0000000000002";
    let joined_second = heartbeat(
        &mut c,
        &consumer_group_heartbeat::ConsumerGroupHeartbeatRequest {
            member_id: second.into(),
            ..join.clone()
        },
    );
    assert_eq!(joined_second.error_code, NONE, "{joined_second:?}");
    let topic_id = g.members[0].assignment[0].topic_id;
    let owned = |ps: Vec<i32>| {
        Some(vec![consumer_group_heartbeat::TopicPartitions {
            topic_id,
            partitions: ps,
        }])
    };
    let revoking = heartbeat(
        &mut c,
        &consumer_group_heartbeat::ConsumerGroupHeartbeatRequest {
            member_id: member.into(),
            group_id: "g-edges".into(),
            member_epoch: epoch,
            topic_partitions: owned(vec![0, 1]),
            ..Default::default()
        },
    );
    assert_eq!(revoking.error_code, NONE, "{revoking:?}");
    let kept: Vec<i32> = revoking.assignment.expect("a revocation")[0]
        .partitions
        .clone();
    assert_eq!(kept.len(), 1, "one partition each");
    let (kept, given_up) = (kept[0], 1 - kept[0]);
    let moved = heartbeat(
        &mut c,
        &consumer_group_heartbeat::ConsumerGroupHeartbeatRequest {
            member_id: member.into(),
            group_id: "g-edges".into(),
            member_epoch: revoking.member_epoch,
            topic_partitions: owned(vec![kept]),
            ..Default::default()
        },
    );
    assert_eq!(moved.error_code, NONE, "{moved:?}");
    assert!(moved.member_epoch > epoch, "{moved:?}");
    assert_eq!(
        commit_partitions(&mut c, member, epoch, &[kept]),
        vec![NONE],
        "the kept partition was given at the old epoch"
    );
    assert_eq!(
        commit_partitions(&mut c, member, epoch, &[kept, given_up]),
        vec![STALE_MEMBER_EPOCH; 2],
        "the partition given up is no longer the member's"
    );
    assert_eq!(
        commit_partitions(&mut c, member, moved.member_epoch + 1, &[kept]),
        vec![STALE_MEMBER_EPOCH]
    );
    // v10 names topics by id (Kafka 4.1+), as Kafka's own consumer does
    // once every topic it commits has an id; an unknown id is answered
    // UNKNOWN_TOPIC_ID on its own partitions only.
    let by_id = offset_commit::OffsetCommitRequest {
        group_id: "g-edges".into(),
        generation_id_or_member_epoch: moved.member_epoch,
        member_id: member.into(),
        topics: [topic_id, [0xee; 16]]
            .into_iter()
            .map(|id| offset_commit::OffsetCommitRequestTopic {
                topic_id: id,
                partitions: vec![offset_commit::OffsetCommitRequestPartition {
                    partition_index: kept,
                    committed_offset: 17,
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let mut r = c.call(ApiKey::OffsetCommit, 10, |w| by_id.encode(w, 10));
    let resp = offset_commit::OffsetCommitResponse::decode(&mut r, 10).expect("decode");
    let codes: Vec<([u8; 16], i16)> = resp
        .topics
        .iter()
        .map(|t| (t.topic_id, t.partitions[0].error_code))
        .collect();
    assert_eq!(
        codes,
        vec![(topic_id, NONE), ([0xee; 16], UNKNOWN_TOPIC_ID)],
        "{resp:?}"
    );
    let fetch_by_id = offset_fetch::OffsetFetchRequest {
        groups: vec![offset_fetch::OffsetFetchRequestGroup {
            group_id: "g-edges".into(),
            member_id: Some(member.into()),
            member_epoch: moved.member_epoch,
            topics: Some(
                [topic_id, [0xee; 16]]
                    .into_iter()
                    .map(|id| offset_fetch::OffsetFetchRequestTopic {
                        topic_id: id,
                        partition_indexes: vec![kept],
                        ..Default::default()
                    })
                    .collect(),
            ),
        }],
        ..Default::default()
    };
    let mut r = c.call(ApiKey::OffsetFetch, 10, |w| fetch_by_id.encode(w, 10));
    let resp = offset_fetch::OffsetFetchResponse::decode(&mut r, 10).expect("decode");
    let got: Vec<([u8; 16], i64, i16)> = resp.groups[0]
        .topics
        .iter()
        .map(|t| {
            let p = &t.partitions[0];
            (t.topic_id, p.committed_offset, p.error_code)
        })
        .collect();
    assert_eq!(
        got,
        vec![(topic_id, 17, NONE), ([0xee; 16], -1, UNKNOWN_TOPIC_ID)],
        "{resp:?}"
    );
    let all_by_id = offset_fetch::OffsetFetchRequest {
        groups: vec![offset_fetch::OffsetFetchRequestGroup {
            group_id: "g-edges".into(),
            topics: None,
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut r = c.call(ApiKey::OffsetFetch, 10, |w| all_by_id.encode(w, 10));
    let resp = offset_fetch::OffsetFetchResponse::decode(&mut r, 10).expect("decode");
    assert!(
        resp.groups[0]
            .topics
            .iter()
            .all(|t| t.topic_id == topic_id && t.name.is_empty()),
        "{resp:?}"
    );

    let fetched_second = heartbeat(
        &mut c,
        &consumer_group_heartbeat::ConsumerGroupHeartbeatRequest {
            member_id: second.into(),
            group_id: "g-edges".into(),
            member_epoch: joined_second.member_epoch,
            topic_partitions: owned(Vec::new()),
            ..Default::default()
        },
    );
    assert_eq!(fetched_second.error_code, NONE, "{fetched_second:?}");
    let left_second = heartbeat(
        &mut c,
        &consumer_group_heartbeat::ConsumerGroupHeartbeatRequest {
            group_id: "g-edges".into(),
            member_id: second.into(),
            member_epoch: -1,
            ..Default::default()
        },
    );
    assert_eq!(left_second.error_code, NONE, "{left_second:?}");

    // A classic group with a member whose metadata is no consumer-protocol
    // subscription: a KIP-848 join cannot upgrade it, GROUP_ID_NOT_FOUND.
    let classic = join_group::JoinGroupRequest {
        group_id: "g-classic".into(),
        ..classic_join.clone()
    };
    let code = retrying(&mut c, &|c| {
        let mut r = c.call(ApiKey::JoinGroup, 3, |w| classic.encode(w, 3));
        join_group::JoinGroupResponse::decode(&mut r, 3)
            .expect("decode JoinGroup")
            .error_code
    });
    assert_eq!(
        code, NONE,
        "a classic member joins (v3: no member id round)"
    );
    let resp = heartbeat(
        &mut c,
        &consumer_group_heartbeat::ConsumerGroupHeartbeatRequest {
            group_id: "g-classic".into(),
            ..join.clone()
        },
    );
    assert_eq!(resp.error_code, GROUP_ID_NOT_FOUND, "{resp:?}");

    // The member leaves; the empty consumer group then gives way to a
    // classic one, as Kafka converts an empty group.
    let left = heartbeat(
        &mut c,
        &consumer_group_heartbeat::ConsumerGroupHeartbeatRequest {
            group_id: "g-edges".into(),
            member_id: member.into(),
            member_epoch: -1,
            ..Default::default()
        },
    );
    assert_eq!(left.error_code, NONE, "{left:?}");
    let mut r = c.call(ApiKey::JoinGroup, 3, |w| classic_join.encode(w, 3));
    let resp = join_group::JoinGroupResponse::decode(&mut r, 3).expect("decode JoinGroup");
    assert_eq!(resp.error_code, NONE, "{resp:?}");

    // group.consumer.disconnect.grace.ms: a member whose connection closes
    // keeps its place if it heartbeats again on another connection; one
    // that does not is fenced after its heartbeat interval and the grace
    // (2.5 s here), before its session (6 s) would have ended.
    let open = || Conn::open(addr, "pinlog-kip848-test", STEP_TIMEOUT).expect("connect");
    let mut first = open();
    let disconnecting = consumer_group_heartbeat::ConsumerGroupHeartbeatRequest {
        group_id: "g-disconnect".into(),
        member_id: "disconnect-member-000000001".into(),
        ..join.clone()
    };
    let joined = heartbeat(&mut first, &disconnecting);
    assert_eq!(joined.error_code, NONE, "{joined:?}");
    let again = |c: &mut Conn, owned: Option<Vec<consumer_group_heartbeat::TopicPartitions>>| {
        heartbeat(
            c,
            &consumer_group_heartbeat::ConsumerGroupHeartbeatRequest {
                group_id: "g-disconnect".into(),
                member_id: disconnecting.member_id.clone(),
                member_epoch: joined.member_epoch,
                topic_partitions: owned,
                ..Default::default()
            },
        )
    };
    let owned_all = joined.assignment.clone();
    drop(first);
    let mut second = open();
    let reconnected = again(&mut second, owned_all.clone());
    assert_eq!(reconnected.error_code, NONE, "{reconnected:?}");
    let past_grace =
        Duration::from_millis((CONSUMER_HEARTBEAT_MS + DISCONNECT_GRACE_MS + 1500) as u64);
    assert!(past_grace < Duration::from_millis(CONSUMER_SESSION_MS as u64 - 500));
    std::thread::sleep(past_grace);
    let still = again(&mut second, None);
    assert_eq!(
        still.error_code, NONE,
        "a member that heartbeated on a new connection keeps its place: {still:?}"
    );
    drop(second);
    let mut third = open();
    std::thread::sleep(past_grace);
    let fenced = again(&mut third, None);
    assert_eq!(
        fenced.error_code, UNKNOWN_MEMBER_ID,
        "a member whose connection closed and that did not heartbeat again is fenced before its session ends: {fenced:?}"
    );
}

/// A group write that times out is answered COORDINATOR_NOT_AVAILABLE, as
/// Kafka's coordinators answer it, never REQUEST_TIMED_OUT: the KIP-848 and
/// share consumers take REQUEST_TIMED_OUT on a heartbeat for an unexpected
/// error and stop for good (the fault suite's share member did, after a
/// node was killed: it consumed nothing more). The offsets partition's two
/// followers are stopped while they are still in its ISR (a long
/// `replica.lag.time.max.ms`, and no quorum to fence them), so no write can
/// reach its high watermark: a ConsumerGroupHeartbeat join, a
/// ShareGroupHeartbeat join and an OffsetCommit each meet the write
/// timeout. Once the followers go on, the same requests succeed.
#[test]
fn group_writes_that_time_out_answer_coordinator_not_available() {
    use pinlog::protocol::api::ApiKey;
    use pinlog::protocol::error_code::*;
    use pinlog::protocol::messages::*;
    use support::kafka_conn::Conn;
    if skipped("group_writes_that_time_out_answer_coordinator_not_available") {
        return;
    }
    let _serial = serial();
    /// Far longer than the followers' stop: they stay in the ISR, and
    /// every write waits for them.
    const LAG_TIME_MAX_MS: i64 = 300_000;
    const GROUP: &str = "g-write-timeout";
    /// Each of the three writes below waits this long; Kafka's 5 s default
    /// would only make the test slower.
    const COMMIT_TIMEOUT_MS: i64 = 1000;
    const TRANSIENT: [i16; 3] = [
        COORDINATOR_NOT_AVAILABLE,
        COORDINATOR_LOAD_IN_PROGRESS,
        NOT_COORDINATOR,
    ];
    let opts = BrokerOpts::new()
        .setting("offsets.topic.num.partitions", 1)
        .setting("offsets.topic.replication.factor", 3)
        .setting("replica.lag.time.max.ms", LAG_TIME_MAX_MS)
        .setting("offsets.commit.timeout.ms", COMMIT_TIMEOUT_MS);
    let nodes = support::Cluster::start(3, opts).nodes;
    // OffsetCommit wants a topic that exists.
    let created = run_command(
        Command::new(support::PINLOG_BIN)
            .args(["topic", "create", "t", "--partitions", "1"])
            .args(["--bootstrap-server", &nodes[0].bootstrap()]),
        None,
        STEP_TIMEOUT,
    );
    assert!(created.success(), "create t: {created}");
    let connect = |node: &Broker| {
        let addr: std::net::SocketAddr = node.bootstrap().parse().expect("an address");
        Conn::open(addr, "pinlog-write-timeout", STEP_TIMEOUT).expect("connect")
    };
    // The coordinator's index in `nodes` (numbered from 1, in order), or
    // None while there is none. FindCoordinator creates __consumer_offsets.
    let find = |c: &mut Conn| -> Option<usize> {
        let find = find_coordinator::FindCoordinatorRequest {
            key: GROUP.into(),
            key_type: find_coordinator::KEY_TYPE_GROUP,
            coordinator_keys: Vec::new(),
        };
        let mut r = c.call(ApiKey::FindCoordinator, 3, |w| find.encode(w, 3));
        let resp = find_coordinator::FindCoordinatorResponse::decode(&mut r, 3)
            .expect("decode FindCoordinator");
        (resp.error_code == NONE).then(|| resp.node_id as usize - 1)
    };
    let consumer_join = |c: &mut Conn, member: &str| -> i16 {
        let req = consumer_group_heartbeat::ConsumerGroupHeartbeatRequest {
            group_id: GROUP.into(),
            member_id: member.into(),
            member_epoch: 0,
            rebalance_timeout_ms: 30_000,
            subscribed_topic_names: Some(vec!["t".into()]),
            topic_partitions: Some(Vec::new()),
            ..Default::default()
        };
        let mut r = c.call(ApiKey::ConsumerGroupHeartbeat, 1, |w| req.encode(w, 1));
        consumer_group_heartbeat::ConsumerGroupHeartbeatResponse::decode(&mut r, 1)
            .expect("decode ConsumerGroupHeartbeat")
            .error_code
    };
    // Its group shares the consumer group's offsets partition (there is
    // one).
    let share_join = |c: &mut Conn, member: &str| -> i16 {
        let req = share_group_heartbeat::ShareGroupHeartbeatRequest {
            group_id: format!("{GROUP}-share"),
            member_id: member.into(),
            member_epoch: 0,
            rack_id: None,
            subscribed_topic_names: Some(vec!["t".into()]),
        };
        let mut r = c.call(ApiKey::ShareGroupHeartbeat, 1, |w| req.encode(w, 1));
        share_group_heartbeat::ShareGroupHeartbeatResponse::decode(&mut r, 1)
            .expect("decode ShareGroupHeartbeat")
            .error_code
    };
    let commit = |c: &mut Conn| -> i16 {
        let req = offset_commit::OffsetCommitRequest {
            group_id: format!("{GROUP}-admin"),
            generation_id_or_member_epoch: -1,
            topics: vec![offset_commit::OffsetCommitRequestTopic {
                name: "t".into(),
                topic_id: [0; 16],
                partitions: vec![offset_commit::OffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 7,
                    committed_leader_epoch: -1,
                    ..Default::default()
                }],
            }],
            ..Default::default()
        };
        let mut r = c.call(ApiKey::OffsetCommit, 9, |w| req.encode(w, 9));
        let resp = offset_commit::OffsetCommitResponse::decode(&mut r, 9).expect("decode");
        resp.topics[0].partitions[0].error_code
    };
    // `call` on the group's coordinator, wherever it is, until it succeeds
    // (a node's restart or fencing may move it).
    let settled = |what: &str, call: &dyn Fn(&mut Conn) -> i16| {
        let deadline = Instant::now() + STEP_TIMEOUT;
        let mut any = connect(&nodes[0]);
        loop {
            let code = match find(&mut any) {
                Some(at) => call(&mut connect(&nodes[at])),
                None => COORDINATOR_NOT_AVAILABLE,
            };
            if code == NONE {
                return;
            }
            assert!(
                TRANSIENT.contains(&code) && Instant::now() < deadline,
                "{what}: error {code}"
            );
            std::thread::sleep(POLL_INTERVAL);
        }
    };
    // Writes go through while every replica follows.
    settled("a consumer join", &|c| {
        consumer_join(c, "member-a-0000000000001")
    });
    settled("a share join", &|c| share_join(c, "share-a-0000000000001"));
    settled("a commit", &commit);

    let mut c = connect(&nodes[0]);
    let at = find(&mut c).expect("the group has a coordinator");
    let mut c = connect(&nodes[at]);
    let followers: Vec<&Broker> = (0..nodes.len())
        .filter(|i| *i != at)
        .map(|i| &nodes[i])
        .collect();
    for f in &followers {
        f.signal(libc::SIGSTOP);
    }
    let answers = [
        (
            "a consumer join",
            consumer_join(&mut c, "member-b-0000000000001"),
        ),
        ("a share join", share_join(&mut c, "share-b-0000000000001")),
        ("a commit", commit(&mut c)),
    ];
    for f in &followers {
        f.signal(libc::SIGCONT);
    }
    for (what, code) in answers {
        assert_eq!(
            code, COORDINATOR_NOT_AVAILABLE,
            "{what} whose write timed out (REQUEST_TIMED_OUT is {REQUEST_TIMED_OUT})"
        );
    }
    settled("a consumer join after the followers resumed", &|c| {
        consumer_join(c, "member-b-0000000000001")
    });
    settled("a share join after the followers resumed", &|c| {
        share_join(c, "share-b-0000000000001")
    });
    settled("a commit after the followers resumed", &commit);
}
