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

/// How many offline partitions the summary line of a broker's state change
/// names; the rest are counted (`pinlog topic describe` shows every
/// partition's leader).
const OFFLINE_PARTITIONS_LOGGED: usize = 20;

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
        // The ELR follows the ISR (KIP-966), and a reassignment whose
        // target replicas are now all in sync completes; the leader stays
        // unless that removed it.
        let Some(topic) = topic_by_id(image, &p.topic_id) else {
            unreachable!("the partition was found by its topic id");
        };
        let rules = topic_rules(image, topic, current.replicas.len(), None);
        let usable = |id: i32| brokers.iter().any(|b| b.id == id && b.usable);
        let mut plan =
            plan_partition_change(current, ids.clone(), None, &usable, rules).unwrap_or_default();
        plan.isr = plan.isr.or(Some(ids));
        let record = plan.into_record(p.topic_id, p.partition);
        let mut next = current.clone();
        next.apply_change(&record);
        records.push(record);
        decisions.push(IsrDecision {
            error_code: error_code::NONE,
            partition: Some(next),
        });
    }
    Ok((records, decisions))
}

/// How a partition's new leader was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionKind {
    /// From the ISR, or from the ELR while the ISR is empty: the leader
    /// holds every record below the HW.
    Clean,
    /// The ISR and ELR are empty and the last leader came back: it is the
    /// best replica left, but an unclean shutdown may have cost it records
    /// it had not flushed (KIP-966's last known leader).
    LastKnownLeader,
    /// Any live replica, because the topic allows unclean elections.
    Unclean,
}

/// A partition's leadership and ISR after a change, as Kafka's
/// `PartitionChangeBuilder` with KIP-966's eligible leader replicas (ELR)
/// decides it. `None` fields are unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionChangePlan {
    pub leader: Option<i32>,
    pub isr: Option<Vec<i32>>,
    pub elr: Option<Vec<i32>>,
    pub last_known_elr: Option<Vec<i32>>,
    pub replicas: Option<Vec<i32>>,
    pub adding_replicas: Option<Vec<i32>>,
    pub removing_replicas: Option<Vec<i32>>,
    /// Set when a leader was elected.
    pub election: Option<ElectionKind>,
}

impl PartitionChangePlan {
    pub fn into_record(self, topic_id: Uuid, partition: i32) -> MetadataRecord {
        MetadataRecord::PartitionChange {
            topic_id,
            partition,
            leader: self.leader,
            isr: self.isr,
            unclean: self.election.is_some_and(|e| e != ElectionKind::Clean),
            elr: self.elr,
            last_known_elr: self.last_known_elr,
            replicas: self.replicas,
            adding_replicas: self.adding_replicas,
            removing_replicas: self.removing_replicas,
        }
    }
}

/// A partition's replica assignment as a reassignment sets it (Kafka's
/// `PartitionReassignmentReplicas`): the replicas in order (the target's,
/// then those being removed), and the replicas being added and removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetReplicas {
    pub replicas: Vec<i32>,
    pub adding: Vec<i32>,
    pub removing: Vec<i32>,
}

impl TargetReplicas {
    /// The partition's assignment as it stands.
    pub fn of(p: &PartitionImage) -> TargetReplicas {
        TargetReplicas {
            replicas: p.replicas.clone(),
            adding: p.adding_replicas.clone(),
            removing: p.removing_replicas.clone(),
        }
    }

    /// Kafka's `maybeCompleteReassignment`: once every target replica is in
    /// `isr`, the removed replicas leave the replicas and the ISR. Returns
    /// the completed assignment and ISR, or `None` while it is not done.
    fn complete(&self, isr: &[i32]) -> Option<(TargetReplicas, Vec<i32>)> {
        if self.adding.is_empty() && self.removing.is_empty() {
            return None;
        }
        let keep = |r: &i32| !self.removing.contains(r);
        let new_isr: Vec<i32> = isr.iter().copied().filter(keep).collect();
        let new_replicas: Vec<i32> = self.replicas.iter().copied().filter(keep).collect();
        if new_isr.is_empty()
            || new_replicas.is_empty()
            || !new_replicas.iter().all(|r| new_isr.contains(r))
        {
            return None;
        }
        Some((
            TargetReplicas {
                replicas: new_replicas,
                adding: Vec::new(),
                removing: Vec::new(),
            },
            new_isr,
        ))
    }
}

