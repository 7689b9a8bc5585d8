//! DeleteGroups: removes empty groups and their committed offsets. A share
//! group's share-partition state is deleted from the share coordinator
//! first (DeleteShareGroupState), then its records, as Kafka orders it,
//! with no member let in between (`group/coordinator/share_admin.rs`).

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, GroupCoordinator};
use crate::group::share::SharePartitionKey;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_groups::*;
use crate::server::handlers::access::Access;
use crate::server::share_state::persister;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DeleteGroupsRequest,
    access: &Access<'_>,
) -> DeleteGroupsResponse {
    let image = BrokerState::of(shard).image();
    let mut results = Vec::with_capacity(req.groups_names.len());
    for group_id in req.groups_names {
        let gid = group_id.clone();
        let code = if !access.allows(&image, matrix::DELETE_GROUPS_GROUP, &group_id) {
            error_code::GROUP_AUTHORIZATION_FAILED
        } else if group_id.is_empty() {
            error_code::INVALID_GROUP_ID
        } else {
            let deleted = on_coordinator(
                shard,
                &group_id,
                move |c: Rc<GroupCoordinator>, s, p| async move {
                    let group = gid.clone();
                    let delete_state = |s: Rc<Shard>, held| async move {
                        delete_share_state(&s, &group, held).await
                    };
                    let share = c.clone().delete_share_group_with_state(
                        s.clone(),
                        p,
                        gid.clone(),
                        delete_state,
                    );
                    match share.await {
                        Some(code) => code,
                        None => c.delete_group(s, p, gid).await,
                    }
                },
            )
            .await;
            match deleted {
                Ok(code) => code,
                // Without __consumer_offsets there are no groups.
                Err(c) if c == error_code::COORDINATOR_NOT_AVAILABLE => {
                    error_code::GROUP_ID_NOT_FOUND
                }
                Err(c) => c,
            }
        };
        results.push(DeletableGroupResult {
            group_id,
            error_code: code,
        });
    }
    DeleteGroupsResponse {
        throttle_time_ms: 0,
        results,
    }
}

/// Deletes the state of each share partition `group_id` held from the
/// share coordinator.
async fn delete_share_state(
    shard: &Rc<Shard>,
    group_id: &str,
    held: Vec<([u8; 16], i32)>,
) -> Result<(), i16> {
    for (topic_id, partition) in held {
        let key = SharePartitionKey {
            group_id: group_id.to_string(),
            topic_id,
            partition,
        };
        persister::delete_state(shard, &key).await?;
    }
    Ok(())
}
