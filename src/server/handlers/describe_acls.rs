//! DescribeAcls (API 29): the ACLs a filter selects, from this broker's
//! image (`kafka-acls.sh --list`). Needs DESCRIBE on the cluster; without
//! an authorizer Kafka answers SECURITY_DISABLED, and so does pinlog.

use std::rc::Rc;

use crate::acl::matrix;
use crate::acl::wire::{describe_resources, filter_of_describe};
use crate::acl::AclBinding;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_acls::*;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

/// Kafka's message for the ACL APIs on a broker without an authorizer.
pub const NO_AUTHORIZER: &str = "No Authorizer is configured.";

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DescribeAclsRequest,
    access: &Access<'_>,
) -> DescribeAclsResponse {
    let image = BrokerState::of(shard).image();
    let refused = |code: i16, message: &str| DescribeAclsResponse {
        throttle_time_ms: 0,
        error_code: code,
        error_message: Some(message.to_string()),
        resources: Vec::new(),
    };
    if !access.allows_cluster(&image, matrix::DESCRIBE_ACLS) {
        return refused(
            error_code::CLUSTER_AUTHORIZATION_FAILED,
            "Cluster authorization failed.",
        );
    }
    if !access.is_enabled() {
        return refused(error_code::SECURITY_DISABLED, NO_AUTHORIZER);
    }
    let filter = filter_of_describe(&req);
    if let Err(e) = filter.validate() {
        return refused(e.code, &e.message);
    }
    let bindings: Vec<AclBinding> = image
        .acls
        .matching(&filter)
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    DescribeAclsResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        error_message: None,
        resources: describe_resources(&bindings),
    }
}
