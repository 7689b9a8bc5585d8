//! AddPartitionsToTxn: a producer adds the partitions it is about to
//! write to its transaction, at the transaction's coordinator (v0-3). From
//! v4 a partition leader may batch several transactions and only verify
//! that their partitions are in them (KIP-890 part 1).
//!
//! Kafka's rules: a client's request (v0-3) needs WRITE on the
//! transactional id, else every partition gets
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and WRITE on each topic (never
//! granted for an internal topic), else its partitions get
//! TOPIC_AUTHORIZATION_FAILED; a broker's batch (v4+) needs CLUSTER_ACTION,
//! else the request answers CLUSTER_AUTHORIZATION_FAILED.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::rc::Rc;

use crate::acl::matrix;
use crate::metadata::is_internal_topic;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::add_partitions_to_txn::*;
use crate::server::handlers::access::{partition_refusal, Access};
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
    access: &Access<'_>,
) -> AddPartitionsToTxnResponse {
    let version = header.api_version;
    let image = BrokerState::of(shard).image();
    if version < BATCHED_FROM {
        let txn = AddPartitionsToTxnTransaction {
            transactional_id: req.v3_and_below_transactional_id,
            producer_id: req.v3_and_below_producer_id,
            producer_epoch: req.v3_and_below_producer_epoch,
            verify_only: false,
            topics: req.v3_and_below_topics,
        };
        let id_allowed = access.allows(
            &image,
            matrix::ADD_PARTITIONS_TO_TXN_TRANSACTIONAL_ID,
            &txn.transactional_id,
        );
        let mut results = if id_allowed {
            let names = txn.topics.iter().map(|t| t.name.as_str());
            let mut denied = access.denied(&image, matrix::ADD_PARTITIONS_TO_TXN_TOPIC, names);
            // Only the coordinators write internal topics.
            denied.extend(
                txn.topics
                    .iter()
                    .filter(|t| is_internal_topic(&t.name))
                    .map(|t| t.name.clone()),
            );
            drop(image);
            add_one(shard, txn, &denied, 0).await
        } else {
            answer(&txn.topics, |_, _| {
                error_code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            })
        };
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
    // Only brokers send batches, and their topics need no ACL of their
    // own: the leader that sends one authorized the produce.
    if !access.allows_cluster(&image, matrix::ADD_PARTITIONS_TO_TXN_FROM_BROKER) {
        return AddPartitionsToTxnResponse {
            error_code: error_code::CLUSTER_AUTHORIZATION_FAILED,
            ..AddPartitionsToTxnResponse::default()
        };
    }
    drop(image);
    let mut by_transaction = Vec::with_capacity(req.transactions.len());
    for txn in req.transactions {
        let id = txn.transactional_id.clone();
        by_transaction.push(AddPartitionsToTxnResult {
            transactional_id: id,
            // From a partition leader: a producer on transaction
            // version 2 (KIP-890 part 2) when it adds.
            topic_results: add_one(shard, txn, &HashSet::new(), TRANSACTION_VERSION_2).await,
        });
    }
    AddPartitionsToTxnResponse {
        results_by_transaction: by_transaction,
        ..AddPartitionsToTxnResponse::default()
    }
}

/// Every partition of `topics` answered with `code_of` it.
fn answer(
    topics: &[AddPartitionsToTxnTopic],
    code_of: impl Fn(&str, i32) -> i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    topics
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
}

/// Kafka's answer when any partition of `topics` is refused before the
/// coordinator (`refusal`: a denied topic, an unknown partition): those
/// fail with their code, and the rest are not attempted. `None`: none is
/// refused, and the transaction goes to the coordinator.
fn refused_before_the_coordinator(
    topics: &[AddPartitionsToTxnTopic],
    refusal: impl Fn(&str, i32) -> Option<i16>,
) -> Option<Vec<AddPartitionsToTxnTopicResult>> {
    let any = topics
        .iter()
        .any(|t| t.partitions.iter().any(|p| refusal(&t.name, *p).is_some()));
    any.then(|| {
        answer(topics, |t, p| {
            refusal(t, p).unwrap_or(error_code::OPERATION_NOT_ATTEMPTED)
        })
    })
}

/// One transaction's partitions: refused ones (a topic in `denied`, an
/// unknown partition) fail alone and the rest are not attempted, as in
/// Kafka; otherwise an add answers every partition with the coordinator's
/// one code, and a verification answers each partition on its own.
async fn add_one(
    shard: &Rc<Shard>,
    txn: AddPartitionsToTxnTransaction,
    denied: &HashSet<String>,
    client_transaction_version: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let image = BrokerState::of(shard).image();
    let refused = refused_before_the_coordinator(&txn.topics, |t, p| {
        partition_refusal(denied.contains(t), image.partition(t, p).is_some())
    });
    drop(image);
    if let Some(results) = refused {
        return results;
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
        Ok(codes) => answer(&txn.topics, |t, p| {
            codes
                .get(&TopicPartition::new(t.to_string(), p))
                .copied()
                .unwrap_or(error_code::UNKNOWN_SERVER_ERROR)
        }),
        Err(code) => answer(&txn.topics, |_, _| code),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topics() -> Vec<AddPartitionsToTxnTopic> {
        vec![
            AddPartitionsToTxnTopic {
                name: "orders".into(),
                partitions: vec![0, 1],
            },
            AddPartitionsToTxnTopic {
                name: "secret".into(),
                partitions: vec![0],
            },
        ]
    }

    fn codes(results: &[AddPartitionsToTxnTopicResult]) -> Vec<(&str, i32, i16)> {
        results
            .iter()
            .flat_map(|t| {
                t.results_by_partition
                    .iter()
                    .map(|p| (t.name.as_str(), p.partition_index, p.partition_error_code))
            })
            .collect()
    }

    #[test]
    fn nothing_refused_goes_to_the_coordinator() {
        assert!(refused_before_the_coordinator(&topics(), |_, _| None).is_none());
    }

    #[test]
    fn one_refused_partition_fails_the_transaction_and_the_rest_are_not_attempted() {
        let denied: HashSet<String> = ["secret".to_string()].into();
        let results = refused_before_the_coordinator(&topics(), |t, p| {
            partition_refusal(denied.contains(t), !(t == "orders" && p == 1))
        })
        .expect("refused");
        assert_eq!(
            codes(&results),
            vec![
                ("orders", 0, error_code::OPERATION_NOT_ATTEMPTED),
                ("orders", 1, error_code::UNKNOWN_TOPIC_OR_PARTITION),
                ("secret", 0, error_code::TOPIC_AUTHORIZATION_FAILED),
            ]
        );
    }
}
