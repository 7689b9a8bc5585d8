//! Client quotas on the broker: each shard meters produce and fetch bytes
//! per quota entity and answers a client over its quota with
//! `throttle_time_ms`, then mutes its connection for that long (KIP-219).
//!
//! Metering across shards: a client's connections may land on different
//! shards, and its quota is the broker's, as in Kafka. The meters live in
//! one broker-wide registry of [`QuotaBucket`]s; a shard looks a meter up
//! once, under the registry's lock, and keeps it in its own map, so a
//! request costs a local lookup and one compare-and-swap: no lock, no
//! message between shards, and no byte lost. Every shard sees the others'
//! bytes as soon as they are recorded, so the sharing is exact; what it
//! costs is the atomic's cache line moving between the cores involved.
//!
//! Which meter: the entity that [`resolve`] matched, with a `<default>`
//! part replaced by the client's own user or client id, as Kafka's
//! default quota callback tags its sensors: a default quota applies to
//! each user (or client id) on its own, not to all of them together.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::metadata::image::MetadataImage;
use crate::quota::{resolve, EntityName, QuotaBucket, QuotaEntity};
use crate::shard::shard::Shard;

/// Meters the registry keeps before it drops idle ones (no bytes in the
/// quota window), so that a stream of new client ids cannot grow it
/// without bound.
const METERS_BEFORE_PRUNE: usize = 10_000;

type MeterKey = (QuotaEntity, &'static str);

/// The broker's meters, shared by its shards.
#[derive(Default)]
pub struct QuotaRegistry {
    meters: Mutex<HashMap<MeterKey, Arc<QuotaBucket>>>,
}

impl QuotaRegistry {
    fn meter(&self, key: &MeterKey, now_ms: i64) -> Arc<QuotaBucket> {
        let mut meters = self.meters.lock().unwrap_or_else(|p| p.into_inner());
        if meters.len() >= METERS_BEFORE_PRUNE && !meters.contains_key(key) {
            meters.retain(|_, m| m.wait(now_ms) > 0 || Arc::strong_count(m) > 1);
        }
        meters.entry(key.clone()).or_default().clone()
    }
}

/// A shard's view of the registry: the meters it has used.
pub struct ShardQuotas {
    registry: Arc<QuotaRegistry>,
    local: RefCell<HashMap<MeterKey, Arc<QuotaBucket>>>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl ShardQuotas {
    pub fn new(registry: Arc<QuotaRegistry>) -> ShardQuotas {
        ShardQuotas {
            registry,
            local: RefCell::new(HashMap::new()),
        }
    }

    /// The shard's quotas; `None` on a shard that installed none (a test's).
    pub fn of(shard: &Shard) -> Option<Rc<ShardQuotas>> {
        shard.extension::<ShardQuotas>()
    }

    /// The meter and quota of `key` for the client; `None` when no quota
    /// applies.
    fn meter(
        &self,
        image: &MetadataImage,
        principal: &str,
        client_id: &str,
        key: &'static str,
        now: i64,
    ) -> Option<(Arc<QuotaBucket>, f64)> {
        if image.client_quotas.is_empty() {
            return None;
        }
        let user = principal.strip_prefix("User:").unwrap_or(principal);
        let (entity, quota) = resolve(&image.client_quotas, user, client_id, key)?;
        // A default part meters each client on its own.
        let own = |part: Option<EntityName>, name: &str| {
            part.map(|p| match p {
                EntityName::Default => EntityName::Named(name.to_string()),
                named => named,
            })
        };
        let meter_key = (
            QuotaEntity {
                user: own(entity.user, user),
                client_id: own(entity.client_id, client_id),
            },
            key,
        );
        let mut local = self.local.borrow_mut();
        if let Some(m) = local.get(&meter_key) {
            return Some((m.clone(), quota));
        }
        let m = self.registry.meter(&meter_key, now);
        if local.len() >= METERS_BEFORE_PRUNE {
            local.clear();
        }
        local.insert(meter_key, m.clone());
        Some((m, quota))
    }

    /// Records `bytes` of `key` (a byte-rate quota) for the client and
    /// returns how long it must wait; zero when no quota applies.
    pub fn record(
        &self,
        image: &MetadataImage,
        principal: &str,
        client_id: &str,
        key: &'static str,
        bytes: u64,
    ) -> Duration {
        let now = now_ms();
        let Some((meter, quota)) = self.meter(image, principal, client_id, key, now) else {
            return Duration::ZERO;
        };
        Duration::from_millis(meter.charge(now, bytes, quota) as u64)
    }

    /// How long the client must still wait before its `key` quota allows
    /// more, recording nothing: a consumer over its quota gets an empty
    /// fetch, as Kafka answers it, so that it reads only while within.
    pub fn pending_throttle(
        &self,
        image: &MetadataImage,
        principal: &str,
        client_id: &str,
        key: &'static str,
    ) -> Duration {
        let now = now_ms();
        let Some((meter, _)) = self.meter(image, principal, client_id, key, now) else {
            return Duration::ZERO;
        };
        Duration::from_millis(meter.wait(now) as u64)
    }

    /// Records the bytes a consumer's fetch returned and returns the exact
    /// wait before it is within its quota again.
    pub fn record_fetched(
        &self,
        image: &MetadataImage,
        principal: &str,
        client_id: &str,
        key: &'static str,
        bytes: u64,
    ) -> Duration {
        let now = now_ms();
        let Some((meter, quota)) = self.meter(image, principal, client_id, key, now) else {
            return Duration::ZERO;
        };
        Duration::from_millis(meter.charge(now, bytes, quota) as u64)
    }
}
