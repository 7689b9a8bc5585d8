//! Heartbeat (key 12), versions 0-4; flexible from version 4.
//!
//! A member of a classic group sends it every `heartbeat.interval.ms` to
//! stay in the group; the answer's error code is how the coordinator tells
//! it to rejoin (REBALANCE_IN_PROGRESS) or that it was removed.

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 4;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeartbeatRequest {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    /// v3+: the static member's `group.instance.id`, or `None`.
    pub group_instance_id: Option<String>,
}

impl HeartbeatRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut req = HeartbeatRequest {
            group_id: r.string("group_id", flexible)?,
            generation_id: r.i32("generation_id")?,
            member_id: r.string("member_id", flexible)?,
            group_instance_id: None,
        };
        if version >= 3 {
            req.group_instance_id = r.nullable_string("group_instance_id", flexible)?;
        }
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_string(&self.group_id, flexible);
        w.put_i32(self.generation_id);
        w.put_string(&self.member_id, flexible);
        if version >= 3 {
            w.put_nullable_string(self.group_instance_id.as_deref(), flexible);
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeartbeatResponse {
    /// v1+.
    pub throttle_time_ms: i32,
    pub error_code: i16,
}

impl HeartbeatResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let mut resp = HeartbeatResponse::default();
        if version >= 1 {
            resp.throttle_time_ms = r.i32("throttle_time_ms")?;
        }
        resp.error_code = r.i16("error_code")?;
        if version >= FLEXIBLE_FROM {
            r.skip_tagged_fields()?;
        }
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        if version >= 1 {
            w.put_i32(self.throttle_time_ms);
        }
        w.put_i16(self.error_code);
        if version >= FLEXIBLE_FROM {
            w.put_empty_tagged_fields();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=4;

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> HeartbeatRequest {
        HeartbeatRequest {
            group_id: "billing-consumers".into(),
            generation_id: 5,
            member_id: "consumer-1-4f0c".into(),
            group_instance_id: (version >= 3).then(|| "pod-é-1".into()),
        }
    }

    fn response(version: i16) -> HeartbeatResponse {
        HeartbeatResponse {
            throttle_time_ms: if version >= 1 { 30 } else { 0 },
            error_code: 27,
        }
    }

    #[test]
    fn edge_case_requests_round_trip() {
        for v in VERSIONS {
            for req in [request(v), HeartbeatRequest::default()] {
                assert_round_trip(&req, v);
            }
        }
    }

    conformance_tests!(
        HeartbeatRequest,
        HeartbeatResponse,
        VERSIONS,
        request,
        response
    );
}
