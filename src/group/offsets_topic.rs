//! `__consumer_offsets`: which partition a group lives on, and creating the
//! topic the first time a client looks for a coordinator, as Kafka does.

use std::rc::Rc;

use crate::protocol::error_code;
use crate::server::controller::{self, NewTopic};
use crate::server::state::BrokerState;
use crate::shard::shard::Shard;

/// Kafka's internal topic for committed offsets and group metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Kafka's group-to-partition mapping: `Utils.abs(groupId.hashCode()) %
/// partitions`, with Java's UTF-16 string hash, so a group lands on the
/// same partition number it would in Kafka.
pub fn partition_for(group_id: &str, partitions: i32) -> i32 {
    let mut h: i32 = 0;
    for unit in group_id.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(unit as i32);
    }
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions.max(1)
}

/// Creates `__consumer_offsets` if it does not exist yet: compacted, with
/// `offsets.topic.num.partitions` partitions and
/// `offsets.topic.segment.bytes` segments. Errors come back as the code
/// FindCoordinator answers with (the client retries).
pub async fn ensure_offsets_topic(shard: &Rc<Shard>) -> Result<(), i16> {
    let broker = BrokerState::of(shard);
    if broker.image().topic(OFFSETS_TOPIC).is_some() {
        return Ok(());
    }
    let cfg = &broker.config.group;
    let topic = NewTopic {
        name: OFFSETS_TOPIC.to_string(),
        num_partitions: cfg.offsets_topic_num_partitions,
        replication_factor: 1,
        configs: vec![
            ("cleanup.policy".into(), Some("compact".into())),
            (
                "segment.bytes".into(),
                Some(cfg.offsets_topic_segment_bytes.to_string()),
            ),
            ("compression.type".into(), Some("producer".into())),
        ],
    };
    match controller::create_topics(shard, vec![topic], false).await {
        Ok(results) => {
            for (_, r) in results {
                match r {
                    Ok(created) => tracing::info!(
                        partitions = created.num_partitions,
                        "created {OFFSETS_TOPIC} for the group coordinator"
                    ),
                    Err((code, _)) if code == error_code::TOPIC_ALREADY_EXISTS => {}
                    Err((code, message)) => {
                        tracing::error!(code, "cannot create {OFFSETS_TOPIC}: {message}");
                        return Err(error_code::COORDINATOR_NOT_AVAILABLE);
                    }
                }
            }
            Ok(())
        }
        Err(e) => {
            tracing::error!("cannot create {OFFSETS_TOPIC}: {e}");
            Err(error_code::COORDINATOR_NOT_AVAILABLE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_land_on_kafkas_partitions() {
        assert_eq!(partition_for("", 50), 0);
        // Java: "my-group".hashCode() == 1042187312 (no overflow needed to
        // compute it by hand: it is the usual 31-polynomial).
        let h = "my-group"
            .encode_utf16()
            .fold(0i64, |h, c| (h * 31 + c as i64) as i32 as i64);
        assert_eq!(partition_for("my-group", 50), (h as i32).abs() % 50);
        // "polygenelubricants" hashes to Integer.MIN_VALUE in Java, whose
        // Utils.abs is 0.
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        for g in ["a", "group-1", "éè", "consumer-group-with-a-long-name"] {
            assert!((0..50).contains(&partition_for(g, 50)));
        }
    }
}
