//! A small blocking Kafka client for the operator commands: one
//! `std::net::TcpStream` per broker, size-prefixed frames, request headers
//! v1/v2 as `protocol::api` says, checked correlation ids, and ApiVersions
//! first so that every request uses the highest version both sides know.
//!
//! It is blocking on purpose: a command sends a handful of requests, one
//! after the other, so an async runtime would buy nothing. Every socket
//! operation has the command's timeout, so a broker that hangs becomes an
//! error rather than a hung shell, and a response larger than
//! [`RESPONSE_MAX_BYTES`] is refused before it is read.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};

use crate::cli::error::{CliError, CliResult};
use crate::cli::security::{CliStream, ClientSasl, ClientSecurity};
use crate::protocol::api::ApiKey;
use crate::protocol::codec::{DecodeResult, Reader};
use crate::protocol::error_code;
use crate::protocol::header::{decode_response_header, RequestHeader};
use crate::protocol::messages::api_versions::{
    ApiVersionRange, ApiVersionsRequest, ApiVersionsResponse,
};
use crate::protocol::messages::{
    alter_client_quotas, alter_user_scram_credentials, create_acls, create_partitions,
    create_topics, delete_acls, delete_topics, describe_acls, describe_client_quotas,
    describe_configs, describe_groups, describe_user_scram_credentials, find_coordinator,
    incremental_alter_configs, list_groups, list_offsets, metadata, offset_commit, offset_fetch,
    partition_shards, sasl_authenticate, sasl_handshake,
};
use crate::sasl::client_login::{ClientLogin, LOGIN_ROUNDS_MAX};
use crate::sasl::scram::printable_nonce;

/// Where the commands look for a broker unless told otherwise: the address
/// `pinlog serve` listens on by default.
pub const DEFAULT_BOOTSTRAP_SERVER: &str = "127.0.0.1:9092";
/// Default for `--timeout`: the bound on connecting and on each request.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest response frame the CLI reads. Metadata for tens of thousands of
/// partitions fits well within it; a larger size means a confused peer.
pub const RESPONSE_MAX_BYTES: usize = 64 * 1024 * 1024;
/// The client id brokers see in their logs and metrics.
pub const CLIENT_ID: &str = "pinlog-cli";
/// Sent in ApiVersions v3+ (KIP-511), so brokers can tell the tool apart.
pub const CLIENT_SOFTWARE_NAME: &str = "pinlog-cli";
pub const CLIENT_SOFTWARE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A request type the client can send, tying it to its API and response.
pub trait ApiRequest {
    type Response;
    const API: ApiKey;
    fn encode(&self, w: &mut BytesMut, version: i16);
    fn decode_response(r: &mut Reader, version: i16) -> DecodeResult<Self::Response>;
}

macro_rules! api_request {
    ($req:ty, $resp:ty, $key:expr) => {
        impl ApiRequest for $req {
            type Response = $resp;
            const API: ApiKey = $key;
            fn encode(&self, w: &mut BytesMut, version: i16) {
                <$req>::encode(self, w, version)
            }
            fn decode_response(r: &mut Reader, version: i16) -> DecodeResult<$resp> {
                <$resp>::decode(r, version)
            }
        }
    };
}

api_request!(
    metadata::MetadataRequest,
    metadata::MetadataResponse,
    ApiKey::Metadata
);
api_request!(
    create_topics::CreateTopicsRequest,
    create_topics::CreateTopicsResponse,
    ApiKey::CreateTopics
);
api_request!(
    delete_topics::DeleteTopicsRequest,
    delete_topics::DeleteTopicsResponse,
    ApiKey::DeleteTopics
);
api_request!(
    create_partitions::CreatePartitionsRequest,
    create_partitions::CreatePartitionsResponse,
    ApiKey::CreatePartitions
);
api_request!(
    describe_configs::DescribeConfigsRequest,
    describe_configs::DescribeConfigsResponse,
    ApiKey::DescribeConfigs
);
api_request!(
    incremental_alter_configs::IncrementalAlterConfigsRequest,
    incremental_alter_configs::IncrementalAlterConfigsResponse,
    ApiKey::IncrementalAlterConfigs
);
api_request!(
    list_offsets::ListOffsetsRequest,
    list_offsets::ListOffsetsResponse,
    ApiKey::ListOffsets
);

