//! Authorization end to end against one broker with Kafka's
//! `StandardAuthorizer` rules: `super.users=User:admin`,
//! `allow.everyone.if.no.acl.found=false`.
//!
//! The broker has two listeners. `SSL` requires a client certificate and
//! maps its subject to a principal (`CN=admin` → `User:admin`); Kafka's own
//! `kafka-acls.sh` and `kafka-topics.sh` (the Kafka 4.4 jars) connect there
//! as the super user to create topics and add, list and remove ACLs.
//! `PLAINTEXT` has no authentication, so its clients are `User:ANONYMOUS`:
//! pinlog's raw test client connects there and shows what the ACLs for
//! `User:ANONYMOUS` let through, API by API, with Kafka's error codes.
//! The certificates are made with `openssl` (`support::test_ca`).

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use bytes::Bytes;
use pinlog::log::batch::{build_batch, BatchSpec};
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code;
use pinlog::protocol::messages::describe_acls::{DescribeAclsRequest, DescribeAclsResponse};
use pinlog::protocol::messages::elect_leaders::{ElectLeadersRequest, ElectLeadersResponse};
use pinlog::protocol::messages::fetch::{FetchPartition, FetchRequest, FetchResponse, FetchTopic};
use pinlog::protocol::messages::find_coordinator::{
    FindCoordinatorRequest, FindCoordinatorResponse,
};
use pinlog::protocol::messages::metadata::{
    MetadataRequest, MetadataRequestTopic, MetadataResponse,
};
use pinlog::protocol::messages::offset_commit::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    OffsetCommitResponse,
};
use pinlog::protocol::messages::produce::{
    PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData,
};
use support::kafka_conn::Conn;
use support::test_ca::TestCa;
use support::{free_port, kafka_libs, run_command, which, Broker, BrokerOpts, CmdOutput};

/// How long one Kafka tool or one raw request may take.
const TOOL_TIMEOUT: Duration = Duration::from_secs(120);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Versions of the raw requests: recent ones the codecs implement.
const METADATA_VERSION: i16 = 12;
const PRODUCE_VERSION: i16 = 9;
const FETCH_VERSION: i16 = 12;
const OFFSET_COMMIT_VERSION: i16 = 8;
const DESCRIBE_ACLS_VERSION: i16 = 3;
const ELECT_LEADERS_VERSION: i16 = 2;
const FIND_COORDINATOR_VERSION: i16 = 3;
/// How long the group coordinator may take to start (FindCoordinator
/// creates `__consumer_offsets` and answers COORDINATOR_NOT_AVAILABLE until
/// it leads).
const COORDINATOR_WAIT: Duration = Duration::from_secs(30);

const TOPIC: &str = "orders";
const OTHER_TOPIC: &str = "payments";
const GROUP: &str = "billing";
const ANONYMOUS: &str = "User:ANONYMOUS";

/// The broker, its SSL port, and the admin's client properties file.
struct Setup {
    broker: Broker,
    ssl_bootstrap: String,
    admin_properties: String,
    // Kept for the certificates' lifetime.
    _ca: TestCa,
}

fn start() -> Setup {
    let ca = TestCa::new("pinlog-test-ca");
    let broker_identity = ca.issue("broker", "/CN=broker");
    let admin = ca.issue("admin", "/CN=admin");
    let path = |p: &Path| p.display().to_string();
    let ssl_port = free_port();
    let broker = Broker::start(
        BrokerOpts::new()
            .shards(2)
            .setting(
                "listeners",
                format!("PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:{ssl_port}"),
            )
            .setting(
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,SSL:SSL",
            )
            .setting("inter.broker.listener.name", "PLAINTEXT")
            .setting("listener.name.ssl.ssl.keystore.type", "PEM")
            .setting(
                "listener.name.ssl.ssl.keystore.location",
                path(&broker_identity.pem),
            )
            .setting("listener.name.ssl.ssl.truststore.type", "PEM")
            .setting("listener.name.ssl.ssl.truststore.location", path(&ca.ca()))
            .setting("listener.name.ssl.ssl.client.auth", "required")
            .setting(
                "listener.name.ssl.ssl.principal.mapping.rules",
                "RULE:^CN=([a-z]+)$/$1/L,DEFAULT",
            )
            .setting(
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            )
            .setting("super.users", "User:admin")
            .setting("allow.everyone.if.no.acl.found", false)
            .setting("auto.create.topics.enable", false),
    );
    let admin_properties = path(&ca.path().join("admin.properties"));
    std::fs::write(
        &admin_properties,
        format!(
            "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location={}\n\
             ssl.truststore.type=PEM\nssl.truststore.location={}\n",
            path(&admin.pem),
            path(&ca.ca())
        ),
    )
    .expect("write the admin's client properties");
    Setup {
        broker,
        ssl_bootstrap: format!("127.0.0.1:{ssl_port}"),
        admin_properties,
        _ca: ca,
    }
}

