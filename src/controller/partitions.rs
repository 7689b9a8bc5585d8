//! Partition leadership and ISR decisions (Kafka's ReplicationControlManager):
//! AlterPartition from a leader, failover when a broker is fenced, and the
//! election of a leader for offline partitions when a replica comes back.
//! Pure: the image and the brokers' states in, `PartitionChange` records out.

use crate::metadata::image::{MetadataImage, PartitionImage, TopicImage};
use crate::metadata::records::{MetadataRecord, Uuid};
use crate::metadata::{dynamic_broker_config, topic_config};
use crate::protocol::error_code;

/// "No leader".
pub const NO_LEADER: i32 = -1;

/// A broker as these decisions see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerView {
    pub id: i32,
    pub epoch: i64,
    /// Unfenced and not shutting down: may lead and be in an ISR.
    pub usable: bool,
}

/// One partition's proposed ISR (from AlterPartition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrProposal {
    pub topic_id: Uuid,
    pub partition: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    /// `(broker id, broker epoch)`; the epoch is -1 when the sender did not
    /// say (AlterPartition v2).
    pub new_isr: Vec<(i32, i64)>,
}

/// The answer for one proposal: the partition as it now stands, or an
/// error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrDecision {
    pub error_code: i16,
    /// The partition after the change (present unless the partition is
    /// unknown).
    pub partition: Option<PartitionImage>,
}

/// Kafka's AlterPartition rules. `leader_id`/`leader_epoch` are the
/// sender's broker id and broker epoch. Returns the records to commit and a
/// decision per proposal; a stale broker epoch refuses the whole request.
pub fn plan_alter_partition(
    image: &MetadataImage,
    brokers: &[BrokerView],
    leader_id: i32,
    leader_broker_epoch: i64,
    proposals: &[IsrProposal],
) -> Result<(Vec<MetadataRecord>, Vec<IsrDecision>), i16> {
    let sender = brokers.iter().find(|b| b.id == leader_id);
    if sender.is_none_or(|b| b.epoch != leader_broker_epoch) {
        return Err(error_code::STALE_BROKER_EPOCH);
    }
    let mut records = Vec::new();
    let mut decisions = Vec::new();
    for p in proposals {
        let Some(current) = partition_by_id(image, &p.topic_id, p.partition) else {
            decisions.push(IsrDecision {
                error_code: if topic_by_id(image, &p.topic_id).is_some() {
                    error_code::UNKNOWN_TOPIC_OR_PARTITION
                } else {
                    error_code::UNKNOWN_TOPIC_ID
                },
                partition: None,
            });
            continue;
        };
        let refuse = |code: i16| IsrDecision {
            error_code: code,
            partition: Some(current.clone()),
        };
        if current.leader != leader_id {
            decisions.push(refuse(error_code::INVALID_REQUEST));
            continue;
        }
        if p.leader_epoch != current.leader_epoch {
            decisions.push(refuse(error_code::FENCED_LEADER_EPOCH));
            continue;
        }
        if p.partition_epoch != current.partition_epoch {
            decisions.push(refuse(error_code::INVALID_UPDATE_VERSION));
            continue;
        }
        let ids: Vec<i32> = p.new_isr.iter().map(|(id, _)| *id).collect();
        let valid_members = !ids.is_empty()
            && ids.contains(&leader_id)
            && ids.iter().all(|id| current.replicas.contains(id))
            && (1..ids.len()).all(|i| !ids[..i].contains(&ids[i]));
        if !valid_members {
            decisions.push(refuse(error_code::INVALID_REQUEST));
            continue;
        }
        // KIP-903: a member joining the ISR must be live, and the epoch the
        // leader saw it fetch with must be its current one (a broker that
        // restarted in between may have lost data).
        let eligible = p.new_isr.iter().all(|(id, epoch)| {
            current.isr.contains(id)
                || brokers
                    .iter()
                    .any(|b| b.id == *id && b.usable && (*epoch < 0 || *epoch == b.epoch))
        });
        if !eligible {
            decisions.push(refuse(error_code::INELIGIBLE_REPLICA));
            continue;
        }
        let mut next = current.clone();
        next.isr = ids.clone();
        next.partition_epoch += 1;
        records.push(MetadataRecord::PartitionChange {
            topic_id: p.topic_id,
            partition: p.partition,
            leader: None,
            isr: Some(ids),
            unclean: false,
        });
        decisions.push(IsrDecision {
            error_code: error_code::NONE,
            partition: Some(next),
        });
    }
    Ok((records, decisions))
}

