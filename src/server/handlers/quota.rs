//! Client quotas on the broker: each shard meters produce and fetch bytes,
//! request handling time (`request_percentage`) and topic mutations
//! (`controller_mutation_rate`) per quota entity, and answers a client over
//! its quota with `throttle_time_ms`, then mutes its connection for that
//! long (KIP-219).
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

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::metadata::image::MetadataImage;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::quota::mutation::MutationQuota;
use crate::quota::{
    bucket_shape, metered_rate, resolve, BucketShape, EntityName, QuotaBucket, QuotaEntity,
    CONTROLLER_MUTATION_RATE, QUOTA_KEYS,
};
use crate::server::handlers::access::Access;
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
            meters.retain(|(_, key), m| {
                m.wait(now_ms, bucket_shape(key)) > 0 || Arc::strong_count(m) > 1
            });
        }
        meters.entry(key.clone()).or_default().clone()
    }
}

/// A shard's view of the registry: the meters it has used.
pub struct ShardQuotas {
    registry: Arc<QuotaRegistry>,
    local: RefCell<HashMap<MeterKey, Arc<QuotaBucket>>>,
    /// For the image at this offset, which of [`QUOTA_KEYS`] any entity
    /// sets: a request whose key no entity sets resolves nothing.
    keys_set: Cell<Option<(i64, [bool; QUOTA_KEYS.len()])>>,
}

/// The wall clock quotas are kept in, ms since the epoch: the same on
/// every shard.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl ShardQuotas {
    pub fn new(registry: Arc<QuotaRegistry>) -> ShardQuotas {
        ShardQuotas {
            registry,
            local: RefCell::new(HashMap::new()),
            keys_set: Cell::new(None),
        }
    }

    /// The shard's quotas; `None` on a shard that installed none (a test's).
    pub fn of(shard: &Shard) -> Option<Rc<ShardQuotas>> {
        shard.extension::<ShardQuotas>()
    }

    /// Whether any entity of `image` sets `key`, cached per image.
    fn key_set(&self, image: &MetadataImage, key: &str) -> bool {
        if image.client_quotas.is_empty() {
            return false;
        }
        let Some(index) = QUOTA_KEYS.iter().position(|k| *k == key) else {
            return false;
        };
        let set = match self.keys_set.get() {
            Some((offset, set)) if offset == image.offset => set,
            _ => {
                let set =
                    QUOTA_KEYS.map(|k| image.client_quotas.values().any(|v| v.contains_key(k)));
                self.keys_set.set(Some((image.offset, set)));
                set
            }
        };
        set[index]
    }

    /// The meter of `key` for the client, the rate it is paid at (in the
    /// key's unit per second, [`metered_rate`]) and its shape; `None`
    /// when no quota applies.
    fn meter(
        &self,
        image: &MetadataImage,
        principal: &str,
        client_id: &str,
        key: &'static str,
        now: i64,
    ) -> Option<(Arc<QuotaBucket>, f64, BucketShape)> {
        if !self.key_set(image, key) {
            return None;
        }
        let user = principal.strip_prefix("User:").unwrap_or(principal);
        let (entity, value) = resolve(&image.client_quotas, user, client_id, key)?;
        let (rate, shape) = (metered_rate(key, value), bucket_shape(key));
        if rate <= 0.0 || !rate.is_finite() {
            return None;
        }
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
            return Some((m.clone(), rate, shape));
        }
        let m = self.registry.meter(&meter_key, now);
        if local.len() >= METERS_BEFORE_PRUNE {
            local.clear();
        }
        local.insert(meter_key, m.clone());
        Some((m, rate, shape))
    }

    /// Records `amount` of `key` (bytes for a byte rate, ns of handling
    /// for `request_percentage`) for the client and returns how long it
    /// must wait; zero when no quota applies.
    pub fn record(
        &self,
        image: &MetadataImage,
        principal: &str,
        client_id: &str,
        key: &'static str,
        amount: u64,
    ) -> Duration {
        let now = now_ms();
        let Some((meter, rate, shape)) = self.meter(image, principal, client_id, key, now) else {
            return Duration::ZERO;
        };
        Duration::from_millis(meter.charge(now, amount, rate, shape) as u64)
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
        let Some((meter, _, shape)) = self.meter(image, principal, client_id, key, now) else {
            return Duration::ZERO;
        };
        Duration::from_millis(meter.wait(now, shape) as u64)
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
        let Some((meter, rate, shape)) = self.meter(image, principal, client_id, key, now) else {
            return Duration::ZERO;
        };
        Duration::from_millis(meter.charge(now, bytes, rate, shape) as u64)
    }

    /// The client's `controller_mutation_rate` for one CreateTopics,
    /// CreatePartitions or DeleteTopics request: strict from the API's
    /// `strict_since_version` on.
    pub fn mutation_quota(
        &self,
        image: &MetadataImage,
        principal: &str,
        client_id: &str,
        api_version: i16,
        strict_since_version: i16,
    ) -> MutationQuota {
        let now = now_ms();
        match self.meter(image, principal, client_id, CONTROLLER_MUTATION_RATE, now) {
            Some((meter, rate, _)) => {
                MutationQuota::new(meter, rate, api_version >= strict_since_version)
            }
            None => MutationQuota::unbounded(),
        }
    }
}

/// The `controller_mutation_rate` quota of the client that sent `header`
/// on `access`'s session, for one request of an API strict from
/// `strict_since_version`; unbounded on a shard without quotas.
pub fn mutation_quota(
    shard: &Shard,
    header: &RequestHeader,
    access: &Access<'_>,
    strict_since_version: i16,
) -> MutationQuota {
    let Some(quotas) = ShardQuotas::of(shard) else {
        return MutationQuota::unbounded();
    };
    quotas.mutation_quota(
        &BrokerState::of(shard).image(),
        access.principal(),
        header.client_id.as_deref().unwrap_or(""),
        header.api_version,
        strict_since_version,
    )
}

/// Charges, in request order, each topic that would mutate `partitions`
/// (`None`: a topic the controller will refuse anyway, not charged, as
/// Kafka charges only topics that pass its checks). Returns the names a
/// strict quota refused, and what the others were charged, to give back
/// for the ones the controller refuses.
pub fn charge_topics<'n>(
    quota: &mut MutationQuota,
    topics: impl IntoIterator<Item = (&'n str, Option<u64>)>,
) -> (Vec<String>, HashMap<String, u64>) {
    let now = now_ms();
    let (mut refused, mut charged) = (Vec::new(), HashMap::<String, u64>::new());
    for (name, partitions) in topics {
        let Some(partitions) = partitions else {
            continue;
        };
        match quota.record(now, partitions) {
            Ok(()) => *charged.entry(name.to_string()).or_default() += partitions,
            Err(_) => refused.push(name.to_string()),
        }
    }
    (refused, charged)
}

/// Kafka's answer for a topic a strict quota refused.
pub fn throttled_topic_error() -> (i16, String) {
    (
        error_code::THROTTLING_QUOTA_EXCEEDED,
        error_code::THROTTLING_QUOTA_EXCEEDED_MESSAGE.to_string(),
    )
}
