//! A minimal blocking Kafka client on pinlog's codec: one TCP connection,
//! size-prefixed frames, request headers, and ApiVersions negotiation.
//!
//! Every socket operation has a timeout, so a broker that goes away or hangs
//! turns into an error within `--request-timeout-ms`, never a hang. A
//! connection can be split into a writer and a reader half so that a
//! producer pipelines requests: responses come back in request order
//! (Kafka guarantees it per connection), so the reader matches them by
//! correlation id against a FIFO of what was sent.

use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use pinlog::cli::security::ClientSasl;
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::codec::{DecodeResult, Reader};
use pinlog::protocol::error_code;
use pinlog::protocol::header::{decode_response_header, RequestHeader};
use pinlog::protocol::messages::api_versions::{
    ApiVersionRange, ApiVersionsRequest, ApiVersionsResponse,
};
use pinlog::protocol::messages::offset_commit;
use pinlog::protocol::messages::sasl_authenticate::{
    SaslAuthenticateRequest, SaslAuthenticateResponse,
};
use pinlog::protocol::messages::sasl_handshake::{SaslHandshakeRequest, SaslHandshakeResponse};
use pinlog::sasl::client_login::{ClientLogin, LOGIN_ROUNDS_MAX};
use pinlog::sasl::scram::printable_nonce;

use crate::constants::{
    CLIENT_ID, CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION, CONNECT_ATTEMPTS, CONNECT_BACKOFF,
    READ_BUFFER_BYTES, RESPONSE_MAX_BYTES,
};
use crate::error::{Error, Result};
use crate::transport;

/// Random bytes in a SCRAM client nonce (printable-encoded before sending).
const SCRAM_NONCE_RANDOM_BYTES: usize = 24;

/// The version of each API this client uses, negotiated with one broker:
/// the highest version both sides support. `None` when there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    pub produce: Option<i16>,
    pub fetch: Option<i16>,
    pub list_offsets: Option<i16>,
    pub metadata: Option<i16>,
    pub create_topics: Option<i16>,
    pub find_coordinator: Option<i16>,
    pub join_group: Option<i16>,
    pub sync_group: Option<i16>,
    pub heartbeat: Option<i16>,
    pub leave_group: Option<i16>,
    pub offset_commit: Option<i16>,
}

impl Versions {
    /// Picks, per API, the highest version in both pinlog's table
    /// (`SUPPORTED_APIS`, what our codec implements) and the broker's list.
    pub fn negotiate(broker: &[ApiVersionRange]) -> Versions {
        let pick = |key: ApiKey| Self::pick(key, broker);
        Versions {
            produce: pick(ApiKey::Produce),
            fetch: pick(ApiKey::Fetch),
            list_offsets: pick(ApiKey::ListOffsets),
            metadata: pick(ApiKey::Metadata),
            create_topics: pick(ApiKey::CreateTopics),
            find_coordinator: pick(ApiKey::FindCoordinator),
            join_group: pick(ApiKey::JoinGroup),
            sync_group: pick(ApiKey::SyncGroup),
            heartbeat: pick(ApiKey::Heartbeat),
            leave_group: pick(ApiKey::LeaveGroup),
            // The soak's classic members commit by topic name, so at most
            // the last version before topic ids.
            offset_commit: pick(ApiKey::OffsetCommit)
                .map(|v| v.min(offset_commit::TOPIC_ID_FROM - 1)),
        }
    }

    /// The highest version of `key` in both our table and the broker's.
    fn pick(key: ApiKey, broker: &[ApiVersionRange]) -> Option<i16> {
        let ours = key.support();
        let theirs = broker.iter().find(|r| r.api_key == key as i16)?;
        let max = ours.max_version.min(theirs.max_version);
        let min = ours.min_version.max(theirs.min_version);
        (min <= max).then_some(max)
    }

    /// The negotiated version of `key`, or an error naming both ranges.
    pub fn require(&self, key: ApiKey, addr: &str) -> Result<i16> {
        let v = match key {
            ApiKey::Produce => self.produce,
            ApiKey::Fetch => self.fetch,
            ApiKey::ListOffsets => self.list_offsets,
            ApiKey::Metadata => self.metadata,
            ApiKey::CreateTopics => self.create_topics,
            ApiKey::FindCoordinator => self.find_coordinator,
            ApiKey::JoinGroup => self.join_group,
            ApiKey::SyncGroup => self.sync_group,
            ApiKey::Heartbeat => self.heartbeat,
            ApiKey::LeaveGroup => self.leave_group,
            ApiKey::OffsetCommit => self.offset_commit,
            _ => None,
        };
        v.ok_or_else(|| {
            let s = key.support();
            Error::Protocol {
                addr: addr.to_string(),
                detail: format!(
                    "the broker supports no version of {} in v{}-v{}, the range this client implements",
                    key.name(),
                    s.min_version,
                    s.max_version
                ),
            }
        })
    }
}

