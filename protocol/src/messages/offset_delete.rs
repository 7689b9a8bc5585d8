//! OffsetDelete (key 47), version 0; never flexible.
//!
//! Deletes a group's committed offsets for partitions the group no longer
//! subscribes to (KIP-496). The group-level error comes first in the
//! response, before the throttle time, unlike in most responses.

use bytes::{BufMut, BytesMut};

use super::min_topic_bytes;
use crate::codec::{DecodeResult, Reader, Writer};

/// No version of this API is flexible; the codec's helpers still take the
/// flag, so it is spelled out once here.
const FLEXIBLE: bool = false;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetDeleteRequest {
    pub group_id: String,
    pub topics: Vec<OffsetDeleteRequestTopic>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetDeleteRequestTopic {
    pub name: String,
    pub partitions: Vec<i32>,
}

impl OffsetDeleteRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let group_id = r.string("group_id", FLEXIBLE)?;
        let topics = r.array("topics", FLEXIBLE, min_topic_bytes(FLEXIBLE), |r| {
            let name = r.string("name", FLEXIBLE)?;
            let partitions = r.array("partitions", FLEXIBLE, 4, |r| r.i32("partition_index"))?;
            Ok(OffsetDeleteRequestTopic { name, partitions })
        })?;
        Ok(OffsetDeleteRequest { group_id, topics })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_string(&self.group_id, FLEXIBLE);
        w.put_array_len(Some(self.topics.len()), FLEXIBLE);
        for t in &self.topics {
            w.put_string(&t.name, FLEXIBLE);
            w.put_array_len(Some(t.partitions.len()), FLEXIBLE);
            for p in &t.partitions {
                w.put_i32(*p);
            }
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetDeleteResponse {
    pub error_code: i16,
    pub throttle_time_ms: i32,
    pub topics: Vec<OffsetDeleteResponseTopic>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetDeleteResponseTopic {
    pub name: String,
    pub partitions: Vec<OffsetDeleteResponsePartition>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetDeleteResponsePartition {
    pub partition_index: i32,
    pub error_code: i16,
}

impl OffsetDeleteResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let error_code = r.i16("error_code")?;
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let topics = r.array("topics", FLEXIBLE, min_topic_bytes(FLEXIBLE), |r| {
            let name = r.string("name", FLEXIBLE)?;
            let partitions = r.array("partitions", FLEXIBLE, 4 + 2, |r| {
                Ok(OffsetDeleteResponsePartition {
                    partition_index: r.i32("partition_index")?,
                    error_code: r.i16("error_code")?,
                })
            })?;
            Ok(OffsetDeleteResponseTopic { name, partitions })
        })?;
        Ok(OffsetDeleteResponse {
            error_code,
            throttle_time_ms,
            topics,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i16(self.error_code);
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.topics.len()), FLEXIBLE);
        for t in &self.topics {
            w.put_string(&t.name, FLEXIBLE);
            w.put_array_len(Some(t.partitions.len()), FLEXIBLE);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i16(p.error_code);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSION: i16 = 0;

    fn request() -> OffsetDeleteRequest {
        OffsetDeleteRequest {
            group_id: "billing".into(),
            topics: vec![
                OffsetDeleteRequestTopic {
                    name: "orders".into(),
                    partitions: vec![0, 5],
                },
                OffsetDeleteRequestTopic {
                    name: "empty".into(),
                    partitions: vec![],
                },
            ],
        }
    }

    fn response() -> OffsetDeleteResponse {
        OffsetDeleteResponse {
            error_code: 0,
            throttle_time_ms: 8,
            topics: vec![OffsetDeleteResponseTopic {
                name: "orders".into(),
                partitions: vec![
                    OffsetDeleteResponsePartition {
                        partition_index: 0,
                        error_code: 0,
                    },
                    OffsetDeleteResponsePartition {
                        partition_index: 5,
                        error_code: 86,
                    },
                ],
            }],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        assert_round_trip(&request(), VERSION);
        assert_round_trip(&OffsetDeleteRequest::default(), VERSION);
        assert_round_trip(&response(), VERSION);
    }

    #[test]
    fn group_error_precedes_throttle_time() {
        let resp = OffsetDeleteResponse {
            error_code: 0x0102,
            throttle_time_ms: 0x0304_0506,
            topics: vec![],
        };
        assert_eq!(&encode(&resp, VERSION)[..6], &[1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_string("g", false);
        b.put_i32(i32::MAX);
        assert_count_too_large::<OffsetDeleteRequest>(b.freeze(), VERSION);
    }

    conformance_tests!(
        OffsetDeleteRequest,
        OffsetDeleteResponse,
        VERSION..=VERSION,
        |_| request(),
        |_| response()
    );
}
