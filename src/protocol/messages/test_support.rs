//! Test plumbing shared by every message's tests: encode to bytes, round
//! trips, truncations, and decoding garbage without panicking.

use std::fmt::Debug;

use bytes::{Bytes, BytesMut};

use crate::protocol::codec::{DecodeError, DecodeResult, Reader};

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
    alter_configs::AlterConfigsRequest,
    alter_configs::AlterConfigsResponse,
    api_versions::ApiVersionsRequest,
    api_versions::ApiVersionsResponse,
    broker_registration::BrokerHeartbeatRequest,
    broker_registration::BrokerHeartbeatResponse,
    broker_registration::BrokerRegistrationRequest,
    broker_registration::BrokerRegistrationResponse,
    create_partitions::CreatePartitionsRequest,
    create_partitions::CreatePartitionsResponse,
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
    list_groups::ListGroupsRequest,
    list_groups::ListGroupsResponse,
    offset_delete::OffsetDeleteRequest,
    offset_delete::OffsetDeleteResponse,
    offset_fetch::OffsetFetchRequest,
    offset_fetch::OffsetFetchResponse,
);

/// `m` encoded at `version`.
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
pub(crate) fn corrupt(good: &Bytes, edits: &[(usize, u8)]) -> Bytes {
    let mut bad = good.to_vec();
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
