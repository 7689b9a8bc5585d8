//! The dynamic configs of one group (Kafka's `GroupConfig`): set with
//! IncrementalAlterConfigs on a GROUP resource (`kafka-configs.sh
//! --entity-type groups --entity-name G --alter --add-config ...`), kept in
//! the metadata log as Config records of resource type GROUP, and read
//! where the group's settings apply. A config a group does not set is the
//! broker's `group.consumer.*` or `group.share.*` setting of the same
//! meaning (Kafka's synonyms).
//!
//! pinlog takes the configs of the group kinds it serves: consumer groups
//! (KIP-848) and share groups (KIP-932). The others Kafka 4.4 knows
//! (streams groups, assignor offload, dead-letter queues) are refused by
//! name rather than stored and ignored.

use std::collections::BTreeMap;

use crate::broker_config::consumer_group::ConsumerGroupConfig;
use crate::broker_config::share_group::{
    ShareGroupSettings, SHARE_GROUP_MAX_DELIVERY_COUNT_LIMIT,
    SHARE_GROUP_MAX_RECORD_LOCK_DURATION_MS, SHARE_GROUP_MIN_DELIVERY_COUNT_LIMIT,
    SHARE_GROUP_MIN_RECORD_LOCK_DURATION_MS, SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS_BOUND,
    SHARE_GROUP_PARTITION_MIN_RECORD_LOCKS,
};

pub const CONSUMER_SESSION_TIMEOUT_MS: &str = "consumer.session.timeout.ms";
pub const CONSUMER_HEARTBEAT_INTERVAL_MS: &str = "consumer.heartbeat.interval.ms";
pub const SHARE_SESSION_TIMEOUT_MS: &str = "share.session.timeout.ms";
pub const SHARE_HEARTBEAT_INTERVAL_MS: &str = "share.heartbeat.interval.ms";
pub const SHARE_RECORD_LOCK_DURATION_MS: &str = "share.record.lock.duration.ms";
pub const SHARE_DELIVERY_COUNT_LIMIT: &str = "share.delivery.count.limit";
pub const SHARE_PARTITION_MAX_RECORD_LOCKS: &str = "share.partition.max.record.locks";
pub const SHARE_AUTO_OFFSET_RESET: &str = "share.auto.offset.reset";
pub const SHARE_ISOLATION_LEVEL: &str = "share.isolation.level";

/// Every group config pinlog takes, in the order DescribeConfigs lists
/// them.
pub const GROUP_CONFIG_NAMES: &[&str] = &[
    CONSUMER_SESSION_TIMEOUT_MS,
    CONSUMER_HEARTBEAT_INTERVAL_MS,
    SHARE_SESSION_TIMEOUT_MS,
    SHARE_HEARTBEAT_INTERVAL_MS,
    SHARE_RECORD_LOCK_DURATION_MS,
    SHARE_DELIVERY_COUNT_LIMIT,
    SHARE_PARTITION_MAX_RECORD_LOCKS,
    SHARE_AUTO_OFFSET_RESET,
    SHARE_ISOLATION_LEVEL,
];

/// Group configs Kafka 4.4 knows that pinlog does not apply; refused with
/// a message that says so instead of "unknown".
const NOT_APPLIED: &[&str] = &[
    "consumer.assignment.interval.ms",
    "consumer.assignor.offload.enable",
    "share.renew.acknowledge.enable",
    "share.assignment.interval.ms",
    "share.assignor.offload.enable",
    "errors.deadletterqueue.topic.name",
    "errors.deadletterqueue.copy.record.enable",
];

/// `group.share.min.session.timeout.ms` and `.max.`: Kafka's bounds of a
/// share group's session timeout.
pub const SHARE_GROUP_MIN_SESSION_TIMEOUT_MS: i32 = 45_000;
pub const SHARE_GROUP_MAX_SESSION_TIMEOUT_MS: i32 = 60_000;
/// `group.share.min.heartbeat.interval.ms` and `.max.`.
pub const SHARE_GROUP_MIN_HEARTBEAT_INTERVAL_MS: i32 = 5_000;
pub const SHARE_GROUP_MAX_HEARTBEAT_INTERVAL_MS: i32 = 15_000;

/// Where a share group starts reading a partition it never read
/// (`share.auto.offset.reset`, Kafka's default `latest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AutoOffsetReset {
    #[default]
    Latest,
    Earliest,
    /// `by_duration:<ISO-8601 duration>`: the first record whose timestamp
    /// is at most this many milliseconds old (the end when there is none).
    ByDuration(i64),
}

