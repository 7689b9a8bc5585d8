//! The records a consumer group (KIP-848) keeps in `__consumer_offsets`,
//! in Kafka's schemas, so that `kafka-dump-log.sh --offsets-decoder` reads
//! them and a Kafka coordinator could load them.
//!
//! Every key starts with an INT16 that names the record type (Kafka calls
//! it the key version, and since 4.0 the record's api key); keys are never
//! flexible. Every value starts with an INT16 version, 0 for all of these,
//! and is flexible (compact strings and arrays, tagged fields). A null
//! value is a tombstone.
//!
//! | key | record | key fields |
//! |-----|--------|------------|
//! | 3 | ConsumerGroupMetadata | group |
//! | 4 | ConsumerGroupPartitionMetadata (read only, see below) | group |
//! | 5 | ConsumerGroupMemberMetadata | group, member |
//! | 6 | ConsumerGroupTargetAssignmentMetadata | group |
//! | 7 | ConsumerGroupTargetAssignmentMember | group, member |
//! | 8 | ConsumerGroupCurrentMemberAssignment | group, member |
//! | 16 | ConsumerGroupRegularExpression | group, regex |
//!
//! Kafka 4.x no longer writes ConsumerGroupPartitionMetadata (KIP-1101):
//! the group metadata value carries a hash of the subscribed topics'
//! metadata instead, in its tagged field 0. pinlog does the same; it still
//! decodes type 4 so that a log an older coordinator wrote loads (the
//! value is ignored, and a tombstone for it is the caller's to write).

use bytes::{BufMut, Bytes, BytesMut};

use std::collections::BTreeMap;

use crate::group::consumer::member::{
    default_assignment_epoch, ClassicMemberMetadata, MemberState,
};
use crate::group::consumer::topics::{Assignment, TopicId};
use crate::protocol::codec::{parse_tag, put_tag, DecodeError, DecodeResult, Reader, Writer};

pub const GROUP_METADATA_KEY: i16 = 3;
pub const PARTITION_METADATA_KEY: i16 = 4;
pub const MEMBER_METADATA_KEY: i16 = 5;
pub const TARGET_ASSIGNMENT_METADATA_KEY: i16 = 6;
pub const TARGET_ASSIGNMENT_MEMBER_KEY: i16 = 7;
pub const CURRENT_MEMBER_ASSIGNMENT_KEY: i16 = 8;
pub const REGULAR_EXPRESSION_KEY: i16 = 16;
/// The only value version of every consumer-group record.
const VALUE_VERSION: i16 = 0;
/// ConsumerGroupMetadataValue's tagged field holding the metadata hash.
const METADATA_HASH_TAG: u32 = 0;
/// ConsumerGroupMemberMetadataValue's tagged field with a classic
/// member's metadata.
const CLASSIC_MEMBER_METADATA_TAG: u32 = 0;
/// A current assignment's `TopicPartitions` tagged field with each
/// partition's assignment epoch (Kafka 4.4, KIP-1251).
const ASSIGNMENT_EPOCHS_TAG: u32 = 0;

/// ConsumerGroupMetadataValue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupMetadataValue {
    pub epoch: i32,
    /// A hash of the subscribed topics' metadata (ids, names, partitions,
    /// racks); 0 when the group subscribes to nothing. A tagged field, so
    /// written only when it is not 0.
    pub metadata_hash: i64,
}

/// ConsumerGroupMemberMetadataValue. The classic-protocol metadata is
/// tagged field 0, present for members that joined with JoinGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberMetadataValue {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
    pub classic: Option<ClassicMemberMetadata>,
}

/// ConsumerGroupCurrentMemberAssignmentValue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentAssignmentValue {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: MemberState,
    pub assigned_partitions: Assignment,
    pub partitions_pending_revocation: Assignment,
    /// Each held partition's assignment epoch (KIP-1251), written as each
    /// topic's AssignmentEpochs tagged field (tag 0) in both lists. A log
    /// without them reads every partition at the member epoch
    /// ([`default_assignment_epoch`]).
    pub assignment_epochs: BTreeMap<(TopicId, i32), i32>,
}

/// ConsumerGroupRegularExpressionValue: what a regex resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegexValue {
    /// Matching topic names, sorted.
    pub topics: Vec<String>,
    /// The metadata version the regex was resolved against.
    pub version: i64,
    pub timestamp_ms: i64,
}

/// One ConsumerGroupPartitionMetadata topic, as older logs hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadataTopic {
    pub topic_id: TopicId,
    pub topic_name: String,
    pub num_partitions: i32,
}

