//! DeleteShareGroupState: the group coordinator deletes a share
//! partition's state (a deleted share group, or a topic it no longer
//! reads); the share coordinator writes tombstones. Deleting absent state
//! succeeds.

use std::rc::Rc;

use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_share_group_state::*;
use crate::server::handlers::access::Access;
use crate::server::handlers::share_group_state::{code_only, serve_each};
use crate::server::share_state::StateOp;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DeleteShareGroupStateRequest,
    access: &Access<'_>,
) -> DeleteShareGroupStateResponse {
    let results = serve_each(
        shard,
        access,
        &req.group_id,
        req.topics,
        |p: &DeletePartition| (p.partition, StateOp::Delete),
        code_only,
    )
    .await;
    DeleteShareGroupStateResponse { results }
}
