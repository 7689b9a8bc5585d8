//! The authorizer: whether a principal, connected from a host, may perform
//! an operation on a resource, by the cluster's ACLs and two settings, with
//! the rules of Kafka's `StandardAuthorizer` (KIP-801).
//!
//! The rules, in order:
//! 1. A super user (`super.users`) may do everything, ACLs or not.
//! 2. The ACLs that apply to a resource are the literal ones on its name,
//!    the literal `*`, and the prefixed ones whose name starts it.
//! 3. Of those, an ACL matches a request when its principal is the
//!    request's or `User:*`, its host is the client's or `*`, and its
//!    operation is the request's or `ALL`. An ALLOW of READ, WRITE, DELETE
//!    or ALTER matches DESCRIBE too, and an ALLOW of ALTER_CONFIGS matches
//!    DESCRIBE_CONFIGS; a DENY implies nothing (a DENY of READ leaves
//!    DESCRIBE as the ALLOWs decide it), except that a DENY of ALL denies
//!    everything.
//! 4. A matching DENY wins over every matching ALLOW.
//! 5. With no matching ACL, the request is denied if any ACL applies to the
//!    resource (for any principal, host or operation), and otherwise
//!    `allow.everyone.if.no.acl.found` decides (default false).
//!
//! The authorizer borrows the image's ACLs and the settings, so a request
//! handler makes one per request for nothing, and every shard decides from
//! the image it holds.

use std::collections::HashSet;
use std::ops::ControlFlow;

use crate::acl::binding::{parse_principal, AccessControlEntry, WILDCARD, WILDCARD_PRINCIPAL};
use crate::acl::store::AclImage;
use crate::acl::types::{AclOperation, AclPermissionType, PatternType, ResourceType};

/// Kafka's setting of the principals that may do everything.
pub const SUPER_USERS_CONFIG: &str = "super.users";
/// Kafka's setting of what a resource without ACLs allows.
pub const ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG: &str = "allow.everyone.if.no.acl.found";

/// The resource name `authorize_by_resource_type` first authorizes, as
/// Kafka's default implementation does: a super user (or a wildcard ALLOW,
/// or `allow.everyone.if.no.acl.found` on a type without wildcard ACLs) is
/// allowed through it before the ACLs are read one by one. The name is
/// Kafka's, so a prefixed ACL that happens to start it decides the same.
const RESOURCE_TYPE_PROBE_NAME: &str = "hardcode";

/// The operations an ALLOW of which also allows DESCRIBE.
const IMPLIES_DESCRIBE: [AclOperation; 5] = [
    AclOperation::Describe,
    AclOperation::Read,
    AclOperation::Write,
    AclOperation::Delete,
    AclOperation::Alter,
];

/// The operations an ALLOW of which also allows DESCRIBE_CONFIGS.
const IMPLIES_DESCRIBE_CONFIGS: [AclOperation; 2] =
    [AclOperation::DescribeConfigs, AclOperation::AlterConfigs];

/// The authorizer's settings, from Kafka's two.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// Principals (`User:admin`) allowed everything.
    pub super_users: Vec<String>,
    /// What a resource no ACL applies to allows. Default false.
    pub allow_everyone_if_no_acl_found: bool,
}

impl AuthorizerConfig {
    /// The settings from the values of Kafka's `super.users` (principals
    /// separated by semicolons, since a TLS principal contains commas) and
    /// `allow.everyone.if.no.acl.found`, either absent. A super user that
    /// is not `Type:name` is refused, as Kafka refuses it at startup. The
    /// flag is true only for `true` in any case, as Java's
    /// `Boolean.parseBoolean` reads it: anything else denies.
    pub fn from_kafka_settings(
        super_users: Option<&str>,
        allow_everyone_if_no_acl_found: Option<&str>,
    ) -> Result<AuthorizerConfig, String> {
        let mut users = Vec::new();
        for user in super_users.unwrap_or("").split(';').map(str::trim) {
            if user.is_empty() {
                continue;
            }
            if parse_principal(user).is_none() {
                return Err(format!(
                    "{SUPER_USERS_CONFIG}: expected a string in format \
                     principalType:principalName but got {user}"
                ));
            }
            if !users.iter().any(|u| u == user) {
                users.push(user.to_string());
            }
        }
        Ok(AuthorizerConfig {
            super_users: users,
            allow_everyone_if_no_acl_found: allow_everyone_if_no_acl_found
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        })
    }