/// A consumer-group record: its key, and its value or `None` (tombstone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerGroupRecord {
    GroupMetadata {
        group_id: String,
        value: Option<GroupMetadataValue>,
    },
    /// Read only (see the module docs).
    PartitionMetadata {
        group_id: String,
        value: Option<Vec<PartitionMetadataTopic>>,
    },
    MemberMetadata {
        group_id: String,
        member_id: String,
        value: Option<MemberMetadataValue>,
    },
    TargetAssignmentMetadata {
        group_id: String,
        /// The assignment epoch.
        value: Option<i32>,
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
    RegularExpression {
        group_id: String,
        regex: String,
        value: Option<RegexValue>,
    },
}

impl ConsumerGroupRecord {
    pub fn group_id(&self) -> &str {
        match self {
            ConsumerGroupRecord::GroupMetadata { group_id, .. }
            | ConsumerGroupRecord::PartitionMetadata { group_id, .. }
            | ConsumerGroupRecord::MemberMetadata { group_id, .. }
            | ConsumerGroupRecord::TargetAssignmentMetadata { group_id, .. }
            | ConsumerGroupRecord::TargetAssignmentMember { group_id, .. }
            | ConsumerGroupRecord::CurrentMemberAssignment { group_id, .. }
            | ConsumerGroupRecord::RegularExpression { group_id, .. } => group_id,
        }
    }

    pub fn is_tombstone(&self) -> bool {
        match self {
            ConsumerGroupRecord::GroupMetadata { value, .. } => value.is_none(),
            ConsumerGroupRecord::PartitionMetadata { value, .. } => value.is_none(),
            ConsumerGroupRecord::MemberMetadata { value, .. } => value.is_none(),
            ConsumerGroupRecord::TargetAssignmentMetadata { value, .. } => value.is_none(),
            ConsumerGroupRecord::TargetAssignmentMember { value, .. } => value.is_none(),
            ConsumerGroupRecord::CurrentMemberAssignment { value, .. } => value.is_none(),
            ConsumerGroupRecord::RegularExpression { value, .. } => value.is_none(),
        }
    }

    /// The key's record type.
    pub fn key_type(&self) -> i16 {
        match self {
            ConsumerGroupRecord::GroupMetadata { .. } => GROUP_METADATA_KEY,
            ConsumerGroupRecord::PartitionMetadata { .. } => PARTITION_METADATA_KEY,
            ConsumerGroupRecord::MemberMetadata { .. } => MEMBER_METADATA_KEY,
            ConsumerGroupRecord::TargetAssignmentMetadata { .. } => TARGET_ASSIGNMENT_METADATA_KEY,
            ConsumerGroupRecord::TargetAssignmentMember { .. } => TARGET_ASSIGNMENT_MEMBER_KEY,
            ConsumerGroupRecord::CurrentMemberAssignment { .. } => CURRENT_MEMBER_ASSIGNMENT_KEY,
            ConsumerGroupRecord::RegularExpression { .. } => REGULAR_EXPRESSION_KEY,
        }
    }

    pub fn encode_key(&self) -> Bytes {
        let mut w = BytesMut::new();
        w.put_i16(self.key_type());
        w.put_string(self.group_id(), false);
        match self {
            ConsumerGroupRecord::MemberMetadata { member_id, .. }
            | ConsumerGroupRecord::TargetAssignmentMember { member_id, .. }
            | ConsumerGroupRecord::CurrentMemberAssignment { member_id, .. } => {
                w.put_string(member_id, false)
            }
            ConsumerGroupRecord::RegularExpression { regex, .. } => w.put_string(regex, false),
            _ => {}
        }
        w.freeze()
    }

