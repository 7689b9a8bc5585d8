//! DeleteShareGroupState (key 86), version 0; flexible in every version.
//!
//! Asks the share coordinator to forget a share group's state for some
//! partitions (the group or its offsets were deleted): it writes tombstones
//! for their ShareSnapshot and ShareUpdate keys.

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader};
use crate::messages::share_group_state::{
    decode_request, decode_response, encode_request, encode_response, PartitionResult, StateTopic,
    MIN_PARTITION_RESULT_BYTES,
};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeletePartition {
    pub partition: i32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteShareGroupStateRequest {
    pub group_id: String,
    pub topics: Vec<StateTopic<DeletePartition>>,
}

/// Partition, tags.
const MIN_PARTITION_BYTES: usize = 4 + 1;

impl DeleteShareGroupStateRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let (group_id, topics) = decode_request(r, MIN_PARTITION_BYTES, |r| {
            Ok(DeletePartition {
                partition: r.i32("partition")?,
            })
        })?;
        Ok(DeleteShareGroupStateRequest { group_id, topics })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        encode_request(w, &self.group_id, &self.topics, |w, p| {
            w.put_i32(p.partition)
        });
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteShareGroupStateResponse {
    pub results: Vec<StateTopic<PartitionResult>>,
}

impl DeleteShareGroupStateResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let results = decode_response(r, MIN_PARTITION_RESULT_BYTES, PartitionResult::decode)?;
        Ok(DeleteShareGroupStateResponse { results })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        encode_response(w, &self.results, PartitionResult::encode);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=0;

    fn request(_version: i16) -> DeleteShareGroupStateRequest {
        DeleteShareGroupStateRequest {
            group_id: "queue".into(),
            topics: vec![
                StateTopic {
                    topic_id: [3; 16],
                    partitions: vec![
                        DeletePartition { partition: 0 },
                        DeletePartition { partition: 2 },
                    ],
                },
                StateTopic {
                    topic_id: [4; 16],
                    partitions: vec![],
                },
            ],
        }
    }

    fn response(_version: i16) -> DeleteShareGroupStateResponse {
        DeleteShareGroupStateResponse {
            results: vec![StateTopic {
                topic_id: [3; 16],
                partitions: vec![PartitionResult {
                    partition: 2,
                    error_code: 3,
                    error_message: Some("unknown".into()),
                }],
            }],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        assert_round_trip(&DeleteShareGroupStateRequest::default(), 0);
        assert_round_trip(&DeleteShareGroupStateResponse::default(), 0);
    }

    #[test]
    fn a_huge_partition_count_is_refused_before_allocating() {
        let mut b = BytesMut::new();
        b.put_slice(&[2, b'g', 2]);
        b.put_slice(&[0; 16]);
        b.put_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_count_too_large::<DeleteShareGroupStateRequest>(b.freeze(), 0);
    }

    conformance_tests!(
        DeleteShareGroupStateRequest,
        DeleteShareGroupStateResponse,
        VERSIONS,
        request,
        response
    );
}
