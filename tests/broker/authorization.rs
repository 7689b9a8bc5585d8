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
//!
//! A third listener, `SASL_PLAINTEXT`, logs in PLAIN users from its JAAS
//! line: `admin`, the super user, whose raw connection grants and removes
//! ACLs in one request each, and `alice`, the subject of Kafka's
//! authorization matrix (`authorization/matrix.rs`): every API the broker
//! serves, refused without ACLs, refused with DESCRIBE alone where it needs
//! more, served with its ACLs, for a topic that exists and one that does
//! not. Kafka's Java client then runs a transactional producer as `alice`:
//! with WRITE on its transactional id it commits, without it the broker
//! refuses it with TRANSACTIONAL_ID_AUTHORIZATION_FAILED. One broker
//! serves every part, one after the other.

mod matrix;
mod regex;
mod requests;
mod share_describe;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support;
use crate::support::kafka_conn::Conn;
use crate::support::test_ca::TestCa;
use crate::support::{free_port, kafka_libs, run_command, which, Broker, BrokerOpts, CmdOutput};
use bytes::Bytes;
use matrix::{Acls, Names, On};
use pinlog::acl::AclOperation;
use pinlog::log::batch::{build_batch, BatchSpec};
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code;
use pinlog::protocol::messages::add_partitions_to_txn::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, AddPartitionsToTxnTopic,
};
use pinlog::protocol::messages::create_topics::{
    CreatableTopic, CreateTopicsRequest, CreateTopicsResponse,
};
use pinlog::protocol::messages::describe_acls::{DescribeAclsRequest, DescribeAclsResponse};
use pinlog::protocol::messages::describe_cluster::{
    DescribeClusterRequest, DescribeClusterResponse,
};
use pinlog::protocol::messages::describe_groups::{DescribeGroupsRequest, DescribeGroupsResponse};
use pinlog::protocol::messages::describe_transactions::{
    DescribeTransactionsRequest, DescribeTransactionsResponse,
};
use pinlog::protocol::messages::elect_leaders::{ElectLeadersRequest, ElectLeadersResponse};
use pinlog::protocol::messages::fetch::{FetchPartition, FetchRequest, FetchResponse, FetchTopic};
use pinlog::protocol::messages::find_coordinator::{
    FindCoordinatorRequest, FindCoordinatorResponse,
};
use pinlog::protocol::messages::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
use pinlog::protocol::messages::list_groups::{ListGroupsRequest, ListGroupsResponse};
use pinlog::protocol::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsResponse, ListOffsetsTopic,
};
use pinlog::protocol::messages::list_transactions::{
    ListTransactionsRequest, ListTransactionsResponse,
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

/// The PLAIN users of the SASL listener: the super user, and the subject
/// of the matrix and of the Java client.
const ADMIN: (&str, &str) = ("admin", "admin-secret");
const ALICE: (&str, &str) = ("alice", "alice-secret");
const ALICE_PRINCIPAL: &str = "User:alice";
/// What the matrix's requests name: a topic that exists, one that never
/// does, and a group and a transactional id no other part uses.
const MATRIX_TOPIC: &str = "matrix-topic";
const MATRIX_MISSING_TOPIC: &str = "matrix-missing-topic";
const MATRIX_GROUP: &str = "matrix-group";
const MATRIX_TRANSACTIONAL_ID: &str = "matrix-txn";
/// What the Java client's transactional producers use.
const TXN_TOPIC: &str = "txn-topic";
const TXN_GROUP: &str = "txn-group";
const TXN_ALLOWED: &str = "txn-allowed";
const TXN_DENIED: &str = "txn-denied";
/// Versions of the requests of the filtering checks.
const DESCRIBE_CLUSTER_VERSION: i16 = 1;
/// The last Metadata version with the cluster's authorized operations.
const METADATA_CLUSTER_OPERATIONS_VERSION: i16 = 10;
const LIST_GROUPS_VERSION: i16 = 4;
const LIST_TRANSACTIONS_VERSION: i16 = 1;
const CREATE_TOPICS_VERSION: i16 = 7;
const INIT_PRODUCER_ID_VERSION: i16 = 4;
/// A client's AddPartitionsToTxn (a broker's batch is v4+).
const ADD_PARTITIONS_TO_TXN_VERSION: i16 = 3;
const DESCRIBE_TRANSACTIONS_VERSION: i16 = 0;
const DESCRIBE_GROUPS_VERSION: i16 = 5;
/// Long enough that the listed transaction stays open through the test.
const TRANSACTION_TIMEOUT_MS: i32 = 120_000;
const LIST_OFFSETS_VERSION: i16 = 7;
/// ListOffsets' READ_COMMITTED isolation: the end offset is the LSO.
const READ_COMMITTED: i8 = 1;

/// The broker, its SSL and SASL ports, and the admin's and alice's client
/// properties files.
struct Setup {
    broker: Broker,
    ssl_bootstrap: String,
    sasl_bootstrap: String,
    admin_properties: String,
    alice_properties: String,
    // Kept for the certificates' lifetime.
    _ca: TestCa,
}

fn start() -> Setup {
    let ca = TestCa::new("pinlog-test-ca");
    ca.issue("broker", "/CN=broker");
    ca.issue("admin", "/CN=admin");
    let path = |f: &str| ca.path().join(f).display().to_string();
    let (ssl_port, sasl_port) = (free_port(), free_port());
    let plain_users = format!(
        "org.apache.kafka.common.security.plain.PlainLoginModule required \
         user_{}=\"{}\" user_{}=\"{}\";",
        ADMIN.0, ADMIN.1, ALICE.0, ALICE.1
    );
    let broker = Broker::start(
        BrokerOpts::new()
            .shards(2)
            .setting(
                "listeners",
                format!(
                    "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:{ssl_port},\
                     SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
                ),
            )
            .setting(
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
            )
            .setting("sasl.enabled.mechanisms", "PLAIN")
            .setting(
                "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                plain_users,
            )
            .setting("inter.broker.listener.name", "PLAINTEXT")
            .setting("listener.name.ssl.ssl.keystore.type", "PEM")
            .setting(
                "listener.name.ssl.ssl.keystore.location",
                path("broker.pem"),
            )
            .setting("listener.name.ssl.ssl.truststore.type", "PEM")
            .setting("listener.name.ssl.ssl.truststore.location", path("ca.pem"))
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
    let admin_properties = path("admin.properties");
    std::fs::write(
        &admin_properties,
        format!(
            "security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location={}\n\
             ssl.truststore.type=PEM\nssl.truststore.location={}\n",
            path("admin.pem"),
            path("ca.pem")
        ),
    )
    .expect("write the admin's client properties");
    let alice_properties = path("alice.properties");
    std::fs::write(
        &alice_properties,
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n\
             sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
             username=\"{}\" password=\"{}\";\n",
            ALICE.0, ALICE.1
        ),
    )
    .expect("write alice's client properties");
    Setup {
        broker,
        ssl_bootstrap: format!("127.0.0.1:{ssl_port}"),
        sasl_bootstrap: format!("127.0.0.1:{sasl_port}"),
        admin_properties,
        alice_properties,
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

    /// A raw connection logged in as the PLAIN user `(name, password)`.
    fn sasl_conn(&self, (name, password): (&str, &str)) -> Conn {
        let addr: SocketAddr = self.sasl_bootstrap.parse().expect("SASL address");
        let mut conn =
            Conn::open(addr, "authz-test", REQUEST_TIMEOUT).expect("connect to SASL_PLAINTEXT");
        conn.sasl_plain(name, password);
        conn
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
            topic_id: [0; 16],
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

/// Creates `topic` with one partition, as the super user on `admin`.
fn create_topic(admin: &mut Conn, topic: &str) {
    let v = CREATE_TOPICS_VERSION;
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: topic.into(),
            num_partitions: 1,
            replication_factor: 1,
            ..CreatableTopic::default()
        }],
        timeout_ms: REQUEST_TIMEOUT.as_millis() as i32,
        validate_only: false,
    };
    let mut r = admin.call(ApiKey::CreateTopics, v, |w| req.encode(w, v));
    let resp = CreateTopicsResponse::decode(&mut r, v).expect("decode CreateTopics");
    assert_eq!(
        resp.topics[0].error_code,
        error_code::NONE,
        "create {topic}"
    );
}

fn init_producer_id(conn: &mut Conn, transactional_id: &str) -> InitProducerIdResponse {
    let v = INIT_PRODUCER_ID_VERSION;
    let req = InitProducerIdRequest {
        transactional_id: Some(transactional_id.into()),
        transaction_timeout_ms: TRANSACTION_TIMEOUT_MS,
        producer_id: -1,
        producer_epoch: -1,
    };
    let mut r = conn.call(ApiKey::InitProducerId, v, |w| req.encode(w, v));
    InitProducerIdResponse::decode(&mut r, v).expect("decode InitProducerId")
}

/// Begins a transaction of `transactional_id` on partition 0 of `topic`,
/// as the super user on `admin`: an InitProducerId, then a client's
/// AddPartitionsToTxn.
fn begin_transaction(admin: &mut Conn, transactional_id: &str, topic: &str) {
    // The transaction coordinator may still be loading.
    let mut last = None;
    let ready = support::wait_for(COORDINATOR_WAIT, || {
        let answer = init_producer_id(admin, transactional_id);
        let ok = answer.error_code == error_code::NONE;
        last = Some(answer);
        ok
    });
    let producer = last.expect("asked at least once");
    assert!(ready, "InitProducerId of {transactional_id}: {producer:?}");
    let v = ADD_PARTITIONS_TO_TXN_VERSION;
    let req = AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: transactional_id.into(),
        v3_and_below_producer_id: producer.producer_id,
        v3_and_below_producer_epoch: producer.producer_epoch,
        v3_and_below_topics: vec![AddPartitionsToTxnTopic {
            name: topic.into(),
            partitions: vec![0],
        }],
        ..AddPartitionsToTxnRequest::default()
    };
    let mut r = admin.call(ApiKey::AddPartitionsToTxn, v, |w| req.encode(w, v));
    let resp = AddPartitionsToTxnResponse::decode(&mut r, v).expect("decode AddPartitionsToTxn");
    let code = resp.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code;
    assert_eq!(
        code,
        error_code::NONE,
        "AddPartitionsToTxn of {transactional_id}"
    );
}

