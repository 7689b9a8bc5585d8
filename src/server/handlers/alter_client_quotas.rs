//! AlterClientQuotas (API 49, KIP-546): sets or removes users' and client
//! ids' quotas through the active controller (`controller/quotas.rs` in
//! the core decides), as `kafka-configs.sh --entity-type users|clients
//! --alter` sends it. Each entry is applied or refused on its own. Kafka's
//! rule: ALTER_CONFIGS on the cluster, else every entry answers
//! CLUSTER_AUTHORIZATION_FAILED.

use std::rc::Rc;

use crate::acl::matrix;
use crate::controller::quotas::QuotaAlteration;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_client_quotas::*;
use crate::server::controller;
use crate::server::handlers::access::{Access, AUTHORIZATION_FAILED};
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: AlterClientQuotasRequest,
    access: &Access<'_>,
) -> AlterClientQuotasResponse {
    if !access.allows_cluster(&BrokerState::of(shard).image(), matrix::ALTER_CLIENT_QUOTAS) {
        let refused = Err((
            error_code::CLUSTER_AUTHORIZATION_FAILED,
            AUTHORIZATION_FAILED.to_string(),
        ));
        let outcomes = vec![refused; req.entries.len()];
        return answer(req, outcomes);
    }
    let alterations: Vec<QuotaAlteration> = req
        .entries
        .iter()
        .map(|e| QuotaAlteration {
            entity: e
                .entity
                .iter()
                .map(|d| (d.entity_type.clone(), d.entity_name.clone()))
                .collect(),
            ops: e
                .ops
                .iter()
                .map(|o| (o.key.clone(), (!o.remove).then_some(o.value)))
                .collect(),
        })
        .collect();
    let outcomes = match controller::alter_client_quotas(
        shard,
        access.caller(),
        alterations,
        req.validate_only,
    )
    .await
    {
        Ok(outcomes) => outcomes,
        Err(e) => vec![Err((e.code, e.message)); req.entries.len()],
    };
    answer(req, outcomes)
}

/// The response: each entry of `req` with its outcome.
fn answer(
    req: AlterClientQuotasRequest,
    outcomes: Vec<Result<(), (i16, String)>>,
) -> AlterClientQuotasResponse {
    AlterClientQuotasResponse {
        throttle_time_ms: 0,
        entries: req
            .entries
            .into_iter()
            .zip(outcomes)
            .map(|(entry, outcome)| {
                let (error_code, error_message) = match outcome {
                    Ok(()) => (error_code::NONE, None),
                    Err((code, message)) => (code, Some(message)),
                };
                EntryResult {
                    error_code,
                    error_message,
                    entity: entry.entity,
                }
            })
            .collect(),
    }
}
