//! ApiVersions (key 18), versions 0-4.
//!
//! The response is read by clients before they know the broker's versions,
//! which is why it always travels with response header v0 (see
//! `ApiKey::response_header_version`). Tagged fields holding their default
//! value are omitted, as Apache Kafka does: librdkafka before 2.2 (Debian's
//! kcat) fails on an ApiVersions v3 reply that carries them.

use bytes::{BufMut, Bytes, BytesMut};

use crate::codec::{min_string_bytes, min_tags_bytes, DecodeError, DecodeResult, Reader, Writer};

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

/// A feature the broker supports (tag 0, v3+).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SupportedFeatureKey {
    pub name: String,
    pub min_version: i16,
    pub max_version: i16,
}

/// A cluster-wide finalized feature level (tag 2, v3+).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FinalizedFeatureKey {
    pub name: String,
    pub max_version_level: i16,
    pub min_version_level: i16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiVersionsResponse {
    pub error_code: i16,
    pub api_keys: Vec<ApiVersionRange>,
    /// v1+.
    pub throttle_time_ms: i32,
    /// Tag 0, v3+. pinlog's broker sends none.
    pub supported_features: Vec<SupportedFeatureKey>,
    /// Tag 1, v3+; -1 when unknown.
    pub finalized_features_epoch: i64,
    /// Tag 2, v3+.
    pub finalized_features: Vec<FinalizedFeatureKey>,
    /// Tag 3, v3+.
    pub zk_migration_ready: bool,
}

impl Default for ApiVersionsResponse {
    fn default() -> Self {
        ApiVersionsResponse {
            error_code: 0,
            api_keys: Vec::new(),
            throttle_time_ms: 0,
            supported_features: Vec::new(),
            finalized_features_epoch: -1,
            finalized_features: Vec::new(),
            zk_migration_ready: false,
        }
    }
}

const TAG_SUPPORTED_FEATURES: u32 = 0;
const TAG_FINALIZED_FEATURES_EPOCH: u32 = 1;
const TAG_FINALIZED_FEATURES: u32 = 2;
const TAG_ZK_MIGRATION_READY: u32 = 3;

/// Reads a whole tagged value with `read`, which must use every byte: a
/// size that disagrees with the contents would misalign Kafka's decoder too.
fn exact_tag<T>(
    field: &'static str,
    value: Bytes,
    read: impl FnOnce(&mut Reader) -> DecodeResult<T>,
) -> DecodeResult<T> {
    let mut r = Reader::new(value);
    let out = read(&mut r)?;
    if !r.is_empty() {
        return Err(DecodeError::Invalid(format!(
            "tagged field {field} has {} bytes left over",
            r.remaining()
        )));
    }
    Ok(out)
}

fn read_features<T>(
    r: &mut Reader,
    field: &'static str,
    mut read: impl FnMut(&mut Reader) -> DecodeResult<T>,
) -> DecodeResult<Vec<T>> {
    r.array(
        field,
        true,
        min_string_bytes(true) + 4 + min_tags_bytes(true),
        |r| {
            let item = read(r)?;
            r.skip_tagged_fields()?;
            Ok(item)
        },
    )
}

