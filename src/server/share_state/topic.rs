//! Creating `__share_group_state` the first time a share partition's state
//! is looked for, with Kafka's settings for it: `cleanup.policy=delete` (a
//! snapshot and the updates after it cannot be compacted by key: the
//! coordinator prunes the log itself, `prune.rs`),
//! `share.coordinator.state.topic.min.isr` in-sync replicas, and no unclean
//! leader election (a coordinator that lost acknowledgements would
//! redeliver acknowledged records). Whatever the broker's retention
//! defaults, the topic has no time or size retention: only pruning deletes.

use std::rc::Rc;

use crate::metadata::SHARE_GROUP_STATE_TOPIC;
use crate::node::state::BrokerState;
use crate::server::controller::internal_topics::{ensure_internal_topic, InternalTopic};
use crate::shard::shard::Shard;

/// Creates the topic unless the image already has it (then it costs one
/// lookup).
pub async fn ensure_share_group_state_topic(shard: &Rc<Shard>) -> Result<(), i16> {
    let cfg = BrokerState::of(shard).config.share_coordinator.clone();
    ensure_internal_topic(
        shard,
        InternalTopic {
            name: SHARE_GROUP_STATE_TOPIC,
            partitions: cfg.state_topic_num_partitions,
            replication_factor: cfg.state_topic_replication_factor,
            configs: vec![
                ("cleanup.policy".into(), "delete".into()),
                // Only pruning deletes: time or size retention would drop
                // the snapshot of a share partition that is merely idle.
                ("retention.ms".into(), "-1".into()),
                ("retention.bytes".into(), "-1".into()),
                (
                    "segment.bytes".into(),
                    cfg.state_topic_segment_bytes.to_string(),
                ),
                (
                    "min.insync.replicas".into(),
                    cfg.state_topic_min_isr.to_string(),
                ),
                ("unclean.leader.election.enable".into(), "false".into()),
            ],
            for_whom: "share coordinator",
        },
    )
    .await
}
