//! Settings of the consumer-group protocol (KIP-848), with Kafka's names
//! and defaults. They sit beside the classic group's settings
//! (`group.rs`) so that the settings import no subsystem; the pure
//! coordinator in `group/consumer/` reads them.

/// `group.consumer.session.timeout.ms`: a member that has not heartbeated
/// for this long is fenced and its partitions go to the others.
pub const DEFAULT_CONSUMER_GROUP_SESSION_TIMEOUT_MS: i32 = 45_000;
/// `group.consumer.min.session.timeout.ms` and `.max.` bound it.
pub const DEFAULT_CONSUMER_GROUP_MIN_SESSION_TIMEOUT_MS: i32 = 45_000;
pub const DEFAULT_CONSUMER_GROUP_MAX_SESSION_TIMEOUT_MS: i32 = 60_000;
/// `group.consumer.heartbeat.interval.ms`: told to every member in each
/// heartbeat answer.
pub const DEFAULT_CONSUMER_GROUP_HEARTBEAT_INTERVAL_MS: i32 = 5_000;
pub const DEFAULT_CONSUMER_GROUP_MIN_HEARTBEAT_INTERVAL_MS: i32 = 5_000;
pub const DEFAULT_CONSUMER_GROUP_MAX_HEARTBEAT_INTERVAL_MS: i32 = 15_000;
/// `group.consumer.disconnect.grace.ms`, pinlog's own: a member without
/// `group.instance.id` whose connection to the coordinator closes, and
/// that heartbeats on no other connection within its heartbeat interval
/// plus this grace, is fenced then instead of at the end of its session.
/// A process that dies (a crash, kill -9, an OOM kill) closes its
/// connections at once, and its partitions then move in seconds instead
/// of `group.consumer.session.timeout.ms` (45 s by default). A live
/// member whose connection broke reconnects and heartbeats well within
/// the grace. A host that vanishes closes nothing, and the session
/// timeout still applies; static members keep their session, which is
/// what lets them restart without a rebalance. -1 turns it off, which is
/// Kafka's behaviour.
pub const DEFAULT_CONSUMER_GROUP_DISCONNECT_GRACE_MS: i32 = 2_000;
/// The value of `group.consumer.disconnect.grace.ms` that turns it off.
pub const DISCONNECT_GRACE_DISABLED: i32 = -1;
/// `group.consumer.max.size`: unlimited, as in Kafka.
pub const DEFAULT_CONSUMER_GROUP_MAX_SIZE: i32 = i32::MAX;
/// `group.consumer.assignors`: the server-side assignors a member may name
/// in `group.remote.assignor`; the first is the group's default.
pub const DEFAULT_CONSUMER_GROUP_ASSIGNORS: &[&str] = &["uniform", "range"];

/// `group.consumer.migration.policy`: which online conversions between the
/// classic and the consumer protocol a group may make (Kafka's
/// `ConsumerGroupMigrationPolicy`, default `bidirectional`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrationPolicy {
    Disabled,
    Upgrade,
    Downgrade,
    Bidirectional,
}

impl MigrationPolicy {
    pub fn parse(text: &str) -> Option<MigrationPolicy> {
        match text.trim().to_ascii_lowercase().as_str() {
            "disabled" => Some(MigrationPolicy::Disabled),
            "upgrade" => Some(MigrationPolicy::Upgrade),
            "downgrade" => Some(MigrationPolicy::Downgrade),
            "bidirectional" => Some(MigrationPolicy::Bidirectional),
            _ => None,
        }
    }

    /// A live classic group may become a consumer group.
    pub fn upgrade_enabled(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Upgrade | MigrationPolicy::Bidirectional
        )
    }

    /// A consumer group left with classic members only may become a
    /// classic group.
    pub fn downgrade_enabled(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Downgrade | MigrationPolicy::Bidirectional
        )
    }
}

pub const DEFAULT_CONSUMER_GROUP_MIGRATION_POLICY: MigrationPolicy = MigrationPolicy::Bidirectional;

