//! An ACL (a resource pattern and an access control entry, Kafka's
//! `AclBinding`), the filters DescribeAcls and DeleteAcls select ACLs with
//! (`AclBindingFilter`), and the checks CreateAcls and DeleteAcls make of
//! them, with Kafka's error messages.
//!
//! A filter's `None` name, principal or host matches every value, as
//! Kafka's `null` does. Filters never imply anything: an entry filter of
//! `ALL` selects the ACLs whose operation is `ALL`, not every ACL; what an
//! ACL implies is the authorizer's business (`authorizer.rs`).

use std::fmt;

use crate::acl::types::{AclOperation, AclPermissionType, PatternType, ResourceType};
use crate::protocol::error_code;

/// The resource name (and host) that matches every name (and host).
pub const WILDCARD: &str = "*";

/// The principal an ACL names to apply to every principal.
pub const WILDCARD_PRINCIPAL: &str = "User:*";

/// The name of the one CLUSTER resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// Why a CreateAcls creation or a DeleteAcls filter was refused: Kafka's
/// error code and message, as the response carries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclError {
    pub code: i16,
    pub message: String,
}

impl AclError {
    fn invalid_request(message: String) -> AclError {
        AclError {
            code: error_code::INVALID_REQUEST,
            message,
        }
    }
}

impl fmt::Display for AclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error {}: {}", self.code, self.message)
    }
}

/// The principal's type and name (`User:alice` is `("User", "alice")`), or
/// `None` when it has no colon. The name may contain colons; an empty type
/// or name parses, as Kafka's `SecurityUtils.parseKafkaPrincipal` lets it.
pub fn parse_principal(principal: &str) -> Option<(&str, &str)> {
    principal.split_once(':')
}

/// Which resources an ACL applies to (Kafka's `ResourcePattern`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourcePattern {
    pub resource_type: ResourceType,
    pub name: String,
    /// LITERAL or PREFIXED in a valid ACL.
    pub pattern_type: PatternType,
}

impl fmt::Display for ResourcePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ResourcePattern(resourceType={}, name={}, patternType={})",
            self.resource_type, self.name, self.pattern_type
        )
    }
}

/// Who may (or may not) do what from where (Kafka's `AccessControlEntry`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AccessControlEntry {
    /// `Type:name`, such as `User:alice`; [`WILDCARD_PRINCIPAL`] for all.
    pub principal: String,
    /// A client address, or [`WILDCARD`] for every host.
    pub host: String,
    pub operation: AclOperation,
    pub permission: AclPermissionType,
}

impl fmt::Display for AccessControlEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(principal={}, host={}, operation={}, permissionType={})",
            self.principal, self.host, self.operation, self.permission
        )
    }
}

/// One ACL (Kafka's `AclBinding`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AclBinding {
    pub pattern: ResourcePattern,
    pub entry: AccessControlEntry,
}

impl fmt::Display for AclBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(pattern={}, entry={})", self.pattern, self.entry)
    }
}

