//! Incremental fetch sessions (KIP-227): the leader's cache of them. The
//! broker keeps one per shard, on the shard that holds the client's
//! connection (`server/handlers/fetch_sessions.rs`).
//!
//! A session remembers the partitions a client fetches and their fetch
//! parameters, so that later requests name only what changed and responses
//! carry only partitions with news.
//!
//! Which request does what follows Kafka's `FetchManager.newContext`:
//!
//! | session id | epoch           | result                                          |
//! |------------|-----------------|-------------------------------------------------|
//! | any        | 0 (INITIAL)     | full fetch; a named session is closed; a new one is created if the cache admits it (else id 0) |
//! | any        | -1 (FINAL)      | full fetch without a session; a named session is closed |
//! | 0          | other           | FETCH_SESSION_ID_NOT_FOUND                      |
//! | unknown    | other           | FETCH_SESSION_ID_NOT_FOUND                      |
//! | known      | ≠ expected      | INVALID_FETCH_SESSION_EPOCH (the session stays) |
//! | known      | = expected      | incremental; an update that empties the session closes it (sessionless answer) |
//!
//! A full request's forgotten topics are ignored, as in Kafka. The cache
//! admits a new session when it has room, when its least recently used
//! session has been idle for `FETCH_SESSION_EVICTION_MS`, or by evicting a
//! session that is older than that and smaller (a follower's session may
//! evict any consumer's). This is state only: the clock is passed in.

use std::collections::HashMap;

use crate::broker_config::FETCH_SESSION_CACHE_SLOTS_DEFAULT;
use crate::protocol::error_code;
use crate::protocol::messages::fetch::{next_epoch, FINAL_EPOCH, INITIAL_EPOCH};

/// Kafka's `MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS`: a session idle this
/// long may always be evicted, and one older than this may be evicted by a
/// larger or more privileged newcomer.
pub const FETCH_SESSION_EVICTION_MS: i64 = 120_000;
/// Rejected session requests from one client are logged at most once per
/// this interval, with the count since the last line.
pub const FETCH_SESSION_REJECT_LOG_INTERVAL_MS: i64 = 10_000;
/// Clients whose rejections are counted per shard; beyond it the counts
/// start over (the log lines are a hint, not an audit).
const REJECTING_CLIENTS_TRACKED_MAX: usize = 1024;

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
    /// A follower's session (Kafka's "privileged").
    privileged: bool,
    created_ms: i64,
    last_used_ms: i64,
}

/// What one Fetch request covers, once its session fields are resolved.
#[derive(Debug, PartialEq, Eq)]
pub struct ResolvedFetch {
    /// The session to answer with; 0 for a sessionless answer.
    pub session_id: i32,
    /// The partitions to read, in the order to answer them.
    pub partitions: Vec<SessionPartition>,
    /// Answer only partitions with news (an incremental response).
    pub incremental: bool,
}

/// The session fields of a Fetch request.
#[derive(Debug, Clone, Copy)]
pub struct SessionRequest<'a> {
    pub session_id: i32,
    pub epoch: i32,
    /// A replica's fetch (replica id ≥ 0).
    pub privileged: bool,
    pub forgotten: &'a [(String, i32)],
}

/// The cache itself, without interior mutability, so tests drive it
/// directly.
#[derive(Debug)]
pub struct SessionCache {
    sessions: HashMap<i32, FetchSession>,
    capacity: usize,
    next_id: i32,
    rejections: HashMap<String, Rejections>,
}

#[derive(Debug, Default)]
struct Rejections {
    since_last_log: u64,
    last_log_ms: Option<i64>,
}

impl Default for SessionCache {
    fn default() -> Self {
        SessionCache::new(FETCH_SESSION_CACHE_SLOTS_DEFAULT, 1)
    }
}

/// A shard's share of `max.incremental.fetch.session.cache.slots`: 0 turns
/// sessions off, as in Kafka; otherwise at least one per shard.
pub fn slots_per_shard(slots: usize, shards: usize) -> usize {
    if slots == 0 {
        0
    } else {
        (slots / shards.max(1)).max(1)
    }
}

