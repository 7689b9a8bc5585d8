//! Kafka's own CLI tools and a real admin client against a 3-node cluster
//! in combined mode, as an operator meets it on day one.
//!
//! One cluster serves every phase, in order, so the suite starts three
//! nodes once:
//! - admin requests sent through each node are visible on that node as
//!   soon as they are answered, while records are produced (kafka-python's
//!   admin client, `tests/clients/admin_visibility.py`); manual replica
//!   assignments are taken and checked as Kafka checks them; a topic named
//!   twice in one CreateTopics is refused;
//! - consumer groups are created through several coordinators;
//! - every Kafka CLI tool that applies to pinlog runs once and must print no
//!   error (several print an exception and still exit 0, so the output is
//!   checked, not only the exit status);
//! - after the active controller and a coordinator are killed, the group
//!   listings still show every group.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support;
use crate::support::{kafka_libs, run_command, wait_for, which, BrokerOpts, Cluster, CmdOutput};

/// The admin client script's steps are bounded inside; this bounds the
/// process.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(180);
/// How long a Kafka tool may run.
const TOOL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the nodes may take to list every broker as live, and a group
/// listing to recover after a failover.
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(60);
/// Create-check-delete-check rounds per node.
const VISIBILITY_ROUNDS: usize = 15;
/// Groups created; with `__consumer_offsets`' 50 partitions led in turn by
/// the three brokers, their coordinators are spread over the nodes.
const GROUPS: [&str; 6] = [
    "g-billing",
    "g-audit",
    "g-search",
    "g-mail",
    "g-ledger",
    "g-fraud",
];
const TOPIC: &str = "orders";

fn script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients/admin_visibility.py")
        .display()
        .to_string()
}

fn client(cluster: &Cluster, args: &[&str]) -> CmdOutput {
    let out = run_command(
        Command::new("python3").arg(script()).args(args),
        None,
        CLIENT_TIMEOUT,
    );
    if !out.success() {
        cluster.fail(&format!("admin_visibility.py {args:?} failed:\n{out}"));
    }
    out
}

/// What marks a Kafka tool's failure in its output, whatever its exit
/// status: a log line at ERROR level or a Java exception.
fn error_in(output: &str) -> Option<&str> {
    output
        .lines()
        .find(|l| l.contains(" ERROR ") || l.starts_with("ERROR") || l.contains("Exception"))
}

/// A Kafka tool class run with `java -cp` on the Kafka jars, whatever its
/// outcome.
fn run_tool(class: &str, args: &[&str], stdin: Option<&[u8]>) -> CmdOutput {
    let jars = format!("{}/*", kafka_libs().display());
    run_command(
        Command::new("java")
            .args(["-XX:TieredStopAtLevel=1", "-cp", &jars, class])
            .args(args),
        stdin,
        TOOL_TIMEOUT,
    )
}

/// Runs a Kafka tool class and fails the test, with the nodes' logs, when
/// it exits non-zero or prints an error; its standard output.
fn tool(cluster: &Cluster, class: &str, args: &[&str], stdin: Option<&[u8]>) -> String {
    let out = run_tool(class, args, stdin);
    let error = error_in(&out.stdout).or_else(|| error_in(&out.stderr));
    if !out.success() || error.is_some() {
        cluster.fail(&format!(
            "{class} {args:?} failed ({}):\n{out}",
            error.unwrap_or("non-zero exit")
        ));
    }
    eprintln!("{class} {args:?}: clean in {:?}", out.elapsed);
    out.stdout
}

const TOOLS: &str = "org.apache.kafka.tools";

/// Every group of [`GROUPS`] is listed by `GroupsCommand` and
/// `ConsumerGroupCommand`, through `bootstrap`.
fn groups_listed(cluster: &Cluster, bootstrap: &str) {
    let listed = tool(
        cluster,
        &format!("{TOOLS}.consumer.group.ConsumerGroupCommand"),
        &["--bootstrap-server", bootstrap, "--list"],
        None,
    );
    let all = tool(
        cluster,
        &format!("{TOOLS}.GroupsCommand"),
        &["--bootstrap-server", bootstrap, "--list"],
        None,
    );
    for g in GROUPS {
        assert!(
            listed.lines().any(|l| l.trim() == g),
            "ConsumerGroupCommand --list through {bootstrap} misses {g}:\n{listed}"
        );
        assert!(
            all.lines().any(|l| l.split_whitespace().next() == Some(g)),
            "GroupsCommand --list through {bootstrap} misses {g}:\n{all}"
        );
    }
}

