//! The APIs pinlog serves, the versions it implements, and where each API's
//! flexible versions (compact encodings, tagged fields) begin.
//!
//! ApiVersions advertises exactly `SUPPORTED_APIS`, so a client never picks
//! a version we cannot decode. `CODEC_ONLY_APIS` lists the APIs whose codecs
//! exist before the broker serves them.

/// Kafka API keys pinlog knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i16)]
pub enum ApiKey {
    Produce = 0,
    Fetch = 1,
    ListOffsets = 2,
    Metadata = 3,
    OffsetCommit = 8,
    OffsetFetch = 9,
    FindCoordinator = 10,
    JoinGroup = 11,
    Heartbeat = 12,
    LeaveGroup = 13,
    SyncGroup = 14,
    DescribeGroups = 15,
    ListGroups = 16,
    SaslHandshake = 17,
    ApiVersions = 18,
    CreateTopics = 19,
    DeleteTopics = 20,
    DeleteRecords = 21,
    InitProducerId = 22,
    OffsetForLeaderEpoch = 23,
    AddPartitionsToTxn = 24,
    AddOffsetsToTxn = 25,
    EndTxn = 26,
    WriteTxnMarkers = 27,
    TxnOffsetCommit = 28,
    DescribeAcls = 29,
    CreateAcls = 30,
    DeleteAcls = 31,
    DescribeConfigs = 32,
    AlterConfigs = 33,
    DescribeLogDirs = 35,
    SaslAuthenticate = 36,
    CreatePartitions = 37,
    DeleteGroups = 42,
    ElectLeaders = 43,
    IncrementalAlterConfigs = 44,
    AlterPartitionReassignments = 45,
    ListPartitionReassignments = 46,
    OffsetDelete = 47,
    DescribeClientQuotas = 48,
    AlterClientQuotas = 49,
    DescribeUserScramCredentials = 50,
    AlterUserScramCredentials = 51,
    DescribeQuorum = 55,
    UpdateFeatures = 57,
    Envelope = 58,
    DescribeCluster = 60,
    DescribeProducers = 61,
    UnregisterBroker = 64,
    DescribeTransactions = 65,
    ListTransactions = 66,
    ConsumerGroupHeartbeat = 68,
    ConsumerGroupDescribe = 69,
    ListConfigResources = 74,
    ShareGroupHeartbeat = 76,
    ShareGroupDescribe = 77,
    ShareFetch = 78,
    ShareAcknowledge = 79,
    InitializeShareGroupState = 83,
    ReadShareGroupState = 84,
    WriteShareGroupState = 85,
    DeleteShareGroupState = 86,
    ReadShareGroupStateSummary = 87,
    DescribeShareGroupOffsets = 90,
    AlterShareGroupOffsets = 91,
    DeleteShareGroupOffsets = 92,
    /// pinlog's own: shard placement (`protocol/src/messages/partition_shards.rs`).
    PartitionShards = 32_000,
}

/// `first_flexible_version` of an API with no flexible version.
pub const NEVER_FLEXIBLE: i16 = i16::MAX;

/// One row of the version table.
#[derive(Debug, Clone, Copy)]
pub struct ApiSupport {
    pub key: ApiKey,
    pub min_version: i16,
    pub max_version: i16,
    /// First version that uses compact encodings and tagged fields.
    pub first_flexible_version: i16,
}

