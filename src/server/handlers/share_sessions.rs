//! The shard's share sessions (KIP-932): the pure cache
//! (`group::share::session`) kept as a shard extension on the shard that
//! holds the member's connection, as fetch sessions are. A member that
//! reconnects to another shard gets SHARE_SESSION_NOT_FOUND and opens a new
//! session; the records it held stay locked until it acknowledges them or
//! their locks expire.

use std::cell::RefCell;
use std::rc::Rc;

use crate::group::share::session::{ShareSessionCache, DEFAULT_SHARE_GROUP_MAX_SHARE_SESSIONS};
use crate::shard::shard::Shard;

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
