//! What one request may do: the connection's principal and host, asked of
//! the authorizer against the image the handler serves from, by the rules
//! of `acl::matrix`.
//!
//! Without an authorizer (`authorizer.class.name` empty, the default)
//! every question is answered yes by one branch, so the hot path pays
//! nothing for it. With one, each question is one lookup in the image's
//! ACL index; handlers ask once per name (per topic, not per partition).

use std::collections::HashSet;

use crate::acl::binding::CLUSTER_NAME;
use crate::acl::matrix::{self, Rule};
use crate::acl::{AclOperation, Authorizer, AuthorizerConfig, ResourceType};
use crate::metadata::image::MetadataImage;
use crate::protocol::error_code;
use crate::security::session::Session;
use crate::server::controller::Caller;

/// The message of a refusal, as Kafka words its authorization errors.
pub const AUTHORIZATION_FAILED: &str = "Authorization failed.";
/// A described consumer or share group whose members hold topics the
/// client may not DESCRIBE is refused whole, in Kafka's words (KAFKA-18813).
pub const DESCRIBED_TOPICS_AUTHORIZATION_FAILED: &str =
    "The group has described topic(s) that the client is not authorized to describe.";

/// A request's access, borrowed for the time it is served.
#[derive(Debug, Clone, Copy)]
pub struct Access<'a> {
    /// `None`: no authorizer, everything allowed.
    authorizer: Option<&'a AuthorizerConfig>,
    principal: &'a str,
    host: &'a str,
    /// The connection the request came on (`Session::connection_id`).
    connection_id: u64,
}

impl<'a> Access<'a> {
    pub fn new(authorizer: Option<&'a AuthorizerConfig>, session: &'a Session) -> Access<'a> {
        Access {
            authorizer,
            principal: &session.principal,
            host: &session.peer_host,
            connection_id: session.connection_id,
        }
    }

    /// Everything allowed: the broker's own calls, and tests.
    pub fn unrestricted() -> Access<'static> {
        Access {
            authorizer: None,
            principal: "",
            host: "",
            connection_id: 0,
        }
    }

    /// Who the active controller decides an admin request for, to
    /// authorize it again there (`server/controller/envelope.rs`); `None`
    /// without an authorizer, when there is nothing to check.
    pub fn caller(&self) -> Option<Caller> {
        self.authorizer.map(|_| Caller {
            principal: self.principal.to_string(),
            host: self.host.to_string(),
        })
    }

    /// The connection the request came on; 0 for the broker's own calls.
    pub fn connection_id(&self) -> u64 {
        self.connection_id
    }

    /// The session's principal (`User:<name>`), which quotas meter.
    pub fn principal(&self) -> &'a str {
        self.principal
    }

    /// Whether an authorizer runs (the ACL APIs answer SECURITY_DISABLED
    /// without one).
    pub fn is_enabled(&self) -> bool {
        self.authorizer.is_some()
    }

    /// Whether `rule` allows the resource named `name`.
    #[inline]
    pub fn allows(&self, image: &MetadataImage, rule: Rule, name: &str) -> bool {
        match self.authorizer {
            None => true,
            Some(config) => Authorizer::new(config, &image.acls).authorize(
                self.principal,
                self.host,
                rule.operation,
                rule.resource_type,
                name,
            ),
        }
    }

    /// Whether `rule` allows the resource a request names `name`; for a
    /// cluster rule, the cluster whatever the name (a broker's configs are
    /// the cluster's to allow).
    pub fn allows_named(&self, image: &MetadataImage, rule: Rule, name: &str) -> bool {
        self.allows(image, rule, rule.resource_name(name))
    }

    /// Those of `names` that `rule` does not allow, each asked once. Empty
    /// without an authorizer, and then nothing is allocated.
    pub fn denied<'n>(
        &self,
        image: &MetadataImage,
        rule: Rule,
        names: impl IntoIterator<Item = &'n str>,
    ) -> HashSet<String> {
        let mut denied = HashSet::new();
        if self.authorizer.is_none() {
            return denied;
        }
        let mut asked: HashSet<&str> = HashSet::new();
        for name in names {
            if asked.insert(name) && !self.allows(image, rule, name) {
                denied.insert(name.to_string());
            }
        }
        denied
    }

    /// Whether a CLUSTER `rule` allows the request.
    pub fn allows_cluster(&self, image: &MetadataImage, rule: Rule) -> bool {
        debug_assert_eq!(rule.resource_type, ResourceType::Cluster);
        self.allows(image, rule, CLUSTER_NAME)
    }

    /// Whether `rule` allows at least one resource of its type (Kafka's
    /// `authorizeByResourceType`).
    pub fn allows_some(&self, image: &MetadataImage, rule: Rule) -> bool {
        match self.authorizer {
            None => true,
            Some(config) => Authorizer::new(config, &image.acls).authorize_by_resource_type(
                self.principal,
                self.host,
                rule.operation,
                rule.resource_type,
            ),
        }
    }

    /// The cluster's authorized operations, as Metadata (v8-10) and
    /// DescribeCluster report them when asked: the bit set to a principal
    /// that may DESCRIBE the cluster, and 0 to anyone else (so that a
    /// principal with, say, CLUSTER_ACTION alone learns nothing of it).
    pub fn cluster_authorized_operations(&self, image: &MetadataImage) -> i32 {
        if self.allows_cluster(image, matrix::DESCRIBE_CLUSTER) {
            self.authorized_operations(image, ResourceType::Cluster, CLUSTER_NAME)
        } else {
            0
        }
    }

    /// The bit set of the operations Kafka reports for the resource
    /// `resource_type`/`name` that this request's principal may perform
    /// (Metadata's and DescribeCluster's authorized operations).
    pub fn authorized_operations(
        &self,
        image: &MetadataImage,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        let ops = matrix::reported_operations(resource_type);
        let allowed = ops
            .iter()
            .copied()
            .filter(|op: &AclOperation| match self.authorizer {
                None => true,
                Some(config) => Authorizer::new(config, &image.acls).authorize(
                    self.principal,
                    self.host,
                    *op,
                    resource_type,
                    name,
                ),
            });
        matrix::operations_bit_set(allowed)
    }
}