    /// The value's bytes, `None` for a tombstone.
    pub fn encode_value(&self) -> Option<Bytes> {
        let mut w = BytesMut::new();
        w.put_i16(VALUE_VERSION);
        match self {
            ConsumerGroupRecord::GroupMetadata { value, .. } => {
                let v = value.as_ref()?;
                w.put_i32(v.epoch);
                if v.metadata_hash != 0 {
                    w.put_uvarint(1);
                    put_tag(&mut w, METADATA_HASH_TAG, &v.metadata_hash.to_be_bytes());
                } else {
                    w.put_empty_tagged_fields();
                }
            }
            ConsumerGroupRecord::PartitionMetadata { value, .. } => {
                let topics = value.as_ref()?;
                w.put_array_len(Some(topics.len()), true);
                for t in topics {
                    w.put_slice(&t.topic_id);
                    w.put_string(&t.topic_name, true);
                    w.put_i32(t.num_partitions);
                    // PartitionMetadata: deprecated since 4.0, left empty.
                    w.put_array_len(Some(0), true);
                    w.put_empty_tagged_fields();
                }
                w.put_empty_tagged_fields();
            }
            ConsumerGroupRecord::MemberMetadata { value, .. } => {
                let v = value.as_ref()?;
                w.put_nullable_string(v.instance_id.as_deref(), true);
                w.put_nullable_string(v.rack_id.as_deref(), true);
                w.put_string(&v.client_id, true);
                w.put_string(&v.client_host, true);
                w.put_array_len(Some(v.subscribed_topic_names.len()), true);
                for t in &v.subscribed_topic_names {
                    w.put_string(t, true);
                }
                w.put_nullable_string(v.subscribed_topic_regex.as_deref(), true);
                w.put_i32(v.rebalance_timeout_ms);
                w.put_nullable_string(v.server_assignor.as_deref(), true);
                match &v.classic {
                    Some(c) => {
                        w.put_uvarint(1);
                        put_tag(&mut w, CLASSIC_MEMBER_METADATA_TAG, &encode_classic(c));
                    }
                    None => w.put_empty_tagged_fields(),
                }
            }
            ConsumerGroupRecord::TargetAssignmentMetadata { value, .. } => {
                w.put_i32((*value)?);
                w.put_empty_tagged_fields();
            }
            ConsumerGroupRecord::TargetAssignmentMember { value, .. } => {
                put_topic_partitions(&mut w, value.as_ref()?);
                w.put_empty_tagged_fields();
            }
            ConsumerGroupRecord::CurrentMemberAssignment { value, .. } => {
                let v = value.as_ref()?;
                w.put_i32(v.member_epoch);
                w.put_i32(v.previous_member_epoch);
                w.put_i8(v.state.value());
                let epoch_of = |t: &TopicId, p: i32| {
                    v.assignment_epochs
                        .get(&(*t, p))
                        .copied()
                        .unwrap_or_else(|| default_assignment_epoch(v.member_epoch))
                };
                put_topic_partitions_with_epochs(&mut w, &v.assigned_partitions, &epoch_of);
                put_topic_partitions_with_epochs(
                    &mut w,
                    &v.partitions_pending_revocation,
                    &epoch_of,
                );
                w.put_empty_tagged_fields();
            }
            ConsumerGroupRecord::RegularExpression { value, .. } => {
                let v = value.as_ref()?;
                w.put_array_len(Some(v.topics.len()), true);
                for t in &v.topics {
                    w.put_string(t, true);
                }
                w.put_i64(v.version);
                w.put_i64(v.timestamp_ms);
                w.put_empty_tagged_fields();
            }
        }
        Some(w.freeze())
    }

    /// Decodes a key and its value (`None`: a tombstone). `Ok(None)` when
    /// the key is not a consumer-group record (committed offsets, classic
    /// groups, share or streams groups), which the caller routes elsewhere.
    pub fn decode(key: Bytes, value: Option<Bytes>) -> DecodeResult<Option<ConsumerGroupRecord>> {
        let mut k = Reader::new(key);
        let key_type = k.i16("key type")?;
        if !matches!(key_type, 3..=8 | 16) {
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
                        "consumer group record type {key_type}: unknown value version {version}"
                    )));
                }
                Some(r)
            }
        };
        let record = match key_type {
            GROUP_METADATA_KEY => ConsumerGroupRecord::GroupMetadata {
                group_id,
                value: v.as_mut().map(decode_group_metadata).transpose()?,
            },
            PARTITION_METADATA_KEY => ConsumerGroupRecord::PartitionMetadata {
                group_id,
                value: v.as_mut().map(decode_partition_metadata).transpose()?,
            },
            MEMBER_METADATA_KEY => ConsumerGroupRecord::MemberMetadata {
                member_id: second("member_id")?,
                group_id,
                value: v.as_mut().map(decode_member_metadata).transpose()?,
            },
            TARGET_ASSIGNMENT_METADATA_KEY => ConsumerGroupRecord::TargetAssignmentMetadata {
                group_id,
                value: v
                    .as_mut()
                    .map(|r| {
                        let epoch = r.i32("assignment_epoch")?;
                        r.skip_tagged_fields()?;
                        Ok(epoch)
                    })
                    .transpose()?,
            },
            TARGET_ASSIGNMENT_MEMBER_KEY => ConsumerGroupRecord::TargetAssignmentMember {
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
            CURRENT_MEMBER_ASSIGNMENT_KEY => ConsumerGroupRecord::CurrentMemberAssignment {
                member_id: second("member_id")?,
                group_id,
                value: v.as_mut().map(decode_current_assignment).transpose()?,
            },
            _ => ConsumerGroupRecord::RegularExpression {
                regex: second("regular_expression")?,
                group_id,
                value: v.as_mut().map(decode_regex).transpose()?,
            },
        };
        Ok(Some(record))
    }
}

