//! The requests of the authorization matrix (`matrix.rs`), one function
//! each: it sends the request as the connection's principal, naming the
//! resources of [`Names`], and returns the error code the response answers
//! for them (a request-level error before the per-resource ones). Requests
//! that would change what later rows rely on are sent validate-only, or
//! name a topic, a member or a producer that does not exist.

use bytes::Bytes;
use pinlog::acl::{AclOperation, AclPermissionType, PatternType, ResourceType};
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code::*;
use pinlog::protocol::messages::*;

use super::matrix::Names;
use crate::support::kafka_conn::Conn;

/// Kafka's `<default>` broker resource: the cluster-wide dynamic configs.
pub const CLUSTER_WIDE_BROKER: &str = "";
/// A topic no case creates: where a case would change a partition it
/// must not (a marker, a move between cores), it names this one.
const NO_SUCH_TOPIC: &str = "no-such-topic";
/// A group member and a producer no coordinator knows: the requests that
/// name them are refused for that once they are authorized. (Producer ids
/// are allocated from 0, so a low one may be the matrix's own producer.)
const UNKNOWN_MEMBER: &str = "no-such-member";
const UNKNOWN_PRODUCER_ID: i64 = 1 << 40;
const UNKNOWN_PRODUCER_EPOCH: i16 = 0;
/// A principal and a user the cases' ACL and credential requests name,
/// which nothing else uses.
const BYSTANDER: &str = "nobody";
/// The timeout the admin requests carry.
const TIMEOUT_MS: i32 = 30_000;
/// Kafka's ConfigResource types of a topic and a broker.
pub const TOPIC_CONFIGS: i8 = pinlog::protocol::config_resource::TOPIC;
pub const BROKER_CONFIGS: i8 = pinlog::protocol::config_resource::BROKER;
/// A JoinGroup's session and rebalance timeouts (it is answered at once).
const SESSION_TIMEOUT_MS: i32 = 10_000;

/// One request of `$req` at version `$v`, decoded as `$resp`.
macro_rules! call {
    ($conn:expr, $api:ident, $v:expr, $req:expr, $resp:ty) => {{
        let req = $req;
        let mut r = $conn.call(ApiKey::$api, $v, |w| req.encode(w, $v));
        <$resp>::decode(&mut r, $v).expect(concat!("decode ", stringify!($api)))
    }};
}

/// The first error among `codes`, else NONE: a response's request-level
/// error before its per-resource ones.
pub fn first_error(codes: impl IntoIterator<Item = i16>) -> i16 {
    codes.into_iter().find(|c| *c != NONE).unwrap_or(NONE)
}