impl Setup {
    /// One of Kafka's tools (`org.apache.kafka.tools.<tool>`) as the admin,
    /// over SSL.
    fn tool(&self, tool: &str, args: &[&str]) -> CmdOutput {
        let jars = format!("{}/*", kafka_libs().display());
        let out = run_command(
            Command::new("java")
                .args(["-XX:TieredStopAtLevel=1", "-cp", &jars])
                .arg(format!("org.apache.kafka.tools.{tool}"))
                .args(["--bootstrap-server", &self.ssl_bootstrap])
                .args(["--command-config", &self.admin_properties])
                .args(args),
            None,
            TOOL_TIMEOUT,
        );
        if !out.success() {
            self.broker.fail(&format!("{tool} {args:?} failed:\n{out}"));
        }
        out
    }

    /// `kafka-acls.sh` with `args`.
    fn acls(&self, args: &[&str]) -> String {
        self.tool("AclCommand", args).stdout
    }

    fn conn(&self) -> Conn {
        let addr: SocketAddr = self.broker.bootstrap().parse().expect("bootstrap address");
        Conn::open(addr, "authz-test", REQUEST_TIMEOUT).expect("connect to PLAINTEXT")
    }
}

/// Metadata as ANONYMOUS: `Some(names)` or every topic. `(name, error)`.
fn metadata(conn: &mut Conn, names: Option<&[&str]>) -> Vec<(String, i16)> {
    let req = MetadataRequest {
        topics: names.map(|ns| {
            ns.iter()
                .map(|n| MetadataRequestTopic {
                    topic_id: [0; 16],
                    name: Some(n.to_string()),
                })
                .collect()
        }),
        allow_auto_topic_creation: false,
        ..MetadataRequest::default()
    };
    let mut r = conn.call(ApiKey::Metadata, METADATA_VERSION, |w| {
        req.encode(w, METADATA_VERSION)
    });
    let resp = MetadataResponse::decode(&mut r, METADATA_VERSION).expect("decode Metadata");
    resp.topics
        .into_iter()
        .map(|t| (t.name.unwrap_or_default(), t.error_code))
        .collect()
}

fn produce(conn: &mut Conn, topic: &str) -> i16 {
    let batch = build_batch(&BatchSpec {
        base_offset: 0,
        leader_epoch: -1,
        base_timestamp: 1_700_000_000_000,
        records: &[(0, Some(b"k".as_slice()), b"v".as_slice())],
    });
    let mut r = conn.call(ApiKey::Produce, PRODUCE_VERSION, |w| {
        ProduceRequest {
            transactional_id: None,
            acks: -1,
            timeout_ms: 30_000,
            topics: vec![TopicProduceData {
                name: topic.into(),
                partitions: vec![PartitionProduceData {
                    index: 0,
                    records: Some(Bytes::from(batch)),
                }],
            }],
        }
        .encode(w, PRODUCE_VERSION)
    });
    let resp = ProduceResponse::decode(&mut r, PRODUCE_VERSION).expect("decode Produce");
    resp.responses[0].partition_responses[0].error_code
}

