//! The authorization matrix: which operation on which kind of resource
//! each Kafka API needs, and the error a refusal answers, as Kafka's
//! `KafkaApis` asks its authorizer (checked against
//! `AuthorizerIntegrationTest`'s expectations).
//!
//! Each check a request handler makes is one [`Rule`] named here; the
//! handler decides only which names it applies the rule to (the topics of
//! a Produce, the group of a JoinGroup). [`rules_of`] lists every rule of
//! an API, so a test can hold that every API the broker serves has its
//! rules, and the report of who may do what is read off one table.
//!
//! Rules that Kafka applies only in a case of the request are named for it:
//! a fetch from a follower needs CLUSTER_ACTION instead of READ on each
//! topic; a Metadata request that would create a topic needs CREATE; an
//! idempotent producer without a transactional id needs IDEMPOTENT_WRITE
//! on the cluster or WRITE on some topic.

use crate::acl::binding::CLUSTER_NAME;
use crate::acl::types::{AclOperation, ResourceType};
use crate::protocol::api::ApiKey;
use crate::protocol::config_resource;
use crate::protocol::error_code;

use AclOperation::*;
use ResourceType::{Cluster, Group, Topic, TransactionalId};

/// One authorization check: `operation` on a resource of `resource_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub resource_type: ResourceType,
    pub operation: AclOperation,
}

const fn rule(resource_type: ResourceType, operation: AclOperation) -> Rule {
    Rule {
        resource_type,
        operation,
    }
}

impl Rule {
    /// Kafka's error for a request this rule refused.
    pub fn denied_error(self) -> i16 {
        denied_error(self.resource_type)
    }

    /// The name this rule is asked of for a resource a request names
    /// `name`: the cluster's one name for a cluster rule (a broker's
    /// configs are the cluster's to allow), else `name`.
    pub fn resource_name(self, name: &str) -> &str {
        match self.resource_type {
            Cluster => CLUSTER_NAME,
            _ => name,
        }
    }
}

/// Kafka's error for a refusal on a resource of `resource_type`.
pub fn denied_error(resource_type: ResourceType) -> i16 {
    match resource_type {
        Topic => error_code::TOPIC_AUTHORIZATION_FAILED,
        Group => error_code::GROUP_AUTHORIZATION_FAILED,
        TransactionalId => error_code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        _ => error_code::CLUSTER_AUTHORIZATION_FAILED,
    }
}

// Data.
pub const PRODUCE_TOPIC: Rule = rule(Topic, Write);
pub const PRODUCE_TRANSACTIONAL_ID: Rule = rule(TransactionalId, Write);
pub const FETCH_TOPIC: Rule = rule(Topic, Read);
/// A fetch with a replica id (a follower's) instead of READ on each topic.
pub const FETCH_FROM_FOLLOWER: Rule = rule(Cluster, ClusterAction);
pub const LIST_OFFSETS_TOPIC: Rule = rule(Topic, Describe);
pub const OFFSET_FOR_LEADER_EPOCH_TOPIC: Rule = rule(Topic, Describe);
/// A follower's OffsetForLeaderEpoch: every topic at once.
pub const OFFSET_FOR_LEADER_EPOCH_CLUSTER: Rule = rule(Cluster, ClusterAction);
pub const DELETE_RECORDS_TOPIC: Rule = rule(Topic, Delete);
pub const DESCRIBE_PRODUCERS_TOPIC: Rule = rule(Topic, Read);

// Metadata.
pub const METADATA_TOPIC: Rule = rule(Topic, Describe);
/// Creating a topic a Metadata request names (auto-creation): on the
/// cluster, or else on the topic.
pub const METADATA_AUTO_CREATE_CLUSTER: Rule = rule(Cluster, Create);
pub const METADATA_AUTO_CREATE_TOPIC: Rule = rule(Topic, Create);
pub const DESCRIBE_CLUSTER: Rule = rule(Cluster, Describe);

