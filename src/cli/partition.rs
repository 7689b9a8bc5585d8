//! `pinlog partition move`: moves a partition to another shard (core) of a
//! broker, live, through pinlog's own PartitionShards API
//! (`server/shard_placement/moves.rs` does the move). Kafka has no such tool: its
//! threads share every partition.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use serde_json::json;

use crate::cli::client::{Client, Cluster};
use crate::cli::error::{CliError, CliResult};
use crate::cli::table::json_text;
use crate::cli::{emit, ConnectArgs, PartitionCommand};
use crate::protocol::error_code;
use crate::protocol::messages::partition_shards::*;

pub fn run(conn: &ConnectArgs, command: PartitionCommand, out: &mut dyn Write) -> CliResult<()> {
    match command {
        PartitionCommand::Move {
            partition,
            shard,
            broker,
        } => {
            let (topic, index) = parse_topic_partition(&partition)?;
            let mut cluster = conn.cluster()?;
            let moved = move_partition(&mut cluster, &topic, index, shard, broker)?;
            emit(out, &render_move(&moved, conn.json))
        }
    }
}

/// A move the broker did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveResult {
    pub topic: String,
    pub partition: i32,
    pub broker: i32,
    pub from_shard: i32,
    pub to_shard: i32,
}

/// `orders-3` as (`orders`, 3): the partition follows the last dash, as in
/// the partition's directory name.
pub fn parse_topic_partition(s: &str) -> CliResult<(String, i32)> {
    let usage = || {
        CliError::Usage(format!(
            "{s:?} is not TOPIC-PARTITION (for example orders-3)"
        ))
    };
    let (topic, index) = s.rsplit_once('-').ok_or_else(usage)?;
    let index: i32 = index.parse().map_err(|_| usage())?;
    if topic.is_empty() || index < 0 {
        return Err(usage());
    }
    Ok((topic.to_string(), index))
}

fn move_partition(
    cluster: &mut Cluster,
    topic: &str,
    index: i32,
    shard: i32,
    broker: Option<i32>,
) -> CliResult<MoveResult> {
    let label = format!("{topic}-{index}");
    let meta = cluster.metadata(Some(&[topic.to_string()]))?;
    let t = meta
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some(topic))
        .ok_or_else(|| {
            CliError::broker(label.clone(), error_code::UNKNOWN_TOPIC_OR_PARTITION, None)
        })?;
    if t.error_code != error_code::NONE {
        return Err(CliError::broker(
            label,
            t.error_code,
            Some("the topic does not exist".into()),
        ));
    }
    let p = t
        .partitions
        .iter()
        .find(|p| p.partition_index == index)
        .ok_or_else(|| {
            CliError::broker(
                label.clone(),
                error_code::UNKNOWN_TOPIC_OR_PARTITION,
                Some(format!(
                    "{topic} has {} partitions, 0 to {}",
                    t.partitions.len(),
                    t.partitions.len().saturating_sub(1)
                )),
            )
        })?;
    let broker = match broker {
        Some(b) if p.replica_nodes.contains(&b) => b,
        Some(b) => {
            return Err(CliError::Usage(format!(
                "broker {b} holds no replica of {label}; its replicas are on brokers {:?}",
                p.replica_nodes
            )))
        }
        None if p.leader_id >= 0 => p.leader_id,
        None => {
            return Err(CliError::Other(format!(
                "{label} has no leader; name the broker whose replica to move with --broker"
            )))
        }
    };
    let client = cluster.node(broker)?;
    let resp = client.send(&PartitionShardsRequest {
        topics: vec![PartitionShardsTopic {
            name: topic.to_string(),
            partitions: vec![PartitionShardsPartition {
                partition_index: index,
                target_shard: shard,
            }],
        }],
    })?;
    let answer = resp
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .find(|p| p.partition_index == index)
        .ok_or_else(|| CliError::Protocol {
            addr: client.addr().to_string(),
            detail: format!("the broker's answer leaves out {label}"),
        })?;
    if answer.error_code != error_code::NONE {
        return Err(CliError::broker(
            format!("{label} on broker {broker}"),
            answer.error_code,
            answer.error_message.clone(),
        ));
    }
    Ok(MoveResult {
        topic: topic.to_string(),
        partition: index,
        broker,
        from_shard: answer.previous_shard,
        to_shard: answer.shard,
    })
}

pub fn render_move(m: &MoveResult, json: bool) -> String {
    if json {
        return json_text(&json!({
            "topic": m.topic,
            "partition": m.partition,
            "broker": m.broker,
            "from_shard": m.from_shard,
            "to_shard": m.to_shard,
        }));
    }
    if m.from_shard == m.to_shard {
        format!(
            "{}-{} is already on shard {} of broker {}.\n",
            m.topic, m.partition, m.to_shard, m.broker
        )
    } else {
        format!(
            "Moved {}-{} on broker {} from shard {} to shard {}.\n",
            m.topic, m.partition, m.broker, m.from_shard, m.to_shard
        )
    }
}

/// Which shard of `client`'s broker owns each of `parts` (topic → its
/// partitions): the shard, or the error code.
pub fn shards_of(
    client: &mut Client,
    parts: &BTreeMap<String, Vec<i32>>,
) -> CliResult<HashMap<(String, i32), Result<i32, i16>>> {
    let resp = client.send(&PartitionShardsRequest {
        topics: parts
            .iter()
            .map(|(name, partitions)| PartitionShardsTopic {
                name: name.clone(),
                partitions: partitions
                    .iter()
                    .map(|&partition_index| PartitionShardsPartition {
                        partition_index,
                        target_shard: NO_MOVE,
                    })
                    .collect(),
            })
            .collect(),
    })?;
    let mut out = HashMap::new();
    for t in resp.topics {
        for p in t.partitions {
            let answer = if p.error_code == error_code::NONE {
                Ok(p.shard)
            } else {
                Err(p.error_code)
            };
            out.insert((t.name.clone(), p.partition_index), answer);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_partition_splits_at_the_last_dash() {
        assert_eq!(
            parse_topic_partition("orders-3").unwrap(),
            ("orders".into(), 3)
        );
        assert_eq!(
            parse_topic_partition("my-topic-12").unwrap(),
            ("my-topic".into(), 12)
        );
        for bad in ["orders", "orders-", "-3", "orders-x", "orders-1x"] {
            assert!(
                matches!(parse_topic_partition(bad), Err(CliError::Usage(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn move_sentences_and_json() {
        let mut m = MoveResult {
            topic: "orders".into(),
            partition: 3,
            broker: 1,
            from_shard: 0,
            to_shard: 1,
        };
        assert_eq!(
            render_move(&m, false),
            "Moved orders-3 on broker 1 from shard 0 to shard 1.\n"
        );
        let v: serde_json::Value = serde_json::from_str(&render_move(&m, true)).unwrap();
        assert_eq!(v["to_shard"], 1);
        m.from_shard = 1;
        assert_eq!(
            render_move(&m, false),
            "orders-3 is already on shard 1 of broker 1.\n"
        );
    }
}
