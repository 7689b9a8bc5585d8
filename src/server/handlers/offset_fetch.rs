//! OffsetFetch: committed offsets of one group (v1-7) or of several (v8+),
//! for listed partitions or, with a null topic list, all of them; v10 names
//! topics by id.

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, FetchedOffset, GroupCoordinator};
use crate::metadata::image::MetadataImage;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_fetch::*;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

/// First version that fetches for several groups at once.
const GROUPS_FROM: i16 = 8;
/// Before this version a group-level error is reported per partition only.
const TOP_LEVEL_ERROR_FROM: i16 = 2;

type Topics = Option<Vec<(String, Vec<i32>)>>;

async fn fetch_one(
    shard: &Rc<Shard>,
    group_id: &str,
    topics: Topics,
    require_stable: bool,
    member: Option<(String, i32)>,
    access: &Access<'_>,
) -> (i16, Vec<OffsetFetchResponseTopic>) {
    // Kafka's rules: DESCRIBE on the group, else the group is refused;
    // DESCRIBE on each named topic, else its partitions are; asked for
    // every topic, the group's topics without DESCRIBE are left out.
    let image = BrokerState::of(shard).image();
    let group_allowed = access.allows(&image, matrix::OFFSET_FETCH_GROUP, group_id);
    let mut topics = topics;
    let mut refused: Vec<(String, Vec<i32>)> = Vec::new();
    if let (true, Some(named)) = (group_allowed, topics.as_mut()) {
        let denied = access.denied(
            &image,
            matrix::OFFSET_FETCH_TOPIC,
            named.iter().map(|(t, _)| t.as_str()),
        );
        if !denied.is_empty() {
            let (kept, out): (Vec<_>, Vec<_>) = std::mem::take(named)
                .into_iter()
                .partition(|(t, _)| !denied.contains(t));
            *named = kept;
            refused = out;
        }
    }
    let requested = topics.clone();
    let gid = group_id.to_string();
    let result = if !group_allowed {
        Err(error_code::GROUP_AUTHORIZATION_FAILED)
    } else if requested.as_ref().is_some_and(|t| t.is_empty()) && !refused.is_empty() {
        Ok(Vec::new())
    } else if group_id.is_empty() {
        Err(error_code::INVALID_GROUP_ID)
    } else {
        on_coordinator(shard, group_id, move |c: Rc<GroupCoordinator>, s, p| {
            c.fetch_offsets(s, p, gid, topics, require_stable, member)
        })
        .await
        .and_then(|r| r)
    };
    let refused_topics = |code: i16| {
        refused
            .iter()
            .map(move |(name, ps)| OffsetFetchResponseTopic {
                name: name.clone(),
                topic_id: [0; 16],
                partitions: ps.iter().map(|p| failed_partition(*p, code)).collect(),
            })
    };
    match result {
        Ok(mut found) => {
            if requested.is_none() {
                found.retain(|(t, _)| access.allows(&image, matrix::OFFSET_FETCH_TOPIC, t));
            }
            let mut topics = to_topics(found);
            topics.extend(refused_topics(error_code::TOPIC_AUTHORIZATION_FAILED));
            (error_code::NONE, topics)
        }
        Err(code) => {
            // Requested partitions carry the error too, as Kafka does, so
            // that v1 clients (no top-level error) see it.
            let topics = requested
                .unwrap_or_default()
                .into_iter()
                .map(|(name, ps)| OffsetFetchResponseTopic {
                    name,
                    topic_id: [0; 16],
                    partitions: ps.into_iter().map(|p| failed_partition(p, code)).collect(),
                })
                .collect();
            (code, topics)
        }
    }
}

/// A partition answered with `code` and no offset, as Kafka answers one.
fn failed_partition(partition_index: i32, code: i16) -> OffsetFetchResponsePartition {
    OffsetFetchResponsePartition {
        partition_index,
        committed_offset: -1,
        committed_leader_epoch: -1,
        metadata: Some(String::new()),
        error_code: code,
    }
}

