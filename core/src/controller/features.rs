//! UpdateFeatures (API 57): which feature-level changes the controller
//! accepts, with Kafka's rules (its `FeatureControlManager`), and the
//! `FeatureLevel` records they become.
//!
//! All or nothing: one refused update refuses the request, and nothing is
//! written; the records of an accepted request are committed together, as
//! one entry. Every refusal is INVALID_UPDATE_VERSION with Kafka's
//! top-level message, so `kafka-features.sh` prints what it prints against
//! Kafka. Kafka's request (v1+) says how a level may move: an *upgrade*
//! only up, a *safe* or *unsafe downgrade* only down; version 0's
//! `allow_downgrade` is not consulted, as Kafka's controller does not, and
//! the broker passes such updates on as upgrades. For `transaction.version`
//! a safe and an unsafe downgrade are the same: nothing in the metadata
//! depends on the level.

use serde::{Deserialize, Serialize};

use crate::controller::TopicError;
use crate::metadata::features::{supported, SUPPORTED_FEATURES};
use crate::metadata::image::MetadataImage;
use crate::metadata::records::MetadataRecord;
use crate::protocol::error_code;
use crate::protocol::messages::update_features::{
    UPGRADE_TYPE_SAFE_DOWNGRADE, UPGRADE_TYPE_UNSAFE_DOWNGRADE, UPGRADE_TYPE_UPGRADE,
};

/// How Kafka's controller prefixes the one refusal that failed a request.
pub const ALL_FEATURES_FAILED: &str =
    "The update failed for all features since the following feature had an error: ";

/// One feature's requested change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureUpdate {
    pub feature: String,
    /// The new level; 0 removes the feature.
    pub level: i16,
    /// Kafka's upgrade type code (`UPGRADE_TYPE_*`).
    pub upgrade_type: i8,
}

/// The records that make `updates` the cluster's levels, or the refusal
/// (error code and message) of the whole request. An update to the level
/// a feature already has is written too, as Kafka writes it: the answer
/// then always comes under a newer finalized-features epoch.
pub fn plan_update_features(
    image: &MetadataImage,
    updates: &[FeatureUpdate],
) -> Result<Vec<MetadataRecord>, TopicError> {
    for (i, u) in updates.iter().enumerate() {
        if updates[..i]
            .iter()
            .any(|earlier| earlier.feature == u.feature)
        {
            return Err((
                error_code::INVALID_REQUEST,
                format!("feature {} is updated twice in one request", u.feature),
            ));
        }
    }
    for u in updates {
        check_update(image, u).map_err(|reason| {
            (
                error_code::INVALID_UPDATE_VERSION,
                format!(
                    "{ALL_FEATURES_FAILED}Invalid update version {} for feature {}. {reason}",
                    u.level, u.feature
                ),
            )
        })?;
    }
    Ok(updates
        .iter()
        .map(|u| MetadataRecord::FeatureLevel {
            name: u.feature.clone(),
            level: u.level,
        })
        .collect())
}