/// Every API and version range pinlog implements, sorted by key.
pub const SUPPORTED_APIS: &[ApiSupport] = &[
    ApiSupport {
        key: ApiKey::Produce,
        min_version: 3,
        max_version: 12,
        first_flexible_version: 9,
    },
    ApiSupport {
        key: ApiKey::Fetch,
        min_version: 4,
        max_version: 12,
        first_flexible_version: 12,
    },
    ApiSupport {
        key: ApiKey::ListOffsets,
        min_version: 1,
        max_version: 7,
        first_flexible_version: 6,
    },
    ApiSupport {
        key: ApiKey::Metadata,
        min_version: 0,
        max_version: 12,
        first_flexible_version: 9,
    },
    ApiSupport {
        key: ApiKey::OffsetCommit,
        min_version: 2,
        max_version: 10,
        first_flexible_version: 8,
    },
    ApiSupport {
        key: ApiKey::OffsetFetch,
        min_version: 1,
        max_version: 10,
        first_flexible_version: 6,
    },
    ApiSupport {
        key: ApiKey::FindCoordinator,
        min_version: 0,
        max_version: 6,
        first_flexible_version: 3,
    },
    ApiSupport {
        key: ApiKey::JoinGroup,
        min_version: 0,
        max_version: 9,
        first_flexible_version: 6,
    },
    ApiSupport {
        key: ApiKey::Heartbeat,
        min_version: 0,
        max_version: 4,
        first_flexible_version: 4,
    },
    ApiSupport {
        key: ApiKey::LeaveGroup,
        min_version: 0,
        max_version: 5,
        first_flexible_version: 4,
    },
    ApiSupport {
        key: ApiKey::SyncGroup,
        min_version: 0,
        max_version: 5,
        first_flexible_version: 4,
    },
    ApiSupport {
        key: ApiKey::DescribeGroups,
        min_version: 0,
        max_version: 6,
        first_flexible_version: 5,
    },
    ApiSupport {
        key: ApiKey::ListGroups,
        min_version: 0,
        max_version: 5,
        first_flexible_version: 3,
    },
    ApiSupport {
        key: ApiKey::SaslHandshake,
        min_version: 0,
        max_version: 1,
        first_flexible_version: NEVER_FLEXIBLE,
    },
    ApiSupport {
        key: ApiKey::ApiVersions,
        min_version: 0,
        max_version: 4,
        first_flexible_version: 3,
    },
    ApiSupport {
        key: ApiKey::CreateTopics,
        min_version: 2,
        max_version: 7,
        first_flexible_version: 5,
    },
    ApiSupport {
        key: ApiKey::DeleteTopics,
        min_version: 1,
        max_version: 6,
        first_flexible_version: 4,
    },
    ApiSupport {
        key: ApiKey::DeleteRecords,
        min_version: 0,
        max_version: 2,
        first_flexible_version: 2,
    },
    ApiSupport {
        key: ApiKey::InitProducerId,
        min_version: 0,
        max_version: 5,
        first_flexible_version: 2,
    },
    ApiSupport {
        key: ApiKey::OffsetForLeaderEpoch,
        min_version: 2,
        max_version: 4,
        first_flexible_version: 4,
    },
    ApiSupport {
        key: ApiKey::AddPartitionsToTxn,
        min_version: 0,
        max_version: 5,
        first_flexible_version: 3,
    },
    ApiSupport {
        key: ApiKey::AddOffsetsToTxn,
        min_version: 0,
        max_version: 4,
        first_flexible_version: 3,
    },
    ApiSupport {
        key: ApiKey::EndTxn,
        min_version: 0,
        max_version: 5,
        first_flexible_version: 3,
    },
    ApiSupport {
        key: ApiKey::WriteTxnMarkers,
        min_version: 1,
        // v2 carries each marker's transaction version (KIP-890).
        max_version: 2,
        first_flexible_version: 1,
    },
    ApiSupport {
        key: ApiKey::TxnOffsetCommit,
        min_version: 0,
        // v6 names topics by id (KIP-1319).
        max_version: 6,
        first_flexible_version: 3,
    },
    ApiSupport {
        key: ApiKey::DescribeAcls,
        // Kafka 4.0 removed v0 (KIP-896).
        min_version: 1,
        max_version: 3,
        first_flexible_version: 2,
    },
    ApiSupport {
        key: ApiKey::CreateAcls,
        // Kafka 4.0 removed v0 (KIP-896).
        min_version: 1,
        max_version: 3,
        first_flexible_version: 2,
    },
    ApiSupport {
        key: ApiKey::DeleteAcls,
        // Kafka 4.0 removed v0 (KIP-896).
        min_version: 1,
        max_version: 3,
        first_flexible_version: 2,
    },
    ApiSupport {
        key: ApiKey::DescribeConfigs,
        min_version: 1,
        max_version: 4,
        first_flexible_version: 4,
    },
    ApiSupport {
        key: ApiKey::AlterConfigs,
        min_version: 0,
        max_version: 2,
        first_flexible_version: 2,
    },
    ApiSupport {
        key: ApiKey::DescribeLogDirs,
        min_version: 1,
        max_version: 4,
        first_flexible_version: 2,
    },
    ApiSupport {
        key: ApiKey::SaslAuthenticate,
        min_version: 0,
        max_version: 2,
        first_flexible_version: 2,
    },
    ApiSupport {
        key: ApiKey::CreatePartitions,
        min_version: 0,
        max_version: 3,
        first_flexible_version: 2,
    },
    ApiSupport {
        key: ApiKey::DeleteGroups,
        min_version: 0,
        max_version: 2,
        first_flexible_version: 2,
    },
    ApiSupport {
        key: ApiKey::ElectLeaders,
        min_version: 0,
        max_version: 2,
        first_flexible_version: 2,
    },
    ApiSupport {
        key: ApiKey::IncrementalAlterConfigs,
        min_version: 0,
        max_version: 1,
        first_flexible_version: 1,
    },
    ApiSupport {
        key: ApiKey::AlterPartitionReassignments,
        min_version: 0,
        max_version: 1,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::ListPartitionReassignments,
        min_version: 0,
        max_version: 0,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::OffsetDelete,
        min_version: 0,
        max_version: 0,
        first_flexible_version: NEVER_FLEXIBLE,
    },
    ApiSupport {
        key: ApiKey::DescribeClientQuotas,
        min_version: 0,
        max_version: 1,
        first_flexible_version: 1,
    },
    ApiSupport {
        key: ApiKey::AlterClientQuotas,
        min_version: 0,
        max_version: 1,
        first_flexible_version: 1,
    },
    ApiSupport {
        key: ApiKey::DescribeUserScramCredentials,
        min_version: 0,
        max_version: 0,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::AlterUserScramCredentials,
        min_version: 0,
        max_version: 0,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::DescribeQuorum,
        min_version: 0,
        max_version: 2,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::UpdateFeatures,
        min_version: 0,
        max_version: 2,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::DescribeCluster,
        min_version: 0,
        max_version: 2,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::DescribeProducers,
        min_version: 0,
        max_version: 0,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::UnregisterBroker,
        min_version: 0,
        max_version: 0,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::DescribeTransactions,
        min_version: 0,
        max_version: 0,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::ListTransactions,
        min_version: 0,
        max_version: 2,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::ConsumerGroupHeartbeat,
        min_version: 0,
        max_version: 1,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::ConsumerGroupDescribe,
        min_version: 0,
        max_version: 1,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::ListConfigResources,
        min_version: 0,
        max_version: 1,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::ShareGroupHeartbeat,
        min_version: 1,
        max_version: 1,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::ShareGroupDescribe,
        min_version: 1,
        max_version: 1,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::ShareFetch,
        min_version: 1,
        max_version: 2,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::ShareAcknowledge,
        min_version: 1,
        max_version: 2,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::InitializeShareGroupState,
        min_version: 0,
        max_version: 0,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::ReadShareGroupState,
        min_version: 0,
        max_version: 0,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::WriteShareGroupState,
        min_version: 0,
        max_version: 1,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::DeleteShareGroupState,
        min_version: 0,
        max_version: 0,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::ReadShareGroupStateSummary,
        min_version: 0,
        max_version: 1,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::DescribeShareGroupOffsets,
        min_version: 0,
        max_version: 1,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::AlterShareGroupOffsets,
        min_version: 0,
        max_version: 0,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::DeleteShareGroupOffsets,
        min_version: 0,
        max_version: 0,
        first_flexible_version: 0,
    },
    ApiSupport {
        key: ApiKey::PartitionShards,
        min_version: 0,
        max_version: 0,
        first_flexible_version: 0,
    },
];

