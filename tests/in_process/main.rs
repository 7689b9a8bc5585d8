//! The tests that drive pinlog's library inside this process: no broker
//! process, no client, no network. Storage against real files (the log,
//! its recovery model, compaction, the read cache, producer and
//! transaction state), the codecs against Kafka's own, the deterministic
//! simulations of replication and of transactions, the seed 000 scenarios,
//! and the module layers.
//!
//! They are one test binary, not one each, because each binary links the
//! whole library: as separate crates they cost minutes of CI's build and
//! ran for seconds. Run one module with its path, for example
//! `cargo test --release --test in_process simulation::`.

#[path = "../common/mod.rs"]
mod common;
mod txn_sim;

mod codec_differential;
mod compaction;
mod kafka_dump_compat;
mod log_model;
mod module_layers;
mod offsets_load;
mod partition_log;
mod producer_state;
mod read_cache;
mod seed000_scenarios;
mod shards;
mod simulation;
mod tools;
mod transactions_log;
mod txn_simulation;
