//! What the five share-group state handlers share (keys 83-87, from a share
//! partition's leader to the share coordinator): the CLUSTER_ACTION check
//! (only brokers call them; refused, every partition answers
//! CLUSTER_AUTHORIZATION_FAILED), `__share_group_state` created if it is
//! missing, and each partition served in turn on the
//! shard of this broker that owns its `__share_group_state` partition
//! (`server/share_state/`), which answers NOT_COORDINATOR when this broker
//! does not lead it.

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::share::state_records::SharePartitionKey;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::messages::share_group_state::{PartitionResult, StateTopic};
use crate::server::handlers::access::Access;
use crate::server::share_state::topic::ensure_share_group_state_topic;
use crate::server::share_state::{on_coordinator, StateAnswer, StateOp};
use crate::shard::shard::Shard;

/// Serves every partition of `topics`: `op` says what to ask of the
/// coordinator for one (its partition index and the call), `answer` turns
/// the partition index and the coordinator's answer into its result.
pub async fn serve_each<P, R>(
    shard: &Rc<Shard>,
    access: &Access<'_>,
    group_id: &str,
    topics: Vec<StateTopic<P>>,
    op: impl Fn(&P) -> (i32, StateOp),
    answer: impl Fn(i32, Result<StateAnswer, i16>) -> R,
) -> Vec<StateTopic<R>> {
    let allowed = access.allows_cluster(&BrokerState::of(shard).image(), matrix::SHARE_GROUP_STATE);
    // A state request means share groups are in use: the topic is created
    // here too (one image lookup once it exists), as the persister does.
    let topic = if allowed {
        ensure_share_group_state_topic(shard).await
    } else {
        Err(error_code::CLUSTER_AUTHORIZATION_FAILED)
    };
    let mut results = Vec::with_capacity(topics.len());
    for t in topics {
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in &t.partitions {
            let (partition, call) = op(p);
            let outcome = if let Err(code) = topic {
                Err(code)
            } else {
                let key = SharePartitionKey {
                    group_id: group_id.to_string(),
                    topic_id: t.topic_id,
                    partition,
                };
                on_coordinator(shard, key, call).await
            };
            partitions.push(answer(partition, outcome));
        }
        results.push(StateTopic {
            topic_id: t.topic_id,
            partitions,
        });
    }
    results
}

/// The result of a call that answers only a code.
pub fn code_only(partition: i32, outcome: Result<StateAnswer, i16>) -> PartitionResult {
    PartitionResult {
        partition,
        error_code: outcome.err().unwrap_or(error_code::NONE),
        error_message: None,
    }
}