impl AclBinding {
    /// The checks a CreateAcls creation passes before the controller writes
    /// it, in Kafka's order: the broker's (`AclApis.handleCreateAcls`: the
    /// CLUSTER resource's name, a non-empty name), then the controller's
    /// (`AclControlManager.validateNewAcl`: no UNKNOWN or ANY type,
    /// operation or permission, a LITERAL or PREFIXED pattern, a principal
    /// with a colon). Each refusal is INVALID_REQUEST with Kafka's message.
    pub fn validate_new(&self) -> Result<(), AclError> {
        let p = &self.pattern;
        let e = &self.entry;
        if p.resource_type == ResourceType::Cluster && p.name != CLUSTER_NAME {
            return Err(AclError::invalid_request(format!(
                "The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
            )));
        }
        if p.name.is_empty() {
            return Err(AclError::invalid_request(
                "Invalid empty resource name".into(),
            ));
        }
        if matches!(p.resource_type, ResourceType::Unknown | ResourceType::Any) {
            return Err(AclError::invalid_request(format!(
                "Invalid resourceType {}",
                p.resource_type
            )));
        }
        if !matches!(p.pattern_type, PatternType::Literal | PatternType::Prefixed) {
            return Err(AclError::invalid_request(format!(
                "Invalid patternType {}",
                p.pattern_type
            )));
        }
        if matches!(e.operation, AclOperation::Unknown | AclOperation::Any) {
            return Err(AclError::invalid_request(format!(
                "Invalid operation {}",
                e.operation
            )));
        }
        if !matches!(
            e.permission,
            AclPermissionType::Allow | AclPermissionType::Deny
        ) {
            return Err(AclError::invalid_request(format!(
                "Invalid permissionType {}",
                e.permission
            )));
        }
        if parse_principal(&e.principal).is_none() {
            return Err(AclError::invalid_request(format!(
                "Could not parse principal from `{}` (no colon is present separating the \
                 principal type from the principal name)",
                e.principal
            )));
        }
        Ok(())
    }

    /// The filter that matches exactly this ACL.
    pub fn to_filter(&self) -> AclBindingFilter {
        AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: self.pattern.resource_type,
                name: Some(self.pattern.name.clone()),
                pattern_type: self.pattern.pattern_type,
            },
            entry: AccessControlEntryFilter {
                principal: Some(self.entry.principal.clone()),
                host: Some(self.entry.host.clone()),
                operation: self.entry.operation,
                permission: self.entry.permission,
            },
        }
    }
}

/// Which resource patterns a filter selects (Kafka's
/// `ResourcePatternFilter`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResourcePatternFilter {
    /// ANY for every type.
    pub resource_type: ResourceType,
    /// `None` for every name.
    pub name: Option<String>,
    /// ANY: any pattern type, the name compared exactly. MATCH: every
    /// pattern that applies to the literal `name`. Otherwise exactly this
    /// pattern type.
    pub pattern_type: PatternType,
}

impl ResourcePatternFilter {
    /// Every resource pattern.
    pub const ANY: ResourcePatternFilter = ResourcePatternFilter {
        resource_type: ResourceType::Any,
        name: None,
        pattern_type: PatternType::Any,
    };

    /// Whether `pattern` is selected, as Kafka's `matches` decides it.
    pub fn matches(&self, pattern: &ResourcePattern) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != pattern.resource_type {
            return false;
        }
        if !matches!(self.pattern_type, PatternType::Any | PatternType::Match)
            && self.pattern_type != pattern.pattern_type
        {
            return false;
        }
        let Some(name) = &self.name else {
            return true;
        };
        if self.pattern_type != PatternType::Match {
            return *name == pattern.name;
        }
        match pattern.pattern_type {
            PatternType::Literal => *name == pattern.name || pattern.name == WILDCARD,
            PatternType::Prefixed => name.starts_with(pattern.name.as_str()),
            // Kafka throws here; a stored ACL is LITERAL or PREFIXED, so
            // only a damaged log gets this far, and nothing selects it.
            PatternType::Unknown | PatternType::Any | PatternType::Match => false,
        }
    }

    /// Whether the filter carries a code Kafka does not define.
    pub fn is_unknown(&self) -> bool {
        self.resource_type.is_unknown() || self.pattern_type.is_unknown()
    }
}

/// Which entries a filter selects (Kafka's `AccessControlEntryFilter`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AccessControlEntryFilter {
    /// `None` for every principal; `User:*` selects only the ACLs that
    /// name the wildcard principal.
    pub principal: Option<String>,
    /// `None` for every host.
    pub host: Option<String>,
    /// ANY for every operation.
    pub operation: AclOperation,
    /// ANY for both permissions.
    pub permission: AclPermissionType,
}

impl AccessControlEntryFilter {
    /// Every entry.
    pub const ANY: AccessControlEntryFilter = AccessControlEntryFilter {
        principal: None,
        host: None,
        operation: AclOperation::Any,
        permission: AclPermissionType::Any,
    };

