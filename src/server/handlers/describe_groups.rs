//! DescribeGroups: state, protocol and members of each group, asked of the
//! group's coordinator shard. A group the principal may not DESCRIBE gets
//! GROUP_AUTHORIZATION_FAILED; when asked (v3+), each group described
//! without error carries the principal's authorized operations on it, as
//! Kafka's `KafkaApis` reports them.

use std::rc::Rc;

use crate::acl::{matrix, ResourceType};
use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_groups::*;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

/// Kafka's "authorized operations not requested" marker.
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;
/// From v6 an unknown group is GROUP_ID_NOT_FOUND rather than a Dead group.
const NOT_FOUND_FROM: i16 = 6;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: DescribeGroupsRequest,
    access: &Access<'_>,
) -> DescribeGroupsResponse {
    let image = BrokerState::of(shard).image();
    let mut groups = Vec::with_capacity(req.groups.len());
    let with_operations = req.include_authorized_operations;
    for group_id in req.groups {
        if !access.allows(&image, matrix::DESCRIBE_GROUPS_GROUP, &group_id) {
            groups.push(DescribedGroup {
                error_code: error_code::GROUP_AUTHORIZATION_FAILED,
                group_id,
                authorized_operations: OPERATIONS_NOT_REQUESTED,
                ..DescribedGroup::default()
            });
            continue;
        }
        let gid = group_id.clone();
        let d = on_coordinator(shard, &group_id, move |c: Rc<GroupCoordinator>, s, p| {
            c.describe(s, p, gid)
        })
        .await;
        let mut described = match d {
            Err(code) if code == error_code::COORDINATOR_NOT_AVAILABLE => {
                // No __consumer_offsets yet: no group exists at all.
                dead(group_id, header.api_version)
            }
            Err(code) => DescribedGroup {
                error_code: code,
                group_id,
                authorized_operations: OPERATIONS_NOT_REQUESTED,
                ..DescribedGroup::default()
            },
            Ok(d) if d.state == "Dead" && d.error_code == error_code::NONE => {
                dead(group_id, header.api_version)
            }
            Ok(d) => DescribedGroup {
                error_code: d.error_code,
                error_message: None,
                group_id,
                group_state: d.state,
                protocol_type: d.protocol_type,
                protocol_data: d.protocol,
                members: d
                    .members
                    .into_iter()
                    .map(|m| DescribedGroupMember {
                        member_id: m.member_id,
                        group_instance_id: m.group_instance_id,
                        client_id: m.client_id,
                        client_host: m.client_host,
                        member_metadata: m.metadata,
                        member_assignment: m.assignment,
                    })
                    .collect(),
                authorized_operations: OPERATIONS_NOT_REQUESTED,
            },
        };
        if with_operations && described.error_code == error_code::NONE {
            described.authorized_operations =
                access.authorized_operations(&image, ResourceType::Group, &described.group_id);
        }
        groups.push(described);
    }
    DescribeGroupsResponse {
        throttle_time_ms: 0,
        groups,
    }
}

fn dead(group_id: String, version: i16) -> DescribedGroup {
    DescribedGroup {
        error_code: if version >= NOT_FOUND_FROM {
            error_code::GROUP_ID_NOT_FOUND
        } else {
            error_code::NONE
        },
        error_message: None,
        group_id,
        group_state: "Dead".to_string(),
        protocol_type: String::new(),
        protocol_data: String::new(),
        members: Vec::new(),
        authorized_operations: OPERATIONS_NOT_REQUESTED,
    }
}
