//! TxnOffsetCommit: a transactional producer commits a group's offsets
//! inside its transaction (`sendOffsetsToTransaction`), at the group's
//! coordinator. They count once the transaction commits
//! (`group/coordinator/txn_offsets.rs`); from v3 the request names the
//! group member, which the coordinator checks (KIP-447), so a zombie
//! instance of a rebalanced member is refused.
//!
//! Kafka's rules: WRITE on the transactional id, else every partition gets
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED; READ on the group, else
//! GROUP_AUTHORIZATION_FAILED; READ on each topic, else its partitions get
//! TOPIC_AUTHORIZATION_FAILED; then an unknown topic or partition gets
//! UNKNOWN_TOPIC_OR_PARTITION, and only the rest reach the coordinator.

use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, CommitPartition, GroupCoordinator};
use crate::log::producer_state::{TxnVerification, VerificationNeed};
use crate::metadata::OFFSETS_TOPIC;
use crate::node::replicas;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::txn_offset_commit::*;
use crate::server::handlers::access::{partition_refusal, Access};
use crate::server::txn_coordinator::verification::{add_or_verify, VerificationRequest};
use crate::shard::shard::{now_ms, Shard};
use crate::topic_partition::TopicPartition;

/// First version whose partitions carry the committed leader epoch.
const LEADER_EPOCH_FROM: i16 = 2;
/// Clients before this version know INVALID_PRODUCER_EPOCH, not
/// PRODUCER_FENCED (KIP-588).
const PRODUCER_FENCED_FROM: i16 = 2;
/// v5 is transaction version 2 (KIP-890 part 2; v4's schema): the producer
/// sent no AddOffsetsToTxn, and the group's offsets partition joins the
/// transaction here.
const TRANSACTION_VERSION_2_FROM: i16 = 5;
/// v4 is the first version whose clients know TRANSACTION_ABORTABLE.
const TRANSACTION_ABORTABLE_FROM: i16 = 4;
/// Clients before v6 do not know STALE_MEMBER_EPOCH: Kafka answers them
/// ILLEGAL_GENERATION (`TxnOffsetCommitRequest.supportsStaleMemberEpochError`).
const STALE_MEMBER_EPOCH_FROM: i16 = 6;
/// Clients before v2 do not retry COORDINATOR_LOAD_IN_PROGRESS.
const LOAD_IN_PROGRESS_FROM: i16 = 2;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: TxnOffsetCommitRequest,
    access: &Access<'_>,
) -> TxnOffsetCommitResponse {
    let with_epoch = header.api_version >= LEADER_EPOCH_FROM;
    let by_id = header.api_version >= TOPIC_ID_FROM;
    let image = BrokerState::of(shard).image();
    // v6 names topics by id: the name each id stands for now, and the ids
    // to answer with. An unknown id is answered UNKNOWN_TOPIC_ID.
    let mut ids_by_name: HashMap<String, [u8; 16]> = HashMap::new();
    let mut unknown_ids: Vec<TxnOffsetCommitResponseTopic> = Vec::new();
    let mut topics: Vec<(String, Vec<CommitPartition>)> = Vec::with_capacity(req.topics.len());
    for t in req.topics {
        let name = if by_id {
            let Some(name) = image.topic_names_by_id.get(&t.topic_id) else {
                unknown_ids.push(TxnOffsetCommitResponseTopic {
                    name: String::new(),
                    topic_id: t.topic_id,
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| TxnOffsetCommitResponsePartition {
                            partition_index: p.partition_index,
                            error_code: error_code::UNKNOWN_TOPIC_ID,
                        })
                        .collect(),
                });
                continue;
            };
            ids_by_name.insert(name.clone(), t.topic_id);
            name.clone()
        } else {
            t.name
        };
        let parts = t
            .partitions
            .into_iter()
            .map(|p| CommitPartition {
                partition: p.partition_index,
                offset: p.committed_offset,
                leader_epoch: if with_epoch {
                    p.committed_leader_epoch
                } else {
                    -1
                },
                metadata: p.committed_metadata,
            })
            .collect();
        topics.push((name, parts));
    }
    let whole_refusal = if !access.allows(
        &image,
        matrix::TXN_OFFSET_COMMIT_TRANSACTIONAL_ID,
        &req.transactional_id,
    ) {
        Some(error_code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    } else if !access.allows(&image, matrix::TXN_OFFSET_COMMIT_GROUP, &req.group_id) {
        Some(error_code::GROUP_AUTHORIZATION_FAILED)
    } else {
        None
    };
    let mut refused = Vec::new();
    if let Some(code) = whole_refusal {
        refused = every(code, &topics);
        topics.clear();
    } else {
        let denied = access.denied(
            &image,
            matrix::TXN_OFFSET_COMMIT_TOPIC,
            topics.iter().map(|(t, _)| t.as_str()),
        );
        let mut asked = Vec::with_capacity(topics.len());
        for (name, parts) in topics {
            let topic_denied = denied.contains(&name);
            let mut codes = Vec::new();
            let mut committed = Vec::with_capacity(parts.len());
            for p in parts {
                let known = image.partition(&name, p.partition).is_some();
                match partition_refusal(topic_denied, known) {
                    Some(code) => codes.push((p.partition, code)),
                    None => committed.push(p),
                }
            }
            if !codes.is_empty() {
                refused.push((name.clone(), codes));
            }
            if !committed.is_empty() {
                asked.push((name, committed));
            }
        }
        topics = asked;
    }
    drop(image);
    let mut results = if topics.is_empty() {
        Vec::new()
    } else if req.group_id.is_empty() {
        every(error_code::INVALID_GROUP_ID, &topics)
    } else {
        let fallback = topics.clone();
        let version = header.api_version;
        let (group_id, transactional_id, producer, generation, member_id, instance_id) = (
            req.group_id.clone(),
            req.transactional_id,
            (req.producer_id, req.producer_epoch),
            req.generation_id,
            req.member_id,
            req.group_instance_id,
        );
        // On the coordinator's shard, which leads the group's offsets
        // partition: the verification guard is taken from that partition's
        // producer state, and the append must hold it.
        on_coordinator(
            shard,
            &req.group_id,
            move |c: Rc<GroupCoordinator>, s, p| async move {
                let verified =
                    verify_offsets_partition(&s, version, p, &transactional_id, producer).await;
                match verified {
                    Ok(verification) => {
                        c.txn_commit(
                            s,
                            p,
                            group_id,
                            producer,
                            generation,
                            member_id,
                            instance_id,
                            topics,
                            verification,
                        )
                        .await
                    }
                    Err(code) => every(code, &topics),
                }
            },
        )
        .await
        .unwrap_or_else(|code| every(code, &fallback))
    };
    results.extend(refused);
    let old_client = header.api_version < PRODUCER_FENCED_FROM;
    let knows_stale_epoch = header.api_version >= STALE_MEMBER_EPOCH_FROM;
    TxnOffsetCommitResponse {
        throttle_time_ms: 0,
        topics: results
            .into_iter()
            .map(|(name, parts)| TxnOffsetCommitResponseTopic {
                topic_id: ids_by_name.get(&name).copied().unwrap_or_default(),
                name: if by_id { String::new() } else { name },
                partitions: parts
                    .into_iter()
                    .map(|(partition_index, code)| TxnOffsetCommitResponsePartition {
                        partition_index,
                        error_code: match code {
                            error_code::PRODUCER_FENCED if old_client => {
                                error_code::INVALID_PRODUCER_EPOCH
                            }
                            error_code::STALE_MEMBER_EPOCH if !knows_stale_epoch => {
                                error_code::ILLEGAL_GENERATION
                            }
                            code => code,
                        },
                    })
                    .collect(),
            })
            .chain(unknown_ids)
            .collect(),
    }
}

