//! CreateTopics (key 19), versions 2-7; flexible from version 5.
//!
//! From v5 the response also describes the created topic (partitions,
//! replication factor, configs). When the broker cannot return the configs it
//! sends a null config array and says why in the tagged field
//! `topic_config_error_code` (tag 0), which, like every tagged field, is left
//! out of the encoding while it holds its default of 0.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeError, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 5;

/// Tag of `CreatableTopicResult::topic_config_error_code`.
const TOPIC_CONFIG_ERROR_CODE_TAG: u32 = 0;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTopicsRequest {
    pub topics: Vec<CreatableTopic>,
    /// Kafka's default is 60000.
    pub timeout_ms: i32,
    /// v1+.
    pub validate_only: bool,
}

impl Default for CreateTopicsRequest {
    fn default() -> Self {
        CreateTopicsRequest {
            topics: Vec::new(),
            timeout_ms: 60_000,
            validate_only: false,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreatableTopic {
    pub name: String,
    /// -1 with a manual assignment, or (v4+) to use the broker's default.
    pub num_partitions: i32,
    /// -1 with a manual assignment, or (v4+) to use the broker's default.
    pub replication_factor: i16,
    /// Empty for automatic assignment.
    pub assignments: Vec<CreatableReplicaAssignment>,
    pub configs: Vec<CreatableTopicConfig>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreatableReplicaAssignment {
    pub partition_index: i32,
    pub broker_ids: Vec<i32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreatableTopicConfig {
    pub name: String,
    pub value: Option<String>,
}

impl CreateTopicsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let s = min_string_bytes(flexible);
        let a = min_array_bytes(flexible);
        let t = min_tags_bytes(flexible);
        let topics = r.array("topics", flexible, s + 4 + 2 + a + a + t, |r| {
            let name = r.string("name", flexible)?;
            let num_partitions = r.i32("num_partitions")?;
            let replication_factor = r.i16("replication_factor")?;
            let assignments = r.array("assignments", flexible, 4 + a + t, |r| {
                let partition_index = r.i32("partition_index")?;
                let broker_ids = r.array("broker_ids", flexible, 4, |r| r.i32("broker_id"))?;
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(CreatableReplicaAssignment {
                    partition_index,
                    broker_ids,
                })
            })?;
            let configs = r.array("configs", flexible, s + s + t, |r| {
                let name = r.string("name", flexible)?;
                let value = r.nullable_string("value", flexible)?;
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(CreatableTopicConfig { name, value })
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(CreatableTopic {
                name,
                num_partitions,
                replication_factor,
                assignments,
                configs,
            })
        })?;
        let timeout_ms = r.i32("timeout_ms")?;
        let validate_only = if version >= 1 {
            r.bool("validate_only")?
        } else {
            false
        };
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(CreateTopicsRequest {
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
            w.put_i32(topic.num_partitions);
            w.put_i16(topic.replication_factor);
            w.put_array_len(Some(topic.assignments.len()), flexible);
            for a in &topic.assignments {
                w.put_i32(a.partition_index);
                w.put_array_len(Some(a.broker_ids.len()), flexible);
                for id in &a.broker_ids {
                    w.put_i32(*id);
                }
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
            w.put_array_len(Some(topic.configs.len()), flexible);
            for c in &topic.configs {
                w.put_string(&c.name, flexible);
                w.put_nullable_string(c.value.as_deref(), flexible);
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
        w.put_i32(self.timeout_ms);
        if version >= 1 {
            w.put_bool(self.validate_only);
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreateTopicsResponse {
    /// v2+.
    pub throttle_time_ms: i32,
    pub topics: Vec<CreatableTopicResult>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatableTopicResult {
    pub name: String,
    /// v7+.
    pub topic_id: [u8; 16],
    pub error_code: i16,
    /// v1+.
    pub error_message: Option<String>,
    /// v5+, tagged (tag 0); why `configs` is null, or 0.
    pub topic_config_error_code: i16,
    /// v5+; -1 when unknown.
    pub num_partitions: i32,
    /// v5+; -1 when unknown.
    pub replication_factor: i16,
    /// v5+; `None` (a null array) when the configs could not be described.
    pub configs: Option<Vec<CreatableTopicConfigs>>,
}

impl Default for CreatableTopicResult {
    fn default() -> Self {
        CreatableTopicResult {
            name: String::new(),
            topic_id: [0; 16],
            error_code: 0,
            error_message: None,
            topic_config_error_code: 0,
            num_partitions: -1,
            replication_factor: -1,
            configs: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatableTopicConfigs {
    pub name: String,
    pub value: Option<String>,
    pub read_only: bool,
    /// -1 when unknown.
    pub config_source: i8,
    pub is_sensitive: bool,
}

impl Default for CreatableTopicConfigs {
    fn default() -> Self {
        CreatableTopicConfigs {
            name: String::new(),
            value: None,
            read_only: false,
            config_source: -1,
            is_sensitive: false,
        }
    }
}

/// Parses the value of an INT16 tagged field, which must be exactly two bytes.
fn tagged_i16(field: &'static str, mut value: Bytes) -> DecodeResult<i16> {
    if value.len() != 2 {
        return Err(DecodeError::InvalidLength {
            field,
            length: value.len() as i64,
        });
    }
    Ok(value.get_i16())
}

impl CreateTopicsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let s = min_string_bytes(flexible);
        let t = min_tags_bytes(flexible);
        let throttle_time_ms = if version >= 2 {
            r.i32("throttle_time_ms")?
        } else {
            0
        };
        let topic_min = s
            + if version >= 7 { 16 } else { 0 }
            + 2
            + if version >= 1 { s } else { 0 }
            + if version >= 5 { 4 + 2 + 1 } else { 0 }
            + t;
        let topics = r.array("topics", flexible, topic_min, |r| {
            let mut topic = CreatableTopicResult {
                name: r.string("name", flexible)?,
                ..CreatableTopicResult::default()
            };
            if version >= 7 {
                topic.topic_id = r.uuid("topic_id")?;
            }
            topic.error_code = r.i16("error_code")?;
            if version >= 1 {
                topic.error_message = r.nullable_string("error_message", flexible)?;
            }
            if version >= 5 {
                topic.num_partitions = r.i32("num_partitions")?;
                topic.replication_factor = r.i16("replication_factor")?;
                topic.configs =
                    r.nullable_array("configs", flexible, s + s + 1 + 1 + 1 + t, |r| {
                        decode_config(r, flexible)
                    })?;
            }
            if flexible {
                r.tagged_fields(|tag, value| {
                    if tag == TOPIC_CONFIG_ERROR_CODE_TAG {
                        topic.topic_config_error_code =
                            tagged_i16("topic_config_error_code", value)?;
                    }
                    Ok(())
                })?;
            }
            Ok(topic)
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(CreateTopicsResponse {
            throttle_time_ms,
            topics,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version >= 2 {
            w.put_i32(self.throttle_time_ms);
        }
        w.put_array_len(Some(self.topics.len()), flexible);
        for topic in &self.topics {
            w.put_string(&topic.name, flexible);
            if version >= 7 {
                w.put_slice(&topic.topic_id);
            }
            w.put_i16(topic.error_code);
            if version >= 1 {
                w.put_nullable_string(topic.error_message.as_deref(), flexible);
            }
            if version >= 5 {
                w.put_i32(topic.num_partitions);
                w.put_i16(topic.replication_factor);
                match &topic.configs {
                    None => w.put_array_len(None, flexible),
                    Some(configs) => {
                        w.put_array_len(Some(configs.len()), flexible);
                        for c in configs {
                            w.put_string(&c.name, flexible);
                            w.put_nullable_string(c.value.as_deref(), flexible);
                            w.put_bool(c.read_only);
                            w.put_i8(c.config_source);
                            w.put_bool(c.is_sensitive);
                            if flexible {
                                w.put_empty_tagged_fields();
                            }
                        }
                    }
                }
            }
            if flexible {
                // A tagged field at its default is omitted, as Kafka does.
                if topic.topic_config_error_code != 0 {
                    w.put_uvarint(1);
                    w.put_uvarint(TOPIC_CONFIG_ERROR_CODE_TAG as u64);
                    w.put_uvarint(2);
                    w.put_i16(topic.topic_config_error_code);
                } else {
                    w.put_empty_tagged_fields();
                }
            }
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

/// One config of a v5+ (always flexible) topic result.
fn decode_config(r: &mut Reader, flexible: bool) -> DecodeResult<CreatableTopicConfigs> {
    let c = CreatableTopicConfigs {
        name: r.string("name", flexible)?,
        value: r.nullable_string("value", flexible)?,
        read_only: r.bool("read_only")?,
        config_source: r.i8("config_source")?,
        is_sensitive: r.bool("is_sensitive")?,
    };
    if flexible {
        r.skip_tagged_fields()?;
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 2..=7;

    /// A request with a non-default value in every field `version` carries.
    fn request(_version: i16) -> CreateTopicsRequest {
        CreateTopicsRequest {
            topics: vec![
                CreatableTopic {
                    name: "orders".into(),
                    num_partitions: -1,
                    replication_factor: -1,
                    assignments: vec![
                        CreatableReplicaAssignment {
                            partition_index: 0,
                            broker_ids: vec![1, 2],
                        },
                        CreatableReplicaAssignment {
                            partition_index: 1,
                            broker_ids: vec![2, 3],
                        },
                    ],
                    configs: vec![
                        CreatableTopicConfig {
                            name: "cleanup.policy".into(),
                            value: Some("compact".into()),
                        },
                        CreatableTopicConfig {
                            name: "retention.ms".into(),
                            value: None,
                        },
                    ],
                },
                CreatableTopic {
                    name: "events".into(),
                    num_partitions: 12,
                    replication_factor: 3,
                    ..CreatableTopic::default()
                },
            ],
            timeout_ms: 30_000,
            validate_only: true,
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> CreateTopicsResponse {
        let v5 = version >= 5;
        CreateTopicsResponse {
            throttle_time_ms: 100,
            topics: vec![
                CreatableTopicResult {
                    name: "orders".into(),
                    topic_id: if version >= 7 { [9; 16] } else { [0; 16] },
                    error_code: 0,
                    error_message: None,
                    topic_config_error_code: 0,
                    num_partitions: if v5 { 2 } else { -1 },
                    replication_factor: if v5 { 3 } else { -1 },
                    configs: v5.then(|| {
                        vec![
                            CreatableTopicConfigs {
                                name: "cleanup.policy".into(),
                                value: Some("compact".into()),
                                read_only: true,
                                config_source: 1,
                                is_sensitive: true,
                            },
                            CreatableTopicConfigs {
                                name: "sasl.jaas.config".into(),
                                ..CreatableTopicConfigs::default()
                            },
                        ]
                    }),
                },
                CreatableTopicResult {
                    name: "events".into(),
                    error_code: 29,
                    error_message: Some("not authorized".into()),
                    topic_config_error_code: if v5 { 29 } else { 0 },
                    ..CreatableTopicResult::default()
                },
            ],
        }
    }

    #[test]
    fn topic_config_error_code_is_omitted_at_its_default() {
        let mut result = CreatableTopicResult {
            name: "t".into(),
            ..CreatableTopicResult::default()
        };
        let mut resp = CreateTopicsResponse {
            throttle_time_ms: 0,
            topics: vec![result.clone()],
        };
        let without = encode(&resp, 5);
        // throttle, count, name, error, message, partitions, rf, null configs,
        // then an empty tag section for the topic and one for the response.
        assert_eq!(
            &without[..],
            &[0, 0, 0, 0, 2, 2, b't', 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0]
        );
        result.topic_config_error_code = 0x1234;
        resp.topics = vec![result];
        let with = encode(&resp, 5);
        assert_eq!(
            &with[with.len() - 6..],
            &[1, 0, 2, 0x12, 0x34, 0],
            "one tag, number 0, two bytes, the code, then the response's empty tags"
        );
    }

    #[test]
    fn a_malformed_known_tag_is_an_error() {
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_uvarint(2); // one topic
        b.put_string("t", true);
        b.put_i16(0);
        b.put_nullable_string(None, true);
        b.put_i32(-1);
        b.put_i16(-1);
        b.put_array_len(None, true);
        // Tag 0 must hold an INT16, not three bytes.
        b.put_uvarint(1);
        b.put_uvarint(0);
        b.put_uvarint(3);
        b.put_slice(&[0, 1, 2]);
        b.put_empty_tagged_fields();
        assert!(CreateTopicsResponse::decode(&mut Reader::new(b.freeze()), 5).is_err());
    }

    conformance_tests!(
        CreateTopicsRequest,
        CreateTopicsResponse,
        VERSIONS,
        request,
        response
    );
}
