//! The image applier: each committed metadata image brought onto every
//! shard of this node, one image at a time per shard and in order. A shard
//! opens the partitions it owns that have a replica here (as leader or
//! follower), applies changed settings, and deletes those whose topic is
//! gone or that a reassignment moved away.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;

use crate::config::LogConfig;
use crate::constants::{FOLLOWER_JOIN_GRACE_MS, PARTITION_OPENS_IN_FLIGHT};
use crate::controller::partitions::effective_min_isr;
use crate::error::LogResult;
use crate::group::coordinator::GroupCoordinator;
use crate::log::partition_metadata::{self, format_topic_id, TopicId, TopicIdCheck};
use crate::metadata::image::{MetadataImage, PartitionImage};
use crate::metadata::{dynamic_broker_config, topic_config};
use crate::metadata::{OFFSETS_TOPIC, SHARE_GROUP_STATE_TOPIC, TRANSACTION_STATE_TOPIC};
use crate::node::append_waiters::AppendWaiters;
use crate::node::follower_gains::FollowerGains;
use crate::node::replicas::{self, Replicas};
use crate::node::state::BrokerState;
use crate::replica::{Assignment, Transition};
use crate::server::replication::replica_fetcher::ReplicaFetchers;
use crate::server::share_partitions::SharePartitions;
use crate::server::share_state::ShareStateCoordinator;
use crate::server::txn_coordinator::TxnCoordinator;
use crate::shard::shard::{map_concurrently, now_ms, Shard};
use crate::topic_partition::TopicPartition;

fn stopped() -> crate::error::LogError {
    crate::error::LogError::Offline {
        partition: crate::metadata::METADATA_TOPIC.to_string(),
        reason: "the controller has shut down".to_string(),
    }
}

/// Sends `image` to every shard and waits until each has applied it.
pub async fn publish(shard: &Rc<Shard>, image: Arc<MetadataImage>) -> LogResult<()> {
    // Every shard applies it at once: each opens and transitions its own
    // partitions. The cross-shard replies come through `submit_to`'s relay,
    // so awaiting these tasks is safe (ARCHITECTURE.md's sharp edges).
    let applying: Vec<_> = (0..shard.shard_count())
        .map(|s| {
            let shard = shard.clone();
            let image = image.clone();
            glommio::spawn_local(async move {
                shard
                    .submit_to(
                        s,
                        move |shard| async move { apply_image(&shard, image).await },
                    )
                    .await
            })
        })
        .collect();
    let mut result = Ok(());
    for task in applying {
        let applied = task.await;
        if result.is_ok() {
            result = applied.and_then(|r| r);
        }
    }
    result
}

/// A shard's `apply_image` state: whose turn it is, and the image its
/// partitions were last brought in line with.
struct ImageApplier {
    turn: glommio::sync::Semaphore,
    applied: RefCell<Option<Arc<MetadataImage>>>,
}

impl ImageApplier {
    fn of(shard: &Shard) -> Rc<ImageApplier> {
        if let Some(a) = shard.extension::<ImageApplier>() {
            return a;
        }
        let a = Rc::new(ImageApplier {
            turn: glommio::sync::Semaphore::new(1),
            applied: RefCell::new(None),
        });
        shard.set_extension(a.clone());
        a
    }
}

