//! The ACL APIs' messages (CreateAcls, DescribeAcls, DeleteAcls) as the
//! ACL types, and the answers back: Kafka's numeric codes become the
//! enumerations (a code Kafka does not define becomes `Unknown`, which
//! the checks in `binding.rs` refuse with Kafka's messages).
//!
//! Both sides are here: the broker reads requests and writes answers,
//! and the operator CLI (`pinlog acl`) writes requests and reads answers,
//! each through the inverse of the other's conversion.

use crate::acl::binding::{
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclError,
    ResourcePattern, ResourcePatternFilter,
};
use crate::acl::types::{AclOperation, AclPermissionType, PatternType, ResourceType};
use crate::protocol::messages::create_acls::{AclCreation, AclCreationResult};
use crate::protocol::messages::delete_acls::{
    DeleteAclsFilter, DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use crate::protocol::messages::describe_acls::{
    AclDescription, DescribeAclsRequest, DescribeAclsResource,
};

/// A CreateAcls creation as the ACL it asks for.
pub fn binding_of_creation(c: &AclCreation) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern {
            resource_type: ResourceType::from_code(c.resource_type),
            name: c.resource_name.clone(),
            pattern_type: PatternType::from_code(c.resource_pattern_type),
        },
        entry: AccessControlEntry {
            principal: c.principal.clone(),
            host: c.host.clone(),
            operation: AclOperation::from_code(c.operation),
            permission: AclPermissionType::from_code(c.permission_type),
        },
    }
}

/// The creation that asks for `binding` (the inverse of
/// [`binding_of_creation`]).
pub fn creation_of_binding(binding: &AclBinding) -> AclCreation {
    AclCreation {
        resource_type: binding.pattern.resource_type.code(),
        resource_name: binding.pattern.name.clone(),
        resource_pattern_type: binding.pattern.pattern_type.code(),
        principal: binding.entry.principal.clone(),
        host: binding.entry.host.clone(),
        operation: binding.entry.operation.code(),
        permission_type: binding.entry.permission.code(),
    }
}

/// The answer to one creation.
pub fn creation_result(result: &Result<(), AclError>) -> AclCreationResult {
    match result {
        Ok(()) => AclCreationResult {
            error_code: 0,
            error_message: None,
        },
        Err(e) => AclCreationResult {
            error_code: e.code,
            error_message: Some(e.message.clone()),
        },
    }
}

fn filter(
    resource_type: i8,
    name: &Option<String>,
    pattern_type: i8,
    principal: &Option<String>,
    host: &Option<String>,
    operation: i8,
    permission: i8,
) -> AclBindingFilter {
    AclBindingFilter {
        pattern: ResourcePatternFilter {
            resource_type: ResourceType::from_code(resource_type),
            name: name.clone(),
            pattern_type: PatternType::from_code(pattern_type),
        },
        entry: AccessControlEntryFilter {
            principal: principal.clone(),
            host: host.clone(),
            operation: AclOperation::from_code(operation),
            permission: AclPermissionType::from_code(permission),
        },
    }
}

/// A DescribeAcls request's filter.
pub fn filter_of_describe(r: &DescribeAclsRequest) -> AclBindingFilter {
    filter(
        r.resource_type_filter,
        &r.resource_name_filter,
        r.pattern_type_filter,
        &r.principal_filter,
        &r.host_filter,
        r.operation,
        r.permission_type,
    )
}

/// The DescribeAcls request that asks for `f` (the inverse of
/// [`filter_of_describe`]).
pub fn describe_request_of_filter(f: &AclBindingFilter) -> DescribeAclsRequest {
    DescribeAclsRequest {
        resource_type_filter: f.pattern.resource_type.code(),
        resource_name_filter: f.pattern.name.clone(),
        pattern_type_filter: f.pattern.pattern_type.code(),
        principal_filter: f.entry.principal.clone(),
        host_filter: f.entry.host.clone(),
        operation: f.entry.operation.code(),
        permission_type: f.entry.permission.code(),
    }
}

/// The DeleteAcls filter that selects what `f` selects (the inverse of
/// [`filter_of_delete`]).
pub fn delete_filter_of_filter(f: &AclBindingFilter) -> DeleteAclsFilter {
    DeleteAclsFilter {
        resource_type_filter: f.pattern.resource_type.code(),
        resource_name_filter: f.pattern.name.clone(),
        pattern_type_filter: f.pattern.pattern_type.code(),
        principal_filter: f.entry.principal.clone(),
        host_filter: f.entry.host.clone(),
        operation: f.entry.operation.code(),
        permission_type: f.entry.permission.code(),
    }
}

/// One DeleteAcls filter.
pub fn filter_of_delete(f: &DeleteAclsFilter) -> AclBindingFilter {
    filter(
        f.resource_type_filter,
        &f.resource_name_filter,
        f.pattern_type_filter,
        &f.principal_filter,
        &f.host_filter,
        f.operation,
        f.permission_type,
    )
}

/// DescribeAcls's answer: `bindings` (ordered by resource pattern, as
/// `AclImage::matching` returns them) grouped by resource pattern.
pub fn describe_resources(bindings: &[AclBinding]) -> Vec<DescribeAclsResource> {
    let mut out: Vec<DescribeAclsResource> = Vec::new();
    for b in bindings {
        let acl = AclDescription {
            principal: b.entry.principal.clone(),
            host: b.entry.host.clone(),
            operation: b.entry.operation.code(),
            permission_type: b.entry.permission.code(),
        };
        let p = &b.pattern;
        match out.last_mut() {
            Some(last)
                if last.resource_type == p.resource_type.code()
                    && last.pattern_type == p.pattern_type.code()
                    && last.resource_name == p.name =>
            {
                last.acls.push(acl)
            }
            _ => out.push(DescribeAclsResource {
                resource_type: p.resource_type.code(),
                resource_name: p.name.clone(),
                pattern_type: p.pattern_type.code(),
                acls: vec![acl],
            }),
        }
    }
    out
}