/// The topics DescribeTransactions lists in `transactional_id`'s
/// transaction; its error if it has one.
fn described_transaction_topics(
    conn: &mut Conn,
    transactional_id: &str,
) -> Result<Vec<String>, i16> {
    let v = DESCRIBE_TRANSACTIONS_VERSION;
    let req = DescribeTransactionsRequest {
        transactional_ids: vec![transactional_id.into()],
    };
    let mut r = conn.call(ApiKey::DescribeTransactions, v, |w| req.encode(w, v));
    let resp =
        DescribeTransactionsResponse::decode(&mut r, v).expect("decode DescribeTransactions");
    let state = &resp.transaction_states[0];
    match state.error_code {
        error_code::NONE => Ok(state.topics.iter().map(|t| t.topic.clone()).collect()),
        code => Err(code),
    }
}

fn listed_groups(conn: &mut Conn) -> Vec<String> {
    let v = LIST_GROUPS_VERSION;
    let req = ListGroupsRequest::default();
    let mut r = conn.call(ApiKey::ListGroups, v, |w| req.encode(w, v));
    let resp = ListGroupsResponse::decode(&mut r, v).expect("decode ListGroups");
    assert_eq!(resp.error_code, error_code::NONE, "ListGroups");
    resp.groups.into_iter().map(|g| g.group_id).collect()
}

