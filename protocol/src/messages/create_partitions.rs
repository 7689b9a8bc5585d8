//! CreatePartitions (key 37), versions 0-3; flexible from version 2.
//!
//! A topic's `assignments` is a nullable array: null asks the broker to
//! place the new partitions itself, while a present array lists the
//! replicas of each new partition in order.

use bytes::{BufMut, BytesMut};

use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 2;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreatePartitionsRequest {
    pub topics: Vec<CreatePartitionsTopic>,
    pub timeout_ms: i32,
    pub validate_only: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreatePartitionsTopic {
    pub name: String,
    /// The new total partition count.
    pub count: i32,
    /// `None` lets the broker place the new partitions.
    pub assignments: Option<Vec<CreatePartitionsAssignment>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreatePartitionsAssignment {
    pub broker_ids: Vec<i32>,
}

impl CreatePartitionsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let a = min_array_bytes(flexible);
        let t = min_tags_bytes(flexible);
        let topics = r.array(
            "topics",
            flexible,
            min_string_bytes(flexible) + 4 + a + t,
            |r| {
                let name = r.string("name", flexible)?;
                let count = r.i32("count")?;
                let assignments = r.nullable_array("assignments", flexible, a + t, |r| {
                    let broker_ids = r.array("broker_ids", flexible, 4, |r| r.i32("broker_id"))?;
                    if flexible {
                        r.skip_tagged_fields()?;
                    }
                    Ok(CreatePartitionsAssignment { broker_ids })
                })?;
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(CreatePartitionsTopic {
                    name,
                    count,
                    assignments,
                })
            },
        )?;
        let timeout_ms = r.i32("timeout_ms")?;
        let validate_only = r.bool("validate_only")?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(CreatePartitionsRequest {
            topics,
            timeout_ms,
            validate_only,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_array_len(Some(self.topics.len()), flexible);
        for topic in &self.topics {
            w.put_string(&topic.name, flexible);
            w.put_i32(topic.count);
            match &topic.assignments {
                None => w.put_array_len(None, flexible),
                Some(assignments) => {
                    w.put_array_len(Some(assignments.len()), flexible);
                    for a in assignments {
                        w.put_array_len(Some(a.broker_ids.len()), flexible);
                        for id in &a.broker_ids {
                            w.put_i32(*id);
                        }
                        if flexible {
                            w.put_empty_tagged_fields();
                        }
                    }
                }
            }
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
        w.put_i32(self.timeout_ms);
        w.put_bool(self.validate_only);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreatePartitionsResponse {
    pub throttle_time_ms: i32,
    pub results: Vec<CreatePartitionsTopicResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreatePartitionsTopicResult {
    pub name: String,
    pub error_code: i16,
    pub error_message: Option<String>,
}

impl CreatePartitionsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let s = min_string_bytes(flexible);
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let results = r.array(
            "results",
            flexible,
            s + 2 + s + min_tags_bytes(flexible),
            |r| {
                let result = CreatePartitionsTopicResult {
                    name: r.string("name", flexible)?,
                    error_code: r.i16("error_code")?,
                    error_message: r.nullable_string("error_message", flexible)?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(result)
            },
        )?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(CreatePartitionsResponse {
            throttle_time_ms,
            results,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.results.len()), flexible);
        for result in &self.results {
            w.put_string(&result.name, flexible);
            w.put_i16(result.error_code);
            w.put_nullable_string(result.error_message.as_deref(), flexible);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=3;

    /// A request with a non-default value in every field (all versions carry
    /// the same fields).
    fn request() -> CreatePartitionsRequest {
        CreatePartitionsRequest {
            topics: vec![
                CreatePartitionsTopic {
                    name: "orders".into(),
                    count: 4,
                    assignments: Some(vec![
                        CreatePartitionsAssignment {
                            broker_ids: vec![1, 2],
                        },
                        CreatePartitionsAssignment {
                            broker_ids: vec![3, 1],
                        },
                    ]),
                },
                CreatePartitionsTopic {
                    name: "events".into(),
                    count: 8,
                    assignments: None,
                },
                CreatePartitionsTopic {
                    name: "empty".into(),
                    count: 1,
                    assignments: Some(vec![]),
                },
            ],
            timeout_ms: 5_000,
            validate_only: true,
        }
    }

    fn response() -> CreatePartitionsResponse {
        CreatePartitionsResponse {
            throttle_time_ms: 12,
            results: vec![
                CreatePartitionsTopicResult {
                    name: "orders".into(),
                    error_code: 37,
                    error_message: Some("too few partitions".into()),
                },
                CreatePartitionsTopicResult {
                    name: "events".into(),
                    error_code: 0,
                    error_message: None,
                },
            ],
        }
    }

    conformance_tests!(
        CreatePartitionsRequest,
        CreatePartitionsResponse,
        VERSIONS,
        |_| request(),
        |_| response()
    );
}
