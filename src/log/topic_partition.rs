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
}
