//! The Kafka wire protocol: frames, request headers and the messages of
//! every supported API, decoded zero-copy from `Bytes`.

pub mod api;
pub mod chunks;
pub mod codec;
pub mod config_resource;
pub mod error_code;
pub mod header;
pub mod messages;