/// What a partition change may do, besides setting the ISR.
#[derive(Debug, Clone, Copy)]
pub struct ChangeRules {
    /// The topic's `min.insync.replicas`, capped at its replication factor
    /// (see [`effective_min_isr`]).
    pub min_isr: usize,
    /// The topic's `unclean.leader.election.enable`.
    pub unclean_allowed: bool,
    /// A broker that registered again after an unclean shutdown: it may
    /// have lost records it had not flushed, so it leaves the ISR and the
    /// ELR (KIP-966).
    pub unclean_shutdown: Option<i32>,
}

/// The `min.insync.replicas` that the ELR and the leader's HW rule use:
/// the topic's setting, capped at its replication factor. Above it, no ISR
/// could ever be large enough and consumers would never see a record; an
/// acks=all write is still refused, as the uncapped setting says.
pub fn effective_min_isr(min_insync_replicas: usize, replicas: usize) -> usize {
    min_insync_replicas.min(replicas).max(1)
}

/// One partition's change when its ISR becomes `target_isr`, and its
/// assignment `target_replicas` if given (a reassignment; `None` keeps it).
/// Kafka's `PartitionChangeBuilder.build`, with the ELR on:
/// - A reassignment whose target replicas are all in the ISR completes:
///   the removed replicas leave the replicas and the ISR.
/// - While the ISR is below `min_isr`, members that leave it join the ELR
///   (they hold every record below the HW, which the leader does not
///   advance meanwhile); at or above it, the ELR is empty. A broker back
///   from an unclean shutdown never stays in the ELR.
/// - The leader stays if it is usable and in the ISR. Otherwise the first
///   usable ISR member in replica order leads; with an empty ISR, the first
///   usable ELR member (it becomes the ISR); with both empty, the last
///   known leader once it is usable; and last, if allowed, any usable
///   replica (unclean). With none, the partition has no leader.
/// - The last known leader is recorded when the ISR becomes empty, and
///   cleared once the partition has a leader again.
///
/// Returns `None` when nothing changes.
pub fn plan_partition_change(
    p: &PartitionImage,
    target_isr: Vec<i32>,
    target_replicas: Option<TargetReplicas>,
    usable: &impl Fn(i32) -> bool,
    rules: ChangeRules,
) -> Option<PartitionChangePlan> {
    let mut isr = target_isr;
    let mut assignment = target_replicas.unwrap_or_else(|| TargetReplicas::of(p));
    if let Some((completed, completed_isr)) = assignment.complete(&isr) {
        assignment = completed;
        isr = completed_isr;
    }
    let replicas = assignment.replicas.clone();
    let unclean_shutdown = |r: i32| rules.unclean_shutdown == Some(r);
    let (mut elr, mut last_known_elr) = if isr.len() >= rules.min_isr {
        (Vec::new(), Vec::new())
    } else {
        let elr: Vec<i32> = replicas
            .iter()
            .copied()
            .filter(|r| (p.elr.contains(r) || p.isr.contains(r)) && !isr.contains(r))
            .filter(|&r| !unclean_shutdown(r))
            .collect();
        (elr, p.last_known_elr.clone())
    };
    let mut leader = p.leader;
    let mut election = None;
    let leader_ok = p.leader != NO_LEADER && usable(p.leader) && isr.contains(&p.leader);
    if !leader_ok {
        let in_order = |pred: &dyn Fn(i32) -> bool| replicas.iter().copied().find(|&r| pred(r));
        leader = NO_LEADER;
        if let Some(r) = in_order(&|r| isr.contains(&r) && usable(r)) {
            leader = r;
            election = Some(ElectionKind::Clean);
        } else if let Some(r) = in_order(&|r| isr.is_empty() && elr.contains(&r) && usable(r)) {
            leader = r;
            isr = vec![r];
            elr.retain(|&e| e != r);
            election = Some(ElectionKind::Clean);
        } else if let Some(&r) = p
            .last_known_elr
            .first()
            .filter(|_| isr.is_empty() && elr.is_empty() && p.last_known_elr.len() == 1)
            .filter(|&&r| usable(r) && replicas.contains(&r))
        {
            leader = r;
            isr = vec![r];
            election = Some(ElectionKind::LastKnownLeader);
        } else if rules.unclean_allowed {
            if let Some(r) = in_order(&|r| usable(r)) {
                leader = r;
                isr = vec![r];
                elr.clear();
                last_known_elr.clear();
                election = Some(ElectionKind::Unclean);
            }
        }
        if leader == p.leader {
            election = None;
        }
    }
    if isr.is_empty() {
        // KIP-966's last known leader: kept from the first time the
        // partition became leaderless with nobody in sync.
        let last = if p.leader != NO_LEADER {
            Some(p.leader)
        } else {
            p.replicas.iter().copied().find(|r| p.isr.contains(r))
        };
        if p.last_known_elr.is_empty() || !p.isr.is_empty() {
            if let Some(last) = last {
                last_known_elr = vec![last];
            }
        }
    } else if leader != NO_LEADER {
        last_known_elr.clear();
    }
    let plan = PartitionChangePlan {
        leader: (leader != p.leader).then_some(leader),
        isr: (isr != p.isr).then_some(isr),
        elr: (elr != p.elr).then_some(elr),
        last_known_elr: (last_known_elr != p.last_known_elr).then_some(last_known_elr),
        replicas: (assignment.replicas != p.replicas).then_some(assignment.replicas),
        adding_replicas: (assignment.adding != p.adding_replicas).then_some(assignment.adding),
        removing_replicas: (assignment.removing != p.removing_replicas)
            .then_some(assignment.removing),
        election,
    };
    // An election is set only with a new leader, so an unchanged plan is
    // the default one.
    (plan != PartitionChangePlan::default()).then_some(plan)
}

