//! The Prometheus endpoint: `GET /metrics` on `metrics.listen`, served by
//! shard 0.
//!
//! The HTTP is deliberately tiny: one request per connection, the request
//! head read up to [`METRICS_REQUEST_MAX_BYTES`] and answered within
//! [`METRICS_EXCHANGE_TIMEOUT`], then the connection is closed. That is all
//! a Prometheus scrape needs, and it leaves nothing for a stray client to
//! hold open: at most [`METRICS_CONNECTIONS_MAX`] exchanges run at once and
//! each ends by its deadline.
//!
//! A scrape asks every shard for its probe snapshot over the shard mesh, so
//! the cost of metrics lands on the scrape, not on the requests counted.
//!
//! The port is bound on the main thread before the shards start
//! ([`bind`]): a port in use is then a startup error that names the setting,
//! instead of a failure on shard 0 while the other shards wait for it. It is
//! bound without `SO_REUSEPORT` (which glommio's own `TcpListener::bind`
//! sets), so that a second broker on the same port fails rather than
//! silently taking half of the scrapes.

use std::cell::Cell;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};

use crate::node::stop::StopHandle;
use crate::server::metrics::{self, ShardSnapshot};
use crate::shard::shard::Shard;

/// Largest request head (request line and headers) the endpoint reads; a
/// scrape's is a few hundred bytes.
pub const METRICS_REQUEST_MAX_BYTES: usize = 8 * 1024;
/// Time a client gets to send its request and take the response.
pub const METRICS_EXCHANGE_TIMEOUT: Duration = Duration::from_secs(5);
/// Exchanges served at once; connections beyond it are closed unanswered.
pub const METRICS_CONNECTIONS_MAX: usize = 8;
/// How often the idle accept loop checks whether the broker is stopping.
const STOP_CHECK_INTERVAL: Duration = Duration::from_millis(50);

/// Binds `metrics.listen`. Call it before the shards start; hand the
/// listener to [`spawn`] on shard 0.
pub fn bind(addr: SocketAddr) -> Result<std::net::TcpListener, String> {
    std::net::TcpListener::bind(addr).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            format!("metrics.listen {addr} is in use; set another in the config file")
        } else {
            format!("cannot listen on metrics.listen {addr}: {e}; set another in the config file")
        }
    })
}

/// Serves the endpoint on this shard until `stop` says the broker is
/// stopping; the task ends once the exchanges in progress have ended too
/// (each within [`METRICS_EXCHANGE_TIMEOUT`]).
pub fn spawn(
    shard: &Rc<Shard>,
    listener: std::net::TcpListener,
    stop: StopHandle,
) -> glommio::Task<()> {
    // SAFETY: the descriptor comes from `into_raw_fd` of a bound, listening
    // socket, so it is open and owned by nobody else; the glommio listener
    // takes over closing it.
    let listener = unsafe { TcpListener::from_raw_fd(listener.into_raw_fd()) };
    let shard = shard.clone();
    glommio::spawn_local(async move { accept_loop(shard, listener, stop).await })
}

async fn accept_loop(shard: Rc<Shard>, listener: TcpListener, stop: StopHandle) {
    let active = Rc::new(Cell::new(0usize));
    loop {
        let accepted = futures_lite::future::or(async { Some(listener.accept().await) }, async {
            while !stop.is_requested() {
                crate::ticks::sleep_to_next_tick(STOP_CHECK_INTERVAL).await;
            }
            None
        })
        .await;
        match accepted {
            None => break,
            Some(Ok(stream)) => {
                if active.get() >= METRICS_CONNECTIONS_MAX {
                    tracing::debug!("metrics endpoint busy: closing a connection unanswered");
                    continue;
                }
                active.set(active.get() + 1);
                let (shard, active) = (shard.clone(), active.clone());
                glommio::spawn_local(async move {
                    serve_exchange(&shard, stream).await;
                    active.set(active.get() - 1);
                })
                .detach();
            }
            Some(Err(e)) => {
                tracing::warn!("metrics endpoint: accept failed: {e}");
                glommio::timer::sleep(STOP_CHECK_INTERVAL).await;
            }
        }
    }
    drop(listener);
    // Each exchange ends by its own deadline, so this wait is bounded too.
    let deadline = Instant::now() + METRICS_EXCHANGE_TIMEOUT + STOP_CHECK_INTERVAL;
    while active.get() > 0 && Instant::now() < deadline {
        glommio::timer::sleep(STOP_CHECK_INTERVAL).await;
    }
}