/// Brokers that can no longer serve (fenced, shutting down) leave every ISR,
/// and their leaderships move to the first usable ISR member in replica
/// order; with none, the partition goes offline (leader -1) and keeps its
/// last ISR member, as KRaft does, unless the topic allows an unclean
/// election. Offline partitions whose replica became usable get a leader.
/// `unclean_allowed` reads the topic's `unclean.leader.election.enable`.
pub fn plan_leadership(
    image: &MetadataImage,
    brokers: &[BrokerView],
    unclean_allowed: impl Fn(&TopicImage) -> bool,
) -> Vec<MetadataRecord> {
    let usable = |id: i32| brokers.iter().any(|b| b.id == id && b.usable);
    let mut records = Vec::new();
    for topic in image.topics.values() {
        for (&index, p) in &topic.partitions {
            let mut isr: Vec<i32> = p.isr.iter().copied().filter(|&r| usable(r)).collect();
            let leader_ok = p.leader != NO_LEADER && usable(p.leader);
            let mut unclean = false;
            let leader = if leader_ok {
                p.leader
            } else if let Some(&first) = p.replicas.iter().find(|r| isr.contains(r)) {
                first
            } else if unclean_allowed(topic) {
                match p.replicas.iter().copied().find(|&r| usable(r)) {
                    Some(r) => {
                        unclean = true;
                        isr = vec![r];
                        r
                    }
                    None => NO_LEADER,
                }
            } else {
                NO_LEADER
            };
            if isr.is_empty() {
                // Nobody usable is in sync: keep the last member, so that
                // it (and only it) can lead cleanly when it comes back.
                isr = p.isr.clone();
                if isr.len() > 1 {
                    let keep = if p.isr.contains(&p.leader) {
                        p.leader
                    } else {
                        p.isr[0]
                    };
                    isr = vec![keep];
                }
            }
            let leader_changed = leader != p.leader;
            let isr_changed = isr != p.isr;
            if !leader_changed && !isr_changed {
                continue;
            }
            records.push(MetadataRecord::PartitionChange {
                topic_id: topic.id,
                partition: index,
                leader: leader_changed.then_some(leader),
                isr: isr_changed.then_some(isr),
                unclean,
            });
        }
    }
    records
}

/// The brokers as the partition decisions see them.
pub fn broker_views(image: &MetadataImage) -> Vec<BrokerView> {
    image
        .brokers
        .values()
        .map(|b| BrokerView {
            id: b.id,
            epoch: b.epoch,
            usable: !b.fenced && !b.in_controlled_shutdown,
        })
        .collect()
}

/// The records that fence `brokers` (id, broker epoch), with the leadership
/// and ISR changes that follow from it.
pub fn fencing(image: &MetadataImage, brokers: &[(i32, i64)]) -> Vec<MetadataRecord> {
    let records = brokers
        .iter()
        .map(
            |&(broker_id, broker_epoch)| MetadataRecord::BrokerRegistrationChange {
                broker_id,
                broker_epoch,
                fenced: Some(true),
                in_controlled_shutdown: None,
            },
        )
        .collect();
    with_leadership_changes(image, records)
}

