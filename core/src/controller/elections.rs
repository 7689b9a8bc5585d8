//! Leader elections asked for by an operator (ElectLeaders, API 43) and the
//! controller's automatic preferred-leader balancing, as Kafka's
//! ReplicationControlManager decides them. Pure: the image and the brokers'
//! states in, `PartitionChange` records and a result per partition out.
//!
//! - **Preferred:** the first replica of the assignment leads, if it is
//!   usable and in the ISR. Already leading: ELECTION_NOT_NEEDED. Not
//!   usable or out of sync: PREFERRED_LEADER_NOT_AVAILABLE.
//! - **Unclean:** only for a partition without a leader. An in-sync or
//!   eligible (ELR) usable replica is elected cleanly if there is one
//!   (replica order), as failover would; otherwise the first usable
//!   replica, which becomes the whole ISR and empties the ELR. With a
//!   leader: ELECTION_NOT_NEEDED; with no usable replica:
//!   ELIGIBLE_LEADERS_NOT_AVAILABLE.
//!
//! A change of leader bumps the leader epoch when applied, as any election.

use std::collections::BTreeMap;

use crate::controller::partitions::{
    plan_partition_change, topic_rules, BrokerView, ChangeRules, PartitionChangePlan, NO_LEADER,
};
use crate::metadata::image::{MetadataImage, PartitionImage, TopicImage};
use crate::metadata::records::MetadataRecord;
use crate::protocol::error_code;

/// Which leader an election looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ElectionType {
    Preferred,
    Unclean,
}

/// One partition's outcome: Kafka's error code (NONE when elected) and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ElectionOutcome {
    pub partition: i32,
    pub error_code: i16,
    pub message: Option<String>,
}

/// The records to commit and the outcomes by topic.
#[derive(Debug, Default)]
pub struct ElectionPlan {
    pub records: Vec<MetadataRecord>,
    pub results: BTreeMap<String, Vec<ElectionOutcome>>,
}

/// Elects leaders for `partitions` (by topic), or for every partition when
/// `None`. For every partition, as Kafka does, the partitions that needed no
/// election are left out of the results.
pub fn plan_elect_leaders(
    image: &MetadataImage,
    brokers: &[BrokerView],
    election: ElectionType,
    partitions: Option<Vec<(String, Vec<i32>)>>,
) -> ElectionPlan {
    let mut plan = ElectionPlan::default();
    let usable = |id: i32| brokers.iter().any(|b| b.id == id && b.usable);
    let elect = |plan: &mut ElectionPlan, topic: &TopicImage, index: i32, p: &PartitionImage| {
        let rules = ChangeRules {
            unclean_allowed: true,
            ..topic_rules(image, topic, p.replicas.len(), None)
        };
        match decide(p, election, &usable, rules) {
            Decision::Elect(change) => {
                plan.records.push(change.into_record(topic.id, index));
                (error_code::NONE, None)
            }
            Decision::NotNeeded => (error_code::ELECTION_NOT_NEEDED, None),
            Decision::Refused { code, message } => (code, Some(message)),
        }
    };
    match partitions {
        None => {
            for topic in image.topics.values() {
                for (&index, p) in &topic.partitions {
                    let (code, message) = elect(&mut plan, topic, index, p);
                    if code != error_code::ELECTION_NOT_NEEDED {
                        plan.results
                            .entry(topic.name.clone())
                            .or_default()
                            .push(ElectionOutcome {
                                partition: index,
                                error_code: code,
                                message,
                            });
                    }
                }
            }
        }
        Some(asked) => {
            for (name, indexes) in asked {
                let topic = image.topic(&name);
                for index in indexes {
                    let (code, message) =
                        match topic.and_then(|t| Some((t, t.partitions.get(&index)?))) {
                            Some((t, p)) => elect(&mut plan, t, index, p),
                            None => (
                                error_code::UNKNOWN_TOPIC_OR_PARTITION,
                                Some(format!("{name}-{index} does not exist")),
                            ),
                        };
                    let outcomes = plan.results.entry(name.clone()).or_default();
                    // A partition named twice is answered once.
                    if outcomes.iter().all(|o| o.partition != index) {
                        outcomes.push(ElectionOutcome {
                            partition: index,
                            error_code: code,
                            message,
                        });
                    }
                }
            }
        }
    }
    plan
}