/// Brings one shard in line with `image`: opens the partitions it owns
/// that have a replica on this broker and that it does not have yet (as
/// leader, recording the epoch start, or as a follower, which only holds
/// its own log until replication copies data), deletes those whose topic
/// is gone, and applies changed topic settings.
pub async fn apply_image(shard: &Rc<Shard>, image: Arc<MetadataImage>) -> LogResult<()> {
    let broker = BrokerState::of(shard);
    if image.offset < broker.image().offset {
        return Ok(());
    }
    let replaced = broker.image();
    broker.set_image(image.clone());
    if !broker.is_caught_up() {
        // The images before this node caught up with the quorum are old
        // ones replayed from its metadata log. Roles taken from them would
        // make this replica a leader of an old epoch, whose epoch-cache
        // entry truncates the newer ones, and it would believe it served
        // that epoch's HW (found by the fault suite). As Kafka does,
        // replicas apply only the image current once the node has caught
        // up and registered (`start_controller` publishes it then).
        return Ok(());
    }
    // One image's transitions at a time on a shard. They await partition
    // opens and locks; run concurrently, an older image (the one published
    // at startup, say) could finish after a newer one and delete the
    // partition the newer one created, as a stray, or restore old settings.
    let applier = ImageApplier::of(shard);
    let Ok(_turn) = applier.turn.acquire_permit(1).await else {
        return Ok(());
    };
    if broker.image().offset > image.offset {
        // A newer image came meanwhile: it brings the shard in line with
        // everything up to it, after this turn.
        return Ok(());
    }
    // What the shard was last brought in line with decides which missing
    // partitions this image removed.
    let previous = applier.applied.borrow().clone().unwrap_or(replaced);
    // The partitions this shard owns with a replica here. Their
    // transitions are independent (each under its own log's lock), so they
    // run PARTITION_OPENS_IN_FLIGHT at a time. New leaders' epoch entries
    // reach their checkpoints afterwards, in the background: written here,
    // one file creation and two fsyncs each, they held a restart with
    // 10,000 partitions for 3-5 s before it served.
    // The same pass notes the partitions the image gives followers on this
    // leader, recorded once the transitions are done.
    let me = broker.node_id();
    let mut assigned = Vec::new();
    let mut gains = Vec::new();
    for topic in image.topics.values() {
        let (config, min_insync_replicas) = topic_settings(&broker, &image, topic);
        for (&p, part) in &topic.partitions {
            let tp = TopicPartition::new(topic.name.clone(), p);
            for follower in gained_followers(&previous, &topic.name, p, part, me) {
                gains.push((follower, tp.clone()));
            }
            if shard.owner(&tp) != shard.id() || !part.replicas.contains(&me) {
                continue;
            }
            assigned.push((
                tp,
                topic.id,
                config.clone(),
                assignment_from(part, min_insync_replicas),
            ));
        }
    }
    // The followers this image makes join their fetchers together once
    // all its transitions are done (`joining_followers.rs`).
    let join_hold = ReplicaFetchers::hold_joins(shard);
    let applied = {
        let shard = shard.clone();
        map_concurrently(
            assigned,
            PARTITION_OPENS_IN_FLIGHT,
            move |(tp, topic_id, config, assignment)| {
                let shard = shard.clone();
                async move {
                    let lags =
                        apply_assignment(&shard, tp.clone(), topic_id, config, assignment).await;
                    (tp, lags)
                }
            },
        )
        .await
    };
    drop(join_hold);
    record_follower_gains(shard, gains);
    let mut deferred = Vec::new();
    let mut failure = None;
    for (tp, result) in applied {
        match result {
            Ok(true) => deferred.push(tp),
            Ok(false) => {}
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    persist_deferred_epochs(shard, deferred);
    if let Some(e) = failure {
        return Err(e);
    }
    // A local partition missing from the image is deleted only when this
    // image removed it (the previous one had it), or, once this node has
    // caught up with the quorum, as a stray. An image replayed at startup
    // may be older than the partition: deleting then would destroy a
    // replica the quorum still assigns here.
    // A replica that a reassignment moved off this broker goes the same
    // way, once the reassignment has completed (the image no longer lists
    // this broker): its fetcher stops with it.
    let caught_up = broker.is_caught_up();
    let assigned_here = |image: &MetadataImage, tp: &TopicPartition| {
        image
            .partition(&tp.topic, tp.partition)
            .is_some_and(|p| p.replicas.contains(&me))
    };
    for tp in shard.local_partitions() {
        if assigned_here(&image, &tp) {
            continue;
        }
        let removed_now = assigned_here(&previous, &tp);
        if removed_now || caught_up {
            if image.partition(&tp.topic, tp.partition).is_some() {
                tracing::info!(
                    partition = %tp,
                    "a reassignment moved this replica to other brokers: deleting it"
                );
            }
            remove_local_replica(shard, &tp).await?;
        }
    }
    *applier.applied.borrow_mut() = Some(image);
    Ok(())
}

/// The followers `part` (partition `p` of `topic` in the image being
/// applied) gains on this leader: it is led here, they are replicas, and
/// not both in `previous`, what the shard was last brought in line with.
fn gained_followers<'a>(
    previous: &'a MetadataImage,
    topic: &'a str,
    p: i32,
    part: &'a PartitionImage,
    me: i32,
) -> impl Iterator<Item = i32> + 'a {
    let led_here = part.leader == me;
    let led_before = match led_here {
        true => previous.partition(topic, p).filter(|b| b.leader == me),
        false => None,
    };
    part.replicas.iter().copied().filter(move |&follower| {
        led_here && follower != me && !led_before.is_some_and(|b| b.replicas.contains(&follower))
    })
}

