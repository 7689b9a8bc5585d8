//! The records of `__consumer_offsets`: Kafka's key and value schemas, so
//! that Kafka's own tools (and a Kafka broker reading a copied log) see the
//! same group state pinlog does.
//!
//! Every key and value starts with an INT16 version. Key versions 0 and 1
//! are committed offsets (group, topic, partition); key version 2 is a
//! group's metadata (group). A null value is a tombstone: the offset or the
//! group was deleted, and compaction eventually removes both.
//!
//! pinlog writes `OffsetCommitValue` v3 and `GroupMetadataValue` v3, the
//! versions Kafka's classic coordinator writes; it reads every version
//! Kafka defines (0-4, v4 being flexible).

use bytes::{BufMut, Bytes, BytesMut};

use crate::protocol::codec::{DecodeError, DecodeResult, Reader, Writer};

/// Key version of a committed offset as Kafka writes it.
const OFFSET_KEY_VERSION: i16 = 1;
/// Key version of a group's metadata.
const GROUP_KEY_VERSION: i16 = 2;
/// Value versions pinlog writes.
const OFFSET_VALUE_VERSION: i16 = 3;
const GROUP_VALUE_VERSION: i16 = 3;
/// Highest value version Kafka defines; v4 is the first flexible one.
const MAX_VALUE_VERSION: i16 = 4;
const FLEXIBLE_VALUE_VERSION: i16 = 4;

/// What a `__consumer_offsets` record is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordKey {
    Offset {
        group: String,
        topic: String,
        partition: i32,
    },
    Group {
        group: String,
    },
}

impl RecordKey {
    pub fn group(&self) -> &str {
        match self {
            RecordKey::Offset { group, .. } | RecordKey::Group { group } => group,
        }
    }

    pub fn encode(&self) -> Bytes {
        let mut w = BytesMut::new();
        match self {
            RecordKey::Offset {
                group,
                topic,
                partition,
            } => {
                w.put_i16(OFFSET_KEY_VERSION);
                w.put_string(group, false);
                w.put_string(topic, false);
                w.put_i32(*partition);
            }
            RecordKey::Group { group } => {
                w.put_i16(GROUP_KEY_VERSION);
                w.put_string(group, false);
            }
        }
        w.freeze()
    }

    /// Decodes a key; `Ok(None)` for a key type pinlog does not use (the
    /// KIP-848 consumer-group records Kafka may have written), which loading
    /// skips.
    pub fn decode(bytes: Bytes) -> DecodeResult<Option<RecordKey>> {
        let mut r = Reader::new(bytes);
        let version = r.i16("key version")?;
        let key = match version {
            0 | 1 => RecordKey::Offset {
                group: r.string("group", false)?,
                topic: r.string("topic", false)?,
                partition: r.i32("partition")?,
            },
            2 => RecordKey::Group {
                group: r.string("group", false)?,
            },
            _ => return Ok(None),
        };
        Ok(Some(key))
    }
}

/// A committed offset as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetValue {
    pub offset: i64,
    /// -1 when the committer did not know it.
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
    /// Only in v1 values: when the offset expires (-1: by the retention).
    pub expire_timestamp: i64,
}

fn check_value_version(version: i16, what: &str) -> DecodeResult<()> {
    if !(0..=MAX_VALUE_VERSION).contains(&version) {
        return Err(DecodeError::Invalid(format!(
            "unknown {what} value version {version}"
        )));
    }
    Ok(())
}

impl OffsetValue {
    pub fn encode(&self) -> Bytes {
        let mut w = BytesMut::new();
        w.put_i16(OFFSET_VALUE_VERSION);
        w.put_i64(self.offset);
        w.put_i32(self.leader_epoch);
        w.put_string(&self.metadata, false);
        w.put_i64(self.commit_timestamp);
        w.freeze()
    }