/// The automatic balancing (`auto.leader.rebalance.enable`): when more than
/// `imbalance_percentage` of the partitions that prefer some broker are led
/// by another, every such partition whose preferred replica can lead gets
/// it back. Kafka's `leader.imbalance.per.broker.percentage` rule.
pub fn plan_preferred_rebalance(
    image: &MetadataImage,
    brokers: &[BrokerView],
    imbalance_percentage: u32,
) -> Vec<MetadataRecord> {
    // Per preferred broker: (partitions preferring it, of them led elsewhere).
    let mut counts: BTreeMap<i32, (usize, usize)> = BTreeMap::new();
    for topic in image.topics.values() {
        for p in topic.partitions.values() {
            let Some(&preferred) = p.replicas.first() else {
                continue;
            };
            let c = counts.entry(preferred).or_default();
            c.0 += 1;
            if p.leader != preferred {
                c.1 += 1;
            }
        }
    }
    let imbalanced: Vec<i32> = counts
        .iter()
        .filter(|(_, &(total, elsewhere))| {
            total > 0 && elsewhere * 100 > total * imbalance_percentage as usize
        })
        .map(|(&b, _)| b)
        .collect();
    if imbalanced.is_empty() {
        return Vec::new();
    }
    let mut asked: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for topic in image.topics.values() {
        for (&index, p) in &topic.partitions {
            if p.replicas.first().is_some_and(|b| imbalanced.contains(b)) {
                asked.entry(topic.name.clone()).or_default().push(index);
            }
        }
    }
    plan_elect_leaders(
        image,
        brokers,
        ElectionType::Preferred,
        Some(asked.into_iter().collect()),
    )
    .records
}

/// What an election decides for one partition.
enum Decision {
    /// Elect a leader: the change to record.
    Elect(PartitionChangePlan),
    /// The partition already has the leader asked for (ELECTION_NOT_NEEDED).
    NotNeeded,
    /// Kafka's error code for this partition, and why.
    Refused { code: i16, message: String },
}

