//! The records of `__transaction_state`: Kafka's `TransactionLogKey` and
//! `TransactionLogValue` schemas, so that `kafka-dump-log.sh
//! --transaction-log-decoder` reads pinlog's coordinator state, and which
//! partition an id lives on.
//!
//! ```text
//! key:   version i16 = 0 | transactional_id string
//! value: version i16 (0; 1 is flexible) | producer_id i64 |
//!        producer_epoch i16 | transaction_timeout_ms i32 | status i8 |
//!        partitions nullable [topic string, partition_ids [i32]] |
//!        last_update_timestamp_ms i64 | start_timestamp_ms i64
//!        (v1 tags: 0 previous_producer_id, 1 next_producer_id,
//!         2 client_transaction_version)
//! ```
//!
//! A null value is a tombstone: the id expired. pinlog writes value
//! version 1 when a tagged field has something to say (a transaction on
//! transaction version 2, a rotated or rotating producer id), so that a
//! new coordinator after a failover writes the markers the same way and
//! completes a rotation; otherwise version 0. Kafka picks the version from
//! the cluster's `transaction.version` instead; its decoder reads both.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{BufMut, Bytes, BytesMut};

use crate::protocol::codec::{parse_tag, put_tag, DecodeError, DecodeResult, Reader, Writer};
use crate::topic_partition::TopicPartition;
use crate::transaction::metadata::{TxnMetadata, TxnState, NO_PRODUCER_EPOCH, NO_PRODUCER_ID};

/// The only key version Kafka defines.
const KEY_VERSION: i16 = 0;
/// The value version pinlog writes when no tagged field is needed.
const VALUE_VERSION: i16 = 0;
/// The first flexible value version (compact strings, tagged fields).
const FLEXIBLE_VALUE_VERSION: i16 = 1;
const PREVIOUS_PRODUCER_ID_TAG: u32 = 0;
const NEXT_PRODUCER_ID_TAG: u32 = 1;
const CLIENT_TRANSACTION_VERSION_TAG: u32 = 2;
/// Smallest encoding of one topic's partitions (non-flexible): an empty
/// name and an empty array.
const MIN_TOPIC_BYTES: usize = 2 + 4;

/// Kafka's transactional-id-to-partition mapping, the same as the group
/// one: `Utils.abs(transactionalId.hashCode()) % partitions`.
pub fn partition_for(transactional_id: &str, partitions: i32) -> i32 {
    crate::group::offsets_topic::partition_for(transactional_id, partitions)
}

/// The record key of an id.
pub fn encode_key(transactional_id: &str) -> Bytes {
    let mut w = BytesMut::new();
    w.put_i16(KEY_VERSION);
    w.put_string(transactional_id, false);
    w.freeze()
}

/// The id a key names. A key of an unknown version is an error: Kafka
/// defines only version 0.
pub fn decode_key(bytes: Bytes) -> DecodeResult<String> {
    let mut r = Reader::new(bytes);
    let version = r.i16("transaction log key version")?;
    if version != KEY_VERSION {
        return Err(DecodeError::Invalid(format!(
            "transaction log key version {version} is not 0"
        )));
    }
    r.string("transactional_id", false)
}