/// Resolves `addr` (HOST:PORT) to its first socket address.
fn resolve(addr: &str) -> Result<SocketAddr> {
    addr.to_socket_addrs()
        .map_err(|e| Error::io("resolve", addr, e))?
        .next()
        .ok_or_else(|| Error::Other(format!("{addr} resolves to no address")))
}

/// Opens a TCP connection with `timeout` on connect, reads and writes,
/// retrying a refused or timed-out connect a bounded number of times.
fn connect_stream(addr: &str, timeout: Duration) -> Result<TcpStream> {
    let sock = resolve(addr)?;
    let mut backoff = CONNECT_BACKOFF;
    let mut attempt = 1;
    loop {
        match TcpStream::connect_timeout(&sock, timeout) {
            Ok(s) => {
                let setup = s
                    .set_read_timeout(Some(timeout))
                    .and_then(|()| s.set_write_timeout(Some(timeout)))
                    .and_then(|()| s.set_nodelay(true));
                setup.map_err(|e| Error::io("configure socket to", addr, e))?;
                return Ok(s);
            }
            Err(e) if attempt >= CONNECT_ATTEMPTS => {
                return Err(Error::io(
                    format!("connect (after {attempt} attempts) to"),
                    addr,
                    e,
                ))
            }
            Err(_) => {
                std::thread::sleep(backoff);
                backoff *= 2;
                attempt += 1;
            }
        }
    }
}

/// Writes request frames on one connection.
pub struct FrameWriter {
    out: Box<dyn Write + Send>,
    /// The socket under `out`, to shut it down.
    socket: TcpStream,
    addr: String,
    next_correlation_id: i32,
    frame: BytesMut,
}

impl FrameWriter {
    /// Encodes a request (header and body) into the reused frame buffer and
    /// writes it; returns its correlation id.
    pub fn send(
        &mut self,
        key: ApiKey,
        version: i16,
        body: impl FnOnce(&mut BytesMut),
    ) -> Result<i32> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        self.frame.clear();
        self.frame.put_i32(0); // size, patched below
        RequestHeader {
            api_key: key as i16,
            api_version: version,
            correlation_id,
            client_id: Some(CLIENT_ID.to_string()),
        }
        .encode(&mut self.frame, key.request_header_version(version));
        body(&mut self.frame);
        let size = (self.frame.len() - 4) as i32;
        self.frame[..4].copy_from_slice(&size.to_be_bytes());
        self.out
            .write_all(&self.frame)
            .map_err(|e| Error::io(format!("send {} to", key.name()), &self.addr, e))?;
        Ok(correlation_id)
    }

    /// Closes both directions, which wakes a reader blocked on this socket.
    pub fn shutdown(&self) {
        // Already-closed sockets report an error here that changes nothing.
        let _ = self.socket.shutdown(Shutdown::Both);
    }
}

/// Reads response frames on one connection.
pub struct FrameReader {
    reader: BufReader<Box<dyn Read + Send>>,
    addr: String,
}

impl FrameReader {
    /// Reads one size-prefixed frame. The body is read without zero-filling
    /// first (`read_to_end` on a sized `take`), which matters for large
    /// fetch responses.
    pub fn read_frame(&mut self, what: &str) -> Result<Bytes> {
        let mut size = [0u8; 4];
        self.reader
            .read_exact(&mut size)
            .map_err(|e| Error::io(format!("read {what} response from"), &self.addr, e))?;
        let size = i32::from_be_bytes(size);
        if size < 0 || size as usize > RESPONSE_MAX_BYTES {
            return Err(Error::Protocol {
                addr: self.addr.clone(),
                detail: format!(
                    "{what} response frame of {size} bytes (limit {RESPONSE_MAX_BYTES})"
                ),
            });
        }
        let mut body = Vec::with_capacity(size as usize);
        (&mut self.reader)
            .take(size as u64)
            .read_to_end(&mut body)
            .map_err(|e| Error::io(format!("read {what} response from"), &self.addr, e))?;
        if body.len() != size as usize {
            return Err(Error::io(
                format!("read {what} response from"),
                &self.addr,
                std::io::ErrorKind::UnexpectedEof.into(),
            ));
        }
        Ok(Bytes::from(body))
    }

