//! The controllers' wire: openraft's RPCs (and admin requests forwarded to
//! the active controller) between controller listeners
//! (`controller.listen`), on shard 0.
//!
//! A frame is a 4-byte big-endian length followed by that many bytes of a
//! postcard-encoded [`PeerRequest`] or [`PeerResponse`]. A connection
//! carries one request at a time; a frame over [`PEER_FRAME_BYTES_MAX`], or
//! one that does not decode, closes the connection with a log line.
//!
//! When the channel runs over mutual TLS (`ControllerChannelTls`), the
//! frames go inside it, and a peer whose certificate is not admitted is
//! refused with a log line before any frame is read.

use std::collections::BTreeSet;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, FutureExt};
use glommio::net::{TcpListener, TcpStream};
use openraft::errors::{NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::impls::BasicNode;
use openraft::network::v2::RaftNetworkV2;
use openraft::network::{RPCOption, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderRequest,
    TransferLeaderResponse, VoteRequest, VoteResponse,
};
use openraft::storage::Snapshot;
use serde::{Deserialize, Serialize};

use crate::node::stop::StopHandle;
use crate::quorum::reconnect::ReconnectBackoff;
use crate::quorum::state_machine::SnapshotData;
use crate::quorum::types::{MetadataRaft, Raft, SnapshotMeta, Vote};
use crate::security::controller_channel::ControllerChannelTls;
use crate::security::tls_socket::TlsSocket;

/// Largest frame read from a peer: a metadata snapshot of a few hundred
/// thousand partitions fits.
pub const PEER_FRAME_BYTES_MAX: usize = 64 * 1024 * 1024;
/// How long connecting to a peer may take before it counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// Bytes read from a socket at a time while a frame arrives, so that a
/// frame's length header alone never allocates its whole size.
const READ_CHUNK_BYTES: usize = 64 * 1024;
/// How often the listener looks at the stop request.
const STOP_POLL: Duration = Duration::from_millis(100);
/// How long a peer may leave a connection idle before it is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// How long an accepted peer may take over its TLS handshake, so that a
/// connection that says nothing does not hold its task forever.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A connection to or from a peer: a TCP stream, or TLS over one.
trait PeerStream: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> PeerStream for T {}
type BoxedStream = Box<dyn PeerStream>;

/// Which accepted controller connection a forwarded request came on.
pub type ConnectionId = u64;

/// What the server does with forwarded admin requests on the active
/// controller, and when a connection that carried them closes (the peer
/// closed it or its process died; a paused or cut-off peer closes nothing).
pub trait Forwarded {
    fn request(
        &self,
        connection: ConnectionId,
        bytes: Vec<u8>,
    ) -> Pin<Box<dyn Future<Output = Vec<u8>>>>;
    fn closed(&self, connection: ConnectionId);
}

pub type ForwardHandler = Rc<dyn Forwarded>;

#[derive(Serialize, Deserialize)]
pub enum PeerRequest {
    AppendEntries(AppendEntriesRequest<MetadataRaft>),
    Vote(VoteRequest<MetadataRaft>),
    PreVote(VoteRequest<MetadataRaft>),
    Snapshot {
        vote: Vote,
        meta: SnapshotMeta,
        data: SnapshotData,
    },
    /// An admin request for the active controller (encoded by the
    /// controller module, opaque here).
    Forward(Vec<u8>),
    /// Which node answers here: a starting node asks at its own voter
    /// address, to find another process already using its `node.id`.
    Whois,
    /// A stopping leader hands its leadership over. Last, so that the
    /// variants before it keep their wire tags.
    TransferLeader(TransferLeaderRequest<MetadataRaft>),
    /// A node that is not a voter asks the active controller to send it
    /// the metadata log at `address` (see `quorum::observer`). After
    /// TransferLeader, for the same reason.
    AddObserver {
        node_id: i32,
        address: String,
    },
}

#[derive(Serialize, Deserialize)]
pub enum PeerResponse {
    AppendEntries(AppendEntriesResponse<MetadataRaft>),
    Vote(VoteResponse<MetadataRaft>),
    Snapshot(SnapshotResponse<MetadataRaft>),
    Forward(Vec<u8>),
    Whois {
        node_id: i32,
    },
    /// The peer could not handle the request (shutting down, or it failed).
    Error(String),
    TransferLeader(TransferLeaderResponse<MetadataRaft>),
    /// The answer to AddObserver: the observer is a learner at its address.
    ObserverAdded,
}

fn invalid(why: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}

async fn read_frame<S: AsyncRead + Unpin + ?Sized>(stream: &mut S) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await?;
    let len = u32::from_be_bytes(len) as usize;
    if len > PEER_FRAME_BYTES_MAX {
        return Err(invalid(format!(
            "a peer frame of {len} bytes is over the limit of {PEER_FRAME_BYTES_MAX}"
        )));
    }
    let mut body = Vec::with_capacity(len.min(READ_CHUNK_BYTES));
    while body.len() < len {
        let start = body.len();
        let take = (len - start).min(READ_CHUNK_BYTES);
        body.resize(start + take, 0);
        stream.read_exact(&mut body[start..]).await?;
    }
    Ok(body)
}

