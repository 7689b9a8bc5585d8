//! The controller's entry points for the handlers: each admin request,
//! run on the active controller from any shard of any node (forwarded
//! over the controller channel when that is another node), for the client
//! that asked (`envelope.rs`), answered once this node serves its result.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::{
    call, call_as, wrong_answer, AdminAnswer, AdminRequest, Caller, ControllerResult, CreatedTopic,
    NewPartitions, NewTopic, TopicError,
};
use crate::controller::elections::{ElectionOutcome, ElectionType};
use crate::controller::features::FeatureUpdate;
use crate::controller::reassignment::{
    OngoingReassignment, ReassignmentOutcome, ReassignmentRequest,
};
use crate::quorum::QuorumStatus;
use crate::shard::shard::Shard;

/// Creates topics; callable from any shard.
pub async fn create_topics(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    topics: Vec<NewTopic>,
    validate_only: bool,
) -> ControllerResult<Vec<(String, Result<CreatedTopic, TopicError>)>> {
    match call_as(
        shard,
        caller,
        AdminRequest::CreateTopics {
            topics,
            validate_only,
        },
    )
    .await?
    {
        AdminAnswer::CreateTopics(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Deletes topics by name; callable from any shard.
pub async fn delete_topics(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    names: Vec<String>,
) -> ControllerResult<Vec<(String, Result<[u8; 16], TopicError>)>> {
    match call_as(shard, caller, AdminRequest::DeleteTopics { names }).await? {
        AdminAnswer::DeleteTopics(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Grows topics to `count` partitions; callable from any shard.
pub async fn create_partitions(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    requests: Vec<NewPartitions>,
    validate_only: bool,
) -> ControllerResult<Vec<(String, Result<(), TopicError>)>> {
    match call_as(
        shard,
        caller,
        AdminRequest::CreatePartitions {
            requests,
            validate_only,
        },
    )
    .await?
    {
        AdminAnswer::CreatePartitions(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Removes a broker's registration (UnregisterBroker) through the active
/// controller; callable from any shard.
pub async fn unregister_broker(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    broker_id: i32,
) -> ControllerResult<Result<(), TopicError>> {
    match call_as(shard, caller, AdminRequest::UnregisterBroker { broker_id }).await? {
        AdminAnswer::Altered(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Elects leaders (ElectLeaders) through the active controller; callable
/// from any shard. The outcomes are by topic.
pub async fn elect_leaders(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    election: ElectionType,
    partitions: Option<Vec<(String, Vec<i32>)>>,
) -> ControllerResult<BTreeMap<String, Vec<ElectionOutcome>>> {
    match call_as(
        shard,
        caller,
        AdminRequest::ElectLeaders {
            election,
            partitions,
        },
    )
    .await?
    {
        AdminAnswer::Elected(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Starts, changes or cancels reassignments (AlterPartitionReassignments)
/// through the active controller; an outcome per partition, in the order
/// asked.
pub async fn alter_reassignments(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    requests: Vec<ReassignmentRequest>,
    allow_replication_factor_change: bool,
) -> ControllerResult<Vec<ReassignmentOutcome>> {
    match call_as(
        shard,
        caller,
        AdminRequest::AlterReassignments {
            requests,
            allow_replication_factor_change,
        },
    )
    .await?
    {
        AdminAnswer::Reassigned(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// The reassignments in progress, as the active controller's image holds
/// them (ListPartitionReassignments).
pub async fn list_partition_reassignments(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    partitions: Option<Vec<(String, Vec<i32>)>>,
) -> ControllerResult<Vec<OngoingReassignment>> {
    match call_as(
        shard,
        caller,
        AdminRequest::ListReassignments { partitions },
    )
    .await?
    {
        AdminAnswer::Reassignments(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Sets (`Some`) or removes (`None`) topic settings; `incremental` keeps the
/// settings not named, otherwise they are reset (AlterConfigs semantics).
pub async fn alter_topic_configs(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    topic: String,
    changes: Vec<(String, Option<String>)>,
    incremental: bool,
    validate_only: bool,
) -> ControllerResult<Result<(), TopicError>> {
    match call_as(
        shard,
        caller,
        AdminRequest::AlterTopicConfigs {
            topic,
            changes,
            incremental,
            validate_only,
        },
    )
    .await?
    {
        AdminAnswer::Altered(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Sets (`Some`) or removes (`None`) a group's dynamic configs
/// (`metadata/group_config.rs`); `incremental` keeps the ones not named.
pub async fn alter_group_configs(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    group: String,
    changes: Vec<(String, Option<String>)>,
    incremental: bool,
    validate_only: bool,
) -> ControllerResult<Result<(), TopicError>> {
    let request = AdminRequest::AlterGroupConfigs {
        group,
        changes,
        incremental,
        validate_only,
    };
    match call_as(shard, caller, request).await? {
        AdminAnswer::Altered(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Sets (`Some`) or removes (`None`) dynamic broker defaults (broker
/// names, `log.*`); `incremental` keeps the ones not named, otherwise they
/// are reset (AlterConfigs semantics). They apply to every topic at once.
/// The replication throttle rates are `broker`'s own when it is named, the
/// cluster's otherwise.
pub async fn alter_broker_configs(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    broker: Option<i32>,
    changes: Vec<(String, Option<String>)>,
    incremental: bool,
    validate_only: bool,
) -> ControllerResult<Result<(), TopicError>> {
    let request = match broker {
        None => AdminRequest::AlterBrokerConfigs {
            changes,
            incremental,
            validate_only,
        },
        Some(broker) => AdminRequest::AlterOneBrokerConfigs {
            broker,
            changes,
            incremental,
            validate_only,
        },
    };
    match call_as(shard, caller, request).await? {
        AdminAnswer::Altered(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Changes finalized feature levels (UpdateFeatures) through the active
/// controller, all or none; callable from any shard. The answer comes
/// once this node's shards serve the new levels, so an ApiVersions on the
/// same broker right after reports them.
pub async fn update_features(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
    updates: Vec<FeatureUpdate>,
    validate_only: bool,
) -> ControllerResult<Result<(), TopicError>> {
    match call_as(
        shard,
        caller,
        AdminRequest::UpdateFeatures {
            updates,
            validate_only,
        },
    )
    .await?
    {
        AdminAnswer::Altered(r) => Ok(r),
        _ => Err(wrong_answer()),
    }
}

/// Hands out a new producer id, reserving blocks in the metadata log so ids
/// are never reused after a restart or a controller failover.
pub async fn allocate_producer_id(shard: &Rc<Shard>) -> ControllerResult<i64> {
    match call(shard, AdminRequest::AllocateProducerId).await? {
        AdminAnswer::ProducerId(id) => Ok(id),
        _ => Err(wrong_answer()),
    }
}

/// The quorum as the active controller sees it (every voter's progress).
pub async fn describe_quorum(
    shard: &Rc<Shard>,
    caller: Option<Caller>,
) -> ControllerResult<QuorumStatus> {
    match call_as(shard, caller, AdminRequest::DescribeQuorum).await? {
        AdminAnswer::Quorum(s) => Ok(s),
        _ => Err(wrong_answer()),
    }
}
