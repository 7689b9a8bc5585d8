//! Cluster-level setup: find (or create) the topic, learn each partition's
//! leader, list offsets, and split partitions among worker connections.

use std::collections::BTreeMap;
use std::time::Duration;

use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code;
use pinlog::protocol::messages::create_topics::{
    CreatableTopic, CreateTopicsRequest, CreateTopicsResponse,
};
use pinlog::protocol::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsResponse, ListOffsetsTopic,
};
use pinlog::protocol::messages::metadata::{
    MetadataRequest, MetadataRequestTopic, MetadataResponse,
};

use crate::client::Conn;
use crate::constants::{METADATA_ATTEMPTS, METADATA_BACKOFF};
use crate::error::{Error, Result};

/// First CreateTopics version where -1 means "the broker's default" for the
/// partition count and replication factor (KIP-464).
const CREATE_TOPICS_DEFAULTS_FROM: i16 = 4;

/// The topic as the cluster describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topic {
    pub name: String,
    /// `(partition, leader address HOST:PORT)`, sorted by partition.
    pub partitions: Vec<(i32, String)>,
}

/// What to do when the topic does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfMissing {
    /// Create it with this many partitions (`None`: the broker's default).
    Create(Option<i32>),
    Fail,
}

/// Looks the topic up through `bootstrap`, creating it if asked, and waits
/// (bounded) until every partition has a leader.
pub fn prepare_topic(
    bootstrap: &str,
    name: &str,
    if_missing: IfMissing,
    timeout: Duration,
) -> Result<Topic> {
    let mut conn = Conn::open(bootstrap, timeout)?;
    let mut created = false;
    for attempt in 1..=METADATA_ATTEMPTS {
        let md = metadata(&mut conn, name)?;
        let t = md
            .topics
            .iter()
            .find(|t| t.name.as_deref() == Some(name))
            .ok_or_else(|| Error::Protocol {
                addr: bootstrap.to_string(),
                detail: format!("Metadata response does not mention topic {name}"),
            })?;
        match t.error_code {
            error_code::NONE => {}
            error_code::UNKNOWN_TOPIC_OR_PARTITION if !created => match if_missing {
                IfMissing::Create(partitions) => {
                    create_topic(&mut conn, name, partitions)?;
                    created = true;
                    continue;
                }
                IfMissing::Fail => {
                    return Err(Error::Usage(format!(
                        "topic {name} does not exist on {bootstrap}"
                    )))
                }
            },
            // Leaders are still being elected (a new topic): poll again.
            error_code::UNKNOWN_TOPIC_OR_PARTITION | error_code::LEADER_NOT_AVAILABLE
                if attempt < METADATA_ATTEMPTS =>
            {
                std::thread::sleep(METADATA_BACKOFF);
                continue;
            }
            code => {
                return Err(Error::Broker {
                    addr: bootstrap.to_string(),
                    what: format!("Metadata for topic {name}"),
                    code,
                })
            }
        }
        let brokers: BTreeMap<i32, String> = md
            .brokers
            .iter()
            .map(|b| (b.node_id, format!("{}:{}", b.host, b.port)))
            .collect();
        let mut partitions = Vec::with_capacity(t.partitions.len());
        let mut ready = !t.partitions.is_empty();
        for p in &t.partitions {
            match brokers.get(&p.leader_id) {
                Some(addr) if p.error_code == error_code::NONE => {
                    partitions.push((p.partition_index, addr.clone()))
                }
                _ => ready = false,
            }
        }
        if ready {
            partitions.sort();
            if let IfMissing::Create(Some(n)) = if_missing {
                if !created && partitions.len() != n as usize {
                    eprintln!(
                        "note: topic {name} already exists with {} partitions; --partitions {n} is ignored",
                        partitions.len()
                    );
                }
            }
            return Ok(Topic {
                name: name.to_string(),
                partitions,
            });
        }
        std::thread::sleep(METADATA_BACKOFF);
    }
    Err(Error::Other(format!(
        "topic {name}: partitions still have no leader after {METADATA_ATTEMPTS} Metadata polls"
    )))
}

