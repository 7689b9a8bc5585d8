//! KIP-890 from a partition leader's side: before a producer's first
//! transactional batch of a transaction is appended, the leader asks the
//! producer's transaction coordinator about the partition. A producer on
//! transaction version 1 added it itself (AddPartitionsToTxn): the leader
//! only *verifies* that it is in the open transaction (part 1). A producer
//! on version 2 never adds partitions: the leader *adds* it (part 2).
//!
//! Either way a late batch of a transaction that has ended (its markers
//! written) cannot open a transaction here that no coordinator knows of,
//! and that would hold the LSO back until `transaction.max.timeout.ms`: the
//! "hanging transaction" of KIP-890.
//!
//! The coordinator may be on this broker (another shard, reached through
//! `on_coordinator`) or on another one, reached with AddPartitionsToTxn v5,
//! the broker-to-broker form of the request.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

use crate::metadata::TRANSACTION_STATE_TOPIC;
use crate::node::state::BrokerState;
use crate::protocol::api::ApiKey;
use crate::protocol::error_code;
use crate::protocol::messages::add_partitions_to_txn::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
};
use crate::server::replication::kafka_peer::KafkaPeer;
use crate::server::txn_coordinator::{on_coordinator, TxnCoordinator};
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;
use crate::transaction::log_record;
use crate::transaction::metadata::TRANSACTION_VERSION_2;

/// The AddPartitionsToTxn version a leader sends: the batched broker form
/// (v4+), with TRANSACTION_ABORTABLE (v5).
const BROKER_ADD_PARTITIONS_VERSION: i16 = 5;
/// How long the coordinator may take to answer: Kafka's inter-broker
/// `request.timeout.ms` default.
const VERIFICATION_TIMEOUT: Duration = Duration::from_secs(30);
/// An AddPartitionsToTxn answer holds a code per partition.
const MAX_RESPONSE_BYTES: usize = 1024 * 1024;
/// Kafka's `add.partitions.to.txn.retry.backoff.ms` default: how long a
/// version 2 add waits before it asks again after CONCURRENT_TRANSACTIONS
/// (the previous transaction's markers are still being written).
const CONCURRENT_RETRY_BACKOFF: Duration = Duration::from_millis(20);
/// Kafka's `add.partitions.to.txn.retry.backoff.max.ms` default: how long
/// those retries go on before the producer gets the error itself.
const CONCURRENT_RETRY_MAX: Duration = Duration::from_millis(100);

/// What to ask the coordinator.
#[derive(Debug, Clone)]
pub struct VerificationRequest {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub partitions: BTreeSet<TopicPartition>,
    /// Version 1: only check. Version 2: add the partitions.
    pub verify_only: bool,
}

/// Asks the coordinator; a code per partition (NONE: append). Version 2
/// adds retry CONCURRENT_TRANSACTIONS for a short while, as Kafka's leader
/// does, since it only means the previous transaction is completing.
pub async fn add_or_verify(
    shard: &Rc<Shard>,
    request: &VerificationRequest,
) -> BTreeMap<TopicPartition, i16> {
    let started = std::time::Instant::now();
    loop {
        let codes = ask_once(shard, request).await;
        let concurrent = codes
            .values()
            .any(|c| *c == error_code::CONCURRENT_TRANSACTIONS);
        if request.verify_only || !concurrent || started.elapsed() >= CONCURRENT_RETRY_MAX {
            return codes;
        }
        glommio::timer::sleep(CONCURRENT_RETRY_BACKOFF).await;
    }
}

async fn ask_once(
    shard: &Rc<Shard>,
    request: &VerificationRequest,
) -> BTreeMap<TopicPartition, i16> {
    let all = |code: i16| -> BTreeMap<TopicPartition, i16> {
        request
            .partitions
            .iter()
            .map(|tp| (tp.clone(), code))
            .collect()
    };
    let broker = BrokerState::of(shard);
    let image = broker.image();
    let Some(topic) = image.topic(TRANSACTION_STATE_TOPIC) else {
        return all(error_code::COORDINATOR_NOT_AVAILABLE);
    };
    let partition =
        log_record::partition_for(&request.transactional_id, topic.partitions.len() as i32);
    let leader = topic.partitions.get(&partition).map_or(-1, |p| p.leader);
    if leader < 0 || !image.is_live_broker(leader) {
        return all(error_code::COORDINATOR_NOT_AVAILABLE);
    }
    if leader == broker.node_id() {
        return ask_local(shard, request).await.unwrap_or_else(all);
    }
    let Some(addr) = image
        .brokers
        .get(&leader)
        .map(|b| format!("{}:{}", b.host, b.port))
    else {
        return all(error_code::COORDINATOR_NOT_AVAILABLE);
    };
    ask_remote(shard, &addr, request).await.unwrap_or_else(all)
}