/// `records` plus the leadership and ISR changes the brokers' states after
/// them call for: a fenced or shutting-down broker leaves every ISR and
/// hands its leaderships over; offline partitions whose replica came back
/// get a leader. Committed in the same entry, so no image has a fenced
/// leader that the controller already knew about.
pub fn with_leadership_changes(
    image: &MetadataImage,
    mut records: Vec<MetadataRecord>,
) -> Vec<MetadataRecord> {
    let mut next = image.clone();
    for r in &records {
        next.apply(next.offset + 1, r);
    }
    let changes = plan_leadership(&next, &broker_views(&next), |topic| {
        topic_config::unclean_leader_election(&dynamic_broker_config::effective_overrides(
            &next,
            &topic.configs,
        ))
    });
    for c in &changes {
        if let MetadataRecord::PartitionChange {
            topic_id,
            partition,
            leader,
            isr,
            unclean,
        } = c
        {
            let name = next
                .topic_names_by_id
                .get(topic_id)
                .cloned()
                .unwrap_or_default();
            if *unclean {
                tracing::warn!(
                    partition = %format!("{name}-{partition}"),
                    leader = ?leader,
                    "unclean leader election: no in-sync replica is live, so an out-of-sync \
                     replica leads; records it lacks that the old ISR acknowledged are lost"
                );
            } else {
                tracing::info!(
                    partition = %format!("{name}-{partition}"),
                    leader = ?leader,
                    isr = ?isr,
                    "partition leadership or ISR changed with the brokers' states"
                );
            }
        }
    }
    records.extend(changes);
    records
}

fn topic_by_id<'a>(image: &'a MetadataImage, id: &Uuid) -> Option<&'a TopicImage> {
    image
        .topic_names_by_id
        .get(id)
        .and_then(|n| image.topics.get(n))
}

