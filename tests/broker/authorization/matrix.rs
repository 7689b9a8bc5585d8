//! Kafka's authorization matrix, request by request, as Kafka's
//! `AuthorizerIntegrationTest` walks it: for every API the broker serves,
//! one [`Case`] names the request (sent by a function of `requests.rs`),
//! the error code it answers for the resources it names, and the ACLs that
//! let it through. [`run`] then
//! holds, for each case:
//!
//! 1. with no ACL the answer is the authorization error of a resource the
//!    request names (TOPIC_, GROUP_, TRANSACTIONAL_ID_ or
//!    CLUSTER_AUTHORIZATION_FAILED), in the response, on a connection
//!    that stays open;
//! 2. DESCRIBE on those resources is not enough where more is needed;
//! 3. with the full ACL set the answer is no authorization error;
//! 4. for a topic that does not exist, the same: without ACLs it is
//!    refused exactly as an existing one (its existence does not leak),
//!    and with them the request answers its "unknown" code.
//!
//! What APIs leave out instead of refusing (ListGroups, ListTransactions,
//! a transaction's topics in DescribeTransactions, Metadata for every
//! topic, the authorized-operations bit sets) is checked in
//! `authorization.rs` beside this table.

use pinlog::acl::{AclOperation, AclPermissionType, PatternType, ResourceType};
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code::*;
use pinlog::protocol::messages::{create_acls, delete_acls};

use super::requests::*;
use crate::support::kafka_conn::Conn;

use AclOperation::*;

/// Kafka's name of the one cluster resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// A resource a request names, by kind; [`Names`] gives its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum On {
    Topic,
    Group,
    TransactionalId,
    Cluster,
}

impl On {
    fn resource_type(self) -> ResourceType {
        match self {
            On::Topic => ResourceType::Topic,
            On::Group => ResourceType::Group,
            On::TransactionalId => ResourceType::TransactionalId,
            On::Cluster => ResourceType::Cluster,
        }
    }

    /// Kafka's error for a refusal on this kind of resource.
    fn refusal(self) -> i16 {
        match self {
            On::Topic => TOPIC_AUTHORIZATION_FAILED,
            On::Group => GROUP_AUTHORIZATION_FAILED,
            On::TransactionalId => TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            On::Cluster => CLUSTER_AUTHORIZATION_FAILED,
        }
    }
}

/// The names the cases' requests use.
pub struct Names<'a> {
    pub topic: &'a str,
    pub group: &'a str,
    pub transactional_id: &'a str,
}

impl Names<'_> {
    fn of(&self, on: On) -> &str {
        match on {
            On::Topic => self.topic,
            On::Group => self.group,
            On::TransactionalId => self.transactional_id,
            On::Cluster => CLUSTER_NAME,
        }
    }
}

/// One row of the matrix.
pub struct Case {
    /// The API, and which form of it where one API has several rows.
    pub what: &'static str,
    /// The ACLs (ALLOW for the subject) that let the request through.
    pub acls: &'static [(On, AclOperation)],
    /// Sends the request; the error code it answers for what it names.
    pub call: fn(&mut Conn, &Names) -> i16,
    /// With the ACLs, the answer for a topic that does not exist; `None`
    /// where it depends on more than the topic (a group's state), and only
    /// "not refused" is held.
    pub missing_topic: Option<i16>,
}

impl Case {
    fn names_a_topic(&self) -> bool {
        self.acls.iter().any(|(on, _)| *on == On::Topic)
    }

    fn refusals(&self) -> Vec<i16> {
        self.acls.iter().map(|(on, _)| on.refusal()).collect()
    }
}

/// The super user's hand on the ACLs of the subject principal.
pub struct Acls<'a> {
    pub admin: &'a mut Conn,
    pub principal: &'a str,
}

