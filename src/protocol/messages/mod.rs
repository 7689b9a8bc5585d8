//! One file per Kafka API: its request and response structs, each with
//! `decode(&mut Reader, version)` and `encode(&self, &mut BytesMut, version)`.
//! Brokers decode requests and encode responses; the load generator and the
//! tests do the reverse, with the same code.

pub mod api_versions;