    /// Reads the response to request `correlation_id` and positions a reader
    /// at its body.
    pub fn read_response(
        &mut self,
        key: ApiKey,
        version: i16,
        correlation_id: i32,
    ) -> Result<Reader> {
        let frame = self.read_frame(key.name())?;
        let mut r = Reader::new(frame);
        let got = decode_response_header(&mut r, key.response_header_version(version))
            .map_err(|e| Error::decode(&self.addr, "a response header", e))?;
        if got != correlation_id {
            return Err(Error::Protocol {
                addr: self.addr.clone(),
                detail: format!(
                    "{} response has correlation id {got}, expected {correlation_id}",
                    key.name()
                ),
            });
        }
        Ok(r)
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }
}

/// One connection to one broker, with negotiated API versions.
pub struct Conn {
    pub writer: FrameWriter,
    pub reader: FrameReader,
    pub versions: Versions,
}

impl Conn {
    /// Connects (with bounded retries), negotiates API versions, and logs
    /// in when the run's `--command-config` asks for SASL.
    pub fn open(addr: &str, timeout: Duration) -> Result<Conn> {
        let socket = connect_stream(addr, timeout)?;
        let halves = transport::wrap(
            socket
                .try_clone()
                .map_err(|e| Error::io("clone socket of", addr, e))?,
            addr,
        )?;
        let mut conn = Conn {
            writer: FrameWriter {
                out: halves.writer,
                socket,
                addr: addr.to_string(),
                next_correlation_id: 1,
                frame: BytesMut::with_capacity(READ_BUFFER_BYTES),
            },
            reader: FrameReader {
                reader: BufReader::with_capacity(READ_BUFFER_BYTES, halves.reader),
                addr: addr.to_string(),
            },
            versions: Versions::negotiate(&[]),
        };
        let ranges = conn.api_versions()?;
        conn.versions = Versions::negotiate(&ranges);
        if let Some(sasl) = &transport::security().sasl {
            conn.login(sasl, &ranges)?;
        }
        Ok(conn)
    }

    /// SaslHandshake, then SaslAuthenticate until the mechanism is done.
    fn login(&mut self, sasl: &ClientSasl, ranges: &[ApiVersionRange]) -> Result<()> {
        let refused = |addr: &str, what: String| {
            Error::Other(format!(
                "{addr} refused the SASL {} login of {}: {what}; check the user and password in \
             --command-config's sasl.jaas.config",
                sasl.mechanism, sasl.username
            ))
        };
        let version = |key: ApiKey| {
            Versions::pick(key, ranges).ok_or_else(|| Error::Protocol {
                addr: self.addr().to_string(),
                detail: format!("the broker supports no version of {} we know", key.name()),
            })
        };
        let handshake_version = version(ApiKey::SaslHandshake)?;
        let authenticate_version = version(ApiKey::SaslAuthenticate)?;
        let handshake = self.call(
            ApiKey::SaslHandshake,
            handshake_version,
            |w| {
                SaslHandshakeRequest {
                    mechanism: sasl.mechanism.name().into(),
                }
                .encode(w, handshake_version)
            },
            |r| SaslHandshakeResponse::decode(r, handshake_version),
        )?;
        if handshake.error_code != error_code::NONE {
            return Err(refused(
                self.addr(),
                format!("the listener enables {}", handshake.mechanisms.join(", ")),
            ));
        }
        let nonce: [u8; SCRAM_NONCE_RANDOM_BYTES] = rand::random();
        let mut login = ClientLogin::new(
            sasl.mechanism,
            &sasl.username,
            &sasl.password,
            &printable_nonce(&nonce),
        )
        .ok_or_else(|| refused(self.addr(), "not a password mechanism".into()))?;
        let mut message = login.first();
        for _ in 0..LOGIN_ROUNDS_MAX {
            let auth_bytes = Bytes::from(std::mem::take(&mut message));
            let answer = self.call(
                ApiKey::SaslAuthenticate,
                authenticate_version,
                |w| SaslAuthenticateRequest { auth_bytes }.encode(w, authenticate_version),
                |r| SaslAuthenticateResponse::decode(r, authenticate_version),
            )?;
            if answer.error_code != error_code::NONE {
                return Err(refused(
                    self.addr(),
                    answer.error_message.unwrap_or_default(),
                ));
            }
            match login.answer(&answer.auth_bytes) {
                Ok(Some(next)) => message = next,
                Ok(None) => return Ok(()),
                Err(e) => return Err(refused(self.addr(), e.to_string())),
            }
        }
        Err(refused(self.addr(), "the exchange did not end".into()))
    }

    pub fn addr(&self) -> &str {
        self.reader.addr()
    }

