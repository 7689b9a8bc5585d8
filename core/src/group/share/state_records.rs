//! The records of `__share_group_state`, the share coordinator's topic, in
//! Kafka 4.4's schemas (kafka-share-coordinator's `ShareSnapshotKey/Value`
//! and `ShareUpdateKey/Value`).
//!
//! Both are keyed by (group, topic id, partition): a ShareSnapshot holds a
//! share partition's whole durable state (start offset and the state
//! batches of its in-flight records), a ShareUpdate only the batches that
//! changed since, with the same snapshot epoch. Loading applies the latest
//! snapshot, then its updates in log order, which is why the share
//! coordinator writes a new snapshot every
//! `share.coordinator.snapshot.update.records.per.snapshot` updates.
//!
//! Keys are an INT16 record type (0 snapshot, 1 update) then non-flexible
//! fields; values an INT16 version (0) then flexible fields, the delivery
//! complete count (KIP-1226) as tagged field 0, written only when not -1.

use bytes::{BufMut, Bytes, BytesMut};

use crate::group::consumer::topics::TopicId;
use crate::protocol::codec::{parse_tag, put_tag, DecodeError, DecodeResult, Reader, Writer};
use crate::protocol::messages::share_group_state::StateBatch;

pub const SHARE_SNAPSHOT_KEY: i16 = 0;
pub const SHARE_UPDATE_KEY: i16 = 1;
/// The only value version of both records.
const VALUE_VERSION: i16 = 0;
/// DeliveryCompleteCount's tag in both values.
const DELIVERY_COMPLETE_COUNT_TAG: u32 = 0;
/// DeliveryCompleteCount when unknown (the schema's default).
pub const DELIVERY_COMPLETE_COUNT_UNKNOWN: i32 = -1;

/// The share partition both records are about.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharePartitionKey {
    pub group_id: String,
    pub topic_id: TopicId,
    pub partition: i32,
}

/// ShareSnapshotValue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareSnapshotValue {
    pub snapshot_epoch: i32,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    pub delivery_complete_count: i32,
    pub create_timestamp_ms: i64,
    pub write_timestamp_ms: i64,
    pub state_batches: Vec<StateBatch>,
}

/// ShareUpdateValue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareUpdateValue {
    pub snapshot_epoch: i32,
    pub leader_epoch: i32,
    /// -1 when the start offset did not move.
    pub start_offset: i64,
    pub delivery_complete_count: i32,
    pub state_batches: Vec<StateBatch>,
}

/// A `__share_group_state` record: its key, and its value or `None`
/// (tombstone, written when the state is deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareStateRecord {
    Snapshot {
        key: SharePartitionKey,
        value: Option<ShareSnapshotValue>,
    },
    Update {
        key: SharePartitionKey,
        value: Option<ShareUpdateValue>,
    },
}

impl ShareStateRecord {
    pub fn key(&self) -> &SharePartitionKey {
        match self {
            ShareStateRecord::Snapshot { key, .. } | ShareStateRecord::Update { key, .. } => key,
        }
    }

    pub fn key_type(&self) -> i16 {
        match self {
            ShareStateRecord::Snapshot { .. } => SHARE_SNAPSHOT_KEY,
            ShareStateRecord::Update { .. } => SHARE_UPDATE_KEY,
        }
    }

    pub fn encode_key(&self) -> Bytes {
        let key = self.key();
        let mut w = BytesMut::new();
        w.put_i16(self.key_type());
        w.put_string(&key.group_id, false);
        w.put_slice(&key.topic_id);
        w.put_i32(key.partition);
        w.freeze()
    }

    /// The value's bytes, `None` for a tombstone.
    pub fn encode_value(&self) -> Option<Bytes> {
        let mut w = BytesMut::new();
        w.put_i16(VALUE_VERSION);
        match self {
            ShareStateRecord::Snapshot { value, .. } => {
                let v = value.as_ref()?;
                w.put_i32(v.snapshot_epoch);
                w.put_i32(v.state_epoch);
                w.put_i32(v.leader_epoch);
                w.put_i64(v.start_offset);
                w.put_i64(v.create_timestamp_ms);
                w.put_i64(v.write_timestamp_ms);
                put_state_batches(&mut w, &v.state_batches);
                put_delivery_complete_count(&mut w, v.delivery_complete_count);
            }
            ShareStateRecord::Update { value, .. } => {
                let v = value.as_ref()?;
                w.put_i32(v.snapshot_epoch);
                w.put_i32(v.leader_epoch);
                w.put_i64(v.start_offset);
                put_state_batches(&mut w, &v.state_batches);
                put_delivery_complete_count(&mut w, v.delivery_complete_count);
            }
        }
        Some(w.freeze())
    }

