//! WriteShareGroupState: a share partition's leader makes a change of its
//! delivery state durable; answered once the record (a ShareUpdate, or a
//! ShareSnapshot every `share.coordinator.snapshot.update.records.per.snapshot`)
//! is replicated. A writer of an older leader or state epoch is fenced.

use std::rc::Rc;

use crate::group::share::partition::StateWrite;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::write_share_group_state::*;
use crate::server::handlers::access::Access;
use crate::server::handlers::share_group_state::{code_only, serve_each};
use crate::server::share_state::StateOp;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: WriteShareGroupStateRequest,
    access: &Access<'_>,
) -> WriteShareGroupStateResponse {
    let results = serve_each(
        shard,
        access,
        &req.group_id,
        req.topics,
        |p: &WritePartition| {
            (
                p.partition,
                StateOp::Write {
                    state_epoch: p.state_epoch,
                    leader_epoch: p.leader_epoch,
                    write: StateWrite {
                        start_offset: p.start_offset,
                        delivery_complete_count: p.delivery_complete_count,
                        state_batches: p.state_batches.clone(),
                    },
                },
            )
        },
        code_only,
    )
    .await;
    WriteShareGroupStateResponse { results }
}
