//! ListTransactions: the transactional ids this broker coordinates (on
//! every shard), filtered by state, producer id, how long their transaction
//! has been open (v1) and a pattern on the id (v2), as `kafka-transactions.sh
//! list` and `find-hanging` ask each broker. Kafka's rule: only the ids the
//! principal may DESCRIBE are listed.

use std::rc::Rc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::list_transactions::*;
use crate::server::handlers::access::Access;
use crate::server::txn_coordinator::TxnCoordinator;
use crate::shard::shard::{now_ms, Shard};
use crate::transaction::metadata::{TxnMetadata, TxnState};

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: ListTransactionsRequest,
    access: &Access<'_>,
) -> ListTransactionsResponse {
    let mut resp = ListTransactionsResponse::default();
    // Kafka's filter is a Java (RE2J) regex over the whole id.
    let pattern = match req
        .transactional_id_pattern
        .as_deref()
        .filter(|p| !p.is_empty())
    {
        None => None,
        Some(p) => match regex::Regex::new(&format!("^(?:{p})$")) {
            Ok(re) => Some(re),
            Err(e) => {
                tracing::debug!("ListTransactions: invalid pattern {p:?}: {e}");
                resp.error_code = error_code::INVALID_REQUEST;
                return resp;
            }
        },
    };
    let mut states = Vec::new();
    for name in &req.state_filters {
        match TxnState::from_name(name) {
            Some(s) => states.push(s),
            None => resp.unknown_state_filters.push(name.clone()),
        }
    }
    let now = now_ms();
    let keep = |m: &TxnMetadata| {
        (req.state_filters.is_empty() || states.contains(&m.state))
            && (req.producer_id_filters.is_empty()
                || req.producer_id_filters.contains(&m.producer_id))
            && (req.duration_filter < 0
                || (m.state == TxnState::Ongoing
                    && now.saturating_sub(m.txn_start_timestamp_ms) >= req.duration_filter))
            && pattern
                .as_ref()
                .is_none_or(|re| re.is_match(&m.transactional_id))
    };
    for s in 0..shard.shard_count() {
        let listed = shard
            .submit_to(s, |shard| async move { TxnCoordinator::of(&shard).list() })
            .await;
        match listed {
            Ok(ids) => resp
                .transaction_states
                .extend(ids.iter().filter(|m| keep(m)).map(|m| TransactionState {
                    transactional_id: m.transactional_id.clone(),
                    producer_id: m.producer_id,
                    transaction_state: m.state.name().to_string(),
                })),
            Err(e) => {
                tracing::error!("ListTransactions: shard {s} unreachable: {e}");
                resp.error_code = error_code::COORDINATOR_NOT_AVAILABLE;
            }
        }
    }
    let image = BrokerState::of(shard).image();
    resp.transaction_states
        .retain(|t| access.allows(&image, matrix::LIST_TRANSACTIONS, &t.transactional_id));
    resp.transaction_states
        .sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
    resp
}
