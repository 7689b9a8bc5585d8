//! `pinlog topic create|list|describe|delete|alter`.
//!
//! Metadata gives the partitions and replicas, ListOffsets (sent to each
//! partition's leader) the start and end offsets, DescribeConfigs the
//! settings; CreateTopics, DeleteTopics, CreatePartitions and
//! IncrementalAlterConfigs make the changes.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use serde_json::{json, Value};

use crate::cli::client::{Client, Cluster};
use crate::cli::error::{error_name, report_failures, CliError, CliResult};
use crate::cli::table::{error_json, join_ids, json_text, or_dash, topic_id_text, Align, Table};
use crate::cli::{emit, timeout_ms, ConnectArgs, TopicCommand};
use crate::protocol::error_code;
use crate::protocol::messages::create_partitions::{
    CreatePartitionsRequest, CreatePartitionsTopic,
};
use crate::protocol::messages::create_topics::{
    CreatableTopic, CreatableTopicConfig, CreateTopicsRequest,
};
use crate::protocol::messages::delete_topics::{DeleteTopicState, DeleteTopicsRequest};
use crate::protocol::messages::describe_configs::{
    DescribeConfigsRequest, DescribeConfigsResource,
};
use crate::protocol::messages::incremental_alter_configs::{
    AlterConfigsResource, AlterableConfig, IncrementalAlterConfigsRequest, OP_DELETE, OP_SET,
};
use crate::protocol::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic, EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
};
use crate::protocol::messages::metadata::MetadataResponse;

/// Kafka's config resource type of a topic.
pub const RESOURCE_TOPIC: i8 = 2;
/// Kafka's `ConfigSource.DEFAULT_CONFIG`: a setting nobody set. Every other
/// source (the topic's own value, a broker setting) is shown by describe.
pub const CONFIG_SOURCE_DEFAULT: i8 = 5;
/// `replica_id` of a consumer (not a follower) in ListOffsets.
const CONSUMER_REPLICA_ID: i32 = -1;
/// The first DeleteTopics version that names topics as (name, id) pairs.
const DELETE_TOPICS_STATES_FROM: i16 = 6;

pub fn run(conn: &ConnectArgs, command: TopicCommand, out: &mut dyn Write) -> CliResult<()> {
    // A bad command line is reported before any connection is tried.
    if let TopicCommand::Alter {
        set, delete_config, ..
    } = &command
    {
        Alteration {
            set: set.clone(),
            delete: delete_config.clone(),
            ..Default::default()
        }
        .validate()?;
    }
    let mut cluster = conn.cluster()?;
    match command {
        TopicCommand::Create {
            name,
            partitions,
            replication_factor,
            configs,
            if_not_exists,
        } => create(
            cluster.any(),
            conn,
            out,
            NewTopic {
                name,
                partitions,
                replication_factor,
                configs,
            },
            if_not_exists,
        ),
        TopicCommand::List { include_internal } => {
            let topics = summaries(&cluster.metadata(None)?, include_internal);
            emit(out, &render_list(&topics, conn.json))
        }
        TopicCommand::Describe {
            names,
            include_internal,
        } => describe(&mut cluster, conn, out, names, include_internal),
        TopicCommand::Delete { names, if_exists } => {
            delete(cluster.any(), conn, out, names, if_exists)
        }
        TopicCommand::Alter {
            name,
            partitions,
            set,
            delete_config,
        } => alter(
            cluster.any(),
            conn,
            out,
            Alteration {
                name,
                partitions,
                set,
                delete: delete_config,
            },
        ),
    }
}

fn topic_label(name: &str) -> String {
    format!("topic {name:?}")
}

// ---------------------------------------------------------------- create

#[derive(Debug, Clone)]
pub struct NewTopic {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i16,
    pub configs: Vec<(String, String)>,
}

