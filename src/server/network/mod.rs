//! The network edge: the connections a shard accepts, the frames it reads
//! from them, the dispatch of each frame to its API handler, and the
//! writer that sends responses in request order. TLS sits between the
//! socket and the frames, and SASL (`sasl.rs`) before dispatch; each
//! connection carries its session (`crate::security::session`).

pub mod connection;
pub mod dispatch;
pub mod frame_reader;
pub mod request_probe;
pub mod request_time;
pub mod response_writer;
pub mod sasl;
