//! BrokerRegistration (key 62), versions 0-4, and BrokerHeartbeat (key 63),
//! versions 0-1; every version is flexible. KRaft's broker lifecycle: a
//! broker registers with the active controller (its incarnation id is new
//! on every start; the answer is its broker epoch), then heartbeats with
//! its metadata offset and learns whether it is caught up, fenced, or
//! should shut down.
//!
//! BrokerRegistration v1 adds `is_migrating_zk_broker`, v2 the log
//! directories, v3 `previous_broker_epoch` (KIP-966); v4 only changes which
//! features a broker lists. BrokerHeartbeat v1 adds the offline log
//! directories as tagged field 0.

use bytes::{BufMut, BytesMut};

use crate::codec::{parse_tag, put_tag, DecodeResult, Reader, Writer};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrokerRegistrationRequest {
    pub broker_id: i32,
    pub cluster_id: String,
    pub incarnation_id: [u8; 16],
    pub listeners: Vec<RegistrationListener>,
    pub features: Vec<RegistrationFeature>,
    pub rack: Option<String>,
    /// v1+.
    pub is_migrating_zk_broker: bool,
    /// v2+.
    pub log_dirs: Vec<[u8; 16]>,
    /// v3+; -1 when the broker has none (its first start).
    pub previous_broker_epoch: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistrationListener {
    pub name: String,
    pub host: String,
    pub port: u16,
    pub security_protocol: i16,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistrationFeature {
    pub name: String,
    pub min_supported_version: i16,
    pub max_supported_version: i16,
}

impl BrokerRegistrationRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let mut req = BrokerRegistrationRequest {
            broker_id: r.i32("broker_id")?,
            cluster_id: r.string("cluster_id", true)?,
            incarnation_id: r.uuid("incarnation_id")?,
            previous_broker_epoch: -1,
            ..BrokerRegistrationRequest::default()
        };
        // name, host, port, protocol, tags.
        req.listeners = r.array("listeners", true, 1 + 1 + 2 + 2 + 1, |r| {
            let l = RegistrationListener {
                name: r.string("name", true)?,
                host: r.string("host", true)?,
                port: r.u16("port")?,
                security_protocol: r.i16("security_protocol")?,
            };
            r.skip_tagged_fields()?;
            Ok(l)
        })?;
        // name, min, max, tags.
        req.features = r.array("features", true, 1 + 2 + 2 + 1, |r| {
            let f = RegistrationFeature {
                name: r.string("name", true)?,
                min_supported_version: r.i16("min_supported_version")?,
                max_supported_version: r.i16("max_supported_version")?,
            };
            r.skip_tagged_fields()?;
            Ok(f)
        })?;
        req.rack = r.nullable_string("rack", true)?;
        if version >= 1 {
            req.is_migrating_zk_broker = r.bool("is_migrating_zk_broker")?;
        }
        if version >= 2 {
            req.log_dirs = r.array("log_dirs", true, 16, |r| r.uuid("log_dir"))?;
        }
        if version >= 3 {
            req.previous_broker_epoch = r.i64("previous_broker_epoch")?;
        }
        r.skip_tagged_fields()?;
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.broker_id);
        w.put_string(&self.cluster_id, true);
        w.put_slice(&self.incarnation_id);
        w.put_array_len(Some(self.listeners.len()), true);
        for l in &self.listeners {
            w.put_string(&l.name, true);
            w.put_string(&l.host, true);
            w.put_u16(l.port);
            w.put_i16(l.security_protocol);
            w.put_empty_tagged_fields();
        }
        w.put_array_len(Some(self.features.len()), true);
        for f in &self.features {
            w.put_string(&f.name, true);
            w.put_i16(f.min_supported_version);
            w.put_i16(f.max_supported_version);
            w.put_empty_tagged_fields();
        }
        w.put_nullable_string(self.rack.as_deref(), true);
        if version >= 1 {
            w.put_bool(self.is_migrating_zk_broker);
        }
        if version >= 2 {
            w.put_array_len(Some(self.log_dirs.len()), true);
            for d in &self.log_dirs {
                w.put_slice(d);
            }
        }
        if version >= 3 {
            w.put_i64(self.previous_broker_epoch);
        }
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRegistrationResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    /// -1 when the registration failed.
    pub broker_epoch: i64,
}

impl Default for BrokerRegistrationResponse {
    fn default() -> Self {
        BrokerRegistrationResponse {
            throttle_time_ms: 0,
            error_code: 0,
            broker_epoch: -1,
        }
    }
}

impl BrokerRegistrationResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let resp = BrokerRegistrationResponse {
            throttle_time_ms: r.i32("throttle_time_ms")?,
            error_code: r.i16("error_code")?,
            broker_epoch: r.i64("broker_epoch")?,
        };
        r.skip_tagged_fields()?;
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_i64(self.broker_epoch);
        w.put_empty_tagged_fields();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerHeartbeatRequest {
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub current_metadata_offset: i64,
    pub want_fence: bool,
    pub want_shut_down: bool,
    /// v1+, tagged field 0: log directories that failed.
    pub offline_log_dirs: Vec<[u8; 16]>,
}

impl Default for BrokerHeartbeatRequest {
    fn default() -> Self {
        BrokerHeartbeatRequest {
            broker_id: 0,
            broker_epoch: -1,
            current_metadata_offset: 0,
            want_fence: false,
            want_shut_down: false,
            offline_log_dirs: Vec::new(),
        }
    }
}

/// Tag of `offline_log_dirs` in BrokerHeartbeat v1+.
const OFFLINE_LOG_DIRS_TAG: u32 = 0;

