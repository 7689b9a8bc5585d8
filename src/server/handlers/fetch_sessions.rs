//! The shard's KIP-227 fetch-session cache: the pure cache
//! (`crate::fetch_session_cache`, in pinlog-core) kept as a shard extension
//! on the shard that holds the client's connection.

use std::cell::RefCell;
use std::rc::Rc;

use crate::fetch_session_cache::{slots_per_shard, SessionCache};
use crate::shard::shard::Shard;

#[derive(Default)]
pub struct FetchSessions {
    state: RefCell<SessionCache>,
}

impl FetchSessions {
    pub fn of(shard: &Shard) -> Rc<FetchSessions> {
        if let Some(s) = shard.extension::<FetchSessions>() {
            return s;
        }
        // Ids differ between shards so a misrouted id is never confused.
        let first_id = 1 + shard.id() as i32 * (i32::MAX / 64);
        let slots = crate::node::state::BrokerState::of(shard)
            .config
            .fetch_session_cache_slots;
        let capacity = slots_per_shard(slots, shard.shard_count());
        let s = Rc::new(FetchSessions {
            state: RefCell::new(SessionCache::new(capacity, first_id)),
        });
        shard.set_extension(s.clone());
        s
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut SessionCache) -> T) -> T {
        f(&mut self.state.borrow_mut())
    }
}
