//! WriteTxnMarkers: a transaction coordinator on another broker asks this
//! one, the leader of some of the transaction's partitions, to append the
//! COMMIT or ABORT marker to each (`txn_coordinator/markers.rs` does the
//! writing, and calls the same code for partitions it leads itself).

use std::rc::Rc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::write_txn_markers::*;
use crate::server::handlers::access::Access;
use crate::server::txn_coordinator::markers::{write_local, MarkerWrite, TRANSACTION_VERSION_1};
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// First version whose markers carry their transaction version.
const TRANSACTION_VERSION_FROM: i16 = 2;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: WriteTxnMarkersRequest,
    access: &Access<'_>,
) -> WriteTxnMarkersResponse {
    // Only brokers write markers (Kafka: CLUSTER_ACTION); refused, every
    // partition answers so.
    if !access.allows_cluster(&BrokerState::of(shard).image(), matrix::WRITE_TXN_MARKERS) {
        return WriteTxnMarkersResponse {
            markers: req
                .markers
                .iter()
                .map(|m| WritableTxnMarkerResult {
                    producer_id: m.producer_id,
                    topics: m
                        .topics
                        .iter()
                        .map(|t| WritableTxnMarkerTopicResult {
                            name: t.name.clone(),
                            partitions: t
                                .partition_indexes
                                .iter()
                                .map(|p| WritableTxnMarkerPartitionResult {
                                    partition_index: *p,
                                    error_code: error_code::CLUSTER_AUTHORIZATION_FAILED,
                                })
                                .collect(),
                        })
                        .collect(),
                })
                .collect(),
        };
    }
    let mut markers = Vec::with_capacity(req.markers.len());
    for m in req.markers {
        let write = MarkerWrite {
            producer_id: m.producer_id,
            producer_epoch: m.producer_epoch,
            commit: m.transaction_result,
            coordinator_epoch: m.coordinator_epoch,
            transaction_version: if header.api_version >= TRANSACTION_VERSION_FROM {
                i16::from(m.transaction_version)
            } else {
                TRANSACTION_VERSION_1
            },
        };
        let tps: Vec<TopicPartition> = m
            .topics
            .iter()
            .flat_map(|t| {
                t.partition_indexes
                    .iter()
                    .map(|p| TopicPartition::new(t.name.clone(), *p))
            })
            .collect();
        let results = write_local(shard, &write, &tps).await;
        let mut topics: Vec<WritableTxnMarkerTopicResult> = Vec::new();
        for (tp, code) in results {
            if code != error_code::NONE {
                tracing::debug!(partition = %tp, producer_id = m.producer_id, code, "marker not written");
            }
            let partition = WritableTxnMarkerPartitionResult {
                partition_index: tp.partition,
                error_code: code,
            };
            match topics.last_mut() {
                Some(t) if t.name == tp.topic => t.partitions.push(partition),
                _ => topics.push(WritableTxnMarkerTopicResult {
                    name: tp.topic,
                    partitions: vec![partition],
                }),
            }
        }
        markers.push(WritableTxnMarkerResult {
            producer_id: m.producer_id,
            topics,
        });
    }
    WriteTxnMarkersResponse { markers }
}
