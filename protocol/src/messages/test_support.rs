//! Test plumbing shared by every message's tests: encode to bytes, round
//! trips, truncations, and decoding garbage without panicking.

use std::fmt::Debug;

use bytes::{Bytes, BytesMut};

use crate::codec::{DecodeError, DecodeResult, Reader};

use super::*;

/// A request or response with the usual `decode`/`encode` pair.
pub(crate) trait Message: Sized + PartialEq + Debug {
    fn decode_at(r: &mut Reader, version: i16) -> DecodeResult<Self>;
    fn encode_at(&self, w: &mut BytesMut, version: i16);
}

macro_rules! messages {
    ($($ty:path),* $(,)?) => {
        $(impl Message for $ty {
            fn decode_at(r: &mut Reader, version: i16) -> DecodeResult<Self> {
                <$ty>::decode(r, version)
            }
            fn encode_at(&self, w: &mut BytesMut, version: i16) {
                self.encode(w, version)
            }
        })*
    };
}

messages!(
    partition_shards::PartitionShardsRequest,
    partition_shards::PartitionShardsResponse,
    alter_configs::AlterConfigsRequest,
    alter_configs::AlterConfigsResponse,
    alter_partition::AlterPartitionRequest,
    alter_partition::AlterPartitionResponse,
    alter_partition_reassignments::AlterPartitionReassignmentsRequest,
    alter_partition_reassignments::AlterPartitionReassignmentsResponse,
    list_partition_reassignments::ListPartitionReassignmentsRequest,
    list_partition_reassignments::ListPartitionReassignmentsResponse,
    api_versions::ApiVersionsRequest,
    api_versions::ApiVersionsResponse,
    broker_registration::BrokerHeartbeatRequest,
    broker_registration::BrokerHeartbeatResponse,
    broker_registration::BrokerRegistrationRequest,
    broker_registration::BrokerRegistrationResponse,
    create_partitions::CreatePartitionsRequest,
    create_partitions::CreatePartitionsResponse,
    elect_leaders::ElectLeadersRequest,
    elect_leaders::ElectLeadersResponse,
    unregister_broker::UnregisterBrokerRequest,
    unregister_broker::UnregisterBrokerResponse,
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
    delete_groups::DeleteGroupsRequest,
    delete_groups::DeleteGroupsResponse,
    delete_records::DeleteRecordsRequest,
    delete_records::DeleteRecordsResponse,
    describe_groups::DescribeGroupsRequest,
    describe_groups::DescribeGroupsResponse,
    describe_log_dirs::DescribeLogDirsRequest,
    describe_log_dirs::DescribeLogDirsResponse,
    list_config_resources::ListConfigResourcesRequest,
    list_config_resources::ListConfigResourcesResponse,
    list_groups::ListGroupsRequest,
    list_groups::ListGroupsResponse,
    offset_delete::OffsetDeleteRequest,
    offset_delete::OffsetDeleteResponse,
    offset_fetch::OffsetFetchRequest,
    offset_fetch::OffsetFetchResponse,
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
    update_features::UpdateFeaturesRequest,
    update_features::UpdateFeaturesResponse,
    sasl_handshake::SaslHandshakeRequest,
    sasl_handshake::SaslHandshakeResponse,
    sasl_authenticate::SaslAuthenticateRequest,
    sasl_authenticate::SaslAuthenticateResponse,
    describe_acls::DescribeAclsRequest,
    describe_acls::DescribeAclsResponse,
    create_acls::CreateAclsRequest,
    create_acls::CreateAclsResponse,
    delete_acls::DeleteAclsRequest,
    delete_acls::DeleteAclsResponse,
    describe_client_quotas::DescribeClientQuotasRequest,
    describe_client_quotas::DescribeClientQuotasResponse,
    alter_client_quotas::AlterClientQuotasRequest,
    alter_client_quotas::AlterClientQuotasResponse,
    describe_user_scram_credentials::DescribeUserScramCredentialsRequest,
    describe_user_scram_credentials::DescribeUserScramCredentialsResponse,
    alter_user_scram_credentials::AlterUserScramCredentialsRequest,
    alter_user_scram_credentials::AlterUserScramCredentialsResponse,
    envelope::EnvelopeRequest,
    envelope::EnvelopeResponse,
    default_principal_data::DefaultPrincipalData,
    consumer_group_heartbeat::ConsumerGroupHeartbeatRequest,
    consumer_group_heartbeat::ConsumerGroupHeartbeatResponse,
    consumer_group_describe::ConsumerGroupDescribeRequest,
    consumer_group_describe::ConsumerGroupDescribeResponse,
    share_group_heartbeat::ShareGroupHeartbeatRequest,
    share_group_heartbeat::ShareGroupHeartbeatResponse,
    share_group_describe::ShareGroupDescribeRequest,
    share_group_describe::ShareGroupDescribeResponse,
    share_fetch::ShareFetchRequest,
    share_fetch::ShareFetchResponse,
    share_acknowledge::ShareAcknowledgeRequest,
    share_acknowledge::ShareAcknowledgeResponse,
    initialize_share_group_state::InitializeShareGroupStateRequest,
    initialize_share_group_state::InitializeShareGroupStateResponse,
    read_share_group_state::ReadShareGroupStateRequest,
    read_share_group_state::ReadShareGroupStateResponse,
    write_share_group_state::WriteShareGroupStateRequest,
    write_share_group_state::WriteShareGroupStateResponse,
    delete_share_group_state::DeleteShareGroupStateRequest,
    delete_share_group_state::DeleteShareGroupStateResponse,
    read_share_group_state_summary::ReadShareGroupStateSummaryRequest,
    read_share_group_state_summary::ReadShareGroupStateSummaryResponse,
    describe_share_group_offsets::DescribeShareGroupOffsetsRequest,
    describe_share_group_offsets::DescribeShareGroupOffsetsResponse,
    alter_share_group_offsets::AlterShareGroupOffsetsRequest,
    alter_share_group_offsets::AlterShareGroupOffsetsResponse,
    delete_share_group_offsets::DeleteShareGroupOffsetsRequest,
    delete_share_group_offsets::DeleteShareGroupOffsetsResponse,
);

