//! Admin requests are authorized again by the active controller, for the
//! client that sent them (KRaft's Envelope; issue 31).
//!
//! Two nodes under StandardAuthorizer: node 1 is the only voter, so the
//! active controller; node 2 is a broker-only node that forwards admin
//! requests to it. Their settings differ on purpose: node 2 counts alice
//! among its `super.users`, node 1 does not. Alice's CreateTopics through
//! node 2 passes node 2's own check and is refused by the controller with
//! TOPIC_AUTHORIZATION_FAILED, which is what a broker with stale ACLs
//! meets in a real cluster; the super user of both creates the topic
//! through node 2. Needs no external client; about 5 s.

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code;
use pinlog::protocol::messages::create_topics::*;
use support::kafka_conn::Conn;
use support::{free_port, wait_for, Broker, BrokerOpts, Cluster};

const IO_TIMEOUT: Duration = Duration::from_secs(10);
const START_TIMEOUT: Duration = Duration::from_secs(30);
const PLAIN_USERS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    user_admin=\"admin-secret\" user_alice=\"alice-secret\";";
const AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// A connection to `addr` logged in with PLAIN as `user`.
fn login(addr: SocketAddr, user: &str, password: &str) -> Conn {
    let mut conn = Conn::open(addr, "envelope-test", IO_TIMEOUT).expect("connect");
    conn.sasl_plain(user, password);
    conn
}

/// CreateTopics of `topic` (one partition, one replica): its error code
/// and message.
fn create(conn: &mut Conn, topic: &str) -> (i16, Option<String>) {
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: topic.into(),
            num_partitions: 1,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        validate_only: false,
    };
    let mut r = conn.call(ApiKey::CreateTopics, 7, |w| req.encode(w, 7));
    let resp = CreateTopicsResponse::decode(&mut r, 7).expect("a CreateTopics response");
    let t = &resp.topics[0];
    (t.error_code, t.error_message.clone())
}

#[test]
fn the_active_controller_authorizes_forwarded_requests_for_their_client() {
    let controller_port = free_port();
    let voters = format!("1@127.0.0.1:{controller_port}");
    let sasl_ports = [free_port(), free_port()];
    let node = |id: i64, super_users: &str| {
        let sasl = sasl_ports[id as usize - 1];
        Cluster::node_opts(&BrokerOpts::new(), id, &voters, controller_port)
            .setting(
                "listeners",
                format!("PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:{sasl}"),
            )
            .setting("sasl.enabled.mechanisms", "PLAIN")
            .setting(
                "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                PLAIN_USERS,
            )
            .setting("authorizer.class.name", AUTHORIZER)
            .setting("super.users", super_users)
    };
    // The brokers reach each other as User:ANONYMOUS on PLAINTEXT.
    let mut controller = Broker::launch(node(1, "User:admin;User:ANONYMOUS"));
    let mut forwarder = Broker::launch(
        node(2, "User:admin;User:alice;User:ANONYMOUS")
            .setting("process.roles", "broker")
            .without_setting("controller.listen"),
    );
    controller.await_ready();
    forwarder.await_ready();
    let at_forwarder: SocketAddr = format!("127.0.0.1:{}", sasl_ports[1])
        .parse()
        .expect("an address");

    // Alice, a super user to node 2 only: refused by the controller.
    let mut alice = login(at_forwarder, "alice", "alice-secret");
    let (code, message) = create(&mut alice, "alice-topic");
    assert_eq!(
        code,
        error_code::TOPIC_AUTHORIZATION_FAILED,
        "alice's CreateTopics through node 2: {message:?}"
    );
    assert!(
        message
            .as_deref()
            .is_some_and(|m| m.contains("authorized again by the active controller")),
        "{message:?}"
    );

    // The super user of both nodes creates it through node 2.
    let mut admin = login(at_forwarder, "admin", "admin-secret");
    let created = wait_for(START_TIMEOUT, || {
        // Until node 2 has registered, the controller may not place a
        // replica on it; any answer but success is retried.
        create(&mut admin, "admin-topic").0 == error_code::NONE
    });
    assert!(
        created,
        "the super user's CreateTopics through node 2 failed"
    );
}