pub fn metadata(c: &mut Conn, n: &Names) -> i16 {
    let req = metadata::MetadataRequest {
        topics: Some(vec![metadata::MetadataRequestTopic {
            topic_id: [0; 16],
            name: Some(n.topic.into()),
        }]),
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    call!(c, Metadata, 12, req, metadata::MetadataResponse).topics[0].error_code
}

pub fn list_offsets(c: &mut Conn, n: &Names) -> i16 {
    let req = list_offsets::ListOffsetsRequest {
        replica_id: -1,
        isolation_level: 0,
        topics: vec![list_offsets::ListOffsetsTopic {
            name: n.topic.into(),
            partitions: vec![list_offsets::ListOffsetsPartition {
                partition_index: 0,
                current_leader_epoch: -1,
                timestamp: -1,
            }],
        }],
    };
    call!(c, ListOffsets, 7, req, list_offsets::ListOffsetsResponse).topics[0].partitions[0]
        .error_code
}

pub fn offset_for_leader_epoch(c: &mut Conn, n: &Names) -> i16 {
    use offset_for_leader_epoch::*;
    let req = OffsetForLeaderEpochRequest {
        replica_id: -1,
        topics: vec![OffsetForLeaderTopic {
            topic: n.topic.into(),
            partitions: vec![OffsetForLeaderPartition {
                partition: 0,
                current_leader_epoch: -1,
                leader_epoch: 0,
            }],
        }],
    };
    call!(
        c,
        OffsetForLeaderEpoch,
        4,
        req,
        OffsetForLeaderEpochResponse
    )
    .topics[0]
        .partitions[0]
        .error_code
}

pub fn delete_records(c: &mut Conn, n: &Names) -> i16 {
    use delete_records::*;
    let req = DeleteRecordsRequest {
        topics: vec![DeleteRecordsTopic {
            name: n.topic.into(),
            partitions: vec![DeleteRecordsPartition {
                partition_index: 0,
                offset: 0,
            }],
        }],
        timeout_ms: TIMEOUT_MS,
    };
    call!(c, DeleteRecords, 2, req, DeleteRecordsResponse).topics[0].partitions[0].error_code
}

pub fn describe_producers(c: &mut Conn, n: &Names) -> i16 {
    use describe_producers::*;
    let req = DescribeProducersRequest {
        topics: vec![TopicRequest {
            name: n.topic.into(),
            partition_indexes: vec![0],
        }],
    };
    call!(c, DescribeProducers, 0, req, DescribeProducersResponse).topics[0].partitions[0]
        .error_code
}

pub fn offset_fetch(c: &mut Conn, n: &Names) -> i16 {
    use offset_fetch::*;
    let req = OffsetFetchRequest {
        group_id: String::new(),
        topics: None,
        groups: vec![OffsetFetchRequestGroup {
            group_id: n.group.into(),
            member_id: None,
            member_epoch: -1,
            topics: Some(vec![OffsetFetchRequestTopic {
                name: n.topic.into(),
                topic_id: [0; 16],
                partition_indexes: vec![0],
            }]),
        }],
        require_stable: false,
    };
    let resp = call!(c, OffsetFetch, 8, req, OffsetFetchResponse);
    let group = &resp.groups[0];
    first_error(
        [group.error_code].into_iter().chain(
            group
                .topics
                .iter()
                .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
        ),
    )
}

pub fn find_coordinator(c: &mut Conn, key: &str, key_type: i8) -> i16 {
    let req = find_coordinator::FindCoordinatorRequest {
        key: key.into(),
        key_type,
        ..Default::default()
    };
    call!(
        c,
        FindCoordinator,
        3,
        req,
        find_coordinator::FindCoordinatorResponse
    )
    .error_code
}

pub fn join_group(c: &mut Conn, n: &Names) -> i16 {
    use join_group::*;
    let req = JoinGroupRequest {
        group_id: n.group.into(),
        session_timeout_ms: SESSION_TIMEOUT_MS,
        rebalance_timeout_ms: SESSION_TIMEOUT_MS,
        // A new member without an id: from v4 answered MEMBER_ID_REQUIRED
        // at once, so nothing waits for a rebalance.
        member_id: String::new(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: Bytes::new(),
        }],
        reason: None,
    };
    call!(c, JoinGroup, 5, req, JoinGroupResponse).error_code
}

pub fn sync_group(c: &mut Conn, n: &Names) -> i16 {
    let req = sync_group::SyncGroupRequest {
        group_id: n.group.into(),
        generation_id: 1,
        member_id: UNKNOWN_MEMBER.into(),
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        ..Default::default()
    };
    call!(c, SyncGroup, 5, req, sync_group::SyncGroupResponse).error_code
}

pub fn heartbeat(c: &mut Conn, n: &Names) -> i16 {
    let req = heartbeat::HeartbeatRequest {
        group_id: n.group.into(),
        generation_id: 1,
        member_id: UNKNOWN_MEMBER.into(),
        group_instance_id: None,
    };
    call!(c, Heartbeat, 4, req, heartbeat::HeartbeatResponse).error_code
}

