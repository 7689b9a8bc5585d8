//! The cluster's ACLs as the metadata image holds them: each under the
//! 16-byte id of the record that created it (Kafka's
//! `AccessControlEntryRecord.Id`), indexed for the authorizer.
//!
//! The authorizer runs on every request, so it must not scan every ACL.
//! The index is, per resource type and pattern type, a `BTreeMap` from the
//! pattern's name to the entries on it: a literal name and the `*`
//! wildcard are two lookups, and the prefixed patterns that start a name
//! are found by a backwards range scan that jumps over every key that is
//! not a prefix (see [`visit_prefixes`]), as Kafka's `StandardAuthorizerData`
//! walks its reverse-sorted `TreeSet`. DescribeAcls and DeleteAcls, which
//! are rare and administrative, scan the resource types their filter
//! names, as Kafka's `acls(filter)` scans everything.
//!
//! The image mirrors the metadata log: applying a record with an id that
//! is present replaces that ACL, and two ids may hold the same binding
//! (only a log the controller did not write could say so; the controller
//! refuses duplicates, see `controller/acls.rs`).

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};

use crate::acl::binding::{
    AccessControlEntry, AclBinding, AclBindingFilter, ResourcePattern, WILDCARD,
};
use crate::acl::types::{PatternType, ResourceType};

/// An ACL's id: the Uuid of its `AccessControlEntry` metadata record.
pub type AclId = [u8; 16];

/// The entries on one resource pattern, by id.
type Entries = BTreeMap<AclId, AccessControlEntry>;

/// Every ACL, by id and indexed by resource.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclImage {
    /// Where each ACL's entry sits in `by_resource`.
    patterns_by_id: BTreeMap<AclId, ResourcePattern>,
    /// Entries by resource type and pattern type, then by pattern name.
    /// No map in it is empty.
    by_resource: BTreeMap<(ResourceType, PatternType), BTreeMap<String, Entries>>,
}

impl AclImage {
    pub fn new() -> AclImage {
        AclImage::default()
    }

    pub fn len(&self) -> usize {
        self.patterns_by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.patterns_by_id.is_empty()
    }

    pub fn contains_id(&self, id: &AclId) -> bool {
        self.patterns_by_id.contains_key(id)
    }

    /// The ACL with id `id`.
    pub fn get(&self, id: &AclId) -> Option<AclBinding> {
        let pattern = self.patterns_by_id.get(id)?;
        let entry = self.entries(pattern)?.get(id)?;
        Some(AclBinding {
            pattern: pattern.clone(),
            entry: entry.clone(),
        })
    }

    /// Whether some id holds exactly `binding`: CreateAcls then answers
    /// success and writes nothing (Kafka's `AclControlManager.createAcls`).
    pub fn contains(&self, binding: &AclBinding) -> bool {
        self.entries(&binding.pattern)
            .is_some_and(|entries| entries.values().any(|e| *e == binding.entry))
    }

    /// Adds `binding` under `id` (an `AccessControlEntry` record). An ACL
    /// already under `id` is replaced and returned.
    pub fn add(&mut self, id: AclId, binding: AclBinding) -> Option<AclBinding> {
        let replaced = self.remove(&id);
        let AclBinding { pattern, entry } = binding;
        self.by_resource
            .entry((pattern.resource_type, pattern.pattern_type))
            .or_default()
            .entry(pattern.name.clone())
            .or_default()
            .insert(id, entry);
        self.patterns_by_id.insert(id, pattern);
        debug_assert_eq!(self.check_invariants(), Ok(()));
        replaced
    }

    /// Removes the ACL under `id` (a `RemoveAccessControlEntry` record) and
    /// returns it; `None` when no ACL has that id.
    pub fn remove(&mut self, id: &AclId) -> Option<AclBinding> {
        let pattern = self.patterns_by_id.remove(id)?;
        let key = (pattern.resource_type, pattern.pattern_type);
        let names = self.by_resource.get_mut(&key)?;
        let entries = names.get_mut(&pattern.name)?;
        let entry = entries.remove(id)?;
        // Empty maps are dropped so that two images with the same ACLs
        // compare equal, whatever they held before.
        if entries.is_empty() {
            names.remove(&pattern.name);
            if names.is_empty() {
                self.by_resource.remove(&key);
            }
        }
        Some(AclBinding { pattern, entry })
    }

