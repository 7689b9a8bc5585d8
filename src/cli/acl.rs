//! `pinlog acl list|add|remove`, like `kafka-acls.sh --list|--add|--remove`.
//!
//! The arguments become the ACL types of `crate::acl` (Kafka's names for
//! resource types, pattern types and operations, parsed by those types),
//! and the messages go through `acl::wire`, the same conversions the
//! broker uses the other way round. DescribeAcls lists (one request per
//! resource named, since it takes one filter); CreateAcls adds; DeleteAcls
//! removes with one exact filter per ACL the arguments describe, and
//! answers with what it removed, which is what `remove` shows.
//!
//! Everything between the arguments and the wire (the bindings, the
//! filters, the checks, the rendering) is pure and tested without a
//! broker.

use std::collections::BTreeSet;
use std::io::Write;

use clap::Args;
use serde_json::{json, Value};

use crate::acl::binding::{parse_principal, CLUSTER_NAME, WILDCARD};
use crate::acl::matrix::reported_operations;
use crate::acl::wire::{
    binding_of_deleted, bindings_of_describe, creation_of_binding, delete_filter_of_filter,
    describe_request_of_filter,
};
use crate::acl::{
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation,
    AclPermissionType, PatternType, ResourcePattern, ResourcePatternFilter, ResourceType,
};
use crate::cli::client::Client;
use crate::cli::error::{report_failures, CliError, CliResult};
use crate::cli::table::{json_text, Align, Table};
use crate::cli::{emit, AclCommand, ConnectArgs};
use crate::protocol::error_code;
use crate::protocol::messages::create_acls::CreateAclsRequest;
use crate::protocol::messages::delete_acls::DeleteAclsRequest;

/// The resources an ACL command is about, as kafka-acls.sh names them.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceArgs {
    /// A topic (`*` for every topic); repeatable.
    #[arg(long = "topic", value_name = "TOPIC")]
    pub topics: Vec<String>,
    /// A consumer group (`*` for every group); repeatable.
    #[arg(long = "group", value_name = "GROUP")]
    pub groups: Vec<String>,
    /// A transactional id (`*` for every one); repeatable.
    #[arg(long = "transactional-id", value_name = "ID")]
    pub transactional_ids: Vec<String>,
    /// The cluster itself (for Create, Alter, ClusterAction, IdempotentWrite,
    /// ...).
    #[arg(long)]
    pub cluster: bool,
    /// A user principal as the resource (for CreateTokens and
    /// DescribeTokens), e.g. User:alice; repeatable.
    #[arg(long = "user-principal", value_name = "TYPE:NAME")]
    pub user_principals: Vec<String>,
}

impl ResourceArgs {
    /// Each resource named, as (type, name).
    pub fn resources(&self) -> Vec<(ResourceType, String)> {
        let named = |t: ResourceType, names: &[String]| {
            names
                .iter()
                .map(move |n| (t, n.trim().to_string()))
                .collect::<Vec<_>>()
        };
        let mut out = named(ResourceType::Topic, &self.topics);
        out.extend(named(ResourceType::Group, &self.groups));
        out.extend(named(
            ResourceType::TransactionalId,
            &self.transactional_ids,
        ));
        if self.cluster {
            out.push((ResourceType::Cluster, CLUSTER_NAME.to_string()));
        }
        out.extend(named(ResourceType::User, &self.user_principals));
        out
    }
}