/// A KIP-848 join subscribing to the topic; a member that got in leaves
/// again, so that the group is empty for the cases after this one (an
/// admin's commit to a consumer group with members is refused).
pub fn consumer_group_heartbeat(c: &mut Conn, n: &Names) -> i16 {
    use consumer_group_heartbeat::*;
    let member_id = "authz-member-0000000001";
    let req = ConsumerGroupHeartbeatRequest {
        group_id: n.group.into(),
        member_id: member_id.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec![n.topic.into()]),
        topic_partitions: Some(Vec::new()),
        ..Default::default()
    };
    let joined = call!(
        c,
        ConsumerGroupHeartbeat,
        1,
        req,
        ConsumerGroupHeartbeatResponse
    )
    .error_code;
    if joined == NONE {
        let leave = ConsumerGroupHeartbeatRequest {
            group_id: n.group.into(),
            member_id: member_id.into(),
            member_epoch: -1,
            ..Default::default()
        };
        let left = call!(
            c,
            ConsumerGroupHeartbeat,
            1,
            leave,
            ConsumerGroupHeartbeatResponse
        )
        .error_code;
        assert_eq!(left, NONE, "the matrix's consumer group member leaves");
    }
    joined
}

pub fn consumer_group_describe(c: &mut Conn, n: &Names) -> i16 {
    use consumer_group_describe::*;
    let req = ConsumerGroupDescribeRequest {
        group_ids: vec![n.group.into()],
        include_authorized_operations: false,
    };
    call!(
        c,
        ConsumerGroupDescribe,
        1,
        req,
        ConsumerGroupDescribeResponse
    )
    .groups[0]
        .error_code
}

pub fn leave_group(c: &mut Conn, n: &Names) -> i16 {
    use leave_group::*;
    let req = LeaveGroupRequest {
        group_id: n.group.into(),
        members: vec![MemberIdentity {
            member_id: UNKNOWN_MEMBER.into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let resp = call!(c, LeaveGroup, 5, req, LeaveGroupResponse);
    first_error(
        [resp.error_code]
            .into_iter()
            .chain(resp.members.iter().map(|m| m.error_code)),
    )
}

pub fn describe_groups(c: &mut Conn, n: &Names) -> i16 {
    let req = describe_groups::DescribeGroupsRequest {
        groups: vec![n.group.into()],
        include_authorized_operations: false,
    };
    call!(
        c,
        DescribeGroups,
        5,
        req,
        describe_groups::DescribeGroupsResponse
    )
    .groups[0]
        .error_code
}

pub fn offset_delete(c: &mut Conn, n: &Names) -> i16 {
    use offset_delete::*;
    let req = OffsetDeleteRequest {
        group_id: n.group.into(),
        topics: vec![OffsetDeleteRequestTopic {
            name: n.topic.into(),
            partitions: vec![0],
        }],
    };
    let resp = call!(c, OffsetDelete, 0, req, OffsetDeleteResponse);
    first_error(
        [resp.error_code].into_iter().chain(
            resp.topics
                .iter()
                .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
        ),
    )
}

pub fn delete_groups(c: &mut Conn, n: &Names) -> i16 {
    let req = delete_groups::DeleteGroupsRequest {
        groups_names: vec![n.group.into()],
    };
    call!(c, DeleteGroups, 2, req, delete_groups::DeleteGroupsResponse).results[0].error_code
}

pub fn create_topics(c: &mut Conn, n: &Names) -> i16 {
    use create_topics::*;
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: n.topic.into(),
            num_partitions: 1,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: TIMEOUT_MS,
        // Checked, never created: the existing topic stays as it is, and
        // the missing one missing.
        validate_only: true,
    };
    call!(c, CreateTopics, 7, req, CreateTopicsResponse).topics[0].error_code
}

pub fn delete_topics(c: &mut Conn, n: &Names) -> i16 {
    use delete_topics::*;
    let req = DeleteTopicsRequest {
        topics: vec![DeleteTopicState {
            name: Some(n.topic.into()),
            topic_id: [0; 16],
        }],
        topic_names: Vec::new(),
        timeout_ms: TIMEOUT_MS,
    };
    call!(c, DeleteTopics, 6, req, DeleteTopicsResponse).responses[0].error_code
}

pub fn create_partitions(c: &mut Conn, n: &Names) -> i16 {
    use create_partitions::*;
    let req = CreatePartitionsRequest {
        topics: vec![CreatePartitionsTopic {
            name: n.topic.into(),
            count: 2,
            assignments: None,
        }],
        timeout_ms: TIMEOUT_MS,
        validate_only: true,
    };
    call!(c, CreatePartitions, 3, req, CreatePartitionsResponse).results[0].error_code
}

pub fn describe_configs(c: &mut Conn, resource_type: i8, name: &str) -> i16 {
    use describe_configs::*;
    let req = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type,
            resource_name: name.into(),
            configuration_keys: None,
        }],
        ..Default::default()
    };
    call!(c, DescribeConfigs, 4, req, DescribeConfigsResponse).results[0].error_code
}