async fn write_frame<S: AsyncWrite + Unpin + ?Sized>(
    stream: &mut S,
    body: &[u8],
) -> io::Result<()> {
    let len = u32::try_from(body.len())
        .ok()
        .filter(|l| (*l as usize) <= PEER_FRAME_BYTES_MAX)
        .ok_or_else(|| {
            invalid(format!(
                "a frame of {} bytes is too large to send",
                body.len()
            ))
        })?;
    stream.write_all(&len.to_be_bytes()).await?;
    stream.write_all(body).await?;
    stream.flush().await
}

/// Accepts peers on the controller listener until `stop`, over mutual TLS
/// when `tls` is given.
pub async fn serve(
    listener: TcpListener,
    node_id: i32,
    raft: Raft,
    forward: ForwardHandler,
    tls: Option<Arc<ControllerChannelTls>>,
    stop: StopHandle,
) {
    let mut next_connection: ConnectionId = 0;
    loop {
        // The accept is dropped only when the broker stops: an accept given
        // up while the kernel completes it would lose that connection, and
        // a peer would wait on it for an answer that never comes.
        let accepted = async { Some(listener.accept().await) }
            .or(async {
                while !stop.is_requested() {
                    crate::ticks::sleep_to_next_tick(STOP_POLL).await;
                }
                None
            })
            .await;
        if stop.is_requested() {
            return;
        }
        match accepted {
            None => return,
            Some(Ok(stream)) => {
                let (raft, forward, stop) = (raft.clone(), forward.clone(), stop.clone());
                let tls = tls.clone();
                next_connection += 1;
                let connection = next_connection;
                glommio::spawn_local(async move {
                    let peer = stream.peer_addr().ok();
                    stream.set_nodelay(true).ok();
                    let stream = match accept_peer(stream, tls.as_deref()).await {
                        Ok(stream) => stream,
                        Err(why) => {
                            tracing::warn!(?peer, "refusing a controller channel peer: {why}");
                            return;
                        }
                    };
                    let served =
                        serve_peer(stream, connection, node_id, raft, forward.clone(), stop).await;
                    if let Err(e) = served {
                        if e.kind() != io::ErrorKind::UnexpectedEof {
                            tracing::warn!(?peer, "controller connection closed: {e}");
                        }
                    }
                    forward.closed(connection);
                })
                .detach();
            }
            Some(Err(e)) => {
                tracing::warn!("controller listener: accept failed: {e}");
                glommio::timer::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// An accepted connection, after the TLS handshake and the admission of
/// the peer's certificate when the channel runs over TLS.
async fn accept_peer(
    stream: TcpStream,
    tls: Option<&ControllerChannelTls>,
) -> Result<BoxedStream, String> {
    let Some(tls) = tls else {
        return Ok(Box::new(stream));
    };
    let handshake = async { Some(tls.acceptor.accept(TlsSocket::new(stream)).await) }
        .or(async {
            glommio::timer::sleep(TLS_HANDSHAKE_TIMEOUT).await;
            None
        })
        .await;
    let stream = match handshake {
        Some(Ok(s)) => s,
        Some(Err(e)) => return Err(format!("TLS handshake failed: {e}")),
        None => return Err(format!("no TLS handshake within {TLS_HANDSHAKE_TIMEOUT:?}")),
    };
    let certificate = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.as_ref());
    let principal = tls.admit(certificate)?;
    tracing::debug!(%principal, channel = %tls.name, "controller channel peer admitted");
    Ok(Box::new(stream))
}

async fn serve_peer(
    mut stream: BoxedStream,
    connection: ConnectionId,
    node_id: i32,
    raft: Raft,
    forward: ForwardHandler,
    stop: StopHandle,
) -> io::Result<()> {
    loop {
        let frame = read_frame(&mut stream)
            .or(async {
                glommio::timer::sleep(IDLE_TIMEOUT).await;
                Err(io::Error::new(io::ErrorKind::TimedOut, "idle"))
            })
            .await?;
        if stop.is_requested() {
            return Ok(());
        }
        let request: PeerRequest = postcard::from_bytes(&frame)
            .map_err(|e| invalid(format!("a peer request does not decode: {e}")))?;
        let response = match request {
            PeerRequest::AppendEntries(rpc) => match raft.append_entries(rpc).await {
                Ok(r) => PeerResponse::AppendEntries(r),
                Err(e) => PeerResponse::Error(e.to_string()),
            },
            PeerRequest::Vote(rpc) => match raft.vote(rpc).await {
                Ok(r) => PeerResponse::Vote(r),
                Err(e) => PeerResponse::Error(e.to_string()),
            },
            PeerRequest::PreVote(rpc) => match raft.pre_vote(rpc).await {
                Ok(r) => PeerResponse::Vote(r),
                Err(e) => PeerResponse::Error(e.to_string()),
            },
            PeerRequest::Snapshot { vote, meta, data } => {
                match raft
                    .install_full_snapshot(
                        vote,
                        Snapshot {
                            meta,
                            snapshot: data,
                        },
                    )
                    .await
                {
                    Ok(r) => PeerResponse::Snapshot(r),
                    Err(e) => PeerResponse::Error(e.to_string()),
                }
            }
            PeerRequest::Forward(bytes) => {
                PeerResponse::Forward(forward.request(connection, bytes).await)
            }
            PeerRequest::Whois => PeerResponse::Whois { node_id },
            PeerRequest::TransferLeader(rpc) => match raft.handle_transfer_leader(rpc).await {
                Ok(r) => PeerResponse::TransferLeader(r),
                Err(e) => PeerResponse::Error(e.to_string()),
            },
            PeerRequest::AddObserver {
                node_id: observer,
                address,
            } => match crate::quorum::observer::add(&raft, observer, address).await {
                Ok(()) => PeerResponse::ObserverAdded,
                Err(why) => PeerResponse::Error(why),
            },
        };
        let bytes = postcard::to_stdvec(&response).map_err(invalid)?;
        write_frame(&mut stream, &bytes).await?;
    }
}

/// One connection to a peer, opened on first use and dropped on any error.
pub struct PeerConnection {
    addr: String,
    tls: Option<Arc<ControllerChannelTls>>,
    stream: Option<BoxedStream>,
}

/// Why a call to a peer failed.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("cannot reach controller {addr}: {source}")]
    Unreachable { addr: String, source: io::Error },
    #[error("controller {addr} did not answer: {source}")]
    Network { addr: String, source: io::Error },
    #[error("controller {addr} could not handle the request: {message}")]
    Remote { addr: String, message: String },
}

impl PeerConnection {
    /// A connection to the controller listener at `addr`, over the
    /// channel's TLS when `tls` is given.
    pub fn new(addr: String, tls: Option<Arc<ControllerChannelTls>>) -> Self {
        PeerConnection {
            addr,
            tls,
            stream: None,
        }
    }

    /// Whether a connection is open (a call will not connect first).
    pub fn is_connected(&self) -> bool {
        self.stream.is_some()
    }

    /// Connects, and over TLS shakes hands within `timeout` and checks
    /// that the peer is one the channel admits.
    async fn connect(&self, timeout: Duration) -> Result<BoxedStream, PeerError> {
        let unreachable = |source: io::Error| PeerError::Unreachable {
            addr: self.addr.clone(),
            source,
        };
        let addr: SocketAddr = resolve(&self.addr).map_err(unreachable)?;
        let stream = TcpStream::connect_timeout(addr, CONNECT_TIMEOUT)
            .await
            .map_err(|e| unreachable(io::Error::other(e.to_string())))?;
        stream.set_nodelay(true).ok();
        let Some(tls) = &self.tls else {
            return Ok(Box::new(stream));
        };
        let name = ControllerChannelTls::server_name(&self.addr)
            .map_err(|why| unreachable(invalid(why)))?;
        let handshake = async { tls.connector.connect(name, TlsSocket::new(stream)).await }
            .or(async {
                glommio::timer::sleep(timeout).await;
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no TLS handshake within {timeout:?}"),
                ))
            })
            .await;
        let stream = handshake.map_err(|e| {
            unreachable(io::Error::new(
                e.kind(),
                format!("TLS with the controller channel {} failed: {e}", tls.name),
            ))
        })?;
        let certificate = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
            .map(|c| c.as_ref());
        tls.admit(certificate).map_err(|why| {
            tracing::warn!(addr = %self.addr, "refusing a controller channel peer: {why}");
            unreachable(io::Error::new(io::ErrorKind::PermissionDenied, why))
        })?;
        Ok(Box::new(stream))
    }

    /// Sends `request` and waits up to `timeout` for the answer.
    ///
    /// A kept connection that the peer closed while it was idle (the peer
    /// was killed or restarted) fails the exchange at once, before the peer
    /// could read the request: the request then goes once more, on a new
    /// connection (refused at once if the peer is gone, which callers take
    /// for an unreachable controller). A connection that carries requests
    /// only now and then meets this, unlike one that heartbeats every few
    /// hundred milliseconds and notices a dead peer first. A peer that
    /// died while it answered gets the request twice; every decision is
    /// checked against the committed image, so a repeat is refused (a
    /// topic that exists, a stale partition epoch) or changes nothing.
    pub async fn call(
        &mut self,
        request: &PeerRequest,
        timeout: Duration,
    ) -> Result<PeerResponse, PeerError> {
        let bytes = postcard::to_stdvec(request).map_err(|e| PeerError::Network {
            addr: self.addr.clone(),
            source: invalid(e),
        })?;
        let reused = self.stream.is_some();
        let frame = match self.exchange(&bytes, timeout).await {
            Err(PeerError::Network { source, .. }) if reused && closed_while_idle(&source) => {
                tracing::debug!(
                    addr = %self.addr,
                    "the kept controller connection was closed ({source}); sending again on a new one"
                );
                self.exchange(&bytes, timeout).await?
            }
            answer => answer?,
        };
        match postcard::from_bytes::<PeerResponse>(&frame) {
            Ok(PeerResponse::Error(message)) => Err(PeerError::Remote {
                addr: self.addr.clone(),
                message,
            }),
            Ok(r) => Ok(r),
            Err(e) => {
                self.stream = None;
                Err(PeerError::Network {
                    addr: self.addr.clone(),
                    source: invalid(format!("an answer does not decode: {e}")),
                })
            }
        }
    }
}

