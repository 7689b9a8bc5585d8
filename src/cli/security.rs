//! `--command-config FILE`: how the operator commands reach a secured
//! listener, read from the Kafka client properties an operator already
//! hands Kafka's own tools (`security.protocol`, `ssl.*`, `sasl.mechanism`,
//! `sasl.jaas.config`).
//!
//! TLS uses the same rustls configuration as a broker's inter-broker
//! client; SASL logs in with PLAIN or SCRAM right after ApiVersions.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;

use crate::broker_config::listeners::SecurityProtocol;
use crate::broker_config::security::{SecuritySettings, TlsSettings, SSL_KEYS};
use crate::cli::error::{CliError, CliResult};
use crate::sasl::jaas::SaslLogins;
use crate::sasl::Mechanism;
use crate::security::tls::client_config;

/// The pseudo listener name the client's `ssl.*` settings are kept under.
const CLIENT: &str = "CLIENT";

/// How the commands connect.
#[derive(Clone)]
pub struct ClientSecurity {
    pub protocol: SecurityProtocol,
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub sasl: Option<ClientSasl>,
}

impl Default for ClientSecurity {
    fn default() -> Self {
        ClientSecurity {
            protocol: SecurityProtocol::Plaintext,
            tls: None,
            sasl: None,
        }
    }
}

/// A SASL login: PLAIN or SCRAM.
#[derive(Clone)]
pub struct ClientSasl {
    pub mechanism: Mechanism,
    pub username: String,
    pub password: String,
}

/// Java properties, the subset Kafka's client files use: `key=value` or
/// `key: value` lines, `#` and `!` comments, a trailing `\` joining the
/// next line.
pub fn parse_properties(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut pending = String::new();
    for raw in text.lines() {
        let line = raw.trim_start();
        if pending.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
        {
            continue;
        }
        if let Some(continued) = line.strip_suffix('\\') {
            pending.push_str(continued);
            continue;
        }
        pending.push_str(line);
        let entry = std::mem::take(&mut pending);
        let split = entry.find(['=', ':']).map(|i| {
            (
                entry[..i].trim().to_string(),
                entry[i + 1..].trim().to_string(),
            )
        });
        if let Some((key, value)) = split {
            out.insert(key, value);
        }
    }
    out
}

impl ClientSecurity {
    /// Reads a client properties file.
    pub fn load(path: &Path) -> CliResult<ClientSecurity> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::Usage(format!(
                "cannot read --command-config {}: {e}",
                path.display()
            ))
        })?;
        Self::from_properties(&parse_properties(&text))
            .map_err(|e| CliError::Usage(format!("--command-config {}: {e}", path.display())))
    }

    pub fn from_properties(props: &BTreeMap<String, String>) -> Result<ClientSecurity, String> {
        let protocol = match props.get("security.protocol") {
            None => SecurityProtocol::Plaintext,
            Some(p) => SecurityProtocol::parse(p).ok_or_else(|| {
                format!("security.protocol {p:?} is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
            })?,
        };
        let tls = if protocol.uses_tls() {
            let mut settings = SecuritySettings::default();
            for (k, v) in props.iter().filter(|(k, _)| SSL_KEYS.contains(&k.as_str())) {
                settings.set(k, v.clone())?;
            }
            let tls = TlsSettings::for_listener(&settings, CLIENT, false)?;
            Some(client_config(&tls)?)
        } else {
            None
        };
        let sasl = if protocol.uses_sasl() {
            let name = props.get("sasl.mechanism").map_or("GSSAPI", String::as_str);
            let mechanism = Mechanism::from_name(name)
                .filter(|m| *m != Mechanism::OAuthBearer)
                .ok_or_else(|| {
                    format!(
                        "sasl.mechanism {name:?}: pinlog's commands log in with PLAIN, \
                         SCRAM-SHA-256 or SCRAM-SHA-512"
                    )
                })?;
            let jaas = props
                .get("sasl.jaas.config")
                .ok_or("SASL needs sasl.jaas.config with username=\"...\" password=\"...\"")?;
            let logins =
                SaslLogins::from_config(jaas).map_err(|e| format!("sasl.jaas.config: {e}"))?;
            let credentials = match mechanism {
                Mechanism::Plain => logins.plain.and_then(|p| p.own),
                _ => logins.scram.filter(|c| !c.username.is_empty()),
            }
            .ok_or_else(|| {
                format!(
                    "sasl.jaas.config gives no username and password for {}: use \
                     org.apache.kafka.common.security.{} required username=\"...\" password=\"...\";",
                    mechanism.name(),
                    if mechanism == Mechanism::Plain {
                        "plain.PlainLoginModule"
                    } else {
                        "scram.ScramLoginModule"
                    }
                )
            })?;
            Some(ClientSasl {
                mechanism,
                username: credentials.username,
                password: credentials.password,
            })
        } else {
            None
        };
        Ok(ClientSecurity {
            protocol,
            tls,
            sasl,
        })
    }
}

/// A connection, plain or TLS.
pub enum CliStream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl CliStream {
    /// Wraps a connected socket as `security` says; the TLS handshake
    /// happens on the first write, under the socket's timeouts.
    pub fn new(
        stream: TcpStream,
        host: &str,
        security: &ClientSecurity,
    ) -> Result<CliStream, String> {
        let Some(config) = &security.tls else {
            return Ok(CliStream::Plain(stream));
        };
        let name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| format!("{host:?} is not a TLS server name: {e}"))?;
        let connection = rustls::ClientConnection::new(config.clone(), name)
            .map_err(|e| format!("cannot start TLS: {e}"))?;
        Ok(CliStream::Tls(Box::new(rustls::StreamOwned::new(
            connection, stream,
        ))))
    }
}

impl Read for CliStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            CliStream::Plain(s) => s.read(buf),
            CliStream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for CliStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            CliStream::Plain(s) => s.write(buf),
            CliStream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            CliStream::Plain(s) => s.flush(),
            CliStream::Tls(s) => s.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_client_properties_parse() {
        let props = parse_properties(
            "# a comment\nsecurity.protocol=SASL_PLAINTEXT\n! another\nsasl.mechanism : SCRAM-SHA-512\n\
             sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n  \
             username=\"bob\" password=\"b=b\";\n",
        );
        assert_eq!(props["security.protocol"], "SASL_PLAINTEXT");
        assert_eq!(props["sasl.mechanism"], "SCRAM-SHA-512");
        let s = ClientSecurity::from_properties(&props).unwrap();
        let sasl = s.sasl.unwrap();
        assert_eq!(sasl.mechanism, Mechanism::ScramSha512);
        assert_eq!(
            (sasl.username.as_str(), sasl.password.as_str()),
            ("bob", "b=b")
        );
        assert!(s.tls.is_none());
    }

    #[test]
    fn mistakes_say_what_to_write() {
        let props = |text: &str| ClientSecurity::from_properties(&parse_properties(text));
        assert!(props("security.protocol=TLS")
            .err()
            .unwrap()
            .contains("security.protocol"));
        assert!(props("security.protocol=SASL_PLAINTEXT")
            .err()
            .unwrap()
            .contains("sasl.mechanism"));
        assert!(
            props("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN")
                .err()
                .unwrap()
                .contains("sasl.jaas.config")
        );
        assert!(props("security.protocol=SSL")
            .err()
            .unwrap()
            .contains("ssl.truststore.location"));
    }
}
