//! The server-side assignors a consumer group picks from with
//! `group.remote.assignor` (Kafka's `uniform` and `range`): given every
//! member's subscription and current target assignment, and the
//! subscribed topics, the group's next target assignment.
//!
//! An assignor is a pure function of its inputs. Members and topics come
//! in ordered maps, so the same inputs always give the same assignment,
//! on every broker and in every replay of a simulation seed.

use std::collections::{BTreeMap, BTreeSet};

use crate::group::consumer::topics::{Assignment, TopicId};

pub mod range;
pub mod uniform;

/// What an assignor knows of one member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSpec {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// The subscribed topics that exist.
    pub topics: BTreeSet<TopicId>,
    /// The member's current target assignment, which a sticky assignor
    /// keeps where it can.
    pub current: Assignment,
    /// When the member's session ends unless it heartbeats again: the
    /// member heard from longest ago has the earliest deadline and is due
    /// to heartbeat first. A member learns of a new target only from a
    /// heartbeat answer, so among equally loaded members the `uniform`
    /// assignor moves partitions from and to those due first, and a
    /// rebalance reaches the members it involves sooner. `None` when
    /// unknown, which counts as due last.
    pub session_deadline_ms: Option<i64>,
}

/// One subscribed topic: its partitions' replica racks, by partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    pub partition_racks: Vec<Vec<String>>,
}

impl TopicSpec {
    pub fn num_partitions(&self) -> i32 {
        self.partition_racks.len() as i32
    }
}

/// The whole input of an assignment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSpec {
    pub members: BTreeMap<String, MemberSpec>,
    pub topics: BTreeMap<TopicId, TopicSpec>,
}

impl GroupSpec {
    /// Whether every member subscribes to the same topics (Kafka's
    /// HOMOGENEOUS subscription type), which lets the assignors work with
    /// one quota for everyone.
    pub fn is_homogeneous(&self) -> bool {
        let mut it = self.members.values();
        match it.next() {
            None => true,
            Some(first) => it.all(|m| m.topics == first.topics),
        }
    }

    /// Whether racks can matter: some member and some partition have one.
    pub fn rack_aware(&self) -> bool {
        self.members.values().any(|m| m.rack_id.is_some())
            && self
                .topics
                .values()
                .any(|t| t.partition_racks.iter().any(|r| !r.is_empty()))
    }
}

/// The assignors pinlog ships, by Kafka's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignorKind {
    Uniform,
    Range,
}

impl AssignorKind {
    pub fn from_name(name: &str) -> Option<AssignorKind> {
        match name {
            "uniform" => Some(AssignorKind::Uniform),
            "range" => Some(AssignorKind::Range),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AssignorKind::Uniform => "uniform",
            AssignorKind::Range => "range",
        }
    }

    /// The target assignment of every member of `spec` (members left
    /// without partitions map to an empty assignment).
    pub fn assign(self, spec: &GroupSpec) -> BTreeMap<String, Assignment> {
        let out = match self {
            AssignorKind::Uniform => uniform::assign(spec),
            AssignorKind::Range => range::assign(spec),
        };
        debug_assert!(check_assignment(spec, &out).is_ok());
        out
    }
}

/// The rules every assignment must follow: each member present, no
/// partition given twice, only subscribed and existing partitions given.
pub fn check_assignment(
    spec: &GroupSpec,
    out: &BTreeMap<String, Assignment>,
) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for id in spec.members.keys() {
        if !out.contains_key(id) {
            return Err(format!("member {id} has no assignment"));
        }
    }
    for (id, a) in out {
        let Some(m) = spec.members.get(id) else {
            return Err(format!("assignment for unknown member {id}"));
        };
        for (t, p) in a.iter() {
            if !m.topics.contains(&t) {
                return Err(format!(
                    "member {id} got a partition of a topic it does not subscribe to"
                ));
            }
            let Some(topic) = spec.topics.get(&t) else {
                return Err(format!("member {id} got a partition of an unknown topic"));
            };
            if p < 0 || p >= topic.num_partitions() {
                return Err(format!("member {id} got partition {p} out of range"));
            }
            if !seen.insert((t, p)) {
                return Err(format!("partition {p} given twice"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    pub fn topic(n: u8) -> TopicId {
        [n; 16]
    }

    pub fn spec(
        members: &[(&str, &[u8], Option<&str>)],
        topics: &[(u8, i32, &[&str])],
    ) -> GroupSpec {
        let mut s = GroupSpec::default();
        for (id, subs, rack) in members {
            s.members.insert(
                id.to_string(),
                MemberSpec {
                    instance_id: None,
                    rack_id: rack.map(str::to_string),
                    topics: subs.iter().map(|t| topic(*t)).collect(),
                    current: Assignment::new(),
                    session_deadline_ms: None,
                },
            );
        }
        for (t, n, racks) in topics {
            s.topics.insert(
                topic(*t),
                TopicSpec {
                    partition_racks: (0..*n as usize)
                        .map(|p| {
                            if racks.is_empty() {
                                vec![]
                            } else {
                                vec![racks[p % racks.len()].to_string()]
                            }
                        })
                        .collect(),
                },
            );
        }
        s
    }

    /// A member joining with `topics` and nothing assigned yet.
    pub fn new_member(topics: &[u8]) -> MemberSpec {
        MemberSpec {
            instance_id: None,
            rack_id: None,
            topics: topics.iter().map(|t| topic(*t)).collect(),
            current: Assignment::new(),
            session_deadline_ms: None,
        }
    }

    /// Feeds an assignment back in as the members' current one.
    pub fn with_current(mut s: GroupSpec, out: &BTreeMap<String, Assignment>) -> GroupSpec {
        for (id, m) in s.members.iter_mut() {
            m.current = out.get(id).cloned().unwrap_or_default();
        }
        s
    }

    pub fn counts(out: &BTreeMap<String, Assignment>) -> Vec<usize> {
        out.values().map(Assignment::len).collect()
    }
}
