//! A Kafka-protocol connection from this broker to another one, on the
//! shard's executor: what replica fetchers use to fetch from leaders.
//!
//! One request at a time; every exchange has a timeout, after which the
//! connection is dropped (a late answer must not be read as the next one's).
//! A response larger than the caller's bound closes the connection instead
//! of allocating it.

use std::io;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures_lite::{AsyncReadExt, AsyncWriteExt, FutureExt};
use glommio::net::TcpStream;

use crate::broker_config::sasl_settings::InterBrokerSasl;
use crate::log::batch_cache::{Backing, SharedBatchCache};
use crate::log::cache_blocks::{CacheCopy, POPULATE_CHUNK_BYTES};
use crate::protocol::api::ApiKey;
use crate::protocol::codec::{DecodeResult, Reader};
use crate::protocol::error_code;
use crate::protocol::header::{decode_response_header, RequestHeader};
use crate::protocol::messages::sasl_authenticate::{
    SaslAuthenticateRequest, SaslAuthenticateResponse,
};
use crate::protocol::messages::sasl_handshake::{SaslHandshakeRequest, SaslHandshakeResponse};
use crate::quorum::network::resolve;
use crate::sasl::client_login::{ClientLogin, LOGIN_ROUNDS_MAX};
use crate::sasl::scram::printable_nonce;
use crate::sasl::SASL_MESSAGE_BYTES_MAX;
use crate::security::tls::InterBrokerSecurity;
use crate::security::tls_socket::TlsSocket;

/// How long a connection attempt to a peer broker may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const SASL_HANDSHAKE_VERSION: i16 = 1;
const SASL_AUTHENTICATE_VERSION: i16 = 2;
/// Random bytes behind a SCRAM client nonce.
const SCRAM_NONCE_RANDOM_BYTES: usize = 24;

/// A connection to a peer, plain or TLS.
trait PeerStream: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin {}
impl<S: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin> PeerStream for S {}

/// The shard's copy of how to reach other brokers; plain connections
/// where none was installed (a test's shard).
pub fn inter_broker_security(shard: &crate::shard::shard::Shard) -> InterBrokerSecurity {
    shard
        .extension::<InterBrokerSecurity>()
        .map(|s| (*s).clone())
        .unwrap_or_default()
}

pub struct KafkaPeer {
    addr: String,
    client_id: String,
    security: InterBrokerSecurity,
    stream: Option<Box<dyn PeerStream>>,
    next_correlation_id: i32,
}

impl KafkaPeer {
    /// A peer at `addr` (the other broker's inter-broker listener), reached
    /// as `security` says.
    pub fn new(addr: String, client_id: String, security: InterBrokerSecurity) -> Self {
        KafkaPeer {
            addr,
            client_id,
            security,
            stream: None,
            next_correlation_id: 0,
        }
    }

