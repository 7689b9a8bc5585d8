//! DeleteTopics (key 20), versions 1-6; flexible from version 4.
//!
//! v6 replaced the plain list of names with (name, topic id) pairs, either
//! of which may identify the topic; Kafka keeps both fields in one message,
//! and so do we: `topic_names` is read and written up to v5, `topics` from
//! v6, and each holds its empty default in the other versions.

use bytes::{BufMut, BytesMut};

use crate::codec::{min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 4;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteTopicsRequest {
    /// v6+.
    pub topics: Vec<DeleteTopicState>,
    /// v0-v5.
    pub topic_names: Vec<String>,
    pub timeout_ms: i32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteTopicState {
    /// `None` when the topic is given by id.
    pub name: Option<String>,
    /// All zeroes when the topic is given by name.
    pub topic_id: [u8; 16],
}

impl DeleteTopicsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut req = DeleteTopicsRequest::default();
        if version >= 6 {
            let min = min_string_bytes(flexible) + 16 + min_tags_bytes(flexible);
            req.topics = r.array("topics", flexible, min, |r| {
                let state = DeleteTopicState {
                    name: r.nullable_string("name", flexible)?,
                    topic_id: r.uuid("topic_id")?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(state)
            })?;
        } else {
            req.topic_names =
                r.array("topic_names", flexible, min_string_bytes(flexible), |r| {
                    r.string("topic_name", flexible)
                })?;
        }
        req.timeout_ms = r.i32("timeout_ms")?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version >= 6 {
            w.put_array_len(Some(self.topics.len()), flexible);
            for t in &self.topics {
                w.put_nullable_string(t.name.as_deref(), flexible);
                w.put_slice(&t.topic_id);
                if flexible {
                    w.put_empty_tagged_fields();
                }
            }
        } else {
            w.put_array_len(Some(self.topic_names.len()), flexible);
            for name in &self.topic_names {
                w.put_string(name, flexible);
            }
        }
        w.put_i32(self.timeout_ms);
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteTopicsResponse {
    /// v1+.
    pub throttle_time_ms: i32,
    pub responses: Vec<DeletableTopicResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeletableTopicResult {
    /// Nullable from v6 (a topic id that matched nothing); a `None` name at
    /// an older version is sent as an empty string.
    pub name: Option<String>,
    /// v6+.
    pub topic_id: [u8; 16],
    pub error_code: i16,
    /// v5+.
    pub error_message: Option<String>,
}

impl DeleteTopicsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let s = min_string_bytes(flexible);
        let throttle_time_ms = if version >= 1 {
            r.i32("throttle_time_ms")?
        } else {
            0
        };
        let min = s
            + if version >= 6 { 16 } else { 0 }
            + 2
            + if version >= 5 { s } else { 0 }
            + min_tags_bytes(flexible);
        let responses = r.array("responses", flexible, min, |r| {
            let mut result = DeletableTopicResult {
                name: if version >= 6 {
                    r.nullable_string("name", flexible)?
                } else {
                    Some(r.string("name", flexible)?)
                },
                ..DeletableTopicResult::default()
            };
            if version >= 6 {
                result.topic_id = r.uuid("topic_id")?;
            }
            result.error_code = r.i16("error_code")?;
            if version >= 5 {
                result.error_message = r.nullable_string("error_message", flexible)?;
            }
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(result)
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DeleteTopicsResponse {
            throttle_time_ms,
            responses,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version >= 1 {
            w.put_i32(self.throttle_time_ms);
        }
        w.put_array_len(Some(self.responses.len()), flexible);
        for result in &self.responses {
            if version >= 6 {
                w.put_nullable_string(result.name.as_deref(), flexible);
                w.put_slice(&result.topic_id);
            } else {
                w.put_string(result.name.as_deref().unwrap_or(""), flexible);
            }
            w.put_i16(result.error_code);
            if version >= 5 {
                w.put_nullable_string(result.error_message.as_deref(), flexible);
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

    const VERSIONS: std::ops::RangeInclusive<i16> = 1..=6;

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> DeleteTopicsRequest {
        if version >= 6 {
            DeleteTopicsRequest {
                topics: vec![
                    DeleteTopicState {
                        name: Some("orders".into()),
                        topic_id: [0; 16],
                    },
                    DeleteTopicState {
                        name: None,
                        topic_id: [3; 16],
                    },
                ],
                topic_names: vec![],
                timeout_ms: 15_000,
            }
        } else {
            DeleteTopicsRequest {
                topics: vec![],
                topic_names: vec!["orders".into(), "events".into()],
                timeout_ms: 15_000,
            }
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> DeleteTopicsResponse {
        let mut responses = vec![DeletableTopicResult {
            name: Some("orders".into()),
            topic_id: if version >= 6 { [5; 16] } else { [0; 16] },
            error_code: 3,
            error_message: (version >= 5).then(|| "unknown topic".to_string()),
        }];
        if version >= 6 {
            responses.push(DeletableTopicResult {
                name: None,
                topic_id: [6; 16],
                error_code: 100,
                error_message: None,
            });
        }
        DeleteTopicsResponse {
            throttle_time_ms: 7,
            responses,
        }
    }

    conformance_tests!(
        DeleteTopicsRequest,
        DeleteTopicsResponse,
        VERSIONS,
        request,
        response
    );
}