/// Records `gains` (follower, partition) and answers those followers'
/// Fetches parked on this shard, which lack them (`node::follower_gains`).
/// Every shard applies every image, so each records the whole node's
/// gains: a follower's Fetch may come in on any of them. Called after this
/// shard's own transitions, so its new leaders are open when the follower
/// asks.
fn record_follower_gains(shard: &Shard, gains: Vec<(i32, TopicPartition)>) {
    let now = now_ms();
    let until = now + FOLLOWER_JOIN_GRACE_MS;
    let followers: BTreeSet<i32> = gains.iter().map(|(follower, _)| *follower).collect();
    {
        let record = FollowerGains::of(shard);
        let mut record = record.borrow_mut();
        record.forget_expired(now);
        for (follower, tp) in gains {
            record.gain(follower, tp, until);
        }
    }
    let waiters = AppendWaiters::of(shard);
    for follower in followers {
        waiters.notify_gain(follower);
    }
}

/// Stops every role of the local replica of `tp` and deletes its directory.
async fn remove_local_replica(shard: &Rc<Shard>, tp: &TopicPartition) -> LogResult<()> {
    if tp.topic == OFFSETS_TOPIC {
        GroupCoordinator::of(shard).on_lost_leadership(tp.partition);
    }
    if tp.topic == TRANSACTION_STATE_TOPIC {
        TxnCoordinator::of(shard).on_lost_leadership(tp.partition);
    }
    if tp.topic == SHARE_GROUP_STATE_TOPIC {
        ShareStateCoordinator::of(shard).on_lost_leadership(tp.partition);
    }
    SharePartitions::of(shard).on_lost_leadership(tp);
    replicas::forget(shard, tp);
    crate::node::partition_load::PartitionLoad::of(shard).forget(tp);
    shard.delete_local_partition(tp).await
}

/// A topic's log settings on this broker, and its `min.insync.replicas`.
fn topic_settings(
    broker: &BrokerState,
    image: &MetadataImage,
    topic: &crate::metadata::image::TopicImage,
) -> (LogConfig, usize) {
    let overrides = dynamic_broker_config::effective_overrides(image, &topic.configs);
    (
        topic_config::log_config(&broker.config, &overrides),
        topic_config::min_insync_replicas(&overrides),
    )
}

fn assignment_from(part: &PartitionImage, min_insync_replicas: usize) -> Assignment {
    Assignment {
        leader: part.leader,
        leader_epoch: part.leader_epoch,
        partition_epoch: part.partition_epoch,
        replicas: part.replicas.clone(),
        isr: part.isr.clone(),
        min_isr: effective_min_isr(min_insync_replicas, part.replicas.len()),
    }
}

/// Opens `tp` on this shard, its owner now, and applies its assignment in
/// the shard's current image: how a partition moved from another shard
/// takes up its role again. A partition the image no longer assigns here
/// (its topic deleted, or reassigned away, during the move) is deleted, as
/// applying that image would have done.
pub async fn adopt_partition(shard: &Rc<Shard>, tp: TopicPartition) -> LogResult<()> {
    let broker = BrokerState::of(shard);
    let image = broker.image();
    let assigned = image.topic(&tp.topic).and_then(|topic| {
        let part = topic.partitions.get(&tp.partition)?;
        if !part.replicas.contains(&broker.node_id()) {
            return None;
        }
        let (config, min_insync_replicas) = topic_settings(&broker, &image, topic);
        Some((topic.id, config, assignment_from(part, min_insync_replicas)))
    });
    match assigned {
        Some((topic_id, config, assignment)) if broker.is_caught_up() => {
            if apply_assignment(shard, tp.clone(), topic_id, config, assignment).await? {
                persist_deferred_epochs(shard, vec![tp]);
            }
            Ok(())
        }
        // Not serving yet: the image applied once caught up opens it.
        Some(_) => Ok(()),
        None => {
            shard
                .open_local_partition(tp.clone(), broker.config.log.clone())
                .await?;
            shard.delete_local_partition(&tp).await
        }
    }
}