fn metadata(conn: &mut Conn, name: &str) -> Result<MetadataResponse> {
    let v = conn.versions.require(ApiKey::Metadata, conn.addr())?;
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            topic_id: [0; 16],
            name: Some(name.to_string()),
        }]),
        // We create topics explicitly, with the partition count asked for.
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    conn.call(
        ApiKey::Metadata,
        v,
        |w| req.encode(w, v),
        |r| MetadataResponse::decode(r, v),
    )
}

fn create_topic(conn: &mut Conn, name: &str, partitions: Option<i32>) -> Result<()> {
    let v = conn.versions.require(ApiKey::CreateTopics, conn.addr())?;
    let defaults = v >= CREATE_TOPICS_DEFAULTS_FROM;
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.to_string(),
            num_partitions: partitions.unwrap_or(if defaults { -1 } else { 1 }),
            replication_factor: if defaults { -1 } else { 1 },
            assignments: vec![],
            configs: vec![],
        }],
        ..Default::default()
    };
    let resp = conn.call(
        ApiKey::CreateTopics,
        v,
        |w| req.encode(w, v),
        |r| CreateTopicsResponse::decode(r, v),
    )?;
    let code = resp
        .topics
        .first()
        .map_or(error_code::NONE, |t| t.error_code);
    match code {
        // Someone else created it between our Metadata and CreateTopics.
        error_code::NONE | error_code::TOPIC_ALREADY_EXISTS => Ok(()),
        code => Err(Error::Broker {
            addr: conn.addr().to_string(),
            what: format!("CreateTopics {name}"),
            code,
        }),
    }
}

/// Errors a partition reports while its leadership is still settling (a
/// topic created a moment ago): worth a bounded retry.
fn is_transient(code: i16) -> bool {
    matches!(
        code,
        error_code::UNKNOWN_TOPIC_OR_PARTITION
            | error_code::LEADER_NOT_AVAILABLE
            | error_code::NOT_LEADER_OR_FOLLOWER
            | REPLICA_NOT_AVAILABLE
            | error_code::UNKNOWN_LEADER_EPOCH
            | error_code::OFFSET_NOT_AVAILABLE
    )
}

/// Kafka's REPLICA_NOT_AVAILABLE (pinlog never returns it).
const REPLICA_NOT_AVAILABLE: i16 = 9;

/// ListOffsets for `partitions` of `topic` at `timestamp` (earliest -2,
/// latest -1), on a connection to their leader. Apache Kafka can list a new
/// topic's leaders in Metadata before the leader serves it, so transient
/// errors are retried a bounded number of times; this also makes it the
/// readiness check every worker connection passes before the clock starts.
pub fn list_offsets(
    conn: &mut Conn,
    topic: &str,
    partitions: &[i32],
    timestamp: i64,
) -> Result<Vec<i64>> {
    let mut attempt = 1;
    loop {
        match list_offsets_once(conn, topic, partitions, timestamp) {
            Err(Error::Broker { code, .. })
                if is_transient(code) && attempt < METADATA_ATTEMPTS =>
            {
                std::thread::sleep(METADATA_BACKOFF);
                attempt += 1;
            }
            other => return other,
        }
    }
}

