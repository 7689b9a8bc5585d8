//! Fetch (key 1), versions 4-12; v12 is the first flexible version.
//!
//! v4 is the floor because it is the first version whose clients read
//! RecordBatch v2 and the last stable offset; v13 replaces topic names with
//! topic ids, which pinlog does not advertise.
//!
//! Responses carry record data that the broker must not copy: the
//! [`FetchResponse::encode_chunked`] path writes every ordinary field into a
//! buffer and hands the records to [`ChunkWriter::push_records`], so cached
//! batches travel as the log's own `Bytes` and file ranges are read by the
//! connection's shard and sent as stored.
//!
//! Tagged fields are always written after every untagged field of their
//! struct, whatever their position in Kafka's JSON: in a partition they
//! follow the records, not the log start offset.

use bytes::{BufMut, BytesMut};

use super::min_topic_bytes;
use crate::chunks::{ChunkWriter, RecordData};
use crate::codec::{parse_tag, put_tag, DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 12;

/// `isolation_level` values.
pub const READ_UNCOMMITTED: i8 = 0;
pub const READ_COMMITTED: i8 = 1;

/// Session epoch that asks for a new session.
pub const INITIAL_EPOCH: i32 = 0;
/// Session epoch that closes a session / asks for a sessionless fetch.
pub const FINAL_EPOCH: i32 = -1;

/// Kafka's `JFetchMetadata.nextEpoch`: the epoch after `epoch`, skipping
/// 0 and -1 when it wraps.
pub fn next_epoch(epoch: i32) -> i32 {
    if epoch < 0 {
        FINAL_EPOCH
    } else if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    /// Tag 0, v12+: the cluster id the requester believes it talks to;
    /// `None` (the default, and then omitted) when unknown.
    pub cluster_id: Option<String>,
    /// The follower's broker id, or -1 for a consumer.
    pub replica_id: i32,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub max_bytes: i32,
    pub isolation_level: i8,
    /// v7+; 0 (no session) otherwise.
    pub session_id: i32,
    /// v7+; -1 otherwise. -1 with session id 0 means "full fetch, no
    /// session"; 0 asks for a new session.
    pub session_epoch: i32,
    pub topics: Vec<FetchTopic>,
    /// v7+; empty otherwise.
    pub forgotten_topics_data: Vec<ForgottenTopic>,
    /// v11+; empty otherwise.
    pub rack_id: String,
}

impl Default for FetchRequest {
    fn default() -> Self {
        FetchRequest {
            cluster_id: None,
            replica_id: -1,
            max_wait_ms: 0,
            min_bytes: 0,
            max_bytes: i32::MAX,
            isolation_level: READ_UNCOMMITTED,
            session_id: 0,
            session_epoch: -1,
            topics: Vec::new(),
            forgotten_topics_data: Vec::new(),
            rack_id: String::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchTopic {
    pub topic: String,
    pub partitions: Vec<FetchPartition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartition {
    pub partition: i32,
    /// v9+; -1 (do not fence) otherwise.
    pub current_leader_epoch: i32,
    pub fetch_offset: i64,
    /// v12+; -1 (no epoch validation) otherwise.
    pub last_fetched_epoch: i32,
    /// v5+; -1 otherwise. Only followers set it.
    pub log_start_offset: i64,
    pub partition_max_bytes: i32,
}

impl Default for FetchPartition {
    fn default() -> Self {
        FetchPartition {
            partition: 0,
            current_leader_epoch: -1,
            fetch_offset: 0,
            last_fetched_epoch: -1,
            log_start_offset: -1,
            partition_max_bytes: 0,
        }
    }
}

/// Partitions to drop from an incremental fetch session, v7+.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForgottenTopic {
    pub topic: String,
    pub partitions: Vec<i32>,
}

fn min_fetch_partition_bytes(version: i16, flexible: bool) -> usize {
    // partition, fetch offset, partition max bytes.
    let mut n = 4 + 8 + 4;
    if version >= 5 {
        n += 8;
    }
    if version >= 9 {
        n += 4;
    }
    if flexible {
        // last fetched epoch and the tagged-field count.
        n += 4 + 1;
    }
    n
}

impl FetchRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut req = FetchRequest {
            replica_id: r.i32("replica_id")?,
            max_wait_ms: r.i32("max_wait_ms")?,
            min_bytes: r.i32("min_bytes")?,
            max_bytes: r.i32("max_bytes")?,
            isolation_level: r.i8("isolation_level")?,
            ..Default::default()
        };
        if version >= 7 {
            req.session_id = r.i32("session_id")?;
            req.session_epoch = r.i32("session_epoch")?;
        }
        let min_partition = min_fetch_partition_bytes(version, flexible);
        req.topics = r.array("topics", flexible, min_topic_bytes(flexible), |r| {
            let topic = r.string("topic", flexible)?;
            let partitions = r.array("partitions", flexible, min_partition, |r| {
                let mut p = FetchPartition {
                    partition: r.i32("partition")?,
                    ..Default::default()
                };
                if version >= 9 {
                    p.current_leader_epoch = r.i32("current_leader_epoch")?;
                }
                p.fetch_offset = r.i64("fetch_offset")?;
                if version >= 12 {
                    p.last_fetched_epoch = r.i32("last_fetched_epoch")?;
                }
                if version >= 5 {
                    p.log_start_offset = r.i64("log_start_offset")?;
                }
                p.partition_max_bytes = r.i32("partition_max_bytes")?;
                if flexible {
                    // ReplicaDirectoryId (tag 0) is v17+; skipped.
                    r.skip_tagged_fields()?;
                }
                Ok(p)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(FetchTopic { topic, partitions })
        })?;
        if version >= 7 {
            req.forgotten_topics_data = r.array(
                "forgotten_topics_data",
                flexible,
                min_topic_bytes(flexible),
                |r| {
                    let topic = r.string("forgotten topic", flexible)?;
                    let partitions =
                        r.array("forgotten partitions", flexible, 4, |r| r.i32("partition"))?;
                    if flexible {
                        r.skip_tagged_fields()?;
                    }
                    Ok(ForgottenTopic { topic, partitions })
                },
            )?;
        }
        if version >= 11 {
            req.rack_id = r.string("rack_id", flexible)?;
        }
        if flexible {
            let mut cluster_id = None;
            r.tagged_fields(|tag, value| {
                // ReplicaState (tag 1) is v15+ and skipped with the rest.
                if tag == 0 {
                    cluster_id = parse_tag(tag, value, |r| r.nullable_string("cluster_id", true))?;
                }
                Ok(())
            })?;
            req.cluster_id = cluster_id;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.replica_id);
        w.put_i32(self.max_wait_ms);
        w.put_i32(self.min_bytes);
        w.put_i32(self.max_bytes);
        w.put_i8(self.isolation_level);
        if version >= 7 {
            w.put_i32(self.session_id);
            w.put_i32(self.session_epoch);
        }
        w.put_array_len(Some(self.topics.len()), flexible);
        for t in &self.topics {
            w.put_string(&t.topic, flexible);
            w.put_array_len(Some(t.partitions.len()), flexible);
            for p in &t.partitions {
                w.put_i32(p.partition);
                if version >= 9 {
                    w.put_i32(p.current_leader_epoch);
                }
                w.put_i64(p.fetch_offset);
                if version >= 12 {
                    w.put_i32(p.last_fetched_epoch);
                }
                if version >= 5 {
                    w.put_i64(p.log_start_offset);
                }
                w.put_i32(p.partition_max_bytes);
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
        if version >= 7 {
            w.put_array_len(Some(self.forgotten_topics_data.len()), flexible);
            for t in &self.forgotten_topics_data {
                w.put_string(&t.topic, flexible);
                w.put_array_len(Some(t.partitions.len()), flexible);
                for p in &t.partitions {
                    w.put_i32(*p);
                }
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
        }
        if version >= 11 {
            w.put_string(&self.rack_id, flexible);
        }
        if flexible {
            // A tag holding its default (a null cluster id) is omitted.
            match &self.cluster_id {
                None => w.put_empty_tagged_fields(),
                Some(id) => {
                    w.put_uvarint(1);
                    let mut value = BytesMut::new();
                    value.put_string(id, true);
                    put_tag(w, 0, &value);
                }
            }
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchResponse {
    pub throttle_time_ms: i32,
    /// v7+; 0 otherwise. A top-level error (for example a fetch-session
    /// error) applies to the whole request.
    pub error_code: i16,
    /// v7+; 0 (no session) otherwise.
    pub session_id: i32,
    pub responses: Vec<FetchableTopicResponse>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchableTopicResponse {
    pub topic: String,
    pub partitions: Vec<PartitionData>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionData {
    pub partition_index: i32,
    pub error_code: i16,
    pub high_watermark: i64,
    /// -1 when unknown.
    pub last_stable_offset: i64,
    /// v5+; -1 otherwise.
    pub log_start_offset: i64,
    /// Tag 0, v12+: set when the follower's log diverges from the leader's.
    pub diverging_epoch: EpochEndOffset,
    /// Tag 1, v12+: the leader as this broker knows it.
    pub current_leader: LeaderIdAndEpoch,
    /// Tag 2, v12+: the snapshot to fetch instead (KRaft only).
    pub snapshot_id: SnapshotId,
    /// `None` (null) unless the consumer reads committed data and there are
    /// aborted transactions in range.
    pub aborted_transactions: Option<Vec<AbortedTransaction>>,
    /// v11+; -1 (no preference) otherwise.
    pub preferred_read_replica: i32,
    /// Record batches. Send `Some` (possibly empty) even with an error:
    /// librdkafka treats a null record set as a parse failure and drops the
    /// whole response.
    pub records: Option<RecordData>,
}

impl Default for PartitionData {
    fn default() -> Self {
        PartitionData {
            partition_index: 0,
            error_code: 0,
            high_watermark: 0,
            last_stable_offset: -1,
            log_start_offset: -1,
            diverging_epoch: EpochEndOffset::default(),
            current_leader: LeaderIdAndEpoch::default(),
            snapshot_id: SnapshotId::default(),
            aborted_transactions: None,
            preferred_read_replica: -1,
            records: None,
        }
    }
}

/// Tagged struct; all -1 (its default, and then omitted) when the logs do
/// not diverge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEndOffset {
    pub epoch: i32,
    pub end_offset: i64,
}

impl Default for EpochEndOffset {
    fn default() -> Self {
        EpochEndOffset {
            epoch: -1,
            end_offset: -1,
        }
    }
}

/// Tagged struct; all -1 (its default, and then omitted) when not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderIdAndEpoch {
    pub leader_id: i32,
    pub leader_epoch: i32,
}

impl Default for LeaderIdAndEpoch {
    fn default() -> Self {
        LeaderIdAndEpoch {
            leader_id: -1,
            leader_epoch: -1,
        }
    }
}

/// Tagged struct; all -1 (its default, and then omitted) when not sent.
/// Note the field order on the wire: end offset first, then epoch, the
/// reverse of [`EpochEndOffset`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotId {
    pub end_offset: i64,
    pub epoch: i32,
}

impl Default for SnapshotId {
    fn default() -> Self {
        SnapshotId {
            end_offset: -1,
            epoch: -1,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AbortedTransaction {
    pub producer_id: i64,
    pub first_offset: i64,
}

fn min_partition_data_bytes(version: i16, flexible: bool) -> usize {
    // partition, error code, high watermark, last stable offset, a null
    // aborted-transactions array, and a records length.
    let mut n = 4 + 2 + 8 + 8;
    n += if flexible { 1 + 1 } else { 4 + 4 };
    if version >= 5 {
        n += 8;
    }
    if version >= 11 {
        n += 4;
    }
    if flexible {
        n += 1;
    }
    n
}

/// The three tagged structs of a partition, each followed by its own
/// (empty) tagged-field section, as every struct in a flexible version is.
fn encode_partition_tags(w: &mut BytesMut, p: &PartitionData) {
    let diverging = p.diverging_epoch != EpochEndOffset::default();
    let leader = p.current_leader != LeaderIdAndEpoch::default();
    let snapshot = p.snapshot_id != SnapshotId::default();
    w.put_uvarint(diverging as u64 + leader as u64 + snapshot as u64);
    let mut value = BytesMut::new();
    if diverging {
        value.put_i32(p.diverging_epoch.epoch);
        value.put_i64(p.diverging_epoch.end_offset);
        value.put_empty_tagged_fields();
        put_tag(w, 0, &value.split());
    }
    if leader {
        value.put_i32(p.current_leader.leader_id);
        value.put_i32(p.current_leader.leader_epoch);
        value.put_empty_tagged_fields();
        put_tag(w, 1, &value.split());
    }
    if snapshot {
        value.put_i64(p.snapshot_id.end_offset);
        value.put_i32(p.snapshot_id.epoch);
        value.put_empty_tagged_fields();
        put_tag(w, 2, &value.split());
    }
}

fn decode_partition_tags(r: &mut Reader, p: &mut PartitionData) -> DecodeResult<()> {
    r.tagged_fields(|tag, value| {
        match tag {
            0 => {
                p.diverging_epoch = parse_tag(tag, value, |r| {
                    let v = EpochEndOffset {
                        epoch: r.i32("diverging epoch")?,
                        end_offset: r.i64("diverging end_offset")?,
                    };
                    r.skip_tagged_fields()?;
                    Ok(v)
                })?
            }
            1 => {
                p.current_leader = parse_tag(tag, value, |r| {
                    let v = LeaderIdAndEpoch {
                        leader_id: r.i32("leader_id")?,
                        leader_epoch: r.i32("leader_epoch")?,
                    };
                    r.skip_tagged_fields()?;
                    Ok(v)
                })?
            }
            2 => {
                p.snapshot_id = parse_tag(tag, value, |r| {
                    let v = SnapshotId {
                        end_offset: r.i64("snapshot end_offset")?,
                        epoch: r.i32("snapshot epoch")?,
                    };
                    r.skip_tagged_fields()?;
                    Ok(v)
                })?
            }
            _ => {}
        }
        Ok(())
    })
}

impl FetchResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut resp = FetchResponse {
            throttle_time_ms: r.i32("throttle_time_ms")?,
            ..Default::default()
        };
        if version >= 7 {
            resp.error_code = r.i16("error_code")?;
            resp.session_id = r.i32("session_id")?;
        }
        let min_partition = min_partition_data_bytes(version, flexible);
        let min_aborted = if flexible { 16 + 1 } else { 16 };
        resp.responses = r.array("responses", flexible, min_topic_bytes(flexible), |r| {
            let topic = r.string("topic", flexible)?;
            let partitions = r.array("partitions", flexible, min_partition, |r| {
                let mut p = PartitionData {
                    partition_index: r.i32("partition_index")?,
                    error_code: r.i16("error_code")?,
                    high_watermark: r.i64("high_watermark")?,
                    last_stable_offset: r.i64("last_stable_offset")?,
                    ..Default::default()
                };
                if version >= 5 {
                    p.log_start_offset = r.i64("log_start_offset")?;
                }
                p.aborted_transactions =
                    r.nullable_array("aborted_transactions", flexible, min_aborted, |r| {
                        let txn = AbortedTransaction {
                            producer_id: r.i64("producer_id")?,
                            first_offset: r.i64("first_offset")?,
                        };
                        if flexible {
                            r.skip_tagged_fields()?;
                        }
                        Ok(txn)
                    })?;
                if version >= 11 {
                    p.preferred_read_replica = r.i32("preferred_read_replica")?;
                }
                p.records = r
                    .nullable_bytes("records", flexible)?
                    .map(RecordData::Bytes);
                if flexible {
                    decode_partition_tags(r, &mut p)?;
                }
                Ok(p)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(FetchableTopicResponse { topic, partitions })
        })?;
        if flexible {
            // NodeEndpoints (tag 0) is v16+; skipped.
            r.skip_tagged_fields()?;
        }
        Ok(resp)
    }

    /// Encodes the response into `w`: ordinary fields into `w.buf()`, each
    /// partition's record data as its own chunks after its length prefix,
    /// so records are never copied. This is the broker's path.
    pub fn encode_chunked(&self, w: &mut ChunkWriter, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        let b = w.buf();
        b.put_i32(self.throttle_time_ms);
        if version >= 7 {
            b.put_i16(self.error_code);
            b.put_i32(self.session_id);
        }
        b.put_array_len(Some(self.responses.len()), flexible);
        for t in &self.responses {
            let b = w.buf();
            b.put_string(&t.topic, flexible);
            b.put_array_len(Some(t.partitions.len()), flexible);
            for p in &t.partitions {
                let b = w.buf();
                b.put_i32(p.partition_index);
                b.put_i16(p.error_code);
                b.put_i64(p.high_watermark);
                b.put_i64(p.last_stable_offset);
                if version >= 5 {
                    b.put_i64(p.log_start_offset);
                }
                match &p.aborted_transactions {
                    None => b.put_array_len(None, flexible),
                    Some(txns) => {
                        b.put_array_len(Some(txns.len()), flexible);
                        for t in txns {
                            b.put_i64(t.producer_id);
                            b.put_i64(t.first_offset);
                            if flexible {
                                b.put_empty_tagged_fields();
                            }
                        }
                    }
                }
                if version >= 11 {
                    b.put_i32(p.preferred_read_replica);
                }
                match &p.records {
                    None => b.put_nullable_bytes(None, flexible),
                    Some(data) => {
                        let len = data.len();
                        if flexible {
                            b.put_uvarint(len as u64 + 1);
                        } else {
                            b.put_i32(len as i32);
                        }
                        w.push_records(data);
                    }
                }
                if flexible {
                    encode_partition_tags(w.buf(), p);
                }
            }
            if flexible {
                w.buf().put_empty_tagged_fields();
            }
        }
        if flexible {
            w.buf().put_empty_tagged_fields();
        }
    }

    /// Encodes the response into one buffer, copying the records. For
    /// clients and tests, whose record data is in memory.
    ///
    /// # Panics
    ///
    /// If any partition's records include a file range, which cannot be
    /// copied without I/O: the broker must use
    /// [`FetchResponse::encode_chunked`].
    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let mut cw = ChunkWriter::new();
        self.encode_chunked(&mut cw, version);
        match cw.into_bytes() {
            Some(bytes) => w.extend_from_slice(&bytes),
            None => panic!("FetchResponse::encode cannot copy file-range records"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunks::{Chunk, FileRange, StoredFile};
    use crate::messages::test_support::*;
    use bytes::Bytes;

    use std::sync::Arc;

    const VERSIONS: std::ops::RangeInclusive<i16> = 4..=12;

    fn request(version: i16) -> FetchRequest {
        let mut p = FetchPartition {
            partition: 2,
            fetch_offset: 1 << 33,
            partition_max_bytes: 1 << 20,
            ..Default::default()
        };
        if version >= 5 {
            p.log_start_offset = 17;
        }
        if version >= 9 {
            p.current_leader_epoch = 6;
        }
        if version >= 12 {
            p.last_fetched_epoch = 5;
        }
        let mut m = FetchRequest {
            replica_id: 3,
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 50 << 20,
            isolation_level: READ_COMMITTED,
            topics: vec![
                FetchTopic {
                    topic: "orders".into(),
                    partitions: vec![p, FetchPartition::default()],
                },
                FetchTopic {
                    topic: "empty".into(),
                    partitions: vec![],
                },
            ],
            ..Default::default()
        };
        if version >= 7 {
            m.session_id = 99;
            m.session_epoch = 4;
            m.forgotten_topics_data = vec![ForgottenTopic {
                topic: "old".into(),
                partitions: vec![0, 7],
            }];
        }
        if version >= 11 {
            m.rack_id = "rack-a".into();
        }
        if version >= 12 {
            m.cluster_id = Some("cluster-xyz".into());
        }
        m
    }

    fn response(version: i16) -> FetchResponse {
        let mut p = PartitionData {
            partition_index: 2,
            error_code: 0,
            high_watermark: 1000,
            last_stable_offset: 990,
            aborted_transactions: Some(vec![
                AbortedTransaction {
                    producer_id: 77,
                    first_offset: 950,
                },
                AbortedTransaction {
                    producer_id: 78,
                    first_offset: 960,
                },
            ]),
            records: Some(RecordData::Bytes(Bytes::from_static(b"some batches"))),
            ..Default::default()
        };
        if version >= 5 {
            p.log_start_offset = 10;
        }
        if version >= 11 {
            p.preferred_read_replica = 4;
        }
        if version >= 12 {
            p.diverging_epoch = EpochEndOffset {
                epoch: 3,
                end_offset: 900,
            };
            p.current_leader = LeaderIdAndEpoch {
                leader_id: 1,
                leader_epoch: 8,
            };
            p.snapshot_id = SnapshotId {
                end_offset: 800,
                epoch: 2,
            };
        }
        let errored = PartitionData {
            partition_index: 3,
            error_code: 6,
            high_watermark: -1,
            records: Some(RecordData::Bytes(Bytes::new())),
            ..Default::default()
        };
        let null_records = PartitionData {
            partition_index: 4,
            ..Default::default()
        };
        let mut m = FetchResponse {
            throttle_time_ms: 20,
            responses: vec![FetchableTopicResponse {
                topic: "orders".into(),
                partitions: vec![p, errored, null_records],
            }],
            ..Default::default()
        };
        if version >= 7 {
            m.error_code = 70;
            m.session_id = 99;
        }
        m
    }

    #[test]
    fn default_tags_are_omitted() {
        // A v12 request without a cluster id ends in an empty tag section.
        let b = encode(&FetchRequest::default(), 12);
        assert_eq!(b.last(), Some(&0));

        // A v12 partition whose tagged structs hold their defaults writes
        // no tags at all: partition, error, hw, lso, log start, null
        // aborted, preferred replica, empty records, tag count.
        let resp = FetchResponse {
            responses: vec![FetchableTopicResponse {
                topic: "t".into(),
                partitions: vec![PartitionData {
                    records: Some(RecordData::Bytes(Bytes::new())),
                    ..Default::default()
                }],
            }],
            ..Default::default()
        };
        let b = encode(&resp, 12);
        let header = 4 + 2 + 4 + 1 + 2 + 1;
        let partition = 4 + 2 + 8 + 8 + 8 + 1 + 4 + 1 + 1;
        assert_eq!(b.len(), header + partition + 1 + 1);
        assert_eq!(&b[b.len() - 3..], &[0, 0, 0]);
    }

    #[test]
    fn unknown_tags_are_skipped_and_bad_known_tags_rejected() {
        let base = FetchRequest::default();
        let mut b = BytesMut::new();
        // Everything but the trailing empty tag section...
        let full = encode(&base, 12);
        b.extend_from_slice(&full[..full.len() - 1]);
        // ...then an unknown tag 1 (ReplicaState) and the cluster id.
        let mut with_tags = b.clone();
        with_tags.put_uvarint(2);
        with_tags.put_uvarint(0);
        with_tags.put_uvarint(3);
        with_tags.put_string("ab", true);
        put_tag(&mut with_tags, 1, &[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0]);
        let m = FetchRequest::decode(&mut Reader::new(with_tags.freeze()), 12).unwrap();
        assert_eq!(m.cluster_id.as_deref(), Some("ab"));

        // A cluster-id tag whose size leaves bytes unread is corrupt.
        let mut bad = b;
        bad.put_uvarint(1);
        bad.put_uvarint(0);
        bad.put_uvarint(4);
        bad.put_string("ab", true);
        bad.put_u8(9);
        assert!(FetchRequest::decode(&mut Reader::new(bad.freeze()), 12).is_err());
    }

    /// A stored file the test never reads: encoding only counts its bytes.
    #[derive(Debug)]
    struct UnreadFile;
    impl StoredFile for UnreadFile {
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    fn segment_file_range(position: u64, len: u64) -> FileRange {
        FileRange {
            file: Arc::new(UnreadFile),
            position,
            len,
        }
    }

    #[test]
    fn chunked_encoding_does_not_copy_records() {
        let cached = Bytes::from(vec![7u8; 4096]);
        let range = segment_file_range(100, 8192);
        let mut resp = response(12);
        resp.responses[0].partitions[0].records = Some(RecordData::Chunks(vec![
            Chunk::Bytes(cached.clone()),
            Chunk::File(range),
        ]));
        let mut w = ChunkWriter::new();
        resp.encode_chunked(&mut w, 12);
        let total = w.len();
        let chunks = w.finish();
        assert_eq!(chunks.iter().map(Chunk::len).sum::<usize>(), total);
        let Chunk::Bytes(fields) = &chunks[0] else {
            panic!("fields first")
        };
        // The compact length prefix (len + 1) ends the first chunk.
        assert_eq!(&fields[fields.len() - 2..], &[0x81, 0x60]);
        match &chunks[1] {
            Chunk::Bytes(b) => assert_eq!(b.as_ptr(), cached.as_ptr(), "records copied"),
            other => panic!("expected cached bytes, got {other:?}"),
        }
        assert!(matches!(&chunks[2], Chunk::File(f) if f.len == 8192));
        assert!(chunks.len() > 3, "fields after the records");
    }

    #[test]
    fn absent_fields_hold_kafka_defaults() {
        let m = FetchRequest::decode(&mut Reader::new(encode(&request(12), 4)), 4).unwrap();
        assert_eq!(m.session_epoch, -1);
        assert_eq!(m.topics[0].partitions[0].current_leader_epoch, -1);
        assert_eq!(m.topics[0].partitions[0].log_start_offset, -1);
        assert_eq!(m.topics[0].partitions[0].last_fetched_epoch, -1);
        let m = FetchResponse::decode(&mut Reader::new(encode(&response(12), 4)), 4).unwrap();
        let p = &m.responses[0].partitions[0];
        assert_eq!(p.log_start_offset, -1);
        assert_eq!(p.preferred_read_replica, -1);
        assert_eq!(p.diverging_epoch, EpochEndOffset::default());
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_i32(20);
        b.put_i16(0);
        b.put_i32(0);
        b.put_i32(i32::MAX);
        assert_count_too_large::<FetchResponse>(b.freeze(), 7);
    }

    conformance_tests!(FetchRequest, FetchResponse, VERSIONS, request, response);
}
