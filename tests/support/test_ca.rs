//! A certificate authority for the TLS tests, made with `openssl` in a
//! temporary directory: X.509 v3 throughout (webpki refuses v1
//! certificates), EC P-256 keys in PKCS#8 PEM, leaf certificates for
//! `IP:127.0.0.1` and `DNS:localhost` unless a test names others.
//!
//! ```ignore
//! let ca = TestCa::new("pinlog-test-ca");
//! let broker = ca.issue("broker", "/CN=localhost");
//! // ssl.keystore.location = broker.pem, ssl.truststore.location = ca.ca()
//! ```
//!
//! A missing `openssl` fails the test with the package to install.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tempfile::TempDir;

use super::{run_command, which, write_file};

/// The names a certificate is valid for, unless a test says otherwise.
pub const LOOPBACK_NAMES: &str = "IP:127.0.0.1,DNS:localhost";
/// Days the certificates are valid: longer than any test run.
const VALIDITY_DAYS: &str = "2";
/// Bound on one `openssl` run (key generation and signing take
/// milliseconds).
const OPENSSL_TIMEOUT: Duration = Duration::from_secs(30);

/// A CA in a temporary directory (deleted with it), and the certificates
/// it issued there.
pub struct TestCa {
    dir: TempDir,
}

/// A certificate with its key: `cert` and `key` as separate PEM files (for
/// librdkafka and Python), and `pem`, the key followed by the certificate
/// (pinlog's and Java's PEM keystore).
pub struct Identity {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub pem: PathBuf,
}

impl TestCa {
    /// A new CA whose certificate has subject `CN=<name>`.
    pub fn new(name: &str) -> TestCa {
        assert!(
            which("openssl").is_some(),
            "openssl is not available (the tests make their certificates with it); \
             install it with `apt-get install openssl`"
        );
        let dir = tempfile::Builder::new()
            .prefix("pinlog-ca-")
            .tempdir()
            .expect("create a directory for the certificates");
        let ca = TestCa { dir };
        ca.openssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            VALIDITY_DAYS,
            "-subj",
            &format!("/CN={name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
        ca
    }

    /// The directory of the certificates, which tests also use for files
    /// that refer to them (client properties).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The CA certificate (a PEM truststore).
    pub fn ca(&self) -> PathBuf {
        self.path().join("ca.pem")
    }

    /// A leaf certificate for `subject` (openssl's `/O=x/CN=y` form;
    /// RFC 2253 writes it back to front, `CN=y,O=x`), valid for the
    /// loopback address, signed by this CA, in `<name>.pem` and beside it.
    pub fn issue(&self, name: &str, subject: &str) -> Identity {
        self.issue_for(name, subject, LOOPBACK_NAMES)
    }

    /// [`TestCa::issue`] with `names` as its subject alternative names.
    pub fn issue_for(&self, name: &str, subject: &str, names: &str) -> Identity {
        let (key, csr, cert, ext) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.crt"),
            format!("{name}.ext"),
        );
        let extensions = format!(
            "basicConstraints=CA:FALSE\nsubjectAltName={names}\n\
             extendedKeyUsage=serverAuth,clientAuth\n"
        );
        write_file(self.path(), &ext, extensions.as_bytes());
        self.openssl(&[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            subject,
        ]);
        self.openssl(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &cert,
            "-days",
            VALIDITY_DAYS,
            "-extfile",
            &ext,
        ]);
        let read = |f: &str| std::fs::read(self.path().join(f)).expect("read what openssl wrote");
        let pem = [read(&key), read(&cert)].concat();
        Identity {
            cert: self.path().join(&cert),
            key: self.path().join(&key),
            pem: write_file(self.path(), &format!("{name}.pem"), &pem),
        }
    }

    fn openssl(&self, args: &[&str]) {
        let out = run_command(
            Command::new("openssl").args(args).current_dir(self.path()),
            None,
            OPENSSL_TIMEOUT,
        );
        assert!(out.success(), "openssl failed:\n{out}");
    }
}
