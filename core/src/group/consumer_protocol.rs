//! The consumer protocol embedded in the classic group protocol: the bytes
//! a consumer puts in JoinGroup's protocol metadata
//! (`ConsumerProtocolSubscription`) and the leader hands out in SyncGroup
//! (`ConsumerProtocolAssignment`). The broker reads them when a classic
//! group becomes a consumer group, and when a classic member sits in a
//! consumer group; it writes assignments for those members.
//!
//! Both schemas are versions 0-3 and not flexible. A higher version is read
//! as version 3, as Kafka's clients do: later versions may only add fields
//! at the end.

use bytes::{BufMut, Bytes, BytesMut};

use crate::protocol::codec::{DecodeError, DecodeResult, Reader, Writer};

/// The highest version of either schema this code knows.
pub const CONSUMER_PROTOCOL_VERSION_MAX: i16 = 3;
/// `OwnedPartitions` appear in version 1, `GenerationId` in 2, `RackId` in 3.
const OWNED_PARTITIONS_VERSION: i16 = 1;
const GENERATION_ID_VERSION: i16 = 2;
const RACK_ID_VERSION: i16 = 3;

/// Topic name and partitions, as the consumer protocol lists them.
pub type NamedPartitions = Vec<(String, Vec<i32>)>;

/// A consumer's subscription (`ConsumerProtocolSubscription`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subscription {
    pub version: i16,
    pub topics: Vec<String>,
    pub user_data: Option<Bytes>,
    /// What the member owns (cooperative assignors report it).
    pub owned_partitions: NamedPartitions,
    pub generation_id: i32,
    pub rack_id: Option<String>,
}

fn read_version(r: &mut Reader, what: &'static str) -> DecodeResult<i16> {
    let v = r.i16(what)?;
    if v < 0 {
        return Err(DecodeError::Invalid(format!("negative {what} {v}")));
    }
    Ok(v.min(CONSUMER_PROTOCOL_VERSION_MAX))
}

fn read_named_partitions(r: &mut Reader, field: &'static str) -> DecodeResult<NamedPartitions> {
    // A topic entry takes at least a string length (2) and an array
    // length (4).
    r.array(field, false, 6, |r| {
        let topic = r.string("topic", false)?;
        let partitions = r.array("partitions", false, 4, |r| r.i32("partition"))?;
        Ok((topic, partitions))
    })
}

fn put_named_partitions(w: &mut BytesMut, list: &NamedPartitions) {
    w.put_array_len(Some(list.len()), false);
    for (topic, partitions) in list {
        w.put_string(topic, false);
        w.put_i32_array(Some(partitions.as_slice()), false);
    }
}

/// Reads a subscription; an error when the bytes are not one.
pub fn decode_subscription(bytes: &[u8]) -> DecodeResult<Subscription> {
    let mut r = Reader::new(Bytes::copy_from_slice(bytes));
    let version = read_version(&mut r, "subscription version")?;
    let topics = r.array("topics", false, 2, |r| r.string("topic", false))?;
    let user_data = r.nullable_bytes("user_data", false)?;
    let mut s = Subscription {
        version,
        topics,
        user_data,
        owned_partitions: Vec::new(),
        generation_id: -1,
        rack_id: None,
    };
    if version >= OWNED_PARTITIONS_VERSION {
        s.owned_partitions = read_named_partitions(&mut r, "owned_partitions")?;
    }
    if version >= GENERATION_ID_VERSION {
        s.generation_id = r.i32("generation_id")?;
    }
    if version >= RACK_ID_VERSION {
        s.rack_id = r.nullable_string("rack_id", false)?;
    }
    Ok(s)
}