/// Who, what and from where: the entries `add` creates and `remove`
/// removes on each resource.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct EntryArgs {
    /// A principal to allow, TYPE:NAME (User:alice; User:* for every
    /// principal); repeatable.
    #[arg(long = "allow-principal", value_name = "TYPE:NAME", value_parser = parse_principal_arg)]
    pub allow_principals: Vec<String>,
    /// A principal to deny, TYPE:NAME; repeatable. A DENY wins over any
    /// ALLOW.
    #[arg(long = "deny-principal", value_name = "TYPE:NAME", value_parser = parse_principal_arg)]
    pub deny_principals: Vec<String>,
    /// An operation, by Kafka's name: Read, Write, Create, Delete, Alter,
    /// Describe, ClusterAction, DescribeConfigs, AlterConfigs,
    /// IdempotentWrite, CreateTokens, DescribeTokens, TwoPhaseCommit or
    /// All; repeatable. `remove` also takes Any (every operation).
    #[arg(long = "operation", value_name = "OPERATION", required = true, value_parser = parse_operation)]
    pub operations: Vec<AclOperation>,
    /// The client address the ACL applies to, `*` for every host;
    /// repeatable.
    #[arg(long = "host", value_name = "HOST", default_value = WILDCARD)]
    pub hosts: Vec<String>,
}

/// `--allow-principal` and `--deny-principal`: `TYPE:NAME`, as Kafka's
/// `SecurityUtils.parseKafkaPrincipal` takes it.
pub fn parse_principal_arg(s: &str) -> Result<String, String> {
    match parse_principal(s) {
        Some((kind, name)) if !kind.is_empty() && !name.is_empty() => Ok(s.to_string()),
        _ => Err(format!(
            "{s:?} is not a principal TYPE:NAME, such as User:alice (or User:* for everyone)"
        )),
    }
}

/// The operations an ACL can name, as the CLI spells them.
fn operation_names() -> String {
    AclOperation::VALUES
        .iter()
        .filter(|o| !matches!(o, AclOperation::Unknown | AclOperation::Any))
        .map(|o| o.pascal_name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `--operation`: Kafka's name of an operation in either spelling
/// (`DescribeConfigs` or `DESCRIBE_CONFIGS`), in any case.
pub fn parse_operation(s: &str) -> Result<AclOperation, String> {
    match AclOperation::from_name(s.trim()) {
        AclOperation::Unknown => Err(format!(
            "{s:?} is not an operation; use one of {}",
            operation_names()
        )),
        op => Ok(op),
    }
}

/// `--resource-pattern-type` of `add` and `remove`: literal or prefixed.
pub fn parse_pattern_type(s: &str) -> Result<PatternType, String> {
    match PatternType::from_name(s.trim()) {
        p @ (PatternType::Literal | PatternType::Prefixed) => Ok(p),
        _ => Err(format!(
            "{s:?}: an ACL's pattern type is literal or prefixed"
        )),
    }
}

/// `--resource-pattern-type` of `list`: literal, prefixed, match or any.
pub fn parse_filter_pattern_type(s: &str) -> Result<PatternType, String> {
    match PatternType::from_name(s.trim()) {
        PatternType::Unknown => Err(format!(
            "{s:?}: the pattern types are literal, prefixed, match and any"
        )),
        p => Ok(p),
    }
}

/// The ACLs `add` creates, or the exact ones `remove` removes (where
/// `Any` may stand for every operation): every resource with every
/// principal, host and operation. Refuses what Kafka's AclCommand refuses:
/// no resource, an operation the resource type does not have.
pub fn bindings(
    resources: &ResourceArgs,
    entries: &EntryArgs,
    pattern_type: PatternType,
    removing: bool,
) -> CliResult<Vec<AclBinding>> {
    let targets = resources.resources();
    if targets.is_empty() {
        return Err(CliError::Usage(
            "name a resource: --topic, --group, --transactional-id, --cluster or --user-principal"
                .into(),
        ));
    }
    if !removing && entries.operations.contains(&AclOperation::Any) {
        return Err(CliError::Usage(
            "--operation Any only selects ACLs to remove; name the operations to allow or deny \
             (All for every one)"
                .into(),
        ));
    }
    let principals = entries
        .allow_principals
        .iter()
        .map(|p| (AclPermissionType::Allow, p))
        .chain(
            entries
                .deny_principals
                .iter()
                .map(|p| (AclPermissionType::Deny, p)),
        );
    let principals: Vec<_> = principals.collect();
    let mut out = BTreeSet::new();
    for (resource_type, name) in &targets {
        let supported = reported_operations(*resource_type);
        for op in &entries.operations {
            let fits =
                matches!(op, AclOperation::All | AclOperation::Any) || supported.contains(op);
            if !fits {
                let names: Vec<&str> = supported
                    .iter()
                    .chain(&[AclOperation::All])
                    .map(|o| o.pascal_name())
                    .collect();
                return Err(CliError::Usage(format!(
                    "{} ACLs take the operations {}; not {}",
                    resource_type.pascal_name(),
                    names.join(", "),
                    op.pascal_name()
                )));
            }
        }
        for (permission, principal) in &principals {
            for host in &entries.hosts {
                for op in &entries.operations {
                    let binding = AclBinding {
                        pattern: ResourcePattern {
                            resource_type: *resource_type,
                            name: name.clone(),
                            pattern_type,
                        },
                        entry: AccessControlEntry {
                            principal: principal.to_string(),
                            host: host.trim().to_string(),
                            operation: *op,
                            permission: *permission,
                        },
                    };
                    // Kafka's own checks (an empty name, the cluster's
                    // name), here so that they are usage errors. Any, a
                    // filter's operation, is checked as All would be.
                    let mut checked = binding.clone();
                    if checked.entry.operation == AclOperation::Any {
                        checked.entry.operation = AclOperation::All;
                    }
                    checked
                        .validate_new()
                        .map_err(|e| CliError::Usage(e.message))?;
                    out.insert(binding);
                }
            }
        }
    }
    Ok(out.into_iter().collect())
}

/// The filters `list` sends: one per resource named (with the pattern type
/// given, literal by default), or one for every ACL when none is, each
/// narrowed to `principal` when given.
pub fn list_filters(
    resources: &ResourceArgs,
    pattern_type: Option<PatternType>,
    principal: Option<&str>,
) -> Vec<AclBindingFilter> {
    let entry = AccessControlEntryFilter {
        principal: principal.map(str::to_string),
        ..AccessControlEntryFilter::ANY
    };
    let targets = resources.resources();
    if targets.is_empty() {
        return vec![AclBindingFilter {
            pattern: ResourcePatternFilter {
                pattern_type: pattern_type.unwrap_or(PatternType::Any),
                ..ResourcePatternFilter::ANY
            },
            entry,
        }];
    }
    targets
        .into_iter()
        .map(|(resource_type, name)| AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type,
                name: Some(name),
                pattern_type: pattern_type.unwrap_or(PatternType::Literal),
            },
            entry: entry.clone(),
        })
        .collect()
}