    /// Decodes a key and its value (`None`: a tombstone). `Ok(None)` for a
    /// key type this topic does not hold.
    pub fn decode(key: Bytes, value: Option<Bytes>) -> DecodeResult<Option<ShareStateRecord>> {
        let mut k = Reader::new(key);
        let key_type = k.i16("key type")?;
        if key_type != SHARE_SNAPSHOT_KEY && key_type != SHARE_UPDATE_KEY {
            return Ok(None);
        }
        let key = SharePartitionKey {
            group_id: k.string("group_id", false)?,
            topic_id: k.uuid("topic_id")?,
            partition: k.i32("partition")?,
        };
        let Some(bytes) = value else {
            return Ok(Some(match key_type {
                SHARE_SNAPSHOT_KEY => ShareStateRecord::Snapshot { key, value: None },
                _ => ShareStateRecord::Update { key, value: None },
            }));
        };
        let mut r = Reader::new(bytes);
        let version = r.i16("value version")?;
        if version != VALUE_VERSION {
            return Err(DecodeError::Invalid(format!(
                "share state record type {key_type}: unknown value version {version}"
            )));
        }
        let record = if key_type == SHARE_SNAPSHOT_KEY {
            let mut v = ShareSnapshotValue {
                snapshot_epoch: r.i32("snapshot_epoch")?,
                state_epoch: r.i32("state_epoch")?,
                leader_epoch: r.i32("leader_epoch")?,
                start_offset: r.i64("start_offset")?,
                delivery_complete_count: DELIVERY_COMPLETE_COUNT_UNKNOWN,
                create_timestamp_ms: r.i64("create_timestamp")?,
                write_timestamp_ms: r.i64("write_timestamp")?,
                state_batches: read_state_batches(&mut r)?,
            };
            v.delivery_complete_count = read_delivery_complete_count(&mut r)?;
            ShareStateRecord::Snapshot {
                key,
                value: Some(v),
            }
        } else {
            let mut v = ShareUpdateValue {
                snapshot_epoch: r.i32("snapshot_epoch")?,
                leader_epoch: r.i32("leader_epoch")?,
                start_offset: r.i64("start_offset")?,
                delivery_complete_count: DELIVERY_COMPLETE_COUNT_UNKNOWN,
                state_batches: read_state_batches(&mut r)?,
            };
            v.delivery_complete_count = read_delivery_complete_count(&mut r)?;
            ShareStateRecord::Update {
                key,
                value: Some(v),
            }
        };
        Ok(Some(record))
    }
}

fn put_state_batches(w: &mut BytesMut, batches: &[StateBatch]) {
    w.put_array_len(Some(batches.len()), true);
    for b in batches {
        w.put_i64(b.first_offset);
        w.put_i64(b.last_offset);
        w.put_i8(b.delivery_state);
        w.put_i16(b.delivery_count);
        w.put_empty_tagged_fields();
    }
}