    /// Every ACL in id order (what a snapshot of the image lists).
    pub fn iter(&self) -> impl Iterator<Item = (AclId, AclBinding)> + '_ {
        self.patterns_by_id.iter().filter_map(|(id, pattern)| {
            let entry = self.entries(pattern)?.get(id)?;
            Some((
                *id,
                AclBinding {
                    pattern: pattern.clone(),
                    entry: entry.clone(),
                },
            ))
        })
    }

    /// The ACLs `filter` selects with their ids, ordered by resource
    /// pattern, then id: what DeleteAcls removes and DescribeAcls lists.
    pub fn matching(&self, filter: &AclBindingFilter) -> Vec<(AclId, AclBinding)> {
        let mut out = Vec::new();
        for (&(resource_type, pattern_type), names) in &self.by_resource {
            if filter.pattern.resource_type != ResourceType::Any
                && filter.pattern.resource_type != resource_type
            {
                continue;
            }
            for (name, entries) in names {
                let pattern = ResourcePattern {
                    resource_type,
                    name: name.clone(),
                    pattern_type,
                };
                if !filter.pattern.matches(&pattern) {
                    continue;
                }
                for (id, entry) in entries {
                    if filter.entry.matches(entry) {
                        out.push((
                            *id,
                            AclBinding {
                                pattern: pattern.clone(),
                                entry: entry.clone(),
                            },
                        ));
                    }
                }
            }
        }
        out
    }

    /// The ids of the ACLs `filter` selects (DeleteAcls).
    pub fn ids_matching(&self, filter: &AclBindingFilter) -> Vec<AclId> {
        self.matching(filter)
            .into_iter()
            .map(|(id, _)| id)
            .collect()
    }

    /// The ACLs `filter` selects (DescribeAcls).
    pub fn bindings_matching(&self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        self.matching(filter).into_iter().map(|(_, b)| b).collect()
    }

    /// Calls `visit` with every entry whose pattern applies to the resource
    /// `resource_type`/`name`: a literal pattern of the name, the literal
    /// `*`, and every prefixed pattern that starts the name. Stops at the
    /// first `Break`.
    pub(crate) fn visit_applicable(
        &self,
        resource_type: ResourceType,
        name: &str,
        mut visit: impl FnMut(&AccessControlEntry) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let mut visit_all =
            |entries: &Entries| -> ControlFlow<()> { entries.values().try_for_each(&mut visit) };
        if let Some(literal) = self.by_resource.get(&(resource_type, PatternType::Literal)) {
            if let Some(entries) = literal.get(name) {
                visit_all(entries)?;
            }
            // A resource named `*` met the wildcard above already.
            if name != WILDCARD {
                if let Some(entries) = literal.get(WILDCARD) {
                    visit_all(entries)?;
                }
            }
        }
        if let Some(prefixed) = self
            .by_resource
            .get(&(resource_type, PatternType::Prefixed))
        {
            visit_prefixes(prefixed, name, visit_all)?;
        }
        ControlFlow::Continue(())
    }

    /// Every ACL on resources of `resource_type`, as pattern type, pattern
    /// name and entry (`Authorizer::authorize_by_resource_type`).
    pub(crate) fn of_type(
        &self,
        resource_type: ResourceType,
    ) -> impl Iterator<Item = (PatternType, &str, &AccessControlEntry)> + '_ {
        self.by_resource
            .range((resource_type, PatternType::Unknown)..=(resource_type, PatternType::Prefixed))
            .flat_map(|(&(_, pattern_type), names)| {
                names.iter().flat_map(move |(name, entries)| {
                    entries
                        .values()
                        .map(move |entry| (pattern_type, name.as_str(), entry))
                })
            })
    }

    fn entries(&self, pattern: &ResourcePattern) -> Option<&Entries> {
        self.by_resource
            .get(&(pattern.resource_type, pattern.pattern_type))?
            .get(&pattern.name)
    }

    /// The index and the ids agree: every id's entry sits under its
    /// pattern, nothing else does, and no map is empty.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut indexed = 0;
        for (&(resource_type, pattern_type), names) in &self.by_resource {
            if names.is_empty() {
                return Err(format!("an empty index for {resource_type}/{pattern_type}"));
            }
            for (name, entries) in names {
                if entries.is_empty() {
                    return Err(format!(
                        "no entries on {resource_type}/{pattern_type}/{name}"
                    ));
                }
                for id in entries.keys() {
                    let expected = ResourcePattern {
                        resource_type,
                        name: name.clone(),
                        pattern_type,
                    };
                    if self.patterns_by_id.get(id) != Some(&expected) {
                        return Err(format!("ACL {id:?} is indexed under {expected}"));
                    }
                    indexed += 1;
                }
            }
        }
        if indexed != self.patterns_by_id.len() {
            return Err(format!(
                "{} ids but {indexed} indexed entries",
                self.patterns_by_id.len()
            ));
        }
        Ok(())
    }
}