impl AutoOffsetReset {
    pub fn parse(value: &str) -> Result<AutoOffsetReset, String> {
        let value = value.trim();
        match value.to_ascii_lowercase().as_str() {
            "latest" => return Ok(AutoOffsetReset::Latest),
            "earliest" => return Ok(AutoOffsetReset::Earliest),
            _ => {}
        }
        let Some(duration) = value
            .get(..12)
            .filter(|p| p.eq_ignore_ascii_case("by_duration:"))
            .map(|_| &value[12..])
        else {
            return Err(format!(
                "{SHARE_AUTO_OFFSET_RESET}={value:?}: use latest, earliest or \
                 by_duration:<ISO-8601 duration>, e.g. by_duration:PT1H"
            ));
        };
        parse_iso8601_duration_ms(duration)
            .map(AutoOffsetReset::ByDuration)
            .map_err(|e| format!("{SHARE_AUTO_OFFSET_RESET}={value:?}: {e}"))
    }
}

/// How a share group reads transactional records
/// (`share.isolation.level`, Kafka's default `read_uncommitted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IsolationLevel {
    #[default]
    ReadUncommitted,
    ReadCommitted,
}

impl IsolationLevel {
    pub fn parse(value: &str) -> Result<IsolationLevel, String> {
        match value.trim().to_ascii_lowercase().as_str() {
            "read_uncommitted" => Ok(IsolationLevel::ReadUncommitted),
            "read_committed" => Ok(IsolationLevel::ReadCommitted),
            _ => Err(format!(
                "{SHARE_ISOLATION_LEVEL}={value:?}: use read_committed or read_uncommitted"
            )),
        }
    }
}

/// A Java `Duration.parse` text without sign, `PnDTnHnMn.nS`, in
/// milliseconds (fractions of a millisecond dropped).
pub fn parse_iso8601_duration_ms(text: &str) -> Result<i64, String> {
    let bad = || format!("{text:?} is not an ISO-8601 duration such as PT1H, P1DT12H or PT30M");
    let upper = text.trim().to_ascii_uppercase();
    let rest = upper.strip_prefix('P').ok_or_else(bad)?;
    if rest.is_empty() {
        return Err(bad());
    }
    let (days, time) = match rest.split_once('T') {
        Some((_, "")) => return Err(bad()),
        Some((d, t)) => (d, t),
        None => (rest, ""),
    };
    let mut ms: i64 = 0;
    let mut add = |amount: f64, unit_ms: f64| -> Result<(), String> {
        let v = amount * unit_ms;
        if !v.is_finite() || v < 0.0 || v > i64::MAX as f64 / 2.0 {
            return Err(bad());
        }
        ms = ms.checked_add(v as i64).ok_or_else(bad)?;
        Ok(())
    };
    if !days.is_empty() {
        let n = days.strip_suffix('D').ok_or_else(bad)?;
        add(n.parse::<u64>().map_err(|_| bad())? as f64, 86_400_000.0)?;
    }
    let mut part = time;
    for (unit, unit_ms, fraction) in [
        ('H', 3_600_000.0, false),
        ('M', 60_000.0, false),
        ('S', 1_000.0, true),
    ] {
        if let Some(at) = part.find(unit) {
            let n = &part[..at];
            let amount = if fraction {
                if n.is_empty() || !n.chars().all(|c| c.is_ascii_digit() || c == '.') {
                    return Err(bad());
                }
                n.parse::<f64>().map_err(|_| bad())?
            } else {
                n.parse::<u64>().map_err(|_| bad())? as f64
            };
            add(amount, unit_ms)?;
            part = &part[at + 1..];
        }
    }
    if !part.is_empty() {
        return Err(bad());
    }
    Ok(ms)
}

/// Refuses a name that is not a group config pinlog applies, or a value
/// that does not parse; bounds that depend on the broker's settings are
/// [`validate_effective`]'s.
pub fn validate(name: &str, value: Option<&str>) -> Result<(), String> {
    if NOT_APPLIED.contains(&name) || name.starts_with("streams.") {
        return Err(format!(
            "group config {name:?} is not supported by pinlog; it takes {}",
            GROUP_CONFIG_NAMES.join(", ")
        ));
    }
    if !GROUP_CONFIG_NAMES.contains(&name) {
        return Err(format!(
            "unknown group config {name:?}; pinlog takes {}",
            GROUP_CONFIG_NAMES.join(", ")
        ));
    }
    let Some(value) = value else {
        return Ok(());
    };
    match name {
        SHARE_AUTO_OFFSET_RESET => AutoOffsetReset::parse(value).map(|_| ()),
        SHARE_ISOLATION_LEVEL => IsolationLevel::parse(value).map(|_| ()),
        _ => value
            .trim()
            .parse::<i32>()
            .map(|_| ())
            .map_err(|_| format!("{name}={value:?} is not a whole number")),
    }
}

