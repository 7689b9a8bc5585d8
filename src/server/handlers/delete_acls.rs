//! DeleteAcls (API 31) through the active controller
//! (`kafka-acls.sh --remove`). Needs ALTER on the cluster; each filter is
//! answered with the ACLs it removed. The answer comes once this broker's
//! image no longer holds them.

use std::rc::Rc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_acls::*;
use crate::server::controller;
use crate::server::handlers::access::Access;
use crate::server::handlers::describe_acls::NO_AUTHORIZER;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: DeleteAclsRequest,
    access: &Access<'_>,
) -> DeleteAclsResponse {
    let image = BrokerState::of(shard).image();
    let every = |code: i16, message: &str| DeleteAclsResponse {
        throttle_time_ms: 0,
        filter_results: req
            .filters
            .iter()
            .map(|_| DeleteAclsFilterResult {
                error_code: code,
                error_message: Some(message.to_string()),
                matching_acls: Vec::new(),
            })
            .collect(),
    };
    if !access.allows_cluster(&image, matrix::DELETE_ACLS) {
        return every(
            error_code::CLUSTER_AUTHORIZATION_FAILED,
            "Cluster authorization failed.",
        );
    }
    if !access.is_enabled() {
        return every(error_code::SECURITY_DISABLED, NO_AUTHORIZER);
    }
    if req.filters.is_empty() {
        return every(error_code::NONE, "");
    }
    match controller::delete_acls(shard, access.caller(), &req, header.api_version).await {
        Ok(resp) => resp,
        Err(e) => every(e.code, &e.message),
    }
}
