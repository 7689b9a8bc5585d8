//! Connections that do not authenticate, or do nothing, are bounded in
//! number and in time (issue 31, hostile input), while authenticated
//! clients are served throughout.
//!
//! One single-shard broker with a SASL_PLAINTEXT listener (PLAIN users
//! from its JAAS config) and `connections.max.idle.ms` of 3 s:
//! - a flood of silent connections past the shard's limit of
//!   unauthenticated connections: the ones past it are closed at once, with
//!   one log line; the others are closed when idle;
//! - a client that keeps talking (ApiVersions every second) but never
//!   authenticates is closed 30 s after it connected;
//! - an authenticated client that keeps sending requests is served
//!   throughout, one that falls silent is closed after 3 s, and a new
//!   client authenticates once the flood is gone.
//!
//! Needs no external client. About 35 s.

use crate::support;

use std::io::{ErrorKind, Read};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use pinlog::protocol::api::ApiKey;
use pinlog::protocol::header::RequestHeader;
use pinlog::protocol::messages::api_versions::ApiVersionsRequest;
use pinlog::protocol::messages::metadata::{MetadataRequest, MetadataResponse};
use pinlog::server::network::connection::{
    SASL_AUTHENTICATION_TIMEOUT, UNAUTHENTICATED_CONNECTIONS_MAX_PER_SHARD,
};
use support::kafka_conn::Conn;
use support::{free_port, wait_for, Broker, BrokerOpts};

const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    username=\"admin\" password=\"admin-secret\" \
    user_admin=\"admin-secret\" user_alice=\"alice-secret\";";
/// `connections.max.idle.ms` of the test's broker.
const MAX_IDLE: Duration = Duration::from_secs(3);
/// Silent connections opened past the limit.
const PAST_THE_LIMIT: usize = 40;
/// Slack on every bound the broker keeps: its checks run every 50 ms, and
/// this machine may be slow.
const SLACK: Duration = Duration::from_secs(5);
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// A connection logged in as alice.
fn authenticated(addr: SocketAddr) -> Conn {
    let mut conn = Conn::open(addr, "limits", IO_TIMEOUT).expect("connect");
    conn.sasl_plain("alice", "alice-secret");
    conn
}

fn metadata(conn: &mut Conn) -> MetadataResponse {
    let mut r = conn.call(ApiKey::Metadata, 12, |w| {
        MetadataRequest {
            topics: Some(Vec::new()),
            ..MetadataRequest::default()
        }
        .encode(w, 12)
    });
    MetadataResponse::decode(&mut r, 12).expect("a Metadata response")
}

