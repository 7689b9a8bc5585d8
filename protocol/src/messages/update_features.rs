//! UpdateFeatures (key 57), versions 0-2, flexible in every version:
//! changes finalized feature levels (`kafka-features.sh upgrade`,
//! `downgrade`, `disable`; Kafka's `Admin.updateFeatures`).
//!
//! Version 0 says whether a feature may go down with `allow_downgrade`;
//! version 1 (KIP-778) replaces it with `upgrade_type` (1 upgrade, 2 safe
//! downgrade, 3 unsafe downgrade) and adds `validate_only`. Version 2 drops
//! the per-feature results from the response: the top-level error speaks
//! for every feature, as the update is all or nothing anyway.

use bytes::{BufMut, BytesMut};

use crate::codec::{min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer};

/// Every version is flexible.
const FLEXIBLE: bool = true;
/// First version with `upgrade_type` and `validate_only` (and without
/// `allow_downgrade`).
const UPGRADE_TYPE_FROM: i16 = 1;
/// Last version whose response lists a result per feature.
pub const RESULTS_LAST_VERSION: i16 = 1;

/// Kafka's `FeatureUpdate.UpgradeType` codes.
pub const UPGRADE_TYPE_UPGRADE: i8 = 1;
pub const UPGRADE_TYPE_SAFE_DOWNGRADE: i8 = 2;
pub const UPGRADE_TYPE_UNSAFE_DOWNGRADE: i8 = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateFeaturesRequest {
    pub timeout_ms: i32,
    pub feature_updates: Vec<FeatureUpdateKey>,
    /// Version 1 on: check the updates, write nothing.
    pub validate_only: bool,
}

