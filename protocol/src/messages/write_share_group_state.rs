//! WriteShareGroupState (key 85), versions 0-1; flexible in every version.
//!
//! A share partition's leader persisting a change of its state to the share
//! coordinator: the start offset and the state batches that changed (the
//! coordinator writes them as a ShareUpdate, or folds them into a new
//! ShareSnapshot). v1 adds the count of records whose delivery is complete
//! (KIP-1226), which lag is computed from.

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader};
use crate::messages::share_group_state::{
    decode_request, decode_response, decode_state_batches, encode_request, encode_response,
    encode_state_batches, PartitionResult, StateBatch, StateTopic, MIN_PARTITION_RESULT_BYTES,
};

/// First version with `delivery_complete_count`.
const DELIVERY_COMPLETE_COUNT_FROM: i16 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritePartition {
    pub partition: i32,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    /// v1+; -1 (unknown) below.
    pub delivery_complete_count: i32,
    pub state_batches: Vec<StateBatch>,
}

impl Default for WritePartition {
    fn default() -> Self {
        WritePartition {
            partition: 0,
            state_epoch: 0,
            leader_epoch: 0,
            start_offset: 0,
            delivery_complete_count: -1,
            state_batches: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteShareGroupStateRequest {
    pub group_id: String,
    pub topics: Vec<StateTopic<WritePartition>>,
}

/// Partition, 2 epochs, offset, empty batches, tags (v0).
const MIN_PARTITION_BYTES: usize = 4 + 4 + 4 + 8 + 1 + 1;

impl WriteShareGroupStateRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let (group_id, topics) = decode_request(r, MIN_PARTITION_BYTES, |r| {
            let mut p = WritePartition {
                partition: r.i32("partition")?,
                state_epoch: r.i32("state_epoch")?,
                leader_epoch: r.i32("leader_epoch")?,
                start_offset: r.i64("start_offset")?,
                ..Default::default()
            };
            if version >= DELIVERY_COMPLETE_COUNT_FROM {
                p.delivery_complete_count = r.i32("delivery_complete_count")?;
            }
            p.state_batches = decode_state_batches(r)?;
            Ok(p)
        })?;
        Ok(WriteShareGroupStateRequest { group_id, topics })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        encode_request(w, &self.group_id, &self.topics, |w, p| {
            w.put_i32(p.partition);
            w.put_i32(p.state_epoch);
            w.put_i32(p.leader_epoch);
            w.put_i64(p.start_offset);
            if version >= DELIVERY_COMPLETE_COUNT_FROM {
                w.put_i32(p.delivery_complete_count);
            }
            encode_state_batches(w, &p.state_batches);
        });
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteShareGroupStateResponse {
    pub results: Vec<StateTopic<PartitionResult>>,
}

impl WriteShareGroupStateResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let results = decode_response(r, MIN_PARTITION_RESULT_BYTES, PartitionResult::decode)?;
        Ok(WriteShareGroupStateResponse { results })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        encode_response(w, &self.results, PartitionResult::encode);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::share_group_state::DELIVERY_STATE_ARCHIVED;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=1;

    fn request(version: i16) -> WriteShareGroupStateRequest {
        WriteShareGroupStateRequest {
            group_id: "queue".into(),
            topics: vec![StateTopic {
                topic_id: [3; 16],
                partitions: vec![WritePartition {
                    partition: 4,
                    state_epoch: 1,
                    leader_epoch: 9,
                    start_offset: 20,
                    delivery_complete_count: if version >= 1 { 7 } else { -1 },
                    state_batches: vec![StateBatch {
                        first_offset: 20,
                        last_offset: 22,
                        delivery_state: DELIVERY_STATE_ARCHIVED,
                        delivery_count: 5,
                    }],
                }],
            }],
        }
    }

    fn response(_version: i16) -> WriteShareGroupStateResponse {
        WriteShareGroupStateResponse {
            results: vec![StateTopic {
                topic_id: [3; 16],
                partitions: vec![PartitionResult {
                    partition: 4,
                    error_code: 0,
                    error_message: None,
                }],
            }],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&WriteShareGroupStateRequest::default(), v);
            assert_round_trip(&WriteShareGroupStateResponse::default(), v);
        }
    }

    /// v1 adds DeliveryCompleteCount, four bytes, after StartOffset.
    #[test]
    fn v1_adds_the_delivery_complete_count() {
        let v0 = encode(&request(1), 0);
        let v1 = encode(&request(1), 1);
        assert_eq!(v1.len(), v0.len() + 4);
        // group (6), topics (1), uuid (16), partitions (1), 3 int32 and an
        // int64: the count follows.
        assert_eq!(&v1[6 + 1 + 16 + 1 + 20..6 + 1 + 16 + 1 + 24], &[0, 0, 0, 7]);
    }

    conformance_tests!(
        WriteShareGroupStateRequest,
        WriteShareGroupStateResponse,
        VERSIONS,
        request,
        response
    );
}
