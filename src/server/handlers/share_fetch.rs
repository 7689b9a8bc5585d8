//! ShareFetch (KIP-932): a share-group member's fetch. Its share session
//! (`share_sessions.rs`) says which partitions it fetches from this broker;
//! the acknowledgements it carries are applied and made durable first, then
//! each partition's leading shard acquires records for the member
//! (`share_partitions`), waiting up to `max_wait_ms` for appends when none
//! are available. A final request (epoch -1) fetches nothing: it
//! acknowledges, closes the session and releases what the member still
//! held.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::rc::Rc;
use std::time::Duration;

use crate::acl::matrix;
use crate::group::share::session::{SessionRequest, SharePartitionId};
use crate::metadata::group_config::IsolationLevel;
use crate::metadata::image::MetadataImage;
use crate::node::append_waiters::AppendWaiters;
use crate::node::state::BrokerState;
use crate::protocol::chunks::{Chunk, RecordData};
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::fetch::LeaderIdAndEpoch;
use crate::protocol::messages::share_fetch::*;
use crate::server::handlers::access::Access;
use crate::server::handlers::share_sessions::{self, ShareSessions};
use crate::server::share_partitions::{self, AcquiredRead, SharePartitions};
use crate::shard::shard::{now_ms, Shard};
use crate::topic_partition::TopicPartition;

/// Upper bound on how long one share fetch waits, whatever it asks.
const SHARE_FETCH_MAX_WAIT_MS_MAX: i32 = 30_000;
/// Records one share fetch acquires when the request does not say (v1's
/// MaxRecords is the client's `max.poll.records`, 500 by default).
const DEFAULT_SHARE_FETCH_MAX_RECORDS: i32 = 500;

/// A share partition a request names, resolved against the image.
#[derive(Debug, Clone)]
pub(crate) struct Named {
    pub id: SharePartitionId,
    /// The topic's name; `None` for an unknown topic id.
    pub tp: Option<TopicPartition>,
}

/// A request's topic ids resolved against the image, and the topics the
/// principal may not read (Kafka asks READ of each, over every partition
/// the request touches).
pub(crate) struct Resolution {
    names: HashMap<[u8; 16], String>,
    pub denied: HashSet<String>,
}

impl Resolution {
    pub(crate) fn new<'a>(
        image: &MetadataImage,
        access: &Access<'_>,
        rule: matrix::Rule,
        partitions: impl Iterator<Item = &'a SharePartitionId>,
    ) -> Resolution {
        let names: HashMap<[u8; 16], String> = partitions
            .filter_map(|(t, _)| Some((*t, image.topic_names_by_id.get(t)?.clone())))
            .collect();
        let denied = if access.is_enabled() {
            let topics: BTreeSet<&str> = names.values().map(String::as_str).collect();
            access.denied(image, rule, topics)
        } else {
            HashSet::new()
        };
        Resolution { names, denied }
    }

    pub(crate) fn named(&self, id: SharePartitionId) -> Named {
        Named {
            id,
            tp: self
                .names
                .get(&id.0)
                .map(|name| TopicPartition::new(name.clone(), id.1)),
        }
    }
}

/// The leader of `tp` as a partition error names it.
pub(crate) fn current_leader(
    image: &MetadataImage,
    tp: Option<&TopicPartition>,
) -> LeaderIdAndEpoch {
    tp.and_then(|tp| image.partition(&tp.topic, tp.partition))
        .map(|p| LeaderIdAndEpoch {
            leader_id: p.leader,
            leader_epoch: p.leader_epoch,
        })
        .unwrap_or_default()
}

