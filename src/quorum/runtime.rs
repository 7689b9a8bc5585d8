//! openraft's `AsyncRuntime` on glommio: tasks are glommio tasks on the
//! calling shard (openraft runs `single-threaded`, so nothing needs `Send`),
//! sleeps are glommio timers, and the channels and the mutex are tokio's
//! `sync` primitives, which need no tokio runtime and only wake tasks on
//! the thread that uses them.
//!
//! Two rules of the shard runtime apply (ARCHITECTURE.md, sharp edges):
//! - openraft drops the `JoinHandle`s of most tasks it spawns and expects
//!   them to keep running, so every task is detached at spawn and the
//!   handle only reports the result, over a shard-local oneshot. No task's
//!   waker therefore belongs to a glommio `JoinHandle`.
//! - the quorum must only ever be driven from its own shard: these channels
//!   would carry wakers across threads otherwise.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use openraft::rt::mpsc::{Mpsc, MpscReceiver, MpscSender, MpscWeakSender, SendError, TryRecvError};
use openraft::rt::mutex::Mutex;
use openraft::rt::oneshot::{Oneshot, OneshotSender};
use openraft::rt::watch::{RecvError, Watch, WatchReceiver, WatchSender};
use openraft::rt::AsyncRuntime;

/// The runtime marker type for openraft's type configuration.
pub struct GlommioRuntime {
    /// Only for `block_on` (tests and tools); the broker runs the quorum
    /// inside its shard's executor instead.
    executor: Option<glommio::LocalExecutor>,
}

impl fmt::Debug for GlommioRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GlommioRuntime")
    }
}

/// A spawned task stopped before it finished (it panicked or its executor
/// went away).
#[derive(Debug)]
pub struct TaskAborted;

impl fmt::Display for TaskAborted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the task stopped before it finished (panicked, or its shard stopped)")
    }
}

/// The result of a detached task, delivered over a local oneshot.
pub struct JoinHandle<T> {
    result: tokio::sync::oneshot::Receiver<T>,
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, TaskAborted>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.result)
            .poll(cx)
            .map(|r| r.map_err(|_| TaskAborted))
    }
}

/// The deadline passed before the future finished.
#[derive(Debug)]
pub struct Elapsed;

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

/// A glommio timer that resolves to `()`.
pub struct Sleep(glommio::timer::Timer);

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

pin_project_lite::pin_project! {
    /// A future raced against a glommio timer.
    pub struct Timeout<F> {
        #[pin]
        future: F,
        #[pin]
        sleep: glommio::timer::Timer,
    }
}

impl<R, F: Future<Output = R>> Future for Timeout<F> {
    type Output = Result<R, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(v) = this.future.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        this.sleep.poll(cx).map(|_| Err(Elapsed))
    }
}

fn until(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

impl AsyncRuntime for GlommioRuntime {
    type JoinError = TaskAborted;
    type JoinHandle<T: 'static> = JoinHandle<T>;
    type Sleep = Sleep;
    type Instant = Instant;
    type TimeoutError = Elapsed;
    type Timeout<R, T: Future<Output = R>> = Timeout<T>;
    type ThreadLocalRng = rand::rngs::ThreadRng;

    fn spawn<T>(future: T) -> Self::JoinHandle<T::Output>
    where
        T: Future + 'static,
        T::Output: 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        glommio::spawn_local(async move {
            // Nobody may be waiting for the result any more.
            let _ = tx.send(future.await);
        })
        .detach();
        JoinHandle { result: rx }
    }

    fn sleep(duration: Duration) -> Self::Sleep {
        Sleep(glommio::timer::Timer::new(duration))
    }

    fn sleep_until(deadline: Self::Instant) -> Self::Sleep {
        Sleep(glommio::timer::Timer::new(until(deadline)))
    }

    fn timeout<R, F: Future<Output = R>>(duration: Duration, future: F) -> Self::Timeout<R, F> {
        Timeout {
            future,
            sleep: glommio::timer::Timer::new(duration),
        }
    }

    fn timeout_at<R, F: Future<Output = R>>(
        deadline: Self::Instant,
        future: F,
    ) -> Self::Timeout<R, F> {
        Self::timeout(until(deadline), future)
    }

    fn is_panic(_: &Self::JoinError) -> bool {
        // A detached glommio task that panics takes its shard down with it
        // (the broker then stops, see server/lifecycle/broker.rs); a handle that sees
        // the task gone never outlives that.
        true
    }

    fn thread_rng() -> Self::ThreadLocalRng {
        rand::rng()
    }

    type Mpsc = LocalMpsc;
    type Watch = LocalWatch;
    type Oneshot = LocalOneshot;
    type Mutex<T: 'static> = LocalMutex<T>;

    fn new(_threads: usize) -> Self {
        let executor = glommio::LocalExecutorBuilder::default()
            .make()
            .expect("start a glommio executor for the quorum runtime");
        GlommioRuntime {
            executor: Some(executor),
        }
    }

    fn block_on<F, T>(&mut self, future: F) -> T
    where
        F: Future<Output = T>,
    {
        self.executor
            .as_ref()
            .expect("block_on needs a runtime made by new()")
            .run(async move {
                crate::blocking_pool::keep_reactor_ticking();
                future.await
            })
    }
}

/// Bounded multi-producer channels (tokio's, with weak senders).
pub struct LocalMpsc;

pub struct LocalMpscSender<T>(tokio::sync::mpsc::Sender<T>);
pub struct LocalMpscReceiver<T>(tokio::sync::mpsc::Receiver<T>);
pub struct LocalMpscWeakSender<T>(tokio::sync::mpsc::WeakSender<T>);

