//! IncrementalAlterConfigs and AlterConfigs on a group (resource type
//! GROUP): the Config records that set or remove its dynamic configs, each
//! name and value checked first, and the result within Kafka's bounds
//! under this controller's group settings, as Kafka's controller validates
//! them (`GroupConfig.validate`). A group need not exist to be configured:
//! Kafka lets an operator configure a group before its members come.

use crate::broker_config::consumer_group::ConsumerGroupConfig;
use crate::broker_config::share_group::ShareGroupSettings;
use crate::controller::topics::config_records;
use crate::controller::TopicError;
use crate::metadata::group_config::{self, EffectiveGroupConfig};
use crate::metadata::image::MetadataImage;
use crate::metadata::records::{MetadataRecord, RESOURCE_GROUP};
use crate::protocol::error_code;

/// The broker settings a group's configs fall back to and are bounded by.
pub struct GroupDefaults<'a> {
    pub consumer: &'a ConsumerGroupConfig,
    pub share: &'a ShareGroupSettings,
}

pub fn plan_alter_group_configs(
    image: &MetadataImage,
    defaults: &GroupDefaults<'_>,
    group: &str,
    changes: Vec<(String, Option<String>)>,
    incremental: bool,
) -> Result<Vec<MetadataRecord>, TopicError> {
    if group.is_empty() {
        return Err((
            error_code::INVALID_REQUEST,
            "a group config needs the group's id as the resource name".into(),
        ));
    }
    for (name, value) in &changes {
        group_config::validate(name, value.as_deref())
            .map_err(|m| (error_code::INVALID_CONFIG, m))?;
    }
    let current = image.group_configs.get(group);
    let after = group_config::apply_changes(current, &changes, incremental);
    EffectiveGroupConfig::of(defaults.consumer, defaults.share, Some(&after))
        .validate()
        .map_err(|m| (error_code::INVALID_CONFIG, m))?;
    Ok(config_records(
        current.into_iter().flat_map(|c| c.keys()),
        changes,
        incremental,
        RESOURCE_GROUP,
        group,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::group_config::{SHARE_AUTO_OFFSET_RESET, SHARE_ISOLATION_LEVEL};

    fn image_after(records: &[MetadataRecord]) -> MetadataImage {
        MetadataImage::from_records(0, records)
    }

    #[test]
    fn configs_are_set_removed_and_replaced() {
        let consumer = ConsumerGroupConfig::default();
        let share = ShareGroupSettings::default();
        let d = GroupDefaults {
            consumer: &consumer,
            share: &share,
        };
        let set = |k: &str, v: &str| (k.to_string(), Some(v.to_string()));
        let records = plan_alter_group_configs(
            &MetadataImage::empty(),
            &d,
            "g",
            vec![
                set(SHARE_AUTO_OFFSET_RESET, "earliest"),
                set(SHARE_ISOLATION_LEVEL, "read_committed"),
            ],
            true,
        )
        .unwrap();
        let image = image_after(&records);
        assert_eq!(image.group_configs["g"].len(), 2);
        // AlterConfigs replaces the whole set.
        let more = plan_alter_group_configs(
            &image,
            &d,
            "g",
            vec![set(SHARE_AUTO_OFFSET_RESET, "latest")],
            false,
        )
        .unwrap();
        let mut all = records.clone();
        all.extend(more);
        let image = image_after(&all);
        assert_eq!(image.group_configs["g"].len(), 1);
        assert_eq!(image.group_configs["g"][SHARE_AUTO_OFFSET_RESET], "latest");
        // Removing the last one forgets the group.
        let gone = plan_alter_group_configs(
            &image,
            &d,
            "g",
            vec![(SHARE_AUTO_OFFSET_RESET.into(), None)],
            true,
        )
        .unwrap();
        all.extend(gone);
        let image = image_after(&all);
        assert!(!image.group_configs.contains_key("g"));
        // And the snapshot keeps them.
        let with = image_after(&records);
        assert_eq!(
            image_after(&with.to_records()).group_configs,
            with.group_configs
        );
    }

    #[test]
    fn bad_names_values_and_bounds_are_invalid_config() {
        let consumer = ConsumerGroupConfig::default();
        let share = ShareGroupSettings::default();
        let d = GroupDefaults {
            consumer: &consumer,
            share: &share,
        };
        for (k, v) in [
            ("nope", "1"),
            (SHARE_ISOLATION_LEVEL, "dirty"),
            ("share.record.lock.duration.ms", "999999"),
            ("share.heartbeat.interval.ms", "15000"),
        ] {
            let changes = vec![(k.to_string(), Some(v.to_string()))];
            let mut c = changes.clone();
            if k == "share.heartbeat.interval.ms" {
                // Within its bounds, but not below the session timeout.
                c.push(("share.session.timeout.ms".into(), Some("45000".into())));
                c[0].1 = Some("15000".into());
                let ok = plan_alter_group_configs(&MetadataImage::empty(), &d, "g", c, true);
                assert!(ok.is_ok(), "{ok:?}");
                continue;
            }
            let err =
                plan_alter_group_configs(&MetadataImage::empty(), &d, "g", c, true).unwrap_err();
            assert_eq!(err.0, error_code::INVALID_CONFIG, "{k}={v}: {err:?}");
        }
        assert!(plan_alter_group_configs(&MetadataImage::empty(), &d, "", vec![], true).is_err());
    }
}