/// A list of topic ids with their partitions, as the consumer and share
/// group records both store assignments.
pub(crate) fn put_topic_partitions(w: &mut BytesMut, a: &Assignment) {
    w.put_array_len(Some(a.0.len()), true);
    for (t, ps) in &a.0 {
        w.put_slice(t);
        w.put_array_len(Some(ps.len()), true);
        for p in ps {
            w.put_i32(*p);
        }
        w.put_empty_tagged_fields();
    }
}

/// A current assignment's `TopicPartitions`, each topic with its
/// AssignmentEpochs tagged field (tag 0): one epoch per partition, in the
/// partitions' order.
fn put_topic_partitions_with_epochs(
    w: &mut BytesMut,
    a: &Assignment,
    epoch_of: &dyn Fn(&TopicId, i32) -> i32,
) {
    w.put_array_len(Some(a.0.len()), true);
    for (t, ps) in &a.0 {
        w.put_slice(t);
        w.put_array_len(Some(ps.len()), true);
        for p in ps {
            w.put_i32(*p);
        }
        let mut epochs = BytesMut::new();
        epochs.put_array_len(Some(ps.len()), true);
        for p in ps {
            epochs.put_i32(epoch_of(t, *p));
        }
        w.put_uvarint(1);
        put_tag(w, ASSIGNMENT_EPOCHS_TAG, &epochs);
    }
}

/// Reads a current assignment's `TopicPartitions` into `a` and each
/// partition's assignment epoch into `epochs`. A topic without the
/// AssignmentEpochs field, or with one whose length differs from its
/// partitions', gets `default_epoch` for every partition (as Kafka reads
/// it, logging the mismatch).
fn read_topic_partitions_with_epochs(
    r: &mut Reader,
    default_epoch: i32,
    epochs: &mut BTreeMap<(TopicId, i32), i32>,
) -> DecodeResult<Assignment> {
    let topics = r.array("topic_partitions", true, 18, |r| {
        let t = r.uuid("topic_id")?;
        let ps = r.array("partitions", true, 4, |r| r.i32("partition"))?;
        let mut given: Option<Vec<i32>> = None;
        r.tagged_fields(|tag, value| {
            if tag == ASSIGNMENT_EPOCHS_TAG {
                given = parse_tag(tag, value, |r| {
                    r.nullable_array("assignment_epochs", true, 4, |r| r.i32("epoch"))
                })?;
            }
            Ok(())
        })?;
        match given {
            Some(es) if es.len() == ps.len() => {
                for (p, e) in ps.iter().zip(es) {
                    epochs.insert((t, *p), e);
                }
            }
            _ => {
                for p in &ps {
                    epochs.insert((t, *p), default_epoch);
                }
            }
        }
        Ok((t, ps))
    })?;
    Ok(Assignment::from_topic_partitions(&topics))
}

pub(crate) fn read_topic_partitions(r: &mut Reader) -> DecodeResult<Assignment> {
    // A topic entry takes at least 16 (uuid) + 1 (array) + 1 (tags) bytes.
    let topics = r.array("topic_partitions", true, 18, |r| {
        let t = r.uuid("topic_id")?;
        let ps = r.array("partitions", true, 4, |r| r.i32("partition"))?;
        r.skip_tagged_fields()?;
        Ok((t, ps))
    })?;
    Ok(Assignment::from_topic_partitions(&topics))
}

fn decode_group_metadata(r: &mut Reader) -> DecodeResult<GroupMetadataValue> {
    let epoch = r.i32("epoch")?;
    let mut metadata_hash = 0;
    r.tagged_fields(|tag, value| {
        if tag == METADATA_HASH_TAG {
            metadata_hash = parse_tag(tag, value, |r| r.i64("metadata_hash"))?;
        }
        Ok(())
    })?;
    Ok(GroupMetadataValue {
        epoch,
        metadata_hash,
    })
}

fn decode_partition_metadata(r: &mut Reader) -> DecodeResult<Vec<PartitionMetadataTopic>> {
    let topics = r.array("topics", true, 16 + 1 + 4 + 1 + 1, |r| {
        let topic_id = r.uuid("topic_id")?;
        let topic_name = r.string("topic_name", true)?;
        let num_partitions = r.i32("num_partitions")?;
        r.array("partition_metadata", true, 4 + 1 + 1, |r| {
            r.i32("partition")?;
            r.array("racks", true, 1, |r| r.string("rack", true))?;
            r.skip_tagged_fields()
        })?;
        r.skip_tagged_fields()?;
        Ok(PartitionMetadataTopic {
            topic_id,
            topic_name,
            num_partitions,
        })
    })?;
    r.skip_tagged_fields()?;
    Ok(topics)
}

