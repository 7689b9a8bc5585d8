//! `pinlog group list|describe|reset-offsets`.
//!
//! Groups live on their coordinator (FindCoordinator names it). DescribeGroups
//! gives the state and members; each member's assignment is the consumer
//! protocol's `ConsumerProtocolAssignment`, decoded here. OffsetFetch gives
//! the committed offsets and ListOffsets (to each partition's leader) the
//! end offsets, and their difference is the lag. reset-offsets plans new
//! offsets from the partitions' start and end offsets (or a timestamp) and,
//! with `--execute`, commits them with OffsetCommit as an admin would: with
//! generation -1 and no member id, which a coordinator accepts only while
//! the group has no members.
//!
//! Everything between the wire and the screen (assignment decoding, the
//! describe rows, the reset plan) is pure and tested without a broker.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Value};

use crate::cli::client::{Client, Cluster};
use crate::cli::error::{CliError, CliResult};
use crate::cli::table::{json_text, or_dash, Align, Table};
use crate::cli::{emit, topic, ConnectArgs, GroupCommand};
use crate::protocol::api::ApiKey;
use crate::protocol::codec::{DecodeError, DecodeResult, Reader};
use crate::protocol::error_code::{
    self, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, GROUP_ID_NOT_FOUND,
    ILLEGAL_GENERATION, NON_EMPTY_GROUP, NOT_COORDINATOR, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID,
};
use crate::protocol::messages::describe_groups::{DescribeGroupsRequest, DescribedGroup};
use crate::protocol::messages::find_coordinator::{FindCoordinatorRequest, KEY_TYPE_GROUP};
use crate::protocol::messages::list_groups::ListGroupsRequest;
use crate::protocol::messages::list_offsets::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP};
use crate::protocol::messages::offset_commit::{
    self, OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use crate::protocol::messages::offset_fetch::{
    self, OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic,
};

/// The first FindCoordinator version that asks about a list of keys.
const FIND_COORDINATOR_BATCHED_FROM: i16 = 4;
/// The first OffsetFetch version that asks about a list of groups.
const OFFSET_FETCH_GROUPS_FROM: i16 = 8;
/// The tool names topics, as Kafka's admin client does: OffsetFetch and
/// OffsetCommit at most at the last version before topic ids.
const OFFSET_FETCH_BY_NAME_MAX: i16 = offset_fetch::TOPIC_ID_FROM - 1;
const OFFSET_COMMIT_BY_NAME_MAX: i16 = offset_commit::TOPIC_ID_FROM - 1;

/// The highest `ConsumerProtocolAssignment` version known; later versions
/// only add fields at the end, so they are read as this one, as Kafka's
/// own consumer does.
pub const CONSUMER_PROTOCOL_ASSIGNMENT_VERSION_MAX: i16 = 3;
/// The protocol type of groups formed by Kafka consumers.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// Bound on attempts of a group command while its coordinator answers
/// with a retriable error: loading `__consumer_offsets` (a broker loads
/// its partitions lazily, when first asked), not yet elected, or moved.
/// With [`COORDINATOR_RETRY_BACKOFF`] this bounds the wait to about 10 s;
/// `--timeout` bounds it too.
pub const COORDINATOR_ATTEMPTS_MAX: usize = 100;
/// Pause between those attempts.
pub const COORDINATOR_RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// Group states in which a coordinator accepts an admin's commit.
const INACTIVE_STATES: [&str; 2] = ["Empty", "Dead"];

mod arguments;

pub use self::arguments::{parse_datetime_ms, parse_topic_spec, TopicSpec};

pub fn run(conn: &ConnectArgs, command: GroupCommand, out: &mut dyn Write) -> CliResult<()> {
    let mut cluster = conn.cluster()?;
    match command {
        GroupCommand::List => {
            let groups = with_retries(conn, || list_groups(&mut cluster))?;
            emit(out, &render_group_list(&groups, conn.json))
        }
        GroupCommand::Describe { group } => {
            let g = with_retries(conn, || describe_group(&mut cluster, &group))?;
            emit(out, &render_group_describe(&g, conn.json))
        }
        GroupCommand::ResetOffsets {
            group,
            topics,
            to_earliest,
            to_latest,
            to_offset,
            shift_by,
            to_datetime,
            dry_run: _,
            execute,
        } => {
            let target =
                ResetTarget::from_flags(to_earliest, to_latest, to_offset, shift_by, to_datetime)?;
            // Committing the same offsets twice is harmless, so the whole
            // command may be retried.
            let (plan, note) = with_retries(conn, || {
                reset_offsets(&mut cluster, &group, &topics, target, execute)
            })?;
            if let Some(note) = note {
                eprintln!("note: {note}");
            }
            emit(out, &render_reset(&group, &plan, execute, conn.json))
        }
    }
}

/// Whether a broker error means "ask again shortly" for a group request.
fn is_retriable(e: &CliError) -> bool {
    matches!(
        e,
        CliError::Broker {
            code: COORDINATOR_LOAD_IN_PROGRESS | COORDINATOR_NOT_AVAILABLE | NOT_COORDINATOR,
            ..
        }
    )
}

/// Runs `f` again while it fails with a retriable coordinator error, at
/// most [`COORDINATOR_ATTEMPTS_MAX`] times and for at most `--timeout`.
fn with_retries<T>(conn: &ConnectArgs, mut f: impl FnMut() -> CliResult<T>) -> CliResult<T> {
    let deadline = Instant::now() + conn.timeout;
    let mut attempt = 1;
    loop {
        match f() {
            Err(e)
                if is_retriable(&e)
                    && attempt < COORDINATOR_ATTEMPTS_MAX
                    && Instant::now() + COORDINATOR_RETRY_BACKOFF < deadline =>
            {
                std::thread::sleep(COORDINATOR_RETRY_BACKOFF);
                attempt += 1;
            }
            other => return other,
        }
    }
}

fn group_label(group: &str) -> String {
    format!("group {group:?}")
}

/// Asks every broker for the groups it coordinates.
fn list_groups(cluster: &mut Cluster) -> CliResult<Vec<GroupListing>> {
    let meta = cluster.metadata(Some(&[]))?;
    let mut nodes: Vec<i32> = meta.brokers.iter().map(|b| b.node_id).collect();
    nodes.sort_unstable();
    let mut groups: BTreeMap<String, GroupListing> = BTreeMap::new();
    for node in nodes {
        let client = cluster.node(node)?;
        let resp = client.send(&ListGroupsRequest::default())?;
        if resp.error_code != error_code::NONE {
            return Err(CliError::broker(
                format!("ListGroups on broker {node}"),
                resp.error_code,
                None,
            ));
        }
        for g in resp.groups {
            groups.insert(
                g.group_id.clone(),
                GroupListing {
                    group: g.group_id,
                    state: g.group_state,
                    protocol_type: g.protocol_type,
                },
            );
        }
    }
    Ok(groups.into_values().collect())
}

/// The coordinator of `group`: its node id, after connecting to it.
fn coordinator(cluster: &mut Cluster, group: &str) -> CliResult<i32> {
    let client = cluster.any();
    let version = client.version_of(ApiKey::FindCoordinator)?;
    let req = FindCoordinatorRequest {
        key: group.to_string(),
        key_type: KEY_TYPE_GROUP,
        coordinator_keys: vec![group.to_string()],
    };
    let resp = client.send_at(&req, version)?;
    let (code, message, node_id, host, port) = if version >= FIND_COORDINATOR_BATCHED_FROM {
        let c = resp
            .coordinators
            .into_iter()
            .find(|c| c.key == group)
            .ok_or_else(|| CliError::Protocol {
                addr: client.addr().to_string(),
                detail: format!("FindCoordinator response does not mention {group:?}"),
            })?;
        (c.error_code, c.error_message, c.node_id, c.host, c.port)
    } else {
        (
            resp.error_code,
            resp.error_message,
            resp.node_id,
            resp.host,
            resp.port,
        )
    };
    if code != error_code::NONE {
        return Err(CliError::broker(group_label(group), code, message));
    }
    cluster.node_at(node_id, &format!("{host}:{port}"))?;
    Ok(node_id)
}

/// DescribeGroups for one group on its coordinator.
fn described_group(client: &mut Client, group: &str) -> CliResult<DescribedGroup> {
    let resp = client.send(&DescribeGroupsRequest {
        groups: vec![group.to_string()],
        include_authorized_operations: false,
    })?;
    let g = resp
        .groups
        .into_iter()
        .find(|g| g.group_id == group)
        .ok_or_else(|| CliError::Protocol {
            addr: client.addr().to_string(),
            detail: format!("DescribeGroups response does not mention {group:?}"),
        })?;
    if g.error_code != error_code::NONE {
        let message = g.error_message.or_else(|| {
            (g.error_code == GROUP_ID_NOT_FOUND).then(|| "the group does not exist".to_string())
        });
        return Err(CliError::broker(group_label(group), g.error_code, message));
    }
    Ok(g)
}

/// The group's committed offsets; `topics` `None` asks for all of them.
fn committed_offsets(
    client: &mut Client,
    group: &str,
    topics: Option<&BTreeMap<String, Vec<i32>>>,
) -> CliResult<BTreeMap<(String, i32), i64>> {
    let version = client
        .version_of(ApiKey::OffsetFetch)?
        .min(OFFSET_FETCH_BY_NAME_MAX);
    let wanted = topics.map(|ts| {
        ts.iter()
            .map(|(name, ps)| OffsetFetchRequestTopic {
                name: name.clone(),
                partition_indexes: ps.clone(),
                ..Default::default()
            })
            .collect::<Vec<_>>()
    });
    let req = if version >= OFFSET_FETCH_GROUPS_FROM {
        OffsetFetchRequest {
            group_id: String::new(),
            topics: None,
            groups: vec![OffsetFetchRequestGroup {
                group_id: group.to_string(),
                topics: wanted,
                ..Default::default()
            }],
            require_stable: false,
        }
    } else {
        OffsetFetchRequest {
            group_id: group.to_string(),
            topics: wanted,
            groups: Vec::new(),
            require_stable: false,
        }
    };
    let resp = client.send_at(&req, version)?;
    let (code, topics) = if version >= OFFSET_FETCH_GROUPS_FROM {
        let g = resp
            .groups
            .into_iter()
            .find(|g| g.group_id == group)
            .ok_or_else(|| CliError::Protocol {
                addr: client.addr().to_string(),
                detail: format!("OffsetFetch response does not mention {group:?}"),
            })?;
        (g.error_code, g.topics)
    } else {
        (resp.error_code, resp.topics)
    };
    if code != error_code::NONE {
        return Err(CliError::broker(group_label(group), code, None));
    }
    let mut committed = BTreeMap::new();
    for t in topics {
        for p in t.partitions {
            if p.error_code != error_code::NONE {
                return Err(CliError::broker(
                    format!(
                        "{} partition {}-{}",
                        group_label(group),
                        t.name,
                        p.partition_index
                    ),
                    p.error_code,
                    None,
                ));
            }
            // -1: nothing committed for a partition that was asked about.
            if p.committed_offset >= 0 {
                committed.insert((t.name.clone(), p.partition_index), p.committed_offset);
            }
        }
    }
    Ok(committed)
}

/// Offsets of `parts` for `timestamp`, each asked of its leader. Partitions
/// whose topic or partition no longer exists are left out.
fn offsets_at(
    cluster: &mut Cluster,
    parts: &BTreeSet<(String, i32)>,
    timestamp: i64,
) -> CliResult<BTreeMap<(String, i32), i64>> {
    let topics: Vec<String> = parts
        .iter()
        .map(|(t, _)| t.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if topics.is_empty() {
        return Ok(BTreeMap::new());
    }
    let meta = cluster.metadata(Some(&topics))?;
    let mut by_leader: BTreeMap<i32, Vec<(String, i32)>> = BTreeMap::new();
    for t in &meta.topics {
        let Some(name) = &t.name else { continue };
        for p in &t.partitions {
            let key = (name.clone(), p.partition_index);
            if parts.contains(&key) && p.leader_id >= 0 {
                by_leader.entry(p.leader_id).or_default().push(key);
            }
        }
    }
    let mut found = BTreeMap::new();
    for (leader, keys) in by_leader {
        let client = cluster.node(leader)?;
        for (key, r) in topic::list_offsets(client, &keys, timestamp)? {
            match r {
                Ok(offset) => {
                    found.insert(key, offset);
                }
                Err(code) => {
                    return Err(CliError::broker(
                        format!("partition {}-{}", key.0, key.1),
                        code,
                        None,
                    ))
                }
            }
        }
    }
    Ok(found)
}

fn describe_group(cluster: &mut Cluster, group: &str) -> CliResult<GroupDescription> {
    let node = coordinator(cluster, group)?;
    let client = cluster.node(node)?;
    let g = described_group(client, group)?;
    let committed = committed_offsets(client, group, None)?;
    // Before DescribeGroups v6 an unknown group is a "Dead" one.
    if g.group_state == "Dead" && g.members.is_empty() && committed.is_empty() {
        return Err(CliError::broker(
            group_label(group),
            GROUP_ID_NOT_FOUND,
            Some("the group does not exist".into()),
        ));
    }
    let members: Vec<Member> = g
        .members
        .into_iter()
        .map(|m| {
            Member::new(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                &g.protocol_type,
                m.member_assignment,
            )
        })
        .collect();
    let mut parts: BTreeSet<(String, i32)> = committed.keys().cloned().collect();
    for m in &members {
        parts.extend(m.assignment.iter().cloned());
    }
    let end_offsets = offsets_at(cluster, &parts, LATEST_TIMESTAMP)?;
    Ok(GroupDescription {
        group: group.to_string(),
        state: g.group_state,
        protocol_type: g.protocol_type,
        protocol: g.protocol_data,
        coordinator: Some(node),
        members,
        committed,
        end_offsets,
    })
}

/// The partitions `specs` name, checked against the topics' metadata.
fn resolve_partitions(
    cluster: &mut Cluster,
    specs: &[TopicSpec],
) -> CliResult<BTreeMap<String, Vec<i32>>> {
    let names: Vec<String> = specs.iter().map(|s| s.topic.clone()).collect();
    let meta = cluster.metadata(Some(&names))?;
    let mut out: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for spec in specs {
        let t = meta
            .topics
            .iter()
            .find(|t| t.name.as_deref() == Some(spec.topic.as_str()))
            .ok_or_else(|| CliError::Protocol {
                addr: cluster.any().addr().to_string(),
                detail: format!("Metadata response does not mention {:?}", spec.topic),
            })?;
        if t.error_code != error_code::NONE {
            let message = (t.error_code == error_code::UNKNOWN_TOPIC_OR_PARTITION)
                .then(|| "the topic does not exist".to_string());
            return Err(CliError::broker(
                format!("topic {:?}", spec.topic),
                t.error_code,
                message,
            ));
        }
        let existing: BTreeSet<i32> = t.partitions.iter().map(|p| p.partition_index).collect();
        let chosen = match &spec.partitions {
            None => existing.iter().copied().collect(),
            Some(ps) => {
                if let Some(missing) = ps.iter().find(|p| !existing.contains(p)) {
                    return Err(CliError::Other(format!(
                        "topic {:?} has no partition {missing}; it has {} (0 to {})",
                        spec.topic,
                        existing.len(),
                        existing.len().saturating_sub(1)
                    )));
                }
                ps.clone()
            }
        };
        let entry = out.entry(spec.topic.clone()).or_default();
        entry.extend(chosen);
        entry.sort_unstable();
        entry.dedup();
    }
    Ok(out)
}

/// Plans the reset and, with `execute`, commits it. Returns the plan and,
/// for a dry run of an active group, a note that --execute would fail.
fn reset_offsets(
    cluster: &mut Cluster,
    group: &str,
    specs: &[TopicSpec],
    target: ResetTarget,
    execute: bool,
) -> CliResult<(Vec<PlannedReset>, Option<String>)> {
    let wanted = resolve_partitions(cluster, specs)?;
    let node = coordinator(cluster, group)?;
    let client = cluster.node(node)?;
    // Offsets may be set for a group that does not exist yet: that is how
    // an operator makes a new group start somewhere other than its
    // auto.offset.reset.
    let (state, members) = match described_group(client, group) {
        Ok(g) => (g.group_state, g.members.len()),
        Err(CliError::Broker {
            code: GROUP_ID_NOT_FOUND,
            ..
        }) => ("Dead".to_string(), 0),
        Err(e) => return Err(e),
    };
    let active = !INACTIVE_STATES.contains(&state.as_str());
    let committed = committed_offsets(client, group, Some(&wanted))?;
    if active && execute {
        return Err(active_group_error(group, &state, members));
    }

    let parts: BTreeSet<(String, i32)> = wanted
        .iter()
        .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p)))
        .collect();
    let starts = offsets_at(cluster, &parts, EARLIEST_TIMESTAMP)?;
    let ends = offsets_at(cluster, &parts, LATEST_TIMESTAMP)?;
    let at_time = match target {
        ResetTarget::Datetime(ms) => Some(offsets_at(cluster, &parts, ms)?),
        _ => None,
    };
    let mut offsets = Vec::with_capacity(parts.len());
    for key in &parts {
        let (Some(&log_start), Some(&log_end)) = (starts.get(key), ends.get(key)) else {
            return Err(CliError::Other(format!(
                "partition {}-{} has no leader to ask for its offsets; try again in a moment",
                key.0, key.1
            )));
        };
        offsets.push(PartitionOffsets {
            topic: key.0.clone(),
            partition: key.1,
            committed: committed.get(key).copied(),
            log_start,
            log_end,
            // ListOffsets answers -1 when no record is at or after the time.
            at_time: at_time
                .as_ref()
                .and_then(|m| m.get(key).copied())
                .filter(|o| *o >= 0),
        });
    }
    let plan = plan_reset(&offsets, target)?;
    if !execute {
        let note = active.then(|| {
            format!(
                "{} is {state} with {members} member(s); --execute will be refused until they stop",
                group_label(group),
            )
        });
        return Ok((plan, note));
    }

    let mut by_topic: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
    for r in &plan {
        by_topic
            .entry(r.topic.as_str())
            .or_default()
            .push(OffsetCommitRequestPartition {
                partition_index: r.partition,
                committed_offset: r.new_offset,
                ..Default::default()
            });
    }
    let req = OffsetCommitRequest {
        group_id: group.to_string(),
        // An admin commit: no generation and no member, which the
        // coordinator accepts only for a group without members.
        generation_id_or_member_epoch: -1,
        member_id: String::new(),
        topics: by_topic
            .into_iter()
            .map(|(name, partitions)| OffsetCommitRequestTopic {
                name: name.to_string(),
                partitions,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let client = cluster.node(node)?;
    let version = client
        .version_of(ApiKey::OffsetCommit)?
        .min(OFFSET_COMMIT_BY_NAME_MAX);
    let resp = client.send_at(&req, version)?;
    for t in &resp.topics {
        for p in &t.partitions {
            match p.error_code {
                error_code::NONE => {}
                UNKNOWN_MEMBER_ID
                | ILLEGAL_GENERATION
                | REBALANCE_IN_PROGRESS
                | NON_EMPTY_GROUP => {
                    return Err(active_group_error(group, "active", 0));
                }
                code => {
                    return Err(CliError::broker(
                        format!(
                            "{} partition {}-{}",
                            group_label(group),
                            t.name,
                            p.partition_index
                        ),
                        code,
                        None,
                    ))
                }
            }
        }
    }
    Ok((plan, None))
}

/// The error for a reset of a group that has members: its hint says to
/// stop the consumers.
fn active_group_error(group: &str, state: &str, members: usize) -> CliError {
    let detail = if members > 0 {
        format!("the group is {state} with {members} member(s); offsets can be reset only while it has none")
    } else {
        "the coordinator refused the commit because the group has members".to_string()
    };
    CliError::broker(group_label(group), NON_EMPTY_GROUP, Some(detail))
}

// ------------------------------------------------- consumer assignment

/// A consumer's assignment as the group leader's assignor wrote it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerAssignment {
    pub version: i16,
    /// (topic, partitions), in the order written.
    pub partitions: Vec<(String, Vec<i32>)>,
    pub user_data: Option<Bytes>,
}

/// Decodes `ConsumerProtocolAssignment` v0-3: INT16 version, an array of
/// (STRING topic, ARRAY of INT32 partitions), nullable BYTES user data,
/// all in the classic (non-flexible) encoding. Empty bytes (a member that
/// has no assignment yet) decode as an empty assignment.
pub fn decode_assignment(bytes: Bytes) -> DecodeResult<ConsumerAssignment> {
    if bytes.is_empty() {
        return Ok(ConsumerAssignment::default());
    }
    let mut r = Reader::new(bytes);
    let version = r.i16("assignment version")?;
    if version < 0 {
        return Err(DecodeError::Invalid(format!(
            "assignment version {version} is negative"
        )));
    }
    // A topic entry is at least a 2-byte name length and a 4-byte count.
    let partitions = r.array("assigned_partitions", false, 6, |r| {
        let topic = r.string("topic", false)?;
        let parts = r.array("partitions", false, 4, |r| r.i32("partition"))?;
        Ok((topic, parts))
    })?;
    let user_data = r.nullable_bytes("user_data", false)?;
    // Bytes after user data belong to versions newer than ours; they are
    // ignored, as Kafka's consumer ignores them.
    Ok(ConsumerAssignment {
        version: version.min(CONSUMER_PROTOCOL_ASSIGNMENT_VERSION_MAX),
        partitions,
        user_data,
    })
}

// ------------------------------------------------------------- listing

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    pub group: String,
    /// Empty when the broker does not say (ListGroups before v4).
    pub state: String,
    pub protocol_type: String,
}