/// Opens one assigned partition if needed and applies its assignment:
/// its settings, and the leader or follower transition. A local directory
/// of another topic of the same name (`partition.metadata` says which) is
/// deleted as a stray first, and the topic id is recorded before the
/// partition takes a role. Returns whether a new leader's epoch entry is
/// still to be written to its checkpoint (`persist_deferred_epochs`).
async fn apply_assignment(
    shard: &Rc<Shard>,
    tp: TopicPartition,
    topic_id: TopicId,
    config: LogConfig,
    assignment: Assignment,
) -> LogResult<bool> {
    let broker = BrokerState::of(shard);
    if shard.local_log(&tp).is_none() {
        shard
            .open_local_partition(tp.clone(), config.clone())
            .await?;
    }
    let Some(log) = shard.local_log(&tp) else {
        return Ok(false);
    };
    let on_disk = log.read().await.map_err(|_| stopped())?.topic_id();
    if let TopicIdCheck::Stray { on_disk } = partition_metadata::check(on_disk, &topic_id) {
        // Kafka finds the same among its stray logs at startup: the
        // directory's records were never this topic's, so it is not served.
        tracing::warn!(
            partition = %tp,
            directory_topic_id = %format_topic_id(&on_disk),
            topic_id = %format_topic_id(&topic_id),
            "a stray replica: the local directory belongs to an earlier topic of this name \
             (deleted and created again while this broker was away); deleting it"
        );
        remove_local_replica(shard, &tp).await?;
        shard
            .open_local_partition(tp.clone(), config.clone())
            .await?;
    }
    let Some(log) = shard.local_log(&tp) else {
        return Ok(false);
    };
    let mut log = log.write().await.map_err(|_| stopped())?;
    log.record_topic_id(topic_id).await?;
    if log.config() != &config {
        log.set_config(config);
    }
    let state = Replicas::of(shard).get_or_create(
        &tp,
        &log,
        broker.node_id(),
        shard.checkpointed_high_watermark(&tp),
        broker.config.replication.lag_time_max_ms as i64,
    );
    let (leader_epoch, isr) = (assignment.leader_epoch, assignment.isr.clone());
    // The log's write lock is held across the transition and the
    // epoch-cache update, so no append sees a leader without its epoch
    // entry.
    let transition = state.borrow_mut().apply_assignment(&assignment, now_ms());
    let mut epoch_checkpoint_lags = false;
    match transition {
        Transition::BecameLeader { epoch_start_offset } => {
            // Kafka's makeLeader: the new epoch starts at the LEO. The
            // checkpoint is written later (`persist_deferred_epochs`), or by
            // the epoch's first append, before its batches.
            if log.epoch_cache().latest_epoch() != Some(leader_epoch) {
                epoch_checkpoint_lags =
                    log.assign_leader_epoch_in_memory(leader_epoch, epoch_start_offset)?;
            }
            replicas::sync_high_watermark(shard, &tp, &mut log);
            drop(log);
            tracing::info!(
                partition = %tp,
                leader_epoch,
                isr = ?isr,
                "leading the partition from offset {epoch_start_offset}"
            );
            if tp.topic == OFFSETS_TOPIC {
                GroupCoordinator::of(shard).on_became_leader(shard, tp.partition);
            }
            if tp.topic == TRANSACTION_STATE_TOPIC {
                TxnCoordinator::of(shard).on_became_leader(shard, tp.partition, leader_epoch);
            }
            if tp.topic == SHARE_GROUP_STATE_TOPIC {
                ShareStateCoordinator::of(shard).on_became_leader(
                    shard,
                    tp.partition,
                    leader_epoch,
                );
            }
        }
        Transition::BecameFollower { leader } => {
            drop(log);
            tracing::info!(
                partition = %tp,
                leader_epoch,
                "following broker {}",
                leader.map_or("(none: the partition is offline)".to_string(), |l| l.to_string())
            );
            if tp.topic == OFFSETS_TOPIC {
                GroupCoordinator::of(shard).on_lost_leadership(tp.partition);
            }
            if tp.topic == TRANSACTION_STATE_TOPIC {
                TxnCoordinator::of(shard).on_lost_leadership(tp.partition);
            }
            if tp.topic == SHARE_GROUP_STATE_TOPIC {
                ShareStateCoordinator::of(shard).on_lost_leadership(tp.partition);
            }
            SharePartitions::of(shard).on_lost_leadership(&tp);
            if let Some(leader) = leader {
                ReplicaFetchers::of(shard).follow(shard, tp.clone(), leader);
            }
        }
        Transition::IsrChanged { .. } => {
            replicas::sync_high_watermark(shard, &tp, &mut log);
        }
        Transition::Unchanged => {}
    }
    if transition != Transition::Unchanged {
        replicas::after_transition(shard, &tp);
    }
    Ok(epoch_checkpoint_lags)
}

/// Writes the leader-epoch checkpoints that leader transitions left in
/// memory, `PARTITION_OPENS_IN_FLIGHT` at a time, in the background: a
/// restart with thousands of partitions serves first. A failed write takes
/// its partition offline, as any checkpoint failure does.
fn persist_deferred_epochs(shard: &Rc<Shard>, partitions: Vec<TopicPartition>) {
    if partitions.is_empty() {
        return;
    }
    let shard = shard.clone();
    glommio::spawn_local(async move {
        map_concurrently(partitions, PARTITION_OPENS_IN_FLIGHT, move |tp| {
            let shard = shard.clone();
            async move {
                let Some(log) = shard.local_log(&tp) else {
                    return;
                };
                let Ok(mut log) = log.write().await else {
                    return;
                };
                if let Err(e) = log.persist_epoch_checkpoint().await {
                    tracing::warn!(partition = %tp, "leader-epoch checkpoint not written: {e}");
                }
            }
        })
        .await;
    })
    .detach();
}