fn partition_by_id<'a>(
    image: &'a MetadataImage,
    id: &Uuid,
    partition: i32,
) -> Option<&'a PartitionImage> {
    topic_by_id(image, id).and_then(|t| t.partitions.get(&partition))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Uuid = [1; 16];

    fn image(leader: i32, isr: &[i32]) -> MetadataImage {
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
                replicas: vec![1, 2, 3],
                isr: isr.to_vec(),
                leader,
                leader_epoch: 4,
                partition_epoch: 7,
            },
        );
        img
    }

    fn brokers(usable: &[i32]) -> Vec<BrokerView> {
        (1..=3)
            .map(|id| BrokerView {
                id,
                epoch: 100 + id as i64,
                usable: usable.contains(&id),
            })
            .collect()
    }

    fn proposal(isr: &[(i32, i64)]) -> IsrProposal {
        IsrProposal {
            topic_id: T,
            partition: 0,
            leader_epoch: 4,
            partition_epoch: 7,
            new_isr: isr.to_vec(),
        }
    }

    fn apply(img: &mut MetadataImage, records: &[MetadataRecord]) {
        for r in records {
            img.apply(2, r);
        }
    }

    #[test]
    fn shrink_is_committed_with_a_new_partition_epoch() {
        let img = image(1, &[1, 2, 3]);
        let (records, d) = plan_alter_partition(
            &img,
            &brokers(&[1, 2, 3]),
            1,
            101,
            &[proposal(&[(1, 101), (2, 102)])],
        )
        .unwrap();
        assert_eq!(d[0].error_code, 0);
        let p = d[0].partition.as_ref().unwrap();
        assert_eq!(p.isr, vec![1, 2]);
        assert_eq!(p.partition_epoch, 8);
        let mut img = img;
        apply(&mut img, &records);
        let applied = img.partition("t", 0).unwrap();
        assert_eq!(applied.isr, vec![1, 2]);
        assert_eq!(applied.partition_epoch, 8);
        assert_eq!(
            applied.leader_epoch, 4,
            "an ISR change keeps the leader epoch"
        );
    }

    #[test]
    fn stale_epochs_and_senders_are_refused() {
        let img = image(1, &[1, 2]);
        let b = brokers(&[1, 2, 3]);
        assert_eq!(
            plan_alter_partition(&img, &b, 1, 99, &[proposal(&[(1, 101)])]).unwrap_err(),
            error_code::STALE_BROKER_EPOCH
        );
        let mut p = proposal(&[(1, 101)]);
        p.partition_epoch = 6;
        let (r, d) = plan_alter_partition(&img, &b, 1, 101, &[p]).unwrap();
        assert!(r.is_empty());
        assert_eq!(d[0].error_code, error_code::INVALID_UPDATE_VERSION);
        let mut p = proposal(&[(1, 101)]);
        p.leader_epoch = 3;
        let (_, d) = plan_alter_partition(&img, &b, 1, 101, &[p]).unwrap();
        assert_eq!(d[0].error_code, error_code::FENCED_LEADER_EPOCH);
        let (_, d) = plan_alter_partition(&img, &b, 2, 102, &[proposal(&[(2, 102)])]).unwrap();
        assert_eq!(
            d[0].error_code,
            error_code::INVALID_REQUEST,
            "not the leader"
        );
    }

    #[test]
    fn expansion_needs_a_live_member_with_its_current_broker_epoch() {
        let img = image(1, &[1, 2]);
        // Broker 3 restarted: its epoch is now 103, the leader saw 90.
        let (_, d) = plan_alter_partition(
            &img,
            &brokers(&[1, 2, 3]),
            1,
            101,
            &[proposal(&[(1, 101), (2, 102), (3, 90)])],
        )
        .unwrap();
        assert_eq!(d[0].error_code, error_code::INELIGIBLE_REPLICA);
        let (_, d) = plan_alter_partition(
            &img,
            &brokers(&[1, 2]),
            1,
            101,
            &[proposal(&[(1, 101), (2, 102), (3, 103)])],
        )
        .unwrap();
        assert_eq!(
            d[0].error_code,
            error_code::INELIGIBLE_REPLICA,
            "3 is fenced"
        );
        let (r, d) = plan_alter_partition(
            &img,
            &brokers(&[1, 2, 3]),
            1,
            101,
            &[proposal(&[(1, 101), (2, 102), (3, 103)])],
        )
        .unwrap();
        assert_eq!(d[0].error_code, 0);
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn a_fenced_leader_hands_over_to_the_first_live_isr_member() {
        let mut img = image(1, &[1, 2, 3]);
        let records = plan_leadership(&img, &brokers(&[2, 3]), |_| false);
        apply(&mut img, &records);
        let p = img.partition("t", 0).unwrap();
        assert_eq!(p.leader, 2);
        assert_eq!(p.isr, vec![2, 3]);
        assert_eq!(p.leader_epoch, 5);
        assert_eq!(p.partition_epoch, 8);
        assert!(plan_leadership(&img, &brokers(&[2, 3]), |_| false).is_empty());
    }

    #[test]
    fn a_fenced_follower_leaves_the_isr() {
        let mut img = image(1, &[1, 2, 3]);
        let records = plan_leadership(&img, &brokers(&[1, 2]), |_| false);
        apply(&mut img, &records);
        let p = img.partition("t", 0).unwrap();
        assert_eq!((p.leader, p.leader_epoch), (1, 4));
        assert_eq!(p.isr, vec![1, 2]);
    }

    #[test]
    fn no_live_isr_member_leaves_the_partition_offline_until_it_returns() {
        let mut img = image(1, &[1]);
        let records = plan_leadership(&img, &brokers(&[2, 3]), |_| false);
        apply(&mut img, &records);
        let p = img.partition("t", 0).unwrap();
        assert_eq!(p.leader, NO_LEADER);
        assert_eq!(p.isr, vec![1], "the last member stays");
        // Broker 1 returns: it leads again, cleanly.
        let records = plan_leadership(&img, &brokers(&[1, 2, 3]), |_| false);
        apply(&mut img, &records);
        let p = img.partition("t", 0).unwrap();
        assert_eq!(p.leader, 1);
        assert!(!p.last_election_unclean);
    }

    #[test]
    fn unclean_election_picks_a_live_replica_and_says_so() {
        let mut img = image(1, &[1]);
        let records = plan_leadership(&img, &brokers(&[3]), |_| true);
        apply(&mut img, &records);
        let p = img.partition("t", 0).unwrap();
        assert_eq!(p.leader, 3);
        assert_eq!(p.isr, vec![3]);
        assert!(p.last_election_unclean);
    }
}
