//! The records a share group (KIP-932) keeps in `__consumer_offsets`, in
//! Kafka 4.4's schemas (kafka-group-coordinator's `ShareGroup*Key/Value`),
//! so that `kafka-dump-log.sh --offsets-decoder` reads them and a Kafka
//! coordinator could load them.
//!
//! As for consumer groups (`group/consumer/records.rs`), a key is an INT16
//! record type then non-flexible fields; a value is an INT16 version (0 for
//! all of these) then flexible fields; a null value is a tombstone.
//!
//! | key | record | key fields |
//! |-----|--------|------------|
//! | 10 | ShareGroupMemberMetadata | group, member |
//! | 11 | ShareGroupMetadata | group |
//! | 12 | ShareGroupTargetAssignmentMetadata | group |
//! | 13 | ShareGroupTargetAssignmentMember | group, member |
//! | 14 | ShareGroupCurrentMemberAssignment | group, member |
//! | 15 | ShareGroupStatePartitionMetadata | group |
//!
//! Unlike the consumer group's, ShareGroupMetadataValue's metadata hash is
//! an ordinary field, and the target assignment metadata carries a tagged
//! timestamp (tag 0, Kafka 4.3's KIP-1263), written only when not 0.

use bytes::{BufMut, Bytes, BytesMut};

use crate::group::consumer::records::{put_topic_partitions, read_topic_partitions};
use crate::group::consumer::topics::{Assignment, TopicId};
use crate::protocol::codec::{parse_tag, put_tag, DecodeError, DecodeResult, Reader, Writer};

pub const MEMBER_METADATA_KEY: i16 = 10;
pub const GROUP_METADATA_KEY: i16 = 11;
pub const TARGET_ASSIGNMENT_METADATA_KEY: i16 = 12;
pub const TARGET_ASSIGNMENT_MEMBER_KEY: i16 = 13;
pub const CURRENT_MEMBER_ASSIGNMENT_KEY: i16 = 14;
pub const STATE_PARTITION_METADATA_KEY: i16 = 15;
/// The only value version of every share-group record.
const VALUE_VERSION: i16 = 0;
/// ShareGroupTargetAssignmentMetadataValue's AssignmentTimestamp.
const ASSIGNMENT_TIMESTAMP_TAG: u32 = 0;

/// ShareGroupMetadataValue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupMetadataValue {
    pub epoch: i32,
    /// A hash of the subscribed topics' metadata.
    pub metadata_hash: i64,
}

/// ShareGroupMemberMetadataValue: no instance id, regex, assignor or
/// rebalance timeout, which share groups do not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberMetadataValue {
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
}

/// ShareGroupTargetAssignmentMetadataValue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetAssignmentMetadataValue {
    pub assignment_epoch: i32,
    /// When the assignment was computed; 0 (unknown, and then not written).
    pub assignment_timestamp_ms: i64,
}

/// ShareGroupCurrentMemberAssignmentValue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentAssignmentValue {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    /// Kafka's `MemberState` value (0 stable).
    pub state: i8,
    pub assigned_partitions: Assignment,
}

/// A topic and some of its partitions, by id and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPartitionsInfo {
    pub topic_id: TopicId,
    pub topic_name: String,
    pub partitions: Vec<i32>,
}

/// A topic by id and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    pub topic_id: TopicId,
    pub topic_name: String,
}

/// ShareGroupStatePartitionMetadataValue: which share partitions' state the
/// share coordinator is initializing, holds, or is deleting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatePartitionMetadataValue {
    pub initializing_topics: Vec<TopicPartitionsInfo>,
    pub initialized_topics: Vec<TopicPartitionsInfo>,
    pub deleting_topics: Vec<TopicInfo>,
}

/// A share-group record: its key, and its value or `None` (tombstone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareGroupRecord {
    MemberMetadata {
        group_id: String,
        member_id: String,
        value: Option<MemberMetadataValue>,
    },
    GroupMetadata {
        group_id: String,
        value: Option<GroupMetadataValue>,
    },
    TargetAssignmentMetadata {
        group_id: String,
        value: Option<TargetAssignmentMetadataValue>,
    },
    TargetAssignmentMember {
        group_id: String,
        member_id: String,
        value: Option<Assignment>,
    },
    CurrentMemberAssignment {
        group_id: String,
        member_id: String,
        value: Option<CurrentAssignmentValue>,
    },
    StatePartitionMetadata {
        group_id: String,
        value: Option<StatePartitionMetadataValue>,
    },
}