fn listed_transactions(conn: &mut Conn) -> Vec<String> {
    let v = LIST_TRANSACTIONS_VERSION;
    let req = ListTransactionsRequest::default();
    let mut r = conn.call(ApiKey::ListTransactions, v, |w| req.encode(w, v));
    let resp = ListTransactionsResponse::decode(&mut r, v).expect("decode ListTransactions");
    assert_eq!(resp.error_code, error_code::NONE, "ListTransactions");
    resp.transaction_states
        .into_iter()
        .map(|t| t.transactional_id)
        .collect()
}

/// DescribeGroups' error and bit set of authorized operations for `group`.
fn described_group_operations(conn: &mut Conn, group: &str) -> (i16, i32) {
    let v = DESCRIBE_GROUPS_VERSION;
    let req = DescribeGroupsRequest {
        groups: vec![group.into()],
        include_authorized_operations: true,
    };
    let mut r = conn.call(ApiKey::DescribeGroups, v, |w| req.encode(w, v));
    let resp = DescribeGroupsResponse::decode(&mut r, v).expect("decode DescribeGroups");
    let g = &resp.groups[0];
    (g.error_code, g.authorized_operations)
}

/// DescribeCluster's bit set of the cluster's authorized operations.
fn describe_cluster_operations(conn: &mut Conn) -> i32 {
    let v = DESCRIBE_CLUSTER_VERSION;
    let req = DescribeClusterRequest {
        include_cluster_authorized_operations: true,
        ..DescribeClusterRequest::default()
    };
    let mut r = conn.call(ApiKey::DescribeCluster, v, |w| req.encode(w, v));
    let resp = DescribeClusterResponse::decode(&mut r, v).expect("decode DescribeCluster");
    assert_eq!(resp.error_code, error_code::NONE, "DescribeCluster");
    resp.cluster_authorized_operations
}

