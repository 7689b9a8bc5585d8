//! ListGroups: every shard's groups, filtered by state (v4+) and type
//! (v5+: "classic" for JoinGroup's groups, "consumer" for KIP-848's).

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::GroupCoordinator;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::list_groups::*;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: ListGroupsRequest,
    access: &Access<'_>,
) -> ListGroupsResponse {
    let mut groups = Vec::new();
    let mut code = error_code::NONE;
    for s in 0..shard.shard_count() {
        let listed = shard
            .submit_to(s, |shard| async move {
                GroupCoordinator::of(&shard).list(&shard)
            })
            .await;
        match listed {
            Ok(Ok(gs)) => groups.extend(gs),
            Ok(Err(c)) => code = c,
            Err(_) => code = error_code::COORDINATOR_NOT_AVAILABLE,
        }
    }
    let states: Vec<String> = req
        .states_filter
        .iter()
        .map(|s| s.to_ascii_lowercase())
        .collect();
    let types: Vec<String> = req
        .types_filter
        .iter()
        .map(|t| t.to_ascii_lowercase())
        .collect();
    let mut out: Vec<ListedGroup> = groups
        .into_iter()
        .filter(|g| states.is_empty() || states.contains(&g.state.to_ascii_lowercase()))
        .filter(|g| types.is_empty() || types.iter().any(|t| t == g.group_type))
        .map(|g| ListedGroup {
            group_id: g.group_id,
            protocol_type: g.protocol_type,
            group_state: g.state,
            group_type: g.group_type.to_string(),
        })
        .collect();
    let image = BrokerState::of(shard).image();
    if !access.allows_cluster(&image, matrix::LIST_GROUPS_CLUSTER) {
        out.retain(|g| access.allows(&image, matrix::LIST_GROUPS_GROUP, &g.group_id));
    }
    out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    ListGroupsResponse {
        throttle_time_ms: 0,
        error_code: code,
        groups: out,
    }
}
