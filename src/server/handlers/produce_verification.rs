//! KIP-890 on the produce path: before a producer's first transactional
//! batch of a transaction is appended to a partition, its leader asks the
//! transaction coordinator about it (`txn_coordinator/verification.rs`),
//! and appends it with the guard it took before asking, so that a marker
//! written meanwhile (the transaction ended) refuses the append.
//!
//! Produce v12+ is transaction version 2: the leader adds the partition to
//! the transaction. Earlier versions only verify, unless
//! `transaction.partition.verification.enable` is off.

use std::collections::BTreeSet;
use std::rc::Rc;

use crate::log::producer_state::{TxnVerification, VerificationNeed};
use crate::node::replicas;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::server::txn_coordinator::verification::{add_or_verify, VerificationRequest};
use crate::shard::shard::{now_ms, Shard};
use crate::topic_partition::TopicPartition;

/// Produce v12 is the first version of transaction version 2 (its schema is
/// v11's): the leader adds the partition to the transaction.
pub const PRODUCE_TRANSACTION_VERSION_2_FROM: i16 = 12;
/// Produce v11 is the first version whose clients know
/// TRANSACTION_ABORTABLE; older ones get INVALID_TXN_STATE.
const PRODUCE_TRANSACTION_ABORTABLE_FROM: i16 = 11;

/// A partition's transactional batch, as its header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnBatch {
    pub producer_id: i64,
    pub producer_epoch: i16,
}

/// What a partition's append goes ahead with, or the error it is answered
/// with instead.
pub type Verified = Result<TxnVerification, (i16, String)>;

/// Verifies the transactional batches of one request's partitions on their
/// owning shard (this one): one coordinator round trip for all of them.
/// `batches[i]` is partition `i`'s transactional batch, if it has one.
pub async fn verify_on_owner(
    shard: &Rc<Shard>,
    transactional_id: Option<&str>,
    produce_version: i16,
    batches: &[(TopicPartition, Option<TxnBatch>)],
) -> Vec<Verified> {
    let supports_epoch_bump = produce_version >= PRODUCE_TRANSACTION_VERSION_2_FROM;
    let enabled = supports_epoch_bump
        || BrokerState::of(shard)
            .config
            .transaction
            .partition_verification_enable;
    let mut out: Vec<Verified> = Vec::with_capacity(batches.len());
    // (answer index, guard) of the partitions the coordinator must see.
    let mut asking = Vec::new();
    let mut ask_as: Option<TxnBatch> = None;
    for (tp, batch) in batches {
        let Some(batch) = batch.filter(|_| enabled) else {
            out.push(Ok(TxnVerification::Off));
            continue;
        };
        let Some(led) = replicas::led_partition(shard, tp) else {
            out.push(Err((error_code::NOT_LEADER_OR_FOLLOWER, String::new())));
            continue;
        };
        let need = match led.log.write().await {
            Ok(mut log) => log.begin_txn_verification(
                batch.producer_id,
                batch.producer_epoch,
                supports_epoch_bump,
                now_ms(),
            ),
            Err(_) => {
                out.push(Err((
                    error_code::NOT_LEADER_OR_FOLLOWER,
                    format!("{tp} is closing on this broker"),
                )));
                continue;
            }
        };
        match need {
            Err(current) => out.push(Err((
                error_code::INVALID_PRODUCER_EPOCH,
                format!(
                    "producer {} epoch {} is older than epoch {current} on {tp}",
                    batch.producer_id, batch.producer_epoch
                ),
            ))),
            Ok(VerificationNeed::Ongoing) => out.push(Ok(TxnVerification::On(None))),
            Ok(VerificationNeed::Verify(guard)) => {
                if ask_as.is_some_and(|a| a != batch) {
                    // Kafka allows one producer per transactional request.
                    out.push(Err((
                        error_code::INVALID_PRODUCER_ID_MAPPING,
                        "a transactional produce request holds batches of more than one \
                         producer id or epoch"
                            .to_string(),
                    )));
                    continue;
                }
                ask_as = Some(batch);
                asking.push((out.len(), tp.clone(), guard));
                out.push(Ok(TxnVerification::On(Some(guard))));
            }
        }
    }
    let (Some(batch), false) = (ask_as, asking.is_empty()) else {
        return out;
    };
    let Some(transactional_id) = transactional_id else {
        // Transactional batches without a transactional id cannot be
        // verified: the append refuses any that would open a transaction.
        for (i, _, _) in asking {
            out[i] = Ok(TxnVerification::On(None));
        }
        return out;
    };
    let request = VerificationRequest {
        transactional_id: transactional_id.to_string(),
        producer_id: batch.producer_id,
        producer_epoch: batch.producer_epoch,
        partitions: asking
            .iter()
            .map(|(_, tp, _)| tp.clone())
            .collect::<BTreeSet<_>>(),
        verify_only: !supports_epoch_bump,
    };
    let codes = add_or_verify(shard, &request).await;
    for (i, tp, _) in asking {
        let code = codes
            .get(&tp)
            .copied()
            .unwrap_or(error_code::UNKNOWN_SERVER_ERROR);
        if code != error_code::NONE {
            let answer = produce_error_for(code, produce_version);
            out[i] = Err((
                answer,
                format!(
                    "the transaction coordinator of {transactional_id:?} did not {} {tp} \
                     (error {code})",
                    if request.verify_only { "verify" } else { "add" }
                ),
            ));
        }
    }
    out
}

