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
use std::time::Duration;

use bytes::Bytes;
use glommio::channels::local_channel;
use glommio::net::TcpStream;

use crate::node::state::BrokerState;
use crate::node::stop::StopHandle;
use crate::server::network::dispatch::{handle_frame, Outcome};
use crate::server::network::frame_reader::{FrameError, FrameReader};
use crate::server::network::request_probe::{self, RequestTimer, ShardProbe};
use crate::server::network::response_writer::write_response;
use crate::shard::shard::Shard;

/// Requests read but not yet answered, per connection.
pub const IN_FLIGHT_REQUESTS_MAX: usize = 64;
/// How often an idle connection checks whether the broker is stopping.
const STOP_CHECK_INTERVAL: Duration = Duration::from_millis(50);

/// Why a connection ends.
#[derive(Debug)]
enum End {
    PeerClosed,
    Io(std::io::Error),
    Protocol(String),
}

/// Serves one connection until the peer closes it or sends garbage.
/// `stop` says when the broker shuts down: the connection then reads no
/// new request, answers those in flight, and closes.
pub async fn serve_connection(shard: Rc<Shard>, stream: TcpStream, stop: StopHandle) {
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
    let max_frame = BrokerState::of(&shard).config.socket_request_max_bytes;
    let probe = ShardProbe::of(&shard);
    let (mut reader, mut writer) = futures_lite::io::split(stream);
    let mut frames = FrameReader::new(max_frame);
    let (tx, rx) = local_channel::new_bounded::<(Bytes, RequestTimer)>(IN_FLIGHT_REQUESTS_MAX);

    let writer_probe = probe.clone();
    let worker_shard = shard.clone();
    // The writer says when it stops (a refused request, a socket error), so
    // the reader stops waiting for frames and the connection closes.
    let writer_done = Rc::new(std::cell::Cell::new(false));
    let writer_done_flag = writer_done.clone();
    let writer_task = glommio::spawn_local(async move {
        let end = serve_requests(&worker_shard, &rx, &mut writer, &writer_probe, &peer_host).await;
        writer_done_flag.set(true);
        end
    });

    let end = loop {
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

/// Handles each request in arrival order and writes its response, until
/// the reader hangs up, a write fails, or a request must close the
/// connection.
async fn serve_requests<W: futures_lite::AsyncWrite + Unpin>(
    shard: &Rc<Shard>,
    rx: &local_channel::LocalReceiver<(Bytes, RequestTimer)>,
    writer: &mut W,
    probe: &ShardProbe,
    peer_host: &str,
) -> End {
    while let Some((frame, timer)) = rx.recv().await {
        let outcome = handle_frame(shard, frame, peer_host).await;
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
            Outcome::Close(why) => return End::Protocol(why),
        }
    }
    End::PeerClosed
}