/// Metadata's bit sets of the cluster's and `topic`'s authorized
/// operations, and `topic`'s error.
fn metadata_operations(conn: &mut Conn, topic: &str) -> (i32, i32, i16) {
    let v = METADATA_CLUSTER_OPERATIONS_VERSION;
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            topic_id: [0; 16],
            name: Some(topic.into()),
        }]),
        allow_auto_topic_creation: false,
        include_cluster_authorized_operations: true,
        include_topic_authorized_operations: true,
    };
    let mut r = conn.call(ApiKey::Metadata, v, |w| req.encode(w, v));
    let resp = MetadataResponse::decode(&mut r, v).expect("decode Metadata");
    let t = &resp.topics[0];
    (
        resp.cluster_authorized_operations,
        t.topic_authorized_operations,
        t.error_code,
    )
}

/// Kafka's authorized-operations bit set of `ops`.
fn bits(ops: &[AclOperation]) -> i32 {
    ops.iter().fold(0, |b, op| b | (1 << op.code()))
}

/// `topic`'s last stable offset (partition 0), as the super user sees it.
fn last_stable_offset(admin: &mut Conn, topic: &str) -> i64 {
    let v = LIST_OFFSETS_VERSION;
    let req = ListOffsetsRequest {
        replica_id: -1,
        isolation_level: READ_COMMITTED,
        topics: vec![ListOffsetsTopic {
            name: topic.into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                current_leader_epoch: -1,
                timestamp: -1,
            }],
        }],
    };
    let mut r = admin.call(ApiKey::ListOffsets, v, |w| req.encode(w, v));
    let resp = ListOffsetsResponse::decode(&mut r, v).expect("decode ListOffsets");
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.error_code, error_code::NONE, "ListOffsets of {topic}");
    p.offset
}

