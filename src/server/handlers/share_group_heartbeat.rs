//! ShareGroupHeartbeat (KIP-932): forwarded to the group's coordinator
//! shard, where the share-group core decides and the coordinator persists,
//! applies and answers (`group/coordinator/share.rs`).

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::share_group_heartbeat::*;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: ShareGroupHeartbeatRequest,
    client_host: &str,
    access: &Access<'_>,
) -> ShareGroupHeartbeatResponse {
    // Kafka's KafkaApis: READ on the group, then DESCRIBE on every
    // subscribed topic name.
    let image = BrokerState::of(shard).image();
    if let Some((code, message)) = super::share_groups_disabled(&image) {
        return refused(code, Some(message));
    }
    if !access.allows(&image, matrix::SHARE_GROUP_HEARTBEAT_GROUP, &req.group_id) {
        return refused(error_code::GROUP_AUTHORIZATION_FAILED, None);
    }
    if let Some(names) = &req.subscribed_topic_names {
        let denied = access.denied(
            &image,
            matrix::SHARE_GROUP_HEARTBEAT_TOPIC,
            names.iter().map(String::as_str),
        );
        if !denied.is_empty() {
            let mut denied: Vec<String> = denied.into_iter().collect();
            denied.sort();
            return refused(
                error_code::TOPIC_AUTHORIZATION_FAILED,
                Some(format!("Topic authorization failed for topics {denied:?}")),
            );
        }
    }
    let client_id = header.client_id.clone().unwrap_or_default();
    let client_host = format!("/{client_host}");
    let group_id = req.group_id.clone();
    on_coordinator(shard, &group_id, move |c: Rc<GroupCoordinator>, s, p| {
        c.share_heartbeat(s, p, req, client_id, client_host)
    })
    .await
    .unwrap_or_else(|code| refused(code, None))
}

fn refused(code: i16, message: Option<String>) -> ShareGroupHeartbeatResponse {
    ShareGroupHeartbeatResponse {
        error_code: code,
        error_message: message,
        ..Default::default()
    }
}