/// `code` for every partition of `topics`.
fn every(code: i16, topics: &[(String, Vec<CommitPartition>)]) -> Vec<(String, Vec<(i32, i16)>)> {
    topics
        .iter()
        .map(|(t, ps)| (t.clone(), ps.iter().map(|p| (p.partition, code)).collect()))
        .collect()
}

/// KIP-890 for offsets: the group's `__consumer_offsets` partition must be
/// in the transaction before its offsets are written: added here for a
/// version 2 producer (v5), verified for a version 1 producer (which sent
/// AddOffsetsToTxn) when `transaction.partition.verification.enable` is on.
/// Runs on the coordinator's shard. `Ok` is what the offsets' append goes
/// ahead with; `Err` is the code for every partition.
async fn verify_offsets_partition(
    shard: &Rc<Shard>,
    version: i16,
    partition: i32,
    transactional_id: &str,
    (producer_id, producer_epoch): (i64, i16),
) -> Result<TxnVerification, i16> {
    let add = version >= TRANSACTION_VERSION_2_FROM;
    let enabled = add
        || BrokerState::of(shard)
            .config
            .transaction
            .partition_verification_enable;
    if !enabled {
        return Ok(TxnVerification::Off);
    }
    let tp = TopicPartition::new(OFFSETS_TOPIC.to_string(), partition);
    let Some(led) = replicas::led_partition(shard, &tp) else {
        return Err(error_code::NOT_COORDINATOR);
    };
    let need = match led.log.write().await {
        Ok(mut log) => log.begin_txn_verification(producer_id, producer_epoch, add, now_ms()),
        Err(_) => return Err(error_code::NOT_COORDINATOR),
    };
    let guard = match need {
        Err(_newer_epoch) => return Err(error_code::INVALID_PRODUCER_EPOCH),
        // The transaction is open on the partition already: in it.
        Ok(VerificationNeed::Ongoing) => return Ok(TxnVerification::On(None)),
        Ok(VerificationNeed::Verify(guard)) => guard,
    };
    let request = VerificationRequest {
        transactional_id: transactional_id.to_string(),
        producer_id,
        producer_epoch,
        partitions: BTreeSet::from([tp.clone()]),
        verify_only: !add,
    };
    let code = add_or_verify(shard, &request)
        .await
        .get(&tp)
        .copied()
        .unwrap_or(error_code::UNKNOWN_SERVER_ERROR);
    // Kafka's conversions for this path: the leader's, then the group
    // coordinator's view of a write that could not happen.
    let code = match code {
        error_code::NONE => return Ok(TxnVerification::On(Some(guard))),
        error_code::PRODUCER_FENCED => error_code::INVALID_PRODUCER_EPOCH,
        error_code::TRANSACTION_ABORTABLE if version < TRANSACTION_ABORTABLE_FROM => {
            error_code::INVALID_TXN_STATE
        }
        error_code::UNKNOWN_TOPIC_OR_PARTITION
        | error_code::NOT_ENOUGH_REPLICAS
        | error_code::REQUEST_TIMED_OUT => error_code::COORDINATOR_NOT_AVAILABLE,
        error_code::NOT_LEADER_OR_FOLLOWER => error_code::NOT_COORDINATOR,
        error_code::COORDINATOR_LOAD_IN_PROGRESS if version < LOAD_IN_PROGRESS_FROM => {
            error_code::COORDINATOR_NOT_AVAILABLE
        }
        other => other,
    };
    Err(code)
}
