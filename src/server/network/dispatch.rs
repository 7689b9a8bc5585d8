//! From a frame to a response: header, version check, decode, handler,
//! encode. One match arm per API; the handlers live in `handlers/`, one file
//! per API.
//!
//! Malformed input never panics here: a frame whose header cannot be read,
//! an unknown API key, an unsupported version (other than ApiVersions') or a
//! body that does not decode closes the connection with a log line, as
//! Kafka's socket server does. ApiVersions with an unknown version gets
//! Kafka's v0 UNSUPPORTED_VERSION reply so that any client can bootstrap.

use std::rc::Rc;

use bytes::{BufMut, Bytes, BytesMut};

use crate::node::state::BrokerState;
use crate::protocol::api::ApiKey;
use crate::protocol::chunks::{Chunk, ChunkWriter};
use crate::protocol::codec::{DecodeError, Reader};
use crate::protocol::header::{encode_response_header, RequestHeader};
use crate::protocol::messages::*;
use crate::quota::{CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE};
use crate::security::session::Session;
use crate::server::handlers;
use crate::server::handlers::access::Access;
use crate::server::handlers::quota::ShardQuotas;
use crate::server::network::request_time::{BusyClock, Timed};
use crate::shard::shard::Shard;

/// What the connection does with one request.
pub enum Outcome {
    /// Write these chunks (size prefix included).
    Respond(Vec<Chunk>),
    /// Produce with acks=0: nothing goes back.
    NoResponse,
    /// Write these chunks, then close the connection, logging why (a
    /// refused SASL authentication).
    RespondThenClose(Vec<Chunk>, String),
    /// Close the connection, logging why.
    Close(String),
    /// Write these chunks, then read no request of the connection for the
    /// time given: a client over its quota (KIP-219's muted channel).
    RespondThrottled(Vec<Chunk>, std::time::Duration),
}

/// Decodes and serves one frame of a connection's `session`.
pub async fn handle_frame(shard: &Rc<Shard>, frame: Bytes, session: &Session) -> Outcome {
    // The time the shard spends in the request, which its client's
    // `request_percentage` meters.
    let clock = BusyClock::default();
    Timed::new(&clock, serve_frame(shard, frame, session, &clock)).await
}

