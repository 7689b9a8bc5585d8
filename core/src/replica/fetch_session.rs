//! The follower's side of an incremental fetch session (KIP-227), Kafka's
//! `FetchSessionHandler`: one per replica fetcher, so one per (follower
//! shard, leader broker).
//!
//! The leader keeps what a session's partitions asked last; the follower
//! keeps the same picture here, so that each request names only the
//! partitions whose fetch parameters changed (new data appended, a
//! truncation, a new leader epoch) and the ones it no longer wants, and the
//! leader answers only partitions with news. With thousands of followed
//! partitions that are mostly idle, a round trip then costs what changed,
//! not the whole list.
//!
//! A pure state machine: the fetcher asks [`FollowerFetchSession::plan`]
//! what to send and reports the outcome; no I/O here.
//!
//! When in doubt it falls back to a full request (session epoch 0), which
//! the leader answers for every partition: after a request that got no
//! answer, after the leader refused the session, and after the fetcher
//! dropped part of an answer (the leader's session then believes the
//! follower knows a HW it never applied, and would not repeat it).

use std::collections::BTreeMap;

use crate::protocol::error_code;
use crate::protocol::messages::fetch::{next_epoch, INITIAL_EPOCH};
use crate::topic_partition::TopicPartition;

/// What one partition asks the leader for: the fields of a Fetch request's
/// partition that the leader's session remembers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionFetch {
    pub fetch_offset: i64,
    pub log_start_offset: i64,
    pub partition_max_bytes: i32,
    pub current_leader_epoch: i32,
    pub last_fetched_epoch: i32,
}

/// One request, as the session decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPlan {
    pub session_id: i32,
    pub session_epoch: i32,
    /// The partitions to name in the request: all of them in a full
    /// request, the changed and new ones in an incremental one.
    pub send: Vec<(TopicPartition, PartitionFetch)>,
    /// The partitions the leader's session must drop (incremental only).
    pub forget: Vec<TopicPartition>,
}

impl FetchPlan {
    pub fn is_full(&self) -> bool {
        self.session_epoch == INITIAL_EPOCH
    }
}

#[derive(Debug, Default)]
pub struct FollowerFetchSession {
    /// The leader's id for the session; 0 when there is none.
    session_id: i32,
    /// The epoch of the next request; [`INITIAL_EPOCH`] for a full one.
    epoch: i32,
    /// What the leader's session holds once the last answered request is
    /// applied.
    in_session: BTreeMap<TopicPartition, PartitionFetch>,
    /// What it will hold once the request in flight is answered.
    in_flight: Option<BTreeMap<TopicPartition, PartitionFetch>>,
}

impl FollowerFetchSession {
    pub fn new() -> Self {
        Self::default()
    }

    /// The session id, 0 when there is none.
    pub fn session_id(&self) -> i32 {
        self.session_id
    }

    /// The next request for `wanted`, every partition the fetcher fetches
    /// now. A full request when there is no session.
    pub fn plan(&mut self, wanted: BTreeMap<TopicPartition, PartitionFetch>) -> FetchPlan {
        let plan = if self.session_id == 0 || self.epoch == INITIAL_EPOCH {
            FetchPlan {
                session_id: self.session_id,
                session_epoch: INITIAL_EPOCH,
                send: wanted.iter().map(|(tp, f)| (tp.clone(), *f)).collect(),
                forget: Vec::new(),
            }
        } else {
            FetchPlan {
                session_id: self.session_id,
                session_epoch: self.epoch,
                send: wanted
                    .iter()
                    .filter(|(tp, f)| self.in_session.get(*tp) != Some(*f))
                    .map(|(tp, f)| (tp.clone(), *f))
                    .collect(),
                forget: self
                    .in_session
                    .keys()
                    .filter(|tp| !wanted.contains_key(*tp))
                    .cloned()
                    .collect(),
            }
        };
        self.in_flight = Some(wanted);
        plan
    }

    /// The leader answered the planned request with this top-level error
    /// code and session id.
    pub fn on_response(&mut self, error_code: i16, session_id: i32) {
        let wanted = self.in_flight.take().unwrap_or_default();
        match error_code {
            error_code::NONE => {}
            error_code::FETCH_SESSION_ID_NOT_FOUND => {
                // The session is gone (evicted, or the connection now lands
                // on another of the leader's shards): start a new one.
                self.clear();
                return;
            }
            _ => {
                // INVALID_FETCH_SESSION_EPOCH or anything else: close this
                // session and open a new one with a full request.
                self.on_failure();
                return;
            }
        }
        if session_id == 0 {
            // No session: the leader had no room for one, or the update
            // emptied it. The next request is full again.
            self.clear();
            return;
        }
        self.epoch = if self.epoch == INITIAL_EPOCH || self.session_id != session_id {
            next_epoch(INITIAL_EPOCH)
        } else {
            next_epoch(self.epoch)
        };
        self.session_id = session_id;
        self.in_session = wanted;
    }

    /// The planned request got no answer: the leader may or may not have
    /// applied it, so the next request closes the session and starts over
    /// with a full one.
    pub fn on_failure(&mut self) {
        self.in_flight = None;
        self.epoch = INITIAL_EPOCH;
        self.in_session.clear();
    }

    /// The fetcher dropped part of an answer: the next request is full, so
    /// that the leader answers every partition again.
    pub fn resend_all(&mut self) {
        self.on_failure();
    }

