//! DescribeShareGroupOffsets (key 90), versions 0-1; flexible in every
//! version.
//!
//! The admin view of a share group's progress: per partition its
//! share-partition start offset (the first record not yet delivered for
//! good) and leader epoch. A null topic list asks for every topic the group
//! has state for. v1 adds the lag (KIP-1226).

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

/// First version with `lag`.
const LAG_FROM: i16 = 1;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeTopicRequest {
    pub topic_name: String,
    pub partitions: Vec<i32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeGroupRequest {
    pub group_id: String,
    /// `None` for every topic of the group.
    pub topics: Option<Vec<DescribeTopicRequest>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeShareGroupOffsetsRequest {
    pub groups: Vec<DescribeGroupRequest>,
}

/// A topic: empty name, empty partitions, tags.
const MIN_TOPIC_REQUEST_BYTES: usize = 1 + 1 + 1;
/// A group: empty id, null topics, tags.
const MIN_GROUP_REQUEST_BYTES: usize = 1 + 1 + 1;

impl DescribeShareGroupOffsetsRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let groups = r.array("groups", true, MIN_GROUP_REQUEST_BYTES, |r| {
            let group_id = r.string("group_id", true)?;
            let topics = r.nullable_array("topics", true, MIN_TOPIC_REQUEST_BYTES, |r| {
                let t = DescribeTopicRequest {
                    topic_name: r.string("topic_name", true)?,
                    partitions: r.array("partitions", true, 4, |r| r.i32("partition"))?,
                };
                r.skip_tagged_fields()?;
                Ok(t)
            })?;
            r.skip_tagged_fields()?;
            Ok(DescribeGroupRequest { group_id, topics })
        })?;
        r.skip_tagged_fields()?;
        Ok(DescribeShareGroupOffsetsRequest { groups })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_array_len(Some(self.groups.len()), true);
        for g in &self.groups {
            w.put_string(&g.group_id, true);
            w.put_array_len(g.topics.as_ref().map(Vec::len), true);
            for t in g.topics.iter().flatten() {
                w.put_string(&t.topic_name, true);
                w.put_i32_array(Some(&t.partitions), true);
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedPartition {
    pub partition_index: i32,
    /// The share-partition start offset, or -1 when the group has none.
    pub start_offset: i64,
    pub leader_epoch: i32,
    /// v1+; -1 (unknown) below.
    pub lag: i64,
    pub error_code: i16,
    pub error_message: Option<String>,
}

impl Default for DescribedPartition {
    fn default() -> Self {
        DescribedPartition {
            partition_index: 0,
            start_offset: 0,
            leader_epoch: 0,
            lag: -1,
            error_code: 0,
            error_message: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribedTopic {
    pub topic_name: String,
    pub topic_id: [u8; 16],
    pub partitions: Vec<DescribedPartition>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribedGroup {
    pub group_id: String,
    pub topics: Vec<DescribedTopic>,
    pub error_code: i16,
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeShareGroupOffsetsResponse {
    pub throttle_time_ms: i32,
    pub groups: Vec<DescribedGroup>,
}

/// Index, offset, epoch, code, null message, tags (v0).
const MIN_PARTITION_BYTES: usize = 4 + 8 + 4 + 2 + 1 + 1;
/// Empty name, uuid, empty partitions, tags.
const MIN_TOPIC_BYTES: usize = 1 + 16 + 1 + 1;
/// Empty id, empty topics, code, null message, tags.
const MIN_GROUP_BYTES: usize = 1 + 1 + 2 + 1 + 1;

impl DescribeShareGroupOffsetsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let groups = r.array("groups", true, MIN_GROUP_BYTES, |r| {
            let group_id = r.string("group_id", true)?;
            let topics = r.array("topics", true, MIN_TOPIC_BYTES, |r| {
                let topic_name = r.string("topic_name", true)?;
                let topic_id = r.uuid("topic_id")?;
                let partitions = r.array("partitions", true, MIN_PARTITION_BYTES, |r| {
                    let mut p = DescribedPartition {
                        partition_index: r.i32("partition_index")?,
                        start_offset: r.i64("start_offset")?,
                        leader_epoch: r.i32("leader_epoch")?,
                        ..Default::default()
                    };
                    if version >= LAG_FROM {
                        p.lag = r.i64("lag")?;
                    }
                    p.error_code = r.i16("error_code")?;
                    p.error_message = r.nullable_string("error_message", true)?;
                    r.skip_tagged_fields()?;
                    Ok(p)
                })?;
                r.skip_tagged_fields()?;
                Ok(DescribedTopic {
                    topic_name,
                    topic_id,
                    partitions,
                })
            })?;
            let g = DescribedGroup {
                group_id,
                topics,
                error_code: r.i16("error_code")?,
                error_message: r.nullable_string("error_message", true)?,
            };
            r.skip_tagged_fields()?;
            Ok(g)
        })?;
        r.skip_tagged_fields()?;
        Ok(DescribeShareGroupOffsetsResponse {
            throttle_time_ms,
            groups,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.groups.len()), true);
        for g in &self.groups {
            w.put_string(&g.group_id, true);
            w.put_array_len(Some(g.topics.len()), true);
            for t in &g.topics {
                w.put_string(&t.topic_name, true);
                w.put_slice(&t.topic_id);
                w.put_array_len(Some(t.partitions.len()), true);
                for p in &t.partitions {
                    w.put_i32(p.partition_index);
                    w.put_i64(p.start_offset);
                    w.put_i32(p.leader_epoch);
                    if version >= LAG_FROM {
                        w.put_i64(p.lag);
                    }
                    w.put_i16(p.error_code);
                    w.put_nullable_string(p.error_message.as_deref(), true);
                    w.put_empty_tagged_fields();
                }
                w.put_empty_tagged_fields();
            }
            w.put_i16(g.error_code);
            w.put_nullable_string(g.error_message.as_deref(), true);
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=1;

    fn request(_version: i16) -> DescribeShareGroupOffsetsRequest {
        DescribeShareGroupOffsetsRequest {
            groups: vec![
                DescribeGroupRequest {
                    group_id: "queue".into(),
                    topics: Some(vec![DescribeTopicRequest {
                        topic_name: "orders-é".into(),
                        partitions: vec![0, 3],
                    }]),
                },
                DescribeGroupRequest {
                    group_id: "all".into(),
                    topics: None,
                },
            ],
        }
    }

    fn response(version: i16) -> DescribeShareGroupOffsetsResponse {
        DescribeShareGroupOffsetsResponse {
            throttle_time_ms: 5,
            groups: vec![DescribedGroup {
                group_id: "queue".into(),
                topics: vec![DescribedTopic {
                    topic_name: "orders".into(),
                    topic_id: [8; 16],
                    partitions: vec![DescribedPartition {
                        partition_index: 3,
                        start_offset: 120,
                        leader_epoch: 4,
                        lag: if version >= 1 { 17 } else { -1 },
                        error_code: 0,
                        error_message: Some("ok".into()),
                    }],
                }],
                error_code: 0,
                error_message: None,
            }],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&DescribeShareGroupOffsetsRequest::default(), v);
            assert_round_trip(&DescribeShareGroupOffsetsResponse::default(), v);
        }
    }

    /// A null topic list (every topic) is a compact length of 0.
    #[test]
    fn a_null_topic_list_matches_the_schema() {
        let req = DescribeShareGroupOffsetsRequest {
            groups: vec![DescribeGroupRequest {
                group_id: "g".into(),
                topics: None,
            }],
        };
        assert_eq!(&encode(&req, 0)[..], &[2, 2, b'g', 0, 0, 0]);
    }

    #[test]
    fn v1_adds_the_lag() {
        let r = response(1);
        assert_eq!(encode(&r, 1).len(), encode(&r, 0).len() + 8);
    }

    conformance_tests!(
        DescribeShareGroupOffsetsRequest,
        DescribeShareGroupOffsetsResponse,
        VERSIONS,
        request,
        response
    );
}
