//! DescribeTransactions: the state of transactional ids this broker
//! coordinates (`kafka-transactions.sh describe`). Kafka's rules: DESCRIBE
//! on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED; a
//! transaction's partitions are listed only for the topics the principal
//! may DESCRIBE.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_transactions::*;
use crate::server::handlers::access::Access;
use crate::server::txn_coordinator::on_coordinator;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DescribeTransactionsRequest,
    access: &Access<'_>,
) -> DescribeTransactionsResponse {
    let mut resp = DescribeTransactionsResponse::default();
    let broker = BrokerState::of(shard);
    for id in req.transactional_ids {
        if !access.allows(&broker.image(), matrix::DESCRIBE_TRANSACTIONS, &id) {
            resp.transaction_states.push(TransactionState {
                error_code: error_code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                transactional_id: id,
                transaction_start_time_ms: -1,
                producer_id: -1,
                producer_epoch: -1,
                ..TransactionState::default()
            });
            continue;
        }
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
                let image = broker.image();
                topics.retain(|topic, _| {
                    access.allows(&image, matrix::DESCRIBE_TRANSACTIONS_TOPIC, topic)
                });
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