api_request!(
    find_coordinator::FindCoordinatorRequest,
    find_coordinator::FindCoordinatorResponse,
    ApiKey::FindCoordinator
);
api_request!(
    list_groups::ListGroupsRequest,
    list_groups::ListGroupsResponse,
    ApiKey::ListGroups
);
api_request!(
    describe_groups::DescribeGroupsRequest,
    describe_groups::DescribeGroupsResponse,
    ApiKey::DescribeGroups
);
api_request!(
    offset_fetch::OffsetFetchRequest,
    offset_fetch::OffsetFetchResponse,
    ApiKey::OffsetFetch
);
api_request!(
    offset_commit::OffsetCommitRequest,
    offset_commit::OffsetCommitResponse,
    ApiKey::OffsetCommit
);
api_request!(
    crate::protocol::messages::describe_cluster::DescribeClusterRequest,
    crate::protocol::messages::describe_cluster::DescribeClusterResponse,
    ApiKey::DescribeCluster
);
api_request!(
    crate::protocol::messages::describe_quorum::DescribeQuorumRequest,
    crate::protocol::messages::describe_quorum::DescribeQuorumResponse,
    ApiKey::DescribeQuorum
);

api_request!(
    partition_shards::PartitionShardsRequest,
    partition_shards::PartitionShardsResponse,
    ApiKey::PartitionShards
);

// The security admin APIs (`pinlog acl`, `user`, `quota`).
api_request!(
    create_acls::CreateAclsRequest,
    create_acls::CreateAclsResponse,
    ApiKey::CreateAcls
);
api_request!(
    describe_acls::DescribeAclsRequest,
    describe_acls::DescribeAclsResponse,
    ApiKey::DescribeAcls
);
api_request!(
    delete_acls::DeleteAclsRequest,
    delete_acls::DeleteAclsResponse,
    ApiKey::DeleteAcls
);
api_request!(
    describe_user_scram_credentials::DescribeUserScramCredentialsRequest,
    describe_user_scram_credentials::DescribeUserScramCredentialsResponse,
    ApiKey::DescribeUserScramCredentials
);
api_request!(
    alter_user_scram_credentials::AlterUserScramCredentialsRequest,
    alter_user_scram_credentials::AlterUserScramCredentialsResponse,
    ApiKey::AlterUserScramCredentials
);
api_request!(
    describe_client_quotas::DescribeClientQuotasRequest,
    describe_client_quotas::DescribeClientQuotasResponse,
    ApiKey::DescribeClientQuotas
);
api_request!(
    alter_client_quotas::AlterClientQuotasRequest,
    alter_client_quotas::AlterClientQuotasResponse,
    ApiKey::AlterClientQuotas
);

/// The highest version of `key` in both our codec's range and the
/// broker's, or `None` when the ranges do not meet.
pub fn negotiate(key: ApiKey, broker: &[ApiVersionRange]) -> Option<i16> {
    let ours = key.support();
    if key.is_pinlog_only() {
        // Not advertised (see `ApiKey::is_pinlog_only`): a pinlog broker
        // serves the version this tool was built with.
        return Some(ours.max_version);
    }
    let theirs = broker.iter().find(|r| r.api_key == key as i16)?;
    let max = ours.max_version.min(theirs.max_version);
    let min = ours.min_version.max(theirs.min_version);
    (min <= max).then_some(max)
}

api_request!(
    sasl_handshake::SaslHandshakeRequest,
    sasl_handshake::SaslHandshakeResponse,
    ApiKey::SaslHandshake
);
api_request!(
    sasl_authenticate::SaslAuthenticateRequest,
    sasl_authenticate::SaslAuthenticateResponse,
    ApiKey::SaslAuthenticate
);

/// Random bytes behind a SCRAM client nonce.
const SCRAM_NONCE_RANDOM_BYTES: usize = 24;

/// One connection to one broker, with the broker's API versions.
pub struct Client {
    addr: String,
    stream: CliStream,
    timeout: Duration,
    next_correlation_id: i32,
    broker_versions: Vec<ApiVersionRange>,
}

