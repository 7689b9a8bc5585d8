//! glommio's blocking thread pool, entered through one gate per thread.
//!
//! glommio queues blocking work (our `spawn_blocking` calls, and its own
//! `truncate`, `rename`, `remove` and `create_dir` of files) on a bounded
//! channel of `GLOMMIO_BLOCKING_QUEUE_SLOTS` per executor. A task that finds
//! that channel full parks its waker inside it, and a pool *thread* wakes it
//! later: a wake from a foreign thread, which glommio 0.9 gets wrong for
//! tasks whose `JoinHandle` is alive (see `shard::cross_shard`). Gating every
//! blocking call behind a per-thread semaphore of
//! `BLOCKING_CALLS_IN_FLIGHT_MAX`, far below the channel's capacity, means
//! the channel is never full, so that path is never taken. Waiting for a
//! permit is a local wait.

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use glommio::sync::Semaphore;

use crate::constants::BLOCKING_CALLS_IN_FLIGHT_MAX;

thread_local! {
    static GATE: Rc<Semaphore> = Rc::new(Semaphore::new(BLOCKING_CALLS_IN_FLIGHT_MAX as u64));
}

/// The longest a reactor that called [`keep_reactor_ticking`] sleeps with
/// nothing due.
pub const REACTOR_TICK: Duration = Duration::from_millis(100);

thread_local! {
    /// The id of the executor on this thread that has its ticker.
    static TICKING: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Keeps a timer due on this thread's executor (one per thread, for as
/// long as the executor lives), so that its reactor never sleeps without
/// a deadline.
///
/// glommio 0.9 can lose the wakeup of a finished blocking-pool call: the
/// pool thread queues the answer and notifies a reactor that is not yet
/// marked asleep, the reactor then sleeps in io_uring's wait with the
/// answer queued, and nothing else is due. Seen here once, in
/// `tests/in_process/compaction.rs`: the model test's executor parked in
/// `io_cqring_wait` for 9 minutes while its pool thread sat idle, and went
/// on (and passed) the moment gdb attached to take its stacks. A broker
/// shard waiting so at startup logs nothing after "starting pinlog", the
/// start hang `tests/README.md` describes. With a timer due, the sleep ends
/// within [`REACTOR_TICK`], and the reactor's next pass collects the
/// answer.
pub fn keep_reactor_ticking() {
    // By executor id: a later executor on the same thread needs its own
    // (glommio does not drop a dropped executor's detached tasks).
    let id = glommio::executor().id();
    if TICKING.with(|t| t.replace(Some(id))) == Some(id) {
        return;
    }
    glommio::spawn_local(async {
        loop {
            crate::ticks::sleep_to_next_tick(REACTOR_TICK).await;
        }
    })
    .detach();
}

/// Runs `f` on glommio's blocking pool, at most
/// `BLOCKING_CALLS_IN_FLIGHT_MAX` at a time per thread.
///
/// Must be awaited inside a glommio executor.
pub async fn run<F, R>(f: F) -> R
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    gated(async move { glommio::executor().spawn_blocking(f).await }).await
}

/// Awaits `op`, a glommio file operation that goes through the blocking
/// pool (`DmaFile::truncate`, `rename`, `remove`), behind the same gate.
pub async fn gated<T>(op: impl Future<Output = T>) -> T {
    let gate = GATE.with(|g| g.clone());
    // The semaphore is never closed, so acquiring cannot fail; if it ever
    // did, running ungated is still correct, only unbounded.
    let _permit = gate.acquire_static_permit(1).await.ok();
    op.await
}

#[cfg(test)]
mod tests {
    use super::*;
    use glommio::LocalExecutorBuilder;
    use std::cell::Cell;

    /// The ticker never holds its executor past its main future, and the
    /// next executor on the same thread is ticked as its own.
    #[test]
    fn each_executor_on_a_thread_gets_one_ticker() {
        for _ in 0..2 {
            let ex = LocalExecutorBuilder::default().make().expect("an executor");
            let id = ex.id();
            ex.run(async move {
                keep_reactor_ticking();
                keep_reactor_ticking();
                assert_eq!(TICKING.with(Cell::get), Some(id));
                // Sleeps past a tick: the ticker's own timer fires and
                // the executor goes on.
                glommio::timer::sleep(REACTOR_TICK * 2).await;
            });
        }
    }

    #[test]
    fn never_more_than_the_limit_in_flight() {
        LocalExecutorBuilder::default()
            .spawn(|| async {
                let in_flight = Rc::new(Cell::new(0usize));
                let peak = Rc::new(Cell::new(0usize));
                let tasks: Vec<_> = (0..BLOCKING_CALLS_IN_FLIGHT_MAX * 3)
                    .map(|_| {
                        let (in_flight, peak) = (in_flight.clone(), peak.clone());
                        glommio::spawn_local(gated(async move {
                            in_flight.set(in_flight.get() + 1);
                            peak.set(peak.get().max(in_flight.get()));
                            glommio::timer::sleep(std::time::Duration::from_micros(50)).await;
                            in_flight.set(in_flight.get() - 1);
                        }))
                    })
                    .collect();
                for t in tasks {
                    t.await;
                }
                assert_eq!(peak.get(), BLOCKING_CALLS_IN_FLIGHT_MAX);
                assert_eq!(run(|| 41 + 1).await, 42);
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