impl ShareGroupRecord {
    pub fn group_id(&self) -> &str {
        match self {
            ShareGroupRecord::MemberMetadata { group_id, .. }
            | ShareGroupRecord::GroupMetadata { group_id, .. }
            | ShareGroupRecord::TargetAssignmentMetadata { group_id, .. }
            | ShareGroupRecord::TargetAssignmentMember { group_id, .. }
            | ShareGroupRecord::CurrentMemberAssignment { group_id, .. }
            | ShareGroupRecord::StatePartitionMetadata { group_id, .. } => group_id,
        }
    }

    /// The member of a per-member record.
    pub fn member_id(&self) -> Option<&str> {
        match self {
            ShareGroupRecord::MemberMetadata { member_id, .. }
            | ShareGroupRecord::TargetAssignmentMember { member_id, .. }
            | ShareGroupRecord::CurrentMemberAssignment { member_id, .. } => Some(member_id),
            _ => None,
        }
    }

    pub fn is_tombstone(&self) -> bool {
        match self {
            ShareGroupRecord::MemberMetadata { value, .. } => value.is_none(),
            ShareGroupRecord::GroupMetadata { value, .. } => value.is_none(),
            ShareGroupRecord::TargetAssignmentMetadata { value, .. } => value.is_none(),
            ShareGroupRecord::TargetAssignmentMember { value, .. } => value.is_none(),
            ShareGroupRecord::CurrentMemberAssignment { value, .. } => value.is_none(),
            ShareGroupRecord::StatePartitionMetadata { value, .. } => value.is_none(),
        }
    }

    /// The key's record type.
    pub fn key_type(&self) -> i16 {
        match self {
            ShareGroupRecord::MemberMetadata { .. } => MEMBER_METADATA_KEY,
            ShareGroupRecord::GroupMetadata { .. } => GROUP_METADATA_KEY,
            ShareGroupRecord::TargetAssignmentMetadata { .. } => TARGET_ASSIGNMENT_METADATA_KEY,
            ShareGroupRecord::TargetAssignmentMember { .. } => TARGET_ASSIGNMENT_MEMBER_KEY,
            ShareGroupRecord::CurrentMemberAssignment { .. } => CURRENT_MEMBER_ASSIGNMENT_KEY,
            ShareGroupRecord::StatePartitionMetadata { .. } => STATE_PARTITION_METADATA_KEY,
        }
    }

    pub fn encode_key(&self) -> Bytes {
        let mut w = BytesMut::new();
        w.put_i16(self.key_type());
        w.put_string(self.group_id(), false);
        if let Some(member_id) = self.member_id() {
            w.put_string(member_id, false);
        }
        w.freeze()
    }

    /// The value's bytes, `None` for a tombstone.
    pub fn encode_value(&self) -> Option<Bytes> {
        let mut w = BytesMut::new();
        w.put_i16(VALUE_VERSION);
        match self {
            ShareGroupRecord::MemberMetadata { value, .. } => {
                let v = value.as_ref()?;
                w.put_nullable_string(v.rack_id.as_deref(), true);
                w.put_string(&v.client_id, true);
                w.put_string(&v.client_host, true);
                w.put_array_len(Some(v.subscribed_topic_names.len()), true);
                for t in &v.subscribed_topic_names {
                    w.put_string(t, true);
                }
                w.put_empty_tagged_fields();
            }
            ShareGroupRecord::GroupMetadata { value, .. } => {
                let v = value.as_ref()?;
                w.put_i32(v.epoch);
                w.put_i64(v.metadata_hash);
                w.put_empty_tagged_fields();
            }
            ShareGroupRecord::TargetAssignmentMetadata { value, .. } => {
                let v = value.as_ref()?;
                w.put_i32(v.assignment_epoch);
                if v.assignment_timestamp_ms != 0 {
                    w.put_uvarint(1);
                    put_tag(
                        &mut w,
                        ASSIGNMENT_TIMESTAMP_TAG,
                        &v.assignment_timestamp_ms.to_be_bytes(),
                    );
                } else {
                    w.put_empty_tagged_fields();
                }
            }
            ShareGroupRecord::TargetAssignmentMember { value, .. } => {
                put_topic_partitions(&mut w, value.as_ref()?);
                w.put_empty_tagged_fields();
            }
            ShareGroupRecord::CurrentMemberAssignment { value, .. } => {
                let v = value.as_ref()?;
                w.put_i32(v.member_epoch);
                w.put_i32(v.previous_member_epoch);
                w.put_i8(v.state);
                put_topic_partitions(&mut w, &v.assigned_partitions);
                w.put_empty_tagged_fields();
            }
            ShareGroupRecord::StatePartitionMetadata { value, .. } => {
                let v = value.as_ref()?;
                put_topic_partitions_infos(&mut w, &v.initializing_topics);
                put_topic_partitions_infos(&mut w, &v.initialized_topics);
                w.put_array_len(Some(v.deleting_topics.len()), true);
                for t in &v.deleting_topics {
                    w.put_slice(&t.topic_id);
                    w.put_string(&t.topic_name, true);
                    w.put_empty_tagged_fields();
                }
                w.put_empty_tagged_fields();
            }
        }
        Some(w.freeze())
    }

