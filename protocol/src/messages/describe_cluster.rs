//! DescribeCluster (key 60), versions 0-2; every version is flexible.
//!
//! Newer admin clients use this instead of Metadata to list brokers and the
//! cluster's authorized operations. v1 adds an endpoint type (1 = brokers,
//! 2 = controllers); a broker answers a request for controllers with
//! MISMATCHED_ENDPOINT_TYPE. v2 (KIP-1073) lets the client ask for the
//! fenced brokers too, each marked as such.

use bytes::{BufMut, BytesMut};

use crate::codec::{parse_tag, put_tag, DecodeResult, Reader, Writer};

/// pinlog's own tagged field on each broker of the answer: its broker epoch
/// (the offset of its registration in the metadata log), for `pinlog
/// cluster describe`. Kafka's clients skip tags they do not know, as the
/// protocol requires; the tag is far above any Kafka uses.
pub const PINLOG_BROKER_EPOCH_TAG: u32 = 10_000;

/// `endpoint_type` value asking for (or describing) brokers.
pub const ENDPOINT_TYPE_BROKERS: i8 = 1;
/// `endpoint_type` value asking for (or describing) controllers.
pub const ENDPOINT_TYPE_CONTROLLERS: i8 = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeClusterRequest {
    pub include_cluster_authorized_operations: bool,
    /// v1+; [`ENDPOINT_TYPE_BROKERS`] before that.
    pub endpoint_type: i8,
    /// v2+: list the fenced brokers as well.
    pub include_fenced_brokers: bool,
}

impl Default for DescribeClusterRequest {
    fn default() -> Self {
        DescribeClusterRequest {
            include_cluster_authorized_operations: false,
            endpoint_type: ENDPOINT_TYPE_BROKERS,
            include_fenced_brokers: false,
        }
    }
}

impl DescribeClusterRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let mut req = DescribeClusterRequest {
            include_cluster_authorized_operations: r
                .bool("include_cluster_authorized_operations")?,
            ..DescribeClusterRequest::default()
        };
        if version >= 1 {
            req.endpoint_type = r.i8("endpoint_type")?;
        }
        if version >= 2 {
            req.include_fenced_brokers = r.bool("include_fenced_brokers")?;
        }
        r.skip_tagged_fields()?;
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_bool(self.include_cluster_authorized_operations);
        if version >= 1 {
            w.put_i8(self.endpoint_type);
        }
        if version >= 2 {
            w.put_bool(self.include_fenced_brokers);
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeClusterResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    /// v1+; [`ENDPOINT_TYPE_BROKERS`] before that.
    pub endpoint_type: i8,
    pub cluster_id: String,
    /// -1 when unknown.
    pub controller_id: i32,
    pub brokers: Vec<DescribeClusterBroker>,
    /// `i32::MIN` unless requested.
    pub cluster_authorized_operations: i32,
}

impl Default for DescribeClusterResponse {
    fn default() -> Self {
        DescribeClusterResponse {
            throttle_time_ms: 0,
            error_code: 0,
            error_message: None,
            endpoint_type: ENDPOINT_TYPE_BROKERS,
            cluster_id: String::new(),
            controller_id: -1,
            brokers: Vec::new(),
            cluster_authorized_operations: i32::MIN,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeClusterBroker {
    pub broker_id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
    /// v2+.
    pub is_fenced: bool,
    /// [`PINLOG_BROKER_EPOCH_TAG`]; `None` from a broker that is not
    /// pinlog.
    pub broker_epoch: Option<i64>,
}

impl DescribeClusterResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let mut resp = DescribeClusterResponse {
            throttle_time_ms: r.i32("throttle_time_ms")?,
            error_code: r.i16("error_code")?,
            error_message: r.nullable_string("error_message", true)?,
            ..DescribeClusterResponse::default()
        };
        if version >= 1 {
            resp.endpoint_type = r.i8("endpoint_type")?;
        }
        resp.cluster_id = r.string("cluster_id", true)?;
        resp.controller_id = r.i32("controller_id")?;
        // broker_id, host, port, rack, tags: 4 + 1 + 4 + 1 + 1 bytes at least.
        resp.brokers = r.array("brokers", true, 11, |r| {
            let mut broker = DescribeClusterBroker {
                broker_id: r.i32("broker_id")?,
                host: r.string("host", true)?,
                port: r.i32("port")?,
                rack: r.nullable_string("rack", true)?,
                is_fenced: version >= 2 && r.bool("is_fenced")?,
                broker_epoch: None,
            };
            let mut epoch = None;
            r.tagged_fields(|tag, value| {
                if tag == PINLOG_BROKER_EPOCH_TAG {
                    epoch = Some(parse_tag(tag, value, |r| r.i64("broker_epoch"))?);
                }
                Ok(())
            })?;
            broker.broker_epoch = epoch;
            Ok(broker)
        })?;
        resp.cluster_authorized_operations = r.i32("cluster_authorized_operations")?;
        r.skip_tagged_fields()?;
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_nullable_string(self.error_message.as_deref(), true);
        if version >= 1 {
            w.put_i8(self.endpoint_type);
        }
        w.put_string(&self.cluster_id, true);
        w.put_i32(self.controller_id);
        w.put_array_len(Some(self.brokers.len()), true);
        for b in &self.brokers {
            w.put_i32(b.broker_id);
            w.put_string(&b.host, true);
            w.put_i32(b.port);
            w.put_nullable_string(b.rack.as_deref(), true);
            if version >= 2 {
                w.put_bool(b.is_fenced);
            }
            match b.broker_epoch {
                Some(epoch) => {
                    w.put_uvarint(1);
                    put_tag(w, PINLOG_BROKER_EPOCH_TAG, &epoch.to_be_bytes());
                }
                None => w.put_empty_tagged_fields(),
            }
        }
        w.put_i32(self.cluster_authorized_operations);
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=2;

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> DescribeClusterRequest {
        DescribeClusterRequest {
            include_cluster_authorized_operations: true,
            endpoint_type: if version >= 1 {
                ENDPOINT_TYPE_CONTROLLERS
            } else {
                ENDPOINT_TYPE_BROKERS
            },
            include_fenced_brokers: version >= 2,
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> DescribeClusterResponse {
        DescribeClusterResponse {
            throttle_time_ms: 3,
            error_code: 114,
            error_message: Some("mismatched endpoint type".into()),
            endpoint_type: if version >= 1 {
                ENDPOINT_TYPE_CONTROLLERS
            } else {
                ENDPOINT_TYPE_BROKERS
            },
            cluster_id: "cluster-x".into(),
            controller_id: 2,
            brokers: vec![
                DescribeClusterBroker {
                    broker_id: 1,
                    host: "broker-1.example".into(),
                    port: 9092,
                    rack: Some("rack-a".into()),
                    is_fenced: false,
                    broker_epoch: Some(42),
                },
                DescribeClusterBroker {
                    broker_id: 2,
                    host: "broker-2.example".into(),
                    port: 9093,
                    rack: None,
                    is_fenced: version >= 2,
                    broker_epoch: None,
                },
            ],
            cluster_authorized_operations: 0x0ff8,
        }
    }

    conformance_tests!(
        DescribeClusterRequest,
        DescribeClusterResponse,
        VERSIONS,
        request,
        response
    );
}
