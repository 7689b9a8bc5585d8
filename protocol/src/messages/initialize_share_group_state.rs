//! InitializeShareGroupState (key 83), version 0; flexible in every version.
//!
//! Sent to the share coordinator when a share group starts consuming a
//! partition (or an admin alters its offsets): the state epoch and the
//! share-partition start offset to begin from, which the coordinator stores
//! as a fresh ShareSnapshot.

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader};
use crate::messages::share_group_state::{
    decode_request, decode_response, encode_request, encode_response, PartitionResult, StateTopic,
    MIN_PARTITION_RESULT_BYTES,
};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InitializePartition {
    pub partition: i32,
    pub state_epoch: i32,
    pub start_offset: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InitializeShareGroupStateRequest {
    pub group_id: String,
    pub topics: Vec<StateTopic<InitializePartition>>,
}

/// Partition, epoch, offset, tags.
const MIN_PARTITION_BYTES: usize = 4 + 4 + 8 + 1;

impl InitializeShareGroupStateRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let (group_id, topics) = decode_request(r, MIN_PARTITION_BYTES, |r| {
            Ok(InitializePartition {
                partition: r.i32("partition")?,
                state_epoch: r.i32("state_epoch")?,
                start_offset: r.i64("start_offset")?,
            })
        })?;
        Ok(InitializeShareGroupStateRequest { group_id, topics })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        encode_request(w, &self.group_id, &self.topics, |w, p| {
            w.put_i32(p.partition);
            w.put_i32(p.state_epoch);
            w.put_i64(p.start_offset);
        });
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InitializeShareGroupStateResponse {
    pub results: Vec<StateTopic<PartitionResult>>,
}

impl InitializeShareGroupStateResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let results = decode_response(r, MIN_PARTITION_RESULT_BYTES, PartitionResult::decode)?;
        Ok(InitializeShareGroupStateResponse { results })
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

    fn request(_version: i16) -> InitializeShareGroupStateRequest {
        InitializeShareGroupStateRequest {
            group_id: "queue".into(),
            topics: vec![StateTopic {
                topic_id: [3; 16],
                partitions: vec![
                    InitializePartition {
                        partition: 0,
                        state_epoch: 2,
                        start_offset: 100,
                    },
                    InitializePartition {
                        partition: 1,
                        state_epoch: 2,
                        start_offset: -1,
                    },
                ],
            }],
        }
    }

    fn response(_version: i16) -> InitializeShareGroupStateResponse {
        InitializeShareGroupStateResponse {
            results: vec![StateTopic {
                topic_id: [3; 16],
                partitions: vec![PartitionResult {
                    partition: 1,
                    error_code: 89,
                    error_message: Some("fenced".into()),
                }],
            }],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        assert_round_trip(&InitializeShareGroupStateRequest::default(), 0);
        assert_round_trip(&InitializeShareGroupStateResponse::default(), 0);
    }

    /// Bytes worked out by hand from Kafka's JSON schema.
    #[test]
    fn a_request_matches_the_schema() {
        let req = InitializeShareGroupStateRequest {
            group_id: "g".into(),
            topics: vec![StateTopic {
                topic_id: [0; 16],
                partitions: vec![InitializePartition {
                    partition: 1,
                    state_epoch: 2,
                    start_offset: 3,
                }],
            }],
        };
        let mut want = vec![2, b'g', 2];
        want.extend_from_slice(&[0; 16]);
        want.push(2);
        want.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0]);
        want.extend_from_slice(&[0, 0]);
        assert_eq!(&encode(&req, 0)[..], &want[..]);
    }

    conformance_tests!(
        InitializeShareGroupStateRequest,
        InitializeShareGroupStateResponse,
        VERSIONS,
        request,
        response
    );
}