/// The rules of one topic's changes, from its effective settings.
pub fn topic_rules(
    image: &MetadataImage,
    topic: &TopicImage,
    replicas: usize,
    unclean_shutdown: Option<i32>,
) -> ChangeRules {
    let overrides = dynamic_broker_config::effective_overrides(image, &topic.configs);
    ChangeRules {
        min_isr: effective_min_isr(topic_config::min_insync_replicas(&overrides), replicas),
        unclean_allowed: topic_config::unclean_leader_election(&overrides),
        unclean_shutdown,
    }
}

/// Brokers that can no longer serve (fenced, shutting down) leave every ISR,
/// and their leaderships move by [`plan_partition_change`]'s rules: to the
/// first usable ISR member in replica order, else to a usable ELR member,
/// else the partition goes offline (leader -1) until one returns, unless
/// the topic allows an unclean election. `unclean_shutdown` is a broker
/// that registered again after an unclean shutdown (KIP-966).
pub fn plan_leadership(
    image: &MetadataImage,
    brokers: &[BrokerView],
    unclean_shutdown: Option<i32>,
) -> Vec<(Uuid, i32, PartitionChangePlan)> {
    let usable = |id: i32| brokers.iter().any(|b| b.id == id && b.usable);
    let mut changes = Vec::new();
    for topic in image.topics.values() {
        for (&index, p) in &topic.partitions {
            let rules = topic_rules(image, topic, p.replicas.len(), unclean_shutdown);
            let isr: Vec<i32> = p
                .isr
                .iter()
                .copied()
                .filter(|&r| usable(r) && unclean_shutdown != Some(r))
                .collect();
            if let Some(plan) = plan_partition_change(p, isr, None, &usable, rules) {
                changes.push((topic.id, index, plan));
            }
        }
    }
    changes
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
    records: Vec<MetadataRecord>,
) -> Vec<MetadataRecord> {
    leadership_changes_after(image, records, None)
}

/// [`with_leadership_changes`] for the registration of a broker back from
/// an unclean shutdown (KIP-966): it also leaves every ISR and ELR, so it
/// leads again only if no replica with every committed record is left.
pub fn with_unclean_shutdown(
    image: &MetadataImage,
    records: Vec<MetadataRecord>,
    broker: i32,
) -> Vec<MetadataRecord> {
    leadership_changes_after(image, records, Some(broker))
}

