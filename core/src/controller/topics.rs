//! Topic, partition and configuration changes: what records each request
//! becomes, or why it is refused.

use std::collections::{BTreeMap, BTreeSet};

use crate::controller::placement::{place, Random, UsableBroker};
use crate::metadata::dynamic_broker_config;
use crate::metadata::image::MetadataImage;
use crate::metadata::records::{MetadataRecord, RESOURCE_BROKER, RESOURCE_TOPIC};
use crate::metadata::topic_config;
use crate::metadata::{is_internal_topic, OFFSETS_TOPIC};
use crate::protocol::error_code;
use crate::replica::throttle;

/// Kafka's limit on topic name length.
pub const TOPIC_NAME_MAX_LEN: usize = 249;
/// Upper bound on partitions per topic in one request.
pub const PARTITIONS_PER_TOPIC_MAX: i32 = 100_000;

/// A failure with Kafka's error code and a message that says what to do.
pub type TopicError = (i16, String);

/// A topic to create, as requested.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct NewTopic {
    pub name: String,
    /// -1: `num.partitions`.
    pub num_partitions: i32,
    /// -1: `default.replication.factor`.
    pub replication_factor: i16,
    pub configs: Vec<(String, Option<String>)>,
    /// A manual replica assignment (`kafka-topics.sh
    /// --replica-assignment`): each partition's index and replicas, the
    /// first of which is its preferred leader. Empty to let placement
    /// choose, from `num_partitions` and `replication_factor`, which must
    /// both be -1 when this is given.
    pub assignments: Vec<(i32, Vec<i32>)>,
}

/// Partitions to add to a topic, as requested.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct NewPartitions {
    pub topic: String,
    /// The topic's new partition count.
    pub count: i32,
    /// A manual replica assignment of each added partition, in partition
    /// order; `None` to let placement choose.
    pub assignments: Option<Vec<Vec<i32>>>,
}

/// What creating one topic produced.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CreatedTopic {
    pub topic_id: [u8; 16],
    pub num_partitions: i32,
    pub replication_factor: i16,
}

/// What the decisions need from outside the image.
pub struct Context<'a> {
    /// The registered brokers, for placing replicas.
    pub brokers: &'a [UsableBroker],
    /// Uniform in `0..n`: where placement starts (random in the broker).
    pub random_below: &'a mut dyn FnMut(usize) -> usize,
    /// `num.partitions`, for requests that ask for the default (-1).
    pub num_partitions: i32,
    /// `default.replication.factor`, likewise.
    pub default_replication_factor: i16,
    /// A fresh topic id (random in the broker, a sequence in tests).
    pub new_topic_id: &'a mut dyn FnMut() -> [u8; 16],
    /// Whether this many new partitions fit under the open-files limit.
    pub descriptor_budget: &'a dyn Fn(u64) -> Result<(), TopicError>,
}

/// Per topic: its id, or why it was not deleted.
pub type DeletedTopics = Vec<(String, Result<[u8; 16], TopicError>)>;

/// Records to append, and the answer for each part of the request.
#[derive(Debug)]
pub struct Plan<T> {
    pub records: Vec<MetadataRecord>,
    pub results: T,
}

