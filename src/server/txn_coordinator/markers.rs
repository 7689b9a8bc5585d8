//! Writing a decided transaction's COMMIT or ABORT markers to every
//! partition it touched (Kafka's `TransactionMarkerChannelManager`), and
//! the partition leader's side of it, which WriteTxnMarkers serves too.
//!
//! The coordinator groups the partitions by their leader in the current
//! image: a partition this broker leads gets its marker directly on its
//! owning shard; another leader gets a WriteTxnMarkers request. Each marker
//! is appended with acks=all semantics (answered once the HW passes it), so
//! a completed transaction's markers survive any failover the data does.
//! Retriable errors (no leader, a moved leader, too few in-sync replicas, a
//! timeout) are retried with backoff until every partition has its marker;
//! a partition whose topic was deleted needs none. A partition that answers
//! TRANSACTION_COORDINATOR_FENCED or INVALID_PRODUCER_EPOCH has seen a
//! newer coordinator or producer epoch: this coordinator's work is
//! obsolete, and it stops.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

use crate::log::control_batch::MarkerSpec;
use crate::metadata::{dynamic_broker_config, topic_config, OFFSETS_TOPIC};
use crate::node::error_codes::error_code_for;
use crate::node::replicas::{self, wait_for_high_watermark, HighWatermarkWait};
use crate::node::state::BrokerState;
use crate::protocol::api::ApiKey;
use crate::protocol::error_code;
use crate::protocol::messages::write_txn_markers::*;
use crate::server::replication::kafka_peer::KafkaPeer;
use crate::shard::shard::{now_ms, Shard};
use crate::topic_partition::TopicPartition;
use crate::transaction::marker::{MarkerKind, TxnMarker};
use crate::transaction::metadata::{TxnMetadata, TxnState};

/// First wait before retrying the partitions whose marker failed.
pub const RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// Longest wait between retries.
pub const RETRY_BACKOFF_MAX: Duration = Duration::from_secs(5);
/// How long one marker waits for replication before it counts as failed
/// (and is retried): Kafka's `request.timeout.ms` default.
const MARKER_WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// The WriteTxnMarkers version for a transaction version 2 marker: v2
/// carries the transaction version, under which a leader checks the
/// marker's epoch. Markers of version 1 go as v1, which every broker
/// serves, so that a cluster that has not finalized version 2 (one in a
/// rolling upgrade from a broker without it) keeps writing markers.
const WRITE_TXN_MARKERS_TRANSACTION_VERSION_2: i16 = 2;
/// The WriteTxnMarkers version for a transaction version 1 marker.
const WRITE_TXN_MARKERS_TRANSACTION_VERSION_1: i16 = 1;
/// A WriteTxnMarkers response is small: one code per partition.
const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;
/// The transaction version a WriteTxnMarkers v1 request means.
pub const TRANSACTION_VERSION_1: i16 = 1;

/// One marker to write on the partitions of one leader.
#[derive(Debug, Clone)]
pub struct MarkerWrite {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    pub coordinator_epoch: i32,
    pub transaction_version: i16,
}

impl MarkerWrite {
    fn spec(&self) -> MarkerSpec {
        MarkerSpec {
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            marker: TxnMarker {
                kind: if self.commit {
                    MarkerKind::Commit
                } else {
                    MarkerKind::Abort
                },
                coordinator_epoch: self.coordinator_epoch,
            },
            timestamp_ms: now_ms(),
        }
    }
}

