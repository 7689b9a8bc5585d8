//! TLS and mutual TLS with real, unmodified clients (issue 31).
//!
//! Each test makes its own certificate authority and certificates with
//! `openssl` in a temporary directory (`support::test_ca`): X.509 v3
//! throughout (webpki refuses v1 certificates), EC P-256 keys in PKCS#8
//! PEM, leaf certificates naming `IP:127.0.0.1` and `DNS:localhost`.
//!
//! - [`clients_over_tls_and_mtls`]: one broker with three listeners,
//!   PLAINTEXT (the harness's), `SSL` (server authentication only) and
//!   `MTLS` (an SSL listener requiring a client certificate, with a
//!   principal mapping rule). kcat (Debian's, librdkafka 2.0.2),
//!   confluent-kafka, kafka-python and the Java client each create a topic
//!   where they can, produce and consume it back exactly, on SSL and on
//!   MTLS; Metadata tells them the port of the listener they came in on; a
//!   client without a certificate, or with one from another CA, is refused
//!   on MTLS and the broker logs why; the mapped principals appear in the
//!   broker's debug log; 18 MB of 12 KiB records read back exactly over
//!   MTLS (fetch responses of many segment-file pieces through TLS);
//!   Kafka's `kafka-topics.sh` works over TLS with `--command-config`.
//! - [`hostile_input_on_a_tls_port`]: garbage, a plaintext Kafka request,
//!   half a ClientHello, and 50 connections that say nothing; each is
//!   closed (the silent ones by the 10 s handshake limit), logged, and a
//!   well-behaved TLS client is served throughout. Also a client
//!   certificate no mapping rule matches. Needs no external client: the
//!   well-behaved client is rustls, in this file.
//! - [`cluster_over_sasl_ssl_with_an_mtls_controller_channel`], three
//!   nodes, each with its own certificate, whose inter-broker listener is
//!   SASL_SSL (PLAIN) and whose controller channel runs over mutual TLS;
//!   clients use an SSL listener requiring client certificates. The nodes
//!   admit each other on the controller channel, which refuses a peer in
//!   the clear, one without a certificate and one from another CA. An RF 3
//!   topic with min.insync.replicas 2, acks=all through kcat over TLS,
//!   the followers logged in over SASL; kill -9 of the leader, more
//!   records, and every record read back exactly once; the killed node
//!   rejoins the ISR; Java transactions (`TxnCheck.java`, RF 3), whose
//!   markers and verification go between the brokers over SASL_SSL; and a
//!   partition moved with Kafka's `kafka-reassign-partitions` tool, its
//!   records read back from its new replicas.
//! - `inter_broker_tls_checks_the_certificate_names_the_broker`: with
//!   Kafka's default `ssl.endpoint.identification.algorithm=https`, brokers
//!   whose certificates do not name the address they advertise cannot
//!   replicate, and the followers log why. Needs no external client.
//!
//! Missing tools make the tests FAIL with the package to install;
//! `PINLOG_SKIP_CLIENT_TESTS=1` skips the tests that need an external
//! client (the first and the third), as in `tests/broker/clients.rs`. Run with
//! `cargo test --release --test security -- --nocapture` (about 30 s).

mod support;

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use pinlog::protocol::header::RequestHeader;
use pinlog::protocol::messages::api_versions::ApiVersionsRequest;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::Value;
use support::test_ca::{Identity, TestCa};
use support::{
    api_versions_round_trip, free_port, kafka_libs, run_command, wait_for, which, Broker,
    BrokerOpts, Cluster, CmdOutput, PINLOG_BIN,
};

const CLIENTS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients");
/// Records each client produces to its topic on each listener.
const RECORDS: usize = 300;
/// Partitions of every topic of the one-broker test (auto-created ones
/// too): more than the broker's 2 shards.
const PARTITIONS: usize = 3;
/// Records and value size of the large-record round: 18 MB, so that
/// every fetch response is many pieces of segment file.
const LARGE_RECORDS: usize = 1500;
const LARGE_VALUE_BYTES: usize = 12 * 1024;
/// Keys cycle through `key-0` .. `key-6` (as the client programs write).
const KEYS: usize = 7;
/// Outer limit for one client step; the programs bound each step (60 s).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);
/// Limit for a step that must answer or fail quickly.
const QUICK_TIMEOUT: Duration = Duration::from_secs(30);
/// The broker's TLS handshake limit (`TLS_HANDSHAKE_TIMEOUT`), and how
/// long after it a silent connection must be closed at the latest.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);
const HANDSHAKE_CLOSE_BY: Duration = Duration::from_secs(15);
/// Connections that connect and never say a word.
const SILENT_CONNECTIONS: usize = 50;
/// The broker log that shows mTLS principals.
const NETWORK_DEBUG: &str = "info,pinlog::server::network=debug";
/// A rule that maps `CN=alice,...` to `alice`, and DEFAULT for the rest.
const MAPPING_RULES: &str = "RULE:^CN=([a-z]+),.*$/$1/L,DEFAULT";
/// How long a cluster's leadership and ISR may take to settle.
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------
// A TLS client of our own (rustls), for the checks that need no Kafka
// client.

fn tls_config(ca: &Path, identity: Option<&Identity>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).expect("read the CA") {
        roots
            .add(cert.expect("a PEM certificate"))
            .expect("a usable CA");
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("the default protocol versions")
    .with_root_certificates(roots);
    let config = match identity {
        Some(id) => {
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&id.cert)
                .expect("read the certificate")
                .collect::<Result<_, _>>()
                .expect("PEM certificates");
            let key = PrivateKeyDer::from_pem_file(&id.key).expect("read the key");
            builder
                .with_client_auth_cert(chain, key)
                .expect("the key fits the certificate")
        }
        None => builder.with_no_client_auth(),
    };
    Arc::new(config)
}

/// An ApiVersions round trip over TLS to `127.0.0.1:port`.
fn tls_api_versions(port: u16, config: &Arc<rustls::ClientConfig>) -> Result<(), String> {
    let timeout = Duration::from_secs(5);
    let tcp = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(timeout))
        .and_then(|()| tcp.set_write_timeout(Some(timeout)))
        .map_err(|e| e.to_string())?;
    let name = ServerName::try_from("127.0.0.1").expect("an IP address");
    let conn = rustls::ClientConnection::new(config.clone(), name).map_err(|e| e.to_string())?;
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    api_versions_round_trip(&mut tls)
}

