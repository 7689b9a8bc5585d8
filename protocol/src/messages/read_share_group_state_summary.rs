//! ReadShareGroupStateSummary (key 87), versions 0-1; flexible in every
//! version.
//!
//! The group coordinator asking the share coordinator for a partition's
//! start offset without its state batches (DescribeShareGroupOffsets). v1
//! adds the count of records whose delivery is complete (KIP-1226).

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};
use crate::messages::share_group_state::{
    decode_request, decode_response, encode_request, encode_response, StateTopic,
};

/// First version with `delivery_complete_count`.
const DELIVERY_COMPLETE_COUNT_FROM: i16 = 1;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SummaryPartition {
    pub partition: i32,
    pub leader_epoch: i32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadShareGroupStateSummaryRequest {
    pub group_id: String,
    pub topics: Vec<StateTopic<SummaryPartition>>,
}

/// Partition, epoch, tags.
const MIN_PARTITION_BYTES: usize = 4 + 4 + 1;

impl ReadShareGroupStateSummaryRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let (group_id, topics) = decode_request(r, MIN_PARTITION_BYTES, |r| {
            Ok(SummaryPartition {
                partition: r.i32("partition")?,
                leader_epoch: r.i32("leader_epoch")?,
            })
        })?;
        Ok(ReadShareGroupStateSummaryRequest { group_id, topics })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        encode_request(w, &self.group_id, &self.topics, |w, p| {
            w.put_i32(p.partition);
            w.put_i32(p.leader_epoch);
        });
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryPartitionResult {
    pub partition: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    /// v1+; -1 (unknown) below.
    pub delivery_complete_count: i32,
}

impl Default for SummaryPartitionResult {
    fn default() -> Self {
        SummaryPartitionResult {
            partition: 0,
            error_code: 0,
            error_message: None,
            state_epoch: 0,
            leader_epoch: 0,
            start_offset: 0,
            delivery_complete_count: -1,
        }
    }
}

/// Partition, code, null message, 2 epochs, offset, tags (v0).
const MIN_RESULT_BYTES: usize = 4 + 2 + 1 + 4 + 4 + 8 + 1;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadShareGroupStateSummaryResponse {
    pub results: Vec<StateTopic<SummaryPartitionResult>>,
}

impl ReadShareGroupStateSummaryResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let results = decode_response(r, MIN_RESULT_BYTES, |r| {
            let mut p = SummaryPartitionResult {
                partition: r.i32("partition")?,
                error_code: r.i16("error_code")?,
                error_message: r.nullable_string("error_message", true)?,
                state_epoch: r.i32("state_epoch")?,
                leader_epoch: r.i32("leader_epoch")?,
                start_offset: r.i64("start_offset")?,
                ..Default::default()
            };
            if version >= DELIVERY_COMPLETE_COUNT_FROM {
                p.delivery_complete_count = r.i32("delivery_complete_count")?;
            }
            Ok(p)
        })?;
        Ok(ReadShareGroupStateSummaryResponse { results })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        encode_response(w, &self.results, |w, p| {
            w.put_i32(p.partition);
            w.put_i16(p.error_code);
            w.put_nullable_string(p.error_message.as_deref(), true);
            w.put_i32(p.state_epoch);
            w.put_i32(p.leader_epoch);
            w.put_i64(p.start_offset);
            if version >= DELIVERY_COMPLETE_COUNT_FROM {
                w.put_i32(p.delivery_complete_count);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=1;

    fn request(_version: i16) -> ReadShareGroupStateSummaryRequest {
        ReadShareGroupStateSummaryRequest {
            group_id: "queue".into(),
            topics: vec![StateTopic {
                topic_id: [3; 16],
                partitions: vec![SummaryPartition {
                    partition: 4,
                    leader_epoch: 2,
                }],
            }],
        }
    }

    fn response(version: i16) -> ReadShareGroupStateSummaryResponse {
        ReadShareGroupStateSummaryResponse {
            results: vec![StateTopic {
                topic_id: [3; 16],
                partitions: vec![SummaryPartitionResult {
                    partition: 4,
                    error_code: 0,
                    error_message: Some("ok".into()),
                    state_epoch: 1,
                    leader_epoch: 2,
                    start_offset: 33,
                    delivery_complete_count: if version >= 1 { 12 } else { -1 },
                }],
            }],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&ReadShareGroupStateSummaryRequest::default(), v);
            assert_round_trip(&ReadShareGroupStateSummaryResponse::default(), v);
        }
    }

    #[test]
    fn v1_adds_the_delivery_complete_count() {
        let r = response(1);
        assert_eq!(encode(&r, 1).len(), encode(&r, 0).len() + 4);
    }

    conformance_tests!(
        ReadShareGroupStateSummaryRequest,
        ReadShareGroupStateSummaryResponse,
        VERSIONS,
        request,
        response
    );
}