/// `m` encoded at `version`.
/// A topic as a message of `version` names it: by `name` below
/// `topic_id_from`, by the id `[id; 16]` from it.
pub(crate) fn name_or_id(
    version: i16,
    topic_id_from: i16,
    name: &str,
    id: u8,
) -> (String, [u8; 16]) {
    if version >= topic_id_from {
        (String::new(), [id; 16])
    } else {
        (name.into(), [0; 16])
    }
}

pub(crate) fn encode<M: Message>(m: &M, version: i16) -> Bytes {
    let mut b = BytesMut::new();
    m.encode_at(&mut b, version);
    b.freeze()
}

/// `m` encodes and decodes back to itself at `version`, consuming every byte.
pub(crate) fn assert_round_trip<M: Message>(m: &M, version: i16) {
    let v = version;
    let mut r = Reader::new(encode(m, v));
    assert_eq!(&M::decode_at(&mut r, v).unwrap(), m, "v{v}");
    assert!(r.is_empty(), "v{v} left {} bytes unread", r.remaining());
}

/// Every strict prefix of `m`'s encoding at `version` fails to decode.
pub(crate) fn assert_every_strict_prefix_fails<M: Message>(m: &M, version: i16) {
    let v = version;
    let full = encode(m, v);
    for n in 0..full.len() {
        assert!(
            M::decode_at(&mut Reader::new(full.slice(..n)), v).is_err(),
            "{} v{v} prefix {n}",
            std::any::type_name::<M>()
        );
    }
}

/// Decodes `data` as both `Req` and `Resp`, ignoring the outcome: only a
/// panic fails.
pub(crate) fn decode_ignoring_errors<Req: Message, Resp: Message>(data: &Bytes, version: i16) {
    let _ = Req::decode_at(&mut Reader::new(data.clone()), version);
    let _ = Resp::decode_at(&mut Reader::new(data.clone()), version);
}

/// `good` with each `(at, byte)` edit applied, at `at` modulo its length.
/// An empty message (a v0 ListGroups request, say) has nothing to corrupt.
pub(crate) fn corrupt(good: &Bytes, edits: &[(usize, u8)]) -> Bytes {
    let mut bad = good.to_vec();
    if bad.is_empty() {
        return good.clone();
    }
    for (at, byte) in edits {
        let i = at % bad.len();
        bad[i] = *byte;
    }
    Bytes::from(bad)
}

/// `frame` is refused as `M` because a count claims more than it holds.
pub(crate) fn assert_count_too_large<M: Message>(frame: Bytes, version: i16) {
    assert!(matches!(
        M::decode_at(&mut Reader::new(frame), version),
        Err(DecodeError::CountTooLarge { .. })
    ));
}

/// The conformance tests every message pair carries, given its version
/// range and builders of a request and a response with a non-default value
/// in every field a version has: round trips, every strict prefix refused,
/// random and corrupted bytes decoded without a panic. Use it inside the
/// message file's `mod tests` (with `use super::*`):
///
/// `conformance_tests!(Request, Response, 0..=2, request, response);`
///
/// A builder that takes no version is passed as a closure: `|_| request()`.
macro_rules! conformance_tests {
    ($req:ty, $resp:ty, $versions:expr, $request:expr, $response:expr) => {
        #[test]
        fn requests_round_trip_at_every_version() {
            for v in $versions {
                $crate::messages::test_support::assert_round_trip(&($request)(v), v);
            }
        }

        #[test]
        fn responses_round_trip_at_every_version() {
            for v in $versions {
                $crate::messages::test_support::assert_round_trip(&($response)(v), v);
            }
        }

        #[test]
        fn every_strict_prefix_fails_to_decode() {
            use $crate::messages::test_support::assert_every_strict_prefix_fails;
            for v in $versions {
                assert_every_strict_prefix_fails(&($request)(v), v);
                assert_every_strict_prefix_fails(&($response)(v), v);
            }
        }

        proptest::proptest! {
            #[test]
            fn decoding_random_bytes_never_panics(
                bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256),
            ) {
                let bytes = bytes::Bytes::from(bytes);
                for v in $versions {
                    $crate::messages::test_support::decode_ignoring_errors::<$req, $resp>(
                        &bytes, v,
                    );
                }
            }

            #[test]
            fn decoding_corrupted_messages_never_panics(
                edits in proptest::collection::vec(
                    (proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>()),
                    1..8,
                ),
            ) {
                use $crate::messages::test_support::{corrupt, decode_ignoring_errors, encode};
                for v in $versions {
                    for good in [encode(&($request)(v), v), encode(&($response)(v), v)] {
                        decode_ignoring_errors::<$req, $resp>(&corrupt(&good, &edits), v);
                    }
                }
            }
        }
    };
}
pub(crate) use conformance_tests;