impl Acls<'_> {
    /// ALLOW `acls` on the resources of `names` for the principal.
    pub fn grant(&mut self, names: &Names, acls: &[(On, AclOperation)]) {
        let creations = acls
            .iter()
            .map(|(on, op)| create_acls::AclCreation {
                resource_type: on.resource_type().code(),
                resource_name: names.of(*on).to_string(),
                resource_pattern_type: PatternType::Literal.code(),
                principal: self.principal.to_string(),
                host: "*".into(),
                operation: op.code(),
                permission_type: AclPermissionType::Allow.code(),
            })
            .collect();
        let req = create_acls::CreateAclsRequest { creations };
        let mut r = self.admin.call(ApiKey::CreateAcls, 3, |w| req.encode(w, 3));
        let resp = create_acls::CreateAclsResponse::decode(&mut r, 3).expect("CreateAcls");
        for result in resp.results {
            assert_eq!(result.error_code, NONE, "CreateAcls: {result:?}");
        }
    }

    /// Removes every ACL of the principal.
    pub fn clear(&mut self) {
        let req = delete_acls::DeleteAclsRequest {
            filters: vec![delete_acls::DeleteAclsFilter {
                resource_type_filter: ResourceType::Any.code(),
                resource_name_filter: None,
                pattern_type_filter: PatternType::Any.code(),
                principal_filter: Some(self.principal.to_string()),
                host_filter: None,
                operation: AclOperation::Any.code(),
                permission_type: AclPermissionType::Any.code(),
            }],
        };
        let mut r = self.admin.call(ApiKey::DeleteAcls, 3, |w| req.encode(w, 3));
        let resp = delete_acls::DeleteAclsResponse::decode(&mut r, 3).expect("DeleteAcls");
        assert_eq!(resp.filter_results[0].error_code, NONE, "DeleteAcls");
    }
}

/// Runs every case of `cases` as the subject on `subject`, against a topic
/// that exists or not; `cases` that name no topic are skipped for a
/// missing one. Returns how many ran.
pub fn run(
    acls: &mut Acls,
    subject: &mut Conn,
    cases: &[Case],
    names: &Names,
    topic_exists: bool,
) -> usize {
    let mut ran = 0;
    for case in cases {
        if !topic_exists && !case.names_a_topic() {
            continue;
        }
        ran += 1;
        let state = if topic_exists { "existing" } else { "missing" };
        let what = format!("{} (topic {} {state})", case.what, names.topic);
        acls.clear();
        let code = (case.call)(subject, names);
        assert!(
            case.refusals().contains(&code),
            "{what} without ACLs answered {code}, not one of {:?}",
            case.refusals()
        );
        if case.acls.iter().any(|(_, op)| *op != Describe) {
            let describe: Vec<(On, AclOperation)> =
                case.acls.iter().map(|(on, _)| (*on, Describe)).collect();
            acls.grant(names, &describe);
            let code = (case.call)(subject, names);
            assert!(
                case.refusals().contains(&code),
                "{what} with DESCRIBE alone answered {code}, not one of {:?}",
                case.refusals()
            );
            acls.clear();
        }
        acls.grant(names, case.acls);
        let code = (case.call)(subject, names);
        assert!(
            !case.refusals().contains(&code),
            "{what} with {:?} is still refused: {code}",
            case.acls
        );
        if let (false, Some(expected)) = (topic_exists, case.missing_topic) {
            assert_eq!(code, expected, "{what} with {:?}", case.acls);
        }
    }
    acls.clear();
    ran
}

