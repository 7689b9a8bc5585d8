//! Log storage: partitions as directories of Kafka-format segments.
//!
//! Nothing in this module knows about the Kafka wire protocol or about
//! shards; it stores and serves RecordBatch v2 bytes.

pub mod batch;
pub mod batch_cache;
pub mod cache_blocks;
pub mod checkpoint;
pub mod cleaner;
pub mod compression;
pub mod control_batch;
pub mod data_dir;
pub mod direct_io;
pub mod epoch_cache;
pub mod mmap_index;
pub mod offset_index;
pub mod offset_map;
pub mod partition_log;
pub mod partition_metadata;
pub mod producer_state;
pub mod read_through;
pub mod record_filter;
pub mod segment;
pub mod segment_file;
pub mod swap;
pub mod time_index;
pub mod transaction_index;
