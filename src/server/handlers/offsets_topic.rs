//! Creating `__consumer_offsets` the first time a client looks for a group
//! coordinator, as Kafka does. It lives in the server, not in the group
//! coordinator, because it goes through the controller.

use std::rc::Rc;

use crate::metadata::OFFSETS_TOPIC;
use crate::node::state::BrokerState;
use crate::server::controller::internal_topics::{ensure_internal_topic, InternalTopic};
use crate::shard::shard::Shard;

/// Creates `__consumer_offsets` if it does not exist yet: compacted, with
/// `offsets.topic.num.partitions` partitions and
/// `offsets.topic.segment.bytes` segments. Errors come back as the code
/// FindCoordinator answers with (the client retries).
pub async fn ensure_offsets_topic(shard: &Rc<Shard>) -> Result<(), i16> {
    let cfg = BrokerState::of(shard).config.group.clone();
    ensure_internal_topic(
        shard,
        InternalTopic {
            name: OFFSETS_TOPIC,
            partitions: cfg.offsets_topic_num_partitions,
            replication_factor: cfg.offsets_topic_replication_factor,
            configs: vec![
                ("cleanup.policy".into(), "compact".into()),
                (
                    "segment.bytes".into(),
                    cfg.offsets_topic_segment_bytes.to_string(),
                ),
                ("compression.type".into(), "producer".into()),
            ],
            for_whom: "group coordinator",
        },
    )
    .await
}