pub fn alter_configs(c: &mut Conn, n: &Names) -> i16 {
    use alter_configs::*;
    let req = AlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: TOPIC_CONFIGS,
            resource_name: n.topic.into(),
            configs: vec![AlterableConfig {
                name: "retention.ms".into(),
                value: Some("86400000".into()),
            }],
        }],
        validate_only: true,
    };
    call!(c, AlterConfigs, 2, req, AlterConfigsResponse).responses[0].error_code
}

pub fn incremental_alter_configs(c: &mut Conn, resource_type: i8, name: &str, key: &str) -> i16 {
    use incremental_alter_configs::*;
    let req = IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type,
            resource_name: name.into(),
            configs: vec![AlterableConfig {
                name: key.into(),
                config_operation: 0,
                value: Some("86400000".into()),
            }],
        }],
        validate_only: true,
    };
    call!(
        c,
        IncrementalAlterConfigs,
        1,
        req,
        IncrementalAlterConfigsResponse
    )
    .responses[0]
        .error_code
}

pub fn init_producer_id(c: &mut Conn, n: &Names) -> i16 {
    let req = init_producer_id::InitProducerIdRequest {
        transactional_id: Some(n.transactional_id.into()),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
    };
    call!(
        c,
        InitProducerId,
        4,
        req,
        init_producer_id::InitProducerIdResponse
    )
    .error_code
}

pub fn add_partitions_to_txn_topics(
    topic: &str,
) -> Vec<add_partitions_to_txn::AddPartitionsToTxnTopic> {
    vec![add_partitions_to_txn::AddPartitionsToTxnTopic {
        name: topic.into(),
        partitions: vec![0],
    }]
}

pub fn partition_codes(
    results: &[add_partitions_to_txn::AddPartitionsToTxnTopicResult],
) -> Vec<i16> {
    results
        .iter()
        .flat_map(|t| {
            t.results_by_partition
                .iter()
                .map(|p| p.partition_error_code)
        })
        .collect()
}

/// A client's AddPartitionsToTxn (v3).
pub fn add_partitions_to_txn(c: &mut Conn, n: &Names) -> i16 {
    use add_partitions_to_txn::*;
    let req = AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: n.transactional_id.into(),
        v3_and_below_producer_id: UNKNOWN_PRODUCER_ID,
        v3_and_below_producer_epoch: UNKNOWN_PRODUCER_EPOCH,
        v3_and_below_topics: add_partitions_to_txn_topics(n.topic),
        ..Default::default()
    };
    let resp = call!(c, AddPartitionsToTxn, 3, req, AddPartitionsToTxnResponse);
    first_error(partition_codes(&resp.results_by_topic_v3_and_below))
}

/// A broker's verification batch (v5).
pub fn add_partitions_to_txn_batch(c: &mut Conn, n: &Names) -> i16 {
    use add_partitions_to_txn::*;
    let req = AddPartitionsToTxnRequest {
        transactions: vec![AddPartitionsToTxnTransaction {
            transactional_id: n.transactional_id.into(),
            producer_id: UNKNOWN_PRODUCER_ID,
            producer_epoch: UNKNOWN_PRODUCER_EPOCH,
            verify_only: true,
            topics: add_partitions_to_txn_topics(NO_SUCH_TOPIC),
        }],
        ..Default::default()
    };
    let resp = call!(c, AddPartitionsToTxn, 5, req, AddPartitionsToTxnResponse);
    first_error(
        [resp.error_code].into_iter().chain(
            resp.results_by_transaction
                .iter()
                .flat_map(|t| partition_codes(&t.topic_results)),
        ),
    )
}