pub fn render_group_list(groups: &[GroupListing], json: bool) -> String {
    let mut groups = groups.to_vec();
    groups.sort_by(|a, b| a.group.cmp(&b.group));
    if json {
        let list: Vec<Value> = groups
            .iter()
            .map(|g| {
                json!({
                    "group": g.group,
                    "state": non_empty(&g.state),
                    "protocol_type": g.protocol_type,
                })
            })
            .collect();
        return json_text(&json!({ "groups": list }));
    }
    if groups.is_empty() {
        return "No groups.\n".into();
    }
    let mut t = Table::new(&[
        ("GROUP", Align::Left),
        ("STATE", Align::Left),
        ("PROTOCOL-TYPE", Align::Left),
    ]);
    for g in &groups {
        t.row(vec![
            g.group.clone(),
            non_empty(&g.state).unwrap_or("-").to_string(),
            non_empty(&g.protocol_type).unwrap_or("-").to_string(),
        ]);
    }
    t.render()
}

fn non_empty(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

// ------------------------------------------------------------ describe

/// A member as DescribeGroups reports it, with its assignment decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub host: String,
    /// (topic, partition) pairs; empty when the member has none or its
    /// assignment could not be decoded (see `assignment_error`).
    pub assignment: Vec<(String, i32)>,
    pub assignment_error: Option<String>,
}

