//! ListGroups (key 16), versions 0-5; flexible from version 3.
//!
//! Admin tools list the groups a broker coordinates. v4 (KIP-518) lets the
//! caller filter by state and returns each group's state; v5 (KIP-848) does
//! the same for the group type ("classic", "consumer", ...). An empty filter
//! matches every group.

use bytes::{BufMut, BytesMut};

use crate::codec::{min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer};

const FLEXIBLE_FROM: i16 = 3;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListGroupsRequest {
    /// v4+.
    pub states_filter: Vec<String>,
    /// v5+.
    pub types_filter: Vec<String>,
}

impl ListGroupsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let s = min_string_bytes(flexible);
        let mut req = ListGroupsRequest::default();
        if version >= 4 {
            req.states_filter = r.array("states_filter", flexible, s, |r| {
                r.string("state", flexible)
            })?;
        }
        if version >= 5 {
            req.types_filter =
                r.array("types_filter", flexible, s, |r| r.string("type", flexible))?;
        }
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version >= 4 {
            w.put_array_len(Some(self.states_filter.len()), flexible);
            for s in &self.states_filter {
                w.put_string(s, flexible);
            }
        }
        if version >= 5 {
            w.put_array_len(Some(self.types_filter.len()), flexible);
            for t in &self.types_filter {
                w.put_string(t, flexible);
            }
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListGroupsResponse {
    /// v1+.
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub groups: Vec<ListedGroup>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedGroup {
    pub group_id: String,
    pub protocol_type: String,
    /// v4+.
    pub group_state: String,
    /// v5+.
    pub group_type: String,
}

impl ListGroupsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let s = min_string_bytes(flexible);
        let throttle_time_ms = if version >= 1 {
            r.i32("throttle_time_ms")?
        } else {
            0
        };
        let error_code = r.i16("error_code")?;
        let group_min = s
            + s
            + if version >= 4 { s } else { 0 }
            + if version >= 5 { s } else { 0 }
            + min_tags_bytes(flexible);
        let groups = r.array("groups", flexible, group_min, |r| {
            let mut g = ListedGroup {
                group_id: r.string("group_id", flexible)?,
                protocol_type: r.string("protocol_type", flexible)?,
                ..ListedGroup::default()
            };
            if version >= 4 {
                g.group_state = r.string("group_state", flexible)?;
            }
            if version >= 5 {
                g.group_type = r.string("group_type", flexible)?;
            }
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(g)
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(ListGroupsResponse {
            throttle_time_ms,
            error_code,
            groups,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        if version >= 1 {
            w.put_i32(self.throttle_time_ms);
        }
        w.put_i16(self.error_code);
        w.put_array_len(Some(self.groups.len()), flexible);
        for g in &self.groups {
            w.put_string(&g.group_id, flexible);
            w.put_string(&g.protocol_type, flexible);
            if version >= 4 {
                w.put_string(&g.group_state, flexible);
            }
            if version >= 5 {
                w.put_string(&g.group_type, flexible);
            }
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 0..=5;

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> ListGroupsRequest {
        ListGroupsRequest {
            states_filter: if version >= 4 {
                vec!["Stable".into(), "Empty".into()]
            } else {
                vec![]
            },
            types_filter: if version >= 5 {
                vec!["classic".into()]
            } else {
                vec![]
            },
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> ListGroupsResponse {
        // `s` where `version` carries the field, else the field's default.
        let since = |from: i16, s: &str| {
            if version >= from {
                s.to_string()
            } else {
                String::new()
            }
        };
        let state = |s: &str| since(4, s);
        let kind = |s: &str| since(5, s);
        ListGroupsResponse {
            throttle_time_ms: if version >= 1 { 12 } else { 0 },
            error_code: 15,
            groups: vec![
                ListedGroup {
                    group_id: "billing".into(),
                    protocol_type: "consumer".into(),
                    group_state: state("Stable"),
                    group_type: kind("classic"),
                },
                ListedGroup {
                    group_id: "connect-ß".into(),
                    protocol_type: "".into(),
                    group_state: state("Empty"),
                    group_type: kind("consumer"),
                },
            ],
        }
    }

    #[test]
    fn huge_counts_are_refused() {
        let mut b = BytesMut::new();
        b.put_uvarint(u32::MAX as u64);
        assert_count_too_large::<ListGroupsRequest>(b.freeze(), 4);
        let mut b = BytesMut::new();
        b.put_i16(0);
        b.put_i32(i32::MAX);
        assert_count_too_large::<ListGroupsResponse>(b.freeze(), 0);
    }

    conformance_tests!(
        ListGroupsRequest,
        ListGroupsResponse,
        VERSIONS,
        request,
        response
    );
}