fn list_offsets_once(
    conn: &mut Conn,
    topic: &str,
    partitions: &[i32],
    timestamp: i64,
) -> Result<Vec<i64>> {
    let v = conn.versions.require(ApiKey::ListOffsets, conn.addr())?;
    let req = ListOffsetsRequest {
        replica_id: -1,
        isolation_level: 0,
        topics: vec![ListOffsetsTopic {
            name: topic.to_string(),
            partitions: partitions
                .iter()
                .map(|&p| ListOffsetsPartition {
                    partition_index: p,
                    timestamp,
                    ..Default::default()
                })
                .collect(),
        }],
    };
    let resp = conn.call(
        ApiKey::ListOffsets,
        v,
        |w| req.encode(w, v),
        |r| ListOffsetsResponse::decode(r, v),
    )?;
    partitions
        .iter()
        .map(|&p| {
            let got = resp
                .topics
                .iter()
                .filter(|t| t.name == topic)
                .flat_map(|t| &t.partitions)
                .find(|r| r.partition_index == p)
                .ok_or_else(|| Error::Protocol {
                    addr: conn.addr().to_string(),
                    detail: format!("ListOffsets response lacks {topic}-{p}"),
                })?;
            if got.error_code != error_code::NONE {
                return Err(Error::Broker {
                    addr: conn.addr().to_string(),
                    what: format!("ListOffsets {topic}-{p}"),
                    code: got.error_code,
                });
            }
            Ok(got.offset)
        })
        .collect()
}

/// One worker's share: the broker it talks to and its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub addr: String,
    pub partitions: Vec<i32>,
}

/// Splits the topic's partitions among `workers` connections. Workers are
/// spread over the partition leaders round-robin (each worker talks to one
/// broker), and each leader's partitions round-robin over its workers.
/// With more workers than a leader has partitions, producers share
/// partitions (`share = true`); consumers must not (they would read the
/// same records twice), so extra consumers are dropped.
pub fn assign(topic: &Topic, workers: usize, share: bool) -> Result<Vec<Assignment>> {
    let mut by_leader: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (p, addr) in &topic.partitions {
        by_leader.entry(addr.as_str()).or_default().push(*p);
    }
    let leaders: Vec<(&str, Vec<i32>)> = by_leader.into_iter().collect();
    if workers < leaders.len() {
        return Err(Error::Usage(format!(
            "topic {} has leaders on {} brokers: use at least that many connections",
            topic.name,
            leaders.len()
        )));
    }
    let mut out = Vec::with_capacity(workers);
    for (j, (addr, parts)) in leaders.iter().enumerate() {
        // Workers j, j + L, j + 2L, ... talk to leader j.
        let mut n = (workers - j).div_ceil(leaders.len());
        if !share {
            n = n.min(parts.len());
        }
        for k in 0..n {
            let mine: Vec<i32> = if n <= parts.len() {
                parts.iter().skip(k).step_by(n).copied().collect()
            } else {
                vec![parts[k % parts.len()]]
            };
            out.push(Assignment {
                addr: addr.to_string(),
                partitions: mine,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(leaders: &[&str]) -> Topic {
        Topic {
            name: "t".into(),
            partitions: leaders
                .iter()
                .enumerate()
                .map(|(i, a)| (i as i32, a.to_string()))
                .collect(),
        }
    }

    #[test]
    fn partitions_split_round_robin_on_one_broker() {
        let t = topic(&["b:1"; 5]);
        let a = assign(&t, 2, true).unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].partitions, vec![0, 2, 4]);
        assert_eq!(a[1].partitions, vec![1, 3]);
        // More producers than partitions share them.
        let a = assign(&t, 7, true).unwrap();
        assert_eq!(a.len(), 7);
        assert!(a.iter().all(|w| w.partitions.len() == 1));
        assert_eq!(a[5].partitions, vec![0]);
        // Consumers never do.
        let a = assign(&t, 7, false).unwrap();
        assert_eq!(a.len(), 5);
    }

    #[test]
    fn workers_follow_leaders() {
        let t = topic(&["a:1", "b:1", "a:1", "b:1"]);
        let a = assign(&t, 2, true).unwrap();
        assert_eq!(
            a,
            vec![
                Assignment {
                    addr: "a:1".into(),
                    partitions: vec![0, 2]
                },
                Assignment {
                    addr: "b:1".into(),
                    partitions: vec![1, 3]
                },
            ]
        );
        assert!(assign(&t, 1, true).is_err(), "one connection, two leaders");
    }
}