impl Client {
    /// Connects to `addr` (HOST:PORT) in the clear and asks for its API
    /// versions.
    pub fn connect(addr: &str, timeout: Duration) -> CliResult<Client> {
        Self::connect_secured(addr, timeout, &ClientSecurity::default())
    }

    /// Connects as `security` says (TLS, then SASL after ApiVersions).
    pub fn connect_secured(
        addr: &str,
        timeout: Duration,
        security: &ClientSecurity,
    ) -> CliResult<Client> {
        let socket = connect_stream(addr, timeout)?;
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
        let stream = CliStream::new(socket, host, security).map_err(|e| CliError::Protocol {
            addr: addr.to_string(),
            detail: e,
        })?;
        let mut client = Client {
            addr: addr.to_string(),
            stream,
            timeout,
            next_correlation_id: 1,
            broker_versions: Vec::new(),
        };
        client.broker_versions = client.api_versions()?;
        if let Some(sasl) = &security.sasl {
            client.login(sasl)?;
        }
        Ok(client)
    }

    /// SaslHandshake, then SaslAuthenticate until the mechanism is done.
    fn login(&mut self, sasl: &ClientSasl) -> CliResult<()> {
        let addr = self.addr.clone();
        let refused = |what: String| {
            CliError::Other(format!(
                "{addr} refused the SASL {} login of {}: {what}; check the user and password in \
                 --command-config's sasl.jaas.config",
                sasl.mechanism, sasl.username
            ))
        };
        let handshake = self.send(&sasl_handshake::SaslHandshakeRequest {
            mechanism: sasl.mechanism.name().into(),
        })?;
        if handshake.error_code != error_code::NONE {
            return Err(refused(format!(
                "the listener enables {}",
                handshake.mechanisms.join(", ")
            )));
        }
        let random: [u8; SCRAM_NONCE_RANDOM_BYTES] = rand::random();
        let mut login = ClientLogin::new(
            sasl.mechanism,
            &sasl.username,
            &sasl.password,
            &printable_nonce(&random),
        )
        .ok_or_else(|| refused("not a password mechanism".into()))?;
        let mut message = login.first();
        for _ in 0..LOGIN_ROUNDS_MAX {
            let answer = self.send(&sasl_authenticate::SaslAuthenticateRequest {
                auth_bytes: Bytes::from(std::mem::take(&mut message)),
            })?;
            if answer.error_code != error_code::NONE {
                return Err(refused(answer.error_message.unwrap_or_default()));
            }
            match login.answer(&answer.auth_bytes) {
                Ok(Some(next)) => message = next,
                Ok(None) => return Ok(()),
                Err(e) => return Err(refused(e.to_string())),
            }
        }
        Err(refused("the exchange did not end".into()))
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The version `R` will be sent at.
    pub fn version_of(&self, key: ApiKey) -> CliResult<i16> {
        negotiate(key, &self.broker_versions).ok_or_else(|| {
            let s = key.support();
            let theirs = self
                .broker_versions
                .iter()
                .find(|r| r.api_key == key as i16)
                .map(|r| format!("v{}-v{}", r.min_version, r.max_version))
                .unwrap_or_else(|| "none".into());
            CliError::Protocol {
                addr: self.addr.clone(),
                detail: format!(
                    "the broker supports {} versions {theirs}, this tool v{}-v{}",
                    key.name(),
                    s.min_version,
                    s.max_version
                ),
            }
        })
    }

    /// Sends `req` at the negotiated version and returns the response.
    pub fn send<R: ApiRequest>(&mut self, req: &R) -> CliResult<R::Response> {
        let version = self.version_of(R::API)?;
        self.send_at(req, version)
    }

    /// Sends `req` at `version`, which the caller has checked.
    pub fn send_at<R: ApiRequest>(&mut self, req: &R, version: i16) -> CliResult<R::Response> {
        let key = R::API;
        let mut r = self.round_trip(key, version, |w| req.encode(w, version))?;
        let resp = R::decode_response(&mut r, version).map_err(|e| CliError::Protocol {
            addr: self.addr.clone(),
            detail: format!("cannot decode {} v{version} response: {e}", key.name()),
        })?;
        if !r.is_empty() {
            return Err(CliError::Protocol {
                addr: self.addr.clone(),
                detail: format!(
                    "{} v{version} response has {} bytes left over",
                    key.name(),
                    r.remaining()
                ),
            });
        }
        Ok(resp)
    }

    /// ApiVersions at the highest version we know; when the broker is older
    /// it answers UNSUPPORTED_VERSION in the v0 format with its own range,
    /// and we ask once more within it.
    fn api_versions(&mut self) -> CliResult<Vec<ApiVersionRange>> {
        let key = ApiKey::ApiVersions;
        let request = ApiVersionsRequest {
            client_software_name: CLIENT_SOFTWARE_NAME.into(),
            client_software_version: CLIENT_SOFTWARE_VERSION.into(),
        };
        let mut version = key.support().max_version;
        for _attempt in 0..2 {
            let r = self.round_trip(key, version, |w| request.encode(w, version))?;
            let decode_error = |e| CliError::Protocol {
                addr: self.addr.clone(),
                detail: format!("cannot decode ApiVersions response: {e}"),
            };
            // The error code leads every version of the body. A broker that
            // does not know our version answers in the v0 format, whatever
            // we asked for, so the code decides how to read the rest.
            let code = r.clone().i16("error_code").map_err(decode_error)?;
            if code == error_code::NONE {
                return Ok(ApiVersionsResponse::decode(&mut r.clone(), version)
                    .map_err(decode_error)?
                    .api_keys);
            }
            let resp = ApiVersionsResponse::decode(&mut r.clone(), 0).map_err(decode_error)?;
            if resp.error_code != error_code::UNSUPPORTED_VERSION {
                return Err(CliError::broker(
                    format!("ApiVersions to {}", self.addr),
                    resp.error_code,
                    None,
                ));
            }
            match negotiate(key, &resp.api_keys) {
                Some(v) if v < version => version = v,
                _ => break,
            }
        }
        Err(CliError::Protocol {
            addr: self.addr.clone(),
            detail: "the broker accepts no ApiVersions version this tool knows".into(),
        })
    }

    /// Writes one request frame and reads its response; returns a reader
    /// positioned after the response header.
    fn round_trip(
        &mut self,
        key: ApiKey,
        version: i16,
        body: impl FnOnce(&mut BytesMut),
    ) -> CliResult<Reader> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let mut frame = BytesMut::new();
        frame.put_i32(0); // the size, patched below
        RequestHeader {
            api_key: key as i16,
            api_version: version,
            correlation_id,
            client_id: Some(CLIENT_ID.to_string()),
        }
        .encode(&mut frame, key.request_header_version(version));
        body(&mut frame);
        let size = (frame.len() - 4) as i32;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        self.stream
            .write_all(&frame)
            .map_err(|e| self.io_error(format!("send {} to", key.name()), e))?;

        let response = self.read_frame(key)?;
        let mut r = Reader::new(response);
        let got =
            decode_response_header(&mut r, key.response_header_version(version)).map_err(|e| {
                CliError::Protocol {
                    addr: self.addr.clone(),
                    detail: format!("cannot decode {} response header: {e}", key.name()),
                }
            })?;
        if got != correlation_id {
            return Err(CliError::Protocol {
                addr: self.addr.clone(),
                detail: format!(
                    "{} response has correlation id {got}, expected {correlation_id}",
                    key.name()
                ),
            });
        }
        Ok(r)
    }