    /// Forgets the session entirely (a new leader address).
    pub fn clear(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn at(offset: i64) -> PartitionFetch {
        PartitionFetch {
            fetch_offset: offset,
            log_start_offset: 0,
            partition_max_bytes: 1 << 20,
            current_leader_epoch: 3,
            last_fetched_epoch: 3,
        }
    }

    fn wanted(parts: &[(i32, i64)]) -> BTreeMap<TopicPartition, PartitionFetch> {
        parts.iter().map(|&(p, o)| (tp(p), at(o))).collect()
    }

    fn names(plan: &FetchPlan) -> Vec<i32> {
        plan.send.iter().map(|(tp, _)| tp.partition).collect()
    }

    #[test]
    fn the_first_request_is_full_and_later_ones_name_only_changes() {
        let mut s = FollowerFetchSession::new();
        let first = s.plan(wanted(&[(0, 10), (1, 20), (2, 30)]));
        assert_eq!((first.session_id, first.session_epoch), (0, 0));
        assert!(first.is_full());
        assert_eq!(names(&first), vec![0, 1, 2]);
        s.on_response(error_code::NONE, 77);

        // Only partition 1 appended.
        let second = s.plan(wanted(&[(0, 10), (1, 25), (2, 30)]));
        assert_eq!((second.session_id, second.session_epoch), (77, 1));
        assert_eq!(names(&second), vec![1]);
        assert_eq!(second.send[0].1.fetch_offset, 25);
        assert!(second.forget.is_empty());
        s.on_response(error_code::NONE, 77);

        // Nothing changed: an empty incremental request.
        let third = s.plan(wanted(&[(0, 10), (1, 25), (2, 30)]));
        assert_eq!(third.session_epoch, 2);
        assert!(third.send.is_empty() && third.forget.is_empty());
        s.on_response(error_code::NONE, 77);

        // Partition 2 is no longer followed; partition 3 is new; partition
        // 0 has a new leader epoch.
        let mut next = wanted(&[(0, 10), (1, 25), (3, 0)]);
        next.get_mut(&tp(0)).unwrap().current_leader_epoch = 4;
        let fourth = s.plan(next);
        assert_eq!(fourth.session_epoch, 3);
        assert_eq!(names(&fourth), vec![0, 3]);
        assert_eq!(fourth.forget, vec![tp(2)]);
    }

    #[test]
    fn a_refused_session_starts_over_with_a_full_request() {
        let mut s = FollowerFetchSession::new();
        s.plan(wanted(&[(0, 1), (1, 1)]));
        s.on_response(error_code::NONE, 9);
        s.plan(wanted(&[(0, 2), (1, 1)]));
        s.on_response(error_code::FETCH_SESSION_ID_NOT_FOUND, 0);
        let after_not_found = s.plan(wanted(&[(0, 2), (1, 1)]));
        assert_eq!(
            (after_not_found.session_id, after_not_found.session_epoch),
            (0, 0)
        );
        assert_eq!(names(&after_not_found), vec![0, 1]);
        s.on_response(error_code::NONE, 10);

        s.plan(wanted(&[(0, 3), (1, 1)]));
        s.on_response(error_code::INVALID_FETCH_SESSION_EPOCH, 0);
        // The epoch is wrong: close session 10 and open a new one.
        let after_bad_epoch = s.plan(wanted(&[(0, 3), (1, 1)]));
        assert_eq!(
            (after_bad_epoch.session_id, after_bad_epoch.session_epoch),
            (10, 0)
        );
        assert_eq!(names(&after_bad_epoch), vec![0, 1]);
        s.on_response(error_code::NONE, 11);
        assert_eq!(s.session_id(), 11);
        assert_eq!(s.plan(wanted(&[(0, 3), (1, 1)])).session_epoch, 1);
    }

    #[test]
    fn an_unanswered_request_or_a_dropped_answer_makes_the_next_one_full() {
        let mut s = FollowerFetchSession::new();
        s.plan(wanted(&[(0, 1), (1, 1)]));
        s.on_response(error_code::NONE, 5);
        s.plan(wanted(&[(0, 2), (1, 1)]));
        s.on_failure();
        let retry = s.plan(wanted(&[(0, 2), (1, 1)]));
        assert_eq!((retry.session_id, retry.session_epoch), (5, 0));
        assert_eq!(names(&retry), vec![0, 1]);
        s.on_response(error_code::NONE, 6);

        s.plan(wanted(&[(0, 4), (1, 1)]));
        s.on_response(error_code::NONE, 6);
        s.resend_all();
        let full = s.plan(wanted(&[(0, 4), (1, 1)]));
        assert!(full.is_full());
        assert_eq!(names(&full), vec![0, 1]);
    }

    #[test]
    fn a_sessionless_answer_keeps_requests_full() {
        let mut s = FollowerFetchSession::new();
        s.plan(wanted(&[(0, 1)]));
        // The leader's cache had no room.
        s.on_response(error_code::NONE, 0);
        let next = s.plan(wanted(&[(0, 1)]));
        assert_eq!((next.session_id, next.session_epoch), (0, 0));
        assert_eq!(names(&next), vec![0]);
    }

    #[test]
    fn epochs_wrap_past_zero() {
        let mut s = FollowerFetchSession::new();
        s.plan(wanted(&[(0, 1)]));
        s.on_response(error_code::NONE, 5);
        s.epoch = i32::MAX;
        s.plan(wanted(&[(0, 1)]));
        s.on_response(error_code::NONE, 5);
        assert_eq!(s.plan(wanted(&[(0, 1)])).session_epoch, 1);
    }
}
