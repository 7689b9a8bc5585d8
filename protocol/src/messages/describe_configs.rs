//! DescribeConfigs (key 32), versions 1-4; flexible from version 4.
//!
//! v0, with its per-config `is_default` flag, is below pinlog's range: v1
//! replaced that flag with `config_source` and added synonyms, so decoding
//! v0 with this code would misread the stream.

use bytes::{BufMut, BytesMut};

use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

const FLEXIBLE_FROM: i16 = 4;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeConfigsRequest {
    pub resources: Vec<DescribeConfigsResource>,
    /// v1+.
    pub include_synonyms: bool,
    /// v3+.
    pub include_documentation: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeConfigsResource {
    /// 2 = topic, 4 = broker, 8 = broker logger.
    pub resource_type: i8,
    pub resource_name: String,
    /// `None` (a null array) lists every key.
    pub configuration_keys: Option<Vec<String>>,
}

impl DescribeConfigsRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let s = min_string_bytes(flexible);
        let min = 1 + s + min_array_bytes(flexible) + min_tags_bytes(flexible);
        let resources = r.array("resources", flexible, min, |r| {
            let resource_type = r.i8("resource_type")?;
            let resource_name = r.string("resource_name", flexible)?;
            let configuration_keys = r.nullable_array("configuration_keys", flexible, s, |r| {
                r.string("configuration_key", flexible)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(DescribeConfigsResource {
                resource_type,
                resource_name,
                configuration_keys,
            })
        })?;
        let mut req = DescribeConfigsRequest {
            resources,
            ..DescribeConfigsRequest::default()
        };
        if version >= 1 {
            req.include_synonyms = r.bool("include_synonyms")?;
        }
        if version >= 3 {
            req.include_documentation = r.bool("include_documentation")?;
        }
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_array_len(Some(self.resources.len()), flexible);
        for res in &self.resources {
            w.put_i8(res.resource_type);
            w.put_string(&res.resource_name, flexible);
            match &res.configuration_keys {
                None => w.put_array_len(None, flexible),
                Some(keys) => {
                    w.put_array_len(Some(keys.len()), flexible);
                    for key in keys {
                        w.put_string(key, flexible);
                    }
                }
            }
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
        if version >= 1 {
            w.put_bool(self.include_synonyms);
        }
        if version >= 3 {
            w.put_bool(self.include_documentation);
        }
        if flexible {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeConfigsResponse {
    pub throttle_time_ms: i32,
    pub results: Vec<DescribeConfigsResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeConfigsResult {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub resource_type: i8,
    pub resource_name: String,
    pub configs: Vec<DescribeConfigsResourceResult>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeConfigsResourceResult {
    pub name: String,
    /// `None` for sensitive or unset values.
    pub value: Option<String>,
    pub read_only: bool,
    /// v1+; -1 when unknown.
    pub config_source: i8,
    pub is_sensitive: bool,
    /// v1+; filled only when the request asked for synonyms.
    pub synonyms: Vec<DescribeConfigsSynonym>,
    /// v3+; 0 when unknown.
    pub config_type: i8,
    /// v3+.
    pub documentation: Option<String>,
}

impl Default for DescribeConfigsResourceResult {
    fn default() -> Self {
        DescribeConfigsResourceResult {
            name: String::new(),
            value: None,
            read_only: false,
            config_source: -1,
            is_sensitive: false,
            synonyms: Vec::new(),
            config_type: 0,
            documentation: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeConfigsSynonym {
    pub name: String,
    pub value: Option<String>,
    pub source: i8,
}

impl DescribeConfigsResponse {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let flexible = version >= FLEXIBLE_FROM;
        let s = min_string_bytes(flexible);
        let a = min_array_bytes(flexible);
        let t = min_tags_bytes(flexible);
        let throttle_time_ms = r.i32("throttle_time_ms")?;
        let result_min = 2 + s + 1 + s + a + t;
        let config_min = s
            + s
            + 1
            + if version >= 1 { 1 } else { 0 }
            + 1
            + if version >= 1 { a } else { 0 }
            + if version >= 3 { 1 + s } else { 0 }
            + t;
        let results = r.array("results", flexible, result_min, |r| {
            let error_code = r.i16("error_code")?;
            let error_message = r.nullable_string("error_message", flexible)?;
            let resource_type = r.i8("resource_type")?;
            let resource_name = r.string("resource_name", flexible)?;
            let configs = r.array("configs", flexible, config_min, |r| {
                decode_config(r, version, flexible)
            })?;
            if flexible {
                r.skip_tagged_fields()?;
            }
            Ok(DescribeConfigsResult {
                error_code,
                error_message,
                resource_type,
                resource_name,
                configs,
            })
        })?;
        if flexible {
            r.skip_tagged_fields()?;
        }
        Ok(DescribeConfigsResponse {
            throttle_time_ms,
            results,
        })
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        let flexible = version >= FLEXIBLE_FROM;
        w.put_i32(self.throttle_time_ms);
        w.put_array_len(Some(self.results.len()), flexible);
        for res in &self.results {
            w.put_i16(res.error_code);
            w.put_nullable_string(res.error_message.as_deref(), flexible);
            w.put_i8(res.resource_type);
            w.put_string(&res.resource_name, flexible);
            w.put_array_len(Some(res.configs.len()), flexible);
            for c in &res.configs {
                encode_config(c, w, version, flexible);
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

fn decode_config(
    r: &mut Reader,
    version: i16,
    flexible: bool,
) -> DecodeResult<DescribeConfigsResourceResult> {
    let s = min_string_bytes(flexible);
    let mut c = DescribeConfigsResourceResult {
        name: r.string("name", flexible)?,
        value: r.nullable_string("value", flexible)?,
        read_only: r.bool("read_only")?,
        ..DescribeConfigsResourceResult::default()
    };
    if version >= 1 {
        c.config_source = r.i8("config_source")?;
    }
    c.is_sensitive = r.bool("is_sensitive")?;
    if version >= 1 {
        c.synonyms = r.array(
            "synonyms",
            flexible,
            s + s + 1 + min_tags_bytes(flexible),
            |r| {
                let synonym = DescribeConfigsSynonym {
                    name: r.string("name", flexible)?,
                    value: r.nullable_string("value", flexible)?,
                    source: r.i8("source")?,
                };
                if flexible {
                    r.skip_tagged_fields()?;
                }
                Ok(synonym)
            },
        )?;
    }
    if version >= 3 {
        c.config_type = r.i8("config_type")?;
        c.documentation = r.nullable_string("documentation", flexible)?;
    }
    if flexible {
        r.skip_tagged_fields()?;
    }
    Ok(c)
}

fn encode_config(
    c: &DescribeConfigsResourceResult,
    w: &mut BytesMut,
    version: i16,
    flexible: bool,
) {
    w.put_string(&c.name, flexible);
    w.put_nullable_string(c.value.as_deref(), flexible);
    w.put_bool(c.read_only);
    if version >= 1 {
        w.put_i8(c.config_source);
    }
    w.put_bool(c.is_sensitive);
    if version >= 1 {
        w.put_array_len(Some(c.synonyms.len()), flexible);
        for syn in &c.synonyms {
            w.put_string(&syn.name, flexible);
            w.put_nullable_string(syn.value.as_deref(), flexible);
            w.put_i8(syn.source);
            if flexible {
                w.put_empty_tagged_fields();
            }
        }
    }
    if version >= 3 {
        w.put_i8(c.config_type);
        w.put_nullable_string(c.documentation.as_deref(), flexible);
    }
    if flexible {
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::*;

    const VERSIONS: std::ops::RangeInclusive<i16> = 1..=4;

    /// A request with a non-default value in every field `version` carries.
    fn request(version: i16) -> DescribeConfigsRequest {
        DescribeConfigsRequest {
            resources: vec![
                DescribeConfigsResource {
                    resource_type: 2,
                    resource_name: "orders".into(),
                    configuration_keys: Some(vec!["retention.ms".into(), "cleanup.policy".into()]),
                },
                DescribeConfigsResource {
                    resource_type: 4,
                    resource_name: "1".into(),
                    configuration_keys: None,
                },
            ],
            include_synonyms: true,
            include_documentation: version >= 3,
        }
    }

    /// A response with a non-default value in every field `version` carries.
    fn response(version: i16) -> DescribeConfigsResponse {
        let v3 = version >= 3;
        DescribeConfigsResponse {
            throttle_time_ms: 4,
            results: vec![
                DescribeConfigsResult {
                    error_code: 0,
                    error_message: None,
                    resource_type: 2,
                    resource_name: "orders".into(),
                    configs: vec![
                        DescribeConfigsResourceResult {
                            name: "retention.ms".into(),
                            value: Some("604800000".into()),
                            read_only: true,
                            config_source: 5,
                            is_sensitive: false,
                            synonyms: vec![
                                DescribeConfigsSynonym {
                                    name: "retention.ms".into(),
                                    value: Some("604800000".into()),
                                    source: 1,
                                },
                                DescribeConfigsSynonym {
                                    name: "log.retention.ms".into(),
                                    value: None,
                                    source: 5,
                                },
                            ],
                            config_type: if v3 { 5 } else { 0 },
                            documentation: v3.then(|| "How long to keep a log.".to_string()),
                        },
                        DescribeConfigsResourceResult {
                            name: "ssl.key.password".into(),
                            is_sensitive: true,
                            ..DescribeConfigsResourceResult::default()
                        },
                    ],
                },
                DescribeConfigsResult {
                    error_code: 3,
                    error_message: Some("unknown topic".into()),
                    resource_type: 2,
                    resource_name: "missing".into(),
                    configs: vec![],
                },
            ],
        }
    }

    conformance_tests!(
        DescribeConfigsRequest,
        DescribeConfigsResponse,
        VERSIONS,
        request,
        response
    );
}