    /// Decodes a key and its value (`None`: a tombstone). `Ok(None)` when
    /// the key is not a share-group record, which the caller routes
    /// elsewhere.
    pub fn decode(key: Bytes, value: Option<Bytes>) -> DecodeResult<Option<ShareGroupRecord>> {
        let mut k = Reader::new(key);
        let key_type = k.i16("key type")?;
        if !(MEMBER_METADATA_KEY..=STATE_PARTITION_METADATA_KEY).contains(&key_type) {
            return Ok(None);
        }
        let group_id = k.string("group_id", false)?;
        let mut second = |field| k.string(field, false);
        let mut v = match value {
            None => None,
            Some(bytes) => {
                let mut r = Reader::new(bytes);
                let version = r.i16("value version")?;
                if version != VALUE_VERSION {
                    return Err(DecodeError::Invalid(format!(
                        "share group record type {key_type}: unknown value version {version}"
                    )));
                }
                Some(r)
            }
        };
        let record = match key_type {
            MEMBER_METADATA_KEY => ShareGroupRecord::MemberMetadata {
                member_id: second("member_id")?,
                group_id,
                value: v.as_mut().map(decode_member_metadata).transpose()?,
            },
            GROUP_METADATA_KEY => ShareGroupRecord::GroupMetadata {
                group_id,
                value: v
                    .as_mut()
                    .map(|r| {
                        let value = GroupMetadataValue {
                            epoch: r.i32("epoch")?,
                            metadata_hash: r.i64("metadata_hash")?,
                        };
                        r.skip_tagged_fields()?;
                        Ok(value)
                    })
                    .transpose()?,
            },
            TARGET_ASSIGNMENT_METADATA_KEY => ShareGroupRecord::TargetAssignmentMetadata {
                group_id,
                value: v.as_mut().map(decode_target_metadata).transpose()?,
            },
            TARGET_ASSIGNMENT_MEMBER_KEY => ShareGroupRecord::TargetAssignmentMember {
                member_id: second("member_id")?,
                group_id,
                value: v
                    .as_mut()
                    .map(|r| {
                        let a = read_topic_partitions(r)?;
                        r.skip_tagged_fields()?;
                        Ok(a)
                    })
                    .transpose()?,
            },
            CURRENT_MEMBER_ASSIGNMENT_KEY => ShareGroupRecord::CurrentMemberAssignment {
                member_id: second("member_id")?,
                group_id,
                value: v
                    .as_mut()
                    .map(|r| {
                        let value = CurrentAssignmentValue {
                            member_epoch: r.i32("member_epoch")?,
                            previous_member_epoch: r.i32("previous_member_epoch")?,
                            state: r.i8("state")?,
                            assigned_partitions: read_topic_partitions(r)?,
                        };
                        r.skip_tagged_fields()?;
                        Ok(value)
                    })
                    .transpose()?,
            },
            _ => ShareGroupRecord::StatePartitionMetadata {
                group_id,
                value: v
                    .as_mut()
                    .map(decode_state_partition_metadata)
                    .transpose()?,
            },
        };
        Ok(Some(record))
    }
}

fn put_topic_partitions_infos(w: &mut BytesMut, topics: &[TopicPartitionsInfo]) {
    w.put_array_len(Some(topics.len()), true);
    for t in topics {
        w.put_slice(&t.topic_id);
        w.put_string(&t.topic_name, true);
        w.put_i32_array(Some(&t.partitions), true);
        w.put_empty_tagged_fields();
    }
}

