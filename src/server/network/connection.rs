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

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use crate::protocol::chunks::Chunk;
use bytes::Bytes;
use futures_lite::{AsyncRead, AsyncWrite};
use glommio::channels::local_channel;
use glommio::net::TcpStream;

use crate::broker_config::listeners::Listener;
use crate::node::state::BrokerState;
use crate::node::stop::StopHandle;
use crate::security::session::{Session, ANONYMOUS_PRINCIPAL};
use crate::security::tls::certificate_principal;
use crate::server::network::dispatch::{handle_frame, Outcome};
use crate::server::network::frame_reader::{FrameError, FrameReader};
use crate::server::network::request_probe::{self, RequestTimer, ShardProbe};
use crate::server::network::response_writer::write_response;
use crate::server::network::sasl::{Intercept, SaslAuthenticator, SaslServing};
use crate::shard::shard::Shard;
use crate::ssl_principal::PrincipalMapper;

/// Requests read but not yet answered, per connection.
pub const IN_FLIGHT_REQUESTS_MAX: usize = 64;
/// How often an idle connection checks whether the broker is stopping.
const STOP_CHECK_INTERVAL: Duration = Duration::from_millis(50);
/// How long a client may take over its TLS handshake: a peer that opens a
/// connection and says nothing must not hold it (and its memory) forever.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A listener as the shards serve it: its settings, and for TLS the
/// acceptor and the principal mapping rules. Built once at startup and
/// shared by every shard.
pub struct ServedListener {
    pub listener: Listener,
    pub tls: Option<TlsServing>,
    /// SASL_PLAINTEXT and SASL_SSL listeners.
    pub sasl: Option<Arc<SaslServing>>,
}

pub struct TlsServing {
    pub acceptor: futures_rustls::TlsAcceptor,
    pub principal_mapper: PrincipalMapper,
}

/// Why a connection ends.
#[derive(Debug)]
enum End {
    PeerClosed,
    Io(std::io::Error),
    Protocol(String),
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
    };
    let sasl = listener.sasl.clone().map(SaslAuthenticator::new);
    let Some(tls) = &listener.tls else {
        return serve_stream(shard, stream, stop, session, sasl, peer).await;
    };
    let handshake =
        futures_lite::future::or(async { Some(tls.acceptor.accept(stream).await) }, async {
            glommio::timer::sleep(TLS_HANDSHAKE_TIMEOUT).await;
            None
        })
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
    serve_stream(shard, stream, stop, session, sasl, peer).await
}

/// Serves requests on a set-up stream, plain or TLS.
async fn serve_stream<S: AsyncRead + AsyncWrite + Unpin + 'static>(
    shard: Rc<Shard>,
    stream: S,
    stop: StopHandle,
    session: Session,
    sasl: Option<SaslAuthenticator>,
    peer: String,
) {
    let max_frame = BrokerState::of(&shard).config.socket_request_max_bytes;
    // Until a SASL client has authenticated, its frames are bounded by
    // sasl.server.max.receive.size; the worker raises the bound after.
    let frame_limit = Rc::new(std::cell::Cell::new(match &sasl {
        Some(a) => a.max_receive_size(),
        None => max_frame,
    }));
    let probe = ShardProbe::of(&shard);
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
    let writer_task = glommio::spawn_local(async move {
        let mut worker = Worker {
            session,
            sasl,
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
        let next =
            futures_lite::future::or(async { Some(frames.next(&mut reader).await) }, async {
                while !stop.is_requested() && !writer_done.get() {
                    glommio::timer::sleep(STOP_CHECK_INTERVAL).await;
                }
                None
            })
            .await;
        let frame = match next {
            None => break End::PeerClosed,
            Some(Ok(Some(f))) => f,
            Some(Ok(None)) => break End::PeerClosed,
            Some(Err(FrameError::Protocol(why))) => break End::Protocol(why),
            Some(Err(FrameError::Io(e))) => break End::Io(e),
        };
        // Timed from here, so that waiting behind earlier requests counts too.
        let timer = probe.request_started(&frame);
        if tx.send((frame, timer)).await.is_err() {
            // The writer stopped (socket error or a refused request).
            break End::PeerClosed;
        }
    };
    drop(tx);
    let writer_end = writer_task.await;
    match (end, writer_end) {
        (End::Protocol(why), _) | (_, End::Protocol(why)) => {
            tracing::warn!(%peer, "closing connection: {why}");
        }
        (End::Io(e), _) | (_, End::Io(e)) => tracing::debug!(%peer, "connection error: {e}"),
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

/// The worker's side of a connection: its session, and on a SASL listener
/// the authentication that sets the session's principal.
struct Worker {
    session: Session,
    sasl: Option<SaslAuthenticator>,
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
