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

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};

pub mod entity;

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

/// A client's quota meter, shared by every shard of the broker: the
/// generic cell rate algorithm (a token bucket kept as one time). `paid_until`
/// is when everything recorded would be paid for at the quota's rate; a
/// client may run ahead of it by [`QUOTA_BURST_MS`] (a second's worth of
/// its quota at once), and past that waits the difference.
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
    /// Records `amount` (bytes) at `now_ms` against `quota` (bytes per
    /// second) and returns how long the client must wait, in ms.
    pub fn charge(&self, now_ms: i64, amount: u64, quota: f64) -> i64 {
        let now_us = now_ms.saturating_mul(1000);
        let cost_us = if quota > 0.0 {
            ((amount as f64) * 1e6 / quota).min(i64::MAX as f64 / 4.0) as i64
        } else {
            0
        };
        let mut seen = self.paid_until_us.load(Ordering::Acquire);
        loop {
            let paid_until = seen
                .max(now_us - QUOTA_BURST_MS * 1000)
                .saturating_add(cost_us);
            match self.paid_until_us.compare_exchange_weak(
                seen,
                paid_until,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Self::wait_ms(paid_until, now_us),
                Err(current) => seen = current,
            }
        }
    }

    /// How long, from `now_ms`, until the client is within its quota
    /// again; 0 when it is.
    pub fn wait(&self, now_ms: i64) -> i64 {
        Self::wait_ms(
            self.paid_until_us.load(Ordering::Acquire),
            now_ms.saturating_mul(1000),
        )
    }

    fn wait_ms(paid_until_us: i64, now_us: i64) -> i64 {
        ((paid_until_us - now_us) / 1000).clamp(0, MAX_THROTTLE_TIME_MS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EntityName::{Default, Named};

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
        assert_eq!(b.charge(10_000, 1_000, quota), 0);
        // Another second's worth owes a second.
        assert_eq!(b.charge(10_000, 1_000, quota), 1_000);
        assert_eq!(b.wait(10_000), 1_000);
        assert_eq!(b.wait(10_500), 500);
        assert_eq!(b.wait(11_000), 0);
        // Idle time earns no more than the burst.
        assert_eq!(b.charge(100_000, 1_500, quota), 500);
    }

    #[test]
    fn a_steady_client_is_held_to_its_quota() {
        let b = QuotaBucket::default();
        let quota = 10_000.0;
        // Send 4,000 bytes whenever allowed, for 60 s.
        let (mut now, mut sent) = (0i64, 0u64);
        while now < 60_000 {
            sent += 4_000;
            now += b.charge(now, 4_000, quota).max(1);
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
                        b.charge(0, 1, 1_000.0);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // 40,000 bytes at 1,000 per second, a second of it free: 39 s.
        assert_eq!(b.wait(0), MAX_THROTTLE_TIME_MS.min(39_000));
    }
}
