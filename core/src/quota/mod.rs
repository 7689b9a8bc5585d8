//! Client quotas (KIP-13, KIP-219, KIP-546): which quota applies to a
//! request, how fast its client has gone, and how long it must wait.
//!
//! - [`QuotaEntity`]: a user, a client id, or both, each a name or
//!   `<default>`; the metadata image keeps each entity's values by key.
//! - [`resolve`]: Kafka's eight levels of precedence, from the most
//!   specific (this user and this client id) to the least (the default
//!   client id). The level that matched is also what shares the quota:
//!   every client that resolves to the same entity meters together.
//! - [`QuotaBucket`]: a token bucket that the shards of a broker charge
//!   together, with one atomic compare-and-swap and no lock, so a user
//!   whose connections land on several shards has one quota on the broker.
//! - [`throttle_time_ms`]: Kafka's delay for a client over its quota.
//! - [`mutation::MutationQuota`]: KIP-599's strict and permissive
//!   controller mutation quota, as one request charges it topic by topic.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};

pub mod entity;
pub mod mutation;

pub use entity::{EntityName, QuotaEntity, CLIENT_ID, USER};

/// `producer_byte_rate`: bytes per second a producer may append.
pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
/// `consumer_byte_rate`: bytes per second a consumer may fetch.
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
/// `request_percentage`: a share of one request-handling thread's time.
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
/// `controller_mutation_rate`: topic and partition creations and deletions
/// per second (KIP-599).
pub const CONTROLLER_MUTATION_RATE: &str = "controller_mutation_rate";
/// The keys AlterClientQuotas accepts for user and client-id entities.
pub const QUOTA_KEYS: [&str; 4] = [
    PRODUCER_BYTE_RATE,
    CONSUMER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    CONTROLLER_MUTATION_RATE,
];

/// Kafka's `quota.window.num` default: samples a rate is measured over.
pub const QUOTA_WINDOW_NUM: usize = 11;
/// Kafka's `quota.window.size.seconds` default: the length of one sample.
pub const QUOTA_WINDOW_SIZE_MS: i64 = 1_000;
/// Kafka caps a throttle at the time a quota window lasts
/// (`ClientQuotaManager.maxThrottleTimeMs`), so that a burst is paid for
/// within one window.
pub const MAX_THROTTLE_TIME_MS: i64 = QUOTA_WINDOW_NUM as i64 * QUOTA_WINDOW_SIZE_MS;

/// A quota's value. Compared by its bits, so that records and images stay
/// `Eq` (a value is never NaN: AlterClientQuotas refuses it).
#[derive(Debug, Clone, Copy)]
pub struct QuotaValue(pub f64);