/// Kafka's authorization matrix (`authorization/matrix.rs`) as alice, for
/// a topic that exists and for one that does not.
fn the_matrix_holds(s: &Setup) {
    let mut admin = s.sasl_conn(ADMIN);
    create_topic(&mut admin, MATRIX_TOPIC);
    let mut alice = s.sasl_conn(ALICE);
    let mut acls = Acls {
        admin: &mut admin,
        principal: ALICE_PRINCIPAL,
    };
    let cases = matrix::cases();
    for (topic, exists) in [(MATRIX_TOPIC, true), (MATRIX_MISSING_TOPIC, false)] {
        let names = Names {
            topic,
            group: MATRIX_GROUP,
            transactional_id: MATRIX_TRANSACTIONAL_ID,
        };
        let ran = matrix::run(&mut acls, &mut alice, &cases, &names, exists);
        eprintln!("authorization matrix: {ran} requests checked with topic {topic}");
    }
}

/// The APIs that leave out what the principal may not see instead of
/// refusing: ListGroups, ListTransactions, and the authorized-operations
/// bit sets of DescribeCluster and Metadata.
fn what_is_listed_is_what_may_be_described(s: &Setup) {
    let mut admin = s.sasl_conn(ADMIN);
    let mut alice = s.sasl_conn(ALICE);
    // A group with offsets and a transactional id with a producer, made by
    // the super user (the coordinators may still be loading).
    let listed = Names {
        topic: TOPIC,
        group: "listed-group",
        transactional_id: "listed-txn",
    };
    assert!(
        support::wait_for(COORDINATOR_WAIT, || offset_commit(
            &mut admin,
            listed.group,
            TOPIC
        ) == error_code::NONE),
        "the admin's offset commit"
    );
    // Its transaction is open on partition 0 of TOPIC.
    begin_transaction(&mut admin, listed.transactional_id, TOPIC);
    let mut acls = Acls {
        admin: &mut admin,
        principal: ALICE_PRINCIPAL,
    };
    acls.clear();
    let group = listed.group.to_string();
    let txn = listed.transactional_id.to_string();
    assert!(!listed_groups(&mut alice).contains(&group));
    assert!(!listed_transactions(&mut alice).contains(&txn));
    acls.grant(
        &listed,
        &[
            (On::Group, AclOperation::Describe),
            (On::TransactionalId, AclOperation::Describe),
        ],
    );
    assert!(listed_groups(&mut alice).contains(&group));
    assert!(listed_transactions(&mut alice).contains(&txn));
    assert_eq!(
        described_group_operations(&mut alice, &group),
        (error_code::NONE, bits(&[AclOperation::Describe]))
    );
    // DescribeTransactions lists only the topics alice may describe.
    assert_eq!(
        described_transaction_topics(&mut alice, &txn),
        Ok(Vec::new())
    );
    acls.grant(&listed, &[(On::Topic, AclOperation::Describe)]);
    assert_eq!(
        described_transaction_topics(&mut alice, &txn),
        Ok(vec![TOPIC.to_string()])
    );
    acls.clear();
    assert_eq!(
        described_transaction_topics(&mut alice, &txn),
        Err(error_code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    );

    // The cluster's operations: none shown without DESCRIBE on it (even
    // with CLUSTER_ACTION), else those allowed (ALTER implies DESCRIBE).
    assert_eq!(describe_cluster_operations(&mut alice), 0);
    acls.grant(&listed, &[(On::Cluster, AclOperation::ClusterAction)]);
    assert_eq!(describe_cluster_operations(&mut alice), 0);
    assert_eq!(metadata_operations(&mut alice, TOPIC).0, 0);
    acls.grant(
        &listed,
        &[
            (On::Cluster, AclOperation::Alter),
            (On::Topic, AclOperation::Read),
        ],
    );
    use AclOperation::{Alter, ClusterAction, Describe, Read};
    let cluster = bits(&[ClusterAction, Alter, Describe]);
    assert_eq!(describe_cluster_operations(&mut alice), cluster);
    assert_eq!(
        metadata_operations(&mut alice, TOPIC),
        (cluster, bits(&[Read, Describe]), error_code::NONE)
    );
    acls.clear();
}

/// alice's rights in the KAFKA-18813 cases: READ and DESCRIBE on the
/// group, DESCRIBE on the open topic (and none on the hidden one).
const GROUP_AND_OPEN_TOPIC: [(On, AclOperation); 3] = [
    (On::Group, AclOperation::Read),
    (On::Group, AclOperation::Describe),
    (On::Topic, AclOperation::Describe),
];

/// Creates the two topics of a KAFKA-18813 case, `open.topic` and
/// `hidden_topic`, and returns the names alice's ACLs are about: `open`,
/// and the hidden topic with the same group.
fn open_and_hidden<'a>(
    admin: &mut Conn,
    open: Names<'a>,
    hidden_topic: &'a str,
) -> (Names<'a>, Names<'a>) {
    let hidden = Names {
        topic: hidden_topic,
        ..open
    };
    for names in [&open, &hidden] {
        create_topic(admin, names.topic);
    }
    (open, hidden)
}

