//! The short tests against real `pinlog serve` processes: each starts its
//! own broker (a few start a small cluster), checks one area in seconds,
//! and stops it. The admin APIs, the CLI with and without security, broker
//! configs, certificate rotation, compaction and retention in a running
//! broker, connection limits, the core balancer, the data directory's
//! lock, features, reads from disk, forwarded authorization, hostile
//! input, long polls, metrics, open files, a shard's panic, stray
//! partitions and upgrades from an older data directory.
//!
//! They are one test binary, not one each, because each binary links the
//! whole library. Tests of different modules run side by side as tests of
//! one module always did; every broker has its own ports and directory.
//! Run one module with its path, for example
//! `cargo test --release --test broker hostile_input::`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod admin_apis;
mod broker_configs;
mod certificate_rotation;
mod cli;
mod cli_security;
mod compaction_broker;
mod connection_limits;
mod core_balancer;
mod data_dir_lock;
mod features;
mod fetch_from_disk;
mod forwarded_authorization;
mod hostile_input;
mod long_poll;
mod metrics;
mod open_files;
mod retention_and_offsets;
mod shard_panic;
mod stray_partitions;
mod upgrade;
