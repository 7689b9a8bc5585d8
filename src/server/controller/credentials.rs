//! The controller's side of the credential and quota admin APIs:
//! AlterUserScramCredentials and AlterClientQuotas, from any shard to the
//! active controller, and there the records each becomes (decided in
//! `core/src/controller/scram.rs` and `quotas.rs`).

use std::rc::Rc;

use super::{call_as, wrong_answer, AdminAnswer, AdminRequest, Caller, ControllerResult};
use crate::controller::quotas::{plan_alter_client_quotas, QuotaAlteration, QuotaOutcome};
use crate::controller::scram::{plan_scram_changes, ScramChange, UserOutcome};
use crate::metadata::image::MetadataImage;
use crate::metadata::records::MetadataRecord;
use crate::shard::shard::Shard;

/// Commits a decision's records (none when validating or when it changes
/// nothing) and gives its answer.
pub(super) async fn committed<F>(
    records: Vec<MetadataRecord>,
    validate_only: bool,
    answer: AdminAnswer,
    commit: impl Fn(Vec<MetadataRecord>, bool) -> F,
    offset: &mut i64,
) -> ControllerResult<AdminAnswer>
where
    F: std::future::Future<Output = ControllerResult<i64>>,
{
    if !records.is_empty() && !validate_only {
        *offset = commit(records, false).await?;
    }
    Ok(answer)
}

/// The records of an AlterClientQuotas, and its answer.
pub(super) fn decide_client_quotas(
    alterations: &[QuotaAlteration],
) -> (Vec<MetadataRecord>, AdminAnswer) {
    let (records, outcomes) = plan_alter_client_quotas(alterations);
    for r in &records {
        if let MetadataRecord::ClientQuota { entity, key, value } = r {
            tracing::info!(?entity, key = %key, value = ?value.map(|v| v.0), "client quota altered");
        }
    }
    (records, AdminAnswer::QuotasAltered(outcomes))
}

/// The records of an AlterUserScramCredentials, and its answer.
pub(super) fn decide_scram_credentials(
    image: &MetadataImage,
    users: &[(String, Vec<ScramChange>)],
) -> (Vec<MetadataRecord>, AdminAnswer) {
    let (records, outcomes) = plan_scram_changes(image, users);
    for (user, outcome) in &outcomes {
        match outcome {
            Ok(()) => tracing::info!(user = %user, "SCRAM credentials altered"),
            Err((code, message)) => {
                tracing::info!(user = %user, code, "SCRAM credential change refused: {message}")
            }
        }
    }
    (records, AdminAnswer::ScramAltered(outcomes))
}

/// Alters client quotas (AlterClientQuotas) through the active
/// controller; callable from any shard.
pub async fn alter_client_quotas(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    alterations: Vec<QuotaAlteration>,
    validate_only: bool,
) -> ControllerResult<Vec<QuotaOutcome>> {
    match call_as(
        shard,
        caller,
        AdminRequest::AlterClientQuotas {
            alterations,
            validate_only,
        },
    )
    .await?
    {
        AdminAnswer::QuotasAltered(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Alters SCRAM credentials (AlterUserScramCredentials) through the active
/// controller; callable from any shard. The answer comes once this broker
/// authenticates with the new credentials.
pub async fn alter_scram_credentials(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    users: Vec<(String, Vec<ScramChange>)>,
) -> ControllerResult<Vec<UserOutcome>> {
    match call_as(shard, caller, AdminRequest::AlterScramCredentials { users }).await? {
        AdminAnswer::ScramAltered(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}
