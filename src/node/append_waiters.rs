//! Long-poll wake-ups: a fetch that found too little data registers here, on
//! the shard that owns each partition, and an append to that partition
//! wakes it. Nothing polls on a timer.
//!
//! The registry holds only weak references to the waits: a wait that ends
//! (its timeout fired, or another partition woke it) frees itself when it
//! is dropped, and the next registration on the partition sweeps its entry
//! away. So an idle partition, polled by followers and consumers every
//! `max_wait_ms` and never appended to, holds only the waits that are
//! actually waiting. No task runs per registration.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// One waiting fetch or produce, woken by the first notification of any of
/// the partitions it registered on.
#[derive(Default)]
struct Waiter {
    woken: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl Waiter {
    fn wake(&self) {
        self.woken.set(true);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }
}

/// Shard-local registry of waiting fetches, by partition.
#[derive(Default)]
pub struct AppendWaiters {
    waiters: RefCell<HashMap<TopicPartition, Vec<Weak<Waiter>>>>,
    /// Followers' waits again, woken also when a leader's group commit
    /// starts its write (`in_flight_appends`): a consumer's could read
    /// nothing new then.
    followers: RefCell<HashMap<TopicPartition, Vec<Weak<Waiter>>>>,
    /// Followers' fetches parked on this shard (the connection's), by
    /// follower broker: woken when an image gives that follower a partition
    /// on this leader (`follower_gains`), which the parked fetch lacks.
    gains: RefCell<HashMap<i32, Vec<Weak<Waiter>>>>,
}

/// Completes on the next notification of any partition it was registered
/// on. Dropping it unregisters it.
pub struct AppendWait {
    waiter: Rc<Waiter>,
}

impl Future for AppendWait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.waiter.woken.get() {
            return Poll::Ready(());
        }
        *self.waiter.waker.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    }
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
        Self::wake_all(&self.waiters, tp);
    }

    /// Wakes the followers' fetches waiting on `tp`: a group commit
    /// started its write, and they may fetch it now.
    pub fn notify_followers(&self, tp: &TopicPartition) {
        Self::wake_all(&self.followers, tp);
    }

    /// Wakes the fetches of `follower` parked on this shard: an image gave
    /// it a partition on this leader.
    pub fn notify_gain(&self, follower: i32) {
        Self::wake_all(&self.gains, &follower);
    }

    fn wake_all<K: Hash + Eq>(registry: &RefCell<HashMap<K, Vec<Weak<Waiter>>>>, key: &K) {
        // Taken out before waking: a woken task runs later, never inside
        // this call, but the borrow must not outlive the removal anyway.
        let list = registry.borrow_mut().remove(key);
        for waiter in list.into_iter().flatten() {
            // A wait that ended is gone already.
            if let Some(w) = waiter.upgrade() {
                w.wake();
            }
        }
    }

    /// A wait that completes on the next notification of any of `tps`. Take
    /// it before checking whether there is news, so that a notification
    /// between the check and the wait is not missed.
    pub fn register(&self, tps: &[TopicPartition]) -> AppendWait {
        let waiter = Rc::new(Waiter::default());
        Self::add(&self.waiters, tps, &waiter);
        AppendWait { waiter }
    }

    /// A follower's wait: as [`AppendWaiters::register`], and woken by
    /// [`AppendWaiters::notify_followers`] too.
    pub fn register_follower(&self, tps: &[TopicPartition]) -> AppendWait {
        let waiter = Rc::new(Waiter::default());
        Self::add(&self.waiters, tps, &waiter);
        Self::add(&self.followers, tps, &waiter);
        AppendWait { waiter }
    }

    /// A wait that completes when an image gives `follower` a partition on
    /// this leader ([`AppendWaiters::notify_gain`]).
    pub fn register_gain(&self, follower: i32) -> AppendWait {
        let waiter = Rc::new(Waiter::default());
        Self::add(&self.gains, &[follower], &waiter);
        AppendWait { waiter }
    }

    fn add<K: Hash + Eq + Clone>(
        registry: &RefCell<HashMap<K, Vec<Weak<Waiter>>>>,
        keys: &[K],
        waiter: &Rc<Waiter>,
    ) {
        let mut waiters = registry.borrow_mut();
        for key in keys {
            let list = waiters.entry(key.clone()).or_default();
            // Sweep the waits that ended, so a list holds only live ones.
            list.retain(|w| w.strong_count() > 0);
            list.push(Rc::downgrade(waiter));
        }
    }

    /// Entries held for `tp`, ended waits not yet swept included.
    #[cfg(test)]
    fn entries(&self, tp: &TopicPartition) -> usize {
        self.waiters.borrow().get(tp).map_or(0, Vec::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn is_ready(wait: &mut AppendWait) -> bool {
        futures_lite::future::block_on(futures_lite::future::poll_once(wait)).is_some()
    }

    #[test]
    fn a_wait_completes_on_a_notification_of_any_of_its_partitions() {
        let w = AppendWaiters::default();
        let mut both = w.register(&[tp(0), tp(1)]);
        let mut other = w.register(&[tp(2)]);
        assert!(!is_ready(&mut both));
        w.notify(&tp(1));
        assert!(is_ready(&mut both));
        assert!(
            !is_ready(&mut other),
            "a notification wakes only its partition's waits"
        );
        // Partition 0's entry for the finished wait is swept later.
        w.notify(&tp(0));
        w.notify(&tp(2));
        assert!(is_ready(&mut other));
    }

    #[test]
    fn a_write_starting_wakes_only_the_followers() {
        let w = AppendWaiters::default();
        let mut consumer = w.register(&[tp(0)]);
        let mut follower = w.register_follower(&[tp(0)]);
        w.notify_followers(&tp(0));
        assert!(is_ready(&mut follower));
        assert!(!is_ready(&mut consumer));
        let mut follower = w.register_follower(&[tp(0)]);
        w.notify(&tp(0));
        assert!(is_ready(&mut consumer) && is_ready(&mut follower));
    }

    #[test]
    fn a_gain_wakes_only_that_followers_waits() {
        let w = AppendWaiters::default();
        let mut two = w.register_gain(2);
        let mut three = w.register_gain(3);
        let mut fetch = w.register_follower(&[tp(0)]);
        w.notify_gain(2);
        assert!(is_ready(&mut two));
        assert!(!is_ready(&mut three) && !is_ready(&mut fetch));
    }

    #[test]
    fn waits_that_end_unnotified_do_not_pile_up() {
        // An idle partition: followers and consumers wait on it and time
        // out, again and again, and nothing is ever appended to it.
        let w = AppendWaiters::default();
        for _ in 0..10_000 {
            let mut wait = w.register(&[tp(0), tp(1)]);
            assert!(!is_ready(&mut wait));
            drop(wait);
        }
        assert_eq!(
            w.entries(&tp(0)),
            1,
            "only the last ended wait, not yet swept"
        );
        assert_eq!(w.entries(&tp(1)), 1);
        let live: Vec<AppendWait> = (0..3).map(|_| w.register(&[tp(0)])).collect();
        assert_eq!(w.entries(&tp(0)), 3);
        drop(live);
        w.notify(&tp(0));
        assert_eq!(w.entries(&tp(0)), 0);
    }
}