fn create(
    client: &mut Client,
    conn: &ConnectArgs,
    out: &mut dyn Write,
    topic: NewTopic,
    if_not_exists: bool,
) -> CliResult<()> {
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: topic.name.clone(),
            num_partitions: topic.partitions,
            replication_factor: topic.replication_factor,
            assignments: Vec::new(),
            configs: topic
                .configs
                .iter()
                .map(|(k, v)| CreatableTopicConfig {
                    name: k.clone(),
                    value: Some(v.clone()),
                })
                .collect(),
        }],
        timeout_ms: timeout_ms(conn.timeout),
        validate_only: false,
    };
    let resp = client.send(&req)?;
    let result = resp
        .topics
        .into_iter()
        .find(|t| t.name == topic.name)
        .ok_or_else(|| CliError::Protocol {
            addr: client.addr().to_string(),
            detail: format!("CreateTopics response does not mention {:?}", topic.name),
        })?;
    let created = match result.error_code {
        error_code::NONE => true,
        error_code::TOPIC_ALREADY_EXISTS if if_not_exists => false,
        code => {
            return Err(CliError::broker(
                topic_label(&topic.name),
                code,
                result.error_message,
            ))
        }
    };
    let topic_id = (result.topic_id != [0; 16]).then_some(result.topic_id);
    emit(out, &render_create(&topic, topic_id, created, conn.json))
}

pub fn render_create(
    topic: &NewTopic,
    topic_id: Option<[u8; 16]>,
    created: bool,
    json: bool,
) -> String {
    if json {
        return json_text(&json!({
            "name": topic.name,
            "created": created,
            "topic_id": topic_id.as_ref().map(topic_id_text),
            "partitions": topic.partitions,
            "replication_factor": topic.replication_factor,
            "configs": config_object(&topic.configs),
        }));
    }
    if !created {
        return format!("Topic {:?} already exists; nothing changed.\n", topic.name);
    }
    let mut s = format!(
        "Created topic {:?}: {} partition{}, replication factor {}",
        topic.name,
        topic.partitions,
        plural(topic.partitions as i64),
        topic.replication_factor
    );
    if !topic.configs.is_empty() {
        s.push_str(", ");
        s.push_str(&config_list(&topic.configs));
    }
    s.push_str(".\n");
    s
}

fn plural(n: i64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn config_list(configs: &[(String, String)]) -> String {
    configs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn config_object(configs: &[(String, String)]) -> Value {
    Value::Object(
        configs
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

// ------------------------------------------------------------------ list

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSummary {
    pub name: String,
    pub partitions: usize,
    pub replication_factor: usize,
    pub internal: bool,
}

/// Topics of a Metadata response, sorted by name; internal ones only when
/// asked for.
pub fn summaries(resp: &MetadataResponse, include_internal: bool) -> Vec<TopicSummary> {
    let mut topics: Vec<TopicSummary> = resp
        .topics
        .iter()
        .filter(|t| t.error_code == error_code::NONE && (include_internal || !t.is_internal))
        .filter_map(|t| {
            Some(TopicSummary {
                name: t.name.clone()?,
                partitions: t.partitions.len(),
                replication_factor: t
                    .partitions
                    .iter()
                    .map(|p| p.replica_nodes.len())
                    .max()
                    .unwrap_or(0),
                internal: t.is_internal,
            })
        })
        .collect();
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    topics
}

pub fn render_list(topics: &[TopicSummary], json: bool) -> String {
    if json {
        let list: Vec<Value> = topics
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "partitions": t.partitions,
                    "replication_factor": t.replication_factor,
                    "internal": t.internal,
                })
            })
            .collect();
        return json_text(&json!({ "topics": list }));
    }
    if topics.is_empty() {
        return "No topics. Create one with `pinlog topic create NAME`.\n".into();
    }
    let mut table = Table::new(&[
        ("TOPIC", Align::Left),
        ("PARTITIONS", Align::Right),
        ("REPLICATION", Align::Right),
        ("INTERNAL", Align::Left),
    ]);
    for t in topics {
        table.row(vec![
            t.name.clone(),
            t.partitions.to_string(),
            t.replication_factor.to_string(),
            if t.internal { "yes" } else { "no" }.into(),
        ]);
    }
    table.render()
}