// Groups.
pub const FIND_COORDINATOR_GROUP: Rule = rule(Group, Describe);
pub const FIND_COORDINATOR_TRANSACTIONAL_ID: Rule = rule(TransactionalId, Describe);
/// FindCoordinator for a share partition's share coordinator (KIP-932): a
/// broker's question.
pub const FIND_COORDINATOR_SHARE: Rule = rule(Cluster, ClusterAction);
pub const JOIN_GROUP: Rule = rule(Group, Read);
pub const SYNC_GROUP: Rule = rule(Group, Read);
pub const HEARTBEAT_GROUP: Rule = rule(Group, Read);
pub const LEAVE_GROUP: Rule = rule(Group, Read);
pub const OFFSET_COMMIT_GROUP: Rule = rule(Group, Read);
pub const OFFSET_COMMIT_TOPIC: Rule = rule(Topic, Read);
pub const OFFSET_FETCH_GROUP: Rule = rule(Group, Describe);
pub const OFFSET_FETCH_TOPIC: Rule = rule(Topic, Describe);
pub const OFFSET_DELETE_GROUP: Rule = rule(Group, Delete);
pub const OFFSET_DELETE_TOPIC: Rule = rule(Topic, Read);
pub const DESCRIBE_GROUPS_GROUP: Rule = rule(Group, Describe);
/// ListGroups lists every group with this, else those it may describe.
pub const LIST_GROUPS_CLUSTER: Rule = rule(Cluster, Describe);
pub const LIST_GROUPS_GROUP: Rule = rule(Group, Describe);
pub const DELETE_GROUPS_GROUP: Rule = rule(Group, Delete);
/// ConsumerGroupHeartbeat (KIP-848): READ on the group, and DESCRIBE on
/// each subscribed topic name (else TOPIC_AUTHORIZATION_FAILED).
pub const CONSUMER_GROUP_HEARTBEAT_GROUP: Rule = rule(Group, Read);
pub const CONSUMER_GROUP_HEARTBEAT_TOPIC: Rule = rule(Topic, Describe);
/// ConsumerGroupDescribe: DESCRIBE on each group, and on every topic its
/// members are assigned (else the group is TOPIC_AUTHORIZATION_FAILED).
pub const CONSUMER_GROUP_DESCRIBE_GROUP: Rule = rule(Group, Describe);
pub const CONSUMER_GROUP_DESCRIBE_TOPIC: Rule = rule(Topic, Describe);
/// Share groups (KIP-932, Kafka's KafkaApis): ShareGroupHeartbeat needs
/// READ on the group and DESCRIBE on each subscribed topic.
pub const SHARE_GROUP_HEARTBEAT_GROUP: Rule = rule(Group, Read);
pub const SHARE_GROUP_HEARTBEAT_TOPIC: Rule = rule(Topic, Describe);
/// ShareGroupDescribe: DESCRIBE on each group, and on every topic its
/// members are assigned (else the group is TOPIC_AUTHORIZATION_FAILED).
pub const SHARE_GROUP_DESCRIBE_GROUP: Rule = rule(Group, Describe);
pub const SHARE_GROUP_DESCRIBE_TOPIC: Rule = rule(Topic, Describe);
/// ShareFetch and ShareAcknowledge: READ on the group, READ on each topic.
pub const SHARE_FETCH_GROUP: Rule = rule(Group, Read);
pub const SHARE_FETCH_TOPIC: Rule = rule(Topic, Read);
pub const SHARE_ACKNOWLEDGE_GROUP: Rule = rule(Group, Read);
pub const SHARE_ACKNOWLEDGE_TOPIC: Rule = rule(Topic, Read);
/// The share-group state APIs, which only brokers send.
pub const SHARE_GROUP_STATE: Rule = rule(Cluster, ClusterAction);
/// DescribeShareGroupOffsets: DESCRIBE on the group and on each topic.
pub const DESCRIBE_SHARE_GROUP_OFFSETS_GROUP: Rule = rule(Group, Describe);
pub const DESCRIBE_SHARE_GROUP_OFFSETS_TOPIC: Rule = rule(Topic, Describe);
/// AlterShareGroupOffsets: READ on the group and on each topic.
pub const ALTER_SHARE_GROUP_OFFSETS_GROUP: Rule = rule(Group, Read);
pub const ALTER_SHARE_GROUP_OFFSETS_TOPIC: Rule = rule(Topic, Read);
/// DeleteShareGroupOffsets: DELETE on the group, READ on each topic.
pub const DELETE_SHARE_GROUP_OFFSETS_GROUP: Rule = rule(Group, Delete);
pub const DELETE_SHARE_GROUP_OFFSETS_TOPIC: Rule = rule(Topic, Read);

