//! SASL on SASL_PLAINTEXT and SASL_SSL listeners, with real clients and
//! with requests written byte by byte.
//!
//! - Every mechanism with the clients that speak it: kcat (librdkafka 2.0,
//!   whose SCRAM doubles the client nonce), confluent-kafka, kafka-python
//!   and Kafka's Java client, which re-authenticates in the middle of its
//!   run (`connections.max.reauth.ms`). SCRAM users are created with
//!   Kafka's own `kafka-configs.sh` (ConfigCommand) and read back with
//!   DescribeUserScramCredentials.
//! - What must be refused, each leaving the broker serving: a request
//!   before authentication, an oversized frame before authentication, a
//!   wrong password, an unknown user, a second handshake, an unknown
//!   mechanism, a session that ended without re-authentication. SaslHandshake
//!   v0's raw tokens work.
//!
//! `PINLOG_SKIP_CLIENT_TESTS=1` skips the tests that need external clients.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support;
use crate::support::kafka_conn::{read_frame, Conn};
use crate::support::test_ca::TestCa;
use crate::support::{
    free_port, kafka_libs, run_command, which, write_file, Broker, BrokerOpts, PINLOG_BIN,
};
use bytes::{BufMut, BytesMut};
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code;
use pinlog::protocol::messages::describe_user_scram_credentials::*;
use pinlog::protocol::messages::metadata::{MetadataRequest, MetadataResponse};
use pinlog::protocol::messages::sasl_authenticate::*;
use pinlog::protocol::messages::sasl_handshake::*;

const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);
const IO_TIMEOUT: Duration = Duration::from_secs(10);
const CLIENTS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients");
const RECORDS: usize = 50;

const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    user_admin=\"admin-secret\" user_alice=\"alice-secret\";";

fn skip_clients() -> bool {
    std::env::var_os("PINLOG_SKIP_CLIENT_TESTS").is_some()
}

fn require(ok: bool, what: &str, install: &str) {
    assert!(
        ok,
        "{what} is not available; install it with `{install}` (CI does), \
         or set PINLOG_SKIP_CLIENT_TESTS=1 to skip the client tests"
    );
}

struct SaslBroker {
    broker: Broker,
    sasl_plaintext: u16,
    sasl_ssl: u16,
    /// The certificates, and the directory for the files that name them.
    ca: TestCa,
}

impl SaslBroker {
    fn start(reauth_ms: u64) -> SaslBroker {
        let ca = TestCa::new("pinlog test CA");
        let server = ca.issue("broker", "/CN=localhost");
        let (sasl_plaintext, sasl_ssl) = (free_port(), free_port());
        let broker = Broker::start(
            BrokerOpts::new()
                .setting(
                    "listeners",
                    format!(
                        "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:{sasl_plaintext},\
                         SASL_SSL://127.0.0.1:{sasl_ssl}"
                    ),
                )
                .setting(
                    "sasl.enabled.mechanisms",
                    "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
                )
                .setting("sasl.jaas.config", PLAIN_JAAS)
                .setting("ssl.keystore.location", server.pem.display().to_string())
                .setting("connections.max.reauth.ms", reauth_ms as i64)
                .env("RUST_LOG", "info,pinlog::server::network=debug"),
        );
        SaslBroker {
            broker,
            sasl_plaintext,
            sasl_ssl,
            ca,
        }
    }

    fn sasl_plaintext(&self) -> String {
        format!("127.0.0.1:{}", self.sasl_plaintext)
    }

    fn sasl_ssl(&self) -> String {
        format!("127.0.0.1:{}", self.sasl_ssl)
    }

    fn ca(&self) -> PathBuf {
        self.ca.ca()
    }
}

/// Kafka's ConfigCommand (`kafka-configs.sh`) against the PLAINTEXT
/// listener.
fn kafka_configs(broker: &Broker, args: &[&str]) -> String {
    let jars = format!("{}/*", kafka_libs().display());
    let out = run_command(
        Command::new("java")
            .args(["-cp", &jars, "org.apache.kafka.tools.ConfigCommand"])
            .args(["--bootstrap-server", &broker.bootstrap()])
            .args(args),
        None,
        CLIENT_TIMEOUT,
    );
    if !out.success() {
        broker.fail(&format!("kafka-configs.sh {args:?} failed:\n{out}"));
    }
    out.stdout.clone()
}