pub fn run(conn: &ConnectArgs, command: AclCommand, out: &mut dyn Write) -> CliResult<()> {
    // A bad command line is reported before any connection is tried.
    let planned = match &command {
        AclCommand::List { .. } => Vec::new(),
        AclCommand::Add {
            resources,
            entries,
            resource_pattern_type,
        } => bindings(resources, entries, *resource_pattern_type, false)?,
        AclCommand::Remove {
            resources,
            entries,
            resource_pattern_type,
        } => bindings(resources, entries, *resource_pattern_type, true)?,
    };
    let mut cluster = conn.cluster()?;
    let client = cluster.any();
    match command {
        AclCommand::List {
            resources,
            resource_pattern_type,
            principal,
        } => {
            let filters = list_filters(&resources, resource_pattern_type, principal.as_deref());
            let acls = list(client, &filters)?;
            emit(out, &render_list(&acls, conn.json))
        }
        AclCommand::Add { .. } => add(client, conn, out, planned),
        AclCommand::Remove { .. } => remove(client, conn, out, planned),
    }
}

/// Every ACL the filters select, sorted by resource and deduplicated.
fn list(client: &mut Client, filters: &[AclBindingFilter]) -> CliResult<Vec<AclBinding>> {
    let mut acls = BTreeSet::new();
    for filter in filters {
        let resp = client.send(&describe_request_of_filter(filter))?;
        if resp.error_code != error_code::NONE {
            return Err(CliError::broker(
                "DescribeAcls",
                resp.error_code,
                resp.error_message,
            ));
        }
        acls.extend(bindings_of_describe(&resp.resources));
    }
    Ok(acls.into_iter().collect())
}

