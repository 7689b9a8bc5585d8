//! ShareAcknowledge (KIP-932): acknowledgements outside a fetch (the
//! consumer's commitSync and close). They continue the member's share
//! session, are applied on each partition's leading shard and answered once
//! durable; a final request (epoch -1) then closes the session and releases
//! what the member still held.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::acl::matrix;
use crate::group::share::session::{SessionRequest, SharePartitionId};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::share_acknowledge::*;
use crate::protocol::messages::share_fetch::AcknowledgementBatch;
use crate::server::handlers::access::Access;
use crate::server::handlers::share_fetch::{
    acknowledge_all, current_leader, release_all, Named, Resolution,
};
use crate::server::handlers::share_sessions::ShareSessions;
use crate::shard::shard::{now_ms, Shard};

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: ShareAcknowledgeRequest,
    access: &Access<'_>,
) -> ShareAcknowledgeResponse {
    let broker = BrokerState::of(shard);
    // The lock duration the client times its acquisitions by: the
    // group's own share.record.lock.duration.ms, else the broker's.
    let lock_ms = req
        .group_id
        .as_deref()
        .map_or(broker.config.share_group.partition, |g| {
            broker.group_config(g).share.partition
        })
        .record_lock_duration_ms as i32;
    let top_level = |code: i16, message: Option<String>| ShareAcknowledgeResponse {
        error_code: code,
        error_message: message,
        acquisition_lock_timeout_ms: lock_ms,
        ..Default::default()
    };
    let (group_id, member_id) = match (&req.group_id, &req.member_id) {
        (Some(g), Some(m)) if !g.is_empty() && !m.is_empty() => (g.clone(), m.clone()),
        _ => {
            return top_level(
                error_code::INVALID_REQUEST,
                Some("A ShareAcknowledge needs a group id and a member id.".into()),
            )
        }
    };
    let image = broker.image();
    if let Some((code, message)) = super::share_groups_disabled(&image) {
        return top_level(code, Some(message));
    }
    if !access.allows(&image, matrix::SHARE_ACKNOWLEDGE_GROUP, &group_id) {
        return top_level(error_code::GROUP_AUTHORIZATION_FAILED, None);
    }
    let acks: BTreeMap<SharePartitionId, Vec<AcknowledgementBatch>> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    (t.topic_id, p.partition_index),
                    p.acknowledgement_batches.clone(),
                )
            })
        })
        .collect();
    let named: Vec<SharePartitionId> = acks.keys().copied().collect();
    let resolved = ShareSessions::of(shard).with(|c| {
        c.resolve(
            &SessionRequest {
                group_id: &group_id,
                member_id: &member_id,
                epoch: req.share_session_epoch,
                fetching: false,
                named: &named,
                forgotten: &[],
                has_acknowledgements: !acks.is_empty(),
                connection: access.connection_id(),
            },
            now_ms(),
        )
    });
    let resolved = match resolved {
        Ok(r) => r,
        Err(code) => return top_level(code, None),
    };
    let resolution = Resolution::new(
        &image,
        access,
        matrix::SHARE_ACKNOWLEDGE_TOPIC,
        resolved.partitions.iter().chain(acks.keys()),
    );
    let resolve = |id: SharePartitionId| resolution.named(id);
    let denied = &resolution.denied;
    let acked = acknowledge_all(
        shard,
        &group_id,
        &member_id,
        acks.into_iter().map(|(id, b)| (resolve(id), b)).collect(),
        denied,
    )
    .await;
    if resolved.closed {
        let session: Vec<Named> = resolved.partitions.iter().map(|id| resolve(*id)).collect();
        release_all(shard, &group_id, &member_id, &session).await;
    }
    let mut by_topic: BTreeMap<[u8; 16], Vec<AcknowledgePartitionData>> = BTreeMap::new();
    for (id, (code, message)) in acked {
        by_topic
            .entry(id.0)
            .or_default()
            .push(AcknowledgePartitionData {
                partition_index: id.1,
                error_code: code,
                error_message: message,
                current_leader: if code == error_code::NONE {
                    Default::default()
                } else {
                    current_leader(&image, resolve(id).tp.as_ref())
                },
            });
    }
    ShareAcknowledgeResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        error_message: None,
        acquisition_lock_timeout_ms: lock_ms,
        responses: by_topic
            .into_iter()
            .map(|(topic_id, partitions)| AcknowledgeTopicResponse {
                topic_id,
                partitions,
            })
            .collect(),
        node_endpoints: Vec::new(),
    }
}
