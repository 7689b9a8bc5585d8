//! CreateAcls (API 30) and DeleteAcls (API 31): which ACL records the
//! controller writes, with the rules of Kafka's `AclControlManager`.
//!
//! Each creation and each filter is answered on its own: one refused does
//! not refuse the others. A creation of an ACL the image already holds,
//! or one an earlier creation of the same request makes, succeeds and
//! writes nothing, so there is never a second id for one ACL. The records
//! of one request are committed together, as one entry. New ids come from
//! the caller (the controller's randomness), so the simulation replays
//! them.

use std::collections::BTreeSet;

use crate::acl::{AclBinding, AclBindingFilter, AclError, AclId, AclImage};
use crate::metadata::records::MetadataRecord;
use crate::protocol::error_code;

/// The most records one CreateAcls or DeleteAcls may write: Kafka's
/// `MAX_RECORDS_PER_USER_OP`, so one request stays one bounded entry.
pub const ACL_RECORDS_PER_REQUEST_MAX: usize = 10_000;

/// How many ids a creation draws before it gives up on finding one that is
/// not in use. A random 16-byte id collides about never; only a broken
/// generator uses this up.
pub const ACL_ID_DRAWS_MAX: usize = 16;

/// A CreateAcls request's answer for each creation, in order, and the
/// records that make it so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateAclsPlan {
    pub results: Vec<Result<(), AclError>>,
    pub records: Vec<MetadataRecord>,
}

/// A DeleteAcls request's answer for each filter, in order (the ACLs it
/// deletes, or why it was refused), and the records that make it so. An
/// ACL two filters select is listed under both and removed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteAclsPlan {
    pub results: Vec<Result<Vec<AclBinding>, AclError>>,
    pub records: Vec<MetadataRecord>,
}

/// The records that create `creations` on top of `acls`, each new ACL
/// under an id from `new_id` that no ACL has. The whole request is refused
/// when it would write more than [`ACL_RECORDS_PER_REQUEST_MAX`] records,
/// as Kafka's bounded record list refuses it.
pub fn plan_create_acls(
    acls: &AclImage,
    creations: &[AclBinding],
    mut new_id: impl FnMut() -> AclId,
) -> Result<CreateAclsPlan, AclError> {
    let mut results = Vec::with_capacity(creations.len());
    let mut records = Vec::new();
    let mut created: BTreeSet<&AclBinding> = BTreeSet::new();
    let mut drawn: BTreeSet<AclId> = BTreeSet::new();
    for binding in creations {
        if let Err(e) = binding.validate_new() {
            results.push(Err(e));
            continue;
        }
        if acls.contains(binding) || !created.insert(binding) {
            results.push(Ok(()));
            continue;
        }
        if records.len() == ACL_RECORDS_PER_REQUEST_MAX {
            return Err(AclError {
                code: error_code::UNKNOWN_SERVER_ERROR,
                message: format!(
                    "Cannot create more than {ACL_RECORDS_PER_REQUEST_MAX} acls in a single \
                     create operation."
                ),
            });
        }
        let id = (0..ACL_ID_DRAWS_MAX)
            .map(|_| new_id())
            .find(|id| !acls.contains_id(id) && !drawn.contains(id));
        let Some(id) = id else {
            results.push(Err(AclError {
                code: error_code::UNKNOWN_SERVER_ERROR,
                message: "Unknown error while trying to create ACL".into(),
            }));
            created.remove(binding);
            continue;
        };
        drawn.insert(id);
        records.push(MetadataRecord::access_control_entry(id, binding));
        results.push(Ok(()));
    }
    assert_eq!(results.len(), creations.len());
    Ok(CreateAclsPlan { results, records })
}