/// Reads from `stream` until the peer closes it, at the latest at
/// `deadline`: what it sent, and whether it closed.
fn read_until_closed(stream: &mut TcpStream, deadline: Instant) -> (Vec<u8>, bool) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (got, false);
        }
        stream
            .set_read_timeout(Some(left))
            .expect("set a read timeout");
        match stream.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return (got, false)
            }
            // A reset closes the connection as well.
            Err(_) => return (got, true),
        }
    }
}

/// A size-prefixed ApiVersions v3 request, as a plaintext client opens.
fn plaintext_api_versions() -> Vec<u8> {
    let mut body = BytesMut::new();
    RequestHeader {
        api_key: 18,
        api_version: 3,
        correlation_id: 1,
        client_id: Some("pinlog-security-test".into()),
    }
    .encode(&mut body, 2);
    ApiVersionsRequest {
        client_software_name: "pinlog-tests".into(),
        client_software_version: "0".into(),
    }
    .encode(&mut body, 3);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

/// The first bytes a TLS client sends: its ClientHello record.
fn client_hello(config: &Arc<rustls::ClientConfig>) -> Vec<u8> {
    let name = ServerName::try_from("127.0.0.1").expect("an IP address");
    let mut conn = rustls::ClientConnection::new(config.clone(), name).expect("a client");
    let mut hello = Vec::new();
    conn.write_tls(&mut hello).expect("write the ClientHello");
    assert!(hello.len() > 100, "a ClientHello of {} bytes", hello.len());
    hello
}

// ---------------------------------------------------------------------------
// The external clients.

fn skipped(test: &str) -> bool {
    if !std::env::var("PINLOG_SKIP_CLIENT_TESTS").is_ok_and(|v| v == "1") {
        return false;
    }
    let _ = writeln!(
        std::io::stderr(),
        "*** SKIPPED {test} (PINLOG_SKIP_CLIENT_TESTS=1): pinlog was NOT checked against these \
         clients ***"
    );
    true
}

/// Panics with what to install when `ok` is false.
fn require(ok: bool, what: &str, install: &str) {
    assert!(
        ok,
        "{what} is not available; install it with `{install}` (CI does), \
         or set PINLOG_SKIP_CLIENT_TESTS=1 to skip the client tests"
    );
}

fn require_kcat() {
    let ok = which("kcat").is_some()
        && run_command(Command::new("kcat").arg("-V"), None, QUICK_TIMEOUT).success();
    require(ok, "kcat", "apt-get install kcat");
}

fn require_python(check: &str, what: &str, install: &str) {
    let ok = which("python3").is_some()
        && run_command(
            Command::new("python3").args(["-c", check]),
            None,
            QUICK_TIMEOUT,
        )
        .success();
    require(ok, what, install);
}

/// Compiles `tests/clients/java/<source>` into `classes`; the classpath
/// to run it with.
fn compile_java(classes: &Path, source: &str) -> String {
    require(
        which("java").is_some() && which("javac").is_some(),
        "a JDK (java and javac, 17+)",
        "apt-get install openjdk-17-jdk-headless",
    );
    let jars = format!("{}/*", kafka_libs().display());
    run_command(
        Command::new("javac")
            .args(["-cp", &jars, "-d"])
            .arg(classes)
            .arg(Path::new(CLIENTS_DIR).join("java").join(source)),
        None,
        CLIENT_TIMEOUT,
    )
    .assert_success();
    format!("{}:{jars}", classes.display())
}

/// How a client reaches a TLS listener: its port, the CA to trust, and the
/// client certificate to present, if any.
struct Tls<'a> {
    port: u16,
    ca: &'a Path,
    identity: Option<&'a Identity>,
}

impl Tls<'_> {
    fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// kcat's (librdkafka's) settings.
    fn kcat_args(&self) -> Vec<String> {
        let mut args = vec![
            "-b".to_string(),
            self.bootstrap(),
            "-X".to_string(),
            "security.protocol=SSL".to_string(),
            "-X".to_string(),
            format!("ssl.ca.location={}", self.ca.display()),
        ];
        if let Some(id) = self.identity {
            args.extend([
                "-X".to_string(),
                format!("ssl.certificate.location={}", id.cert.display()),
                "-X".to_string(),
                format!("ssl.key.location={}", id.key.display()),
            ]);
        }
        args
    }

    /// security_client.py's settings.
    fn python_settings(&self) -> String {
        let mut s = serde_json::json!({"bootstrap": self.bootstrap(), "ca": self.ca});
        if let Some(id) = self.identity {
            s["cert"] = serde_json::json!(id.cert);
            s["key"] = serde_json::json!(id.key);
        }
        s.to_string()
    }

    /// A Kafka client properties file (for the Java client and Kafka's
    /// tools' `--command-config`), written to `dir/name`.
    fn properties(&self, dir: &Path, name: &str) -> PathBuf {
        let mut text = format!(
            "bootstrap.servers={}\nsecurity.protocol=SSL\nssl.truststore.type=PEM\n\
             ssl.truststore.location={}\n",
            self.bootstrap(),
            self.ca.display()
        );
        if let Some(id) = self.identity {
            text.push_str(&format!(
                "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
                id.pem.display()
            ));
        }
        support::write_file(dir, name, text.as_bytes())
    }
}

/// Runs a client step against `broker`; on failure, panics with the
/// client's output and the broker's log.
fn run_against(broker: &Broker, cmd: &mut Command, stdin: Option<&[u8]>) -> CmdOutput {
    let out = run_command(cmd, stdin, CLIENT_TIMEOUT);
    if !out.success() {
        broker.fail(&format!("client step failed:\n{out}"));
    }
    out
}

fn python_client(client: &str, tls: &Tls, args: &[&str]) -> Command {
    let mut cmd = Command::new("python3");
    cmd.arg(Path::new(CLIENTS_DIR).join("security_client.py"))
        .arg(client)
        .arg(tls.python_settings())
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}

fn java_client(classpath: &str, properties: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("java");
    cmd.args(["-XX:TieredStopAtLevel=1", "-cp", classpath, "SecurityCheck"])
        .arg(properties)
        .args(args);
    cmd
}

/// kcat's producer input: `key|value` lines for records `seqs`.
fn kcat_input(seqs: Range<usize>) -> Vec<u8> {
    seqs.map(|seq| format!("key-{}|value-{seq:06}\n", seq % KEYS))
        .collect::<String>()
        .into_bytes()
}