impl PeerConnection {
    /// One request frame out and its answer frame back, connecting first
    /// when no connection is kept; the connection is dropped on a failure.
    async fn exchange(&mut self, bytes: &[u8], timeout: Duration) -> Result<Vec<u8>, PeerError> {
        if self.stream.is_none() {
            self.stream = Some(self.connect(timeout).await?);
        }
        let stream = self.stream.as_mut().expect("connected above");
        let exchange = async {
            write_frame(stream, bytes).await?;
            read_frame(stream).await
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
        answer.map_err(|source| {
            self.stream = None;
            PeerError::Network {
                addr: self.addr.clone(),
                source,
            }
        })
    }

    /// [`PeerConnection::call`], expecting the answer `pick` accepts; any
    /// other kind of answer is a network error.
    pub async fn call_for<T>(
        &mut self,
        request: &PeerRequest,
        timeout: Duration,
        pick: impl FnOnce(PeerResponse) -> Option<T>,
    ) -> Result<T, PeerError> {
        let answer = self.call(request, timeout).await?;
        pick(answer).ok_or_else(|| PeerError::Network {
            addr: self.addr.clone(),
            source: invalid("the answer is of the wrong kind"),
        })
    }
}

/// Whether an exchange failed because the peer had closed the connection
/// (a reset, a broken pipe, the end of the stream), rather than by a
/// timeout or a malformed answer.
fn closed_while_idle(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::UnexpectedEof
    )
}