/// The coordinator on this broker. `Err`: one code for every partition.
async fn ask_local(
    shard: &Rc<Shard>,
    request: &VerificationRequest,
) -> Result<BTreeMap<TopicPartition, i16>, i16> {
    let r = request.clone();
    on_coordinator(
        shard,
        &request.transactional_id,
        move |c: Rc<TxnCoordinator>, s, partition| async move {
            if r.verify_only {
                c.verify_partitions(
                    &s,
                    partition,
                    &r.transactional_id,
                    r.producer_id,
                    r.producer_epoch,
                    &r.partitions,
                )
                .map(|codes| codes.into_iter().collect())
            } else {
                let code = c
                    .add_partitions(
                        s,
                        partition,
                        r.transactional_id,
                        r.producer_id,
                        r.producer_epoch,
                        r.partitions,
                        TRANSACTION_VERSION_2,
                    )
                    .await;
                Err(code)
            }
        },
    )
    .await
    .and_then(|answer| answer)
}

/// The coordinator on another broker, over a pooled connection of this
/// shard. `Err`: one code for every partition.
async fn ask_remote(
    shard: &Rc<Shard>,
    addr: &str,
    request: &VerificationRequest,
) -> Result<BTreeMap<TopicPartition, i16>, i16> {
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in &request.partitions {
        topics.entry(&tp.topic).or_default().push(tp.partition);
    }
    let body = AddPartitionsToTxnRequest {
        transactions: vec![AddPartitionsToTxnTransaction {
            transactional_id: request.transactional_id.clone(),
            producer_id: request.producer_id,
            producer_epoch: request.producer_epoch,
            verify_only: request.verify_only,
            topics: topics
                .into_iter()
                .map(|(name, partitions)| AddPartitionsToTxnTopic {
                    name: name.to_string(),
                    partitions,
                })
                .collect(),
        }],
        ..AddPartitionsToTxnRequest::default()
    };
    let coordinator = TxnCoordinator::of(shard);
    let mut peer = coordinator.take_peer(addr, || {
        KafkaPeer::new(
            addr.to_string(),
            format!(
                "pinlog-txn-verification-{}-shard-{}",
                BrokerState::of(shard).node_id(),
                shard.id()
            ),
            crate::server::replication::kafka_peer::inter_broker_security(shard),
        )
    });
    let answer = peer
        .call(
            ApiKey::AddPartitionsToTxn,
            BROKER_ADD_PARTITIONS_VERSION,
            |w| body.encode(w, BROKER_ADD_PARTITIONS_VERSION),
            |r| AddPartitionsToTxnResponse::decode(r, BROKER_ADD_PARTITIONS_VERSION),
            VERIFICATION_TIMEOUT,
            MAX_RESPONSE_BYTES,
        )
        .await;
    let resp = match answer {
        Ok(resp) => {
            coordinator.return_peer(peer);
            resp
        }
        Err(e) => {
            // The connection is dropped with the peer: a late answer must
            // not be read as the next request's.
            tracing::debug!(coordinator = addr, "transaction verification failed: {e}");
            return Err(error_code::COORDINATOR_NOT_AVAILABLE);
        }
    };
    if resp.error_code != error_code::NONE {
        return Err(resp.error_code);
    }
    let mut codes = BTreeMap::new();
    for txn in resp.results_by_transaction {
        for t in txn.topic_results {
            for p in t.results_by_partition {
                codes.insert(
                    TopicPartition::new(t.name.clone(), p.partition_index),
                    p.partition_error_code,
                );
            }
        }
    }
    // A partition the answer left out was not verified.
    Ok(request
        .partitions
        .iter()
        .map(|tp| {
            let code = codes
                .get(tp)
                .copied()
                .unwrap_or(error_code::UNKNOWN_SERVER_ERROR);
            (tp.clone(), code)
        })
        .collect())
}
