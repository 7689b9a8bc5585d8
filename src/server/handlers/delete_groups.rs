//! DeleteGroups: removes empty groups and their committed offsets.

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_groups::*;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DeleteGroupsRequest,
    access: &Access<'_>,
) -> DeleteGroupsResponse {
    let image = BrokerState::of(shard).image();
    let mut results = Vec::with_capacity(req.groups_names.len());
    for group_id in req.groups_names {
        let gid = group_id.clone();
        let code = if !access.allows(&image, matrix::DELETE_GROUPS_GROUP, &group_id) {
            error_code::GROUP_AUTHORIZATION_FAILED
        } else if group_id.is_empty() {
            error_code::INVALID_GROUP_ID
        } else {
            match on_coordinator(shard, &group_id, move |c: Rc<GroupCoordinator>, s, p| {
                c.delete_group(s, p, gid)
            })
            .await
            {
                Ok(code) => code,
                // Without __consumer_offsets there are no groups.
                Err(c) if c == error_code::COORDINATOR_NOT_AVAILABLE => {
                    error_code::GROUP_ID_NOT_FOUND
                }
                Err(c) => c,
            }
        };
        results.push(DeletableGroupResult {
            group_id,
            error_code: code,
        });
    }
    DeleteGroupsResponse {
        throttle_time_ms: 0,
        results,
    }
}
