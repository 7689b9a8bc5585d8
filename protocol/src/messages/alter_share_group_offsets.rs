//! AlterShareGroupOffsets (key 91), version 0; flexible in every version.
//!
//! An admin resetting an empty share group's start offsets per partition
//! (`kafka-share-groups.sh --reset-offsets`): the group coordinator
//! initializes the share partitions' state again from them.

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterPartitionRequest {
    pub partition_index: i32,
    pub start_offset: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterTopicRequest {
    pub topic_name: String,
    pub partitions: Vec<AlterPartitionRequest>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterShareGroupOffsetsRequest {
    pub group_id: String,
    pub topics: Vec<AlterTopicRequest>,
}

/// A topic: empty name, empty partitions, tags.
const MIN_TOPIC_REQUEST_BYTES: usize = 1 + 1 + 1;
/// A partition: index, offset, tags.
const MIN_PARTITION_REQUEST_BYTES: usize = 4 + 8 + 1;

impl AlterShareGroupOffsetsRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let group_id = r.string("group_id", true)?;
        let topics = r.array("topics", true, MIN_TOPIC_REQUEST_BYTES, |r| {
            let topic_name = r.string("topic_name", true)?;
            let partitions = r.array("partitions", true, MIN_PARTITION_REQUEST_BYTES, |r| {
                let p = AlterPartitionRequest {
                    partition_index: r.i32("partition_index")?,
                    start_offset: r.i64("start_offset")?,
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(AlterTopicRequest {
                topic_name,
                partitions,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(AlterShareGroupOffsetsRequest { group_id, topics })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_string(&self.group_id, true);
        w.put_array_len(Some(self.topics.len()), true);
        for t in &self.topics {
            w.put_string(&t.topic_name, true);
            w.put_array_len(Some(t.partitions.len()), true);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i64(p.start_offset);
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterPartitionResponse {
    pub partition_index: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterTopicResponse {
    pub topic_name: String,
    pub topic_id: [u8; 16],
    pub partitions: Vec<AlterPartitionResponse>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlterShareGroupOffsetsResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub responses: Vec<AlterTopicResponse>,
}

/// Empty name, uuid, empty partitions, tags.
const MIN_TOPIC_RESPONSE_BYTES: usize = 1 + 16 + 1 + 1;
/// Index, code, null message, tags.
const MIN_PARTITION_RESPONSE_BYTES: usize = 4 + 2 + 1 + 1;

impl AlterShareGroupOffsetsResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let mut resp = AlterShareGroupOffsetsResponse {
            throttle_time_ms: r.i32("throttle_time_ms")?,
            error_code: r.i16("error_code")?,
            error_message: r.nullable_string("error_message", true)?,
            responses: Vec::new(),
        };
        resp.responses = r.array("responses", true, MIN_TOPIC_RESPONSE_BYTES, |r| {
            let topic_name = r.string("topic_name", true)?;
            let topic_id = r.uuid("topic_id")?;
            let partitions = r.array("partitions", true, MIN_PARTITION_RESPONSE_BYTES, |r| {
                let p = AlterPartitionResponse {
                    partition_index: r.i32("partition_index")?,
                    error_code: r.i16("error_code")?,
                    error_message: r.nullable_string("error_message", true)?,
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(AlterTopicResponse {
                topic_name,
                topic_id,
                partitions,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_nullable_string(self.error_message.as_deref(), true);
        w.put_array_len(Some(self.responses.len()), true);
        for t in &self.responses {
            w.put_string(&t.topic_name, true);
            w.put_slice(&t.topic_id);
            w.put_array_len(Some(t.partitions.len()), true);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i16(p.error_code);
                w.put_nullable_string(p.error_message.as_deref(), true);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=0;

    fn request(_version: i16) -> AlterShareGroupOffsetsRequest {
        AlterShareGroupOffsetsRequest {
            group_id: "queue".into(),
            topics: vec![AlterTopicRequest {
                topic_name: "orders".into(),
                partitions: vec![
                    AlterPartitionRequest {
                        partition_index: 0,
                        start_offset: 42,
                    },
                    AlterPartitionRequest {
                        partition_index: 1,
                        start_offset: 0,
                    },
                ],
            }],
        }
    }

    fn response(_version: i16) -> AlterShareGroupOffsetsResponse {
        AlterShareGroupOffsetsResponse {
            throttle_time_ms: 1,
            error_code: 0,
            error_message: Some("ok".into()),
            responses: vec![AlterTopicResponse {
                topic_name: "orders".into(),
                topic_id: [2; 16],
                partitions: vec![AlterPartitionResponse {
                    partition_index: 1,
                    error_code: 68,
                    error_message: Some("group not empty".into()),
                }],
            }],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        assert_round_trip(&AlterShareGroupOffsetsRequest::default(), 0);
        assert_round_trip(&AlterShareGroupOffsetsResponse::default(), 0);
    }

    /// Bytes worked out by hand from Kafka's JSON schema.
    #[test]
    fn an_empty_response_matches_the_schema() {
        let resp = AlterShareGroupOffsetsResponse::default();
        assert_eq!(&encode(&resp, 0)[..], &[0, 0, 0, 0, 0, 0, 0, 1, 0]);
    }

    conformance_tests!(
        AlterShareGroupOffsetsRequest,
        AlterShareGroupOffsetsResponse,
        VERSIONS,
        request,
        response
    );
}