impl PartialEq for QuotaValue {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for QuotaValue {}

/// How far ahead of its quota's pace a client may run: one second's worth
/// (Kafka's `quota.window.size.seconds`) at once.
pub const QUOTA_BURST_MS: i64 = 1_000;

/// The quota values configured for every entity, as the image keeps them.
pub type QuotaConfigs = BTreeMap<QuotaEntity, BTreeMap<String, QuotaValue>>;

/// The entity whose `key` quota applies to `user` (the principal's name)
/// and `client_id`, and its value, by Kafka's precedence:
///
/// 1. this user and this client id;
/// 2. this user, the default client id;
/// 3. this user;
/// 4. the default user, this client id;
/// 5. the default user, the default client id;
/// 6. the default user;
/// 7. this client id;
/// 8. the default client id.
///
/// An entity with no value for `key` does not match at its level.
pub fn resolve(
    configs: &QuotaConfigs,
    user: &str,
    client_id: &str,
    key: &str,
) -> Option<(QuotaEntity, f64)> {
    use EntityName::{Default, Named};
    let u = || Named(user.to_string());
    let c = || Named(client_id.to_string());
    let levels = [
        QuotaEntity::user_client(u(), c()),
        QuotaEntity::user_client(u(), Default),
        QuotaEntity::user(u()),
        QuotaEntity::user_client(Default, c()),
        QuotaEntity::user_client(Default, Default),
        QuotaEntity::user(Default),
        QuotaEntity::client(c()),
        QuotaEntity::client(Default),
    ];
    levels.into_iter().find_map(|entity| {
        let value = configs.get(&entity)?.get(key)?.0;
        Some((entity, value))
    })
}

/// Kafka's throttle for a client whose rate over `window_ms` is `observed`
/// against a `quota` (both per second): the time that brings the rate
/// back to the quota, `(observed - quota) / quota * window`, capped at
/// [`MAX_THROTTLE_TIME_MS`]; 0 when within the quota.
pub fn throttle_time_ms(observed: f64, quota: f64, window_ms: i64) -> i64 {
    if quota <= 0.0 || observed <= quota || !observed.is_finite() {
        return 0;
    }
    let ms = (observed - quota) / quota * window_ms as f64;
    (ms.round() as i64).clamp(0, MAX_THROTTLE_TIME_MS)
}

/// Kafka's `controller.quota.window.num` default: the samples of a
/// controller mutation quota.
pub const CONTROLLER_QUOTA_WINDOW_NUM: i64 = 11;
/// Kafka's `controller.quota.window.size.seconds` default, in ms.
pub const CONTROLLER_QUOTA_WINDOW_SIZE_MS: i64 = 1_000;

/// The thread time a `request_percentage` of 1 allows per second, in ns
/// (a short request takes about a microsecond, so whole microseconds
/// would round it away): a quota of 100 is one thread's worth, 200 two
/// threads' (KIP-124).
pub const REQUEST_TIME_NS_PER_PERCENT: f64 = 1e9 / 100.0;

/// How far a bucket lets a client run ahead of its quota, and the
/// longest it makes it wait at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketShape {
    pub burst_ms: i64,
    pub throttle_max_ms: i64,
}

/// The byte rates: a second's worth ahead, and Kafka's cap of the whole
/// quota window (`ClientQuotaManager.maxThrottleTimeMs`).
pub const BYTE_RATE_SHAPE: BucketShape = BucketShape {
    burst_ms: QUOTA_BURST_MS,
    throttle_max_ms: MAX_THROTTLE_TIME_MS,
};

/// `request_percentage`: a second's worth ahead; Kafka's
/// `ClientRequestQuotaManager` caps a throttle at one window
/// (`quota.window.size.seconds`), so that a client that overran once
/// waits at most a second per request while it pays.
pub const REQUEST_SHAPE: BucketShape = BucketShape {
    burst_ms: QUOTA_BURST_MS,
    throttle_max_ms: QUOTA_WINDOW_SIZE_MS,
};

/// `controller_mutation_rate`: Kafka's `TokenBucket` holds
/// `controller.quota.window.num x controller.quota.window.size.seconds`
/// of the rate (11 mutations at a quota of 1/s), and its throttle is the
/// whole debt, uncapped (`ControllerMutationQuotaManager.throttleTimeMs`):
/// a request may overshoot once by any amount, and then pays it all.
pub const CONTROLLER_MUTATION_SHAPE: BucketShape = BucketShape {
    burst_ms: CONTROLLER_QUOTA_WINDOW_NUM * CONTROLLER_QUOTA_WINDOW_SIZE_MS,
    throttle_max_ms: i32::MAX as i64,
};

/// The shape of the bucket that meters `key`.
pub fn bucket_shape(key: &str) -> BucketShape {
    match key {
        REQUEST_PERCENTAGE => REQUEST_SHAPE,
        CONTROLLER_MUTATION_RATE => CONTROLLER_MUTATION_SHAPE,
        _ => BYTE_RATE_SHAPE,
    }
}