/// Kafka's first answer for a partition a request names, before the
/// partition's own checks: a topic the principal may not use gets
/// TOPIC_AUTHORIZATION_FAILED whether it exists or not, so that its
/// existence does not leak; only then does an unknown topic or partition
/// get UNKNOWN_TOPIC_OR_PARTITION. `None`: the partition goes on.
pub fn partition_refusal(topic_denied: bool, partition_known: bool) -> Option<i16> {
    if topic_denied {
        Some(error_code::TOPIC_AUTHORIZATION_FAILED)
    } else if !partition_known {
        Some(error_code::UNKNOWN_TOPIC_OR_PARTITION)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_denied_topic_is_refused_before_its_existence_is_told() {
        assert_eq!(
            partition_refusal(true, false),
            Some(error_code::TOPIC_AUTHORIZATION_FAILED)
        );
        assert_eq!(
            partition_refusal(true, true),
            Some(error_code::TOPIC_AUTHORIZATION_FAILED)
        );
        assert_eq!(
            partition_refusal(false, false),
            Some(error_code::UNKNOWN_TOPIC_OR_PARTITION)
        );
        assert_eq!(partition_refusal(false, true), None);
    }

    #[test]
    fn without_an_authorizer_everything_is_allowed() {
        let image = MetadataImage::empty();
        let access = Access::unrestricted();
        assert!(access.allows_named(&image, matrix::DESCRIBE_CONFIGS_CLUSTER, "1"));
        assert!(access
            .denied(&image, matrix::DELETE_RECORDS_TOPIC, ["a", "b"])
            .is_empty());
    }
}
