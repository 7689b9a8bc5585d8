//! KIP-599's controller mutation quota as one request meets it: Kafka's
//! `StrictControllerMutationQuota` and `PermissiveControllerMutationQuota`.
//!
//! CreateTopics, CreatePartitions and DeleteTopics charge each topic, in
//! request order, with the partitions it creates, adds or deletes.
//!
//! - **Strict** (CreateTopics v6+, CreatePartitions v3+, DeleteTopics
//!   v5+): a topic is accepted whenever the client is not already in debt,
//!   however far its partitions take it; once in debt, every further topic
//!   is refused with THROTTLING_QUOTA_EXCEEDED and the time until the
//!   debt is paid. An accepted request is not throttled: the next one is.
//! - **Permissive** (older versions, whose clients do not know the
//!   error): every topic is accepted and charged, and the response is
//!   throttled by the debt the request left.

use std::sync::Arc;

use super::{QuotaBucket, CONTROLLER_MUTATION_SHAPE};

/// The versions from which each API answers THROTTLING_QUOTA_EXCEEDED
/// (Kafka's `strictSinceVersion`).
pub const CREATE_TOPICS_STRICT_SINCE_VERSION: i16 = 6;
pub const CREATE_PARTITIONS_STRICT_SINCE_VERSION: i16 = 3;
pub const DELETE_TOPICS_STRICT_SINCE_VERSION: i16 = 5;

/// One request's view of its client's mutation quota.
pub struct MutationQuota {
    /// The client's bucket and rate (partitions per second); `None` when
    /// no quota applies.
    meter: Option<(Arc<QuotaBucket>, f64)>,
    strict: bool,
    /// The longest throttle the request met, in ms.
    throttle_ms: i64,
}

impl MutationQuota {
    /// No quota: everything is accepted.
    pub fn unbounded() -> MutationQuota {
        MutationQuota {
            meter: None,
            strict: false,
            throttle_ms: 0,
        }
    }

    /// The quota of `rate` partitions per second kept in `bucket`, strict
    /// or permissive by the request's version.
    pub fn new(bucket: Arc<QuotaBucket>, rate: f64, strict: bool) -> MutationQuota {
        assert!(rate > 0.0 && rate.is_finite(), "a mutation rate of {rate}");
        MutationQuota {
            meter: Some((bucket, rate)),
            strict,
            throttle_ms: 0,
        }
    }

    /// Charges one topic's `partitions` at `now_ms`; `Err` with the
    /// throttle time when a strict quota refuses it.
    pub fn record(&mut self, now_ms: i64, partitions: u64) -> Result<(), i64> {
        let Some((bucket, rate)) = &self.meter else {
            return Ok(());
        };
        let shape = CONTROLLER_MUTATION_SHAPE;
        if !self.strict {
            let wait = bucket.charge(now_ms, partitions, *rate, shape);
            self.throttle_ms = self.throttle_ms.max(wait);
            return Ok(());
        }
        match bucket.charge_unless_in_debt(now_ms, partitions, *rate, shape) {
            Ok(_) => Ok(()),
            Err(wait) => {
                self.throttle_ms = self.throttle_ms.max(wait);
                Err(wait)
            }
        }
    }

    /// Gives back a topic's charge when the controller refused the topic
    /// for another reason: Kafka charges only topics that pass every
    /// other check.
    pub fn refund(&self, partitions: u64) {
        if let Some((bucket, rate)) = &self.meter {
            bucket.refund(partitions, *rate);
        }
    }

    /// The response's throttle time: the longest the request met.
    pub fn throttle_time_ms(&self) -> i32 {
        self.throttle_ms.clamp(0, i32::MAX as i64) as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_refuses_in_debt_and_throttles_only_refusals() {
        let b = Arc::new(QuotaBucket::default());
        let mut q = MutationQuota::new(b.clone(), 1.0, true);
        // 11 in the bucket: a topic of 20 overshoots once, unthrottled.
        assert_eq!(q.record(0, 20), Ok(()));
        assert_eq!(q.throttle_time_ms(), 0);
        assert_eq!(q.record(0, 1), Err(9_000));
        assert_eq!(q.record(500, 1), Err(8_500));
        assert_eq!(q.throttle_time_ms(), 9_000);
        // Refunded, the 20 never happened: the next topic fits.
        q.refund(20);
        let mut next = MutationQuota::new(b, 1.0, true);
        assert_eq!(next.record(500, 1), Ok(()));
    }

    #[test]
    fn permissive_accepts_everything_and_throttles_the_debt() {
        let b = Arc::new(QuotaBucket::default());
        let mut q = MutationQuota::new(b, 2.0, false);
        assert_eq!(q.record(0, 20), Ok(()));
        assert_eq!(q.throttle_time_ms(), 0);
        // 22 in the bucket, 26 taken: 4 owed at 2 a second.
        assert_eq!(q.record(0, 6), Ok(()));
        assert_eq!(q.throttle_time_ms(), 2_000);
        let mut none = MutationQuota::unbounded();
        assert_eq!(none.record(0, 1_000_000), Ok(()));
        assert_eq!(none.throttle_time_ms(), 0);
    }
}
