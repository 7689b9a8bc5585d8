//! Creating an internal topic (`__consumer_offsets`, `__transaction_state`)
//! the first time a client looks for its coordinator, as Kafka does.

use std::rc::Rc;

use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::server::controller::{self, NewTopic};
use crate::shard::shard::Shard;

/// How an internal topic is made.
pub struct InternalTopic {
    pub name: &'static str,
    pub partitions: i32,
    /// The configured replication factor; capped at the live brokers, so a
    /// single node still gets one.
    pub replication_factor: i16,
    /// Topic settings; `min.insync.replicas` is capped at the replication
    /// factor the topic gets.
    pub configs: Vec<(String, String)>,
    /// Which subsystem needs it, for the log lines.
    pub for_whom: &'static str,
}

/// Creates the topic unless it exists. Errors come back as the code
/// FindCoordinator answers with (the client retries).
pub async fn ensure_internal_topic(shard: &Rc<Shard>, topic: InternalTopic) -> Result<(), i16> {
    let broker = BrokerState::of(shard);
    let image = broker.image();
    if image.topic(topic.name).is_some() {
        return Ok(());
    }
    let live = image
        .brokers
        .values()
        .filter(|b| !b.fenced && !b.in_controlled_shutdown)
        .count()
        .max(1);
    let replication_factor = topic.replication_factor.min(live as i16);
    let name = topic.name;
    if replication_factor < topic.replication_factor {
        tracing::warn!(
            live_brokers = live,
            "creating {name} with replication factor {replication_factor}, below the configured \
             {}: only {live} brokers are live; its state survives fewer broker losses",
            topic.replication_factor
        );
    }
    let configs = topic
        .configs
        .into_iter()
        .map(|(k, v)| {
            let v = match (k.as_str(), v.parse::<i16>()) {
                ("min.insync.replicas", Ok(n)) => n.min(replication_factor).to_string(),
                _ => v,
            };
            (k, Some(v))
        })
        .collect();
    let new = NewTopic {
        name: name.to_string(),
        num_partitions: topic.partitions,
        replication_factor,
        configs,
        assignments: Vec::new(),
    };
    match controller::create_topics(shard, None, vec![new], false).await {
        Ok(results) => {
            for (_, r) in results {
                match r {
                    Ok(created) => tracing::info!(
                        partitions = created.num_partitions,
                        "created {name} for the {}",
                        topic.for_whom
                    ),
                    Err((code, _)) if code == error_code::TOPIC_ALREADY_EXISTS => {}
                    Err((code, message)) => {
                        tracing::error!(code, "cannot create {name}: {message}");
                        return Err(error_code::COORDINATOR_NOT_AVAILABLE);
                    }
                }
            }
            Ok(())
        }
        Err(e) => {
            tracing::error!("cannot create {name}: {e}");
            Err(error_code::COORDINATOR_NOT_AVAILABLE)
        }
    }
}
