//! ReadShareGroupState: a share partition's new leader loads its durable
//! state (state epoch, start offset, state batches). A newer leader epoch
//! is stored before the answer; an older one is fenced. A share partition
//! whose state was never initialized answers start offset -1 and state
//! epoch 0 with no batches, as Kafka's coordinator does.

use std::rc::Rc;

use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::read_share_group_state::*;
use crate::server::handlers::access::Access;
use crate::server::handlers::share_group_state::serve_each;
use crate::server::share_state::{StateAnswer, StateOp};
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: ReadShareGroupStateRequest,
    access: &Access<'_>,
) -> ReadShareGroupStateResponse {
    let results = serve_each(
        shard,
        access,
        &req.group_id,
        req.topics,
        |p: &ReadPartition| {
            (
                p.partition,
                StateOp::Read {
                    leader_epoch: p.leader_epoch,
                },
            )
        },
        |partition, outcome| match outcome {
            Ok(StateAnswer::Read(r)) => ReadPartitionResult {
                partition,
                error_code: error_code::NONE,
                error_message: None,
                state_epoch: r.state_epoch,
                start_offset: r.start_offset,
                state_batches: r.state_batches,
            },
            Ok(_) => failed(partition, error_code::UNKNOWN_SERVER_ERROR),
            Err(code) => failed(partition, code),
        },
    )
    .await;
    ReadShareGroupStateResponse { results }
}

fn failed(partition: i32, code: i16) -> ReadPartitionResult {
    ReadPartitionResult {
        partition,
        error_code: code,
        error_message: None,
        state_epoch: 0,
        start_offset: -1,
        state_batches: Vec::new(),
    }
}
