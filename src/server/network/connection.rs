//! One client connection: frames in, responses out, in request order.
//!
//! A reader loop cuts the byte stream into frames; a worker loop handles
//! them one at a time, in arrival order, and writes each response before
//! taking the next. A connection's requests are thus applied in the order
//! they were sent, as Kafka's broker applies them (it mutes a connection
//! while a request is in flight): a producer that pipelines several Produce
//! requests for one partition relies on it for record order and sequence
//! numbers. Reading the next frames overlaps with the work; the queue
//! between the loops is bounded, so a client that pipelines more than
//! [`IN_FLIGHT_REQUESTS_MAX`] requests waits for the oldest to be answered.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::protocol::chunks::Chunk;
use bytes::Bytes;
use futures_lite::{AsyncRead, AsyncWrite};
use glommio::channels::local_channel;
use glommio::net::TcpStream;

use crate::broker_config::listeners::Listener;
use crate::node::state::BrokerState;
use crate::node::stop::StopHandle;
use crate::security::listener_tls::TlsServing;
use crate::security::session::{next_connection_id, Session, ANONYMOUS_PRINCIPAL};
use crate::security::tls::certificate_principal;
use crate::security::tls_socket::TlsSocket;
use crate::server::handlers::{consumer_connections, share_sessions};
use crate::server::network::dispatch::{handle_frame, Outcome};
use crate::server::network::frame_reader::{FrameError, FrameReader};
use crate::server::network::request_probe::{self, RequestTimer, ShardProbe};
use crate::server::network::response_writer::write_response;
use crate::server::network::sasl::{Intercept, SaslAuthenticator, SaslServing};
use crate::shard::shard::Shard;