#[test]
fn kafka_tools_and_admin_clients_run_clean_on_a_three_node_cluster() {
    assert!(
        which("java").is_some() && which("python3").is_some(),
        "java and python3 with kafka-python are needed (tests/run installs them)"
    );
    let mut cluster = Cluster::start(3, BrokerOpts::new());
    let live = wait_for(CONVERGE_TIMEOUT, || {
        cluster.nodes.iter().all(|n| {
            support::cluster_describe(n)
                .is_some_and(|v| v["brokers"].as_array().is_some_and(|b| b.len() == 3))
        })
    });
    if !live {
        cluster.fail("not every node lists three live brokers");
    }

    // Admin requests answered by each node are visible there at once: the
    // node that forwards to the active controller as well as the active
    // controller itself.
    for (i, node) in cluster.nodes.iter().enumerate() {
        let rounds = VISIBILITY_ROUNDS.to_string();
        let prefix = format!("visible-via-{}", i + 1);
        let out = client(&cluster, &["loop", &node.bootstrap(), &rounds, &prefix]);
        eprintln!("node {}: {}", i + 1, out.stdout.trim());
    }
    client(
        &cluster,
        &["assignments", &cluster.nodes[1].bootstrap(), "1,2,3"],
    );
    client(&cluster, &["duplicates", &cluster.nodes[2].bootstrap()]);

    let b = cluster.nodes[0].bootstrap();
    let b = b.as_str();
    let all = cluster.bootstrap();
    tool(
        &cluster,
        &format!("{TOOLS}.TopicCommand"),
        &[
            "--bootstrap-server",
            b,
            "--create",
            "--topic",
            TOPIC,
            "--partitions",
            "6",
            "--replication-factor",
            "3",
        ],
        None,
    );
    let records: String = (0..20).map(|i| format!("order-{i}\n")).collect();
    tool(
        &cluster,
        &format!("{TOOLS}.ConsoleProducer"),
        &[
            "--bootstrap-server",
            &all,
            "--topic",
            TOPIC,
            "--producer-property",
            "acks=all",
        ],
        Some(records.as_bytes()),
    );
    let groups = GROUPS.join(",");
    client(&cluster, &["groups", &all, TOPIC, &groups]);

    groups_listed(&cluster, b);
    tool(
        &cluster,
        &format!("{TOOLS}.consumer.group.ConsumerGroupCommand"),
        &["--bootstrap-server", b, "--describe", "--all-groups"],
        None,
    );
    // No share or streams groups exist: empty lists, no error.
    for class in [
        "consumer.group.ShareGroupCommand",
        "streams.StreamsGroupCommand",
    ] {
        tool(
            &cluster,
            &format!("{TOOLS}.{class}"),
            &["--bootstrap-server", b, "--list"],
            None,
        );
    }

    // The rest of Kafka's tools that apply to pinlog, once each.
    let consumed = tool(
        &cluster,
        &format!("{TOOLS}.consumer.ConsoleConsumer"),
        &[
            "--bootstrap-server",
            &all,
            "--topic",
            TOPIC,
            "--from-beginning",
            "--max-messages",
            "20",
            "--timeout-ms",
            "30000",
        ],
        None,
    );
    assert_eq!(
        consumed.lines().filter(|l| l.starts_with("order-")).count(),
        20
    );
    tool(
        &cluster,
        &format!("{TOOLS}.TopicCommand"),
        &["--bootstrap-server", b, "--list"],
        None,
    );
    tool(
        &cluster,
        &format!("{TOOLS}.TopicCommand"),
        &["--bootstrap-server", b, "--describe", "--topic", TOPIC],
        None,
    );
    let configs = format!("{TOOLS}.ConfigCommand");
    tool(
        &cluster,
        &configs,
        &[
            "--bootstrap-server",
            b,
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            TOPIC,
            "--add-config",
            "retention.ms=86400000",
        ],
        None,
    );
    let described = tool(
        &cluster,
        &configs,
        &[
            "--bootstrap-server",
            b,
            "--describe",
            "--entity-type",
            "topics",
            "--entity-name",
            TOPIC,
        ],
        None,
    );
    assert!(described.contains("retention.ms=86400000"), "{described}");
    tool(
        &cluster,
        &configs,
        &[
            "--bootstrap-server",
            b,
            "--describe",
            "--entity-type",
            "topics",
        ],
        None,
    );
    tool(
        &cluster,
        &configs,
        &[
            "--bootstrap-server",
            b,
            "--describe",
            "--entity-type",
            "brokers",
            "--entity-name",
            "2",
        ],
        None,
    );
    // Lines of `topic:partition:end offset`; records are deleted below
    // offset 1 of a partition that has some.
    let ends = tool(
        &cluster,
        &format!("{TOOLS}.GetOffsetShell"),
        &["--bootstrap-server", b, "--topic", TOPIC],
        None,
    );
    let partition = ends
        .lines()
        .filter_map(|l| {
            let mut f = l.rsplitn(3, ':');
            let end: i64 = f.next()?.trim().parse().ok()?;
            let p: i32 = f.next()?.parse().ok()?;
            (end > 0).then_some(p)
        })
        .next()
        .unwrap_or_else(|| cluster.fail(&format!("no partition of {TOPIC} has records:\n{ends}")));
    let offsets = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(
        offsets.path(),
        format!(r#"{{"partitions":[{{"topic":"{TOPIC}","partition":{partition},"offset":1}}],"version":1}}"#),
    )
    .expect("write the offsets file");
    tool(
        &cluster,
        &format!("{TOOLS}.DeleteRecordsCommand"),
        &[
            "--bootstrap-server",
            b,
            "--offset-json-file",
            offsets.path().to_str().unwrap(),
        ],
        None,
    );
    tool(
        &cluster,
        &format!("{TOOLS}.LogDirsCommand"),
        &["--bootstrap-server", b, "--describe", "--topic-list", TOPIC],
        None,
    );
    tool(
        &cluster,
        &format!("{TOOLS}.BrokerApiVersionsCommand"),
        &["--bootstrap-server", b],
        None,
    );
    tool(
        &cluster,
        &format!("{TOOLS}.ClusterTool"),
        &["cluster-id", "--bootstrap-server", b],
        None,
    );
    tool(
        &cluster,
        &format!("{TOOLS}.FeatureCommand"),
        &["--bootstrap-server", b, "describe"],
        None,
    );
    tool(
        &cluster,
        &format!("{TOOLS}.MetadataQuorumCommand"),
        &["--bootstrap-server", b, "describe", "--status"],
        None,
    );
    tool(
        &cluster,
        &format!("{TOOLS}.reassign.ReassignPartitionsCommand"),
        &["--bootstrap-server", b, "--list"],
        None,
    );
    tool(
        &cluster,
        &format!("{TOOLS}.LeaderElectionCommand"),
        &[
            "--bootstrap-server",
            b,
            "--election-type",
            "preferred",
            "--topic",
            TOPIC,
            "--partition",
            "1",
        ],
        None,
    );
    tool(
        &cluster,
        &format!("{TOOLS}.ClientMetricsCommand"),
        &["--bootstrap-server", b, "--list"],
        None,
    );
    tool(
        &cluster,
        &format!("{TOOLS}.ProducerPerformance"),
        &[
            "--topic",
            TOPIC,
            "--num-records",
            "2000",
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--producer-props",
            &format!("bootstrap.servers={all}"),
            "acks=all",
        ],
        None,
    );
    tool(
        &cluster,
        &format!("{TOOLS}.ConsumerPerformance"),
        &[
            "--bootstrap-server",
            &all,
            "--topic",
            TOPIC,
            "--messages",
            "2000",
            "--timeout",
            "30000",
        ],
        None,
    );
    tool(
        &cluster,
        &format!("{TOOLS}.EndToEndLatency"),
        &[
            "--bootstrap-server",
            &all,
            "--topic",
            "e2e-latency",
            "--num-records",
            "200",
            "--producer-acks",
            "all",
            "--record-size",
            "100",
        ],
        None,
    );

    // Coordinators move: kill -9 the active controller (it leads some
    // `__consumer_offsets` partitions too). Every group is listed again
    // once the survivors have taken them over; until then the listing may
    // fail with a retriable error, never miss a group silently.
    let leader = support::cluster_describe(&cluster.nodes[0]).unwrap()["quorum"]["leader"]
        .as_i64()
        .unwrap() as usize;
    cluster.node(leader).kill9();
    let survivor = (1..=3).find(|i| *i != leader).unwrap();
    let through = cluster.nodes[survivor - 1].bootstrap();
    let recovered = wait_for(CONVERGE_TIMEOUT, || {
        let out = run_tool(
            &format!("{TOOLS}.consumer.group.ConsumerGroupCommand"),
            &["--bootstrap-server", &through, "--list"],
            None,
        );
        out.success()
            && error_in(&out.stdout).is_none()
            && GROUPS
                .iter()
                .all(|g| out.stdout.lines().any(|l| l.trim() == *g))
    });
    if !recovered {
        cluster.fail(&format!(
            "after kill -9 of node {leader}, ConsumerGroupCommand --list through node {survivor} \
             did not show every group within {CONVERGE_TIMEOUT:?}"
        ));
    }
    groups_listed(&cluster, &through);
    cluster.node(leader).restart();
    groups_listed(&cluster, &cluster.nodes[leader - 1].bootstrap());
}
