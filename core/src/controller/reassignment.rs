//! Partition reassignment (AlterPartitionReassignments, API 45, and
//! ListPartitionReassignments, API 46) as Kafka's ReplicationControlManager
//! decides it. Pure: the image and the brokers' states in, `PartitionChange`
//! records and a result per partition out.
//!
//! Kafka's flow, each step a metadata record so that a controller failover
//! or a broker restart picks it up where it was:
//! 1. The request sets the replicas to the target followed by the replicas
//!    being removed, and records which are being added and removed
//!    (`TargetReplicas`). The added replicas open the partition as
//!    followers and catch up.
//! 2. The leader adds each to the ISR once it has caught up (AlterPartition).
//! 3. Once every target replica is in the ISR, the change that put the last
//!    one there also completes the reassignment (`plan_partition_change`):
//!    the removed replicas leave the replicas and the ISR, and the leader
//!    moves to the first in-sync target replica if it was removed. Removed
//!    replicas then delete their copy when their image no longer lists
//!    them.
//!
//! A cancel (a null replica list) reverts to the replicas before the
//! reassignment: the added ones leave the replicas and the ISR.

use std::collections::{BTreeMap, BTreeSet};

use crate::controller::partitions::{
    plan_partition_change, topic_rules, BrokerView, ElectionKind, TargetReplicas,
};
use crate::metadata::image::{MetadataImage, PartitionImage};
use crate::metadata::records::MetadataRecord;
use crate::protocol::error_code;

/// One partition asked about: `Some(replicas)` moves it there, `None`
/// cancels its reassignment.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReassignmentRequest {
    pub topic: String,
    pub partition: i32,
    pub target: Option<Vec<i32>>,
}

/// One partition's outcome: Kafka's error code (NONE when accepted) and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReassignmentOutcome {
    pub topic: String,
    pub partition: i32,
    pub error_code: i16,
    pub message: Option<String>,
}

/// A reassignment in progress, as ListPartitionReassignments reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OngoingReassignment {
    pub topic: String,
    pub partition: i32,
    pub replicas: Vec<i32>,
    pub adding: Vec<i32>,
    pub removing: Vec<i32>,
}

/// The records to commit (one entry, as Kafka's `atomicOf`) and an outcome
/// per partition, in the order asked.
#[derive(Debug, Default)]
pub struct ReassignmentPlan {
    pub records: Vec<MetadataRecord>,
    pub outcomes: Vec<ReassignmentOutcome>,
}

