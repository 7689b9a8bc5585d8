//! The shard's replication throttles (Kafka's leader and follower
//! replication quotas, `replica::throttle`): whether a replica's catch-up
//! must wait, and the bytes it moved.
//!
//! The rates are the broker's (its own dynamic setting, else the
//! cluster's), split evenly over the shards: each shard meters the
//! replication of the partitions it owns, as each shard cleans its own
//! partitions with its share of the cleaner's buffers. A replica is
//! throttled only while the topic lists it for this broker and it is out of
//! the ISR, as in Kafka: a replica in the ISR, which acks=all produces wait
//! for, is never held back.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::metadata::image::MetadataImage;
use crate::replica::throttle::{self, ReplicationQuota, ThrottledReplicas};
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// Which side of replication a quota meters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The leader, answering followers' fetches.
    Leader,
    /// The follower, fetching from leaders.
    Follower,
}

impl Side {
    fn rate_setting(self) -> &'static str {
        match self {
            Side::Leader => throttle::LEADER_RATE,
            Side::Follower => throttle::FOLLOWER_RATE,
        }
    }
    fn replicas_setting(self) -> &'static str {
        match self {
            Side::Leader => throttle::LEADER_REPLICAS,
            Side::Follower => throttle::FOLLOWER_REPLICAS,
        }
    }
}

pub struct ReplicationQuotas {
    /// The broker's shards, which share its rates evenly.
    shards: usize,
    leader: RefCell<ReplicationQuota>,
    follower: RefCell<ReplicationQuota>,
    /// Parsed replica lists by (topic, side), with the text they came from.
    lists: RefCell<HashMap<(String, bool), (String, ThrottledReplicas)>>,
}

impl ReplicationQuotas {
    pub fn of(shard: &Shard) -> Rc<ReplicationQuotas> {
        if let Some(q) = shard.extension::<ReplicationQuotas>() {
            return q;
        }
        let q = Rc::new(ReplicationQuotas {
            shards: shard.shard_count().max(1),
            leader: RefCell::default(),
            follower: RefCell::default(),
            lists: RefCell::default(),
        });
        shard.set_extension(q.clone());
        q
    }

    fn quota(&self, side: Side) -> &RefCell<ReplicationQuota> {
        match side {
            Side::Leader => &self.leader,
            Side::Follower => &self.follower,
        }
    }

    /// Whether the topic lists `tp`'s replica on broker `local` for `side`.
    pub fn is_listed(
        &self,
        image: &MetadataImage,
        side: Side,
        tp: &TopicPartition,
        local: i32,
    ) -> bool {
        let Some(text) = image
            .topic(&tp.topic)
            .and_then(|t| t.configs.get(side.replicas_setting()))
        else {
            return false;
        };
        let key = (tp.topic.clone(), side == Side::Leader);
        let mut lists = self.lists.borrow_mut();
        let entry = lists
            .entry(key)
            .or_insert_with(|| (String::new(), ThrottledReplicas::None));
        if entry.0 != *text {
            // Validated when it was set; a bad one throttles nothing.
            *entry = (
                text.clone(),
                ThrottledReplicas::parse(text).unwrap_or_default(),
            );
        }
        entry.1.covers(tp.partition, local)
    }

    /// Whether `tp`'s replication must wait on `side` now: the topic lists
    /// it for broker `local`, the replica is out of the ISR, and the
    /// shard's share of the broker's rate is used up.
    pub fn must_wait(
        &self,
        image: &MetadataImage,
        side: Side,
        tp: &TopicPartition,
        local: i32,
        in_isr: bool,
        now_ms: i64,
    ) -> bool {
        if in_isr || !self.is_listed(image, side, tp, local) {
            return false;
        }
        let limit = image
            .broker_setting(local, side.rate_setting())
            .and_then(|v| throttle::parse_rate(v).ok().flatten())
            .map(|rate| (rate / self.shards as u64).max(1));
        let mut quota = self.quota(side).borrow_mut();
        quota.set_limit(limit);
        quota.is_exceeded(now_ms)
    }

    /// Counts `bytes` of `tp` replicated on `side`, if the topic lists it.
    pub fn record(
        &self,
        image: &MetadataImage,
        side: Side,
        tp: &TopicPartition,
        local: i32,
        bytes: u64,
        now_ms: i64,
    ) {
        if bytes > 0 && self.is_listed(image, side, tp, local) {
            self.quota(side).borrow_mut().record(bytes, now_ms);
        }
    }
}
