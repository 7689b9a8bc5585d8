//! ElectLeaders (API 43) through the active controller: preferred-replica
//! and unclean elections, as `kafka-leader-election.sh` asks for them.
//! The answer comes once the elections are committed; the brokers apply
//! them from the next image.

use std::rc::Rc;

use crate::acl::matrix;
use crate::controller::elections::ElectionType;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::elect_leaders::*;
use crate::server::controller;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: ElectLeadersRequest,
    access: &Access<'_>,
) -> ElectLeadersResponse {
    if !access.allows_cluster(&BrokerState::of(shard).image(), matrix::ELECT_LEADERS) {
        return ElectLeadersResponse {
            error_code: error_code::CLUSTER_AUTHORIZATION_FAILED,
            ..Default::default()
        };
    }
    let election = match req.election_type {
        ELECTION_TYPE_PREFERRED => ElectionType::Preferred,
        ELECTION_TYPE_UNCLEAN => ElectionType::Unclean,
        other => {
            tracing::info!("ElectLeaders with unknown election type {other} refused");
            return whole_request_error(
                &req,
                error_code::INVALID_REQUEST,
                format!(
                "unknown election type {other}: 0 elects the preferred replica, 1 an unclean leader"
            ),
            );
        }
    };
    let partitions = req.topic_partitions.as_ref().map(|topics| {
        topics
            .iter()
            .map(|t| (t.topic.clone(), t.partitions.clone()))
            .collect()
    });
    match controller::elect_leaders(shard, access.caller(), election, partitions).await {
        Ok(results) => ElectLeadersResponse {
            throttle_time_ms: 0,
            error_code: error_code::NONE,
            results: results
                .into_iter()
                .map(|(topic, outcomes)| ElectLeadersTopicResult {
                    topic,
                    partitions: outcomes
                        .into_iter()
                        .map(|o| ElectLeadersPartitionResult {
                            partition: o.partition,
                            error_code: o.error_code,
                            error_message: o.message,
                        })
                        .collect(),
                })
                .collect(),
        },
        Err(e) => whole_request_error(&req, e.code, e.to_string()),
    }
}

/// The same error for every partition asked about (and for the request, in
/// versions that have a top-level code).
fn whole_request_error(
    req: &ElectLeadersRequest,
    code: i16,
    message: String,
) -> ElectLeadersResponse {
    ElectLeadersResponse {
        throttle_time_ms: 0,
        error_code: code,
        results: req
            .topic_partitions
            .iter()
            .flatten()
            .map(|t| ElectLeadersTopicResult {
                topic: t.topic.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|&partition| ElectLeadersPartitionResult {
                        partition,
                        error_code: code,
                        error_message: Some(message.clone()),
                    })
                    .collect(),
            })
            .collect(),
    }
}
