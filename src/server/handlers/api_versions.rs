//! ApiVersions: the version table of `protocol::api`.

use std::rc::Rc;

use crate::protocol::api::SUPPORTED_APIS;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::api_versions::{
    ApiVersionRange, ApiVersionsRequest, ApiVersionsResponse,
};
use crate::shard::shard::Shard;

fn table() -> Vec<ApiVersionRange> {
    SUPPORTED_APIS
        .iter()
        .map(|a| ApiVersionRange {
            api_key: a.key as i16,
            min_version: a.min_version,
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
    }
}
