//! ApiVersions: the version table of `protocol::api`.

use std::rc::Rc;

use crate::protocol::api::{ApiKey, SUPPORTED_APIS};
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::api_versions::{
    ApiVersionRange, ApiVersionsRequest, ApiVersionsResponse,
};
use crate::shard::shard::Shard;

/// The minimum Produce version advertised, as Kafka 4 advertises it
/// (KAFKA-18659) although, like Kafka 4, pinlog refuses Produce v0-v2: old
/// librdkafka (Debian's kcat 1.7) enables gzip and snappy only when the
/// advertised Produce range reaches down to v0.
pub const PRODUCE_ADVERTISED_MIN_VERSION: i16 = 0;

fn table() -> Vec<ApiVersionRange> {
    SUPPORTED_APIS
        .iter()
        .filter(|a| !a.key.is_pinlog_only())
        .map(|a| ApiVersionRange {
            api_key: a.key as i16,
            min_version: if a.key == ApiKey::Produce {
                PRODUCE_ADVERTISED_MIN_VERSION
            } else {
                a.min_version
            },
            max_version: a.max_version,
        })
        .collect()
}

pub async fn handle(
    _shard: &Rc<Shard>,
    _header: &RequestHeader,
    _req: ApiVersionsRequest,
) -> ApiVersionsResponse {
    ApiVersionsResponse {
        error_code: error_code::NONE,
        api_keys: table(),
        throttle_time_ms: 0,
        ..Default::default()
    }
}

/// Kafka's answer to an ApiVersions version it does not know: encoded as
/// v0, UNSUPPORTED_VERSION, with the full table so the client can retry at a
/// version both sides support.
pub fn unsupported_version_response() -> ApiVersionsResponse {
    ApiVersionsResponse {
        error_code: error_code::UNSUPPORTED_VERSION,
        api_keys: table(),
        throttle_time_ms: 0,
        ..Default::default()
    }
}
