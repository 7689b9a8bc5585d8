//! `pinlog cluster describe`: the brokers (DescribeCluster) and the
//! metadata quorum (DescribeQuorum), like `kafka-cluster.sh` and
//! `kafka-metadata-quorum.sh describe --status --replication` together.
//! The answers are gathered into plain structs first, then rendered, so
//! the rendering is tested without a broker.

use std::io::Write;

use serde_json::{json, Value};

use crate::cli::client::Cluster;
use crate::cli::error::{CliError, CliResult};
use crate::cli::table::{json_text, or_dash, Align, Table};
use crate::cli::{emit, ClusterCommand, ConnectArgs};
use crate::metadata::METADATA_TOPIC;
use crate::protocol::error_code;
use crate::protocol::messages::describe_cluster::DescribeClusterRequest;
use crate::protocol::messages::describe_quorum::{DescribeQuorumRequest, QuorumTopicRequest};

/// One broker, as DescribeCluster reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRow {
    pub id: i32,
    pub address: String,
    pub rack: Option<String>,
    pub controller: bool,
    /// Registered but fenced (DescribeCluster v2; a broker that answers
    /// only v0-1 lists live brokers alone).
    pub fenced: bool,
    /// Its broker epoch, from pinlog's tagged field; `None` from Kafka.
    pub epoch: Option<i64>,
}

/// One quorum member, as DescribeQuorum reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumMember {
    pub id: i32,
    pub voter: bool,
    pub leader: bool,
    pub log_end_offset: i64,
    /// How far behind the leader's end offset.
    pub lag: i64,
    pub last_caught_up_ms: Option<i64>,
    /// Whether it answered the leader recently ([`answered_recently`]).
    pub reachable: bool,
}

/// How long a quorum member may leave the leader's requests unanswered
/// before `cluster describe` calls it unreachable: a stopped broker-only
/// node stays an observer until it is unregistered. Several heartbeats
/// (a quarter of `controller.quorum.fetch.timeout.ms`, 500 ms by default)
/// and the leader's reconnect pause (`quorum::reconnect`) fit in it.
pub const QUORUM_MEMBER_UNREACHABLE_AFTER_MS: i64 = 5_000;

