//! How often the quorum's leader tries to connect again to an observer (a
//! broker-only node) it cannot reach. openraft sends a learner every
//! heartbeat, and a stopped observer stays a learner: without a pause the
//! leader opened (or timed out) a connection per heartbeat, for as long as
//! the node stayed down. Voters are not paused: an election or a failover
//! must reach a returning voter at once.

use std::time::{Duration, Instant};

/// The first pause after a failed connection to an observer.
pub const OBSERVER_RECONNECT_PAUSE_MIN: Duration = Duration::from_millis(250);
/// The longest pause: a stopped observer costs the leader one connection
/// attempt this often, and a returning one on the same address waits at
/// most this long for the log.
pub const OBSERVER_RECONNECT_PAUSE_MAX: Duration = Duration::from_secs(2);

/// The pause before the next connection attempt to one peer: doubles after
/// each failed attempt, up to [`OBSERVER_RECONNECT_PAUSE_MAX`], and ends
/// with a connection. Pure: the caller passes the time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconnectBackoff {
    retry_at: Option<Instant>,
    pause: Duration,
}

impl ReconnectBackoff {
    /// Whether a connection may be attempted at `now`.
    pub fn may_connect(&self, now: Instant) -> bool {
        self.retry_at.is_none_or(|at| now >= at)
    }

    /// A connection attempt failed at `now`.
    pub fn failed(&mut self, now: Instant) {
        self.pause = if self.pause.is_zero() {
            OBSERVER_RECONNECT_PAUSE_MIN
        } else {
            (self.pause * 2).min(OBSERVER_RECONNECT_PAUSE_MAX)
        };
        self.retry_at = Some(now + self.pause);
    }

    /// A call got through: the next failure starts from the shortest pause.
    pub fn connected(&mut self) {
        *self = Self::default();
    }

    /// Whether the last attempt failed (and no call got through since).
    pub fn is_backing_off(&self) -> bool {
        self.retry_at.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_to_its_bound_and_a_connection_ends_it() {
        let t0 = Instant::now();
        let mut b = ReconnectBackoff::default();
        assert!(b.may_connect(t0), "the first attempt is never held");
        b.failed(t0);
        assert!(!b.may_connect(t0 + OBSERVER_RECONNECT_PAUSE_MIN / 2));
        assert!(b.may_connect(t0 + OBSERVER_RECONNECT_PAUSE_MIN));
        let mut at = t0;
        let mut pauses = Vec::new();
        for _ in 0..8 {
            b.failed(at);
            pauses.push(b.pause);
            at += b.pause;
        }
        assert_eq!(pauses[0], OBSERVER_RECONNECT_PAUSE_MIN * 2);
        assert!(pauses.windows(2).all(|w| w[1] >= w[0]));
        assert_eq!(*pauses.last().unwrap(), OBSERVER_RECONNECT_PAUSE_MAX);
        b.connected();
        assert!(b.may_connect(at) && !b.is_backing_off());
        b.failed(at);
        assert_eq!(b.pause, OBSERVER_RECONNECT_PAUSE_MIN);
    }

    #[test]
    fn a_stopped_observer_costs_few_attempts() {
        // A minute of heartbeats every 100 ms to a node that never answers.
        let heartbeat = Duration::from_millis(100);
        let t0 = Instant::now();
        let mut b = ReconnectBackoff::default();
        let attempts = (0..600)
            .map(|i| t0 + heartbeat * i)
            .filter(|&now| {
                let attempt = b.may_connect(now);
                if attempt {
                    b.failed(now);
                }
                attempt
            })
            .count();
        let bound = 60 * 1000 / OBSERVER_RECONNECT_PAUSE_MAX.as_millis() as usize + 5;
        assert!(attempts <= bound, "{attempts} attempts in a minute");
    }
}