impl ApiVersionsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let mut resp = ApiVersionsResponse {
            error_code: r.i16("error_code")?,
            ..Default::default()
        };
        resp.api_keys = r.array("api_keys", flexible, 6, |r| {
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
        if version >= 1 {
            resp.throttle_time_ms = r.i32("throttle_time_ms")?;
        }
        if flexible {
            r.tagged_fields(|tag, value| {
                match tag {
                    TAG_SUPPORTED_FEATURES => {
                        resp.supported_features = exact_tag("supported_features", value, |r| {
                            read_features(r, "supported_features", |r| {
                                Ok(SupportedFeatureKey {
                                    name: r.string("name", true)?,
                                    min_version: r.i16("min_version")?,
                                    max_version: r.i16("max_version")?,
                                })
                            })
                        })?
                    }
                    TAG_FINALIZED_FEATURES_EPOCH => {
                        resp.finalized_features_epoch =
                            exact_tag("finalized_features_epoch", value, |r| {
                                r.i64("finalized_features_epoch")
                            })?
                    }
                    TAG_FINALIZED_FEATURES => {
                        resp.finalized_features = exact_tag("finalized_features", value, |r| {
                            read_features(r, "finalized_features", |r| {
                                Ok(FinalizedFeatureKey {
                                    name: r.string("name", true)?,
                                    max_version_level: r.i16("max_version_level")?,
                                    min_version_level: r.i16("min_version_level")?,
                                })
                            })
                        })?
                    }
                    TAG_ZK_MIGRATION_READY => {
                        resp.zk_migration_ready = exact_tag("zk_migration_ready", value, |r| {
                            r.bool("zk_migration_ready")
                        })?
                    }
                    // Unknown tags are skipped, as Kafka requires.
                    _ => {}
                }
                Ok(())
            })?;
        }
        Ok(resp)
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
            self.encode_tags(w);
        }
    }

    /// Tagged fields holding their default are omitted, as Apache Kafka
    /// does: librdkafka before 2.2 cannot read an ApiVersions v3 reply that
    /// carries them.
    fn encode_tags(&self, w: &mut BytesMut) {
        let mut tags: Vec<(u32, BytesMut)> = Vec::new();
        if !self.supported_features.is_empty() {
            let mut v = BytesMut::new();
            v.put_array_len(Some(self.supported_features.len()), true);
            for f in &self.supported_features {
                v.put_string(&f.name, true);
                v.put_i16(f.min_version);
                v.put_i16(f.max_version);
                v.put_empty_tagged_fields();
            }
            tags.push((TAG_SUPPORTED_FEATURES, v));
        }
        if self.finalized_features_epoch != -1 {
            let mut v = BytesMut::new();
            v.put_i64(self.finalized_features_epoch);
            tags.push((TAG_FINALIZED_FEATURES_EPOCH, v));
        }
        if !self.finalized_features.is_empty() {
            let mut v = BytesMut::new();
            v.put_array_len(Some(self.finalized_features.len()), true);
            for f in &self.finalized_features {
                v.put_string(&f.name, true);
                v.put_i16(f.max_version_level);
                v.put_i16(f.min_version_level);
                v.put_empty_tagged_fields();
            }
            tags.push((TAG_FINALIZED_FEATURES, v));
        }
        if self.zk_migration_ready {
            let mut v = BytesMut::new();
            v.put_bool(true);
            tags.push((TAG_ZK_MIGRATION_READY, v));
        }
        w.put_uvarint(tags.len() as u64);
        for (tag, v) in tags {
            w.put_uvarint(tag as u64);
            w.put_uvarint(v.len() as u64);
            w.put_slice(&v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    #[test]
    fn feature_tags_round_trip_and_defaults_are_omitted() {
        let resp = ApiVersionsResponse {
            supported_features: vec![SupportedFeatureKey {
                name: "metadata.version".into(),
                min_version: 1,
                max_version: 25,
            }],
            finalized_features_epoch: 7,
            finalized_features: vec![FinalizedFeatureKey {
                name: "metadata.version".into(),
                max_version_level: 25,
                min_version_level: 25,
            }],
            zk_migration_ready: true,
            ..Default::default()
        };
        let back = ApiVersionsResponse::decode(&mut Reader::new(encode(&resp, 3)), 3).unwrap();
        assert_eq!(back, resp);
        // All defaults: the tag section is one zero byte.
        let plain = encode(&ApiVersionsResponse::default(), 3);
        assert_eq!(plain.last(), Some(&0u8));
        assert_eq!(plain.len(), 2 + 1 + 4 + 1);
    }

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
            ..Default::default()
        };
        for v in 0..=4 {
            let back = ApiVersionsResponse::decode(&mut Reader::new(encode(&resp, v)), v).unwrap();
            assert_eq!(back, resp, "v{v}");
        }
    }

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> ApiVersionsRequest {
        let flexible = version >= FLEXIBLE_FROM;
        ApiVersionsRequest {
            client_software_name: if flexible {
                "librdkafka".into()
            } else {
                String::new()
            },
            client_software_version: if flexible {
                "2.6.1-é".into()
            } else {
                String::new()
            },
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> ApiVersionsResponse {
        let flexible = version >= FLEXIBLE_FROM;
        ApiVersionsResponse {
            error_code: 35,
            api_keys: vec![
                ApiVersionRange {
                    api_key: 0,
                    min_version: 3,
                    max_version: 11,
                },
                ApiVersionRange {
                    api_key: 18,
                    min_version: 0,
                    max_version: 4,
                },
            ],
            throttle_time_ms: if version >= 1 { 17 } else { 0 },
            supported_features: if flexible {
                vec![SupportedFeatureKey {
                    name: "metadata.version".into(),
                    min_version: 1,
                    max_version: 25,
                }]
            } else {
                Vec::new()
            },
            finalized_features_epoch: if flexible { 7 } else { -1 },
            finalized_features: if flexible {
                vec![FinalizedFeatureKey {
                    name: "metadata.version".into(),
                    max_version_level: 25,
                    min_version_level: 25,
                }]
            } else {
                Vec::new()
            },
            zk_migration_ready: flexible,
        }
    }

    conformance_tests!(
        ApiVersionsRequest,
        ApiVersionsResponse,
        0..=4,
        request,
        response
    );
}
