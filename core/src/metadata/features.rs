//! Feature levels (KRaft's finalized features): cluster-wide switches,
//! each a name and a level, that clients read from ApiVersions and
//! operators change with UpdateFeatures (`kafka-features.sh`). The levels
//! live in the metadata log as `FeatureLevel` records and in the image
//! (`MetadataImage::feature_level`); a feature that has no record is at
//! level 0, which is also how a level is removed.
//!
//! This file is the one place that says which features pinlog implements
//! and at which levels: `transaction.version` (KIP-890), which Kafka 4's
//! producers read to decide whether to use transaction version 2, and
//! `share.version` (KIP-932), which switches share groups on. Kafka's
//! other features
//! (`metadata.version`, `kraft.version`, `group.version`, ...) describe
//! Kafka's own record formats and protocols, which pinlog does not share,
//! and no client or tool pinlog is tested with needs them: Kafka's Admin
//! (`describeFeatures`, `updateFeatures`) and `kafka-features.sh` work with
//! any set of features.

use crate::metadata::records::MetadataRecord;

/// KIP-890's transaction protocol version: 0 and 1 are the classic
/// protocol (explicit AddPartitionsToTxn, the epoch bumped only by
/// InitProducerId), 2 is KIP-890 part 2 (an epoch bump on every EndTxn,
/// partitions added by the produce itself).
pub const TRANSACTION_VERSION: &str = "transaction.version";
/// The `transaction.version` levels pinlog accepts and advertises. Level
/// 2 is accepted ahead of KIP-890 part 2, so that the work on it can raise
/// a cluster to it: until that is built, a cluster at 2 fails the
/// transactions of Kafka 4's Java producers (see the new-cluster level).
pub const TRANSACTION_VERSION_LEVEL_MIN: i16 = 0;
pub const TRANSACTION_VERSION_LEVEL_MAX: i16 = 2;
/// The level a brand-new cluster starts at: 2, as Kafka 4's `kafka-storage
/// format` finalizes it. Kafka 4's Java producer then uses transaction
/// version 2 (KIP-890 part 2: partitions join through the leaders, every
/// EndTxn bumps the epoch); clients that do not know it keep the classic
/// protocol, which the brokers serve alongside. A cluster whose metadata
/// log predates feature levels stays at 0, as an upgraded Kafka cluster
/// does, until an operator raises it (`kafka-features.sh upgrade`).
pub const TRANSACTION_VERSION_LEVEL_NEW_CLUSTER: i16 = 2;

const _: () = assert!(
    TRANSACTION_VERSION_LEVEL_MIN >= 0
        && TRANSACTION_VERSION_LEVEL_MIN <= TRANSACTION_VERSION_LEVEL_NEW_CLUSTER
        && TRANSACTION_VERSION_LEVEL_NEW_CLUSTER <= TRANSACTION_VERSION_LEVEL_MAX
);

/// KIP-932's share groups: level 1 serves them (ShareGroupHeartbeat,
/// ShareFetch, ShareAcknowledge); at 0 they answer UNSUPPORTED_VERSION, as
/// Kafka's do. Kafka's level 2 (dead-letter queues) is not implemented.
pub const SHARE_VERSION: &str = "share.version";
pub const SHARE_VERSION_LEVEL_MIN: i16 = 0;
pub const SHARE_VERSION_LEVEL_MAX: i16 = 1;
/// A new cluster serves share groups, as Kafka 4.2+ formats one. A cluster
/// whose metadata log has no level stays at 0 until an operator runs
/// `kafka-features.sh upgrade --feature share.version=1`.
pub const SHARE_VERSION_LEVEL_NEW_CLUSTER: i16 = 1;

/// Whether a cluster at `level` of `share.version` serves share groups.
pub fn share_groups_enabled(level: i16) -> bool {
    level >= 1
}

/// A feature pinlog implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SupportedFeature {
    pub name: &'static str,
    /// The levels this release implements; an operator may set any of
    /// them, and ApiVersions advertises the range.
    pub level_min: i16,
    pub level_max: i16,
    /// The level written when a new cluster's id is first agreed.
    pub level_new_cluster: i16,
}

/// Every feature pinlog implements, sorted by name.
pub const SUPPORTED_FEATURES: &[SupportedFeature] = &[
    SupportedFeature {
        name: SHARE_VERSION,
        level_min: SHARE_VERSION_LEVEL_MIN,
        level_max: SHARE_VERSION_LEVEL_MAX,
        level_new_cluster: SHARE_VERSION_LEVEL_NEW_CLUSTER,
    },
    SupportedFeature {
        name: TRANSACTION_VERSION,
        level_min: TRANSACTION_VERSION_LEVEL_MIN,
        level_max: TRANSACTION_VERSION_LEVEL_MAX,
        level_new_cluster: TRANSACTION_VERSION_LEVEL_NEW_CLUSTER,
    },
];

/// The feature called `name`, if pinlog implements it.
pub fn supported(name: &str) -> Option<&'static SupportedFeature> {
    SUPPORTED_FEATURES.iter().find(|f| f.name == name)
}

/// The records that finalize a brand-new cluster's features, written by
/// the controller with the cluster id (a level of 0 needs no record).
pub fn new_cluster_records() -> Vec<MetadataRecord> {
    SUPPORTED_FEATURES
        .iter()
        .filter(|f| f.level_new_cluster > 0)
        .map(|f| MetadataRecord::FeatureLevel {
            name: f.name.to_string(),
            level: f.level_new_cluster,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_every_new_cluster_level_is_supported() {
        assert!(SUPPORTED_FEATURES.windows(2).all(|w| w[0].name < w[1].name));
        for f in SUPPORTED_FEATURES {
            assert!(f.level_min >= 0 && f.level_min <= f.level_max, "{f:?}");
            assert!(
                (f.level_min..=f.level_max).contains(&f.level_new_cluster),
                "{f:?}"
            );
            assert_eq!(supported(f.name), Some(f));
        }
        assert_eq!(supported("metadata.version"), None);
    }

    #[test]
    fn a_new_cluster_finalizes_its_share_and_transaction_versions() {
        assert_eq!(
            new_cluster_records(),
            vec![
                MetadataRecord::FeatureLevel {
                    name: SHARE_VERSION.into(),
                    level: SHARE_VERSION_LEVEL_NEW_CLUSTER,
                },
                MetadataRecord::FeatureLevel {
                    name: TRANSACTION_VERSION.into(),
                    level: TRANSACTION_VERSION_LEVEL_NEW_CLUSTER,
                }
            ]
        );
        assert!(share_groups_enabled(SHARE_VERSION_LEVEL_NEW_CLUSTER));
        assert!(!share_groups_enabled(0));
    }
}
