//! CreateAcls and DeleteAcls on the active controller: the request as the
//! client sent it (Kafka-encoded, so the forwarding carries no type of its
//! own), decided by `crate::controller::acls` against the committed image,
//! its records committed as one entry, and the Kafka-encoded answer. The
//! broker that was asked answers once its own image shows the change
//! (`call` waits for it), so a DescribeAcls to it right after lists it.

use std::rc::Rc;

use super::{
    call_as, wrong_answer, AdminAnswer, AdminRequest, Caller, ControllerError, ControllerResult,
};
use crate::acl::wire::{binding_of_creation, creation_result, delete_result, filter_of_delete};
use crate::acl::{AclBinding, AclBindingFilter};
use crate::controller::acls::{plan_create_acls, plan_delete_acls};
use crate::metadata::image::MetadataImage;
use crate::metadata::records::MetadataRecord;
use crate::node::ids::random_uuid;
use crate::protocol::codec::Reader;
use crate::protocol::messages::create_acls::{
    AclCreationResult, CreateAclsRequest, CreateAclsResponse,
};
use crate::protocol::messages::delete_acls::{DeleteAclsRequest, DeleteAclsResponse};
use crate::shard::shard::Shard;

/// A decision's Kafka-encoded answer and the records that make it so.
pub(super) struct Decided {
    pub body: Vec<u8>,
    pub records: Vec<MetadataRecord>,
}

fn encode(f: impl FnOnce(&mut bytes::BytesMut)) -> Vec<u8> {
    let mut w = bytes::BytesMut::new();
    f(&mut w);
    w.to_vec()
}

/// CreateAcls against `image`: every creation answered on its own.
pub(super) fn decide_create(
    image: &MetadataImage,
    version: i16,
    body: Vec<u8>,
) -> ControllerResult<Decided> {
    let req = CreateAclsRequest::decode(&mut Reader::new(body.into()), version)
        .map_err(|e| super::invalid_request("CreateAcls", e))?;
    let creations: Vec<AclBinding> = req.creations.iter().map(binding_of_creation).collect();
    let (results, records) = match plan_create_acls(&image.acls, &creations, random_uuid) {
        Ok(plan) => (
            plan.results.iter().map(creation_result).collect(),
            plan.records,
        ),
        // Too many for one entry: every creation refused alike.
        Err(e) => (
            creations
                .iter()
                .map(|_| creation_result(&Err(e.clone())))
                .collect::<Vec<AclCreationResult>>(),
            Vec::new(),
        ),
    };
    let resp = CreateAclsResponse {
        throttle_time_ms: 0,
        results,
    };
    Ok(Decided {
        body: encode(|w| resp.encode(w, version)),
        records,
    })
}

/// DeleteAcls against `image`: what each filter selects, removed once.
pub(super) fn decide_delete(
    image: &MetadataImage,
    version: i16,
    body: Vec<u8>,
) -> ControllerResult<Decided> {
    let req = DeleteAclsRequest::decode(&mut Reader::new(body.into()), version)
        .map_err(|e| super::invalid_request("DeleteAcls", e))?;
    let filters: Vec<AclBindingFilter> = req.filters.iter().map(filter_of_delete).collect();
    let plan = plan_delete_acls(&image.acls, &filters);
    let resp = DeleteAclsResponse {
        throttle_time_ms: 0,
        filter_results: plan.results.iter().map(delete_result).collect(),
    };
    Ok(Decided {
        body: encode(|w| resp.encode(w, version)),
        records: plan.records,
    })
}

fn decode_answer<T>(
    answer: AdminAnswer,
    decode: impl FnOnce(&mut Reader) -> Result<T, crate::protocol::codec::DecodeError>,
) -> ControllerResult<T> {
    match answer {
        AdminAnswer::Broker { body, .. } => {
            decode(&mut Reader::new(body.into())).map_err(|e| ControllerError {
                code: crate::protocol::error_code::UNKNOWN_SERVER_ERROR,
                message: format!("the active controller's ACL answer does not decode: {e}"),
            })
        }
        _ => Err(wrong_answer()),
    }
}

/// Creates ACLs (CreateAcls at `version`) through the active controller;
/// callable from any shard. Answers once this node serves them.
pub async fn create_acls(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    req: &CreateAclsRequest,
    version: i16,
) -> ControllerResult<CreateAclsResponse> {
    let body = encode(|w| req.encode(w, version));
    let answer = call_as(shard, caller, AdminRequest::CreateAcls { version, body }).await?;
    decode_answer(answer, |r| CreateAclsResponse::decode(r, version))
}

/// Deletes ACLs (DeleteAcls at `version`) through the active controller;
/// callable from any shard. Answers once this node no longer serves them.
pub async fn delete_acls(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    req: &DeleteAclsRequest,
    version: i16,
) -> ControllerResult<DeleteAclsResponse> {
    let body = encode(|w| req.encode(w, version));
    let answer = call_as(shard, caller, AdminRequest::DeleteAcls { version, body }).await?;
    decode_answer(answer, |r| DeleteAclsResponse::decode(r, version))
}