/// What a producer is told when its partition's verification failed
/// (Kafka's leader-side conversion): the coordinator being away is
/// retriable as NOT_ENOUGH_REPLICAS, a fenced producer is
/// INVALID_PRODUCER_EPOCH, and errors an old client does not know are
/// translated to ones it does.
pub fn produce_error_for(code: i16, produce_version: i16) -> i16 {
    match code {
        error_code::PRODUCER_FENCED => error_code::INVALID_PRODUCER_EPOCH,
        error_code::TRANSACTION_ABORTABLE
            if produce_version < PRODUCE_TRANSACTION_ABORTABLE_FROM =>
        {
            error_code::INVALID_TXN_STATE
        }
        error_code::COORDINATOR_LOAD_IN_PROGRESS
        | error_code::COORDINATOR_NOT_AVAILABLE
        | error_code::NOT_COORDINATOR
        | error_code::REQUEST_TIMED_OUT => error_code::NOT_ENOUGH_REPLICAS,
        error_code::CONCURRENT_TRANSACTIONS
            if produce_version < PRODUCE_TRANSACTION_VERSION_2_FROM =>
        {
            error_code::NOT_ENOUGH_REPLICAS
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinator_errors_become_what_each_produce_version_knows() {
        let cases = [
            (
                error_code::PRODUCER_FENCED,
                9,
                error_code::INVALID_PRODUCER_EPOCH,
            ),
            (
                error_code::TRANSACTION_ABORTABLE,
                10,
                error_code::INVALID_TXN_STATE,
            ),
            (
                error_code::TRANSACTION_ABORTABLE,
                11,
                error_code::TRANSACTION_ABORTABLE,
            ),
            (
                error_code::NOT_COORDINATOR,
                12,
                error_code::NOT_ENOUGH_REPLICAS,
            ),
            (
                error_code::COORDINATOR_NOT_AVAILABLE,
                9,
                error_code::NOT_ENOUGH_REPLICAS,
            ),
            (
                error_code::CONCURRENT_TRANSACTIONS,
                11,
                error_code::NOT_ENOUGH_REPLICAS,
            ),
            (
                error_code::CONCURRENT_TRANSACTIONS,
                12,
                error_code::CONCURRENT_TRANSACTIONS,
            ),
            (
                error_code::INVALID_TXN_STATE,
                12,
                error_code::INVALID_TXN_STATE,
            ),
        ];
        for (code, version, expected) in cases {
            assert_eq!(
                produce_error_for(code, version),
                expected,
                "{code} at v{version}"
            );
        }
    }
}
