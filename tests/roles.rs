//! Separate roles (issue: cluster, `process.roles`): three controller-only
//! nodes form the quorum, and two broker-only nodes learn the metadata log
//! from it as observers. The brokers register, are placed replicas, serve
//! produce and fetch, and keep working after kill -9 of the active
//! controller; a broker restarted on another port for the log is re-added;
//! a stopped one is described as unreachable, and once unregistered with
//! Kafka's ClusterTool stops observing. A
//! broker-only node whose id is a voter's is refused.
//!
//! A single controller-only voter on a slow metadata disk answers its
//! brokers' heartbeats behind a backlog of decisions without fencing them.
//!
//! Its own test binary: five processes on this machine's two cores should
//! not share them with another cluster test (the slow-disk test's three
//! are idle but for its nine seconds of CreateTopics).

mod support;

use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::{free_port, run_command, wait_for, Broker, Cluster, CmdOutput, PINLOG_BIN};

const CLI_TIMEOUT: Duration = Duration::from_secs(60);
/// A new quorum elects its leader within a few fetch timeouts; a broker
/// then joins as an observer, catches up and registers.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// kill -9 of the active controller to the next successful CreateTopics:
/// the test clusters' fetch and election timeouts (1.5 s), the new
/// leader's first commit, and retries.
const FAILOVER_TIMEOUT: Duration = Duration::from_secs(30);
/// What a controller-only node logs once it runs.
const CONTROLLER_ONLY_RUNNING: &str = "running as a controller only";

fn pinlog(args: &[&str]) -> CmdOutput {
    run_command(Command::new(PINLOG_BIN).args(args), None, CLI_TIMEOUT)
}

/// Produces `count` records with acks=all; every one must be acknowledged.
fn produce(broker: &Broker, topic: &str, from: usize, count: usize) {
    let out = support::kcat_produce(&broker.bootstrap(), topic, from, count);
    assert!(out.success(), "produce to {topic}: {out}");
}

fn consumed(broker: &Broker, topic: &str) -> usize {
    support::kcat_count(&broker.bootstrap(), topic)
}

fn describe(broker: &Broker) -> Option<Value> {
    support::cluster_describe(broker)
}

/// Launches broker-only node `id` of the quorum `voters`. No
/// controller.listen: the default, an ephemeral port, which the broker
/// tells the active controller.
fn launch_broker_only(base: &support::BrokerOpts, id: i64, voters: &str) -> Broker {
    Broker::launch(
        Cluster::node_opts(base, id, voters, 0)
            .setting("process.roles", "broker")
            .without_setting("controller.listen"),
    )
}

