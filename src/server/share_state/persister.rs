//! The persister (Kafka's `DefaultStatePersister`): what a share-partition
//! leader calls to read, initialize, write and delete its durable state,
//! wherever the share coordinator of that share partition runs.
//!
//! Each call makes sure `__share_group_state` exists, finds the
//! coordinator (the leader of the share partition's `__share_group_state`
//! partition, Kafka's hash of `groupId:topicId:partition`), and asks it:
//! with `submit_to` when this broker leads that partition, otherwise over
//! the inter-broker listener (`remote.rs`, connections pooled per shard).
//! NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE
//! and connection errors are retried every [`PERSISTER_RETRY_BACKOFF`]
//! until [`PERSISTER_TIMEOUT`]; every other code is the caller's answer
//! (FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, ...).

use std::rc::Rc;
use std::time::{Duration, Instant};

use super::topic::ensure_share_group_state_topic;
use super::{on_coordinator, remote, StateAnswer, StateOp};
use crate::group::share::partition::StateWrite;
use crate::group::share::state_records::SharePartitionKey;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::messages::share_group_state::StateBatch;
use crate::shard::shard::Shard;

/// The longest a persister call keeps retrying a coordinator that is
/// moving, loading or unreachable: past a coordinator failover (a new
/// leader is elected and loads within seconds), as Kafka's persister keeps
/// retrying within its request timeout.
pub const PERSISTER_TIMEOUT: Duration = Duration::from_secs(30);
/// The wait between two tries.
pub const PERSISTER_RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// The longest one try waits for another broker's answer: the
/// coordinator's write timeout (`share.coordinator.write.timeout.ms`) plus
/// this margin for the network.
const REMOTE_CALL_MARGIN: Duration = Duration::from_secs(5);

const _: () = assert!(PERSISTER_RETRY_BACKOFF.as_millis() * 10 <= PERSISTER_TIMEOUT.as_millis());

/// A share partition's durable state as its leader loads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadState {
    pub state_epoch: i32,
    pub start_offset: i64,
    pub state_batches: Vec<StateBatch>,
}

/// Reads `key`'s state as the leader at `leader_epoch` (a newer epoch is
/// stored first; an older one is FENCED_LEADER_EPOCH).
/// Ok(None): no state was ever initialized for this share partition. (From
/// another broker's coordinator that is Kafka's wire answer for it, start
/// offset -1, state epoch 0 and no batches, which a state initialized to
/// exactly that also gives: the two mean the same to a share partition,
/// whose start then comes from `share.auto.offset.reset`.)
pub async fn read_state(
    shard: &Rc<Shard>,
    key: &SharePartitionKey,
    leader_epoch: i32,
) -> Result<Option<ReadState>, i16> {
    match call(shard, key, StateOp::Read { leader_epoch }).await? {
        StateAnswer::Read(r) if r.initialized => Ok(Some(ReadState {
            state_epoch: r.state_epoch,
            start_offset: r.start_offset,
            state_batches: r.state_batches,
        })),
        StateAnswer::Read(_) => Ok(None),
        other => unexpected(other),
    }
}

/// Initializes `key`'s state: no batches, `start_offset`, `state_epoch`
/// (an older state epoch than the stored one is FENCED_STATE_EPOCH).
pub async fn initialize_state(
    shard: &Rc<Shard>,
    key: &SharePartitionKey,
    state_epoch: i32,
    start_offset: i64,
) -> Result<(), i16> {
    match call(
        shard,
        key,
        StateOp::Initialize {
            state_epoch,
            start_offset,
        },
    )
    .await?
    {
        StateAnswer::Done => Ok(()),
        other => unexpected(other),
    }
}

/// Makes `write` durable; answered once replicated.
pub async fn write_state(
    shard: &Rc<Shard>,
    key: &SharePartitionKey,
    state_epoch: i32,
    leader_epoch: i32,
    write: &StateWrite,
) -> Result<(), i16> {
    let op = StateOp::Write {
        state_epoch,
        leader_epoch,
        write: write.clone(),
    };
    match call(shard, key, op).await? {
        StateAnswer::Done => Ok(()),
        other => unexpected(other),
    }
}