    /// Connects, and over TLS shakes hands within the connect timeout.
    async fn connect(&self) -> io::Result<Box<dyn PeerStream>> {
        let addr = resolve(&self.addr)?;
        let stream = TcpStream::connect_timeout(addr, CONNECT_TIMEOUT)
            .await
            .map_err(|e| io::Error::other(format!("cannot connect to {}: {e}", self.addr)))?;
        stream.set_nodelay(true).ok();
        let Some(connector) = &self.security.tls else {
            return Ok(Box::new(stream));
        };
        let host = self
            .addr
            .rsplit_once(':')
            .map_or(self.addr.as_str(), |(h, _)| h)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| io::Error::other(format!("{}: not a TLS server name: {e}", self.addr)))?;
        let tls = connector
            .connect(name, TlsSocket::new(stream))
            .or(async {
                glommio::timer::sleep(CONNECT_TIMEOUT).await;
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no TLS handshake within the connect timeout",
                ))
            })
            .await
            .map_err(|e| io::Error::other(format!("TLS to {}: {e}", self.addr)))?;
        Ok(Box::new(tls))
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Drops the connection; the next call reconnects.
    pub fn disconnect(&mut self) {
        self.stream = None;
    }

    /// Sends one request and decodes its response. `max_response_bytes`
    /// bounds the response frame.
    pub async fn call<T>(
        &mut self,
        key: ApiKey,
        version: i16,
        body: impl FnOnce(&mut BytesMut),
        decode: impl FnOnce(&mut Reader) -> DecodeResult<T>,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> io::Result<T> {
        let (answer, _) = self
            .call_into(
                ResponseMemory::Heap,
                key,
                version,
                body,
                decode,
                timeout,
                max_response_bytes,
            )
            .await?;
        Ok(answer)
    }

    /// [`call`](Self::call), with the response frame read into `memory`.
    /// Returns the decoded response and the buffer its bytes are slices
    /// of, which a cache that keeps any of them counts whole.
    #[allow(clippy::too_many_arguments)]
    pub async fn call_into<T>(
        &mut self,
        memory: ResponseMemory<'_>,
        key: ApiKey,
        version: i16,
        body: impl FnOnce(&mut BytesMut),
        decode: impl FnOnce(&mut Reader) -> DecodeResult<T>,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> io::Result<(T, Backing)> {
        if self.stream.is_none() {
            self.stream = Some(self.connect().await?);
            if let Some(sasl) = self.security.sasl.clone() {
                if let Err(e) = self.login(&sasl, timeout).await {
                    self.stream = None;
                    return Err(e);
                }
            }
        }
        self.exchange(
            memory,
            key,
            version,
            body,
            decode,
            timeout,
            max_response_bytes,
        )
        .await
    }

    /// Logs in on a new connection to a SASL inter-broker listener:
    /// SaslHandshake v1, then SaslAuthenticate until the mechanism is done.
    async fn login(&mut self, sasl: &InterBrokerSasl, timeout: Duration) -> io::Result<()> {
        let addr = self.addr.clone();
        let refused = |what: String| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{addr}: SASL {} login refused: {what}", sasl.mechanism),
            )
        };
        let mechanism = sasl.mechanism.name().to_string();
        let (handshake, _) = self
            .exchange(
                ResponseMemory::Heap,
                ApiKey::SaslHandshake,
                SASL_HANDSHAKE_VERSION,
                |w| {
                    SaslHandshakeRequest { mechanism }.encode(w, SASL_HANDSHAKE_VERSION);
                },
                |r| SaslHandshakeResponse::decode(r, SASL_HANDSHAKE_VERSION),
                timeout,
                SASL_MESSAGE_BYTES_MAX,
            )
            .await?;
        if handshake.error_code != error_code::NONE {
            return Err(refused(format!(
                "error {} (the listener enables {})",
                handshake.error_code,
                handshake.mechanisms.join(", ")
            )));
        }
        let credentials = &sasl.credentials;
        let random: [u8; SCRAM_NONCE_RANDOM_BYTES] = rand::random();
        let mut login = ClientLogin::new(
            sasl.mechanism,
            &credentials.username,
            &credentials.password,
            &printable_nonce(&random),
        )
        .ok_or_else(|| refused("not a password mechanism".into()))?;
        let mut message = login.first();
        for _ in 0..LOGIN_ROUNDS_MAX {
            let auth_bytes = Bytes::from(std::mem::take(&mut message));
            let (answer, _) = self
                .exchange(
                    ResponseMemory::Heap,
                    ApiKey::SaslAuthenticate,
                    SASL_AUTHENTICATE_VERSION,
                    |w| SaslAuthenticateRequest { auth_bytes }.encode(w, SASL_AUTHENTICATE_VERSION),
                    |r| SaslAuthenticateResponse::decode(r, SASL_AUTHENTICATE_VERSION),
                    timeout,
                    SASL_MESSAGE_BYTES_MAX,
                )
                .await?;
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

    /// One request and its response on the open connection.
    #[allow(clippy::too_many_arguments)]
    async fn exchange<T>(
        &mut self,
        memory: ResponseMemory<'_>,
        key: ApiKey,
        version: i16,
        body: impl FnOnce(&mut BytesMut),
        decode: impl FnOnce(&mut Reader) -> DecodeResult<T>,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> io::Result<(T, Backing)> {
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let correlation_id = self.next_correlation_id;
        let mut frame = BytesMut::with_capacity(256);
        frame.put_i32(0);
        RequestHeader {
            api_key: key as i16,
            api_version: version,
            correlation_id,
            client_id: Some(self.client_id.clone()),
        }
        .encode(&mut frame, key.request_header_version(version));
        body(&mut frame);
        let size = (frame.len() - 4) as i32;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        let stream = self
            .stream
            .as_mut()
            .ok_or_else(|| io::Error::other(format!("{}: not connected", self.addr)))?;
        let exchange = async {
            stream.write_all(&frame).await?;
            // A TLS stream sends its records on flush (security::tls_socket).
            stream.flush().await?;
            let mut size = [0u8; 4];
            stream.read_exact(&mut size).await?;
            let size = i32::from_be_bytes(size);
            if size < 4 || size as usize > max_response_bytes {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a response of {size} bytes is outside 4..={max_response_bytes}"),
                ));
            }
            read_body(stream, size as usize, memory).await
        };
        let answer = exchange
            .or(async {
                glommio::timer::sleep(timeout).await;
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no answer within {timeout:?}"),
                ))
            })
            .await;
        let (bytes, backing) = match answer {
            Ok(b) => b,
            Err(e) => {
                self.stream = None;
                return Err(io::Error::new(e.kind(), format!("{}: {e}", self.addr)));
            }
        };
        let mut r = Reader::new(bytes);
        let decoded = decode_response_header(&mut r, key.response_header_version(version))
            .and_then(|id| {
                if id == correlation_id {
                    Ok(())
                } else {
                    Err(crate::protocol::codec::DecodeError::Invalid(format!(
                        "correlation id {id}, expected {correlation_id}"
                    )))
                }
            })
            .and_then(|()| decode(&mut r));
        decoded.map(|answer| (answer, backing)).map_err(|e| {
            self.stream = None;
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: a {} response does not decode: {e}",
                    self.addr,
                    key.name()
                ),
            )
        })
    }
}