/// APIs whose codecs pinlog has (`protocol/src/messages/`) but whose broker
/// side does not exist yet, sorted by key, with the versions the codecs
/// implement. They are not in `SUPPORTED_APIS`: ApiVersions does not
/// advertise them, `ApiKey::from_i16` does not know them, and the broker
/// refuses them as it refuses any unknown key. A row moves to
/// `SUPPORTED_APIS` when the broker serves the API.
pub const CODEC_ONLY_APIS: &[ApiSupport] = &[ApiSupport {
    key: ApiKey::Envelope,
    min_version: 0,
    max_version: 0,
    first_flexible_version: 0,
}];

/// KIP-932's share-group APIs (Kafka 4.4's versions; all flexible in every
/// version). ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch and
/// ShareAcknowledge start at v1: their v0 was Kafka 4.0's early access,
/// removed in 4.1. Each sits in `CODEC_ONLY_APIS` until the broker serves
/// it, then in `SUPPORTED_APIS`.
pub const SHARE_GROUP_APIS: &[ApiKey] = &[
    ApiKey::ShareGroupHeartbeat,
    ApiKey::ShareGroupDescribe,
    ApiKey::ShareFetch,
    ApiKey::ShareAcknowledge,
    ApiKey::InitializeShareGroupState,
    ApiKey::ReadShareGroupState,
    ApiKey::WriteShareGroupState,
    ApiKey::DeleteShareGroupState,
    ApiKey::ReadShareGroupStateSummary,
    ApiKey::DescribeShareGroupOffsets,
    ApiKey::AlterShareGroupOffsets,
    ApiKey::DeleteShareGroupOffsets,
];

