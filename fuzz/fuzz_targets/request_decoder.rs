//! Fuzzes the request decoding that `src/server/network/dispatch.rs` does on every
//! frame, without a shard: `handle_frame` needs a running shard to serve the
//! request, so this target repeats its decoding steps (header prefix, header
//! rest, the API's `decode`) against the same codec.
//!
//! Input layout: byte 0 picks a row of `SUPPORTED_APIS`, byte 1 a version in
//! that row's range, so every input reaches a decoder the broker really runs
//! instead of being spent on unknown keys (those are refused before any
//! decoding). The remaining bytes are the frame after the api key and
//! version: correlation id, client id, tagged fields (header v2), body.
//!
//! Properties checked, beyond "no panic":
//! - a message that decodes re-encodes to bytes that decode to the same
//!   message, consuming them exactly (the broker's encoders and its decoders
//!   agree, as clients assume);
//! - the same bytes are also fed straight to the request and response
//!   decoders, so the body decoders are reached even when the header bytes do
//!   not decode. Responses are decoded by pinlog's own load generator and
//!   tests, and share the codec.

#![no_main]

use std::fmt::Debug;

use bytes::{BufMut, Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use pinlog::protocol::api::{ApiKey, SUPPORTED_APIS};
use pinlog::protocol::codec::{DecodeResult, Reader};
use pinlog::protocol::header::RequestHeader;
use pinlog::protocol::messages::*;

/// The `decode`/`encode` pair every message type has, as a trait so that one
/// generic check serves them all.
trait Message: Sized + PartialEq + Debug {
    fn decode_at(r: &mut Reader, version: i16) -> DecodeResult<Self>;
    fn encode_at(&self, w: &mut BytesMut, version: i16);
}

macro_rules! messages {
    ($($t:ty),* $(,)?) => {$(
        impl Message for $t {
            fn decode_at(r: &mut Reader, version: i16) -> DecodeResult<Self> {
                <$t>::decode(r, version)
            }
            fn encode_at(&self, w: &mut BytesMut, version: i16) {
                self.encode(w, version)
            }
        }
    )*};
}

messages!(
    alter_configs::AlterConfigsRequest,
    alter_configs::AlterConfigsResponse,
    api_versions::ApiVersionsRequest,
    api_versions::ApiVersionsResponse,
    create_partitions::CreatePartitionsRequest,
    create_partitions::CreatePartitionsResponse,
    elect_leaders::ElectLeadersRequest,
    elect_leaders::ElectLeadersResponse,
    alter_partition_reassignments::AlterPartitionReassignmentsRequest,
    alter_partition_reassignments::AlterPartitionReassignmentsResponse,
    list_partition_reassignments::ListPartitionReassignmentsRequest,
    list_partition_reassignments::ListPartitionReassignmentsResponse,
    unregister_broker::UnregisterBrokerRequest,
    unregister_broker::UnregisterBrokerResponse,
    update_features::UpdateFeaturesRequest,
    update_features::UpdateFeaturesResponse,
    create_topics::CreateTopicsRequest,
    create_topics::CreateTopicsResponse,
    delete_topics::DeleteTopicsRequest,
    delete_topics::DeleteTopicsResponse,
    describe_cluster::DescribeClusterRequest,
    describe_cluster::DescribeClusterResponse,
    describe_quorum::DescribeQuorumRequest,
    describe_quorum::DescribeQuorumResponse,
    describe_configs::DescribeConfigsRequest,
    describe_configs::DescribeConfigsResponse,
    fetch::FetchRequest,
    fetch::FetchResponse,
    find_coordinator::FindCoordinatorRequest,
    find_coordinator::FindCoordinatorResponse,
    heartbeat::HeartbeatRequest,
    heartbeat::HeartbeatResponse,
    incremental_alter_configs::IncrementalAlterConfigsRequest,
    incremental_alter_configs::IncrementalAlterConfigsResponse,
    init_producer_id::InitProducerIdRequest,
    init_producer_id::InitProducerIdResponse,
    join_group::JoinGroupRequest,
    join_group::JoinGroupResponse,
    leave_group::LeaveGroupRequest,
    leave_group::LeaveGroupResponse,
    list_offsets::ListOffsetsRequest,
    list_offsets::ListOffsetsResponse,
    metadata::MetadataRequest,
    metadata::MetadataResponse,
    offset_commit::OffsetCommitRequest,
    offset_commit::OffsetCommitResponse,
    offset_for_leader_epoch::OffsetForLeaderEpochRequest,
    offset_for_leader_epoch::OffsetForLeaderEpochResponse,
    produce::ProduceRequest,
    produce::ProduceResponse,
    sync_group::SyncGroupRequest,
    sync_group::SyncGroupResponse,
    offset_fetch::OffsetFetchRequest,
    offset_fetch::OffsetFetchResponse,
    describe_groups::DescribeGroupsRequest,
    describe_groups::DescribeGroupsResponse,
    list_groups::ListGroupsRequest,
    list_groups::ListGroupsResponse,
    delete_groups::DeleteGroupsRequest,
    delete_groups::DeleteGroupsResponse,
    offset_delete::OffsetDeleteRequest,
    offset_delete::OffsetDeleteResponse,
    delete_records::DeleteRecordsRequest,
    delete_records::DeleteRecordsResponse,
    describe_log_dirs::DescribeLogDirsRequest,
    describe_log_dirs::DescribeLogDirsResponse,
    list_config_resources::ListConfigResourcesRequest,
    list_config_resources::ListConfigResourcesResponse,
    partition_shards::PartitionShardsRequest,
    partition_shards::PartitionShardsResponse,
    add_partitions_to_txn::AddPartitionsToTxnRequest,
    add_partitions_to_txn::AddPartitionsToTxnResponse,
    add_offsets_to_txn::AddOffsetsToTxnRequest,
    add_offsets_to_txn::AddOffsetsToTxnResponse,
    end_txn::EndTxnRequest,
    end_txn::EndTxnResponse,
    write_txn_markers::WriteTxnMarkersRequest,
    write_txn_markers::WriteTxnMarkersResponse,
    txn_offset_commit::TxnOffsetCommitRequest,
    txn_offset_commit::TxnOffsetCommitResponse,
    describe_producers::DescribeProducersRequest,
    describe_producers::DescribeProducersResponse,
    describe_transactions::DescribeTransactionsRequest,
    describe_transactions::DescribeTransactionsResponse,
    list_transactions::ListTransactionsRequest,
    list_transactions::ListTransactionsResponse,
    sasl_handshake::SaslHandshakeRequest,
    sasl_handshake::SaslHandshakeResponse,
    describe_acls::DescribeAclsRequest,
    describe_acls::DescribeAclsResponse,
    create_acls::CreateAclsRequest,
    create_acls::CreateAclsResponse,
    delete_acls::DeleteAclsRequest,
    delete_acls::DeleteAclsResponse,
    sasl_authenticate::SaslAuthenticateRequest,
    sasl_authenticate::SaslAuthenticateResponse,
    describe_client_quotas::DescribeClientQuotasRequest,
    describe_client_quotas::DescribeClientQuotasResponse,
    alter_client_quotas::AlterClientQuotasRequest,
    alter_client_quotas::AlterClientQuotasResponse,
    describe_user_scram_credentials::DescribeUserScramCredentialsRequest,
    describe_user_scram_credentials::DescribeUserScramCredentialsResponse,
    alter_user_scram_credentials::AlterUserScramCredentialsRequest,
    alter_user_scram_credentials::AlterUserScramCredentialsResponse,
    consumer_group_heartbeat::ConsumerGroupHeartbeatRequest,
    consumer_group_heartbeat::ConsumerGroupHeartbeatResponse,
    consumer_group_describe::ConsumerGroupDescribeRequest,
    consumer_group_describe::ConsumerGroupDescribeResponse,
    envelope::EnvelopeRequest,
    envelope::EnvelopeResponse,
);

/// Decodes `M` from `reader`; when that succeeds, checks that re-encoding
/// round-trips.
fn check<M: Message>(mut reader: Reader, version: i16) {
    let Ok(message) = M::decode_at(&mut reader, version) else {
        return;
    };
    let mut w = BytesMut::new();
    message.encode_at(&mut w, version);
    let mut again = Reader::new(w.freeze());
    let back = M::decode_at(&mut again, version)
        .unwrap_or_else(|e| panic!("v{version}: re-encoded {message:?} does not decode: {e}"));
    assert_eq!(back, message, "v{version}: round trip changed the message");
    assert!(
        again.is_empty(),
        "v{version}: {} bytes left after decoding a re-encoded message",
        again.remaining()
    );
}

/// The request type the broker decodes for `key`, and its response type.
fn check_api(key: ApiKey, version: i16, request: Reader, also_response: bool) {
    macro_rules! pair {
        ($req:ty, $resp:ty) => {{
            if also_response {
                check::<$resp>(request.clone(), version);
            }
            check::<$req>(request, version);
        }};
    }
    match key {
        ApiKey::Produce => pair!(produce::ProduceRequest, produce::ProduceResponse),
        ApiKey::Fetch => pair!(fetch::FetchRequest, fetch::FetchResponse),
        ApiKey::ListOffsets => pair!(
            list_offsets::ListOffsetsRequest,
            list_offsets::ListOffsetsResponse
        ),
        ApiKey::Metadata => pair!(metadata::MetadataRequest, metadata::MetadataResponse),
        ApiKey::OffsetCommit => pair!(
            offset_commit::OffsetCommitRequest,
            offset_commit::OffsetCommitResponse
        ),
        ApiKey::FindCoordinator => pair!(
            find_coordinator::FindCoordinatorRequest,
            find_coordinator::FindCoordinatorResponse
        ),
        ApiKey::JoinGroup => pair!(join_group::JoinGroupRequest, join_group::JoinGroupResponse),
        ApiKey::Heartbeat => pair!(heartbeat::HeartbeatRequest, heartbeat::HeartbeatResponse),
        ApiKey::LeaveGroup => pair!(
            leave_group::LeaveGroupRequest,
            leave_group::LeaveGroupResponse
        ),
        ApiKey::SyncGroup => pair!(sync_group::SyncGroupRequest, sync_group::SyncGroupResponse),
        ApiKey::OffsetForLeaderEpoch => pair!(
            offset_for_leader_epoch::OffsetForLeaderEpochRequest,
            offset_for_leader_epoch::OffsetForLeaderEpochResponse
        ),
        ApiKey::ApiVersions => pair!(
            api_versions::ApiVersionsRequest,
            api_versions::ApiVersionsResponse
        ),
        ApiKey::CreateTopics => pair!(
            create_topics::CreateTopicsRequest,
            create_topics::CreateTopicsResponse
        ),
        ApiKey::DeleteTopics => pair!(
            delete_topics::DeleteTopicsRequest,
            delete_topics::DeleteTopicsResponse
        ),
        ApiKey::InitProducerId => pair!(
            init_producer_id::InitProducerIdRequest,
            init_producer_id::InitProducerIdResponse
        ),
        ApiKey::DescribeConfigs => pair!(
            describe_configs::DescribeConfigsRequest,
            describe_configs::DescribeConfigsResponse
        ),
        ApiKey::AlterConfigs => pair!(
            alter_configs::AlterConfigsRequest,
            alter_configs::AlterConfigsResponse
        ),
        ApiKey::CreatePartitions => pair!(
            create_partitions::CreatePartitionsRequest,
            create_partitions::CreatePartitionsResponse
        ),
        ApiKey::UnregisterBroker => pair!(
            unregister_broker::UnregisterBrokerRequest,
            unregister_broker::UnregisterBrokerResponse
        ),
        ApiKey::UpdateFeatures => pair!(
            update_features::UpdateFeaturesRequest,
            update_features::UpdateFeaturesResponse
        ),
        ApiKey::ElectLeaders => pair!(
            elect_leaders::ElectLeadersRequest,
            elect_leaders::ElectLeadersResponse
        ),
        ApiKey::AlterPartitionReassignments => pair!(
            alter_partition_reassignments::AlterPartitionReassignmentsRequest,
            alter_partition_reassignments::AlterPartitionReassignmentsResponse
        ),
        ApiKey::ListPartitionReassignments => pair!(
            list_partition_reassignments::ListPartitionReassignmentsRequest,
            list_partition_reassignments::ListPartitionReassignmentsResponse
        ),
        ApiKey::IncrementalAlterConfigs => pair!(
            incremental_alter_configs::IncrementalAlterConfigsRequest,
            incremental_alter_configs::IncrementalAlterConfigsResponse
        ),
        ApiKey::DescribeCluster => pair!(
            describe_cluster::DescribeClusterRequest,
            describe_cluster::DescribeClusterResponse
        ),
        ApiKey::DescribeQuorum => pair!(
            describe_quorum::DescribeQuorumRequest,
            describe_quorum::DescribeQuorumResponse
        ),
        ApiKey::OffsetFetch => pair!(
            offset_fetch::OffsetFetchRequest,
            offset_fetch::OffsetFetchResponse
        ),
        ApiKey::DescribeGroups => pair!(
            describe_groups::DescribeGroupsRequest,
            describe_groups::DescribeGroupsResponse
        ),
        ApiKey::ListGroups => pair!(
            list_groups::ListGroupsRequest,
            list_groups::ListGroupsResponse
        ),
        ApiKey::DeleteGroups => pair!(
            delete_groups::DeleteGroupsRequest,
            delete_groups::DeleteGroupsResponse
        ),
        ApiKey::OffsetDelete => pair!(
            offset_delete::OffsetDeleteRequest,
            offset_delete::OffsetDeleteResponse
        ),
        ApiKey::DeleteRecords => pair!(
            delete_records::DeleteRecordsRequest,
            delete_records::DeleteRecordsResponse
        ),
        ApiKey::DescribeLogDirs => pair!(
            describe_log_dirs::DescribeLogDirsRequest,
            describe_log_dirs::DescribeLogDirsResponse
        ),
        ApiKey::ListConfigResources => pair!(list_config_resources::ListConfigResourcesRequest, list_config_resources::ListConfigResourcesResponse),
        ApiKey::PartitionShards => pair!(partition_shards::PartitionShardsRequest, partition_shards::PartitionShardsResponse),
        ApiKey::AddPartitionsToTxn => pair!(add_partitions_to_txn::AddPartitionsToTxnRequest, add_partitions_to_txn::AddPartitionsToTxnResponse),
        ApiKey::AddOffsetsToTxn => pair!(add_offsets_to_txn::AddOffsetsToTxnRequest, add_offsets_to_txn::AddOffsetsToTxnResponse),
        ApiKey::EndTxn => pair!(end_txn::EndTxnRequest, end_txn::EndTxnResponse),
        ApiKey::WriteTxnMarkers => pair!(write_txn_markers::WriteTxnMarkersRequest, write_txn_markers::WriteTxnMarkersResponse),
        ApiKey::TxnOffsetCommit => pair!(txn_offset_commit::TxnOffsetCommitRequest, txn_offset_commit::TxnOffsetCommitResponse),
        ApiKey::DescribeProducers => pair!(describe_producers::DescribeProducersRequest, describe_producers::DescribeProducersResponse),
        ApiKey::DescribeTransactions => pair!(describe_transactions::DescribeTransactionsRequest, describe_transactions::DescribeTransactionsResponse),
        ApiKey::ListTransactions => pair!(list_transactions::ListTransactionsRequest, list_transactions::ListTransactionsResponse),
        ApiKey::ConsumerGroupHeartbeat => pair!(consumer_group_heartbeat::ConsumerGroupHeartbeatRequest, consumer_group_heartbeat::ConsumerGroupHeartbeatResponse),
        ApiKey::ConsumerGroupDescribe => pair!(consumer_group_describe::ConsumerGroupDescribeRequest, consumer_group_describe::ConsumerGroupDescribeResponse),
        // Codecs only (`CODEC_ONLY_APIS`): the input picks rows of
        // `SUPPORTED_APIS`, so these are reached once the broker serves them.
        ApiKey::SaslHandshake => pair!(sasl_handshake::SaslHandshakeRequest, sasl_handshake::SaslHandshakeResponse),
        ApiKey::DescribeAcls => pair!(describe_acls::DescribeAclsRequest, describe_acls::DescribeAclsResponse),
        ApiKey::CreateAcls => pair!(create_acls::CreateAclsRequest, create_acls::CreateAclsResponse),
        ApiKey::DeleteAcls => pair!(delete_acls::DeleteAclsRequest, delete_acls::DeleteAclsResponse),
        ApiKey::SaslAuthenticate => pair!(sasl_authenticate::SaslAuthenticateRequest, sasl_authenticate::SaslAuthenticateResponse),
        ApiKey::DescribeClientQuotas => pair!(describe_client_quotas::DescribeClientQuotasRequest, describe_client_quotas::DescribeClientQuotasResponse),
        ApiKey::AlterClientQuotas => pair!(alter_client_quotas::AlterClientQuotasRequest, alter_client_quotas::AlterClientQuotasResponse),
        ApiKey::DescribeUserScramCredentials => pair!(describe_user_scram_credentials::DescribeUserScramCredentialsRequest, describe_user_scram_credentials::DescribeUserScramCredentialsResponse),
        ApiKey::AlterUserScramCredentials => pair!(alter_user_scram_credentials::AlterUserScramCredentialsRequest, alter_user_scram_credentials::AlterUserScramCredentialsResponse),
        ApiKey::Envelope => pair!(envelope::EnvelopeRequest, envelope::EnvelopeResponse),
    }
}

fuzz_target!(|data: &[u8]| {
    let [api_pick, version_pick, rest @ ..] = data else {
        return;
    };
    let api = &SUPPORTED_APIS[*api_pick as usize % SUPPORTED_APIS.len()];
    let span = (api.max_version - api.min_version + 1) as u8;
    let version = api.min_version + (version_pick % span) as i16;
    let key = api.key;

    // The frame as `handle_frame` receives it.
    let mut frame = BytesMut::with_capacity(4 + rest.len());
    frame.put_i16(key as i16);
    frame.put_i16(version);
    frame.put_slice(rest);
    let mut r = Reader::new(frame.freeze());
    if let Ok(prefix) = RequestHeader::decode_prefix(&mut r) {
        assert_eq!((prefix.0, prefix.1), (key as i16, version));
        assert_eq!(ApiKey::from_i16(prefix.0), Some(key));
        assert!(key.supports(prefix.1));
        if let Ok(header) =
            RequestHeader::decode_rest(&mut r, prefix, key.request_header_version(version))
        {
            assert_eq!(header.correlation_id, prefix.2);
            check_api(key, version, r, false);
        }
    }

    // The same bytes as a bare body, request and response.
    check_api(
        key,
        version,
        Reader::new(Bytes::copy_from_slice(rest)),
        true,
    );
});
