//! UpdateFeatures (API 57) through the active controller, as
//! `kafka-features.sh upgrade`, `downgrade` and `disable` send it: changes
//! finalized feature levels, all or none (`controller/features.rs` in the
//! core decides). The answer comes once this broker serves the new levels,
//! so its next ApiVersions reports them.

use std::rc::Rc;

use crate::acl::matrix;
use crate::controller::features::FeatureUpdate;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::update_features::*;
use crate::server::controller;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: UpdateFeaturesRequest,
    access: &Access<'_>,
) -> UpdateFeaturesResponse {
    if !access.allows_cluster(&BrokerState::of(shard).image(), matrix::UPDATE_FEATURES) {
        return UpdateFeaturesResponse {
            error_code: error_code::CLUSTER_AUTHORIZATION_FAILED,
            ..Default::default()
        };
    }
    // A version 0 request decodes with `upgrade_type` UPGRADE whatever its
    // `allow_downgrade` says: Kafka's controller ignores that flag too.
    let updates: Vec<FeatureUpdate> = req
        .feature_updates
        .iter()
        .map(|u| FeatureUpdate {
            feature: u.feature.clone(),
            level: u.max_version_level,
            upgrade_type: u.upgrade_type,
        })
        .collect();
    let (error_code, error_message) =
        match controller::update_features(shard, access.caller(), updates, req.validate_only).await
        {
            Ok(Ok(())) => (error_code::NONE, None),
            Ok(Err((code, message))) => (code, Some(message)),
            Err(e) => (e.code, Some(e.to_string())),
        };
    // Versions 0-1 list each feature on success, as Kafka's controller
    // does; a refusal is the top-level error alone.
    let results = if error_code == error_code::NONE && header.api_version <= RESULTS_LAST_VERSION {
        req.feature_updates
            .iter()
            .map(|u| UpdatableFeatureResult {
                feature: u.feature.clone(),
                error_code: error_code::NONE,
                error_message: None,
            })
            .collect()
    } else {
        Vec::new()
    };
    UpdateFeaturesResponse {
        throttle_time_ms: 0,
        error_code,
        error_message,
        results,
    }
}