/// Writes a subscription in its `version` (clamped to the known ones).
pub fn encode_subscription(s: &Subscription) -> Bytes {
    let version = s.version.clamp(0, CONSUMER_PROTOCOL_VERSION_MAX);
    let mut w = BytesMut::new();
    w.put_i16(version);
    w.put_array_len(Some(s.topics.len()), false);
    for t in &s.topics {
        w.put_string(t, false);
    }
    w.put_nullable_bytes(s.user_data.as_deref(), false);
    if version >= OWNED_PARTITIONS_VERSION {
        put_named_partitions(&mut w, &s.owned_partitions);
    }
    if version >= GENERATION_ID_VERSION {
        w.put_i32(s.generation_id);
    }
    if version >= RACK_ID_VERSION {
        w.put_nullable_string(s.rack_id.as_deref(), false);
    }
    w.freeze()
}

/// The version of a subscription or an assignment, clamped to the known
/// ones; `None` when the bytes are too short to have one.
pub fn version_of(bytes: &[u8]) -> Option<i16> {
    let v = i16::from_be_bytes([*bytes.first()?, *bytes.get(1)?]);
    (v >= 0).then_some(v.min(CONSUMER_PROTOCOL_VERSION_MAX))
}

/// Reads an assignment's partitions (`ConsumerProtocolAssignment`); the
/// user data is left out. Empty bytes are an empty assignment: a member
/// that has not synced yet holds nothing.
pub fn decode_assignment(bytes: &[u8]) -> DecodeResult<NamedPartitions> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let mut r = Reader::new(Bytes::copy_from_slice(bytes));
    read_version(&mut r, "assignment version")?;
    let partitions = read_named_partitions(&mut r, "assigned_partitions")?;
    r.nullable_bytes("user_data", false)?;
    Ok(partitions)
}

/// Writes an assignment without user data, in `version` (the version of
/// the member's subscription, as Kafka answers it).
pub fn encode_assignment(version: i16, partitions: &NamedPartitions) -> Bytes {
    let mut w = BytesMut::new();
    w.put_i16(version.clamp(0, CONSUMER_PROTOCOL_VERSION_MAX));
    put_named_partitions(&mut w, partitions);
    w.put_nullable_bytes(None, false);
    w.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn subscription(version: i16) -> Subscription {
        Subscription {
            version,
            topics: vec!["a".into(), "b".into()],
            user_data: Some(Bytes::from_static(b"ud")),
            owned_partitions: if version >= 1 {
                vec![("a".into(), vec![0, 2])]
            } else {
                Vec::new()
            },
            generation_id: if version >= 2 { 7 } else { -1 },
            rack_id: (version >= 3).then(|| "r1".into()),
        }
    }

    #[test]
    fn subscriptions_of_every_version_round_trip() {
        for v in 0..=3 {
            let s = subscription(v);
            assert_eq!(decode_subscription(&encode_subscription(&s)).unwrap(), s);
        }
    }

    #[test]
    fn a_newer_version_with_trailing_fields_reads_as_version_3() {
        let mut bytes = BytesMut::from(&encode_subscription(&subscription(3))[..]);
        bytes[0..2].copy_from_slice(&4i16.to_be_bytes());
        bytes.put_i32(99); // a field version 4 might add
        let s = decode_subscription(&bytes).unwrap();
        assert_eq!(s.version, 3);
        assert_eq!(s.rack_id.as_deref(), Some("r1"));
    }

    #[test]
    fn assignments_round_trip_and_empty_bytes_hold_nothing() {
        let parts = vec![("t".to_string(), vec![1, 3]), ("u".to_string(), vec![0])];
        let bytes = encode_assignment(3, &parts);
        assert_eq!(version_of(&bytes), Some(3));
        assert_eq!(decode_assignment(&bytes).unwrap(), parts);
        assert!(decode_assignment(&[]).unwrap().is_empty());
    }

    #[test]
    fn a_negative_version_is_refused() {
        assert!(decode_subscription(&(-1i16).to_be_bytes()).is_err());
        assert!(decode_assignment(&(-1i16).to_be_bytes()).is_err());
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_subscription(&bytes);
            let _ = decode_assignment(&bytes);
            let _ = version_of(&bytes);
        }
    }
}
