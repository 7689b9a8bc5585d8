//! Metadata records, after KRaft's: every topic and config change is one of
//! these, appended to the metadata log and applied to the image.
//!
//! Each record is the value of one Kafka record in the metadata log, encoded
//! as `[type i8][version i8][fields...]` with the protocol's primitives.

use bytes::{BufMut, Bytes, BytesMut};

use crate::acl::{
    AccessControlEntry, AclBinding, AclId, AclOperation, AclPermissionType, PatternType,
    ResourcePattern, ResourceType,
};
use crate::protocol::codec::{DecodeError, DecodeResult, Reader, Writer};

pub type Uuid = [u8; 16];

/// Kafka's ConfigResource types.
pub use crate::protocol::config_resource::{
    BROKER as RESOURCE_BROKER, GROUP as RESOURCE_GROUP, TOPIC as RESOURCE_TOPIC,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataRecord {
    Topic {
        name: String,
        topic_id: Uuid,
    },
    Partition {
        topic_id: Uuid,
        partition: i32,
        replicas: Vec<i32>,
        isr: Vec<i32>,
        leader: i32,
        leader_epoch: i32,
        partition_epoch: i32,
        /// KIP-966's eligible leader replicas: members that left the ISR
        /// while it was below `min.insync.replicas`, so they hold every
        /// record below the HW (which cannot advance meanwhile).
        elr: Vec<i32>,
        /// The last leader, kept once the ISR and ELR are both empty: the
        /// one replica left that may lead when nothing better returns.
        last_known_elr: Vec<i32>,
        /// A reassignment in progress: replicas being added (they are in
        /// `replicas` and catch up) and being removed (they leave once
        /// every target replica is in the ISR).
        adding_replicas: Vec<i32>,
        removing_replicas: Vec<i32>,
        /// The leader epoch that the partition's last unclean election
        /// started, if there was one. Only a snapshot sets it: the log has
        /// the election's `PartitionChange` instead, and a node that loads
        /// the snapshot must know it as well as one that replayed the log.
        last_unclean_election_epoch: Option<i32>,
    },
    Config {
        resource_type: i8,
        resource_name: String,
        name: String,
        /// `None` removes the setting (back to the default).
        value: Option<String>,
    },
    RemoveTopic {
        topic_id: Uuid,
    },
    /// The next producer id the broker may hand out (KRaft's ProducerIds).
    ProducerIds {
        next_producer_id: i64,
    },
    /// A broker process registered (KRaft's RegisterBrokerRecord). It
    /// starts fenced; its broker epoch is this record's offset.
    RegisterBroker {
        broker_id: i32,
        incarnation_id: Uuid,
        /// -1 in the log (the epoch is the record's offset); a snapshot
        /// stores the epoch, as its records all carry the snapshot's offset.
        broker_epoch: i64,
        /// The endpoint of the broker's inter-broker listener.
        host: String,
        port: i32,
        rack: Option<String>,
        fenced: bool,
        in_controlled_shutdown: bool,
        /// Every listener of the broker, so that a client is told the
        /// endpoints of the listener it came in on. Empty in a record of a
        /// release before named listeners: `host` and `port` then serve
        /// every listener.
        listeners: Vec<BrokerEndpoint>,
    },
    /// A broker's state changed (KRaft's BrokerRegistrationChangeRecord):
    /// fenced, unfenced, or in controlled shutdown.
    BrokerRegistrationChange {
        broker_id: i32,
        broker_epoch: i64,
        fenced: Option<bool>,
        in_controlled_shutdown: Option<bool>,
    },
    /// A broker was removed from the cluster (KRaft's
    /// UnregisterBrokerRecord): the registration of that epoch is dropped.
    UnregisterBroker {
        broker_id: i32,
        broker_epoch: i64,
    },
    /// The cluster's id, agreed by the quorum: the first registered broker
    /// brings it (or the controller makes one), and nodes with an empty
    /// data directory adopt it. Kafka writes it with `kafka-storage format`.
    ClusterId {
        cluster_id: String,
    },
    /// A partition's leader or ISR changed (KRaft's PartitionChangeRecord):
    /// an AlterPartition, a failover, an election. `None` leaves a field as
    /// it was. Applying it bumps the partition epoch, and the leader epoch
    /// when the leader changes.
    PartitionChange {
        topic_id: Uuid,
        partition: i32,
        leader: Option<i32>,
        isr: Option<Vec<i32>>,
        /// Set after an unclean election: the new leader's log may lack
        /// records an earlier leader acknowledged.
        unclean: bool,
        /// The new ELR (see `Partition`), `None` to keep it.
        elr: Option<Vec<i32>>,
        /// The new last known ELR, `None` to keep it.
        last_known_elr: Option<Vec<i32>>,
        /// A reassignment's new replica list and its adding and removing
        /// replicas (see `Partition`), `None` to keep each.
        replicas: Option<Vec<i32>>,
        adding_replicas: Option<Vec<i32>>,
        removing_replicas: Option<Vec<i32>>,
    },
    /// A feature's finalized level (KRaft's FeatureLevelRecord), which
    /// clients read from ApiVersions; level 0 removes the feature (see
    /// `metadata/features.rs`). The release before it cannot read this
    /// type: an existing cluster gets one only when an operator changes a
    /// level, which is done once every node runs this release.
    FeatureLevel {
        name: String,
        level: i16,
    },
    /// An ACL was created (KRaft's AccessControlEntryRecord), under a new
    /// id. The codes are Kafka's (`acl/types.rs`); the image reads one it
    /// does not know as UNKNOWN, as Kafka does. The release before this
    /// type cannot read it: a cluster gets one only when an operator
    /// creates an ACL, which is done once every node runs this release.
    AccessControlEntry {
        id: Uuid,
        resource_type: i8,
        resource_name: String,
        pattern_type: i8,
        /// `Type:name`, such as `User:alice`, or `User:*`.
        principal: String,
        /// A client address, or `*`.
        host: String,
        operation: i8,
        permission: i8,
    },
    /// The ACL with this id was deleted (KRaft's
    /// RemoveAccessControlEntryRecord).
    RemoveAccessControlEntry {
        id: Uuid,
    },
    /// A user's SCRAM credential for one mechanism was set (KRaft's
    /// UserScramCredentialRecord, KIP-554): the salt, the stored and
    /// server keys and the iterations, never the password.
    UserScramCredential {
        name: String,
        /// Kafka's ScramMechanism type: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
        mechanism: i8,
        salt: Vec<u8>,
        stored_key: Vec<u8>,
        server_key: Vec<u8>,
        iterations: i32,
    },
    /// A user's SCRAM credential for one mechanism was deleted (KRaft's
    /// RemoveUserScramCredentialRecord).
    RemoveUserScramCredential {
        name: String,
        mechanism: i8,
    },
    /// A client quota was set or removed (KRaft's ClientQuotaRecord): the
    /// entity as (type, name) pairs, a null name for `<default>`.
    ClientQuota {
        entity: Vec<(String, Option<String>)>,
        key: String,
        /// `None` removes the value.
        value: Option<crate::quota::QuotaValue>,
    },
}

const TOPIC: i8 = 1;
const PARTITION: i8 = 2;
const CONFIG: i8 = 3;
const REMOVE_TOPIC: i8 = 4;
const PRODUCER_IDS: i8 = 5;
const REGISTER_BROKER: i8 = 6;
const BROKER_REGISTRATION_CHANGE: i8 = 7;
const CLUSTER_ID: i8 = 8;
const PARTITION_CHANGE: i8 = 9;
const UNREGISTER_BROKER: i8 = 10;
const FEATURE_LEVEL: i8 = 11;
const ACCESS_CONTROL_ENTRY: i8 = 12;
const REMOVE_ACCESS_CONTROL_ENTRY: i8 = 13;
const USER_SCRAM_CREDENTIAL: i8 = 14;
const REMOVE_USER_SCRAM_CREDENTIAL: i8 = 15;
const CLIENT_QUOTA: i8 = 16;

/// An optional flag as one byte: -1 none, 0 false, 1 true.
fn optional_flag(v: Option<bool>) -> i8 {
    match v {
        None => -1,
        Some(false) => 0,
        Some(true) => 1,
    }
}

fn read_optional_flag(r: &mut Reader, name: &'static str) -> DecodeResult<Option<bool>> {
    match r.i8(name)? {
        -1 => Ok(None),
        0 => Ok(Some(false)),
        1 => Ok(Some(true)),
        other => Err(DecodeError::Invalid(format!(
            "{name} is {other}, not -1, 0 or 1"
        ))),
    }
}
/// One listener of a registered broker (KRaft's BrokerEndpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerEndpoint {
    pub name: String,
    pub host: String,
    pub port: i32,
    /// Kafka's security protocol id.
    pub security_protocol: i16,
}