    pub fn is_super_user(&self, principal: &str) -> bool {
        self.super_users.iter().any(|u| u == principal)
    }
}

/// Decides requests against one image's ACLs.
#[derive(Debug, Clone, Copy)]
pub struct Authorizer<'a> {
    config: &'a AuthorizerConfig,
    acls: &'a AclImage,
}

/// What one ACL says about a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Allow,
    Deny,
}

impl<'a> Authorizer<'a> {
    pub fn new(config: &'a AuthorizerConfig, acls: &'a AclImage) -> Authorizer<'a> {
        Authorizer { config, acls }
    }

    /// Whether `principal` (`User:alice`), connected from `host` (the
    /// client's address), may perform `operation` on the resource
    /// `resource_type`/`resource_name`. See the module's rules.
    pub fn authorize(
        &self,
        principal: &str,
        host: &str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: &str,
    ) -> bool {
        if self.config.is_super_user(principal) {
            return true;
        }
        let mut any_acl_applies = false;
        let mut allowed = false;
        let flow = self
            .acls
            .visit_applicable(resource_type, resource_name, |entry| {
                any_acl_applies = true;
                match verdict(entry, principal, host, operation) {
                    Some(Verdict::Deny) => ControlFlow::Break(()),
                    Some(Verdict::Allow) => {
                        allowed = true;
                        ControlFlow::Continue(())
                    }
                    None => ControlFlow::Continue(()),
                }
            });
        if flow.is_break() {
            return false;
        }
        if allowed {
            return true;
        }
        !any_acl_applies && self.config.allow_everyone_if_no_acl_found
    }

    /// Whether `principal` from `host` may perform `operation` on at least
    /// one resource of `resource_type` (Kafka's
    /// `Authorizer.authorizeByResourceType`: WRITE on some topic for an
    /// idempotent producer's InitProducerId). Kafka's default
    /// implementation, which `StandardAuthorizer` keeps:
    /// 1. allowed if [`authorize`](Self::authorize) allows the operation on
    ///    a resource named `hardcode` (super users, a wildcard ALLOW, or no
    ///    ACL and `allow.everyone.if.no.acl.found`);
    /// 2. otherwise, of the ACLs of the type that name this principal (or
    ///    `User:*`) and host (or `*`) and whose operation is this one or
    ///    ALL, with nothing implied: denied by a literal `*` DENY, allowed
    ///    by a literal `*` ALLOW, and allowed by any other ALLOW that no
    ///    DENY shadows. A literal ALLOW is shadowed by a literal DENY of
    ///    the same name; any ALLOW by a prefixed DENY that starts its name.
    ///
    /// An ANY or UNKNOWN operation or type is a caller's mistake (Kafka
    /// throws); it is denied.
    pub fn authorize_by_resource_type(
        &self,
        principal: &str,
        host: &str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        if matches!(operation, AclOperation::Any | AclOperation::Unknown)
            || matches!(resource_type, ResourceType::Any | ResourceType::Unknown)
        {
            return false;
        }
        if self.authorize(
            principal,
            host,
            operation,
            resource_type,
            RESOURCE_TYPE_PROBE_NAME,
        ) {
            return true;
        }
        let mut deny_literal: HashSet<&str> = HashSet::new();
        let mut deny_prefixed: HashSet<&str> = HashSet::new();
        let mut allow_literal: HashSet<&str> = HashSet::new();
        let mut allow_prefixed: HashSet<&str> = HashSet::new();
        let mut wildcard_allowed = false;
        for (pattern_type, name, entry) in self.acls.of_type(resource_type) {
            if !host_matches(entry, host) || !principal_matches(entry, principal) {
                continue;
            }
            if entry.operation != operation && entry.operation != AclOperation::All {
                continue;
            }
            match (entry.permission, pattern_type) {
                (AclPermissionType::Deny, PatternType::Literal) if name == WILDCARD => {
                    return false;
                }
                (AclPermissionType::Deny, PatternType::Literal) => {
                    deny_literal.insert(name);
                }
                (AclPermissionType::Deny, PatternType::Prefixed) => {
                    deny_prefixed.insert(name);
                }
                (AclPermissionType::Allow, PatternType::Literal) if name == WILDCARD => {
                    wildcard_allowed = true;
                }
                (AclPermissionType::Allow, PatternType::Literal) => {
                    allow_literal.insert(name);
                }
                (AclPermissionType::Allow, PatternType::Prefixed) => {
                    allow_prefixed.insert(name);
                }
                _ => {}
            }
        }
        if wildcard_allowed {
            return true;
        }
        // Kafka looks for a prefixed DENY among the name's prefixes of one
        // character and more: an empty prefixed DENY shadows nothing.
        let shadowed_by_prefix = |name: &str| {
            name.char_indices()
                .any(|(i, c)| deny_prefixed.contains(&name[..i + c.len_utf8()]))
        };
        allow_literal
            .iter()
            .any(|name| !deny_literal.contains(name) && !shadowed_by_prefix(name))
            || allow_prefixed.iter().any(|name| !shadowed_by_prefix(name))
    }
}