/// Writes the markers of `m`'s decided transaction (PrepareCommit or
/// PrepareAbort) to all its partitions. `true` once every partition has
/// its marker; `false` when `still_coordinating` turned false or a
/// partition showed this work obsolete.
pub async fn write_markers(
    shard: &Rc<Shard>,
    m: &TxnMetadata,
    coordinator_epoch: i32,
    still_coordinating: &dyn Fn() -> bool,
) -> bool {
    assert!(m.state.is_prepare(), "markers for {:?}", m.state);
    let write = MarkerWrite {
        producer_id: m.producer_id,
        producer_epoch: m.producer_epoch,
        commit: m.state == TxnState::PrepareCommit,
        coordinator_epoch,
        // Version 2's markers carry the epoch the EndTxn bumped, and the
        // leaders hold them to it (strictly newer than the data's).
        transaction_version: m.client_transaction_version.max(TRANSACTION_VERSION_1),
    };
    let broker = BrokerState::of(shard);
    let local = broker.node_id();
    let mut remaining: BTreeSet<TopicPartition> = m.partitions.clone();
    let mut peers: BTreeMap<String, KafkaPeer> = BTreeMap::new();
    let mut backoff = RETRY_BACKOFF;
    while !remaining.is_empty() {
        if !still_coordinating() {
            return false;
        }
        let image = broker.image();
        let mut by_leader: BTreeMap<i32, Vec<TopicPartition>> = BTreeMap::new();
        for tp in &remaining {
            match image.partition(&tp.topic, tp.partition) {
                None => {}
                Some(p) if p.leader < 0 => {}
                Some(p) => by_leader.entry(p.leader).or_default().push(tp.clone()),
            }
        }
        // A deleted topic's partitions need no marker (Kafka drops them).
        remaining.retain(|tp| image.partition(&tp.topic, tp.partition).is_some());
        // Every leader at once, and on each every partition at once: a
        // transaction's markers cost one replication round trip, not one
        // per partition.
        // The tasks wait only on this shard: local leaders answer through
        // `Shard::submit_to`'s relay, remote ones over this shard's socket,
        // so their handles may be kept and awaited (ARCHITECTURE.md, sharp
        // edges).
        let mut tasks = Vec::with_capacity(by_leader.len());
        for (leader, tps) in by_leader {
            let (shard, write) = (shard.clone(), write.clone());
            if leader == local {
                tasks.push(glommio::spawn_local(async move {
                    (write_local(&shard, &write, &tps).await, None)
                }));
                continue;
            }
            let Some(addr) = image
                .brokers
                .get(&leader)
                .filter(|b| !b.fenced)
                .map(|b| format!("{}:{}", b.host, b.port))
            else {
                continue;
            };
            let mut peer = peers.remove(&addr).unwrap_or_else(|| {
                KafkaPeer::new(
                    addr.clone(),
                    format!("pinlog-txn-markers-{local}-shard-{}", shard.id()),
                    crate::server::replication::kafka_peer::inter_broker_security(&shard),
                )
            });
            tasks.push(glommio::spawn_local(async move {
                let results = write_remote(&mut peer, &write, &tps).await;
                (results, Some((addr, peer)))
            }));
        }
        // Every task runs to its end: a marker write is never abandoned
        // half way, even when another partition already showed the work
        // obsolete.
        let mut obsolete = false;
        for task in tasks {
            let (results, peer) = task.await;
            if let Some((addr, peer)) = peer {
                peers.insert(addr, peer);
            }
            for (tp, code) in results {
                match code {
                    error_code::NONE => {
                        remaining.remove(&tp);
                    }
                    error_code::TRANSACTION_COORDINATOR_FENCED
                    | error_code::INVALID_PRODUCER_EPOCH => {
                        tracing::warn!(
                            partition = %tp,
                            producer_id = m.producer_id,
                            code,
                            "a partition refused the transaction's marker: a newer coordinator or producer epoch took over; stopping"
                        );
                        obsolete = true;
                    }
                    code => {
                        tracing::debug!(partition = %tp, code, "marker not written yet; retrying")
                    }
                }
            }
        }
        if obsolete {
            return false;
        }
        if !remaining.is_empty() {
            glommio::timer::sleep(backoff).await;
            backoff = (backoff * 2).min(RETRY_BACKOFF_MAX);
        }
    }
    true
}

/// Writes the marker on each of `tps`, which this broker leads, on their
/// owning shards.
pub async fn write_local(
    shard: &Rc<Shard>,
    write: &MarkerWrite,
    tps: &[TopicPartition],
) -> Vec<(TopicPartition, i16)> {
    // Each on its owner at once; every answer comes back through the
    // cross-shard relay, so the tasks' handles may be awaited (ARCHITECTURE.md,
    // sharp edges).
    let tasks: Vec<_> = tps
        .iter()
        .map(|tp| {
            let (shard, write, tp) = (shard.clone(), write.clone(), tp.clone());
            glommio::spawn_local(async move {
                let owner = shard.owner(&tp);
                let on_owner = tp.clone();
                let code = shard
                    .submit_to(owner, move |s| async move {
                        write_marker_on_owner(&s, &on_owner, &write).await
                    })
                    .await
                    .unwrap_or(error_code::NOT_LEADER_OR_FOLLOWER);
                (tp, code)
            })
        })
        .collect();
    let mut out = Vec::with_capacity(tasks.len());
    for task in tasks {
        out.push(task.await);
    }
    out
}