/// Applies each partition's acknowledgements on its leading shard, in
/// parallel: the outcome per partition (NONE once durable).
pub(crate) async fn acknowledge_all(
    shard: &Rc<Shard>,
    group_id: &str,
    member_id: &str,
    acks: Vec<(Named, Vec<AcknowledgementBatch>)>,
    denied: &HashSet<String>,
) -> BTreeMap<SharePartitionId, (i16, Option<String>)> {
    let mut out = BTreeMap::new();
    let mut tasks = Vec::new();
    for (named, batches) in acks {
        let Some(tp) = named.tp.clone() else {
            out.insert(named.id, (error_code::UNKNOWN_TOPIC_ID, None));
            continue;
        };
        if denied.contains(&tp.topic) {
            out.insert(named.id, (error_code::TOPIC_AUTHORIZATION_FAILED, None));
            continue;
        }
        let (group, member, shard) = (group_id.to_string(), member_id.to_string(), shard.clone());
        let owner = shard.owner(&tp);
        tasks.push((
            named.id,
            glommio::spawn_local(async move {
                shard
                    .submit_to(owner, move |s| async move {
                        share_partitions::acknowledge(
                            &s, &group, &member, &tp, named.id.0, &batches,
                        )
                        .await
                    })
                    .await
            }),
        ));
    }
    for (id, task) in tasks {
        let result = match task.await {
            Ok(Ok(())) => (error_code::NONE, None),
            Ok(Err(e)) => e,
            Err(_) => (error_code::UNKNOWN_SERVER_ERROR, None),
        };
        out.insert(id, result);
    }
    out
}

