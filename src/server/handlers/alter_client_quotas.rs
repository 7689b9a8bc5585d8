//! AlterClientQuotas (API 49, KIP-546): sets or removes users' and client
//! ids' quotas through the active controller (`controller/quotas.rs` in
//! the core decides), as `kafka-configs.sh --entity-type users|clients
//! --alter` sends it. Each entry is applied or refused on its own.

use std::rc::Rc;

use crate::controller::quotas::QuotaAlteration;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_client_quotas::*;
use crate::server::controller;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: AlterClientQuotasRequest,
) -> AlterClientQuotasResponse {
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
    let outcomes =
        match controller::alter_client_quotas(shard, alterations, req.validate_only).await {
            Ok(outcomes) => outcomes,
            Err(e) => vec![Err((e.code, e.message)); req.entries.len()],
        };
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
