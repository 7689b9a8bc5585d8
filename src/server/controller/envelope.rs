//! Who asked: the principal and host of the client whose admin request
//! the active controller decides, authorized there again (KRaft's
//! Envelope).
//!
//! The broker that received a request authorizes it against its own copy
//! of the ACLs before it calls the controller, and answers per resource.
//! That copy can lag the committed ACLs by the time an image takes to
//! reach it; the controller decides under its lock on the image of
//! everything committed, so a request whose ACLs were removed a moment
//! before is refused there as a whole, with the error of the first
//! resource the caller may not touch. Requests the broker makes for
//! itself (registration, heartbeats, ISR changes, producer ids, internal
//! topics) carry no caller: the controller channel authenticates their
//! node.

use serde::{Deserialize, Serialize};

use crate::acl::binding::CLUSTER_NAME;
use crate::acl::matrix::{self, Rule};
use crate::acl::{Authorizer, AuthorizerConfig};
use crate::metadata::image::MetadataImage;
use crate::server::controller::{AdminRequest, ControllerError};

/// The client an admin request is decided for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    /// `User:<name>`.
    pub principal: String,
    pub host: String,
}

/// What `request` needs, as (rule, resource name) pairs, each of which
/// must allow it; a topic creation needs one of two, so it is apart.
fn needs(request: &AdminRequest) -> Vec<(Rule, &str)> {
    let cluster = |rule: Rule| vec![(rule, CLUSTER_NAME)];
    match request {
        AdminRequest::CreateTopics { .. } => Vec::new(),
        AdminRequest::DeleteTopics { names } => names
            .iter()
            .map(|n| (matrix::DELETE_TOPICS_TOPIC, n.as_str()))
            .collect(),
        AdminRequest::CreatePartitions { requests, .. } => requests
            .iter()
            .map(|r| (matrix::CREATE_PARTITIONS_TOPIC, r.topic.as_str()))
            .collect(),
        AdminRequest::AlterTopicConfigs { topic, .. } => {
            vec![(matrix::ALTER_CONFIGS_TOPIC, topic.as_str())]
        }
        AdminRequest::AlterGroupConfigs { group, .. } => {
            vec![(matrix::ALTER_CONFIGS_GROUP, group.as_str())]
        }
        AdminRequest::AlterBrokerConfigs { .. } | AdminRequest::AlterOneBrokerConfigs { .. } => {
            cluster(matrix::ALTER_CONFIGS_CLUSTER)
        }
        AdminRequest::ElectLeaders { .. } => cluster(matrix::ELECT_LEADERS),
        AdminRequest::AlterReassignments { .. } => cluster(matrix::ALTER_PARTITION_REASSIGNMENTS),
        AdminRequest::ListReassignments { .. } => cluster(matrix::LIST_PARTITION_REASSIGNMENTS),
        AdminRequest::DescribeQuorum => cluster(matrix::DESCRIBE_QUORUM),
        AdminRequest::UnregisterBroker { .. } => cluster(matrix::UNREGISTER_BROKER),
        AdminRequest::UpdateFeatures { .. } => cluster(matrix::UPDATE_FEATURES),
        AdminRequest::AlterScramCredentials { .. } => cluster(matrix::ALTER_USER_SCRAM_CREDENTIALS),
        AdminRequest::AlterClientQuotas { .. } => cluster(matrix::ALTER_CLIENT_QUOTAS),
        AdminRequest::CreateAcls { .. } => cluster(matrix::CREATE_ACLS),
        AdminRequest::DeleteAcls { .. } => cluster(matrix::DELETE_ACLS),
        // The broker's own requests never carry a caller; one that does
        // needs what Kafka asks of a broker for them.
        AdminRequest::AllocateProducerId
        | AdminRequest::BrokerRegistration { .. }
        | AdminRequest::BrokerHeartbeat { .. }
        | AdminRequest::AlterPartition { .. }
        | AdminRequest::AsCaller { .. } => cluster(matrix::BROKER_TO_CONTROLLER),
    }
}

