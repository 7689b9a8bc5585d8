//! ApiVersions: the version table of `protocol::api`, and the features
//! pinlog implements with the levels the cluster finalized
//! (`metadata/features.rs`), which Kafka 4's producers read to pick their
//! transaction version.

use std::rc::Rc;

use crate::metadata::features::SUPPORTED_FEATURES;
use crate::metadata::image::MetadataImage;
use crate::node::state::BrokerState;
use crate::protocol::api::{ApiKey, SUPPORTED_APIS};
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::api_versions::{
    ApiVersionRange, ApiVersionsRequest, ApiVersionsResponse, FinalizedFeatureKey,
    SupportedFeatureKey,
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

/// The first ApiVersions version whose clients read a supported feature
/// whose minimum level is 0. Older Java clients refuse such a range (their
/// `SupportedVersionRange` wanted a minimum of 1), so Kafka leaves those
/// features out of answers to versions 0-3 (KAFKA-17492), and so does
/// pinlog.
const SUPPORTED_MIN_LEVEL_0_FROM_VERSION: i16 = 4;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    _req: ApiVersionsRequest,
) -> ApiVersionsResponse {
    let image = BrokerState::of(shard).image();
    with_features(
        ApiVersionsResponse {
            error_code: error_code::NONE,
            api_keys: table(),
            throttle_time_ms: 0,
            ..Default::default()
        },
        &image,
        header.api_version,
    )
}

/// `response` with the features an ApiVersions request of `version`
/// hears about: the ones pinlog implements, and every level `image`
/// finalized (a feature at level 0 is not finalized). Their epoch is the
/// image's offset, which grows with every change: Kafka's Java clients
/// take the features of the answer with the highest epoch they have seen
/// and ignore any with an epoch below 0. The fields exist from version 3;
/// the codec leaves them out before it.
fn with_features(
    mut response: ApiVersionsResponse,
    image: &MetadataImage,
    version: i16,
) -> ApiVersionsResponse {
    response.supported_features = SUPPORTED_FEATURES
        .iter()
        .filter(|f| f.level_min > 0 || version >= SUPPORTED_MIN_LEVEL_0_FROM_VERSION)
        .map(|f| SupportedFeatureKey {
            name: f.name.to_string(),
            min_version: f.level_min,
            max_version: f.level_max,
        })
        .collect();
    response.finalized_features = image
        .features
        .iter()
        .filter(|(_, &level)| level > 0)
        .map(|(name, &level)| FinalizedFeatureKey {
            name: name.clone(),
            max_version_level: level,
            min_version_level: level,
        })
        .collect();
    // -1 is Kafka's "unknown", which the codec leaves out.
    response.finalized_features_epoch = image.offset.max(-1);
    response
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::features::TRANSACTION_VERSION;
    use crate::metadata::records::MetadataRecord;

    fn image_with_transaction_version(level: i16, offset: i64) -> MetadataImage {
        let mut image = MetadataImage::empty();
        image.apply(
            offset,
            &MetadataRecord::FeatureLevel {
                name: TRANSACTION_VERSION.into(),
                level,
            },
        );
        image
    }

    fn answer(image: &MetadataImage, version: i16) -> ApiVersionsResponse {
        with_features(ApiVersionsResponse::default(), image, version)
    }

    #[test]
    fn version_4_hears_of_every_feature_and_the_finalized_levels() {
        let resp = answer(&image_with_transaction_version(2, 17), 4);
        assert_eq!(
            resp.supported_features,
            vec![
                SupportedFeatureKey {
                    name: crate::metadata::features::SHARE_VERSION.into(),
                    min_version: 0,
                    max_version: 1,
                },
                SupportedFeatureKey {
                    name: TRANSACTION_VERSION.into(),
                    min_version: 0,
                    max_version: 2,
                }
            ]
        );
        assert_eq!(
            resp.finalized_features,
            vec![FinalizedFeatureKey {
                name: TRANSACTION_VERSION.into(),
                max_version_level: 2,
                min_version_level: 2,
            }]
        );
        assert_eq!(resp.finalized_features_epoch, 17);
    }

    #[test]
    fn version_3_hears_of_no_supported_feature_with_minimum_0_but_the_finalized_levels() {
        let resp = answer(&image_with_transaction_version(1, 9), 3);
        assert!(resp.supported_features.is_empty(), "KAFKA-17492");
        assert_eq!(
            resp.finalized_features,
            vec![FinalizedFeatureKey {
                name: TRANSACTION_VERSION.into(),
                max_version_level: 1,
                min_version_level: 1,
            }]
        );
        assert_eq!(resp.finalized_features_epoch, 9);
    }

    #[test]
    fn a_feature_at_level_0_is_supported_but_not_finalized() {
        // An upgraded cluster: records, but none for the feature.
        let mut image = MetadataImage::empty();
        image.apply(
            3,
            &MetadataRecord::ClusterId {
                cluster_id: "c".into(),
            },
        );
        let resp = answer(&image, 4);
        assert_eq!(resp.supported_features.len(), SUPPORTED_FEATURES.len());
        assert!(resp.finalized_features.is_empty());
        assert_eq!(resp.finalized_features_epoch, 3);
        // Removed by a level 0 record: the same.
        let resp = answer(&image_with_transaction_version(0, 5), 4);
        assert!(resp.finalized_features.is_empty());
        assert_eq!(resp.finalized_features_epoch, 5);
        // Nothing applied yet: the epoch is unknown, and left out.
        let resp = answer(&MetadataImage::empty(), 4);
        assert_eq!(resp.finalized_features_epoch, -1);
    }
}
