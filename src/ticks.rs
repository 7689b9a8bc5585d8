//! Periodic checks that wake the shard together.
//!
//! A shard runs many loops that look at something every 50 or 100 ms: each
//! connection's stop and idle watch, the accept loops' stop watch, the
//! flush policy's timer, the group coordinator's sessions, share locks'
//! expiry, the reactor's keep-alive. Each one slept its own period from
//! whenever it last ran, so their timers fell due at scattered moments, and
//! every one of them woke the parked shard thread: about 250 wake-ups a
//! second on an idle node of a 3-node cluster, each costing the runtime
//! several io_uring_enter calls and a membarrier. Sleeping to the next
//! multiple of the period, counted from one origin for the whole process,
//! puts all the timers of a period (and of its multiples) on the same
//! instants, and one wake-up serves them all: the kernel's timer
//! coalescing (`round_jiffies`), for the loops that only poll.
//!
//! Only for checks whose period is a bound on how late they notice
//! something, never for backoffs or deadlines: the first sleep is shorter
//! than the period.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The instant every period is counted from.
static ORIGIN: OnceLock<Instant> = OnceLock::new();

/// Sleeps until the next multiple of `period` since the process's origin:
/// at most `period`, and on the same instant as every other loop of that
/// period (or of a divisor of it).
pub async fn sleep_to_next_tick(period: Duration) {
    let origin = *ORIGIN.get_or_init(Instant::now);
    glommio::timer::sleep(until_next_tick(origin, Instant::now(), period)).await;
}

/// From `now` to the next multiple of `period` after `origin`, in
/// `(0, period]`.
fn until_next_tick(origin: Instant, now: Instant, period: Duration) -> Duration {
    let period_ns = period.as_nanos().max(1);
    let since = now.saturating_duration_since(origin).as_nanos();
    let next = (since / period_ns + 1) * period_ns;
    Duration::from_nanos(u64::try_from(next - since).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn loops_of_one_period_meet_on_the_same_instant() {
        let origin = Instant::now();
        for (at, period) in [(3, 50), (27, 50), (49, 50), (50, 50), (51, 50), (130, 100)] {
            let now = origin + MS * at;
            let period = MS * period;
            let wait = until_next_tick(origin, now, period);
            assert!(wait > Duration::ZERO && wait <= period, "{at} ms: {wait:?}");
            let due = (now + wait).duration_since(origin);
            assert_eq!(
                due.as_nanos() % period.as_nanos(),
                0,
                "{at} ms: due at {due:?}"
            );
        }
        // Two loops that ran at different moments of one period.
        let a = origin + MS * 3 + until_next_tick(origin, origin + MS * 3, MS * 50);
        let b = origin + MS * 41 + until_next_tick(origin, origin + MS * 41, MS * 50);
        assert_eq!(a, b);
    }

    #[test]
    fn a_period_that_divides_another_shares_its_instants() {
        let origin = Instant::now();
        let now = origin + MS * 130;
        let every_100 = now + until_next_tick(origin, now, MS * 100);
        let mut every_50 = now;
        // The 50 ms loop wakes at 150 ms, then at 200 ms with the other.
        for _ in 0..2 {
            every_50 += until_next_tick(origin, every_50, MS * 50);
        }
        assert_eq!(every_50, every_100);
    }
}