    pub fn matches(&self, entry: &AccessControlEntry) -> bool {
        self.principal
            .as_ref()
            .is_none_or(|p| *p == entry.principal)
            && self.host.as_ref().is_none_or(|h| *h == entry.host)
            && (self.operation == AclOperation::Any || self.operation == entry.operation)
            && (self.permission == AclPermissionType::Any || self.permission == entry.permission)
    }

    /// Whether the filter carries a code Kafka does not define.
    pub fn is_unknown(&self) -> bool {
        self.operation.is_unknown() || self.permission.is_unknown()
    }
}

/// A DescribeAcls or DeleteAcls filter (Kafka's `AclBindingFilter`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AclBindingFilter {
    pub pattern: ResourcePatternFilter,
    pub entry: AccessControlEntryFilter,
}

impl AclBindingFilter {
    /// Every ACL.
    pub const ANY: AclBindingFilter = AclBindingFilter {
        pattern: ResourcePatternFilter::ANY,
        entry: AccessControlEntryFilter::ANY,
    };

    pub fn matches(&self, binding: &AclBinding) -> bool {
        self.pattern.matches(&binding.pattern) && self.entry.matches(&binding.entry)
    }

    /// The check DeleteAcls makes of each filter
    /// (`AclControlManager.validateFilter`), which DescribeAcls's filter
    /// passes too: no code Kafka does not define. Kafka's request parsers
    /// refuse such a request before it gets here; the controller's
    /// messages are the ones a request that got through would see.
    pub fn validate(&self) -> Result<(), AclError> {
        if self.pattern.is_unknown() {
            return Err(AclError::invalid_request("Unknown patternFilter.".into()));
        }
        if self.entry.is_unknown() {
            return Err(AclError::invalid_request("Unknown entryFilter.".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An ACL on `name` (a topic unless the type says otherwise).
    pub(crate) fn acl(
        resource_type: ResourceType,
        name: &str,
        pattern_type: PatternType,
        principal: &str,
        host: &str,
        operation: AclOperation,
        permission: AclPermissionType,
    ) -> AclBinding {
        AclBinding {
            pattern: ResourcePattern {
                resource_type,
                name: name.into(),
                pattern_type,
            },
            entry: AccessControlEntry {
                principal: principal.into(),
                host: host.into(),
                operation,
                permission,
            },
        }
    }

    fn topic_acl(name: &str, pattern_type: PatternType) -> AclBinding {
        acl(
            ResourceType::Topic,
            name,
            pattern_type,
            "User:alice",
            "*",
            AclOperation::Read,
            AclPermissionType::Allow,
        )
    }

    fn pattern_filter(
        resource_type: ResourceType,
        name: Option<&str>,
        pattern_type: PatternType,
    ) -> AclBindingFilter {
        AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type,
                name: name.map(String::from),
                pattern_type,
            },
            entry: AccessControlEntryFilter::ANY,
        }
    }

    #[test]
    fn a_match_filter_selects_the_literal_the_wildcard_and_the_prefixes() {
        let filter = pattern_filter(ResourceType::Topic, Some("orders-eu"), PatternType::Match);
        let selected = [
            topic_acl("orders-eu", PatternType::Literal),
            topic_acl("*", PatternType::Literal),
            topic_acl("orders-", PatternType::Prefixed),
            topic_acl("orders-eu", PatternType::Prefixed),
            topic_acl("o", PatternType::Prefixed),
        ];
        for b in &selected {
            assert!(filter.matches(b), "{b}");
        }
        let not_selected = [
            topic_acl("orders", PatternType::Literal),
            topic_acl("orders-eu-1", PatternType::Prefixed),
            topic_acl("payments", PatternType::Prefixed),
            // A prefixed `*` is a name that starts with a star.
            topic_acl("*", PatternType::Prefixed),
        ];
        for b in &not_selected {
            assert!(!filter.matches(b), "{b}");
        }
        let mut group = topic_acl("orders-eu", PatternType::Literal);
        group.pattern.resource_type = ResourceType::Group;
        assert!(!filter.matches(&group), "another resource type");
    }

    #[test]
    fn an_any_filter_compares_the_name_exactly_across_pattern_types() {
        let filter = pattern_filter(ResourceType::Any, Some("orders"), PatternType::Any);
        assert!(filter.matches(&topic_acl("orders", PatternType::Literal)));
        assert!(filter.matches(&topic_acl("orders", PatternType::Prefixed)));
        assert!(!filter.matches(&topic_acl("*", PatternType::Literal)));
        assert!(!filter.matches(&topic_acl("ord", PatternType::Prefixed)));
        let mut group = topic_acl("orders", PatternType::Literal);
        group.pattern.resource_type = ResourceType::Group;
        assert!(filter.matches(&group));

        let literal = pattern_filter(ResourceType::Topic, Some("orders"), PatternType::Literal);
        assert!(literal.matches(&topic_acl("orders", PatternType::Literal)));
        assert!(!literal.matches(&topic_acl("orders", PatternType::Prefixed)));
        assert!(!literal.matches(&topic_acl("*", PatternType::Literal)));

        let every_name = pattern_filter(ResourceType::Topic, None, PatternType::Prefixed);
        assert!(every_name.matches(&topic_acl("x", PatternType::Prefixed)));
        assert!(!every_name.matches(&topic_acl("x", PatternType::Literal)));
        assert!(AclBindingFilter::ANY.matches(&topic_acl("x", PatternType::Literal)));
    }

    #[test]
    fn an_entry_filter_selects_by_each_field_and_implies_nothing() {
        let b = topic_acl("orders", PatternType::Literal);
        let with = |f: AccessControlEntryFilter| AclBindingFilter {
            pattern: ResourcePatternFilter::ANY,
            entry: f,
        };
        let any = AccessControlEntryFilter::ANY;
        assert!(with(AccessControlEntryFilter {
            principal: Some("User:alice".into()),
            host: Some("*".into()),
            operation: AclOperation::Read,
            permission: AclPermissionType::Allow,
        })
        .matches(&b));
        let refusing = [
            AccessControlEntryFilter {
                principal: Some("User:bob".into()),
                ..any.clone()
            },
            AccessControlEntryFilter {
                principal: Some("User:*".into()),
                ..any.clone()
            },
            AccessControlEntryFilter {
                host: Some("10.0.0.1".into()),
                ..any.clone()
            },
            AccessControlEntryFilter {
                operation: AclOperation::All,
                ..any.clone()
            },
            AccessControlEntryFilter {
                operation: AclOperation::Describe,
                ..any.clone()
            },
            AccessControlEntryFilter {
                permission: AclPermissionType::Deny,
                ..any.clone()
            },
        ];
        for f in refusing {
            assert!(!with(f.clone()).matches(&b), "{f:?}");
        }
        assert!(b.to_filter().matches(&b));
        let mut other = b.clone();
        other.entry.host = "10.0.0.1".into();
        assert!(!b.to_filter().matches(&other));
    }

    #[test]
    fn a_new_acl_is_refused_with_kafkas_messages() {
        let ok = topic_acl("orders", PatternType::Prefixed);
        assert_eq!(ok.validate_new(), Ok(()));
        let cases: Vec<(AclBinding, &str)> = vec![
            (
                AclBinding {
                    pattern: ResourcePattern {
                        resource_type: ResourceType::Cluster,
                        name: "my-cluster".into(),
                        pattern_type: PatternType::Literal,
                    },
                    ..ok.clone()
                },
                "The only valid name for the CLUSTER resource is kafka-cluster",
            ),
            (
                topic_acl("", PatternType::Literal),
                "Invalid empty resource name",
            ),
            (
                AclBinding {
                    pattern: ResourcePattern {
                        resource_type: ResourceType::Any,
                        ..ok.pattern.clone()
                    },
                    ..ok.clone()
                },
                "Invalid resourceType ANY",
            ),
            (
                AclBinding {
                    pattern: ResourcePattern {
                        resource_type: ResourceType::Unknown,
                        ..ok.pattern.clone()
                    },
                    ..ok.clone()
                },
                "Invalid resourceType UNKNOWN",
            ),
            (
                topic_acl("orders", PatternType::Match),
                "Invalid patternType MATCH",
            ),
            (
                topic_acl("orders", PatternType::Any),
                "Invalid patternType ANY",
            ),
            (
                AclBinding {
                    entry: AccessControlEntry {
                        operation: AclOperation::Any,
                        ..ok.entry.clone()
                    },
                    ..ok.clone()
                },
                "Invalid operation ANY",
            ),
            (
                AclBinding {
                    entry: AccessControlEntry {
                        permission: AclPermissionType::Unknown,
                        ..ok.entry.clone()
                    },
                    ..ok.clone()
                },
                "Invalid permissionType UNKNOWN",
            ),
            (
                AclBinding {
                    entry: AccessControlEntry {
                        principal: "alice".into(),
                        ..ok.entry.clone()
                    },
                    ..ok.clone()
                },
                "Could not parse principal from `alice` (no colon is present separating the \
                 principal type from the principal name)",
            ),
        ];
        for (binding, message) in cases {
            assert_eq!(
                binding.validate_new(),
                Err(AclError {
                    code: error_code::INVALID_REQUEST,
                    message: message.into()
                }),
                "{binding}"
            );
        }
        let mut cluster = ok.clone();
        cluster.pattern = ResourcePattern {
            resource_type: ResourceType::Cluster,
            name: CLUSTER_NAME.into(),
            pattern_type: PatternType::Literal,
        };
        cluster.entry.operation = AclOperation::All;
        cluster.entry.permission = AclPermissionType::Deny;
        assert_eq!(cluster.validate_new(), Ok(()));
    }

    #[test]
    fn a_filter_with_unknown_codes_is_refused() {
        assert_eq!(AclBindingFilter::ANY.validate(), Ok(()));
        let mut f = AclBindingFilter::ANY;
        f.pattern.pattern_type = PatternType::Unknown;
        assert_eq!(f.validate().unwrap_err().message, "Unknown patternFilter.");
        let mut f = AclBindingFilter::ANY;
        f.pattern.resource_type = ResourceType::Unknown;
        assert_eq!(f.validate().unwrap_err().code, error_code::INVALID_REQUEST);
        let mut f = AclBindingFilter::ANY;
        f.entry.operation = AclOperation::Unknown;
        assert_eq!(f.validate().unwrap_err().message, "Unknown entryFilter.");
        let mut f = AclBindingFilter::ANY;
        f.entry.permission = AclPermissionType::Unknown;
        assert_eq!(f.validate().unwrap_err().message, "Unknown entryFilter.");
        // MATCH is a filter's own pattern type, not an unknown one.
        let mut f = AclBindingFilter::ANY;
        f.pattern.pattern_type = PatternType::Match;
        assert_eq!(f.validate(), Ok(()));
    }

    #[test]
    fn principals_parse_at_the_first_colon() {
        assert_eq!(parse_principal("User:alice"), Some(("User", "alice")));
        assert_eq!(
            parse_principal("User:CN=a:b,O=c"),
            Some(("User", "CN=a:b,O=c"))
        );
        assert_eq!(parse_principal("User:"), Some(("User", "")));
        assert_eq!(parse_principal("alice"), None);
        assert_eq!(parse_principal(""), None);
    }

    #[test]
    fn bindings_print_as_kafka_prints_them() {
        assert_eq!(
            topic_acl("orders", PatternType::Prefixed).to_string(),
            "(pattern=ResourcePattern(resourceType=TOPIC, name=orders, patternType=PREFIXED), \
             entry=(principal=User:alice, host=*, operation=READ, permissionType=ALLOW))"
        );
    }
}
