//! Waiting for a reply from another shard without ever letting that shard
//! wake a task whose `JoinHandle` is alive.
//!
//! # Why this exists
//! glommio 0.9 counts a task's wakers in an atomic reference count. A waker
//! dropped on a *foreign* thread decrements that count and, if it reached 0,
//! increments it again to hand a last wake back to the owning executor. For a
//! moment the count is 0 while the task is still alive. If the owning thread
//! drops the task's `JoinHandle` in that moment, `JoinHandle::drop` reads 0
//! with a plain load and frees the task; the foreign thread then increments
//! and wakes freed memory. The result is "free(): double free detected in
//! tcache 2", or a "Waker invariant broken ... refcount: -1" panic on a task
//! that happens to reuse the memory. (`task/raw.rs::drop_waker` and
//! `task/join_handle.rs::drop` in glommio 0.9.0 and glommio-ng 0.12.0.)
//!
//! Detached tasks are not affected: without a `JoinHandle`, only the atomic
//! decrement's own result decides when the task is freed.
//!
//! # The rule
//! No task whose `JoinHandle` is kept may be woken from another thread. Every
//! cross-shard reply therefore lands in a *relay*: a small task, detached at
//! spawn, that awaits the reply channel the other shard completes and then
//! hands the value on over a shard-local channel. The caller (which may be a
//! task with a live `JoinHandle`) only ever waits on the local channel, so
//! its waker never leaves its own thread.
//!
//! Cancellation still travels: if the caller stops waiting (drops the
//! future), the relay notices the local receiver is gone and drops the
//! cross-shard receiver, so the owning shard sees `is_canceled()` as before.
//!
//! The cost is one local task per cross-shard call (a small allocation and
//! one extra poll), measured in `benches/` as part of the shard hop.
//!
//! Other cross-thread wake sources, and why they are safe:
//! - glommio's shared channels (the channel mesh) register the waiting task's
//!   waker with its *own* reactor and only signal the peer's eventfd; the
//!   waker never crosses threads.
//! - glommio's blocking pool completes requests through the reactor (local
//!   wakers). Its request queue is a bounded `flume` channel of 4,096 slots:
//!   a task that finds it full leaves its waker in the channel, and a pool
//!   thread wakes it. pinlog never has that many blocking calls in flight on
//!   one shard (see `constants::BLOCKING_CALLS_IN_FLIGHT_MAX` and
//!   [`crate::shard::blocking`]), so that path is never taken.

use futures_channel::oneshot;
use futures_lite::future;

/// The sending half handed to the other shard. Send it the reply (or drop it
/// to report failure); check [`oneshot::Sender::is_canceled`] to learn that
/// the caller gave up.
pub type ReplySender<T> = oneshot::Sender<T>;

/// The caller's half: completes with the reply, or `Err(Canceled)` if the
/// other shard dropped the sender (it stopped, or panicked).
pub struct ReplyReceiver<T> {
    local: oneshot::Receiver<T>,
}

impl<T> ReplyReceiver<T> {
    pub async fn recv(self) -> Result<T, oneshot::Canceled> {
        self.local.await
    }
}

/// A reply channel whose remote half may be completed from another shard,
/// and whose local half is safe to await from any task.
///
/// Must be called on a glommio executor thread: it spawns the relay there.
pub fn reply_channel<T: Send + 'static>() -> (ReplySender<T>, ReplyReceiver<T>) {
    let (remote_tx, remote_rx) = oneshot::channel::<T>();
    let (mut local_tx, local_rx) = oneshot::channel::<T>();
    glommio::spawn_local(async move {
        // Whichever comes first: the reply, or the caller giving up. Only
        // this detached task's waker is ever handed to the other shard.
        let reply = future::or(async { Some(remote_rx.await) }, async {
            local_tx.cancellation().await;
            None
        })
        .await;
        match reply {
            Some(Ok(value)) => {
                // The caller may have given up meanwhile; then nobody wants
                // the value and dropping it here is right.
                let _ = local_tx.send(value);
            }
            // The other shard dropped its sender: dropping `local_tx` tells
            // the caller the same.
            Some(Err(oneshot::Canceled)) => {}
            // The caller gave up: `remote_rx` was dropped when the `or`
            // finished, so the other shard sees the cancellation.
            None => {}
        }
    })
    .detach();
    (remote_tx, ReplyReceiver { local: local_rx })
}

#[cfg(test)]
mod tests {
    use super::*;
    use glommio::LocalExecutorBuilder;

    fn on_executor<F: std::future::Future<Output = ()> + 'static>(
        body: impl FnOnce() -> F + Send + 'static,
    ) {
        LocalExecutorBuilder::default()
            .spawn(move || async move { body().await })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn reply_from_another_thread_reaches_the_caller() {
        on_executor(|| async {
            let (tx, rx) = reply_channel::<u32>();
            std::thread::spawn(move || tx.send(7).unwrap());
            assert_eq!(rx.recv().await, Ok(7));
        });
    }

    #[test]
    fn dropped_sender_is_reported() {
        on_executor(|| async {
            let (tx, rx) = reply_channel::<u32>();
            std::thread::spawn(move || drop(tx));
            assert_eq!(rx.recv().await, Err(oneshot::Canceled));
        });
    }

    #[test]
    fn caller_giving_up_cancels_the_remote_half() {
        on_executor(|| async {
            let (tx, rx) = reply_channel::<u32>();
            assert!(!tx.is_canceled());
            drop(rx);
            // The relay runs on this executor: let it see the cancellation.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while !tx.is_canceled() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "relay never cancelled"
                );
                glommio::yield_if_needed().await;
                glommio::timer::sleep(std::time::Duration::from_millis(1)).await;
            }
        });
    }
}
