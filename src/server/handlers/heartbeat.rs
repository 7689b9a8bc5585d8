//! Heartbeat: keeps a member's session alive and tells it when the group
//! is rebalancing.

use std::rc::Rc;

use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::heartbeat::*;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: HeartbeatRequest,
) -> HeartbeatResponse {
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