/// kcat producing its standard input (`key|value` lines) to `topic` with
/// acks=all.
fn kcat_producer(tls_args: &[String], topic: &str) -> Command {
    let mut cmd = Command::new("kcat");
    cmd.args(tls_args).args([
        "-P",
        "-t",
        topic,
        "-K",
        "|",
        "-X",
        "acks=all",
        "-X",
        "message.timeout.ms=30000",
    ]);
    cmd
}

fn kcat_consume(tls_args: &[String], topic: &str) -> Command {
    let mut cmd = Command::new("kcat");
    cmd.args(tls_args).args([
        "-C",
        "-t",
        topic,
        "-o",
        "beginning",
        "-e",
        "-q",
        "-f",
        "%t\t%p\t%o\t%k\t%s\n",
    ]);
    cmd
}

/// Checks consumed lines `topic partition offset key value` of `topic`:
/// every record of `seqs` exactly once, with its key, at dense offsets from
/// 0 in each partition, in produce order within a partition.
fn check_consumed(topic: &str, stdout: &str, seqs: Range<usize>) -> Result<(), String> {
    let mut problems = Vec::new();
    let mut seen: BTreeMap<usize, usize> = BTreeMap::new();
    // partition -> (next offset, last seq)
    let mut partitions: BTreeMap<i32, (i64, Option<usize>)> = BTreeMap::new();
    for line in stdout.lines().filter(|l| !l.is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        let parsed = (f.len() == 5 && f[0] == topic)
            .then(|| {
                let seq: usize = f[4].strip_prefix("value-")?.parse().ok()?;
                Some((f[1].parse::<i32>().ok()?, f[2].parse::<i64>().ok()?, seq))
            })
            .flatten();
        let Some((partition, offset, seq)) = parsed else {
            problems.push(format!("unexpected line {line:?}"));
            continue;
        };
        *seen.entry(seq).or_default() += 1;
        if f[3] != format!("key-{}", seq % KEYS) {
            problems.push(format!("seq {seq} has key {:?}", f[3]));
        }
        let (next, last) = partitions.entry(partition).or_insert((0, None));
        if offset != *next {
            problems.push(format!("{partition}@{offset}: offset {next} was next"));
        }
        if last.is_some_and(|l| seq <= l) {
            problems.push(format!("{partition}@{offset}: seq {seq} after {last:?}"));
        }
        *next = offset + 1;
        *last = Some(seq);
    }
    let missing: Vec<usize> = seqs.clone().filter(|s| !seen.contains_key(s)).collect();
    if !missing.is_empty() {
        problems.push(format!(
            "{} records missing, e.g. {:?}",
            missing.len(),
            &missing[..missing.len().min(10)]
        ));
    }
    let extra: Vec<(&usize, &usize)> = seen
        .iter()
        .filter(|(s, n)| **n > 1 || !seqs.contains(s))
        .collect();
    if !extra.is_empty() {
        problems.push(format!(
            "{} records duplicated or unexpected (seq, times): {:?}",
            extra.len(),
            &extra[..extra.len().min(10)]
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        problems.truncate(20);
        Err(format!("{topic}: {}", problems.join("\n  ")))
    }
}

/// The `broker ID HOST:PORT` lines a client printed.
fn brokers_told(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("broker "))
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(str::to_string)
        .collect()
}

/// The broker log lines at WARN that contain every one of `words`.
fn warnings(broker: &Broker, words: &[&str]) -> Vec<String> {
    broker
        .log()
        .lines()
        .filter(|l| l.contains(" WARN ") && words.iter().all(|w| l.contains(w)))
        .map(str::to_string)
        .collect()
}

// ---------------------------------------------------------------------------
// One broker, three listeners, four clients.

/// One client's create, produce and consume on one listener, checked.
fn client_round(
    broker: &Broker,
    client: &str,
    tls: &Tls,
    listener: &str,
    java_classpath: &str,
    scratch: &Path,
) {
    let topic = format!("{client}-{}", listener.to_ascii_lowercase());
    let n = RECORDS.to_string();
    let partitions = PARTITIONS.to_string();
    let started = Instant::now();
    let consumed = match client {
        // kcat cannot create topics: the produce creates it (auto-creation,
        // num.partitions).
        "kcat" => {
            let args = tls.kcat_args();
            let input = kcat_input(0..RECORDS);
            run_against(broker, &mut kcat_producer(&args, &topic), Some(&input));
            run_against(broker, &mut kcat_consume(&args, &topic), None)
        }
        "java" => {
            let props = tls.properties(scratch, &format!("{topic}.properties"));
            let created = run_against(
                broker,
                &mut java_client(java_classpath, &props, &["create", &topic, &partitions]),
                None,
            );
            assert_told_the_listener(broker, client, listener, tls.port, &created.stdout);
            run_against(
                broker,
                &mut java_client(java_classpath, &props, &["produce", &topic, &n]),
                None,
            );
            run_against(
                broker,
                &mut java_client(java_classpath, &props, &["consume", &topic]),
                None,
            )
        }
        python => {
            let created = run_against(
                broker,
                &mut python_client(python, tls, &["create", &topic, &partitions]),
                None,
            );
            assert_told_the_listener(broker, client, listener, tls.port, &created.stdout);
            run_against(
                broker,
                &mut python_client(python, tls, &["produce", &topic, &n]),
                None,
            );
            run_against(
                broker,
                &mut python_client(python, tls, &["consume", &topic]),
                None,
            )
        }
    };
    if let Err(e) = check_consumed(&topic, &consumed.stdout, 0..RECORDS) {
        broker.fail(&format!("{client} on {listener}: {e}"));
    }
    eprintln!(
        "{client} on {listener}: {RECORDS} records produced and consumed exactly in {:.1?}",
        started.elapsed()
    );
}

/// The client was told this listener's address, not the PLAINTEXT one.
fn assert_told_the_listener(broker: &Broker, client: &str, listener: &str, port: u16, out: &str) {
    let told = brokers_told(out);
    if told != [format!("127.0.0.1:{port}")] {
        broker.fail(&format!(
            "{client} on {listener} (port {port}; PLAINTEXT is {}) was told the brokers {told:?}:\n{out}",
            broker.port()
        ));
    }
}

/// kcat -L through `args`: its output, whether it succeeded or not.
fn kcat_list(args: &[String]) -> CmdOutput {
    run_command(
        Command::new("kcat").args(args).args(["-L", "-m", "5"]),
        None,
        QUICK_TIMEOUT,
    )
}

#[test]
fn clients_over_tls_and_mtls() {
    if skipped("clients_over_tls_and_mtls") {
        return;
    }
    require_kcat();
    require_python(
        "import confluent_kafka",
        "the Python package confluent-kafka",
        "pip install confluent-kafka",
    );
    require_python(
        "import kafka",
        "the Python package kafka-python",
        "pip install 'kafka-python[crc32c,lz4,snappy,zstd]'",
    );
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let java_classpath = compile_java(scratch.path(), "SecurityCheck.java");

    let pki = TestCa::new("pinlog-test-ca");
    let server = pki.issue("broker", "/O=pinlog/CN=localhost");
    // RFC 2253: CN=alice,OU=clients,O=pinlog, which the rule maps to alice.
    let alice = pki.issue("alice", "/O=pinlog/OU=clients/CN=alice");
    // CN=Bob-2,O=pinlog: the rule's [a-z]+ does not match, DEFAULT does.
    let bob = pki.issue("bob", "/O=pinlog/CN=Bob-2");
    let other_pki = TestCa::new("another-ca");
    let mallory = other_pki.issue("mallory", "/O=pinlog/CN=mallory");

    let (ssl_port, mtls_port) = (free_port(), free_port());
    let broker = Broker::start(
        BrokerOpts::new()
            // --listen (the harness) gives PLAINTEXT its port.
            .setting(
                "listeners",
                format!(
                    "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:{ssl_port},MTLS://127.0.0.1:{mtls_port}"
                ),
            )
            .setting(
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL",
            )
            .setting("ssl.keystore.location", path_str(&server.pem))
            .setting("ssl.truststore.location", path_str(&pki.ca()))
            .setting("listener.name.mtls.ssl.client.auth", "required")
            .setting("listener.name.mtls.ssl.principal.mapping.rules", MAPPING_RULES)
            .setting("num.partitions", PARTITIONS as i64)
            .env("RUST_LOG", NETWORK_DEBUG),
    );
    let ca = pki.ca();
    let ssl = Tls {
        port: ssl_port,
        ca: &ca,
        identity: None,
    };
    let mtls = |identity| Tls {
        port: mtls_port,
        ca: &ca,
        identity,
    };

    // Metadata over each TLS listener names that listener's port.
    for (listener, tls) in [("SSL", &ssl), ("MTLS", &mtls(Some(&alice)))] {
        let out = kcat_list(&tls.kcat_args());
        let want = format!("broker 1 at 127.0.0.1:{}", tls.port);
        if !out.success() || !out.stdout.contains(&want) {
            broker.fail(&format!(
                "kcat -L on {listener} should list {want:?} (PLAINTEXT is {}):\n{out}",
                broker.port()
            ));
        }
    }

    for client in ["kcat", "confluent", "kafka-python", "java"] {
        client_round(
            &broker,
            client,
            &ssl,
            "SSL",
            &java_classpath,
            scratch.path(),
        );
        client_round(
            &broker,
            client,
            &mtls(Some(&alice)),
            "MTLS",
            &java_classpath,
            scratch.path(),
        );
    }

    // Without a certificate kcat is refused on MTLS, and the broker says
    // why; the same kcat without a certificate works on SSL.
    let refused_before = warnings(&broker, &["TLS handshake failed", "listener=MTLS"]).len();
    let out = kcat_list(&mtls(None).kcat_args());
    assert!(!out.success(), "kcat without a certificate on MTLS:\n{out}");
    assert!(kcat_list(&ssl.kcat_args()).success());
    let refused = wait_for(Duration::from_secs(5), || {
        warnings(&broker, &["TLS handshake failed", "listener=MTLS"]).len() > refused_before
    });
    if !refused {
        broker.fail("no WARN line for the handshake without a client certificate on MTLS");
    }
    eprintln!(
        "no certificate on MTLS: {}",
        warnings(&broker, &["TLS handshake failed", "listener=MTLS"])[refused_before]
    );

    // A certificate from another CA is refused on MTLS.
    let refused_before = warnings(&broker, &["TLS handshake failed", "listener=MTLS"]).len();
    let out = kcat_list(&mtls(Some(&mallory)).kcat_args());
    assert!(!out.success(), "kcat with another CA's certificate:\n{out}");
    let refused = wait_for(Duration::from_secs(5), || {
        warnings(&broker, &["TLS handshake failed", "listener=MTLS"]).len() > refused_before
    });
    if !refused {
        broker.fail("no WARN line for the certificate from another CA on MTLS");
    }
    eprintln!(
        "another CA's certificate on MTLS: {}",
        warnings(&broker, &["TLS handshake failed", "listener=MTLS"])[refused_before]
    );

    // The principals: alice by the rule, Bob-2 by DEFAULT.
    let out = kcat_list(&mtls(Some(&bob)).kcat_args());
    if !out.success() {
        broker.fail(&format!("kcat with bob's certificate on MTLS:\n{out}"));
    }
    for principal in ["principal=User:alice", "principal=User:CN=Bob-2,O=pinlog"] {
        let logged = wait_for(Duration::from_secs(5), || {
            broker
                .log()
                .lines()
                .any(|l| l.contains("TLS connection established") && l.contains(principal))
        });
        if !logged {
            broker.fail(&format!("the broker never logged {principal}"));
        }
    }

    // Large records: fetch responses of many segment-file pieces, each
    // read from disk and written through the TLS stream.
    let args = mtls(Some(&alice)).kcat_args();
    let input: String = (0..LARGE_RECORDS)
        .map(|i| {
            format!(
                "large-{i}|{}\n",
                format!("{i:06}").repeat(LARGE_VALUE_BYTES / 6)
            )
        })
        .collect();
    run_against(
        &broker,
        &mut kcat_producer(&args, "large-mtls"),
        Some(input.as_bytes()),
    );
    let mut consume = Command::new("kcat");
    consume.args(&args).args([
        "-C",
        "-t",
        "large-mtls",
        "-o",
        "beginning",
        "-e",
        "-q",
        "-f",
        "%k|%s\n",
    ]);
    let consumed = run_against(&broker, &mut consume, None);
    let sorted = |text: &str| {
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort_unstable();
        lines.join("\n")
    };
    if sorted(&consumed.stdout) != sorted(&input) {
        broker.fail(&format!(
            "{LARGE_RECORDS} records of {LARGE_VALUE_BYTES} bytes over MTLS did not read back \
             exactly: {} lines, {} bytes consumed of {} bytes",
            consumed.stdout.lines().count(),
            consumed.stdout.len(),
            input.len()
        ));
    }
    eprintln!(
        "{LARGE_RECORDS} records of {LARGE_VALUE_BYTES} bytes ({} MB) read back exactly over MTLS",
        input.len() >> 20
    );

    // Kafka's kafka-topics.sh over TLS: --command-config on SSL creates, and
    // on MTLS (with alice's PEM keystore) describes.
    let ssl_props = ssl.properties(scratch.path(), "tool-ssl.properties");
    let mtls_props = mtls(Some(&alice)).properties(scratch.path(), "tool-mtls.properties");
    let topic_command = |bootstrap: &str, props: &Path, args: &[&str]| {
        let jars = format!("{}/*", kafka_libs().display());
        let out = run_command(
            Command::new("java")
                .args(["-XX:TieredStopAtLevel=1", "-cp", &jars])
                .arg("org.apache.kafka.tools.TopicCommand")
                .args(["--bootstrap-server", bootstrap, "--command-config"])
                .arg(props)
                .args(args),
            None,
            CLIENT_TIMEOUT,
        );
        if !out.success() || out.stdout.contains("Exception") || out.stderr.contains("Exception") {
            broker.fail(&format!("kafka-topics.sh over TLS failed:\n{out}"));
        }
        out.stdout
    };
    let created = topic_command(
        &ssl.bootstrap(),
        &ssl_props,
        &["--create", "--topic", "tool-tls", "--partitions", "2"],
    );
    assert!(created.contains("Created topic tool-tls"), "{created}");
    let described = topic_command(
        &mtls(Some(&alice)).bootstrap(),
        &mtls_props,
        &["--describe", "--topic", "tool-tls"],
    );
    assert!(described.contains("PartitionCount: 2"), "{described}");
}

fn path_str(p: &Path) -> String {
    p.to_str().expect("a UTF-8 path").to_string()
}

// ---------------------------------------------------------------------------
// Hostile input on a TLS port.

#[test]
fn hostile_input_on_a_tls_port() {
    let pki = TestCa::new("pinlog-test-ca");
    let server = pki.issue("broker", "/O=pinlog/CN=localhost");
    let alice = pki.issue("alice", "/O=pinlog/CN=alice");
    let bob = pki.issue("bob", "/O=pinlog/CN=Bob-2");
    let (ssl_port, strict_port) = (free_port(), free_port());
    let mut broker = Broker::start(
        BrokerOpts::new()
            .setting(
                "listeners",
                format!(
                    "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:{ssl_port},STRICT://127.0.0.1:{strict_port}"
                ),
            )
            .setting(
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,SSL:SSL,STRICT:SSL",
            )
            .setting("ssl.keystore.location", path_str(&server.pem))
            .setting("ssl.truststore.location", path_str(&pki.ca()))
            .setting("listener.name.strict.ssl.client.auth", "required")
            // No DEFAULT: a subject the rule does not match has no principal.
            .setting(
                "listener.name.strict.ssl.principal.mapping.rules",
                "RULE:^CN=([a-z]+),.*$/$1/",
            )
            .env("RUST_LOG", NETWORK_DEBUG),
    );
    let plain = tls_config(&pki.ca(), None);
    let served = |broker: &Broker, when: &str| {
        if let Err(e) = tls_api_versions(ssl_port, &plain) {
            broker.fail(&format!("a TLS client was not served {when}: {e}"));
        }
    };
    served(&broker, "at the start");

    // Silent connections, and half a ClientHello, all left waiting at once
    // so that one handshake limit covers them.
    let started = Instant::now();
    let mut silent: Vec<TcpStream> = (0..SILENT_CONNECTIONS)
        .map(|_| TcpStream::connect(("127.0.0.1", ssl_port)).expect("connect"))
        .collect();
    let hello = client_hello(&plain);
    let mut half = TcpStream::connect(("127.0.0.1", ssl_port)).expect("connect");
    half.write_all(&hello[..hello.len() / 2])
        .expect("send half a ClientHello");

    // Garbage: closed.
    let mut garbage = TcpStream::connect(("127.0.0.1", ssl_port)).expect("connect");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let bytes: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    // The broker may close before all of it is written.
    let _ = garbage.write_all(&bytes);
    let (_, closed) = read_until_closed(&mut garbage, Instant::now() + Duration::from_secs(5));
    if !closed {
        broker.fail("the TLS port kept a connection that sent garbage open");
    }

    // A plaintext Kafka request (ApiVersions v3) on the TLS port: closed,
    // and answered with nothing but a TLS alert, if anything.
    let mut plaintext = TcpStream::connect(("127.0.0.1", ssl_port)).expect("connect");
    let _ = plaintext.set_write_timeout(Some(Duration::from_secs(5)));
    let request = plaintext_api_versions();
    let _ = plaintext.write_all(&request);
    let (answer, closed) =
        read_until_closed(&mut plaintext, Instant::now() + Duration::from_secs(5));
    if !closed || !(answer.is_empty() || answer[0] == 0x15) {
        broker.fail(&format!(
            "a plaintext ApiVersions on the TLS port: closed {closed}, answered {:02x?}",
            &answer[..answer.len().min(32)]
        ));
    }

    // The broker serves TLS clients while those connections wait.
    served(&broker, "while 51 connections were in their handshake");

    // Every waiting connection is closed by the handshake limit.
    let deadline = started + HANDSHAKE_CLOSE_BY;
    let (_, half_closed) = read_until_closed(&mut half, deadline);
    let half_closed_after = started.elapsed();
    let still_open = silent
        .iter_mut()
        .map(|s| read_until_closed(s, deadline).1)
        .filter(|closed| !closed)
        .count();
    if !half_closed || still_open > 0 {
        broker.fail(&format!(
            "{HANDSHAKE_CLOSE_BY:?} after they connected: half a ClientHello closed {half_closed}, \
             {still_open} of {SILENT_CONNECTIONS} silent connections still open"
        ));
    }
    assert!(
        half_closed_after >= HANDSHAKE_LIMIT - Duration::from_secs(1),
        "half a ClientHello was closed after {half_closed_after:?}, before the handshake limit"
    );
    eprintln!("the 51 waiting connections were closed {half_closed_after:.1?} after they opened");
    served(&broker, "after the handshake limit");

    // A certificate the STRICT listener's rules map, and one they do not.
    if let Err(e) = tls_api_versions(strict_port, &tls_config(&pki.ca(), Some(&alice))) {
        broker.fail(&format!("alice on STRICT: {e}"));
    }
    let bob_result = tls_api_versions(strict_port, &tls_config(&pki.ca(), Some(&bob)));
    if bob_result.is_ok() {
        broker.fail("a certificate no mapping rule matches was served on STRICT");
    }

    let logged = |what: &[&str], at_least: usize| {
        let ok = wait_for(Duration::from_secs(5), || {
            warnings(&broker, what).len() >= at_least
        });
        if !ok {
            broker.fail(&format!(
                "expected at least {at_least} WARN lines with {what:?}, found {}",
                warnings(&broker, what).len()
            ));
        }
        eprintln!("{what:?}: {}", warnings(&broker, what)[0]);
    };
    logged(&["TLS handshake failed", "listener=SSL"], 2);
    logged(
        &["no TLS handshake within", "listener=SSL"],
        SILENT_CONNECTIONS + 1,
    );
    logged(&["refusing the client certificate", "listener=STRICT"], 1);
    broker.stop();
}

// ---------------------------------------------------------------------------
// Three nodes, TLS between them.

fn pinlog(args: &[&str]) -> CmdOutput {
    run_command(Command::new(PINLOG_BIN).args(args), None, QUICK_TIMEOUT)
}

/// (partition, leader, replicas, isr) of `topic`, as `node` describes it.
fn partitions_of(node: &Broker, topic: &str) -> Vec<(i64, i64, Vec<i64>, Vec<i64>)> {
    let out = pinlog(&[
        "topic",
        "describe",
        topic,
        "--json",
        "--bootstrap-server",
        &node.bootstrap(),
    ]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
    let ids = |v: &Value| -> Vec<i64> {
        v.as_array()
            .map(|a| a.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default()
    };
    v["topics"][0]["partitions"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| {
                    (
                        p["partition"].as_i64().unwrap_or(-1),
                        p["leader"].as_i64().unwrap_or(-1),
                        ids(&p["replicas"]),
                        ids(&p["isr"]),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The password the brokers log in to each other's SASL_SSL listener
/// with (PLAIN, from the listener's JAAS config).
const BROKER_PASSWORD: &str = "broker-secret";

/// Probes `node`'s controller channel with peers it must refuse: plain
/// bytes, TLS without a certificate, and TLS with a certificate from
/// another CA. Each must be closed; the node must log each refusal.
fn controller_channel_refuses_strangers(
    cluster: &Cluster,
    node: usize,
    ca: &Path,
    stranger: &Identity,
) {
    let port = cluster.nodes[node - 1]
        .controller_port()
        .unwrap_or_else(|| cluster.fail(&format!("node {node} has no controller port")));
    let refusals = |cluster: &Cluster| {
        cluster.nodes[node - 1]
            .log()
            .lines()
            .filter(|l| l.contains("refusing a controller channel peer"))
            .count()
    };
    let before = refusals(cluster);
    let deadline = || Instant::now() + HANDSHAKE_CLOSE_BY;
    // A Whois frame in the clear.
    let mut plain =
        TcpStream::connect(("127.0.0.1", port)).expect("connect to the controller port");
    plain
        .write_all(&[0, 0, 0, 1, 5])
        .expect("write to the controller port");
    let (_, closed) = read_until_closed(&mut plain, deadline());
    assert!(closed, "the controller channel kept a plaintext peer open");
    for (what, identity) in [
        ("no certificate", None),
        ("another CA's certificate", Some(stranger)),
    ] {
        let config = tls_config(ca, identity);
        let tcp = TcpStream::connect(("127.0.0.1", port)).expect("connect to the controller port");
        tcp.set_read_timeout(Some(HANDSHAKE_CLOSE_BY))
            .expect("set a read timeout");
        let name = ServerName::try_from("127.0.0.1").expect("an IP address");
        let conn = rustls::ClientConnection::new(config, name).expect("a TLS client");
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        // TLS 1.3 lets the client finish before the server has checked its
        // certificate; the refusal shows when it reads.
        let _ = tls.write_all(&[0, 0, 0, 1, 5]);
        let mut buf = [0u8; 64];
        match tls.read(&mut buf) {
            Ok(0) | Err(_) => {}
            Ok(n) => cluster.fail(&format!(
                "the controller channel answered a peer with {what} ({n} bytes)"
            )),
        }
    }
    if !wait_for(Duration::from_secs(5), || refusals(cluster) >= before + 3) {
        cluster.fail(&format!(
            "node {node} logged {} refusals of controller channel peers, not 3",
            refusals(cluster) - before
        ));
    }
}

#[test]
fn cluster_over_sasl_ssl_with_an_mtls_controller_channel() {
    if skipped("cluster_over_sasl_ssl_with_an_mtls_controller_channel") {
        return;
    }
    require_kcat();
    const TOPIC: &str = "tls-replicated";
    const MOVED: &str = "tls-moved";
    const HALF: usize = 500;
    let pki = TestCa::new("pinlog-test-ca");
    let nodes: Vec<Identity> = (1..=3)
        .map(|id| {
            pki.issue(
                &format!("broker-{id}"),
                &format!("/O=pinlog/CN=broker-{id}"),
            )
        })
        .collect();
    let alice = pki.issue("alice", "/O=pinlog/CN=alice");
    let elsewhere = TestCa::new("another-ca");
    let stranger = elsewhere.issue("stranger", "/O=pinlog/CN=broker-9");
    let ssl_ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let internal_ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    // Clients: mTLS on SSL. Brokers: SASL_SSL (PLAIN) on INTERNAL, and
    // the controller channel over mutual TLS, each node with its own
    // certificate (the global keystore serves every TLS listener).
    let opts = BrokerOpts::new()
        .setting(
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:SASL_SSL,CONTROLLER:SSL",
        )
        .setting("inter.broker.listener.name", "INTERNAL")
        .setting("ssl.truststore.location", path_str(&pki.ca()))
        .setting("ssl.client.auth", "required")
        .setting("listener.name.internal.ssl.client.auth", "none")
        .setting("listener.name.internal.sasl.enabled.mechanisms", "PLAIN")
        .setting("sasl.mechanism.inter.broker.protocol", "PLAIN")
        .setting(
            "listener.name.internal.plain.sasl.jaas.config",
            format!(
                "org.apache.kafka.common.security.plain.PlainLoginModule required \
                 username=\"broker\" password=\"{BROKER_PASSWORD}\" \
                 user_broker=\"{BROKER_PASSWORD}\";"
            ),
        )
        .env(
            "RUST_LOG",
            &format!("{NETWORK_DEBUG},pinlog::quorum::network=debug"),
        );
    let mut cluster = Cluster::start_each(3, opts, |id, node| {
        node.setting(
            "listeners",
            format!(
                "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:{},INTERNAL://127.0.0.1:{}",
                ssl_ports[id - 1],
                internal_ports[id - 1]
            ),
        )
        .setting("ssl.keystore.location", path_str(&nodes[id - 1].pem))
    });
    // The quorum formed over mutual TLS: every node admitted a peer by its
    // certificate (the leader's replication reaches every follower), and
    // every node was admitted somewhere (brokers register through it).
    let admitted = |cluster: &Cluster, id: usize| -> Vec<usize> {
        let log = cluster.nodes[id - 1].log();
        (1..=3)
            .filter(|peer| {
                log.lines().any(|l| {
                    l.contains("controller channel peer admitted")
                        && l.contains(&format!("principal=User:CN=broker-{peer},O=pinlog"))
                })
            })
            .collect()
    };
    let all_admitted = wait_for(Duration::from_secs(10), || {
        let each: Vec<Vec<usize>> = (1..=3).map(|id| admitted(&cluster, id)).collect();
        each.iter().all(|peers| !peers.is_empty())
            && (1..=3).all(|id| each.iter().any(|peers| peers.contains(&id)))
    });
    if !all_admitted {
        cluster.fail(&format!(
            "the nodes did not admit each other on the controller channel: {:?}",
            (1..=3).map(|id| admitted(&cluster, id)).collect::<Vec<_>>()
        ));
    }
    controller_channel_refuses_strangers(&cluster, 1, &pki.ca(), &stranger);
    eprintln!("the controller channel admits the nodes' certificates and refuses strangers");
    let ca = pki.ca();
    let kcat_args = |ports: &[u16]| {
        let mut args = Tls {
            port: ports[0],
            ca: &ca,
            identity: Some(&alice),
        }
        .kcat_args();
        args[1] = ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",");
        args
    };

    let out = pinlog(&[
        "topic",
        "create",
        TOPIC,
        "--partitions",
        "1",
        "--replication-factor",
        "3",
        "--config",
        "min.insync.replicas=2",
        "--bootstrap-server",
        &cluster.nodes[0].bootstrap(),
    ]);
    if !out.success() {
        cluster.fail(&format!("create {TOPIC}: {out}"));
    }
    let whole_isr = |cluster: &Cluster| {
        partitions_of(&cluster.nodes[0], TOPIC)
            .first()
            .is_some_and(|(_, leader, _, isr)| *leader > 0 && isr.len() == 3)
    };
    if !wait_for(CONVERGE_TIMEOUT, || whole_isr(&cluster)) {
        cluster.fail(&format!(
            "{TOPIC} never had a leader and an ISR of 3: {:?}",
            partitions_of(&cluster.nodes[0], TOPIC)
        ));
    }

    let out = run_command(
        &mut kcat_producer(&kcat_args(&ssl_ports), TOPIC),
        Some(&kcat_input(0..HALF)),
        CLIENT_TIMEOUT,
    );
    if !out.success() {
        cluster.fail(&format!("produce with acks=all over TLS:\n{out}"));
    }
    // Replication over TLS: the leader's followers fetch as the
    // principals of their own certificates, and stay in the ISR.
    let described = partitions_of(&cluster.nodes[0], TOPIC);
    let Some((_, leader, _, isr)) = described.first().cloned() else {
        cluster.fail(&format!("cannot describe {TOPIC}: {described:?}"));
    };
    if isr.len() != 3 || leader < 1 {
        cluster.fail(&format!(
            "after {HALF} records with acks=all: leader {leader}, ISR {isr:?}"
        ));
    }
    let leader = leader as usize;
    eprintln!("{HALF} records acknowledged by leader {leader} with ISR {isr:?}");
    // The followers fetch over SASL_SSL, logged in as the broker user.
    let sasl_logins = wait_for(Duration::from_secs(5), || {
        cluster.nodes[leader - 1]
            .log()
            .lines()
            .filter(|l| l.contains("SASL authentication succeeded") && l.contains("User:broker"))
            .count()
            >= 2
    });
    if !sasl_logins {
        cluster.fail(&format!(
            "node {leader} (the leader) logged no SASL logins of both followers as User:broker"
        ));
    }

    let killed = Instant::now();
    cluster.node(leader).kill9();
    let survivors: Vec<usize> = (1..=3).filter(|id| *id != leader).collect();
    let survivor_ports: Vec<u16> = survivors.iter().map(|id| ssl_ports[id - 1]).collect();
    let new_leader = |cluster: &Cluster| {
        partitions_of(&cluster.nodes[survivors[0] - 1], TOPIC)
            .first()
            .map(|(_, l, _, isr)| (*l, isr.clone()))
    };
    let moved = wait_for(CONVERGE_TIMEOUT, || {
        new_leader(&cluster).is_some_and(|(l, _)| l > 0 && l as usize != leader)
    });
    if !moved {
        cluster.fail(&format!(
            "no new leader after node {leader} was killed: {:?}",
            new_leader(&cluster)
        ));
    }
    eprintln!(
        "kill -9 of node {leader}: the leader is now {:?}, {:.1?} later",
        new_leader(&cluster),
        killed.elapsed()
    );
    let out = run_command(
        &mut kcat_producer(&kcat_args(&survivor_ports), TOPIC),
        Some(&kcat_input(HALF..2 * HALF)),
        CLIENT_TIMEOUT,
    );
    if !out.success() {
        cluster.fail(&format!(
            "produce with acks=all over TLS after node {leader} was killed:\n{out}"
        ));
    }
    let out = run_command(
        &mut kcat_consume(&kcat_args(&survivor_ports), TOPIC),
        None,
        CLIENT_TIMEOUT,
    );
    if let Err(e) = (out.success())
        .then_some(())
        .ok_or_else(|| format!("kcat failed:\n{out}"))
        .and_then(|()| check_consumed(TOPIC, &out.stdout, 0..2 * HALF))
    {
        cluster.fail(&format!("after the failover: {e}"));
    }

    eprintln!(
        "{} records read back exactly once after the failover",
        2 * HALF
    );

    // The killed node comes back and catches up over TLS.
    cluster.node(leader).restart();
    if !wait_for(CONVERGE_TIMEOUT, || whole_isr(&cluster)) {
        cluster.fail(&format!(
            "node {leader} did not rejoin the ISR: {:?}",
            partitions_of(&cluster.nodes[0], TOPIC)
        ));
    }
    eprintln!(
        "node {leader} restarted and rejoined the ISR: {:?}",
        partitions_of(&cluster.nodes[0], TOPIC)
    );

    // Transactions: the coordinator writes markers to the other leaders,
    // and leaders verify partitions with the coordinator, over the SSL
    // inter-broker listener (the only one brokers reach each other on).
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let classpath = compile_java(scratch.path(), "TxnCheck.java");
    let out = run_command(
        Command::new("java")
            .args(["-XX:TieredStopAtLevel=1", "-cp", &classpath, "TxnCheck"])
            .args([&cluster.bootstrap(), "tlstx", "3"]),
        None,
        CLIENT_TIMEOUT,
    );
    let passed = ["commit-and-abort", "read-process-write", "zombie-fencing"]
        .iter()
        .all(|check| out.stdout.contains(&format!("ok {check}")));
    if !out.success() || !passed {
        cluster.fail(&format!("TxnCheck on the TLS cluster:\n{out}"));
    }
    eprintln!("TxnCheck passed on RF 3 topics with SASL_SSL between the brokers");

    // A reassignment with Kafka's tool: the request reaches the active
    // controller over the mutual-TLS channel, and the new replicas copy
    // the partition over SASL_SSL.
    let out = pinlog(&[
        "topic",
        "create",
        MOVED,
        "--partitions",
        "1",
        "--replication-factor",
        "1",
        "--bootstrap-server",
        &cluster.nodes[0].bootstrap(),
    ]);
    if !out.success() {
        cluster.fail(&format!("create {MOVED}: {out}"));
    }
    let placed = |cluster: &Cluster| partitions_of(&cluster.nodes[0], MOVED).first().cloned();
    if !wait_for(CONVERGE_TIMEOUT, || {
        placed(&cluster).is_some_and(|(_, l, _, _)| l > 0)
    }) {
        cluster.fail(&format!("{MOVED} has no leader: {:?}", placed(&cluster)));
    }
    let (_, _, replicas, _) = placed(&cluster).expect("described above");
    let target: Vec<i64> = (1..=3).filter(|id| !replicas.contains(id)).collect();
    let out = run_command(
        &mut kcat_producer(&kcat_args(&ssl_ports), MOVED),
        Some(&kcat_input(0..HALF)),
        CLIENT_TIMEOUT,
    );
    if !out.success() {
        cluster.fail(&format!("produce to {MOVED}:\n{out}"));
    }
    let plan = serde_json::json!({
        "version": 1,
        "partitions": [{"topic": MOVED, "partition": 0, "replicas": target}],
    });
    let plan = support::write_file(
        cluster.nodes[0].root(),
        "move.json",
        plan.to_string().as_bytes(),
    );
    let jars = format!("{}/*", kafka_libs().display());
    let out = run_command(
        Command::new("java")
            .args(["-XX:TieredStopAtLevel=1", "-cp", &jars])
            .arg("org.apache.kafka.tools.reassign.ReassignPartitionsCommand")
            .args([
                "--bootstrap-server",
                &cluster.nodes[0].bootstrap(),
                "--execute",
            ])
            .arg("--reassignment-json-file")
            .arg(&plan),
        None,
        CLIENT_TIMEOUT,
    );
    if !(out.success() && out.stdout.contains("Successfully started")) {
        cluster.fail(&format!("kafka-reassign-partitions --execute: {out}"));
    }
    let moved = wait_for(CONVERGE_TIMEOUT, || {
        placed(&cluster).is_some_and(|(_, leader, mut now, mut isr)| {
            now.sort();
            isr.sort();
            now == target && isr == target && target.contains(&leader)
        })
    });
    if !moved {
        cluster.fail(&format!(
            "{MOVED} did not move from {replicas:?} to {target:?}: {:?}",
            placed(&cluster)
        ));
    }
    let target_ports: Vec<u16> = target
        .iter()
        .map(|id| ssl_ports[*id as usize - 1])
        .collect();
    let out = run_command(
        &mut kcat_consume(&kcat_args(&target_ports), MOVED),
        None,
        CLIENT_TIMEOUT,
    );
    if let Err(e) = (out.success())
        .then_some(())
        .ok_or_else(|| format!("kcat failed:\n{out}"))
        .and_then(|()| check_consumed(MOVED, &out.stdout, 0..HALF))
    {
        cluster.fail(&format!("after the reassignment: {e}"));
    }
    eprintln!("{MOVED} moved from {replicas:?} to {target:?} with its {HALF} records");
}

/// The inter-broker client checks the peer's certificate names the host it
/// connects to (`ssl.endpoint.identification.algorithm=https`, Kafka's
/// default): brokers whose certificates name only `localhost` while they
/// advertise 127.0.0.1 cannot replicate, and say why.
#[test]
fn inter_broker_tls_checks_the_certificate_names_the_broker() {
    const TOPIC: &str = "wrong-names";
    let pki = TestCa::new("pinlog-test-ca");
    let nodes: Vec<Identity> = (1..=3)
        .map(|id| {
            pki.issue_for(
                &format!("broker-{id}"),
                &format!("/O=pinlog/CN=broker-{id}"),
                "DNS:localhost",
            )
        })
        .collect();
    let ssl_ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let opts = BrokerOpts::new()
        .setting(
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,SSL:SSL",
        )
        .setting("inter.broker.listener.name", "SSL")
        .setting("ssl.truststore.location", path_str(&pki.ca()))
        .setting("ssl.client.auth", "required");
    let cluster = Cluster::start_each(3, opts, |id, node| {
        node.setting(
            "listeners",
            format!(
                "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:{}",
                ssl_ports[id - 1]
            ),
        )
        .setting("ssl.keystore.location", path_str(&nodes[id - 1].pem))
    });
    let out = pinlog(&[
        "topic",
        "create",
        TOPIC,
        "--partitions",
        "1",
        "--replication-factor",
        "3",
        "--bootstrap-server",
        &cluster.nodes[0].bootstrap(),
    ]);
    if !out.success() {
        cluster.fail(&format!("create {TOPIC}: {out}"));
    }
    let refused = |n: &Broker| {
        n.log().lines().any(|l| {
            l.contains(" WARN ")
                && l.contains("replica fetch from broker")
                && l.contains("not valid for name")
        })
    };
    let both_followers_refused = wait_for(CONVERGE_TIMEOUT, || {
        cluster.nodes.iter().filter(|n| refused(n)).count() == 2
    });
    if !both_followers_refused {
        cluster.fail("the followers did not both refuse the leader's certificate for its name");
    }
    let line = cluster
        .nodes
        .iter()
        .flat_map(|n| n.log().lines().map(str::to_string).collect::<Vec<_>>())
        .find(|l| l.contains("not valid for name"))
        .unwrap_or_default();
    eprintln!("a follower: {line}");
}
