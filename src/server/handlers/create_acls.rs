//! CreateAcls (API 30) through the active controller
//! (`kafka-acls.sh --add`). Needs ALTER on the cluster; each creation is
//! answered on its own. The answer comes once this broker's image holds
//! the new ACLs, so the client's next request here is decided by them.

use std::rc::Rc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::create_acls::*;
use crate::server::controller;
use crate::server::handlers::access::Access;
use crate::server::handlers::describe_acls::NO_AUTHORIZER;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: CreateAclsRequest,
    access: &Access<'_>,
) -> CreateAclsResponse {
    let image = BrokerState::of(shard).image();
    let every = |code: i16, message: &str| CreateAclsResponse {
        throttle_time_ms: 0,
        results: req
            .creations
            .iter()
            .map(|_| AclCreationResult {
                error_code: code,
                error_message: Some(message.to_string()),
            })
            .collect(),
    };
    if !access.allows_cluster(&image, matrix::CREATE_ACLS) {
        return every(
            error_code::CLUSTER_AUTHORIZATION_FAILED,
            "Cluster authorization failed.",
        );
    }
    if !access.is_enabled() {
        return every(error_code::SECURITY_DISABLED, NO_AUTHORIZER);
    }
    if req.creations.is_empty() {
        return every(error_code::NONE, "");
    }
    match controller::create_acls(shard, access.caller(), &req, header.api_version).await {
        Ok(resp) => resp,
        Err(e) => every(e.code, &e.message),
    }
}
