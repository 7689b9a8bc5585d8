//! SyncGroup: the leader hands in the assignment; everybody gets theirs.

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::group::group::SyncOutcome;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::sync_group::*;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: SyncGroupRequest,
    access: &Access<'_>,
) -> SyncGroupResponse {
    if !access.allows(
        &BrokerState::of(shard).image(),
        matrix::SYNC_GROUP,
        &req.group_id,
    ) {
        return response(SyncOutcome::error(error_code::GROUP_AUTHORIZATION_FAILED));
    }
    if req.group_id.is_empty() {
        return response(SyncOutcome::error(error_code::INVALID_GROUP_ID));
    }
    let assignments = req
        .assignments
        .into_iter()
        .map(|a| (a.member_id, a.assignment))
        .collect();
    let SyncGroupRequest {
        group_id,
        generation_id,
        member_id,
        group_instance_id,
        protocol_type,
        protocol_name,
        ..
    } = req;
    let gid = group_id.clone();
    let outcome = on_coordinator(shard, &gid, move |c: Rc<GroupCoordinator>, s, p| {
        c.sync(
            s,
            p,
            group_id,
            member_id,
            group_instance_id,
            generation_id,
            protocol_type,
            protocol_name,
            assignments,
        )
    })
    .await
    .unwrap_or_else(SyncOutcome::error);
    response(outcome)
}

fn response(o: SyncOutcome) -> SyncGroupResponse {
    SyncGroupResponse {
        throttle_time_ms: 0,
        error_code: o.error_code,
        protocol_type: o.protocol_type,
        protocol_name: o.protocol_name,
        assignment: o.assignment,
    }
}
