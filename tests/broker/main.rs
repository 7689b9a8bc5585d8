//! The tests against real `pinlog serve` processes that start one broker
//! (a few start a small cluster) and check one area: the admin APIs, ACLs and
//! what they decide, the CLI with and without security, clients (kcat,
//! confluent-kafka, kafka-python, kafkajs and Java: codecs, crashes and
//! restarts, fetch sessions), broker configs, certificate rotation,
//! compaction and retention in a running broker, connection limits, the
//! core balancer, the data directory's lock, features, reads from disk,
//! forwarded authorization, hostile input, long polls, metrics, open
//! files, power cuts under a broker, SASL with real clients, share-group
//! state, a shard's panic, stray partitions and upgrades from an older data
//! directory. `tests/roles.rs` stays a binary of its own (see its doc).
//!
//! They are one test binary, not one each, because each binary links the
//! whole library, and because most of them wait far more than they
//! compute (on clients, timeouts and restarts), so two side by side keep
//! the machine busier and the suite shorter. Tests of different modules
//! run side by side as tests of one module always did; every broker has
//! its own ports and directory. Run one module with its path, for example
//! `cargo test --release --test broker hostile_input::`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod admin_apis;
mod authorization;
mod broker_configs;
mod certificate_rotation;
mod cli;
mod cli_security;
mod clients;
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
mod power_loss;
mod retention_and_offsets;
mod sasl;
mod shard_panic;
mod share_state;
mod stray_partitions;
mod upgrade;