impl Member {
    /// Builds a member from DescribeGroups fields, decoding the assignment
    /// when the group uses the consumer protocol.
    pub fn new(
        member_id: String,
        group_instance_id: Option<String>,
        client_id: String,
        host: String,
        protocol_type: &str,
        assignment: Bytes,
    ) -> Member {
        let mut m = Member {
            member_id,
            group_instance_id,
            client_id,
            host,
            assignment: Vec::new(),
            assignment_error: None,
        };
        if protocol_type == CONSUMER_PROTOCOL_TYPE {
            match decode_assignment(assignment) {
                Ok(a) => {
                    m.assignment = a
                        .partitions
                        .into_iter()
                        .flat_map(|(t, ps)| ps.into_iter().map(move |p| (t.clone(), p)))
                        .collect()
                }
                Err(e) => m.assignment_error = Some(e.to_string()),
            }
        }
        m
    }
}

/// What describe gathers about one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    pub group: String,
    pub state: String,
    pub protocol_type: String,
    /// The assignor's name (`range`, `cooperative-sticky`, ...).
    pub protocol: String,
    pub coordinator: Option<i32>,
    pub members: Vec<Member>,
    /// Committed offsets by (topic, partition).
    pub committed: BTreeMap<(String, i32), i64>,
    /// End offsets (high watermarks) by (topic, partition).
    pub end_offsets: BTreeMap<(String, i32), i64>,
}