/// `HOST:PORT` to its first address (peer controllers, and the brokers the
/// server connects to). Startup checks every voter's address, so for them
/// this only fails if a name stops resolving.
pub fn resolve(addr: &str) -> io::Result<SocketAddr> {
    use std::net::ToSocketAddrs;
    addr.to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::other(format!("{addr} resolves to no address")))
}

fn rpc_error(e: PeerError) -> RPCError<MetadataRaft> {
    match e {
        PeerError::Unreachable { .. } => RPCError::Unreachable(Unreachable::new(&e)),
        _ => RPCError::Network(NetworkError::new(&e)),
    }
}

/// openraft's client to one peer.
pub struct PeerClient {
    connection: PeerConnection,
    /// For an observer: the pause after a failed connection, during which
    /// calls fail at once as unreachable (`quorum::reconnect`).
    backoff: Option<ReconnectBackoff>,
}

impl PeerClient {
    /// [`PeerConnection::call_for`], held back while an observer's
    /// reconnect pause runs.
    async fn call_for<T>(
        &mut self,
        request: &PeerRequest,
        timeout: Duration,
        pick: impl FnOnce(PeerResponse) -> Option<T>,
    ) -> Result<T, PeerError> {
        if let Some(backoff) = &self.backoff {
            if !self.connection.is_connected() && !backoff.may_connect(Instant::now()) {
                return Err(PeerError::Unreachable {
                    addr: self.connection.addr.clone(),
                    source: io::Error::other(
                        "the last connection attempt failed; waiting to retry",
                    ),
                });
            }
        }
        let result = self.connection.call_for(request, timeout, pick).await;
        if let Some(backoff) = &mut self.backoff {
            match &result {
                Err(PeerError::Unreachable { .. }) => backoff.failed(Instant::now()),
                Ok(_) => backoff.connected(),
                Err(_) => {}
            }
        }
        result
    }
}

