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
    let image = broker.image();
    DescribeClusterResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        error_message: None,
        endpoint_type: req.endpoint_type,
        cluster_id: broker.cluster_id().to_string(),
        controller_id: broker.node_id(),
        brokers: crate::server::handlers::metadata::live_brokers(&broker, &image)
            .into_iter()
            .map(|b| DescribeClusterBroker {
                broker_id: b.id,
                host: b.host,
                port: b.port,
                rack: b.rack,
            })
            .collect(),
        cluster_authorized_operations: i32::MIN,
    }
}
