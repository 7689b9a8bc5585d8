//! TEMPORARY stand-in until the features branch merges.
pub const TRANSACTION_VERSION: &str = "transaction.version";
