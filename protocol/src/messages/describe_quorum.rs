//! DescribeQuorum (key 55), versions 0-2; every version is flexible.
//!
//! What `kafka-metadata-quorum.sh describe --status` and `--replication`
//! ask: the metadata quorum's leader, epoch and high watermark, and each
//! voter's and observer's log end offset and last fetch. v1 adds the fetch
//! timestamps, v2 the replicas' directory ids, error messages, and the
//! voters' listeners.

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeQuorumRequest {
    pub topics: Vec<QuorumTopicRequest>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuorumTopicRequest {
    pub topic_name: String,
    pub partitions: Vec<i32>,
}

impl DescribeQuorumRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        // topic_name, partitions, tags: 1 + 1 + 1 bytes at least.
        let topics = r.array("topics", true, 3, |r| {
            let topic_name = r.string("topic_name", true)?;
            // partition_index, tags.
            let partitions = r.array("partitions", true, 5, |r| {
                let p = r.i32("partition_index")?;
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(QuorumTopicRequest {
                topic_name,
                partitions,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(DescribeQuorumRequest { topics })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_array_len(Some(self.topics.len()), true);
        for t in &self.topics {
            w.put_string(&t.topic_name, true);
            w.put_array_len(Some(t.partitions.len()), true);
            for p in &t.partitions {
                w.put_i32(*p);
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeQuorumResponse {
    pub error_code: i16,
    /// v2+.
    pub error_message: Option<String>,
    pub topics: Vec<QuorumTopic>,
    /// v2+: the voters' endpoints.
    pub nodes: Vec<QuorumNode>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuorumTopic {
    pub topic_name: String,
    pub partitions: Vec<QuorumPartition>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuorumPartition {
    pub partition_index: i32,
    pub error_code: i16,
    /// v2+.
    pub error_message: Option<String>,
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub high_watermark: i64,
    pub current_voters: Vec<ReplicaState>,
    pub observers: Vec<ReplicaState>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaState {
    pub replica_id: i32,
    /// v2+; all zero when unknown.
    pub replica_directory_id: [u8; 16],
    pub log_end_offset: i64,
    /// v1+; -1 when unknown.
    pub last_fetch_timestamp: i64,
    /// v1+; -1 when unknown.
    pub last_caught_up_timestamp: i64,
}

impl Default for ReplicaState {
    fn default() -> Self {
        ReplicaState {
            replica_id: 0,
            replica_directory_id: [0; 16],
            log_end_offset: 0,
            last_fetch_timestamp: -1,
            last_caught_up_timestamp: -1,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuorumNode {
    pub node_id: i32,
    pub listeners: Vec<QuorumListener>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuorumListener {
    pub name: String,
    pub host: String,
    pub port: u16,
}

fn decode_replica(r: &mut Reader, version: i16) -> DecodeResult<ReplicaState> {
    let mut s = ReplicaState {
        replica_id: r.i32("replica_id")?,
        ..ReplicaState::default()
    };
    if version >= 2 {
        s.replica_directory_id = r.uuid("replica_directory_id")?;
    }
    s.log_end_offset = r.i64("log_end_offset")?;
    if version >= 1 {
        s.last_fetch_timestamp = r.i64("last_fetch_timestamp")?;
        s.last_caught_up_timestamp = r.i64("last_caught_up_timestamp")?;
    }
    r.skip_tagged_fields()?;
    Ok(s)
}

fn encode_replica(w: &mut BytesMut, s: &ReplicaState, version: i16) {
    w.put_i32(s.replica_id);
    if version >= 2 {
        w.put_slice(&s.replica_directory_id);
    }
    w.put_i64(s.log_end_offset);
    if version >= 1 {
        w.put_i64(s.last_fetch_timestamp);
        w.put_i64(s.last_caught_up_timestamp);
    }
    w.put_empty_tagged_fields();
}

impl DescribeQuorumResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let mut resp = DescribeQuorumResponse {
            error_code: r.i16("error_code")?,
            ..DescribeQuorumResponse::default()
        };
        if version >= 2 {
            resp.error_message = r.nullable_string("error_message", true)?;
        }
        let replica_min = 4 + 8 + 1;
        resp.topics = r.array("topics", true, 3, |r| {
            let topic_name = r.string("topic_name", true)?;
            // index, error, leader, epoch, hw, two arrays, tags.
            let partitions = r.array("partitions", true, 4 + 2 + 4 + 4 + 8 + 3, |r| {
                let mut p = QuorumPartition {
                    partition_index: r.i32("partition_index")?,
                    error_code: r.i16("error_code")?,
                    ..QuorumPartition::default()
                };
                if version >= 2 {
                    p.error_message = r.nullable_string("error_message", true)?;
                }
                p.leader_id = r.i32("leader_id")?;
                p.leader_epoch = r.i32("leader_epoch")?;
                p.high_watermark = r.i64("high_watermark")?;
                p.current_voters = r.array("current_voters", true, replica_min, |r| {
                    decode_replica(r, version)
                })?;
                p.observers = r.array("observers", true, replica_min, |r| {
                    decode_replica(r, version)
                })?;
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(QuorumTopic {
                topic_name,
                partitions,
            })
        })?;
        if version >= 2 {
            // node_id, listeners, tags.
            resp.nodes = r.array("nodes", true, 4 + 1 + 1, |r| {
                let node_id = r.i32("node_id")?;
                // name, host, port, tags.
                let listeners = r.array("listeners", true, 1 + 1 + 2 + 1, |r| {
                    let l = QuorumListener {
                        name: r.string("name", true)?,
                        host: r.string("host", true)?,
                        port: r.u16("port")?,
                    };
                    r.skip_tagged_fields()?;
                    Ok(l)
                })?;
                r.skip_tagged_fields()?;
                Ok(QuorumNode { node_id, listeners })
            })?;
        }
        r.skip_tagged_fields()?;
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i16(self.error_code);
        if version >= 2 {
            w.put_nullable_string(self.error_message.as_deref(), true);
        }
        w.put_array_len(Some(self.topics.len()), true);
        for t in &self.topics {
            w.put_string(&t.topic_name, true);
            w.put_array_len(Some(t.partitions.len()), true);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i16(p.error_code);
                if version >= 2 {
                    w.put_nullable_string(p.error_message.as_deref(), true);
                }
                w.put_i32(p.leader_id);
                w.put_i32(p.leader_epoch);
                w.put_i64(p.high_watermark);
                w.put_array_len(Some(p.current_voters.len()), true);
                for s in &p.current_voters {
                    encode_replica(w, s, version);
                }
                w.put_array_len(Some(p.observers.len()), true);
                for s in &p.observers {
                    encode_replica(w, s, version);
                }
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        if version >= 2 {
            w.put_array_len(Some(self.nodes.len()), true);
            for n in &self.nodes {
                w.put_i32(n.node_id);
                w.put_array_len(Some(n.listeners.len()), true);
                for l in &n.listeners {
                    w.put_string(&l.name, true);
                    w.put_string(&l.host, true);
                    w.put_u16(l.port);
                    w.put_empty_tagged_fields();
                }
                w.put_empty_tagged_fields();
            }
        }
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::conformance_tests;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=2;

    fn request(_version: i16) -> DescribeQuorumRequest {
        DescribeQuorumRequest {
            topics: vec![QuorumTopicRequest {
                topic_name: "__cluster_metadata".into(),
                partitions: vec![0, 3],
            }],
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> DescribeQuorumResponse {
        let replica = |id: i32| ReplicaState {
            replica_id: id,
            replica_directory_id: if version >= 2 {
                [id as u8; 16]
            } else {
                [0; 16]
            },
            log_end_offset: 100 + id as i64,
            last_fetch_timestamp: if version >= 1 { 1_700_000_000_000 } else { -1 },
            last_caught_up_timestamp: if version >= 1 { 1_700_000_000_001 } else { -1 },
        };
        DescribeQuorumResponse {
            error_code: 41,
            error_message: (version >= 2).then(|| "not the controller".into()),
            topics: vec![QuorumTopic {
                topic_name: "__cluster_metadata".into(),
                partitions: vec![QuorumPartition {
                    partition_index: 0,
                    error_code: 3,
                    error_message: (version >= 2).then(|| "unknown".into()),
                    leader_id: 2,
                    leader_epoch: 7,
                    high_watermark: 99,
                    current_voters: vec![replica(1), replica(2)],
                    observers: vec![replica(4)],
                }],
            }],
            nodes: if version >= 2 {
                vec![QuorumNode {
                    node_id: 2,
                    listeners: vec![QuorumListener {
                        name: "CONTROLLER".into(),
                        host: "c2.example".into(),
                        port: 9093,
                    }],
                }]
            } else {
                Vec::new()
            },
        }
    }

    conformance_tests!(
        DescribeQuorumRequest,
        DescribeQuorumResponse,
        VERSIONS,
        request,
        response
    );
}
