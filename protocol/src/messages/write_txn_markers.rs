//! WriteTxnMarkers (key 27), versions 1-2; flexible.
//!
//! The transaction coordinator asks each partition leader to append the
//! COMMIT or ABORT control record of a finished transaction to the
//! partitions it touched; it is sent broker to broker, never by clients.
//! Kafka 4.0 dropped v0. v2 (Kafka 4.1) adds each marker's transaction
//! version (KIP-890: 0 or 1 for the classic protocol, 2 for TV2); the
//! `kafka-protocol` crate pinlog is checked against stops at v1, so v2 is
//! implemented from Kafka's `WriteTxnMarkersRequest.json`. The response is
//! the same at both versions.

use bytes::{BufMut, BytesMut};

use super::min_topic_bytes;
use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

/// Every version is flexible.
const FLEXIBLE: bool = true;
/// First version whose markers carry `transaction_version`.
const TRANSACTION_VERSION_FROM: i16 = 2;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteTxnMarkersRequest {
    pub markers: Vec<WritableTxnMarker>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WritableTxnMarker {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// True for COMMIT, false for ABORT.
    pub transaction_result: bool,
    pub topics: Vec<WritableTxnMarkerTopic>,
    /// The epoch of the coordinator's `__transaction_state` partition.
    pub coordinator_epoch: i32,
    /// v2+: the transaction version of the marker (0 or 1 for the classic
    /// protocol, 2 for TV2); 0 (Kafka's default) otherwise.
    pub transaction_version: i8,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WritableTxnMarkerTopic {
    pub name: String,
    pub partition_indexes: Vec<i32>,
}

impl WriteTxnMarkersRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let with_tv = version >= TRANSACTION_VERSION_FROM;
        // Producer id and epoch, result, topics, coordinator epoch, the
        // transaction version (v2+) and tags.
        let min_marker = 8
            + 2
            + 1
            + min_array_bytes(FLEXIBLE)
            + 4
            + if with_tv { 1 } else { 0 }
            + min_tags_bytes(FLEXIBLE);
        let markers = r.array("markers", FLEXIBLE, min_marker, |r| {
            let producer_id = r.i64("producer_id")?;
            let producer_epoch = r.i16("producer_epoch")?;
            let transaction_result = r.bool("transaction_result")?;
            let topics = r.array("topics", FLEXIBLE, min_topic_bytes(FLEXIBLE), |r| {
                let name = r.string("name", FLEXIBLE)?;
                let partition_indexes = r.array("partition_indexes", FLEXIBLE, 4, |r| {
                    r.i32("partition_index")
                })?;
                r.skip_tagged_fields()?;
                Ok(WritableTxnMarkerTopic {
                    name,
                    partition_indexes,
                })
            })?;
            let coordinator_epoch = r.i32("coordinator_epoch")?;
            let transaction_version = if with_tv {
                r.i8("transaction_version")?
            } else {
                0
            };
            r.skip_tagged_fields()?;
            Ok(WritableTxnMarker {
                producer_id,
                producer_epoch,
                transaction_result,
                topics,
                coordinator_epoch,
                transaction_version,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(WriteTxnMarkersRequest { markers })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_array_len(Some(self.markers.len()), FLEXIBLE);
        for m in &self.markers {
            w.put_i64(m.producer_id);
            w.put_i16(m.producer_epoch);
            w.put_bool(m.transaction_result);
            w.put_array_len(Some(m.topics.len()), FLEXIBLE);
            for t in &m.topics {
                w.put_string(&t.name, FLEXIBLE);
                w.put_i32_array(Some(&t.partition_indexes), FLEXIBLE);
                w.put_empty_tagged_fields();
            }
            w.put_i32(m.coordinator_epoch);
            if version >= TRANSACTION_VERSION_FROM {
                w.put_i8(m.transaction_version);
            }
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteTxnMarkersResponse {
    pub markers: Vec<WritableTxnMarkerResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WritableTxnMarkerResult {
    pub producer_id: i64,
    pub topics: Vec<WritableTxnMarkerTopicResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WritableTxnMarkerTopicResult {
    pub name: String,
    pub partitions: Vec<WritableTxnMarkerPartitionResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WritableTxnMarkerPartitionResult {
    pub partition_index: i32,
    pub error_code: i16,
}

impl WriteTxnMarkersResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let (s, a, t) = (
            min_string_bytes(FLEXIBLE),
            min_array_bytes(FLEXIBLE),
            min_tags_bytes(FLEXIBLE),
        );
        let markers = r.array("markers", FLEXIBLE, 8 + a + t, |r| {
            let producer_id = r.i64("producer_id")?;
            let topics = r.array("topics", FLEXIBLE, s + a + t, |r| {
                let name = r.string("name", FLEXIBLE)?;
                let partitions = r.array("partitions", FLEXIBLE, 4 + 2 + t, |r| {
                    let p = WritableTxnMarkerPartitionResult {
                        partition_index: r.i32("partition_index")?,
                        error_code: r.i16("error_code")?,
                    };
                    r.skip_tagged_fields()?;
                    Ok(p)
                })?;
                r.skip_tagged_fields()?;
                Ok(WritableTxnMarkerTopicResult { name, partitions })
            })?;
            r.skip_tagged_fields()?;
            Ok(WritableTxnMarkerResult {
                producer_id,
                topics,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(WriteTxnMarkersResponse { markers })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_array_len(Some(self.markers.len()), FLEXIBLE);
        for m in &self.markers {
            w.put_i64(m.producer_id);
            w.put_array_len(Some(m.topics.len()), FLEXIBLE);
            for t in &m.topics {
                w.put_string(&t.name, FLEXIBLE);
                w.put_array_len(Some(t.partitions.len()), FLEXIBLE);
                for p in &t.partitions {
                    w.put_i32(p.partition_index);
                    w.put_i16(p.error_code);
                    w.put_empty_tagged_fields();
                }
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 1..=2;

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> WriteTxnMarkersRequest {
        WriteTxnMarkersRequest {
            markers: vec![
                WritableTxnMarker {
                    producer_id: 1 << 40,
                    producer_epoch: 5,
                    transaction_result: true,
                    topics: vec![
                        WritableTxnMarkerTopic {
                            name: "orders".into(),
                            partition_indexes: vec![0, 3],
                        },
                        WritableTxnMarkerTopic {
                            name: "paiements-€".into(),
                            partition_indexes: Vec::new(),
                        },
                    ],
                    coordinator_epoch: 11,
                    transaction_version: if version >= TRANSACTION_VERSION_FROM {
                        2
                    } else {
                        0
                    },
                },
                WritableTxnMarker::default(),
            ],
        }
    }

    fn response() -> WriteTxnMarkersResponse {
        WriteTxnMarkersResponse {
            markers: vec![WritableTxnMarkerResult {
                producer_id: 1 << 40,
                topics: vec![WritableTxnMarkerTopicResult {
                    name: "orders".into(),
                    partitions: vec![
                        WritableTxnMarkerPartitionResult {
                            partition_index: 3,
                            error_code: 6,
                        },
                        WritableTxnMarkerPartitionResult::default(),
                    ],
                }],
            }],
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            for req in [request(v), WriteTxnMarkersRequest::default()] {
                assert_round_trip(&req, v);
            }
        }
        assert_round_trip(&WriteTxnMarkersResponse::default(), 2);
    }

    #[test]
    fn v1_carries_no_transaction_version() {
        let v2 = request(2);
        assert_eq!(
            encode(&v2, 2).len(),
            encode(&v2, 1).len() + v2.markers.len()
        );
        let back = WriteTxnMarkersRequest::decode(&mut Reader::new(encode(&v2, 1)), 1).unwrap();
        assert_eq!(back, request(1));
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<WriteTxnMarkersRequest>(b.freeze(), 1);
        // One marker whose topic count claims more than the frame holds.
        let mut b = BytesMut::new();
        b.put_uvarint(2);
        b.put_i64(1);
        b.put_i16(0);
        b.put_bool(true);
        b.put_uvarint(u32::MAX as u64);
        // Enough bytes after it for the marker count to pass.
        b.put_slice(&[0; 8]);
        assert_count_too_large::<WriteTxnMarkersRequest>(b.freeze(), 2);
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<WriteTxnMarkersResponse>(b.freeze(), 1);
    }

    conformance_tests!(
        WriteTxnMarkersRequest,
        WriteTxnMarkersResponse,
        VERSIONS,
        request,
        |_| response()
    );
}