    fn read_frame(&mut self, key: ApiKey) -> CliResult<Bytes> {
        let op = format!("read {} response from", key.name());
        let mut size = [0u8; 4];
        self.stream
            .read_exact(&mut size)
            .map_err(|e| self.io_error(op.clone(), e))?;
        let size = i32::from_be_bytes(size);
        // Every response starts with a 4-byte correlation id.
        if size < 4 || size as usize > RESPONSE_MAX_BYTES {
            return Err(CliError::Protocol {
                addr: self.addr.clone(),
                detail: format!(
                    "{} response frame of {size} bytes (allowed: 4 to {RESPONSE_MAX_BYTES})",
                    key.name()
                ),
            });
        }
        let mut body = vec![0u8; size as usize];
        self.stream
            .read_exact(&mut body)
            .map_err(|e| self.io_error(op, e))?;
        Ok(Bytes::from(body))
    }

    fn io_error(&self, op: String, source: std::io::Error) -> CliError {
        CliError::Io {
            op,
            addr: self.addr.clone(),
            source,
            timeout: self.timeout,
        }
    }
}

/// Resolves `addr` and connects to the first address that answers, with
/// `timeout` on the connect and on every later read and write.
fn connect_stream(addr: &str, timeout: Duration) -> CliResult<TcpStream> {
    let unreachable = |source| CliError::Unreachable {
        addr: addr.to_string(),
        source,
    };
    let candidates: Vec<SocketAddr> = addr.to_socket_addrs().map_err(unreachable)?.collect();
    let mut last_error = std::io::Error::new(
        std::io::ErrorKind::NotFound,
        "the name resolves to no address",
    );
    for sock in candidates {
        match TcpStream::connect_timeout(&sock, timeout) {
            Ok(s) => {
                s.set_read_timeout(Some(timeout))
                    .and_then(|()| s.set_write_timeout(Some(timeout)))
                    .and_then(|()| s.set_nodelay(true))
                    .map_err(unreachable)?;
                return Ok(s);
            }
            Err(e) => last_error = e,
        }
    }
    Err(unreachable(last_error))
}