/// Whether `caller` may make `request` under `config`, by the ACLs of
/// `image`; otherwise the error of the first resource it may not touch.
pub(super) fn authorize(
    config: &AuthorizerConfig,
    image: &MetadataImage,
    caller: &Caller,
    request: &AdminRequest,
) -> Result<(), ControllerError> {
    let authorizer = Authorizer::new(config, &image.acls);
    let allows = |rule: Rule, name: &str| {
        authorizer.authorize(
            &caller.principal,
            &caller.host,
            rule.operation,
            rule.resource_type,
            name,
        )
    };
    let refused = |rule: Rule, name: &str| ControllerError {
        code: rule.denied_error(),
        message: format!(
            "{} may not {:?} {:?} {name:?} (authorized again by the active controller, \
             whose ACLs are the latest)",
            caller.principal, rule.operation, rule.resource_type
        ),
    };
    if let AdminRequest::CreateTopics { topics, .. } = request {
        if allows(matrix::CREATE_TOPICS_CLUSTER, CLUSTER_NAME) {
            return Ok(());
        }
        return match topics
            .iter()
            .find(|t| !allows(matrix::CREATE_TOPICS_TOPIC, &t.name))
        {
            Some(t) => Err(refused(matrix::CREATE_TOPICS_TOPIC, &t.name)),
            None => Ok(()),
        };
    }
    for (rule, name) in needs(request) {
        if !allows(rule, name) {
            return Err(refused(rule, name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::binding::{AccessControlEntry, AclBinding, ResourcePattern};
    use crate::acl::{AclOperation, AclPermissionType, PatternType, ResourceType};
    use crate::controller::NewTopic;

    fn allow(resource_type: ResourceType, name: &str, operation: AclOperation) -> AclBinding {
        AclBinding {
            pattern: ResourcePattern {
                resource_type,
                name: name.into(),
                pattern_type: PatternType::Literal,
            },
            entry: AccessControlEntry {
                principal: "User:alice".into(),
                host: "*".into(),
                operation,
                permission: AclPermissionType::Allow,
            },
        }
    }

    fn image(acls: &[AclBinding]) -> MetadataImage {
        let mut image = MetadataImage::empty();
        for (n, acl) in acls.iter().enumerate() {
            image.acls.add([n as u8; 16], acl.clone());
        }
        image
    }

    fn alice() -> Caller {
        Caller {
            principal: "User:alice".into(),
            host: "10.0.0.1".into(),
        }
    }

    fn config() -> AuthorizerConfig {
        AuthorizerConfig::from_kafka_settings(Some("User:admin"), None).unwrap()
    }

    fn create(names: &[&str]) -> AdminRequest {
        AdminRequest::CreateTopics {
            topics: names
                .iter()
                .map(|n| NewTopic {
                    name: n.to_string(),
                    num_partitions: -1,
                    replication_factor: -1,
                    configs: Vec::new(),
                    assignments: Vec::new(),
                })
                .collect(),
            validate_only: false,
        }
    }

    #[test]
    fn the_controller_refuses_what_its_acls_do_not_allow() {
        let delete = AdminRequest::DeleteTopics {
            names: vec!["orders".into(), "payments".into()],
        };
        // No ACL: the first resource's error.
        let e = authorize(&config(), &image(&[]), &alice(), &delete).unwrap_err();
        assert_eq!(
            e.code,
            crate::protocol::error_code::TOPIC_AUTHORIZATION_FAILED
        );
        assert!(e.message.contains("\"orders\""), "{}", e.message);
        // One topic allowed: still refused, naming the other.
        let one = image(&[allow(ResourceType::Topic, "orders", AclOperation::Delete)]);
        let e = authorize(&config(), &one, &alice(), &delete).unwrap_err();
        assert!(e.message.contains("\"payments\""), "{}", e.message);
        let both = image(&[
            allow(ResourceType::Topic, "orders", AclOperation::Delete),
            allow(ResourceType::Topic, "payments", AclOperation::Delete),
        ]);
        authorize(&config(), &both, &alice(), &delete).unwrap();
        // A super user needs no ACL.
        let admin = Caller {
            principal: "User:admin".into(),
            host: "10.0.0.1".into(),
        };
        authorize(&config(), &image(&[]), &admin, &delete).unwrap();
    }

    #[test]
    fn topics_are_created_with_create_on_the_cluster_or_on_each_topic() {
        let request = create(&["orders", "payments"]);
        let e = authorize(&config(), &image(&[]), &alice(), &request).unwrap_err();
        assert_eq!(
            e.code,
            crate::protocol::error_code::TOPIC_AUTHORIZATION_FAILED
        );
        let on_cluster = image(&[allow(
            ResourceType::Cluster,
            CLUSTER_NAME,
            AclOperation::Create,
        )]);
        authorize(&config(), &on_cluster, &alice(), &request).unwrap();
        let on_one = image(&[allow(ResourceType::Topic, "orders", AclOperation::Create)]);
        assert!(authorize(&config(), &on_one, &alice(), &request).is_err());
        authorize(&config(), &on_one, &alice(), &create(&["orders"])).unwrap();
    }

    #[test]
    fn cluster_requests_need_their_cluster_operation() {
        let quorum = AdminRequest::DescribeQuorum;
        let e = authorize(&config(), &image(&[]), &alice(), &quorum).unwrap_err();
        assert_eq!(
            e.code,
            crate::protocol::error_code::CLUSTER_AUTHORIZATION_FAILED
        );
        let describe = image(&[allow(
            ResourceType::Cluster,
            CLUSTER_NAME,
            AclOperation::Describe,
        )]);
        authorize(&config(), &describe, &alice(), &quorum).unwrap();
        // DESCRIBE is not enough to change the cluster.
        let unregister = AdminRequest::UnregisterBroker { broker_id: 2 };
        assert!(authorize(&config(), &describe, &alice(), &unregister).is_err());
        // No client makes the broker's own requests.
        let heartbeat = AdminRequest::AllocateProducerId;
        assert!(authorize(&config(), &describe, &alice(), &heartbeat).is_err());
    }
}
