//! The shard's share sessions (KIP-932): the pure cache
//! (`group::share::session`) kept as a shard extension on the shard that
//! holds the member's connection, as fetch sessions are. A member that
//! reconnects to another shard gets SHARE_SESSION_NOT_FOUND and opens a new
//! session. When a connection closes, the sessions it opened go with it and
//! their members' records on this broker are released, as Kafka's
//! disconnect listener does: a consumer that crashed gives its records back
//! at once, not when their locks expire.

use std::cell::RefCell;
use std::rc::Rc;

use crate::group::share::session::{
    ConnectionId, ShareSessionCache, DEFAULT_SHARE_GROUP_MAX_SHARE_SESSIONS,
};
use crate::node::state::BrokerState;
use crate::server::handlers::share_fetch::{release_all, Named};
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

pub struct ShareSessions {
    cache: RefCell<ShareSessionCache>,
}

impl ShareSessions {
    pub fn of(shard: &Shard) -> Rc<ShareSessions> {
        if let Some(s) = shard.extension::<ShareSessions>() {
            return s;
        }
        let per_shard = DEFAULT_SHARE_GROUP_MAX_SHARE_SESSIONS.div_ceil(shard.shard_count().max(1));
        let s = Rc::new(ShareSessions {
            cache: RefCell::new(ShareSessionCache::new(per_shard)),
        });
        shard.set_extension(s.clone());
        s
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut ShareSessionCache) -> T) -> T {
        f(&mut self.cache.borrow_mut())
    }
}

/// A member opened a new session on this shard: its sessions on the other
/// shards are forgotten, without releasing anything, before the new one
/// serves. A member that reconnected to another shard thus never has its
/// records released when its old connection is finally seen to close
/// (Kafka's cache is one per broker, where a new session replaces the old
/// one under the same key).
pub async fn forget_elsewhere(shard: &Rc<Shard>, group_id: &str, member_id: &str) {
    for other in (0..shard.shard_count()).filter(|&s| s != shard.id()) {
        let (group, member) = (group_id.to_string(), member_id.to_string());
        let forgotten = shard
            .submit_to(other, move |s| async move {
                if let Some(sessions) = s.extension::<ShareSessions>() {
                    sessions.with(|c| c.remove(&group, &member));
                }
            })
            .await;
        if let Err(e) = forgotten {
            tracing::debug!(shard = other, "could not forget a share session there: {e}");
        }
    }
}

/// `connection` closed: its share sessions go, and what their members held
/// in the sessions' partitions is released for other members.
pub async fn on_connection_closed(shard: &Rc<Shard>, connection: ConnectionId) {
    // A shard that never served a share fetch has no sessions to look at.
    let Some(sessions) = shard.extension::<ShareSessions>() else {
        return;
    };
    let closed = sessions.with(|c| c.remove_connection(connection));
    if closed.is_empty() {
        return;
    }
    let image = BrokerState::of(shard).image();
    for ((group_id, member_id), partitions) in closed {
        tracing::debug!(
            group = %group_id,
            member = %member_id,
            partitions = partitions.len(),
            "share session closed with its connection; releasing the member's records"
        );
        let named: Vec<Named> = partitions
            .iter()
            .map(|&(topic_id, partition)| Named {
                id: (topic_id, partition),
                tp: image
                    .topic_names_by_id
                    .get(&topic_id)
                    .map(|name| TopicPartition::new(name.clone(), partition)),
            })
            .collect();
        release_all(shard, &group_id, &member_id, &named).await;
    }
}