/// The bootstrap connection plus one connection per other broker, opened
/// when a request must go to that broker (a partition's leader, a group's
/// coordinator).
pub struct Cluster {
    bootstrap: Client,
    security: ClientSecurity,
    /// Node id to advertised HOST:PORT, from the last Metadata response.
    brokers: HashMap<i32, String>,
    nodes: HashMap<i32, Client>,
}

impl Cluster {
    /// Connects to the first of `bootstrap`'s comma-separated HOST:PORT
    /// entries that answers, as Kafka's `--bootstrap-server` takes a list.
    pub fn connect(bootstrap: &str, timeout: Duration) -> CliResult<Cluster> {
        Self::connect_secured(bootstrap, timeout, ClientSecurity::default())
    }

    /// Like [`Cluster::connect`], every connection as `security` says.
    pub fn connect_secured(
        bootstrap: &str,
        timeout: Duration,
        security: ClientSecurity,
    ) -> CliResult<Cluster> {
        let mut last_error = None;
        for addr in bootstrap
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
        {
            match Client::connect_secured(addr, timeout, &security) {
                Ok(client) => {
                    return Ok(Cluster {
                        bootstrap: client,
                        security,
                        brokers: HashMap::new(),
                        nodes: HashMap::new(),
                    })
                }
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error
            .unwrap_or_else(|| CliError::Usage("--bootstrap-server names no broker".into())))
    }

    /// The connection to the bootstrap server: for requests any broker can
    /// answer (Metadata) or that the cluster forwards to its controller.
    pub fn any(&mut self) -> &mut Client {
        &mut self.bootstrap
    }

    /// Sends Metadata for `topics` (`None`: every topic) without creating
    /// any, and remembers the brokers it lists.
    pub fn metadata(&mut self, topics: Option<&[String]>) -> CliResult<metadata::MetadataResponse> {
        let req = metadata::MetadataRequest {
            topics: topics.map(|names| {
                names
                    .iter()
                    .map(|n| metadata::MetadataRequestTopic {
                        topic_id: [0; 16],
                        name: Some(n.clone()),
                    })
                    .collect()
            }),
            // A describe of a missing topic must never create it.
            allow_auto_topic_creation: false,
            ..Default::default()
        };
        let resp = self.bootstrap.send(&req)?;
        self.brokers = resp
            .brokers
            .iter()
            .map(|b| (b.node_id, format!("{}:{}", b.host, b.port)))
            .collect();
        Ok(resp)
    }

    /// The connection to broker `node_id`, as the last Metadata named it.
    pub fn node(&mut self, node_id: i32) -> CliResult<&mut Client> {
        if !self.nodes.contains_key(&node_id) {
            let addr = self.brokers.get(&node_id).cloned().ok_or_else(|| {
                CliError::Other(format!(
                    "broker {node_id} is not in the cluster's metadata; try again in a moment"
                ))
            })?;
            let client = Client::connect_secured(&addr, self.bootstrap.timeout(), &self.security)?;
            self.nodes.insert(node_id, client);
        }
        Ok(self.nodes.get_mut(&node_id).expect("inserted above"))
    }

    /// Connects to HOST:PORT directly (a coordinator that FindCoordinator
    /// named), reusing the connection of a known node at that address.
    pub fn node_at(&mut self, node_id: i32, addr: &str) -> CliResult<&mut Client> {
        self.brokers.insert(node_id, addr.to_string());
        if self.nodes.get(&node_id).is_some_and(|c| c.addr() != addr) {
            self.nodes.remove(&node_id);
        }
        self.node(node_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn negotiation_takes_the_highest_common_version() {
        let broker = [ApiVersionRange {
            api_key: ApiKey::Metadata as i16,
            min_version: 0,
            max_version: 9,
        }];
        assert_eq!(negotiate(ApiKey::Metadata, &broker), Some(9));
        let newer = [ApiVersionRange {
            api_key: ApiKey::Metadata as i16,
            min_version: 0,
            max_version: 99,
        }];
        assert_eq!(
            negotiate(ApiKey::Metadata, &newer),
            Some(ApiKey::Metadata.support().max_version)
        );
        let disjoint = [ApiVersionRange {
            api_key: ApiKey::ListOffsets as i16,
            min_version: 50,
            max_version: 60,
        }];
        assert_eq!(negotiate(ApiKey::ListOffsets, &disjoint), None);
        assert_eq!(negotiate(ApiKey::CreateTopics, &disjoint), None);
    }

    #[test]
    fn a_closed_port_is_unreachable() {
        // Bind then drop: the port is (almost certainly) closed now.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = match Client::connect(&format!("127.0.0.1:{port}"), Duration::from_secs(2)) {
            Err(e) => e,
            Ok(_) => panic!("connected to a closed port"),
        };
        assert!(matches!(err, CliError::Unreachable { .. }), "{err:?}");
    }

    #[test]
    fn oversized_and_mismatched_responses_are_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut size = [0u8; 4];
            s.read_exact(&mut size).unwrap();
            let mut req = vec![0u8; i32::from_be_bytes(size) as usize];
            s.read_exact(&mut req).unwrap();
            // A frame size far above the limit.
            s.write_all(&(RESPONSE_MAX_BYTES as i32 + 1).to_be_bytes())
                .unwrap();
        });
        let err = match Client::connect(&addr, Duration::from_secs(5)) {
            Err(e) => e,
            Ok(_) => panic!("accepted an oversized frame"),
        };
        server.join().unwrap();
        assert!(
            matches!(&err, CliError::Protocol { detail, .. } if detail.contains("response frame")),
            "{err:?}"
        );

        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut size = [0u8; 4];
            s.read_exact(&mut size).unwrap();
            let mut req = vec![0u8; i32::from_be_bytes(size) as usize];
            s.read_exact(&mut req).unwrap();
            // Correlation id 999 instead of the request's.
            s.write_all(&4i32.to_be_bytes()).unwrap();
            s.write_all(&999i32.to_be_bytes()).unwrap();
        });
        let err = match Client::connect(&addr, Duration::from_secs(5)) {
            Err(e) => e,
            Ok(_) => panic!("accepted a wrong correlation id"),
        };
        server.join().unwrap();
        assert!(
            matches!(&err, CliError::Protocol { detail, .. } if detail.contains("correlation id 999")),
            "{err:?}"
        );
    }

    #[test]
    fn a_silent_broker_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        // Accepted by the kernel's backlog, never answered.
        let err = match Client::connect(&addr, Duration::from_millis(200)) {
            Err(e) => e,
            Ok(_) => panic!("got an answer from a silent listener"),
        };
        drop(listener);
        assert!(
            matches!(&err, CliError::Io { .. }) && err.hint().unwrap().contains("--timeout"),
            "{err:?}"
        );
    }
}