#[test]
fn controller_only_and_broker_only_nodes_form_a_cluster() {
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let voters = ports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}@127.0.0.1:{p}", i + 1))
        .collect::<Vec<_>>()
        .join(",");
    let base = support::BrokerOpts::new();
    let mut controllers: Vec<Broker> = ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            Broker::launch(
                Cluster::node_opts(&base, i as i64 + 1, &voters, *port)
                    .setting("process.roles", "controller"),
            )
        })
        .collect();
    let mut brokers: Vec<Broker> = [4, 5]
        .iter()
        .map(|&id| launch_broker_only(&base, id, &voters))
        .collect();
    for (i, c) in controllers.iter().enumerate() {
        if !wait_for(START_TIMEOUT, || c.log().contains(CONTROLLER_ONLY_RUNNING)) {
            c.fail(&format!("controller {} did not start", i + 1));
        }
    }
    for b in &mut brokers {
        b.await_ready();
    }
    assert!(
        !controllers[0]
            .log()
            .contains("pinlog is serving Kafka clients"),
        "a controller-only node opened no Kafka listener"
    );

    // Both brokers are live; the quorum lists 3 voters and 2 observers.
    let ready = wait_for(START_TIMEOUT, || {
        describe(&brokers[0]).is_some_and(|v| {
            v["brokers"].as_array().map(Vec::len) == Some(2)
                && v["quorum"]["members"]
                    .as_array()
                    .is_some_and(|m| m.iter().filter(|m| m["role"] == "observer").count() == 2)
        })
    });
    let view = describe(&brokers[0]);
    assert!(ready, "two live brokers and two observers: {view:?}");
    let view = view.unwrap();
    let leader = view["quorum"]["leader"].as_i64().expect("a quorum leader");
    assert!((1..=3).contains(&leader), "a controller leads: {view}");
    assert_eq!(view["controller_id"], leader, "{view}");

    // Placed on both brokers, replicated, served.
    let out = pinlog(&[
        "topic",
        "create",
        "split",
        "--partitions",
        "4",
        "--replication-factor",
        "2",
        "--bootstrap-server",
        &brokers[0].bootstrap(),
    ]);
    assert!(out.success(), "{out}");
    produce(&brokers[1], "split", 0, 200);
    assert_eq!(consumed(&brokers[0], "split"), 200);

    // kill -9 the active controller: another is elected, and admin
    // requests through a broker work again.
    let killed = leader as usize;
    controllers[killed - 1].kill9();
    let created = wait_for(FAILOVER_TIMEOUT, || {
        pinlog(&[
            "topic",
            "create",
            "after-failover",
            "--replication-factor",
            "2",
            "--timeout",
            "3s",
            "--if-not-exists",
            "--bootstrap-server",
            &brokers[1].bootstrap(),
        ])
        .success()
    });
    assert!(
        created,
        "CreateTopics within {FAILOVER_TIMEOUT:?} of killing the active controller"
    );
    let view = describe(&brokers[1]).expect("cluster describe after the failover");
    let new_leader = view["quorum"]["leader"].as_i64().unwrap_or(-1);
    assert!(
        new_leader != leader && (1..=3).contains(&new_leader),
        "a surviving controller leads: {view}"
    );
    assert_eq!(view["brokers"].as_array().map(Vec::len), Some(2), "{view}");
    produce(&brokers[0], "split", 200, 100);
    assert_eq!(consumed(&brokers[1], "split"), 300, "nothing lost");

    // A broker-only node restarts on another ephemeral port for the log:
    // the active controller re-adds it at the new address, and it catches
    // up, registers again and serves.
    brokers[1].restart();
    let back = wait_for(START_TIMEOUT, || {
        describe(&brokers[1]).is_some_and(|v| v["brokers"].as_array().map(Vec::len) == Some(2))
    });
    assert!(
        back,
        "the restarted broker is live again: {:?}",
        describe(&brokers[1])
    );
    assert_eq!(
        consumed(&brokers[1], "split"),
        300,
        "served after the restart"
    );

    // The killed controller rejoins as a voter.
    controllers[killed - 1].relaunch();
    let rejoined = wait_for(START_TIMEOUT, || {
        controllers[killed - 1]
            .log()
            .matches(CONTROLLER_ONLY_RUNNING)
            .count()
            == 2
    });
    assert!(rejoined, "the killed controller restarts");

    // Decommissioned with Kafka's own tool: the broker leaves the
    // registrations and the quorum stops sending it the log.
    brokers[1].stop();
    // Until then the stopped node stays an observer: `cluster describe`
    // says it is unreachable (the leader's connection attempts to it back
    // off meanwhile, `quorum::reconnect`), and the running one is not.
    let member = |v: &Value, id: i64| -> Option<Value> {
        v["quorum"]["members"]
            .as_array()?
            .iter()
            .find(|m| m["id"] == id)
            .cloned()
    };
    let unreachable = wait_for(START_TIMEOUT, || {
        describe(&brokers[0]).is_some_and(|v| {
            member(&v, 5).is_some_and(|m| m["role"] == "observer" && m["reachable"] == false)
                && member(&v, 4).is_some_and(|m| m["reachable"] == true)
        })
    });
    assert!(
        unreachable,
        "the stopped broker 5 is described as unreachable, broker 4 not: {:?}",
        describe(&brokers[0])
    );
    let out = support::kafka_unregister_broker(&brokers[0].bootstrap(), 5);
    assert!(out.success(), "ClusterTool unregister --id 5: {out}");
    let observers = |v: &Value| -> Vec<i64> {
        v["quorum"]["members"]
            .as_array()
            .map(|m| {
                m.iter()
                    .filter(|m| m["role"] == "observer")
                    .filter_map(|m| m["id"].as_i64())
                    .collect()
            })
            .unwrap_or_default()
    };
    let gone = wait_for(START_TIMEOUT, || {
        describe(&brokers[0]).is_some_and(|v| observers(&v) == vec![4])
    });
    assert!(
        gone,
        "only broker 4 still observes: {:?}",
        describe(&brokers[0])
    );

    brokers[0].stop();
    for c in &mut controllers {
        c.stop();
    }
}

