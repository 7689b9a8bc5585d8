//! DeleteShareGroupOffsets (key 92), version 0; flexible in every version.
//!
//! An admin deleting an empty share group's state for whole topics
//! (`kafka-share-groups.sh --delete-offsets`).

use bytes::{BufMut, BytesMut};

use crate::codec::{min_string_bytes, DecodeResult, Reader, Writer};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteShareGroupOffsetsRequest {
    pub group_id: String,
    pub topic_names: Vec<String>,
}

/// A topic: an empty name and tags.
const MIN_TOPIC_REQUEST_BYTES: usize = min_string_bytes(true) + 1;

impl DeleteShareGroupOffsetsRequest {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let group_id = r.string("group_id", true)?;
        let topic_names = r.array("topics", true, MIN_TOPIC_REQUEST_BYTES, |r| {
            let name = r.string("topic_name", true)?;
            r.skip_tagged_fields()?;
            Ok(name)
        })?;
        r.skip_tagged_fields()?;
        Ok(DeleteShareGroupOffsetsRequest {
            group_id,
            topic_names,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_string(&self.group_id, true);
        w.put_array_len(Some(self.topic_names.len()), true);
        for t in &self.topic_names {
            w.put_string(t, true);
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteTopicResponse {
    pub topic_name: String,
    pub topic_id: [u8; 16],
    pub error_code: i16,
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteShareGroupOffsetsResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub responses: Vec<DeleteTopicResponse>,
}

/// Empty name, uuid, code, null message, tags.
const MIN_TOPIC_RESPONSE_BYTES: usize = 1 + 16 + 2 + 1 + 1;

impl DeleteShareGroupOffsetsResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let mut resp = DeleteShareGroupOffsetsResponse {
            throttle_time_ms: r.i32("throttle_time_ms")?,
            error_code: r.i16("error_code")?,
            error_message: r.nullable_string("error_message", true)?,
            responses: Vec::new(),
        };
        resp.responses = r.array("responses", true, MIN_TOPIC_RESPONSE_BYTES, |r| {
            let t = DeleteTopicResponse {
                topic_name: r.string("topic_name", true)?,
                topic_id: r.uuid("topic_id")?,
                error_code: r.i16("error_code")?,
                error_message: r.nullable_string("error_message", true)?,
            };
            r.skip_tagged_fields()?;
            Ok(t)
        })?;
        r.skip_tagged_fields()?;
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_nullable_string(self.error_message.as_deref(), true);
        w.put_array_len(Some(self.responses.len()), true);
        for t in &self.responses {
            w.put_string(&t.topic_name, true);
            w.put_slice(&t.topic_id);
            w.put_i16(t.error_code);
            w.put_nullable_string(t.error_message.as_deref(), true);
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=0;

    fn request(_version: i16) -> DeleteShareGroupOffsetsRequest {
        DeleteShareGroupOffsetsRequest {
            group_id: "queue".into(),
            topic_names: vec!["orders".into(), "é".into()],
        }
    }

    fn response(_version: i16) -> DeleteShareGroupOffsetsResponse {
        DeleteShareGroupOffsetsResponse {
            throttle_time_ms: 1,
            error_code: 0,
            error_message: None,
            responses: vec![DeleteTopicResponse {
                topic_name: "orders".into(),
                topic_id: [1; 16],
                error_code: 3,
                error_message: Some("unknown".into()),
            }],
        }
    }

    #[test]
    fn edge_case_messages_round_trip() {
        assert_round_trip(&DeleteShareGroupOffsetsRequest::default(), 0);
        assert_round_trip(&DeleteShareGroupOffsetsResponse::default(), 0);
    }

    /// Each topic is a struct with its own tags, not a bare string.
    #[test]
    fn a_request_matches_the_schema() {
        let req = DeleteShareGroupOffsetsRequest {
            group_id: "g".into(),
            topic_names: vec!["t".into()],
        };
        assert_eq!(&encode(&req, 0)[..], &[2, b'g', 2, 2, b't', 0, 0]);
    }

    conformance_tests!(
        DeleteShareGroupOffsetsRequest,
        DeleteShareGroupOffsetsResponse,
        VERSIONS,
        request,
        response
    );
}