/// Why `u` cannot be applied to `image`, in Kafka's order of checks.
fn check_update(image: &MetadataImage, u: &FeatureUpdate) -> Result<(), String> {
    if ![
        UPGRADE_TYPE_UPGRADE,
        UPGRADE_TYPE_SAFE_DOWNGRADE,
        UPGRADE_TYPE_UNSAFE_DOWNGRADE,
    ]
    .contains(&u.upgrade_type)
    {
        return Err(format!(
            "The controller does not support the given upgrade type {}: 1 upgrades, \
             2 and 3 downgrade (safe and unsafe).",
            u.upgrade_type
        ));
    }
    if u.level < 0 {
        return Err("A feature version cannot be less than 0.".into());
    }
    let Some(feature) = supported(&u.feature) else {
        let names: Vec<&str> = SUPPORTED_FEATURES.iter().map(|f| f.name).collect();
        return Err(format!(
            "pinlog does not support this feature; it supports {}.",
            names.join(", ")
        ));
    };
    if !(feature.level_min..=feature.level_max).contains(&u.level) {
        return Err(format!(
            "pinlog supports versions {}-{} of this feature.",
            feature.level_min, feature.level_max
        ));
    }
    let current = image.feature_level(&u.feature);
    if u.level < current && u.upgrade_type == UPGRADE_TYPE_UPGRADE {
        return Err(
            "Can't downgrade the version of this feature without setting the upgrade \
                    type to either safe or unsafe downgrade."
                .into(),
        );
    }
    if u.level > current && u.upgrade_type != UPGRADE_TYPE_UPGRADE {
        return Err("Can't downgrade to a newer version.".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::features::TRANSACTION_VERSION;

    fn image_at(level: i16) -> MetadataImage {
        let mut image = MetadataImage::empty();
        image.apply(
            0,
            &MetadataRecord::FeatureLevel {
                name: TRANSACTION_VERSION.into(),
                level,
            },
        );
        image
    }

    fn update(feature: &str, level: i16, upgrade_type: i8) -> FeatureUpdate {
        FeatureUpdate {
            feature: feature.into(),
            level,
            upgrade_type,
        }
    }

    fn tv(level: i16, upgrade_type: i8) -> FeatureUpdate {
        update(TRANSACTION_VERSION, level, upgrade_type)
    }

    fn record(level: i16) -> MetadataRecord {
        MetadataRecord::FeatureLevel {
            name: TRANSACTION_VERSION.into(),
            level,
        }
    }

    /// The refusal's code and the reason after Kafka's prefix.
    fn refusal(image: &MetadataImage, updates: &[FeatureUpdate]) -> (i16, String) {
        let (code, message) = plan_update_features(image, updates).unwrap_err();
        let reason = message
            .strip_prefix(ALL_FEATURES_FAILED)
            .unwrap_or(&message)
            .to_string();
        (code, reason)
    }

    #[test]
    fn levels_move_up_by_upgrade_and_down_by_either_downgrade() {
        let at_2 = image_at(2);
        for downgrade in [UPGRADE_TYPE_SAFE_DOWNGRADE, UPGRADE_TYPE_UNSAFE_DOWNGRADE] {
            assert_eq!(
                plan_update_features(&at_2, &[tv(1, downgrade)]),
                Ok(vec![record(1)])
            );
            // Level 0 removes the feature.
            assert_eq!(
                plan_update_features(&at_2, &[tv(0, downgrade)]),
                Ok(vec![record(0)])
            );
        }
        let at_0 = MetadataImage::empty();
        assert_eq!(
            plan_update_features(&at_0, &[tv(2, UPGRADE_TYPE_UPGRADE)]),
            Ok(vec![record(2)])
        );
        // The level it has already: accepted either way, and written.
        for either in [UPGRADE_TYPE_UPGRADE, UPGRADE_TYPE_SAFE_DOWNGRADE] {
            assert_eq!(
                plan_update_features(&at_2, &[tv(2, either)]),
                Ok(vec![record(2)])
            );
        }
        assert_eq!(plan_update_features(&at_2, &[]), Ok(vec![]));
    }

    #[test]
    fn every_refusal_is_invalid_update_version_with_kafkas_prefix_and_reason() {
        let at_1 = image_at(1);
        let cases = [
            (tv(2, 0), "does not support the given upgrade type 0"),
            (tv(2, 4), "does not support the given upgrade type 4"),
            (tv(-1, UPGRADE_TYPE_SAFE_DOWNGRADE), "cannot be less than 0"),
            (
                update("metadata.version", 5, UPGRADE_TYPE_UPGRADE),
                "does not support this feature; it supports share.version, transaction.version",
            ),
            (tv(3, UPGRADE_TYPE_UPGRADE), "supports versions 0-2"),
            (
                tv(0, UPGRADE_TYPE_UPGRADE),
                "Can't downgrade the version of this feature without setting the upgrade type \
                 to either safe or unsafe downgrade.",
            ),
            (
                tv(2, UPGRADE_TYPE_SAFE_DOWNGRADE),
                "Can't downgrade to a newer version.",
            ),
            (
                tv(2, UPGRADE_TYPE_UNSAFE_DOWNGRADE),
                "Can't downgrade to a newer version.",
            ),
        ];
        for (u, expected) in cases {
            let (code, message) =
                plan_update_features(&at_1, std::slice::from_ref(&u)).unwrap_err();
            assert_eq!(code, error_code::INVALID_UPDATE_VERSION, "{u:?}");
            assert!(message.starts_with(ALL_FEATURES_FAILED), "{message}");
            assert!(
                message.contains(&format!(
                    "Invalid update version {} for feature {}.",
                    u.level, u.feature
                )),
                "{message}"
            );
            assert!(message.contains(expected), "{u:?}: {message}");
        }
    }

    #[test]
    fn one_refused_update_refuses_the_whole_request() {
        let at_2 = image_at(2);
        let (code, reason) = refusal(
            &at_2,
            &[
                tv(1, UPGRADE_TYPE_SAFE_DOWNGRADE),
                update("group.version", 1, UPGRADE_TYPE_UPGRADE),
            ],
        );
        assert_eq!(code, error_code::INVALID_UPDATE_VERSION);
        assert!(reason.contains("feature group.version"), "{reason}");
        let (code, reason) = refusal(
            &at_2,
            &[
                tv(1, UPGRADE_TYPE_SAFE_DOWNGRADE),
                tv(0, UPGRADE_TYPE_SAFE_DOWNGRADE),
            ],
        );
        assert_eq!(code, error_code::INVALID_REQUEST);
        assert!(reason.contains("updated twice"), "{reason}");
    }
}
