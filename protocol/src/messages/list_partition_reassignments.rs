//! ListPartitionReassignments (key 46), version 0; flexible.
//!
//! A null `topics` asks for every reassignment in progress.

use bytes::{BufMut, BytesMut};

use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

/// Every version is flexible.
const FLEXIBLE: bool = true;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPartitionReassignmentsRequest {
    pub timeout_ms: i32,
    /// `None`: every partition.
    pub topics: Option<Vec<ListPartitionReassignmentsTopic>>,
}

impl Default for ListPartitionReassignmentsRequest {
    fn default() -> Self {
        ListPartitionReassignmentsRequest {
            timeout_ms: 60_000,
            topics: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListPartitionReassignmentsTopic {
    pub name: String,
    pub partition_indexes: Vec<i32>,
}

impl ListPartitionReassignmentsRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let (s, a, t) = (
            min_string_bytes(FLEXIBLE),
            min_array_bytes(FLEXIBLE),
            min_tags_bytes(FLEXIBLE),
        );
        let timeout_ms = r.i32("timeout_ms")?;
        let topics = r.nullable_array("topics", FLEXIBLE, s + a + t, |r| {
            let name = r.string("name", FLEXIBLE)?;
            let partition_indexes = r.array("partition_indexes", FLEXIBLE, 4, |r| {
                r.i32("partition_index")
            })?;
            r.skip_tagged_fields()?;
            Ok(ListPartitionReassignmentsTopic {
                name,
                partition_indexes,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(ListPartitionReassignmentsRequest { timeout_ms, topics })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.timeout_ms);
        match &self.topics {
            None => w.put_array_len(None, FLEXIBLE),
            Some(topics) => {
                w.put_array_len(Some(topics.len()), FLEXIBLE);
                for topic in topics {
                    w.put_string(&topic.name, FLEXIBLE);
                    w.put_i32_array(Some(&topic.partition_indexes), FLEXIBLE);
                    w.put_empty_tagged_fields();
                }
            }
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListPartitionReassignmentsResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub topics: Vec<OngoingTopicReassignment>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OngoingTopicReassignment {
    pub name: String,
    pub partitions: Vec<OngoingPartitionReassignment>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OngoingPartitionReassignment {
    pub partition_index: i32,
    /// The target replicas, then those being removed.
    pub replicas: Vec<i32>,
    pub adding_replicas: Vec<i32>,
    pub removing_replicas: Vec<i32>,
}

impl ListPartitionReassignmentsResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let (s, a, t) = (
            min_string_bytes(FLEXIBLE),
            min_array_bytes(FLEXIBLE),
            min_tags_bytes(FLEXIBLE),
        );
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        let error_message = r.nullable_string("error_message", FLEXIBLE)?;
        let topics = r.array("topics", FLEXIBLE, s + a + t, |r| {
            let name = r.string("name", FLEXIBLE)?;
            let partitions = r.array("partitions", FLEXIBLE, 4 + 3 * a + t, |r| {
                let p = OngoingPartitionReassignment {
                    partition_index: r.i32("partition_index")?,
                    replicas: r.array("replicas", FLEXIBLE, 4, |r| r.i32("replica"))?,
                    adding_replicas: r
                        .array("adding_replicas", FLEXIBLE, 4, |r| r.i32("adding_replica"))?,
                    removing_replicas: r.array("removing_replicas", FLEXIBLE, 4, |r| {
                        r.i32("removing_replica")
                    })?,
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(OngoingTopicReassignment { name, partitions })
        })?;
        r.skip_tagged_fields()?;
        Ok(ListPartitionReassignmentsResponse {
            throttle_time_ms,
            error_code,
            error_message,
            topics,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_nullable_string(self.error_message.as_deref(), FLEXIBLE);
        w.put_array_len(Some(self.topics.len()), FLEXIBLE);
        for topic in &self.topics {
            w.put_string(&topic.name, FLEXIBLE);
            w.put_array_len(Some(topic.partitions.len()), FLEXIBLE);
            for p in &topic.partitions {
                w.put_i32(p.partition_index);
                w.put_i32_array(Some(&p.replicas), FLEXIBLE);
                w.put_i32_array(Some(&p.adding_replicas), FLEXIBLE);
                w.put_i32_array(Some(&p.removing_replicas), FLEXIBLE);
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

    const VERSION: i16 = 0;

    fn request() -> ListPartitionReassignmentsRequest {
        ListPartitionReassignmentsRequest {
            timeout_ms: 30_000,
            topics: Some(vec![ListPartitionReassignmentsTopic {
                name: "orders".into(),
                partition_indexes: vec![0, 4],
            }]),
        }
    }

    fn response() -> ListPartitionReassignmentsResponse {
        ListPartitionReassignmentsResponse {
            throttle_time_ms: 3,
            error_code: 41,
            error_message: Some("not the controller".into()),
            topics: vec![OngoingTopicReassignment {
                name: "orders".into(),
                partitions: vec![OngoingPartitionReassignment {
                    partition_index: 4,
                    replicas: vec![3, 4, 1],
                    adding_replicas: vec![4],
                    removing_replicas: vec![1],
                }],
            }],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        assert_round_trip(&request(), VERSION);
        assert_round_trip(&response(), VERSION);
        let all = ListPartitionReassignmentsRequest {
            topics: None,
            ..request()
        };
        assert_round_trip(&all, VERSION);
    }

    conformance_tests!(
        ListPartitionReassignmentsRequest,
        ListPartitionReassignmentsResponse,
        VERSION..=VERSION,
        |_| request(),
        |_| response()
    );
}
