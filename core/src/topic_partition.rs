//! Partition names and their directory names (`<topic>-<partition>`).

use std::fmt;

/// A topic partition, as Kafka names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }

    /// The partition directory name under a data directory, as in Kafka's
    /// `log.dirs`.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }

    /// The name a deleted partition's directory takes until its files are
    /// gone, as Kafka's `<topic>-<partition>.<unique id>-delete`: renaming
    /// is one metadata operation, removing gigabytes of segments is not,
    /// and a name no start loads means a crash in between deletes nothing
    /// twice and serves nothing deleted.
    pub fn deleted_dir_name(&self, unique: u64) -> String {
        format!("{}.{unique:x}{DELETED_DIR_SUFFIX}", self.dir_name())
    }

    /// Whether `name` is a directory [`TopicPartition::deleted_dir_name`]
    /// made.
    pub fn is_deleted_dir_name(name: &str) -> bool {
        name.strip_suffix(DELETED_DIR_SUFFIX)
            .and_then(|rest| rest.rsplit_once('.'))
            .is_some_and(|(dir, unique)| {
                !unique.is_empty()
                    && unique.bytes().all(|b| b.is_ascii_hexdigit())
                    && TopicPartition::parse_dir_name(dir).is_some()
            })
    }

    /// Parses `<topic>-<partition>`; topics may themselves contain dashes.
    pub fn parse_dir_name(name: &str) -> Option<TopicPartition> {
        let (topic, partition) = name.rsplit_once('-')?;
        if topic.is_empty()
            || partition.is_empty()
            || !partition.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        Some(TopicPartition::new(topic, partition.parse().ok()?))
    }
}

/// Ends the name of a deleted partition's directory (Kafka's
/// `DeleteDirSuffix`).
pub const DELETED_DIR_SUFFIX: &str = "-delete";

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_names_round_trip_with_dashes_in_topics() {
        let tp = TopicPartition::new("my-topic", 12);
        assert_eq!(tp.dir_name(), "my-topic-12");
        assert_eq!(TopicPartition::parse_dir_name("my-topic-12"), Some(tp));
        assert_eq!(TopicPartition::parse_dir_name("nodash"), None);
        assert_eq!(TopicPartition::parse_dir_name("t-x"), None);
        assert_eq!(TopicPartition::parse_dir_name("-3"), None);
    }

    #[test]
    fn deleted_dir_names_are_recognised_and_never_loaded() {
        let name = TopicPartition::new("my-topic", 3).deleted_dir_name(0xbeef);
        assert_eq!(name, "my-topic-3.beef-delete");
        assert!(TopicPartition::is_deleted_dir_name(&name));
        assert_eq!(TopicPartition::parse_dir_name(&name), None);
        assert!(!TopicPartition::is_deleted_dir_name("my-topic-3"));
        assert!(!TopicPartition::is_deleted_dir_name("my-topic-delete"));
        assert!(!TopicPartition::is_deleted_dir_name("x.zz-delete"));
    }
}