/// The records that delete what each of `filters` selects from `acls`. A
/// filter that would make the request remove more than
/// [`ACL_RECORDS_PER_REQUEST_MAX`] ACLs is refused with Kafka's message,
/// and removes nothing (Kafka keeps the records it had gathered for it
/// before the limit; pinlog answers the filter and its records alike).
pub fn plan_delete_acls(acls: &AclImage, filters: &[AclBindingFilter]) -> DeleteAclsPlan {
    let mut results = Vec::with_capacity(filters.len());
    let mut removed: BTreeSet<AclId> = BTreeSet::new();
    for filter in filters {
        if let Err(e) = filter.validate() {
            results.push(Err(e));
            continue;
        }
        let selected = acls.matching(filter);
        let new_ids: BTreeSet<AclId> = selected
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| !removed.contains(id))
            .collect();
        if removed.len() + new_ids.len() > ACL_RECORDS_PER_REQUEST_MAX {
            results.push(Err(AclError {
                code: error_code::UNKNOWN_SERVER_ERROR,
                message: format!(
                    "Cannot remove more than {ACL_RECORDS_PER_REQUEST_MAX} acls in a single \
                     delete operation."
                ),
            }));
            continue;
        }
        removed.extend(new_ids);
        results.push(Ok(selected.into_iter().map(|(_, b)| b).collect()));
    }
    let records = removed
        .into_iter()
        .map(|id| MetadataRecord::RemoveAccessControlEntry { id })
        .collect();
    DeleteAclsPlan { results, records }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::{
        AccessControlEntry, AccessControlEntryFilter, AclOperation, AclPermissionType, PatternType,
        ResourcePattern, ResourcePatternFilter, ResourceType,
    };
    use crate::metadata::image::MetadataImage;

    fn read(topic: &str, principal: &str) -> AclBinding {
        AclBinding {
            pattern: ResourcePattern {
                resource_type: ResourceType::Topic,
                name: topic.into(),
                pattern_type: PatternType::Literal,
            },
            entry: AccessControlEntry {
                principal: principal.into(),
                host: "*".into(),
                operation: AclOperation::Read,
                permission: AclPermissionType::Allow,
            },
        }
    }

    /// Ids 1, 2, 3, ... in order.
    fn counter() -> impl FnMut() -> AclId {
        let mut n = 0u8;
        move || {
            n += 1;
            [n; 16]
        }
    }

    fn apply(image: &mut MetadataImage, records: &[MetadataRecord]) {
        for r in records {
            image.apply(image.offset + 1, r);
        }
    }

    #[test]
    fn a_duplicate_creation_succeeds_and_writes_nothing() {
        let mut image = MetadataImage::empty();
        let alice = read("orders", "User:alice");
        let bob = read("orders", "User:bob");
        let plan = plan_create_acls(
            &image.acls,
            &[alice.clone(), alice.clone(), bob.clone()],
            counter(),
        )
        .unwrap();
        assert_eq!(plan.results, vec![Ok(()), Ok(()), Ok(())]);
        assert_eq!(
            plan.records,
            vec![
                MetadataRecord::access_control_entry([1; 16], &alice),
                MetadataRecord::access_control_entry([2; 16], &bob),
            ]
        );
        apply(&mut image, &plan.records);
        let again = plan_create_acls(&image.acls, &[bob], counter()).unwrap();
        assert_eq!(again.results, vec![Ok(())]);
        assert!(again.records.is_empty(), "already present");
    }

    #[test]
    fn a_refused_creation_does_not_refuse_the_others() {
        let image = MetadataImage::empty();
        let mut bad = read("orders", "alice");
        bad.entry.operation = AclOperation::Any;
        let good = read("orders", "User:alice");
        let plan = plan_create_acls(&image.acls, &[bad, good.clone()], counter()).unwrap();
        assert_eq!(
            plan.results[0].as_ref().unwrap_err().message,
            "Invalid operation ANY"
        );
        assert_eq!(plan.results[1], Ok(()));
        assert_eq!(plan.records.len(), 1);
    }

    #[test]
    fn an_id_in_use_is_drawn_again() {
        let mut image = MetadataImage::empty();
        let alice = read("orders", "User:alice");
        apply(
            &mut image,
            &[MetadataRecord::access_control_entry([1; 16], &alice)],
        );
        let bob = read("orders", "User:bob");
        let plan = plan_create_acls(&image.acls, std::slice::from_ref(&bob), counter()).unwrap();
        assert_eq!(
            plan.records,
            vec![MetadataRecord::access_control_entry([2; 16], &bob)]
        );
        // A generator that only repeats a used id gives up, boundedly.
        let carol = read("orders", "User:carol");
        let stuck = plan_create_acls(&image.acls, &[carol], || [1; 16]).unwrap();
        assert_eq!(
            stuck.results[0].as_ref().unwrap_err().code,
            error_code::UNKNOWN_SERVER_ERROR
        );
        assert!(stuck.records.is_empty());
    }

    #[test]
    fn deletes_remove_each_selected_acl_once() {
        let mut image = MetadataImage::empty();
        let alice = read("orders", "User:alice");
        let bob = read("orders", "User:bob");
        let other = read("payments", "User:bob");
        let created = plan_create_acls(
            &image.acls,
            &[alice.clone(), bob.clone(), other.clone()],
            counter(),
        )
        .unwrap();
        apply(&mut image, &created.records);

        let orders = AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: ResourceType::Topic,
                name: Some("orders".into()),
                pattern_type: PatternType::Literal,
            },
            entry: AccessControlEntryFilter::ANY,
        };
        let bobs = AclBindingFilter {
            pattern: ResourcePatternFilter::ANY,
            entry: AccessControlEntryFilter {
                principal: Some("User:bob".into()),
                ..AccessControlEntryFilter::ANY
            },
        };
        let mut unknown = AclBindingFilter::ANY;
        unknown.entry.operation = AclOperation::Unknown;
        let plan = plan_delete_acls(&image.acls, &[orders, bobs, unknown]);
        assert_eq!(plan.results[0], Ok(vec![alice, bob.clone()]));
        assert_eq!(plan.results[1], Ok(vec![bob, other]));
        assert_eq!(
            plan.results[2].as_ref().unwrap_err().message,
            "Unknown entryFilter."
        );
        assert_eq!(
            plan.records,
            (1..=3)
                .map(|n| MetadataRecord::RemoveAccessControlEntry { id: [n; 16] })
                .collect::<Vec<_>>()
        );
        apply(&mut image, &plan.records);
        assert!(image.acls.is_empty());
    }
}