/// The rate, per second, at which a bucket of `key` with the quota
/// `value` is paid: bytes for the byte rates, µs of thread time for
/// `request_percentage`, partitions for `controller_mutation_rate`.
pub fn metered_rate(key: &str, value: f64) -> f64 {
    match key {
        REQUEST_PERCENTAGE => value * REQUEST_TIME_NS_PER_PERCENT,
        _ => value,
    }
}

/// A client's quota meter, shared by every shard of the broker: the
/// generic cell rate algorithm (a token bucket kept as one time). `paid_until`
/// is when everything recorded would be paid for at the quota's rate; a
/// client may run ahead of it by its shape's burst (a second's worth of
/// its quota at once for the client quotas), and past that waits the
/// difference.
///
/// It is Kafka's `TokenBucket` exactly: the tokens Kafka counts are
/// `rate x (now - max(paid_until, now - burst))`, so "in debt" (fewer than
/// no tokens) is `paid_until > now`, and Kafka's throttle, the debt over
/// the rate, is `paid_until - now`.
///
/// Recording is one compare-and-swap loop on one atomic, so shards record
/// into the same meter without a lock and without losing a byte. Unlike
/// Kafka's eleven one-second samples, whose ten-second minimum span lets a
/// throttled client send ten seconds' worth at once every eleven seconds,
/// the bucket holds the client to its rate smoothly.
pub struct QuotaBucket {
    /// Microseconds since the epoch.
    paid_until_us: AtomicI64,
}

impl Default for QuotaBucket {
    fn default() -> Self {
        QuotaBucket {
            paid_until_us: AtomicI64::new(i64::MIN / 2),
        }
    }
}

impl QuotaBucket {
    /// Records `amount` at `now_ms` against `quota` (per second) and
    /// returns how long the client must wait, in ms.
    pub fn charge(&self, now_ms: i64, amount: u64, quota: f64, shape: BucketShape) -> i64 {
        match self.charge_if(now_ms, amount, quota, shape, |_| true) {
            Ok(wait) | Err(wait) => wait,
        }
    }

    /// Kafka's strict quota (`StrictControllerMutationQuota`): records
    /// `amount` only if the client is not already in debt, however far
    /// the amount takes it; `Ok` with the wait after it, or `Err` with the
    /// wait before anything is accepted.
    pub fn charge_unless_in_debt(
        &self,
        now_ms: i64,
        amount: u64,
        quota: f64,
        shape: BucketShape,
    ) -> Result<i64, i64> {
        let now_us = now_ms.saturating_mul(1000);
        self.charge_if(now_ms, amount, quota, shape, |seen| seen <= now_us)
    }

    /// Gives back what [`QuotaBucket::charge`] took for `amount`: a
    /// mutation charged before the controller refused it.
    pub fn refund(&self, amount: u64, quota: f64) {
        self.paid_until_us
            .fetch_sub(Self::cost_us(amount, quota), Ordering::AcqRel);
    }

    fn cost_us(amount: u64, quota: f64) -> i64 {
        if quota > 0.0 {
            ((amount as f64) * 1e6 / quota).min(i64::MAX as f64 / 4.0) as i64
        } else {
            0
        }
    }

    fn charge_if(
        &self,
        now_ms: i64,
        amount: u64,
        quota: f64,
        shape: BucketShape,
        admit: impl Fn(i64) -> bool,
    ) -> Result<i64, i64> {
        let now_us = now_ms.saturating_mul(1000);
        let cost_us = Self::cost_us(amount, quota);
        let mut seen = self.paid_until_us.load(Ordering::Acquire);
        loop {
            if !admit(seen) {
                return Err(Self::wait_ms(seen, now_us, shape));
            }
            let paid_until = seen
                .max(now_us - shape.burst_ms * 1000)
                .saturating_add(cost_us);
            match self.paid_until_us.compare_exchange_weak(
                seen,
                paid_until,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(Self::wait_ms(paid_until, now_us, shape)),
                Err(current) => seen = current,
            }
        }
    }

