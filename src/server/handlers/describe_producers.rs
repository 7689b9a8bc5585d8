//! DescribeProducers: the producers a partition leader knows, with their
//! epoch, last sequence, coordinator epoch and the start of their open
//! transaction (`kafka-transactions.sh describe-producers`, and
//! `find-hanging`, which looks for open transactions their coordinator
//! does not know). Kafka's rule: READ on the topic, else its partitions get
//! TOPIC_AUTHORIZATION_FAILED, whether it exists or not.

use std::rc::Rc;

use crate::acl::matrix;
use crate::node::replicas;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_producers::*;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DescribeProducersRequest,
    access: &Access<'_>,
) -> DescribeProducersResponse {
    let mut resp = DescribeProducersResponse::default();
    let denied = access.denied(
        &BrokerState::of(shard).image(),
        matrix::DESCRIBE_PRODUCERS_TOPIC,
        req.topics.iter().map(|t| t.name.as_str()),
    );
    for t in req.topics {
        let mut partitions = Vec::with_capacity(t.partition_indexes.len());
        if denied.contains(&t.name) {
            partitions.extend(t.partition_indexes.iter().map(|p| PartitionResponse {
                partition_index: *p,
                error_code: error_code::TOPIC_AUTHORIZATION_FAILED,
                ..PartitionResponse::default()
            }));
            resp.topics.push(TopicResponse {
                name: t.name,
                partitions,
            });
            continue;
        }
        for p in t.partition_indexes {
            let tp = TopicPartition::new(t.name.clone(), p);
            let owner = shard.owner(&tp);
            let described = shard
                .submit_to(owner, move |s| async move { describe(&s, &tp).await })
                .await
                .unwrap_or_else(|_| PartitionResponse {
                    partition_index: p,
                    error_code: error_code::NOT_LEADER_OR_FOLLOWER,
                    ..PartitionResponse::default()
                });
            partitions.push(described);
        }
        resp.topics.push(TopicResponse {
            name: t.name,
            partitions,
        });
    }
    resp
}

async fn describe(shard: &Rc<Shard>, tp: &TopicPartition) -> PartitionResponse {
    let mut out = PartitionResponse {
        partition_index: tp.partition,
        ..PartitionResponse::default()
    };
    let Some(led) = replicas::led_partition(shard, tp) else {
        let known = crate::node::state::BrokerState::of(shard)
            .image()
            .partition(&tp.topic, tp.partition)
            .is_some();
        out.error_code = if known {
            error_code::NOT_LEADER_OR_FOLLOWER
        } else {
            error_code::UNKNOWN_TOPIC_OR_PARTITION
        };
        return out;
    };
    let Ok(log) = led.log.read().await else {
        out.error_code = error_code::KAFKA_STORAGE_ERROR;
        return out;
    };
    out.active_producers = log
        .producer_state()
        .entries()
        .map(|e| ProducerState {
            producer_id: e.producer_id,
            producer_epoch: i32::from(e.producer_epoch),
            last_sequence: e.last_seq(),
            last_timestamp: e.last_timestamp,
            coordinator_epoch: e.coordinator_epoch,
            current_txn_start_offset: e.current_txn_first_offset,
        })
        .collect();
    out
}
