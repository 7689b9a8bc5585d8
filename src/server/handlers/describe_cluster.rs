//! DescribeCluster: this broker is the whole cluster and its controller.

use std::rc::Rc;

use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_cluster::*;
use crate::shard::shard::Shard;

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let broker = BrokerState::of(shard);
    let (host, port) = broker.config.advertised_host_port();
    DescribeClusterResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        error_message: None,
        endpoint_type: req.endpoint_type,
        cluster_id: broker.cluster_id.to_string(),
        controller_id: broker.node_id(),
        brokers: vec![DescribeClusterBroker {
            broker_id: broker.node_id(),
            host,
            port,
            rack: None,
        }],
        cluster_authorized_operations: i32::MIN,
    }
}