/// A KIP-848 member subscribed by regex (`rx-.*`) is given `rx-open`,
/// which it may DESCRIBE, and not `rx-hidden`, which it may not; with
/// DESCRIBE on both (an ACL change moves the metadata image, so the next
/// heartbeat resolves the regex again), a new member is given both. Then,
/// with DESCRIBE on `rx-hidden` taken away again, ConsumerGroupDescribe
/// refuses the group to alice (TOPIC_AUTHORIZATION_FAILED), and still
/// describes it to the super user.
fn a_regex_gives_a_member_only_topics_it_may_describe(s: &Setup) {
    let mut admin = s.sasl_conn(ADMIN);
    let open = Names {
        topic: "rx-open",
        group: "rx-group",
        transactional_id: "rx-txn",
    };
    let (open, hidden) = open_and_hidden(&mut admin, open, "rx-hidden");
    let mut alice = s.sasl_conn(ALICE);
    let mut admin_for_acls = s.sasl_conn(ADMIN);
    let mut acls = Acls {
        admin: &mut admin_for_acls,
        principal: ALICE_PRINCIPAL,
    };
    acls.clear();
    let group_and_open = GROUP_AND_OPEN_TOPIC;
    acls.grant(&open, &group_and_open);
    let group = open.group;
    regex::join_regex_member(&mut alice, group, "rx-.*");
    assert_eq!(
        regex::described(&mut admin, group),
        (error_code::NONE, vec!["rx-open".to_string()])
    );
    regex::leave(&mut alice, group);

    acls.grant(&hidden, &[(On::Topic, AclOperation::Describe)]);
    regex::join_regex_member(&mut alice, group, "rx-.*");
    let both = vec!["rx-hidden".to_string(), "rx-open".to_string()];
    assert_eq!(
        regex::described(&mut admin, group),
        (error_code::NONE, both.clone())
    );
    assert_eq!(
        regex::described(&mut alice, group),
        (error_code::NONE, both.clone())
    );
    acls.clear();
    acls.grant(&open, &group_and_open);
    assert_eq!(
        regex::described(&mut alice, group),
        (error_code::TOPIC_AUTHORIZATION_FAILED, Vec::new()),
        "alice may not see rx-hidden, which the group holds"
    );
    assert_eq!(
        regex::described(&mut admin, group),
        (error_code::NONE, both)
    );
    regex::leave(&mut alice, group);
    acls.clear();
}