// -------------------------------------------------------------- describe

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    pub partition: i32,
    pub leader: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub offline: Vec<i32>,
    /// The log start offset; `None` when ListOffsets failed.
    pub start_offset: Option<i64>,
    /// The high watermark: the offset the next consumed record will get.
    pub end_offset: Option<i64>,
    /// The first error met for this partition (Metadata or ListOffsets).
    pub error: Option<(i16, Option<String>)>,
    /// The shard (core) of the leader that owns the partition; `None`
    /// when the leader did not say.
    pub leader_shard: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDescription {
    pub name: String,
    pub topic_id: Option<[u8; 16]>,
    pub internal: bool,
    pub partitions: Vec<PartitionInfo>,
    /// Settings that differ from the defaults, by name.
    pub configs: BTreeMap<String, Option<String>>,
    /// Why `configs` could not be read, if it could not.
    pub config_error: Option<(i16, Option<String>)>,
}

fn describe(
    cluster: &mut Cluster,
    conn: &ConnectArgs,
    out: &mut dyn Write,
    names: Vec<String>,
    include_internal: bool,
) -> CliResult<()> {
    let asked = (!names.is_empty()).then_some(names.as_slice());
    let meta = cluster.metadata(asked)?;
    let mut failures = Vec::new();
    let mut topics: Vec<TopicDescription> = Vec::new();
    for t in &meta.topics {
        let Some(name) = t.name.clone() else { continue };
        if t.error_code != error_code::NONE {
            let message = (t.error_code == error_code::UNKNOWN_TOPIC_OR_PARTITION)
                .then(|| "the topic does not exist".to_string());
            failures.push(CliError::broker(topic_label(&name), t.error_code, message));
            continue;
        }
        if asked.is_none() && t.is_internal && !include_internal {
            continue;
        }
        let mut partitions: Vec<PartitionInfo> = t
            .partitions
            .iter()
            .map(|p| PartitionInfo {
                partition: p.partition_index,
                leader: p.leader_id,
                replicas: p.replica_nodes.clone(),
                isr: p.isr_nodes.clone(),
                offline: p.offline_replicas.clone(),
                start_offset: None,
                end_offset: None,
                error: (p.error_code != error_code::NONE).then_some((p.error_code, None)),
                leader_shard: None,
            })
            .collect();
        partitions.sort_by_key(|p| p.partition);
        topics.push(TopicDescription {
            name,
            topic_id: (t.topic_id != [0; 16]).then_some(t.topic_id),
            internal: t.is_internal,
            partitions,
            configs: BTreeMap::new(),
            config_error: None,
        });
    }
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    fill_offsets(cluster, &mut topics)?;
    fill_configs(cluster.any(), &mut topics)?;
    fill_shards(cluster, &mut topics);
    // "No topics" would mislead when the topics asked for are missing;
    // the errors below say so instead.
    if conn.json || !topics.is_empty() || asked.is_none() {
        emit(out, &render_describe(&topics, conn.json))?;
    }
    report_failures(failures, names.len().max(topics.len()))
}

/// Prints every failure but the last on stderr and returns the last one,
/// or a summary when several items failed.
/// Asks each partition's leader for its earliest and latest offsets.
fn fill_offsets(cluster: &mut Cluster, topics: &mut [TopicDescription]) -> CliResult<()> {
    let mut by_leader: BTreeMap<i32, Vec<(String, i32)>> = BTreeMap::new();
    for t in topics.iter() {
        for p in &t.partitions {
            if p.leader >= 0 && p.error.is_none() {
                by_leader
                    .entry(p.leader)
                    .or_default()
                    .push((t.name.clone(), p.partition));
            }
        }
    }
    let mut found: HashMap<(String, i32), (i64, i64)> = HashMap::new();
    let mut errors: HashMap<(String, i32), i16> = HashMap::new();
    for (leader, parts) in by_leader {
        let client = cluster.node(leader)?;
        let earliest = list_offsets(client, &parts, EARLIEST_TIMESTAMP)?;
        let latest = list_offsets(client, &parts, LATEST_TIMESTAMP)?;
        for (key, start) in earliest {
            let end = latest.get(&key).copied();
            match (start, end) {
                (Ok(s), Some(Ok(e))) => {
                    found.insert(key, (s, e));
                }
                (Err(code), _) | (_, Some(Err(code))) => {
                    errors.insert(key, code);
                }
                (Ok(_), None) => {}
            }
        }
    }
    for t in topics.iter_mut() {
        for p in &mut t.partitions {
            let key = (t.name.clone(), p.partition);
            if let Some((s, e)) = found.get(&key) {
                p.start_offset = Some(*s);
                p.end_offset = Some(*e);
            } else if let Some(code) = errors.get(&key) {
                p.error.get_or_insert((*code, None));
            }
        }
    }
    Ok(())
}

