//! InitProducerId: an idempotent producer gets a fresh producer id; a
//! transactional one (a `transactional.id`) gets its id's producer id and
//! a bumped epoch from the id's transaction coordinator, which fences any
//! older instance and aborts its open transaction first.

use std::rc::Rc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::init_producer_id::*;
use crate::server::controller;
use crate::server::handlers::access::Access;
use crate::server::txn_coordinator::on_coordinator;
use crate::shard::shard::Shard;

/// First version that may carry the producer id and epoch the client holds
/// (KIP-360).
const EXISTING_PRODUCER_FROM: i16 = 3;
/// Clients before this version know INVALID_PRODUCER_EPOCH, not
/// PRODUCER_FENCED (KIP-588).
const PRODUCER_FENCED_FROM: i16 = 4;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: InitProducerIdRequest,
    access: &Access<'_>,
) -> InitProducerIdResponse {
    let mut resp = InitProducerIdResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        producer_id: -1,
        producer_epoch: -1,
    };
    let image = BrokerState::of(shard).image();
    match &req.transactional_id {
        Some(id) if !access.allows(&image, matrix::INIT_PRODUCER_ID_TRANSACTIONAL_ID, id) => {
            resp.error_code = error_code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
            return resp;
        }
        None if !access.allows_cluster(&image, matrix::INIT_PRODUCER_ID_IDEMPOTENT)
            && !access.allows_some(&image, matrix::INIT_PRODUCER_ID_ANY_TOPIC) =>
        {
            resp.error_code = error_code::CLUSTER_AUTHORIZATION_FAILED;
            return resp;
        }
        _ => {}
    }
    if let Some(id) = req.transactional_id.clone() {
        // Kafka's check: an id and an epoch come together, or neither.
        if header.api_version >= EXISTING_PRODUCER_FROM
            && ((req.producer_id >= 0) != (req.producer_epoch >= 0))
        {
            resp.error_code = error_code::INVALID_REQUEST;
            return resp;
        }
        let expected = (header.api_version >= EXISTING_PRODUCER_FROM && req.producer_id >= 0)
            .then_some((req.producer_id, req.producer_epoch));
        let timeout = req.transaction_timeout_ms;
        let key = id.clone();
        let answer = on_coordinator(shard, &key, move |c, s, partition| {
            c.init_producer_id(s, partition, id, timeout, expected)
        })
        .await;
        match answer {
            Ok(a) => {
                resp.error_code = a.error_code;
                resp.producer_id = a.producer_id;
                resp.producer_epoch = a.producer_epoch;
            }
            Err(code) => resp.error_code = code,
        }
        if resp.error_code == error_code::PRODUCER_FENCED
            && header.api_version < PRODUCER_FENCED_FROM
        {
            resp.error_code = error_code::INVALID_PRODUCER_EPOCH;
        }
        return resp;
    }
    // A producer that asks again with its id (KIP-360) gets a new id; the
    // epoch starts over at 0.
    match controller::allocate_producer_id(shard).await {
        Ok(id) => {
            resp.producer_id = id;
            resp.producer_epoch = 0;
        }
        Err(e) => {
            tracing::error!("InitProducerId failed: {e}");
            resp.error_code = e.code;
        }
    }
    resp
}
