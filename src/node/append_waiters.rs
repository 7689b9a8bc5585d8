//! Long-poll wake-ups: a fetch that found too little data registers here, on
//! the shard that owns each partition, and an append to that partition
//! wakes it. Nothing polls on a timer.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use futures_channel::oneshot;

use crate::log::topic_partition::TopicPartition;
use crate::shard::shard::Shard;

/// Shard-local registry of waiting fetches, by partition.
#[derive(Default)]
pub struct AppendWaiters {
    waiters: RefCell<HashMap<TopicPartition, Vec<oneshot::Sender<()>>>>,
}

impl AppendWaiters {
    pub fn of(shard: &Shard) -> Rc<AppendWaiters> {
        if let Some(w) = shard.extension::<AppendWaiters>() {
            return w;
        }
        let w = Rc::new(AppendWaiters::default());
        shard.set_extension(w.clone());
        w
    }

    /// Wakes every fetch waiting on `tp`.
    pub fn notify(&self, tp: &TopicPartition) {
        if let Some(list) = self.waiters.borrow_mut().remove(tp) {
            for tx in list {
                // A waiter that timed out has dropped its receiver.
                let _ = tx.send(());
            }
        }
    }

    /// A receiver that fires on the next append to any of `tps`.
    pub fn register(&self, tps: &[TopicPartition]) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let mut waiters = self.waiters.borrow_mut();
        // Every partition gets a clone of the wake-up: the first append wins.
        let shared = Rc::new(RefCell::new(Some(tx)));
        for tp in tps {
            let list = waiters.entry(tp.clone()).or_default();
            // Drop waiters that gave up, so the lists stay bounded by the
            // fetches actually waiting.
            list.retain(|t| !t.is_canceled());
            let (relay_tx, relay_rx) = oneshot::channel::<()>();
            list.push(relay_tx);
            let shared = shared.clone();
            glommio::spawn_local(async move {
                if relay_rx.await.is_ok() {
                    if let Some(tx) = shared.borrow_mut().take() {
                        let _ = tx.send(());
                    }
                }
            })
            .detach();
        }
        rx
    }
}