const VERSION: i8 = 0;
/// `Partition` and `PartitionChange` with KIP-966's ELR fields and the
/// reassignment fields appended. Written only when those fields say
/// something, so that a log without them stays readable by the release
/// before them (a rolling upgrade).
const VERSION_1_FIELDS: i8 = 1;
/// `Partition` with the last unclean election's epoch appended (after the
/// version-1 fields). Written only when there was one, for the same
/// reason.
const VERSION_2_FIELDS: i8 = 2;

/// The compact arrays of ids the records hold.
fn put_ids(w: &mut BytesMut, ids: Option<&Vec<i32>>) {
    w.put_i32_array(ids.map(Vec::as_slice), true);
}

impl MetadataRecord {
    pub fn encode(&self) -> Bytes {
        let mut w = BytesMut::new();
        match self {
            MetadataRecord::Topic { name, topic_id } => {
                w.put_i8(TOPIC);
                w.put_i8(VERSION);
                w.put_string(name, true);
                w.put_slice(topic_id);
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
                let with_v2_fields = last_unclean_election_epoch.is_some();
                let with_v1_fields = with_v2_fields
                    || !elr.is_empty()
                    || !last_known_elr.is_empty()
                    || !adding_replicas.is_empty()
                    || !removing_replicas.is_empty();
                w.put_i8(PARTITION);
                w.put_i8(if with_v2_fields {
                    VERSION_2_FIELDS
                } else if with_v1_fields {
                    VERSION_1_FIELDS
                } else {
                    VERSION
                });
                w.put_slice(topic_id);
                w.put_i32(*partition);
                put_ids(&mut w, Some(replicas));
                put_ids(&mut w, Some(isr));
                w.put_i32(*leader);
                w.put_i32(*leader_epoch);
                w.put_i32(*partition_epoch);
                if with_v1_fields {
                    put_ids(&mut w, Some(elr));
                    put_ids(&mut w, Some(last_known_elr));
                    put_ids(&mut w, Some(adding_replicas));
                    put_ids(&mut w, Some(removing_replicas));
                }
                if let Some(epoch) = last_unclean_election_epoch {
                    w.put_i32(*epoch);
                }
            }
            MetadataRecord::Config {
                resource_type,
                resource_name,
                name,
                value,
            } => {
                w.put_i8(CONFIG);
                w.put_i8(VERSION);
                w.put_i8(*resource_type);
                w.put_string(resource_name, true);
                w.put_string(name, true);
                w.put_nullable_string(value.as_deref(), true);
            }
            MetadataRecord::RemoveTopic { topic_id } => {
                w.put_i8(REMOVE_TOPIC);
                w.put_i8(VERSION);
                w.put_slice(topic_id);
            }
            MetadataRecord::ProducerIds { next_producer_id } => {
                w.put_i8(PRODUCER_IDS);
                w.put_i8(VERSION);
                w.put_i64(*next_producer_id);
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
                // The listeners are appended as version 1 only when there
                // are some, so that a one-listener cluster's log stays
                // readable by the release before them (a rolling upgrade).
                w.put_i8(REGISTER_BROKER);
                w.put_i8(if listeners.is_empty() {
                    VERSION
                } else {
                    VERSION_1_FIELDS
                });
                w.put_i32(*broker_id);
                w.put_slice(incarnation_id);
                w.put_i64(*broker_epoch);
                w.put_string(host, true);
                w.put_i32(*port);
                w.put_nullable_string(rack.as_deref(), true);
                w.put_i8(*fenced as i8);
                w.put_i8(*in_controlled_shutdown as i8);
                if !listeners.is_empty() {
                    w.put_array_len(Some(listeners.len()), true);
                    for l in listeners {
                        w.put_string(&l.name, true);
                        w.put_string(&l.host, true);
                        w.put_i32(l.port);
                        w.put_i16(l.security_protocol);
                    }
                }
            }
            MetadataRecord::UnregisterBroker {
                broker_id,
                broker_epoch,
            } => {
                w.put_i8(UNREGISTER_BROKER);
                w.put_i8(VERSION);
                w.put_i32(*broker_id);
                w.put_i64(*broker_epoch);
            }
            MetadataRecord::BrokerRegistrationChange {
                broker_id,
                broker_epoch,
                fenced,
                in_controlled_shutdown,
            } => {
                w.put_i8(BROKER_REGISTRATION_CHANGE);
                w.put_i8(VERSION);
                w.put_i32(*broker_id);
                w.put_i64(*broker_epoch);
                w.put_i8(optional_flag(*fenced));
                w.put_i8(optional_flag(*in_controlled_shutdown));
            }
            MetadataRecord::ClusterId { cluster_id } => {
                w.put_i8(CLUSTER_ID);
                w.put_i8(VERSION);
                w.put_string(cluster_id, true);
            }
            MetadataRecord::PartitionChange {
                topic_id,
                partition,
                leader,
                isr,
                unclean,
                elr,
                last_known_elr,
                replicas,
                adding_replicas,
                removing_replicas,
            } => {
                let with_v1_fields = elr.is_some()
                    || last_known_elr.is_some()
                    || replicas.is_some()
                    || adding_replicas.is_some()
                    || removing_replicas.is_some();
                w.put_i8(PARTITION_CHANGE);
                w.put_i8(if with_v1_fields {
                    VERSION_1_FIELDS
                } else {
                    VERSION
                });
                w.put_slice(topic_id);
                w.put_i32(*partition);
                w.put_bool(leader.is_some());
                w.put_i32(leader.unwrap_or(-1));
                put_ids(&mut w, isr.as_ref());
                w.put_bool(*unclean);
                if with_v1_fields {
                    put_ids(&mut w, elr.as_ref());
                    put_ids(&mut w, last_known_elr.as_ref());
                    put_ids(&mut w, replicas.as_ref());
                    put_ids(&mut w, adding_replicas.as_ref());
                    put_ids(&mut w, removing_replicas.as_ref());
                }
            }
            MetadataRecord::FeatureLevel { name, level } => {
                w.put_i8(FEATURE_LEVEL);
                w.put_i8(VERSION);
                w.put_string(name, true);
                w.put_i16(*level);
            }
            MetadataRecord::AccessControlEntry {
                id,
                resource_type,
                resource_name,
                pattern_type,
                principal,
                host,
                operation,
                permission,
            } => {
                w.put_i8(ACCESS_CONTROL_ENTRY);
                w.put_i8(VERSION);
                w.put_slice(id);
                w.put_i8(*resource_type);
                w.put_string(resource_name, true);
                w.put_i8(*pattern_type);
                w.put_string(principal, true);
                w.put_string(host, true);
                w.put_i8(*operation);
                w.put_i8(*permission);
            }
            MetadataRecord::RemoveAccessControlEntry { id } => {
                w.put_i8(REMOVE_ACCESS_CONTROL_ENTRY);
                w.put_i8(VERSION);
                w.put_slice(id);
            }
            MetadataRecord::UserScramCredential {
                name,
                mechanism,
                salt,
                stored_key,
                server_key,
                iterations,
            } => {
                w.put_i8(USER_SCRAM_CREDENTIAL);
                w.put_i8(VERSION);
                w.put_string(name, true);
                w.put_i8(*mechanism);
                w.put_nullable_bytes(Some(salt), true);
                w.put_nullable_bytes(Some(stored_key), true);
                w.put_nullable_bytes(Some(server_key), true);
                w.put_i32(*iterations);
            }
            MetadataRecord::RemoveUserScramCredential { name, mechanism } => {
                w.put_i8(REMOVE_USER_SCRAM_CREDENTIAL);
                w.put_i8(VERSION);
                w.put_string(name, true);
                w.put_i8(*mechanism);
            }
            MetadataRecord::ClientQuota { entity, key, value } => {
                w.put_i8(CLIENT_QUOTA);
                w.put_i8(VERSION);
                w.put_array_len(Some(entity.len()), true);
                for (entity_type, name) in entity {
                    w.put_string(entity_type, true);
                    w.put_nullable_string(name.as_deref(), true);
                }
                w.put_string(key, true);
                w.put_bool(value.is_none());
                w.put_f64(value.map_or(0.0, |v| v.0));
            }
        }
        w.freeze()
    }