// Topics and configs.
/// CreateTopics: on the cluster, or else on each topic.
pub const CREATE_TOPICS_CLUSTER: Rule = rule(Cluster, Create);
pub const CREATE_TOPICS_TOPIC: Rule = rule(Topic, Create);
pub const DELETE_TOPICS_TOPIC: Rule = rule(Topic, Delete);
pub const CREATE_PARTITIONS_TOPIC: Rule = rule(Topic, Alter);
pub const DESCRIBE_CONFIGS_TOPIC: Rule = rule(Topic, DescribeConfigs);
/// A broker's or broker logger's configs.
pub const DESCRIBE_CONFIGS_CLUSTER: Rule = rule(Cluster, DescribeConfigs);
/// A consumer group's configs (KIP-848).
pub const DESCRIBE_CONFIGS_GROUP: Rule = rule(Group, DescribeConfigs);
pub const ALTER_CONFIGS_TOPIC: Rule = rule(Topic, AlterConfigs);
pub const ALTER_CONFIGS_CLUSTER: Rule = rule(Cluster, AlterConfigs);
pub const ALTER_CONFIGS_GROUP: Rule = rule(Group, AlterConfigs);
pub const LIST_CONFIG_RESOURCES_CLUSTER: Rule = rule(Cluster, DescribeConfigs);

// Cluster administration.
pub const ELECT_LEADERS: Rule = rule(Cluster, Alter);
pub const ALTER_PARTITION_REASSIGNMENTS: Rule = rule(Cluster, Alter);
pub const LIST_PARTITION_REASSIGNMENTS: Rule = rule(Cluster, Describe);
pub const DESCRIBE_LOG_DIRS: Rule = rule(Cluster, Describe);
pub const DESCRIBE_QUORUM: Rule = rule(Cluster, Describe);
pub const UPDATE_FEATURES: Rule = rule(Cluster, Alter);
pub const UNREGISTER_BROKER: Rule = rule(Cluster, Alter);
/// pinlog's own: moving partitions between cores.
pub const PARTITION_SHARDS: Rule = rule(Cluster, Alter);
pub const CREATE_ACLS: Rule = rule(Cluster, Alter);
pub const DELETE_ACLS: Rule = rule(Cluster, Alter);
pub const DESCRIBE_ACLS: Rule = rule(Cluster, Describe);
pub const DESCRIBE_CLIENT_QUOTAS: Rule = rule(Cluster, DescribeConfigs);
pub const ALTER_CLIENT_QUOTAS: Rule = rule(Cluster, AlterConfigs);
pub const DESCRIBE_USER_SCRAM_CREDENTIALS: Rule = rule(Cluster, Describe);
pub const ALTER_USER_SCRAM_CREDENTIALS: Rule = rule(Cluster, Alter);