pub fn add_offsets_to_txn(c: &mut Conn, n: &Names) -> i16 {
    let req = add_offsets_to_txn::AddOffsetsToTxnRequest {
        transactional_id: n.transactional_id.into(),
        producer_id: UNKNOWN_PRODUCER_ID,
        producer_epoch: UNKNOWN_PRODUCER_EPOCH,
        group_id: n.group.into(),
    };
    call!(
        c,
        AddOffsetsToTxn,
        3,
        req,
        add_offsets_to_txn::AddOffsetsToTxnResponse
    )
    .error_code
}

pub fn end_txn(c: &mut Conn, n: &Names) -> i16 {
    let req = end_txn::EndTxnRequest {
        transactional_id: n.transactional_id.into(),
        producer_id: UNKNOWN_PRODUCER_ID,
        producer_epoch: UNKNOWN_PRODUCER_EPOCH,
        committed: true,
    };
    call!(c, EndTxn, 4, req, end_txn::EndTxnResponse).error_code
}

pub fn txn_offset_commit(c: &mut Conn, n: &Names) -> i16 {
    use txn_offset_commit::*;
    let req = TxnOffsetCommitRequest {
        transactional_id: n.transactional_id.into(),
        group_id: n.group.into(),
        producer_id: UNKNOWN_PRODUCER_ID,
        producer_epoch: UNKNOWN_PRODUCER_EPOCH,
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        topics: vec![TxnOffsetCommitRequestTopic {
            name: n.topic.into(),
            partitions: vec![TxnOffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 1,
                committed_leader_epoch: -1,
                committed_metadata: None,
            }],
            ..Default::default()
        }],
    };
    let resp = call!(c, TxnOffsetCommit, 3, req, TxnOffsetCommitResponse);
    first_error(
        resp.topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
    )
}

/// A share coordinator key (`groupId:topicId:partition`) of the matrix's
/// group: FindCoordinator's SHARE key type, a broker's question.
const SHARE_KEY_TOPIC_ID: [u8; 16] = [9; 16];

pub fn find_share_coordinator(c: &mut Conn, n: &Names) -> i16 {
    let key = pinlog::group::share::state_store::coordinator_key(
        &pinlog::group::share::state_records::SharePartitionKey {
            group_id: n.group.into(),
            topic_id: SHARE_KEY_TOPIC_ID,
            partition: 0,
        },
    );
    let req = find_coordinator::FindCoordinatorRequest {
        key_type: find_coordinator::KEY_TYPE_SHARE,
        coordinator_keys: vec![key],
        ..Default::default()
    };
    let resp = call!(
        c,
        FindCoordinator,
        6,
        req,
        find_coordinator::FindCoordinatorResponse
    );
    first_error(resp.coordinators.iter().map(|c| c.error_code))
}

/// One of the five share-group state APIs (they share one check).
pub fn read_share_group_state_summary(c: &mut Conn, n: &Names) -> i16 {
    use read_share_group_state_summary::*;
    let req = ReadShareGroupStateSummaryRequest {
        group_id: n.group.into(),
        topics: vec![share_group_state::StateTopic {
            topic_id: SHARE_KEY_TOPIC_ID,
            partitions: vec![SummaryPartition {
                partition: 0,
                leader_epoch: 0,
            }],
        }],
    };
    let resp = call!(
        c,
        ReadShareGroupStateSummary,
        1,
        req,
        ReadShareGroupStateSummaryResponse
    );
    first_error(
        resp.results
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
    )
}

pub fn write_txn_markers(c: &mut Conn, _: &Names) -> i16 {
    use write_txn_markers::*;
    let req = WriteTxnMarkersRequest {
        markers: vec![WritableTxnMarker {
            producer_id: UNKNOWN_PRODUCER_ID,
            producer_epoch: UNKNOWN_PRODUCER_EPOCH,
            transaction_result: true,
            topics: vec![WritableTxnMarkerTopic {
                name: NO_SUCH_TOPIC.into(),
                partition_indexes: vec![0],
            }],
            ..Default::default()
        }],
    };
    let resp = call!(c, WriteTxnMarkers, 1, req, WriteTxnMarkersResponse);
    first_error(
        resp.markers
            .iter()
            .flat_map(|m| &m.topics)
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
    )
}

