//! ISR changes a leader proposes: AlterPartition to the active controller
//! (forwarded like admin requests), and the periodic check that drops
//! followers that stopped catching up (Kafka's `isr-expiration` task, every
//! half `replica.lag.time.max.ms`).
//!
//! The leader's replica state keeps the proposal as pending: it counts
//! toward the HW at once (the maximal ISR) and toward `min.insync.replicas`
//! only once the metadata image carries it. A refusal at the epoch the
//! change was based on clears it, so the next fetch or check may propose
//! again; without an answer it may have been committed, so it stays pending
//! and is sent again until the controller answers or an image settles it.

use std::rc::Rc;
use std::time::Duration;

use bytes::BytesMut;

use crate::node::replicas::Replicas;
use crate::node::state::BrokerState;
use crate::node::stop::StopHandle;
use crate::protocol::codec::Reader;
use crate::protocol::error_code;
use crate::protocol::messages::alter_partition::{
    AlterPartitionData, AlterPartitionRequest, AlterPartitionResponse, AlterPartitionTopic,
    IsrMember,
};
use crate::replica::{AlterIsr, UNKNOWN_BROKER_EPOCH};
use crate::server::controller;
use crate::shard::shard::{now_ms, Shard};
use crate::topic_partition::TopicPartition;

/// The AlterPartition version leaders send (v3: members' broker epochs).
pub const ALTER_PARTITION_VERSION: i16 = 3;

/// How long a leader waits before it sends an AlterPartition again whose
/// outcome it does not know (Kafka's `retry.backoff.ms` default).
const ALTER_PARTITION_RETRY_BACKOFF: Duration = Duration::from_millis(100);

/// What became of one AlterPartition.
enum AlterOutcome {
    Committed,
    /// The controller answered with an error; `controller_epoch` is its
    /// partition epoch for the partition, when it named one.
    Refused {
        why: String,
        controller_epoch: Option<i32>,
    },
    /// No answer (no active controller, a lost connection, a timeout): the
    /// change may have been committed.
    Unknown(String),
}

/// Sends `change` for `tp` to the active controller in the background,
/// again after [`ALTER_PARTITION_RETRY_BACKOFF`] for as long as its
/// outcome is unknown and it is still this leader's pending change.
pub fn propose(shard: &Rc<Shard>, tp: TopicPartition, change: AlterIsr) {
    let shard = shard.clone();
    glommio::spawn_local(async move {
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let outcome = send(&shard, &tp, &change).await;
            let state = Replicas::of(&shard).get(&tp);
            match outcome {
                AlterOutcome::Committed => {
                    tracing::info!(
                        partition = %tp,
                        isr = ?change.new_isr,
                        "the controller committed the ISR change"
                    );
                    return;
                }
                AlterOutcome::Refused {
                    why,
                    controller_epoch,
                } => {
                    if let Some(state) = state {
                        state
                            .borrow_mut()
                            .on_alter_isr_refused(&change, controller_epoch);
                    }
                    tracing::warn!(partition = %tp, isr = ?change.new_isr, "ISR change not committed: {why}");
                    return;
                }
                AlterOutcome::Unknown(why) => {
                    let still_pending = state
                        .is_some_and(|s| s.borrow().pending_alter().as_ref() == Some(&change));
                    let stopping = shard
                        .extension::<StopHandle>()
                        .is_some_and(|s| s.is_requested());
                    if !still_pending || stopping {
                        return;
                    }
                    if attempts == 1 {
                        tracing::warn!(
                            partition = %tp,
                            isr = ?change.new_isr,
                            "ISR change not answered: {why}; the HW waits for every member it \
                             adds, and it is sent again every {} ms until the controller answers",
                            ALTER_PARTITION_RETRY_BACKOFF.as_millis()
                        );
                    } else {
                        tracing::debug!(partition = %tp, attempts, "ISR change still not answered: {why}");
                    }
                    glommio::timer::sleep(ALTER_PARTITION_RETRY_BACKOFF).await;
                }
            }
        }
    })
    .detach();
}