fn principal_matches(entry: &AccessControlEntry, principal: &str) -> bool {
    entry.principal == principal || entry.principal == WILDCARD_PRINCIPAL
}

fn host_matches(entry: &AccessControlEntry, host: &str) -> bool {
    entry.host == WILDCARD || entry.host == host
}

/// What `entry` (on a pattern that applies to the resource) says about the
/// request, or `None` when it does not match it (Kafka's
/// `StandardAuthorizerData.findResult`). Any permission but ALLOW denies,
/// as in Kafka: only a damaged log holds another one.
fn verdict(
    entry: &AccessControlEntry,
    principal: &str,
    host: &str,
    operation: AclOperation,
) -> Option<Verdict> {
    if !principal_matches(entry, principal) || !host_matches(entry, host) {
        return None;
    }
    let allows = entry.permission == AclPermissionType::Allow;
    if entry.operation != AclOperation::All {
        let matches = match operation {
            AclOperation::Describe if allows => IMPLIES_DESCRIBE.contains(&entry.operation),
            AclOperation::DescribeConfigs if allows => {
                IMPLIES_DESCRIBE_CONFIGS.contains(&entry.operation)
            }
            _ => entry.operation == operation,
        };
        if !matches {
            return None;
        }
    }
    Some(if allows {
        Verdict::Allow
    } else {
        Verdict::Deny
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::binding::tests::acl;
    use crate::acl::binding::{AclBinding, CLUSTER_NAME};
    use crate::acl::store::AclId;
    use AclOperation::*;
    use AclPermissionType::{Allow as ALLOW, Deny as DENY};
    use PatternType::{Literal as LITERAL, Prefixed as PREFIXED};
    use ResourceType::{Cluster, Group, Topic, TransactionalId};

    const ALICE: &str = "User:alice";
    const HOST: &str = "10.0.0.1";

    /// An image of `acls`, each under its own id.
    fn image(acls: &[&AclBinding]) -> AclImage {
        let mut image = AclImage::new();
        for (n, a) in acls.iter().enumerate() {
            let id: AclId = [n as u8; 16];
            image.add(id, (*a).clone());
        }
        image
    }

    /// An ACL for alice from every host.
    fn alice(
        resource_type: ResourceType,
        name: &str,
        pattern_type: PatternType,
        op: AclOperation,
        permission: AclPermissionType,
    ) -> AclBinding {
        acl(
            resource_type,
            name,
            pattern_type,
            ALICE,
            "*",
            op,
            permission,
        )
    }

    fn deny_by_default() -> AuthorizerConfig {
        AuthorizerConfig::default()
    }

    fn allowed(acls: &[&AclBinding], op: AclOperation, topic: &str) -> bool {
        let config = deny_by_default();
        let image = image(acls);
        Authorizer::new(&config, &image).authorize(ALICE, HOST, op, Topic, topic)
    }

    #[test]
    fn a_super_user_is_allowed_everything_even_when_denied() {
        let config =
            AuthorizerConfig::from_kafka_settings(Some(" User:admin ;; User:ops"), None).unwrap();
        assert_eq!(config.super_users, vec!["User:admin", "User:ops"]);
        let image = image(&[&acl(Topic, "*", LITERAL, "User:*", "*", All, DENY)]);
        let authorizer = Authorizer::new(&config, &image);
        assert!(authorizer.authorize("User:admin", HOST, Write, Topic, "orders"));
        assert!(authorizer.authorize("User:ops", HOST, Alter, Cluster, CLUSTER_NAME));
        assert!(!authorizer.authorize(ALICE, HOST, Write, Topic, "orders"));
        // A super user is matched by the whole principal, type included.
        assert!(!authorizer.authorize("Group:admin", HOST, Write, Topic, "orders"));
        assert!(authorizer.authorize_by_resource_type("User:admin", HOST, Write, Topic));
    }

    #[test]
    fn settings_parse_as_kafka_reads_them() {
        assert_eq!(
            AuthorizerConfig::from_kafka_settings(None, None),
            Ok(AuthorizerConfig::default())
        );
        for (text, expected) in [
            ("true", true),
            (" TRUE ", true),
            ("yes", false),
            ("", false),
        ] {
            let config = AuthorizerConfig::from_kafka_settings(None, Some(text)).unwrap();
            assert_eq!(config.allow_everyone_if_no_acl_found, expected, "{text:?}");
        }
        let refused = AuthorizerConfig::from_kafka_settings(Some("User:a;bob"), None);
        assert!(refused.unwrap_err().contains("but got bob"));
    }

    #[test]
    fn an_acl_for_another_principal_does_not_match_but_user_star_does() {
        let bob = acl(Topic, "orders", LITERAL, "User:bob", "*", Read, ALLOW);
        assert!(!allowed(&[&bob], Read, "orders"));
        let everyone = acl(Topic, "orders", LITERAL, "User:*", "*", Read, ALLOW);
        assert!(allowed(&[&bob, &everyone], Read, "orders"));
        // Only `User:*` is the wildcard principal.
        let group_star = acl(Topic, "orders", LITERAL, "Group:*", "*", Read, ALLOW);
        assert!(!allowed(&[&group_star], Read, "orders"));
    }

    #[test]
    fn an_acl_matches_its_host_or_every_host() {
        let here = acl(Topic, "orders", LITERAL, ALICE, HOST, Read, ALLOW);
        let there = acl(Topic, "orders", LITERAL, ALICE, "10.0.0.2", Read, ALLOW);
        assert!(allowed(&[&here], Read, "orders"));
        assert!(!allowed(&[&there], Read, "orders"));
        let deny_there = acl(Topic, "orders", LITERAL, ALICE, "10.0.0.2", Read, DENY);
        assert!(allowed(&[&here, &deny_there], Read, "orders"));
    }

    #[test]
    fn a_deny_wins_over_every_allow() {
        let allow = alice(Topic, "orders", LITERAL, Read, ALLOW);
        let deny_everyone = acl(Topic, "orders", LITERAL, "User:*", "*", Read, DENY);
        assert!(!allowed(&[&allow, &deny_everyone], Read, "orders"));
        // A deny on a prefix or the wildcard wins over an allow on the name.
        let deny_prefix = alice(Topic, "ord", PREFIXED, Read, DENY);
        assert!(!allowed(&[&allow, &deny_prefix], Read, "orders"));
        let deny_all_topics = alice(Topic, "*", LITERAL, Read, DENY);
        assert!(!allowed(&[&allow, &deny_all_topics], Read, "orders"));
        // A deny of another operation does not touch this one.
        let deny_write = alice(Topic, "orders", LITERAL, Write, DENY);
        assert!(allowed(&[&allow, &deny_write], Read, "orders"));
    }

    #[test]
    fn an_allow_of_read_write_delete_or_alter_implies_describe() {
        for op in [Read, Write, Delete, Alter, Describe] {
            assert!(
                allowed(&[&alice(Topic, "t", LITERAL, op, ALLOW)], Describe, "t"),
                "{op}"
            );
        }
        for op in [
            Create,
            AlterConfigs,
            DescribeConfigs,
            IdempotentWrite,
            ClusterAction,
        ] {
            assert!(
                !allowed(&[&alice(Topic, "t", LITERAL, op, ALLOW)], Describe, "t"),
                "{op}"
            );
        }
        // Implication runs one way only.
        assert!(!allowed(
            &[&alice(Topic, "t", LITERAL, Describe, ALLOW)],
            Read,
            "t"
        ));
    }

    #[test]
    fn an_allow_of_alter_configs_implies_describe_configs() {
        let alter_configs = alice(Topic, "t", LITERAL, AlterConfigs, ALLOW);
        assert!(allowed(&[&alter_configs], DescribeConfigs, "t"));
        assert!(!allowed(&[&alter_configs], Describe, "t"));
        assert!(!allowed(
            &[&alice(Topic, "t", LITERAL, Alter, ALLOW)],
            DescribeConfigs,
            "t"
        ));
    }

    #[test]
    fn a_deny_implies_nothing() {
        let allow_describe = alice(Topic, "t", LITERAL, Describe, ALLOW);
        let deny_read = alice(Topic, "t", LITERAL, Read, DENY);
        assert!(allowed(&[&allow_describe, &deny_read], Describe, "t"));
        assert!(!allowed(&[&allow_describe, &deny_read], Read, "t"));
        let allow_describe_configs = alice(Topic, "t", LITERAL, DescribeConfigs, ALLOW);
        let deny_alter_configs = alice(Topic, "t", LITERAL, AlterConfigs, DENY);
        assert!(allowed(
            &[&allow_describe_configs, &deny_alter_configs],
            DescribeConfigs,
            "t"
        ));
        // An allow of READ implies DESCRIBE even beside a DENY of READ.
        let allow_read = alice(Topic, "t", LITERAL, Read, ALLOW);
        let deny_read = alice(Topic, "t", LITERAL, Read, DENY);
        assert!(allowed(&[&allow_read, &deny_read], Describe, "t"));
    }

    #[test]
    fn a_permission_other_than_allow_denies_as_in_kafka() {
        // Only a damaged log or a newer release holds one; Kafka's
        // `findResult` answers DENIED for anything but ALLOW.
        let allow = alice(Topic, "t", LITERAL, Read, ALLOW);
        let unknown = alice(Topic, "t", LITERAL, Read, AclPermissionType::Unknown);
        assert!(!allowed(&[&allow, &unknown], Read, "t"));
        // It implies nothing, as a DENY does not.
        assert!(allowed(&[&allow, &unknown], Describe, "t"));
    }

    #[test]
    fn all_matches_every_operation_for_allow_and_deny() {
        let allow_all = alice(Topic, "t", LITERAL, All, ALLOW);
        for op in AclOperation::VALUES {
            if matches!(op, Unknown | Any) {
                continue;
            }
            assert!(allowed(&[&allow_all], *op, "t"), "{op}");
            let deny_all = alice(Topic, "t", LITERAL, All, DENY);
            assert!(!allowed(&[&allow_all, &deny_all], *op, "t"), "{op}");
        }
    }

    #[test]
    fn prefixed_and_wildcard_acls_apply_to_the_names_they_cover() {
        let prefixed = alice(Topic, "orders-", PREFIXED, Read, ALLOW);
        assert!(allowed(&[&prefixed], Read, "orders-eu"));
        assert!(allowed(&[&prefixed], Read, "orders-"));
        assert!(!allowed(&[&prefixed], Read, "orders"));
        assert!(!allowed(&[&prefixed], Read, "payments"));
        let literal = alice(Topic, "orders", LITERAL, Read, ALLOW);
        assert!(
            !allowed(&[&literal], Read, "orders-eu"),
            "a literal is not a prefix"
        );
        let wildcard = alice(Topic, "*", LITERAL, Read, ALLOW);
        assert!(allowed(&[&wildcard], Read, "anything"));
        // The wildcard is per resource type.
        let config = deny_by_default();
        let image = image(&[&wildcard]);
        let authorizer = Authorizer::new(&config, &image);
        assert!(!authorizer.authorize(ALICE, HOST, Read, Group, "anything"));
        // A prefixed `*` is a name that starts with a star, not a wildcard.
        assert!(!allowed(
            &[&alice(Topic, "*", PREFIXED, Read, ALLOW)],
            Read,
            "orders"
        ));
    }

    #[test]
    fn without_acls_on_the_resource_the_default_decides() {
        // ACLs on other names, types and prefixes do not count.
        let image = image(&[
            &acl(Topic, "payments", LITERAL, "User:bob", "*", Read, ALLOW),
            &acl(Group, "orders", LITERAL, ALICE, "*", Read, ALLOW),
            &acl(Topic, "orders-", PREFIXED, ALICE, "*", Read, ALLOW),
        ]);
        let deny = deny_by_default();
        let allow = AuthorizerConfig::from_kafka_settings(None, Some("true")).unwrap();
        assert!(!Authorizer::new(&deny, &image).authorize(ALICE, HOST, Read, Topic, "orders"));
        assert!(Authorizer::new(&allow, &image).authorize(ALICE, HOST, Read, Topic, "orders"));
    }

    #[test]
    fn any_acl_on_the_resource_turns_the_default_off() {
        let allow = AuthorizerConfig::from_kafka_settings(None, Some("true")).unwrap();
        // An ACL for another principal, another host, another operation,
        // on a prefix or the wildcard: each means the resource has ACLs,
        // so alice is denied for want of an ALLOW.
        let others = [
            acl(Topic, "orders", LITERAL, "User:bob", "*", Read, ALLOW),
            acl(Topic, "orders", LITERAL, ALICE, "10.9.9.9", Read, ALLOW),
            acl(Topic, "orders", LITERAL, ALICE, "*", Write, ALLOW),
            acl(Topic, "ord", PREFIXED, "User:bob", "*", Write, DENY),
            acl(Topic, "*", LITERAL, "User:bob", "*", Read, ALLOW),
        ];
        for other in others {
            let image = image(&[&other]);
            assert!(
                !Authorizer::new(&allow, &image).authorize(ALICE, HOST, Read, Topic, "orders"),
                "{other}"
            );
        }
    }

    #[test]
    fn by_resource_type_an_allow_counts_unless_a_deny_shadows_it() {
        let config = deny_by_default();
        let check = |acls: &[&AclBinding], op: AclOperation| {
            let image = image(acls);
            Authorizer::new(&config, &image).authorize_by_resource_type(ALICE, HOST, op, Topic)
        };
        let allow_literal = alice(Topic, "orders", LITERAL, Write, ALLOW);
        let allow_prefixed = alice(Topic, "pay", PREFIXED, Write, ALLOW);
        assert!(!check(&[], Write));
        assert!(check(&[&allow_literal], Write));
        assert!(check(&[&allow_prefixed], Write));
        // A literal deny of the same name shadows a literal allow, a
        // prefixed deny of a prefix shadows either.
        let deny_literal = alice(Topic, "orders", LITERAL, Write, DENY);
        assert!(!check(&[&allow_literal, &deny_literal], Write));
        assert!(check(
            &[&allow_prefixed, &alice(Topic, "pay", LITERAL, Write, DENY)],
            Write
        ));
        let deny_prefix = alice(Topic, "or", PREFIXED, Write, DENY);
        assert!(!check(&[&allow_literal, &deny_prefix], Write));
        assert!(!check(
            &[&allow_prefixed, &alice(Topic, "p", PREFIXED, Write, DENY)],
            Write
        ));
        // A deny that is longer than the allowed prefix does not shadow it.
        assert!(check(
            &[
                &allow_prefixed,
                &alice(Topic, "payments", PREFIXED, Write, DENY)
            ],
            Write
        ));
        // One unshadowed allow is enough.
        assert!(check(
            &[&allow_literal, &deny_literal, &allow_prefixed],
            Write
        ));
        // A wildcard deny denies, a wildcard allow allows.
        let deny_wildcard = alice(Topic, "*", LITERAL, Write, DENY);
        assert!(!check(&[&allow_literal, &deny_wildcard], Write));
        assert!(check(
            &[&alice(Topic, "*", LITERAL, Write, ALLOW), &deny_literal],
            Write
        ));
        // ALL counts as the operation; no other operation is implied.
        assert!(check(
            &[&alice(Topic, "orders", LITERAL, All, ALLOW)],
            Write
        ));
        assert!(!check(
            &[&alice(Topic, "orders", LITERAL, Write, ALLOW)],
            IdempotentWrite
        ));
        assert!(!check(
            &[&alice(Topic, "orders", LITERAL, Read, ALLOW)],
            Describe
        ));
        // Other principals, hosts and resource types do not count.
        assert!(!check(
            &[&acl(
                Topic, "orders", LITERAL, "User:bob", "*", Write, ALLOW
            )],
            Write
        ));
        assert!(!check(
            &[&acl(
                Topic, "orders", LITERAL, ALICE, "10.9.9.9", Write, ALLOW
            )],
            Write
        ));
        assert!(!check(
            &[&alice(TransactionalId, "orders", LITERAL, Write, ALLOW)],
            Write
        ));
        assert!(check(
            &[&acl(Topic, "orders", LITERAL, "User:*", HOST, Write, ALLOW)],
            Write
        ));
        // A filter's codes are refused.
        assert!(!check(&[&allow_literal], Any));
    }

    #[test]
    fn by_resource_type_first_asks_about_one_named_resource() {
        let config = deny_by_default();
        // A wildcard ALLOW of READ implies DESCRIBE on every topic, so the
        // first question (DESCRIBE on a topic named `hardcode`) allows it.
        let image = image(&[&alice(Topic, "*", LITERAL, Read, ALLOW)]);
        let authorizer = Authorizer::new(&config, &image);
        assert!(authorizer.authorize_by_resource_type(ALICE, HOST, Describe, Topic));
        // With no ACL on the type, allow.everyone.if.no.acl.found decides.
        let allow = AuthorizerConfig::from_kafka_settings(None, Some("true")).unwrap();
        let empty = AclImage::new();
        assert!(
            Authorizer::new(&allow, &empty).authorize_by_resource_type(ALICE, HOST, Write, Topic)
        );
        assert!(
            !Authorizer::new(&config, &empty).authorize_by_resource_type(ALICE, HOST, Write, Topic)
        );
    }
}