/// A share member holds `sh-open` and `sh-hidden`, both of which alice may
/// DESCRIBE, and ShareGroupDescribe shows alice both; with DESCRIBE on
/// `sh-hidden` taken away, it refuses the group to alice
/// (TOPIC_AUTHORIZATION_FAILED) and still describes it to the super user.
fn share_describe_refuses_a_group_holding_a_hidden_topic(s: &Setup) {
    let mut admin = s.sasl_conn(ADMIN);
    let open = Names {
        topic: "sh-open",
        group: "sh-group",
        transactional_id: "sh-txn",
    };
    let (open, hidden) = open_and_hidden(&mut admin, open, "sh-hidden");
    let mut alice = s.sasl_conn(ALICE);
    let mut admin_for_acls = s.sasl_conn(ADMIN);
    let mut acls = Acls {
        admin: &mut admin_for_acls,
        principal: ALICE_PRINCIPAL,
    };
    acls.clear();
    let group_and_open = GROUP_AND_OPEN_TOPIC;
    acls.grant(&open, &group_and_open);
    acls.grant(&hidden, &[(On::Topic, AclOperation::Describe)]);
    let group = open.group;
    share_describe::join_share_member(&mut alice, group, &["sh-open", "sh-hidden"]);
    let both = vec!["sh-hidden".to_string(), "sh-open".to_string()];
    assert_eq!(
        share_describe::described(&mut alice, group),
        (error_code::NONE, both.clone())
    );
    acls.clear();
    acls.grant(&open, &group_and_open);
    assert_eq!(
        share_describe::described(&mut alice, group),
        (error_code::TOPIC_AUTHORIZATION_FAILED, Vec::new()),
        "alice may not see sh-hidden, which the group holds"
    );
    assert_eq!(
        share_describe::described(&mut admin, group),
        (error_code::NONE, both)
    );
    share_describe::leave(&mut alice, group);
    acls.clear();
}

/// Kafka's Java client as alice: a transactional producer with WRITE on
/// its transactional id (and on the topic, READ on the group for its
/// offsets) commits; one with DESCRIBE alone on its id is refused with
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
fn a_transactional_producer_needs_write_on_its_id(s: &Setup) {
    let mut admin = s.sasl_conn(ADMIN);
    create_topic(&mut admin, TXN_TOPIC);
    let mut acls = Acls {
        admin: &mut admin,
        principal: ALICE_PRINCIPAL,
    };
    use AclOperation::{Describe, Read, Write};
    let allowed = Names {
        topic: TXN_TOPIC,
        group: TXN_GROUP,
        transactional_id: TXN_ALLOWED,
    };
    acls.grant(
        &allowed,
        &[
            (On::Topic, Write),
            (On::Topic, Read),
            (On::Group, Read),
            (On::TransactionalId, Write),
        ],
    );
    let denied = Names {
        transactional_id: TXN_DENIED,
        ..allowed
    };
    acls.grant(&denied, &[(On::TransactionalId, Describe)]);
    let jars = format!("{}/*", kafka_libs().display());
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/java/TxnAuthCheck.java");
    let out = run_command(
        Command::new("java")
            .args(["-XX:TieredStopAtLevel=1", "-cp", &jars])
            .arg(&source)
            .args([
                &s.sasl_bootstrap,
                &s.alice_properties,
                TXN_TOPIC,
                TXN_GROUP,
                TXN_ALLOWED,
                TXN_DENIED,
            ]),
        None,
        TOOL_TIMEOUT,
    );
    if !out.success() {
        s.broker.fail(&format!("TxnAuthCheck failed:\n{out}"));
    }
    let lines: Vec<&str> = out.stdout.lines().collect();
    for expected in [
        format!("{TXN_ALLOWED} committed"),
        format!("{TXN_DENIED} TransactionalIdAuthorizationException"),
    ] {
        if !lines.contains(&expected.as_str()) {
            s.broker
                .fail(&format!("TxnAuthCheck did not print {expected:?}:\n{out}"));
        }
    }
    // The commit is real: the record and its COMMIT marker are stable.
    assert_eq!(last_stable_offset(&mut admin, TXN_TOPIC), 2);
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

    the_matrix_holds(&s);
    what_is_listed_is_what_may_be_described(&s);
    a_regex_gives_a_member_only_topics_it_may_describe(&s);
    share_describe_refuses_a_group_holding_a_hidden_topic(&s);
    a_transactional_producer_needs_write_on_its_id(&s);
}
