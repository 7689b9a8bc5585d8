//! The metadata image: an immutable view of every topic, partition,
//! config and ACL, built by applying metadata records in log order. Each shard holds
//! an `Arc` of the current image and swaps it when a new one arrives.

use std::collections::{BTreeMap, HashMap};

use crate::acl::AclImage;
use crate::metadata::records::{
    BrokerEndpoint, MetadataRecord, Uuid, RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionImage {
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub leader: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    /// KIP-966's eligible leader replicas: replicas that left the ISR while
    /// it was below `min.insync.replicas`. They hold every record below the
    /// HW (a leader does not advance it while the ISR is that small), so
    /// one of them may lead cleanly when the ISR is empty.
    pub elr: Vec<i32>,
    /// The last leader, recorded when the ISR and ELR both became empty:
    /// elected again when it returns and no better replica is left.
    pub last_known_elr: Vec<i32>,
    /// A reassignment in progress (both empty when none): replicas being
    /// added, which are in `replicas` and catch up as followers, and
    /// replicas being removed, which leave once every target replica is in
    /// the ISR. The target is `replicas` without `removing_replicas`.
    pub adding_replicas: Vec<i32>,
    pub removing_replicas: Vec<i32>,
    /// The leader epoch that the partition's last unclean election (an
    /// out-of-sync leader, or KIP-966's last known leader after an unclean
    /// shutdown) started. A clean election after it keeps it: a former
    /// leader that returns after both must still be told that its lost
    /// records are explained ([`unclean_election_explains`]). Snapshots
    /// keep it, so a node that loads one knows it too.
    pub last_unclean_election_epoch: Option<i32>,
}

impl PartitionImage {
    /// What every partition of a committed image satisfies, as Kafka's
    /// `PartitionChangeBuilder` keeps it: a leader (when there is one) is a
    /// replica and in the ISR; the ISR and the ELR are replicas; nobody is
    /// in both the ISR and the ELR. The controller's plans make it so
    /// (`controller::partitions::plan_partition_change`); the simulation
    /// checks it at every step and [`MetadataImage::apply`] logs a record
    /// that breaks it.
    pub fn check_invariants(&self) -> Result<(), String> {
        const NO_LEADER: i32 = -1;
        if self.leader != NO_LEADER
            && !(self.replicas.contains(&self.leader) && self.isr.contains(&self.leader))
        {
            return Err(format!(
                "leader {} is not a replica in the ISR (replicas {:?}, ISR {:?})",
                self.leader, self.replicas, self.isr
            ));
        }
        if let Some(r) = self.isr.iter().find(|r| !self.replicas.contains(r)) {
            return Err(format!(
                "ISR member {r} is not a replica {:?}",
                self.replicas
            ));
        }
        if let Some(r) = self.elr.iter().find(|r| !self.replicas.contains(r)) {
            return Err(format!(
                "ELR member {r} is not a replica {:?}",
                self.replicas
            ));
        }
        if let Some(r) = self.elr.iter().find(|r| self.isr.contains(r)) {
            return Err(format!("replica {r} is in both the ISR and the ELR"));
        }
        Ok(())
    }

    /// Whether a reassignment is in progress.
    pub fn is_reassigning(&self) -> bool {
        !self.adding_replicas.is_empty() || !self.removing_replicas.is_empty()
    }

    /// Applies a `PartitionChange` record (other records are ignored): it
    /// bumps the partition epoch, and the leader epoch when the leader
    /// changes or a replica is removed (Kafka's
    /// `triggerLeaderEpochBumpForReplicaReassignmentIfNeeded`: fetches from
    /// the removed replica are then fenced by epoch).
    pub fn apply_change(&mut self, record: &MetadataRecord) {
        let MetadataRecord::PartitionChange {
            leader,
            isr,
            unclean,
            elr,
            last_known_elr,
            replicas,
            adding_replicas,
            removing_replicas,
            ..
        } = record
        else {
            return;
        };
        let mut bump_leader_epoch = false;
        if let Some(replicas) = replicas {
            bump_leader_epoch = self.replicas.iter().any(|r| !replicas.contains(r));
            self.replicas = replicas.clone();
        }
        if let Some(adding) = adding_replicas {
            self.adding_replicas = adding.clone();
        }
        if let Some(removing) = removing_replicas {
            self.removing_replicas = removing.clone();
        }
        if let Some(isr) = isr {
            self.isr = isr.clone();
        }
        if let Some(elr) = elr {
            self.elr = elr.clone();
        }
        if let Some(last_known_elr) = last_known_elr {
            self.last_known_elr = last_known_elr.clone();
        }
        if let Some(leader) = leader {
            if *leader != self.leader {
                self.leader = *leader;
                bump_leader_epoch = true;
            }
        }
        if bump_leader_epoch {
            self.leader_epoch += 1;
        }
        self.partition_epoch += 1;
        // Only an election says how the leader was chosen; a change of the
        // ISR alone elects nobody (Kafka's LeaderRecoveryState is likewise
        // "no change" in such records).
        if leader.is_some() && *unclean {
            self.last_unclean_election_epoch = Some(self.leader_epoch);
        }
    }

    /// Whether the current leader came of an unclean election: its
    /// followers may truncate below an HW they served. Changes that elect
    /// nobody keep it; the next election ends it.
    pub fn last_election_unclean(&self) -> bool {
        self.last_unclean_election_epoch == Some(self.leader_epoch)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicImage {
    pub name: String,
    pub id: Uuid,
    pub partitions: BTreeMap<i32, PartitionImage>,
    /// Topic-level overrides only; defaults come from the broker config.
    pub configs: BTreeMap<String, String>,
}

/// A user's SCRAM credential for one mechanism, as the metadata log keeps
/// it: never the password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

/// A registered broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerImage {
    pub id: i32,
    pub incarnation_id: Uuid,
    /// The offset of its registration record.
    pub epoch: i64,
    /// The endpoint of its inter-broker listener.
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
    pub fenced: bool,
    pub in_controlled_shutdown: bool,
    /// Every listener; empty for a registration from before named
    /// listeners, whose one endpoint serves them all.
    pub listeners: Vec<BrokerEndpoint>,
}

impl BrokerImage {
    /// The broker's endpoint on `listener`: what a client that came in on
    /// that listener is told. `None` when the broker has no such listener.
    pub fn endpoint(&self, listener: &str) -> Option<(&str, i32)> {
        if self.listeners.is_empty() {
            return Some((&self.host, self.port));
        }
        self.listeners
            .iter()
            .find(|l| l.name == listener)
            .map(|l| (l.host.as_str(), l.port))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataImage {
    /// Offset of the last record applied; -1 for the empty image.
    pub offset: i64,
    pub topics: BTreeMap<String, TopicImage>,
    pub topic_names_by_id: HashMap<Uuid, String>,
    /// Dynamic broker settings of the whole cluster (resource name "").
    pub broker_configs: BTreeMap<String, String>,
    /// Dynamic broker settings of one broker (resource name its id), which
    /// win over the cluster's: the replication throttle rates.
    pub per_broker_configs: BTreeMap<i32, BTreeMap<String, String>>,
    /// Dynamic configs of groups, by group id (`metadata/group_config.rs`).
    pub group_configs: BTreeMap<String, BTreeMap<String, String>>,
    pub next_producer_id: i64,
    pub brokers: BTreeMap<i32, BrokerImage>,
    /// Agreed by the quorum once the first broker registered.
    pub cluster_id: Option<String>,
    /// Finalized feature levels by name (`metadata/features.rs`); a feature
    /// that is absent is at level 0, so none is stored at 0.
    pub features: BTreeMap<String, i16>,
    /// The cluster's ACLs (`acl/store.rs`), which the authorizer reads.
    pub acls: AclImage,
    /// SCRAM credentials by user and mechanism (Kafka's ScramMechanism
    /// type: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512), as KIP-554 keeps them.
    pub scram_credentials: BTreeMap<(String, i8), StoredScramCredential>,
    /// Client quotas by entity and key.
    pub client_quotas: crate::quota::QuotaConfigs,
}

/// Whether an unclean election explains a truncation below a high
/// watermark that a replica served: one started at an epoch after every
/// epoch the replica's log had before the truncation (the epoch in which
/// it served that HW is among them). Pure: the replica fetcher's log line,
/// and nothing else, depends on it.
pub fn unclean_election_explains(
    last_unclean_epoch: Option<i32>,
    local_latest_epoch: Option<i32>,
) -> bool {
    match (last_unclean_epoch, local_latest_epoch) {
        (Some(unclean), Some(local)) => unclean > local,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

impl MetadataImage {
    pub fn empty() -> Self {
        MetadataImage {
            offset: -1,
            ..Default::default()
        }
    }

    pub fn topic(&self, name: &str) -> Option<&TopicImage> {
        self.topics.get(name)
    }

    pub fn partition(&self, topic: &str, partition: i32) -> Option<&PartitionImage> {
        self.topics.get(topic)?.partitions.get(&partition)
    }

    /// The leader epoch the last unclean election of a partition started,
    /// if it had one ([`PartitionImage::last_unclean_election_epoch`]).
    pub fn last_unclean_election_epoch(&self, topic: &str, partition: i32) -> Option<i32> {
        self.partition(topic, partition)?
            .last_unclean_election_epoch
    }

    /// The finalized level of feature `name`: 0 when the cluster has none.
    pub fn feature_level(&self, name: &str) -> i16 {
        self.features.get(name).copied().unwrap_or(0)
    }

    /// Whether broker `id` is registered and unfenced: it serves clients.
    pub fn is_live_broker(&self, id: i32) -> bool {
        self.brokers.get(&id).is_some_and(|b| !b.fenced)
    }

    /// Applies one record. Records that refer to unknown topics are
    /// ignored with a warning: they can only come from a damaged log.
    pub fn apply(&mut self, offset: i64, record: &MetadataRecord) {
        self.offset = offset;
        match record {
            MetadataRecord::Topic { name, topic_id } => {
                self.topic_names_by_id.insert(*topic_id, name.clone());
                self.topics.insert(
                    name.clone(),
                    TopicImage {
                        name: name.clone(),
                        id: *topic_id,
                        partitions: BTreeMap::new(),
                        configs: BTreeMap::new(),
                    },
                );
            }
            MetadataRecord::Partition {
                topic_id,
                partition,
                replicas,
                isr,
                leader,
                leader_epoch,
                partition_epoch,
                elr,
                last_known_elr,
                adding_replicas,
                removing_replicas,
                last_unclean_election_epoch,
            } => {
                let Some(topic) = self
                    .topic_names_by_id
                    .get(topic_id)
                    .and_then(|n| self.topics.get_mut(n))
                else {
                    tracing::warn!(offset, "metadata: partition record for an unknown topic id");
                    return;
                };
                topic.partitions.insert(
                    *partition,
                    PartitionImage {
                        replicas: replicas.clone(),
                        isr: isr.clone(),
                        leader: *leader,
                        leader_epoch: *leader_epoch,
                        partition_epoch: *partition_epoch,
                        elr: elr.clone(),
                        last_known_elr: last_known_elr.clone(),
                        adding_replicas: adding_replicas.clone(),
                        removing_replicas: removing_replicas.clone(),
                        last_unclean_election_epoch: *last_unclean_election_epoch,
                    },
                );
                report_broken_invariant(
                    offset,
                    &topic.name,
                    *partition,
                    &topic.partitions[partition],
                );
            }
            MetadataRecord::Config {
                resource_type,
                resource_name,
                name,
                value,
            } => {
                let map = match *resource_type {
                    RESOURCE_TOPIC => match self.topics.get_mut(resource_name) {
                        Some(t) => &mut t.configs,
                        None => {
                            tracing::warn!(offset, topic = %resource_name, "metadata: config for an unknown topic");
                            return;
                        }
                    },
                    RESOURCE_BROKER if resource_name.is_empty() => &mut self.broker_configs,
                    RESOURCE_BROKER => match resource_name.parse::<i32>() {
                        Ok(id) => self.per_broker_configs.entry(id).or_default(),
                        Err(_) => {
                            tracing::warn!(offset, broker = %resource_name, "metadata: config for a broker that is not a number");
                            return;
                        }
                    },
                    RESOURCE_GROUP => self.group_configs.entry(resource_name.clone()).or_default(),
                    _ => return,
                };
                match value {
                    Some(v) => map.insert(name.clone(), v.clone()),
                    None => map.remove(name),
                };
                self.per_broker_configs.retain(|_, m| !m.is_empty());
                self.group_configs.retain(|_, m| !m.is_empty());
            }
            MetadataRecord::RemoveTopic { topic_id } => {
                if let Some(name) = self.topic_names_by_id.remove(topic_id) {
                    self.topics.remove(&name);
                }
            }
            MetadataRecord::ProducerIds { next_producer_id } => {
                self.next_producer_id = (*next_producer_id).max(self.next_producer_id);
            }
            MetadataRecord::RegisterBroker {
                broker_id,
                incarnation_id,
                broker_epoch,
                host,
                port,
                rack,
                fenced,
                in_controlled_shutdown,
                listeners,
            } => {
                self.brokers.insert(
                    *broker_id,
                    BrokerImage {
                        id: *broker_id,
                        incarnation_id: *incarnation_id,
                        epoch: if *broker_epoch < 0 {
                            offset
                        } else {
                            *broker_epoch
                        },
                        host: host.clone(),
                        port: *port,
                        rack: rack.clone(),
                        fenced: *fenced,
                        in_controlled_shutdown: *in_controlled_shutdown,
                        listeners: listeners.clone(),
                    },
                );
            }
            MetadataRecord::UnregisterBroker {
                broker_id,
                broker_epoch,
            } => {
                if self
                    .brokers
                    .get(broker_id)
                    .is_some_and(|b| b.epoch == *broker_epoch)
                {
                    self.brokers.remove(broker_id);
                } else {
                    tracing::warn!(
                        offset,
                        broker_id,
                        broker_epoch,
                        "metadata: unregistering a broker epoch that is not registered; ignored"
                    );
                }
            }
            MetadataRecord::BrokerRegistrationChange {
                broker_id,
                broker_epoch,
                fenced,
                in_controlled_shutdown,
            } => match self.brokers.get_mut(broker_id) {
                Some(b) if b.epoch == *broker_epoch => {
                    if let Some(f) = fenced {
                        b.fenced = *f;
                    }
                    if let Some(c) = in_controlled_shutdown {
                        b.in_controlled_shutdown = *c;
                    }
                }
                _ => {
                    tracing::warn!(
                        offset,
                        broker_id,
                        "metadata: change for a broker epoch that is not registered"
                    );
                }
            },
            MetadataRecord::ClusterId { cluster_id } => {
                self.cluster_id = Some(cluster_id.clone());
            }
            MetadataRecord::FeatureLevel { name, level } => {
                if *level > 0 {
                    self.features.insert(name.clone(), *level);
                } else {
                    if *level < 0 {
                        tracing::warn!(
                            offset,
                            feature = %name,
                            level,
                            "metadata: a negative feature level; the feature is removed"
                        );
                    }
                    self.features.remove(name);
                }
            }
            MetadataRecord::AccessControlEntry { .. } => {
                let Some((id, binding)) = record.acl_binding() else {
                    return;
                };
                if let Err(why) = binding.validate_new() {
                    // Kafka keeps such an ACL too: it matches nothing it
                    // should not, and DeleteAcls can still remove it.
                    tracing::warn!(offset, acl = %binding, "metadata: an ACL CreateAcls would refuse: {}", why.message);
                }
                if let Some(replaced) = self.acls.add(id, binding) {
                    tracing::warn!(offset, acl = %replaced, "metadata: an ACL record reused the id of this ACL, which it replaces");
                }
            }
            MetadataRecord::RemoveAccessControlEntry { id } => {
                if self.acls.remove(id).is_none() {
                    tracing::warn!(
                        offset,
                        "metadata: removal of an ACL id that is not present; ignored"
                    );
                }
            }
            MetadataRecord::UserScramCredential {
                name,
                mechanism,
                salt,
                stored_key,
                server_key,
                iterations,
            } => {
                self.scram_credentials.insert(
                    (name.clone(), *mechanism),
                    StoredScramCredential {
                        salt: salt.clone(),
                        stored_key: stored_key.clone(),
                        server_key: server_key.clone(),
                        iterations: *iterations,
                    },
                );
            }
            MetadataRecord::RemoveUserScramCredential { name, mechanism } => {
                self.scram_credentials.remove(&(name.clone(), *mechanism));
            }
            MetadataRecord::ClientQuota { entity, key, value } => {
                let parts = entity.iter().map(|(t, n)| (t.as_str(), n.as_deref()));
                let entity = match crate::quota::QuotaEntity::from_parts(parts) {
                    Ok(e) => e,
                    Err(why) => {
                        tracing::warn!(offset, "metadata: a client quota record of no entity pinlog knows ({why}); ignored");
                        return;
                    }
                };
                match value {
                    Some(v) => {
                        self.client_quotas
                            .entry(entity)
                            .or_default()
                            .insert(key.clone(), *v);
                    }
                    None => {
                        if let Some(values) = self.client_quotas.get_mut(&entity) {
                            values.remove(key);
                            if values.is_empty() {
                                self.client_quotas.remove(&entity);
                            }
                        }
                    }
                }
            }
            MetadataRecord::PartitionChange {
                topic_id,
                partition,
                ..
            } => {
                let Some(topic) = self
                    .topic_names_by_id
                    .get(topic_id)
                    .and_then(|n| self.topics.get_mut(n))
                else {
                    tracing::warn!(offset, "metadata: partition change for an unknown topic id");
                    return;
                };
                let Some(p) = topic.partitions.get_mut(partition) else {
                    tracing::warn!(
                        offset,
                        "metadata: partition change for an unknown partition"
                    );
                    return;
                };
                p.apply_change(record);
                report_broken_invariant(offset, &topic.name, *partition, p);
            }
        }
    }
}

/// A record that broke [`PartitionImage::check_invariants`] is logged, not
/// refused: every broker applies the same committed records, and stopping
/// them all over one would take the cluster down. The controller's plans
/// keep the invariants; the tests and the simulation assert them.
fn report_broken_invariant(offset: i64, topic: &str, partition: i32, p: &PartitionImage) {
    if let Err(why) = p.check_invariants() {
        tracing::error!(
            offset,
            topic,
            partition,
            "metadata: the record at this offset broke a partition invariant: {why}"
        );
    }
}

impl MetadataImage {
    /// Every partition's [`PartitionImage::check_invariants`].
    pub fn check_invariants(&self) -> Result<(), String> {
        for topic in self.topics.values() {
            for (partition, p) in &topic.partitions {
                p.check_invariants()
                    .map_err(|why| format!("{}-{partition}: {why}", topic.name))?;
            }
        }
        Ok(())
    }

    /// Records that rebuild this image from the empty one: what a snapshot
    /// of the metadata log holds. Deterministic (names, partitions and
    /// settings in order), so equal images give equal snapshots.
    pub fn to_records(&self) -> Vec<MetadataRecord> {
        let mut out = Vec::new();
        if let Some(cluster_id) = &self.cluster_id {
            out.push(MetadataRecord::ClusterId {
                cluster_id: cluster_id.clone(),
            });
        }
        for (name, &level) in &self.features {
            out.push(MetadataRecord::FeatureLevel {
                name: name.clone(),
                level,
            });
        }
        for b in self.brokers.values() {
            out.push(MetadataRecord::RegisterBroker {
                broker_id: b.id,
                incarnation_id: b.incarnation_id,
                broker_epoch: b.epoch,
                host: b.host.clone(),
                port: b.port,
                rack: b.rack.clone(),
                fenced: b.fenced,
                in_controlled_shutdown: b.in_controlled_shutdown,
                listeners: b.listeners.clone(),
            });
        }
        for topic in self.topics.values() {
            out.push(MetadataRecord::Topic {
                name: topic.name.clone(),
                topic_id: topic.id,
            });
            for (&partition, p) in &topic.partitions {
                out.push(MetadataRecord::Partition {
                    topic_id: topic.id,
                    partition,
                    replicas: p.replicas.clone(),
                    isr: p.isr.clone(),
                    leader: p.leader,
                    leader_epoch: p.leader_epoch,
                    partition_epoch: p.partition_epoch,
                    elr: p.elr.clone(),
                    last_known_elr: p.last_known_elr.clone(),
                    adding_replicas: p.adding_replicas.clone(),
                    removing_replicas: p.removing_replicas.clone(),
                    last_unclean_election_epoch: p.last_unclean_election_epoch,
                });
            }
            for (name, value) in &topic.configs {
                out.push(MetadataRecord::Config {
                    resource_type: RESOURCE_TOPIC,
                    resource_name: topic.name.clone(),
                    name: name.clone(),
                    value: Some(value.clone()),
                });
            }
        }
        for (name, value) in &self.broker_configs {
            out.push(MetadataRecord::Config {
                resource_type: RESOURCE_BROKER,
                resource_name: String::new(),
                name: name.clone(),
                value: Some(value.clone()),
            });
        }
        for (broker, configs) in &self.per_broker_configs {
            for (name, value) in configs {
                out.push(MetadataRecord::Config {
                    resource_type: RESOURCE_BROKER,
                    resource_name: broker.to_string(),
                    name: name.clone(),
                    value: Some(value.clone()),
                });
            }
        }
        for (group, configs) in &self.group_configs {
            for (name, value) in configs {
                out.push(MetadataRecord::Config {
                    resource_type: RESOURCE_GROUP,
                    resource_name: group.clone(),
                    name: name.clone(),
                    value: Some(value.clone()),
                });
            }
        }
        for (id, binding) in self.acls.iter() {
            out.push(MetadataRecord::access_control_entry(id, &binding));
        }
        for (entity, values) in &self.client_quotas {
            for (key, value) in values {
                out.push(MetadataRecord::ClientQuota {
                    entity: entity
                        .parts()
                        .into_iter()
                        .map(|(t, n)| (t.to_string(), n))
                        .collect(),
                    key: key.clone(),
                    value: Some(*value),
                });
            }
        }
        for ((name, mechanism), c) in &self.scram_credentials {
            out.push(MetadataRecord::UserScramCredential {
                name: name.clone(),
                mechanism: *mechanism,
                salt: c.salt.clone(),
                stored_key: c.stored_key.clone(),
                server_key: c.server_key.clone(),
                iterations: c.iterations,
            });
        }
        if self.next_producer_id > 0 {
            out.push(MetadataRecord::ProducerIds {
                next_producer_id: self.next_producer_id,
            });
        }
        out
    }

    /// A dynamic broker setting as it applies to `broker`: its own value,
    /// else the cluster's.
    pub fn broker_setting(&self, broker: i32, name: &str) -> Option<&str> {
        self.per_broker_configs
            .get(&broker)
            .and_then(|m| m.get(name))
            .or_else(|| self.broker_configs.get(name))
            .map(String::as_str)
    }

    /// A checksum of the image's content (not its offset): two nodes that
    /// applied the same records have the same digest.
    pub fn digest(&self) -> u32 {
        let mut crc = 0u32;
        for r in self.to_records() {
            crc = crc32c::crc32c_append(crc, &r.encode());
        }
        crc
    }

    /// The image `records` build, as of `offset`.
    pub fn from_records(offset: i64, records: &[MetadataRecord]) -> MetadataImage {
        let mut image = MetadataImage::empty();
        for r in records {
            image.apply(offset, r);
        }
        image.offset = offset;
        image
    }
}

#[cfg(test)]
mod unclean_tests {
    use super::unclean_election_explains;

    #[test]
    fn only_an_unclean_election_after_the_replicas_last_epoch_explains_a_loss() {
        assert!(unclean_election_explains(Some(6), Some(5)));
        assert!(!unclean_election_explains(Some(5), Some(5)));
        assert!(!unclean_election_explains(Some(3), Some(5)));
        assert!(!unclean_election_explains(None, Some(5)));
        assert!(
            unclean_election_explains(Some(1), None),
            "an empty epoch cache"
        );
        assert!(!unclean_election_explains(None, None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::{
        AccessControlEntry, AclBinding, AclOperation, AclPermissionType, Authorizer,
        AuthorizerConfig, PatternType, ResourcePattern, ResourceType,
    };

    #[test]
    fn a_partition_that_breaks_kafkas_rules_is_found() {
        let ok = PartitionImage {
            replicas: vec![1, 2, 3],
            isr: vec![1, 2],
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
            elr: vec![3],
            last_known_elr: Vec::new(),
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            last_unclean_election_epoch: None,
        };
        assert_eq!(ok.check_invariants(), Ok(()));
        let leaderless = PartitionImage {
            leader: -1,
            ..ok.clone()
        };
        assert_eq!(leaderless.check_invariants(), Ok(()));
        let broken = [
            PartitionImage {
                leader: 3,
                ..ok.clone()
            },
            PartitionImage {
                isr: vec![1, 4],
                ..ok.clone()
            },
            PartitionImage {
                elr: vec![5],
                ..ok.clone()
            },
            PartitionImage {
                elr: vec![2],
                ..ok.clone()
            },
        ];
        for p in broken {
            assert!(p.check_invariants().is_err(), "{p:?}");
        }
    }

    #[test]
    fn an_image_round_trips_through_its_records() {
        let id = [3u8; 16];
        let mut image = MetadataImage::empty();
        let records = [
            MetadataRecord::Topic {
                name: "orders".into(),
                topic_id: id,
            },
            MetadataRecord::Partition {
                topic_id: id,
                partition: 0,
                replicas: vec![1, 2],
                isr: vec![1],
                leader: 1,
                leader_epoch: 2,
                partition_epoch: 3,
                elr: Vec::new(),
                last_known_elr: Vec::new(),
                adding_replicas: Vec::new(),
                removing_replicas: Vec::new(),
                last_unclean_election_epoch: None,
            },
            MetadataRecord::Config {
                resource_type: RESOURCE_TOPIC,
                resource_name: "orders".into(),
                name: "retention.ms".into(),
                value: Some("1000".into()),
            },
            MetadataRecord::Config {
                resource_type: RESOURCE_BROKER,
                resource_name: String::new(),
                name: "log.retention.ms".into(),
                value: Some("5".into()),
            },
            MetadataRecord::ProducerIds {
                next_producer_id: 2000,
            },
            MetadataRecord::ClusterId {
                cluster_id: "c".into(),
            },
            MetadataRecord::FeatureLevel {
                name: "transaction.version".into(),
                level: 2,
            },
            MetadataRecord::FeatureLevel {
                name: "some.feature".into(),
                level: 3,
            },
            MetadataRecord::RegisterBroker {
                broker_id: 1,
                incarnation_id: [9; 16],
                broker_epoch: -1,
                host: "h".into(),
                port: 9092,
                rack: None,
                fenced: true,
                in_controlled_shutdown: false,
                listeners: Vec::new(),
            },
            MetadataRecord::BrokerRegistrationChange {
                broker_id: 1,
                broker_epoch: 6,
                fenced: Some(false),
                in_controlled_shutdown: None,
            },
            MetadataRecord::access_control_entry([1; 16], &read_orders("User:alice")),
            MetadataRecord::access_control_entry([2; 16], &read_orders("User:bob")),
            MetadataRecord::RemoveAccessControlEntry { id: [1; 16] },
        ];
        for (i, r) in records.iter().enumerate() {
            image.apply(i as i64, r);
        }
        let rebuilt = MetadataImage::from_records(image.offset, &image.to_records());
        assert_eq!(rebuilt, image);
        assert_eq!(rebuilt.to_records(), image.to_records());
        assert_eq!(rebuilt.feature_level("transaction.version"), 2);
        assert_eq!(rebuilt.feature_level("some.feature"), 3);
        assert_eq!(
            rebuilt.acls.iter().collect::<Vec<_>>(),
            vec![([2; 16], read_orders("User:bob"))]
        );
    }

    fn read_orders(principal: &str) -> AclBinding {
        AclBinding {
            pattern: ResourcePattern {
                resource_type: ResourceType::Topic,
                name: "orders".into(),
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

    #[test]
    fn acl_records_add_and_remove_acls_and_change_the_digest() {
        let mut image = MetadataImage::empty();
        let empty_digest = image.digest();
        let alice = read_orders("User:alice");
        image.apply(1, &MetadataRecord::access_control_entry([1; 16], &alice));
        assert_eq!(image.acls.get(&[1; 16]), Some(alice.clone()));
        assert_ne!(image.digest(), empty_digest, "ACLs are part of the content");
        let config = AuthorizerConfig::default();
        let authorizer = Authorizer::new(&config, &image.acls);
        assert!(authorizer.authorize(
            "User:alice",
            "h",
            AclOperation::Read,
            ResourceType::Topic,
            "orders"
        ));

        // A removal of an unknown id changes nothing.
        image.apply(2, &MetadataRecord::RemoveAccessControlEntry { id: [9; 16] });
        assert_eq!(image.acls.len(), 1);
        image.apply(3, &MetadataRecord::RemoveAccessControlEntry { id: [1; 16] });
        assert!(image.acls.is_empty());
        assert_eq!(image.digest(), empty_digest);
        assert!(!image
            .to_records()
            .iter()
            .any(|r| matches!(r, MetadataRecord::AccessControlEntry { .. })));
    }

    #[test]
    fn a_feature_level_is_set_changed_and_removed_by_level_0() {
        let tv = "transaction.version";
        let set = |level| MetadataRecord::FeatureLevel {
            name: tv.into(),
            level,
        };
        let mut image = MetadataImage::empty();
        assert_eq!(image.feature_level(tv), 0, "absent is level 0");
        image.apply(4, &set(2));
        assert_eq!((image.feature_level(tv), image.offset), (2, 4));
        image.apply(5, &set(1));
        assert_eq!(image.feature_level(tv), 1);
        image.apply(6, &set(0));
        assert_eq!(image.feature_level(tv), 0);
        assert!(image.features.is_empty(), "level 0 is stored as absence");
        // A removed feature leaves nothing in a snapshot either.
        assert!(!image
            .to_records()
            .iter()
            .any(|r| matches!(r, MetadataRecord::FeatureLevel { .. })));
        image.apply(7, &set(2));
        let snapshot = MetadataImage::from_records(image.offset, &image.to_records());
        assert_eq!(snapshot.feature_level(tv), 2);
        assert_eq!(snapshot.offset, 7);
    }
}
