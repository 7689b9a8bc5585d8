//! Transactions (KIP-98), as pure state machines.
//!
//! - [`partition`]: what one partition knows of transactions: the open
//!   ones, the completed ones whose marker is not yet below the high
//!   watermark, the last stable offset (LSO) that read_committed consumers
//!   read up to, and the entries of the aborted-transaction index.
//! - [`marker`]: the COMMIT and ABORT markers' record key and value in
//!   Kafka's format (`EndTransactionMarker`).
//! - [`metadata`]: a transactional id's state at its coordinator, and the
//!   legal transitions between states.
//! - [`coordinator`]: the coordinator's decisions on InitProducerId,
//!   AddPartitionsToTxn, EndTxn and timeouts.
//! - [`log_record`]: `__transaction_state`'s record schemas, and which
//!   partition an id lives on.
//!
//! The log (`src/log/producer_state.rs`) feeds [`partition::PartitionTxns`]
//! as it applies batches, and writes the aborted entries it returns to the
//! segment's `.txnindex` file.

pub mod coordinator;
pub mod log_record;
pub mod marker;
pub mod metadata;
pub mod partition;
