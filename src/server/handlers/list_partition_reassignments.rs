//! ListPartitionReassignments (API 46) from the active controller's image,
//! as `kafka-reassign-partitions.sh --list` and `--verify` ask for it.

use std::rc::Rc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::list_partition_reassignments::*;
use crate::server::controller;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: ListPartitionReassignmentsRequest,
    access: &Access<'_>,
) -> ListPartitionReassignmentsResponse {
    if !access.allows_cluster(
        &BrokerState::of(shard).image(),
        matrix::LIST_PARTITION_REASSIGNMENTS,
    ) {
        return ListPartitionReassignmentsResponse {
            error_code: error_code::CLUSTER_AUTHORIZATION_FAILED,
            ..Default::default()
        };
    }
    let asked = req.topics.map(|topics| {
        topics
            .into_iter()
            .map(|t| (t.name, t.partition_indexes))
            .collect::<Vec<_>>()
    });
    match controller::list_partition_reassignments(shard, access.caller(), asked).await {
        Ok(ongoing) => {
            let mut topics: Vec<OngoingTopicReassignment> = Vec::new();
            for o in ongoing {
                let partition = OngoingPartitionReassignment {
                    partition_index: o.partition,
                    replicas: o.replicas,
                    adding_replicas: o.adding,
                    removing_replicas: o.removing,
                };
                match topics.iter_mut().find(|t| t.name == o.topic) {
                    Some(t) => t.partitions.push(partition),
                    None => topics.push(OngoingTopicReassignment {
                        name: o.topic,
                        partitions: vec![partition],
                    }),
                }
            }
            ListPartitionReassignmentsResponse {
                topics,
                ..Default::default()
            }
        }
        Err(e) => ListPartitionReassignmentsResponse {
            error_code: e.code,
            error_message: Some(e.to_string()),
            ..Default::default()
        },
    }
}
