//! PartitionShards (pinlog's own API, key [`PARTITION_SHARDS_KEY`]),
//! version 0, flexible: which shard (core) of the answering broker owns
//! each named partition, and, with a target shard, a live move there
//! (`pinlog partition move`, `pinlog topic describe`'s SHARD column).
//!
//! Kafka has no such API: its threads share every partition. The key lies
//! far above Kafka's (which count up from 0), and ApiVersions does not
//! advertise it, so no Kafka client ever meets it.

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

/// The API key; see the module comment.
pub const PARTITION_SHARDS_KEY: i16 = 32_000;

/// `target_shard` of a partition only asked about.
pub const NO_MOVE: i32 = -1;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionShardsRequest {
    pub topics: Vec<PartitionShardsTopic>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionShardsTopic {
    pub name: String,
    pub partitions: Vec<PartitionShardsPartition>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionShardsPartition {
    pub partition_index: i32,
    /// The shard to move the partition to, or [`NO_MOVE`].
    pub target_shard: i32,
}

impl PartitionShardsRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        // name (1) + partitions (1) + tags (1); index (4) + target (4) + tags (1).
        let topics = r.array("topics", true, 3, |r| {
            let name = r.string("name", true)?;
            let partitions = r.array("partitions", true, 9, |r| {
                let partition_index = r.i32("partition_index")?;
                let target_shard = r.i32("target_shard")?;
                r.skip_tagged_fields()?;
                Ok(PartitionShardsPartition {
                    partition_index,
                    target_shard,
                })
            })?;
            r.skip_tagged_fields()?;
            Ok(PartitionShardsTopic { name, partitions })
        })?;
        r.skip_tagged_fields()?;
        Ok(PartitionShardsRequest { topics })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_array_len(Some(self.topics.len()), true);
        for t in &self.topics {
            w.put_string(&t.name, true);
            w.put_array_len(Some(t.partitions.len()), true);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i32(p.target_shard);
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionShardsResponse {
    pub throttle_time_ms: i32,
    /// How many shards the answering broker runs.
    pub shard_count: i32,
    pub topics: Vec<PartitionShardsTopicResponse>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionShardsTopicResponse {
    pub name: String,
    pub partitions: Vec<PartitionShardsPartitionResponse>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionShardsPartitionResponse {
    pub partition_index: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    /// The owning shard (after the move, if one was asked for and done);
    /// -1 with an error.
    pub shard: i32,
    /// The shard it was on before a move; -1 when none was asked for.
    pub previous_shard: i32,
}

impl PartitionShardsResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let shard_count = r.i32("shard_count")?;
        let topics = r.array("topics", true, 3, |r| {
            let name = r.string("name", true)?;
            // index 4, error 2, message 1, shard 4, previous 4, tags 1.
            let partitions = r.array("partitions", true, 16, |r| {
                let partition_index = r.i32("partition_index")?;
                let error_code = r.i16("error_code")?;
                let error_message = r.nullable_string("error_message", true)?;
                let shard = r.i32("shard")?;
                let previous_shard = r.i32("previous_shard")?;
                r.skip_tagged_fields()?;
                Ok(PartitionShardsPartitionResponse {
                    partition_index,
                    error_code,
                    error_message,
                    shard,
                    previous_shard,
                })
            })?;
            r.skip_tagged_fields()?;
            Ok(PartitionShardsTopicResponse { name, partitions })
        })?;
        r.skip_tagged_fields()?;
        Ok(PartitionShardsResponse {
            throttle_time_ms,
            shard_count,
            topics,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i32(self.shard_count);
        w.put_array_len(Some(self.topics.len()), true);
        for t in &self.topics {
            w.put_string(&t.name, true);
            w.put_array_len(Some(t.partitions.len()), true);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i16(p.error_code);
                w.put_nullable_string(p.error_message.as_deref(), true);
                w.put_i32(p.shard);
                w.put_i32(p.previous_shard);
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    fn request() -> PartitionShardsRequest {
        PartitionShardsRequest {
            topics: vec![PartitionShardsTopic {
                name: "orders".into(),
                partitions: vec![
                    PartitionShardsPartition {
                        partition_index: 0,
                        target_shard: 1,
                    },
                    PartitionShardsPartition {
                        partition_index: 3,
                        target_shard: NO_MOVE,
                    },
                ],
            }],
        }
    }

    fn response() -> PartitionShardsResponse {
        PartitionShardsResponse {
            throttle_time_ms: 0,
            shard_count: 2,
            topics: vec![PartitionShardsTopicResponse {
                name: "orders".into(),
                partitions: vec![
                    PartitionShardsPartitionResponse {
                        partition_index: 0,
                        error_code: 0,
                        error_message: None,
                        shard: 1,
                        previous_shard: 0,
                    },
                    PartitionShardsPartitionResponse {
                        partition_index: 3,
                        error_code: 3,
                        error_message: Some("this broker holds no replica of orders-3".into()),
                        shard: -1,
                        previous_shard: -1,
                    },
                ],
            }],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        assert_round_trip(&request(), 0);
        assert_round_trip(&response(), 0);
        assert_round_trip(&PartitionShardsResponse::default(), 0);
    }

    conformance_tests!(
        PartitionShardsRequest,
        PartitionShardsResponse,
        0..=0,
        |_| request(),
        |_| response()
    );
}