async fn send(shard: &Rc<Shard>, tp: &TopicPartition, change: &AlterIsr) -> AlterOutcome {
    match request(shard, tp, change).await {
        Ok(outcome) => outcome,
        Err(why) => AlterOutcome::Unknown(why),
    }
}

/// One AlterPartition: `Err` when it could not be sent or no answer came.
async fn request(
    shard: &Rc<Shard>,
    tp: &TopicPartition,
    change: &AlterIsr,
) -> Result<AlterOutcome, String> {
    let broker = BrokerState::of(shard);
    let image = broker.image();
    let topic = image
        .topic(&tp.topic)
        .ok_or_else(|| format!("topic {} is gone", tp.topic))?;
    let me = broker.node_id();
    let my_epoch = image
        .brokers
        .get(&me)
        .map(|b| b.epoch)
        .ok_or("this broker is not registered")?;
    // KIP-903: each member's broker epoch as it was when the member made the
    // fetch that the change counts, not as the image has it now. A member
    // that lost power and registered again since holds less than that
    // fetch reported, and the controller refuses it (INELIGIBLE_REPLICA).
    let state = Replicas::of(shard).get(tp);
    let new_isr = change
        .new_isr
        .iter()
        .map(|&id| IsrMember {
            broker_id: id,
            broker_epoch: match (id == me, &state) {
                (true, _) => my_epoch,
                (false, Some(state)) => state.borrow().fetched_broker_epoch(id),
                (false, None) => UNKNOWN_BROKER_EPOCH,
            },
        })
        .collect();
    let request = AlterPartitionRequest {
        broker_id: me,
        broker_epoch: my_epoch,
        topics: vec![AlterPartitionTopic {
            topic_id: topic.id,
            partitions: vec![AlterPartitionData {
                partition_index: tp.partition,
                leader_epoch: change.leader_epoch,
                new_isr,
                leader_recovery_state: 0,
                partition_epoch: change.partition_epoch,
            }],
        }],
    };
    let mut body = BytesMut::new();
    request.encode(&mut body, ALTER_PARTITION_VERSION);
    let (answer, message) =
        controller::alter_partition_call(shard, ALTER_PARTITION_VERSION, body.to_vec())
            .await
            .map_err(|e| format!("the controller did not answer: {e}"))?;
    let response =
        AlterPartitionResponse::decode(&mut Reader::new(answer.into()), ALTER_PARTITION_VERSION)
            .map_err(|e| format!("the controller's answer does not decode: {e}"))?;
    if response.error_code != error_code::NONE {
        return Ok(AlterOutcome::Refused {
            why: format!(
                "error {}{}",
                response.error_code,
                message.map(|m| format!(": {m}")).unwrap_or_default()
            ),
            controller_epoch: None,
        });
    }
    let result = response
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .find(|p| p.partition_index == tp.partition)
        .ok_or("the controller's answer lacks the partition")?;
    if result.error_code != error_code::NONE {
        return Ok(AlterOutcome::Refused {
            why: format!("error {}", result.error_code),
            controller_epoch: (result.partition_epoch >= 0).then_some(result.partition_epoch),
        });
    }
    Ok(AlterOutcome::Committed)
}

/// Checks every partition this shard leads for followers that stopped
/// catching up, every half `replica.lag.time.max.ms`, until `stop`.
pub async fn expire_lagging_followers(shard: Rc<Shard>, stop: StopHandle) {
    let lag_ms = BrokerState::of(&shard).config.replication.lag_time_max_ms;
    let every = Duration::from_millis((lag_ms / 2).max(10));
    while !stop.is_requested() {
        crate::ticks::sleep_to_next_tick(every).await;
        let now = now_ms();
        for (tp, state) in Replicas::of(&shard).all() {
            let change = state.borrow_mut().tick(now);
            if let Some(change) = change {
                tracing::info!(
                    partition = %tp,
                    isr = ?change.new_isr,
                    "followers fell behind for replica.lag.time.max.ms ({lag_ms} ms): shrinking the ISR"
                );
                propose(&shard, tp, change);
            }
        }
    }
}
