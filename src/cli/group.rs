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

use bytes::Bytes;
use serde_json::{json, Value};

use crate::cli::error::{CliError, CliResult};
use crate::cli::table::{json_text, or_dash, Align, Table};
use crate::cli::{ConnectArgs, GroupCommand};
use crate::protocol::codec::{DecodeError, DecodeResult, Reader};

/// The highest `ConsumerProtocolAssignment` version known; later versions
/// only add fields at the end, so they are read as this one, as Kafka's
/// own consumer does.
pub const CONSUMER_PROTOCOL_ASSIGNMENT_VERSION_MAX: i16 = 3;
/// The protocol type of groups formed by Kafka consumers.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

pub fn run(_conn: &ConnectArgs, _command: GroupCommand, _out: &mut dyn Write) -> CliResult<()> {
    Err(CliError::Other(
        "group commands need the group APIs (FindCoordinator, DescribeGroups, OffsetFetch, \
         OffsetCommit, ListGroups), which this build of pinlog cannot speak yet"
            .into(),
    ))
}

// ------------------------------------------------------------ arguments

/// `--topic TOPIC` or `--topic TOPIC:P,P,...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    pub topic: String,
    /// `None`: every partition of the topic.
    pub partitions: Option<Vec<i32>>,
}

pub fn parse_topic_spec(s: &str) -> Result<TopicSpec, String> {
    let (topic, parts) = match s.split_once(':') {
        Some((t, p)) => (t, Some(p)),
        None => (s, None),
    };
    if topic.is_empty() {
        return Err(format!("{s:?} names no topic"));
    }
    let partitions = match parts {
        None => None,
        Some(p) => {
            let mut list = Vec::new();
            for item in p.split(',') {
                let n: i32 = item
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| {
                        format!("{item:?} in {s:?} is not a partition number (TOPIC:0,1,2)")
                    })?;
                if !list.contains(&n) {
                    list.push(n);
                }
            }
            list.sort_unstable();
            Some(list)
        }
    };
    Ok(TopicSpec {
        topic: topic.to_string(),
        partitions,
    })
}

/// Parses an ISO 8601 time into milliseconds since the Unix epoch:
/// `YYYY-MM-DD`, or `YYYY-MM-DDTHH:MM[:SS[.fff]]` followed by `Z`,
/// `±HH:MM` or `±HHMM`. A time without a zone is UTC (unlike Kafka's tool,
/// which takes the machine's zone: a plan should not depend on where it is
/// run).
pub fn parse_datetime_ms(s: &str) -> Result<i64, String> {
    let bad = || {
        format!(
            "{s:?} is not an ISO 8601 time such as 2024-05-01T12:00:00Z, \
             2024-05-01T14:00:00.000+02:00 or 2024-05-01"
        )
    };
    let s = s.trim();
    let (date, rest) = match s.split_once(['T', 't', ' ']) {
        Some((d, r)) => (d, Some(r)),
        None => (s, None),
    };
    let num = |t: &str, digits: usize| -> Result<i64, String> {
        if t.len() != digits || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        t.parse().map_err(|_| bad())
    };
    let mut d = date.split('-');
    let (Some(y), Some(mo), Some(da), None) = (d.next(), d.next(), d.next(), d.next()) else {
        return Err(bad());
    };
    let (year, month, day) = (num(y, 4)?, num(mo, 2)?, num(da, 2)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return Err(bad());
    }
    let mut ms = days_from_civil(year, month, day) * 86_400_000;
    let Some(rest) = rest else { return Ok(ms) };

    // Split the zone off the time of day.
    let (time, zone_ms) = if let Some(t) = rest.strip_suffix(['Z', 'z']) {
        (t, 0)
    } else if let Some(i) = rest.rfind(['+', '-']) {
        let (t, z) = rest.split_at(i);
        let sign = if z.starts_with('-') { -1 } else { 1 };
        let z = z[1..].replace(':', "");
        if z.len() != 4 {
            return Err(bad());
        }
        let (zh, zm) = (num(&z[..2], 2)?, num(&z[2..], 2)?);
        if zh > 23 || zm > 59 {
            return Err(bad());
        }
        (t, sign * (zh * 3_600_000 + zm * 60_000))
    } else {
        (rest, 0)
    };
    let (hms, fraction) = match time.split_once('.') {
        Some((h, f)) => (h, Some(f)),
        None => (time, None),
    };
    let mut parts = hms.split(':');
    let hour = num(parts.next().ok_or_else(bad)?, 2)?;
    let minute = num(parts.next().ok_or_else(bad)?, 2)?;
    let second = match parts.next() {
        Some(p) => num(p, 2)?,
        None => 0,
    };
    if parts.next().is_some() || hour > 23 || minute > 59 || second > 59 {
        return Err(bad());
    }
    let millis = match fraction {
        None => 0,
        Some(f) if !f.is_empty() && f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit()) => {
            // Keep milliseconds; finer digits are dropped.
            let padded = format!("{f:0<3}");
            padded[..3].parse::<i64>().map_err(|_| bad())?
        }
        Some(_) => return Err(bad()),
    };
    ms += hour * 3_600_000 + minute * 60_000 + second * 1000 + millis;
    Ok(ms - zone_ms)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
