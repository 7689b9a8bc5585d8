//! Creating `__transaction_state` the first time a client looks for a
//! transaction coordinator, with Kafka's settings for it: compacted,
//! uncompressed, `transaction.state.log.min.isr` in-sync replicas, and no
//! unclean leader election (a coordinator that lost decided transactions
//! would let their markers go unwritten).

use std::rc::Rc;

use crate::metadata::TRANSACTION_STATE_TOPIC;
use crate::node::state::BrokerState;
use crate::server::controller::internal_topics::{ensure_internal_topic, InternalTopic};
use crate::shard::shard::Shard;

pub async fn ensure_transaction_state_topic(shard: &Rc<Shard>) -> Result<(), i16> {
    let cfg = BrokerState::of(shard).config.transaction.clone();
    ensure_internal_topic(
        shard,
        InternalTopic {
            name: TRANSACTION_STATE_TOPIC,
            partitions: cfg.state_log_num_partitions,
            replication_factor: cfg.state_log_replication_factor,
            configs: vec![
                ("cleanup.policy".into(), "compact".into()),
                (
                    "segment.bytes".into(),
                    cfg.state_log_segment_bytes.to_string(),
                ),
                ("compression.type".into(), "uncompressed".into()),
                (
                    "min.insync.replicas".into(),
                    cfg.state_log_min_isr.to_string(),
                ),
                ("unclean.leader.election.enable".into(), "false".into()),
            ],
            for_whom: "transaction coordinator",
        },
    )
    .await
}