/// A broker-only node must not be a voter: its id in the voter list is
/// refused at once, naming process.roles.
#[test]
fn a_broker_only_node_in_the_voter_list_is_refused() {
    support::assert_serve_refused(
        &[
            "--process-roles",
            "broker",
            "--node-id",
            "2",
            "--controller-quorum-voters",
            "1@127.0.0.1:1,2@127.0.0.1:2,3@127.0.0.1:3",
        ],
        &["process.roles", "node.id 2"],
    );
}

/// cgroup v1's per-device write-IOPS limit, which slows the controller's
/// metadata disk in [`heartbeats_are_answered_behind_a_backlog_of_slow_decisions`].
const BLKIO_WRITE_IOPS: &str = "/sys/fs/cgroup/blkio/blkio.throttle.write_iops_device";
/// The slow disk's write operations a second: each metadata commit (a write
/// and its fsync, ext4's journal) then takes a few hundred milliseconds.
const SLOW_DISK_WRITE_IOPS: u32 = 2;
/// Topics created at once against the slow controller: decisions queued
/// for longer than the watch below.
const BACKLOG_TOPICS: usize = 16;
/// How long the backlog is watched for a fencing: several session
/// timeouts (1.5 s in tests).
const BACKLOG_WATCH: Duration = Duration::from_secs(8);

/// An ext4 file system on a loop device whose writes the kernel can hold
/// to [`SLOW_DISK_WRITE_IOPS`] ([`SlowDisk::slow_down`]); mounted at `at`,
/// undone when dropped.
struct SlowDisk {
    at: std::path::PathBuf,
    device: String,
    major_minor: String,
    _image_dir: tempfile::TempDir,
}

impl SlowDisk {
    fn new(at: &std::path::Path) -> Result<SlowDisk, String> {
        let image_dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let image = image_dir.path().join("slow.img");
        let sh = |script: &str| {
            let out = run_command(Command::new("sh").args(["-ec", script]), None, CLI_TIMEOUT);
            if out.success() {
                Ok(out.stdout.trim().to_string())
            } else {
                Err(format!("{script}: {out}"))
            }
        };
        let device = sh(&format!(
            "truncate -s 256M '{img}'; mkfs.ext4 -q -F '{img}'; losetup --find --show --direct-io=on '{img}'",
            img = image.display()
        ))?;
        let mut disk = SlowDisk {
            at: at.to_path_buf(),
            device: device.clone(),
            major_minor: String::new(),
            _image_dir: image_dir,
        };
        sh(&format!(
            "mkdir -p '{at}'; mount '{device}' '{at}'",
            at = at.display()
        ))?;
        disk.major_minor = sh(&format!("lsblk -dno MAJ:MIN '{device}' | tr -d ' '"))?;
        Ok(disk)
    }

    /// From now on, the disk takes [`SLOW_DISK_WRITE_IOPS`] writes a second.
    fn slow_down(&self) -> Result<(), String> {
        self.limit_write_iops(SLOW_DISK_WRITE_IOPS)
    }

    /// Lifts the limit; a failure is reported, as the disk is then still
    /// slow for whatever runs next.
    fn speed_up(&self) {
        if let Err(e) = self.limit_write_iops(0) {
            eprintln!("the slow disk stays slow: {e}");
        }
    }

    /// `0` lifts the limit.
    fn limit_write_iops(&self, iops: u32) -> Result<(), String> {
        std::fs::write(BLKIO_WRITE_IOPS, format!("{} {iops}", self.major_minor))
            .map_err(|e| format!("setting {BLKIO_WRITE_IOPS}: {e}"))
    }
}

