//! Writing to a partition of an internal topic (`__consumer_offsets`,
//! `__transaction_state`) as its leader, and waiting until the write is
//! replicated: what the group and transaction coordinators do before a
//! change takes effect in their memory.

use std::time::Duration;

use bytes::{Bytes, BytesMut};

use crate::error::LogError;
use crate::log::batch;
use crate::log::partition_log::AppendInfo;
use crate::node::replicas::{self, wait_for_high_watermark, HighWatermarkWait};
use crate::shard::shard::{now_ms, Shard};
use crate::topic_partition::TopicPartition;

/// Why a write did not become durable.
#[derive(Debug)]
pub enum InternalWriteError {
    /// This broker does not lead the partition (any more).
    NotLeader,
    /// The log was closed or taken offline under the write.
    Unavailable,
    /// The ISR did not catch up within the timeout: the write is in the
    /// leader's log but may be lost with a failover.
    Timeout,
    /// The log refused the write.
    Log(LogError),
}

/// Appends `records` (key, value or tombstone) in one batch to `tp`, which
/// this shard must lead, and waits until the high watermark passes it or
/// `timeout` passes. Answered only once replicated: a write the ISR does
/// not hold could vanish with a failover (Kafka's acks=all for coordinator
/// state).
pub async fn append_replicated(
    shard: &Shard,
    tp: &TopicPartition,
    records: &[(Bytes, Option<Bytes>)],
    timeout: Duration,
) -> Result<AppendInfo, InternalWriteError> {
    let Some(led) = replicas::led_partition(shard, tp) else {
        return Err(InternalWriteError::NotLeader);
    };
    let epoch = led.state.borrow().leader_epoch();
    let now = now_ms();
    let specs: Vec<batch::KeyedRecordSpec<'_>> = records
        .iter()
        .map(|(k, v)| (0, Some(&k[..]), v.as_deref()))
        .collect();
    let bytes = batch::build_keyed_batch(0, epoch, now, &specs);
    let info = {
        let mut log = led
            .log
            .write()
            .await
            .map_err(|_| InternalWriteError::Unavailable)?;
        let r = log
            .append_as_leader(BytesMut::from(&bytes[..]), epoch, None, now)
            .await;
        if r.is_ok() {
            replicas::after_append(shard, tp, &mut log);
        }
        r.map_err(InternalWriteError::Log)?
    };
    let wait = wait_for_high_watermark(
        shard,
        tp,
        epoch,
        info.last_offset + 1,
        // A leader is always in its ISR: the wait never ends early; an ISR
        // below the topic's minimum shows as a timeout, as in Kafka.
        1,
        timeout,
    )
    .await;
    match wait {
        HighWatermarkWait::Reached => Ok(info),
        HighWatermarkWait::TimedOut | HighWatermarkWait::BelowMinIsr(_) => {
            Err(InternalWriteError::Timeout)
        }
        HighWatermarkWait::LostLeadership => Err(InternalWriteError::NotLeader),
    }
}