    pub fn decode(bytes: Bytes) -> DecodeResult<OffsetValue> {
        let mut r = Reader::new(bytes);
        let version = r.i16("offset value version")?;
        check_value_version(version, "offset commit")?;
        let flexible = version >= FLEXIBLE_VALUE_VERSION;
        let offset = r.i64("offset")?;
        let leader_epoch = if version >= 3 {
            r.i32("leader_epoch")?
        } else {
            -1
        };
        let metadata = r.string("metadata", flexible)?;
        let commit_timestamp = r.i64("commit_timestamp")?;
        let expire_timestamp = if version == 1 {
            r.i64("expire_timestamp")?
        } else {
            -1
        };
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(OffsetValue {
            offset,
            leader_epoch,
            metadata,
            commit_timestamp,
            expire_timestamp,
        })
    }
}

/// One member as stored in the group's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    /// The member's metadata for the group's selected protocol.
    pub subscription: Bytes,
    pub assignment: Bytes,
}

/// A group's metadata as stored: written when a generation completes (the
/// leader's assignment) and when the group becomes empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupValue {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    /// When the group entered its current state (-1 if unknown); offset
    /// retention of an empty group counts from here.
    pub current_state_timestamp: i64,
    pub members: Vec<StoredMember>,
}

/// Smallest encoding of a stored member (non-flexible): four strings, two
/// INT32s and two byte fields.
const MIN_MEMBER_BYTES: usize = 4 * 2 + 2 * 4 + 2 * 4;

impl GroupValue {
    pub fn encode(&self) -> Bytes {
        let mut w = BytesMut::new();
        w.put_i16(GROUP_VALUE_VERSION);
        w.put_string(&self.protocol_type, false);
        w.put_i32(self.generation);
        w.put_nullable_string(self.protocol.as_deref(), false);
        w.put_nullable_string(self.leader.as_deref(), false);
        w.put_i64(self.current_state_timestamp);
        w.put_array_len(Some(self.members.len()), false);
        for m in &self.members {
            w.put_string(&m.member_id, false);
            w.put_nullable_string(m.group_instance_id.as_deref(), false);
            w.put_string(&m.client_id, false);
            w.put_string(&m.client_host, false);
            w.put_i32(m.rebalance_timeout_ms);
            w.put_i32(m.session_timeout_ms);
            w.put_nullable_bytes(Some(&m.subscription), false);
            w.put_nullable_bytes(Some(&m.assignment), false);
        }
        w.freeze()
    }

