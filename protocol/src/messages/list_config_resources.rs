//! ListConfigResources (key 74), versions 0-1, flexible in every version.
//!
//! Version 0 was Kafka 3.7's ListClientMetricsResources (KIP-714): it lists
//! the client-metrics subscriptions only. Version 1 (KIP-1142, Kafka 4.1)
//! renamed it and lets the caller name the resource types to list
//! (`kafka-configs.sh --list`, `kafka-client-metrics.sh --list`); an empty
//! list means every type the broker supports.

use bytes::{BufMut, BytesMut};

use crate::codec::{DecodeResult, Reader, Writer};

/// The resource type of every resource in a version 0 answer.
pub const CLIENT_METRICS_RESOURCE_TYPE: i8 = crate::config_resource::CLIENT_METRICS;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListConfigResourcesRequest {
    /// v1+: the types to list; empty lists every supported type.
    pub resource_types: Vec<i8>,
}

impl ListConfigResourcesRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let mut req = ListConfigResourcesRequest::default();
        if version >= 1 {
            req.resource_types = r.array("resource_types", true, 1, |r| r.i8("resource_type"))?;
        }
        r.skip_tagged_fields()?;
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        if version >= 1 {
            w.put_array_len(Some(self.resource_types.len()), true);
            for t in &self.resource_types {
                w.put_i8(*t);
            }
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListConfigResourcesResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub config_resources: Vec<ListedConfigResource>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedConfigResource {
    pub resource_name: String,
    /// v1+; a version 0 answer lists client-metrics resources only.
    pub resource_type: i8,
}

impl ListConfigResourcesResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        // A name (at least its length byte) and the tagged fields.
        let resource_min = 2 + usize::from(version >= 1);
        let config_resources = r.array("config_resources", true, resource_min, |r| {
            let resource_name = r.string("resource_name", true)?;
            let resource_type = if version >= 1 {
                r.i8("resource_type")?
            } else {
                CLIENT_METRICS_RESOURCE_TYPE
            };
            r.skip_tagged_fields()?;
            Ok(ListedConfigResource {
                resource_name,
                resource_type,
            })
        })?;
        r.skip_tagged_fields()?;
        Ok(ListConfigResourcesResponse {
            throttle_time_ms,
            error_code,
            config_resources,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_array_len(Some(self.config_resources.len()), true);
        for c in &self.config_resources {
            w.put_string(&c.resource_name, true);
            if version >= 1 {
                w.put_i8(c.resource_type);
            }
            w.put_empty_tagged_fields();
        }
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::{assert_count_too_large, conformance_tests};

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=1;

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> ListConfigResourcesRequest {
        ListConfigResourcesRequest {
            resource_types: if version >= 1 { vec![2, 4, 32] } else { vec![] },
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> ListConfigResourcesResponse {
        let resource = |name: &str, kind: i8| ListedConfigResource {
            resource_name: name.into(),
            resource_type: if version >= 1 {
                kind
            } else {
                CLIENT_METRICS_RESOURCE_TYPE
            },
        };
        ListConfigResourcesResponse {
            throttle_time_ms: 9,
            error_code: 35,
            config_resources: vec![resource("orders", 2), resource("1", 4)],
        }
    }

    conformance_tests!(
        ListConfigResourcesRequest,
        ListConfigResourcesResponse,
        VERSIONS,
        request,
        response
    );

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<ListConfigResourcesRequest>(b.freeze(), 1);
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i16(0);
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<ListConfigResourcesResponse>(b.freeze(), 0);
    }
}
