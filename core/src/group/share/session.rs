//! Share sessions (KIP-932, Kafka's `ShareSessionCache`): which partitions a
//! share-group member fetches from one broker, and the epoch its next
//! request must carry. A pure cache; the broker shell keeps one per shard,
//! for the connections that shard holds.
//!
//! The rules, per (group, member):
//! - epoch 0 opens a session with the request's partitions, replacing any
//!   the member had (its client lost track of it); it may not carry
//!   acknowledgements;
//! - epoch N > 0 continues it: N must be the session's next epoch (else
//!   INVALID_SHARE_SESSION_EPOCH; no session is SHARE_SESSION_NOT_FOUND);
//!   the request's partitions join the session and its forgotten ones
//!   leave; the next epoch is N + 1, wrapping to 1;
//! - epoch -1 (final) closes it, after its acknowledgements; a ShareFetch
//!   at -1 fetches nothing.
//!
//! The cache holds at most `group.share.max.share.sessions` sessions (split
//! over the shards); a new session when it is full evicts the least
//! recently used one if that one is idle longer than
//! [`SHARE_SESSION_EVICTION_IDLE_MS`], and is refused
//! (SHARE_SESSION_LIMIT_REACHED) otherwise.

use std::collections::{BTreeSet, HashMap};

use crate::protocol::error_code::{
    INVALID_REQUEST, INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED,
    SHARE_SESSION_NOT_FOUND,
};

/// `group.share.max.share.sessions`: Kafka's default, per broker.
pub const DEFAULT_SHARE_GROUP_MAX_SHARE_SESSIONS: usize = 2_000;
/// A session idle this long may give way to a new one when the cache is
/// full (a member whose client went away without closing it).
pub const SHARE_SESSION_EVICTION_IDLE_MS: i64 = 120_000;
/// The epoch of a request that opens a session.
pub const INITIAL_SHARE_SESSION_EPOCH: i32 = 0;
/// The epoch of a request that closes a session.
pub const FINAL_SHARE_SESSION_EPOCH: i32 = -1;

/// A share partition as a session names it: topic id and partition.
pub type SharePartitionId = ([u8; 16], i32);

/// One member's session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareSession {
    pub partitions: BTreeSet<SharePartitionId>,
    /// The epoch the member's next request must carry.
    pub next_epoch: i32,
    last_used_ms: i64,
}

/// What a request resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedShareSession {
    /// The session's partitions after the request (for a final request,
    /// those it had: their records of the member are released).
    pub partitions: BTreeSet<SharePartitionId>,
    /// A new session: the answer names every partition.
    pub full: bool,
    /// The session was closed by this request.
    pub closed: bool,
}

/// The sessions of one shard.
#[derive(Debug, Clone)]
pub struct ShareSessionCache {
    capacity: usize,
    sessions: HashMap<(String, String), ShareSession>,
}

