//! Kafka's ConfigResource types (`ConfigResource.Type`): the kinds of
//! resource that DescribeConfigs, AlterConfigs, IncrementalAlterConfigs
//! and ListConfigResources name, and that a metadata Config record sets.

pub const TOPIC: i8 = 2;
pub const BROKER: i8 = 4;
pub const BROKER_LOGGER: i8 = 8;
/// A client-metrics subscription (KIP-714).
pub const CLIENT_METRICS: i8 = 16;
/// A consumer group's dynamic configs (KIP-848).
pub const GROUP: i8 = 32;