/// Every API the broker serves that answers a refusal with an error code,
/// in an order that keeps one case's effects out of the next one's way:
/// the group's offsets are committed before they are deleted, the group
/// deleted after, and the topic deleted last.
pub fn cases() -> Vec<Case> {
    use On::*;
    vec![
        Case {
            what: "Metadata",
            acls: &[(Topic, Describe)],
            call: metadata,
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
        Case {
            what: "Produce",
            acls: &[(Topic, Write)],
            call: |c, n| super::produce(c, n.topic),
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
        Case {
            what: "Fetch",
            acls: &[(Topic, Read)],
            call: |c, n| super::fetch(c, n.topic),
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
        Case {
            what: "ListOffsets",
            acls: &[(Topic, Describe)],
            call: list_offsets,
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
        Case {
            what: "OffsetForLeaderEpoch",
            acls: &[(Topic, Describe)],
            call: offset_for_leader_epoch,
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
        Case {
            what: "DeleteRecords",
            acls: &[(Topic, Delete)],
            call: delete_records,
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
        Case {
            what: "DescribeProducers",
            acls: &[(Topic, Read)],
            call: describe_producers,
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
        Case {
            what: "FindCoordinator (group)",
            acls: &[(Group, Describe)],
            call: |c, n| find_coordinator(c, n.group, 0),
            missing_topic: None,
        },
        Case {
            what: "FindCoordinator (transaction)",
            acls: &[(TransactionalId, Describe)],
            call: |c, n| find_coordinator(c, n.transactional_id, 1),
            missing_topic: None,
        },
        Case {
            what: "FindCoordinator (share)",
            acls: &[(Cluster, ClusterAction)],
            call: find_share_coordinator,
            missing_topic: None,
        },
        Case {
            what: "ReadShareGroupStateSummary",
            acls: &[(Cluster, ClusterAction)],
            call: read_share_group_state_summary,
            missing_topic: None,
        },
        Case {
            what: "OffsetCommit",
            acls: &[(Group, Read), (Topic, Read)],
            call: |c, n| super::offset_commit(c, n.group, n.topic),
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
        Case {
            what: "OffsetFetch",
            acls: &[(Group, Describe), (Topic, Describe)],
            call: offset_fetch,
            missing_topic: None,
        },
        Case {
            what: "OffsetDelete",
            acls: &[(Group, Delete), (Topic, Read)],
            call: offset_delete,
            missing_topic: None,
        },
        Case {
            what: "JoinGroup",
            acls: &[(Group, Read)],
            call: join_group,
            missing_topic: None,
        },
        Case {
            what: "SyncGroup",
            acls: &[(Group, Read)],
            call: sync_group,
            missing_topic: None,
        },
        Case {
            what: "Heartbeat",
            acls: &[(Group, Read)],
            call: heartbeat,
            missing_topic: None,
        },
        Case {
            what: "LeaveGroup",
            acls: &[(Group, Read)],
            call: leave_group,
            missing_topic: None,
        },
        Case {
            what: "DescribeGroups",
            acls: &[(Group, Describe)],
            call: describe_groups,
            missing_topic: None,
        },
        Case {
            what: "ConsumerGroupHeartbeat",
            acls: &[(Group, Read), (Topic, Describe)],
            call: consumer_group_heartbeat,
            missing_topic: None,
        },
        Case {
            what: "ConsumerGroupDescribe",
            acls: &[(Group, Describe)],
            call: consumer_group_describe,
            missing_topic: None,
        },
        Case {
            what: "DeleteGroups",
            acls: &[(Group, Delete)],
            call: delete_groups,
            missing_topic: None,
        },
        Case {
            what: "CreateTopics (validate only)",
            acls: &[(Topic, Create)],
            call: create_topics,
            missing_topic: Some(NONE),
        },
        Case {
            what: "CreatePartitions (validate only)",
            acls: &[(Topic, Alter)],
            call: create_partitions,
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
        Case {
            what: "DescribeConfigs (topic)",
            acls: &[(Topic, DescribeConfigs)],
            call: |c, n| describe_configs(c, TOPIC_CONFIGS, n.topic),
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
        Case {
            what: "DescribeConfigs (broker)",
            acls: &[(Cluster, DescribeConfigs)],
            call: |c, _| describe_configs(c, BROKER_CONFIGS, CLUSTER_WIDE_BROKER),
            missing_topic: None,
        },
        Case {
            what: "AlterConfigs (topic, validate only)",
            acls: &[(Topic, AlterConfigs)],
            call: alter_configs,
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
        Case {
            what: "IncrementalAlterConfigs (topic, validate only)",
            acls: &[(Topic, AlterConfigs)],
            call: |c, n| incremental_alter_configs(c, TOPIC_CONFIGS, n.topic, "retention.ms"),
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
        Case {
            what: "IncrementalAlterConfigs (broker, validate only)",
            acls: &[(Cluster, AlterConfigs)],
            call: |c, _| {
                incremental_alter_configs(
                    c,
                    BROKER_CONFIGS,
                    CLUSTER_WIDE_BROKER,
                    "log.retention.ms",
                )
            },
            missing_topic: None,
        },
        Case {
            what: "ListConfigResources",
            acls: &[(Cluster, DescribeConfigs)],
            call: list_config_resources,
            missing_topic: None,
        },
        Case {
            what: "InitProducerId (transactional)",
            acls: &[(TransactionalId, Write)],
            call: init_producer_id,
            missing_topic: None,
        },
        Case {
            what: "AddPartitionsToTxn (client, v3)",
            acls: &[(TransactionalId, Write), (Topic, Write)],
            call: add_partitions_to_txn,
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
        Case {
            what: "AddPartitionsToTxn (broker batch, v5)",
            acls: &[(Cluster, ClusterAction)],
            call: add_partitions_to_txn_batch,
            missing_topic: None,
        },
        Case {
            what: "AddOffsetsToTxn",
            acls: &[(TransactionalId, Write), (Group, Read)],
            call: add_offsets_to_txn,
            missing_topic: None,
        },
        Case {
            what: "TxnOffsetCommit",
            acls: &[(TransactionalId, Write), (Group, Read), (Topic, Read)],
            call: txn_offset_commit,
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
        Case {
            what: "EndTxn",
            acls: &[(TransactionalId, Write)],
            call: end_txn,
            missing_topic: None,
        },
        Case {
            what: "WriteTxnMarkers",
            acls: &[(Cluster, ClusterAction)],
            call: write_txn_markers,
            missing_topic: None,
        },
        Case {
            what: "DescribeTransactions",
            acls: &[(TransactionalId, Describe)],
            call: describe_transactions,
            missing_topic: None,
        },
        Case {
            what: "ElectLeaders",
            acls: &[(Cluster, Alter)],
            call: elect_leaders,
            missing_topic: None,
        },
        Case {
            what: "AlterPartitionReassignments",
            acls: &[(Cluster, Alter)],
            call: alter_partition_reassignments,
            missing_topic: None,
        },
        Case {
            what: "ListPartitionReassignments",
            acls: &[(Cluster, Describe)],
            call: list_partition_reassignments,
            missing_topic: None,
        },
        Case {
            what: "DescribeLogDirs",
            acls: &[(Cluster, Describe)],
            call: describe_log_dirs,
            missing_topic: None,
        },
        Case {
            what: "DescribeQuorum",
            acls: &[(Cluster, Describe)],
            call: describe_quorum,
            missing_topic: None,
        },
        Case {
            what: "UpdateFeatures (validate only)",
            acls: &[(Cluster, Alter)],
            call: update_features,
            missing_topic: None,
        },
        Case {
            what: "UnregisterBroker",
            acls: &[(Cluster, Alter)],
            call: unregister_broker,
            missing_topic: None,
        },
        Case {
            what: "PartitionShards",
            acls: &[(Cluster, Alter)],
            call: partition_shards,
            missing_topic: None,
        },
        Case {
            what: "CreateAcls",
            acls: &[(Cluster, Alter)],
            call: create_acls,
            missing_topic: None,
        },
        Case {
            what: "DeleteAcls",
            acls: &[(Cluster, Alter)],
            call: delete_acls,
            missing_topic: None,
        },
        Case {
            what: "DescribeAcls",
            acls: &[(Cluster, Describe)],
            call: describe_acls,
            missing_topic: None,
        },
        Case {
            what: "DescribeClientQuotas",
            acls: &[(Cluster, DescribeConfigs)],
            call: describe_client_quotas,
            missing_topic: None,
        },
        Case {
            what: "AlterClientQuotas (validate only)",
            acls: &[(Cluster, AlterConfigs)],
            call: alter_client_quotas,
            missing_topic: None,
        },
        Case {
            what: "DescribeUserScramCredentials",
            acls: &[(Cluster, Describe)],
            call: describe_user_scram_credentials,
            missing_topic: None,
        },
        Case {
            what: "AlterUserScramCredentials",
            acls: &[(Cluster, Alter)],
            call: alter_user_scram_credentials,
            missing_topic: None,
        },
        // Last: it deletes the topic.
        Case {
            what: "DeleteTopics",
            acls: &[(Topic, Delete)],
            call: delete_topics,
            missing_topic: Some(UNKNOWN_TOPIC_OR_PARTITION),
        },
    ]
}