/// [`handle_frame`], with the clock of the time spent serving it.
///
/// Every answered request is charged to its client's
/// `request_percentage`, except those Kafka exempts: ApiVersions, SASL,
/// and a broker's (replica fetches, a follower's OffsetForLeaderEpoch,
/// WriteTxnMarkers). Its response carries the longest of its quota
/// throttles, and its connection is muted for that long.
async fn serve_frame(
    shard: &Rc<Shard>,
    frame: Bytes,
    session: &Session,
    clock: &BusyClock,
) -> Outcome {
    let mut r = Reader::new(frame);
    let prefix = match RequestHeader::decode_prefix(&mut r) {
        Ok(p) => p,
        Err(e) => return Outcome::Close(format!("unreadable request header: {e}")),
    };
    let (api_key, api_version, correlation_id) = prefix;
    let Some(key) = ApiKey::from_i16(api_key) else {
        return Outcome::Close(format!(
            "unknown API key {api_key} (correlation id {correlation_id})"
        ));
    };
    if !key.supports(api_version) {
        if key == ApiKey::ApiVersions {
            return respond(correlation_id, 0, 0, |w| {
                handlers::api_versions::unsupported_version_response().encode(w.buf(), 0)
            });
        }
        let s = key.support();
        return Outcome::Close(format!(
            "{} v{api_version} is not supported (supported: v{}-v{})",
            key.name(),
            s.min_version,
            s.max_version
        ));
    }
    let header =
        match RequestHeader::decode_rest(&mut r, prefix, key.request_header_version(api_version)) {
            Ok(h) => h,
            Err(e) => return malformed(key, api_version, e),
        };
    let v = api_version;
    let resp_header = key.response_header_version(v);
    // What the session's principal may do: the handlers ask it, by the
    // rules of `acl::matrix`.
    let broker = BrokerState::of(shard);
    let access = Access::new(broker.config.authorizer.as_ref(), session);
    macro_rules! serve {
        ($req:ty, $handler:path) => {{
            let req = match <$req>::decode(&mut r, v) {
                Ok(req) => req,
                Err(e) => return malformed(key, v, e),
            };
            let resp = $handler(shard, &header, req).await;
            respond(correlation_id, resp_header, v, |w| resp.encode(w.buf(), v))
        }};
        ($req:ty, $handler:path, access) => {{
            let req = match <$req>::decode(&mut r, v) {
                Ok(req) => req,
                Err(e) => return malformed(key, v, e),
            };
            let mut resp = $handler(shard, &header, req, &access).await;
            // The handler's own throttle (a mutation quota's) counts too.
            let throttle =
                request_throttle(shard, session, &header, clock).max(millis(resp.throttle_time_ms));
            resp.throttle_time_ms = throttle_time_ms(throttle);
            throttled(
                respond(correlation_id, resp_header, v, |w| resp.encode(w.buf(), v)),
                throttle,
            )
        }};
        // A response without a throttle_time_ms field: muted all the same.
        ($req:ty, $handler:path, access, no_throttle_field) => {{
            let req = match <$req>::decode(&mut r, v) {
                Ok(req) => req,
                Err(e) => return malformed(key, v, e),
            };
            let resp = $handler(shard, &header, req, &access).await;
            throttled(
                respond(correlation_id, resp_header, v, |w| resp.encode(w.buf(), v)),
                request_throttle(shard, session, &header, clock),
            )
        }};
        // A broker's request (Kafka's CLUSTER_ACTION APIs): not metered.
        ($req:ty, $handler:path, access, exempt) => {{
            let req = match <$req>::decode(&mut r, v) {
                Ok(req) => req,
                Err(e) => return malformed(key, v, e),
            };
            let resp = $handler(shard, &header, req, &access).await;
            respond(correlation_id, resp_header, v, |w| resp.encode(w.buf(), v))
        }};
    }
    // The APIs that name brokers answer with the endpoints of the listener
    // the request came in on.
    macro_rules! serve_on_listener {
        ($req:ty, $handler:path) => {{
            let req = match <$req>::decode(&mut r, v) {
                Ok(req) => req,
                Err(e) => return malformed(key, v, e),
            };
            let resp = $handler(shard, &header, req, &session.listener).await;
            respond(correlation_id, resp_header, v, |w| resp.encode(w.buf(), v))
        }};
        ($req:ty, $handler:path, access) => {{
            let req = match <$req>::decode(&mut r, v) {
                Ok(req) => req,
                Err(e) => return malformed(key, v, e),
            };
            let mut resp = $handler(shard, &header, req, &session.listener, &access).await;
            let throttle = request_throttle(shard, session, &header, clock);
            resp.throttle_time_ms = throttle_time_ms(throttle);
            throttled(
                respond(correlation_id, resp_header, v, |w| resp.encode(w.buf(), v)),
                throttle,
            )
        }};
    }
    match key {
        ApiKey::ApiVersions => serve!(
            api_versions::ApiVersionsRequest,
            handlers::api_versions::handle
        ),
        ApiKey::Metadata => {
            serve_on_listener!(
                metadata::MetadataRequest,
                handlers::metadata::handle,
                access
            )
        }
        ApiKey::Produce => {
            // A producer's quota meters the request's size, as Kafka's.
            let bytes = r.remaining() as u64;
            let req = match produce::ProduceRequest::decode(&mut r, v) {
                Ok(req) => req,
                Err(e) => return malformed(key, v, e),
            };
            let acks = req.acks;
            let mut resp = handlers::produce::handle(shard, &header, req, &access).await;
            let throttle = quota_throttle(shard, session, &header, PRODUCER_BYTE_RATE, bytes)
                .max(request_throttle(shard, session, &header, clock));
            if acks == 0 {
                return match throttle.is_zero() {
                    true => Outcome::NoResponse,
                    false => Outcome::RespondThrottled(Vec::new(), throttle),
                };
            }
            resp.throttle_time_ms = throttle_time_ms(throttle);
            throttled(
                respond(correlation_id, resp_header, v, |w| resp.encode(w.buf(), v)),
                throttle,
            )
        }
        ApiKey::Fetch => {
            let req = match fetch::FetchRequest::decode(&mut r, v) {
                Ok(req) => req,
                Err(e) => return malformed(key, v, e),
            };
            // Followers replicate under the replication throttle, not a
            // client's quota. A consumer already over its quota gets no
            // records (Kafka's throttled fetch response), so it reads
            // only while within it.
            let from_follower = req.replica_id >= 0;
            let pending = if from_follower {
                std::time::Duration::ZERO
            } else {
                pending_throttle(shard, session, &header, CONSUMER_BYTE_RATE)
            };
            let over_quota = !pending.is_zero();
            let mut resp = handlers::fetch::handle(shard, &header, req, &access, over_quota).await;
            let throttle = match (from_follower || over_quota, ShardQuotas::of(shard)) {
                (false, Some(quotas)) => quotas.record_fetched(
                    &crate::node::state::BrokerState::of(shard).image(),
                    &session.principal,
                    header.client_id.as_deref().unwrap_or(""),
                    CONSUMER_BYTE_RATE,
                    fetched_bytes(&resp),
                ),
                _ => pending,
            };
            let throttle = match from_follower {
                true => throttle,
                false => throttle.max(request_throttle(shard, session, &header, clock)),
            };
            resp.throttle_time_ms = throttle_time_ms(throttle);
            throttled(
                respond(correlation_id, resp_header, v, |w| {
                    resp.encode_chunked(w, v)
                }),
                throttle,
            )
        }
        ApiKey::ListOffsets => serve!(
            list_offsets::ListOffsetsRequest,
            handlers::list_offsets::handle,
            access
        ),
        ApiKey::OffsetForLeaderEpoch => {
            let req = match offset_for_leader_epoch::OffsetForLeaderEpochRequest::decode(&mut r, v)
            {
                Ok(req) => req,
                Err(e) => return malformed(key, v, e),
            };
            // A follower's truncation check is a broker's request.
            let from_follower = req.replica_id >= 0;
            let mut resp =
                handlers::offset_for_leader_epoch::handle(shard, &header, req, &access).await;
            let throttle = match from_follower {
                true => std::time::Duration::ZERO,
                false => request_throttle(shard, session, &header, clock),
            };
            resp.throttle_time_ms = throttle_time_ms(throttle);
            throttled(
                respond(correlation_id, resp_header, v, |w| resp.encode(w.buf(), v)),
                throttle,
            )
        }
        ApiKey::CreateTopics => serve!(
            create_topics::CreateTopicsRequest,
            handlers::create_topics::handle,
            access
        ),
        ApiKey::DeleteTopics => serve!(
            delete_topics::DeleteTopicsRequest,
            handlers::delete_topics::handle,
            access
        ),
        ApiKey::CreatePartitions => serve!(
            create_partitions::CreatePartitionsRequest,
            handlers::create_partitions::handle,
            access
        ),
        ApiKey::UnregisterBroker => serve!(
            unregister_broker::UnregisterBrokerRequest,
            handlers::unregister_broker::handle,
            access
        ),
        ApiKey::UpdateFeatures => serve!(
            update_features::UpdateFeaturesRequest,
            handlers::update_features::handle,
            access
        ),
        ApiKey::ElectLeaders => serve!(
            elect_leaders::ElectLeadersRequest,
            handlers::elect_leaders::handle,
            access
        ),
        ApiKey::AlterPartitionReassignments => serve!(
            alter_partition_reassignments::AlterPartitionReassignmentsRequest,
            handlers::alter_partition_reassignments::handle,
            access
        ),
        ApiKey::ListPartitionReassignments => serve!(
            list_partition_reassignments::ListPartitionReassignmentsRequest,
            handlers::list_partition_reassignments::handle,
            access
        ),
        ApiKey::InitProducerId => serve!(
            init_producer_id::InitProducerIdRequest,
            handlers::init_producer_id::handle,
            access
        ),
        ApiKey::DescribeConfigs => serve!(
            describe_configs::DescribeConfigsRequest,
            handlers::describe_configs::handle,
            access
        ),
        ApiKey::AlterConfigs => serve!(
            alter_configs::AlterConfigsRequest,
            handlers::alter_configs::handle,
            access
        ),
        ApiKey::IncrementalAlterConfigs => serve!(
            incremental_alter_configs::IncrementalAlterConfigsRequest,
            handlers::incremental_alter_configs::handle,
            access
        ),
        ApiKey::DescribeQuorum => serve!(
            describe_quorum::DescribeQuorumRequest,
            handlers::describe_quorum::handle,
            access,
            no_throttle_field
        ),
        ApiKey::DescribeCluster => serve_on_listener!(
            describe_cluster::DescribeClusterRequest,
            handlers::describe_cluster::handle,
            access
        ),
        ApiKey::DeleteRecords => serve!(
            delete_records::DeleteRecordsRequest,
            handlers::delete_records::handle,
            access
        ),
        ApiKey::DescribeLogDirs => serve!(
            describe_log_dirs::DescribeLogDirsRequest,
            handlers::describe_log_dirs::handle,
            access
        ),
        ApiKey::FindCoordinator => serve_on_listener!(
            find_coordinator::FindCoordinatorRequest,
            handlers::find_coordinator::handle,
            access
        ),
        ApiKey::JoinGroup => {
            let req = match join_group::JoinGroupRequest::decode(&mut r, v) {
                Ok(req) => req,
                Err(e) => return malformed(key, v, e),
            };
            let mut resp =
                handlers::join_group::handle(shard, &header, req, &session.peer_host, &access)
                    .await;
            let throttle = request_throttle(shard, session, &header, clock);
            resp.throttle_time_ms = throttle_time_ms(throttle);
            throttled(
                respond(correlation_id, resp_header, v, |w| resp.encode(w.buf(), v)),
                throttle,
            )
        }
        ApiKey::ConsumerGroupHeartbeat => {
            let req =
                match consumer_group_heartbeat::ConsumerGroupHeartbeatRequest::decode(&mut r, v) {
                    Ok(req) => req,
                    Err(e) => return malformed(key, v, e),
                };
            let mut resp = handlers::consumer_group_heartbeat::handle(
                shard,
                &header,
                req,
                &session.peer_host,
                &access,
            )
            .await;
            let throttle = request_throttle(shard, session, &header, clock);
            resp.throttle_time_ms = throttle_time_ms(throttle);
            throttled(
                respond(correlation_id, resp_header, v, |w| resp.encode(w.buf(), v)),
                throttle,
            )
        }
        ApiKey::ConsumerGroupDescribe => serve!(
            consumer_group_describe::ConsumerGroupDescribeRequest,
            handlers::consumer_group_describe::handle,
            access
        ),
        ApiKey::ShareGroupHeartbeat => {
            let req = match share_group_heartbeat::ShareGroupHeartbeatRequest::decode(&mut r, v) {
                Ok(req) => req,
                Err(e) => return malformed(key, v, e),
            };
            let mut resp = handlers::share_group_heartbeat::handle(
                shard,
                &header,
                req,
                &session.peer_host,
                &access,
            )
            .await;
            let throttle = request_throttle(shard, session, &header, clock);
            resp.throttle_time_ms = throttle_time_ms(throttle);
            throttled(
                respond(correlation_id, resp_header, v, |w| resp.encode(w.buf(), v)),
                throttle,
            )
        }
        ApiKey::ShareGroupDescribe => serve!(
            share_group_describe::ShareGroupDescribeRequest,
            handlers::share_group_describe::handle,
            access
        ),
        ApiKey::SyncGroup => serve!(
            sync_group::SyncGroupRequest,
            handlers::sync_group::handle,
            access
        ),
        ApiKey::Heartbeat => serve!(
            heartbeat::HeartbeatRequest,
            handlers::heartbeat::handle,
            access
        ),
        ApiKey::LeaveGroup => serve!(
            leave_group::LeaveGroupRequest,
            handlers::leave_group::handle,
            access
        ),
        ApiKey::OffsetCommit => serve!(
            offset_commit::OffsetCommitRequest,
            handlers::offset_commit::handle,
            access
        ),
        ApiKey::OffsetFetch => serve!(
            offset_fetch::OffsetFetchRequest,
            handlers::offset_fetch::handle,
            access
        ),
        ApiKey::DescribeGroups => serve!(
            describe_groups::DescribeGroupsRequest,
            handlers::describe_groups::handle,
            access
        ),
        ApiKey::ListGroups => serve!(
            list_groups::ListGroupsRequest,
            handlers::list_groups::handle,
            access
        ),
        ApiKey::ListConfigResources => serve!(
            list_config_resources::ListConfigResourcesRequest,
            handlers::list_config_resources::handle,
            access
        ),
        ApiKey::DeleteGroups => serve!(
            delete_groups::DeleteGroupsRequest,
            handlers::delete_groups::handle,
            access
        ),
        ApiKey::PartitionShards => serve!(
            partition_shards::PartitionShardsRequest,
            handlers::partition_shards::handle,
            access
        ),
        ApiKey::OffsetDelete => serve!(
            offset_delete::OffsetDeleteRequest,
            handlers::offset_delete::handle,
            access
        ),
        ApiKey::AddPartitionsToTxn => serve!(
            add_partitions_to_txn::AddPartitionsToTxnRequest,
            handlers::add_partitions_to_txn::handle,
            access
        ),
        ApiKey::AddOffsetsToTxn => serve!(
            add_offsets_to_txn::AddOffsetsToTxnRequest,
            handlers::add_offsets_to_txn::handle,
            access
        ),
        ApiKey::EndTxn => serve!(end_txn::EndTxnRequest, handlers::end_txn::handle, access),
        ApiKey::WriteTxnMarkers => serve!(
            write_txn_markers::WriteTxnMarkersRequest,
            handlers::write_txn_markers::handle,
            access,
            exempt
        ),
        ApiKey::TxnOffsetCommit => serve!(
            txn_offset_commit::TxnOffsetCommitRequest,
            handlers::txn_offset_commit::handle,
            access
        ),
        ApiKey::DescribeProducers => serve!(
            describe_producers::DescribeProducersRequest,
            handlers::describe_producers::handle,
            access
        ),
        ApiKey::DescribeTransactions => serve!(
            describe_transactions::DescribeTransactionsRequest,
            handlers::describe_transactions::handle,
            access
        ),
        ApiKey::ListTransactions => serve!(
            list_transactions::ListTransactionsRequest,
            handlers::list_transactions::handle,
            access
        ),
        // On a listener without SASL (the authenticator takes these on a
        // SASL listener), Kafka's answers.
        ApiKey::SaslHandshake => {
            let resp = sasl_handshake::SaslHandshakeResponse {
                error_code: crate::protocol::error_code::ILLEGAL_SASL_STATE,
                mechanisms: Vec::new(),
            };
            respond(correlation_id, resp_header, v, |w| resp.encode(w.buf(), v))
        }
        ApiKey::SaslAuthenticate => {
            let resp = sasl_authenticate::SaslAuthenticateResponse {
                error_code: crate::protocol::error_code::ILLEGAL_SASL_STATE,
                error_message: Some(format!(
                    "SaslAuthenticate on listener {}, which does not use SASL",
                    session.listener
                )),
                ..Default::default()
            };
            respond(correlation_id, resp_header, v, |w| resp.encode(w.buf(), v))
        }
        ApiKey::DescribeClientQuotas => serve!(
            describe_client_quotas::DescribeClientQuotasRequest,
            handlers::describe_client_quotas::handle,
            access
        ),
        ApiKey::AlterClientQuotas => serve!(
            alter_client_quotas::AlterClientQuotasRequest,
            handlers::alter_client_quotas::handle,
            access
        ),
        ApiKey::DescribeUserScramCredentials => serve!(
            describe_user_scram_credentials::DescribeUserScramCredentialsRequest,
            handlers::describe_user_scram_credentials::handle,
            access
        ),
        ApiKey::AlterUserScramCredentials => serve!(
            alter_user_scram_credentials::AlterUserScramCredentialsRequest,
            handlers::alter_user_scram_credentials::handle,
            access
        ),
        ApiKey::DescribeAcls => serve!(
            describe_acls::DescribeAclsRequest,
            handlers::describe_acls::handle,
            access
        ),
        ApiKey::CreateAcls => serve!(
            create_acls::CreateAclsRequest,
            handlers::create_acls::handle,
            access
        ),
        ApiKey::DeleteAcls => serve!(
            delete_acls::DeleteAclsRequest,
            handlers::delete_acls::handle,
            access
        ),
        // The share-group state APIs (KIP-932): a broker's requests, not
        // metered, as Kafka exempts them.
        ApiKey::InitializeShareGroupState => serve!(
            initialize_share_group_state::InitializeShareGroupStateRequest,
            handlers::initialize_share_group_state::handle,
            access,
            exempt
        ),
        ApiKey::ReadShareGroupState => serve!(
            read_share_group_state::ReadShareGroupStateRequest,
            handlers::read_share_group_state::handle,
            access,
            exempt
        ),
        ApiKey::WriteShareGroupState => serve!(
            write_share_group_state::WriteShareGroupStateRequest,
            handlers::write_share_group_state::handle,
            access,
            exempt
        ),
        ApiKey::DeleteShareGroupState => serve!(
            delete_share_group_state::DeleteShareGroupStateRequest,
            handlers::delete_share_group_state::handle,
            access,
            exempt
        ),
        ApiKey::ReadShareGroupStateSummary => serve!(
            read_share_group_state_summary::ReadShareGroupStateSummaryRequest,
            handlers::read_share_group_state_summary::handle,
            access,
            exempt
        ),
        // Codecs only (`CODEC_ONLY_APIS`): `ApiKey::from_i16` does not know
        // them, so their frames were refused above as unknown keys. Not
        // served until they move to `SUPPORTED_APIS`.
        ApiKey::ShareFetch => serve!(
            share_fetch::ShareFetchRequest,
            handlers::share_fetch::handle,
            access
        ),
        ApiKey::ShareAcknowledge => serve!(
            share_acknowledge::ShareAcknowledgeRequest,
            handlers::share_acknowledge::handle,
            access
        ),
        ApiKey::DescribeShareGroupOffsets => serve!(
            describe_share_group_offsets::DescribeShareGroupOffsetsRequest,
            handlers::describe_share_group_offsets::handle,
            access
        ),
        ApiKey::AlterShareGroupOffsets => serve!(
            alter_share_group_offsets::AlterShareGroupOffsetsRequest,
            handlers::alter_share_group_offsets::handle,
            access
        ),
        ApiKey::DeleteShareGroupOffsets => serve!(
            delete_share_group_offsets::DeleteShareGroupOffsetsRequest,
            handlers::delete_share_group_offsets::handle,
            access
        ),
        ApiKey::Envelope => Outcome::Close(format!(
            "unknown API key {api_key} (correlation id {correlation_id})"
        )),
    }
}

