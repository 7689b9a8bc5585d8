//! Client quotas (KIP-13, KIP-219, KIP-546): which quota applies to a
//! request, how fast its client has gone, and how long it must wait.
//!
//! - [`QuotaEntity`]: a user, a client id, or both, each a name or
//!   `<default>`; the metadata image keeps each entity's values by key.
//! - [`resolve`]: Kafka's eight levels of precedence, from the most
//!   specific (this user and this client id) to the least (the default
//!   client id). The level that matched is also what shares the quota:
//!   every client that resolves to the same entity meters together.
//! - [`SharedRate`]: a windowed rate that the shards of a broker record
//!   into together, with atomic adds and no lock, so a user whose
//!   connections land on several shards has one quota on the broker.
//! - [`throttle_time_ms`]: Kafka's delay for a client over its quota.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

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

/// A rate over [`QUOTA_WINDOW_NUM`] samples of [`QUOTA_WINDOW_SIZE_MS`],
/// recorded into by several threads at once: each sample is a start time
/// and an atomic sum. A sample found to be from an older window is reset
/// by whoever gets there first (a compare-and-swap on its start); a byte
/// count recorded by a racing thread in the instant of the reset may be
/// lost, which is the whole of the sharing's inexactness.
pub struct SharedRate {
    starts: [AtomicI64; QUOTA_WINDOW_NUM],
    sums: [AtomicU64; QUOTA_WINDOW_NUM],
}

impl Default for SharedRate {
    fn default() -> Self {
        SharedRate {
            starts: std::array::from_fn(|_| AtomicI64::new(i64::MIN)),
            sums: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl SharedRate {
    fn sample_of(now_ms: i64) -> (usize, i64) {
        let window = now_ms.div_euclid(QUOTA_WINDOW_SIZE_MS);
        (
            window.rem_euclid(QUOTA_WINDOW_NUM as i64) as usize,
            window * QUOTA_WINDOW_SIZE_MS,
        )
    }

    /// Adds `amount` at `now_ms`.
    pub fn record(&self, now_ms: i64, amount: u64) {
        let (i, start) = Self::sample_of(now_ms);
        let seen = self.starts[i].load(Ordering::Acquire);
        if seen != start
            && self.starts[i]
                .compare_exchange(seen, start, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            self.sums[i].store(0, Ordering::Release);
        }
        self.sums[i].fetch_add(amount, Ordering::AcqRel);
    }

    /// The rate per second at `now_ms`, and the span it is measured over:
    /// the samples still inside the window, over the time from the oldest
    /// of them to now (at least the window minus one sample, as Kafka's
    /// `Rate` measures, so that a new client's first burst is not divided
    /// by a few milliseconds).
    pub fn rate(&self, now_ms: i64) -> (f64, i64) {
        let (_, current_start) = Self::sample_of(now_ms);
        let oldest_allowed = current_start - (QUOTA_WINDOW_NUM as i64 - 1) * QUOTA_WINDOW_SIZE_MS;
        let mut total = 0u64;
        let mut oldest = current_start;
        for i in 0..QUOTA_WINDOW_NUM {
            let start = self.starts[i].load(Ordering::Acquire);
            if start >= oldest_allowed && start <= current_start {
                total += self.sums[i].load(Ordering::Acquire);
                oldest = oldest.min(start);
            }
        }
        let span = (now_ms - oldest)
            .max((QUOTA_WINDOW_NUM as i64 - 1) * QUOTA_WINDOW_SIZE_MS)
            .max(1);
        (total as f64 * 1000.0 / span as f64, span)
    }

    /// Records `amount` and returns the throttle against `quota`.
    pub fn record_and_throttle(&self, now_ms: i64, amount: u64, quota: f64) -> i64 {
        self.record(now_ms, amount);
        let (rate, span) = self.rate(now_ms);
        throttle_time_ms(rate, quota, span)
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
    fn a_steady_rate_is_measured_over_the_window_and_old_samples_expire() {
        let r = SharedRate::default();
        // 1,000 bytes every 100 ms for 20 s: 10,000 bytes per second.
        for t in 0..200 {
            r.record(t * 100, 1_000);
        }
        let (rate, span) = r.rate(20_000);
        assert!((rate - 10_000.0).abs() < 1_000.0, "{rate} over {span}");
        // Long after, nothing is left.
        assert_eq!(r.rate(60_000).0, 0.0);
    }

    #[test]
    fn threads_recording_together_share_one_rate() {
        let r = std::sync::Arc::new(SharedRate::default());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let r = r.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000 {
                        r.record(5_000 + i % 1_000, 1);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // All in one sample: nothing lost to resets.
        let (rate, span) = r.rate(5_999);
        assert!((rate * span as f64 / 1000.0 - 40_000.0).abs() < 0.5);
    }
}
