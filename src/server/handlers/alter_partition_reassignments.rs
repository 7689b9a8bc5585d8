//! AlterPartitionReassignments (API 45) through the active controller, as
//! `kafka-reassign-partitions.sh --execute` and `--cancel` send it. The
//! answer comes once the change is committed; the brokers act on it from
//! the next image (added replicas start following, removed ones delete
//! their copy once the reassignment completes).

use std::rc::Rc;

use crate::acl::matrix;
use crate::controller::reassignment::ReassignmentRequest;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_partition_reassignments::*;
use crate::server::controller;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: AlterPartitionReassignmentsRequest,
    access: &Access<'_>,
) -> AlterPartitionReassignmentsResponse {
    if !access.allows_cluster(
        &BrokerState::of(shard).image(),
        matrix::ALTER_PARTITION_REASSIGNMENTS,
    ) {
        return AlterPartitionReassignmentsResponse {
            throttle_time_ms: 0,
            allow_replication_factor_change: req.allow_replication_factor_change,
            error_code: error_code::CLUSTER_AUTHORIZATION_FAILED,
            error_message: None,
            responses: Vec::new(),
        };
    }
    let requests: Vec<ReassignmentRequest> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| ReassignmentRequest {
                topic: t.name.clone(),
                partition: p.partition_index,
                target: p.replicas.clone(),
            })
        })
        .collect();
    if requests.is_empty() {
        return AlterPartitionReassignmentsResponse {
            allow_replication_factor_change: req.allow_replication_factor_change,
            ..Default::default()
        };
    }
    match controller::alter_reassignments(
        shard,
        access.caller(),
        requests,
        req.allow_replication_factor_change,
    )
    .await
    {
        Ok(outcomes) => {
            let mut responses: Vec<ReassignableTopicResponse> = Vec::new();
            for o in outcomes {
                let partition = ReassignablePartitionResponse {
                    partition_index: o.partition,
                    error_code: o.error_code,
                    error_message: o.message,
                };
                match responses.iter_mut().find(|t| t.name == o.topic) {
                    Some(t) => t.partitions.push(partition),
                    None => responses.push(ReassignableTopicResponse {
                        name: o.topic,
                        partitions: vec![partition],
                    }),
                }
            }
            AlterPartitionReassignmentsResponse {
                allow_replication_factor_change: req.allow_replication_factor_change,
                responses,
                ..Default::default()
            }
        }
        Err(e) => whole_request_error(&req, e.code, e.to_string()),
    }
}

/// Kafka's `getErrorResponse`: the same error at the top level and for
/// every partition asked about.
fn whole_request_error(
    req: &AlterPartitionReassignmentsRequest,
    code: i16,
    message: String,
) -> AlterPartitionReassignmentsResponse {
    if code != error_code::NOT_CONTROLLER {
        tracing::info!(code, "AlterPartitionReassignments failed: {message}");
    }
    AlterPartitionReassignmentsResponse {
        allow_replication_factor_change: req.allow_replication_factor_change,
        error_code: code,
        error_message: Some(message.clone()),
        responses: req
            .topics
            .iter()
            .map(|t| ReassignableTopicResponse {
                name: t.name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| ReassignablePartitionResponse {
                        partition_index: p.partition_index,
                        error_code: code,
                        error_message: Some(message.clone()),
                    })
                    .collect(),
            })
            .collect(),
        ..Default::default()
    }
}
