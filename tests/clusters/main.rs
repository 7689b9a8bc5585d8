//! The tests that start a 3-node cluster of real `pinlog serve` processes
//! and take it through phases: the control plane (`cluster`), Kafka's CLI
//! tools and admin clients (`admin_cluster`), replication under kill -9
//! and SIGSTOP (`replication`), and power losses in a replicated cluster
//! (`replication_power_loss`).
//!
//! They are one test binary, not one each, for the suite's wall time:
//! each spends most of its time waiting (on session timeouts, elections,
//! clients and tools; the machine's two cores were 16-34% busy while each
//! ran alone), so two of them run side by side, as the fault suite's
//! clusters always did. Each cluster has its own ports and directories.
//! Their timing checks (a fenced broker, an ISR shrink, a CreateTopics
//! after a controller's kill) compare against session timeouts and stated
//! bounds, not against a quiet machine.
//!
//! The test harness starts tests in the order of their names, two at a
//! time. In this order the longest (`admin_cluster`, about 100 s) runs
//! beside `cluster` then `replication`, and the power losses come last,
//! so the binary takes about half the sum of its tests.
//! Run one module with its path, for example
//! `cargo test --release --test clusters replication::`.

#[path = "../support/mod.rs"]
mod support;

mod admin_cluster;
mod cluster;
mod replication;
mod replication_power_loss;
