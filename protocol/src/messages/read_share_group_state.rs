//! ReadShareGroupState (key 84), version 0; flexible in every version.
//!
//! A share partition's leader loading its state from the share coordinator
//! when it starts serving the partition: the state epoch, the share-partition
//! start offset and the state batches of the in-flight records. The leader
//! epoch fences a stale leader.

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};
use crate::messages::share_group_state::{
    decode_request, decode_response, decode_state_batches, encode_request, encode_response,
    encode_state_batches, StateBatch, StateTopic,
};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadPartition {
    pub partition: i32,
    pub leader_epoch: i32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadShareGroupStateRequest {
    pub group_id: String,
    pub topics: Vec<StateTopic<ReadPartition>>,
}

/// Partition, epoch, tags.
const MIN_PARTITION_BYTES: usize = 4 + 4 + 1;

impl ReadShareGroupStateRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let (group_id, topics) = decode_request(r, MIN_PARTITION_BYTES, |r| {
            Ok(ReadPartition {
                partition: r.i32("partition")?,
                leader_epoch: r.i32("leader_epoch")?,
            })
        })?;
        Ok(ReadShareGroupStateRequest { group_id, topics })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        encode_request(w, &self.group_id, &self.topics, |w, p| {
            w.put_i32(p.partition);
            w.put_i32(p.leader_epoch);
        });
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadPartitionResult {
    pub partition: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub state_epoch: i32,
    pub start_offset: i64,
    pub state_batches: Vec<StateBatch>,
}

/// Partition, code, null message, epoch, offset, empty batches, tags.
const MIN_RESULT_BYTES: usize = 4 + 2 + 1 + 4 + 8 + 1 + 1;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadShareGroupStateResponse {
    pub results: Vec<StateTopic<ReadPartitionResult>>,
}

impl ReadShareGroupStateResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let results = decode_response(r, MIN_RESULT_BYTES, |r| {
            Ok(ReadPartitionResult {
                partition: r.i32("partition")?,
                error_code: r.i16("error_code")?,
                error_message: r.nullable_string("error_message", true)?,
                state_epoch: r.i32("state_epoch")?,
                start_offset: r.i64("start_offset")?,
                state_batches: decode_state_batches(r)?,
            })
        })?;
        Ok(ReadShareGroupStateResponse { results })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        encode_response(w, &self.results, |w, p| {
            w.put_i32(p.partition);
            w.put_i16(p.error_code);
            w.put_nullable_string(p.error_message.as_deref(), true);
            w.put_i32(p.state_epoch);
            w.put_i64(p.start_offset);
            encode_state_batches(w, &p.state_batches);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::share_group_state::{
        DELIVERY_STATE_ACKNOWLEDGED, DELIVERY_STATE_AVAILABLE,
    };
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=0;

    fn request(_version: i16) -> ReadShareGroupStateRequest {
        ReadShareGroupStateRequest {
            group_id: "queue".into(),
            topics: vec![StateTopic {
                topic_id: [3; 16],
                partitions: vec![ReadPartition {
                    partition: 4,
                    leader_epoch: 9,
                }],
            }],
        }
    }

    fn response(_version: i16) -> ReadShareGroupStateResponse {
        ReadShareGroupStateResponse {
            results: vec![StateTopic {
                topic_id: [3; 16],
                partitions: vec![ReadPartitionResult {
                    partition: 4,
                    error_code: 0,
                    error_message: Some("ok".into()),
                    state_epoch: 1,
                    start_offset: 10,
                    state_batches: vec![
                        StateBatch {
                            first_offset: 10,
                            last_offset: 14,
                            delivery_state: DELIVERY_STATE_ACKNOWLEDGED,
                            delivery_count: 1,
                        },
                        StateBatch {
                            first_offset: 15,
                            last_offset: 15,
                            delivery_state: DELIVERY_STATE_AVAILABLE,
                            delivery_count: 3,
                        },
                    ],
                }],
            }],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        assert_round_trip(&ReadShareGroupStateRequest::default(), 0);
        assert_round_trip(&ReadShareGroupStateResponse::default(), 0);
    }

    /// An empty response is an empty results array and its tags: no
    /// throttle time in the share-group state APIs.
    #[test]
    fn an_empty_response_has_no_throttle_time() {
        assert_eq!(
            &encode(&ReadShareGroupStateResponse::default(), 0)[..],
            &[1, 0]
        );
    }

    conformance_tests!(
        ReadShareGroupStateRequest,
        ReadShareGroupStateResponse,
        VERSIONS,
        request,
        response
    );
}