fn read_topic_partitions_infos(
    r: &mut Reader,
    field: &'static str,
) -> DecodeResult<Vec<TopicPartitionsInfo>> {
    // uuid, an empty name, an empty array, tags.
    r.array(field, true, 16 + 1 + 1 + 1, |r| {
        let t = TopicPartitionsInfo {
            topic_id: r.uuid("topic_id")?,
            topic_name: r.string("topic_name", true)?,
            partitions: r.array("partitions", true, 4, |r| r.i32("partition"))?,
        };
        r.skip_tagged_fields()?;
        Ok(t)
    })
}

fn decode_member_metadata(r: &mut Reader) -> DecodeResult<MemberMetadataValue> {
    let value = MemberMetadataValue {
        rack_id: r.nullable_string("rack_id", true)?,
        client_id: r.string("client_id", true)?,
        client_host: r.string("client_host", true)?,
        subscribed_topic_names: r.array("subscribed_topic_names", true, 1, |r| {
            r.string("topic", true)
        })?,
    };
    r.skip_tagged_fields()?;
    Ok(value)
}

fn decode_target_metadata(r: &mut Reader) -> DecodeResult<TargetAssignmentMetadataValue> {
    let assignment_epoch = r.i32("assignment_epoch")?;
    let mut assignment_timestamp_ms = 0;
    r.tagged_fields(|tag, value| {
        if tag == ASSIGNMENT_TIMESTAMP_TAG {
            assignment_timestamp_ms = parse_tag(tag, value, |r| r.i64("assignment_timestamp"))?;
        }
        Ok(())
    })?;
    Ok(TargetAssignmentMetadataValue {
        assignment_epoch,
        assignment_timestamp_ms,
    })
}