impl ApiKey {
    /// The API with this key if pinlog serves it: keys of
    /// `CODEC_ONLY_APIS` are unknown here, as to the broker.
    pub fn from_i16(key: i16) -> Option<ApiKey> {
        SUPPORTED_APIS
            .iter()
            .map(|a| a.key)
            .find(|k| *k as i16 == key)
    }

    /// This API's row of `SUPPORTED_APIS`. Panics for an API of
    /// `CODEC_ONLY_APIS`, which the broker does not serve.
    pub fn support(self) -> &'static ApiSupport {
        SUPPORTED_APIS
            .iter()
            .find(|a| a.key == self)
            .expect("every ApiKey outside CODEC_ONLY_APIS has a row in SUPPORTED_APIS")
    }

    /// The versions pinlog's codec implements and where they turn flexible:
    /// the row of `SUPPORTED_APIS`, or else of `CODEC_ONLY_APIS`.
    pub fn codec_support(self) -> &'static ApiSupport {
        SUPPORTED_APIS
            .iter()
            .chain(CODEC_ONLY_APIS)
            .find(|a| a.key == self)
            .expect("every ApiKey has a row in SUPPORTED_APIS or CODEC_ONLY_APIS")
    }

    /// An API of pinlog's own, which Kafka does not have: ApiVersions
    /// leaves it out, so that Kafka's clients and tools never see it.
    pub fn is_pinlog_only(self) -> bool {
        self == ApiKey::PartitionShards
    }

    /// Whether the broker serves `version` of this API: never for an API of
    /// `CODEC_ONLY_APIS`.
    pub fn supports(self, version: i16) -> bool {
        SUPPORTED_APIS
            .iter()
            .find(|a| a.key == self)
            .is_some_and(|s| (s.min_version..=s.max_version).contains(&version))
    }

    /// Whether `version` of this API uses compact encodings and tagged
    /// fields (so also for an API of `CODEC_ONLY_APIS`).
    pub fn is_flexible(self, version: i16) -> bool {
        version >= self.codec_support().first_flexible_version
    }

    /// Request header version for `version` of this API: 2 when flexible,
    /// else 1. (ApiVersions requests use header v2 from v3 on, too.)
    pub fn request_header_version(self, version: i16) -> i16 {
        if self.is_flexible(version) {
            2
        } else {
            1
        }
    }

    /// Response header version: 1 when flexible, else 0, except that
    /// ApiVersions responses always use header v0 so that a client can read
    /// them before it knows which versions the broker supports.
    pub fn response_header_version(self, version: i16) -> i16 {
        if self == ApiKey::ApiVersions || !self.is_flexible(version) {
            0
        } else {
            1
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ApiKey::Produce => "Produce",
            ApiKey::Fetch => "Fetch",
            ApiKey::ListOffsets => "ListOffsets",
            ApiKey::Metadata => "Metadata",
            ApiKey::OffsetCommit => "OffsetCommit",
            ApiKey::FindCoordinator => "FindCoordinator",
            ApiKey::JoinGroup => "JoinGroup",
            ApiKey::Heartbeat => "Heartbeat",
            ApiKey::LeaveGroup => "LeaveGroup",
            ApiKey::SyncGroup => "SyncGroup",
            ApiKey::OffsetForLeaderEpoch => "OffsetForLeaderEpoch",
            ApiKey::ApiVersions => "ApiVersions",
            ApiKey::CreateTopics => "CreateTopics",
            ApiKey::DeleteTopics => "DeleteTopics",
            ApiKey::InitProducerId => "InitProducerId",
            ApiKey::DescribeConfigs => "DescribeConfigs",
            ApiKey::AlterConfigs => "AlterConfigs",
            ApiKey::CreatePartitions => "CreatePartitions",
            ApiKey::ElectLeaders => "ElectLeaders",
            ApiKey::IncrementalAlterConfigs => "IncrementalAlterConfigs",
            ApiKey::AlterPartitionReassignments => "AlterPartitionReassignments",
            ApiKey::ListPartitionReassignments => "ListPartitionReassignments",
            ApiKey::DescribeQuorum => "DescribeQuorum",
            ApiKey::UpdateFeatures => "UpdateFeatures",
            ApiKey::DescribeCluster => "DescribeCluster",
            ApiKey::UnregisterBroker => "UnregisterBroker",
            ApiKey::ListConfigResources => "ListConfigResources",
            ApiKey::PartitionShards => "PartitionShards",
            ApiKey::OffsetFetch => "OffsetFetch",
            ApiKey::DescribeGroups => "DescribeGroups",
            ApiKey::ListGroups => "ListGroups",
            ApiKey::DeleteRecords => "DeleteRecords",
            ApiKey::DescribeLogDirs => "DescribeLogDirs",
            ApiKey::DeleteGroups => "DeleteGroups",
            ApiKey::OffsetDelete => "OffsetDelete",
            ApiKey::AddPartitionsToTxn => "AddPartitionsToTxn",
            ApiKey::AddOffsetsToTxn => "AddOffsetsToTxn",
            ApiKey::EndTxn => "EndTxn",
            ApiKey::WriteTxnMarkers => "WriteTxnMarkers",
            ApiKey::TxnOffsetCommit => "TxnOffsetCommit",
            ApiKey::DescribeProducers => "DescribeProducers",
            ApiKey::DescribeTransactions => "DescribeTransactions",
            ApiKey::ListTransactions => "ListTransactions",
            ApiKey::SaslHandshake => "SaslHandshake",
            ApiKey::DescribeAcls => "DescribeAcls",
            ApiKey::CreateAcls => "CreateAcls",
            ApiKey::DeleteAcls => "DeleteAcls",
            ApiKey::SaslAuthenticate => "SaslAuthenticate",
            ApiKey::DescribeClientQuotas => "DescribeClientQuotas",
            ApiKey::AlterClientQuotas => "AlterClientQuotas",
            ApiKey::DescribeUserScramCredentials => "DescribeUserScramCredentials",
            ApiKey::AlterUserScramCredentials => "AlterUserScramCredentials",
            ApiKey::Envelope => "Envelope",
            ApiKey::ConsumerGroupHeartbeat => "ConsumerGroupHeartbeat",
            ApiKey::ConsumerGroupDescribe => "ConsumerGroupDescribe",
            ApiKey::ShareGroupHeartbeat => "ShareGroupHeartbeat",
            ApiKey::ShareGroupDescribe => "ShareGroupDescribe",
            ApiKey::ShareFetch => "ShareFetch",
            ApiKey::ShareAcknowledge => "ShareAcknowledge",
            ApiKey::InitializeShareGroupState => "InitializeShareGroupState",
            ApiKey::ReadShareGroupState => "ReadShareGroupState",
            ApiKey::WriteShareGroupState => "WriteShareGroupState",
            ApiKey::DeleteShareGroupState => "DeleteShareGroupState",
            ApiKey::ReadShareGroupStateSummary => "ReadShareGroupStateSummary",
            ApiKey::DescribeShareGroupOffsets => "DescribeShareGroupOffsets",
            ApiKey::AlterShareGroupOffsets => "AlterShareGroupOffsets",
            ApiKey::DeleteShareGroupOffsets => "DeleteShareGroupOffsets",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        for a in SUPPORTED_APIS {
            assert!(a.min_version <= a.max_version, "{:?}", a.key);
            assert_eq!(ApiKey::from_i16(a.key as i16), Some(a.key));
        }
        assert!(
            SUPPORTED_APIS
                .windows(2)
                .all(|w| (w[0].key as i16) < (w[1].key as i16)),
            "SUPPORTED_APIS is sorted by key, without duplicates"
        );
        assert_eq!(ApiKey::from_i16(999), None);
        assert_eq!(ApiKey::ApiVersions.response_header_version(3), 0);
        assert_eq!(ApiKey::Fetch.response_header_version(12), 1);
        assert_eq!(ApiKey::Fetch.request_header_version(11), 1);
    }

    #[test]
    fn share_group_apis_are_flexible_in_every_version() {
        assert_eq!(SHARE_GROUP_APIS.len(), 12);
        for key in SHARE_GROUP_APIS {
            let a = key.codec_support();
            assert!(a.min_version <= a.max_version, "{key:?}");
            assert_eq!(a.first_flexible_version, 0, "{key:?}");
            assert!(!key.name().is_empty());
        }
        assert_eq!(ApiKey::ShareFetch.codec_support().max_version, 2);
        assert_eq!(ApiKey::from_i16(80), None);
    }

    #[test]
    fn codec_only_apis_are_neither_known_nor_served() {
        assert!(
            CODEC_ONLY_APIS
                .windows(2)
                .all(|w| (w[0].key as i16) < (w[1].key as i16)),
            "CODEC_ONLY_APIS is sorted by key, without duplicates"
        );
        for a in CODEC_ONLY_APIS {
            assert!(a.min_version <= a.max_version, "{:?}", a.key);
            assert!(
                SUPPORTED_APIS.iter().all(|s| s.key != a.key),
                "{:?} is in both tables",
                a.key
            );
            assert_eq!(ApiKey::from_i16(a.key as i16), None, "{:?}", a.key);
            for v in a.min_version..=a.max_version {
                assert!(!a.key.supports(v), "{:?} v{v}", a.key);
            }
            assert_eq!(a.key.codec_support().max_version, a.max_version);
        }
        assert!(ApiKey::EndTxn.is_flexible(3) && !ApiKey::EndTxn.is_flexible(2));
        assert_eq!(ApiKey::EndTxn.request_header_version(3), 2);
        assert_eq!(ApiKey::ListTransactions.response_header_version(0), 1);
        assert_eq!(ApiKey::InitProducerId.codec_support().max_version, 5);
        // SaslHandshake never turned flexible (KAFKA-9577); Envelope always
        // was; the ACL APIs turn flexible at v2, one past their first.
        assert_eq!(ApiKey::SaslHandshake.request_header_version(1), 1);
        assert_eq!(ApiKey::SaslHandshake.response_header_version(1), 0);
        assert_eq!(ApiKey::Envelope.response_header_version(0), 1);
        assert!(!ApiKey::DescribeAcls.is_flexible(1) && ApiKey::DescribeAcls.is_flexible(2));
        assert_eq!(ApiKey::DeleteAcls.codec_support().min_version, 1);
    }
}