/// One line of the describe table: a partition that is assigned, has a
/// committed offset, or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetRow {
    pub topic: String,
    pub partition: i32,
    pub current_offset: Option<i64>,
    pub log_end_offset: Option<i64>,
    pub lag: Option<i64>,
    /// The member this partition is assigned to, if any.
    pub member: Option<usize>,
}

impl GroupDescription {
    /// Every partition that is assigned or committed, sorted by topic and
    /// partition, with its lag when both offsets are known.
    pub fn rows(&self) -> Vec<OffsetRow> {
        let mut owner: BTreeMap<(String, i32), usize> = BTreeMap::new();
        for (i, m) in self.members.iter().enumerate() {
            for tp in &m.assignment {
                owner.insert(tp.clone(), i);
            }
        }
        let keys: BTreeSet<(String, i32)> =
            owner.keys().chain(self.committed.keys()).cloned().collect();
        keys.into_iter()
            .map(|tp| {
                let current = self.committed.get(&tp).copied();
                let end = self.end_offsets.get(&tp).copied();
                OffsetRow {
                    lag: current.zip(end).map(|(c, e)| e - c),
                    current_offset: current,
                    log_end_offset: end,
                    member: owner.get(&tp).copied(),
                    topic: tp.0,
                    partition: tp.1,
                }
            })
            .collect()
    }