/// A size-prefixed ApiVersions v3 request, written without waiting for
/// its answer.
fn api_versions_frame() -> Vec<u8> {
    let mut body = bytes::BytesMut::new();
    RequestHeader {
        api_key: ApiKey::ApiVersions as i16,
        api_version: 3,
        correlation_id: 1,
        client_id: Some("limits-talker".into()),
    }
    .encode(&mut body, ApiKey::ApiVersions.request_header_version(3));
    ApiVersionsRequest::default().encode(&mut body, 3);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

fn api_versions(conn: &mut Conn) {
    conn.call(ApiKey::ApiVersions, 3, |w| {
        ApiVersionsRequest::default().encode(w, 3)
    });
}

/// Whether the broker has closed `stream`, waiting at most `wait`.
fn closed_within(stream: &mut TcpStream, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    let mut buf = [0u8; 256];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        stream
            .set_read_timeout(Some(left))
            .expect("set a read timeout");
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

#[test]
fn unauthenticated_and_idle_connections_are_bounded() {
    let port = free_port();
    let broker = Broker::start(
        BrokerOpts::new()
            .shards(1)
            .setting(
                "listeners",
                format!("PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:{port}"),
            )
            .setting("sasl.enabled.mechanisms", "PLAIN")
            .setting("sasl.jaas.config", PLAIN_JAAS)
            .setting("connections.max.idle.ms", MAX_IDLE.as_millis() as i64)
            .env("RUST_LOG", "info,pinlog::server::network=debug"),
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("an address");

    // Before the flood: a client that authenticated, and one that talks
    // but never authenticates.
    let mut busy = authenticated(addr);
    let mut silent_after_login = authenticated(addr);
    let mut talker = Conn::open(addr, "limits-talker", IO_TIMEOUT).expect("connect");
    let talker_connected = Instant::now();
    api_versions(&mut talker);

    // The flood: every slot the shard has, and more. The connections past
    // the limit are closed at once, the others hold their slots.
    let flood: Vec<TcpStream> = (0..UNAUTHENTICATED_CONNECTIONS_MAX_PER_SHARD + PAST_THE_LIMIT)
        .map(|_| TcpStream::connect(addr).expect("connect a silent client"))
        .collect();
    let mut flood: Vec<(TcpStream, bool)> = flood.into_iter().map(|s| (s, false)).collect();
    // The busy client and the talker send a request every half second,
    // so that only the silent connections go idle.
    let mut last_ping = Instant::now();
    let mut ping = |busy: &mut Conn, talker: &mut Conn| {
        if last_ping.elapsed() >= Duration::from_millis(500) {
            assert!(!metadata(busy).brokers.is_empty());
            api_versions(talker);
            last_ping = Instant::now();
        }
    };
    // The refusals happen as the broker accepts: look until they are all
    // seen, well before the held connections could go idle.
    let refusal_deadline = Instant::now() + MAX_IDLE / 2;
    let mut refused_at_once = 0;
    while refused_at_once < PAST_THE_LIMIT - 1 && Instant::now() < refusal_deadline {
        for (stream, closed) in flood.iter_mut().filter(|(_, closed)| !*closed) {
            if closed_within(stream, Duration::from_millis(1)) {
                *closed = true;
                refused_at_once += 1;
            }
            ping(&mut busy, &mut talker);
        }
    }
    assert!(
        refused_at_once >= PAST_THE_LIMIT - 1,
        "only {refused_at_once} of the {PAST_THE_LIMIT} connections past the limit were closed at once"
    );
    assert!(
        broker.log().contains(&format!(
            "already holds {UNAUTHENTICATED_CONNECTIONS_MAX_PER_SHARD} connections that have not authenticated"
        )),
        "the broker did not log the refusals at the limit"
    );
    // The authenticated client is served during the flood.
    assert!(!metadata(&mut busy).brokers.is_empty());

    // The silent ones are closed once idle for connections.max.idle.ms;
    // the busy client and the talker keep their connections meanwhile.
    let idle_deadline = Instant::now() + MAX_IDLE + SLACK;
    for (stream, closed) in flood.iter_mut().filter(|(_, closed)| !*closed) {
        while !*closed && Instant::now() < idle_deadline {
            *closed = closed_within(stream, Duration::from_millis(100));
            ping(&mut busy, &mut talker);
        }
    }
    let open = flood.iter().filter(|(_, closed)| !*closed).count();
    assert_eq!(
        open, 0,
        "{open} silent connections were still open {:?} after the idle limit",
        SLACK
    );
    assert!(
        closed_within(&mut silent_after_login.stream, Duration::from_millis(10)),
        "an authenticated connection idle for connections.max.idle.ms is still open"
    );

    // A new client authenticates now that the slots are free.
    let mut late = authenticated(addr);
    assert!(!metadata(&mut late).brokers.is_empty());

    // The talker is closed SASL_AUTHENTICATION_TIMEOUT after it connected,
    // however busy it keeps its connection.
    let talker_closed = wait_for(
        SASL_AUTHENTICATION_TIMEOUT + SLACK
            - talker_connected.elapsed().min(SASL_AUTHENTICATION_TIMEOUT),
        || {
            if closed_within(&mut talker.stream, Duration::from_millis(200)) {
                return true;
            }
            assert!(!metadata(&mut busy).brokers.is_empty());
            // The broker may close it between the check and this write.
            let _ = std::io::Write::write_all(&mut talker.stream, &api_versions_frame());
            false
        },
    );
    let lived = talker_connected.elapsed();
    assert!(
        talker_closed && lived >= SASL_AUTHENTICATION_TIMEOUT,
        "the client that never authenticated was {} after {lived:?}",
        if talker_closed {
            "closed"
        } else {
            "still open"
        }
    );
    assert!(broker
        .log()
        .contains("no SASL authentication within 30s of connecting"));
    assert!(!metadata(&mut busy).brokers.is_empty());
}
