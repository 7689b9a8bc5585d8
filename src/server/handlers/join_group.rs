//! JoinGroup: forwarded to the group's coordinator shard, where it may
//! wait (up to the rebalance timeout) for the rest of the group.

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, GroupCoordinator, HeartbeatPrincipal};
use crate::group::group::{JoinOutcome, JoinParams};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::join_group::*;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

/// From this version a member without an id gets one with
/// MEMBER_ID_REQUIRED and must join again with it (KIP-394).
const REQUIRE_KNOWN_MEMBER_ID_FROM: i16 = 4;
/// Before v1 there is no separate rebalance timeout: the session timeout
/// serves as both.
const REBALANCE_TIMEOUT_FROM: i16 = 1;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: JoinGroupRequest,
    client_host: &str,
    access: &Access<'_>,
) -> JoinGroupResponse {
    if !access.allows(
        &BrokerState::of(shard).image(),
        matrix::JOIN_GROUP,
        &req.group_id,
    ) {
        return response(JoinOutcome::error(
            error_code::GROUP_AUTHORIZATION_FAILED,
            &req.member_id,
        ));
    }
    if req.group_id.is_empty() {
        return response(JoinOutcome::error(
            error_code::INVALID_GROUP_ID,
            &req.member_id,
        ));
    }
    let params = JoinParams {
        member_id: req.member_id.clone(),
        instance_id: req.group_instance_id.clone(),
        client_id: header.client_id.clone().unwrap_or_default(),
        client_host: format!("/{client_host}"),
        session_timeout_ms: req.session_timeout_ms,
        rebalance_timeout_ms: if header.api_version >= REBALANCE_TIMEOUT_FROM {
            req.rebalance_timeout_ms
        } else {
            req.session_timeout_ms
        },
        protocol_type: req.protocol_type,
        protocols: req
            .protocols
            .into_iter()
            .map(|p| (p.name, p.metadata))
            .collect(),
        require_known_member_id: header.api_version >= REQUIRE_KNOWN_MEMBER_ID_FROM,
        // Only a member without an id gets one (and a UUID is a getrandom
        // call): a known member's join never names a new id.
        fresh_id_suffix: if req.member_id.is_empty() {
            crate::node::ids::uuid_string()
        } else {
            String::new()
        },
    };
    let group_id = req.group_id.clone();
    let member_id = req.member_id.clone();
    // A classic member joining a consumer group may resolve its regexes
    // again, with its own DESCRIBE rights (see HeartbeatPrincipal).
    let principal = HeartbeatPrincipal {
        principal: access.principal().to_string(),
        host: client_host.to_string(),
    };
    let outcome = on_coordinator(
        shard,
        &req.group_id,
        move |c: Rc<GroupCoordinator>, s, p| c.join(s, p, group_id, params, principal),
    )
    .await
    .unwrap_or_else(|code| JoinOutcome::error(code, &member_id));
    response(outcome)
}

fn response(o: JoinOutcome) -> JoinGroupResponse {
    JoinGroupResponse {
        throttle_time_ms: 0,
        error_code: o.error_code,
        generation_id: o.generation_id,
        protocol_type: o.protocol_type,
        protocol_name: o.protocol_name,
        leader: o.leader,
        skip_assignment: o.skip_assignment,
        member_id: o.member_id,
        members: o
            .members
            .into_iter()
            .map(|m| JoinGroupResponseMember {
                member_id: m.member_id,
                group_instance_id: m.group_instance_id,
                metadata: m.metadata,
            })
            .collect(),
    }
}
