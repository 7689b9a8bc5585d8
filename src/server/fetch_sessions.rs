//! Incremental fetch sessions (KIP-227), kept on the shard that holds the
//! client's connection.
//!
//! A session remembers the partitions a client fetches and their fetch
//! parameters, so that later requests name only what changed and responses
//! carry only partitions with news. Sessions are bounded per shard; the
//! least recently used one is evicted when a new one needs room.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use crate::shard::shard::Shard;

/// Kafka's `max.incremental.fetch.session.cache.slots` default.
pub const FETCH_SESSIONS_PER_SHARD_MAX: usize = 1000;
/// Session epoch that asks for a new session.
pub const INITIAL_EPOCH: i32 = 0;
/// Session epoch that closes a session / asks for a sessionless fetch.
pub const FINAL_EPOCH: i32 = -1;

/// The per-partition state a session keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPartition {
    pub topic: String,
    pub partition: i32,
    pub fetch_offset: i64,
    pub partition_max_bytes: i32,
    pub current_leader_epoch: i32,
    /// What the client was last told, to decide what is news.
    pub last_high_watermark: i64,
    pub last_log_start_offset: i64,
}

#[derive(Debug)]
pub struct FetchSession {
    pub id: i32,
    /// Next epoch the client must send.
    pub epoch: i32,
    pub partitions: Vec<SessionPartition>,
    last_used: u64,
}

#[derive(Default)]
pub struct FetchSessions {
    sessions: RefCell<HashMap<i32, FetchSession>>,
    clock: Cell<u64>,
    next_id: Cell<i32>,
}

impl FetchSessions {
    pub fn of(shard: &Shard) -> Rc<FetchSessions> {
        if let Some(s) = shard.extension::<FetchSessions>() {
            return s;
        }
        let s = Rc::new(FetchSessions::default());
        // Ids differ between shards so a misrouted id is never confused.
        s.next_id.set(1 + shard.id() as i32 * (i32::MAX / 64));
        shard.set_extension(s.clone());
        s
    }

    fn tick(&self) -> u64 {
        self.clock.set(self.clock.get() + 1);
        self.clock.get()
    }

    /// Creates a session for `partitions`; returns its id.
    pub fn create(&self, partitions: Vec<SessionPartition>) -> i32 {
        let mut sessions = self.sessions.borrow_mut();
        if sessions.len() >= FETCH_SESSIONS_PER_SHARD_MAX {
            if let Some((&lru, _)) = sessions.iter().min_by_key(|(_, s)| s.last_used) {
                sessions.remove(&lru);
            }
        }
        let mut id = self.next_id.get();
        while id == 0 || sessions.contains_key(&id) {
            id = id.wrapping_add(1).max(1);
        }
        self.next_id.set(id.wrapping_add(1).max(1));
        let now = self.tick();
        sessions.insert(
            id,
            FetchSession {
                id,
                epoch: 1,
                partitions,
                last_used: now,
            },
        );
        id
    }

    pub fn remove(&self, id: i32) {
        self.sessions.borrow_mut().remove(&id);
    }

    /// Runs `f` on session `id` without touching its epoch: bookkeeping
    /// after a response is built.
    pub fn update(&self, id: i32, f: impl FnOnce(&mut FetchSession)) {
        if let Some(s) = self.sessions.borrow_mut().get_mut(&id) {
            f(s);
        }
    }

    /// Runs `f` on session `id` if the client's `epoch` is the expected one.
    /// Errors: Kafka's FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH.
    pub fn with_session<T>(
        &self,
        id: i32,
        epoch: i32,
        f: impl FnOnce(&mut FetchSession) -> T,
    ) -> Result<T, i16> {
        let now = self.tick();
        let mut sessions = self.sessions.borrow_mut();
        let Some(s) = sessions.get_mut(&id) else {
            return Err(crate::protocol::error_code::FETCH_SESSION_ID_NOT_FOUND);
        };
        if s.epoch != epoch {
            return Err(crate::protocol::error_code::INVALID_FETCH_SESSION_EPOCH);
        }
        s.last_used = now;
        s.epoch = s.epoch.wrapping_add(1).max(1);
        Ok(f(s))
    }
}