/// Asks each partition's leader which of its shards owns it. Best effort:
/// a broker that does not answer (not pinlog, or an older one) leaves the
/// column empty, and nothing else of the description depends on it.
fn fill_shards(cluster: &mut Cluster, topics: &mut [TopicDescription]) {
    let mut by_leader: BTreeMap<i32, BTreeMap<String, Vec<i32>>> = BTreeMap::new();
    for t in topics.iter() {
        for p in &t.partitions {
            if p.leader >= 0 {
                by_leader
                    .entry(p.leader)
                    .or_default()
                    .entry(t.name.clone())
                    .or_default()
                    .push(p.partition);
            }
        }
    }
    let mut found: HashMap<(String, i32), i32> = HashMap::new();
    for (leader, parts) in by_leader {
        let Ok(client) = cluster.node(leader) else {
            continue;
        };
        let Ok(shards) = crate::cli::partition::shards_of(client, &parts) else {
            continue;
        };
        for (key, shard) in shards {
            if let Ok(shard) = shard {
                found.insert(key, shard);
            }
        }
    }
    for t in topics.iter_mut() {
        for p in &mut t.partitions {
            p.leader_shard = found.get(&(t.name.clone(), p.partition)).copied();
        }
    }
}

/// Offsets of `parts` for one timestamp query: per partition the offset, or
/// the error code.
pub fn list_offsets(
    client: &mut Client,
    parts: &[(String, i32)],
    timestamp: i64,
) -> CliResult<HashMap<(String, i32), Result<i64, i16>>> {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in parts {
        by_topic.entry(t.as_str()).or_default().push(*p);
    }
    let req = ListOffsetsRequest {
        replica_id: CONSUMER_REPLICA_ID,
        isolation_level: 0,
        topics: by_topic
            .into_iter()
            .map(|(name, ps)| ListOffsetsTopic {
                name: name.to_string(),
                partitions: ps
                    .into_iter()
                    .map(|p| ListOffsetsPartition {
                        partition_index: p,
                        current_leader_epoch: -1,
                        timestamp,
                    })
                    .collect(),
            })
            .collect(),
    };
    let resp = client.send(&req)?;
    let mut out = HashMap::new();
    for t in resp.topics {
        for p in t.partitions {
            let v = if p.error_code == error_code::NONE {
                Ok(p.offset)
            } else {
                Err(p.error_code)
            };
            out.insert((t.name.clone(), p.partition_index), v);
        }
    }
    Ok(out)
}

fn fill_configs(client: &mut Client, topics: &mut [TopicDescription]) -> CliResult<()> {
    if topics.is_empty() {
        return Ok(());
    }
    let req = DescribeConfigsRequest {
        resources: topics
            .iter()
            .map(|t| DescribeConfigsResource {
                resource_type: RESOURCE_TOPIC,
                resource_name: t.name.clone(),
                configuration_keys: None,
            })
            .collect(),
        include_synonyms: false,
        include_documentation: false,
    };
    let resp = client.send(&req)?;
    for r in resp.results {
        let Some(t) = topics.iter_mut().find(|t| t.name == r.resource_name) else {
            continue;
        };
        if r.error_code != error_code::NONE {
            t.config_error = Some((r.error_code, r.error_message));
            continue;
        }
        t.configs = r
            .configs
            .into_iter()
            .filter(|c| c.config_source != CONFIG_SOURCE_DEFAULT)
            .map(|c| (c.name, if c.is_sensitive { None } else { c.value }))
            .collect();
    }
    Ok(())
}