fn decode_member_metadata(r: &mut Reader) -> DecodeResult<MemberMetadataValue> {
    let instance_id = r.nullable_string("instance_id", true)?;
    let rack_id = r.nullable_string("rack_id", true)?;
    let client_id = r.string("client_id", true)?;
    let client_host = r.string("client_host", true)?;
    let subscribed_topic_names = r.array("subscribed_topic_names", true, 1, |r| {
        r.string("topic", true)
    })?;
    let subscribed_topic_regex = r.nullable_string("subscribed_topic_regex", true)?;
    let rebalance_timeout_ms = r.i32("rebalance_timeout_ms")?;
    let server_assignor = r.nullable_string("server_assignor", true)?;
    let mut classic = None;
    r.tagged_fields(|tag, value| {
        if tag == CLASSIC_MEMBER_METADATA_TAG {
            classic = parse_tag(tag, value, decode_classic)?;
        }
        Ok(())
    })?;
    Ok(MemberMetadataValue {
        instance_id,
        rack_id,
        client_id,
        client_host,
        subscribed_topic_names,
        subscribed_topic_regex,
        rebalance_timeout_ms,
        server_assignor,
        classic,
    })
}

/// Kafka's presence byte before a nullable struct: 1 present, -1 null.
const NULLABLE_STRUCT_PRESENT: i8 = 1;

/// ClassicMemberMetadata, a nullable struct: its presence byte, the
/// session timeout, then the protocols, each a name and its metadata
/// bytes (all flexible, each struct with its tags).
fn encode_classic(c: &ClassicMemberMetadata) -> Bytes {
    let mut w = BytesMut::new();
    w.put_i8(NULLABLE_STRUCT_PRESENT);
    w.put_i32(c.session_timeout_ms);
    w.put_array_len(Some(c.supported_protocols.len()), true);
    for (name, metadata) in &c.supported_protocols {
        w.put_string(name, true);
        w.put_nullable_bytes(Some(metadata), true);
        w.put_empty_tagged_fields();
    }
    w.put_empty_tagged_fields();
    w.freeze()
}

fn decode_classic(r: &mut Reader) -> DecodeResult<Option<ClassicMemberMetadata>> {
    if r.i8("classic_member_metadata presence")? < 0 {
        return Ok(None);
    }
    let session_timeout_ms = r.i32("session_timeout_ms")?;
    let supported_protocols = r.array("supported_protocols", true, 3, |r| {
        let name = r.string("protocol_name", true)?;
        let metadata = r.bytes("protocol_metadata", true)?;
        r.skip_tagged_fields()?;
        Ok((name, metadata))
    })?;
    r.skip_tagged_fields()?;
    Ok(Some(ClassicMemberMetadata {
        session_timeout_ms,
        supported_protocols,
    }))
}

fn decode_current_assignment(r: &mut Reader) -> DecodeResult<CurrentAssignmentValue> {
    let member_epoch = r.i32("member_epoch")?;
    let previous_member_epoch = r.i32("previous_member_epoch")?;
    let state = MemberState::from_value(r.i8("state")?);
    let default_epoch = default_assignment_epoch(member_epoch);
    let mut assignment_epochs = BTreeMap::new();
    let assigned_partitions =
        read_topic_partitions_with_epochs(r, default_epoch, &mut assignment_epochs)?;
    let partitions_pending_revocation =
        read_topic_partitions_with_epochs(r, default_epoch, &mut assignment_epochs)?;
    r.skip_tagged_fields()?;
    Ok(CurrentAssignmentValue {
        member_epoch,
        previous_member_epoch,
        state,
        assigned_partitions,
        partitions_pending_revocation,
        assignment_epochs,
    })
}