/// The ACLs of a DescribeAcls answer, one per entry (the inverse of
/// [`describe_resources`]).
pub fn bindings_of_describe(resources: &[DescribeAclsResource]) -> Vec<AclBinding> {
    resources
        .iter()
        .flat_map(|r| {
            r.acls.iter().map(move |a| AclBinding {
                pattern: ResourcePattern {
                    resource_type: ResourceType::from_code(r.resource_type),
                    name: r.resource_name.clone(),
                    pattern_type: PatternType::from_code(r.pattern_type),
                },
                entry: AccessControlEntry {
                    principal: a.principal.clone(),
                    host: a.host.clone(),
                    operation: AclOperation::from_code(a.operation),
                    permission: AclPermissionType::from_code(a.permission_type),
                },
            })
        })
        .collect()
}

/// One ACL that a DeleteAcls answer says it deleted.
pub fn binding_of_deleted(m: &DeleteAclsMatchingAcl) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern {
            resource_type: ResourceType::from_code(m.resource_type),
            name: m.resource_name.clone(),
            pattern_type: PatternType::from_code(m.pattern_type),
        },
        entry: AccessControlEntry {
            principal: m.principal.clone(),
            host: m.host.clone(),
            operation: AclOperation::from_code(m.operation),
            permission: AclPermissionType::from_code(m.permission_type),
        },
    }
}

/// DeleteAcls's answer to one filter: the ACLs it deleted, or why it was
/// refused.
pub fn delete_result(result: &Result<Vec<AclBinding>, AclError>) -> DeleteAclsFilterResult {
    match result {
        Ok(deleted) => DeleteAclsFilterResult {
            error_code: 0,
            error_message: None,
            matching_acls: deleted
                .iter()
                .map(|b| DeleteAclsMatchingAcl {
                    error_code: 0,
                    error_message: None,
                    resource_type: b.pattern.resource_type.code(),
                    resource_name: b.pattern.name.clone(),
                    pattern_type: b.pattern.pattern_type.code(),
                    principal: b.entry.principal.clone(),
                    host: b.entry.host.clone(),
                    operation: b.entry.operation.code(),
                    permission_type: b.entry.permission.code(),
                })
                .collect(),
        },
        Err(e) => DeleteAclsFilterResult {
            error_code: e.code,
            error_message: Some(e.message.clone()),
            matching_acls: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::binding::tests::acl;
    use AclOperation::*;
    use AclPermissionType::Allow;
    use PatternType::{Literal, Prefixed};
    use ResourceType::{Group, Topic};

    #[test]
    fn a_creation_round_trips_through_its_binding() {
        let b = acl(Topic, "orders-", Prefixed, "User:alice", "*", Write, Allow);
        assert_eq!(binding_of_creation(&creation_of_binding(&b)), b);
        // A code Kafka does not define is read as Unknown, for the checks.
        let mut c = creation_of_binding(&b);
        c.operation = 99;
        assert!(binding_of_creation(&c).validate_new().is_err());
    }

    #[test]
    fn describe_groups_by_resource_pattern() {
        let a = acl(Topic, "t", Literal, "User:a", "*", Read, Allow);
        let b = acl(Topic, "t", Literal, "User:b", "*", Write, Allow);
        let c = acl(Topic, "t", Prefixed, "User:a", "*", Read, Allow);
        let d = acl(Group, "t", Literal, "User:a", "*", Read, Allow);
        let resources = describe_resources(&[a, b, c, d]);
        let shape: Vec<(i8, i8, usize)> = resources
            .iter()
            .map(|r| (r.resource_type, r.pattern_type, r.acls.len()))
            .collect();
        assert_eq!(shape, vec![(2, 3, 2), (2, 4, 1), (3, 3, 1)]);
    }

    #[test]
    fn the_clients_half_inverts_the_brokers() {
        let filter = AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: Topic,
                name: Some("orders".into()),
                pattern_type: PatternType::Match,
            },
            entry: AccessControlEntryFilter {
                principal: Some("User:alice".into()),
                host: None,
                operation: Any,
                permission: Allow,
            },
        };
        assert_eq!(
            filter_of_describe(&describe_request_of_filter(&filter)),
            filter
        );
        assert_eq!(filter_of_delete(&delete_filter_of_filter(&filter)), filter);
        let a = acl(Topic, "t", Literal, "User:a", "*", Read, Allow);
        let b = acl(Topic, "t", Literal, "User:b", "10.0.0.1", Write, Allow);
        let c = acl(Group, "g-", Prefixed, "User:a", "*", Read, Allow);
        let all = vec![a.clone(), b, c];
        assert_eq!(bindings_of_describe(&describe_resources(&all)), all);
        let deleted = delete_result(&Ok(vec![a.clone()]));
        assert_eq!(binding_of_deleted(&deleted.matching_acls[0]), a);
    }

    #[test]
    fn a_describe_filter_of_any_selects_everything() {
        let f = filter_of_describe(&DescribeAclsRequest {
            resource_type_filter: ResourceType::Any.code(),
            pattern_type_filter: PatternType::Any.code(),
            operation: Any.code(),
            permission_type: AclPermissionType::Any.code(),
            ..DescribeAclsRequest::default()
        });
        assert_eq!(f, AclBindingFilter::ANY);
    }
}