/// Appends one marker to `tp` on its owning shard as its leader, and waits
/// until it is replicated. For a `__consumer_offsets` partition the group
/// coordinator then applies or drops the producer's pending offsets.
pub async fn write_marker_on_owner(
    shard: &Rc<Shard>,
    tp: &TopicPartition,
    write: &MarkerWrite,
) -> i16 {
    let Some(led) = replicas::led_partition(shard, tp) else {
        return error_code::NOT_LEADER_OR_FOLLOWER;
    };
    let image = BrokerState::of(shard).image();
    let Some(topic) = image.topic(&tp.topic) else {
        return error_code::UNKNOWN_TOPIC_OR_PARTITION;
    };
    let overrides = dynamic_broker_config::effective_overrides(&image, &topic.configs);
    let min_insync = topic_config::min_insync_replicas(&overrides);
    let (epoch, result) = {
        let Ok(mut log) = led.log.write().await else {
            return error_code::KAFKA_STORAGE_ERROR;
        };
        if !replicas::still_local(shard, tp, &led.log) {
            return error_code::NOT_LEADER_OR_FOLLOWER;
        }
        // Leadership and the ISR may have changed while the lock was
        // taken: the epoch that counts is the one current at the write, and
        // with too few in-sync replicas the marker is refused before it is
        // written, as Kafka's acks=all (the HW could not pass it anyway).
        let epoch = {
            let state = led.state.borrow();
            if !state.is_leader() {
                return error_code::NOT_LEADER_OR_FOLLOWER;
            }
            if state.below_min_insync(min_insync).is_some() {
                return error_code::NOT_ENOUGH_REPLICAS;
            }
            state.leader_epoch()
        };
        let mut r = log
            .append_markers_as_leader(&[write.spec()], write.transaction_version, epoch, now_ms())
            .await;
        let r = r.pop().expect("one result per marker");
        if r.is_ok() {
            replicas::after_append(shard, tp, &mut log);
        }
        (epoch, r)
    };
    let info = match result {
        Ok(info) => info,
        Err(e) => {
            tracing::info!(partition = %tp, producer_id = write.producer_id, "marker refused: {e}");
            return error_code_for(&e);
        }
    };
    let wait = wait_for_high_watermark(
        shard,
        tp,
        epoch,
        info.last_offset + 1,
        min_insync,
        MARKER_WRITE_TIMEOUT,
    )
    .await;
    match wait {
        HighWatermarkWait::Reached => {}
        HighWatermarkWait::TimedOut => return error_code::REQUEST_TIMED_OUT,
        HighWatermarkWait::BelowMinIsr(_) => return error_code::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        HighWatermarkWait::LostLeadership => return error_code::NOT_LEADER_OR_FOLLOWER,
    }
    if tp.topic == OFFSETS_TOPIC {
        crate::group::coordinator::GroupCoordinator::of(shard).on_txn_marker(
            tp.partition,
            write.producer_id,
            write.commit,
        );
    }
    error_code::NONE
}

/// Sends one WriteTxnMarkers request for `tps` to their leader.
async fn write_remote(
    peer: &mut KafkaPeer,
    write: &MarkerWrite,
    tps: &[TopicPartition],
) -> Vec<(TopicPartition, i16)> {
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in tps {
        topics.entry(&tp.topic).or_default().push(tp.partition);
    }
    let version = if write.transaction_version > TRANSACTION_VERSION_1 {
        WRITE_TXN_MARKERS_TRANSACTION_VERSION_2
    } else {
        WRITE_TXN_MARKERS_TRANSACTION_VERSION_1
    };
    let request = WriteTxnMarkersRequest {
        markers: vec![WritableTxnMarker {
            producer_id: write.producer_id,
            producer_epoch: write.producer_epoch,
            transaction_result: write.commit,
            topics: topics
                .into_iter()
                .map(|(name, partition_indexes)| WritableTxnMarkerTopic {
                    name: name.to_string(),
                    partition_indexes,
                })
                .collect(),
            coordinator_epoch: write.coordinator_epoch,
            transaction_version: write.transaction_version as i8,
        }],
    };
    let answer = peer
        .call(
            ApiKey::WriteTxnMarkers,
            version,
            |w| request.encode(w, version),
            |r| WriteTxnMarkersResponse::decode(r, version),
            MARKER_WRITE_TIMEOUT + Duration::from_secs(5),
            MAX_RESPONSE_BYTES,
        )
        .await;
    let mut codes: BTreeMap<TopicPartition, i16> = tps
        .iter()
        .map(|tp| (tp.clone(), error_code::REQUEST_TIMED_OUT))
        .collect();
    match answer {
        Ok(resp) => {
            for marker in resp.markers {
                for t in marker.topics {
                    for p in t.partitions {
                        codes.insert(
                            TopicPartition::new(t.name.clone(), p.partition_index),
                            p.error_code,
                        );
                    }
                }
            }
        }
        Err(e) => {
            tracing::debug!(leader = peer.addr(), "WriteTxnMarkers failed: {e}");
            peer.disconnect();
        }
    }
    codes.into_iter().collect()
}
