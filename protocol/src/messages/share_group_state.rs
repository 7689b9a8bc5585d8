//! What the five share-group state APIs (keys 83-87, between a share
//! partition's leader and the share coordinator) have in common: every
//! request is a group id and per topic id a list of partitions, every
//! response per topic id a list of partition results; and Read and Write
//! carry the same state batches.

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

/// A topic entry: a uuid, an empty partition array, tags.
const MIN_TOPIC_BYTES: usize = 16 + 1 + 1;

/// One topic's partitions (of a request) or results (of a response).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateTopic<P> {
    pub topic_id: [u8; 16],
    pub partitions: Vec<P>,
}

/// Reads a topic array whose partitions `read` decodes, each at least
/// `min_partition_bytes` long (tags included).
pub(crate) fn decode_topics<P>(
    r: &mut Reader,
    field: &'static str,
    min_partition_bytes: usize,
    mut read: impl FnMut(&mut Reader) -> DecodeResult<P>,
) -> DecodeResult<Vec<StateTopic<P>>> {
    r.array(field, true, MIN_TOPIC_BYTES, |r| {
        let topic_id = r.uuid("topic_id")?;
        let partitions = r.array("partitions", true, min_partition_bytes, |r| {
            let p = read(r)?;
            r.skip_tagged_fields()?;
            Ok(p)
        })?;
        r.skip_tagged_fields()?;
        Ok(StateTopic {
            topic_id,
            partitions,
        })
    })
}

/// Writes a topic array whose partitions `write` encodes (tags added here).
pub(crate) fn encode_topics<P>(
    w: &mut BytesMut,
    topics: &[StateTopic<P>],
    mut write: impl FnMut(&mut BytesMut, &P),
) {
    w.put_array_len(Some(topics.len()), true);
    for t in topics {
        w.put_slice(&t.topic_id);
        w.put_array_len(Some(t.partitions.len()), true);
        for p in &t.partitions {
            write(w, p);
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

/// A request: the group, then its topics.
pub(crate) fn decode_request<P>(
    r: &mut Reader,
    min_partition_bytes: usize,
    read: impl FnMut(&mut Reader) -> DecodeResult<P>,
) -> DecodeResult<(String, Vec<StateTopic<P>>)> {
    let group_id = r.string("group_id", true)?;
    let topics = decode_topics(r, "topics", min_partition_bytes, read)?;
    r.skip_tagged_fields()?;
    Ok((group_id, topics))
}

pub(crate) fn encode_request<P>(
    w: &mut BytesMut,
    group_id: &str,
    topics: &[StateTopic<P>],
    write: impl FnMut(&mut BytesMut, &P),
) {
    w.put_string(group_id, true);
    encode_topics(w, topics, write);
    w.put_empty_tagged_fields();
}

/// A response: its results, then its tags (these responses have no
/// throttle time).
pub(crate) fn decode_response<P>(
    r: &mut Reader,
    min_partition_bytes: usize,
    read: impl FnMut(&mut Reader) -> DecodeResult<P>,
) -> DecodeResult<Vec<StateTopic<P>>> {
    let results = decode_topics(r, "results", min_partition_bytes, read)?;
    r.skip_tagged_fields()?;
    Ok(results)
}

pub(crate) fn encode_response<P>(
    w: &mut BytesMut,
    results: &[StateTopic<P>],
    write: impl FnMut(&mut BytesMut, &P),
) {
    encode_topics(w, results, write);
    w.put_empty_tagged_fields();
}

/// A partition's outcome, where that is all a response says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionResult {
    pub partition: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
}

/// Partition, code, a null message, tags.
pub(crate) const MIN_PARTITION_RESULT_BYTES: usize = 4 + 2 + 1 + 1;

impl PartitionResult {
    pub(crate) fn decode(r: &mut Reader) -> DecodeResult<Self> {
        Ok(PartitionResult {
            partition: r.i32("partition")?,
            error_code: r.i16("error_code")?,
            error_message: r.nullable_string("error_message", true)?,
        })
    }

    pub(crate) fn encode(w: &mut BytesMut, p: &Self) {
        w.put_i32(p.partition);
        w.put_i16(p.error_code);
        w.put_nullable_string(p.error_message.as_deref(), true);
    }
}

/// Delivery states of a state batch, as the share coordinator stores them.
pub const DELIVERY_STATE_AVAILABLE: i8 = 0;
pub const DELIVERY_STATE_ACKNOWLEDGED: i8 = 2;
pub const DELIVERY_STATE_ARCHIVED: i8 = 4;

/// Offsets `first_offset..=last_offset` in one delivery state with one
/// delivery count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub delivery_state: i8,
    pub delivery_count: i16,
}

/// Two offsets, a state, a count, tags.
pub(crate) const MIN_STATE_BATCH_BYTES: usize = 8 + 8 + 1 + 2 + 1;

pub(crate) fn decode_state_batches(r: &mut Reader) -> DecodeResult<Vec<StateBatch>> {
    r.array("state_batches", true, MIN_STATE_BATCH_BYTES, |r| {
        let b = StateBatch {
            first_offset: r.i64("first_offset")?,
            last_offset: r.i64("last_offset")?,
            delivery_state: r.i8("delivery_state")?,
            delivery_count: r.i16("delivery_count")?,
        };
        r.skip_tagged_fields()?;
        Ok(b)
    })
}

pub(crate) fn encode_state_batches(w: &mut BytesMut, batches: &[StateBatch]) {
    w.put_array_len(Some(batches.len()), true);
    for b in batches {
        w.put_i64(b.first_offset);
        w.put_i64(b.last_offset);
        w.put_i8(b.delivery_state);
        w.put_i16(b.delivery_count);
        w.put_empty_tagged_fields();
    }
}