impl<T> Clone for LocalMpscSender<T> {
    fn clone(&self) -> Self {
        LocalMpscSender(self.0.clone())
    }
}

impl<T> Clone for LocalMpscWeakSender<T> {
    fn clone(&self) -> Self {
        LocalMpscWeakSender(self.0.clone())
    }
}

impl Mpsc for LocalMpsc {
    type Sender<T> = LocalMpscSender<T>;
    type Receiver<T> = LocalMpscReceiver<T>;
    type WeakSender<T> = LocalMpscWeakSender<T>;

    fn channel<T>(buffer: usize) -> (Self::Sender<T>, Self::Receiver<T>) {
        let (tx, rx) = tokio::sync::mpsc::channel(buffer);
        (LocalMpscSender(tx), LocalMpscReceiver(rx))
    }
}

impl<T> MpscSender<LocalMpsc, T> for LocalMpscSender<T> {
    async fn send(&self, msg: T) -> Result<(), SendError<T>> {
        self.0.send(msg).await.map_err(|e| SendError(e.0))
    }

    fn downgrade(&self) -> LocalMpscWeakSender<T> {
        LocalMpscWeakSender(self.0.downgrade())
    }
}

impl<T> MpscReceiver<T> for LocalMpscReceiver<T> {
    async fn recv(&mut self) -> Option<T> {
        self.0.recv().await
    }

    fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.0.try_recv().map_err(|e| match e {
            tokio::sync::mpsc::error::TryRecvError::Empty => TryRecvError::Empty,
            tokio::sync::mpsc::error::TryRecvError::Disconnected => TryRecvError::Disconnected,
        })
    }
}

impl<T> MpscWeakSender<LocalMpsc, T> for LocalMpscWeakSender<T> {
    fn upgrade(&self) -> Option<LocalMpscSender<T>> {
        self.0.upgrade().map(LocalMpscSender)
    }
}

/// Watch channels (tokio's).
pub struct LocalWatch;

pub struct LocalWatchSender<T>(tokio::sync::watch::Sender<T>);
pub struct LocalWatchReceiver<T>(tokio::sync::watch::Receiver<T>);

impl<T> Clone for LocalWatchSender<T> {
    fn clone(&self) -> Self {
        LocalWatchSender(self.0.clone())
    }
}

impl<T> Clone for LocalWatchReceiver<T> {
    fn clone(&self) -> Self {
        LocalWatchReceiver(self.0.clone())
    }
}

impl Watch for LocalWatch {
    type Sender<T> = LocalWatchSender<T>;
    type Receiver<T> = LocalWatchReceiver<T>;
    type Ref<'a, T: 'a> = tokio::sync::watch::Ref<'a, T>;

    fn channel<T>(init: T) -> (Self::Sender<T>, Self::Receiver<T>) {
        let (tx, rx) = tokio::sync::watch::channel(init);
        (LocalWatchSender(tx), LocalWatchReceiver(rx))
    }
}

impl<T> WatchSender<LocalWatch, T> for LocalWatchSender<T> {
    fn send(&self, value: T) -> Result<(), openraft::rt::watch::SendError<T>> {
        self.0
            .send(value)
            .map_err(|e| openraft::rt::watch::SendError(e.0))
    }

    fn send_if_modified<F>(&self, modify: F) -> bool
    where
        F: FnOnce(&mut T) -> bool,
    {
        self.0.send_if_modified(modify)
    }

    fn borrow_watched(&self) -> tokio::sync::watch::Ref<'_, T> {
        self.0.borrow()
    }

    fn subscribe(&self) -> LocalWatchReceiver<T> {
        LocalWatchReceiver(self.0.subscribe())
    }
}

impl<T> WatchReceiver<LocalWatch, T> for LocalWatchReceiver<T> {
    async fn changed(&mut self) -> Result<(), RecvError> {
        self.0.changed().await.map_err(|_| RecvError(()))
    }

    fn borrow_watched(&self) -> tokio::sync::watch::Ref<'_, T> {
        self.0.borrow()
    }

    fn borrow_and_update(&mut self) -> tokio::sync::watch::Ref<'_, T> {
        self.0.borrow_and_update()
    }
}

/// One-shot channels (tokio's).
pub struct LocalOneshot;

pub struct LocalOneshotSender<T>(tokio::sync::oneshot::Sender<T>);

impl Oneshot for LocalOneshot {
    type Sender<T> = LocalOneshotSender<T>;
    type Receiver<T> = tokio::sync::oneshot::Receiver<T>;
    type ReceiverError = tokio::sync::oneshot::error::RecvError;

    fn channel<T>() -> (Self::Sender<T>, Self::Receiver<T>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (LocalOneshotSender(tx), rx)
    }
}

impl<T> OneshotSender<T> for LocalOneshotSender<T> {
    fn send(self, t: T) -> Result<(), T> {
        self.0.send(t)
    }
}

/// An async mutex (tokio's).
pub struct LocalMutex<T>(tokio::sync::Mutex<T>);

impl<T: 'static> Mutex<T> for LocalMutex<T> {
    type Guard<'a> = tokio::sync::MutexGuard<'a, T>;

    fn new(value: T) -> Self {
        LocalMutex(tokio::sync::Mutex::new(value))
    }

    fn lock(&self) -> impl Future<Output = Self::Guard<'_>> {
        self.0.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// openraft's own conformance suite for runtimes: spawn and join,
    /// sleeps, instants, timeouts, every channel kind and the mutex, task
    /// locals, and its deterministic-simulation checks.
    #[test]
    fn passes_openraft_runtime_conformance_suite() {
        openraft::testing::runtime::Suite::<GlommioRuntime>::test_all();
    }
}
