//! ElectLeaders (key 43), versions 0-2; flexible from version 2.
//!
//! `election_type` (version 1 on) is 0 for the preferred replica and 1 for
//! an unclean election (the first live replica when no in-sync replica is
//! live); version 0 always asks for the preferred replica. A null
//! `topic_partitions` means every partition of the cluster.

use bytes::{BufMut, BytesMut};

use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 2;
const ELECTION_TYPE_FROM: i16 = 1;
const TOP_LEVEL_ERROR_FROM: i16 = 1;

/// Elect the first replica of the assignment, if it is in sync.
pub const ELECTION_TYPE_PREFERRED: i8 = 0;
/// Elect any live replica when no in-sync replica is live.
pub const ELECTION_TYPE_UNCLEAN: i8 = 1;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElectLeadersRequest {
    pub election_type: i8,
    /// `None`: every partition.
    pub topic_partitions: Option<Vec<ElectLeadersTopic>>,
    pub timeout_ms: i32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElectLeadersTopic {
    pub topic: String,
    pub partitions: Vec<i32>,
}

impl ElectLeadersRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let election_type = if version >= ELECTION_TYPE_FROM {
            r.i8("election_type")?
        } else {
            ELECTION_TYPE_PREFERRED
        };
        let topic_partitions = r.nullable_array(
            "topic_partitions",
            flexible,
            min_string_bytes(flexible) + min_array_bytes(flexible) + min_tags_bytes(flexible),
            |r| {
                let topic = r.string("topic", flexible)?;
                let partitions = r.array("partitions", flexible, 4, |r| r.i32("partition"))?;
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(ElectLeadersTopic { topic, partitions })
            },
        )?;
        let timeout_ms = r.i32("timeout_ms")?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(ElectLeadersRequest {
            election_type,
            topic_partitions,
            timeout_ms,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version >= ELECTION_TYPE_FROM {
            w.put_i8(self.election_type);
        }
        match &self.topic_partitions {
            None => w.put_array_len(None, flexible),
            Some(topics) => {
                w.put_array_len(Some(topics.len()), flexible);
                for t in topics {
                    w.put_string(&t.topic, flexible);
                    w.put_array_len(Some(t.partitions.len()), flexible);
                    for p in &t.partitions {
                        w.put_i32(*p);
                    }
                    if flexible {
                        w.put_empty_tagged_fields();
                    }
                }
            }
        }
        w.put_i32(self.timeout_ms);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElectLeadersResponse {
    pub throttle_time_ms: i32,
    /// Version 1 on: an error for the whole request.
    pub error_code: i16,
    pub results: Vec<ElectLeadersTopicResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElectLeadersTopicResult {
    pub topic: String,
    pub partitions: Vec<ElectLeadersPartitionResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElectLeadersPartitionResult {
    pub partition: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
}

impl ElectLeadersResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let s = min_string_bytes(flexible);
        let t = min_tags_bytes(flexible);
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let error_code = if version >= TOP_LEVEL_ERROR_FROM {
            r.i16("error_code")?
        } else {
            0
        };
        let results = r.array(
            "results",
            flexible,
            s + min_array_bytes(flexible) + t,
            |r| {
                let topic = r.string("topic", flexible)?;
                let partitions = r.array("partitions", flexible, 4 + 2 + s + t, |r| {
                    let result = ElectLeadersPartitionResult {
                        partition: r.i32("partition")?,
                        error_code: r.i16("error_code")?,
                        error_message: r.nullable_string("error_message", flexible)?,
                    };
                    if flexible {
                        r.skip_tagged_fields()?;
                    }
                    Ok(result)
                })?;
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(ElectLeadersTopicResult { topic, partitions })
            },
        )?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(ElectLeadersResponse {
            throttle_time_ms,
            error_code,
            results,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        if version >= TOP_LEVEL_ERROR_FROM {
            w.put_i16(self.error_code);
        }
        w.put_array_len(Some(self.results.len()), flexible);
        for t in &self.results {
            w.put_string(&t.topic, flexible);
            w.put_array_len(Some(t.partitions.len()), flexible);
            for p in &t.partitions {
                w.put_i32(p.partition);
                w.put_i16(p.error_code);
                w.put_nullable_string(p.error_message.as_deref(), flexible);
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=2;

    /// Every field non-default; version 0 has no election type.
    fn request(version: i16) -> ElectLeadersRequest {
        ElectLeadersRequest {
            election_type: if version >= 1 {
                ELECTION_TYPE_UNCLEAN
            } else {
                0
            },
            topic_partitions: Some(vec![
                ElectLeadersTopic {
                    topic: "orders".into(),
                    partitions: vec![0, 3],
                },
                ElectLeadersTopic {
                    topic: "empty".into(),
                    partitions: vec![],
                },
            ]),
            timeout_ms: 30_000,
        }
    }

    fn response(version: i16) -> ElectLeadersResponse {
        ElectLeadersResponse {
            throttle_time_ms: 7,
            error_code: if version >= 1 { 41 } else { 0 },
            results: vec![ElectLeadersTopicResult {
                topic: "orders".into(),
                partitions: vec![
                    ElectLeadersPartitionResult {
                        partition: 0,
                        error_code: 0,
                        error_message: None,
                    },
                    ElectLeadersPartitionResult {
                        partition: 3,
                        error_code: 80,
                        error_message: Some("preferred replica 2 is not in sync".into()),
                    },
                ],
            }],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        for v in VERSIONS {
            assert_round_trip(&request(v), v);
            assert_round_trip(&response(v), v);
            let all = ElectLeadersRequest {
                topic_partitions: None,
                ..request(v)
            };
            assert_round_trip(&all, v);
        }
    }

    conformance_tests!(
        ElectLeadersRequest,
        ElectLeadersResponse,
        VERSIONS,
        request,
        response
    );
}
