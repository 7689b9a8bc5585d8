//! Heartbeat: keeps a member's session alive and tells it when the group
//! is rebalancing.

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::heartbeat::*;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: HeartbeatRequest,
    access: &Access<'_>,
) -> HeartbeatResponse {
    if !access.allows(
        &BrokerState::of(shard).image(),
        matrix::HEARTBEAT_GROUP,
        &req.group_id,
    ) {
        return HeartbeatResponse {
            error_code: error_code::GROUP_AUTHORIZATION_FAILED,
            ..Default::default()
        };
    }
    let code = if req.group_id.is_empty() {
        error_code::INVALID_GROUP_ID
    } else {
        let HeartbeatRequest {
            group_id,
            generation_id,
            member_id,
            group_instance_id,
        } = req;
        let gid = group_id.clone();
        on_coordinator(shard, &gid, move |c: Rc<GroupCoordinator>, s, p| {
            c.heartbeat(s, p, group_id, member_id, group_instance_id, generation_id)
        })
        .await
        .unwrap_or_else(|code| code)
    };
    HeartbeatResponse {
        throttle_time_ms: 0,
        error_code: code,
    }
}