/// Kafka's legal topic names: ASCII letters, digits, '.', '_' and '-'.
pub fn validate_topic_name(name: &str) -> Result<(), TopicError> {
    if name.is_empty() || name == "." || name == ".." {
        return Err((
            error_code::INVALID_TOPIC_EXCEPTION,
            format!("topic name {name:?} is not allowed"),
        ));
    }
    if name.len() > TOPIC_NAME_MAX_LEN {
        return Err((
            error_code::INVALID_TOPIC_EXCEPTION,
            format!(
                "topic name is {} characters; the limit is {TOPIC_NAME_MAX_LEN}",
                name.len()
            ),
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return Err((
            error_code::INVALID_TOPIC_EXCEPTION,
            format!("topic name {name:?} may only contain ASCII letters, digits, '.', '_' and '-'"),
        ));
    }
    Ok(())
}

/// The partition record of a new partition on `replicas` with the in-sync
/// replicas `isr` (a new partition is empty everywhere, so every replica
/// that is up is in sync): the first of them leads.
fn new_partition(
    topic_id: [u8; 16],
    partition: i32,
    replicas: Vec<i32>,
    isr: Vec<i32>,
) -> MetadataRecord {
    MetadataRecord::Partition {
        topic_id,
        partition,
        leader: isr[0],
        isr,
        replicas,
        leader_epoch: 0,
        partition_epoch: 0,
        elr: Vec::new(),
        last_known_elr: Vec::new(),
        adding_replicas: Vec::new(),
        removing_replicas: Vec::new(),
        last_unclean_election_epoch: None,
    }
}

/// [`Context::random_below`] as placement's [`Random`].
struct ContextRandom<'a, 'b>(
    &'a mut dyn FnMut(usize) -> usize,
    std::marker::PhantomData<&'b ()>,
);

impl Random for ContextRandom<'_, '_> {
    fn below(&mut self, n: usize) -> usize {
        (self.0)(n) % n
    }
}

/// Replicas for `count` new partitions of `rf` replicas each.
fn place_replicas(
    ctx: &mut Context<'_>,
    count: usize,
    rf: i16,
) -> Result<Vec<Vec<i32>>, TopicError> {
    let mut random = ContextRandom(&mut *ctx.random_below, std::marker::PhantomData);
    place(ctx.brokers, count, rf, &mut random)
}

/// CreateTopics: each topic is checked on its own (name, existence,
/// partition count, replication factor or manual assignment, open files,
/// settings) and becomes a Topic record, its Partition records and its
/// Config records. A name given more than once in one request is refused
/// with INVALID_REQUEST, once, and none of its entries is created, as
/// Kafka's controller does.
pub fn plan_create_topics(
    image: &MetadataImage,
    ctx: &mut Context<'_>,
    topics: Vec<NewTopic>,
) -> Plan<Vec<(String, Result<CreatedTopic, TopicError>)>> {
    let mut records = Vec::new();
    let mut results = Vec::new();
    let duplicates = duplicated(topics.iter().map(|t| t.name.clone()));
    for name in &duplicates {
        results.push((name.clone(), Err(duplicate_name(name))));
    }
    // Partitions this request adds so far, for the descriptor budget.
    let mut new_partitions = 0u64;
    for t in topics.into_iter().filter(|t| !duplicates.contains(&t.name)) {
        let checked = (|| {
            validate_topic_name(&t.name)?;
            if image.topic(&t.name).is_some() {
                return Err((
                    error_code::TOPIC_ALREADY_EXISTS,
                    format!("topic {:?} already exists", t.name),
                ));
            }
            if !t.assignments.is_empty() {
                let placed = manual_topic_assignment(ctx.brokers, &t)?;
                (ctx.descriptor_budget)(new_partitions + placed.len() as u64)?;
                validate_configs(&t.configs)?;
                let rf = placed[0].0.len() as i16;
                return Ok((placed.len() as i32, rf, placed));
            }
            let partitions = if t.num_partitions == -1 {
                ctx.num_partitions
            } else {
                t.num_partitions
            };
            if !(1..=PARTITIONS_PER_TOPIC_MAX).contains(&partitions) {
                return Err((
                    error_code::INVALID_PARTITIONS,
                    format!("number of partitions must be between 1 and {PARTITIONS_PER_TOPIC_MAX}, got {partitions}"),
                ));
            }
            let rf = if t.replication_factor == -1 {
                ctx.default_replication_factor
            } else {
                t.replication_factor
            };
            (ctx.descriptor_budget)(new_partitions + partitions as u64)?;
            validate_configs(&t.configs)?;
            let placed = place_replicas(ctx, partitions as usize, rf)?;
            Ok((partitions, rf, in_sync_everywhere(placed)))
        })();
        let (partitions, rf, placed) = match checked {
            Ok(ok) => ok,
            Err(e) => {
                results.push((t.name, Err(e)));
                continue;
            }
        };
        new_partitions += partitions as u64;
        let topic_id = (ctx.new_topic_id)();
        records.push(MetadataRecord::Topic {
            name: t.name.clone(),
            topic_id,
        });
        records.extend(
            placed
                .into_iter()
                .enumerate()
                .map(|(p, (replicas, isr))| new_partition(topic_id, p as i32, replicas, isr)),
        );
        for (name, value) in t.configs {
            if value.is_some() {
                records.push(MetadataRecord::Config {
                    resource_type: RESOURCE_TOPIC,
                    resource_name: t.name.clone(),
                    name,
                    value,
                });
            }
        }
        results.push((
            t.name,
            Ok(CreatedTopic {
                topic_id,
                num_partitions: partitions,
                replication_factor: rf,
            }),
        ));
    }
    Plan { records, results }
}

/// The items that appear more than once in `items`, each once: the names,
/// ids or resources an admin request gives twice, which Kafka refuses.
pub fn duplicated<T: Ord + Clone>(items: impl IntoIterator<Item = T>) -> BTreeSet<T> {
    let mut seen = BTreeSet::new();
    items
        .into_iter()
        .filter(|i| !seen.insert(i.clone()))
        .collect()
}

/// Kafka's answer for a topic named more than once in one request.
pub fn duplicate_name(name: &str) -> TopicError {
    (
        error_code::INVALID_REQUEST,
        format!("topic {name:?} is named more than once in this request; name each topic once"),
    )
}

fn validate_configs(configs: &[(String, Option<String>)]) -> Result<(), TopicError> {
    for (name, value) in configs {
        if let Some(v) = value {
            topic_config::validate(name, v).map_err(|m| (error_code::INVALID_CONFIG, m))?;
        }
    }
    Ok(())
}

/// A new partition's replicas and its in-sync replicas.
type PlacedPartition = (Vec<i32>, Vec<i32>);

/// Placed partitions, whose replicas are all up and so all in sync.
fn in_sync_everywhere(placed: Vec<Vec<i32>>) -> Vec<PlacedPartition> {
    placed.into_iter().map(|r| (r.clone(), r)).collect()
}

fn invalid_assignment(message: String) -> TopicError {
    (error_code::INVALID_REPLICA_ASSIGNMENT, message)
}

/// A new topic's manual assignment, checked as Kafka's controller checks
/// it: partition count and replication factor left at -1, each partition
/// given once, partitions numbered 0..n, and each partition's replicas
/// valid (see [`check_manual_replicas`]). Each partition's replicas and
/// in-sync replicas, in partition order.
fn manual_topic_assignment(
    brokers: &[UsableBroker],
    t: &NewTopic,
) -> Result<Vec<PlacedPartition>, TopicError> {
    if t.replication_factor != -1 {
        return Err((
            error_code::INVALID_REQUEST,
            "a manual partition assignment was given, so the replication factor must be -1 (it is the length of each replica list)".into(),
        ));
    }
    if t.num_partitions != -1 {
        return Err((
            error_code::INVALID_REQUEST,
            "a manual partition assignment was given, so the number of partitions must be -1 (it is the number of assignments)".into(),
        ));
    }
    if t.assignments.len() > PARTITIONS_PER_TOPIC_MAX as usize {
        return Err((
            error_code::INVALID_PARTITIONS,
            format!(
                "{} partitions assigned; the limit is {PARTITIONS_PER_TOPIC_MAX}",
                t.assignments.len()
            ),
        ));
    }
    let mut by_partition = BTreeMap::new();
    let mut rf = None;
    for (partition, replicas) in &t.assignments {
        if by_partition.contains_key(partition) {
            return Err(invalid_assignment(format!(
                "partition {partition} is assigned more than once"
            )));
        }
        let isr = check_manual_replicas(brokers, *partition, replicas, rf)?;
        rf = Some(replicas.len());
        by_partition.insert(*partition, (replicas.clone(), isr));
    }
    // Keys are distinct, so 0..n all present means the last key is n - 1.
    let n = by_partition.len() as i32;
    if by_partition.keys().next() != Some(&0) || by_partition.keys().last() != Some(&(n - 1)) {
        return Err(invalid_assignment(
            "the assigned partitions must be numbered 0, 1, 2, ... without gaps".into(),
        ));
    }
    Ok(by_partition.into_values().collect())
}

/// One partition's manual replicas, checked as Kafka checks them: not
/// empty, every broker registered and named once, `rf` replicas when the
/// other partitions set it, and at least one of them up (not fenced or in
/// controlled shutdown). The in-sync replicas: those that are up, in
/// assignment order, so the first of them leads.
fn check_manual_replicas(
    brokers: &[UsableBroker],
    partition: i32,
    replicas: &[i32],
    rf: Option<usize>,
) -> Result<Vec<i32>, TopicError> {
    if replicas.is_empty() {
        return Err(invalid_assignment(format!(
            "partition {partition} is assigned an empty replica list"
        )));
    }
    let mut seen = BTreeSet::new();
    for id in replicas {
        if !brokers.iter().any(|b| b.id == *id) {
            return Err(invalid_assignment(format!(
                "partition {partition} is assigned to broker {id}, but no such broker is registered"
            )));
        }
        if !seen.insert(*id) {
            return Err(invalid_assignment(format!(
                "partition {partition} names broker {id} more than once"
            )));
        }
    }
    if let Some(rf) = rf.filter(|rf| *rf != replicas.len()) {
        return Err(invalid_assignment(format!(
            "partition {partition} is assigned {} replica(s), but the other partitions have {rf}; give every partition the same number of replicas",
            replicas.len()
        )));
    }
    let isr: Vec<i32> = replicas
        .iter()
        .copied()
        .filter(|id| brokers.iter().any(|b| b.id == *id && !b.fenced))
        .collect();
    if isr.is_empty() {
        return Err(invalid_assignment(format!(
            "every broker assigned to partition {partition} ({replicas:?}) is fenced or in controlled shutdown"
        )));
    }
    Ok(isr)
}

/// DeleteTopics: a RemoveTopic record per existing topic. The offsets
/// topic is refused: the group coordinators hold state loaded from it, and
/// Kafka's tools refuse to delete internal topics too.
///
/// A topic named more than once is refused with INVALID_REQUEST, once.
pub fn plan_delete_topics(image: &MetadataImage, names: Vec<String>) -> Plan<DeletedTopics> {
    let mut records = Vec::new();
    let duplicates = duplicated(names.iter().cloned());
    let mut results: DeletedTopics = duplicates
        .iter()
        .map(|n| (n.clone(), Err(duplicate_name(n))))
        .collect();
    for name in names.into_iter().filter(|n| !duplicates.contains(n)) {
        match image.topic(&name) {
            Some(_) if name == OFFSETS_TOPIC => results.push((
                name.clone(),
                Err((
                    error_code::INVALID_REQUEST,
                    format!("{name} is internal and cannot be deleted; delete consumer groups with DeleteGroups instead"),
                )),
            )),
            Some(_) if is_internal_topic(&name) => results.push((
                name.clone(),
                Err((
                    error_code::INVALID_REQUEST,
                    format!("{name} is internal and cannot be deleted"),
                )),
            )),
            Some(t) => {
                records.push(MetadataRecord::RemoveTopic { topic_id: t.id });
                results.push((name, Ok(t.id)));
            }
            None => results.push((
                name.clone(),
                Err((
                    error_code::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("topic {name:?} does not exist"),
                )),
            )),
        }
    }
    Plan { records, results }
}

/// CreatePartitions: grows each topic to its new count with Partition
/// records for the added partitions, placed or as manually assigned. A
/// topic named more than once is refused with INVALID_REQUEST, once.
pub fn plan_create_partitions(
    image: &MetadataImage,
    ctx: &mut Context<'_>,
    requests: Vec<NewPartitions>,
) -> Plan<Vec<(String, Result<(), TopicError>)>> {
    let mut records = Vec::new();
    let mut results = Vec::new();
    let duplicates = duplicated(requests.iter().map(|r| r.topic.clone()));
    for name in &duplicates {
        results.push((name.clone(), Err(duplicate_name(name))));
    }
    let mut added = 0u64;
    for req in requests
        .into_iter()
        .filter(|r| !duplicates.contains(&r.topic))
    {
        let name = req.topic;
        let count = req.count;
        let Some(t) = image.topic(&name) else {
            results.push((
                name.clone(),
                Err((
                    error_code::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("topic {name:?} does not exist"),
                )),
            ));
            continue;
        };
        let current = t.partitions.len() as i32;
        if count <= current || count > PARTITIONS_PER_TOPIC_MAX {
            results.push((
                name,
                Err((
                    error_code::INVALID_PARTITIONS,
                    format!("topic has {current} partitions; the new count must be larger (and at most {PARTITIONS_PER_TOPIC_MAX}), got {count}"),
                )),
            ));
            continue;
        }
        if let Err(e) = (ctx.descriptor_budget)(added + (count - current) as u64) {
            results.push((name, Err(e)));
            continue;
        }
        // New partitions get as many replicas as the topic's first one.
        let rf = t.partitions.values().next().map_or(1, |p| p.replicas.len());
        let placed = match &req.assignments {
            Some(assignments) => {
                manual_partitions_assignment(ctx.brokers, assignments, current, count, rf)
            }
            None => {
                place_replicas(ctx, (count - current) as usize, rf as i16).map(in_sync_everywhere)
            }
        };
        let placed = match placed {
            Ok(placed) => placed,
            Err(e) => {
                results.push((name, Err(e)));
                continue;
            }
        };
        added += (count - current) as u64;
        records.extend(
            placed
                .into_iter()
                .zip(current..count)
                .map(|((replicas, isr), p)| new_partition(t.id, p, replicas, isr)),
        );
        results.push((name, Ok(())));
    }
    Plan { records, results }
}

/// The manual assignment of partitions `current..count` of a topic with
/// `rf` replicas per partition: one replica list per added partition.
fn manual_partitions_assignment(
    brokers: &[UsableBroker],
    assignments: &[Vec<i32>],
    current: i32,
    count: i32,
    rf: usize,
) -> Result<Vec<PlacedPartition>, TopicError> {
    let additional = (count - current) as usize;
    if assignments.len() != additional {
        return Err(invalid_assignment(format!(
            "{additional} partition(s) are added, but {} assignment(s) were given; give one replica list per added partition",
            assignments.len()
        )));
    }
    assignments
        .iter()
        .zip(current..count)
        .map(|(replicas, p)| {
            check_manual_replicas(brokers, p, replicas, Some(rf)).map(|isr| (replicas.clone(), isr))
        })
        .collect()
}

/// The Config records that bring `current` settings to `changes`: with
/// `incremental` the settings not named stay, otherwise they are removed
/// (AlterConfigs semantics).
pub(crate) fn config_records<'a>(
    current: impl Iterator<Item = &'a String>,
    changes: Vec<(String, Option<String>)>,
    incremental: bool,
    resource_type: i8,
    resource_name: &str,
) -> Vec<MetadataRecord> {
    let mut target: BTreeMap<String, Option<String>> = BTreeMap::new();
    if !incremental {
        for name in current {
            target.insert(name.clone(), None);
        }
    }
    for (name, value) in changes {
        target.insert(name, value);
    }
    target
        .into_iter()
        .map(|(name, value)| MetadataRecord::Config {
            resource_type,
            resource_name: resource_name.to_string(),
            name,
            value,
        })
        .collect()
}

/// AlterConfigs / IncrementalAlterConfigs on a topic: sets (`Some`) or
/// removes (`None`) its settings, each validated first.
pub fn plan_alter_topic_configs(
    image: &MetadataImage,
    topic: &str,
    changes: Vec<(String, Option<String>)>,
    incremental: bool,
) -> Result<Vec<MetadataRecord>, TopicError> {
    let Some(t) = image.topic(topic) else {
        return Err((
            error_code::UNKNOWN_TOPIC_OR_PARTITION,
            format!("topic {topic:?} does not exist"),
        ));
    };
    let changes = dynamic_broker_config::without_log_dir_throttle_removals(changes)
        .map_err(|m| (error_code::INVALID_CONFIG, m))?;
    for (name, value) in &changes {
        let check = match value {
            Some(v) => topic_config::validate(name, v),
            // Removing a setting only needs its name to be known.
            None => topic_config::validate(name, "0").or_else(|e| {
                if e.contains("unknown") {
                    Err(e)
                } else {
                    Ok(())
                }
            }),
        };
        check.map_err(|m| (error_code::INVALID_CONFIG, m))?;
    }
    Ok(config_records(
        t.configs.keys(),
        changes,
        incremental,
        RESOURCE_TOPIC,
        topic,
    ))
}

/// The same on the broker resource: dynamic broker defaults (`log.*` and
/// their broker names), which apply to every topic without an override,
/// and the replication throttle rates, which are `broker`'s own when the
/// request names a broker and the cluster's otherwise.
pub fn plan_alter_broker_configs(
    image: &MetadataImage,
    broker: Option<i32>,
    changes: Vec<(String, Option<String>)>,
    incremental: bool,
) -> Result<Vec<MetadataRecord>, TopicError> {
    let changes = dynamic_broker_config::without_log_dir_throttle_removals(changes)
        .map_err(|m| (error_code::INVALID_CONFIG, m))?;
    for (name, _) in &changes {
        dynamic_broker_config::check_tls_setting(broker, name)
            .map_err(|m| (error_code::INVALID_CONFIG, m))?;
    }
    let (rates, changes): (Vec<_>, Vec<_>) = changes
        .into_iter()
        .partition(|(name, _)| dynamic_broker_config::is_per_broker(name));
    for (name, value) in &rates {
        if let (Some(v), true) = (value, dynamic_broker_config::is_throttle_rate(name)) {
            throttle::parse_rate(v)
                .map_err(|m| (error_code::INVALID_CONFIG, format!("{name}: {m}")))?;
        }
    }
    for (name, value) in &changes {
        let Some(topic_name) = dynamic_broker_config::topic_name(name) else {
            return Err((
                error_code::INVALID_CONFIG,
                format!(
                    "broker setting {name:?} cannot change at runtime; set it in the broker's config file and restart. Settings that can: {}",
                    dynamic_broker_config::dynamic_names()
                ),
            ));
        };
        if let Some(v) = value {
            topic_config::validate(topic_name, v)
                .map_err(|m| (error_code::INVALID_CONFIG, format!("{name}: {m}")))?;
        }
    }
    let mut records = config_records(
        image
            .broker_configs
            .keys()
            .filter(|n| !dynamic_broker_config::is_throttle_rate(n)),
        changes,
        incremental,
        RESOURCE_BROKER,
        "",
    );
    let no_rates = BTreeMap::new();
    let (current_rates, rates_resource) = match broker {
        Some(id) => (
            image.per_broker_configs.get(&id).unwrap_or(&no_rates),
            id.to_string(),
        ),
        None => (&image.broker_configs, String::new()),
    };
    records.extend(config_records(
        current_rates
            .keys()
            .filter(|n| dynamic_broker_config::is_per_broker(n)),
        rates,
        incremental,
        RESOURCE_BROKER,
        &rates_resource,
    ));
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_limit(_: u64) -> Result<(), TopicError> {
        Ok(())
    }

    /// Applies a plan's records to `image`, as the store would.
    fn applied(mut image: MetadataImage, records: &[MetadataRecord]) -> MetadataImage {
        for r in records {
            let next = image.offset + 1;
            image.apply(next, r);
        }
        image
    }

    fn topic(name: &str, partitions: i32) -> NewTopic {
        NewTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: -1,
            configs: vec![],
            assignments: vec![],
        }
    }

    fn grow(name: &str, count: i32) -> NewPartitions {
        NewPartitions {
            topic: name.into(),
            count,
            assignments: None,
        }
    }

    /// Brokers 1-3 up, 4 fenced.
    const FOUR_BROKERS: [UsableBroker; 4] = [
        UsableBroker {
            id: 1,
            rack: None,
            fenced: false,
        },
        UsableBroker {
            id: 2,
            rack: None,
            fenced: false,
        },
        UsableBroker {
            id: 3,
            rack: None,
            fenced: false,
        },
        UsableBroker {
            id: 4,
            rack: None,
            fenced: true,
        },
    ];

    fn with_brokers<T>(brokers: &[UsableBroker], f: impl FnOnce(&mut Context<'_>) -> T) -> T {
        let mut next = 0u8;
        let mut ids = move || {
            next += 1;
            [next; 16]
        };
        let mut below = |_n: usize| 0;
        let mut ctx = Context {
            brokers,
            random_below: &mut below,
            num_partitions: 3,
            default_replication_factor: 1,
            new_topic_id: &mut ids,
            descriptor_budget: &no_limit,
        };
        f(&mut ctx)
    }

    fn assigned(name: &str, assignments: &[(i32, &[i32])]) -> NewTopic {
        NewTopic {
            num_partitions: -1,
            assignments: assignments.iter().map(|(p, r)| (*p, r.to_vec())).collect(),
            ..topic(name, -1)
        }
    }

    fn error_of<T: std::fmt::Debug>(r: &Result<T, TopicError>) -> i16 {
        r.as_ref().unwrap_err().0
    }

    #[test]
    fn a_manual_assignment_places_each_partition_where_it_says() {
        let plan = with_brokers(&FOUR_BROKERS, |ctx| {
            plan_create_topics(
                &MetadataImage::empty(),
                ctx,
                vec![assigned(
                    "manual",
                    &[(1, &[3, 1]), (0, &[2, 3]), (2, &[4, 1])],
                )],
            )
        });
        let created = plan.results[0].1.clone().unwrap();
        assert_eq!((created.num_partitions, created.replication_factor), (3, 2));
        let image = applied(MetadataImage::empty(), &plan.records);
        let t = image.topic("manual").unwrap();
        let view = |p: i32| {
            let p = &t.partitions[&p];
            (p.replicas.clone(), p.leader, p.isr.clone())
        };
        assert_eq!(view(0), (vec![2, 3], 2, vec![2, 3]));
        assert_eq!(view(1), (vec![3, 1], 3, vec![3, 1]));
        // Fenced broker 4 is a replica, but not in sync and not the leader.
        assert_eq!(view(2), (vec![4, 1], 1, vec![1]));
    }

    #[test]
    fn manual_assignments_are_checked_as_kafka_checks_them() {
        let cases: Vec<(NewTopic, i16)> = vec![
            (
                NewTopic {
                    replication_factor: 2,
                    ..assigned("rf-given", &[(0, &[1, 2])])
                },
                error_code::INVALID_REQUEST,
            ),
            (
                NewTopic {
                    num_partitions: 1,
                    ..assigned("count-given", &[(0, &[1, 2])])
                },
                error_code::INVALID_REQUEST,
            ),
            (
                assigned("twice", &[(0, &[1]), (0, &[2])]),
                error_code::INVALID_REPLICA_ASSIGNMENT,
            ),
            (
                assigned("gap", &[(0, &[1]), (2, &[2])]),
                error_code::INVALID_REPLICA_ASSIGNMENT,
            ),
            (
                assigned("no-zero", &[(1, &[1])]),
                error_code::INVALID_REPLICA_ASSIGNMENT,
            ),
            (
                assigned("empty", &[(0, &[])]),
                error_code::INVALID_REPLICA_ASSIGNMENT,
            ),
            (
                assigned("unknown", &[(0, &[1, 9])]),
                error_code::INVALID_REPLICA_ASSIGNMENT,
            ),
            (
                assigned("repeated", &[(0, &[2, 2])]),
                error_code::INVALID_REPLICA_ASSIGNMENT,
            ),
            (
                assigned("uneven", &[(0, &[1, 2]), (1, &[3])]),
                error_code::INVALID_REPLICA_ASSIGNMENT,
            ),
            (
                assigned("all-fenced", &[(0, &[4])]),
                error_code::INVALID_REPLICA_ASSIGNMENT,
            ),
        ];
        for (t, code) in cases {
            let name = t.name.clone();
            let plan = with_brokers(&FOUR_BROKERS, |ctx| {
                plan_create_topics(&MetadataImage::empty(), ctx, vec![t])
            });
            assert_eq!(
                error_of(&plan.results[0].1),
                code,
                "{name}: {:?}",
                plan.results
            );
            assert!(plan.records.is_empty(), "{name}");
        }
    }

    #[test]
    fn a_topic_named_twice_is_refused_once_and_the_others_are_created() {
        let plan = with_ctx(|ctx| {
            plan_create_topics(
                &MetadataImage::empty(),
                ctx,
                vec![topic("dup", 1), topic("one", 1), topic("dup", 2)],
            )
        });
        assert_eq!(plan.results.len(), 2, "{:?}", plan.results);
        assert_eq!(plan.results[0].0, "dup");
        assert_eq!(error_of(&plan.results[0].1), error_code::INVALID_REQUEST);
        assert_eq!(plan.results[1].0, "one");
        let image = applied(MetadataImage::empty(), &plan.records);
        assert!(image.topic("dup").is_none(), "neither entry is created");
        assert!(image.topic("one").is_some());
        let plan = plan_delete_topics(&image, vec!["one".into(), "one".into()]);
        assert_eq!(plan.results.len(), 1);
        assert_eq!(error_of(&plan.results[0].1), error_code::INVALID_REQUEST);
        assert!(plan.records.is_empty());
        let plan = with_ctx(|ctx| {
            plan_create_partitions(&image, ctx, vec![grow("one", 2), grow("one", 3)])
        });
        assert_eq!(plan.results.len(), 1);
        assert_eq!(error_of(&plan.results[0].1), error_code::INVALID_REQUEST);
        assert!(plan.records.is_empty());
    }

    #[test]
    fn created_partitions_follow_a_manual_assignment_of_the_same_replication_factor() {
        let image = with_brokers(&FOUR_BROKERS, |ctx| {
            let plan = plan_create_topics(
                &MetadataImage::empty(),
                ctx,
                vec![assigned("a", &[(0, &[1, 2])])],
            );
            applied(MetadataImage::empty(), &plan.records)
        });
        let with = |count: i32, assignments: &[&[i32]]| NewPartitions {
            topic: "a".into(),
            count,
            assignments: Some(assignments.iter().map(|r| r.to_vec()).collect()),
        };
        for (ask, why) in [
            (with(3, &[&[2, 3]]), "one list for two new partitions"),
            (with(2, &[&[3]]), "another replication factor"),
            (with(2, &[&[3, 9]]), "an unknown broker"),
            (with(2, &[&[3, 3]]), "a broker named twice"),
        ] {
            let plan = with_brokers(&FOUR_BROKERS, |ctx| {
                plan_create_partitions(&image, ctx, vec![ask])
            });
            assert_eq!(
                error_of(&plan.results[0].1),
                error_code::INVALID_REPLICA_ASSIGNMENT,
                "{why}"
            );
        }
        let plan = with_brokers(&FOUR_BROKERS, |ctx| {
            plan_create_partitions(&image, ctx, vec![with(3, &[&[3, 1], &[4, 2]])])
        });
        assert!(plan.results[0].1.is_ok(), "{:?}", plan.results);
        let image = applied(image, &plan.records);
        let t = image.topic("a").unwrap();
        assert_eq!(t.partitions[&1].replicas, vec![3, 1]);
        assert_eq!(
            (t.partitions[&2].leader, t.partitions[&2].isr.clone()),
            (2, vec![2])
        );
    }

    const BROKER_7: [UsableBroker; 1] = [UsableBroker {
        id: 7,
        rack: None,
        fenced: false,
    }];

    fn with_ctx<T>(f: impl FnOnce(&mut Context<'_>) -> T) -> T {
        with_brokers(&BROKER_7, f)
    }

    #[test]
    fn create_topics_makes_topic_partition_and_config_records() {
        let image = MetadataImage::empty();
        let mut t = topic("a", -1);
        t.configs = vec![
            ("retention.ms".into(), Some("1000".into())),
            ("cleanup.policy".into(), None),
        ];
        let plan = with_ctx(|ctx| plan_create_topics(&image, ctx, vec![t]));
        let created = plan.results[0].1.clone().unwrap();
        assert_eq!(created.num_partitions, 3, "-1 takes num.partitions");
        assert_eq!(created.topic_id, [1; 16], "the id comes from the context");
        // Topic, three partitions, one config (the None value is skipped).
        assert_eq!(plan.records.len(), 5);
        let image = applied(image, &plan.records);
        let t = image.topic("a").unwrap();
        assert_eq!(t.partitions.len(), 3);
        let p = &t.partitions[&0];
        assert_eq!(
            (p.leader, p.replicas.clone(), p.isr.clone()),
            (7, vec![7], vec![7])
        );
        assert_eq!(
            t.configs.get("retention.ms").map(String::as_str),
            Some("1000")
        );
    }

    #[test]
    fn create_topics_refuses_each_bad_topic_on_its_own() {
        let image = with_ctx(|ctx| {
            let plan = plan_create_topics(&MetadataImage::empty(), ctx, vec![topic("old", 1)]);
            applied(MetadataImage::empty(), &plan.records)
        });
        let mut bad_rf = topic("rf", 1);
        bad_rf.replication_factor = 3;
        let mut bad_config = topic("cfg", 1);
        bad_config.configs = vec![("retention.ms".into(), Some("soon".into()))];
        let plan = with_ctx(|ctx| {
            plan_create_topics(
                &image,
                ctx,
                vec![
                    topic("old", 1),
                    topic("dup", 1),
                    topic("dup", 1),
                    topic("bad/name", 1),
                    topic("zero", 0),
                    bad_rf,
                    bad_config,
                    topic("fine", 2),
                ],
            )
        });
        let codes: Vec<Option<i16>> = plan
            .results
            .iter()
            .map(|(_, r)| r.as_ref().err().map(|e| e.0))
            .collect();
        assert_eq!(
            codes,
            vec![
                // "dup", named twice: answered once, first.
                Some(error_code::INVALID_REQUEST),
                Some(error_code::TOPIC_ALREADY_EXISTS),
                Some(error_code::INVALID_TOPIC_EXCEPTION),
                Some(error_code::INVALID_PARTITIONS),
                Some(error_code::INVALID_REPLICATION_FACTOR),
                Some(error_code::INVALID_CONFIG),
                None,
            ]
        );
        // Records only for "fine" (2 partitions).
        let image = applied(image, &plan.records);
        assert!(image.topic("dup").is_none());
        assert_eq!(image.topic("fine").unwrap().partitions.len(), 2);
    }

    #[test]
    fn the_descriptor_budget_counts_the_whole_request() {
        let budget = |n: u64| {
            if n > 4 {
                Err((error_code::POLICY_VIOLATION, format!("{n} is too many")))
            } else {
                Ok(())
            }
        };
        let mut ids = || [9; 16];
        let mut below = |_n: usize| 0;
        let brokers = [UsableBroker {
            id: 1,
            rack: None,
            fenced: false,
        }];
        let mut ctx = Context {
            brokers: &brokers,
            random_below: &mut below,
            num_partitions: 1,
            default_replication_factor: 1,
            new_topic_id: &mut ids,
            descriptor_budget: &budget,
        };
        let plan = plan_create_topics(
            &MetadataImage::empty(),
            &mut ctx,
            vec![topic("a", 3), topic("b", 3), topic("c", 1)],
        );
        assert!(plan.results[0].1.is_ok());
        assert_eq!(
            plan.results[1].1.as_ref().unwrap_err().0,
            error_code::POLICY_VIOLATION
        );
        assert!(plan.results[2].1.is_ok(), "3 + 1 still fits");
    }

    #[test]
    fn delete_topics_refuses_unknown_and_internal_topics() {
        let image = with_ctx(|ctx| {
            let plan = plan_create_topics(
                &MetadataImage::empty(),
                ctx,
                vec![topic("a", 1), topic(OFFSETS_TOPIC, 1)],
            );
            applied(MetadataImage::empty(), &plan.records)
        });
        let plan = plan_delete_topics(
            &image,
            vec!["a".into(), "nope".into(), OFFSETS_TOPIC.into()],
        );
        assert_eq!(plan.records.len(), 1);
        assert!(plan.results[0].1.is_ok());
        assert_eq!(
            plan.results[1].1.as_ref().unwrap_err().0,
            error_code::UNKNOWN_TOPIC_OR_PARTITION
        );
        assert_eq!(
            plan.results[2].1.as_ref().unwrap_err().0,
            error_code::INVALID_REQUEST
        );
        let image = applied(image, &plan.records);
        assert!(image.topic("a").is_none());
    }

    #[test]
    fn create_partitions_only_grows() {
        let image = with_ctx(|ctx| {
            let plan = plan_create_topics(
                &MetadataImage::empty(),
                ctx,
                vec![topic("a", 2), topic("a2", 2)],
            );
            applied(MetadataImage::empty(), &plan.records)
        });
        let plan = with_ctx(|ctx| {
            plan_create_partitions(&image, ctx, vec![grow("a", 5), grow("a2", 1), grow("b", 3)])
        });
        assert!(plan.results[0].1.is_ok());
        assert_eq!(
            plan.results[1].1.as_ref().unwrap_err().0,
            error_code::INVALID_PARTITIONS
        );
        assert_eq!(
            plan.results[2].1.as_ref().unwrap_err().0,
            error_code::UNKNOWN_TOPIC_OR_PARTITION
        );
        let image = applied(image, &plan.records);
        assert_eq!(image.topic("a").unwrap().partitions.len(), 5);
    }

    #[test]
    fn alter_configs_incremental_keeps_the_rest_and_full_resets_it() {
        let mut t = topic("a", 1);
        t.configs = vec![
            ("retention.ms".into(), Some("1000".into())),
            ("segment.bytes".into(), Some("1048576".into())),
        ];
        let image = with_ctx(|ctx| {
            let plan = plan_create_topics(&MetadataImage::empty(), ctx, vec![t]);
            applied(MetadataImage::empty(), &plan.records)
        });
        let change = vec![("retention.ms".to_string(), Some("2000".to_string()))];
        let inc = plan_alter_topic_configs(&image, "a", change.clone(), true).unwrap();
        let after = applied(image.clone(), &inc);
        let c = &after.topic("a").unwrap().configs;
        assert_eq!(c.get("retention.ms").map(String::as_str), Some("2000"));
        assert!(c.contains_key("segment.bytes"));
        let full = plan_alter_topic_configs(&image, "a", change, false).unwrap();
        let after = applied(image.clone(), &full);
        assert!(!after
            .topic("a")
            .unwrap()
            .configs
            .contains_key("segment.bytes"));
        assert_eq!(
            plan_alter_topic_configs(
                &image,
                "a",
                vec![("retention.ms".into(), Some("x".into()))],
                true
            )
            .unwrap_err()
            .0,
            error_code::INVALID_CONFIG
        );
        assert_eq!(
            plan_alter_topic_configs(&image, "b", vec![], true)
                .unwrap_err()
                .0,
            error_code::UNKNOWN_TOPIC_OR_PARTITION
        );
    }

    #[test]
    fn broker_configs_accept_only_dynamic_settings() {
        let image = MetadataImage::empty();
        let ok = plan_alter_broker_configs(
            &image,
            None,
            vec![("log.retention.ms".into(), Some("5000".into()))],
            true,
        )
        .unwrap();
        let after = applied(image.clone(), &ok);
        assert_eq!(
            after
                .broker_configs
                .get("log.retention.ms")
                .map(String::as_str),
            Some("5000")
        );
        let err = plan_alter_broker_configs(
            &image,
            None,
            vec![("listen".into(), Some("x".into()))],
            true,
        )
        .unwrap_err();
        assert_eq!(err.0, error_code::INVALID_CONFIG);
        assert!(err.1.contains("restart"), "{}", err.1);
    }

    #[test]
    fn throttle_rates_belong_to_the_named_broker_or_the_cluster() {
        let image = MetadataImage::empty();
        let rate = |v: &str| vec![(throttle::LEADER_RATE.to_string(), Some(v.to_string()))];
        let on_2 = plan_alter_broker_configs(&image, Some(2), rate("1000"), true).unwrap();
        let image = applied(image, &on_2);
        let cluster = plan_alter_broker_configs(&image, None, rate("5000"), true).unwrap();
        let image = applied(image, &cluster);
        assert_eq!(image.broker_setting(2, throttle::LEADER_RATE), Some("1000"));
        assert_eq!(image.broker_setting(3, throttle::LEADER_RATE), Some("5000"));
        // AlterConfigs (not incremental) on broker 2 with only a log
        // setting resets broker 2's rate, not the cluster's.
        let reset = plan_alter_broker_configs(
            &image,
            Some(2),
            vec![("log.retention.ms".into(), Some("1".into()))],
            false,
        )
        .unwrap();
        let image = applied(image, &reset);
        assert_eq!(image.broker_setting(2, throttle::LEADER_RATE), Some("5000"));
        assert!(image.per_broker_configs.is_empty());
        // The image's records carry per-broker settings (snapshots, digest).
        let on_2 = plan_alter_broker_configs(&image, Some(2), rate("7"), true).unwrap();
        let image = applied(image, &on_2);
        let mut rebuilt = MetadataImage::empty();
        for (i, r) in image.to_records().iter().enumerate() {
            rebuilt.apply(i as i64, r);
        }
        assert_eq!(rebuilt.per_broker_configs, image.per_broker_configs);
        assert_eq!(rebuilt.digest(), image.digest());
        for bad in ["0", "-1", "fast"] {
            let err = plan_alter_broker_configs(&image, Some(2), rate(bad), true).unwrap_err();
            assert_eq!(err.0, error_code::INVALID_CONFIG, "{bad}");
        }
    }

    #[test]
    fn topic_names_follow_kafka() {
        assert!(validate_topic_name("a.b_c-D9").is_ok());
        for bad in ["", ".", "..", "a b", "ä"] {
            assert!(validate_topic_name(bad).is_err(), "{bad:?}");
        }
        assert!(validate_topic_name(&"x".repeat(TOPIC_NAME_MAX_LEN)).is_ok());
        assert!(validate_topic_name(&"x".repeat(TOPIC_NAME_MAX_LEN + 1)).is_err());
    }
}
