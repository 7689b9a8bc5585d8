//! EndTxn: a producer commits or aborts its transaction. The coordinator
//! writes the outcome (PrepareCommit or PrepareAbort) before answering;
//! the markers and the completion follow in the background.

use std::rc::Rc;

use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::end_txn::*;
use crate::server::txn_coordinator::on_coordinator;
use crate::shard::shard::Shard;

/// Clients before this version know INVALID_PRODUCER_EPOCH, not
/// PRODUCER_FENCED (KIP-588).
const PRODUCER_FENCED_FROM: i16 = 2;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: EndTxnRequest,
) -> EndTxnResponse {
    let (id, producer_id, epoch, commit) = (
        req.transactional_id.clone(),
        req.producer_id,
        req.producer_epoch,
        req.committed,
    );
    let code = on_coordinator(
        shard,
        &req.transactional_id,
        move |c, s, partition| async move {
            c.end_txn(s, partition, id, producer_id, epoch, commit)
                .await
        },
    )
    .await
    .unwrap_or_else(|code| code);
    EndTxnResponse {
        error_code: if code == error_code::PRODUCER_FENCED
            && header.api_version < PRODUCER_FENCED_FROM
        {
            error_code::INVALID_PRODUCER_EPOCH
        } else {
            code
        },
        // Transaction version 1: the epoch does not change (v5 reports it).
        producer_id: req.producer_id,
        producer_epoch: req.producer_epoch,
        ..EndTxnResponse::default()
    }
}
