//! DescribeTransactions: the state of transactional ids this broker
//! coordinates (`kafka-transactions.sh describe`).

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_transactions::*;
use crate::server::txn_coordinator::on_coordinator;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let mut resp = DescribeTransactionsResponse::default();
    for id in req.transactional_ids {
        let key = id.clone();
        let found = on_coordinator(shard, &key, move |c, s, partition| async move {
            c.describe(&s, partition, &id)
        })
        .await
        .and_then(|r| r);
        resp.transaction_states.push(match found {
            Ok(m) => {
                let mut topics: BTreeMap<String, Vec<i32>> = BTreeMap::new();
                for tp in &m.partitions {
                    topics
                        .entry(tp.topic.clone())
                        .or_default()
                        .push(tp.partition);
                }
                TransactionState {
                    error_code: error_code::NONE,
                    transactional_id: key,
                    transaction_state: m.state.name().to_string(),
                    transaction_timeout_ms: m.txn_timeout_ms,
                    transaction_start_time_ms: m.txn_start_timestamp_ms,
                    producer_id: m.producer_id,
                    producer_epoch: m.producer_epoch,
                    topics: topics
                        .into_iter()
                        .map(|(topic, partitions)| TopicData { topic, partitions })
                        .collect(),
                }
            }
            Err(code) => TransactionState {
                error_code: code,
                transactional_id: key,
                transaction_start_time_ms: -1,
                producer_id: -1,
                producer_epoch: -1,
                ..TransactionState::default()
            },
        });
    }
    resp
}