    /// The record that creates `binding` under `id`.
    pub fn access_control_entry(id: AclId, binding: &AclBinding) -> MetadataRecord {
        MetadataRecord::AccessControlEntry {
            id,
            resource_type: binding.pattern.resource_type.code(),
            resource_name: binding.pattern.name.clone(),
            pattern_type: binding.pattern.pattern_type.code(),
            principal: binding.entry.principal.clone(),
            host: binding.entry.host.clone(),
            operation: binding.entry.operation.code(),
            permission: binding.entry.permission.code(),
        }
    }

    /// The id and ACL an `AccessControlEntry` record creates (`None` for
    /// other records). A code Kafka does not define reads as UNKNOWN, as
    /// Kafka's `StandardAcl.fromRecord` reads it.
    pub fn acl_binding(&self) -> Option<(AclId, AclBinding)> {
        let MetadataRecord::AccessControlEntry {
            id,
            resource_type,
            resource_name,
            pattern_type,
            principal,
            host,
            operation,
            permission,
        } = self
        else {
            return None;
        };
        let binding = AclBinding {
            pattern: ResourcePattern {
                resource_type: ResourceType::from_code(*resource_type),
                name: resource_name.clone(),
                pattern_type: PatternType::from_code(*pattern_type),
            },
            entry: AccessControlEntry {
                principal: principal.clone(),
                host: host.clone(),
                operation: AclOperation::from_code(*operation),
                permission: AclPermissionType::from_code(*permission),
            },
        };
        Some((*id, binding))
    }

