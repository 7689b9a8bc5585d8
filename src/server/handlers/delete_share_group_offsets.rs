//! DeleteShareGroupOffsets (KIP-932; `kafka-share-groups.sh
//! --delete-offsets`): forgets an empty share group's state of whole
//! topics, so the group starts them afresh (at `share.auto.offset.reset`)
//! when it reads them again. No member is let in until the state is gone
//! (`group/coordinator/share_admin.rs`).

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::group::share::SharePartitionKey;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_share_group_offsets::*;
use crate::server::handlers::access::Access;
use crate::server::share_state::persister;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DeleteShareGroupOffsetsRequest,
    access: &Access<'_>,
) -> DeleteShareGroupOffsetsResponse {
    let image = BrokerState::of(shard).image();
    let refused = |code: i16, message: Option<String>| DeleteShareGroupOffsetsResponse {
        error_code: code,
        error_message: message,
        ..Default::default()
    };
    if !access.allows(
        &image,
        matrix::DELETE_SHARE_GROUP_OFFSETS_GROUP,
        &req.group_id,
    ) {
        return refused(error_code::GROUP_AUTHORIZATION_FAILED, None);
    }
    // Each topic: a refusal found here, or the share partitions whose state
    // goes, deleted below while the group stays empty.
    let mut responses = Vec::with_capacity(req.topic_names.len());
    // Where each topic's answer goes in `responses`, and its partitions.
    let mut answers_at: Vec<usize> = Vec::new();
    let mut deletions: Vec<Vec<SharePartitionKey>> = Vec::new();
    for name in req.topic_names {
        let topic = image.topic(&name);
        let code = match topic {
            _ if !access.allows(&image, matrix::DELETE_SHARE_GROUP_OFFSETS_TOPIC, &name) => {
                error_code::TOPIC_AUTHORIZATION_FAILED
            }
            None => error_code::UNKNOWN_TOPIC_OR_PARTITION,
            Some(t) => {
                let keys = t
                    .partitions
                    .keys()
                    .map(|&p| SharePartitionKey {
                        group_id: req.group_id.clone(),
                        topic_id: t.id,
                        partition: p,
                    })
                    .collect();
                answers_at.push(responses.len());
                deletions.push(keys);
                error_code::NONE
            }
        };
        responses.push(DeleteTopicResponse {
            topic_name: name,
            topic_id: topic.map_or([0; 16], |t| t.id),
            error_code: code,
            error_message: None,
        });
    }
    let gid = req.group_id.clone();
    let deleted = on_coordinator(
        shard,
        &req.group_id,
        move |c: Rc<GroupCoordinator>, s, p| {
            c.while_share_group_empty(s, p, gid, |s, exists| async move {
                if !exists {
                    return Err(error_code::GROUP_ID_NOT_FOUND);
                }
                let mut codes = Vec::with_capacity(deletions.len());
                for topic in deletions {
                    let mut code = error_code::NONE;
                    for key in topic {
                        if let Err(c) = persister::delete_state(&s, &key).await {
                            code = c;
                        }
                    }
                    codes.push(code);
                }
                Ok(codes)
            })
        },
    )
    .await
    .and_then(|r| r)
    .and_then(|r| r);
    let codes = match deleted {
        Ok(codes) => codes,
        Err(error_code::GROUP_ID_NOT_FOUND) => {
            return refused(
                error_code::GROUP_ID_NOT_FOUND,
                Some(format!("Group {} not found.", req.group_id)),
            )
        }
        Err(error_code::NON_EMPTY_GROUP) => {
            return refused(
                error_code::NON_EMPTY_GROUP,
                Some(format!(
                    "The share group {} has members: stop them before deleting its offsets.",
                    req.group_id
                )),
            )
        }
        Err(code) => return refused(code, None),
    };
    for (t, code) in answers_at.into_iter().zip(codes) {
        responses[t].error_code = code;
    }
    DeleteShareGroupOffsetsResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        error_message: None,
        responses,
    }
}
