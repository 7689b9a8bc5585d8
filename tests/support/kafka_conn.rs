//! One blocking Kafka connection on pinlog's own codec, shared by the tests
//! that speak the protocol request by request (admin APIs, metrics, hostile
//! input). It proves nothing about compatibility, which the real clients
//! prove; it lets a test send exactly the request it needs, well formed or
//! not, and check the exact answer.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::codec::Reader;
use pinlog::protocol::error_code;
use pinlog::protocol::header::{decode_response_header, RequestHeader};
use pinlog::protocol::messages::create_topics::{
    CreatableTopic, CreatableTopicConfig, CreateTopicsRequest, CreateTopicsResponse,
};
use pinlog::protocol::messages::sasl_authenticate::{
    SaslAuthenticateRequest, SaslAuthenticateResponse,
};
use pinlog::protocol::messages::sasl_handshake::{SaslHandshakeRequest, SaslHandshakeResponse};

/// The SASL versions [`Conn::sasl_plain`] speaks: the handshake that
/// announces SaslAuthenticate, and its latest version.
const SASL_HANDSHAKE_VERSION: i16 = 1;
const SASL_AUTHENTICATE_VERSION: i16 = 2;

/// The largest response a test reads; a bigger size prefix is an error.
pub const RESPONSE_MAX_BYTES: usize = 64 << 20;

pub struct Conn {
    pub stream: TcpStream,
    client_id: &'static str,
    next_correlation_id: i32,
}

impl Conn {
    /// Connects with `timeout` for the connect and for every read and write.
    pub fn open(
        addr: SocketAddr,
        client_id: &'static str,
        timeout: Duration,
    ) -> std::io::Result<Conn> {
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            client_id,
            next_correlation_id: 1,
        })
    }

    /// Creates a topic of `partitions` partitions, replication factor 1,
    /// with `configs`, and fails the test unless it is created. The broker
    /// answers once every shard has the new partitions.
    pub fn create_topic(&mut self, name: &str, partitions: i32, configs: &[(&str, &str)]) {
        let version = 4;
        let mut r = self.call(ApiKey::CreateTopics, version, |w| {
            CreateTopicsRequest {
                topics: vec![CreatableTopic {
                    name: name.into(),
                    num_partitions: partitions,
                    replication_factor: 1,
                    configs: configs
                        .iter()
                        .map(|(k, v)| CreatableTopicConfig {
                            name: k.to_string(),
                            value: Some(v.to_string()),
                        })
                        .collect(),
                    ..Default::default()
                }],
                timeout_ms: 30_000,
                validate_only: false,
            }
            .encode(w, version)
        });
        let resp = CreateTopicsResponse::decode(&mut r, version).expect("decode CreateTopics");
        assert_eq!(resp.topics[0].error_code, error_code::NONE, "{resp:?}");
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write to broker");
    }

    /// Sends a well-formed request and returns the correlation id it carries.
    pub fn send(&mut self, key: ApiKey, version: i16, encode: impl FnOnce(&mut BytesMut)) -> i32 {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let mut frame = BytesMut::from(&[0u8; 4][..]);
        RequestHeader {
            api_key: key as i16,
            api_version: version,
            correlation_id,
            client_id: Some(self.client_id.into()),
        }
        .encode(&mut frame, key.request_header_version(version));
        encode(&mut frame);
        let size = (frame.len() - 4) as i32;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        self.send_raw(&frame);
        correlation_id
    }

    /// Reads one response frame, checks its correlation id, and returns a
    /// reader positioned at its body.
    pub fn receive(&mut self, key: ApiKey, version: i16, correlation_id: i32) -> Reader {
        let frame = read_frame(&mut self.stream)
            .unwrap_or_else(|e| panic!("{} v{version} response: {e}", key.name()));
        let mut r = Reader::new(frame);
        let id = decode_response_header(&mut r, key.response_header_version(version))
            .expect("response header");
        assert_eq!(
            id,
            correlation_id,
            "{} v{version} correlation id",
            key.name()
        );
        r
    }

    /// One request and its response; returns a reader at the response body.
    pub fn call(
        &mut self,
        key: ApiKey,
        version: i16,
        encode: impl FnOnce(&mut BytesMut),
    ) -> Reader {
        let id = self.send(key, version, encode);
        self.receive(key, version, id)
    }

    /// Logs in with SASL PLAIN as `user` on a SASL listener; panics if the
    /// broker refuses.
    pub fn sasl_plain(&mut self, user: &str, password: &str) {
        let v = SASL_HANDSHAKE_VERSION;
        let mut r = self.call(ApiKey::SaslHandshake, v, |w| {
            SaslHandshakeRequest {
                mechanism: "PLAIN".into(),
            }
            .encode(w, v)
        });
        let handshake = SaslHandshakeResponse::decode(&mut r, v).expect("SaslHandshake response");
        assert_eq!(handshake.error_code, 0, "SaslHandshake PLAIN for {user}");
        let token = Bytes::from(format!("\0{user}\0{password}").into_bytes());
        let v = SASL_AUTHENTICATE_VERSION;
        let mut r = self.call(ApiKey::SaslAuthenticate, v, |w| {
            SaslAuthenticateRequest { auth_bytes: token }.encode(w, v)
        });
        let done = SaslAuthenticateResponse::decode(&mut r, v).expect("SaslAuthenticate response");
        assert_eq!(
            done.error_code, 0,
            "SASL PLAIN login of {user}: {:?}",
            done.error_message
        );
    }

    /// Asserts that the broker closes this connection without answering:
    /// end of stream or a reset, within the read timeout.
    pub fn assert_closed_by_broker(&mut self, what: &str) {
        let mut buf = [0u8; 4096];
        let started = Instant::now();
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => panic!("broker answered {what} with {n} bytes instead of closing"),
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => panic!(
                    "broker did not close the connection after {what} within {:?}: {e}",
                    started.elapsed()
                ),
            }
        }
    }
}

/// One size-prefixed frame, at most [`RESPONSE_MAX_BYTES`].
pub fn read_frame(stream: &mut TcpStream) -> std::io::Result<Bytes> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size)?;
    let size = i32::from_be_bytes(size);
    let size = usize::try_from(size)
        .ok()
        .filter(|s| *s <= RESPONSE_MAX_BYTES)
        .ok_or_else(|| {
            std::io::Error::new(ErrorKind::InvalidData, format!("response size {size}"))
        })?;
    let mut body = vec![0u8; size];
    stream.read_exact(&mut body)?;
    Ok(Bytes::from(body))
}
