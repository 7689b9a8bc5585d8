//! InitializeShareGroupState: the group coordinator (or an admin's offset
//! reset) sets a share partition's state epoch and start offset, with no
//! batches; the share coordinator writes a fresh snapshot.

use std::rc::Rc;

use crate::protocol::header::RequestHeader;
use crate::protocol::messages::initialize_share_group_state::*;
use crate::server::handlers::access::Access;
use crate::server::handlers::share_group_state::{code_only, serve_each};
use crate::server::share_state::StateOp;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: InitializeShareGroupStateRequest,
    access: &Access<'_>,
) -> InitializeShareGroupStateResponse {
    let results = serve_each(
        shard,
        access,
        &req.group_id,
        req.topics,
        |p: &InitializePartition| {
            (
                p.partition,
                StateOp::Initialize {
                    state_epoch: p.state_epoch,
                    start_offset: p.start_offset,
                },
            )
        },
        code_only,
    )
    .await;
    InitializeShareGroupStateResponse { results }
}
