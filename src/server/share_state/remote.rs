//! Calling the share coordinator on another broker: one state API request
//! for one share partition over a pooled inter-broker connection of this
//! shard (`replication/kafka_peer.rs`), its answer read back into the
//! coordinator's own terms.

use std::rc::Rc;
use std::time::Duration;

use bytes::BytesMut;

use super::{ShareStateCoordinator, StateAnswer, StateOp};
use crate::group::share::state_records::SharePartitionKey;
use crate::group::share::state_store::{
    ReadAnswer, SummaryAnswer, DEFAULT_STATE_EPOCH, UNINITIALIZED_START_OFFSET,
};
use crate::node::state::BrokerState;
use crate::protocol::api::ApiKey;
use crate::protocol::codec::{DecodeResult, Reader};
use crate::protocol::error_code;
use crate::protocol::messages::delete_share_group_state::{
    DeletePartition, DeleteShareGroupStateRequest, DeleteShareGroupStateResponse,
};
use crate::protocol::messages::initialize_share_group_state::{
    InitializePartition, InitializeShareGroupStateRequest, InitializeShareGroupStateResponse,
};
use crate::protocol::messages::read_share_group_state::{
    ReadPartition, ReadShareGroupStateRequest, ReadShareGroupStateResponse,
};
use crate::protocol::messages::read_share_group_state_summary::{
    ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse, SummaryPartition,
};
use crate::protocol::messages::share_group_state::{PartitionResult, StateTopic};
use crate::protocol::messages::write_share_group_state::{
    WritePartition, WriteShareGroupStateRequest, WriteShareGroupStateResponse,
};
use crate::server::replication::kafka_peer::{inter_broker_security, KafkaPeer};
use crate::shard::shard::Shard;

/// The versions this broker sends: the latest of each.
const INITIALIZE_VERSION: i16 = 0;
const READ_VERSION: i16 = 0;
const WRITE_VERSION: i16 = 1;
const DELETE_VERSION: i16 = 0;
const SUMMARY_VERSION: i16 = 1;

/// The largest answer read: one share partition's batches, at most
/// `group.share.partition.max.record.locks` (4,000) of 21 bytes.
const MAX_RESPONSE_BYTES: usize = 1 << 20;

fn topic<P>(key: &SharePartitionKey, partition: P) -> Vec<StateTopic<P>> {
    vec![StateTopic {
        topic_id: key.topic_id,
        partitions: vec![partition],
    }]
}

/// The one result of a single-partition response; a response without it
/// is the coordinator's fault.
fn only<P: Clone>(results: &[StateTopic<P>]) -> Result<P, i16> {
    results
        .first()
        .and_then(|t| t.partitions.first())
        .cloned()
        .ok_or(error_code::UNKNOWN_SERVER_ERROR)
}

fn done(r: PartitionResult) -> Result<StateAnswer, i16> {
    if r.error_code != error_code::NONE {
        return Err(r.error_code);
    }
    Ok(StateAnswer::Done)
}

/// The request `op` about `key` becomes: its API, version and body.
pub(crate) fn encode_request(key: &SharePartitionKey, op: &StateOp) -> (ApiKey, i16, BytesMut) {
    let group_id = key.group_id.clone();
    let p = key.partition;
    let mut w = BytesMut::new();
    let (api, version) = match op {
        StateOp::Initialize {
            state_epoch,
            start_offset,
        } => {
            InitializeShareGroupStateRequest {
                group_id,
                topics: topic(
                    key,
                    InitializePartition {
                        partition: p,
                        state_epoch: *state_epoch,
                        start_offset: *start_offset,
                    },
                ),
            }
            .encode(&mut w, INITIALIZE_VERSION);
            (ApiKey::InitializeShareGroupState, INITIALIZE_VERSION)
        }
        StateOp::Write {
            state_epoch,
            leader_epoch,
            write,
        } => {
            WriteShareGroupStateRequest {
                group_id,
                topics: topic(
                    key,
                    WritePartition {
                        partition: p,
                        state_epoch: *state_epoch,
                        leader_epoch: *leader_epoch,
                        start_offset: write.start_offset,
                        delivery_complete_count: write.delivery_complete_count,
                        state_batches: write.state_batches.clone(),
                    },
                ),
            }
            .encode(&mut w, WRITE_VERSION);
            (ApiKey::WriteShareGroupState, WRITE_VERSION)
        }
        StateOp::Delete => {
            DeleteShareGroupStateRequest {
                group_id,
                topics: topic(key, DeletePartition { partition: p }),
            }
            .encode(&mut w, DELETE_VERSION);
            (ApiKey::DeleteShareGroupState, DELETE_VERSION)
        }
        StateOp::Read { leader_epoch } => {
            ReadShareGroupStateRequest {
                group_id,
                topics: topic(
                    key,
                    ReadPartition {
                        partition: p,
                        leader_epoch: *leader_epoch,
                    },
                ),
            }
            .encode(&mut w, READ_VERSION);
            (ApiKey::ReadShareGroupState, READ_VERSION)
        }
        StateOp::Summary { leader_epoch } => {
            ReadShareGroupStateSummaryRequest {
                group_id,
                topics: topic(
                    key,
                    SummaryPartition {
                        partition: p,
                        leader_epoch: *leader_epoch,
                    },
                ),
            }
            .encode(&mut w, SUMMARY_VERSION);
            (ApiKey::ReadShareGroupStateSummary, SUMMARY_VERSION)
        }
    };
    (api, version, w)
}

