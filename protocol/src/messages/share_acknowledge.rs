//! ShareAcknowledge (key 79), versions 1-2; flexible in every version.
//!
//! Acknowledgements of records a share consumer acquired, sent on their
//! own (ShareFetch can carry them too): accept, release, reject, and from
//! v2 renew (KIP-1222), which also brings back the lock duration. Uses the
//! share session of [`crate::messages::share_fetch`], with the same
//! acknowledgement batches.

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};
use crate::messages::fetch::LeaderIdAndEpoch;
use crate::messages::share_fetch::{
    decode_current_leader, decode_node_endpoints, encode_current_leader, encode_node_endpoints,
    AcknowledgementBatch, NodeEndpoint, MIN_ACK_BATCH_BYTES, MIN_TOPIC_ID_ENTRY_BYTES,
};

/// First version with `is_renew_ack` and `acquisition_lock_timeout_ms`.
const RENEW_FROM: i16 = 2;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AcknowledgePartition {
    pub partition_index: i32,
    pub acknowledgement_batches: Vec<AcknowledgementBatch>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AcknowledgeTopic {
    pub topic_id: [u8; 16],
    pub partitions: Vec<AcknowledgePartition>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareAcknowledgeRequest {
    pub group_id: Option<String>,
    pub member_id: Option<String>,
    pub share_session_epoch: i32,
    /// v2+; false below.
    pub is_renew_ack: bool,
    pub topics: Vec<AcknowledgeTopic>,
}

/// A partition: its index, an empty batch array, tags.
const MIN_PARTITION_BYTES: usize = 4 + 1 + 1;

impl ShareAcknowledgeRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let mut req = ShareAcknowledgeRequest {
            group_id: r.nullable_string("group_id", true)?,
            member_id: r.nullable_string("member_id", true)?,
            share_session_epoch: r.i32("share_session_epoch")?,
            ..Default::default()
        };
        if version >= RENEW_FROM {
            req.is_renew_ack = r.bool("is_renew_ack")?;
        }
        req.topics = r.array("topics", true, MIN_TOPIC_ID_ENTRY_BYTES, |r| {
            let topic_id = r.uuid("topic_id")?;
            let partitions = r.array("partitions", true, MIN_PARTITION_BYTES, |r| {
                let p = AcknowledgePartition {
                    partition_index: r.i32("partition_index")?,
                    acknowledgement_batches: r.array(
                        "acknowledgement_batches",
                        true,
                        MIN_ACK_BATCH_BYTES,
                        AcknowledgementBatch::decode,
                    )?,
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(AcknowledgeTopic {
                topic_id,
                partitions,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_nullable_string(self.group_id.as_deref(), true);
        w.put_nullable_string(self.member_id.as_deref(), true);
        w.put_i32(self.share_session_epoch);
        if version >= RENEW_FROM {
            w.put_bool(self.is_renew_ack);
        }
        w.put_array_len(Some(self.topics.len()), true);
        for t in &self.topics {
            w.put_slice(&t.topic_id);
            w.put_array_len(Some(t.partitions.len()), true);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_array_len(Some(p.acknowledgement_batches.len()), true);
                for b in &p.acknowledgement_batches {
                    b.encode(w);
                }
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AcknowledgePartitionData {
    pub partition_index: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub current_leader: LeaderIdAndEpoch,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AcknowledgeTopicResponse {
    pub topic_id: [u8; 16],
    pub partitions: Vec<AcknowledgePartitionData>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareAcknowledgeResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    /// v2+; 0 below.
    pub acquisition_lock_timeout_ms: i32,
    pub responses: Vec<AcknowledgeTopicResponse>,
    pub node_endpoints: Vec<NodeEndpoint>,
}

/// A partition: index, code, null message, the leader struct, tags.
const MIN_PARTITION_DATA_BYTES: usize = 4 + 2 + 1 + (4 + 4 + 1) + 1;

impl ShareAcknowledgeResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let mut resp = ShareAcknowledgeResponse {
            throttle_time_ms: r.i32("throttle_time_ms")?,
            error_code: r.i16("error_code")?,
            error_message: r.nullable_string("error_message", true)?,
            ..Default::default()
        };
        if version >= RENEW_FROM {
            resp.acquisition_lock_timeout_ms = r.i32("acquisition_lock_timeout_ms")?;
        }
        resp.responses = r.array("responses", true, MIN_TOPIC_ID_ENTRY_BYTES, |r| {
            let topic_id = r.uuid("topic_id")?;
            let partitions = r.array("partitions", true, MIN_PARTITION_DATA_BYTES, |r| {
                let p = AcknowledgePartitionData {
                    partition_index: r.i32("partition_index")?,
                    error_code: r.i16("error_code")?,
                    error_message: r.nullable_string("error_message", true)?,
                    current_leader: decode_current_leader(r)?,
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(AcknowledgeTopicResponse {
                topic_id,
                partitions,
            })
        })?;
        resp.node_endpoints = decode_node_endpoints(r)?;
        r.skip_tagged_fields()?;
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_nullable_string(self.error_message.as_deref(), true);
        if version >= RENEW_FROM {
            w.put_i32(self.acquisition_lock_timeout_ms);
        }
        w.put_array_len(Some(self.responses.len()), true);
        for t in &self.responses {
            w.put_slice(&t.topic_id);
            w.put_array_len(Some(t.partitions.len()), true);
            for p in &t.partitions {
                w.put_i32(p.partition_index);
                w.put_i16(p.error_code);
                w.put_nullable_string(p.error_message.as_deref(), true);
                encode_current_leader(w, &p.current_leader);
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        encode_node_endpoints(w, &self.node_endpoints);
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::share_fetch::{ACKNOWLEDGE_TYPE_ACCEPT, ACKNOWLEDGE_TYPE_RENEW};
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 1..=2;

    fn request(version: i16) -> ShareAcknowledgeRequest {
        ShareAcknowledgeRequest {
            group_id: Some("queue".into()),
            member_id: Some("m-1".into()),
            share_session_epoch: 4,
            is_renew_ack: version >= 2,
            topics: vec![AcknowledgeTopic {
                topic_id: [9; 16],
                partitions: vec![AcknowledgePartition {
                    partition_index: 2,
                    acknowledgement_batches: vec![AcknowledgementBatch {
                        first_offset: 0,
                        last_offset: 1,
                        acknowledge_types: vec![ACKNOWLEDGE_TYPE_ACCEPT, ACKNOWLEDGE_TYPE_RENEW],
                    }],
                }],
            }],
        }
    }

    fn response(version: i16) -> ShareAcknowledgeResponse {
        ShareAcknowledgeResponse {
            throttle_time_ms: 1,
            error_code: 0,
            error_message: Some("ok".into()),
            acquisition_lock_timeout_ms: if version >= 2 { 30_000 } else { 0 },
            responses: vec![AcknowledgeTopicResponse {
                topic_id: [9; 16],
                partitions: vec![AcknowledgePartitionData {
                    partition_index: 2,
                    error_code: 124,
                    error_message: Some("invalid record state".into()),
                    current_leader: LeaderIdAndEpoch {
                        leader_id: 3,
                        leader_epoch: 1,
                    },
                }],
            }],
            node_endpoints: vec![NodeEndpoint {
                node_id: 3,
                host: "b3".into(),
                port: 9093,
                rack: None,
            }],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&ShareAcknowledgeRequest::default(), v);
            assert_round_trip(&ShareAcknowledgeResponse::default(), v);
        }
    }

    /// Bytes worked out by hand from Kafka's JSON schema: an empty v2
    /// request and response.
    #[test]
    fn empty_v2_messages_match_the_schema() {
        let req = ShareAcknowledgeRequest {
            share_session_epoch: -1,
            ..Default::default()
        };
        assert_eq!(
            &encode(&req, 2)[..],
            &[0, 0, 0xff, 0xff, 0xff, 0xff, 0, 1, 0]
        );
        assert_eq!(encode(&req, 1).len(), 8, "no IsRenewAck in v1");
        let resp = ShareAcknowledgeResponse::default();
        assert_eq!(
            &encode(&resp, 2)[..],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0]
        );
    }

    conformance_tests!(
        ShareAcknowledgeRequest,
        ShareAcknowledgeResponse,
        VERSIONS,
        request,
        response
    );
}