    pub fn decode(bytes: Bytes) -> DecodeResult<GroupValue> {
        let mut r = Reader::new(bytes);
        let version = r.i16("group value version")?;
        check_value_version(version, "group metadata")?;
        let flexible = version >= FLEXIBLE_VALUE_VERSION;
        let protocol_type = r.string("protocol_type", flexible)?;
        let generation = r.i32("generation")?;
        let protocol = r.nullable_string("protocol", flexible)?;
        let leader = r.nullable_string("leader", flexible)?;
        let current_state_timestamp = if version >= 2 {
            r.i64("current_state_timestamp")?
        } else {
            -1
        };
        let min_member = if flexible { 8 + 8 } else { MIN_MEMBER_BYTES };
        let members = r.array("members", flexible, min_member, |r| {
            let member_id = r.string("member_id", flexible)?;
            let group_instance_id = if version >= 3 {
                r.nullable_string("group_instance_id", flexible)?
            } else {
                None
            };
            let client_id = r.string("client_id", flexible)?;
            let client_host = r.string("client_host", flexible)?;
            let session_then_rebalance = version < 1;
            let (rebalance_timeout_ms, session_timeout_ms) = if session_then_rebalance {
                let s = r.i32("session_timeout")?;
                (s, s)
            } else {
                let rb = r.i32("rebalance_timeout")?;
                (rb, r.i32("session_timeout")?)
            };
            let subscription = r.bytes("subscription", flexible)?;
            let assignment = r.bytes("assignment", flexible)?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(StoredMember {
                member_id,
                group_instance_id,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                subscription,
                assignment,
            })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(GroupValue {
            protocol_type,
            generation,
            protocol,
            leader,
            current_state_timestamp,
            members,
        })
    }
}

/// The topics a consumer-protocol subscription names (`ConsumerProtocol
/// Subscription`, any version: INT16 version, then an array of topic
/// strings). `None` when the bytes are not a consumer subscription; the
/// broker needs only this much to refuse OffsetDelete on subscribed topics.
pub fn subscribed_topics(subscription: &[u8]) -> Option<Vec<String>> {
    let mut r = Reader::new(Bytes::copy_from_slice(subscription));
    let version = r.i16("subscription version").ok()?;
    if version < 0 {
        return None;
    }
    r.array("topics", false, 2, |r| r.string("topic", false))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn member(i: u8) -> StoredMember {
        StoredMember {
            member_id: format!("consumer-{i}"),
            group_instance_id: (i % 2 == 0).then(|| format!("instance-{i}")),
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: 300_000,
            session_timeout_ms: 45_000,
            subscription: Bytes::from(vec![i; 5]),
            assignment: Bytes::from(vec![i; 3]),
        }
    }

    #[test]
    fn keys_round_trip_and_offset_keys_use_version_1() {
        let k = RecordKey::Offset {
            group: "g".into(),
            topic: "t".into(),
            partition: 7,
        };
        let bytes = k.encode();
        assert_eq!(&bytes[..2], &1i16.to_be_bytes());
        assert_eq!(RecordKey::decode(bytes).unwrap(), Some(k));
        let g = RecordKey::Group { group: "g".into() };
        assert_eq!(&g.encode()[..2], &2i16.to_be_bytes());
        assert_eq!(RecordKey::decode(g.encode()).unwrap(), Some(g));
    }

    #[test]
    fn unknown_key_types_are_skipped_not_errors() {
        let mut w = BytesMut::new();
        w.put_i16(3);
        w.put_string("g", false);
        assert_eq!(RecordKey::decode(w.freeze()).unwrap(), None);
    }

    #[test]
    fn values_round_trip() {
        let o = OffsetValue {
            offset: 42,
            leader_epoch: 3,
            metadata: "meta".into(),
            commit_timestamp: 1_700_000_000_000,
            expire_timestamp: -1,
        };
        assert_eq!(OffsetValue::decode(o.encode()).unwrap(), o);
        let g = GroupValue {
            protocol_type: "consumer".into(),
            generation: 5,
            protocol: Some("range".into()),
            leader: Some("consumer-1".into()),
            current_state_timestamp: 123,
            members: vec![member(1), member(2)],
        };
        assert_eq!(GroupValue::decode(g.encode()).unwrap(), g);
    }

    #[test]
    fn older_offset_value_versions_decode() {
        // v1: offset, metadata, commit timestamp, expire timestamp.
        let mut w = BytesMut::new();
        w.put_i16(1);
        w.put_i64(10);
        w.put_string("m", false);
        w.put_i64(5);
        w.put_i64(99);
        let v = OffsetValue::decode(w.freeze()).unwrap();
        assert_eq!((v.offset, v.leader_epoch, v.expire_timestamp), (10, -1, 99));
        // v4: flexible, compact strings and a tag section.
        let mut w = BytesMut::new();
        w.put_i16(4);
        w.put_i64(11);
        w.put_i32(2);
        w.put_string("m", true);
        w.put_i64(6);
        w.put_empty_tagged_fields();
        let v = OffsetValue::decode(w.freeze()).unwrap();
        assert_eq!(
            (v.offset, v.leader_epoch, v.metadata.as_str()),
            (11, 2, "m")
        );
    }

    #[test]
    fn consumer_subscriptions_name_their_topics() {
        let mut w = BytesMut::new();
        w.put_i16(1);
        w.put_i32(2);
        w.put_string("a", false);
        w.put_string("b", false);
        w.put_i32(-1); // user data
        w.put_i32(0); // owned partitions
        assert_eq!(
            subscribed_topics(&w).unwrap(),
            vec!["a".to_string(), "b".to_string()]
        );
        assert_eq!(subscribed_topics(&[0xff]), None);
    }

    proptest! {
        #[test]
        fn decoding_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
            let b = Bytes::from(bytes);
            let _ = RecordKey::decode(b.clone());
            let _ = OffsetValue::decode(b.clone());
            let _ = GroupValue::decode(b.clone());
            let _ = subscribed_topics(&b);
        }
    }
}
