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
use crate::security::session::Session;

/// A request's access, borrowed for the time it is served.
#[derive(Debug, Clone, Copy)]
pub struct Access<'a> {
    /// `None`: no authorizer, everything allowed.
    authorizer: Option<&'a AuthorizerConfig>,
    principal: &'a str,
    host: &'a str,
}

impl<'a> Access<'a> {
    pub fn new(authorizer: Option<&'a AuthorizerConfig>, session: &'a Session) -> Access<'a> {
        Access {
            authorizer,
            principal: &session.principal,
            host: &session.peer_host,
        }
    }

    /// Everything allowed: the broker's own calls, and tests.
    pub fn unrestricted() -> Access<'static> {
        Access {
            authorizer: None,
            principal: "",
            host: "",
        }
    }

    /// Whether the principal is a super user (always, without an
    /// authorizer).
    pub fn is_super_user(&self) -> bool {
        self.authorizer
            .is_none_or(|config| config.is_super_user(self.principal))
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