fn add(
    client: &mut Client,
    conn: &ConnectArgs,
    out: &mut dyn Write,
    planned: Vec<AclBinding>,
) -> CliResult<()> {
    let resp = client.send(&CreateAclsRequest {
        creations: planned.iter().map(creation_of_binding).collect(),
    })?;
    if resp.results.len() != planned.len() {
        return Err(CliError::Protocol {
            addr: client.addr().to_string(),
            detail: format!(
                "CreateAcls answered {} results for {} ACLs",
                resp.results.len(),
                planned.len()
            ),
        });
    }
    let mut added = Vec::new();
    let mut failures = Vec::new();
    for (binding, result) in planned.iter().zip(resp.results) {
        if result.error_code == error_code::NONE {
            added.push(binding.clone());
        } else {
            failures.push(CliError::broker(
                format!("ACL {}", acl_label(binding)),
                result.error_code,
                result.error_message,
            ));
        }
    }
    emit(out, &render_change("Added", "added", &added, conn.json))?;
    report_failures(failures, planned.len())
}

fn remove(
    client: &mut Client,
    conn: &ConnectArgs,
    out: &mut dyn Write,
    planned: Vec<AclBinding>,
) -> CliResult<()> {
    let resp = client.send(&DeleteAclsRequest {
        filters: planned
            .iter()
            .map(|b| delete_filter_of_filter(&b.to_filter()))
            .collect(),
    })?;
    if resp.filter_results.len() != planned.len() {
        return Err(CliError::Protocol {
            addr: client.addr().to_string(),
            detail: format!(
                "DeleteAcls answered {} results for {} filters",
                resp.filter_results.len(),
                planned.len()
            ),
        });
    }
    let mut removed = BTreeSet::new();
    let mut failures = Vec::new();
    for (binding, result) in planned.iter().zip(&resp.filter_results) {
        if result.error_code != error_code::NONE {
            failures.push(CliError::broker(
                format!("ACL {}", acl_label(binding)),
                result.error_code,
                result.error_message.clone(),
            ));
            continue;
        }
        removed.extend(result.matching_acls.iter().map(binding_of_deleted));
    }
    let removed: Vec<AclBinding> = removed.into_iter().collect();
    emit(
        out,
        &render_change("Removed", "removed", &removed, conn.json),
    )?;
    report_failures(failures, planned.len())
}

/// An ACL in one line, for error messages.
fn acl_label(b: &AclBinding) -> String {
    format!(
        "{} {} {} on {} {:?} ({}) from {}",
        b.entry.permission.pascal_name(),
        b.entry.principal,
        b.entry.operation.pascal_name(),
        b.pattern.resource_type.pascal_name(),
        b.pattern.name,
        b.pattern.pattern_type.pascal_name(),
        b.entry.host
    )
}

fn acl_json(b: &AclBinding) -> Value {
    json!({
        "resource_type": b.pattern.resource_type.name(),
        "resource_name": b.pattern.name,
        "pattern_type": b.pattern.pattern_type.name(),
        "principal": b.entry.principal,
        "host": b.entry.host,
        "operation": b.entry.operation.name(),
        "permission": b.entry.permission.name(),
    })
}

/// The ACLs as a table, in Kafka's names (as `kafka-acls.sh --list`
/// prints them).
fn acl_table(acls: &[AclBinding]) -> String {
    let mut table = Table::new(&[
        ("RESOURCE-TYPE", Align::Left),
        ("RESOURCE", Align::Left),
        ("PATTERN", Align::Left),
        ("PRINCIPAL", Align::Left),
        ("HOST", Align::Left),
        ("OPERATION", Align::Left),
        ("PERMISSION", Align::Left),
    ]);
    for b in acls {
        table.row(vec![
            b.pattern.resource_type.name().into(),
            b.pattern.name.clone(),
            b.pattern.pattern_type.name().into(),
            b.entry.principal.clone(),
            b.entry.host.clone(),
            b.entry.operation.name().into(),
            b.entry.permission.name().into(),
        ]);
    }
    table.render()
}

