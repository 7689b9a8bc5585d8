//! Test-only hooks in the replica fetcher, so that a test with real brokers
//! can put a follower into the exact states of seed 000's failure
//! scenarios, which ordinary timing reaches only by luck.
//!
//! They are off unless the broker starts with [`FETCHER_HOOKS_ENV`] naming a
//! directory. The test then controls each follower partition with empty
//! files in it, named after the broker id and the partition:
//! - `<node.id>.<topic>-<partition>.hold`: the follower sends nothing for
//!   the partition, neither OffsetsForLeaderEpoch nor Fetch, while the file
//!   exists. Seed 000's "the leader crashes before it answers".
//! - `<node.id>.<topic>-<partition>.freeze-hw`: the follower keeps
//!   fetching and appending but ignores the leader's HW in the responses,
//!   as if each response's HW were lost. Seed 000's "the follower crashes
//!   before it processes the response that carries HW=2".
//! - `<node.id>.<topic>-<partition>.refuse-epoch`: the follower acts as if
//!   the leader refused every OffsetsForLeaderEpoch for the partition (as
//!   a leader whose image is behind does), so the partition stays waiting
//!   to truncate while the others go on.
//!
//! A broker started without the variable never looks at the file system
//! here.

use std::path::PathBuf;

use crate::topic_partition::TopicPartition;

/// The environment variable that turns the hooks on: a directory.
pub const FETCHER_HOOKS_ENV: &str = "PINLOG_TEST_FETCHER_HOOKS";

/// The hook files of one broker.
#[derive(Debug, Clone)]
pub struct FetcherTestHooks {
    dir: PathBuf,
    node_id: i32,
}

impl FetcherTestHooks {
    /// The hooks of broker `node_id`, if the environment turns them on.
    pub fn from_env(node_id: i32) -> Option<FetcherTestHooks> {
        let dir = std::env::var_os(FETCHER_HOOKS_ENV)?;
        tracing::warn!(
            "{FETCHER_HOOKS_ENV} is set: replica fetchers obey test hook files in {}; never set \
             it outside tests",
            PathBuf::from(&dir).display()
        );
        Some(FetcherTestHooks {
            dir: PathBuf::from(dir),
            node_id,
        })
    }

    /// The follower must send nothing for `tp`.
    pub fn held(&self, tp: &TopicPartition) -> bool {
        self.exists(tp, "hold")
    }

    /// The follower must act as if the leader refused its
    /// OffsetsForLeaderEpoch for `tp`.
    pub fn epoch_refused(&self, tp: &TopicPartition) -> bool {
        self.exists(tp, "refuse-epoch")
    }

    /// The follower must ignore the leader's HW for `tp`.
    pub fn high_watermark_frozen(&self, tp: &TopicPartition) -> bool {
        self.exists(tp, "freeze-hw")
    }

    /// A stat on a test machine's directory: blocking, but only ever run
    /// when a test turned the hooks on.
    fn exists(&self, tp: &TopicPartition, hook: &str) -> bool {
        self.dir
            .join(format!("{}.{tp}.{hook}", self.node_id))
            .exists()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_files_are_per_broker_and_partition() {
        let dir = tempfile::tempdir().expect("tempdir");
        let hooks = FetcherTestHooks {
            dir: dir.path().to_path_buf(),
            node_id: 2,
        };
        let tp = TopicPartition::new("seed".to_string(), 0);
        let other = TopicPartition::new("seed".to_string(), 1);
        assert!(!hooks.held(&tp) && !hooks.high_watermark_frozen(&tp));
        std::fs::write(dir.path().join("2.seed-0.hold"), b"").expect("write");
        std::fs::write(dir.path().join("1.seed-0.freeze-hw"), b"").expect("write");
        assert!(hooks.held(&tp));
        assert!(!hooks.held(&other), "another partition");
        assert!(
            !hooks.high_watermark_frozen(&tp),
            "another broker's hook file"
        );
    }
}
