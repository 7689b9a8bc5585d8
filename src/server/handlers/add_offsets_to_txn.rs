//! AddOffsetsToTxn: a producer about to commit a group's offsets in its
//! transaction (TxnOffsetCommit) adds the group's `__consumer_offsets`
//! partition to the transaction, so that the transaction's marker reaches
//! it and decides the offsets. Kafka's rules: WRITE on the transactional
//! id, then READ on the group.

use std::collections::BTreeSet;
use std::rc::Rc;

use crate::acl::matrix;
use crate::group::offsets_topic::partition_for;
use crate::metadata::OFFSETS_TOPIC;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::add_offsets_to_txn::*;
use crate::server::handlers::access::Access;
use crate::server::handlers::offsets_topic::ensure_offsets_topic;
use crate::server::txn_coordinator::on_coordinator;
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// Clients before this version know INVALID_PRODUCER_EPOCH, not
/// PRODUCER_FENCED (KIP-588).
const PRODUCER_FENCED_FROM: i16 = 2;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: AddOffsetsToTxnRequest,
    access: &Access<'_>,
) -> AddOffsetsToTxnResponse {
    let image = BrokerState::of(shard).image();
    let code = if !access.allows(
        &image,
        matrix::ADD_OFFSETS_TO_TXN_TRANSACTIONAL_ID,
        &req.transactional_id,
    ) {
        error_code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    } else if !access.allows(&image, matrix::ADD_OFFSETS_TO_TXN_GROUP, &req.group_id) {
        error_code::GROUP_AUTHORIZATION_FAILED
    } else {
        drop(image);
        add(shard, req).await
    };
    AddOffsetsToTxnResponse {
        throttle_time_ms: 0,
        error_code: if code == error_code::PRODUCER_FENCED
            && header.api_version < PRODUCER_FENCED_FROM
        {
            error_code::INVALID_PRODUCER_EPOCH
        } else {
            code
        },
    }
}

async fn add(shard: &Rc<Shard>, req: AddOffsetsToTxnRequest) -> i16 {
    if req.group_id.is_empty() {
        return error_code::INVALID_GROUP_ID;
    }
    if let Err(code) = ensure_offsets_topic(shard).await {
        return code;
    }
    let partitions = BrokerState::of(shard)
        .image()
        .topic(OFFSETS_TOPIC)
        .map_or(0, |t| t.partitions.len() as i32);
    if partitions == 0 {
        return error_code::COORDINATOR_NOT_AVAILABLE;
    }
    let tp = TopicPartition::new(
        OFFSETS_TOPIC.to_string(),
        partition_for(&req.group_id, partitions),
    );
    let set: BTreeSet<TopicPartition> = [tp].into_iter().collect();
    let (id, producer_id, epoch) = (
        req.transactional_id.clone(),
        req.producer_id,
        req.producer_epoch,
    );
    on_coordinator(
        shard,
        &req.transactional_id,
        move |c, s, partition| async move {
            c.add_partitions(s, partition, id, producer_id, epoch, set, 0)
                .await
        },
    )
    .await
    .unwrap_or_else(|code| code)
}