    /// Members that own no partition, which the table shows on their own
    /// lines (as kafka-consumer-groups does).
    fn idle_members(&self) -> Vec<usize> {
        (0..self.members.len())
            .filter(|i| self.members[*i].assignment.is_empty())
            .collect()
    }

    pub fn total_lag(&self) -> Option<i64> {
        let rows = self.rows();
        rows.iter().map(|r| r.lag).sum::<Option<i64>>()
    }
}

pub fn render_group_describe(g: &GroupDescription, json: bool) -> String {
    let rows = g.rows();
    if json {
        let members: Vec<Value> = g
            .members
            .iter()
            .map(|m| {
                json!({
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "host": m.host,
                    "assignment": m.assignment.iter().map(|(t, p)| json!({"topic": t, "partition": p})).collect::<Vec<_>>(),
                    "assignment_error": m.assignment_error,
                })
            })
            .collect();
        let offsets: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "topic": r.topic,
                    "partition": r.partition,
                    "current_offset": r.current_offset,
                    "log_end_offset": r.log_end_offset,
                    "lag": r.lag,
                    "member_id": r.member.map(|i| g.members[i].member_id.clone()),
                })
            })
            .collect();
        return json_text(&json!({
            "group": g.group,
            "state": g.state,
            "protocol_type": g.protocol_type,
            "protocol": g.protocol,
            "coordinator": g.coordinator,
            "members": members,
            "offsets": offsets,
            "total_lag": g.total_lag(),
        }));
    }
    let mut s = format!(
        "Group: {}  State: {}  Members: {}{}{}\n",
        g.group,
        non_empty(&g.state).unwrap_or("-"),
        g.members.len(),
        non_empty(&g.protocol)
            .map(|p| format!("  Assignor: {p}"))
            .unwrap_or_default(),
        g.coordinator
            .map(|c| format!("  Coordinator: {c}"))
            .unwrap_or_default(),
    );
    if g.members.is_empty() {
        s.push_str(&format!(
            "Consumer group {:?} has no active members.\n",
            g.group
        ));
    }
    for m in &g.members {
        if let Some(e) = &m.assignment_error {
            s.push_str(&format!(
                "Member {}: cannot decode its assignment: {e}\n",
                m.member_id
            ));
        }
    }
    if rows.is_empty() && g.members.is_empty() {
        s.push_str("It has no committed offsets.\n");
        return s;
    }
    let mut t = Table::new(&[
        ("TOPIC", Align::Left),
        ("PARTITION", Align::Right),
        ("CURRENT-OFFSET", Align::Right),
        ("LOG-END-OFFSET", Align::Right),
        ("LAG", Align::Right),
        ("CONSUMER-ID", Align::Left),
        ("HOST", Align::Left),
        ("CLIENT-ID", Align::Left),
    ]);
    let member_cells = |i: Option<usize>| -> [String; 3] {
        match i.map(|i| &g.members[i]) {
            Some(m) => [m.member_id.clone(), m.host.clone(), m.client_id.clone()],
            None => ["-".into(), "-".into(), "-".into()],
        }
    };
    for r in &rows {
        let [id, host, client] = member_cells(r.member);
        t.row(vec![
            r.topic.clone(),
            r.partition.to_string(),
            or_dash(r.current_offset),
            or_dash(r.log_end_offset),
            or_dash(r.lag),
            id,
            host,
            client,
        ]);
    }
    for i in g.idle_members() {
        let [id, host, client] = member_cells(Some(i));
        t.row(vec![
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            id,
            host,
            client,
        ]);
    }
    s.push_str(&t.render());
    s
}