fn read_state_batches(r: &mut Reader) -> DecodeResult<Vec<StateBatch>> {
    // Two offsets, a state, a count, tags.
    r.array("state_batches", true, 8 + 8 + 1 + 2 + 1, |r| {
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

/// The value's tagged section: the count when known, else nothing.
fn put_delivery_complete_count(w: &mut BytesMut, count: i32) {
    if count == DELIVERY_COMPLETE_COUNT_UNKNOWN {
        w.put_empty_tagged_fields();
    } else {
        w.put_uvarint(1);
        put_tag(w, DELIVERY_COMPLETE_COUNT_TAG, &count.to_be_bytes());
    }
}

fn read_delivery_complete_count(r: &mut Reader) -> DecodeResult<i32> {
    let mut count = DELIVERY_COMPLETE_COUNT_UNKNOWN;
    r.tagged_fields(|tag, value| {
        if tag == DELIVERY_COMPLETE_COUNT_TAG {
            count = parse_tag(tag, value, |r| r.i32("delivery_complete_count"))?;
        }
        Ok(())
    })?;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::share_group_state::{
        DELIVERY_STATE_ACKNOWLEDGED, DELIVERY_STATE_ARCHIVED, DELIVERY_STATE_AVAILABLE,
    };
    use proptest::prelude::*;

    fn key() -> SharePartitionKey {
        SharePartitionKey {
            group_id: "g".into(),
            topic_id: [7; 16],
            partition: 3,
        }
    }

    fn batches() -> Vec<StateBatch> {
        vec![
            StateBatch {
                first_offset: 10,
                last_offset: 12,
                delivery_state: DELIVERY_STATE_ACKNOWLEDGED,
                delivery_count: 1,
            },
            StateBatch {
                first_offset: 13,
                last_offset: 13,
                delivery_state: DELIVERY_STATE_ARCHIVED,
                delivery_count: 5,
            },
            StateBatch {
                first_offset: 14,
                last_offset: 20,
                delivery_state: DELIVERY_STATE_AVAILABLE,
                delivery_count: 2,
            },
        ]
    }

    fn samples() -> Vec<ShareStateRecord> {
        vec![
            ShareStateRecord::Snapshot {
                key: key(),
                value: Some(ShareSnapshotValue {
                    snapshot_epoch: 2,
                    state_epoch: 1,
                    leader_epoch: 4,
                    start_offset: 10,
                    delivery_complete_count: 4,
                    create_timestamp_ms: 1_700_000_000_000,
                    write_timestamp_ms: 1_700_000_000_500,
                    state_batches: batches(),
                }),
            },
            ShareStateRecord::Snapshot {
                key: key(),
                value: None,
            },
            ShareStateRecord::Update {
                key: key(),
                value: Some(ShareUpdateValue {
                    snapshot_epoch: 2,
                    leader_epoch: 4,
                    start_offset: -1,
                    delivery_complete_count: DELIVERY_COMPLETE_COUNT_UNKNOWN,
                    state_batches: batches(),
                }),
            },
            ShareStateRecord::Update {
                key: key(),
                value: None,
            },
        ]
    }

    #[test]
    fn every_record_round_trips() {
        for r in samples() {
            let back = ShareStateRecord::decode(r.encode_key(), r.encode_value())
                .unwrap()
                .unwrap();
            assert_eq!(back, r);
        }
    }

    /// The bytes worked out by hand from Kafka's JSON schemas.
    #[test]
    fn bytes_match_the_schemas() {
        let update = ShareStateRecord::Update {
            key: key(),
            value: Some(ShareUpdateValue {
                snapshot_epoch: 1,
                leader_epoch: 2,
                start_offset: 3,
                delivery_complete_count: 9,
                state_batches: vec![StateBatch {
                    first_offset: 4,
                    last_offset: 5,
                    delivery_state: DELIVERY_STATE_ACKNOWLEDGED,
                    delivery_count: 1,
                }],
            }),
        };
        let mut want_key = vec![0, 1, 0, 1, b'g'];
        want_key.extend_from_slice(&[7; 16]);
        want_key.extend_from_slice(&[0, 0, 0, 3]);
        assert_eq!(&update.encode_key()[..], &want_key[..]);
        let want_value: &[u8] = &[
            0, 0, // version
            0, 0, 0, 1, // SnapshotEpoch
            0, 0, 0, 2, // LeaderEpoch
            0, 0, 0, 0, 0, 0, 0, 3, // StartOffset
            2, // one state batch
            0, 0, 0, 0, 0, 0, 0, 4, // FirstOffset
            0, 0, 0, 0, 0, 0, 0, 5, // LastOffset
            2, // DeliveryState Acked
            0, 1, // DeliveryCount
            0, // the batch's tags
            1, 0, 4, 0, 0, 0, 9, // tag 0: DeliveryCompleteCount 9
        ];
        assert_eq!(&update.encode_value().unwrap()[..], want_value);

        let snapshot = ShareStateRecord::Snapshot {
            key: key(),
            value: Some(ShareSnapshotValue {
                snapshot_epoch: 0,
                state_epoch: 1,
                leader_epoch: 2,
                start_offset: 3,
                delivery_complete_count: DELIVERY_COMPLETE_COUNT_UNKNOWN,
                create_timestamp_ms: 4,
                write_timestamp_ms: 5,
                state_batches: vec![],
            }),
        };
        assert_eq!(snapshot.encode_key()[1], 0);
        let v = snapshot.encode_value().unwrap();
        // version, 3 int32, 3 int64, an empty array, no tags.
        assert_eq!(v.len(), 2 + 12 + 24 + 1 + 1);
        assert_eq!(&v[v.len() - 10..], &[0, 0, 0, 0, 0, 0, 0, 5, 1, 0]);
    }

    #[test]
    fn other_key_types_are_not_share_state_records() {
        let mut w = BytesMut::new();
        w.put_i16(2);
        assert_eq!(ShareStateRecord::decode(w.freeze(), None).unwrap(), None);
    }

    proptest! {
        #[test]
        fn decoding_random_bytes_never_panics(
            key_type in 0i16..2,
            value in proptest::collection::vec(any::<u8>(), 0..96),
        ) {
            let mut k = BytesMut::new();
            k.put_i16(key_type);
            k.put_string("g", false);
            k.put_slice(&[1; 16]);
            k.put_i32(0);
            let mut v = vec![0, 0];
            v.extend_from_slice(&value);
            let _ = ShareStateRecord::decode(k.freeze(), Some(Bytes::from(v)));
        }

        #[test]
        fn every_truncation_fails(cut in 0usize..400) {
            for r in samples() {
                let Some(value) = r.encode_value() else { continue };
                let cut = cut % value.len();
                prop_assert!(ShareStateRecord::decode(r.encode_key(), Some(value.slice(..cut))).is_err());
                let key = r.encode_key();
                let kcut = cut % key.len();
                prop_assert!(ShareStateRecord::decode(key.slice(..kcut), Some(value.clone())).is_err());
            }
        }
    }
}
