//! The time a shard spends serving one request, for `request_percentage`
//! (KIP-124): the time its future is being polled, not the time it waits.
//!
//! Kafka meters the time a request spends on its request-handler thread,
//! which excludes the time it waits in purgatory (a fetch's `max.wait.ms`,
//! an acks=all produce waiting for its followers). On a shard, requests
//! interleave on one thread, and the equivalent of a request thread's
//! time is the time the shard spends inside the request's future:
//! [`Timed`] adds up each poll of it, so a long poll that waits half a
//! second costs only the microseconds it ran.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The time spent inside one request's future so far.
#[derive(Default)]
pub struct BusyClock {
    /// The polls that ended.
    spent: Cell<Duration>,
    /// When the poll under way began, if one is.
    poll_started: Cell<Option<Instant>>,
}

impl BusyClock {
    /// The time spent so far, including the poll under way: what a
    /// handler charges just before it answers.
    pub fn busy(&self) -> Duration {
        let current = self
            .poll_started
            .get()
            .map_or(Duration::ZERO, |s| s.elapsed());
        self.spent.get() + current
    }

    /// [`BusyClock::busy`] in nanoseconds, the unit `request_percentage`
    /// meters.
    pub fn busy_ns(&self) -> u64 {
        u64::try_from(self.busy().as_nanos()).unwrap_or(u64::MAX)
    }
}

pin_project_lite::pin_project! {
    /// `inner`, with the time of each of its polls added to `clock`.
    pub struct Timed<'c, F> {
        clock: &'c BusyClock,
        #[pin]
        inner: F,
    }
}

impl<'c, F> Timed<'c, F> {
    pub fn new(clock: &'c BusyClock, inner: F) -> Self {
        Timed { clock, inner }
    }
}

impl<F: Future> Future for Timed<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let started = Instant::now();
        this.clock.poll_started.set(Some(started));
        let out = this.inner.poll(cx);
        this.clock.poll_started.set(None);
        this.clock
            .spent
            .set(this.clock.spent.get() + started.elapsed());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_is_not_busy_time() {
        let clock = BusyClock::default();
        let wait = Duration::from_millis(50);
        let spin = Duration::from_millis(5);
        glommio::LocalExecutorBuilder::default()
            .spawn(move || async move {
                Timed::new(&clock, async {
                    let t = Instant::now();
                    while t.elapsed() < spin {}
                    glommio::timer::sleep(wait).await;
                    assert!(clock.busy() >= spin && clock.busy() < wait);
                })
                .await;
                assert!(
                    clock.busy() >= spin && clock.busy() < wait,
                    "{:?}",
                    clock.busy()
                );
            })
            .expect("executor")
            .join()
            .expect("join");
    }
}