// --------------------------------------------------------- reset plan

/// Where `reset-offsets` moves each partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetTarget {
    Earliest,
    Latest,
    Offset(i64),
    ShiftBy(i64),
    /// Milliseconds since the epoch; needs each partition's offset for
    /// that time.
    Datetime(i64),
}

impl ResetTarget {
    /// The one target the (clap-checked) flags give.
    pub fn from_flags(
        to_earliest: bool,
        to_latest: bool,
        to_offset: Option<i64>,
        shift_by: Option<i64>,
        to_datetime: Option<i64>,
    ) -> CliResult<ResetTarget> {
        let targets: Vec<ResetTarget> = [
            to_earliest.then_some(ResetTarget::Earliest),
            to_latest.then_some(ResetTarget::Latest),
            to_offset.map(ResetTarget::Offset),
            shift_by.map(ResetTarget::ShiftBy),
            to_datetime.map(ResetTarget::Datetime),
        ]
        .into_iter()
        .flatten()
        .collect();
        match targets.as_slice() {
            [one] => Ok(*one),
            _ => Err(CliError::Usage(
                "give exactly one of --to-earliest, --to-latest, --to-offset, --shift-by, \
                 --to-datetime"
                    .into(),
            )),
        }
    }
}

/// What the plan knows of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionOffsets {
    pub topic: String,
    pub partition: i32,
    pub committed: Option<i64>,
    pub log_start: i64,
    pub log_end: i64,
    /// For [`ResetTarget::Datetime`]: the first offset whose timestamp is
    /// at or after the time, `None` when no record is that recent.
    pub at_time: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedReset {
    pub topic: String,
    pub partition: i32,
    pub current_offset: Option<i64>,
    pub new_offset: i64,
    /// Why the offset asked for was moved into the log's range.
    pub note: Option<String>,
}

/// The new offset of every partition. Targets outside a partition's
/// `[log start, log end]` are clamped into it, as Kafka's tool does, with
/// a note; `--shift-by` needs a committed offset to shift from.
pub fn plan_reset(parts: &[PartitionOffsets], target: ResetTarget) -> CliResult<Vec<PlannedReset>> {
    let mut plan = Vec::with_capacity(parts.len());
    for p in parts {
        let wanted = match target {
            ResetTarget::Earliest => p.log_start,
            ResetTarget::Latest => p.log_end,
            ResetTarget::Offset(n) => n,
            ResetTarget::ShiftBy(n) => match p.committed {
                Some(c) => c.saturating_add(n),
                None => {
                    return Err(CliError::Usage(format!(
                        "partition {}-{} has no committed offset to shift from; reset it with \
                         --to-earliest, --to-latest or --to-offset instead",
                        p.topic, p.partition
                    )))
                }
            },
            // No record at or after the time: start after the last one.
            ResetTarget::Datetime(_) => p.at_time.unwrap_or(p.log_end),
        };
        let (new_offset, note) = if wanted < p.log_start {
            (
                p.log_start,
                Some(format!(
                    "{wanted} is before the log start; using {}",
                    p.log_start
                )),
            )
        } else if wanted > p.log_end {
            (
                p.log_end,
                Some(format!("{wanted} is past the log end; using {}", p.log_end)),
            )
        } else {
            (wanted, None)
        };
        plan.push(PlannedReset {
            topic: p.topic.clone(),
            partition: p.partition,
            current_offset: p.committed,
            new_offset,
            note,
        });
    }
    plan.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    Ok(plan)
}

