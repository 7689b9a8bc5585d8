//! The network edge: the connections a shard accepts, the frames it reads
//! from them, the dispatch of each frame to its API handler, and the
//! writer that sends responses in request order. TLS and SASL will go here,
//! between the socket and the frames.

pub mod connection;
pub mod dispatch;
pub mod frame_reader;
pub mod request_probe;
pub mod response_writer;