/// Decides AlterPartitionReassignments. `brokers` are the registered
/// brokers (fenced ones may be targets, as in Kafka; they catch up once
/// back). With `allow_replication_factor_change` false (version 1), a
/// target of another size is refused.
pub fn plan_alter_reassignments(
    image: &MetadataImage,
    brokers: &[BrokerView],
    requests: &[ReassignmentRequest],
    allow_replication_factor_change: bool,
) -> ReassignmentPlan {
    // Later partitions see earlier ones' changes (a partition named twice).
    let mut next = image.clone();
    let mut plan = ReassignmentPlan::default();
    for req in requests {
        let outcome = match plan_one(&next, brokers, req, allow_replication_factor_change) {
            Ok(Some(record)) => {
                next.apply(next.offset + 1, &record);
                plan.records.push(record);
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        let (error_code, message) = match outcome {
            Ok(()) => (error_code::NONE, None),
            Err((code, message)) => (code, Some(message)),
        };
        plan.outcomes.push(ReassignmentOutcome {
            topic: req.topic.clone(),
            partition: req.partition,
            error_code,
            message,
        });
    }
    plan
}

type Refusal = (i16, String);

fn plan_one(
    image: &MetadataImage,
    brokers: &[BrokerView],
    req: &ReassignmentRequest,
    allow_replication_factor_change: bool,
) -> Result<Option<MetadataRecord>, Refusal> {
    let Some(topic) = image.topic(&req.topic) else {
        return Err((
            error_code::UNKNOWN_TOPIC_OR_PARTITION,
            format!("unable to find a topic named {:?}", req.topic),
        ));
    };
    let Some(p) = topic.partitions.get(&req.partition) else {
        return Err((
            error_code::UNKNOWN_TOPIC_OR_PARTITION,
            format!("topic {} has no partition {}", req.topic, req.partition),
        ));
    };
    let usable = |id: i32| brokers.iter().any(|b| b.id == id && b.usable);
    let tp = format!("{}-{}", req.topic, req.partition);
    let plan = match &req.target {
        Some(target) => {
            validate_target(target, brokers, &tp)?;
            if !allow_replication_factor_change {
                let current = p.replicas.len() - p.removing_replicas.len();
                if current != target.len() {
                    return Err((
                        error_code::INVALID_REPLICATION_FACTOR,
                        format!(
                            "the replication factor of {tp} is changed from {current} to {}",
                            target.len()
                        ),
                    ));
                }
            }
            let rules = topic_rules(image, topic, target.len(), None);
            plan_partition_change(p, p.isr.clone(), Some(reassign(p, target)), &usable, rules)
        }
        None => {
            if !p.is_reassigning() {
                return Err((
                    error_code::NO_REASSIGNMENT_IN_PROGRESS,
                    format!("no reassignment of {tp} is in progress"),
                ));
            }
            let (reverted, isr, unclean) = revert(p);
            let mut rules = topic_rules(image, topic, reverted.replicas.len(), None);
            if unclean && !rules.unclean_allowed {
                return Err((
                    error_code::INVALID_REPLICA_ASSIGNMENT,
                    format!(
                        "unable to revert the assignment of {tp}: no replica of the original \
                         assignment is in sync, so it would need an unclean leader election \
                         (allow one with unclean.leader.election.enable on the topic)"
                    ),
                ));
            }
            rules.unclean_allowed = unclean;
            plan_partition_change(p, isr, Some(reverted), &usable, rules).map(|mut change| {
                if unclean {
                    change.election = Some(ElectionKind::Unclean);
                }
                change
            })
        }
    };
    Ok(plan.map(|change| change.into_record(topic.id, req.partition)))
}

/// Kafka's `validateManualPartitionAssignment`: a non-empty list of
/// registered brokers, each once.
fn validate_target(target: &[i32], brokers: &[BrokerView], tp: &str) -> Result<(), Refusal> {
    let refuse = |m: String| Err((error_code::INVALID_REPLICA_ASSIGNMENT, m));
    if target.is_empty() {
        return refuse(format!(
            "the new assignment of {tp} is an empty replica list"
        ));
    }
    let mut seen = BTreeSet::new();
    for &b in target {
        if !brokers.iter().any(|v| v.id == b) {
            return refuse(format!(
                "the new assignment of {tp} includes broker {b}, but no such broker is registered"
            ));
        }
        if !seen.insert(b) {
            return refuse(format!(
                "the new assignment of {tp} includes broker {b} more than once"
            ));
        }
    }
    Ok(())
}

/// Kafka's `PartitionReassignmentReplicas(current, target)`: the current
/// replicas (including any earlier reassignment's) not in the target are
/// removed, the target's not in the current are added; the replicas are the
/// target in its order followed by those being removed.
fn reassign(p: &PartitionImage, target: &[i32]) -> TargetReplicas {
    let removing: BTreeSet<i32> = p
        .replicas
        .iter()
        .copied()
        .filter(|r| !target.contains(r))
        .collect();
    let adding: BTreeSet<i32> = target
        .iter()
        .copied()
        .filter(|r| !p.replicas.contains(r))
        .collect();
    let mut replicas = target.to_vec();
    replicas.extend(removing.iter().copied());
    TargetReplicas {
        replicas,
        adding: adding.into_iter().collect(),
        removing: removing.into_iter().collect(),
    }
}

/// Kafka's `PartitionReassignmentRevert`: the replicas before the
/// reassignment and their ISR. With no original replica in sync the ISR is
/// the first original replica, which is an unclean election (third value).
fn revert(p: &PartitionImage) -> (TargetReplicas, Vec<i32>, bool) {
    let replicas: Vec<i32> = p
        .replicas
        .iter()
        .copied()
        .filter(|r| !p.adding_replicas.contains(r))
        .collect();
    let mut isr: Vec<i32> = p
        .isr
        .iter()
        .copied()
        .filter(|r| !p.adding_replicas.contains(r))
        .collect();
    let unclean = isr.is_empty() && !p.isr.is_empty();
    if unclean {
        isr = replicas.first().copied().into_iter().collect();
    }
    (
        TargetReplicas {
            replicas,
            adding: Vec::new(),
            removing: Vec::new(),
        },
        isr,
        unclean,
    )
}

/// ListPartitionReassignments: the reassignments in progress, of every
/// partition (`None`) or of those asked; unknown partitions and those not
/// being reassigned are left out, as Kafka does.
pub fn list_reassignments(
    image: &MetadataImage,
    asked: Option<&[(String, Vec<i32>)]>,
) -> Vec<OngoingReassignment> {
    let ongoing = |topic: &str, index: i32, p: &PartitionImage| {
        p.is_reassigning().then(|| OngoingReassignment {
            topic: topic.to_string(),
            partition: index,
            replicas: p.replicas.clone(),
            adding: p.adding_replicas.clone(),
            removing: p.removing_replicas.clone(),
        })
    };
    match asked {
        None => image
            .topics
            .values()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .filter_map(|(&i, p)| ongoing(&t.name, i, p))
            })
            .collect(),
        Some(asked) => {
            let mut wanted: BTreeMap<(String, i32), ()> = BTreeMap::new();
            for (topic, indexes) in asked {
                for &i in indexes {
                    wanted.insert((topic.clone(), i), ());
                }
            }
            wanted
                .keys()
                .filter_map(|(topic, i)| {
                    let p = image.partition(topic, *i)?;
                    ongoing(topic, *i, p)
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::partitions::{plan_alter_partition, IsrProposal};
    use crate::metadata::records::Uuid;

    const T: Uuid = [3; 16];

    fn image(replicas: &[i32], isr: &[i32], leader: i32) -> MetadataImage {
        let mut img = MetadataImage::default();
        img.apply(
            0,
            &MetadataRecord::Topic {
                name: "t".into(),
                topic_id: T,
            },
        );
        img.apply(
            1,
            &MetadataRecord::Partition {
                topic_id: T,
                partition: 0,
                replicas: replicas.to_vec(),
                isr: isr.to_vec(),
                leader,
                leader_epoch: 4,
                partition_epoch: 7,
                elr: Vec::new(),
                last_known_elr: Vec::new(),
                adding_replicas: Vec::new(),
                removing_replicas: Vec::new(),
                last_unclean_election_epoch: None,
            },
        );
        img
    }

    fn brokers(ids: &[i32]) -> Vec<BrokerView> {
        ids.iter()
            .map(|&id| BrokerView {
                id,
                epoch: 100 + id as i64,
                usable: true,
            })
            .collect()
    }

    fn move_to(target: Option<Vec<i32>>) -> Vec<ReassignmentRequest> {
        vec![ReassignmentRequest {
            topic: "t".into(),
            partition: 0,
            target,
        }]
    }

    fn apply(img: &mut MetadataImage, records: &[MetadataRecord]) {
        for r in records {
            img.apply(img.offset + 1, r);
        }
    }

    fn part(img: &MetadataImage) -> PartitionImage {
        img.partition("t", 0).unwrap().clone()
    }

    /// The leader grows the ISR to `isr` with AlterPartition.
    fn grow_isr(img: &mut MetadataImage, b: &[BrokerView], isr: &[i32]) {
        let p = part(img);
        let proposal = IsrProposal {
            topic_id: T,
            partition: 0,
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            new_isr: isr.iter().map(|&r| (r, 100 + r as i64)).collect(),
        };
        let (records, d) =
            plan_alter_partition(img, b, p.leader, 100 + p.leader as i64, &[proposal]).unwrap();
        assert_eq!(d[0].error_code, 0, "{d:?}");
        apply(img, &records);
    }

    #[test]
    fn a_move_adds_the_targets_and_completes_once_they_are_in_sync() {
        let b = brokers(&[1, 2, 3, 4, 5]);
        let mut img = image(&[1, 2, 3], &[1, 2, 3], 1);
        let plan = plan_alter_reassignments(&img, &b, &move_to(Some(vec![3, 4, 5])), true);
        assert_eq!(plan.outcomes[0].error_code, 0);
        apply(&mut img, &plan.records);
        let p = part(&img);
        assert_eq!(
            p.replicas,
            vec![3, 4, 5, 1, 2],
            "the target, then the removed"
        );
        assert_eq!(
            (p.adding_replicas.clone(), p.removing_replicas.clone()),
            (vec![4, 5], vec![1, 2])
        );
        assert_eq!(
            (p.leader, p.leader_epoch),
            (1, 4),
            "the leader stays until the end"
        );
        assert_eq!(list_reassignments(&img, None).len(), 1);
        // 4 catches up: not done yet.
        grow_isr(&mut img, &b, &[1, 2, 3, 4]);
        assert!(part(&img).is_reassigning());
        // 5 catches up: done, and leadership moves into the target.
        grow_isr(&mut img, &b, &[1, 2, 3, 4, 5]);
        let p = part(&img);
        assert!(!p.is_reassigning());
        assert_eq!(p.replicas, vec![3, 4, 5]);
        assert_eq!(p.isr, vec![3, 4, 5]);
        assert_eq!(p.leader, 3);
        assert_eq!(p.leader_epoch, 5);
        assert!(list_reassignments(&img, None).is_empty());
    }

    #[test]
    fn a_target_already_in_sync_completes_at_once() {
        let b = brokers(&[1, 2, 3]);
        let mut img = image(&[1, 2, 3], &[1, 2, 3], 1);
        let plan = plan_alter_reassignments(&img, &b, &move_to(Some(vec![2, 3])), true);
        apply(&mut img, &plan.records);
        let p = part(&img);
        assert_eq!(
            (p.replicas.clone(), p.isr.clone(), p.leader),
            (vec![2, 3], vec![2, 3], 2)
        );
        assert!(!p.is_reassigning());
        // The same assignment again changes nothing.
        let plan = plan_alter_reassignments(&img, &b, &move_to(Some(vec![2, 3])), true);
        assert!(plan.records.is_empty());
        assert_eq!(plan.outcomes[0].error_code, 0);
    }

    #[test]
    fn a_cancel_reverts_to_the_original_replicas() {
        let b = brokers(&[1, 2, 3, 4]);
        let mut img = image(&[1, 2], &[1, 2], 1);
        let plan = plan_alter_reassignments(&img, &b, &move_to(Some(vec![3, 4])), true);
        apply(&mut img, &plan.records);
        grow_isr(&mut img, &b, &[1, 2, 3]);
        let plan = plan_alter_reassignments(&img, &b, &move_to(None), true);
        assert_eq!(plan.outcomes[0].error_code, 0);
        apply(&mut img, &plan.records);
        let p = part(&img);
        assert_eq!(
            (p.replicas.clone(), p.isr.clone(), p.leader),
            (vec![1, 2], vec![1, 2], 1)
        );
        assert!(!p.is_reassigning());
        let plan = plan_alter_reassignments(&img, &b, &move_to(None), true);
        assert_eq!(
            plan.outcomes[0].error_code,
            error_code::NO_REASSIGNMENT_IN_PROGRESS
        );
    }

    #[test]
    fn bad_targets_are_refused_with_kafkas_codes() {
        let b = brokers(&[1, 2, 3]);
        let img = image(&[1, 2], &[1, 2], 1);
        let code = |target: Vec<i32>, allow: bool| {
            plan_alter_reassignments(&img, &b, &move_to(Some(target)), allow).outcomes[0].error_code
        };
        assert_eq!(code(vec![], true), error_code::INVALID_REPLICA_ASSIGNMENT);
        assert_eq!(
            code(vec![1, 9], true),
            error_code::INVALID_REPLICA_ASSIGNMENT
        );
        assert_eq!(
            code(vec![1, 1], true),
            error_code::INVALID_REPLICA_ASSIGNMENT
        );
        assert_eq!(
            code(vec![1, 2, 3], false),
            error_code::INVALID_REPLICATION_FACTOR
        );
        assert_eq!(code(vec![1, 2, 3], true), error_code::NONE);
        let unknown = plan_alter_reassignments(
            &img,
            &b,
            &[ReassignmentRequest {
                topic: "t".into(),
                partition: 5,
                target: Some(vec![1]),
            }],
            true,
        );
        assert_eq!(
            unknown.outcomes[0].error_code,
            error_code::UNKNOWN_TOPIC_OR_PARTITION
        );
    }

    #[test]
    fn listing_names_only_partitions_being_reassigned() {
        let b = brokers(&[1, 2, 3]);
        let mut img = image(&[1], &[1], 1);
        let plan = plan_alter_reassignments(&img, &b, &move_to(Some(vec![2])), true);
        apply(&mut img, &plan.records);
        let all = list_reassignments(&img, None);
        assert_eq!(
            all,
            vec![OngoingReassignment {
                topic: "t".into(),
                partition: 0,
                replicas: vec![2, 1],
                adding: vec![2],
                removing: vec![1],
            }]
        );
        let asked = [("t".to_string(), vec![0, 7]), ("nope".to_string(), vec![0])];
        assert_eq!(list_reassignments(&img, Some(&asked)), all);
    }
}