/// The setting names [`ConsumerGroupConfig::set`] takes.
pub const CONSUMER_GROUP_KEYS: &[&str] = &[
    "group.consumer.session.timeout.ms",
    "group.consumer.min.session.timeout.ms",
    "group.consumer.max.session.timeout.ms",
    "group.consumer.heartbeat.interval.ms",
    "group.consumer.min.heartbeat.interval.ms",
    "group.consumer.max.heartbeat.interval.ms",
    "group.consumer.max.size",
    "group.consumer.assignors",
    "group.consumer.migration.policy",
    "group.consumer.disconnect.grace.ms",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupConfig {
    /// `group.consumer.session.timeout.ms`.
    pub session_timeout_ms: i32,
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms`.
    pub heartbeat_interval_ms: i32,
    pub min_heartbeat_interval_ms: i32,
    pub max_heartbeat_interval_ms: i32,
    /// `group.consumer.max.size`.
    pub max_size: i32,
    /// `group.consumer.assignors`, in order; the first is the default.
    pub assignors: Vec<String>,
    /// `group.consumer.migration.policy`.
    pub migration_policy: MigrationPolicy,
    /// `group.consumer.disconnect.grace.ms`, or
    /// [`DISCONNECT_GRACE_DISABLED`].
    pub disconnect_grace_ms: i32,
}

impl Default for ConsumerGroupConfig {
    fn default() -> Self {
        ConsumerGroupConfig {
            session_timeout_ms: DEFAULT_CONSUMER_GROUP_SESSION_TIMEOUT_MS,
            min_session_timeout_ms: DEFAULT_CONSUMER_GROUP_MIN_SESSION_TIMEOUT_MS,
            max_session_timeout_ms: DEFAULT_CONSUMER_GROUP_MAX_SESSION_TIMEOUT_MS,
            heartbeat_interval_ms: DEFAULT_CONSUMER_GROUP_HEARTBEAT_INTERVAL_MS,
            min_heartbeat_interval_ms: DEFAULT_CONSUMER_GROUP_MIN_HEARTBEAT_INTERVAL_MS,
            max_heartbeat_interval_ms: DEFAULT_CONSUMER_GROUP_MAX_HEARTBEAT_INTERVAL_MS,
            max_size: DEFAULT_CONSUMER_GROUP_MAX_SIZE,
            assignors: DEFAULT_CONSUMER_GROUP_ASSIGNORS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            migration_policy: DEFAULT_CONSUMER_GROUP_MIGRATION_POLICY,
            disconnect_grace_ms: DEFAULT_CONSUMER_GROUP_DISCONNECT_GRACE_MS,
        }
    }
}

impl ConsumerGroupConfig {
    /// Sets one setting from its text; the error says what is accepted.
    /// `group.consumer.assignors` is a comma-separated list, like Kafka's.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        if key == "group.consumer.assignors" {
            let names: Vec<String> = value
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            self.assignors = names;
            return self.validate();
        }
        if key == "group.consumer.migration.policy" {
            self.migration_policy = MigrationPolicy::parse(value).ok_or_else(|| {
                format!(
                    "setting {key:?}: {value:?} is not one of disabled, upgrade, downgrade, bidirectional"
                )
            })?;
            return Ok(());
        }
        let v: i64 = value
            .trim()
            .parse()
            .map_err(|_| format!("setting {key:?}: {value:?} is not an integer"))?;
        let positive = || {
            if v < 1 || v > i32::MAX as i64 {
                Err(format!(
                    "setting {key:?}: must be between 1 and {}",
                    i32::MAX
                ))
            } else {
                Ok(v as i32)
            }
        };
        match key {
            "group.consumer.session.timeout.ms" => self.session_timeout_ms = positive()?,
            "group.consumer.min.session.timeout.ms" => self.min_session_timeout_ms = positive()?,
            "group.consumer.max.session.timeout.ms" => self.max_session_timeout_ms = positive()?,
            "group.consumer.heartbeat.interval.ms" => self.heartbeat_interval_ms = positive()?,
            "group.consumer.min.heartbeat.interval.ms" => {
                self.min_heartbeat_interval_ms = positive()?
            }
            "group.consumer.max.heartbeat.interval.ms" => {
                self.max_heartbeat_interval_ms = positive()?
            }
            "group.consumer.max.size" => self.max_size = positive()?,
            "group.consumer.disconnect.grace.ms" => {
                if v != DISCONNECT_GRACE_DISABLED as i64 && !(0..=i32::MAX as i64).contains(&v) {
                    return Err(format!(
                        "setting {key:?}: must be -1 (off) or between 0 and {}",
                        i32::MAX
                    ));
                }
                self.disconnect_grace_ms = v as i32;
            }
            other => return Err(format!("{other:?} is not a consumer group setting")),
        }
        Ok(())
    }

    /// Kafka's checks between the settings: each value inside its bounds,
    /// the heartbeat interval below the session timeout, known assignors.
    pub fn validate(&self) -> Result<(), String> {
        let within = |name: &str, v: i32, min: i32, max: i32| {
            if v < min || v > max {
                Err(format!("{name} ({v}) must be between {min} and {max}"))
            } else {
                Ok(())
            }
        };
        within(
            "group.consumer.session.timeout.ms",
            self.session_timeout_ms,
            self.min_session_timeout_ms,
            self.max_session_timeout_ms,
        )?;
        within(
            "group.consumer.heartbeat.interval.ms",
            self.heartbeat_interval_ms,
            self.min_heartbeat_interval_ms,
            self.max_heartbeat_interval_ms,
        )?;
        if self.heartbeat_interval_ms >= self.session_timeout_ms {
            return Err(format!(
                "group.consumer.heartbeat.interval.ms ({}) must be lower than group.consumer.session.timeout.ms ({})",
                self.heartbeat_interval_ms, self.session_timeout_ms
            ));
        }
        if self.assignors.is_empty() {
            return Err("group.consumer.assignors must name at least one assignor".into());
        }
        for name in &self.assignors {
            if !DEFAULT_CONSUMER_GROUP_ASSIGNORS.contains(&name.as_str()) {
                return Err(format!(
                    "group.consumer.assignors: unknown assignor {name:?} (known: uniform, range)"
                ));
            }
        }
        Ok(())
    }

    /// The assignor a group uses when no member names one.
    pub fn default_assignor(&self) -> &str {
        self.assignors
            .first()
            .map(String::as_str)
            .unwrap_or(DEFAULT_CONSUMER_GROUP_ASSIGNORS[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kafkas_and_valid() {
        let c = ConsumerGroupConfig::default();
        assert_eq!(c.session_timeout_ms, 45_000);
        assert_eq!(c.heartbeat_interval_ms, 5_000);
        assert_eq!(c.max_size, i32::MAX);
        assert_eq!(c.default_assignor(), "uniform");
        c.validate().unwrap();
    }

    #[test]
    fn settings_parse_and_are_checked() {
        let mut c = ConsumerGroupConfig::default();
        c.set("group.consumer.assignors", "range, uniform").unwrap();
        assert_eq!(c.default_assignor(), "range");
        assert!(c.set("group.consumer.assignors", "sticky").is_err());
        c.assignors = vec!["uniform".into()];
        c.set("group.consumer.max.size", "3").unwrap();
        assert_eq!(c.max_size, 3);
        assert!(c.set("group.consumer.max.size", "0").is_err());
        assert_eq!(c.disconnect_grace_ms, 2_000);
        c.set("group.consumer.disconnect.grace.ms", "-1").unwrap();
        assert_eq!(c.disconnect_grace_ms, DISCONNECT_GRACE_DISABLED);
        c.set("group.consumer.disconnect.grace.ms", "0").unwrap();
        assert!(c.set("group.consumer.disconnect.grace.ms", "-2").is_err());
        c.set("group.consumer.heartbeat.interval.ms", "15000")
            .unwrap();
        c.set("group.consumer.session.timeout.ms", "45000").unwrap();
        c.validate().unwrap();
        c.set("group.consumer.session.timeout.ms", "1000").unwrap();
        assert!(c.validate().is_err());
    }
}