// Transactions.
pub const INIT_PRODUCER_ID_TRANSACTIONAL_ID: Rule = rule(TransactionalId, Write);
/// An idempotent producer (no transactional id): this, or else
/// [`INIT_PRODUCER_ID_ANY_TOPIC`] on at least one topic.
pub const INIT_PRODUCER_ID_IDEMPOTENT: Rule = rule(Cluster, IdempotentWrite);
pub const INIT_PRODUCER_ID_ANY_TOPIC: Rule = rule(Topic, Write);
pub const ADD_PARTITIONS_TO_TXN_TRANSACTIONAL_ID: Rule = rule(TransactionalId, Write);
pub const ADD_PARTITIONS_TO_TXN_TOPIC: Rule = rule(Topic, Write);
/// AddPartitionsToTxn v4+ verification-only batches, sent by brokers.
pub const ADD_PARTITIONS_TO_TXN_FROM_BROKER: Rule = rule(Cluster, ClusterAction);
pub const ADD_OFFSETS_TO_TXN_TRANSACTIONAL_ID: Rule = rule(TransactionalId, Write);
pub const ADD_OFFSETS_TO_TXN_GROUP: Rule = rule(Group, Read);
pub const END_TXN: Rule = rule(TransactionalId, Write);
pub const TXN_OFFSET_COMMIT_TRANSACTIONAL_ID: Rule = rule(TransactionalId, Write);
pub const TXN_OFFSET_COMMIT_GROUP: Rule = rule(Group, Read);
pub const TXN_OFFSET_COMMIT_TOPIC: Rule = rule(Topic, Read);
pub const WRITE_TXN_MARKERS: Rule = rule(Cluster, ClusterAction);
/// Kafka's broker-to-controller APIs (BrokerRegistration,
/// BrokerHeartbeat, AlterPartition, AllocateProducerIds), which only
/// brokers send.
pub const BROKER_TO_CONTROLLER: Rule = rule(Cluster, ClusterAction);
pub const DESCRIBE_TRANSACTIONS: Rule = rule(TransactionalId, Describe);
/// The topics DescribeTransactions lists in a transaction.
pub const DESCRIBE_TRANSACTIONS_TOPIC: Rule = rule(Topic, Describe);
pub const LIST_TRANSACTIONS: Rule = rule(TransactionalId, Describe);