/// Releases what `member_id` holds in each of `partitions`: its session
/// closed.
pub(crate) async fn release_all(
    shard: &Rc<Shard>,
    group_id: &str,
    member_id: &str,
    partitions: &[Named],
) {
    let mut tasks = Vec::new();
    for named in partitions {
        let Some(tp) = named.tp.clone() else { continue };
        let (group, member, shard) = (group_id.to_string(), member_id.to_string(), shard.clone());
        let owner = shard.owner(&tp);
        tasks.push(glommio::spawn_local(async move {
            let _ = shard
                .submit_to(owner, move |s| async move {
                    share_partitions::release_member(&s, &group, &member, &tp).await
                })
                .await;
        }));
    }
    for t in tasks {
        t.await;
    }
}

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: ShareFetchRequest,
    access: &Access<'_>,
) -> ShareFetchResponse {
    let broker = BrokerState::of(shard);
    // The lock duration the client times its acquisitions by: the
    // group's own share.record.lock.duration.ms, else the broker's.
    let lock_ms = req
        .group_id
        .as_deref()
        .map_or(broker.config.share_group.partition, |g| {
            broker.group_config(g).share.partition
        })
        .record_lock_duration_ms as i32;
    let top_level = |code: i16, message: Option<String>| ShareFetchResponse {
        error_code: code,
        error_message: message,
        acquisition_lock_timeout_ms: lock_ms,
        ..Default::default()
    };
    let (group_id, member_id) = match (&req.group_id, &req.member_id) {
        (Some(g), Some(m)) if !g.is_empty() && !m.is_empty() => (g.clone(), m.clone()),
        _ => {
            return top_level(
                error_code::INVALID_REQUEST,
                Some("A ShareFetch needs a group id and a member id.".into()),
            )
        }
    };
    let image = broker.image();
    if let Some((code, message)) = super::share_groups_disabled(&image) {
        return top_level(code, Some(message));
    }
    if !access.allows(&image, matrix::SHARE_FETCH_GROUP, &group_id) {
        return top_level(error_code::GROUP_AUTHORIZATION_FAILED, None);
    }
    let named: Vec<SharePartitionId> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic_id, p.partition_index))
        })
        .collect();
    let forgotten: Vec<SharePartitionId> = req
        .forgotten_topics_data
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p)))
        .collect();
    let acks: BTreeMap<SharePartitionId, Vec<AcknowledgementBatch>> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .filter(|p| !p.acknowledgement_batches.is_empty())
                .map(move |p| {
                    (
                        (t.topic_id, p.partition_index),
                        p.acknowledgement_batches.clone(),
                    )
                })
        })
        .collect();
    let sessions = ShareSessions::of(shard);
    let resolved = sessions.with(|c| {
        c.resolve(
            &SessionRequest {
                group_id: &group_id,
                member_id: &member_id,
                epoch: req.share_session_epoch,
                fetching: true,
                named: &named,
                forgotten: &forgotten,
                has_acknowledgements: !acks.is_empty(),
                connection: access.connection_id(),
            },
            now_ms(),
        )
    });
    let resolved = match resolved {
        Ok(r) => r,
        Err(code) => return top_level(code, None),
    };
    if resolved.full {
        share_sessions::forget_elsewhere(shard, &group_id, &member_id).await;
    }
    let resolution = Resolution::new(
        &image,
        access,
        matrix::SHARE_FETCH_TOPIC,
        resolved.partitions.iter().chain(acks.keys()),
    );
    let resolve = |id: SharePartitionId| resolution.named(id);
    let denied = &resolution.denied;

    let acked = acknowledge_all(
        shard,
        &group_id,
        &member_id,
        acks.into_iter().map(|(id, b)| (resolve(id), b)).collect(),
        denied,
    )
    .await;
    let session: Vec<Named> = resolved.partitions.iter().map(|id| resolve(*id)).collect();
    if resolved.closed {
        release_all(shard, &group_id, &member_id, &session).await;
    }
    let mut reads: BTreeMap<SharePartitionId, AcquiredRead> = BTreeMap::new();
    if !resolved.closed && !session.is_empty() {
        let max_records = if req.max_records > 0 {
            req.max_records
        } else {
            DEFAULT_SHARE_FETCH_MAX_RECORDS
        };
        let max_bytes = (req.max_bytes.max(0) as usize).min(broker.config.fetch_max_bytes);
        reads = acquire_all(
            shard,
            &group_id,
            &member_id,
            &session,
            denied,
            max_records,
            max_bytes,
        )
        .await;
        let got: i64 = reads.values().map(AcquiredRead::record_count).sum();
        let max_wait = req.max_wait_ms.clamp(0, SHARE_FETCH_MAX_WAIT_MS_MAX);
        if got == 0 && max_wait > 0 && acked.is_empty() {
            let seen: Vec<(TopicPartition, Option<i64>)> = session
                .iter()
                .filter_map(|n| Some((n.tp.clone()?, reads.get(&n.id).and_then(|r| r.seen_end))))
                .filter(|(tp, _)| !denied.contains(&tp.topic))
                .collect();
            let read_committed = broker.group_config(&group_id).share_isolation_level
                == IsolationLevel::ReadCommitted;
            wait_for_records(
                shard,
                seen,
                read_committed,
                Duration::from_millis(max_wait as u64),
            )
            .await;
            reads = acquire_all(
                shard,
                &group_id,
                &member_id,
                &session,
                denied,
                max_records,
                max_bytes,
            )
            .await;
        }
    }

    // A new session's answer names all its partitions; a continued one's
    // those with records, errors or acknowledgement outcomes.
    let mut by_topic: BTreeMap<[u8; 16], Vec<ShareFetchPartitionData>> = BTreeMap::new();
    let all: BTreeSet<SharePartitionId> = session
        .iter()
        .map(|n| n.id)
        .chain(acked.keys().copied())
        .collect();
    for id in all {
        let read = reads.remove(&id).unwrap_or_default();
        let ack = acked.get(&id);
        let news = resolved.full
            || !read.acquired.is_empty()
            || read.error_code != error_code::NONE
            || ack.is_some();
        if !news {
            continue;
        }
        let tp = resolve(id).tp;
        let error =
            read.error_code != error_code::NONE || ack.is_some_and(|(c, _)| *c != error_code::NONE);
        by_topic
            .entry(id.0)
            .or_default()
            .push(ShareFetchPartitionData {
                partition_index: id.1,
                error_code: read.error_code,
                error_message: None,
                acknowledge_error_code: ack.map_or(error_code::NONE, |(c, _)| *c),
                acknowledge_error_message: ack.and_then(|(_, m)| m.clone()),
                current_leader: if error {
                    current_leader(&image, tp.as_ref())
                } else {
                    LeaderIdAndEpoch::default()
                },
                records: RecordData::Chunks(read.records.into_iter().map(Chunk::Bytes).collect()),
                acquired_records: read.acquired,
            });
    }
    ShareFetchResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        error_message: None,
        acquisition_lock_timeout_ms: lock_ms,
        responses: by_topic
            .into_iter()
            .map(|(topic_id, partitions)| ShareFetchTopicResponse {
                topic_id,
                partitions,
            })
            .collect(),
        node_endpoints: Vec::new(),
    }
}

