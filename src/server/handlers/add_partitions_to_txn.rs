//! AddPartitionsToTxn: a producer adds the partitions it is about to
//! write to its transaction, at the transaction's coordinator (v0-3). From
//! v4 a partition leader may batch several transactions and only verify
//! that their partitions are in them (KIP-890 part 1).

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::add_partitions_to_txn::*;
use crate::server::txn_coordinator::{on_coordinator, TxnCoordinator};
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;
use crate::transaction::metadata::TRANSACTION_VERSION_2;

/// First version that batches transactions.
const BATCHED_FROM: i16 = 4;
/// Clients before this version know INVALID_PRODUCER_EPOCH, not
/// PRODUCER_FENCED (KIP-588).
const PRODUCER_FENCED_FROM: i16 = 2;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let version = header.api_version;
    if version < BATCHED_FROM {
        let txn = AddPartitionsToTxnTransaction {
            transactional_id: req.v3_and_below_transactional_id,
            producer_id: req.v3_and_below_producer_id,
            producer_epoch: req.v3_and_below_producer_epoch,
            verify_only: false,
            topics: req.v3_and_below_topics,
        };
        let mut results = add_one(shard, txn, 0).await;
        if version < PRODUCER_FENCED_FROM {
            for t in &mut results {
                for p in &mut t.results_by_partition {
                    if p.partition_error_code == error_code::PRODUCER_FENCED {
                        p.partition_error_code = error_code::INVALID_PRODUCER_EPOCH;
                    }
                }
            }
        }
        return AddPartitionsToTxnResponse {
            results_by_topic_v3_and_below: results,
            ..AddPartitionsToTxnResponse::default()
        };
    }
    let mut by_transaction = Vec::with_capacity(req.transactions.len());
    for txn in req.transactions {
        let id = txn.transactional_id.clone();
        by_transaction.push(AddPartitionsToTxnResult {
            transactional_id: id,
            // From a partition leader: a producer on transaction
            // version 2 (KIP-890 part 2) when it adds.
            topic_results: add_one(shard, txn, TRANSACTION_VERSION_2).await,
        });
    }
    AddPartitionsToTxnResponse {
        results_by_transaction: by_transaction,
        ..AddPartitionsToTxnResponse::default()
    }
}

/// One transaction's partitions: unknown partitions fail alone (and the
/// rest are not attempted, as in Kafka); otherwise an add answers every
/// partition with the coordinator's one code, and a verification answers
/// each partition on its own.
async fn add_one(
    shard: &Rc<Shard>,
    txn: AddPartitionsToTxnTransaction,
    client_transaction_version: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let image = BrokerState::of(shard).image();
    let unknown = |t: &str, p: i32| image.partition(t, p).is_none();
    let any_unknown = txn
        .topics
        .iter()
        .any(|t| t.partitions.iter().any(|p| unknown(&t.name, *p)));
    let answer = |code_of: &dyn Fn(&str, i32) -> i16| -> Vec<AddPartitionsToTxnTopicResult> {
        txn.topics
            .iter()
            .map(|t| AddPartitionsToTxnTopicResult {
                name: t.name.clone(),
                results_by_partition: t
                    .partitions
                    .iter()
                    .map(|p| AddPartitionsToTxnPartitionResult {
                        partition_index: *p,
                        partition_error_code: code_of(&t.name, *p),
                    })
                    .collect(),
            })
            .collect()
    };
    if any_unknown {
        return answer(&|t, p| {
            if unknown(t, p) {
                error_code::UNKNOWN_TOPIC_OR_PARTITION
            } else {
                error_code::OPERATION_NOT_ATTEMPTED
            }
        });
    }
    let partitions: BTreeSet<TopicPartition> = txn
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| TopicPartition::new(t.name.clone(), *p))
        })
        .collect();
    let (id, producer_id, epoch, verify_only) = (
        txn.transactional_id.clone(),
        txn.producer_id,
        txn.producer_epoch,
        txn.verify_only,
    );
    // `Ok`: a code per partition (a verification); `Err`: one code for
    // all of them (an add, or a failure before any partition was looked at).
    let codes = on_coordinator(
        shard,
        &txn.transactional_id,
        move |c: Rc<TxnCoordinator>, s, partition| async move {
            if verify_only {
                c.verify_partitions(&s, partition, &id, producer_id, epoch, &partitions)
                    .map(|codes| codes.into_iter().collect::<BTreeMap<_, _>>())
            } else {
                let code = c
                    .add_partitions(
                        s,
                        partition,
                        id,
                        producer_id,
                        epoch,
                        partitions,
                        client_transaction_version,
                    )
                    .await;
                Err(code)
            }
        },
    )
    .await
    .unwrap_or_else(Err);
    match codes {
        Ok(codes) => answer(&|t, p| {
            codes
                .get(&TopicPartition::new(t.to_string(), p))
                .copied()
                .unwrap_or(error_code::UNKNOWN_SERVER_ERROR)
        }),
        Err(code) => answer(&|_, _| code),
    }
}