/// Requests read but not yet answered, per connection.
pub const IN_FLIGHT_REQUESTS_MAX: usize = 64;
/// How often an idle connection checks whether the broker is stopping.
const STOP_CHECK_INTERVAL: Duration = Duration::from_millis(50);
/// How long a client may take over its TLS handshake: a peer that opens a
/// connection and says nothing must not hold it (and its memory) forever.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client of a SASL listener has, from connecting, to
/// authenticate. Kafka's clients give up on setting up a connection after
/// `socket.connection.setup.timeout.max.ms` (30 s by default), so a
/// connection still unauthenticated by then serves nobody.
pub const SASL_AUTHENTICATION_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections a shard holds that have not authenticated yet (a TLS
/// listener's before the handshake, a SASL listener's before SASL
/// succeeds). Past it, new connections to those listeners are closed at
/// once, so that idle or slow unauthenticated peers cannot take every
/// file descriptor and the memory behind them; authenticated clients and
/// PLAINTEXT listeners do not count. A real client leaves this state
/// within milliseconds, so even a reconnection storm stays far below.
pub const UNAUTHENTICATED_CONNECTIONS_MAX_PER_SHARD: usize = 512;

thread_local! {
    /// This shard's unauthenticated connections (a shard is a thread).
    static UNAUTHENTICATED: Cell<usize> = const { Cell::new(0) };
    /// When this shard last logged a refusal at the limit, so that a flood
    /// writes one line a second rather than one per connection.
    static LAST_LIMIT_WARNING: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// One of this shard's [`UNAUTHENTICATED_CONNECTIONS_MAX_PER_SHARD`]
/// slots, given back when dropped: once the connection authenticates, or
/// when it closes.
struct UnauthenticatedSlot(());

impl UnauthenticatedSlot {
    fn take() -> Option<UnauthenticatedSlot> {
        UNAUTHENTICATED.with(|n| {
            if n.get() >= UNAUTHENTICATED_CONNECTIONS_MAX_PER_SHARD {
                return None;
            }
            n.set(n.get() + 1);
            Some(UnauthenticatedSlot(()))
        })
    }
}

impl Drop for UnauthenticatedSlot {
    fn drop(&mut self) {
        UNAUTHENTICATED.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

/// Logs a refusal at the limit, at most once a second per shard.
fn warn_at_limit(peer: &str, listener: &str) {
    let now = Instant::now();
    let due = LAST_LIMIT_WARNING.with(|last| {
        let due = last
            .get()
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1));
        if due {
            last.set(Some(now));
        }
        due
    });
    if due {
        tracing::warn!(
            %peer,
            %listener,
            "closing a new connection: this shard already holds \
             {UNAUTHENTICATED_CONNECTIONS_MAX_PER_SHARD} connections that have not authenticated \
             (a client flood, or peers that connect and say nothing); further refusals within a \
             second are not logged"
        );
    }
}

/// A listener as the shards serve it: its settings, and for TLS the
/// acceptor and the principal mapping rules. Built once at startup and
/// shared by every shard.
pub struct ServedListener {
    pub listener: Listener,
    pub tls: Option<Arc<TlsServing>>,
    /// SASL_PLAINTEXT and SASL_SSL listeners.
    pub sasl: Option<Arc<SaslServing>>,
}

/// Why a connection ends.
#[derive(Debug)]
enum End {
    PeerClosed,
    Io(std::io::Error),
    Protocol(String),
    /// `connections.max.idle.ms` passed without a request.
    Idle,
}

/// Why the reader stopped waiting for the next frame.
enum Interrupt {
    /// The broker stops, or the writer has stopped.
    Stop,
    /// A SASL client did not authenticate within
    /// [`SASL_AUTHENTICATION_TIMEOUT`].
    NotAuthenticated,
    Idle,
}

/// Serves one connection until the peer closes it or sends garbage.
/// `stop` says when the broker shuts down: the connection then reads no
/// new request, answers those in flight, and closes. On a TLS listener the
/// handshake comes first, and a client certificate names the principal.
pub async fn serve_connection(
    shard: Rc<Shard>,
    stream: TcpStream,
    stop: StopHandle,
    listener: Arc<ServedListener>,
) {
    let peer_addr = stream.peer_addr().ok();
    let peer = peer_addr
        .map(|a| a.to_string())
        .unwrap_or_else(|| "?".to_string());
    let peer_host: Rc<str> = peer_addr
        .map(|a| a.ip().to_string())
        .unwrap_or_default()
        .into();
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(%peer, "cannot set TCP_NODELAY: {e}");
    }
    let mut session = Session {
        listener: listener.listener.name.as_str().into(),
        protocol: listener.listener.protocol,
        peer_host,
        principal: ANONYMOUS_PRINCIPAL.into(),
        connection_id: next_connection_id(),
    };
    let sasl = listener.sasl.clone().map(SaslAuthenticator::new);
    let unauthenticated = if listener.tls.is_some() || sasl.is_some() {
        match UnauthenticatedSlot::take() {
            Some(slot) => Some(slot),
            None => {
                warn_at_limit(&peer, &session.listener);
                return;
            }
        }
    } else {
        None
    };
    let Some(tls) = &listener.tls else {
        return serve_stream(shard, stream, stop, session, sasl, unauthenticated, peer).await;
    };
    let handshake = futures_lite::future::or(
        async { Some(tls.acceptor().accept(TlsSocket::new(stream)).await) },
        async {
            glommio::timer::sleep(TLS_HANDSHAKE_TIMEOUT).await;
            None
        },
    )
    .await;
    let stream = match handshake {
        Some(Ok(s)) => s,
        // A peer that closes before finishing the handshake is most often
        // a port probe (a load balancer's health check, the controller's
        // liveness probe); anything else is worth a warning.
        Some(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            tracing::debug!(%peer, listener = %session.listener, "closed during the TLS handshake");
            return;
        }
        Some(Err(e)) => {
            tracing::warn!(%peer, listener = %session.listener, "TLS handshake failed: {e}");
            return;
        }
        None => {
            tracing::warn!(
                %peer,
                listener = %session.listener,
                "closing connection: no TLS handshake within {TLS_HANDSHAKE_TIMEOUT:?}"
            );
            return;
        }
    };
    if let Some(certificate) = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
    {
        match certificate_principal(certificate, &tls.principal_mapper) {
            Ok(principal) => session.principal = principal.into(),
            Err(e) => {
                tracing::warn!(%peer, listener = %session.listener, "refusing the client certificate: {e}");
                return;
            }
        }
    }
    tracing::debug!(%peer, principal = %session.principal, "TLS connection established");
    // Without SASL, the handshake was the authentication.
    let unauthenticated = if sasl.is_some() {
        unauthenticated
    } else {
        None
    };
    serve_stream(shard, stream, stop, session, sasl, unauthenticated, peer).await
}

/// Serves requests on a set-up stream, plain or TLS.
async fn serve_stream<S: AsyncRead + AsyncWrite + Unpin + 'static>(
    shard: Rc<Shard>,
    stream: S,
    stop: StopHandle,
    session: Session,
    sasl: Option<SaslAuthenticator>,
    unauthenticated: Option<UnauthenticatedSlot>,
    peer: String,
) {
    let config = &BrokerState::of(&shard).config;
    let max_frame = config.socket_request_max_bytes;
    let max_idle = Duration::from_millis(config.connections_max_idle_ms);
    let authentication_deadline =
        (sasl.is_some()).then(|| Instant::now() + SASL_AUTHENTICATION_TIMEOUT);
    // What the idle limit watches: requests read but not answered, and
    // when the last one arrived or was answered.
    let activity = Rc::new(Activity {
        in_flight: Cell::new(0),
        last: Cell::new(Instant::now()),
        authenticated: Cell::new(sasl.is_none()),
    });
    // Until a SASL client has authenticated, its frames are bounded by
    // sasl.server.max.receive.size; the worker raises the bound after.
    let frame_limit = Rc::new(std::cell::Cell::new(match &sasl {
        Some(a) => a.max_receive_size(),
        None => max_frame,
    }));
    let probe = ShardProbe::of(&shard);
    let connection_id = session.connection_id;
    let (mut reader, mut writer) = futures_lite::io::split(stream);
    let mut frames = FrameReader::new(frame_limit.get());
    let (tx, rx) = local_channel::new_bounded::<(Bytes, RequestTimer)>(IN_FLIGHT_REQUESTS_MAX);

    let writer_probe = probe.clone();
    let worker_shard = shard.clone();
    // The writer says when it stops (a refused request, a socket error), so
    // the reader stops waiting for frames and the connection closes.
    let writer_done = Rc::new(std::cell::Cell::new(false));
    let writer_done_flag = writer_done.clone();
    let worker_limit = frame_limit.clone();
    let worker_activity = activity.clone();
    let writer_task = glommio::spawn_local(async move {
        let mut worker = Worker {
            session,
            sasl,
            unauthenticated,
            activity: worker_activity,
            frame_limit: worker_limit,
            max_frame,
        };
        let end = serve_requests(&worker_shard, &rx, &mut writer, &writer_probe, &mut worker).await;
        writer_done_flag.set(true);
        end
    });

    let end = loop {
        frames.set_max_frame(
            frame_limit.get(),
            frame_limit_name(frame_limit.get(), max_frame),
        );
        let next = futures_lite::future::or(async { Ok(frames.next(&mut reader).await) }, async {
            loop {
                if stop.is_requested() || writer_done.get() {
                    return Err(Interrupt::Stop);
                }
                let now = Instant::now();
                if authentication_deadline.is_some_and(|d| now >= d)
                    && !activity.authenticated.get()
                {
                    return Err(Interrupt::NotAuthenticated);
                }
                if activity.in_flight.get() == 0
                    && now.duration_since(activity.last.get()) >= max_idle
                {
                    return Err(Interrupt::Idle);
                }
                crate::ticks::sleep_to_next_tick(STOP_CHECK_INTERVAL).await;
            }
        })
        .await;
        let next = match next {
            Ok(next) => Some(next),
            Err(Interrupt::Stop) => None,
            Err(Interrupt::NotAuthenticated) => {
                break End::Protocol(format!(
                    "no SASL authentication within {SASL_AUTHENTICATION_TIMEOUT:?} of connecting"
                ))
            }
            Err(Interrupt::Idle) => break End::Idle,
        };
        let frame = match next {
            None => break End::PeerClosed,
            Some(Ok(Some(f))) => f,
            Some(Ok(None)) => break End::PeerClosed,
            Some(Err(FrameError::Protocol(why))) => break End::Protocol(why),
            Some(Err(FrameError::Io(e))) => break End::Io(e),
        };
        activity.in_flight.set(activity.in_flight.get() + 1);
        activity.last.set(Instant::now());
        // Timed from here, so that waiting behind earlier requests counts too.
        let timer = probe.request_started(&frame);
        if tx.send((frame, timer)).await.is_err() {
            // The writer stopped (socket error or a refused request).
            break End::PeerClosed;
        }
    };
    drop(tx);
    let writer_end = writer_task.await;
    // Every request of the connection is answered (or failed): the
    // coordinators of the consumer-group members it heartbeated for are
    // told (consumer_connections), and what its
    // share-group members still hold goes back to the group, in a task of
    // its own, so that the socket closes now. Not when the broker stops:
    // its partitions' locks lapse with it.
    drop(reader);
    if !stop.is_requested() {
        let shard = shard.clone();
        glommio::spawn_local(async move {
            share_sessions::on_connection_closed(&shard, connection_id).await;
            consumer_connections::on_connection_closed(&shard, connection_id).await;
        })
        .detach();
    }
    match (end, writer_end) {
        (End::Protocol(why), _) | (_, End::Protocol(why)) => {
            tracing::warn!(%peer, "closing connection: {why}");
        }
        (End::Io(e), _) | (_, End::Io(e)) => tracing::debug!(%peer, "connection error: {e}"),
        (End::Idle, _) => tracing::debug!(
            %peer,
            "closing connection: no request for {max_idle:?} (connections.max.idle.ms)"
        ),
        _ => tracing::debug!(%peer, "connection closed"),
    }
}

