//! `partition.metadata` (issue 34): each partition directory records its
//! topic's id, in Kafka's file, and a directory of an earlier topic of the
//! same name is a stray: deleted, never served.
//!
//! One broker plays the broker that was down while its topic was deleted
//! and created again: the test keeps a copy of the old topic's partition
//! directory, deletes and creates the topic again, stops the broker and
//! puts the old directory back, which is what the down broker's disk holds
//! when it returns. A directory without the file (an older pinlog's) keeps
//! its records and gets the file.

use crate::support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::cli::{json, run_pinlog};
use support::{kcat_produce, run_command, wait_for, Broker, BrokerOpts};

const TOPIC: &str = "again";
const FILE: &str = "partition.metadata";
/// How long the restarted broker may take to apply the image (and delete
/// the stray) once it answers.
const APPLY_TIMEOUT: Duration = Duration::from_secs(30);
const KCAT_TIMEOUT: Duration = Duration::from_secs(60);

fn pinlog(b: &Broker, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    let bootstrap = b.bootstrap();
    all.extend(["--bootstrap-server", &bootstrap]);
    json(&run_pinlog(&all, None))
}

fn topic_id(b: &Broker) -> String {
    let described = pinlog(b, &["topic", "describe", TOPIC, "--json"]);
    described["topics"][0]["topic_id"]
        .as_str()
        .expect("a topic id")
        .to_string()
}

/// Every record of the topic as "offset value", read from the start.
fn records(b: &Broker) -> Vec<String> {
    let out = run_command(
        Command::new("kcat")
            .args(["-C", "-b", &b.bootstrap(), "-t", TOPIC])
            .args(["-o", "beginning", "-e", "-q", "-f", "%o %s\n"])
            .stdin(std::process::Stdio::null()),
        None,
        KCAT_TIMEOUT,
    );
    assert!(out.success(), "kcat -C: {out}");
    out.stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn produce(b: &Broker, from: usize, count: usize) {
    kcat_produce(&b.bootstrap(), TOPIC, from, count).assert_success();
}

fn file_text(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(FILE)).ok()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Waits until the partition's directory records `id`: the image was
/// applied to it.
fn wait_recorded(b: &Broker, dir: &Path, id: &str) {
    let want = format!("version: 0\ntopic_id: {id}\n");
    if !wait_for(APPLY_TIMEOUT, || file_text(dir).as_deref() == Some(&want)) {
        b.fail(&format!(
            "{} never recorded topic id {id}: {:?}",
            dir.display(),
            file_text(dir)
        ));
    }
}

#[test]
fn a_directory_of_a_deleted_topic_of_the_same_name_is_deleted_not_served() {
    let mut b = Broker::start(BrokerOpts::new());
    let dir = b.data_dir().join(format!("{TOPIC}-0"));
    pinlog(
        &b,
        &["topic", "create", TOPIC, "--partitions", "1", "--json"],
    );
    let old_id = topic_id(&b);
    wait_recorded(&b, &dir, &old_id);
    produce(&b, 0, 3);
    assert_eq!(records(&b), ["0 v0", "1 v1", "2 v2"]);

    // An older pinlog's directory: no file. Kept, with its records, and
    // given the file.
    b.stop();
    std::fs::remove_file(dir.join(FILE)).unwrap();
    b.restart();
    wait_recorded(&b, &dir, &old_id);
    assert_eq!(records(&b), ["0 v0", "1 v1", "2 v2"]);

    // The old topic's directory, as the broker that was down keeps it.
    b.stop();
    let saved = b.root().join("saved-partition");
    copy_dir(&dir, &saved);
    b.restart();
    pinlog(&b, &["topic", "delete", TOPIC, "--json"]);
    pinlog(
        &b,
        &["topic", "create", TOPIC, "--partitions", "1", "--json"],
    );
    let new_id = topic_id(&b);
    assert_ne!(new_id, old_id, "a new topic gets a new id");
    wait_recorded(&b, &dir, &new_id);
    b.stop();
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::rename(&saved, &dir).unwrap();
    assert_eq!(
        file_text(&dir),
        Some(format!("version: 0\ntopic_id: {old_id}\n"))
    );

    b.restart();
    wait_recorded(&b, &dir, &new_id);
    assert!(
        b.log().contains("a stray replica"),
        "the stray's deletion is logged"
    );
    assert_eq!(
        records(&b),
        Vec::<String>::new(),
        "none of the old topic's records is served"
    );
    // The new topic's partition starts afresh, at offset 0.
    produce(&b, 10, 2);
    assert_eq!(records(&b), ["0 v10", "1 v11"]);
    b.stop();
}