pub fn render_list(acls: &[AclBinding], as_json: bool) -> String {
    if as_json {
        return json_text(&json!({ "acls": acls.iter().map(acl_json).collect::<Vec<_>>() }));
    }
    if acls.is_empty() {
        return "No ACLs match. Add one with `pinlog acl add`.\n".into();
    }
    acl_table(acls)
}

/// What `add` or `remove` did: `verb` for people, `key` for scripts.
pub fn render_change(verb: &str, key: &str, acls: &[AclBinding], as_json: bool) -> String {
    if as_json {
        return json_text(&json!({ key: acls.iter().map(acl_json).collect::<Vec<_>>() }));
    }
    if acls.is_empty() {
        return format!("{verb} no ACLs: none matched. See the ACLs with `pinlog acl list`.\n");
    }
    format!(
        "{verb} {} ACL{}:\n{}",
        acls.len(),
        if acls.len() == 1 { "" } else { "s" },
        acl_table(acls)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(allow: &[&str], deny: &[&str], ops: &[AclOperation]) -> EntryArgs {
        EntryArgs {
            allow_principals: allow.iter().map(|s| s.to_string()).collect(),
            deny_principals: deny.iter().map(|s| s.to_string()).collect(),
            operations: ops.to_vec(),
            hosts: vec![WILDCARD.into()],
        }
    }

    fn topics(names: &[&str]) -> ResourceArgs {
        ResourceArgs {
            topics: names.iter().map(|s| s.to_string()).collect(),
            ..ResourceArgs::default()
        }
    }

    #[test]
    fn operations_and_pattern_types_take_kafkas_names() {
        assert_eq!(
            parse_operation("DescribeConfigs"),
            Ok(AclOperation::DescribeConfigs)
        );
        assert_eq!(
            parse_operation("IDEMPOTENT_WRITE"),
            Ok(AclOperation::IdempotentWrite)
        );
        assert_eq!(parse_operation("read"), Ok(AclOperation::Read));
        let e = parse_operation("Reed").unwrap_err();
        assert!(
            e.contains("Read, Write, Create") && e.contains("All"),
            "{e}"
        );
        assert!(!e.contains("Unknown") && !e.contains("Any"), "{e}");
        assert_eq!(parse_pattern_type("prefixed"), Ok(PatternType::Prefixed));
        assert!(parse_pattern_type("match").is_err());
        assert_eq!(parse_filter_pattern_type("MATCH"), Ok(PatternType::Match));
        assert!(parse_principal_arg("alice").is_err());
        assert!(parse_principal_arg("User:").is_err());
        assert_eq!(parse_principal_arg("User:*").as_deref(), Ok("User:*"));
    }

    #[test]
    fn add_makes_every_combination_once() {
        let resources = ResourceArgs {
            cluster: true,
            ..topics(&["orders"])
        };
        let acls = bindings(
            &resources,
            &entries(
                &["User:alice"],
                &["User:bob"],
                &[AclOperation::Describe, AclOperation::Alter],
            ),
            PatternType::Literal,
            false,
        )
        .unwrap();
        assert_eq!(acls.len(), 2 * 2 * 2);
        assert!(acls
            .iter()
            .any(|b| b.pattern.resource_type == ResourceType::Cluster
                && b.pattern.name == CLUSTER_NAME
                && b.entry.permission == AclPermissionType::Deny
                && b.entry.principal == "User:bob"));
        let sorted: Vec<_> = acls
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(acls, sorted, "sorted and without duplicates");
    }

    #[test]
    fn add_refuses_what_kafkas_acl_command_refuses() {
        let usage = |r: CliResult<Vec<AclBinding>>| match r {
            Err(CliError::Usage(m)) => m,
            other => panic!("{other:?}"),
        };
        let e = entries(&["User:a"], &[], &[AclOperation::Read]);
        let m = usage(bindings(
            &ResourceArgs::default(),
            &e,
            PatternType::Literal,
            false,
        ));
        assert!(m.contains("--topic"), "{m}");
        let groups = ResourceArgs {
            groups: vec!["g".into()],
            ..ResourceArgs::default()
        };
        let write = entries(&["User:a"], &[], &[AclOperation::Write]);
        let m = usage(bindings(&groups, &write, PatternType::Literal, false));
        assert!(
            m.contains("Group ACLs take the operations Read, Describe, Delete, DescribeConfigs, AlterConfigs, All"),
            "{m}"
        );
        let any = entries(&["User:a"], &[], &[AclOperation::Any]);
        let m = usage(bindings(&topics(&["t"]), &any, PatternType::Literal, false));
        assert!(m.contains("only selects ACLs to remove"), "{m}");
        let m = usage(bindings(&topics(&[""]), &e, PatternType::Literal, false));
        assert!(m.contains("empty resource name"), "{m}");
        // Removing takes Any: every operation of the principal; the
        // other checks still apply.
        let acls = bindings(&topics(&["t"]), &any, PatternType::Literal, true).unwrap();
        assert_eq!(acls[0].entry.operation, AclOperation::Any);
        let m = usage(bindings(&topics(&[""]), &any, PatternType::Literal, true));
        assert!(m.contains("empty resource name"), "{m}");
    }

    #[test]
    fn list_filters_default_to_literal_names_or_everything() {
        let all = list_filters(&ResourceArgs::default(), None, None);
        assert_eq!(all, vec![AclBindingFilter::ANY]);
        let prefixed = list_filters(&ResourceArgs::default(), Some(PatternType::Prefixed), None);
        assert_eq!(prefixed[0].pattern.pattern_type, PatternType::Prefixed);
        assert_eq!(prefixed[0].pattern.resource_type, ResourceType::Any);
        let named = list_filters(&topics(&["a", "b"]), None, Some("User:alice"));
        assert_eq!(named.len(), 2);
        assert_eq!(named[1].pattern.name.as_deref(), Some("b"));
        assert_eq!(named[1].pattern.pattern_type, PatternType::Literal);
        assert_eq!(named[1].entry.principal.as_deref(), Some("User:alice"));
        assert_eq!(named[1].entry.operation, AclOperation::Any);
    }

    #[test]
    fn tables_and_json_say_the_same() {
        let acls = bindings(
            &topics(&["orders"]),
            &entries(&["User:alice"], &[], &[AclOperation::Read]),
            PatternType::Prefixed,
            false,
        )
        .unwrap();
        let text = render_list(&acls, false);
        assert_eq!(
            text,
            "RESOURCE-TYPE  RESOURCE  PATTERN   PRINCIPAL   HOST  OPERATION  PERMISSION\n\
             TOPIC          orders    PREFIXED  User:alice  *     READ       ALLOW\n"
        );
        let v: Value = serde_json::from_str(&render_list(&acls, true)).unwrap();
        assert_eq!(v["acls"][0]["pattern_type"], "PREFIXED");
        assert_eq!(v["acls"][0]["operation"], "READ");
        assert_eq!(v["acls"][0]["principal"], "User:alice");
        assert!(render_list(&[], false).contains("pinlog acl add"));
        assert!(render_change("Removed", "removed", &acls, false).starts_with("Removed 1 ACL:\n"));
        assert!(render_change("Removed", "removed", &[], false).contains("none matched"));
        let v: Value = serde_json::from_str(&render_change("Added", "added", &acls, true)).unwrap();
        assert_eq!(v["added"][0]["resource_name"], "orders");
    }
}