fn fetch(conn: &mut Conn, topic: &str) -> i16 {
    let req = FetchRequest {
        max_wait_ms: 0,
        min_bytes: 0,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                ..FetchPartition::default()
            }],
        }],
        ..FetchRequest::default()
    };
    let mut r = conn.call(ApiKey::Fetch, FETCH_VERSION, |w| {
        req.encode(w, FETCH_VERSION)
    });
    let resp = FetchResponse::decode(&mut r, FETCH_VERSION).expect("decode Fetch");
    resp.responses[0].partitions[0].error_code
}

fn offset_commit(conn: &mut Conn, group: &str, topic: &str) -> i16 {
    let req = OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: topic.into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 1,
                committed_leader_epoch: -1,
                committed_metadata: None,
            }],
        }],
    };
    let mut r = conn.call(ApiKey::OffsetCommit, OFFSET_COMMIT_VERSION, |w| {
        req.encode(w, OFFSET_COMMIT_VERSION)
    });
    let resp =
        OffsetCommitResponse::decode(&mut r, OFFSET_COMMIT_VERSION).expect("decode OffsetCommit");
    resp.topics[0].partitions[0].error_code
}

/// FindCoordinator for `group`, asked until the coordinator is there;
/// the last answer's error.
fn find_coordinator(conn: &mut Conn, group: &str) -> i16 {
    let deadline = std::time::Instant::now() + COORDINATOR_WAIT;
    loop {
        let req = FindCoordinatorRequest {
            key: group.into(),
            key_type: 0,
            ..FindCoordinatorRequest::default()
        };
        let mut r = conn.call(ApiKey::FindCoordinator, FIND_COORDINATOR_VERSION, |w| {
            req.encode(w, FIND_COORDINATOR_VERSION)
        });
        let code = FindCoordinatorResponse::decode(&mut r, FIND_COORDINATOR_VERSION)
            .expect("decode FindCoordinator")
            .error_code;
        if code != error_code::COORDINATOR_NOT_AVAILABLE || std::time::Instant::now() > deadline {
            return code;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn describe_acls(conn: &mut Conn) -> i16 {
    let req = DescribeAclsRequest {
        resource_type_filter: 1,
        pattern_type_filter: 1,
        operation: 1,
        permission_type: 1,
        ..DescribeAclsRequest::default()
    };
    let mut r = conn.call(ApiKey::DescribeAcls, DESCRIBE_ACLS_VERSION, |w| {
        req.encode(w, DESCRIBE_ACLS_VERSION)
    });
    DescribeAclsResponse::decode(&mut r, DESCRIBE_ACLS_VERSION)
        .expect("decode DescribeAcls")
        .error_code
}

fn elect_leaders(conn: &mut Conn) -> i16 {
    let req = ElectLeadersRequest::default();
    let mut r = conn.call(ApiKey::ElectLeaders, ELECT_LEADERS_VERSION, |w| {
        req.encode(w, ELECT_LEADERS_VERSION)
    });
    ElectLeadersResponse::decode(&mut r, ELECT_LEADERS_VERSION)
        .expect("decode ElectLeaders")
        .error_code
}

#[test]
fn acls_decide_what_a_principal_may_do() {
    if std::env::var_os("PINLOG_SKIP_CLIENT_TESTS").is_some() {
        eprintln!("PINLOG_SKIP_CLIENT_TESTS is set: skipping");
        return;
    }
    assert!(
        which("java").is_some() && which("openssl").is_some(),
        "this test needs java (17+) and openssl"
    );
    let s = start();
    // The super user creates the topics over mTLS.
    for topic in [TOPIC, OTHER_TOPIC] {
        s.tool(
            "TopicCommand",
            &["--create", "--topic", topic, "--partitions", "1"],
        );
    }
    let mut c = s.conn();

    // No ACL: everything refused, with the error of the resource refused,
    // and a topic's existence does not leak.
    assert_eq!(
        describe_acls(&mut c),
        error_code::CLUSTER_AUTHORIZATION_FAILED
    );
    assert_eq!(
        elect_leaders(&mut c),
        error_code::CLUSTER_AUTHORIZATION_FAILED
    );
    assert_eq!(metadata(&mut c, None), vec![], "no topic is visible");
    assert_eq!(
        metadata(&mut c, Some(&[TOPIC, "missing"])),
        vec![
            (TOPIC.to_string(), error_code::TOPIC_AUTHORIZATION_FAILED),
            (
                "missing".to_string(),
                error_code::TOPIC_AUTHORIZATION_FAILED
            ),
        ]
    );
    assert_eq!(
        produce(&mut c, TOPIC),
        error_code::TOPIC_AUTHORIZATION_FAILED
    );
    assert_eq!(fetch(&mut c, TOPIC), error_code::TOPIC_AUTHORIZATION_FAILED);

    // DESCRIBE shows the topic, and is not enough to produce.
    s.acls(&[
        "--add",
        "--allow-principal",
        ANONYMOUS,
        "--operation",
        "Describe",
        "--topic",
        TOPIC,
    ]);
    assert_eq!(
        metadata(&mut c, None),
        vec![(TOPIC.to_string(), error_code::NONE)],
        "only the described topic is listed"
    );
    assert_eq!(
        produce(&mut c, TOPIC),
        error_code::TOPIC_AUTHORIZATION_FAILED
    );

    // WRITE allows producing (the answer comes once this broker's image
    // holds the ACL: no wait is needed).
    s.acls(&[
        "--add",
        "--allow-principal",
        ANONYMOUS,
        "--operation",
        "Write",
        "--topic",
        TOPIC,
    ]);
    assert_eq!(produce(&mut c, TOPIC), error_code::NONE);
    assert_eq!(
        produce(&mut c, OTHER_TOPIC),
        error_code::TOPIC_AUTHORIZATION_FAILED
    );

    // READ on a prefix covers the topic; committing needs READ on the group.
    s.acls(&[
        "--add",
        "--allow-principal",
        ANONYMOUS,
        "--operation",
        "Read",
        "--topic",
        "ord",
        "--resource-pattern-type",
        "prefixed",
    ]);
    assert_eq!(fetch(&mut c, TOPIC), error_code::NONE);
    assert_eq!(
        fetch(&mut c, OTHER_TOPIC),
        error_code::TOPIC_AUTHORIZATION_FAILED
    );
    assert_eq!(
        offset_commit(&mut c, GROUP, TOPIC),
        error_code::GROUP_AUTHORIZATION_FAILED
    );
    assert_eq!(
        find_coordinator(&mut c, GROUP),
        error_code::GROUP_AUTHORIZATION_FAILED
    );
    s.acls(&[
        "--add",
        "--allow-principal",
        ANONYMOUS,
        "--operation",
        "Read",
        "--group",
        GROUP,
    ]);
    // READ implies DESCRIBE, which FindCoordinator needs.
    assert_eq!(find_coordinator(&mut c, GROUP), error_code::NONE);
    assert_eq!(offset_commit(&mut c, GROUP, TOPIC), error_code::NONE);
    assert_eq!(
        offset_commit(&mut c, GROUP, OTHER_TOPIC),
        error_code::TOPIC_AUTHORIZATION_FAILED
    );

    // A DENY wins over the ALLOW.
    s.acls(&[
        "--add",
        "--deny-principal",
        ANONYMOUS,
        "--operation",
        "Write",
        "--topic",
        TOPIC,
    ]);
    assert_eq!(
        produce(&mut c, TOPIC),
        error_code::TOPIC_AUTHORIZATION_FAILED
    );
    let listed = s.acls(&["--list", "--topic", TOPIC]);
    assert!(
        listed.contains("operation=WRITE, permissionType=DENY")
            && listed.contains("operation=DESCRIBE, permissionType=ALLOW"),
        "kafka-acls.sh --list:\n{listed}"
    );
    // Removed, the ALLOW decides again.
    s.acls(&[
        "--remove",
        "--force",
        "--deny-principal",
        ANONYMOUS,
        "--operation",
        "Write",
        "--topic",
        TOPIC,
    ]);
    assert_eq!(produce(&mut c, TOPIC), error_code::NONE);

    // Still no cluster ACL for ANONYMOUS.
    assert_eq!(
        describe_acls(&mut c),
        error_code::CLUSTER_AUTHORIZATION_FAILED
    );
}