impl RaftNetworkV2<MetadataRaft> for PeerClient {
    type SnapshotData = SnapshotData;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<MetadataRaft>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<MetadataRaft>, RPCError<MetadataRaft>> {
        self.call_for(
            &PeerRequest::AppendEntries(rpc),
            option.hard_ttl(),
            |a| match a {
                PeerResponse::AppendEntries(r) => Some(r),
                _ => None,
            },
        )
        .await
        .map_err(rpc_error)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<MetadataRaft>,
        option: RPCOption,
    ) -> Result<VoteResponse<MetadataRaft>, RPCError<MetadataRaft>> {
        self.call_for(&PeerRequest::Vote(rpc), option.hard_ttl(), |a| match a {
            PeerResponse::Vote(r) => Some(r),
            _ => None,
        })
        .await
        .map_err(rpc_error)
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<MetadataRaft>,
        option: RPCOption,
    ) -> Result<VoteResponse<MetadataRaft>, RPCError<MetadataRaft>> {
        self.call_for(&PeerRequest::PreVote(rpc), option.hard_ttl(), |a| match a {
            PeerResponse::Vote(r) => Some(r),
            _ => None,
        })
        .await
        .map_err(rpc_error)
    }

    async fn transfer_leader(
        &mut self,
        rpc: TransferLeaderRequest<MetadataRaft>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<MetadataRaft>, RPCError<MetadataRaft>> {
        self.call_for(
            &PeerRequest::TransferLeader(rpc),
            option.hard_ttl(),
            |a| match a {
                PeerResponse::TransferLeader(r) => Some(r),
                _ => None,
            },
        )
        .await
        .map_err(rpc_error)
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot<
            openraft::type_config::alias::CommittedLeaderIdOf<MetadataRaft>,
            u64,
            BasicNode,
            SnapshotData,
        >,
        cancel: impl Future<Output = ReplicationClosed> + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<MetadataRaft>, StreamingError<MetadataRaft>> {
        let request = PeerRequest::Snapshot {
            vote,
            meta: snapshot.meta,
            data: snapshot.snapshot,
        };
        let call = async {
            let answer = self
                .call_for(&request, option.hard_ttl(), |a| match a {
                    PeerResponse::Snapshot(r) => Some(r),
                    _ => None,
                })
                .await;
            answer.map_err(|e| match e {
                PeerError::Unreachable { .. } => StreamingError::Unreachable(Unreachable::new(&e)),
                _ => StreamingError::Network(NetworkError::new(&e)),
            })
        };
        call.or(async { Err(StreamingError::Closed(cancel.await)) })
            .await
    }
}

/// Makes a [`PeerClient`] per target, at the address its membership entry
/// names, over the channel's TLS when it has one.
pub struct PeerClients {
    pub tls: Option<Arc<ControllerChannelTls>>,
    /// The voters' ids: every other target is an observer, whose
    /// connections back off after a failure.
    pub voters: BTreeSet<u64>,
}

impl RaftNetworkFactory<MetadataRaft> for PeerClients {
    type Network = PeerClient;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> PeerClient {
        PeerClient {
            connection: PeerConnection::new(node.addr.clone(), self.tls.clone()),
            backoff: (!self.voters.contains(&target)).then(ReconnectBackoff::default),
        }
    }
}
