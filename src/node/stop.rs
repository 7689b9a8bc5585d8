//! The stop request of one broker. Each broker has its own, so that several
//! nodes can run in one process (tests) and stop independently; the signal
//! thread and the panic hook of `pinlog serve` hold a clone.
//!
//! There are two requests. A *shutdown* (SIGTERM, SIGINT) first hands this
//! broker's leaderships to other brokers (Kafka's controlled shutdown, see
//! `server/lifecycle/controlled_shutdown.rs`), which then turns into a *stop*. A stop
//! (a second signal, a panic, a refused registration) begins at once:
//! accepting ends, connections drain, logs close.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Debug, Default)]
struct Requests {
    shutdown: AtomicBool,
    stop: AtomicBool,
}

/// Cheap to clone; every clone sees the same requests.
#[derive(Debug, Clone, Default)]
pub struct StopHandle(Arc<Requests>);

impl StopHandle {
    pub fn new() -> StopHandle {
        StopHandle::default()
    }

    /// Asks the broker to stop now: it stops accepting, drains, and closes.
    pub fn request(&self) {
        self.0.stop.store(true, Ordering::SeqCst);
    }

    pub fn is_requested(&self) -> bool {
        self.0.stop.load(Ordering::SeqCst)
    }

    /// Asks for a controlled shutdown: leaderships move first, then the
    /// broker stops (the shutdown watcher turns this into [`Self::request`]).
    pub fn request_shutdown(&self) {
        self.0.shutdown.store(true, Ordering::SeqCst);
    }

    /// Whether a shutdown or a stop was asked for.
    pub fn is_shutdown_requested(&self) -> bool {
        self.0.shutdown.load(Ordering::SeqCst) || self.is_requested()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_request_and_brokers_do_not() {
        let a = StopHandle::new();
        let a2 = a.clone();
        let b = StopHandle::new();
        a2.request();
        assert!(a.is_requested());
        assert!(!b.is_requested());
    }

    #[test]
    fn a_shutdown_is_not_a_stop_but_a_stop_is_a_shutdown() {
        let a = StopHandle::new();
        a.request_shutdown();
        assert!(a.is_shutdown_requested());
        assert!(!a.is_requested());
        let b = StopHandle::new();
        b.request();
        assert!(b.is_shutdown_requested());
    }
}
