//! The target assignment of a new group epoch: the assignor's input built
//! from the members and the cluster's topics, and the records of what
//! changed (Kafka's `TargetAssignmentBuilder`).
//!
//! Only members whose target changed get a record; the target assignment
//! epoch record always follows them, so a replay that has seen the epoch
//! has seen every member's target for it.

use std::collections::{BTreeMap, BTreeSet};

use crate::group::consumer::assignor::{AssignorKind, GroupSpec, MemberSpec, TopicSpec};
use crate::group::consumer::member::ConsumerGroupMember;
use crate::group::consumer::records::ConsumerGroupRecord;
use crate::group::consumer::topics::{Assignment, TopicId, TopicsImage};

/// One member as the target assignment sees it: its subscription, and the
/// target it had (a static member replacing its old incarnation inherits
/// the old one's).
pub struct TargetMember<'a> {
    pub member: &'a ConsumerGroupMember,
    pub current_target: Option<&'a Assignment>,
    /// See [`MemberSpec::session_deadline_ms`].
    pub session_deadline_ms: Option<i64>,
}

/// The result: every member's new target and the records to persist.
pub struct TargetResult {
    pub targets: BTreeMap<String, Assignment>,
    pub records: Vec<ConsumerGroupRecord>,
}

/// The subscribed topics of one member that exist, by id.
pub fn member_topics(
    member: &ConsumerGroupMember,
    resolved_regexes: &BTreeMap<String, Vec<String>>,
    image: &TopicsImage,
) -> BTreeSet<TopicId> {
    let mut names: Vec<&String> = member.subscribed_topic_names.iter().collect();
    if let Some(r) = &member.subscribed_topic_regex {
        if let Some(topics) = resolved_regexes.get(r) {
            names.extend(topics.iter());
        }
    }
    names
        .into_iter()
        .filter_map(|n| image.by_name(n).map(|t| t.id))
        .collect()
}

pub fn build(
    group_id: &str,
    group_epoch: i32,
    assignor: AssignorKind,
    members: &[TargetMember<'_>],
    resolved_regexes: &BTreeMap<String, Vec<String>>,
    image: &TopicsImage,
    old_targets: &BTreeMap<String, Assignment>,
) -> TargetResult {
    let mut spec = GroupSpec::default();
    for m in members {
        let topics = member_topics(m.member, resolved_regexes, image);
        for t in image.topics.values() {
            if topics.contains(&t.id) {
                spec.topics.entry(t.id).or_insert_with(|| TopicSpec {
                    partition_racks: t.partition_racks.clone(),
                });
            }
        }
        spec.members.insert(
            m.member.member_id.clone(),
            MemberSpec {
                instance_id: m.member.instance_id.clone(),
                rack_id: m.member.rack_id.clone(),
                topics,
                current: m.current_target.cloned().unwrap_or_default(),
                session_deadline_ms: m.session_deadline_ms,
            },
        );
    }
    let targets = assignor.assign(&spec);
    let mut records = Vec::new();
    for (id, a) in &targets {
        if old_targets.get(id) != Some(a) {
            records.push(ConsumerGroupRecord::TargetAssignmentMember {
                group_id: group_id.to_string(),
                member_id: id.clone(),
                value: Some(a.clone()),
            });
        }
    }
    records.push(ConsumerGroupRecord::TargetAssignmentMetadata {
        group_id: group_id.to_string(),
        value: Some(group_epoch),
    });
    TargetResult { targets, records }
}