pub fn describe_transactions(c: &mut Conn, n: &Names) -> i16 {
    let req = describe_transactions::DescribeTransactionsRequest {
        transactional_ids: vec![n.transactional_id.into()],
    };
    call!(
        c,
        DescribeTransactions,
        0,
        req,
        describe_transactions::DescribeTransactionsResponse
    )
    .transaction_states[0]
        .error_code
}

pub fn elect_leaders(c: &mut Conn, n: &Names) -> i16 {
    use elect_leaders::*;
    let req = ElectLeadersRequest {
        election_type: 0,
        topic_partitions: Some(vec![ElectLeadersTopic {
            topic: n.topic.into(),
            partitions: vec![0],
        }]),
        timeout_ms: TIMEOUT_MS,
    };
    call!(c, ElectLeaders, 2, req, ElectLeadersResponse).error_code
}

pub fn alter_partition_reassignments(c: &mut Conn, _: &Names) -> i16 {
    use alter_partition_reassignments::*;
    let req = AlterPartitionReassignmentsRequest {
        timeout_ms: TIMEOUT_MS,
        allow_replication_factor_change: true,
        topics: Vec::new(),
    };
    call!(
        c,
        AlterPartitionReassignments,
        0,
        req,
        AlterPartitionReassignmentsResponse
    )
    .error_code
}

pub fn list_partition_reassignments(c: &mut Conn, _: &Names) -> i16 {
    use list_partition_reassignments::*;
    let req = ListPartitionReassignmentsRequest {
        timeout_ms: TIMEOUT_MS,
        topics: None,
    };
    call!(
        c,
        ListPartitionReassignments,
        0,
        req,
        ListPartitionReassignmentsResponse
    )
    .error_code
}

pub fn describe_log_dirs(c: &mut Conn, _: &Names) -> i16 {
    let req = describe_log_dirs::DescribeLogDirsRequest { topics: None };
    call!(
        c,
        DescribeLogDirs,
        4,
        req,
        describe_log_dirs::DescribeLogDirsResponse
    )
    .error_code
}

pub fn describe_quorum(c: &mut Conn, _: &Names) -> i16 {
    use describe_quorum::*;
    let req = DescribeQuorumRequest {
        topics: vec![QuorumTopicRequest {
            topic_name: "__cluster_metadata".into(),
            partitions: vec![0],
        }],
    };
    call!(c, DescribeQuorum, 2, req, DescribeQuorumResponse).error_code
}

pub fn update_features(c: &mut Conn, _: &Names) -> i16 {
    let req = update_features::UpdateFeaturesRequest {
        timeout_ms: TIMEOUT_MS,
        feature_updates: Vec::new(),
        validate_only: true,
    };
    call!(
        c,
        UpdateFeatures,
        1,
        req,
        update_features::UpdateFeaturesResponse
    )
    .error_code
}

pub fn unregister_broker(c: &mut Conn, _: &Names) -> i16 {
    // A broker id no broker has: unregistering it changes nothing.
    let req = unregister_broker::UnregisterBrokerRequest { broker_id: 1_000 };
    call!(
        c,
        UnregisterBroker,
        0,
        req,
        unregister_broker::UnregisterBrokerResponse
    )
    .error_code
}

pub fn partition_shards(c: &mut Conn, _: &Names) -> i16 {
    use partition_shards::*;
    let req = PartitionShardsRequest {
        topics: vec![PartitionShardsTopic {
            name: NO_SUCH_TOPIC.into(),
            partitions: vec![PartitionShardsPartition {
                partition_index: 0,
                target_shard: 0,
            }],
        }],
    };
    call!(c, PartitionShards, 0, req, PartitionShardsResponse).topics[0].partitions[0].error_code
}