/// Where a response frame is read into.
#[derive(Clone, Copy)]
pub enum ResponseMemory<'a> {
    /// An allocation of its own.
    Heap,
    /// The shard's read cache's blocks, where the cache uses them and the
    /// frame fits one: a follower's fetch response, whose records the
    /// cache keeps. A fresh allocation per response would fault its pages
    /// in one at a time as the socket's bytes are copied into it; a block
    /// has them taken in bulk, or already in from its last use.
    ReadCache(&'a SharedBatchCache),
}

/// Reads a response frame's `len` bytes (after its size) into `memory`.
async fn read_body(
    stream: &mut Box<dyn PeerStream>,
    len: usize,
    memory: ResponseMemory<'_>,
) -> io::Result<(Bytes, Backing)> {
    if let ResponseMemory::ReadCache(cache) = memory {
        let piece = cache.borrow_mut().frame_piece(len);
        if let Some(mut piece) = piece {
            let mut at = 0;
            while at < len {
                let chunk = (len - at).min(POPULATE_CHUNK_BYTES);
                stream.read_exact(piece.writable(at, chunk)).await?;
                at += chunk;
            }
            return Ok(CacheCopy::Block(piece).freeze());
        }
    }
    let mut buf = vec![0u8; len];
    stream.read_exact(&mut buf).await?;
    let bytes = Bytes::from(buf);
    let backing = Backing::of(&bytes);
    Ok((bytes, backing))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constants::{READ_CACHE_BLOCKS_MIN_CAPACITY_BLOCKS, READ_CACHE_BLOCK_BYTES};
    use crate::log::batch_cache::BatchCache;
    use glommio::net::TcpListener;

    /// A peer that answers every request with `body` after the
    /// correlation id (response header v0, as ApiVersions v0 has).
    async fn answer_with(listener: TcpListener, bodies: Vec<Vec<u8>>) {
        let mut stream = listener.accept().await.unwrap();
        for body in bodies {
            let mut size = [0u8; 4];
            stream.read_exact(&mut size).await.unwrap();
            let mut request = vec![0u8; i32::from_be_bytes(size) as usize];
            stream.read_exact(&mut request).await.unwrap();
            // api key (2), version (2), then the correlation id.
            let correlation_id = &request[4..8];
            let mut frame = ((body.len() + 4) as i32).to_be_bytes().to_vec();
            frame.extend_from_slice(correlation_id);
            frame.extend_from_slice(&body);
            stream.write_all(&frame).await.unwrap();
        }
    }

    async fn call(peer: &mut KafkaPeer, memory: ResponseMemory<'_>) -> (Bytes, Backing) {
        peer.call_into(
            memory,
            ApiKey::ApiVersions,
            0,
            |_| {},
            |r| Ok(r.rest().clone()),
            Duration::from_secs(10),
            2 * READ_CACHE_BLOCK_BYTES,
        )
        .await
        .unwrap()
    }

    #[test]
    fn a_response_is_read_into_the_read_caches_blocks_when_it_fits_one() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap().to_string();
                let small = vec![7u8; 100_000];
                let large = vec![9u8; READ_CACHE_BLOCK_BYTES + 1];
                // Half a block or more: a fresh block, read a chunk of
                // pages at a time.
                let half: Vec<u8> = (0..READ_CACHE_BLOCK_BYTES * 3 / 4)
                    .map(|i| (i % 251) as u8)
                    .collect();
                let server = glommio::spawn_local(answer_with(
                    listener,
                    vec![
                        small.clone(),
                        small.clone(),
                        large.clone(),
                        small.clone(),
                        half.clone(),
                    ],
                ));
                let cache = BatchCache::shared(
                    READ_CACHE_BLOCKS_MIN_CAPACITY_BLOCKS * READ_CACHE_BLOCK_BYTES,
                );
                let mut peer = KafkaPeer::new(addr, "test".into(), Default::default());

                // Two small responses share one block; the cache would
                // count the block, not the frame.
                let (first, first_backing) =
                    call(&mut peer, ResponseMemory::ReadCache(&cache)).await;
                let (second, second_backing) =
                    call(&mut peer, ResponseMemory::ReadCache(&cache)).await;
                assert_eq!(&first[..], &small[..]);
                assert_eq!(&second[..], &small[..]);
                assert_eq!(first_backing.len(), READ_CACHE_BLOCK_BYTES);
                assert_eq!(first_backing, second_backing, "one block");
                assert!(first_backing.holds(&first) && second_backing.holds(&second));
                assert_eq!(cache.borrow().stats().blocks_mapped, 1);

                // Larger than a block: an allocation of its own, the
                // frame's whole body its backing.
                let (big, big_backing) = call(&mut peer, ResponseMemory::ReadCache(&cache)).await;
                assert_eq!(&big[..], &large[..]);
                assert_eq!(
                    big_backing.len(),
                    large.len() + 4,
                    "the body after its size"
                );
                assert_eq!(cache.borrow().stats().blocks_mapped, 1);

                // Without the cache: the heap, as every other call.
                let (heap, heap_backing) = call(&mut peer, ResponseMemory::Heap).await;
                assert_eq!(&heap[..], &small[..]);
                assert_eq!(heap_backing.len(), small.len() + 4);
                assert!(heap_backing.holds(&heap));
                assert_eq!(cache.borrow().stats().blocks_mapped, 1);

                let (read, read_backing) = call(&mut peer, ResponseMemory::ReadCache(&cache)).await;
                assert!(read[..] == half[..], "every chunk in its place");
                assert_eq!(read_backing.len(), READ_CACHE_BLOCK_BYTES);
                assert!(read_backing.holds(&read));
                assert_ne!(read_backing, first_backing, "a fresh block");
                assert_eq!(cache.borrow().stats().blocks_mapped, 2);
                server.await;
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn a_cache_too_small_for_blocks_leaves_responses_on_the_heap() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap().to_string();
                let body = vec![3u8; 5000];
                let server = glommio::spawn_local(answer_with(listener, vec![body.clone()]));
                let cache = BatchCache::shared(READ_CACHE_BLOCK_BYTES);
                let mut peer = KafkaPeer::new(addr, "test".into(), Default::default());
                let (bytes, backing) = call(&mut peer, ResponseMemory::ReadCache(&cache)).await;
                assert_eq!(&bytes[..], &body[..]);
                assert_eq!(backing.len(), body.len() + 4);
                assert_eq!(cache.borrow().stats().blocks_mapped, 0);
                server.await;
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