impl SessionCache {
    /// A cache of `capacity` sessions whose ids start at `first_id`.
    pub fn new(capacity: usize, first_id: i32) -> SessionCache {
        assert!(first_id > 0, "session ids are positive");
        SessionCache {
            sessions: HashMap::new(),
            capacity,
            next_id: first_id,
            rejections: HashMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Partitions held by all sessions (Kafka's
    /// `NumIncrementalFetchPartitionsCached`).
    pub fn partitions_cached(&self) -> usize {
        self.sessions.values().map(|s| s.partitions.len()).sum()
    }

    /// Sessions of followers (privileged) and of consumers.
    pub fn count_by_kind(&self) -> (usize, usize) {
        let followers = self.sessions.values().filter(|s| s.privileged).count();
        (followers, self.sessions.len() - followers)
    }

    pub fn get(&self, id: i32) -> Option<&FetchSession> {
        self.sessions.get(&id)
    }

    /// Resolves a request's session fields against the cache (Kafka's
    /// `FetchManager.newContext`). `requested` are the partitions the
    /// request names, in request order. Errors are Kafka's top-level codes.
    pub fn resolve(
        &mut self,
        req: SessionRequest<'_>,
        requested: Vec<SessionPartition>,
        now_ms: i64,
    ) -> Result<ResolvedFetch, i16> {
        if req.epoch == INITIAL_EPOCH || req.epoch == FINAL_EPOCH {
            // A full fetch closes any session it names.
            if req.session_id != 0 {
                self.sessions.remove(&req.session_id);
            }
            let session_id = if req.epoch == INITIAL_EPOCH {
                self.create(requested.clone(), req.privileged, now_ms)
                    .unwrap_or(0)
            } else {
                0
            };
            return Ok(ResolvedFetch {
                session_id,
                partitions: requested,
                incremental: false,
            });
        }
        if req.session_id == 0 {
            return Err(error_code::FETCH_SESSION_ID_NOT_FOUND);
        }
        let Some(session) = self.sessions.get_mut(&req.session_id) else {
            return Err(error_code::FETCH_SESSION_ID_NOT_FOUND);
        };
        if session.epoch != req.epoch {
            return Err(error_code::INVALID_FETCH_SESSION_EPOCH);
        }
        session.partitions.retain(|p| {
            !req.forgotten
                .iter()
                .any(|(t, i)| *t == p.topic && *i == p.partition)
        });
        for r in requested {
            match session
                .partitions
                .iter_mut()
                .find(|p| p.topic == r.topic && p.partition == r.partition)
            {
                Some(p) => {
                    p.fetch_offset = r.fetch_offset;
                    p.partition_max_bytes = r.partition_max_bytes;
                    p.current_leader_epoch = r.current_leader_epoch;
                }
                None => session.partitions.push(r),
            }
        }
        if session.partitions.is_empty() {
            // Kafka: an incremental request that leaves the session empty
            // closes it and gets a sessionless answer.
            self.sessions.remove(&req.session_id);
            return Ok(ResolvedFetch {
                session_id: 0,
                partitions: Vec::new(),
                incremental: false,
            });
        }
        session.epoch = next_epoch(session.epoch);
        session.last_used_ms = now_ms;
        Ok(ResolvedFetch {
            session_id: req.session_id,
            partitions: session.partitions.clone(),
            incremental: true,
        })
    }

    /// Records what a response told the client, and moves partitions that
    /// returned records to the back of the session, so that a response
    /// size limit does not starve the partitions after them (as Kafka's
    /// `IncrementalFetchContext` does).
    pub fn record_response(&mut self, id: i32, sent: &[SentPartition]) {
        let Some(s) = self.sessions.get_mut(&id) else {
            return;
        };
        let mut served = Vec::new();
        for news in sent {
            if let Some(i) = s
                .partitions
                .iter()
                .position(|p| p.topic == news.topic && p.partition == news.partition)
            {
                let p = &mut s.partitions[i];
                p.last_high_watermark = news.high_watermark;
                p.last_log_start_offset = news.log_start_offset;
                if news.had_records {
                    served.push(i);
                }
            }
        }
        // Stable: the served ones keep their relative order at the back.
        served.sort_unstable();
        for (moved, i) in served.into_iter().enumerate() {
            let p = s.partitions.remove(i - moved);
            s.partitions.push(p);
        }
    }

    /// Counts a rejected request from `client`; returns how many were
    /// rejected since the last report when it is time to log one.
    pub fn note_rejection(&mut self, client: &str, now_ms: i64) -> Option<u64> {
        if self.rejections.len() >= REJECTING_CLIENTS_TRACKED_MAX
            && !self.rejections.contains_key(client)
        {
            self.rejections.clear();
        }
        let r = self.rejections.entry(client.to_string()).or_default();
        r.since_last_log += 1;
        let due = match r.last_log_ms {
            None => true,
            Some(at) => now_ms - at >= FETCH_SESSION_REJECT_LOG_INTERVAL_MS,
        };
        if !due {
            return None;
        }
        r.last_log_ms = Some(now_ms);
        Some(std::mem::take(&mut r.since_last_log))
    }

    /// Creates a session if the cache admits it; `None` means the client
    /// gets a sessionless answer (Kafka's `INVALID_SESSION_ID`).
    fn create(
        &mut self,
        partitions: Vec<SessionPartition>,
        privileged: bool,
        now_ms: i64,
    ) -> Option<i32> {
        if self.capacity == 0 {
            return None;
        }
        if self.sessions.len() >= self.capacity
            && !self.try_evict(privileged, partitions.len(), now_ms)
        {
            return None;
        }
        let mut id = self.next_id;
        while self.sessions.contains_key(&id) {
            id = id.checked_add(1).unwrap_or(1);
        }
        self.next_id = id.checked_add(1).unwrap_or(1);
        self.sessions.insert(
            id,
            FetchSession {
                id,
                epoch: next_epoch(INITIAL_EPOCH),
                partitions,
                privileged,
                created_ms: now_ms,
                last_used_ms: now_ms,
            },
        );
        assert!(self.sessions.len() <= self.capacity);
        Some(id)
    }

    /// Kafka's `FetchSessionCache.tryEvict`.
    fn try_evict(&mut self, privileged: bool, size: usize, now_ms: i64) -> bool {
        let stale = self
            .sessions
            .values()
            .min_by_key(|s| (s.last_used_ms, s.id))
            .filter(|s| now_ms - s.last_used_ms > FETCH_SESSION_EVICTION_MS)
            .map(|s| s.id);
        let victim = stale.or_else(|| {
            // Evictable: sessions past the eviction age, and for a follower
            // also every consumer session. The smallest key goes, if the
            // newcomer's key is larger.
            self.sessions
                .values()
                .filter(|s| {
                    now_ms - s.created_ms > FETCH_SESSION_EVICTION_MS
                        || (privileged && !s.privileged)
                })
                .min_by_key(|s| (s.privileged, s.partitions.len(), s.id))
                .filter(|s| (privileged, size) > (s.privileged, s.partitions.len()))
                .map(|s| s.id)
        });
        match victim {
            Some(id) => {
                self.sessions.remove(&id);
                true
            }
            None => false,
        }
    }
}

/// What a response sent for one partition of a session.
#[derive(Debug, Clone)]
pub struct SentPartition {
    pub topic: String,
    pub partition: i32,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    pub had_records: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(topic: &str, partition: i32, offset: i64) -> SessionPartition {
        SessionPartition {
            topic: topic.into(),
            partition,
            fetch_offset: offset,
            partition_max_bytes: 1 << 20,
            current_leader_epoch: -1,
            last_high_watermark: -1,
            last_log_start_offset: -1,
        }
    }

    fn req(session_id: i32, epoch: i32) -> SessionRequest<'static> {
        SessionRequest {
            session_id,
            epoch,
            privileged: false,
            forgotten: &[],
        }
    }

    fn new_session(c: &mut SessionCache, parts: Vec<SessionPartition>) -> i32 {
        let r = c.resolve(req(0, INITIAL_EPOCH), parts, 0).unwrap();
        assert!(!r.incremental);
        assert_ne!(r.session_id, 0);
        r.session_id
    }

    #[test]
    fn epoch_zero_with_no_id_creates_a_session_expecting_epoch_one() {
        let mut c = SessionCache::new(10, 5);
        let id = new_session(&mut c, vec![part("t", 0, 0)]);
        assert_eq!(id, 5);
        assert_eq!(c.get(id).unwrap().epoch, 1);
    }

    #[test]
    fn epoch_zero_with_an_existing_id_closes_it_and_opens_a_new_one() {
        // The shape a client sends after a rebalance, a seek or a failed
        // fetch: full fetch, old id, epoch 0.
        let mut c = SessionCache::new(10, 1);
        let old = new_session(&mut c, vec![part("t", 0, 0)]);
        let r = c
            .resolve(req(old, INITIAL_EPOCH), vec![part("t", 1, 7)], 0)
            .unwrap();
        assert!(!r.incremental);
        assert_ne!(r.session_id, 0);
        assert_ne!(r.session_id, old);
        assert!(c.get(old).is_none(), "the named session is closed");
        assert_eq!(r.partitions, vec![part("t", 1, 7)]);
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn epoch_zero_with_an_unknown_id_still_creates_a_session() {
        let mut c = SessionCache::new(10, 1);
        let r = c
            .resolve(req(12345, INITIAL_EPOCH), vec![part("t", 0, 0)], 0)
            .unwrap();
        assert_ne!(r.session_id, 0);
        assert!(!r.incremental);
    }

    #[test]
    fn final_epoch_closes_a_named_session_and_answers_sessionless() {
        let mut c = SessionCache::new(10, 1);
        let id = new_session(&mut c, vec![part("t", 0, 0)]);
        let r = c
            .resolve(req(id, FINAL_EPOCH), vec![part("t", 0, 3)], 0)
            .unwrap();
        assert_eq!(r.session_id, 0);
        assert!(!r.incremental);
        assert_eq!(r.partitions, vec![part("t", 0, 3)]);
        assert!(c.is_empty());
        // Without an id, -1 is a plain sessionless fetch (and pre-v7).
        let r = c
            .resolve(req(0, FINAL_EPOCH), vec![part("t", 0, 3)], 0)
            .unwrap();
        assert_eq!(r.session_id, 0);
        assert!(c.is_empty());
        // An unknown id with -1 is no error either.
        assert!(c.resolve(req(999, FINAL_EPOCH), vec![], 0).is_ok());
    }

    #[test]
    fn incremental_epochs_without_a_known_session_are_not_found() {
        let mut c = SessionCache::new(10, 1);
        assert_eq!(
            c.resolve(req(0, 1), vec![], 0),
            Err(error_code::FETCH_SESSION_ID_NOT_FOUND)
        );
        assert_eq!(
            c.resolve(req(77, 3), vec![], 0),
            Err(error_code::FETCH_SESSION_ID_NOT_FOUND)
        );
        // Epochs below -1 take the incremental path too.
        assert_eq!(
            c.resolve(req(0, -5), vec![], 0),
            Err(error_code::FETCH_SESSION_ID_NOT_FOUND)
        );
    }

    #[test]
    fn wrong_epoch_is_refused_and_keeps_the_session() {
        let mut c = SessionCache::new(10, 1);
        let id = new_session(&mut c, vec![part("t", 0, 0)]);
        assert_eq!(
            c.resolve(req(id, 2), vec![], 0),
            Err(error_code::INVALID_FETCH_SESSION_EPOCH)
        );
        let s = c.get(id).expect("the session survives a bad epoch");
        assert_eq!(s.epoch, 1);
        // The right epoch still works afterwards.
        assert!(c.resolve(req(id, 1), vec![], 0).unwrap().incremental);
    }

    #[test]
    fn incremental_requests_merge_forget_and_advance_the_epoch() {
        let mut c = SessionCache::new(10, 1);
        let id = new_session(&mut c, vec![part("t", 0, 0), part("t", 1, 0)]);
        let forgotten = vec![("t".to_string(), 0)];
        let r = c
            .resolve(
                SessionRequest {
                    session_id: id,
                    epoch: 1,
                    privileged: false,
                    forgotten: &forgotten,
                },
                vec![part("t", 1, 9), part("u", 0, 4)],
                0,
            )
            .unwrap();
        assert!(r.incremental);
        assert_eq!(r.session_id, id);
        assert_eq!(r.partitions, vec![part("t", 1, 9), part("u", 0, 4)]);
        assert_eq!(c.get(id).unwrap().epoch, 2);
    }

    #[test]
    fn forgetting_every_partition_closes_the_session() {
        let mut c = SessionCache::new(10, 1);
        let id = new_session(&mut c, vec![part("t", 0, 0)]);
        let forgotten = vec![("t".to_string(), 0)];
        let r = c
            .resolve(
                SessionRequest {
                    session_id: id,
                    epoch: 1,
                    privileged: false,
                    forgotten: &forgotten,
                },
                vec![],
                0,
            )
            .unwrap();
        assert_eq!(r.session_id, 0);
        assert!(!r.incremental);
        assert!(c.is_empty());
    }

    #[test]
    fn full_requests_ignore_forgotten_topics() {
        let mut c = SessionCache::new(10, 1);
        let forgotten = vec![("t".to_string(), 0)];
        let r = c
            .resolve(
                SessionRequest {
                    session_id: 0,
                    epoch: INITIAL_EPOCH,
                    privileged: false,
                    forgotten: &forgotten,
                },
                vec![part("t", 0, 0)],
                0,
            )
            .unwrap();
        assert_eq!(r.partitions, vec![part("t", 0, 0)]);
    }

    #[test]
    fn next_epoch_wraps_past_zero_and_final() {
        assert_eq!(next_epoch(0), 1);
        assert_eq!(next_epoch(41), 42);
        assert_eq!(next_epoch(i32::MAX), 1);
        assert_eq!(next_epoch(-1), -1);
    }

    #[test]
    fn a_full_cache_evicts_only_idle_or_older_smaller_sessions() {
        let mut c = SessionCache::new(2, 1);
        let a = new_session(&mut c, vec![part("t", 0, 0)]);
        let b = new_session(&mut c, vec![part("t", 0, 0), part("t", 1, 0)]);
        // Young sessions are not evicted for an equal or smaller newcomer:
        // it gets a sessionless answer.
        let r = c
            .resolve(req(0, INITIAL_EPOCH), vec![part("t", 2, 0)], 1_000)
            .unwrap();
        assert_eq!(r.session_id, 0);
        assert_eq!(c.len(), 2);
        // Keep `b` in use; `a` goes idle past the eviction time.
        let now = FETCH_SESSION_EVICTION_MS + 10;
        c.resolve(req(b, 1), vec![], now).unwrap();
        let r = c
            .resolve(req(0, INITIAL_EPOCH), vec![part("t", 3, 0)], now + 1)
            .unwrap();
        assert_ne!(r.session_id, 0);
        assert!(c.get(a).is_none(), "the idle session was evicted");
        assert!(c.get(b).is_some());
    }

    #[test]
    fn a_follower_session_may_evict_a_young_consumer_session() {
        let mut c = SessionCache::new(1, 1);
        let consumer = new_session(&mut c, vec![part("t", 0, 0)]);
        let r = c
            .resolve(
                SessionRequest {
                    session_id: 0,
                    epoch: INITIAL_EPOCH,
                    privileged: true,
                    forgotten: &[],
                },
                vec![part("t", 0, 0)],
                5,
            )
            .unwrap();
        assert_ne!(r.session_id, 0);
        assert!(c.get(consumer).is_none());
    }

    #[test]
    fn the_slots_setting_splits_over_shards_and_zero_turns_sessions_off() {
        assert_eq!(slots_per_shard(1000, 2), 500);
        assert_eq!(slots_per_shard(3, 8), 1);
        assert_eq!(slots_per_shard(0, 2), 0);
        let mut c = SessionCache::new(0, 1);
        let r = c
            .resolve(req(0, INITIAL_EPOCH), vec![part("t", 0, 0)], 0)
            .unwrap();
        assert_eq!(r.session_id, 0, "no cache: a sessionless answer");
        assert!(c.is_empty());
    }

    #[test]
    fn record_response_moves_served_partitions_to_the_back() {
        let mut c = SessionCache::new(10, 1);
        let id = new_session(
            &mut c,
            vec![part("t", 0, 0), part("t", 1, 0), part("t", 2, 0)],
        );
        let sent = |p: i32, had_records: bool| SentPartition {
            topic: "t".into(),
            partition: p,
            high_watermark: 10,
            log_start_offset: 0,
            had_records,
        };
        c.record_response(id, &[sent(0, true), sent(1, false), sent(2, true)]);
        let order: Vec<i32> = c
            .get(id)
            .unwrap()
            .partitions
            .iter()
            .map(|p| p.partition)
            .collect();
        assert_eq!(order, vec![1, 0, 2]);
        assert!(c
            .get(id)
            .unwrap()
            .partitions
            .iter()
            .all(|p| p.last_high_watermark == 10));
    }

    #[test]
    fn rejections_are_reported_at_most_once_per_interval() {
        let mut c = SessionCache::new(10, 1);
        assert_eq!(c.note_rejection("app", 0), Some(1));
        for i in 1..100 {
            assert_eq!(c.note_rejection("app", i), None);
        }
        assert_eq!(
            c.note_rejection("app", FETCH_SESSION_REJECT_LOG_INTERVAL_MS),
            Some(100)
        );
        assert_eq!(c.note_rejection("other", 5), Some(1));
    }
}