pub fn list_config_resources(c: &mut Conn, _: &Names) -> i16 {
    let req = list_config_resources::ListConfigResourcesRequest {
        resource_types: Vec::new(),
    };
    call!(
        c,
        ListConfigResources,
        1,
        req,
        list_config_resources::ListConfigResourcesResponse
    )
    .error_code
}

pub fn create_acls(c: &mut Conn, _: &Names) -> i16 {
    let req = create_acls::CreateAclsRequest {
        creations: vec![create_acls::AclCreation {
            resource_type: ResourceType::Topic.code(),
            resource_name: NO_SUCH_TOPIC.into(),
            resource_pattern_type: PatternType::Literal.code(),
            principal: format!("User:{BYSTANDER}"),
            host: "*".into(),
            operation: AclOperation::Read.code(),
            permission_type: AclPermissionType::Allow.code(),
        }],
    };
    call!(c, CreateAcls, 3, req, create_acls::CreateAclsResponse).results[0].error_code
}

pub fn delete_acls(c: &mut Conn, _: &Names) -> i16 {
    let req = delete_acls::DeleteAclsRequest {
        filters: vec![delete_acls::DeleteAclsFilter {
            resource_type_filter: ResourceType::Topic.code(),
            resource_name_filter: Some(NO_SUCH_TOPIC.into()),
            pattern_type_filter: PatternType::Literal.code(),
            principal_filter: Some(format!("User:{BYSTANDER}")),
            host_filter: None,
            operation: AclOperation::Any.code(),
            permission_type: AclPermissionType::Any.code(),
        }],
    };
    call!(c, DeleteAcls, 3, req, delete_acls::DeleteAclsResponse).filter_results[0].error_code
}

pub fn describe_acls(c: &mut Conn, _: &Names) -> i16 {
    let req = describe_acls::DescribeAclsRequest {
        resource_type_filter: ResourceType::Any.code(),
        pattern_type_filter: PatternType::Any.code(),
        operation: AclOperation::Any.code(),
        permission_type: AclPermissionType::Any.code(),
        ..Default::default()
    };
    call!(c, DescribeAcls, 3, req, describe_acls::DescribeAclsResponse).error_code
}

pub fn describe_client_quotas(c: &mut Conn, _: &Names) -> i16 {
    let req = describe_client_quotas::DescribeClientQuotasRequest {
        components: Vec::new(),
        strict: false,
    };
    call!(
        c,
        DescribeClientQuotas,
        1,
        req,
        describe_client_quotas::DescribeClientQuotasResponse
    )
    .error_code
}

pub fn alter_client_quotas(c: &mut Conn, _: &Names) -> i16 {
    use alter_client_quotas::*;
    let req = AlterClientQuotasRequest {
        entries: vec![EntryData {
            entity: vec![describe_client_quotas::EntityData {
                entity_type: "user".into(),
                entity_name: Some(BYSTANDER.into()),
            }],
            ops: vec![OpData {
                key: "producer_byte_rate".into(),
                value: 1_048_576.0,
                remove: false,
            }],
        }],
        validate_only: true,
    };
    call!(c, AlterClientQuotas, 1, req, AlterClientQuotasResponse).entries[0].error_code
}

pub fn describe_user_scram_credentials(c: &mut Conn, _: &Names) -> i16 {
    use describe_user_scram_credentials::*;
    let req = DescribeUserScramCredentialsRequest { users: None };
    call!(
        c,
        DescribeUserScramCredentials,
        0,
        req,
        DescribeUserScramCredentialsResponse
    )
    .error_code
}

pub fn alter_user_scram_credentials(c: &mut Conn, _: &Names) -> i16 {
    use alter_user_scram_credentials::*;
    // Deleting a credential the bystander does not have changes nothing.
    let req = AlterUserScramCredentialsRequest {
        deletions: vec![ScramCredentialDeletion {
            name: BYSTANDER.into(),
            mechanism: 1,
        }],
        upsertions: Vec::new(),
    };
    call!(
        c,
        AlterUserScramCredentials,
        0,
        req,
        AlterUserScramCredentialsResponse
    )
    .results[0]
        .error_code
}
