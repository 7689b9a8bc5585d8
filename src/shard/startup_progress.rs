//! What each shard is doing while the broker starts, for the log.
//!
//! A start can take long for good reasons (recovering many segments after a
//! crash, waiting for the metadata quorum) and, rarely, hang. Each shard
//! records its stage here as it goes; the watch in
//! `server::lifecycle::broker` logs all stages every
//! [`STARTUP_PROGRESS_LOG_INTERVAL`] until every shard serves, so that a
//! slow or stuck start says where it is.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How often a start that has not finished logs its shards' stages.
pub const STARTUP_PROGRESS_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The stage each shard reached; shared by the shards and the watch.
#[derive(Debug, Default)]
pub struct StartupProgress {
    state: Mutex<Stages>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct Stages {
    by_shard: BTreeMap<usize, String>,
    /// Set when the shards stopped (or failed) before all served.
    ended: bool,
}

/// What the watch found when it woke.
#[derive(Debug, PartialEq, Eq)]
pub enum StartupWait {
    /// Every shard serves, or the run ended: nothing more to log.
    Done,
    /// Still starting after the interval: each shard's stage, for the log.
    Slow(String),
}

impl StartupProgress {
    /// Records that `shard` is now at `stage` (a phrase: "opening 12 partitions").
    pub fn set(&self, shard: usize, stage: impl Into<String>) {
        let mut state = self.lock();
        state.by_shard.insert(shard, stage.into());
    }

    /// Records that `shard` serves; once `shards` do, the watch ends.
    pub fn serving(&self, shard: usize, shards: usize) {
        let mut state = self.lock();
        state.by_shard.insert(shard, SERVING.to_string());
        if state.all_serving(shards) {
            self.changed.notify_all();
        }
    }

    /// Ends the watch whatever the stages: the shards stopped.
    pub fn end(&self) {
        self.lock().ended = true;
        self.changed.notify_all();
    }

    /// Waits up to `interval` for every one of `shards` to serve (or the
    /// run to end).
    pub fn wait(&self, shards: usize, interval: Duration) -> StartupWait {
        let deadline = Instant::now() + interval;
        let mut state = self.lock();
        loop {
            if state.ended || state.all_serving(shards) {
                return StartupWait::Done;
            }
            let now = Instant::now();
            if now >= deadline {
                return StartupWait::Slow(describe(&state, shards));
            }
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Stages> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

const SERVING: &str = "serving";

impl Stages {
    fn all_serving(&self, shards: usize) -> bool {
        self.by_shard.values().filter(|s| *s == SERVING).count() >= shards
    }
}

fn describe(state: &Stages, shards: usize) -> String {
    (0..shards)
        .map(|s| {
            let stage = state
                .by_shard
                .get(&s)
                .map_or("not started (its thread has not run yet)", String::as_str);
            format!("shard {s}: {stage}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_start_names_each_shards_stage() {
        let progress = StartupProgress::default();
        progress.set(0, "starting the metadata quorum");
        progress.serving(1, 3);
        assert_eq!(
            progress.wait(3, Duration::from_millis(10)),
            StartupWait::Slow(
                "shard 0: starting the metadata quorum; shard 1: serving; \
                 shard 2: not started (its thread has not run yet)"
                    .to_string()
            )
        );
    }

    #[test]
    fn the_watch_ends_when_every_shard_serves_or_the_run_ends() {
        let progress = std::sync::Arc::new(StartupProgress::default());
        progress.serving(0, 2);
        // Serving twice counts once.
        progress.serving(0, 2);
        assert!(matches!(
            progress.wait(2, Duration::from_millis(10)),
            StartupWait::Slow(_)
        ));
        let other = progress.clone();
        let t = std::thread::spawn(move || other.serving(1, 2));
        assert_eq!(progress.wait(2, Duration::from_secs(30)), StartupWait::Done);
        t.join().unwrap();

        let ended = StartupProgress::default();
        ended.end();
        assert_eq!(ended.wait(2, Duration::from_secs(30)), StartupWait::Done);
    }
}