fn to_topics(found: Vec<(String, Vec<FetchedOffset>)>) -> Vec<OffsetFetchResponseTopic> {
    found
        .into_iter()
        .map(|(name, parts)| OffsetFetchResponseTopic {
            name,
            topic_id: [0; 16],
            partitions: parts
                .into_iter()
                .map(|f| OffsetFetchResponsePartition {
                    partition_index: f.partition,
                    committed_offset: f.offset,
                    committed_leader_epoch: f.leader_epoch,
                    metadata: Some(f.metadata),
                    error_code: f.error_code,
                })
                .collect(),
        })
        .collect()
}

fn requested(topics: Option<Vec<OffsetFetchRequestTopic>>) -> Topics {
    topics.map(|ts| {
        ts.into_iter()
            .map(|t| (t.name, t.partition_indexes))
            .collect()
    })
}

/// v10 names topics by id: the requested ids this broker knows, as names,
/// and an UNKNOWN_TOPIC_ID answer for each partition of the others (Kafka's
/// answer for an id it cannot resolve; the rest of the group's request
/// goes on).
fn resolve_ids(
    image: &MetadataImage,
    topics: Option<Vec<OffsetFetchRequestTopic>>,
) -> (Topics, Vec<OffsetFetchResponseTopic>) {
    let Some(topics) = topics else {
        return (None, Vec::new());
    };
    let mut known = Vec::with_capacity(topics.len());
    let mut unknown = Vec::new();
    for t in topics {
        match image.topic_names_by_id.get(&t.topic_id) {
            Some(name) => known.push((name.clone(), t.partition_indexes)),
            None => unknown.push(OffsetFetchResponseTopic {
                name: String::new(),
                topic_id: t.topic_id,
                partitions: t
                    .partition_indexes
                    .into_iter()
                    .map(|p| failed_partition(p, error_code::UNKNOWN_TOPIC_ID))
                    .collect(),
            }),
        }
    }
    (Some(known), unknown)
}

/// Names the answer's topics by id for v10. A topic the group committed
/// that no longer exists has no id a client could ask about, and is left
/// out of an all-topics answer.
fn name_by_id(
    image: &MetadataImage,
    topics: Vec<OffsetFetchResponseTopic>,
) -> Vec<OffsetFetchResponseTopic> {
    topics
        .into_iter()
        .filter_map(|t| {
            let id = image.topics.get(&t.name)?.id;
            Some(OffsetFetchResponseTopic {
                name: String::new(),
                topic_id: id,
                partitions: t.partitions,
            })
        })
        .collect()
}

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: OffsetFetchRequest,
    access: &Access<'_>,
) -> OffsetFetchResponse {
    if header.api_version >= GROUPS_FROM {
        let by_id = header.api_version >= TOPIC_ID_FROM;
        let mut groups = Vec::with_capacity(req.groups.len());
        for g in req.groups {
            let image = BrokerState::of(shard).image();
            let (topics, unknown_ids) = if by_id {
                resolve_ids(&image, g.topics)
            } else {
                (requested(g.topics), Vec::new())
            };
            let (code, mut topics) = fetch_one(
                shard,
                &g.group_id,
                topics,
                req.require_stable,
                g.member_id.map(|m| (m, g.member_epoch)),
                access,
            )
            .await;
            if by_id {
                topics = name_by_id(&BrokerState::of(shard).image(), topics);
                topics.extend(unknown_ids);
            }
            groups.push(OffsetFetchResponseGroup {
                group_id: g.group_id,
                topics,
                error_code: code,
            });
        }
        return OffsetFetchResponse {
            groups,
            ..OffsetFetchResponse::default()
        };
    }
    let (code, topics) = fetch_one(
        shard,
        &req.group_id,
        requested(req.topics),
        req.require_stable,
        None,
        access,
    )
    .await;
    OffsetFetchResponse {
        throttle_time_ms: 0,
        topics,
        error_code: if header.api_version >= TOP_LEVEL_ERROR_FROM {
            code
        } else {
            error_code::NONE
        },
        groups: Vec::new(),
    }
}