fn decode_state_partition_metadata(r: &mut Reader) -> DecodeResult<StatePartitionMetadataValue> {
    let initializing_topics = read_topic_partitions_infos(r, "initializing_topics")?;
    let initialized_topics = read_topic_partitions_infos(r, "initialized_topics")?;
    // uuid, an empty name, tags.
    let deleting_topics = r.array("deleting_topics", true, 16 + 1 + 1, |r| {
        let t = TopicInfo {
            topic_id: r.uuid("topic_id")?,
            topic_name: r.string("topic_name", true)?,
        };
        r.skip_tagged_fields()?;
        Ok(t)
    })?;
    r.skip_tagged_fields()?;
    Ok(StatePartitionMetadataValue {
        initializing_topics,
        initialized_topics,
        deleting_topics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const T: TopicId = [0xAB; 16];

    fn samples() -> Vec<ShareGroupRecord> {
        let g = || "g".to_string();
        let m = || "m-1".to_string();
        vec![
            ShareGroupRecord::MemberMetadata {
                group_id: g(),
                member_id: m(),
                value: Some(MemberMetadataValue {
                    rack_id: Some("r".into()),
                    client_id: "c".into(),
                    client_host: "/127.0.0.1".into(),
                    subscribed_topic_names: vec!["a".into(), "b".into()],
                }),
            },
            ShareGroupRecord::MemberMetadata {
                group_id: g(),
                member_id: m(),
                value: None,
            },
            ShareGroupRecord::GroupMetadata {
                group_id: g(),
                value: Some(GroupMetadataValue {
                    epoch: 7,
                    metadata_hash: -42,
                }),
            },
            ShareGroupRecord::GroupMetadata {
                group_id: g(),
                value: None,
            },
            ShareGroupRecord::TargetAssignmentMetadata {
                group_id: g(),
                value: Some(TargetAssignmentMetadataValue {
                    assignment_epoch: 4,
                    assignment_timestamp_ms: 1_700_000_000_000,
                }),
            },
            ShareGroupRecord::TargetAssignmentMetadata {
                group_id: g(),
                value: Some(TargetAssignmentMetadataValue {
                    assignment_epoch: 5,
                    assignment_timestamp_ms: 0,
                }),
            },
            ShareGroupRecord::TargetAssignmentMember {
                group_id: g(),
                member_id: m(),
                value: Some(Assignment::from_pairs([(T, 0), (T, 3), ([1; 16], 2)])),
            },
            ShareGroupRecord::CurrentMemberAssignment {
                group_id: g(),
                member_id: m(),
                value: Some(CurrentAssignmentValue {
                    member_epoch: 5,
                    previous_member_epoch: 4,
                    state: 0,
                    assigned_partitions: Assignment::from_pairs([(T, 0), (T, 1)]),
                }),
            },
            ShareGroupRecord::StatePartitionMetadata {
                group_id: g(),
                value: Some(StatePartitionMetadataValue {
                    initializing_topics: vec![TopicPartitionsInfo {
                        topic_id: T,
                        topic_name: "t".into(),
                        partitions: vec![2],
                    }],
                    initialized_topics: vec![TopicPartitionsInfo {
                        topic_id: T,
                        topic_name: "t".into(),
                        partitions: vec![0, 1],
                    }],
                    deleting_topics: vec![TopicInfo {
                        topic_id: [2; 16],
                        topic_name: "old".into(),
                    }],
                }),
            },
            ShareGroupRecord::StatePartitionMetadata {
                group_id: g(),
                value: None,
            },
        ]
    }

    #[test]
    fn every_record_round_trips() {
        for r in samples() {
            let back = ShareGroupRecord::decode(r.encode_key(), r.encode_value())
                .unwrap()
                .unwrap();
            assert_eq!(back, r);
        }
    }

    #[test]
    fn consumer_group_and_offset_keys_are_not_share_group_records() {
        for key_type in [1, 2, 3, 8, 9, 16] {
            let mut w = BytesMut::new();
            w.put_i16(key_type);
            w.put_string("g", false);
            assert_eq!(ShareGroupRecord::decode(w.freeze(), None).unwrap(), None);
        }
    }

    /// The bytes worked out by hand from Kafka's JSON schemas.
    #[test]
    fn bytes_match_the_schemas() {
        let r = ShareGroupRecord::CurrentMemberAssignment {
            group_id: "g".into(),
            member_id: "m".into(),
            value: Some(CurrentAssignmentValue {
                member_epoch: 3,
                previous_member_epoch: 2,
                state: 0,
                assigned_partitions: Assignment::from_pairs([(T, 1)]),
            }),
        };
        assert_eq!(&r.encode_key()[..], &[0, 14, 0, 1, b'g', 0, 1, b'm']);
        let mut want = vec![0, 0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 2];
        want.extend_from_slice(&T);
        want.extend_from_slice(&[2, 0, 0, 0, 1, 0, 0]);
        assert_eq!(&r.encode_value().unwrap()[..], &want[..]);

        // ShareGroupMetadataValue: the hash is a plain INT64.
        let r = ShareGroupRecord::GroupMetadata {
            group_id: "g".into(),
            value: Some(GroupMetadataValue {
                epoch: 1,
                metadata_hash: 2,
            }),
        };
        assert_eq!(
            &r.encode_value().unwrap()[..],
            &[0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0]
        );

        // The assignment timestamp: one tagged field, tag 0, 8 bytes.
        let r = ShareGroupRecord::TargetAssignmentMetadata {
            group_id: "g".into(),
            value: Some(TargetAssignmentMetadataValue {
                assignment_epoch: 1,
                assignment_timestamp_ms: 5,
            }),
        };
        assert_eq!(
            &r.encode_value().unwrap()[..],
            &[0, 0, 0, 0, 0, 1, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 5]
        );

        let r = ShareGroupRecord::MemberMetadata {
            group_id: "g".into(),
            member_id: "m".into(),
            value: Some(MemberMetadataValue {
                rack_id: None,
                client_id: "c".into(),
                client_host: "h".into(),
                subscribed_topic_names: vec!["t".into()],
            }),
        };
        assert_eq!(
            &r.encode_value().unwrap()[..],
            &[0, 0, 0, 2, b'c', 2, b'h', 2, 2, b't', 0]
        );
    }

    #[test]
    fn unknown_value_versions_are_refused() {
        let r = &samples()[2];
        let mut v = r.encode_value().unwrap().to_vec();
        v[1] = 1;
        assert!(ShareGroupRecord::decode(r.encode_key(), Some(Bytes::from(v))).is_err());
    }

    proptest! {
        #[test]
        fn decoding_random_bytes_never_panics(
            key_type in MEMBER_METADATA_KEY..=STATE_PARTITION_METADATA_KEY,
            value in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let mut k = BytesMut::new();
            k.put_i16(key_type);
            k.put_string("g", false);
            k.put_string("m", false);
            let mut v = vec![0, 0];
            v.extend_from_slice(&value);
            let _ = ShareGroupRecord::decode(k.freeze(), Some(Bytes::from(v)));
        }

        #[test]
        fn every_truncation_of_a_record_fails_or_differs(cut in 0usize..200) {
            for r in samples() {
                let Some(value) = r.encode_value() else { continue };
                let cut = cut % value.len();
                let got = ShareGroupRecord::decode(r.encode_key(), Some(value.slice(..cut)));
                prop_assert!(got.is_err(), "{r:?} cut at {cut}");
            }
        }
    }
}
