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

use std::future::Future;
use std::rc::Rc;

use glommio::sync::Semaphore;

use crate::constants::BLOCKING_CALLS_IN_FLIGHT_MAX;

thread_local! {
    static GATE: Rc<Semaphore> = Rc::new(Semaphore::new(BLOCKING_CALLS_IN_FLIGHT_MAX as u64));
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