pub fn render_describe(topics: &[TopicDescription], json: bool) -> String {
    if json {
        let list: Vec<Value> = topics
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "topic_id": t.topic_id.as_ref().map(topic_id_text),
                    "internal": t.internal,
                    "partition_count": t.partitions.len(),
                    "replication_factor": replication_factor(t),
                    "configs": Value::Object(t.configs.iter().map(|(k, v)| {
                        (k.clone(), v.clone().map(Value::String).unwrap_or(Value::Null))
                    }).collect()),
                    "config_error": error_json(&t.config_error),
                    "partitions": t.partitions.iter().map(|p| json!({
                        "partition": p.partition,
                        "leader": p.leader,
                        "leader_shard": p.leader_shard,
                        "replicas": p.replicas,
                        "isr": p.isr,
                        "offline_replicas": p.offline,
                        "start_offset": p.start_offset,
                        "end_offset": p.end_offset,
                        "error": error_json(&p.error),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        return json_text(&json!({ "topics": list }));
    }
    if topics.is_empty() {
        return "No topics. Create one with `pinlog topic create NAME`.\n".into();
    }
    let mut s = String::new();
    for (i, t) in topics.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        s.push_str(&format!(
            "Topic: {}  TopicId: {}  Partitions: {}  ReplicationFactor: {}{}\n",
            t.name,
            t.topic_id
                .as_ref()
                .map(topic_id_text)
                .unwrap_or_else(|| "-".into()),
            t.partitions.len(),
            replication_factor(t),
            if t.internal { "  Internal: yes" } else { "" }
        ));
        let configs = match &t.config_error {
            Some((code, m)) => format!(
                "(cannot read: {}{})",
                error_name(*code),
                m.as_deref().map(|m| format!(": {m}")).unwrap_or_default()
            ),
            None if t.configs.is_empty() => "(all defaults)".into(),
            None => t
                .configs
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_deref().unwrap_or("(sensitive)")))
                .collect::<Vec<_>>()
                .join(", "),
        };
        s.push_str(&format!("Configs: {configs}\n"));
        let mut table = Table::new(&[
            ("PARTITION", Align::Right),
            ("LEADER", Align::Right),
            ("SHARD", Align::Right),
            ("REPLICAS", Align::Left),
            ("ISR", Align::Left),
            ("START-OFFSET", Align::Right),
            ("END-OFFSET", Align::Right),
            ("ERROR", Align::Left),
        ]);
        for p in &t.partitions {
            table.row(vec![
                p.partition.to_string(),
                if p.leader < 0 {
                    "none".into()
                } else {
                    p.leader.to_string()
                },
                p.leader_shard
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "-".into()),
                join_ids(&p.replicas),
                join_ids(&p.isr),
                or_dash(p.start_offset),
                or_dash(p.end_offset),
                p.error
                    .as_ref()
                    .map(|(c, _)| error_name(*c).to_string())
                    .unwrap_or_default(),
            ]);
        }
        s.push_str(&table.render());
    }
    s
}

fn replication_factor(t: &TopicDescription) -> usize {
    t.partitions
        .iter()
        .map(|p| p.replicas.len())
        .max()
        .unwrap_or(0)
}

// ---------------------------------------------------------------- delete