fn consumed(out: &str) -> usize {
    out.lines()
        .find_map(|l| l.strip_prefix("consumed "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

fn kcat(broker: &Broker, bootstrap: &str, topic: &str, settings: &[String]) {
    let args: Vec<String> = settings
        .iter()
        .flat_map(|s| ["-X".to_string(), s.clone()])
        .collect();
    let records: String = (0..RECORDS).map(|i| format!("v{i}\n")).collect();
    let out = run_command(
        Command::new("kcat")
            .args(["-b", bootstrap, "-t", topic, "-P"])
            .args(&args),
        Some(records.as_bytes()),
        CLIENT_TIMEOUT,
    );
    if !out.success() {
        broker.fail(&format!("kcat produce to {topic} failed:\n{out}"));
    }
    let out = run_command(
        Command::new("kcat")
            .args([
                "-b",
                bootstrap,
                "-t",
                topic,
                "-C",
                "-e",
                "-q",
                "-o",
                "beginning",
            ])
            .args(&args),
        None,
        CLIENT_TIMEOUT,
    );
    let got = out.stdout.lines().filter(|l| l.starts_with('v')).count();
    if !out.success() || got != RECORDS {
        broker.fail(&format!(
            "kcat consumed {got} of {RECORDS} from {topic}:\n{out}"
        ));
    }
}

fn python(broker: &Broker, client: &str, bootstrap: &str, topic: &str, settings: &str) {
    let out = run_command(
        Command::new("python3")
            .arg(Path::new(CLIENTS_DIR).join("sasl_client.py"))
            .args([client, bootstrap, topic, &RECORDS.to_string(), settings]),
        None,
        CLIENT_TIMEOUT,
    );
    if !out.success() || consumed(&out.stdout) != RECORDS {
        broker.fail(&format!("{client} on {topic}:\n{out}"));
    }
}

#[test]
fn every_mechanism_works_with_real_clients() {
    if skip_clients() {
        eprintln!("PINLOG_SKIP_CLIENT_TESTS is set: skipped");
        return;
    }
    require(which("kcat").is_some(), "kcat", "apt-get install kcat");
    require(
        which("java").is_some() && which("javac").is_some(),
        "a JDK (java and javac, 17+)",
        "apt-get install openjdk-17-jdk-headless",
    );
    // Sessions of 5 s: the Java client's run crosses several.
    let s = SaslBroker::start(5_000);
    let b = &s.broker;

    // SCRAM users, as an operator creates them, and read back.
    kafka_configs(
        b,
        &[
            "--alter", "--entity-type", "users", "--entity-name", "bob",
            "--add-config", "SCRAM-SHA-256=[iterations=8192,password=bob-secret],SCRAM-SHA-512=[password=bob-secret]",
        ],
    );
    let mut conn = Conn::open(b.bootstrap().parse().unwrap(), "sasl-test", IO_TIMEOUT).unwrap();
    let mut r = conn.call(ApiKey::DescribeUserScramCredentials, 0, |w| {
        DescribeUserScramCredentialsRequest {
            users: Some(vec!["bob".into(), "nobody".into()]),
        }
        .encode(w, 0)
    });
    let described = DescribeUserScramCredentialsResponse::decode(&mut r, 0).unwrap();
    assert_eq!(described.results.len(), 2, "{described:?}");
    let bob = &described.results[0];
    assert_eq!(bob.error_code, error_code::NONE, "{described:?}");
    let mut infos: Vec<(i8, i32)> = bob
        .credential_infos
        .iter()
        .map(|c| (c.mechanism, c.iterations))
        .collect();
    infos.sort();
    assert_eq!(infos, vec![(1, 8192), (2, 4096)]);
    assert_eq!(
        described.results[1].error_code,
        error_code::RESOURCE_NOT_FOUND
    );

    let ca = s.ca().display().to_string();
    let plain = |u: &str, p: &str| {
        vec![
            "sasl.mechanisms=PLAIN".to_string(),
            format!("sasl.username={u}"),
            format!("sasl.password={p}"),
        ]
    };
    let scram = |m: &str| {
        vec![
            format!("sasl.mechanisms={m}"),
            "sasl.username=bob".to_string(),
            "sasl.password=bob-secret".to_string(),
        ]
    };
    let with = |protocol: &str, mut v: Vec<String>| {
        v.push(format!("security.protocol={protocol}"));
        if protocol == "SASL_SSL" {
            v.push(format!("ssl.ca.location={ca}"));
        }
        v
    };
    kcat(
        b,
        &s.sasl_plaintext(),
        "kcat-plain",
        &with("SASL_PLAINTEXT", plain("alice", "alice-secret")),
    );
    kcat(
        b,
        &s.sasl_ssl(),
        "kcat-plain-ssl",
        &with("SASL_SSL", plain("admin", "admin-secret")),
    );
    kcat(
        b,
        &s.sasl_plaintext(),
        "kcat-scram256",
        &with("SASL_PLAINTEXT", scram("SCRAM-SHA-256")),
    );
    kcat(
        b,
        &s.sasl_ssl(),
        "kcat-scram512",
        &with("SASL_SSL", scram("SCRAM-SHA-512")),
    );
    kcat(
        b,
        &s.sasl_plaintext(),
        "kcat-oauth",
        &with(
            "SASL_PLAINTEXT",
            vec![
                "sasl.mechanisms=OAUTHBEARER".into(),
                "enable.sasl.oauthbearer.unsecure.jwt=true".into(),
                "sasl.oauthbearer.config=principal=carol".into(),
            ],
        ),
    );
    assert!(
        b.log().contains("principal=\"User:carol\""),
        "the unsecured token's subject is the principal"
    );

    python(
        b,
        "confluent",
        &s.sasl_ssl(),
        "confluent-scram512",
        &format!(
            r#"{{"security.protocol":"SASL_SSL","ssl.ca.location":"{ca}","sasl.mechanisms":"SCRAM-SHA-512","sasl.username":"bob","sasl.password":"bob-secret"}}"#
        ),
    );
    python(
        b,
        "kafka-python",
        &s.sasl_plaintext(),
        "kafka-python-scram256",
        r#"{"security_protocol":"SASL_PLAINTEXT","sasl_mechanism":"SCRAM-SHA-256","sasl_plain_username":"bob","sasl_plain_password":"bob-secret"}"#,
    );
    python(
        b,
        "kafka-python",
        &s.sasl_ssl(),
        "kafka-python-plain-ssl",
        &format!(
            r#"{{"security_protocol":"SASL_SSL","ssl_cafile":"{ca}","ssl_check_hostname":false,"sasl_mechanism":"PLAIN","sasl_plain_username":"alice","sasl_plain_password":"alice-secret"}}"#
        ),
    );

    // The Java client over SASL_SSL with SCRAM-SHA-512, and over
    // SASL_PLAINTEXT with an unsecured OAUTHBEARER token; each run lasts
    // 12 s, past two 5 s sessions.
    let classes = tempfile::tempdir().unwrap();
    let jars = format!("{}/*", kafka_libs().display());
    run_command(
        Command::new("javac")
            .args(["-cp", &jars, "-d"])
            .arg(classes.path())
            .arg(Path::new(CLIENTS_DIR).join("java/SaslCheck.java")),
        None,
        CLIENT_TIMEOUT,
    )
    .assert_success();
    let classpath = format!("{}:{jars}", classes.path().display());
    let java = |bootstrap: &str, topic: &str, properties: &str| {
        let props = write_file(
            classes.path(),
            &format!("{topic}.properties"),
            properties.as_bytes(),
        );
        let out = run_command(
            Command::new("java")
                .args(["-XX:TieredStopAtLevel=1", "-cp", &classpath, "SaslCheck"])
                .arg(bootstrap)
                .arg(&props)
                .args([topic, "24", "12"]),
            None,
            CLIENT_TIMEOUT,
        );
        if !out.success() || consumed(&out.stdout) != 24 {
            b.fail(&format!("the Java client on {topic}:\n{out}"));
        }
    };
    java(
        &s.sasl_ssl(),
        "java-scram512",
        &format!(
            "security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location={ca}\n\
             sasl.mechanism=SCRAM-SHA-512\n\
             sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"bob\" password=\"bob-secret\";\n"
        ),
    );
    java(
        &s.sasl_plaintext(),
        "java-oauth",
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n\
         sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"dave\";\n",
    );
    let log = b.log();
    assert!(
        log.contains("principal=\"User:dave\""),
        "the Java client's token subject is the principal"
    );
    // The Java client re-authenticated in band as its sessions ended
    // (KIP-368), and no session ran out.
    assert!(
        log.contains("SASL re-authentication succeeded principal=\"User:bob\""),
        "the Java client did not re-authenticate:\n{}",
        support::tail(&log, 40)
    );
    assert!(
        !log.contains("the SASL session ended without re-authentication"),
        "a client's session ended without re-authentication:\n{}",
        support::tail(&log, 40)
    );
}

/// A raw connection to `addr`.
fn open(addr: &str) -> Conn {
    let addr: SocketAddr = addr.parse().unwrap();
    Conn::open(addr, "sasl-raw", IO_TIMEOUT).unwrap()
}

fn handshake(conn: &mut Conn, version: i16, mechanism: &str) -> SaslHandshakeResponse {
    let mut r = conn.call(ApiKey::SaslHandshake, version, |w| {
        SaslHandshakeRequest {
            mechanism: mechanism.into(),
        }
        .encode(w, version)
    });
    SaslHandshakeResponse::decode(&mut r, version).unwrap()
}

fn authenticate(conn: &mut Conn, token: &[u8]) -> SaslAuthenticateResponse {
    let token = bytes::Bytes::copy_from_slice(token);
    let mut r = conn.call(ApiKey::SaslAuthenticate, 2, |w| {
        SaslAuthenticateRequest { auth_bytes: token }.encode(w, 2)
    });
    SaslAuthenticateResponse::decode(&mut r, 2).unwrap()
}

fn metadata(conn: &mut Conn) -> MetadataResponse {
    let mut r = conn.call(ApiKey::Metadata, 12, |w| {
        MetadataRequest {
            topics: Some(Vec::new()),
            ..MetadataRequest::default()
        }
        .encode(w, 12)
    });
    MetadataResponse::decode(&mut r, 12).unwrap()
}

#[test]
fn what_must_be_refused_is_refused_and_the_broker_serves_on() {
    let s = SaslBroker::start(1_500);
    let addr = s.sasl_plaintext();

    // A request before authentication closes the connection.
    let mut c = open(&addr);
    c.send(ApiKey::Metadata, 12, |w| {
        MetadataRequest::default().encode(w, 12)
    });
    c.assert_closed_by_broker("Metadata before authentication");

    // A frame past sasl.server.max.receive.size before authentication.
    let mut c = open(&addr);
    let mut big = BytesMut::new();
    big.put_i32(600_000);
    big.put_slice(&[0u8; 1024]);
    c.send_raw(&big);
    c.assert_closed_by_broker("a 600,000-byte frame before authentication");

    // An unknown mechanism: the enabled ones, then the close.
    let mut c = open(&addr);
    let h = handshake(&mut c, 1, "GSSAPI");
    assert_eq!(h.error_code, error_code::UNSUPPORTED_SASL_MECHANISM);
    assert_eq!(
        h.mechanisms,
        vec!["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
    );
    c.assert_closed_by_broker("an unknown mechanism");

    // A second handshake before the first exchange ended.
    let mut c = open(&addr);
    assert_eq!(handshake(&mut c, 1, "PLAIN").error_code, error_code::NONE);
    assert_eq!(
        handshake(&mut c, 1, "PLAIN").error_code,
        error_code::ILLEGAL_SASL_STATE
    );
    c.assert_closed_by_broker("a second handshake");

    // A wrong password and an unknown user: the generic failure, late,
    // then the close.
    for token in [&b"\0alice\0wrong"[..], b"\0mallory\0alice-secret"] {
        let mut c = open(&addr);
        assert_eq!(handshake(&mut c, 1, "PLAIN").error_code, error_code::NONE);
        let started = Instant::now();
        let a = authenticate(&mut c, token);
        assert_eq!(
            a.error_code,
            error_code::SASL_AUTHENTICATION_FAILED,
            "{a:?}"
        );
        assert!(
            started.elapsed() >= Duration::from_millis(90),
            "the failure came after {:?}, before connection.failed.authentication.delay.ms",
            started.elapsed()
        );
        c.assert_closed_by_broker("a failed authentication");
    }
    // SCRAM of a user that does not exist: nothing says whether it does.
    let mut c = open(&addr);
    assert_eq!(
        handshake(&mut c, 1, "SCRAM-SHA-256").error_code,
        error_code::NONE
    );
    let a = authenticate(&mut c, b"n,,n=nobody,r=abcdefghijklmnop");
    assert_eq!(a.error_code, error_code::SASL_AUTHENTICATION_FAILED);
    assert_eq!(
        a.error_message.as_deref(),
        Some("Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
    );

    // A good login serves requests, until the session ends (1.5 s): then
    // the next request closes the connection.
    let mut c = open(&addr);
    assert_eq!(handshake(&mut c, 1, "PLAIN").error_code, error_code::NONE);
    let a = authenticate(&mut c, b"\0alice\0alice-secret");
    assert_eq!(a.error_code, error_code::NONE);
    assert_eq!(a.session_lifetime_ms, 1_500);
    assert!(!metadata(&mut c).brokers.is_empty());
    // Re-authentication in band keeps the connection.
    assert_eq!(handshake(&mut c, 1, "PLAIN").error_code, error_code::NONE);
    let a = authenticate(&mut c, b"\0alice\0alice-secret");
    assert_eq!(a.error_code, error_code::NONE);
    // A fixed wait is the point here: the session must outlive its
    // 1.5 s lifetime before the next request.
    std::thread::sleep(Duration::from_millis(1_800));
    c.send(ApiKey::Metadata, 12, |w| {
        MetadataRequest::default().encode(w, 12)
    });
    c.assert_closed_by_broker("a request after the session ended");

    // SaslHandshake v0: the token goes raw, outside the Kafka protocol.
    let mut c = open(&addr);
    assert_eq!(handshake(&mut c, 0, "PLAIN").error_code, error_code::NONE);
    let token = b"\0admin\0admin-secret";
    let mut raw = BytesMut::new();
    raw.put_i32(token.len() as i32);
    raw.put_slice(token);
    c.send_raw(&raw);
    let answer = read_frame(&mut c.stream).expect("the raw token's answer");
    assert!(answer.is_empty(), "PLAIN answers an empty token");
    assert!(!metadata(&mut c).brokers.is_empty());

    // pinlog's own commands over SASL_SSL, with Kafka's client properties.
    let props = |password: &str| {
        write_file(
            s.ca.path(),
            &format!("cli-{password}.properties"),
            format!(
                "security.protocol=SASL_SSL\nssl.truststore.location={}\nsasl.mechanism=PLAIN\n\
                 sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n  \
                 username=\"admin\" password=\"{password}\";\n",
                s.ca().display()
            )
            .as_bytes(),
        )
    };
    let cli = |args: &[&str], config: &Path| {
        run_command(
            Command::new(PINLOG_BIN)
                .args(args)
                .args(["--bootstrap-server", &s.sasl_ssl(), "--command-config"])
                .arg(config),
            None,
            Duration::from_secs(60),
        )
    };
    let good = props("admin-secret");
    cli(
        &["topic", "create", "cli-over-sasl-ssl", "--partitions", "2"],
        &good,
    )
    .assert_success();
    let listed = cli(&["topic", "list"], &good);
    listed.assert_success();
    assert!(listed.stdout.contains("cli-over-sasl-ssl"), "{listed}");
    let refused = cli(&["topic", "list"], &props("wrong"));
    assert!(!refused.success(), "{refused}");
    assert!(
        refused
            .stderr
            .contains("refused the SASL PLAIN login of admin"),
        "{refused}"
    );

    // The broker still serves, and said why it closed each connection.
    let log = s.broker.log();
    for why in [
        "before SASL authentication",
        "exceeds sasl.server.max.receive.size, before authentication",
        "is not enabled here",
        "a second SaslHandshake",
        "SASL PLAIN authentication failed",
        "the SASL session ended without re-authentication",
    ] {
        assert!(log.contains(why), "no log line saying {why:?}");
    }
    let mut c = open(&addr);
    assert_eq!(handshake(&mut c, 1, "PLAIN").error_code, error_code::NONE);
    assert_eq!(
        authenticate(&mut c, b"\0alice\0alice-secret").error_code,
        error_code::NONE
    );
    assert!(!metadata(&mut c).brokers.is_empty());
}
