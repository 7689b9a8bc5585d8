//! OffsetCommit: from group members (with their generation) and from
//! admin tools and standalone consumers (generation -1, empty groups only);
//! v10 names topics by id.

use std::collections::HashMap;
use std::rc::Rc;

use crate::acl::matrix;
use crate::group::coordinator::{on_coordinator, CommitPartition, GroupCoordinator};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_commit::*;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;

/// First version whose partitions carry the committed leader epoch.
const LEADER_EPOCH_FROM: i16 = 6;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: OffsetCommitRequest,
    access: &Access<'_>,
) -> OffsetCommitResponse {
    let with_epoch = header.api_version >= LEADER_EPOCH_FROM;
    let by_id = header.api_version >= TOPIC_ID_FROM;
    let image = BrokerState::of(shard).image();
    // v10 names topics by id: the name each id stands for now, and the ids
    // to answer with. An unknown id is answered UNKNOWN_TOPIC_ID on its
    // partitions, and the rest of the request goes on, as in Kafka.
    let mut ids_by_name: HashMap<String, [u8; 16]> = HashMap::new();
    let mut unknown_ids: Vec<OffsetCommitResponseTopic> = Vec::new();
    let topics: Vec<(String, Vec<CommitPartition>)> = req
        .topics
        .into_iter()
        .filter_map(|t| {
            let name = if by_id {
                let Some(name) = image.topic_names_by_id.get(&t.topic_id) else {
                    unknown_ids.push(OffsetCommitResponseTopic {
                        name: String::new(),
                        topic_id: t.topic_id,
                        partitions: t
                            .partitions
                            .iter()
                            .map(|p| OffsetCommitResponsePartition {
                                partition_index: p.partition_index,
                                error_code: error_code::UNKNOWN_TOPIC_ID,
                            })
                            .collect(),
                    });
                    return None;
                };
                ids_by_name.insert(name.clone(), t.topic_id);
                name.clone()
            } else {
                t.name
            };
            let parts = t
                .partitions
                .into_iter()
                .map(|p| CommitPartition {
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: if with_epoch {
                        p.committed_leader_epoch
                    } else {
                        -1
                    },
                    metadata: p.committed_metadata,
                })
                .collect();
            Some((name, parts))
        })
        .collect();
    let every = |code: i16, topics: &[(String, Vec<CommitPartition>)]| {
        topics
            .iter()
            .map(|(t, ps)| (t.clone(), ps.iter().map(|p| (p.partition, code)).collect()))
            .collect::<Vec<_>>()
    };
    // Kafka's rules: READ on the group, else every partition is refused;
    // READ on each topic, else its partitions are.
    let group_allowed = access.allows(&image, matrix::OFFSET_COMMIT_GROUP, &req.group_id);
    let denied = if group_allowed {
        access.denied(
            &image,
            matrix::OFFSET_COMMIT_TOPIC,
            topics.iter().map(|(t, _)| t.as_str()),
        )
    } else {
        Default::default()
    };
    let (topics, refused): (Vec<_>, Vec<_>) =
        topics.into_iter().partition(|(t, _)| !denied.contains(t));
    let mut results = if !group_allowed {
        every(error_code::GROUP_AUTHORIZATION_FAILED, &topics)
    } else if topics.is_empty() {
        Vec::new()
    } else if req.group_id.is_empty() {
        every(error_code::INVALID_GROUP_ID, &topics)
    } else {
        let fallback = topics.clone();
        let version = header.api_version;
        let (group_id, generation, member_id, instance_id) = (
            req.group_id.clone(),
            req.generation_id_or_member_epoch,
            req.member_id,
            req.group_instance_id,
        );
        on_coordinator(
            shard,
            &req.group_id,
            move |c: Rc<GroupCoordinator>, s, p| {
                c.commit(
                    s,
                    p,
                    group_id,
                    generation,
                    member_id,
                    instance_id,
                    topics,
                    version,
                )
            },
        )
        .await
        .unwrap_or_else(|code| every(code, &fallback))
    };
    results.extend(every(error_code::TOPIC_AUTHORIZATION_FAILED, &refused));
    OffsetCommitResponse {
        throttle_time_ms: 0,
        topics: results
            .into_iter()
            .map(|(name, parts)| OffsetCommitResponseTopic {
                topic_id: ids_by_name.get(&name).copied().unwrap_or_default(),
                name: if by_id { String::new() } else { name },
                partitions: parts
                    .into_iter()
                    .map(
                        |(partition_index, error_code)| OffsetCommitResponsePartition {
                            partition_index,
                            error_code,
                        },
                    )
                    .collect(),
            })
            .chain(unknown_ids)
            .collect(),
    }
}
