//! The replication shell on each shard: the replica fetchers and their
//! connections to leaders, the ISR changes a leader proposes, and the
//! replication throttles. The decisions (`ReplicaState`, the follower fetch
//! session, the throttle meters) are pure and live in pinlog-core
//! (`crate::replica`); this room carries them out with sockets and timers.

pub mod fetcher_test_hooks;
pub mod isr_changes;
pub mod joining_followers;
pub mod kafka_peer;
pub mod quotas;
pub mod replica_fetcher;
