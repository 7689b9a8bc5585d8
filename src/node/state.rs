//! What every shard knows about the broker: its settings, identity, and the
//! current metadata image.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use crate::broker_config::BrokerConfig;
use crate::metadata::group_config::EffectiveGroupConfig;
use crate::metadata::image::MetadataImage;
use crate::shard::shard::Shard;

/// Shard-local broker state, stored as a shard extension.
pub struct BrokerState {
    pub config: Arc<BrokerConfig>,
    /// From `meta.properties`, or adopted from the quorum at registration.
    cluster_id: RefCell<Arc<str>>,
    image: RefCell<Arc<MetadataImage>>,
    /// Whether this node has applied everything the metadata quorum had
    /// committed when it started; until then it serves no client.
    caught_up: Cell<bool>,
    /// Whether the first image applied after catch-up has been applied on
    /// every shard, with the roles it gives this broker; until then the
    /// listeners stay closed, so no client sees the partitions offline.
    serving: Cell<bool>,
}

impl BrokerState {
    pub fn new(config: Arc<BrokerConfig>, cluster_id: Arc<str>, image: Arc<MetadataImage>) -> Self {
        BrokerState {
            config,
            cluster_id: RefCell::new(cluster_id),
            image: RefCell::new(image),
            caught_up: Cell::new(false),
            serving: Cell::new(false),
        }
    }

    pub fn cluster_id(&self) -> Arc<str> {
        self.cluster_id.borrow().clone()
    }

    pub fn set_cluster_id(&self, id: Arc<str>) {
        *self.cluster_id.borrow_mut() = id;
    }

    pub fn is_caught_up(&self) -> bool {
        self.caught_up.get()
    }

    pub fn set_caught_up(&self) {
        self.caught_up.set(true);
    }

    pub fn is_serving(&self) -> bool {
        self.serving.get()
    }

    pub fn set_serving(&self) {
        self.serving.set(true);
    }

    pub fn image(&self) -> Arc<MetadataImage> {
        self.image.borrow().clone()
    }

    /// The configs `group_id` runs under: its own dynamic configs (the
    /// current image's) over this broker's `group.*` settings.
    pub fn group_config(&self, group_id: &str) -> EffectiveGroupConfig {
        EffectiveGroupConfig::of(
            &self.config.consumer_group,
            &self.config.share_group,
            self.image.borrow().group_configs.get(group_id),
        )
    }

    /// Replaces the current image. Images only move forward: the applier
    /// drops an older one before it gets here, so an older one is a bug
    /// that would reopen what a newer image deleted.
    pub fn set_image(&self, image: Arc<MetadataImage>) {
        let mut current = self.image.borrow_mut();
        assert!(
            image.offset >= current.offset,
            "the metadata image went back from offset {} to {}",
            current.offset,
            image.offset
        );
        *current = image;
    }

    pub fn node_id(&self) -> i32 {
        self.config.node_id
    }

    /// The broker state of `shard`; set before any connection is served.
    pub fn of(shard: &Shard) -> Rc<BrokerState> {
        shard
            .extension::<BrokerState>()
            .expect("broker state is installed before serving")
    }
}

/// The log of `tp` on `shard` if this broker leads it: clients produce to,
/// fetch from and list offsets of leaders only. A follower's replica is
/// open on its shard but answers NOT_LEADER_OR_FOLLOWER.
pub fn led_log(
    shard: &Shard,
    tp: &crate::topic_partition::TopicPartition,
) -> Option<Rc<glommio::sync::RwLock<crate::log::partition_log::PartitionLog>>> {
    crate::node::replicas::led_partition(shard, tp).map(|p| p.log)
}
