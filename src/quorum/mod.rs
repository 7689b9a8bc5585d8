//! The Raft quorum that will replicate the metadata log (the cluster
//! issue): openraft, on glommio, hidden behind this module so that no
//! openraft type leaks into the rest of pinlog.
//!
//! So far this holds the runtime adapter (`runtime.rs`), checked against
//! openraft's own runtime conformance suite. The log storage on
//! `__cluster_metadata-0`, the network and the `Quorum` interface come
//! next.

pub mod runtime;
