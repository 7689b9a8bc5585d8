//! AlterShareGroupOffsets (KIP-932; `kafka-share-groups.sh --reset-offsets`):
//! moves the start offset of an empty share group's share partitions, with
//! no member let in until it is done (`group/coordinator/share_admin.rs`).
//! Each partition's state is initialized again at the new offset under the
//! next state epoch, so a share-partition leader still holding the old
//! state is fenced (FENCED_STATE_EPOCH) at its next write and loads the new
//! one.

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::group::share::SharePartitionKey;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_share_group_offsets::*;
use crate::server::handlers::access::Access;
use crate::server::share_state::persister;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: AlterShareGroupOffsetsRequest,
    access: &Access<'_>,
) -> AlterShareGroupOffsetsResponse {
    let image = BrokerState::of(shard).image();
    let refused = |code: i16, message: Option<String>| AlterShareGroupOffsetsResponse {
        error_code: code,
        error_message: message,
        ..Default::default()
    };
    if !access.allows(
        &image,
        matrix::ALTER_SHARE_GROUP_OFFSETS_GROUP,
        &req.group_id,
    ) {
        return refused(error_code::GROUP_AUTHORIZATION_FAILED, None);
    }
    // What each partition gets: a refusal found here, or its new start
    // offset, written below while the group stays empty.
    let mut responses = Vec::with_capacity(req.topics.len());
    // Where each reset's answer goes in `responses`, and the reset itself.
    let mut answers_at: Vec<(usize, usize)> = Vec::new();
    let mut resets: Vec<(SharePartitionKey, i64)> = Vec::new();
    for t in req.topics {
        let topic = image.topic(&t.topic_name);
        let denied = !access.allows(
            &image,
            matrix::ALTER_SHARE_GROUP_OFFSETS_TOPIC,
            &t.topic_name,
        );
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in &t.partitions {
            let code = match topic {
                _ if denied => error_code::TOPIC_AUTHORIZATION_FAILED,
                None => error_code::UNKNOWN_TOPIC_OR_PARTITION,
                Some(tt) if !tt.partitions.contains_key(&p.partition_index) => {
                    error_code::UNKNOWN_TOPIC_OR_PARTITION
                }
                _ if p.start_offset < 0 => error_code::INVALID_REQUEST,
                Some(tt) => {
                    let key = SharePartitionKey {
                        group_id: req.group_id.clone(),
                        topic_id: tt.id,
                        partition: p.partition_index,
                    };
                    answers_at.push((responses.len(), partitions.len()));
                    resets.push((key, p.start_offset));
                    error_code::NONE
                }
            };
            partitions.push(AlterPartitionResponse {
                partition_index: p.partition_index,
                error_code: code,
                error_message: None,
            });
        }
        responses.push(AlterTopicResponse {
            topic_name: t.topic_name,
            topic_id: topic.map_or([0; 16], |tt| tt.id),
            partitions,
        });
    }
    let gid = req.group_id.clone();
    let written = on_coordinator(
        shard,
        &req.group_id,
        move |c: Rc<GroupCoordinator>, s, p| {
            c.while_share_group_empty(s, p, gid, |s, _exists| async move {
                let mut codes = Vec::with_capacity(resets.len());
                for (key, offset) in resets {
                    codes.push(
                        reinitialize(&s, &key, offset)
                            .await
                            .err()
                            .unwrap_or(error_code::NONE),
                    );
                }
                codes
            })
        },
    )
    .await
    .and_then(|r| r);
    let codes = match written {
        Ok(codes) => codes,
        Err(code) => {
            let message = match code {
                error_code::NON_EMPTY_GROUP => Some(format!(
                    "The share group {} has members: stop them before resetting its offsets.",
                    req.group_id
                )),
                error_code::GROUP_ID_NOT_FOUND => {
                    Some(format!("Group {} is not a share group.", req.group_id))
                }
                _ => None,
            };
            return refused(code, message);
        }
    };
    for ((t, p), code) in answers_at.into_iter().zip(codes) {
        responses[t].partitions[p].error_code = code;
    }
    AlterShareGroupOffsetsResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        error_message: None,
        responses,
    }
}

/// Initializes `key`'s state at `start_offset` under the state epoch after
/// the stored one.
async fn reinitialize(
    shard: &Rc<Shard>,
    key: &SharePartitionKey,
    start_offset: i64,
) -> Result<(), i16> {
    let epoch = persister::read_summary(shard, key)
        .await?
        .map_or(0, |s| s.state_epoch.saturating_add(1));
    persister::initialize_state(shard, key, epoch, start_offset).await
}