/// The throttle of a client's `key` quota after `bytes` more.
fn quota_throttle(
    shard: &Rc<Shard>,
    session: &Session,
    header: &crate::protocol::header::RequestHeader,
    key: &'static str,
    bytes: u64,
) -> std::time::Duration {
    let Some(quotas) = ShardQuotas::of(shard) else {
        return std::time::Duration::ZERO;
    };
    let image = crate::node::state::BrokerState::of(shard).image();
    quotas.record(
        &image,
        &session.principal,
        header.client_id.as_deref().unwrap_or(""),
        key,
        bytes,
    )
}

/// The `request_percentage` throttle of the request being served: the
/// time the shard has spent in it so far, charged to its client (KIP-124).
/// What comes after (encoding the response, writing it) is not metered.
fn request_throttle(
    shard: &Rc<Shard>,
    session: &Session,
    header: &crate::protocol::header::RequestHeader,
    clock: &BusyClock,
) -> std::time::Duration {
    quota_throttle(shard, session, header, REQUEST_PERCENTAGE, clock.busy_ns())
}

/// A throttle as a response's `throttle_time_ms`.
fn throttle_time_ms(throttle: std::time::Duration) -> i32 {
    throttle.as_millis().min(i32::MAX as u128) as i32
}

/// A response's `throttle_time_ms` as a throttle.
fn millis(throttle_time_ms: i32) -> std::time::Duration {
    std::time::Duration::from_millis(throttle_time_ms.max(0) as u64)
}

