//! A listener's certificate rotates without a restart (issue 31): Kafka's
//! `kafka-configs.sh --entity-type brokers --entity-name 1 --alter
//! --add-config listener.name.ssl.ssl.keystore.location=...`.
//!
//! One broker with an SSL listener, its certificates from a test CA made
//! with `openssl` (`support::test_ca`):
//! - after the alter, a new TLS connection gets the new certificate, and a
//!   connection opened before keeps working;
//! - an alter naming a file that is not there is refused with the reason,
//!   and the listener keeps its certificate; so is one for the
//!   cluster-wide default, and one without the listener prefix;
//! - a file replaced in place is served once the same path is altered
//!   again, as in Kafka;
//! - after a restart the broker serves the rotated certificate, which the
//!   metadata log holds.
//!
//! Needs Java and Kafka's jars (for ConfigCommand); about 20 s.

use crate::support;

use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use support::test_ca::TestCa;
use support::{api_versions_round_trip, free_port, kafka_libs, run_command, Broker, BrokerOpts};

const TOOL_TIMEOUT: Duration = Duration::from_secs(120);
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// A rustls client that trusts `ca`.
fn client(ca: &Path) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).expect("read the CA") {
        roots.add(cert.expect("a PEM certificate")).expect("a CA");
    }
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth(),
    )
}

type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// A TLS connection to `127.0.0.1:port` after an ApiVersions round trip,
/// and the subject of the certificate the broker showed.
fn connect(port: u16, config: &Arc<rustls::ClientConfig>) -> (TlsStream, String) {
    let tcp = TcpStream::connect(("127.0.0.1", port)).expect("connect to the SSL listener");
    tcp.set_read_timeout(Some(IO_TIMEOUT))
        .expect("a read timeout");
    let name = ServerName::try_from("127.0.0.1").expect("an IP address");
    let conn = rustls::ClientConnection::new(config.clone(), name).expect("a TLS client");
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    api_versions_round_trip(&mut tls).expect("ApiVersions over TLS");
    let der = tls
        .conn
        .peer_certificates()
        .and_then(|c| c.first())
        .expect("the broker's certificate")
        .as_ref()
        .to_vec();
    let subject = pinlog::security::tls::subject_rfc2253(&der).expect("a subject");
    (tls, subject)
}

/// Kafka's ConfigCommand against the broker's PLAINTEXT listener.
fn kafka_configs(broker: &Broker, args: &[&str]) -> support::CmdOutput {
    let jars = format!("{}/*", kafka_libs().display());
    run_command(
        Command::new("java")
            .args(["-XX:TieredStopAtLevel=1", "-cp", &jars])
            .arg("org.apache.kafka.tools.ConfigCommand")
            .args(["--bootstrap-server", &broker.bootstrap()])
            .args(args),
        None,
        TOOL_TIMEOUT,
    )
}

fn alter_broker(broker: &Broker, entity: &[&str], config: &str) -> support::CmdOutput {
    let mut args = vec!["--entity-type", "brokers"];
    args.extend_from_slice(entity);
    args.extend_from_slice(&["--alter", "--add-config", config]);
    kafka_configs(broker, &args)
}

#[test]
fn a_listener_certificate_rotates_without_a_restart() {
    let ca = TestCa::new("pinlog-test-ca");
    let first = ca.issue("first", "/O=pinlog/CN=first");
    let second = ca.issue("second", "/O=pinlog/CN=second");
    let third = ca.issue("third", "/O=pinlog/CN=third");
    let port = free_port();
    let mut broker = Broker::start(
        BrokerOpts::new()
            .setting(
                "listeners",
                format!("PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:{port}"),
            )
            .setting("ssl.keystore.location", first.pem.display().to_string()),
    );
    let client = client(&ca.ca());
    let (mut before, subject) = connect(port, &client);
    assert_eq!(subject, "CN=first,O=pinlog");

    // The rotation, as an operator writes it.
    let rotated = ca.path().join("rotated.pem");
    std::fs::copy(&second.pem, &rotated).expect("copy the keystore");
    let setting = format!(
        "listener.name.ssl.ssl.keystore.location={}",
        rotated.display()
    );
    let out = alter_broker(&broker, &["--entity-name", "1"], &setting);
    if !out.success() {
        broker.fail(&format!("kafka-configs --alter: {out}"));
    }
    let (_, subject) = connect(port, &client);
    assert_eq!(
        subject, "CN=second,O=pinlog",
        "a new connection after the alter"
    );
    api_versions_round_trip(&mut before).expect("the connection opened before still serves");
    assert!(broker
        .log()
        .contains("new connections are served with the listeners' TLS settings"));

    // What is refused, each leaving the listener as it was.
    let missing = ca.path().join("missing.pem");
    let out = alter_broker(
        &broker,
        &["--entity-name", "1"],
        &format!(
            "listener.name.ssl.ssl.keystore.location={}",
            missing.display()
        ),
    );
    assert!(!out.success(), "a missing keystore was accepted: {out}");
    assert!(
        out.stderr.contains("cannot read the keystore")
            || out.stdout.contains("cannot read the keystore"),
        "{out}"
    );
    let out = alter_broker(&broker, &["--entity-default"], &setting);
    assert!(
        !out.success(),
        "a cluster-wide certificate was accepted: {out}"
    );
    assert!(format!("{out}").contains("--entity-name"), "{out}");
    let out = alter_broker(
        &broker,
        &["--entity-name", "1"],
        &format!("ssl.keystore.location={}", rotated.display()),
    );
    assert!(!out.success(), "an unprefixed keystore was accepted: {out}");
    assert!(
        format!("{out}").contains("listener.name.<listener>."),
        "{out}"
    );
    let (_, subject) = connect(port, &client);
    assert_eq!(subject, "CN=second,O=pinlog", "after the refused alters");

    // The file replaced in place, and the same path altered again.
    std::fs::copy(&third.pem, &rotated).expect("replace the keystore");
    let out = alter_broker(&broker, &["--entity-name", "1"], &setting);
    if !out.success() {
        broker.fail(&format!("kafka-configs --alter with the same path: {out}"));
    }
    let (_, subject) = connect(port, &client);
    assert_eq!(
        subject, "CN=third,O=pinlog",
        "after re-altering the same path"
    );

    // The metadata log keeps it across a restart.
    broker.restart();
    let (_, subject) = connect(port, &client);
    assert_eq!(subject, "CN=third,O=pinlog", "after a restart");
    let out = kafka_configs(
        &broker,
        &[
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--describe",
        ],
    );
    assert!(
        out.success()
            && out
                .stdout
                .contains("listener.name.ssl.ssl.keystore.location="),
        "{out}"
    );
}