fn delete(
    client: &mut Client,
    conn: &ConnectArgs,
    out: &mut dyn Write,
    names: Vec<String>,
    if_exists: bool,
) -> CliResult<()> {
    let version = client.version_of(crate::protocol::api::ApiKey::DeleteTopics)?;
    let mut req = DeleteTopicsRequest {
        timeout_ms: timeout_ms(conn.timeout),
        ..Default::default()
    };
    if version >= DELETE_TOPICS_STATES_FROM {
        req.topics = names
            .iter()
            .map(|n| DeleteTopicState {
                name: Some(n.clone()),
                topic_id: [0; 16],
            })
            .collect();
    } else {
        req.topic_names = names.clone();
    }
    let resp = client.send_at(&req, version)?;
    let mut outcomes = Vec::new();
    for name in &names {
        let r = resp
            .responses
            .iter()
            .find(|r| r.name.as_deref() == Some(name.as_str()));
        let outcome = match r {
            None => Err((
                error_code::UNKNOWN_SERVER_ERROR,
                Some("the broker's answer does not mention this topic".to_string()),
            )),
            Some(r) if r.error_code == error_code::NONE => Ok(true),
            Some(r) if r.error_code == error_code::UNKNOWN_TOPIC_OR_PARTITION && if_exists => {
                Ok(false)
            }
            Some(r) => Err((r.error_code, r.error_message.clone())),
        };
        outcomes.push((name.clone(), outcome));
    }
    emit(out, &render_delete(&outcomes, conn.json))?;
    let failures = outcomes
        .into_iter()
        .filter_map(|(name, o)| {
            o.err()
                .map(|(code, m)| CliError::broker(topic_label(&name), code, m))
        })
        .collect();
    report_failures(failures, names.len())
}

/// Per topic: deleted (`true`), absent but allowed (`false`), or an error.
pub type DeleteOutcome = (String, Result<bool, (i16, Option<String>)>);

pub fn render_delete(outcomes: &[DeleteOutcome], json: bool) -> String {
    if json {
        let list: Vec<Value> = outcomes
            .iter()
            .map(|(name, o)| match o {
                Ok(deleted) => json!({"name": name, "deleted": deleted, "error": null}),
                Err(e) => json!({
                    "name": name,
                    "deleted": false,
                    "error": error_json(&Some(e.clone())),
                }),
            })
            .collect();
        return json_text(&json!({ "topics": list }));
    }
    let mut s = String::new();
    for (name, o) in outcomes {
        match o {
            Ok(true) => s.push_str(&format!("Deleted topic {name:?}.\n")),
            Ok(false) => s.push_str(&format!("Topic {name:?} does not exist; nothing to do.\n")),
            // Errors are reported on stderr.
            Err(_) => {}
        }
    }
    s
}

// ----------------------------------------------------------------- alter

#[derive(Debug, Clone, Default)]
pub struct Alteration {
    pub name: String,
    pub partitions: Option<i32>,
    pub set: Vec<(String, String)>,
    pub delete: Vec<String>,
}

impl Alteration {
    /// Arguments clap cannot check: a key both set and removed, or given
    /// twice.
    pub fn validate(&self) -> CliResult<()> {
        let mut seen = std::collections::HashSet::new();
        for k in self.set.iter().map(|(k, _)| k).chain(&self.delete) {
            if !seen.insert(k.as_str()) {
                return Err(CliError::Usage(format!(
                    "setting {k:?} is named more than once in --set/--delete-config"
                )));
            }
        }
        Ok(())
    }
}

fn alter(
    client: &mut Client,
    conn: &ConnectArgs,
    out: &mut dyn Write,
    change: Alteration,
) -> CliResult<()> {
    let label = topic_label(&change.name);
    if let Some(count) = change.partitions {
        let req = CreatePartitionsRequest {
            topics: vec![CreatePartitionsTopic {
                name: change.name.clone(),
                count,
                assignments: None,
            }],
            timeout_ms: timeout_ms(conn.timeout),
            validate_only: false,
        };
        let resp = client.send(&req)?;
        let r = resp
            .results
            .into_iter()
            .find(|r| r.name == change.name)
            .ok_or_else(|| CliError::Protocol {
                addr: client.addr().to_string(),
                detail: format!(
                    "CreatePartitions response does not mention {:?}",
                    change.name
                ),
            })?;
        if r.error_code != error_code::NONE {
            return Err(CliError::broker(label, r.error_code, r.error_message));
        }
    }
    if !change.set.is_empty() || !change.delete.is_empty() {
        let configs = change
            .set
            .iter()
            .map(|(k, v)| AlterableConfig {
                name: k.clone(),
                config_operation: OP_SET,
                value: Some(v.clone()),
            })
            .chain(change.delete.iter().map(|k| AlterableConfig {
                name: k.clone(),
                config_operation: OP_DELETE,
                value: None,
            }))
            .collect();
        let req = IncrementalAlterConfigsRequest {
            resources: vec![AlterConfigsResource {
                resource_type: RESOURCE_TOPIC,
                resource_name: change.name.clone(),
                configs,
            }],
            validate_only: false,
        };
        let resp = client.send(&req)?;
        let r = resp
            .responses
            .into_iter()
            .find(|r| r.resource_name == change.name)
            .ok_or_else(|| CliError::Protocol {
                addr: client.addr().to_string(),
                detail: format!(
                    "IncrementalAlterConfigs response does not mention {:?}",
                    change.name
                ),
            })?;
        if r.error_code != error_code::NONE {
            let mut e = CliError::broker(label, r.error_code, r.error_message);
            if change.partitions.is_some() {
                // The partitions were added already: say so, so that a
                // retry does not fail on them.
                e = CliError::Other(format!(
                    "{e} (the partition count was changed to {} before this failed)",
                    change.partitions.unwrap_or_default()
                ));
            }
            return Err(e);
        }
    }
    emit(out, &render_alter(&change, conn.json))
}