/// Every rule a request of `api` may be checked against; empty for the
/// APIs every client may call (ApiVersions, and the SASL handshake that
/// comes before a principal exists). Kafka's matrix, in one table.
pub fn rules_of(api: ApiKey) -> &'static [Rule] {
    match api {
        ApiKey::ApiVersions | ApiKey::SaslHandshake | ApiKey::SaslAuthenticate => &[],
        ApiKey::Produce => &[PRODUCE_TOPIC, PRODUCE_TRANSACTIONAL_ID],
        ApiKey::Fetch => &[FETCH_TOPIC, FETCH_FROM_FOLLOWER],
        ApiKey::ListOffsets => &[LIST_OFFSETS_TOPIC],
        ApiKey::OffsetForLeaderEpoch => &[
            OFFSET_FOR_LEADER_EPOCH_TOPIC,
            OFFSET_FOR_LEADER_EPOCH_CLUSTER,
        ],
        ApiKey::DeleteRecords => &[DELETE_RECORDS_TOPIC],
        ApiKey::DescribeProducers => &[DESCRIBE_PRODUCERS_TOPIC],
        ApiKey::Metadata => &[
            METADATA_TOPIC,
            METADATA_AUTO_CREATE_CLUSTER,
            METADATA_AUTO_CREATE_TOPIC,
        ],
        ApiKey::DescribeCluster => &[DESCRIBE_CLUSTER],
        ApiKey::FindCoordinator => &[
            FIND_COORDINATOR_GROUP,
            FIND_COORDINATOR_TRANSACTIONAL_ID,
            FIND_COORDINATOR_SHARE,
        ],
        ApiKey::JoinGroup => &[JOIN_GROUP],
        ApiKey::SyncGroup => &[SYNC_GROUP],
        ApiKey::Heartbeat => &[HEARTBEAT_GROUP],
        ApiKey::LeaveGroup => &[LEAVE_GROUP],
        ApiKey::OffsetCommit => &[OFFSET_COMMIT_GROUP, OFFSET_COMMIT_TOPIC],
        ApiKey::OffsetFetch => &[OFFSET_FETCH_GROUP, OFFSET_FETCH_TOPIC],
        ApiKey::OffsetDelete => &[OFFSET_DELETE_GROUP, OFFSET_DELETE_TOPIC],
        ApiKey::DescribeGroups => &[DESCRIBE_GROUPS_GROUP],
        ApiKey::ListGroups => &[LIST_GROUPS_CLUSTER, LIST_GROUPS_GROUP],
        ApiKey::DeleteGroups => &[DELETE_GROUPS_GROUP],
        ApiKey::CreateTopics => &[CREATE_TOPICS_CLUSTER, CREATE_TOPICS_TOPIC],
        ApiKey::DeleteTopics => &[DELETE_TOPICS_TOPIC],
        ApiKey::CreatePartitions => &[CREATE_PARTITIONS_TOPIC],
        ApiKey::DescribeConfigs => &[
            DESCRIBE_CONFIGS_TOPIC,
            DESCRIBE_CONFIGS_CLUSTER,
            DESCRIBE_CONFIGS_GROUP,
        ],
        ApiKey::AlterConfigs | ApiKey::IncrementalAlterConfigs => &[
            ALTER_CONFIGS_TOPIC,
            ALTER_CONFIGS_CLUSTER,
            ALTER_CONFIGS_GROUP,
        ],
        ApiKey::ListConfigResources => &[LIST_CONFIG_RESOURCES_CLUSTER],
        ApiKey::ElectLeaders => &[ELECT_LEADERS],
        ApiKey::AlterPartitionReassignments => &[ALTER_PARTITION_REASSIGNMENTS],
        ApiKey::ListPartitionReassignments => &[LIST_PARTITION_REASSIGNMENTS],
        ApiKey::DescribeLogDirs => &[DESCRIBE_LOG_DIRS],
        ApiKey::DescribeQuorum => &[DESCRIBE_QUORUM],
        ApiKey::UpdateFeatures => &[UPDATE_FEATURES],
        ApiKey::UnregisterBroker => &[UNREGISTER_BROKER],
        ApiKey::PartitionShards => &[PARTITION_SHARDS],
        ApiKey::CreateAcls => &[CREATE_ACLS],
        ApiKey::DeleteAcls => &[DELETE_ACLS],
        ApiKey::DescribeAcls => &[DESCRIBE_ACLS],
        ApiKey::DescribeClientQuotas => &[DESCRIBE_CLIENT_QUOTAS],
        ApiKey::AlterClientQuotas => &[ALTER_CLIENT_QUOTAS],
        ApiKey::DescribeUserScramCredentials => &[DESCRIBE_USER_SCRAM_CREDENTIALS],
        ApiKey::AlterUserScramCredentials => &[ALTER_USER_SCRAM_CREDENTIALS],
        ApiKey::InitProducerId => &[
            INIT_PRODUCER_ID_TRANSACTIONAL_ID,
            INIT_PRODUCER_ID_IDEMPOTENT,
            INIT_PRODUCER_ID_ANY_TOPIC,
        ],
        ApiKey::AddPartitionsToTxn => &[
            ADD_PARTITIONS_TO_TXN_TRANSACTIONAL_ID,
            ADD_PARTITIONS_TO_TXN_TOPIC,
            ADD_PARTITIONS_TO_TXN_FROM_BROKER,
        ],
        ApiKey::AddOffsetsToTxn => &[
            ADD_OFFSETS_TO_TXN_TRANSACTIONAL_ID,
            ADD_OFFSETS_TO_TXN_GROUP,
        ],
        ApiKey::EndTxn => &[END_TXN],
        ApiKey::TxnOffsetCommit => &[
            TXN_OFFSET_COMMIT_TRANSACTIONAL_ID,
            TXN_OFFSET_COMMIT_GROUP,
            TXN_OFFSET_COMMIT_TOPIC,
        ],
        ApiKey::WriteTxnMarkers => &[WRITE_TXN_MARKERS],
        ApiKey::DescribeTransactions => &[DESCRIBE_TRANSACTIONS, DESCRIBE_TRANSACTIONS_TOPIC],
        ApiKey::ListTransactions => &[LIST_TRANSACTIONS],
        // Not served yet: refused before any rule would be asked.
        ApiKey::Envelope => &[],
        ApiKey::ConsumerGroupHeartbeat => &[
            CONSUMER_GROUP_HEARTBEAT_GROUP,
            CONSUMER_GROUP_HEARTBEAT_TOPIC,
        ],
        ApiKey::ConsumerGroupDescribe => {
            &[CONSUMER_GROUP_DESCRIBE_GROUP, CONSUMER_GROUP_DESCRIBE_TOPIC]
        }
        ApiKey::ShareGroupHeartbeat => &[SHARE_GROUP_HEARTBEAT_GROUP, SHARE_GROUP_HEARTBEAT_TOPIC],
        ApiKey::ShareGroupDescribe => &[SHARE_GROUP_DESCRIBE_GROUP, SHARE_GROUP_DESCRIBE_TOPIC],
        ApiKey::ShareFetch => &[SHARE_FETCH_GROUP, SHARE_FETCH_TOPIC],
        ApiKey::ShareAcknowledge => &[SHARE_ACKNOWLEDGE_GROUP, SHARE_ACKNOWLEDGE_TOPIC],
        ApiKey::InitializeShareGroupState
        | ApiKey::ReadShareGroupState
        | ApiKey::WriteShareGroupState
        | ApiKey::DeleteShareGroupState
        | ApiKey::ReadShareGroupStateSummary => &[SHARE_GROUP_STATE],
        ApiKey::DescribeShareGroupOffsets => &[
            DESCRIBE_SHARE_GROUP_OFFSETS_GROUP,
            DESCRIBE_SHARE_GROUP_OFFSETS_TOPIC,
        ],
        ApiKey::AlterShareGroupOffsets => &[
            ALTER_SHARE_GROUP_OFFSETS_GROUP,
            ALTER_SHARE_GROUP_OFFSETS_TOPIC,
        ],
        ApiKey::DeleteShareGroupOffsets => &[
            DELETE_SHARE_GROUP_OFFSETS_GROUP,
            DELETE_SHARE_GROUP_OFFSETS_TOPIC,
        ],
    }
}