/// The setting that bounds a connection's frames now, for the log line of
/// a frame past it.
fn frame_limit_name(limit: usize, max_frame: usize) -> &'static str {
    if limit == max_frame {
        "socket.request.max.bytes"
    } else {
        "sasl.server.max.receive.size, before authentication"
    }
}

/// A connection's requests in flight and when it was last active, and
/// whether it has authenticated: what the reader's limits watch.
struct Activity {
    in_flight: Cell<usize>,
    last: Cell<Instant>,
    authenticated: Cell<bool>,
}

/// The worker's side of a connection: its session, and on a SASL listener
/// the authentication that sets the session's principal.
struct Worker {
    session: Session,
    sasl: Option<SaslAuthenticator>,
    /// Held until the first authentication succeeds.
    unauthenticated: Option<UnauthenticatedSlot>,
    activity: Rc<Activity>,
    frame_limit: Rc<std::cell::Cell<usize>>,
    /// `socket.request.max.bytes`, the bound once authenticated.
    max_frame: usize,
}

impl Worker {
    /// What to do with a request: SASL's own requests and anything before
    /// authentication are the authenticator's; the rest is dispatched.
    async fn serve(&mut self, shard: &Rc<Shard>, frame: Bytes) -> Outcome {
        let Some(sasl) = self.sasl.as_mut() else {
            return handle_frame(shard, frame, &self.session).await;
        };
        let image = BrokerState::of(shard).image();
        let authentications = sasl.authentications();
        match sasl.intercept(&frame, &image) {
            Intercept::Dispatch => handle_frame(shard, frame, &self.session).await,
            Intercept::Respond(bytes) => {
                if let Some(principal) = sasl.principal() {
                    if sasl.authentications() > authentications {
                        self.session.principal = principal.into();
                        self.unauthenticated = None;
                        self.activity.authenticated.set(true);
                        if authentications == 0 {
                            tracing::debug!(principal, "SASL authentication succeeded");
                        } else {
                            tracing::debug!(principal, "SASL re-authentication succeeded");
                        }
                    }
                    self.frame_limit.set(self.max_frame);
                }
                Outcome::Respond(vec![Chunk::Bytes(bytes)])
            }
            Intercept::RespondThenClose(bytes, delay, why) => {
                // Kafka answers a failed authentication late, so that a
                // client guessing passwords gets few tries per second.
                glommio::timer::sleep(delay).await;
                if bytes.is_empty() {
                    Outcome::Close(why)
                } else {
                    Outcome::RespondThenClose(vec![Chunk::Bytes(bytes)], why)
                }
            }
            Intercept::Close(why) => Outcome::Close(why),
        }
    }
}

