//! Altering the broker resource, with certificate rotation: a change of
//! this broker's `listener.name.<l>.ssl.*` settings is checked here first
//! (the files it names are read and every TLS listener's configuration
//! built), committed through the controller, then served to new
//! connections at once. Kafka checks a new keystore on the broker it
//! belongs to as well; the files live there, not on the controller.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use crate::controller::topics::TopicError;
use crate::metadata::dynamic_broker_config;
use crate::metadata::image::MetadataImage;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::security::listener_tls::ListenerCertificates;
use crate::server::controller::{self, Caller, ControllerResult};
use crate::shard::shard::Shard;

/// This broker's dynamic listener TLS settings in `image`.
fn dynamic_tls(image: &MetadataImage, node: i32) -> BTreeMap<String, String> {
    image
        .per_broker_configs
        .get(&node)
        .map(|configs| {
            configs
                .iter()
                .filter(|(name, _)| dynamic_broker_config::listener_tls_setting(name).is_some())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// [`controller::alter_broker_configs`], checking and then applying a
/// change of this broker's listener certificates.
pub async fn alter_broker_configs(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    broker: Option<i32>,
    changes: Vec<(String, Option<String>)>,
    incremental: bool,
    validate_only: bool,
) -> ControllerResult<Result<(), TopicError>> {
    let state = BrokerState::of(shard);
    let node = state.node_id();
    let own = broker == Some(node);
    let touches_tls = changes
        .iter()
        .any(|(name, _)| dynamic_broker_config::listener_tls_setting(name).is_some());
    // AlterConfigs (not incremental) resets what it does not name, the
    // certificates included.
    let reload = own && (touches_tls || !incremental);
    if reload {
        let mut after = if incremental {
            dynamic_tls(&state.image(), node)
        } else {
            BTreeMap::new()
        };
        for (name, value) in &changes {
            if dynamic_broker_config::listener_tls_setting(name).is_none() {
                continue;
            }
            match value {
                Some(v) => after.insert(name.clone(), v.clone()),
                None => after.remove(name),
            };
        }
        if let Err(why) = ListenerCertificates::check(&state.config, &after) {
            return Ok(Err((error_code::INVALID_CONFIG, why)));
        }
    }
    let result = controller::alter_broker_configs(
        shard,
        caller,
        broker,
        changes,
        incremental,
        validate_only,
    )
    .await?;
    if result.is_ok() && reload && !validate_only {
        apply(shard);
    }
    Ok(result)
}

/// At startup, before the listeners open: serves the certificates rotated
/// at runtime, if this broker's image holds any. Without them the
/// listeners keep what was built from the config file, read once.
pub fn apply_rotated(shard: &Rc<Shard>) {
    let state = BrokerState::of(shard);
    if !dynamic_tls(&state.image(), state.node_id()).is_empty() {
        apply(shard);
    }
}

/// Serves new connections with the listener TLS settings this broker's
/// image holds (the answer to an alter comes once the image holds it).
pub fn apply(shard: &Rc<Shard>) {
    let state = BrokerState::of(shard);
    let Some(certificates) = shard.extension::<Arc<ListenerCertificates>>() else {
        return;
    };
    let dynamic = dynamic_tls(&state.image(), state.node_id());
    match certificates.reload(&state.config, &dynamic) {
        Ok(listeners) if !listeners.is_empty() => tracing::info!(
            listeners = %listeners.join(", "),
            dynamic = %dynamic.keys().cloned().collect::<Vec<_>>().join(", "),
            "new connections are served with the listeners' TLS settings as now configured"
        ),
        Ok(_) => {}
        // Checked before the alter; a file that changed since is reported
        // and the listeners keep what they had.
        Err(why) => tracing::error!(
            "cannot apply the listeners' dynamic TLS settings, keeping the current ones: {why}"
        ),
    }
}
