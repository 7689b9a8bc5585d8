//! EndTxn: a producer commits or aborts its transaction. The coordinator
//! writes the outcome (PrepareCommit or PrepareAbort) before answering;
//! the markers and the completion follow in the background. Kafka's rule:
//! WRITE on the transactional id.

use std::rc::Rc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::end_txn::*;
use crate::server::handlers::access::Access;
use crate::server::txn_coordinator::{on_coordinator, EndAnswer};
use crate::shard::shard::Shard;
use crate::transaction::metadata::TRANSACTION_VERSION_2;

/// Clients before this version know INVALID_PRODUCER_EPOCH, not
/// PRODUCER_FENCED (KIP-588).
const PRODUCER_FENCED_FROM: i16 = 2;
/// EndTxn v5 is transaction version 2 (KIP-890 part 2): the epoch is bumped
/// and the answer carries the new one.
const TRANSACTION_VERSION_2_FROM: i16 = 5;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: EndTxnRequest,
    access: &Access<'_>,
) -> EndTxnResponse {
    if !access.allows(
        &BrokerState::of(shard).image(),
        matrix::END_TXN,
        &req.transactional_id,
    ) {
        return EndTxnResponse {
            error_code: error_code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            producer_id: -1,
            producer_epoch: -1,
            ..EndTxnResponse::default()
        };
    }
    let (id, producer_id, epoch, commit) = (
        req.transactional_id.clone(),
        req.producer_id,
        req.producer_epoch,
        req.committed,
    );
    let transaction_version = if header.api_version >= TRANSACTION_VERSION_2_FROM {
        TRANSACTION_VERSION_2
    } else {
        0
    };
    let answer = on_coordinator(
        shard,
        &req.transactional_id,
        move |c, s, partition| async move {
            c.end_txn(
                s,
                partition,
                id,
                producer_id,
                epoch,
                commit,
                transaction_version,
            )
            .await
        },
    )
    .await
    .unwrap_or_else(|code| EndAnswer {
        error_code: code,
        producer_id: -1,
        producer_epoch: -1,
    });
    let code = answer.error_code;
    EndTxnResponse {
        error_code: if code == error_code::PRODUCER_FENCED
            && header.api_version < PRODUCER_FENCED_FROM
        {
            error_code::INVALID_PRODUCER_EPOCH
        } else {
            code
        },
        producer_id: answer.producer_id,
        producer_epoch: answer.producer_epoch,
        ..EndTxnResponse::default()
    }
}