pub fn render_alter(change: &Alteration, json: bool) -> String {
    if json {
        return json_text(&json!({
            "name": change.name,
            "partitions": change.partitions,
            "set": config_object(&change.set),
            "deleted": change.delete,
        }));
    }
    let mut s = String::new();
    if let Some(n) = change.partitions {
        s.push_str(&format!(
            "Topic {:?} now has {n} partition{}.\n",
            change.name,
            plural(n as i64)
        ));
    }
    if !change.set.is_empty() {
        s.push_str(&format!(
            "Set on topic {:?}: {}.\n",
            change.name,
            config_list(&change.set)
        ));
    }
    if !change.delete.is_empty() {
        s.push_str(&format!(
            "Removed from topic {:?} (back to the broker default): {}.\n",
            change.name,
            change.delete.join(", ")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::metadata::{MetadataResponsePartition, MetadataResponseTopic};

    fn meta_topic(name: &str, partitions: i32, internal: bool) -> MetadataResponseTopic {
        MetadataResponseTopic {
            name: Some(name.into()),
            is_internal: internal,
            partitions: (0..partitions)
                .map(|p| MetadataResponsePartition {
                    partition_index: p,
                    leader_id: 1,
                    replica_nodes: vec![1],
                    isr_nodes: vec![1],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn list_sorts_and_hides_internal_topics() {
        let resp = MetadataResponse {
            topics: vec![
                meta_topic("zeta", 1, false),
                meta_topic("__consumer_offsets", 50, true),
                meta_topic("alpha", 3, false),
                MetadataResponseTopic {
                    error_code: error_code::UNKNOWN_TOPIC_OR_PARTITION,
                    name: Some("gone".into()),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let names = |v: Vec<TopicSummary>| v.into_iter().map(|t| t.name).collect::<Vec<_>>();
        assert_eq!(names(summaries(&resp, false)), ["alpha", "zeta"]);
        assert_eq!(
            names(summaries(&resp, true)),
            ["__consumer_offsets", "alpha", "zeta"]
        );
        let text = render_list(&summaries(&resp, false), false);
        assert_eq!(
            text,
            "TOPIC  PARTITIONS  REPLICATION  INTERNAL\n\
             alpha           3            1  no\n\
             zeta            1            1  no\n"
        );
        let v: Value = serde_json::from_str(&render_list(&summaries(&resp, true), true)).unwrap();
        assert_eq!(v["topics"][0]["name"], "__consumer_offsets");
        assert_eq!(v["topics"][0]["internal"], true);
        assert_eq!(v["topics"][1]["partitions"], 3);
        assert!(render_list(&[], false).contains("No topics"));
    }

    fn description() -> TopicDescription {
        TopicDescription {
            name: "orders".into(),
            topic_id: Some([0; 16]),
            internal: false,
            partitions: vec![
                PartitionInfo {
                    partition: 0,
                    leader: 1,
                    replicas: vec![1],
                    isr: vec![1],
                    offline: vec![],
                    start_offset: Some(0),
                    end_offset: Some(1200),
                    error: None,
                    leader_shard: Some(1),
                },
                PartitionInfo {
                    partition: 1,
                    leader: -1,
                    replicas: vec![1],
                    isr: vec![],
                    offline: vec![1],
                    start_offset: None,
                    end_offset: None,
                    error: Some((error_code::LEADER_NOT_AVAILABLE, None)),
                    leader_shard: None,
                },
            ],
            configs: [("retention.ms".to_string(), Some("1000".to_string()))].into(),
            config_error: None,
        }
    }

    #[test]
    fn describe_renders_a_header_and_a_partition_table() {
        let text = render_describe(&[description()], false);
        assert_eq!(
            text,
            "Topic: orders  TopicId: AAAAAAAAAAAAAAAAAAAAAA  Partitions: 2  ReplicationFactor: 1\n\
             Configs: retention.ms=1000\n\
             PARTITION  LEADER  SHARD  REPLICAS  ISR  START-OFFSET  END-OFFSET  ERROR\n\
             \x20       0       1      1  1         1               0        1200\n\
             \x20       1    none      -  1                         -           -  LEADER_NOT_AVAILABLE\n"
        );
    }

    #[test]
    fn describe_json_has_every_field() {
        let v: Value = serde_json::from_str(&render_describe(&[description()], true)).unwrap();
        let t = &v["topics"][0];
        assert_eq!(t["name"], "orders");
        assert_eq!(t["partition_count"], 2);
        assert_eq!(t["configs"]["retention.ms"], "1000");
        assert_eq!(t["partitions"][0]["end_offset"], 1200);
        assert_eq!(t["partitions"][0]["leader_shard"], 1);
        assert_eq!(t["partitions"][1]["start_offset"], Value::Null);
        assert_eq!(t["partitions"][1]["error"]["name"], "LEADER_NOT_AVAILABLE");
        assert_eq!(t["partitions"][1]["offline_replicas"][0], 1);
    }

    #[test]
    fn create_and_alter_sentences() {
        let t = NewTopic {
            name: "orders".into(),
            partitions: 3,
            replication_factor: 1,
            configs: vec![("retention.ms".into(), "1000".into())],
        };
        assert_eq!(
            render_create(&t, None, true, false),
            "Created topic \"orders\": 3 partitions, replication factor 1, retention.ms=1000.\n"
        );
        assert!(render_create(&t, None, false, false).contains("already exists"));
        let v: Value = serde_json::from_str(&render_create(&t, Some([0; 16]), true, true)).unwrap();
        assert_eq!(v["configs"]["retention.ms"], "1000");
        assert_eq!(v["topic_id"], "AAAAAAAAAAAAAAAAAAAAAA");

        let a = Alteration {
            name: "orders".into(),
            partitions: Some(6),
            set: vec![("retention.ms".into(), "5".into())],
            delete: vec!["segment.bytes".into()],
        };
        a.validate().unwrap();
        let text = render_alter(&a, false);
        assert!(text.contains("now has 6 partitions"), "{text}");
        assert!(text.contains("retention.ms=5"), "{text}");
        assert!(text.contains("segment.bytes"), "{text}");
        let bad = Alteration {
            set: vec![("a".into(), "1".into())],
            delete: vec!["a".into()],
            ..a
        };
        assert!(matches!(bad.validate(), Err(CliError::Usage(_))));
    }

    #[test]
    fn delete_reports_each_topic() {
        let outcomes: Vec<DeleteOutcome> = vec![
            ("a".into(), Ok(true)),
            ("b".into(), Ok(false)),
            (
                "c".into(),
                Err((error_code::UNKNOWN_TOPIC_OR_PARTITION, Some("nope".into()))),
            ),
        ];
        assert_eq!(
            render_delete(&outcomes, false),
            "Deleted topic \"a\".\nTopic \"b\" does not exist; nothing to do.\n"
        );
        let v: Value = serde_json::from_str(&render_delete(&outcomes, true)).unwrap();
        assert_eq!(v["topics"][0]["deleted"], true);
        assert_eq!(v["topics"][2]["error"]["code"], 3);
        assert_eq!(v["topics"][2]["error"]["message"], "nope");
    }
}
