//! LeaveGroup: one member (v0-2) or a batch of members, static ones by
//! instance id (v3+).

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::leave_group::*;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

/// First version that names members in a batch.
const BATCHED_FROM: i16 = 3;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: LeaveGroupRequest,
    access: &Access<'_>,
) -> LeaveGroupResponse {
    if !access.allows(
        &BrokerState::of(shard).image(),
        matrix::LEAVE_GROUP,
        &req.group_id,
    ) {
        return LeaveGroupResponse {
            error_code: error_code::GROUP_AUTHORIZATION_FAILED,
            ..Default::default()
        };
    }
    let batched = header.api_version >= BATCHED_FROM;
    let members: Vec<(String, Option<String>)> = if batched {
        req.members
            .iter()
            .map(|m| (m.member_id.clone(), m.group_instance_id.clone()))
            .collect()
    } else {
        vec![(req.member_id.clone(), None)]
    };
    let result = if req.group_id.is_empty() {
        Err(error_code::INVALID_GROUP_ID)
    } else {
        let (group_id, ms) = (req.group_id.clone(), members.clone());
        on_coordinator(
            shard,
            &req.group_id,
            move |c: Rc<GroupCoordinator>, s, p| c.leave(s, p, group_id, ms),
        )
        .await
        .and_then(|r| r)
    };
    match result {
        Err(code) => LeaveGroupResponse {
            throttle_time_ms: 0,
            error_code: code,
            members: Vec::new(),
        },
        Ok(codes) if batched => LeaveGroupResponse {
            throttle_time_ms: 0,
            error_code: error_code::NONE,
            members: members
                .into_iter()
                .zip(codes)
                .map(
                    |((member_id, group_instance_id), error_code)| MemberResponse {
                        member_id,
                        group_instance_id,
                        error_code,
                    },
                )
                .collect(),
        },
        Ok(codes) => LeaveGroupResponse {
            throttle_time_ms: 0,
            error_code: codes.first().copied().unwrap_or(error_code::NONE),
            members: Vec::new(),
        },
    }
}
