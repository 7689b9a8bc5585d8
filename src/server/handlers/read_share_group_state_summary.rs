//! ReadShareGroupStateSummary: the start offset and epochs of a share
//! partition's state, without its batches (what DescribeShareGroupOffsets
//! shows). A state never initialized answers start offset -1.

use std::rc::Rc;

use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::read_share_group_state_summary::*;
use crate::server::handlers::access::Access;
use crate::server::handlers::share_group_state::serve_each;
use crate::server::share_state::{StateAnswer, StateOp};
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: ReadShareGroupStateSummaryRequest,
    access: &Access<'_>,
) -> ReadShareGroupStateSummaryResponse {
    let results = serve_each(
        shard,
        access,
        &req.group_id,
        req.topics,
        |p: &SummaryPartition| {
            (
                p.partition,
                StateOp::Summary {
                    leader_epoch: p.leader_epoch,
                },
            )
        },
        |partition, outcome| match outcome {
            Ok(StateAnswer::Summary(s)) => SummaryPartitionResult {
                partition,
                error_code: error_code::NONE,
                error_message: None,
                state_epoch: s.state_epoch,
                leader_epoch: s.leader_epoch,
                start_offset: s.start_offset,
                delivery_complete_count: s.delivery_complete_count,
            },
            Ok(_) => failed(partition, error_code::UNKNOWN_SERVER_ERROR),
            Err(code) => failed(partition, code),
        },
    )
    .await;
    ReadShareGroupStateSummaryResponse { results }
}

fn failed(partition: i32, code: i16) -> SummaryPartitionResult {
    SummaryPartitionResult {
        partition,
        error_code: code,
        start_offset: -1,
        ..SummaryPartitionResult::default()
    }
}