/// Handles each request in arrival order and writes its response, until
/// the reader hangs up, a write fails, or a request must close the
/// connection.
async fn serve_requests<W: AsyncWrite + Unpin>(
    shard: &Rc<Shard>,
    rx: &local_channel::LocalReceiver<(Bytes, RequestTimer)>,
    writer: &mut W,
    probe: &ShardProbe,
    worker: &mut Worker,
) -> End {
    while let Some((frame, timer)) = rx.recv().await {
        let outcome = worker.serve(shard, frame).await;
        let activity = worker.activity.clone();
        activity
            .in_flight
            .set(activity.in_flight.get().saturating_sub(1));
        activity.last.set(Instant::now());
        probe.request_finished(timer, &outcome);
        match outcome {
            Outcome::Respond(chunks) => {
                let bytes = request_probe::response_bytes(&chunks);
                if let Err(e) = write_response(writer, chunks).await {
                    return End::Io(e);
                }
                probe.response_sent(bytes);
            }
            Outcome::NoResponse => {}
            Outcome::RespondThrottled(chunks, mute) => {
                let bytes = request_probe::response_bytes(&chunks);
                if !chunks.is_empty() {
                    if let Err(e) = write_response(writer, chunks).await {
                        return End::Io(e);
                    }
                    probe.response_sent(bytes);
                }
                // KIP-219: the answer goes out at once; the connection's
                // next request waits until the client is back within its
                // quota.
                glommio::timer::sleep(mute).await;
            }
            Outcome::RespondThenClose(chunks, why) => {
                if let Err(e) = write_response(writer, chunks).await {
                    return End::Io(e);
                }
                return End::Protocol(why);
            }
            Outcome::Close(why) => return End::Protocol(why),
        }
    }
    End::PeerClosed
}
