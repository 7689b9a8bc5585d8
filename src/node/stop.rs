//! The stop request of one broker. Each broker has its own, so that several
//! nodes can run in one process (tests) and stop independently; the signal
//! thread and the panic hook of `pinlog serve` hold a clone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Cheap to clone; every clone sees the same request.
#[derive(Debug, Clone, Default)]
pub struct StopHandle(Arc<AtomicBool>);

impl StopHandle {
    pub fn new() -> StopHandle {
        StopHandle::default()
    }

    /// Asks the broker to stop: it stops accepting, drains, and closes.
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
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
}