/// Calls `visit` with the value of every key of `map` that is a prefix of
/// `name` (the name itself included), longest first.
///
/// All of a name's prefixes sort at or before it, so the search starts at
/// the greatest key not after `name`, steps backwards, and jumps: a key
/// that is not a prefix shares some `n` first bytes with `name` and sorts
/// before it there, so no longer prefix can sort between it and `name`,
/// and the next candidate is the greatest key not after `name[..n]`. Each
/// step shortens the bound, so there are at most about two per byte of
/// `name`, however many keys the map holds.
fn visit_prefixes<'m, V>(
    map: &'m BTreeMap<String, V>,
    name: &str,
    mut visit: impl FnMut(&'m V) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let steps_max = 2 * name.len() + 2;
    let mut bound: Bound<&str> = Bound::Included(name);
    for _ in 0..steps_max {
        let Some((key, value)) = map.range::<str, _>((Bound::Unbounded, bound)).next_back() else {
            return ControlFlow::Continue(());
        };
        if name.starts_with(key.as_str()) {
            visit(value)?;
            bound = Bound::Excluded(&name[..key.len()]);
        } else {
            let shared = common_prefix_len(key, name);
            bound = Bound::Included(&name[..floor_char_boundary(name, shared)]);
        }
    }
    panic!("the prefix search of {name:?} took more than {steps_max} steps");
}