impl BrokerHeartbeatRequest {
    pub fn decode(r: &mut Reader, version: i16) -> DecodeResult<Self> {
        let mut req = BrokerHeartbeatRequest {
            broker_id: r.i32("broker_id")?,
            broker_epoch: r.i64("broker_epoch")?,
            current_metadata_offset: r.i64("current_metadata_offset")?,
            want_fence: r.bool("want_fence")?,
            want_shut_down: r.bool("want_shut_down")?,
            offline_log_dirs: Vec::new(),
        };
        let mut offline = Vec::new();
        r.tagged_fields(|tag, value| {
            if version >= 1 && tag == OFFLINE_LOG_DIRS_TAG {
                offline = parse_tag(tag, value, |r| {
                    r.array("offline_log_dirs", true, 16, |r| r.uuid("offline_log_dir"))
                })?;
            }
            Ok(())
        })?;
        req.offline_log_dirs = offline;
        Ok(req)
    }

    pub fn encode(&self, w: &mut BytesMut, version: i16) {
        w.put_i32(self.broker_id);
        w.put_i64(self.broker_epoch);
        w.put_i64(self.current_metadata_offset);
        w.put_bool(self.want_fence);
        w.put_bool(self.want_shut_down);
        // A tag holding its default (no offline directories) is omitted.
        if version >= 1 && !self.offline_log_dirs.is_empty() {
            w.put_uvarint(1);
            let mut value = BytesMut::new();
            value.put_array_len(Some(self.offline_log_dirs.len()), true);
            for d in &self.offline_log_dirs {
                value.put_slice(d);
            }
            put_tag(w, OFFLINE_LOG_DIRS_TAG, &value);
        } else {
            w.put_empty_tagged_fields();
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerHeartbeatResponse {
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub is_caught_up: bool,
    /// Kafka's default is true: a broker is fenced until told otherwise.
    pub is_fenced: bool,
    pub should_shut_down: bool,
}

impl Default for BrokerHeartbeatResponse {
    fn default() -> Self {
        BrokerHeartbeatResponse {
            throttle_time_ms: 0,
            error_code: 0,
            is_caught_up: false,
            is_fenced: true,
            should_shut_down: false,
        }
    }
}

impl BrokerHeartbeatResponse {
    pub fn decode(r: &mut Reader, _version: i16) -> DecodeResult<Self> {
        let resp = BrokerHeartbeatResponse {
            throttle_time_ms: r.i32("throttle_time_ms")?,
            error_code: r.i16("error_code")?,
            is_caught_up: r.bool("is_caught_up")?,
            is_fenced: r.bool("is_fenced")?,
            should_shut_down: r.bool("should_shut_down")?,
        };
        r.skip_tagged_fields()?;
        Ok(resp)
    }

    pub fn encode(&self, w: &mut BytesMut, _version: i16) {
        w.put_i32(self.throttle_time_ms);
        w.put_i16(self.error_code);
        w.put_bool(self.is_caught_up);
        w.put_bool(self.is_fenced);
        w.put_bool(self.should_shut_down);
        w.put_empty_tagged_fields();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::test_support::conformance_tests;

    const REGISTRATION_VERSIONS: std::ops::RangeInclusive<i16> = 0..=4;
    const HEARTBEAT_VERSIONS: std::ops::RangeInclusive<i16> = 0..=1;

    /// A registration with a non-default value in every field `version`
    /// carries.
    fn registration(version: i16) -> BrokerRegistrationRequest {
        BrokerRegistrationRequest {
            broker_id: 3,
            cluster_id: "WWq9Xufzyuty71nn0QftcQ".into(),
            incarnation_id: [7; 16],
            listeners: vec![RegistrationListener {
                name: "PLAINTEXT".into(),
                host: "b3.example".into(),
                port: 9092,
                security_protocol: 0,
            }],
            features: vec![RegistrationFeature {
                name: "metadata.version".into(),
                min_supported_version: 7,
                max_supported_version: 27,
            }],
            rack: Some("rack-b".into()),
            is_migrating_zk_broker: version >= 1,
            log_dirs: if version >= 2 { vec![[9; 16]] } else { vec![] },
            previous_broker_epoch: if version >= 3 { 41 } else { -1 },
        }
    }

    fn heartbeat(version: i16) -> BrokerHeartbeatRequest {
        BrokerHeartbeatRequest {
            broker_id: 3,
            broker_epoch: 41,
            current_metadata_offset: 99,
            want_fence: true,
            want_shut_down: true,
            offline_log_dirs: if version >= 1 { vec![[5; 16]] } else { vec![] },
        }
    }

    fn registration_response(_version: i16) -> BrokerRegistrationResponse {
        BrokerRegistrationResponse {
            throttle_time_ms: 2,
            error_code: 101,
            broker_epoch: 41,
        }
    }

    fn heartbeat_response(_version: i16) -> BrokerHeartbeatResponse {
        BrokerHeartbeatResponse {
            throttle_time_ms: 2,
            error_code: 77,
            is_caught_up: true,
            is_fenced: false,
            should_shut_down: true,
        }
    }

    mod registration {
        use super::*;
        conformance_tests!(
            BrokerRegistrationRequest,
            BrokerRegistrationResponse,
            REGISTRATION_VERSIONS,
            registration,
            registration_response
        );
    }

    mod heartbeats {
        use super::*;
        conformance_tests!(
            BrokerHeartbeatRequest,
            BrokerHeartbeatResponse,
            HEARTBEAT_VERSIONS,
            heartbeat,
            heartbeat_response
        );
    }
}