/// Whether a member whose last answer reached the leader at
/// `last_fetch_ms` (-1: never) answered recently, by the leader's clock:
/// `leader_now_ms` is the leader's own entry, stamped when it answered
/// DescribeQuorum, so no two machines' clocks are compared.
pub fn answered_recently(last_fetch_ms: i64, leader_now_ms: i64) -> bool {
    last_fetch_ms >= 0 && leader_now_ms - last_fetch_ms <= QUORUM_MEMBER_UNREACHABLE_AFTER_MS
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterView {
    pub cluster_id: String,
    /// The active controller: the quorum's leader.
    pub controller_id: i32,
    pub brokers: Vec<BrokerRow>,
    pub quorum_leader: i32,
    pub quorum_epoch: i32,
    pub high_watermark: i64,
    pub members: Vec<QuorumMember>,
}

pub fn run(conn: &ConnectArgs, command: ClusterCommand, out: &mut dyn Write) -> CliResult<()> {
    let mut cluster = conn.cluster()?;
    match command {
        ClusterCommand::Describe => {
            let view = gather(&mut cluster)?;
            emit(out, &render(&view, conn.json))
        }
    }
}

/// Asks the broker for the brokers and the quorum.
pub fn gather(cluster: &mut Cluster) -> CliResult<ClusterView> {
    let client = cluster.any();
    let described = client.send(&DescribeClusterRequest {
        include_fenced_brokers: true,
        ..DescribeClusterRequest::default()
    })?;
    if described.error_code != error_code::NONE {
        return Err(CliError::broker(
            "DescribeCluster",
            described.error_code,
            described.error_message,
        ));
    }
    let quorum = client.send(&DescribeQuorumRequest {
        topics: vec![QuorumTopicRequest {
            topic_name: METADATA_TOPIC.into(),
            partitions: vec![0],
        }],
    })?;
    if quorum.error_code != error_code::NONE {
        return Err(CliError::broker(
            "DescribeQuorum",
            quorum.error_code,
            quorum.error_message,
        ));
    }
    let partition = quorum
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .find(|p| p.partition_index == 0)
        .ok_or_else(|| {
            CliError::Other("DescribeQuorum answered without the metadata partition".into())
        })?;
    if partition.error_code != error_code::NONE {
        return Err(CliError::broker(
            "DescribeQuorum",
            partition.error_code,
            partition.error_message.clone(),
        ));
    }
    let leader_end = partition
        .current_voters
        .iter()
        .find(|v| v.replica_id == partition.leader_id)
        .map_or(partition.high_watermark, |v| v.log_end_offset);
    let leader_now = partition
        .current_voters
        .iter()
        .find(|v| v.replica_id == partition.leader_id)
        .map(|v| v.last_fetch_timestamp);
    let member =
        |s: &crate::protocol::messages::describe_quorum::ReplicaState, voter: bool| QuorumMember {
            id: s.replica_id,
            voter,
            leader: s.replica_id == partition.leader_id,
            log_end_offset: s.log_end_offset,
            lag: (leader_end - s.log_end_offset).max(0),
            last_caught_up_ms: (s.last_caught_up_timestamp >= 0)
                .then_some(s.last_caught_up_timestamp),
            reachable: s.replica_id == partition.leader_id
                || leader_now.is_none_or(|now| answered_recently(s.last_fetch_timestamp, now)),
        };
    let mut members: Vec<QuorumMember> = partition
        .current_voters
        .iter()
        .map(|s| member(s, true))
        .chain(partition.observers.iter().map(|s| member(s, false)))
        .collect();
    members.sort_by_key(|m| (!m.voter, m.id));
    let mut brokers: Vec<BrokerRow> = described
        .brokers
        .iter()
        .map(|b| BrokerRow {
            id: b.broker_id,
            address: format!("{}:{}", b.host, b.port),
            rack: b.rack.clone(),
            // The quorum's leader, which DescribeCluster's controller id
            // is not when the controllers are not brokers (Kafka's brokers
            // name a random broker there, to which clients send admin
            // requests that it forwards).
            controller: b.broker_id == partition.leader_id,
            fenced: b.is_fenced,
            epoch: b.broker_epoch,
        })
        .collect();
    brokers.sort_by_key(|b| b.id);
    Ok(ClusterView {
        cluster_id: described.cluster_id,
        controller_id: partition.leader_id,
        brokers,
        quorum_leader: partition.leader_id,
        quorum_epoch: partition.leader_epoch,
        high_watermark: partition.high_watermark,
        members,
    })
}

pub fn render(v: &ClusterView, as_json: bool) -> String {
    if as_json {
        return json_text(&json!({
            "cluster_id": v.cluster_id,
            "controller_id": v.controller_id,
            // Live brokers only, as before fenced ones were listed: scripts
            // count them.
            "brokers": v.brokers.iter().filter(|b| !b.fenced).map(broker_json).collect::<Vec<Value>>(),
            "fenced_brokers": v.brokers.iter().filter(|b| b.fenced).map(broker_json).collect::<Vec<Value>>(),
            "quorum": {
                "leader": v.quorum_leader,
                "epoch": v.quorum_epoch,
                "high_watermark": v.high_watermark,
                "members": v.members.iter().map(|m| json!({
                    "id": m.id,
                    "role": role(m),
                    "log_end_offset": m.log_end_offset,
                    "lag": m.lag,
                    "last_caught_up_ms": m.last_caught_up_ms,
                    "reachable": m.reachable,
                })).collect::<Vec<Value>>(),
            },
        }));
    }
    let fenced = v.brokers.iter().filter(|b| b.fenced).count();
    let mut text = format!(
        "Cluster {}: {} broker(s){}; the active controller is {}.\n\n",
        v.cluster_id,
        v.brokers.len() - fenced,
        if fenced > 0 {
            format!(" and {fenced} fenced")
        } else {
            String::new()
        },
        v.controller_id
    );
    let mut brokers = Table::new(&[
        ("BROKER", Align::Right),
        ("ADDRESS", Align::Left),
        ("RACK", Align::Left),
        ("CONTROLLER", Align::Left),
        ("FENCED", Align::Left),
        ("EPOCH", Align::Right),
    ]);
    for b in &v.brokers {
        brokers.row(vec![
            b.id.to_string(),
            b.address.clone(),
            or_dash(b.rack.clone()),
            if b.controller { "active" } else { "-" }.into(),
            if b.fenced { "yes" } else { "-" }.into(),
            b.epoch.map_or_else(|| "-".to_string(), |e| e.to_string()),
        ]);
    }
    text.push_str(&brokers.render());
    text.push_str(&format!(
        "\nMetadata quorum: leader {}, epoch {}, high watermark {}.\n\n",
        v.quorum_leader, v.quorum_epoch, v.high_watermark
    ));
    let mut members = Table::new(&[
        ("NODE", Align::Right),
        ("ROLE", Align::Left),
        ("LOG-END-OFFSET", Align::Right),
        ("LAG", Align::Right),
    ]);
    for m in &v.members {
        members.row(vec![
            m.id.to_string(),
            if m.reachable {
                role(m).to_string()
            } else {
                format!("{} (unreachable)", role(m))
            },
            m.log_end_offset.to_string(),
            m.lag.to_string(),
        ]);
    }
    text.push_str(&members.render());
    text
}

fn broker_json(b: &BrokerRow) -> Value {
    json!({
        "id": b.id,
        "address": b.address,
        "rack": b.rack,
        "controller": b.controller,
        "epoch": b.epoch,
    })
}

fn role(m: &QuorumMember) -> &'static str {
    match (m.leader, m.voter) {
        (true, _) => "leader",
        (false, true) => "voter",
        (false, false) => "observer",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> ClusterView {
        ClusterView {
            cluster_id: "WWq9Xufzyuty71nn0QftcQ".into(),
            controller_id: 1,
            brokers: vec![
                BrokerRow {
                    id: 1,
                    address: "10.0.0.1:9092".into(),
                    rack: Some("a".into()),
                    controller: true,
                    fenced: false,
                    epoch: Some(7),
                },
                BrokerRow {
                    id: 2,
                    address: "10.0.0.2:9092".into(),
                    rack: None,
                    controller: false,
                    fenced: false,
                    epoch: None,
                },
                BrokerRow {
                    id: 3,
                    address: "10.0.0.3:9092".into(),
                    rack: None,
                    controller: false,
                    fenced: true,
                    epoch: Some(12),
                },
            ],
            quorum_leader: 1,
            quorum_epoch: 3,
            high_watermark: 120,
            members: vec![
                QuorumMember {
                    id: 1,
                    voter: true,
                    leader: true,
                    log_end_offset: 120,
                    lag: 0,
                    last_caught_up_ms: Some(5),
                    reachable: true,
                },
                QuorumMember {
                    id: 2,
                    voter: false,
                    leader: false,
                    log_end_offset: 100,
                    lag: 20,
                    last_caught_up_ms: None,
                    reachable: false,
                },
            ],
        }
    }

    #[test]
    fn text_shows_brokers_and_quorum_members() {
        let text = render(&view(), false);
        assert!(text.contains(
            "Cluster WWq9Xufzyuty71nn0QftcQ: 2 broker(s) and 1 fenced; the active controller is 1."
        ));
        let fenced = text.lines().find(|l| l.contains("10.0.0.3:9092")).unwrap();
        assert!(
            fenced.contains("yes") && fenced.trim_end().ends_with("12"),
            "{text}"
        );
        assert!(text.contains("10.0.0.2:9092"));
        assert!(text.contains("leader 1, epoch 3, high watermark 120"));
        let observer = text.lines().find(|l| l.contains("observer")).unwrap();
        assert!(observer.contains("20"), "{text}");
        assert!(observer.contains("observer (unreachable)"), "{text}");
    }

    #[test]
    fn a_member_is_unreachable_once_silent_past_the_bound_by_the_leaders_clock() {
        let now = 1_000_000;
        assert!(answered_recently(now, now));
        assert!(answered_recently(
            now - QUORUM_MEMBER_UNREACHABLE_AFTER_MS,
            now
        ));
        assert!(!answered_recently(
            now - QUORUM_MEMBER_UNREACHABLE_AFTER_MS - 1,
            now
        ));
        assert!(!answered_recently(-1, now), "never answered");
    }

    #[test]
    fn json_carries_every_field() {
        let v: Value = serde_json::from_str(&render(&view(), true)).unwrap();
        assert_eq!(v["controller_id"], 1);
        assert_eq!(v["brokers"][0]["rack"], "a");
        assert_eq!(v["brokers"][1]["rack"], Value::Null);
        assert_eq!(v["brokers"].as_array().map(Vec::len), Some(2), "live ones");
        assert_eq!(v["fenced_brokers"][0]["id"], 3);
        assert_eq!(v["brokers"][0]["epoch"], 7);
        assert_eq!(v["brokers"][1]["epoch"], Value::Null);
        assert_eq!(v["quorum"]["members"][0]["role"], "leader");
        assert_eq!(v["quorum"]["members"][1]["lag"], 20);
        assert_eq!(v["quorum"]["members"][0]["reachable"], true);
        assert_eq!(v["quorum"]["members"][1]["reachable"], false);
        assert_eq!(
            v["quorum"]["members"][1]["role"], "observer",
            "scripts match on it"
        );
    }
}
