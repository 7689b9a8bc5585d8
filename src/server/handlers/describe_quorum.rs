//! DescribeQuorum: the metadata quorum, for `kafka-metadata-quorum.sh`.
//!
//! Today the quorum is this node alone, the one voter and leader of
//! `__cluster_metadata-0`: its high watermark is the end of the metadata
//! log the image was built from (every record is committed once written),
//! and there are no observers. The Raft quorum of the cluster issue will
//! answer from its own state instead.

use std::rc::Rc;

use crate::metadata::store::{METADATA_EPOCH, METADATA_TOPIC};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_quorum::*;
use crate::shard::shard::{now_ms, Shard};

/// The listener name the voters' endpoints are reported under (Kafka's
/// default `controller.listener.names`). The single-node controller takes
/// requests on the client listener.
const CONTROLLER_LISTENER_NAME: &str = "CONTROLLER";

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DescribeQuorumRequest,
) -> DescribeQuorumResponse {
    let broker = BrokerState::of(shard);
    let node = broker.node_id();
    // The next offset of the metadata log: everything before it is applied.
    let high_watermark = broker.image().offset + 1;
    let now = now_ms();
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
                        leader_id: node,
                        leader_epoch: METADATA_EPOCH,
                        high_watermark,
                        current_voters: vec![ReplicaState {
                            replica_id: node,
                            replica_directory_id: [0; 16],
                            log_end_offset: high_watermark,
                            // The leader is always caught up with itself.
                            last_fetch_timestamp: now,
                            last_caught_up_timestamp: now,
                        }],
                        observers: Vec::new(),
                    }
                })
                .collect();
            QuorumTopic {
                topic_name: t.topic_name,
                partitions,
            }
        })
        .collect();
    let (host, port) = broker.config.advertised_host_port();
    DescribeQuorumResponse {
        error_code: error_code::NONE,
        error_message: None,
        topics,
        nodes: vec![QuorumNode {
            node_id: node,
            listeners: vec![QuorumListener {
                name: CONTROLLER_LISTENER_NAME.into(),
                host,
                port: u16::try_from(port).unwrap_or(0),
            }],
        }],
    }
}
