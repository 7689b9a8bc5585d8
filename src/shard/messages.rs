//! Requests one shard sends another over the channel mesh. Every request
//! carries its own reply channel; the payloads are `Send` and own their
//! bytes (reference-counted, not copied).

use bytes::{Bytes, BytesMut};

use crate::config::LogConfig;
use crate::error::LogResult;
use crate::log::partition_log::AppendInfo;
use crate::shard::cross_shard::ReplySender;
use crate::topic_partition::TopicPartition;

/// The log state of one partition, as another shard sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionOffsetsView {
    pub log_start_offset: i64,
    pub high_watermark: i64,
    pub log_end_offset: i64,
}

/// Work shipped to another shard; it builds its future there.
pub type RemoteTask = Box<
    dyn FnOnce(
            std::rc::Rc<crate::shard::shard::Shard>,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>
        + Send,
>;

pub enum ShardRequest {
    /// Open (or create) a partition on its owner.
    OpenPartition {
        tp: TopicPartition,
        config: Option<LogConfig>,
        reply: ReplySender<LogResult<()>>,
    },
    /// Append producer batches as leader.
    Append {
        tp: TopicPartition,
        batches: BytesMut,
        leader_epoch: i32,
        reply: ReplySender<LogResult<AppendInfo>>,
    },
    /// Read batches up to `max_bytes` from `offset`, below the HW.
    Read {
        tp: TopicPartition,
        offset: i64,
        max_bytes: usize,
        reply: ReplySender<LogResult<Vec<Bytes>>>,
    },
    /// Set the high watermark (single-replica brokers set it to the LEO).
    SetHighWatermark {
        tp: TopicPartition,
        high_watermark: i64,
        reply: ReplySender<LogResult<PartitionOffsetsView>>,
    },
    /// Flush every partition the shard owns.
    FlushAll { reply: ReplySender<LogResult<()>> },
    /// Round trip with no work, for measuring the cost of a hop.
    Ping { reply: ReplySender<usize> },
    /// Run a closure on the receiving shard (Seastar's `submit_to`): how
    /// layers above the storage engine do work on a partition's owner
    /// without adding message types here. The closure replies itself.
    Run(RemoteTask),
    /// The sender's work is done; it will send nothing more.
    Done,
}