impl Default for UpdateFeaturesRequest {
    fn default() -> Self {
        UpdateFeaturesRequest {
            timeout_ms: 60_000,
            feature_updates: Vec::new(),
            validate_only: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureUpdateKey {
    pub feature: String,
    /// The new level; 0 removes the feature.
    pub max_version_level: i16,
    /// Version 0 only; false from version 1 on.
    pub allow_downgrade: bool,
    /// Version 1 on; [`UPGRADE_TYPE_UPGRADE`] in version 0, as Kafka reads
    /// a version 0 request (its `allow_downgrade` is not consulted).
    pub upgrade_type: i8,
}

impl Default for FeatureUpdateKey {
    fn default() -> Self {
        FeatureUpdateKey {
            feature: String::new(),
            max_version_level: 0,
            allow_downgrade: false,
            upgrade_type: UPGRADE_TYPE_UPGRADE,
        }
    }
}

impl UpdateFeaturesRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let (s, t) = (min_string_bytes(FLEXIBLE), min_tags_bytes(FLEXIBLE));
        let timeout_ms = r.i32("timeout_ms")?;
        // A name, the level, the flag or the type, and the tags.
        let feature_updates = r.array("feature_updates", FLEXIBLE, s + 2 + 1 + t, |r| {
            let feature = r.string("feature", FLEXIBLE)?;
            let max_version_level = r.i16("max_version_level")?;
            let (allow_downgrade, upgrade_type) = if version >= UPGRADE_TYPE_FROM {
                (false, r.i8("upgrade_type")?)
            } else {
                (r.bool("allow_downgrade")?, UPGRADE_TYPE_UPGRADE)
            };
            r.skip_tagged_fields()?;
            Ok(FeatureUpdateKey {
                feature,
                max_version_level,
                allow_downgrade,
                upgrade_type,
            })
        })?;
        let validate_only = if version >= UPGRADE_TYPE_FROM {
            r.bool("validate_only")?
        } else {
            false
        };
        r.skip_tagged_fields()?;
        Ok(UpdateFeaturesRequest {
            timeout_ms,
            feature_updates,
            validate_only,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.timeout_ms);
        w.put_array_len(Some(self.feature_updates.len()), FLEXIBLE);
        for u in &self.feature_updates {
            w.put_string(&u.feature, FLEXIBLE);
            w.put_i16(u.max_version_level);
            if version >= UPGRADE_TYPE_FROM {
                w.put_i8(u.upgrade_type);
            } else {
                w.put_bool(u.allow_downgrade);
            }
            w.put_empty_tagged_fields();
        }
        if version >= UPGRADE_TYPE_FROM {
            w.put_bool(self.validate_only);
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateFeaturesResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    /// Versions 0-1 only ([`RESULTS_LAST_VERSION`]).
    pub results: Vec<UpdatableFeatureResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdatableFeatureResult {
    pub feature: String,
    pub error_code: i16,
    pub error_message: Option<String>,
}

impl UpdateFeaturesResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let (s, t) = (min_string_bytes(FLEXIBLE), min_tags_bytes(FLEXIBLE));
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        let error_message = r.nullable_string("error_message", FLEXIBLE)?;
        let results = if version <= RESULTS_LAST_VERSION {
            r.array("results", FLEXIBLE, s + 2 + s + t, |r| {
                let result = UpdatableFeatureResult {
                    feature: r.string("feature", FLEXIBLE)?,
                    error_code: r.i16("error_code")?,
                    error_message: r.nullable_string("error_message", FLEXIBLE)?,
                };
                r.skip_tagged_fields()?;
                Ok(result)
            })?
        } else {
            Vec::new()
        };
        r.skip_tagged_fields()?;
        Ok(UpdateFeaturesResponse {
            throttle_time_ms,
            error_code,
            error_message,
            results,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_nullable_string(self.error_message.as_deref(), FLEXIBLE);
        if version <= RESULTS_LAST_VERSION {
            w.put_array_len(Some(self.results.len()), FLEXIBLE);
            for result in &self.results {
                w.put_string(&result.feature, FLEXIBLE);
                w.put_i16(result.error_code);
                w.put_nullable_string(result.error_message.as_deref(), FLEXIBLE);
                w.put_empty_tagged_fields();
            }
        }
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=2;

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> UpdateFeaturesRequest {
        let v0 = version < UPGRADE_TYPE_FROM;
        let update = |feature: &str, level: i16, upgrade_type: i8| FeatureUpdateKey {
            feature: feature.into(),
            max_version_level: level,
            allow_downgrade: v0,
            upgrade_type: if v0 {
                UPGRADE_TYPE_UPGRADE
            } else {
                upgrade_type
            },
        };
        UpdateFeaturesRequest {
            timeout_ms: 30_000,
            feature_updates: vec![
                update("transaction.version", 1, UPGRADE_TYPE_SAFE_DOWNGRADE),
                update("group.version", 0, UPGRADE_TYPE_UNSAFE_DOWNGRADE),
            ],
            validate_only: !v0,
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> UpdateFeaturesResponse {
        UpdateFeaturesResponse {
            throttle_time_ms: 7,
            error_code: 95,
            error_message: Some("The update failed for all features".into()),
            results: if version <= RESULTS_LAST_VERSION {
                vec![
                    UpdatableFeatureResult {
                        feature: "transaction.version".into(),
                        error_code: 95,
                        error_message: Some("Can't downgrade to a newer version.".into()),
                    },
                    UpdatableFeatureResult {
                        feature: "group.version".into(),
                        error_code: 0,
                        error_message: None,
                    },
                ]
            } else {
                Vec::new()
            },
        }
    }

    conformance_tests!(
        UpdateFeaturesRequest,
        UpdateFeaturesResponse,
        VERSIONS,
        request,
        response
    );

    /// The bytes of `kafka-features.sh downgrade --feature
    /// transaction.version=1` at each version, laid out by hand from
    /// Kafka's schema.
    #[test]
    fn each_version_has_kafkas_layout() {
        let name = b"transaction.version";
        let mut head = vec![0, 0, 0xea, 0x60, 2, name.len() as u8 + 1];
        head.extend_from_slice(name);
        head.extend_from_slice(&[0, 1]);
        let update = |allow_downgrade, upgrade_type| FeatureUpdateKey {
            feature: "transaction.version".into(),
            max_version_level: 1,
            allow_downgrade,
            upgrade_type,
        };
        let at = |version, u: FeatureUpdateKey, validate_only| {
            encode(
                &UpdateFeaturesRequest {
                    timeout_ms: 60_000,
                    feature_updates: vec![u],
                    validate_only,
                },
                version,
            )
        };
        // v0: allow_downgrade, and no validate_only.
        let v0 = at(0, update(true, UPGRADE_TYPE_UPGRADE), false);
        assert_eq!(&v0[..], [&head[..], &[1, 0, 0]].concat());
        // v1 and v2: upgrade_type, then validate_only after the array.
        for version in 1..=2 {
            let v = at(version, update(false, UPGRADE_TYPE_SAFE_DOWNGRADE), true);
            assert_eq!(&v[..], [&head[..], &[2, 0, 1, 0]].concat(), "v{version}");
        }
        // A version 0 request is an upgrade whatever it says about
        // downgrades: Kafka's controller reads it so.
        let back = UpdateFeaturesRequest::decode(&mut Reader::new(v0), 0).unwrap();
        assert_eq!(back.feature_updates[0].upgrade_type, UPGRADE_TYPE_UPGRADE);
        assert!(back.feature_updates[0].allow_downgrade);
    }

    #[test]
    fn version_2_answers_without_per_feature_results() {
        let with_results = response(1);
        let v2 = encode(&with_results, 2);
        // throttle, error code, message, and the empty tag section.
        let message_len = with_results.error_message.as_ref().unwrap().len();
        assert_eq!(v2.len(), 4 + 2 + 1 + message_len + 1);
        let back = UpdateFeaturesResponse::decode(&mut Reader::new(v2), 2).unwrap();
        assert!(back.results.is_empty());
        assert_eq!(back.error_message, with_results.error_message);
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<UpdateFeaturesRequest>(b.freeze(), 1);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i16(0);
        b.put_nullable_string(None, true);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<UpdateFeaturesResponse>(b.freeze(), 0);
    }
}