/// Acquires records of every partition on its leading shard, in parallel,
/// sharing the request's record and byte budgets between them.
async fn acquire_all(
    shard: &Rc<Shard>,
    group_id: &str,
    member_id: &str,
    session: &[Named],
    denied: &HashSet<String>,
    max_records: i32,
    max_bytes: usize,
) -> BTreeMap<SharePartitionId, AcquiredRead> {
    let mut out = BTreeMap::new();
    let fetchable = session.len().max(1);
    let records_each = (max_records.max(1) as usize).div_ceil(fetchable) as u32;
    let bytes_each = (max_bytes / fetchable).max(1);
    let mut tasks = Vec::new();
    for named in session {
        let Some(tp) = named.tp.clone() else {
            out.insert(named.id, error_read(error_code::UNKNOWN_TOPIC_ID));
            continue;
        };
        if denied.contains(&tp.topic) {
            out.insert(named.id, error_read(error_code::TOPIC_AUTHORIZATION_FAILED));
            continue;
        }
        let (group, member, shard) = (group_id.to_string(), member_id.to_string(), shard.clone());
        let owner = shard.owner(&tp);
        let topic_id = named.id.0;
        tasks.push((
            named.id,
            glommio::spawn_local(async move {
                shard
                    .submit_to(owner, move |s| async move {
                        share_partitions::acquire(
                            &s,
                            &group,
                            &member,
                            &tp,
                            topic_id,
                            records_each,
                            bytes_each,
                        )
                        .await
                    })
                    .await
            }),
        ));
    }
    for (id, task) in tasks {
        let read = task
            .await
            .unwrap_or_else(|_| error_read(error_code::UNKNOWN_SERVER_ERROR));
        out.insert(id, read);
    }
    out
}

fn error_read(code: i16) -> AcquiredRead {
    AcquiredRead {
        error_code: code,
        ..AcquiredRead::default()
    }
}

/// Waits until any of the partitions gets an append, or records of its
/// share window become acquirable again (released, or their lock
/// expired), or `timeout` passes. Each comes with the end its acquisition
/// saw: registered first, then checked, so records that arrived between
/// the acquisition and the wait answer at once instead of after the whole
/// wait.
async fn wait_for_records(
    shard: &Rc<Shard>,
    seen: Vec<(TopicPartition, Option<i64>)>,
    read_committed: bool,
    timeout: Duration,
) {
    let mut by_owner: BTreeMap<usize, Vec<(TopicPartition, Option<i64>)>> = BTreeMap::new();
    for (tp, end) in seen {
        by_owner
            .entry(shard.owner(&tp))
            .or_default()
            .push((tp, end));
    }
    if by_owner.is_empty() {
        glommio::timer::sleep(timeout).await;
        return;
    }
    let (tx, rx) = glommio::channels::local_channel::new_bounded::<()>(by_owner.len());
    let tx = Rc::new(tx);
    for (owner, tps) in by_owner {
        let (shard, tx) = (shard.clone(), tx.clone());
        glommio::spawn_local(async move {
            let _ = shard
                .submit_to(owner, move |s| async move {
                    let names: Vec<TopicPartition> = tps.iter().map(|(tp, _)| tp.clone()).collect();
                    let appended = AppendWaiters::of(&s).register(&names);
                    // Not checked for records released since the
                    // acquisition: one that found such records and still
                    // acquired none (another member's fetch took them
                    // first, say) would answer at once, again and again.
                    let released = SharePartitions::of(&s).wait_acquirable(&names);
                    for (tp, seen) in &tps {
                        let (Some(seen), Some(log)) = (seen, s.local_log(tp)) else {
                            continue;
                        };
                        let end = match log.read().await {
                            Ok(l) if read_committed => l.last_stable_offset(),
                            Ok(l) => l.high_watermark(),
                            Err(_) => continue,
                        };
                        if end > *seen {
                            return;
                        }
                    }
                    let woken = futures_lite::future::or(appended, released);
                    futures_lite::future::or(woken, glommio::timer::sleep(timeout)).await;
                })
                .await;
            let _ = tx.try_send(());
        })
        .detach();
    }
    let _ = futures_lite::future::or(async { rx.recv().await.map(|_| ()) }, async {
        glommio::timer::sleep(timeout).await;
        None
    })
    .await;
}