/// The rule DescribeConfigs asks for a config resource of Kafka's
/// ConfigResource type `config_resource_type` (`ConfigHelper`): a topic's
/// or a group's own, and the cluster's for a broker, a broker logger or a
/// client-metrics subscription. `None` for a type Kafka does not know,
/// which the request refuses as invalid instead.
pub fn describe_configs_rule(config_resource_type: i8) -> Option<Rule> {
    match config_resource_type {
        config_resource::TOPIC => Some(DESCRIBE_CONFIGS_TOPIC),
        config_resource::GROUP => Some(DESCRIBE_CONFIGS_GROUP),
        config_resource::BROKER
        | config_resource::BROKER_LOGGER
        | config_resource::CLIENT_METRICS => Some(DESCRIBE_CONFIGS_CLUSTER),
        _ => None,
    }
}

/// The rule AlterConfigs and IncrementalAlterConfigs ask for a config
/// resource of type `config_resource_type`, as [`describe_configs_rule`]
/// with ALTER_CONFIGS.
pub fn alter_configs_rule(config_resource_type: i8) -> Option<Rule> {
    match config_resource_type {
        config_resource::TOPIC => Some(ALTER_CONFIGS_TOPIC),
        config_resource::GROUP => Some(ALTER_CONFIGS_GROUP),
        config_resource::BROKER
        | config_resource::BROKER_LOGGER
        | config_resource::CLIENT_METRICS => Some(ALTER_CONFIGS_CLUSTER),
        _ => None,
    }
}