impl ShareSessionCache {
    pub fn new(capacity: usize) -> ShareSessionCache {
        ShareSessionCache {
            capacity: capacity.max(1),
            sessions: HashMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    pub fn get(&self, group_id: &str, member_id: &str) -> Option<&ShareSession> {
        self.sessions
            .get(&(group_id.to_string(), member_id.to_string()))
    }

    /// Resolves a ShareFetch (`fetching`) or ShareAcknowledge of `epoch`
    /// naming `named` partitions (added to the session, or acknowledged
    /// in it) and forgetting `forgotten`. `has_acknowledgements`: an opening
    /// request may not acknowledge. Errors are Kafka's top-level codes.
    #[allow(clippy::too_many_arguments)]
    pub fn resolve(
        &mut self,
        group_id: &str,
        member_id: &str,
        epoch: i32,
        fetching: bool,
        named: &[SharePartitionId],
        forgotten: &[SharePartitionId],
        has_acknowledgements: bool,
        now_ms: i64,
    ) -> Result<ResolvedShareSession, i16> {
        let key = (group_id.to_string(), member_id.to_string());
        match epoch {
            INITIAL_SHARE_SESSION_EPOCH => {
                if !fetching || has_acknowledgements {
                    // Kafka: a session is opened by a ShareFetch, without
                    // acknowledgements (there is nothing to acknowledge yet).
                    return Err(INVALID_REQUEST);
                }
                if !self.sessions.contains_key(&key) && self.sessions.len() >= self.capacity {
                    self.evict_one_idle(now_ms)?;
                }
                let partitions: BTreeSet<SharePartitionId> = named.iter().copied().collect();
                self.sessions.insert(
                    key,
                    ShareSession {
                        partitions: partitions.clone(),
                        next_epoch: 1,
                        last_used_ms: now_ms,
                    },
                );
                Ok(ResolvedShareSession {
                    partitions,
                    full: true,
                    closed: false,
                })
            }
            FINAL_SHARE_SESSION_EPOCH => {
                let Some(session) = self.sessions.remove(&key) else {
                    return Err(SHARE_SESSION_NOT_FOUND);
                };
                Ok(ResolvedShareSession {
                    partitions: session.partitions,
                    full: false,
                    closed: true,
                })
            }
            n if n > 0 => {
                let Some(session) = self.sessions.get_mut(&key) else {
                    return Err(SHARE_SESSION_NOT_FOUND);
                };
                if session.next_epoch != n {
                    return Err(INVALID_SHARE_SESSION_EPOCH);
                }
                session.next_epoch = if n == i32::MAX { 1 } else { n + 1 };
                session.last_used_ms = now_ms;
                if fetching {
                    session.partitions.extend(named.iter().copied());
                    for f in forgotten {
                        session.partitions.remove(f);
                    }
                }
                Ok(ResolvedShareSession {
                    partitions: session.partitions.clone(),
                    full: false,
                    closed: false,
                })
            }
            _ => Err(INVALID_SHARE_SESSION_EPOCH),
        }
    }

    /// Forgets every session of `member_id` in `group_id` (it left the
    /// group).
    pub fn remove(&mut self, group_id: &str, member_id: &str) -> Option<ShareSession> {
        self.sessions
            .remove(&(group_id.to_string(), member_id.to_string()))
    }

    fn evict_one_idle(&mut self, now_ms: i64) -> Result<(), i16> {
        let oldest = self
            .sessions
            .iter()
            .min_by_key(|(_, s)| s.last_used_ms)
            .map(|(k, s)| (k.clone(), s.last_used_ms));
        match oldest {
            Some((k, used)) if now_ms - used >= SHARE_SESSION_EVICTION_IDLE_MS => {
                self.sessions.remove(&k);
                Ok(())
            }
            _ => Err(SHARE_SESSION_LIMIT_REACHED),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: [u8; 16] = [7; 16];

    #[test]
    fn a_session_opens_continues_and_closes_with_kafkas_epochs() {
        let mut c = ShareSessionCache::new(10);
        let r = c
            .resolve("g", "m", 0, true, &[(T, 0), (T, 1)], &[], false, 0)
            .unwrap();
        assert!(r.full && !r.closed);
        assert_eq!(r.partitions.len(), 2);
        assert_eq!(c.get("g", "m").unwrap().next_epoch, 1);
        // A wrong epoch is refused and changes nothing.
        assert_eq!(
            c.resolve("g", "m", 2, true, &[], &[], false, 1),
            Err(INVALID_SHARE_SESSION_EPOCH)
        );
        let r = c
            .resolve("g", "m", 1, true, &[(T, 2)], &[(T, 0)], true, 2)
            .unwrap();
        assert!(!r.full);
        assert_eq!(r.partitions, [(T, 1), (T, 2)].into_iter().collect());
        // An acknowledgement moves the epoch on, not the partitions.
        let r = c
            .resolve("g", "m", 2, false, &[(T, 1)], &[], true, 3)
            .unwrap();
        assert_eq!(r.partitions.len(), 2);
        let r = c.resolve("g", "m", -1, false, &[], &[], true, 4).unwrap();
        assert!(r.closed);
        assert_eq!(r.partitions.len(), 2);
        assert!(c.is_empty());
        assert_eq!(
            c.resolve("g", "m", 3, true, &[], &[], false, 5),
            Err(SHARE_SESSION_NOT_FOUND)
        );
    }

    #[test]
    fn an_opening_request_may_not_acknowledge_and_reopening_replaces() {
        let mut c = ShareSessionCache::new(10);
        assert_eq!(
            c.resolve("g", "m", 0, true, &[(T, 0)], &[], true, 0),
            Err(INVALID_REQUEST)
        );
        assert_eq!(
            c.resolve("g", "m", 0, false, &[(T, 0)], &[], false, 0),
            Err(INVALID_REQUEST)
        );
        c.resolve("g", "m", 0, true, &[(T, 0)], &[], false, 0)
            .unwrap();
        c.resolve("g", "m", 1, true, &[], &[], false, 0).unwrap();
        let r = c
            .resolve("g", "m", 0, true, &[(T, 5)], &[], false, 0)
            .unwrap();
        assert_eq!(r.partitions, [(T, 5)].into_iter().collect());
        assert_eq!(c.get("g", "m").unwrap().next_epoch, 1);
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn a_full_cache_evicts_only_an_idle_session() {
        let mut c = ShareSessionCache::new(1);
        c.resolve("g", "a", 0, true, &[], &[], false, 0).unwrap();
        assert_eq!(
            c.resolve("g", "b", 0, true, &[], &[], false, 1_000),
            Err(SHARE_SESSION_LIMIT_REACHED)
        );
        c.resolve(
            "g",
            "b",
            0,
            true,
            &[],
            &[],
            false,
            SHARE_SESSION_EVICTION_IDLE_MS,
        )
        .unwrap();
        assert!(c.get("g", "a").is_none() && c.get("g", "b").is_some());
    }

    #[test]
    fn the_epoch_wraps_to_one() {
        let mut c = ShareSessionCache::new(1);
        c.resolve("g", "m", 0, true, &[], &[], false, 0).unwrap();
        c.sessions
            .get_mut(&("g".into(), "m".into()))
            .unwrap()
            .next_epoch = i32::MAX;
        c.resolve("g", "m", i32::MAX, true, &[], &[], false, 0)
            .unwrap();
        assert_eq!(c.get("g", "m").unwrap().next_epoch, 1);
    }
}