impl Drop for SlowDisk {
    fn drop(&mut self) {
        if !self.major_minor.is_empty() {
            self.speed_up();
        }
        let unmount = Command::new("umount").arg("-l").arg(&self.at).output();
        let detach = Command::new("losetup").args(["-d", &self.device]).output();
        for (what, out) in [("umount", unmount), ("losetup -d", detach)] {
            match out {
                Ok(o) if o.status.success() => {}
                Ok(o) => eprintln!(
                    "slow disk cleanup: {what} failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
                Err(e) => eprintln!("slow disk cleanup: cannot run {what}: {e}"),
            }
        }
    }
}

/// A broker's heartbeat that changes nothing is answered at once, not after
/// the controller's queued decisions: one controller-only voter whose
/// metadata disk is slow (each commit a few hundred milliseconds) gets
/// [`BACKLOG_TOPICS`] CreateTopics at once, seconds of decisions, several
/// session timeouts' worth. Its two brokers must stay unfenced throughout.
/// Before, each heartbeat waited its turn behind the backlog while the
/// session-expiry check took its turn more often, and live brokers were
/// fenced (on a loaded CI machine, the ISR changes of a failover made such
/// a backlog, and each fencing made more of it, for a minute).
#[test]
fn heartbeats_are_answered_behind_a_backlog_of_slow_decisions() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !std::path::Path::new(BLKIO_WRITE_IOPS).exists() {
        eprintln!(
            "heartbeats_are_answered_behind_a_backlog_of_slow_decisions: NOT RUN: a slow disk \
             needs root and cgroup v1's {BLKIO_WRITE_IOPS} (CI has both)"
        );
        return;
    }
    let root = tempfile::tempdir().expect("a directory for the slow disk");
    let mount = root.path().join("slow");
    let disk = SlowDisk::new(&mount).unwrap_or_else(|e| panic!("cannot make a slow disk: {e}"));
    let port = free_port();
    let voters = format!("1@127.0.0.1:{port}");
    let base = support::BrokerOpts::new();
    let mut controller = Broker::launch(
        Cluster::node_opts(&base, 1, &voters, port)
            .setting("process.roles", "controller")
            .data_dir(mount.join("data")),
    );
    let mut brokers: Vec<Broker> = [2, 3]
        .iter()
        .map(|&id| launch_broker_only(&base, id, &voters))
        .collect();
    for b in &mut brokers {
        b.await_ready();
    }
    let live = |brokers: &[Broker]| {
        describe(&brokers[0]).is_some_and(|v| v["brokers"].as_array().map(Vec::len) == Some(2))
    };
    assert!(
        wait_for(START_TIMEOUT, || live(&brokers)),
        "two live brokers"
    );
    // Slowed once the cluster runs: its start commits a dozen entries.
    disk.slow_down()
        .unwrap_or_else(|e| panic!("cannot slow the disk down: {e}"));

    let bootstrap = brokers[0].bootstrap();
    let mut creates: Vec<std::process::Child> = (0..BACKLOG_TOPICS)
        .map(|i| {
            Command::new(PINLOG_BIN)
                .args(["topic", "create", &format!("backlog-{i}")])
                .args([
                    "--replication-factor",
                    "2",
                    "--bootstrap-server",
                    &bootstrap,
                ])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("spawn pinlog topic create")
        })
        .collect();
    std::thread::sleep(BACKLOG_WATCH);
    for c in &mut creates {
        let _ = c.kill();
        let _ = c.wait();
    }
    // The controller answered a forwarded CreateTopics later than the
    // broker's request timeout (2 s, beyond the 1.5 s session): the
    // backlog was real.
    assert!(
        brokers[0]
            .log()
            .contains("the active controller did not answer in time"),
        "the controller kept up with {BACKLOG_TOPICS} CreateTopics: is its disk slow?"
    );
    assert!(
        !controller
            .log()
            .contains("fenced brokers that sent no heartbeat"),
        "the controller fenced live brokers whose heartbeats waited behind other requests"
    );
    for b in &brokers {
        assert!(
            !b.log().contains("the controller fenced this broker"),
            "a broker was fenced while its heartbeats waited behind other requests"
        );
    }
    // The brokers' controlled shutdowns need the controller's decisions.
    disk.speed_up();
    for b in &mut brokers {
        b.stop();
    }
    controller.stop();
    drop(disk);
}
