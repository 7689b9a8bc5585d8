//! ISR changes a leader proposes: AlterPartition to the active controller
//! (forwarded like admin requests), and the periodic check that drops
//! followers that stopped catching up (Kafka's `isr-expiration` task, every
//! half `replica.lag.time.max.ms`).
//!
//! The leader's replica state keeps the proposal as pending: it counts
//! toward the HW at once (the maximal ISR) and toward `min.insync.replicas`
//! only once the metadata image carries it. A refusal clears it, so the next
//! fetch or check may propose again.

use std::rc::Rc;
use std::time::Duration;

use bytes::BytesMut;

use crate::log::topic_partition::TopicPartition;
use crate::node::replicas::Replicas;
use crate::node::state::BrokerState;
use crate::node::stop::StopHandle;
use crate::protocol::codec::Reader;
use crate::protocol::error_code;
use crate::protocol::messages::alter_partition::{
    AlterPartitionData, AlterPartitionRequest, AlterPartitionResponse, AlterPartitionTopic,
    IsrMember,
};
use crate::replica::AlterIsr;
use crate::server::controller;
use crate::shard::shard::{now_ms, Shard};

/// The AlterPartition version leaders send (v3: members' broker epochs).
pub const ALTER_PARTITION_VERSION: i16 = 3;

/// Sends `change` for `tp` to the active controller in the background.
pub fn propose(shard: &Rc<Shard>, tp: TopicPartition, change: AlterIsr) {
    let shard = shard.clone();
    glommio::spawn_local(async move {
        let outcome = send(&shard, &tp, &change).await;
        match outcome {
            Ok(()) => tracing::info!(
                partition = %tp,
                isr = ?change.new_isr,
                "the controller committed the ISR change"
            ),
            Err(why) => {
                if let Some(state) = Replicas::of(&shard).get(&tp) {
                    state.borrow_mut().on_alter_isr_failed();
                }
                tracing::warn!(partition = %tp, isr = ?change.new_isr, "ISR change not committed: {why}");
            }
        }
    })
    .detach();
}

async fn send(shard: &Rc<Shard>, tp: &TopicPartition, change: &AlterIsr) -> Result<(), String> {
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
    let new_isr = change
        .new_isr
        .iter()
        .map(|&id| IsrMember {
            broker_id: id,
            broker_epoch: image.brokers.get(&id).map_or(-1, |b| b.epoch),
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
        return Err(format!(
            "error {}{}",
            response.error_code,
            message.map(|m| format!(": {m}")).unwrap_or_default()
        ));
    }
    let code = response
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .find(|p| p.partition_index == tp.partition)
        .map(|p| p.error_code)
        .ok_or("the controller's answer lacks the partition")?;
    if code != error_code::NONE {
        return Err(format!("error {code}"));
    }
    Ok(())
}

/// Checks every partition this shard leads for followers that stopped
/// catching up, every half `replica.lag.time.max.ms`, until `stop`.
pub async fn expire_lagging_followers(shard: Rc<Shard>, stop: StopHandle) {
    let lag_ms = BrokerState::of(&shard).config.replication.lag_time_max_ms;
    let every = Duration::from_millis((lag_ms / 2).max(10));
    while !stop.is_requested() {
        glommio::timer::sleep(every).await;
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
