//! ConsumerGroupDescribe (KIP-848): each group described by its
//! coordinator shard: epochs, assignor, and every member's subscription,
//! current and target assignment.

use std::rc::Rc;

use crate::acl::{matrix, ResourceType};
use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::consumer_group_describe::*;
use crate::server::handlers::access::{Access, DESCRIBED_TOPICS_AUTHORIZATION_FAILED};
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: ConsumerGroupDescribeRequest,
    access: &Access<'_>,
) -> ConsumerGroupDescribeResponse {
    let image = BrokerState::of(shard).image();
    let mut groups = Vec::with_capacity(req.group_ids.len());
    for group_id in req.group_ids {
        if !access.allows(&image, matrix::CONSUMER_GROUP_DESCRIBE_GROUP, &group_id) {
            groups.push(DescribedGroup {
                error_code: error_code::GROUP_AUTHORIZATION_FAILED,
                group_id,
                ..DescribedGroup::default()
            });
            continue;
        }
        if group_id.is_empty() {
            groups.push(DescribedGroup {
                error_code: error_code::INVALID_GROUP_ID,
                ..DescribedGroup::default()
            });
            continue;
        }
        let gid = group_id.clone();
        let mut described =
            on_coordinator(shard, &group_id, move |c: Rc<GroupCoordinator>, s, p| {
                c.consumer_describe(s, p, gid)
            })
            .await
            .unwrap_or_else(|code| DescribedGroup {
                error_code: code,
                group_id,
                ..DescribedGroup::default()
            });
        // Kafka's KafkaApis (KAFKA-18813): a client may not learn of
        // topics it may not DESCRIBE through a group's assignments, so a
        // group holding any is refused whole.
        let held = described.members.iter().flat_map(|m| {
            m.assignment
                .iter()
                .chain(&m.target_assignment)
                .map(|t| t.topic_name.as_str())
        });
        if !access
            .denied(&image, matrix::CONSUMER_GROUP_DESCRIBE_TOPIC, held)
            .is_empty()
        {
            groups.push(DescribedGroup {
                error_code: error_code::TOPIC_AUTHORIZATION_FAILED,
                error_message: Some(DESCRIBED_TOPICS_AUTHORIZATION_FAILED.into()),
                group_id: described.group_id,
                ..DescribedGroup::default()
            });
            continue;
        }
        if req.include_authorized_operations && described.error_code == error_code::NONE {
            described.authorized_operations =
                access.authorized_operations(&image, ResourceType::Group, &described.group_id);
        }
        groups.push(described);
    }
    ConsumerGroupDescribeResponse {
        throttle_time_ms: 0,
        groups,
    }
}