fn decode_regex(r: &mut Reader) -> DecodeResult<RegexValue> {
    let topics = r.array("topics", true, 1, |r| r.string("topic", true))?;
    let version = r.i64("version")?;
    let timestamp_ms = r.i64("timestamp")?;
    r.skip_tagged_fields()?;
    Ok(RegexValue {
        topics,
        version,
        timestamp_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const T: TopicId = [0xAB; 16];

    fn samples() -> Vec<ConsumerGroupRecord> {
        let g = || "g".to_string();
        let m = || "m-1".to_string();
        vec![
            ConsumerGroupRecord::GroupMetadata {
                group_id: g(),
                value: Some(GroupMetadataValue {
                    epoch: 7,
                    metadata_hash: -42,
                }),
            },
            ConsumerGroupRecord::GroupMetadata {
                group_id: g(),
                value: Some(GroupMetadataValue {
                    epoch: 1,
                    metadata_hash: 0,
                }),
            },
            ConsumerGroupRecord::GroupMetadata {
                group_id: g(),
                value: None,
            },
            ConsumerGroupRecord::MemberMetadata {
                group_id: g(),
                member_id: m(),
                value: Some(MemberMetadataValue {
                    instance_id: Some("i".into()),
                    rack_id: None,
                    client_id: "c".into(),
                    client_host: "/127.0.0.1".into(),
                    subscribed_topic_names: vec!["a".into(), "b".into()],
                    subscribed_topic_regex: Some("x.*".into()),
                    rebalance_timeout_ms: 300_000,
                    server_assignor: Some("range".into()),
                    classic: None,
                }),
            },
            ConsumerGroupRecord::MemberMetadata {
                group_id: g(),
                member_id: m(),
                value: Some(MemberMetadataValue {
                    instance_id: None,
                    rack_id: Some("r".into()),
                    client_id: "c".into(),
                    client_host: "/127.0.0.1".into(),
                    subscribed_topic_names: vec!["a".into()],
                    subscribed_topic_regex: None,
                    rebalance_timeout_ms: 30_000,
                    server_assignor: None,
                    classic: Some(ClassicMemberMetadata {
                        session_timeout_ms: 10_000,
                        supported_protocols: vec![
                            ("range".into(), Bytes::from_static(&[0, 3, 1, 2])),
                            ("cooperative-sticky".into(), Bytes::new()),
                        ],
                    }),
                }),
            },
            ConsumerGroupRecord::MemberMetadata {
                group_id: g(),
                member_id: m(),
                value: None,
            },
            ConsumerGroupRecord::TargetAssignmentMetadata {
                group_id: g(),
                value: Some(4),
            },
            ConsumerGroupRecord::TargetAssignmentMember {
                group_id: g(),
                member_id: m(),
                value: Some(Assignment::from_pairs([(T, 0), (T, 3), ([1; 16], 2)])),
            },
            ConsumerGroupRecord::CurrentMemberAssignment {
                group_id: g(),
                member_id: m(),
                value: Some(CurrentAssignmentValue {
                    member_epoch: 5,
                    previous_member_epoch: 4,
                    state: MemberState::UnrevokedPartitions,
                    assigned_partitions: Assignment::from_pairs([(T, 0)]),
                    partitions_pending_revocation: Assignment::from_pairs([(T, 1)]),
                    assignment_epochs: BTreeMap::from([((T, 0), 3), ((T, 1), 2)]),
                }),
            },
            ConsumerGroupRecord::RegularExpression {
                group_id: g(),
                regex: "x.*".into(),
                value: Some(RegexValue {
                    topics: vec!["x1".into(), "x2".into()],
                    version: 99,
                    timestamp_ms: 1_700_000_000_000,
                }),
            },
            ConsumerGroupRecord::PartitionMetadata {
                group_id: g(),
                value: Some(vec![PartitionMetadataTopic {
                    topic_id: T,
                    topic_name: "t".into(),
                    num_partitions: 3,
                }]),
            },
        ]
    }

    #[test]
    fn every_record_round_trips() {
        for r in samples() {
            let back = ConsumerGroupRecord::decode(r.encode_key(), r.encode_value())
                .unwrap()
                .unwrap();
            assert_eq!(back, r);
        }
    }

    #[test]
    fn other_key_types_are_not_consumer_group_records() {
        let mut w = BytesMut::new();
        w.put_i16(1); // an offset commit
        w.put_string("g", false);
        assert_eq!(ConsumerGroupRecord::decode(w.freeze(), None).unwrap(), None);
    }

    /// The bytes worked out by hand from Kafka's JSON schemas.
    #[test]
    fn current_assignment_bytes_match_the_schema() {
        let r = ConsumerGroupRecord::CurrentMemberAssignment {
            group_id: "g".into(),
            member_id: "m".into(),
            value: Some(CurrentAssignmentValue {
                member_epoch: 5,
                previous_member_epoch: 4,
                state: MemberState::Stable,
                assigned_partitions: Assignment::from_pairs([(T, 1), (T, 2)]),
                partitions_pending_revocation: Assignment::new(),
                assignment_epochs: BTreeMap::from([((T, 1), 5), ((T, 2), 3)]),
            }),
        };
        // Key: type 8, then GroupId and MemberId as INT16-length strings.
        assert_eq!(&r.encode_key()[..], &[0, 8, 0, 1, b'g', 0, 1, b'm']);
        let mut want = vec![
            0, 0, // value version 0
            0, 0, 0, 5, // MemberEpoch
            0, 0, 0, 4, // PreviousMemberEpoch
            0, // State: STABLE
            2, // AssignedPartitions: compact array of 1
        ];
        want.extend_from_slice(&T); // TopicId
        want.extend_from_slice(&[
            3, // Partitions: compact array of 2
            0, 0, 0, 1, 0, 0, 0, 2, //
            1, // the topic entry's tagged fields: one
            0, 9, // tag 0 (AssignmentEpochs), 9 bytes
            3, 0, 0, 0, 5, 0, 0, 0, 3, // compact array of 2: [5, 3]
            1, // PartitionsPendingRevocation: compact array of 0
            0, // the value's tagged fields
        ]);
        assert_eq!(&r.encode_value().unwrap()[..], &want[..]);
    }

    #[test]
    fn group_metadata_hash_is_tagged_field_zero() {
        let r = ConsumerGroupRecord::GroupMetadata {
            group_id: "g".into(),
            value: Some(GroupMetadataValue {
                epoch: 2,
                metadata_hash: 1,
            }),
        };
        assert_eq!(&r.encode_key()[..], &[0, 3, 0, 1, b'g']);
        assert_eq!(
            &r.encode_value().unwrap()[..],
            &[0, 0, 0, 0, 0, 2, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1]
        );
    }

    #[test]
    fn classic_member_metadata_is_tagged_field_0_as_the_schema_says() {
        let value = MemberMetadataValue {
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_topic_names: Vec::new(),
            subscribed_topic_regex: None,
            rebalance_timeout_ms: -1,
            server_assignor: None,
            classic: Some(ClassicMemberMetadata {
                session_timeout_ms: 10,
                supported_protocols: vec![("r".into(), Bytes::from_static(&[1]))],
            }),
        };
        let r = ConsumerGroupRecord::MemberMetadata {
            group_id: "g".into(),
            member_id: "m".into(),
            value: Some(value.clone()),
        };
        let bytes = r.encode_value().unwrap();
        // As Kafka 4.4's own ConsumerGroupMemberMetadataValue writes it.
        assert_eq!(
            &bytes[bytes.len() - 15..],
            &[
                1, // one tagged field
                0, 12, // tag 0, 12 bytes
                1,  // the nullable struct is present
                0, 0, 0, 10, // SessionTimeoutMs
                2,  // one protocol
                2, b'r', // Name
                2, 1, // Metadata
                0, // the protocol's tags
                0, // the struct's tags
            ]
        );
        let back = ConsumerGroupRecord::decode(r.encode_key(), Some(bytes)).unwrap();
        assert_eq!(back, Some(r));
    }

    #[test]
    fn member_metadata_bytes_match_the_schema() {
        let r = ConsumerGroupRecord::MemberMetadata {
            group_id: "g".into(),
            member_id: "m".into(),
            value: Some(MemberMetadataValue {
                instance_id: None,
                rack_id: Some("r".into()),
                client_id: "c".into(),
                client_host: "h".into(),
                subscribed_topic_names: vec!["t".into()],
                subscribed_topic_regex: None,
                rebalance_timeout_ms: 1000,
                server_assignor: None,
                classic: None,
            }),
        };
        assert_eq!(&r.encode_key()[..], &[0, 5, 0, 1, b'g', 0, 1, b'm']);
        assert_eq!(
            &r.encode_value().unwrap()[..],
            &[
                0, 0, // version
                0, // InstanceId: null
                2, b'r', // RackId
                2, b'c', // ClientId
                2, b'h', // ClientHost
                2, 2, b't', // SubscribedTopicNames
                0,    // SubscribedTopicRegex: null
                0, 0, 3, 0xe8, // RebalanceTimeoutMs
                0,    // ServerAssignor: null
                0,    // tagged fields
            ]
        );
    }

    /// Kafka 4.3 and 4.4 added tagged fields that pinlog does not write
    /// (their defaults): the target assignment's AssignmentTimestamp (tag 0)
    /// and, per topic of a current assignment, AssignmentEpochs (tag 0). A
    /// log a Kafka coordinator wrote with them still loads.
    #[test]
    fn kafka_4_4_tagged_fields_are_read_past() {
        let key = ConsumerGroupRecord::TargetAssignmentMetadata {
            group_id: "g".into(),
            value: None,
        }
        .encode_key();
        let value = Bytes::from_static(&[
            0, 0, // version
            0, 0, 0, 3, // AssignmentEpoch
            1, // one tagged field
            0, 8, 0, 0, 1, 0x90, 0, 0, 0, 0, // tag 0, 8 bytes: AssignmentTimestamp
        ]);
        assert_eq!(
            ConsumerGroupRecord::decode(key, Some(value)).unwrap(),
            Some(ConsumerGroupRecord::TargetAssignmentMetadata {
                group_id: "g".into(),
                value: Some(3),
            })
        );

        let key = ConsumerGroupRecord::CurrentMemberAssignment {
            group_id: "g".into(),
            member_id: "m".into(),
            value: None,
        }
        .encode_key();
        let mut value = vec![
            0, 0, // version
            0, 0, 0, 5, // MemberEpoch
            0, 0, 0, 4, // PreviousMemberEpoch
            0, // State
            2, // AssignedPartitions: one topic
        ];
        value.extend_from_slice(&T);
        value.extend_from_slice(&[
            2, 0, 0, 0, 7, // Partitions [7]
            1, 0, 5, 2, 0, 0, 0, 5, // tag 0 (5 bytes): AssignmentEpochs [5]
            1, // PartitionsPendingRevocation: none
            0, // tagged fields
        ]);
        let decoded = ConsumerGroupRecord::decode(key, Some(Bytes::from(value))).unwrap();
        let Some(ConsumerGroupRecord::CurrentMemberAssignment { value: Some(v), .. }) = decoded
        else {
            panic!("{decoded:?}");
        };
        assert_eq!(v.assigned_partitions, Assignment::from_pairs([(T, 7)]));
        assert_eq!(v.member_epoch, 5);
        assert_eq!(v.assignment_epochs, BTreeMap::from([((T, 7), 5)]));
    }

    /// A log written before Kafka 4.4 (no AssignmentEpochs), or one whose
    /// epochs do not match its partitions, reads every partition at the
    /// member epoch (never below 0), as Kafka does.
    #[test]
    fn missing_or_mismatched_assignment_epochs_default_to_the_member_epoch() {
        let key = ConsumerGroupRecord::CurrentMemberAssignment {
            group_id: "g".into(),
            member_id: "m".into(),
            value: None,
        }
        .encode_key();
        let decode = |member_epoch: i32, topic_tags: &[u8]| {
            let mut value = vec![0, 0];
            value.extend_from_slice(&member_epoch.to_be_bytes());
            value.extend_from_slice(&[0, 0, 0, 4, 0, 2]);
            value.extend_from_slice(&T);
            value.extend_from_slice(&[3, 0, 0, 0, 7, 0, 0, 0, 8]); // Partitions [7, 8]
            value.extend_from_slice(topic_tags);
            value.extend_from_slice(&[1, 0]);
            let decoded = ConsumerGroupRecord::decode(key.clone(), Some(Bytes::from(value)));
            match decoded.unwrap() {
                Some(ConsumerGroupRecord::CurrentMemberAssignment { value: Some(v), .. }) => {
                    v.assignment_epochs
                }
                other => panic!("{other:?}"),
            }
        };
        let both = |e: i32| BTreeMap::from([((T, 7), e), ((T, 8), e)]);
        assert_eq!(decode(6, &[0]), both(6));
        // One epoch for two partitions.
        assert_eq!(decode(6, &[1, 0, 5, 2, 0, 0, 0, 1]), both(6));
        // A null array.
        assert_eq!(decode(6, &[1, 0, 1, 0]), both(6));
        // A static member that left (epoch -2).
        assert_eq!(decode(-2, &[0]), both(0));
    }

    /// The other records' bytes, worked out from Kafka 4.4's schemas.
    #[test]
    fn target_and_regex_bytes_match_the_schema() {
        let r = ConsumerGroupRecord::TargetAssignmentMetadata {
            group_id: "g".into(),
            value: Some(3),
        };
        assert_eq!(&r.encode_key()[..], &[0, 6, 0, 1, b'g']);
        assert_eq!(&r.encode_value().unwrap()[..], &[0, 0, 0, 0, 0, 3, 0]);
        let r = ConsumerGroupRecord::TargetAssignmentMember {
            group_id: "g".into(),
            member_id: "m".into(),
            value: Some(Assignment::from_pairs([(T, 1)])),
        };
        assert_eq!(&r.encode_key()[..], &[0, 7, 0, 1, b'g', 0, 1, b'm']);
        let mut want = vec![0, 0, 2];
        want.extend_from_slice(&T);
        want.extend_from_slice(&[2, 0, 0, 0, 1, 0, 0]);
        assert_eq!(&r.encode_value().unwrap()[..], &want[..]);
        let r = ConsumerGroupRecord::RegularExpression {
            group_id: "g".into(),
            regex: "x.*".into(),
            value: Some(RegexValue {
                topics: vec!["x1".into()],
                version: 2,
                timestamp_ms: 3,
            }),
        };
        assert_eq!(
            &r.encode_key()[..],
            &[0, 16, 0, 1, b'g', 0, 3, b'x', b'.', b'*']
        );
        assert_eq!(
            &r.encode_value().unwrap()[..],
            &[0, 0, 2, 3, b'x', b'1', 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0]
        );
    }

    proptest! {
        #[test]
        fn decoding_random_bytes_never_panics(
            key_type in prop_oneof![Just(3i16), Just(4), Just(5), Just(6), Just(7), Just(8), Just(16)],
            value in proptest::collection::vec(any::<u8>(), 0..96),
        ) {
            let mut k = BytesMut::new();
            k.put_i16(key_type);
            k.put_string("g", false);
            k.put_string("m", false);
            let mut v = BytesMut::new();
            v.put_i16(0);
            v.put_slice(&value);
            let _ = ConsumerGroupRecord::decode(k.freeze(), Some(v.freeze()));
        }
    }
}
