//! Cluster metadata: records (after KRaft's), the image they build, the
//! local metadata log that persists them, and topic settings.

pub mod dynamic_broker_config;
pub mod image;
pub mod records;
pub mod store;
pub mod topic_config;