    /// How long, from `now_ms`, until the client is within its quota
    /// again; 0 when it is.
    pub fn wait(&self, now_ms: i64, shape: BucketShape) -> i64 {
        Self::wait_ms(
            self.paid_until_us.load(Ordering::Acquire),
            now_ms.saturating_mul(1000),
            shape,
        )
    }

    fn wait_ms(paid_until_us: i64, now_us: i64, shape: BucketShape) -> i64 {
        // Rounded up: a client told to wait 0 ms while in debt would
        // come back at once and be refused again.
        let debt_us = paid_until_us.saturating_sub(now_us).max(0);
        ((debt_us + 999) / 1000).clamp(0, shape.throttle_max_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EntityName::{Default, Named};

    const BYTE: BucketShape = BYTE_RATE_SHAPE;

    fn named(s: &str) -> EntityName {
        Named(s.to_string())
    }

    #[test]
    fn the_eight_levels_apply_in_kafkas_order() {
        let levels = [
            QuotaEntity::user_client(named("alice"), named("app")),
            QuotaEntity::user_client(named("alice"), Default),
            QuotaEntity::user(named("alice")),
            QuotaEntity::user_client(Default, named("app")),
            QuotaEntity::user_client(Default, Default),
            QuotaEntity::user(Default),
            QuotaEntity::client(named("app")),
            QuotaEntity::client(Default),
        ];
        // With every level set, each level wins once all before it go.
        let mut configs = QuotaConfigs::new();
        for (i, e) in levels.iter().enumerate() {
            configs
                .entry(e.clone())
                .or_default()
                .insert(PRODUCER_BYTE_RATE.into(), QuotaValue((i + 1) as f64));
        }
        for (i, e) in levels.iter().enumerate() {
            let (entity, value) = resolve(&configs, "alice", "app", PRODUCER_BYTE_RATE).unwrap();
            assert_eq!((&entity, value), (e, (i + 1) as f64));
            configs.remove(e);
        }
        assert!(resolve(&configs, "alice", "app", PRODUCER_BYTE_RATE).is_none());
    }

    #[test]
    fn another_key_or_another_user_does_not_match() {
        let mut configs = QuotaConfigs::new();
        configs
            .entry(QuotaEntity::user(named("alice")))
            .or_default()
            .insert(CONSUMER_BYTE_RATE.into(), QuotaValue(100.0));
        assert!(resolve(&configs, "alice", "x", PRODUCER_BYTE_RATE).is_none());
        assert!(resolve(&configs, "bob", "x", CONSUMER_BYTE_RATE).is_none());
        assert_eq!(
            resolve(&configs, "alice", "x", CONSUMER_BYTE_RATE).map(|(_, v)| v),
            Some(100.0)
        );
    }

    #[test]
    fn throttle_is_kafkas_formula_capped() {
        assert_eq!(throttle_time_ms(100.0, 100.0, 10_000), 0);
        assert_eq!(throttle_time_ms(50.0, 100.0, 10_000), 0);
        assert_eq!(throttle_time_ms(150.0, 100.0, 10_000), 5_000);
        assert_eq!(throttle_time_ms(1e9, 1.0, 10_000), MAX_THROTTLE_TIME_MS);
    }

    #[test]
    fn a_client_runs_a_second_ahead_then_waits_what_it_owes() {
        let b = QuotaBucket::default();
        let quota = 1_000.0;
        // A second's worth at once is free.
        assert_eq!(b.charge(10_000, 1_000, quota, BYTE), 0);
        // Another second's worth owes a second.
        assert_eq!(b.charge(10_000, 1_000, quota, BYTE), 1_000);
        assert_eq!(b.wait(10_000, BYTE), 1_000);
        assert_eq!(b.wait(10_500, BYTE), 500);
        assert_eq!(b.wait(11_000, BYTE), 0);
        // Idle time earns no more than the burst.
        assert_eq!(b.charge(100_000, 1_500, quota, BYTE), 500);
    }

    #[test]
    fn a_steady_client_is_held_to_its_quota() {
        let b = QuotaBucket::default();
        let quota = 10_000.0;
        // Send 4,000 bytes whenever allowed, for 60 s.
        let (mut now, mut sent) = (0i64, 0u64);
        while now < 60_000 {
            sent += 4_000;
            now += b.charge(now, 4_000, quota, BYTE).max(1);
        }
        let rate = sent as f64 * 1000.0 / now as f64;
        assert!((rate - quota).abs() < 0.05 * quota, "{rate}");
    }

    #[test]
    fn threads_charging_together_lose_nothing() {
        let b = std::sync::Arc::new(QuotaBucket::default());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        b.charge(0, 1, 1_000.0, BYTE);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // 40,000 bytes at 1,000 per second, a second of it free: 39 s.
        assert_eq!(b.wait(0, BYTE), MAX_THROTTLE_TIME_MS.min(39_000));
    }

    #[test]
    fn a_strict_quota_takes_one_overshoot_then_refuses_until_paid() {
        // KIP-599 at 1 partition a second: 11 in the bucket at first.
        let b = QuotaBucket::default();
        let (rate, shape) = (1.0, CONTROLLER_MUTATION_SHAPE);
        assert_eq!(b.charge_unless_in_debt(0, 10, rate, shape), Ok(0));
        // Not in debt with one token left: 5 more are taken, 4 owed.
        assert_eq!(b.charge_unless_in_debt(0, 5, rate, shape), Ok(4_000));
        // In debt: refused, with the time until it is not.
        assert_eq!(b.charge_unless_in_debt(1_000, 1, rate, shape), Err(3_000));
        assert_eq!(b.charge_unless_in_debt(3_999, 1, rate, shape), Err(1));
        assert_eq!(b.charge_unless_in_debt(4_000, 1, rate, shape), Ok(1_000));
        // A refund gives the partition back.
        b.refund(1, rate);
        assert_eq!(b.wait(4_000, shape), 0);
    }

    #[test]
    fn a_strict_quota_holds_a_creating_loop_to_its_rate() {
        let b = QuotaBucket::default();
        let (rate, shape) = (2.0, CONTROLLER_MUTATION_SHAPE);
        // One partition whenever allowed, retried every 10 ms, for 60 s.
        let (mut now, mut accepted) = (0i64, 0u64);
        while now < 60_000 {
            if b.charge_unless_in_debt(now, 1, rate, shape).is_ok() {
                accepted += 1;
            }
            now += 10;
        }
        // The burst (22), then 2 a second, overshooting by at most one.
        let most = 22 + 2 * 60 + 1;
        assert!((most - 3..=most).contains(&accepted), "{accepted}");
    }

    #[test]
    fn request_time_is_a_share_of_a_thread_with_kafkas_cap() {
        let b = QuotaBucket::default();
        // 10% of a thread: 100 ms of handling a second, a second ahead.
        let rate = metered_rate(REQUEST_PERCENTAGE, 10.0);
        assert_eq!(rate, 100_000_000.0);
        assert_eq!(bucket_shape(REQUEST_PERCENTAGE), REQUEST_SHAPE);
        assert_eq!(b.charge(0, 100_000_000, rate, REQUEST_SHAPE), 0);
        // 50 ms more owes half a second.
        assert_eq!(b.charge(0, 50_000_000, rate, REQUEST_SHAPE), 500);
        // A long request owes more than a window but waits one at a time.
        assert_eq!(b.charge(0, 1_000_000_000, rate, REQUEST_SHAPE), 1_000);
        assert_eq!(b.wait(9_000, REQUEST_SHAPE), 1_000);
        assert_eq!(b.wait(10_500, REQUEST_SHAPE), 0);
        // The byte rates keep their shape and units.
        assert_eq!(bucket_shape(PRODUCER_BYTE_RATE), BYTE_RATE_SHAPE);
        assert_eq!(metered_rate(CONSUMER_BYTE_RATE, 5.0), 5.0);
    }
}
