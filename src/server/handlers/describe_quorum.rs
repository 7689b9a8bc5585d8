//! DescribeQuorum: the metadata quorum, for `kafka-metadata-quorum.sh`.
//!
//! Answered by the active controller (forwarded there like Kafka's
//! brokers forward it), which knows every voter's progress. The observers
//! are the broker-only nodes (`quorum::observer`).

use std::rc::Rc;

use crate::acl::matrix;
use crate::metadata::METADATA_TOPIC;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_quorum::*;
use crate::quorum::VoterStatus;
use crate::server::controller;
use crate::server::handlers::access::Access;
use crate::shard::shard::{now_ms, Shard};

/// The listener name the voters' endpoints are reported under (Kafka's
/// default `controller.listener.names`).
const CONTROLLER_LISTENER_NAME: &str = "CONTROLLER";

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DescribeQuorumRequest,
    access: &Access<'_>,
) -> DescribeQuorumResponse {
    if !access.allows_cluster(&BrokerState::of(shard).image(), matrix::DESCRIBE_QUORUM) {
        return DescribeQuorumResponse {
            error_code: error_code::CLUSTER_AUTHORIZATION_FAILED,
            ..Default::default()
        };
    }
    let status = match controller::describe_quorum(shard, access.caller()).await {
        Ok(s) => s,
        Err(e) => {
            return DescribeQuorumResponse {
                error_code: e.code,
                error_message: Some(e.message),
                ..DescribeQuorumResponse::default()
            }
        }
    };
    let now = now_ms();
    let replica = |v: &VoterStatus| ReplicaState {
        replica_id: v.node_id,
        replica_directory_id: [0; 16],
        log_end_offset: v.log_end_offset,
        last_fetch_timestamp: v.last_ack_ms_ago.map_or(-1, |ago| now - ago as i64),
        // A voter at the leader's end is caught up as of its last answer.
        last_caught_up_timestamp: match v.last_ack_ms_ago {
            Some(ago) if v.log_end_offset >= status.high_watermark => now - ago as i64,
            _ => -1,
        },
    };
    let topics = req
        .topics
        .into_iter()
        .map(|t| {
            let is_metadata = t.topic_name == METADATA_TOPIC;
            let partitions = t
                .partitions
                .into_iter()
                .map(|p| {
                    if !is_metadata || p != 0 {
                        return QuorumPartition {
                            partition_index: p,
                            error_code: error_code::UNKNOWN_TOPIC_OR_PARTITION,
                            error_message: Some(format!(
                                "the metadata quorum is {METADATA_TOPIC}-0; {}-{p} is not a quorum partition",
                                t.topic_name
                            )),
                            leader_id: -1,
                            leader_epoch: -1,
                            high_watermark: -1,
                            ..QuorumPartition::default()
                        };
                    }
                    QuorumPartition {
                        partition_index: 0,
                        error_code: error_code::NONE,
                        error_message: None,
                        leader_id: status.leader.unwrap_or(-1),
                        leader_epoch: status.leader_epoch,
                        high_watermark: status.high_watermark,
                        current_voters: status.voters.iter().map(replica).collect(),
                        observers: status.observers.iter().map(replica).collect(),
                    }
                })
                .collect();
            QuorumTopic {
                topic_name: t.topic_name,
                partitions,
            }
        })
        .collect();
    let nodes = status
        .voters
        .iter()
        .map(|v| {
            let (host, port) = v.address.rsplit_once(':').unwrap_or((&v.address, "0"));
            QuorumNode {
                node_id: v.node_id,
                listeners: vec![QuorumListener {
                    name: CONTROLLER_LISTENER_NAME.into(),
                    host: host.to_string(),
                    port: port.parse().unwrap_or(0),
                }],
            }
        })
        .collect();
    DescribeQuorumResponse {
        error_code: error_code::NONE,
        error_message: None,
        topics,
        nodes,
    }
}