fn leadership_changes_after(
    image: &MetadataImage,
    mut records: Vec<MetadataRecord>,
    unclean_shutdown: Option<i32>,
) -> Vec<MetadataRecord> {
    let mut next = image.clone();
    for r in &records {
        next.apply(next.offset + 1, r);
    }
    // A broker's restart or fencing changes every partition it holds, so
    // the per-partition lines are DEBUG (as Kafka's controller logs them)
    // and one INFO line sums them up, naming the partitions left offline.
    let mut changed = 0usize;
    let mut offline: Vec<String> = Vec::new();
    for (topic_id, partition, plan) in
        plan_leadership(&next, &broker_views(&next), unclean_shutdown)
    {
        let name = next
            .topic_names_by_id
            .get(&topic_id)
            .cloned()
            .unwrap_or_default();
        let tp = format!("{name}-{partition}");
        changed += 1;
        if plan.leader == Some(NO_LEADER) {
            offline.push(tp.clone());
        }
        match plan.election {
            Some(ElectionKind::Unclean) => tracing::warn!(
                partition = %tp,
                leader = ?plan.leader,
                "unclean leader election: no in-sync or eligible replica is live, so an \
                 out-of-sync replica leads; records it lacks that the old ISR acknowledged are lost"
            ),
            Some(ElectionKind::LastKnownLeader) => tracing::warn!(
                partition = %tp,
                leader = ?plan.leader,
                "electing the partition's last leader again: no in-sync or eligible replica is \
                 left, and it restarted after an unclean shutdown, so records it had not flushed \
                 to disk may be lost"
            ),
            _ => tracing::debug!(
                partition = %tp,
                leader = ?plan.leader,
                isr = ?plan.isr,
                elr = ?plan.elr,
                "partition leadership or ISR changed with the brokers' states"
            ),
        }
        records.push(plan.into_record(topic_id, partition));
    }
    if changed > 0 && offline.is_empty() {
        tracing::info!(
            changed,
            "partitions changed leadership or ISR with the brokers' states"
        );
    } else if changed > 0 {
        let shown = offline.len().min(OFFLINE_PARTITIONS_LOGGED);
        tracing::info!(
            changed,
            offline = offline.len(),
            first_offline = %offline[..shown].join(","),
            "partitions changed leadership or ISR with the brokers' states; the offline ones \
             have no live replica to lead until one comes back"
        );
    }
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
                elr: Vec::new(),
                last_known_elr: Vec::new(),
                adding_replicas: Vec::new(),
                removing_replicas: Vec::new(),
                last_unclean_election_epoch: None,
            },
        );
        img
    }

    fn with_config(mut img: MetadataImage, name: &str, value: &str) -> MetadataImage {
        img.apply(
            2,
            &MetadataRecord::Config {
                resource_type: crate::metadata::records::RESOURCE_TOPIC,
                resource_name: "t".into(),
                name: name.into(),
                value: Some(value.into()),
            },
        );
        img
    }

    /// The failover records for `usable` brokers, after `unclean_shutdown`
    /// registered again if set.
    fn leadership(
        img: &MetadataImage,
        usable: &[i32],
        unclean_shutdown: Option<i32>,
    ) -> Vec<MetadataRecord> {
        plan_leadership(img, &brokers(usable), unclean_shutdown)
            .into_iter()
            .map(|(t, p, plan)| plan.into_record(t, p))
            .collect()
    }

    /// Applies the failover for `usable`, and checks that it is settled:
    /// planned again, nothing changes.
    fn fail_over(img: &mut MetadataImage, usable: &[i32], unclean_shutdown: Option<i32>) {
        let records = leadership(img, usable, unclean_shutdown);
        apply(img, &records);
        assert_eq!(leadership(img, usable, None), vec![], "settled");
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
        img.check_invariants()
            .expect("the plans keep the image's invariants");
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
        fail_over(&mut img, &[2, 3], None);
        let p = img.partition("t", 0).unwrap();
        assert_eq!(p.leader, 2);
        assert_eq!(p.isr, vec![2, 3]);
        assert_eq!(p.leader_epoch, 5);
        assert_eq!(p.partition_epoch, 8);
        assert!(p.elr.is_empty(), "min.insync.replicas 1: no ELR");
    }

    #[test]
    fn a_fenced_follower_leaves_the_isr() {
        let mut img = image(1, &[1, 2, 3]);
        fail_over(&mut img, &[1, 2], None);
        let p = img.partition("t", 0).unwrap();
        assert_eq!((p.leader, p.leader_epoch), (1, 4));
        assert_eq!(p.isr, vec![1, 2]);
    }

    #[test]
    fn no_live_isr_member_leaves_the_partition_offline_until_it_returns() {
        let mut img = image(1, &[1]);
        fail_over(&mut img, &[2, 3], None);
        let p = img.partition("t", 0).unwrap();
        assert_eq!(p.leader, NO_LEADER);
        assert_eq!(p.isr, Vec::<i32>::new());
        assert_eq!(p.elr, vec![1], "the last member is eligible");
        assert_eq!(p.last_known_elr, vec![1]);
        // Broker 1 returns from a clean shutdown: it leads again, cleanly.
        fail_over(&mut img, &[1, 2, 3], None);
        let p = img.partition("t", 0).unwrap();
        assert_eq!((p.leader, p.isr.clone()), (1, vec![1]));
        assert!(p.elr.is_empty() && p.last_known_elr.is_empty());
        assert!(!p.last_election_unclean());
    }

    #[test]
    fn unclean_election_picks_a_live_replica_and_says_so() {
        let mut img = with_config(image(1, &[1]), "unclean.leader.election.enable", "true");
        fail_over(&mut img, &[3], None);
        let p = img.partition("t", 0).unwrap();
        assert_eq!(p.leader, 3);
        assert_eq!(p.isr, vec![3]);
        assert!(p.elr.is_empty() && p.last_known_elr.is_empty());
        assert!(p.last_election_unclean());
    }

    /// A former leader that returns after an unclean election truncates
    /// below the HW it served, and may do so only while the image says the
    /// last election was unclean: an ISR change of the new leader's, which
    /// elects nobody, must not clear that.
    #[test]
    fn an_isr_change_keeps_the_unclean_flag_and_the_next_election_sets_it() {
        let mut img = with_config(image(1, &[1]), "unclean.leader.election.enable", "true");
        fail_over(&mut img, &[3], None);
        assert!(img.partition("t", 0).unwrap().last_election_unclean());
        // The new leader adds broker 2 to its ISR (AlterPartition).
        apply(
            &mut img,
            &[MetadataRecord::PartitionChange {
                topic_id: T,
                partition: 0,
                leader: None,
                isr: Some(vec![3, 2]),
                unclean: false,
                elr: None,
                last_known_elr: None,
                replicas: None,
                adding_replicas: None,
                removing_replicas: None,
            }],
        );
        let p = img.partition("t", 0).unwrap();
        assert_eq!(p.isr, vec![3, 2]);
        assert!(p.last_election_unclean(), "an ISR change elects nobody");
        let unclean_epoch = img.partition("t", 0).unwrap().leader_epoch;
        assert_eq!(img.last_unclean_election_epoch("t", 0), Some(unclean_epoch));
        // 3 fails: 2, in sync, leads cleanly.
        fail_over(&mut img, &[2], None);
        let p = img.partition("t", 0).unwrap();
        assert_eq!(p.leader, 2);
        assert!(!p.last_election_unclean());
        // The epoch of the unclean election is kept: broker 1, the leader
        // before it (its log's last epoch is 4), returns and truncates below
        // the HW it served, which that election explains.
        assert_eq!(img.last_unclean_election_epoch("t", 0), Some(unclean_epoch));
        assert!(crate::metadata::image::unclean_election_explains(
            img.last_unclean_election_epoch("t", 0),
            Some(4)
        ));
        // A replica that led after it is not explained by it.
        assert!(!crate::metadata::image::unclean_election_explains(
            img.last_unclean_election_epoch("t", 0),
            Some(unclean_epoch)
        ));
        // A node that loads a snapshot of the image knows it too, and the
        // snapshot's records survive their encoding.
        let snapshot: Vec<MetadataRecord> = img
            .to_records()
            .iter()
            .map(|r| MetadataRecord::decode(r.encode()).expect("a snapshot record decodes"))
            .collect();
        let mut loaded = MetadataImage::empty();
        apply(&mut loaded, &snapshot);
        assert_eq!(
            loaded.last_unclean_election_epoch("t", 0),
            Some(unclean_epoch)
        );
        assert_eq!(loaded.partition("t", 0), img.partition("t", 0));
        // Deleting the topic forgets it.
        apply(&mut img, &[MetadataRecord::RemoveTopic { topic_id: T }]);
        assert_eq!(img.last_unclean_election_epoch("t", 0), None);
    }

    /// Bug 9 (tests/README.md): broker 3 of the ISR [1, 3] loses power
    /// unnoticed, the controller fences broker 1 and elects 3, and 3 comes
    /// back with a shorter log. It must not lead: 1, which left the ISR
    /// while it was below min.insync.replicas, holds every committed record.
    #[test]
    fn a_replica_back_from_an_unclean_shutdown_gives_way_to_an_eligible_one() {
        let mut img = with_config(image(1, &[1, 3]), "min.insync.replicas", "2");
        fail_over(&mut img, &[2, 3], None);
        let p = img.partition("t", 0).unwrap();
        assert_eq!(
            (p.leader, p.isr.clone(), p.elr.clone()),
            (3, vec![3], vec![1])
        );
        // 3 registers again, fenced, with no clean-shutdown epoch.
        fail_over(&mut img, &[2], Some(3));
        let p = img.partition("t", 0).unwrap();
        assert_eq!(p.leader, NO_LEADER, "3 may have lost acknowledged records");
        assert_eq!((p.isr.clone(), p.elr.clone()), (vec![], vec![1]));
        assert_eq!(p.last_known_elr, vec![3]);
        // 3 is unfenced: still not eligible.
        fail_over(&mut img, &[2, 3], None);
        assert_eq!(img.partition("t", 0).unwrap().leader, NO_LEADER);
        // 1 returns: it leads cleanly from the ELR.
        fail_over(&mut img, &[1, 2, 3], None);
        let p = img.partition("t", 0).unwrap();
        assert_eq!((p.leader, p.isr.clone()), (1, vec![1]));
        assert!(p.elr.is_empty() && p.last_known_elr.is_empty());
        assert!(!p.last_election_unclean());
    }

    /// KIP-966's last known leader: the only replica that was in sync
    /// restarted uncleanly and nobody else is eligible. It is the best
    /// replica left, so it leads again, flagged as a possible loss.
    #[test]
    fn the_last_known_leader_leads_again_when_nobody_else_is_eligible() {
        let mut img = image(1, &[1]);
        fail_over(&mut img, &[2, 3], None);
        fail_over(&mut img, &[2, 3], Some(1));
        let p = img.partition("t", 0).unwrap();
        assert_eq!((p.leader, p.elr.clone()), (NO_LEADER, vec![]));
        assert_eq!(p.last_known_elr, vec![1]);
        fail_over(&mut img, &[1, 2, 3], None);
        let p = img.partition("t", 0).unwrap();
        assert_eq!((p.leader, p.isr.clone()), (1, vec![1]));
        assert!(p.last_election_unclean());
        assert!(p.last_known_elr.is_empty());
    }

    #[test]
    fn a_registration_after_a_clean_shutdown_changes_nothing() {
        let mut img = image(1, &[1, 2, 3]);
        fail_over(&mut img, &[1, 2, 3], None);
        assert_eq!(leadership(&img, &[1, 2, 3], None), vec![]);
        // An unclean one takes the broker out of the ISR.
        fail_over(&mut img, &[1, 2], Some(3));
        assert_eq!(img.partition("t", 0).unwrap().isr, vec![1, 2]);
    }

    #[test]
    fn the_elr_follows_isr_changes_around_min_insync_replicas() {
        let img = with_config(image(1, &[1, 2, 3]), "min.insync.replicas", "2");
        let b = brokers(&[1, 2, 3]);
        // To [1, 2]: at min.insync.replicas, no ELR.
        let (records, _) =
            plan_alter_partition(&img, &b, 1, 101, &[proposal(&[(1, 101), (2, 102)])]).unwrap();
        let mut img = img;
        apply(&mut img, &records);
        assert!(img.partition("t", 0).unwrap().elr.is_empty());
        // To [1]: below it, 2 is eligible.
        let mut p = proposal(&[(1, 101)]);
        p.partition_epoch = 8;
        let (records, d) = plan_alter_partition(&img, &b, 1, 101, &[p]).unwrap();
        assert_eq!(d[0].partition.as_ref().unwrap().elr, vec![2]);
        apply(&mut img, &records);
        assert_eq!(img.partition("t", 0).unwrap().elr, vec![2]);
        // Back to [1, 3]: the ELR empties.
        let mut p = proposal(&[(1, 101), (3, 103)]);
        p.partition_epoch = 9;
        let (records, _) = plan_alter_partition(&img, &b, 1, 101, &[p]).unwrap();
        apply(&mut img, &records);
        let p = img.partition("t", 0).unwrap();
        assert_eq!((p.isr.clone(), p.elr.clone()), (vec![1, 3], vec![]));
    }

    #[test]
    fn min_isr_is_capped_at_the_replication_factor() {
        assert_eq!(effective_min_isr(2, 1), 1);
        assert_eq!(effective_min_isr(2, 3), 2);
        assert_eq!(effective_min_isr(1, 3), 1);
    }
}