/// The record value of an id's state.
pub fn encode_value(m: &TxnMetadata) -> Bytes {
    let tags = tagged_fields(m);
    let flexible = !tags.is_empty();
    let mut w = BytesMut::new();
    w.put_i16(if flexible {
        FLEXIBLE_VALUE_VERSION
    } else {
        VALUE_VERSION
    });
    w.put_i64(m.producer_id);
    w.put_i16(m.producer_epoch);
    w.put_i32(m.txn_timeout_ms);
    w.put_i8(m.state.id());
    if m.state == TxnState::Empty {
        // Kafka writes no partitions for an id without a transaction.
        w.put_array_len(None, flexible);
    } else {
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for tp in &m.partitions {
            by_topic.entry(&tp.topic).or_default().push(tp.partition);
        }
        w.put_array_len(Some(by_topic.len()), flexible);
        for (topic, partitions) in by_topic {
            w.put_string(topic, flexible);
            w.put_i32_array(Some(&partitions), flexible);
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
    }
    w.put_i64(m.txn_last_update_timestamp_ms);
    w.put_i64(m.txn_start_timestamp_ms);
    if flexible {
        w.put_uvarint(tags.len() as u64);
        for (tag, value) in tags {
            put_tag(&mut w, tag, &value);
        }
    }
    w.freeze()
}

/// The value's tagged fields that differ from their defaults, by tag.
fn tagged_fields(m: &TxnMetadata) -> Vec<(u32, Vec<u8>)> {
    let mut tags = Vec::new();
    if m.previous_producer_id != NO_PRODUCER_ID {
        tags.push((
            PREVIOUS_PRODUCER_ID_TAG,
            m.previous_producer_id.to_be_bytes().to_vec(),
        ));
    }
    if m.next_producer_id != NO_PRODUCER_ID {
        tags.push((
            NEXT_PRODUCER_ID_TAG,
            m.next_producer_id.to_be_bytes().to_vec(),
        ));
    }
    if m.client_transaction_version != 0 {
        tags.push((
            CLIENT_TRANSACTION_VERSION_TAG,
            m.client_transaction_version.to_be_bytes().to_vec(),
        ));
    }
    tags
}

/// An id's state from its record value (both versions).
pub fn decode_value(transactional_id: &str, bytes: Bytes) -> DecodeResult<TxnMetadata> {
    let mut r = Reader::new(bytes);
    let version = r.i16("transaction log value version")?;
    if !(0..=FLEXIBLE_VALUE_VERSION).contains(&version) {
        return Err(DecodeError::Invalid(format!(
            "transaction log value version {version} is not 0 or 1"
        )));
    }
    let flexible = version >= FLEXIBLE_VALUE_VERSION;
    let producer_id = r.i64("producer_id")?;
    let producer_epoch = r.i16("producer_epoch")?;
    let txn_timeout_ms = r.i32("transaction_timeout_ms")?;
    let status = r.i8("transaction_status")?;
    let state = TxnState::from_id(status)
        .ok_or_else(|| DecodeError::Invalid(format!("unknown transaction status {status}")))?;
    let topics = r.nullable_array("transaction_partitions", flexible, MIN_TOPIC_BYTES, |r| {
        let topic = r.string("topic", flexible)?;
        let partitions = r.array("partition_ids", flexible, 4, |r| r.i32("partition_id"))?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok((topic, partitions))
    })?;
    let mut partitions = BTreeSet::new();
    for (topic, ids) in topics.unwrap_or_default() {
        for p in ids {
            partitions.insert(TopicPartition::new(topic.clone(), p));
        }
    }
    let txn_last_update_timestamp_ms = r.i64("transaction_last_update_timestamp_ms")?;
    let txn_start_timestamp_ms = r.i64("transaction_start_timestamp_ms")?;
    let mut m = TxnMetadata {
        transactional_id: transactional_id.to_string(),
        producer_id,
        previous_producer_id: NO_PRODUCER_ID,
        next_producer_id: NO_PRODUCER_ID,
        producer_epoch,
        last_producer_epoch: NO_PRODUCER_EPOCH,
        txn_timeout_ms,
        state,
        partitions,
        txn_start_timestamp_ms,
        txn_last_update_timestamp_ms,
        client_transaction_version: 0,
    };
    if flexible {
        r.tagged_fields(|tag, value| {
            match tag {
                PREVIOUS_PRODUCER_ID_TAG => {
                    m.previous_producer_id =
                        parse_tag(tag, value, |r| r.i64("previous_producer_id"))?
                }
                NEXT_PRODUCER_ID_TAG => {
                    m.next_producer_id = parse_tag(tag, value, |r| r.i64("next_producer_id"))?
                }
                CLIENT_TRANSACTION_VERSION_TAG => {
                    m.client_transaction_version =
                        parse_tag(tag, value, |r| r.i16("client_transaction_version"))?
                }
                _ => {}
            }
            Ok(())
        })?;
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(state: TxnState) -> TxnMetadata {
        let mut m = TxnMetadata::new("payments-1".into(), 4000, 60_000, 1_700_000_000_000);
        m.producer_epoch = 3;
        m.state = state;
        if state != TxnState::Empty {
            m.partitions = [("a", 0), ("a", 2), ("b", 1)]
                .into_iter()
                .map(|(t, p)| TopicPartition::new(t.to_string(), p))
                .collect();
            m.txn_start_timestamp_ms = 1_700_000_000_100;
        }
        m
    }

    #[test]
    fn keys_and_values_round_trip_in_kafkas_layout() {
        let key = encode_key("payments-1");
        assert_eq!(
            &key[..4],
            &[0, 0, 0, 10],
            "version 0, then a 10-byte string"
        );
        assert_eq!(decode_key(key).unwrap(), "payments-1");
        for state in TxnState::ALL {
            let m = sample(state);
            let bytes = encode_value(&m);
            assert_eq!(&bytes[..2], &[0, 0], "value version 0");
            assert_eq!(decode_value("payments-1", bytes).unwrap(), m, "{state:?}");
        }
        // Empty: a null partition array (-1).
        let empty = encode_value(&sample(TxnState::Empty));
        assert_eq!(
            &empty[2 + 8 + 2 + 4 + 1..2 + 8 + 2 + 4 + 1 + 4],
            &(-1i32).to_be_bytes()
        );
    }

    #[test]
    fn a_value_with_tagged_fields_is_written_flexible_and_round_trips() {
        for state in TxnState::ALL {
            let mut m = sample(state);
            m.client_transaction_version = 2;
            m.previous_producer_id = 3999;
            m.next_producer_id = 4001;
            let bytes = encode_value(&m);
            assert_eq!(&bytes[..2], &[0, 1], "value version 1");
            assert_eq!(decode_value("payments-1", bytes).unwrap(), m, "{state:?}");
        }
    }

    #[test]
    fn a_flexible_value_with_tags_decodes() {
        let mut w = BytesMut::new();
        w.put_i16(1);
        w.put_i64(9);
        w.put_i16(2);
        w.put_i32(1000);
        w.put_i8(TxnState::Ongoing.id());
        w.put_array_len(Some(1), true);
        w.put_string("t", true);
        w.put_i32_array(Some(&[4]), true);
        w.put_empty_tagged_fields();
        w.put_i64(5);
        w.put_i64(4);
        // Tags 0 (previous id 8) and 2 (client version 2), and an unknown 7.
        w.put_uvarint(3);
        crate::protocol::codec::put_tag(&mut w, 0, &8i64.to_be_bytes());
        crate::protocol::codec::put_tag(&mut w, 2, &2i16.to_be_bytes());
        crate::protocol::codec::put_tag(&mut w, 7, &[1, 2, 3]);
        let m = decode_value("t", w.freeze()).unwrap();
        assert_eq!((m.producer_id, m.previous_producer_id), (9, 8));
        assert_eq!(m.client_transaction_version, 2);
        assert_eq!(m.partitions.len(), 1);
    }

    #[test]
    fn bad_records_are_errors_not_panics() {
        assert!(decode_key(Bytes::from_static(&[0, 1, 0, 0])).is_err());
        assert!(decode_value("t", Bytes::from_static(&[0, 2])).is_err());
        let good = encode_value(&sample(TxnState::Ongoing));
        for cut in 0..good.len() {
            assert!(
                decode_value("t", good.slice(..cut)).is_err(),
                "cut at {cut}"
            );
        }
        let mut bad_status = good.to_vec();
        bad_status[2 + 8 + 2 + 4] = 42;
        assert!(decode_value("t", Bytes::from(bad_status)).is_err());
    }

    #[test]
    fn ids_land_on_kafkas_partitions() {
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        assert!((0..50).contains(&partition_for("my-txn", 50)));
    }
}