/// How long a client must still wait for its `key` quota.
fn pending_throttle(
    shard: &Rc<Shard>,
    session: &Session,
    header: &crate::protocol::header::RequestHeader,
    key: &'static str,
) -> std::time::Duration {
    let Some(quotas) = ShardQuotas::of(shard) else {
        return std::time::Duration::ZERO;
    };
    let image = crate::node::state::BrokerState::of(shard).image();
    quotas.pending_throttle(
        &image,
        &session.principal,
        header.client_id.as_deref().unwrap_or(""),
        key,
    )
}

/// The record bytes a fetch response carries: what a consumer quota
/// meters.
fn fetched_bytes(resp: &fetch::FetchResponse) -> u64 {
    resp.responses
        .iter()
        .flat_map(|t| &t.partitions)
        .filter_map(|p| p.records.as_ref())
        .map(|r| r.len() as u64)
        .sum()
}

/// A response to send, and the time to mute the connection after it.
fn throttled(outcome: Outcome, throttle: std::time::Duration) -> Outcome {
    match outcome {
        Outcome::Respond(chunks) if !throttle.is_zero() => {
            Outcome::RespondThrottled(chunks, throttle)
        }
        other => other,
    }
}

fn malformed(key: ApiKey, version: i16, e: DecodeError) -> Outcome {
    Outcome::Close(format!("malformed {} v{version} request: {e}", key.name()))
}

/// Frames a response: size, header, body.
fn respond(
    correlation_id: i32,
    header_version: i16,
    _version: i16,
    body: impl FnOnce(&mut ChunkWriter),
) -> Outcome {
    let mut w = ChunkWriter::new();
    // The size is patched in once the length is known.
    w.buf().put_i32(0);
    encode_response_header(w.buf(), correlation_id, header_version);
    body(&mut w);
    let total = w.len() - 4;
    let mut chunks = w.finish();
    if let Some(Chunk::Bytes(first)) = chunks.first_mut() {
        let mut b = BytesMut::from(&first[..]);
        b[..4].copy_from_slice(&(total as i32).to_be_bytes());
        *first = b.freeze();
    }
    Outcome::Respond(chunks)
}
