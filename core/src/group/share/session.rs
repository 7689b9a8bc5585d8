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
//! A session is bound to the connection that opened it. When that
//! connection closes, the session goes with it and the member's records on
//! this broker are released (Kafka's `ShareSessionCache` disconnect
//! listener), so a consumer that crashed gives its records back at once
//! rather than when their locks expire. A session closed or reopened before
//! its connection closes is no longer that connection's.
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

/// A client connection, as the broker numbers them.
pub type ConnectionId = u64;

/// One member's session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareSession {
    pub partitions: BTreeSet<SharePartitionId>,
    /// The epoch the member's next request must carry.
    pub next_epoch: i32,
    /// The connection that opened it.
    pub connection: ConnectionId,
    last_used_ms: i64,
}

/// A ShareFetch or ShareAcknowledge, as far as its session is concerned.
#[derive(Debug, Clone, Copy)]
pub struct SessionRequest<'a> {
    pub group_id: &'a str,
    pub member_id: &'a str,
    pub epoch: i32,
    /// A ShareFetch; else a ShareAcknowledge, which changes no partitions.
    pub fetching: bool,
    /// The partitions it names: added to the session, or acknowledged in it.
    pub named: &'a [SharePartitionId],
    pub forgotten: &'a [SharePartitionId],
    /// An opening request may not acknowledge.
    pub has_acknowledgements: bool,
    /// The connection it came on.
    pub connection: ConnectionId,
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

    /// Resolves `req`, a request of its session. Errors are Kafka's
    /// top-level codes.
    pub fn resolve(
        &mut self,
        req: &SessionRequest<'_>,
        now_ms: i64,
    ) -> Result<ResolvedShareSession, i16> {
        let SessionRequest {
            group_id,
            member_id,
            epoch,
            fetching,
            named,
            forgotten,
            has_acknowledgements,
            connection,
        } = *req;
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
                        connection,
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

    /// Removes the sessions bound to `connection`, which closed: each
    /// member's (group, member) and the partitions its records are to be
    /// released from.
    pub fn remove_connection(
        &mut self,
        connection: ConnectionId,
    ) -> Vec<((String, String), BTreeSet<SharePartitionId>)> {
        let keys: Vec<(String, String)> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.connection == connection)
            .map(|(k, _)| k.clone())
            .collect();
        keys.into_iter()
            .filter_map(|k| {
                let s = self.sessions.remove(&k)?;
                Some((k, s.partitions))
            })
            .collect()
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
    const CONNECTION: ConnectionId = 1;

    /// A ShareFetch of member `m` in group `g` at `epoch`, naming nothing,
    /// on [`CONNECTION`].
    fn fetch(member: &str, epoch: i32) -> SessionRequest<'_> {
        SessionRequest {
            group_id: "g",
            member_id: member,
            epoch,
            fetching: true,
            named: &[],
            forgotten: &[],
            has_acknowledgements: false,
            connection: CONNECTION,
        }
    }

    #[test]
    fn a_session_opens_continues_and_closes_with_kafkas_epochs() {
        let mut c = ShareSessionCache::new(10);
        let named = [(T, 0), (T, 1)];
        let r = c
            .resolve(
                &SessionRequest {
                    named: &named,
                    ..fetch("m", 0)
                },
                0,
            )
            .unwrap();
        assert!(r.full && !r.closed);
        assert_eq!(r.partitions.len(), 2);
        assert_eq!(c.get("g", "m").unwrap().next_epoch, 1);
        // A wrong epoch is refused and changes nothing.
        assert_eq!(
            c.resolve(&fetch("m", 2), 1),
            Err(INVALID_SHARE_SESSION_EPOCH)
        );
        let r = c
            .resolve(
                &SessionRequest {
                    named: &[(T, 2)],
                    forgotten: &[(T, 0)],
                    has_acknowledgements: true,
                    ..fetch("m", 1)
                },
                2,
            )
            .unwrap();
        assert!(!r.full);
        assert_eq!(r.partitions, [(T, 1), (T, 2)].into_iter().collect());
        // An acknowledgement moves the epoch on, not the partitions.
        let acknowledge = |epoch| SessionRequest {
            fetching: false,
            named: &[(T, 1)],
            has_acknowledgements: true,
            ..fetch("m", epoch)
        };
        let r = c.resolve(&acknowledge(2), 3).unwrap();
        assert_eq!(r.partitions.len(), 2);
        let r = c.resolve(&acknowledge(-1), 4).unwrap();
        assert!(r.closed);
        assert_eq!(r.partitions.len(), 2);
        assert!(c.is_empty());
        assert_eq!(c.resolve(&fetch("m", 3), 5), Err(SHARE_SESSION_NOT_FOUND));
    }

    #[test]
    fn an_opening_request_may_not_acknowledge_and_reopening_replaces() {
        let mut c = ShareSessionCache::new(10);
        let named = [(T, 0)];
        let open = SessionRequest {
            named: &named,
            ..fetch("m", 0)
        };
        assert_eq!(
            c.resolve(
                &SessionRequest {
                    has_acknowledgements: true,
                    ..open
                },
                0
            ),
            Err(INVALID_REQUEST)
        );
        assert_eq!(
            c.resolve(
                &SessionRequest {
                    fetching: false,
                    ..open
                },
                0
            ),
            Err(INVALID_REQUEST)
        );
        c.resolve(&open, 0).unwrap();
        c.resolve(&fetch("m", 1), 0).unwrap();
        let r = c
            .resolve(
                &SessionRequest {
                    named: &[(T, 5)],
                    ..fetch("m", 0)
                },
                0,
            )
            .unwrap();
        assert_eq!(r.partitions, [(T, 5)].into_iter().collect());
        assert_eq!(c.get("g", "m").unwrap().next_epoch, 1);
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn a_closed_connection_takes_only_the_sessions_it_opened() {
        let mut c = ShareSessionCache::new(10);
        let named = [(T, 0), (T, 1)];
        c.resolve(
            &SessionRequest {
                named: &named,
                ..fetch("a", 0)
            },
            0,
        )
        .unwrap();
        // Member b opened its session on connection 2.
        c.resolve(
            &SessionRequest {
                connection: 2,
                ..fetch("b", 0)
            },
            0,
        )
        .unwrap();
        // Member c's session moved: reopened on connection 3.
        c.resolve(&fetch("c", 0), 0).unwrap();
        c.resolve(
            &SessionRequest {
                connection: 3,
                ..fetch("c", 0)
            },
            0,
        )
        .unwrap();
        // A continuing request on another connection does not move it.
        c.resolve(
            &SessionRequest {
                connection: 2,
                ..fetch("a", 1)
            },
            0,
        )
        .unwrap();

        let gone = c.remove_connection(CONNECTION);
        assert_eq!(
            gone,
            vec![(("g".into(), "a".into()), named.into_iter().collect())]
        );
        assert!(c.get("g", "a").is_none());
        assert!(c.get("g", "b").is_some() && c.get("g", "c").is_some());
        // Nothing is left to remove twice.
        assert!(c.remove_connection(CONNECTION).is_empty());
        assert_eq!(c.remove_connection(3).len(), 1);
    }

    #[test]
    fn a_full_cache_evicts_only_an_idle_session() {
        let mut c = ShareSessionCache::new(1);
        c.resolve(&fetch("a", 0), 0).unwrap();
        assert_eq!(
            c.resolve(&fetch("b", 0), 1_000),
            Err(SHARE_SESSION_LIMIT_REACHED)
        );
        c.resolve(&fetch("b", 0), SHARE_SESSION_EVICTION_IDLE_MS)
            .unwrap();
        assert!(c.get("g", "a").is_none() && c.get("g", "b").is_some());
    }

    #[test]
    fn the_epoch_wraps_to_one() {
        let mut c = ShareSessionCache::new(1);
        c.resolve(&fetch("m", 0), 0).unwrap();
        c.sessions
            .get_mut(&("g".into(), "m".into()))
            .unwrap()
            .next_epoch = i32::MAX;
        c.resolve(&fetch("m", i32::MAX), 0).unwrap();
        assert_eq!(c.get("g", "m").unwrap().next_epoch, 1);
    }
}
