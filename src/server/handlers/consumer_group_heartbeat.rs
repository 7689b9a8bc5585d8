//! ConsumerGroupHeartbeat (KIP-848): forwarded to the group's coordinator
//! shard, where the consumer-group core decides and the coordinator
//! persists, applies and answers (`group/coordinator/consumer.rs`).

use std::rc::Rc;

use crate::acl::matrix;
use crate::group::consumer::heartbeat::{HeartbeatError, HeartbeatRequest};
use crate::group::consumer::member::LEAVE_GROUP_MEMBER_EPOCH;
use crate::group::coordinator::{on_coordinator, GroupCoordinator, HeartbeatPrincipal};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::consumer_group_heartbeat::*;
use crate::server::handlers::access::Access;
use crate::server::handlers::consumer_connections;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: ConsumerGroupHeartbeatRequest,
    client_host: &str,
    access: &Access<'_>,
) -> ConsumerGroupHeartbeatResponse {
    // Kafka's KafkaApis: READ on the group, then DESCRIBE on every
    // subscribed topic name.
    let image = BrokerState::of(shard).image();
    if !access.allows(
        &image,
        matrix::CONSUMER_GROUP_HEARTBEAT_GROUP,
        &req.group_id,
    ) {
        return refused(error_code::GROUP_AUTHORIZATION_FAILED, None);
    }
    if let Some(names) = &req.subscribed_topic_names {
        let denied = access.denied(
            &image,
            matrix::CONSUMER_GROUP_HEARTBEAT_TOPIC,
            names.iter().map(String::as_str),
        );
        if !denied.is_empty() {
            let mut denied: Vec<String> = denied.into_iter().collect();
            denied.sort();
            return refused(
                error_code::TOPIC_AUTHORIZATION_FAILED,
                Some(format!("Topic authorization failed for topics {denied:?}")),
            );
        }
    }
    let core_req = HeartbeatRequest {
        api_version: header.api_version,
        group_id: req.group_id.clone(),
        member_id: req.member_id,
        member_epoch: req.member_epoch,
        instance_id: req.instance_id,
        rack_id: req.rack_id,
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        subscribed_topic_names: req.subscribed_topic_names,
        subscribed_topic_regex: req.subscribed_topic_regex,
        server_assignor: req.server_assignor,
        topic_partitions: req.topic_partitions.map(|tps| {
            tps.into_iter()
                .map(|t| (t.topic_id, t.partitions))
                .collect()
        }),
        client_id: header.client_id.clone().unwrap_or_default(),
        client_host: format!("/{client_host}"),
    };
    let member = HeartbeatPrincipal {
        principal: access.principal().to_string(),
        host: client_host.to_string(),
    };
    let connection = access.connection_id();
    let dynamic = core_req.instance_id.is_none();
    let left = core_req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH;
    let answer = on_coordinator(
        shard,
        &req.group_id,
        move |c: Rc<GroupCoordinator>, s, p| {
            c.consumer_heartbeat(s, p, core_req, member, connection)
        },
    )
    .await
    .unwrap_or_else(|code| {
        Err(HeartbeatError {
            error_code: code,
            message: String::new(),
        })
    });
    if let (Ok(r), true) = (&answer, dynamic) {
        consumer_connections::heartbeat_answered(
            shard,
            connection,
            &req.group_id,
            &r.member_id,
            left,
        );
    }
    match answer {
        Ok(r) => ConsumerGroupHeartbeatResponse {
            throttle_time_ms: 0,
            error_code: error_code::NONE,
            error_message: None,
            member_id: Some(r.member_id),
            member_epoch: r.member_epoch,
            heartbeat_interval_ms: r.heartbeat_interval_ms,
            assignment: r.assignment.map(|a| {
                a.into_iter()
                    .map(|(topic_id, partitions)| TopicPartitions {
                        topic_id,
                        partitions,
                    })
                    .collect()
            }),
        },
        Err(e) => refused(e.error_code, (!e.message.is_empty()).then_some(e.message)),
    }
}

fn refused(code: i16, message: Option<String>) -> ConsumerGroupHeartbeatResponse {
    ConsumerGroupHeartbeatResponse {
        error_code: code,
        error_message: message,
        ..Default::default()
    }
}