/// How many leading bytes `a` and `b` share.
fn common_prefix_len(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// The largest char boundary of `s` not after byte `index`: a key that is a
/// prefix of `s` ends on one, so nothing is lost by rounding down.
fn floor_char_boundary(s: &str, index: usize) -> usize {
    let mut i = index.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::binding::tests::acl;
    use crate::acl::binding::{AccessControlEntryFilter, ResourcePatternFilter};
    use crate::acl::types::{AclOperation, AclPermissionType};
    use proptest::prelude::*;

    fn id(n: u8) -> AclId {
        [n; 16]
    }

    fn topic(name: &str, pattern_type: PatternType, principal: &str) -> AclBinding {
        acl(
            ResourceType::Topic,
            name,
            pattern_type,
            principal,
            "*",
            AclOperation::Read,
            AclPermissionType::Allow,
        )
    }

    #[test]
    fn acls_are_added_found_and_removed_by_id() {
        let mut acls = AclImage::new();
        let a = topic("orders", PatternType::Literal, "User:alice");
        let b = topic("orders", PatternType::Literal, "User:bob");
        let c = topic("ord", PatternType::Prefixed, "User:alice");
        assert_eq!(acls.add(id(1), a.clone()), None);
        acls.add(id(2), b.clone());
        acls.add(id(3), c.clone());
        assert_eq!(acls.len(), 3);
        assert_eq!(acls.get(&id(2)), Some(b.clone()));
        assert!(acls.contains(&a) && acls.contains(&c));
        assert!(!acls.contains(&topic("orders", PatternType::Prefixed, "User:alice")));

        assert_eq!(acls.remove(&id(2)), Some(b.clone()));
        assert_eq!(acls.remove(&id(2)), None, "removed once");
        assert!(!acls.contains(&b));
        assert!(acls.contains(&a), "the other entry on the pattern stays");
        assert_eq!(acls.check_invariants(), Ok(()));

        acls.remove(&id(1));
        acls.remove(&id(3));
        assert!(acls.is_empty());
        assert_eq!(acls, AclImage::new(), "nothing is left behind");
    }

    #[test]
    fn adding_under_a_present_id_replaces_that_acl() {
        let mut acls = AclImage::new();
        let a = topic("orders", PatternType::Literal, "User:alice");
        let b = topic("payments", PatternType::Prefixed, "User:bob");
        acls.add(id(1), a.clone());
        assert_eq!(acls.add(id(1), b.clone()), Some(a.clone()));
        assert_eq!(acls.len(), 1);
        assert!(!acls.contains(&a));
        assert_eq!(acls.iter().collect::<Vec<_>>(), vec![(id(1), b)]);
        assert_eq!(acls.check_invariants(), Ok(()));
    }

    #[test]
    fn filters_select_ids_and_bindings() {
        let mut acls = AclImage::new();
        let a = topic("orders", PatternType::Literal, "User:alice");
        let b = topic("orders", PatternType::Prefixed, "User:bob");
        let c = topic("*", PatternType::Literal, "User:carol");
        let mut g = topic("orders", PatternType::Literal, "User:alice");
        g.pattern.resource_type = ResourceType::Group;
        for (n, binding) in [&a, &b, &c, &g].into_iter().enumerate() {
            acls.add(id(n as u8), binding.clone());
        }
        assert_eq!(acls.ids_matching(&AclBindingFilter::ANY).len(), 4);
        let alice = AclBindingFilter {
            pattern: ResourcePatternFilter::ANY,
            entry: AccessControlEntryFilter {
                principal: Some("User:alice".into()),
                ..AccessControlEntryFilter::ANY
            },
        };
        let mut ids = acls.ids_matching(&alice);
        ids.sort();
        assert_eq!(ids, vec![id(0), id(3)]);
        let matching_name = AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: ResourceType::Topic,
                name: Some("orders-eu".into()),
                pattern_type: PatternType::Match,
            },
            entry: AccessControlEntryFilter::ANY,
        };
        let mut found = acls.bindings_matching(&matching_name);
        found.sort();
        let mut expected = vec![b.clone(), c.clone()];
        expected.sort();
        assert_eq!(found, expected);
    }

    /// Every entry the index visits for a resource, against a scan of all
    /// ACLs with the MATCH filter's rule.
    fn applicable(acls: &AclImage, name: &str) -> Vec<String> {
        let mut seen = Vec::new();
        let _ = acls.visit_applicable(ResourceType::Topic, name, |e| {
            seen.push(e.principal.clone());
            ControlFlow::Continue(())
        });
        seen.sort();
        seen
    }

    #[test]
    fn the_index_finds_literal_wildcard_and_prefix_acls() {
        let mut acls = AclImage::new();
        let patterns = [
            ("foobar", PatternType::Prefixed),
            ("foob", PatternType::Literal),
            ("foo", PatternType::Prefixed),
            ("fb", PatternType::Prefixed),
            ("fa", PatternType::Prefixed),
            ("f", PatternType::Prefixed),
            ("eeee", PatternType::Literal),
            ("gar", PatternType::Prefixed),
            ("foobar", PatternType::Literal),
            ("*", PatternType::Literal),
            ("foobarbaz", PatternType::Prefixed),
        ];
        for (n, (name, pattern_type)) in patterns.iter().enumerate() {
            let principal = format!("User:{name}-{pattern_type}");
            acls.add(id(n as u8), topic(name, *pattern_type, &principal));
        }
        assert_eq!(
            applicable(&acls, "foobar"),
            vec![
                "User:*-LITERAL",
                "User:f-PREFIXED",
                "User:foo-PREFIXED",
                "User:foobar-LITERAL",
                "User:foobar-PREFIXED",
            ]
        );
        assert_eq!(
            applicable(&acls, "fb"),
            vec!["User:*-LITERAL", "User:f-PREFIXED", "User:fb-PREFIXED"]
        );
        assert_eq!(applicable(&acls, "x"), vec!["User:*-LITERAL"]);
        let mut group = topic("foobar", PatternType::Literal, "User:g");
        group.pattern.resource_type = ResourceType::Group;
        acls.add(id(99), group);
        assert_eq!(
            applicable(&acls, "foobar").len(),
            5,
            "groups are not topics"
        );
    }

    #[test]
    fn visiting_stops_at_the_first_break() {
        let mut acls = AclImage::new();
        for n in 0..5 {
            acls.add(id(n), topic("t", PatternType::Literal, "User:a"));
        }
        let mut visited = 0;
        let flow = acls.visit_applicable(ResourceType::Topic, "t", |_| {
            visited += 1;
            ControlFlow::Break(())
        });
        assert_eq!((flow, visited), (ControlFlow::Break(()), 1));
    }

    proptest! {
        /// The prefix search finds exactly the keys a scan finds, over a
        /// small alphabet (so prefixes are common) with a multi-byte char.
        #[test]
        fn the_prefix_search_agrees_with_a_scan(
            keys in prop::collection::btree_set("[ab\u{e9}]{0,5}", 0..40),
            name in "[ab\u{e9}]{0,7}",
        ) {
            let map: BTreeMap<String, String> =
                keys.iter().map(|k| (k.clone(), k.clone())).collect();
            let mut found = Vec::new();
            let _ = visit_prefixes(&map, &name, |k| {
                found.push(k.clone());
                ControlFlow::Continue(())
            });
            let mut expected: Vec<String> =
                keys.iter().filter(|k| name.starts_with(k.as_str())).cloned().collect();
            expected.sort_by_key(|k| std::cmp::Reverse(k.len()));
            prop_assert_eq!(found, expected);
        }
    }
}
