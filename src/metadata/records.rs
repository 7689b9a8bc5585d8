//! Metadata records, after KRaft's: every topic and config change is one of
//! these, appended to the metadata log and applied to the image.
//!
//! Each record is the value of one Kafka record in the metadata log, encoded
//! as `[type i8][version i8][fields...]` with the protocol's primitives.

use bytes::{BufMut, Bytes, BytesMut};

use crate::protocol::codec::{DecodeError, DecodeResult, Reader, Writer};

pub type Uuid = [u8; 16];

/// Kafka's ConfigResource types.
pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataRecord {
    Topic {
        name: String,
        topic_id: Uuid,
    },
    Partition {
        topic_id: Uuid,
        partition: i32,
        replicas: Vec<i32>,
        isr: Vec<i32>,
        leader: i32,
        leader_epoch: i32,
        partition_epoch: i32,
    },
    Config {
        resource_type: i8,
        resource_name: String,
        name: String,
        /// `None` removes the setting (back to the default).
        value: Option<String>,
    },
    RemoveTopic {
        topic_id: Uuid,
    },
    /// The next producer id the broker may hand out (KRaft's ProducerIds).
    ProducerIds {
        next_producer_id: i64,
    },
}

const TOPIC: i8 = 1;
const PARTITION: i8 = 2;
const CONFIG: i8 = 3;
const REMOVE_TOPIC: i8 = 4;
const PRODUCER_IDS: i8 = 5;
const VERSION: i8 = 0;

impl MetadataRecord {
    pub fn encode(&self) -> Bytes {
        let mut w = BytesMut::new();
        match self {
            MetadataRecord::Topic { name, topic_id } => {
                w.put_i8(TOPIC);
                w.put_i8(VERSION);
                w.put_string(name, true);
                w.put_slice(topic_id);
            }
            MetadataRecord::Partition {
                topic_id,
                partition,
                replicas,
                isr,
                leader,
                leader_epoch,
                partition_epoch,
            } => {
                w.put_i8(PARTITION);
                w.put_i8(VERSION);
                w.put_slice(topic_id);
                w.put_i32(*partition);
                for list in [replicas, isr] {
                    w.put_array_len(Some(list.len()), true);
                    for id in list {
                        w.put_i32(*id);
                    }
                }
                w.put_i32(*leader);
                w.put_i32(*leader_epoch);
                w.put_i32(*partition_epoch);
            }
            MetadataRecord::Config {
                resource_type,
                resource_name,
                name,
                value,
            } => {
                w.put_i8(CONFIG);
                w.put_i8(VERSION);
                w.put_i8(*resource_type);
                w.put_string(resource_name, true);
                w.put_string(name, true);
                w.put_nullable_string(value.as_deref(), true);
            }
            MetadataRecord::RemoveTopic { topic_id } => {
                w.put_i8(REMOVE_TOPIC);
                w.put_i8(VERSION);
                w.put_slice(topic_id);
            }
            MetadataRecord::ProducerIds { next_producer_id } => {
                w.put_i8(PRODUCER_IDS);
                w.put_i8(VERSION);
                w.put_i64(*next_producer_id);
            }
        }
        w.freeze()
    }

    pub fn decode(bytes: Bytes) -> DecodeResult<MetadataRecord> {
        let mut r = Reader::new(bytes);
        let kind = r.i8("record type")?;
        let version = r.i8("record version")?;
        if version != VERSION {
            return Err(DecodeError::Invalid(format!(
                "metadata record version {version} is newer than this pinlog understands"
            )));
        }
        let record = match kind {
            TOPIC => MetadataRecord::Topic {
                name: r.string("name", true)?,
                topic_id: r.uuid("topic_id")?,
            },
            PARTITION => MetadataRecord::Partition {
                topic_id: r.uuid("topic_id")?,
                partition: r.i32("partition")?,
                replicas: r.array("replicas", true, 4, |r| r.i32("replica"))?,
                isr: r.array("isr", true, 4, |r| r.i32("isr"))?,
                leader: r.i32("leader")?,
                leader_epoch: r.i32("leader_epoch")?,
                partition_epoch: r.i32("partition_epoch")?,
            },
            CONFIG => MetadataRecord::Config {
                resource_type: r.i8("resource_type")?,
                resource_name: r.string("resource_name", true)?,
                name: r.string("name", true)?,
                value: r.nullable_string("value", true)?,
            },
            REMOVE_TOPIC => MetadataRecord::RemoveTopic {
                topic_id: r.uuid("topic_id")?,
            },
            PRODUCER_IDS => MetadataRecord::ProducerIds {
                next_producer_id: r.i64("next_producer_id")?,
            },
            other => {
                return Err(DecodeError::Invalid(format!(
                    "unknown metadata record type {other}"
                )))
            }
        };
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_record_round_trips() {
        let id = [7u8; 16];
        let records = vec![
            MetadataRecord::Topic {
                name: "orders".into(),
                topic_id: id,
            },
            MetadataRecord::Partition {
                topic_id: id,
                partition: 3,
                replicas: vec![1, 2],
                isr: vec![1],
                leader: 1,
                leader_epoch: 4,
                partition_epoch: 5,
            },
            MetadataRecord::Config {
                resource_type: RESOURCE_TOPIC,
                resource_name: "orders".into(),
                name: "retention.ms".into(),
                value: None,
            },
            MetadataRecord::RemoveTopic { topic_id: id },
            MetadataRecord::ProducerIds {
                next_producer_id: 1000,
            },
        ];
        for r in records {
            assert_eq!(MetadataRecord::decode(r.encode()).unwrap(), r);
        }
        assert!(MetadataRecord::decode(Bytes::from_static(&[9, 0])).is_err());
        assert!(MetadataRecord::decode(Bytes::from_static(&[1])).is_err());
    }
}