    pub fn decode(bytes: Bytes) -> DecodeResult<MetadataRecord> {
        let mut r = Reader::new(bytes);
        let kind = r.i8("record type")?;
        let version = r.i8("record version")?;
        let newest = match kind {
            PARTITION => VERSION_2_FIELDS,
            PARTITION_CHANGE | REGISTER_BROKER => VERSION_1_FIELDS,
            _ => VERSION,
        };
        if !(VERSION..=newest).contains(&version) {
            return Err(DecodeError::Invalid(format!(
                "metadata record version {version} is newer than this pinlog understands"
            )));
        }
        let with_v1_fields = version >= VERSION_1_FIELDS;
        // The version-1 lists: empty, or absent from a change, before it.
        let ids = |r: &mut Reader, name: &'static str| -> DecodeResult<Vec<i32>> {
            if with_v1_fields {
                r.array(name, true, 4, |r| r.i32(name))
            } else {
                Ok(Vec::new())
            }
        };
        let optional_ids = |r: &mut Reader, name: &'static str| -> DecodeResult<Option<Vec<i32>>> {
            if with_v1_fields {
                r.nullable_array(name, true, 4, |r| r.i32(name))
            } else {
                Ok(None)
            }
        };
        let record = match kind {
            TOPIC => MetadataRecord::Topic {
                name: r.string("name", true)?,
                topic_id: r.uuid("topic_id")?,
            },
            PARTITION => MetadataRecord::Partition {
                topic_id: r.uuid("topic_id")?,
                partition: r.i32("partition")?,
                replicas: r.array("replicas", true, 4, |r| r.i32("replica"))?,
                isr: r.array("isr", true, 4, |r| r.i32("isr"))?,
                leader: r.i32("leader")?,
                leader_epoch: r.i32("leader_epoch")?,
                partition_epoch: r.i32("partition_epoch")?,
                elr: ids(&mut r, "elr")?,
                last_known_elr: ids(&mut r, "last_known_elr")?,
                adding_replicas: ids(&mut r, "adding_replicas")?,
                removing_replicas: ids(&mut r, "removing_replicas")?,
                last_unclean_election_epoch: if version >= VERSION_2_FIELDS {
                    Some(r.i32("last_unclean_election_epoch")?)
                } else {
                    None
                },
            },
            CONFIG => MetadataRecord::Config {
                resource_type: r.i8("resource_type")?,
                resource_name: r.string("resource_name", true)?,
                name: r.string("name", true)?,
                value: r.nullable_string("value", true)?,
            },
            REMOVE_TOPIC => MetadataRecord::RemoveTopic {
                topic_id: r.uuid("topic_id")?,
            },
            PRODUCER_IDS => MetadataRecord::ProducerIds {
                next_producer_id: r.i64("next_producer_id")?,
            },
            REGISTER_BROKER => MetadataRecord::RegisterBroker {
                broker_id: r.i32("broker_id")?,
                incarnation_id: r.uuid("incarnation_id")?,
                broker_epoch: r.i64("broker_epoch")?,
                host: r.string("host", true)?,
                port: r.i32("port")?,
                rack: r.nullable_string("rack", true)?,
                fenced: r.i8("fenced")? != 0,
                in_controlled_shutdown: r.i8("in_controlled_shutdown")? != 0,
                listeners: if with_v1_fields {
                    // name, host, port, protocol.
                    r.array("listeners", true, 1 + 1 + 4 + 2, |r| {
                        Ok(BrokerEndpoint {
                            name: r.string("name", true)?,
                            host: r.string("host", true)?,
                            port: r.i32("port")?,
                            security_protocol: r.i16("security_protocol")?,
                        })
                    })?
                } else {
                    Vec::new()
                },
            },
            BROKER_REGISTRATION_CHANGE => MetadataRecord::BrokerRegistrationChange {
                broker_id: r.i32("broker_id")?,
                broker_epoch: r.i64("broker_epoch")?,
                fenced: read_optional_flag(&mut r, "fenced")?,
                in_controlled_shutdown: read_optional_flag(&mut r, "in_controlled_shutdown")?,
            },
            UNREGISTER_BROKER => MetadataRecord::UnregisterBroker {
                broker_id: r.i32("broker_id")?,
                broker_epoch: r.i64("broker_epoch")?,
            },
            CLUSTER_ID => MetadataRecord::ClusterId {
                cluster_id: r.string("cluster_id", true)?,
            },
            FEATURE_LEVEL => MetadataRecord::FeatureLevel {
                name: r.string("name", true)?,
                level: r.i16("level")?,
            },
            ACCESS_CONTROL_ENTRY => MetadataRecord::AccessControlEntry {
                id: r.uuid("id")?,
                resource_type: r.i8("resource_type")?,
                resource_name: r.string("resource_name", true)?,
                pattern_type: r.i8("pattern_type")?,
                principal: r.string("principal", true)?,
                host: r.string("host", true)?,
                operation: r.i8("operation")?,
                permission: r.i8("permission")?,
            },
            REMOVE_ACCESS_CONTROL_ENTRY => {
                MetadataRecord::RemoveAccessControlEntry { id: r.uuid("id")? }
            }
            USER_SCRAM_CREDENTIAL => MetadataRecord::UserScramCredential {
                name: r.string("name", true)?,
                mechanism: r.i8("mechanism")?,
                salt: r.bytes("salt", true)?.to_vec(),
                stored_key: r.bytes("stored_key", true)?.to_vec(),
                server_key: r.bytes("server_key", true)?.to_vec(),
                iterations: r.i32("iterations")?,
            },
            REMOVE_USER_SCRAM_CREDENTIAL => MetadataRecord::RemoveUserScramCredential {
                name: r.string("name", true)?,
                mechanism: r.i8("mechanism")?,
            },
            CLIENT_QUOTA => {
                // type, name.
                let entity = r.array("entity", true, 1 + 1, |r| {
                    Ok((
                        r.string("entity_type", true)?,
                        r.nullable_string("entity_name", true)?,
                    ))
                })?;
                let key = r.string("key", true)?;
                let remove = r.bool("remove")?;
                let value = r.f64("value")?;
                MetadataRecord::ClientQuota {
                    entity,
                    key,
                    value: (!remove).then_some(crate::quota::QuotaValue(value)),
                }
            }
            PARTITION_CHANGE => {
                let topic_id = r.uuid("topic_id")?;
                let partition = r.i32("partition")?;
                let has_leader = r.bool("has_leader")?;
                let leader = r.i32("leader")?;
                MetadataRecord::PartitionChange {
                    topic_id,
                    partition,
                    leader: has_leader.then_some(leader),
                    isr: r.nullable_array("isr", true, 4, |r| r.i32("isr"))?,
                    unclean: r.bool("unclean")?,
                    elr: optional_ids(&mut r, "elr")?,
                    last_known_elr: optional_ids(&mut r, "last_known_elr")?,
                    replicas: optional_ids(&mut r, "replicas")?,
                    adding_replicas: optional_ids(&mut r, "adding_replicas")?,
                    removing_replicas: optional_ids(&mut r, "removing_replicas")?,
                }
            }
            other => {
                return Err(DecodeError::Invalid(format!(
                    "unknown metadata record type {other}"
                )))
            }
        };
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_record_round_trips() {
        let id = [7u8; 16];
        let records = vec![
            MetadataRecord::Topic {
                name: "orders".into(),
                topic_id: id,
            },
            MetadataRecord::Partition {
                topic_id: id,
                partition: 3,
                replicas: vec![1, 2],
                isr: vec![1],
                leader: 1,
                leader_epoch: 4,
                partition_epoch: 5,
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
                value: None,
            },
            MetadataRecord::RemoveTopic { topic_id: id },
            MetadataRecord::ProducerIds {
                next_producer_id: 1000,
            },
            MetadataRecord::RegisterBroker {
                broker_id: 2,
                incarnation_id: id,
                broker_epoch: -1,
                host: "10.0.0.2".into(),
                port: 9092,
                rack: Some("r1".into()),
                fenced: true,
                in_controlled_shutdown: false,
                listeners: Vec::new(),
            },
            MetadataRecord::BrokerRegistrationChange {
                broker_id: 2,
                broker_epoch: 17,
                fenced: Some(false),
                in_controlled_shutdown: None,
            },
            MetadataRecord::ClusterId {
                cluster_id: "qau3HT1pWYTbaYLLJD0ulA".into(),
            },
            MetadataRecord::UserScramCredential {
                name: "alice".into(),
                mechanism: 2,
                salt: vec![1, 2, 3],
                stored_key: vec![4; 64],
                server_key: vec![5; 64],
                iterations: 8192,
            },
            MetadataRecord::RemoveUserScramCredential {
                name: "alice".into(),
                mechanism: 1,
            },
            MetadataRecord::ClientQuota {
                entity: vec![
                    ("user".into(), Some("alice".into())),
                    ("client-id".into(), None),
                ],
                key: "producer_byte_rate".into(),
                value: Some(crate::quota::QuotaValue(1048576.0)),
            },
            MetadataRecord::ClientQuota {
                entity: vec![("user".into(), None)],
                key: "consumer_byte_rate".into(),
                value: None,
            },
            MetadataRecord::UnregisterBroker {
                broker_id: 3,
                broker_epoch: 42,
            },
            MetadataRecord::FeatureLevel {
                name: "transaction.version".into(),
                level: 2,
            },
            MetadataRecord::FeatureLevel {
                name: "transaction.version".into(),
                level: 0,
            },
            MetadataRecord::AccessControlEntry {
                id,
                resource_type: ResourceType::Topic.code(),
                resource_name: "orders-".into(),
                pattern_type: PatternType::Prefixed.code(),
                principal: "User:alice".into(),
                host: "*".into(),
                operation: AclOperation::Read.code(),
                permission: AclPermissionType::Allow.code(),
            },
            // The codec keeps a code this release does not know as written.
            MetadataRecord::AccessControlEntry {
                id,
                resource_type: 9,
                resource_name: String::new(),
                pattern_type: 7,
                principal: String::new(),
                host: String::new(),
                operation: 16,
                permission: -1,
            },
            MetadataRecord::RemoveAccessControlEntry { id },
            MetadataRecord::PartitionChange {
                topic_id: id,
                partition: 1,
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
                topic_id: id,
                partition: 1,
                leader: None,
                isr: Some(vec![3, 1]),
                unclean: true,
                elr: None,
                last_known_elr: None,
                adding_replicas: None,
                removing_replicas: None,
                replicas: None,
            },
        ];
        for r in records {
            let bytes = r.encode();
            // Records without ELR fields keep the format the previous
            // release reads.
            assert_eq!(bytes[1] as i8, VERSION, "{r:?}");
            assert_eq!(MetadataRecord::decode(bytes).unwrap(), r);
        }
        let with_v1_fields = vec![
            MetadataRecord::RegisterBroker {
                broker_id: 3,
                incarnation_id: id,
                broker_epoch: 12,
                host: "10.0.0.3".into(),
                port: 9094,
                rack: None,
                fenced: false,
                in_controlled_shutdown: true,
                listeners: vec![
                    BrokerEndpoint {
                        name: "INTERNAL".into(),
                        host: "10.0.0.3".into(),
                        port: 9094,
                        security_protocol: 3,
                    },
                    BrokerEndpoint {
                        name: "SSL".into(),
                        host: "kafka-3.example".into(),
                        port: 9093,
                        security_protocol: 1,
                    },
                ],
            },
            MetadataRecord::Partition {
                topic_id: id,
                partition: 3,
                replicas: vec![1, 2, 3],
                isr: vec![],
                leader: -1,
                leader_epoch: 4,
                partition_epoch: 5,
                elr: vec![2],
                last_known_elr: vec![1],
                adding_replicas: vec![3],
                removing_replicas: vec![],
                last_unclean_election_epoch: None,
            },
            MetadataRecord::PartitionChange {
                topic_id: id,
                partition: 1,
                leader: Some(-1),
                isr: Some(vec![]),
                unclean: false,
                elr: Some(vec![2, 3]),
                last_known_elr: None,
                replicas: Some(vec![3, 4, 1]),
                adding_replicas: Some(vec![4]),
                removing_replicas: Some(vec![1]),
            },
        ];
        for r in with_v1_fields {
            let bytes = r.encode();
            assert_eq!(bytes[1] as i8, VERSION_1_FIELDS);
            assert_eq!(MetadataRecord::decode(bytes).unwrap(), r);
        }
        // A snapshot's partition after an unclean election.
        let unclean = MetadataRecord::Partition {
            topic_id: id,
            partition: 0,
            replicas: vec![1, 2, 3],
            isr: vec![2],
            leader: 2,
            leader_epoch: 7,
            partition_epoch: 9,
            elr: vec![],
            last_known_elr: vec![],
            adding_replicas: vec![],
            removing_replicas: vec![],
            last_unclean_election_epoch: Some(6),
        };
        let bytes = unclean.encode();
        assert_eq!(bytes[1] as i8, VERSION_2_FIELDS);
        assert_eq!(MetadataRecord::decode(bytes.clone()).unwrap(), unclean);
        for n in 0..bytes.len() {
            assert!(
                MetadataRecord::decode(bytes.slice(..n)).is_err(),
                "prefix {n}"
            );
        }
        assert!(MetadataRecord::decode(Bytes::from_static(&[9, 0])).is_err());
        assert!(MetadataRecord::decode(Bytes::from_static(&[1])).is_err());
    }

    /// The layout on disk: once written, a record must read back the same
    /// in every later release.
    #[test]
    fn a_feature_level_record_keeps_its_layout() {
        let record = MetadataRecord::FeatureLevel {
            name: "tv".into(),
            level: 2,
        };
        let bytes = record.encode();
        // Type 11, version 0, a compact string (length + 1), an INT16.
        assert_eq!(&bytes[..], &[11, 0, 3, b't', b'v', 0, 2]);
        assert_eq!(MetadataRecord::decode(bytes.clone()).unwrap(), record);
        for n in 0..bytes.len() {
            assert!(
                MetadataRecord::decode(bytes.slice(..n)).is_err(),
                "prefix {n}"
            );
        }
    }

    /// The layout of an ACL record on disk, and that every truncation of
    /// it is refused.
    #[test]
    fn an_acl_record_keeps_its_layout() {
        let binding = AclBinding {
            pattern: ResourcePattern {
                resource_type: ResourceType::Group,
                name: "g".into(),
                pattern_type: PatternType::Literal,
            },
            entry: AccessControlEntry {
                principal: "U:a".into(),
                host: "*".into(),
                operation: AclOperation::Describe,
                permission: AclPermissionType::Deny,
            },
        };
        let record = MetadataRecord::access_control_entry([1; 16], &binding);
        let bytes = record.encode();
        let mut expected = vec![12, 0];
        expected.extend([1; 16]);
        // Type GROUP, a compact string (length + 1), LITERAL, the
        // principal and the host, DESCRIBE, DENY.
        expected.extend([3, 2, b'g', 3, 4, b'U', b':', b'a', 2, b'*', 8, 2]);
        assert_eq!(&bytes[..], &expected[..]);
        let decoded = MetadataRecord::decode(bytes.clone()).unwrap();
        assert_eq!(decoded, record);
        assert_eq!(decoded.acl_binding(), Some(([1; 16], binding)));
        for n in 0..bytes.len() {
            assert!(
                MetadataRecord::decode(bytes.slice(..n)).is_err(),
                "prefix {n}"
            );
        }
        let remove = MetadataRecord::RemoveAccessControlEntry { id: [2; 16] };
        let bytes = remove.encode();
        assert_eq!(&bytes[..2], &[13, 0]);
        assert_eq!(bytes.len(), 18);
        assert_eq!(remove.acl_binding(), None);
        for n in 0..bytes.len() {
            assert!(MetadataRecord::decode(bytes.slice(..n)).is_err());
        }
        // A version this release does not know is refused.
        let mut newer = remove.encode().to_vec();
        newer[1] = 1;
        assert!(MetadataRecord::decode(Bytes::from(newer)).is_err());
    }

    #[test]
    fn an_unknown_acl_code_reads_as_unknown() {
        let record = MetadataRecord::AccessControlEntry {
            id: [3; 16],
            resource_type: 9,
            resource_name: "t".into(),
            pattern_type: PatternType::Literal.code(),
            principal: "User:a".into(),
            host: "*".into(),
            operation: 16,
            permission: AclPermissionType::Allow.code(),
        };
        let (_, binding) = record.acl_binding().unwrap();
        assert_eq!(binding.pattern.resource_type, ResourceType::Unknown);
        assert_eq!(binding.entry.operation, AclOperation::Unknown);
    }
}
