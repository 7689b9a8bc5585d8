//! ApiVersions (key 18), versions 0-4.
//!
//! The response is read by clients before they know the broker's versions,
//! which is why it always travels with response header v0 (see
//! `ApiKey::response_header_version`). Tagged fields holding their default
//! value are omitted, as Apache Kafka does: librdkafka before 2.2 (Debian's
//! kcat) fails on an ApiVersions v3 reply that carries them.

use bytes::{BufMut, BytesMut};

use crate::protocol::codec::{DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 3;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiVersionsRequest {
    /// v3+.
    pub client_software_name: String,
    /// v3+.
    pub client_software_version: String,
}

impl ApiVersionsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let mut req = ApiVersionsRequest::default();
        if version >= FLEXIBLE_FROM {
            req.client_software_name = r.string("client_software_name", true)?;
            req.client_software_version = r.string("client_software_version", true)?;
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        if version >= FLEXIBLE_FROM {
            w.put_string(&self.client_software_name, true);
            w.put_string(&self.client_software_version, true);
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApiVersionRange {
    pub api_key: i16,
    pub min_version: i16,
    pub max_version: i16,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiVersionsResponse {
    pub error_code: i16,
    pub api_keys: Vec<ApiVersionRange>,
    /// v1+.
    pub throttle_time_ms: i32,
}

impl ApiVersionsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let error_code = r.i16("error_code")?;
        let api_keys = r.array("api_keys", flexible, 6, |r| {
            let range = ApiVersionRange {
                api_key: r.i16("api_key")?,
                min_version: r.i16("min_version")?,
                max_version: r.i16("max_version")?,
            };
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(range)
        })?;
        let throttle_time_ms = if version >= 1 {
            r.i32("throttle_time_ms")?
        } else {
            0
        };
        if flexible {
            // Supported and finalized features (tags 0-3) are not used by pinlog.
            r.skip_tagged_fields()?;
        }
        Ok(ApiVersionsResponse {
            error_code,
            api_keys,
            throttle_time_ms,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i16(self.error_code);
        w.put_array_len(Some(self.api_keys.len()), flexible);
        for k in &self.api_keys {
            w.put_i16(k.api_key);
            w.put_i16(k.min_version);
            w.put_i16(k.max_version);
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
        if version >= 1 {
            w.put_i32(self.throttle_time_ms);
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::test_support::*;

    #[test]
    fn round_trips_at_every_version() {
        let resp = ApiVersionsResponse {
            error_code: 0,
            api_keys: vec![ApiVersionRange {
                api_key: 18,
                min_version: 0,
                max_version: 4,
            }],
            throttle_time_ms: 0,
        };
        for v in 0..=4 {
            let back = ApiVersionsResponse::decode(&mut Reader::new(encode(&resp, v)), v).unwrap();
            assert_eq!(back, resp, "v{v}");
        }
    }
}
