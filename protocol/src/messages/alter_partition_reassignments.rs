//! AlterPartitionReassignments (key 45), versions 0-1; flexible from
//! version 0.
//!
//! A partition's `replicas` list moves it there; a null list cancels its
//! reassignment in progress. Version 1 adds `allow_replication_factor_change`
//! (default true) to the request, echoed in the response.

use bytes::{BufMut, BytesMut};

use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

/// Every version is flexible.
const FLEXIBLE: bool = true;
const ALLOW_RF_CHANGE_FROM: i16 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionReassignmentsRequest {
    pub timeout_ms: i32,
    /// Version 1 on; true before it.
    pub allow_replication_factor_change: bool,
    pub topics: Vec<ReassignableTopic>,
}

impl Default for AlterPartitionReassignmentsRequest {
    fn default() -> Self {
        AlterPartitionReassignmentsRequest {
            timeout_ms: 60_000,
            allow_replication_factor_change: true,
            topics: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReassignableTopic {
    pub name: String,
    pub partitions: Vec<ReassignablePartition>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReassignablePartition {
    pub partition_index: i32,
    /// `None`: cancel the reassignment in progress.
    pub replicas: Option<Vec<i32>>,
}

impl AlterPartitionReassignmentsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let (s, a, t) = (
            min_string_bytes(FLEXIBLE),
            min_array_bytes(FLEXIBLE),
            min_tags_bytes(FLEXIBLE),
        );
        let timeout_ms = r.i32("timeout_ms")?;
        let allow_replication_factor_change = if version >= ALLOW_RF_CHANGE_FROM {
            r.bool("allow_replication_factor_change")?
        } else {
            true
        };
        let topics = r.array("topics", FLEXIBLE, s + a + t, |r| {
            let name = r.string("name", FLEXIBLE)?;
            let partitions = r.array("partitions", FLEXIBLE, 4 + a + t, |r| {
                let partition_index = r.i32("partition_index")?;
                let replicas = r.nullable_array("replicas", FLEXIBLE, 4, |r| r.i32("replica"))?;
                r.skip_tagged_fields()?;
                Ok(ReassignablePartition {
                    partition_index,
                    replicas,
                })
            })?;
            r.skip_tagged_fields()?;
            Ok(ReassignableTopic { name, partitions })
        })?;
        r.skip_tagged_fields()?;
        Ok(AlterPartitionReassignmentsRequest {
            timeout_ms,
            allow_replication_factor_change,
            topics,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.timeout_ms);
        if version >= ALLOW_RF_CHANGE_FROM {
            w.put_bool(self.allow_replication_factor_change);
        }
        w.put_array_len(Some(self.topics.len()), FLEXIBLE);
        for topic in &self.topics {
            w.put_string(&topic.name, FLEXIBLE);
            w.put_array_len(Some(topic.partitions.len()), FLEXIBLE);
            for p in &topic.partitions {
                w.put_i32(p.partition_index);
                w.put_i32_array(p.replicas.as_deref(), FLEXIBLE);
                w.put_empty_tagged_fields();
            }
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionReassignmentsResponse {
    pub throttle_time_ms: i32,
    /// Version 1 on: the request's value, echoed.
    pub allow_replication_factor_change: bool,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub responses: Vec<ReassignableTopicResponse>,
}

impl Default for AlterPartitionReassignmentsResponse {
    fn default() -> Self {
        AlterPartitionReassignmentsResponse {
            throttle_time_ms: 0,
            allow_replication_factor_change: true,
            error_code: 0,
            error_message: None,
            responses: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReassignableTopicResponse {
    pub name: String,
    pub partitions: Vec<ReassignablePartitionResponse>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReassignablePartitionResponse {
    pub partition_index: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
}

impl AlterPartitionReassignmentsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let (s, a, t) = (
            min_string_bytes(FLEXIBLE),
            min_array_bytes(FLEXIBLE),
            min_tags_bytes(FLEXIBLE),
        );
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let allow_replication_factor_change = if version >= ALLOW_RF_CHANGE_FROM {
            r.bool("allow_replication_factor_change")?
        } else {
            true
        };
        let error_code = r.i16("error_code")?;
        let error_message = r.nullable_string("error_message", FLEXIBLE)?;
        let responses = r.array("responses", FLEXIBLE, s + a + t, |r| {
            let name = r.string("name", FLEXIBLE)?;
            let partitions = r.array("partitions", FLEXIBLE, 4 + 2 + s + t, |r| {
                let p = ReassignablePartitionResponse {
                    partition_index: r.i32("partition_index")?,
                    error_code: r.i16("error_code")?,
                    error_message: r.nullable_string("error_message", FLEXIBLE)?,
                };
                r.skip_tagged_fields()?;
                Ok(p)
            })?;
            r.skip_tagged_fields()?;
            Ok(ReassignableTopicResponse { name, partitions })
        })?;
        r.skip_tagged_fields()?;
        Ok(AlterPartitionReassignmentsResponse {
            throttle_time_ms,
            allow_replication_factor_change,
            error_code,
            error_message,
            responses,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.throttle_time_ms);
        if version >= ALLOW_RF_CHANGE_FROM {
            w.put_bool(self.allow_replication_factor_change);
        }
        w.put_i16(self.error_code);
        w.put_nullable_string(self.error_message.as_deref(), FLEXIBLE);
        w.put_array_len(Some(self.responses.len()), FLEXIBLE);
        for topic in &self.responses {
            w.put_string(&topic.name, FLEXIBLE);
            w.put_array_len(Some(topic.partitions.len()), FLEXIBLE);
            for p in &topic.partitions {
                w.put_i32(p.partition_index);
                w.put_i16(p.error_code);
                w.put_nullable_string(p.error_message.as_deref(), FLEXIBLE);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=1;

    /// Every field non-default where the version has it.
    fn request(version: i16) -> AlterPartitionReassignmentsRequest {
        AlterPartitionReassignmentsRequest {
            timeout_ms: 30_000,
            allow_replication_factor_change: version < 1,
            topics: vec![ReassignableTopic {
                name: "orders".into(),
                partitions: vec![
                    ReassignablePartition {
                        partition_index: 2,
                        replicas: Some(vec![3, 4, 5]),
                    },
                    ReassignablePartition {
                        partition_index: 7,
                        replicas: None,
                    },
                ],
            }],
        }
    }

    fn response(version: i16) -> AlterPartitionReassignmentsResponse {
        AlterPartitionReassignmentsResponse {
            throttle_time_ms: 9,
            allow_replication_factor_change: version < 1,
            error_code: 0,
            error_message: Some("partly".into()),
            responses: vec![ReassignableTopicResponse {
                name: "orders".into(),
                partitions: vec![
                    ReassignablePartitionResponse {
                        partition_index: 2,
                        error_code: 0,
                        error_message: None,
                    },
                    ReassignablePartitionResponse {
                        partition_index: 7,
                        error_code: 85,
                        error_message: Some("no reassignment in progress".into()),
                    },
                ],
            }],
        }
    }

    conformance_tests!(
        AlterPartitionReassignmentsRequest,
        AlterPartitionReassignmentsResponse,
        VERSIONS,
        request,
        response
    );
}
