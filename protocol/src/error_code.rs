//! Kafka error codes pinlog returns (Kafka's `Errors` enum).

pub const NONE: i16 = 0;
pub const UNKNOWN_SERVER_ERROR: i16 = -1;
pub const OFFSET_OUT_OF_RANGE: i16 = 1;
pub const CORRUPT_MESSAGE: i16 = 2;
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
pub const INVALID_FETCH_SIZE: i16 = 4;
pub const LEADER_NOT_AVAILABLE: i16 = 5;
pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
pub const REQUEST_TIMED_OUT: i16 = 7;
pub const MESSAGE_TOO_LARGE: i16 = 10;
pub const INVALID_TOPIC_EXCEPTION: i16 = 17;
pub const RECORD_LIST_TOO_LARGE: i16 = 18;
pub const NOT_ENOUGH_REPLICAS: i16 = 19;
pub const INVALID_REQUIRED_ACKS: i16 = 21;
pub const UNSUPPORTED_FOR_MESSAGE_FORMAT: i16 = 43;
pub const INVALID_TIMESTAMP: i16 = 32;
pub const UNSUPPORTED_VERSION: i16 = 35;
pub const TOPIC_ALREADY_EXISTS: i16 = 36;
pub const INVALID_PARTITIONS: i16 = 37;
pub const INVALID_REPLICATION_FACTOR: i16 = 38;
pub const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
pub const INVALID_CONFIG: i16 = 40;
pub const INVALID_REQUEST: i16 = 42;
pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
pub const DUPLICATE_SEQUENCE_NUMBER: i16 = 46;
pub const INVALID_PRODUCER_EPOCH: i16 = 47;
pub const INVALID_TXN_STATE: i16 = 48;
pub const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
pub const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
pub const CONCURRENT_TRANSACTIONS: i16 = 51;
pub const TRANSACTION_COORDINATOR_FENCED: i16 = 52;
pub const UNSTABLE_OFFSET_COMMIT: i16 = 88;
pub const OPERATION_NOT_ATTEMPTED: i16 = 55;
pub const POLICY_VIOLATION: i16 = 44;
pub const UNKNOWN_PRODUCER_ID: i16 = 59;
pub const KAFKA_STORAGE_ERROR: i16 = 56;
pub const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
pub const INVALID_FETCH_SESSION_EPOCH: i16 = 71;
pub const FENCED_LEADER_EPOCH: i16 = 74;
pub const UNKNOWN_LEADER_EPOCH: i16 = 75;
pub const OFFSET_NOT_AVAILABLE: i16 = 78;
pub const PRODUCER_FENCED: i16 = 90;
pub const INVALID_RECORD: i16 = 87;
pub const UNSUPPORTED_COMPRESSION_TYPE: i16 = 76;
pub const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;
/// KIP-890: the transaction must be aborted (e.g. a partition the
/// coordinator does not know is in it); a v11+ producer aborts and goes on.
pub const TRANSACTION_ABORTABLE: i16 = 120;