/// One request and its response, abandoned at the deadline.
async fn serve_exchange(shard: &Rc<Shard>, mut stream: TcpStream) {
    let exchange = async {
        let route = match read_head(&mut stream).await? {
            Some(head) => route(&head),
            None => Route::TooLarge,
        };
        let (status, content_type, body) = match route {
            Route::Metrics => ("200 OK", metrics::CONTENT_TYPE, gather(shard).await),
            Route::NotFound => (
                "404 Not Found",
                TEXT,
                "not found; try GET /metrics\n".into(),
            ),
            Route::BadRequest => ("400 Bad Request", TEXT, "bad request\n".into()),
            Route::TooLarge => (
                "431 Request Header Fields Too Large",
                TEXT,
                "request head too large\n".into(),
            ),
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.close().await
    };
    let outcome = futures_lite::future::or(async { Some(exchange.await) }, async {
        glommio::timer::sleep(METRICS_EXCHANGE_TIMEOUT).await;
        None
    })
    .await;
    match outcome {
        Some(Ok(())) => {}
        Some(Err(e)) => tracing::debug!("metrics endpoint: {e}"),
        None => tracing::debug!(
            "metrics endpoint: closing a connection that took over {METRICS_EXCHANGE_TIMEOUT:?}"
        ),
    }
}

const TEXT: &str = "text/plain; charset=utf-8";

/// Reads until the blank line that ends a request head. `None` when the
/// head exceeds [`METRICS_REQUEST_MAX_BYTES`]; the head read so far when the
/// client closes early, which [`route`] then refuses.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    loop {
        // Never read past the limit, so a head that ends just beyond it is
        // refused too, whatever the read sizes.
        let room = METRICS_REQUEST_MAX_BYTES - head.len();
        if room == 0 {
            return Ok(None);
        }
        let want = room.min(buf.len());
        let n = stream.read(&mut buf[..want]).await?;
        if n == 0 {
            return Ok(Some(head));
        }
        // The blank line may straddle two reads.
        let scan_from = head.len().saturating_sub(3);
        head.extend_from_slice(&buf[..n]);
        if head[scan_from..].windows(4).any(|w| w == b"\r\n\r\n") {
            return Ok(Some(head));
        }
    }
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    Metrics,
    NotFound,
    BadRequest,
    TooLarge,
}

fn route(head: &[u8]) -> Route {
    if !head.windows(4).any(|w| w == b"\r\n\r\n") {
        return Route::BadRequest;
    }
    let line_end = head
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(head.len());
    let Ok(line) = std::str::from_utf8(&head[..line_end]) else {
        return Route::BadRequest;
    };
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Route::BadRequest;
    };
    if !version.starts_with("HTTP/1.") {
        return Route::BadRequest;
    }
    // Prometheus may add query parameters; they select nothing here.
    let path = target.split('?').next().unwrap_or(target);
    if method == "GET" && path == "/metrics" {
        Route::Metrics
    } else {
        Route::NotFound
    }
}

/// Every shard's snapshot, rendered. A shard that cannot answer (it is
/// stopping) is left out rather than failing the scrape.
async fn gather(shard: &Rc<Shard>) -> String {
    let mut snapshots: Vec<ShardSnapshot> = Vec::with_capacity(shard.shard_count());
    for s in 0..shard.shard_count() {
        let snapshot = shard
            .submit_to(s, |shard| async move { metrics::snapshot(&shard) })
            .await;
        match snapshot {
            Ok(snapshot) => snapshots.push(snapshot),
            Err(e) => tracing::debug!("metrics endpoint: no snapshot from shard {s}: {e}"),
        }
    }
    metrics::render(&snapshots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(
            route(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Route::Metrics
        );
        assert_eq!(route(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n"), Route::Metrics);
        assert_eq!(route(b"GET / HTTP/1.1\r\n\r\n"), Route::NotFound);
        assert_eq!(route(b"POST /metrics HTTP/1.1\r\n\r\n"), Route::NotFound);
        assert_eq!(route(b"GET /metrics HTTP/1.1\r\n"), Route::BadRequest);
        assert_eq!(route(b"GET /metrics\r\n\r\n"), Route::BadRequest);
        assert_eq!(route(b"GET /metrics SPDY/3\r\n\r\n"), Route::BadRequest);
        assert_eq!(
            route(b"\xff\xfe /metrics HTTP/1.1\r\n\r\n"),
            Route::BadRequest
        );
        assert_eq!(route(b""), Route::BadRequest);
    }

    #[test]
    fn bind_failure_names_the_setting() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let e = bind(addr).unwrap_err();
        assert_eq!(
            e,
            format!("metrics.listen {addr} is in use; set another in the config file")
        );
    }
}