/// The effective configs of a group: its own where it sets them, the
/// broker's otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectiveGroupConfig {
    pub consumer: ConsumerGroupConfig,
    pub share: ShareGroupSettings,
    pub share_auto_offset_reset: AutoOffsetReset,
    pub share_isolation_level: IsolationLevel,
}

impl EffectiveGroupConfig {
    /// The group's configs over the broker's; a stored value that does not
    /// parse (it was validated when set) keeps the broker's.
    pub fn of(
        consumer: &ConsumerGroupConfig,
        share: &ShareGroupSettings,
        overrides: Option<&BTreeMap<String, String>>,
    ) -> EffectiveGroupConfig {
        let mut out = EffectiveGroupConfig {
            consumer: consumer.clone(),
            share: *share,
            share_auto_offset_reset: AutoOffsetReset::default(),
            share_isolation_level: IsolationLevel::default(),
        };
        for (name, value) in overrides.into_iter().flatten() {
            let int = || value.trim().parse::<i32>().ok();
            match name.as_str() {
                CONSUMER_SESSION_TIMEOUT_MS => {
                    if let Some(v) = int() {
                        out.consumer.session_timeout_ms = v;
                    }
                }
                CONSUMER_HEARTBEAT_INTERVAL_MS => {
                    if let Some(v) = int() {
                        out.consumer.heartbeat_interval_ms = v;
                    }
                }
                SHARE_SESSION_TIMEOUT_MS => {
                    if let Some(v) = int() {
                        out.share.group.session_timeout_ms = v;
                    }
                }
                SHARE_HEARTBEAT_INTERVAL_MS => {
                    if let Some(v) = int() {
                        out.share.group.heartbeat_interval_ms = v;
                    }
                }
                SHARE_RECORD_LOCK_DURATION_MS => {
                    if let Some(v) = int() {
                        out.share.partition.record_lock_duration_ms = i64::from(v);
                    }
                }
                SHARE_DELIVERY_COUNT_LIMIT => {
                    if let Some(v) = int().and_then(|v| i16::try_from(v).ok()) {
                        out.share.partition.delivery_count_limit = v;
                    }
                }
                SHARE_PARTITION_MAX_RECORD_LOCKS => {
                    if let Some(v) = int().and_then(|v| u32::try_from(v).ok()) {
                        out.share.partition.max_record_locks = v;
                    }
                }
                SHARE_AUTO_OFFSET_RESET => {
                    if let Ok(v) = AutoOffsetReset::parse(value) {
                        out.share_auto_offset_reset = v;
                    }
                }
                SHARE_ISOLATION_LEVEL => {
                    if let Ok(v) = IsolationLevel::parse(value) {
                        out.share_isolation_level = v;
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Every config with its value, and whether the group sets it.
    pub fn describe(
        &self,
        overrides: Option<&BTreeMap<String, String>>,
    ) -> Vec<(&'static str, String, bool)> {
        let reset = match self.share_auto_offset_reset {
            AutoOffsetReset::Latest => "latest".to_string(),
            AutoOffsetReset::Earliest => "earliest".to_string(),
            // Shown as set, not re-rendered from milliseconds.
            AutoOffsetReset::ByDuration(ms) => overrides
                .and_then(|o| o.get(SHARE_AUTO_OFFSET_RESET).cloned())
                .unwrap_or_else(|| format!("by_duration:PT{}S", ms / 1000)),
        };
        let isolation = match self.share_isolation_level {
            IsolationLevel::ReadUncommitted => "read_uncommitted",
            IsolationLevel::ReadCommitted => "read_committed",
        };
        let values = [
            self.consumer.session_timeout_ms.to_string(),
            self.consumer.heartbeat_interval_ms.to_string(),
            self.share.group.session_timeout_ms.to_string(),
            self.share.group.heartbeat_interval_ms.to_string(),
            self.share.partition.record_lock_duration_ms.to_string(),
            self.share.partition.delivery_count_limit.to_string(),
            self.share.partition.max_record_locks.to_string(),
            reset,
            isolation.to_string(),
        ];
        GROUP_CONFIG_NAMES
            .iter()
            .zip(values)
            .map(|(name, value)| {
                let set = overrides.is_some_and(|o| o.contains_key(*name));
                (*name, value, set)
            })
            .collect()
    }

    /// Kafka's bounds of each config (`GroupConfig.validate`): within the
    /// broker's min and max settings, and each heartbeat interval below its
    /// session timeout.
    pub fn validate(&self) -> Result<(), String> {
        let within = |name: &str, v: i64, min: i64, max: i64| {
            if (min..=max).contains(&v) {
                Ok(())
            } else {
                Err(format!("{name}={v} is outside [{min}, {max}]"))
            }
        };
        let c = &self.consumer;
        within(
            CONSUMER_SESSION_TIMEOUT_MS,
            c.session_timeout_ms.into(),
            c.min_session_timeout_ms.into(),
            c.max_session_timeout_ms.into(),
        )?;
        within(
            CONSUMER_HEARTBEAT_INTERVAL_MS,
            c.heartbeat_interval_ms.into(),
            c.min_heartbeat_interval_ms.into(),
            c.max_heartbeat_interval_ms.into(),
        )?;
        let s = &self.share;
        within(
            SHARE_SESSION_TIMEOUT_MS,
            s.group.session_timeout_ms.into(),
            SHARE_GROUP_MIN_SESSION_TIMEOUT_MS.into(),
            SHARE_GROUP_MAX_SESSION_TIMEOUT_MS.into(),
        )?;
        within(
            SHARE_HEARTBEAT_INTERVAL_MS,
            s.group.heartbeat_interval_ms.into(),
            SHARE_GROUP_MIN_HEARTBEAT_INTERVAL_MS.into(),
            SHARE_GROUP_MAX_HEARTBEAT_INTERVAL_MS.into(),
        )?;
        within(
            SHARE_RECORD_LOCK_DURATION_MS,
            s.partition.record_lock_duration_ms,
            SHARE_GROUP_MIN_RECORD_LOCK_DURATION_MS,
            SHARE_GROUP_MAX_RECORD_LOCK_DURATION_MS,
        )?;
        within(
            SHARE_DELIVERY_COUNT_LIMIT,
            s.partition.delivery_count_limit.into(),
            SHARE_GROUP_MIN_DELIVERY_COUNT_LIMIT.into(),
            SHARE_GROUP_MAX_DELIVERY_COUNT_LIMIT.into(),
        )?;
        within(
            SHARE_PARTITION_MAX_RECORD_LOCKS,
            s.partition.max_record_locks.into(),
            SHARE_GROUP_PARTITION_MIN_RECORD_LOCKS.into(),
            SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS_BOUND.into(),
        )?;
        if c.heartbeat_interval_ms >= c.session_timeout_ms {
            return Err(format!(
                "{CONSUMER_SESSION_TIMEOUT_MS} ({}) must be greater than {CONSUMER_HEARTBEAT_INTERVAL_MS} ({})",
                c.session_timeout_ms, c.heartbeat_interval_ms
            ));
        }
        if s.group.heartbeat_interval_ms >= s.group.session_timeout_ms {
            return Err(format!(
                "{SHARE_SESSION_TIMEOUT_MS} ({}) must be greater than {SHARE_HEARTBEAT_INTERVAL_MS} ({})",
                s.group.session_timeout_ms, s.group.heartbeat_interval_ms
            ));
        }
        Ok(())
    }
}

/// The group's configs after `changes` (`None` removes one); all of them
/// unless `incremental`.
pub fn apply_changes(
    current: Option<&BTreeMap<String, String>>,
    changes: &[(String, Option<String>)],
    incremental: bool,
) -> BTreeMap<String, String> {
    let mut out = if incremental {
        current.cloned().unwrap_or_default()
    } else {
        BTreeMap::new()
    };
    for (name, value) in changes {
        match value {
            Some(v) => out.insert(name.clone(), v.trim().to_string()),
            None => out.remove(name),
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn durations_parse_like_javas() {
        assert_eq!(parse_iso8601_duration_ms("PT1H"), Ok(3_600_000));
        assert_eq!(parse_iso8601_duration_ms("P1D"), Ok(86_400_000));
        assert_eq!(parse_iso8601_duration_ms("P1DT2H30M"), Ok(95_400_000));
        assert_eq!(parse_iso8601_duration_ms("PT1.5S"), Ok(1_500));
        assert_eq!(parse_iso8601_duration_ms("pt10m"), Ok(600_000));
        for bad in [
            "", "P", "PT", "1H", "PT-1H", "-PT1H", "PTH", "PT1X", "P1H", "PT1M1H",
        ] {
            assert!(parse_iso8601_duration_ms(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reset_and_isolation_take_kafkas_values() {
        assert_eq!(
            AutoOffsetReset::parse("earliest"),
            Ok(AutoOffsetReset::Earliest)
        );
        assert_eq!(
            AutoOffsetReset::parse("LATEST"),
            Ok(AutoOffsetReset::Latest)
        );
        assert_eq!(
            AutoOffsetReset::parse("by_duration:PT5M"),
            Ok(AutoOffsetReset::ByDuration(300_000))
        );
        assert!(AutoOffsetReset::parse("none")
            .unwrap_err()
            .contains("earliest"));
        assert_eq!(
            IsolationLevel::parse("read_committed"),
            Ok(IsolationLevel::ReadCommitted)
        );
        assert!(IsolationLevel::parse("committed").is_err());
    }

    #[test]
    fn names_are_checked_and_unapplied_ones_say_so() {
        validate(SHARE_AUTO_OFFSET_RESET, Some("earliest")).unwrap();
        validate(SHARE_RECORD_LOCK_DURATION_MS, None).unwrap();
        assert!(validate(SHARE_RECORD_LOCK_DURATION_MS, Some("x")).is_err());
        assert!(validate("streams.session.timeout.ms", Some("1"))
            .unwrap_err()
            .contains("not supported"));
        assert!(validate("retention.ms", Some("1"))
            .unwrap_err()
            .contains("unknown"));
    }

    #[test]
    fn the_groups_own_configs_win_over_the_brokers() {
        let consumer = ConsumerGroupConfig::default();
        let share = ShareGroupSettings::default();
        let plain = EffectiveGroupConfig::of(&consumer, &share, None);
        assert_eq!(plain.share_auto_offset_reset, AutoOffsetReset::Latest);
        assert_eq!(plain.share_isolation_level, IsolationLevel::ReadUncommitted);
        plain.validate().unwrap();
        let o = overrides(&[
            (SHARE_AUTO_OFFSET_RESET, "earliest"),
            (SHARE_ISOLATION_LEVEL, "read_committed"),
            (SHARE_RECORD_LOCK_DURATION_MS, "20000"),
            (CONSUMER_SESSION_TIMEOUT_MS, "50000"),
        ]);
        let e = EffectiveGroupConfig::of(&consumer, &share, Some(&o));
        assert_eq!(e.share_auto_offset_reset, AutoOffsetReset::Earliest);
        assert_eq!(e.share_isolation_level, IsolationLevel::ReadCommitted);
        assert_eq!(e.share.partition.record_lock_duration_ms, 20_000);
        assert_eq!(e.consumer.session_timeout_ms, 50_000);
        e.validate().unwrap();
        let described = e.describe(Some(&o));
        assert_eq!(described.len(), GROUP_CONFIG_NAMES.len());
        assert!(described.contains(&(SHARE_AUTO_OFFSET_RESET, "earliest".into(), true)));
        assert!(described.contains(&(SHARE_DELIVERY_COUNT_LIMIT, "5".into(), false)));
    }

    #[test]
    fn bounds_are_kafkas() {
        let consumer = ConsumerGroupConfig::default();
        let share = ShareGroupSettings::default();
        for (name, value, why) in [
            (SHARE_RECORD_LOCK_DURATION_MS, "1000", "outside"),
            (SHARE_DELIVERY_COUNT_LIMIT, "11", "outside"),
            (CONSUMER_SESSION_TIMEOUT_MS, "1000", "outside"),
            (SHARE_HEARTBEAT_INTERVAL_MS, "15000", "ok"),
        ] {
            let o = overrides(&[(name, value)]);
            let r = EffectiveGroupConfig::of(&consumer, &share, Some(&o)).validate();
            match why {
                "ok" => r.unwrap(),
                _ => assert!(r.unwrap_err().contains(why), "{name}={value}"),
            }
        }
    }

    #[test]
    fn changes_apply_incrementally_or_replace() {
        let current = overrides(&[(SHARE_ISOLATION_LEVEL, "read_committed")]);
        let changes = vec![(
            SHARE_AUTO_OFFSET_RESET.to_string(),
            Some("earliest".to_string()),
        )];
        let inc = apply_changes(Some(&current), &changes, true);
        assert_eq!(inc.len(), 2);
        let whole = apply_changes(Some(&current), &changes, false);
        assert_eq!(whole.len(), 1);
        let removed = apply_changes(
            Some(&current),
            &[(SHARE_ISOLATION_LEVEL.to_string(), None)],
            true,
        );
        assert!(removed.is_empty());
    }
}