// Consumer groups.
pub const OFFSET_METADATA_TOO_LARGE: i16 = 12;
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
pub const NOT_COORDINATOR: i16 = 16;
pub const ILLEGAL_GENERATION: i16 = 22;
pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
pub const INVALID_GROUP_ID: i16 = 24;
pub const UNKNOWN_MEMBER_ID: i16 = 25;
pub const INVALID_SESSION_TIMEOUT: i16 = 26;
pub const REBALANCE_IN_PROGRESS: i16 = 27;
pub const INVALID_COMMIT_OFFSET_SIZE: i16 = 28;
pub const NON_EMPTY_GROUP: i16 = 68;
pub const GROUP_ID_NOT_FOUND: i16 = 69;
pub const MEMBER_ID_REQUIRED: i16 = 79;
pub const GROUP_MAX_SIZE_REACHED: i16 = 81;
pub const FENCED_INSTANCE_ID: i16 = 82;
pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
/// KIP-848: an OffsetCommit or OffsetFetch of a consumer-group member whose
/// member epoch is not the coordinator's (the member retries with its
/// current one).
pub const STALE_MEMBER_EPOCH: i16 = 113;
// Share groups (KIP-932).
/// An acknowledgement of a record the member does not hold: not acquired
/// (any more), acquired by another member, or below the share-partition
/// start offset.
pub const INVALID_RECORD_STATE: i16 = 121;
pub const SHARE_SESSION_NOT_FOUND: i16 = 122;
pub const INVALID_SHARE_SESSION_EPOCH: i16 = 123;
/// The share coordinator refused a state write of an older state epoch.
pub const FENCED_STATE_EPOCH: i16 = 124;
/// `group.share.max.share.sessions` sessions exist already (Kafka 4.1).
pub const SHARE_SESSION_LIMIT_REACHED: i16 = 133;
// The broker lifecycle (KRaft's BrokerRegistration and BrokerHeartbeat).
pub const NOT_CONTROLLER: i16 = 41;
pub const STALE_BROKER_EPOCH: i16 = 77;
pub const DUPLICATE_BROKER_REGISTRATION: i16 = 101;
pub const INCONSISTENT_CLUSTER_ID: i16 = 104;
pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: i16 = 20;
/// AlterPartition: the partition epoch the leader based its change on is
/// not the current one.
pub const INVALID_UPDATE_VERSION: i16 = 95;
/// AlterPartition: a proposed ISR member is fenced, shutting down, or its
/// broker epoch is stale (KIP-903).
pub const INELIGIBLE_REPLICA: i16 = 107;
/// AlterPartition: a new leader was elected; the old one's change is moot.
pub const NEW_LEADER_ELECTED: i16 = 108;
pub const UNKNOWN_TOPIC_ID: i16 = 100;

// Leader elections (ElectLeaders, KIP-183 and KIP-460).
pub const PREFERRED_LEADER_NOT_AVAILABLE: i16 = 80;
pub const ELIGIBLE_LEADERS_NOT_AVAILABLE: i16 = 83;
pub const ELECTION_NOT_NEEDED: i16 = 84;
// Partition reassignment (KIP-455).
/// A cancel of a partition that is not being reassigned.
pub const NO_REASSIGNMENT_IN_PROGRESS: i16 = 85;

// Client quotas (KIP-599).
/// CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+: a topic
/// refused because its client's `controller_mutation_rate` is in debt.
pub const THROTTLING_QUOTA_EXCEEDED: i16 = 89;
/// Kafka's message for [`THROTTLING_QUOTA_EXCEEDED`].
pub const THROTTLING_QUOTA_EXCEEDED_MESSAGE: &str = "The throttling quota has been exceeded.";

/// UnregisterBroker of a broker id with no registration.
pub const BROKER_ID_NOT_REGISTERED: i16 = 102;

// SASL and SCRAM credentials (issue 31).
/// SaslHandshake: the mechanism is not enabled on the listener.
pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
/// A SASL request out of order (a second handshake, an authenticate
/// before the handshake).
pub const ILLEGAL_SASL_STATE: i16 = 34;
pub const SASL_AUTHENTICATION_FAILED: i16 = 58;
/// DescribeUserScramCredentials of a user with no credential.
pub const RESOURCE_NOT_FOUND: i16 = 91;
/// A user named twice in one Describe/AlterUserScramCredentials request.
pub const DUPLICATE_RESOURCE: i16 = 92;
/// AlterUserScramCredentials: iterations out of range, an empty name.
pub const UNACCEPTABLE_CREDENTIAL: i16 = 93;

// Authorization (issue 31): a request the authorizer refused, by the kind
// of resource it was refused on.
pub const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
pub const GROUP_AUTHORIZATION_FAILED: i16 = 30;
pub const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
/// The ACL APIs on a broker without an authorizer (Kafka's
/// `SecurityDisabledException`).
pub const SECURITY_DISABLED: i16 = 54;
