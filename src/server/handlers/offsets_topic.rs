//! Creating `__consumer_offsets` the first time a client looks for a group
//! coordinator, as Kafka does. It lives in the server, not in the group
//! coordinator, because it goes through the controller.

use std::rc::Rc;

use crate::metadata::OFFSETS_TOPIC;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::server::controller::{self, NewTopic};
use crate::shard::shard::Shard;

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
    let image = broker.image();
    let live = image
        .brokers
        .values()
        .filter(|b| !b.fenced && !b.in_controlled_shutdown)
        .count()
        .max(1);
    let replication_factor = cfg.offsets_topic_replication_factor.min(live as i16);
    if replication_factor < cfg.offsets_topic_replication_factor {
        tracing::warn!(
            live_brokers = live,
            "creating {OFFSETS_TOPIC} with replication factor {replication_factor}, below \
             offsets.topic.replication.factor {}: only {live} brokers are live; group state \
             survives fewer broker losses",
            cfg.offsets_topic_replication_factor
        );
    }
    let topic = NewTopic {
        name: OFFSETS_TOPIC.to_string(),
        num_partitions: cfg.offsets_topic_num_partitions,
        replication_factor,
        configs: vec![
            ("cleanup.policy".into(), Some("compact".into())),
            (
                "segment.bytes".into(),
                Some(cfg.offsets_topic_segment_bytes.to_string()),
            ),
            ("compression.type".into(), Some("producer".into())),
        ],
        assignments: Vec::new(),
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
