//! UnregisterBroker (API 64) through the active controller, as
//! `kafka-cluster.sh unregister --id N` sends it: removes a decommissioned
//! broker's registration.

use std::rc::Rc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::unregister_broker::*;
use crate::server::controller;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: UnregisterBrokerRequest,
    access: &Access<'_>,
) -> UnregisterBrokerResponse {
    if !access.allows_cluster(&BrokerState::of(shard).image(), matrix::UNREGISTER_BROKER) {
        return UnregisterBrokerResponse {
            error_code: error_code::CLUSTER_AUTHORIZATION_FAILED,
            ..Default::default()
        };
    }
    let (error_code, error_message) =
        match controller::unregister_broker(shard, access.caller(), req.broker_id).await {
            Ok(Ok(())) => {
                tracing::info!(
                    broker = req.broker_id,
                    "unregistered broker {}",
                    req.broker_id
                );
                (error_code::NONE, None)
            }
            Ok(Err((code, message))) => (code, Some(message)),
            Err(e) => (e.code, Some(e.to_string())),
        };
    UnregisterBrokerResponse {
        throttle_time_ms: 0,
        error_code,
        error_message,
    }
}