/// Reads the response to [`encode_request`]'s request for `op`: the
/// coordinator's answer, or its error code.
pub(crate) fn decode_answer(
    op: &StateOp,
    r: &mut Reader,
) -> DecodeResult<Result<StateAnswer, i16>> {
    Ok(match op {
        StateOp::Initialize { .. } => {
            let resp = InitializeShareGroupStateResponse::decode(r, INITIALIZE_VERSION)?;
            only(&resp.results).and_then(done)
        }
        StateOp::Write { .. } => {
            let resp = WriteShareGroupStateResponse::decode(r, WRITE_VERSION)?;
            only(&resp.results).and_then(done)
        }
        StateOp::Delete => {
            let resp = DeleteShareGroupStateResponse::decode(r, DELETE_VERSION)?;
            only(&resp.results).and_then(done)
        }
        StateOp::Read { .. } => {
            let resp = ReadShareGroupStateResponse::decode(r, READ_VERSION)?;
            only(&resp.results).and_then(|r| {
                if r.error_code != error_code::NONE {
                    return Err(r.error_code);
                }
                Ok(StateAnswer::Read(ReadAnswer {
                    // Kafka's wire answer for a state never initialized.
                    initialized: !(r.start_offset == UNINITIALIZED_START_OFFSET
                        && r.state_epoch == DEFAULT_STATE_EPOCH
                        && r.state_batches.is_empty()),
                    state_epoch: r.state_epoch,
                    start_offset: r.start_offset,
                    state_batches: r.state_batches,
                    leader_epoch_record: None,
                }))
            })
        }
        StateOp::Summary { .. } => {
            let resp = ReadShareGroupStateSummaryResponse::decode(r, SUMMARY_VERSION)?;
            only(&resp.results).and_then(|r| {
                if r.error_code != error_code::NONE {
                    return Err(r.error_code);
                }
                Ok(StateAnswer::Summary(SummaryAnswer {
                    state_epoch: r.state_epoch,
                    leader_epoch: r.leader_epoch,
                    start_offset: r.start_offset,
                    delivery_complete_count: r.delivery_complete_count,
                }))
            })
        }
    })
}

/// Sends `op` about `key` to the coordinator at `addr` and waits at most
/// `timeout`. A connection error is COORDINATOR_NOT_AVAILABLE (retried by
/// the persister); the connection is then dropped, so a late answer is
/// never read as the next request's.
pub async fn call(
    shard: &Rc<Shard>,
    addr: &str,
    key: &SharePartitionKey,
    op: &StateOp,
    timeout: Duration,
) -> Result<StateAnswer, i16> {
    let coordinator = ShareStateCoordinator::of(shard);
    let mut peer = coordinator.take_peer(addr, || {
        KafkaPeer::new(
            addr.to_string(),
            format!(
                "pinlog-share-persister-{}-shard-{}",
                BrokerState::of(shard).node_id(),
                shard.id()
            ),
            inter_broker_security(shard),
        )
    });
    let (api, version, body) = encode_request(key, op);
    let answer = peer
        .call(
            api,
            version,
            |w| w.extend_from_slice(&body),
            |r| decode_answer(op, r),
            timeout,
            MAX_RESPONSE_BYTES,
        )
        .await;
    match answer {
        Ok(answer) => {
            coordinator.return_peer(peer);
            answer
        }
        Err(e) => {
            tracing::debug!(coordinator = addr, "share state call failed: {e}");
            Err(error_code::COORDINATOR_NOT_AVAILABLE)
        }
    }
}

#[cfg(test)]
#[path = "remote_tests.rs"]
mod tests;
