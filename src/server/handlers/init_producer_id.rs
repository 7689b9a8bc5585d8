//! InitProducerId for idempotent producers. Transactions are not supported
//! yet: a transactional id gets a clear error.

use std::rc::Rc;

use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::init_producer_id::*;
use crate::server::controller;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let mut resp = InitProducerIdResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        producer_id: -1,
        producer_epoch: -1,
    };
    if req.transactional_id.is_some() {
        resp.error_code = error_code::TRANSACTIONAL_ID_NOT_FOUND;
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