/// `key`'s start offset, epochs and delivery-complete count
/// (ReadShareGroupStateSummary, for DescribeShareGroupOffsets); the leader
/// epoch stored is not changed. Ok(None): never initialized.
pub async fn read_summary(
    shard: &Rc<Shard>,
    key: &SharePartitionKey,
) -> Result<Option<crate::group::share::state_store::SummaryAnswer>, i16> {
    let op = StateOp::Summary {
        leader_epoch: crate::group::share::state_store::EPOCH_UNSET,
    };
    match call(shard, key, op).await? {
        StateAnswer::Summary(s) if s.start_offset >= 0 => Ok(Some(s)),
        StateAnswer::Summary(_) => Ok(None),
        other => unexpected(other),
    }
}

/// Deletes `key`'s state (tombstones); deleting absent state succeeds.
pub async fn delete_state(shard: &Rc<Shard>, key: &SharePartitionKey) -> Result<(), i16> {
    match call(shard, key, StateOp::Delete).await? {
        StateAnswer::Done => Ok(()),
        other => unexpected(other),
    }
}

fn unexpected<T>(answer: StateAnswer) -> Result<T, i16> {
    tracing::error!("the share coordinator answered out of kind: {answer:?}");
    Err(error_code::UNKNOWN_SERVER_ERROR)
}

/// Whether a code means "ask again, maybe elsewhere".
fn retriable(code: i16) -> bool {
    matches!(
        code,
        error_code::NOT_COORDINATOR
            | error_code::COORDINATOR_LOAD_IN_PROGRESS
            | error_code::COORDINATOR_NOT_AVAILABLE
            | error_code::REQUEST_TIMED_OUT
    )
}

/// One try after another until an answer that is not retriable, or
/// [`PERSISTER_TIMEOUT`] (then the last code).
async fn call(shard: &Rc<Shard>, key: &SharePartitionKey, op: StateOp) -> Result<StateAnswer, i16> {
    let deadline = Instant::now() + PERSISTER_TIMEOUT;
    loop {
        let code = match try_once(shard, key, &op).await {
            Ok(answer) => return Ok(answer),
            Err(code) if !retriable(code) => return Err(code),
            Err(code) => code,
        };
        if Instant::now() + PERSISTER_RETRY_BACKOFF >= deadline {
            tracing::warn!(
                group = %key.group_id,
                partition = key.partition,
                code,
                "the share coordinator did not answer within {PERSISTER_TIMEOUT:?}"
            );
            return Err(code);
        }
        glommio::timer::sleep(PERSISTER_RETRY_BACKOFF).await;
    }
}

async fn try_once(
    shard: &Rc<Shard>,
    key: &SharePartitionKey,
    op: &StateOp,
) -> Result<StateAnswer, i16> {
    ensure_share_group_state_topic(shard).await?;
    let broker = BrokerState::of(shard);
    let Some((_, leader, _)) = super::locate(shard, key) else {
        // Just created: not in this broker's image yet.
        return Err(error_code::COORDINATOR_NOT_AVAILABLE);
    };
    if leader == broker.node_id() {
        return on_coordinator(shard, key.clone(), op.clone()).await;
    }
    let image = broker.image();
    if leader < 0 || !image.is_live_broker(leader) {
        return Err(error_code::COORDINATOR_NOT_AVAILABLE);
    }
    let Some(addr) = image
        .brokers
        .get(&leader)
        .map(|b| format!("{}:{}", b.host, b.port))
    else {
        return Err(error_code::COORDINATOR_NOT_AVAILABLE);
    };
    drop(image);
    let timeout = Duration::from_millis(broker.config.share_coordinator.write_timeout_ms)
        + REMOTE_CALL_MARGIN;
    remote::call(shard, &addr, key, op, timeout).await
}