pub fn render_reset(group: &str, plan: &[PlannedReset], executed: bool, json: bool) -> String {
    if json {
        let list: Vec<Value> = plan
            .iter()
            .map(|r| {
                json!({
                    "topic": r.topic,
                    "partition": r.partition,
                    "current_offset": r.current_offset,
                    "new_offset": r.new_offset,
                    "note": r.note,
                })
            })
            .collect();
        return json_text(&json!({
            "group": group,
            "executed": executed,
            "partitions": list,
        }));
    }
    let mut t = Table::new(&[
        ("TOPIC", Align::Left),
        ("PARTITION", Align::Right),
        ("CURRENT-OFFSET", Align::Right),
        ("NEW-OFFSET", Align::Right),
        ("NOTE", Align::Left),
    ]);
    for r in plan {
        t.row(vec![
            r.topic.clone(),
            r.partition.to_string(),
            or_dash(r.current_offset),
            r.new_offset.to_string(),
            r.note.clone().unwrap_or_default(),
        ]);
    }
    let mut s = t.render();
    if executed {
        s.push_str(&format!("Committed the new offsets of group {group:?}.\n"));
    } else {
        s.push_str("Dry run: nothing changed. Run again with --execute to commit these offsets.\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::{BufMut, BytesMut};

    fn assignment_bytes(
        version: i16,
        topics: &[(&str, &[i32])],
        user_data: Option<&[u8]>,
    ) -> Bytes {
        let mut b = BytesMut::new();
        b.put_i16(version);
        b.put_i32(topics.len() as i32);
        for (t, ps) in topics {
            b.put_i16(t.len() as i16);
            b.put_slice(t.as_bytes());
            b.put_i32(ps.len() as i32);
            for p in *ps {
                b.put_i32(*p);
            }
        }
        match user_data {
            Some(u) => {
                b.put_i32(u.len() as i32);
                b.put_slice(u);
            }
            None => b.put_i32(-1),
        }
        b.freeze()
    }

    #[test]
    fn assignments_decode_at_every_version() {
        for v in 0..=3 {
            let a = decode_assignment(assignment_bytes(
                v,
                &[("orders", &[0, 2]), ("audit", &[1])],
                Some(b"ud"),
            ))
            .unwrap();
            assert_eq!(a.version, v);
            assert_eq!(
                a.partitions,
                vec![("orders".into(), vec![0, 2]), ("audit".into(), vec![1])]
            );
            assert_eq!(a.user_data.as_deref(), Some(&b"ud"[..]));
        }
        let a = decode_assignment(assignment_bytes(1, &[], None)).unwrap();
        assert!(a.partitions.is_empty());
        assert_eq!(a.user_data, None);
    }

    #[test]
    fn newer_assignment_versions_and_empty_bytes_are_accepted() {
        let mut b = BytesMut::from(&assignment_bytes(7, &[("t", &[0])], None)[..]);
        b.put_slice(b"future fields");
        let a = decode_assignment(b.freeze()).unwrap();
        assert_eq!(a.version, CONSUMER_PROTOCOL_ASSIGNMENT_VERSION_MAX);
        assert_eq!(a.partitions, vec![("t".into(), vec![0])]);
        assert_eq!(
            decode_assignment(Bytes::new()).unwrap(),
            ConsumerAssignment::default()
        );
    }

    #[test]
    fn hostile_assignments_are_refused() {
        // Truncated inside the partition array.
        let full = assignment_bytes(0, &[("orders", &[0, 1, 2])], None);
        assert!(decode_assignment(full.slice(..full.len() - 8)).is_err());
        // A count far beyond the bytes.
        let mut b = BytesMut::new();
        b.put_i16(0);
        b.put_i32(i32::MAX);
        assert!(decode_assignment(b.freeze()).is_err());
        // A negative version.
        assert!(decode_assignment(assignment_bytes(-1, &[], None)).is_err());
    }

    #[test]
    fn topic_specs() {
        assert_eq!(
            parse_topic_spec("orders").unwrap(),
            TopicSpec {
                topic: "orders".into(),
                partitions: None
            }
        );
        assert_eq!(
            parse_topic_spec("orders:2,0,2").unwrap().partitions,
            Some(vec![0, 2])
        );
        assert!(parse_topic_spec(":1").is_err());
        assert!(parse_topic_spec("orders:").is_err());
        assert!(parse_topic_spec("orders:-1").is_err());
        assert!(parse_topic_spec("orders:a").is_err());
    }

    #[test]
    fn datetimes() {
        assert_eq!(parse_datetime_ms("1970-01-01"), Ok(0));
        assert_eq!(parse_datetime_ms("1970-01-01T00:00:00Z"), Ok(0));
        // date -u -d 2024-05-01T12:00:00Z +%s
        assert_eq!(
            parse_datetime_ms("2024-05-01T12:00:00Z"),
            Ok(1_714_564_800_000)
        );
        assert_eq!(
            parse_datetime_ms("2024-05-01T12:00:00"),
            Ok(1_714_564_800_000)
        );
        assert_eq!(parse_datetime_ms("2024-05-01T12:00"), Ok(1_714_564_800_000));
        assert_eq!(
            parse_datetime_ms("2024-05-01T14:00:00.250+02:00"),
            Ok(1_714_564_800_250)
        );
        assert_eq!(
            parse_datetime_ms("2024-05-01T07:30:00-0430"),
            Ok(1_714_564_800_000)
        );
        assert_eq!(parse_datetime_ms("2000-02-29"), Ok(951_782_400_000));
        assert_eq!(parse_datetime_ms("1969-12-31T23:59:59.999Z"), Ok(-1));
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-05-01T24:00:00Z",
            "2024-05-01T12:00:00+2",
            "2024-5-1",
            "yesterday",
            "2024-05-01T12:00:00.Z",
            "",
        ] {
            assert!(parse_datetime_ms(bad).is_err(), "{bad}");
        }
    }

    fn member(id: &str, assignment: &[(&str, i32)]) -> Member {
        Member {
            member_id: id.into(),
            group_instance_id: None,
            client_id: format!("client-{id}"),
            host: "/127.0.0.1".into(),
            assignment: assignment
                .iter()
                .map(|(t, p)| (t.to_string(), *p))
                .collect(),
            assignment_error: None,
        }
    }

    fn group() -> GroupDescription {
        GroupDescription {
            group: "billing".into(),
            state: "Stable".into(),
            protocol_type: "consumer".into(),
            protocol: "range".into(),
            coordinator: Some(1),
            members: vec![
                member("m-1", &[("orders", 0), ("orders", 1)]),
                member("m-2", &[]),
            ],
            committed: [(("orders".to_string(), 0), 5), (("old".to_string(), 0), 9)].into(),
            end_offsets: [
                (("orders".to_string(), 0), 8),
                (("orders".to_string(), 1), 3),
                (("old".to_string(), 0), 9),
            ]
            .into(),
        }
    }

    #[test]
    fn member_from_describe_groups_decodes_consumer_assignments_only() {
        let bytes = assignment_bytes(3, &[("orders", &[1, 0])], None);
        let m = Member::new(
            "m".into(),
            None,
            "c".into(),
            "/h".into(),
            "consumer",
            bytes.clone(),
        );
        assert_eq!(
            m.assignment,
            vec![("orders".to_string(), 1), ("orders".to_string(), 0)]
        );
        let connect = Member::new("m".into(), None, "c".into(), "/h".into(), "connect", bytes);
        assert!(connect.assignment.is_empty());
        assert_eq!(connect.assignment_error, None);
        let broken = Member::new(
            "m".into(),
            None,
            "c".into(),
            "/h".into(),
            "consumer",
            Bytes::from_static(&[0, 0, 0]),
        );
        assert!(broken.assignment_error.is_some());
    }

    #[test]
    fn describe_rows_join_assignment_committed_and_end_offsets() {
        let g = group();
        let rows = g.rows();
        let view: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r.topic.as_str(),
                    r.partition,
                    r.current_offset,
                    r.lag,
                    r.member,
                )
            })
            .collect();
        assert_eq!(
            view,
            vec![
                ("old", 0, Some(9), Some(0), None),
                ("orders", 0, Some(5), Some(3), Some(0)),
                ("orders", 1, None, None, Some(0)),
            ]
        );
        assert_eq!(g.total_lag(), None);
        let text = render_group_describe(&g, false);
        assert_eq!(
            text,
            "Group: billing  State: Stable  Members: 2  Assignor: range  Coordinator: 1\n\
             TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST        CLIENT-ID\n\
             old             0               9               9    0  -            -           -\n\
             orders          0               5               8    3  m-1          /127.0.0.1  client-m-1\n\
             orders          1               -               3    -  m-1          /127.0.0.1  client-m-1\n\
             -               -               -               -    -  m-2          /127.0.0.1  client-m-2\n"
        );
        let v: Value = serde_json::from_str(&render_group_describe(&g, true)).unwrap();
        assert_eq!(v["state"], "Stable");
        assert_eq!(v["offsets"][1]["lag"], 3);
        assert_eq!(v["offsets"][1]["member_id"], "m-1");
        assert_eq!(v["offsets"][0]["member_id"], Value::Null);
        assert_eq!(v["members"][0]["assignment"][1]["partition"], 1);
    }

    #[test]
    fn an_empty_group_says_so() {
        let g = GroupDescription {
            state: "Empty".into(),
            members: vec![],
            ..group()
        };
        let text = render_group_describe(&g, false);
        assert!(text.contains("has no active members"), "{text}");
        assert!(text.contains("old             0"), "{text}");
        // old-0 (lag 0) and orders-0 (lag 3); orders-1 is neither assigned nor committed now.
        assert_eq!(g.total_lag(), Some(3));
    }

    #[test]
    fn group_list_table_and_json() {
        let groups = vec![
            GroupListing {
                group: "b".into(),
                state: "Empty".into(),
                protocol_type: "consumer".into(),
            },
            GroupListing {
                group: "a".into(),
                state: "".into(),
                protocol_type: "".into(),
            },
        ];
        assert_eq!(
            render_group_list(&groups, false),
            "GROUP  STATE  PROTOCOL-TYPE\na      -      -\nb      Empty  consumer\n"
        );
        let v: Value = serde_json::from_str(&render_group_list(&groups, true)).unwrap();
        assert_eq!(v["groups"][0]["group"], "a");
        assert_eq!(v["groups"][0]["state"], Value::Null);
        assert_eq!(render_group_list(&[], false), "No groups.\n");
    }

    fn offsets(committed: Option<i64>, at_time: Option<i64>) -> PartitionOffsets {
        PartitionOffsets {
            topic: "t".into(),
            partition: 0,
            committed,
            log_start: 10,
            log_end: 100,
            at_time,
        }
    }

    #[test]
    fn reset_plans_clamp_into_the_log() {
        let new = |p: PartitionOffsets, t| plan_reset(&[p], t).unwrap()[0].clone();
        assert_eq!(
            new(offsets(Some(50), None), ResetTarget::Earliest).new_offset,
            10
        );
        assert_eq!(
            new(offsets(Some(50), None), ResetTarget::Latest).new_offset,
            100
        );
        assert_eq!(
            new(offsets(None, None), ResetTarget::Offset(42)).new_offset,
            42
        );
        let low = new(offsets(None, None), ResetTarget::Offset(3));
        assert_eq!(low.new_offset, 10);
        assert!(low.note.unwrap().contains("before the log start"));
        let high = new(offsets(Some(50), None), ResetTarget::ShiftBy(80));
        assert_eq!(high.new_offset, 100);
        assert!(high.note.unwrap().contains("past the log end"));
        assert_eq!(
            new(offsets(Some(50), None), ResetTarget::ShiftBy(-5)).new_offset,
            45
        );
        assert_eq!(
            new(offsets(Some(50), Some(70)), ResetTarget::Datetime(0)).new_offset,
            70
        );
        // No record at or after the time: the end.
        assert_eq!(
            new(offsets(Some(50), None), ResetTarget::Datetime(0)).new_offset,
            100
        );
        let e = plan_reset(&[offsets(None, None)], ResetTarget::ShiftBy(1)).unwrap_err();
        assert!(e.to_string().contains("no committed offset"), "{e}");
    }

    #[test]
    fn reset_plan_output() {
        let plan = plan_reset(
            &[
                PartitionOffsets {
                    partition: 1,
                    ..offsets(Some(50), None)
                },
                offsets(None, None),
            ],
            ResetTarget::Earliest,
        )
        .unwrap();
        let text = render_reset("g", &plan, false, false);
        assert_eq!(
            text,
            "TOPIC  PARTITION  CURRENT-OFFSET  NEW-OFFSET  NOTE\n\
             t              0               -          10\n\
             t              1              50          10\n\
             Dry run: nothing changed. Run again with --execute to commit these offsets.\n"
        );
        let v: Value = serde_json::from_str(&render_reset("g", &plan, true, true)).unwrap();
        assert_eq!(v["executed"], true);
        assert_eq!(v["partitions"][1]["current_offset"], 50);
        assert_eq!(v["partitions"][0]["current_offset"], Value::Null);
    }

    #[test]
    fn exactly_one_target() {
        assert_eq!(
            ResetTarget::from_flags(false, true, None, None, None).unwrap(),
            ResetTarget::Latest
        );
        assert!(ResetTarget::from_flags(true, true, None, None, None).is_err());
        assert!(ResetTarget::from_flags(false, false, None, None, None).is_err());
    }
}