/// The operations Kafka reports in a resource's authorized-operations bit
/// set (`AclEntry.supportedOperations`), for Metadata's and
/// DescribeCluster's `*_authorized_operations`.
pub fn reported_operations(resource_type: ResourceType) -> &'static [AclOperation] {
    match resource_type {
        Topic => &[
            Read,
            Write,
            Create,
            Describe,
            Delete,
            Alter,
            DescribeConfigs,
            AlterConfigs,
        ],
        Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
        Cluster => &[
            Create,
            ClusterAction,
            DescribeConfigs,
            AlterConfigs,
            IdempotentWrite,
            Alter,
            Describe,
        ],
        TransactionalId => &[Describe, Write, TwoPhaseCommit],
        ResourceType::DelegationToken => &[Describe],
        ResourceType::User => &[CreateTokens, DescribeTokens],
        ResourceType::Unknown | ResourceType::Any => &[],
    }
}

/// The authorized-operations bit set of `allowed` operations: bit
/// `operation.code()` for each.
pub fn operations_bit_set(allowed: impl IntoIterator<Item = AclOperation>) -> i32 {
    allowed
        .into_iter()
        .fold(0, |bits, op| bits | (1 << op.code()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::api::{CODEC_ONLY_APIS, SUPPORTED_APIS};

    /// The APIs any client may call, with no rule.
    const OPEN_APIS: [ApiKey; 3] = [
        ApiKey::ApiVersions,
        ApiKey::SaslHandshake,
        ApiKey::SaslAuthenticate,
    ];

    #[test]
    fn every_served_api_has_its_rules() {
        for api in SUPPORTED_APIS.iter().map(|a| a.key) {
            assert_eq!(
                rules_of(api).is_empty(),
                OPEN_APIS.contains(&api),
                "{api:?}: an API the broker serves is authorized unless any client may call it"
            );
        }
    }

    #[test]
    fn every_rule_is_an_operation_kafka_defines_on_its_resource() {
        for api in SUPPORTED_APIS.iter().chain(CODEC_ONLY_APIS).map(|a| a.key) {
            for r in rules_of(api) {
                assert!(
                    reported_operations(r.resource_type).contains(&r.operation),
                    "{api:?}: {} is not an operation on {}",
                    r.operation,
                    r.resource_type
                );
            }
        }
    }

    #[test]
    fn a_refusal_answers_the_error_of_its_resource_type() {
        assert_eq!(PRODUCE_TOPIC.denied_error(), 29);
        assert_eq!(JOIN_GROUP.denied_error(), 30);
        assert_eq!(ELECT_LEADERS.denied_error(), 31);
        assert_eq!(FETCH_FROM_FOLLOWER.denied_error(), 31);
        assert_eq!(END_TXN.denied_error(), 53);
    }

    #[test]
    fn kafkas_matrix_for_the_common_apis() {
        // A few rows of Kafka's AuthorizerIntegrationTest, stated once more
        // so that a change of the table above is a deliberate one.
        assert_eq!(rules_of(ApiKey::Produce)[0], rule(Topic, Write));
        assert_eq!(rules_of(ApiKey::Fetch)[0], rule(Topic, Read));
        assert_eq!(rules_of(ApiKey::ListOffsets), &[rule(Topic, Describe)]);
        assert_eq!(rules_of(ApiKey::DeleteGroups), &[rule(Group, Delete)]);
        assert_eq!(rules_of(ApiKey::CreatePartitions), &[rule(Topic, Alter)]);
        assert_eq!(rules_of(ApiKey::DescribeAcls), &[rule(Cluster, Describe)]);
        assert_eq!(rules_of(ApiKey::CreateAcls), &[rule(Cluster, Alter)]);
        assert_eq!(
            rules_of(ApiKey::WriteTxnMarkers),
            &[rule(Cluster, ClusterAction)]
        );
    }

    #[test]
    fn the_apis_once_for_super_users_only_follow_kafkas_matrix() {
        // KafkaApis' and ControllerApis' checks for the APIs pinlog first
        // served to super users only.
        assert_eq!(
            rules_of(ApiKey::DeleteRecords),
            &[rule(Topic, Delete)],
            "DeleteRecords"
        );
        assert_eq!(
            rules_of(ApiKey::OffsetDelete),
            &[rule(Group, Delete), rule(Topic, Read)]
        );
        assert_eq!(
            rules_of(ApiKey::AddOffsetsToTxn),
            &[rule(TransactionalId, Write), rule(Group, Read)]
        );
        assert_eq!(rules_of(ApiKey::EndTxn), &[rule(TransactionalId, Write)]);
        assert_eq!(
            rules_of(ApiKey::TxnOffsetCommit),
            &[
                rule(TransactionalId, Write),
                rule(Group, Read),
                rule(Topic, Read)
            ]
        );
        assert_eq!(
            rules_of(ApiKey::AddPartitionsToTxn),
            &[
                rule(TransactionalId, Write),
                rule(Topic, Write),
                rule(Cluster, ClusterAction)
            ]
        );
        assert_eq!(rules_of(ApiKey::DescribeProducers), &[rule(Topic, Read)]);
        assert_eq!(
            rules_of(ApiKey::DescribeTransactions),
            &[rule(TransactionalId, Describe), rule(Topic, Describe)]
        );
        assert_eq!(
            rules_of(ApiKey::ListTransactions),
            &[rule(TransactionalId, Describe)]
        );
        assert_eq!(
            rules_of(ApiKey::DescribeClientQuotas),
            &[rule(Cluster, DescribeConfigs)]
        );
        assert_eq!(
            rules_of(ApiKey::AlterClientQuotas),
            &[rule(Cluster, AlterConfigs)]
        );
        assert_eq!(
            rules_of(ApiKey::DescribeUserScramCredentials),
            &[rule(Cluster, Describe)]
        );
        assert_eq!(
            rules_of(ApiKey::AlterUserScramCredentials),
            &[rule(Cluster, Alter)]
        );
    }

    #[test]
    fn a_config_resource_is_authorized_on_its_topic_its_group_or_the_cluster() {
        use crate::protocol::config_resource::*;
        assert_eq!(
            describe_configs_rule(TOPIC),
            Some(rule(Topic, DescribeConfigs))
        );
        assert_eq!(
            describe_configs_rule(GROUP),
            Some(rule(Group, DescribeConfigs))
        );
        for cluster_wide in [BROKER, BROKER_LOGGER, CLIENT_METRICS] {
            assert_eq!(
                describe_configs_rule(cluster_wide),
                Some(rule(Cluster, DescribeConfigs))
            );
            assert_eq!(
                alter_configs_rule(cluster_wide),
                Some(rule(Cluster, AlterConfigs))
            );
        }
        assert_eq!(alter_configs_rule(TOPIC), Some(rule(Topic, AlterConfigs)));
        assert_eq!(alter_configs_rule(GROUP), Some(rule(Group, AlterConfigs)));
        for unknown in [0, 1, 3, 64, -1] {
            assert_eq!(describe_configs_rule(unknown), None);
            assert_eq!(alter_configs_rule(unknown), None);
        }
        // Every rule returned is one of the APIs' rules.
        for t in [TOPIC, GROUP, BROKER, BROKER_LOGGER, CLIENT_METRICS] {
            let d = describe_configs_rule(t).expect("a known type");
            assert!(rules_of(ApiKey::DescribeConfigs).contains(&d));
            let a = alter_configs_rule(t).expect("a known type");
            assert!(rules_of(ApiKey::AlterConfigs).contains(&a));
            assert!(rules_of(ApiKey::IncrementalAlterConfigs).contains(&a));
        }
    }

    #[test]
    fn a_cluster_rule_is_asked_of_the_clusters_one_name() {
        assert_eq!(DESCRIBE_CONFIGS_CLUSTER.resource_name("1"), CLUSTER_NAME);
        assert_eq!(DESCRIBE_CONFIGS_TOPIC.resource_name("orders"), "orders");
        assert_eq!(ALTER_CONFIGS_GROUP.resource_name("billing"), "billing");
    }

    #[test]
    fn the_bit_set_has_one_bit_per_operation_code() {
        assert_eq!(operations_bit_set([]), 0);
        assert_eq!(operations_bit_set([Read, Write]), (1 << 3) | (1 << 4));
        assert_eq!(operations_bit_set([TwoPhaseCommit]), 1 << 15);
    }
}