    /// One request and its response.
    pub fn call<T>(
        &mut self,
        key: ApiKey,
        version: i16,
        body: impl FnOnce(&mut BytesMut),
        decode: impl FnOnce(&mut Reader) -> DecodeResult<T>,
    ) -> Result<T> {
        let id = self.writer.send(key, version, body)?;
        let mut r = self.reader.read_response(key, version, id)?;
        decode(&mut r).map_err(|e| Error::decode(self.reader.addr(), key.name(), e))
    }

    /// ApiVersions at our highest version; when the broker does not support
    /// it, it answers UNSUPPORTED_VERSION encoded as v0 with its own range,
    /// and we retry once at the highest version both support.
    fn api_versions(&mut self) -> Result<Vec<ApiVersionRange>> {
        let mut version = ApiKey::ApiVersions.support().max_version;
        for _ in 0..2 {
            let id = self.writer.send(ApiKey::ApiVersions, version, |w| {
                ApiVersionsRequest {
                    client_software_name: CLIENT_SOFTWARE_NAME.into(),
                    client_software_version: CLIENT_SOFTWARE_VERSION.into(),
                }
                .encode(w, version)
            })?;
            let r = self
                .reader
                .read_response(ApiKey::ApiVersions, version, id)?;
            // Every version starts with the error code; an error reply is v0.
            let error = r.clone().i16("error_code").unwrap_or(-1);
            let decode_version = if error == error_code::UNSUPPORTED_VERSION {
                0
            } else {
                version
            };
            let resp = ApiVersionsResponse::decode(&mut r.clone(), decode_version)
                .map_err(|e| Error::decode(self.addr(), "ApiVersions", e))?;
            if resp.error_code == error_code::NONE {
                return Ok(resp.api_keys);
            }
            let theirs = resp
                .api_keys
                .iter()
                .find(|k| k.api_key == ApiKey::ApiVersions as i16);
            match theirs {
                Some(t) if resp.error_code == error_code::UNSUPPORTED_VERSION => {
                    version = version.min(t.max_version);
                }
                _ => {
                    return Err(Error::Broker {
                        addr: self.addr().to_string(),
                        what: "ApiVersions".into(),
                        code: resp.error_code,
                    })
                }
            }
        }
        Err(Error::Protocol {
            addr: self.addr().to_string(),
            detail: "ApiVersions version negotiation did not converge".into(),
        })
    }

    /// Splits into halves for pipelining (a writer thread and a reader
    /// thread).
    pub fn split(self) -> (FrameWriter, FrameReader, Versions) {
        (self.writer, self.reader, self.versions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinlog::protocol::api::SUPPORTED_APIS;

    fn range(key: ApiKey, min: i16, max: i16) -> ApiVersionRange {
        ApiVersionRange {
            api_key: key as i16,
            min_version: min,
            max_version: max,
        }
    }

    #[test]
    fn negotiation_picks_the_highest_common_version() {
        // Apache Kafka 4.x advertises newer versions than pinlog implements.
        let kafka = [
            range(ApiKey::Produce, 3, 12),
            range(ApiKey::Fetch, 4, 17),
            range(ApiKey::Metadata, 0, 13),
            range(ApiKey::ListOffsets, 1, 10),
        ];
        let v = Versions::negotiate(&kafka);
        assert_eq!(v.produce, Some(ApiKey::Produce.support().max_version));
        assert_eq!(v.fetch, Some(ApiKey::Fetch.support().max_version));
        assert_eq!(v.metadata, Some(ApiKey::Metadata.support().max_version));
        assert_eq!(v.create_topics, None, "not advertised");
        assert!(v.require(ApiKey::CreateTopics, "b:1").is_err());

        // An old broker caps the version; a disjoint range gives none.
        let old = [range(ApiKey::Produce, 0, 5), range(ApiKey::Fetch, 0, 2)];
        let v = Versions::negotiate(&old);
        assert_eq!(v.produce, Some(5));
        assert_eq!(v.fetch, None);
        let msg = v.require(ApiKey::Fetch, "b:1").unwrap_err().to_string();
        assert!(msg.contains("Fetch"), "{msg}");
    }

    #[test]
    fn pinlog_table_has_every_api_we_use() {
        for key in [
            ApiKey::ApiVersions,
            ApiKey::Produce,
            ApiKey::Fetch,
            ApiKey::ListOffsets,
            ApiKey::Metadata,
            ApiKey::CreateTopics,
        ] {
            assert!(SUPPORTED_APIS.iter().any(|s| s.key == key), "{key:?}");
        }
    }
}
