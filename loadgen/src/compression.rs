//! Kafka's record-batch compression codecs live in the broker library
//! (`pinlog::log::compression`), which the log cleaner shares; this module
//! keeps the loadgen's paths.

pub use pinlog::log::compression::*;
