//! Online migration between the classic and the consumer protocol
//! (`group.consumer.migration.policy`, default `bidirectional`), with
//! Kafka's Java client on both sides:
//! - two classic members share a topic; a member with
//!   `group.protocol=consumer` joins, and the live classic group becomes a
//!   consumer group (kafka-consumer-groups lists it as Consumer) in which
//!   the classic members keep consuming through JoinGroup, SyncGroup and
//!   Heartbeat, each partition owned once;
//! - that member leaves cleanly, the group turns classic again and the
//!   classic members rebalance between themselves;
//! - a static member joins with the consumer protocol, closes, and comes
//!   back as a classic member under its `group.instance.id`: taking the
//!   place of the last consumer-protocol member, it turns the group
//!   classic at once;
//! - every record produced along the way is consumed, and the group's
//!   committed offsets reach the end of the topic, so no conversion lost
//!   them.

use super::*;

/// The type `kafka-consumer-groups --list --type` shows for `group`.
fn group_type(s: &Scene, libs: &Path, group: &str) -> String {
    let list = consumer_groups_tool(s, libs, &["--list", "--type"]);
    list.stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(group))
        .and_then(|l| l.split_whitespace().nth(1))
        .map(str::to_string)
        .unwrap_or_else(|| s.fail(&format!("--list --type does not show {group}:\n{list}")))
}

#[test]
fn kip848_a_live_classic_group_upgrades_online_and_downgrades_back() {
    if skipped("kip848_a_live_classic_group_upgrades_online_and_downgrades_back") {
        return;
    }
    let _serial = serial();
    let libs = kafka_libs();
    let java = JavaClasses::compile(&libs);
    let mut s = Scene::start_with(&[]);
    let (topic, group) = ("migrate", "g-migrate");
    s.create(topic, PARTITIONS, &[]);
    let mut delivered = s.produce(topic, 0, 400);
    for name in ["c1", "c2"] {
        s.java_member(&java, name, group, topic, &[]);
    }
    s.wait_converged(&["c1", "c2"], PARTITIONS, CONVERGE_TIMEOUT);
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    let before = group_type(&s, &libs, group);
    if before != "Classic" {
        s.fail(&format!("the group starts as {before}, not Classic"));
    }

    // A member of the new protocol joins the live classic group.
    let protocol = ["group.protocol=consumer".to_string()];
    s.java_member_with(&java, "n1", group, topic, &protocol, &[]);
    s.wait_converged(&["c1", "c2", "n1"], PARTITIONS, CONVERGE_TIMEOUT);
    let during = group_type(&s, &libs, group);
    if during != "Consumer" {
        s.fail(&format!(
            "with a consumer-protocol member the group is {during}, not Consumer"
        ));
    }
    delivered.extend(s.produce(topic, 400, 300));
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);

    // The last consumer-protocol member leaves: classic again.
    s.stop("n1");
    s.wait_converged(&["c1", "c2"], PARTITIONS, CONVERGE_TIMEOUT);
    let after = group_type(&s, &libs, group);
    if after != "Classic" {
        s.fail(&format!(
            "after the last consumer-protocol member left the group is {after}, not Classic"
        ));
    }
    delivered.extend(s.produce(topic, 700, 300));
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);

    // A static member moves back: it joins with the consumer protocol,
    // closes (a static member's leave keeps its place for its session), and
    // comes back as a classic member under the same group.instance.id. Its
    // JoinGroup takes the place of the last consumer-protocol member, and
    // the group turns classic at once, not after the session timeout
    // (Kafka's downgrade with a replaced member).
    let pod = "group.instance.id=pod-s";
    s.java_member_with(&java, "s1", group, topic, &protocol, &[pod]);
    s.wait_converged(&["c1", "c2", "s1"], PARTITIONS, CONVERGE_TIMEOUT);
    let static_consumer = group_type(&s, &libs, group);
    if static_consumer != "Consumer" {
        s.fail(&format!(
            "with a static consumer-protocol member the group is {static_consumer}, not Consumer"
        ));
    }
    s.stop("s1");
    s.java_member_with(&java, "s2", group, topic, &[], &[pod]);
    s.wait_converged(&["c1", "c2", "s2"], PARTITIONS, CONVERGE_TIMEOUT);
    let replaced = group_type(&s, &libs, group);
    if replaced != "Classic" {
        s.fail(&format!(
            "after a static classic member replaced the last consumer-protocol member the \
             group is {replaced}, not Classic"
        ));
    }
    let log = s.broker.log();
    if !log.contains("took the place of the last consumer-protocol member") {
        s.fail(
            "the group turned classic, but not because the static member was replaced \
             (its session expired first?)",
        );
    }
    delivered.extend(s.produce(topic, 1000, 300));
    s.wait_consumed(topic, &delivered, CONSUME_TIMEOUT);
    s.check_all_consumed(topic, &delivered);

    // The auto-commits of all three phases reach the end offsets.
    let (_, ends) = s.offsets(topic);
    s.wait_committed_at(group, topic, &ends, CONVERGE_TIMEOUT, "");
    s.stop("c1");
    s.stop("c2");
    s.stop("s2");
}