/// `rules` are the topic's, with unclean elections allowed: an unclean
/// ElectLeaders asks for one whatever the topic says.
fn decide(
    p: &PartitionImage,
    election: ElectionType,
    usable: &impl Fn(i32) -> bool,
    rules: ChangeRules,
) -> Decision {
    let refused = |code, message| Decision::Refused { code, message };
    match election {
        ElectionType::Preferred => {
            let Some(&preferred) = p.replicas.first() else {
                return refused(
                    error_code::PREFERRED_LEADER_NOT_AVAILABLE,
                    "the partition has no replicas".into(),
                );
            };
            if p.leader == preferred {
                return Decision::NotNeeded;
            }
            if !usable(preferred) {
                return refused(
                    error_code::PREFERRED_LEADER_NOT_AVAILABLE,
                    format!(
                        "preferred replica {preferred} is fenced, shutting down or not registered"
                    ),
                );
            }
            if !p.isr.contains(&preferred) {
                return refused(
                    error_code::PREFERRED_LEADER_NOT_AVAILABLE,
                    format!(
                        "preferred replica {preferred} is not in the ISR {:?}; it must catch up first",
                        p.isr
                    ),
                );
            }
            Decision::Elect(PartitionChangePlan {
                leader: Some(preferred),
                ..Default::default()
            })
        }
        ElectionType::Unclean => {
            if p.leader != NO_LEADER {
                return Decision::NotNeeded;
            }
            match plan_partition_change(p, p.isr.clone(), None, usable, rules) {
                Some(change) if change.leader.is_some_and(|l| l != NO_LEADER) => {
                    Decision::Elect(change)
                }
                _ => refused(
                    error_code::ELIGIBLE_LEADERS_NOT_AVAILABLE,
                    format!("no replica of {:?} is live", p.replicas),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::Uuid;

    fn image(partitions: &[(Vec<i32>, Vec<i32>, i32)]) -> MetadataImage {
        let mut image = MetadataImage::empty();
        let id: Uuid = [7; 16];
        let mut topic = TopicImage {
            name: "t".into(),
            id,
            partitions: BTreeMap::new(),
            configs: BTreeMap::new(),
        };
        for (i, (replicas, isr, leader)) in partitions.iter().enumerate() {
            topic.partitions.insert(
                i as i32,
                PartitionImage {
                    replicas: replicas.clone(),
                    isr: isr.clone(),
                    leader: *leader,
                    leader_epoch: 3,
                    partition_epoch: 5,
                    last_unclean_election_epoch: None,
                    elr: Vec::new(),
                    last_known_elr: Vec::new(),
                    adding_replicas: Vec::new(),
                    removing_replicas: Vec::new(),
                },
            );
        }
        image.topic_names_by_id.insert(id, "t".into());
        image.topics.insert("t".into(), topic);
        image
    }

    fn brokers(usable: &[i32]) -> Vec<BrokerView> {
        (1..=3)
            .map(|id| BrokerView {
                id,
                epoch: 10,
                usable: usable.contains(&id),
            })
            .collect()
    }

    fn codes(plan: &ElectionPlan) -> Vec<(i32, i16)> {
        plan.results["t"]
            .iter()
            .map(|o| (o.partition, o.error_code))
            .collect()
    }

    fn leaders(plan: &ElectionPlan) -> Vec<(i32, i32)> {
        plan.records
            .iter()
            .map(|r| match r {
                MetadataRecord::PartitionChange {
                    partition,
                    leader: Some(l),
                    ..
                } => (*partition, *l),
                other => panic!("unexpected record {other:?}"),
            })
            .collect()
    }

    #[test]
    fn preferred_election_moves_leadership_back_only_to_an_in_sync_live_preferred_replica() {
        let image = image(&[
            (vec![1, 2, 3], vec![1, 2, 3], 2), // 1 is back in sync: elect it
            (vec![1, 2, 3], vec![1, 2, 3], 1), // already led by 1
            (vec![1, 2, 3], vec![2, 3], 2),    // 1 still catching up
            (vec![3, 1, 2], vec![3, 1, 2], 1), // 3 is fenced
        ]);
        let all = vec![("t".to_string(), vec![0, 1, 2, 3, 9])];
        let plan = plan_elect_leaders(
            &image,
            &brokers(&[1, 2]),
            ElectionType::Preferred,
            Some(all),
        );
        assert_eq!(
            codes(&plan),
            vec![
                (0, error_code::NONE),
                (1, error_code::ELECTION_NOT_NEEDED),
                (2, error_code::PREFERRED_LEADER_NOT_AVAILABLE),
                (3, error_code::PREFERRED_LEADER_NOT_AVAILABLE),
                (9, error_code::UNKNOWN_TOPIC_OR_PARTITION),
            ]
        );
        assert_eq!(leaders(&plan), vec![(0, 1)]);
        // For every partition, those needing no election are left out.
        let every = plan_elect_leaders(&image, &brokers(&[1, 2]), ElectionType::Preferred, None);
        assert_eq!(
            codes(&every),
            vec![
                (0, error_code::NONE),
                (2, error_code::PREFERRED_LEADER_NOT_AVAILABLE),
                (3, error_code::PREFERRED_LEADER_NOT_AVAILABLE),
            ]
        );
    }

    #[test]
    fn unclean_election_prefers_an_in_sync_replica_and_else_takes_any_live_one() {
        let image = image(&[
            (vec![1, 2, 3], vec![3], NO_LEADER), // 3 in sync and live: clean
            (vec![1, 2, 3], vec![1], NO_LEADER), // 1 gone: 2 unclean, ISR [2]
            (vec![1, 2, 3], vec![1], 2),         // has a leader
            (vec![1], vec![1], NO_LEADER),       // nobody live
        ]);
        let plan = plan_elect_leaders(
            &image,
            &brokers(&[2, 3]),
            ElectionType::Unclean,
            Some(vec![("t".to_string(), vec![0, 1, 2, 3])]),
        );
        assert_eq!(
            codes(&plan),
            vec![
                (0, error_code::NONE),
                (1, error_code::NONE),
                (2, error_code::ELECTION_NOT_NEEDED),
                (3, error_code::ELIGIBLE_LEADERS_NOT_AVAILABLE),
            ]
        );
        assert_eq!(
            plan.records,
            vec![
                MetadataRecord::PartitionChange {
                    topic_id: [7; 16],
                    partition: 0,
                    leader: Some(3),
                    isr: None,
                    unclean: false,
                    elr: None,
                    last_known_elr: None,
                    adding_replicas: None,
                    removing_replicas: None,
                    replicas: None,
                },
                MetadataRecord::PartitionChange {
                    topic_id: [7; 16],
                    partition: 1,
                    leader: Some(2),
                    isr: Some(vec![2]),
                    unclean: true,
                    elr: None,
                    last_known_elr: None,
                    adding_replicas: None,
                    removing_replicas: None,
                    replicas: None,
                },
            ]
        );
    }

    #[test]
    fn automatic_balancing_acts_only_above_the_imbalance_percentage() {
        // Broker 1 prefers 10 partitions; 1 of them is led elsewhere: 10%.
        let mut parts = vec![(vec![1, 2, 3], vec![1, 2, 3], 1); 9];
        parts.push((vec![1, 2, 3], vec![1, 2, 3], 2));
        let balanced = image(&parts);
        assert!(plan_preferred_rebalance(&balanced, &brokers(&[1, 2, 3]), 10).is_empty());
        // Two of ten: above 10%, and both come back.
        parts[0].2 = 3;
        let skewed = image(&parts);
        let records = plan_preferred_rebalance(&skewed, &brokers(&[1, 2, 3]), 10);
        let moved: Vec<i32> = records
            .iter()
            .map(|r| match r {
                MetadataRecord::PartitionChange {
                    partition, leader, ..
                } => {
                    assert_eq!(*leader, Some(1));
                    *partition
                }
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(moved, vec![0, 9]);
        // Not while the preferred broker is fenced.
        assert!(plan_preferred_rebalance(&skewed, &brokers(&[2, 3]), 10).is_empty());
    }
}
