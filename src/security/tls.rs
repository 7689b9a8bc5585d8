//! TLS for the listeners and for this broker's connections to others:
//! rustls configurations built from a listener's `ssl.*` settings, and the
//! mTLS principal of a client certificate.
//!
//! Configurations are built once, when the broker starts, and shared by
//! every shard (rustls' configurations are immutable and `Sync`); a
//! handshake runs on the shard that accepted the connection. The CLI's
//! connections use the same client configuration.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};

use crate::broker_config::security::{ClientAuth, KeyStore, PemSource, TlsSettings, TlsVersion};
use crate::ssl_principal::PrincipalMapper;

/// Why a TLS configuration cannot be built, for the operator.
type Result<T> = std::result::Result<T, String>;

fn read_pem(what: &str, source: &PemSource) -> Result<Vec<u8>> {
    match source {
        PemSource::File(path) => std::fs::read(path)
            .map_err(|e| format!("cannot read the {what} {}: {e}", path.display())),
        PemSource::Inline(text) => Ok(text.as_bytes().to_vec()),
    }
}

fn certificates(what: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| format!("the {what} is not valid PEM: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "the {what} holds no certificate (-----BEGIN CERTIFICATE----- block)"
        ));
    }
    Ok(certs)
}

/// The chain and key of a keystore.
fn key_and_chain(
    keystore: &KeyStore,
    key_password: Option<&str>,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let (chain_pem, key_pem, what) = match keystore {
        KeyStore::File(path) => {
            let pem = read_pem("keystore", &PemSource::File(path.clone()))?;
            (pem.clone(), pem, format!("keystore {}", path.display()))
        }
        KeyStore::Inline { chain, key } => (
            chain.as_bytes().to_vec(),
            key.as_bytes().to_vec(),
            "inline keystore".to_string(),
        ),
    };
    let chain = certificates(&what, &chain_pem)?;
    let key = match (encrypted_key_block(&key_pem), key_password) {
        (Some(block), Some(password)) => decrypt_key(&what, block, password)?,
        (Some(_), None) => {
            return Err(format!(
                "the {what} holds an encrypted key (-----BEGIN ENCRYPTED PRIVATE KEY-----): \
                 set ssl.key.password to its password"
            ))
        }
        (None, password) => {
            let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
                format!(
                    "the {what} holds no private key (a -----BEGIN PRIVATE KEY----- block): {e}"
                )
            })?;
            if password.is_some() {
                tracing::warn!(
                    "ssl.key.password is set, but the {what}'s key is not encrypted; the \
                     password is not used"
                );
            }
            key
        }
    };
    Ok((chain, key))
}

const ENCRYPTED_KEY_BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
const ENCRYPTED_KEY_END: &str = "-----END ENCRYPTED PRIVATE KEY-----";

/// The encrypted PKCS#8 key's PEM block in `pem`, which may hold
/// certificates too.
fn encrypted_key_block(pem: &[u8]) -> Option<&[u8]> {
    let text = std::str::from_utf8(pem).ok()?;
    let start = text.find(ENCRYPTED_KEY_BEGIN)?;
    let end = text[start..].find(ENCRYPTED_KEY_END)? + start + ENCRYPTED_KEY_END.len();
    Some(&pem[start..end])
}

/// An encrypted PKCS#8 key (PBES2, as `openssl pkcs8 -topk8` writes it),
/// decrypted with `ssl.key.password`.
fn decrypt_key(what: &str, block: &[u8], password: &str) -> Result<PrivateKeyDer<'static>> {
    use pkcs8::der::Decode;
    let (_, der) = pkcs8::der::pem::decode_vec(block)
        .map_err(|e| format!("the {what}'s encrypted key is not valid PEM: {e}"))?;
    let info = pkcs8::EncryptedPrivateKeyInfo::from_der(&der)
        .map_err(|e| format!("the {what}'s encrypted key is not PKCS#8: {e}"))?;
    let plain = info.decrypt(password).map_err(|e| {
        format!(
            "cannot decrypt the {what}'s key with ssl.key.password ({e}); check the password, \
             and that the key is PBES2 (`openssl pkcs8 -topk8 -v2 aes-256-cbc`)"
        )
    })?;
    Ok(PrivateKeyDer::Pkcs8(plain.as_bytes().to_vec().into()))
}

fn roots(settings: &TlsSettings) -> Result<Option<RootCertStore>> {
    let Some(source) = &settings.truststore else {
        return Ok(None);
    };
    let mut store = RootCertStore::empty();
    for cert in certificates("truststore", &read_pem("truststore", source)?)? {
        store
            .add(cert)
            .map_err(|e| format!("a truststore certificate cannot be used as a CA: {e}"))?;
    }
    Ok(Some(store))
}

/// ring's provider restricted to `ssl.cipher.suites`. Kafka (Java) names
/// TLS 1.3 suites `TLS_AES_128_GCM_SHA256` where rustls says
/// `TLS13_AES_128_GCM_SHA256`; both spellings are accepted.
fn provider(settings: &TlsSettings) -> Result<Arc<CryptoProvider>> {
    let mut provider = rustls::crypto::ring::default_provider();
    if !settings.cipher_suites.is_empty() {
        let iana = |s: &rustls::SupportedCipherSuite| {
            s.suite()
                .as_str()
                .unwrap_or("")
                .replacen("TLS13_", "TLS_", 1)
        };
        let known: Vec<String> = provider.cipher_suites.iter().map(iana).collect();
        for wanted in &settings.cipher_suites {
            let wanted = wanted.replacen("TLS13_", "TLS_", 1);
            if !known.contains(&wanted) {
                return Err(format!(
                    "ssl.cipher.suites: {wanted} is not supported; the supported suites are {}",
                    known.join(", ")
                ));
            }
        }
        let wanted: Vec<String> = settings
            .cipher_suites
            .iter()
            .map(|w| w.replacen("TLS13_", "TLS_", 1))
            .collect();
        provider.cipher_suites.retain(|s| wanted.contains(&iana(s)));
    }
    Ok(Arc::new(provider))
}

fn versions(settings: &TlsSettings) -> Vec<&'static rustls::SupportedProtocolVersion> {
    settings
        .enabled_protocols
        .iter()
        .map(|v| match v {
            TlsVersion::Tls12 => &rustls::version::TLS12,
            TlsVersion::Tls13 => &rustls::version::TLS13,
        })
        .collect()
}

/// The server side of a TLS listener.
pub fn server_config(settings: &TlsSettings) -> Result<Arc<ServerConfig>> {
    let keystore = settings
        .keystore
        .as_ref()
        .ok_or("a TLS listener needs ssl.keystore.location")?;
    let (chain, key) = key_and_chain(keystore, settings.key_password.as_deref())?;
    let provider = provider(settings)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions(settings))
        .map_err(|e| format!("ssl.enabled.protocols and ssl.cipher.suites do not fit: {e}"))?;
    let builder = match (settings.client_auth, roots(settings)?) {
        (ClientAuth::None, _) => builder.with_no_client_auth(),
        (auth, Some(roots)) => {
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = match auth {
                ClientAuth::Requested => verifier.allow_unauthenticated(),
                _ => verifier,
            };
            builder.with_client_cert_verifier(
                verifier
                    .build()
                    .map_err(|e| format!("cannot check client certificates: {e}"))?,
            )
        }
        (_, None) => return Err("ssl.client.auth needs ssl.truststore.location".into()),
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("the keystore's key does not fit its certificate: {e}"))?;
    Ok(Arc::new(config))
}

/// The client side of a TLS listener: how this broker connects to another
/// broker's inter-broker listener.
pub fn client_config(settings: &TlsSettings) -> Result<Arc<ClientConfig>> {
    let provider = provider(settings)?;
    let roots = roots(settings)?.ok_or(
        "connecting to another broker over TLS needs the CA that signed its certificate: \
         set ssl.truststore.location for the inter-broker listener",
    )?;
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions(settings))
        .map_err(|e| format!("ssl.enabled.protocols and ssl.cipher.suites do not fit: {e}"))?;
    let builder = if settings.endpoint_identification {
        builder.with_root_certificates(roots)
    } else {
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| format!("cannot check server certificates: {e}"))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnlyVerifier { inner }))
    };
    let config = match &settings.keystore {
        Some(keystore) => {
            let (chain, key) = key_and_chain(keystore, settings.key_password.as_deref())?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("the keystore's key does not fit its certificate: {e}"))?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// `ssl.endpoint.identification.algorithm=` (empty): the peer's chain must
/// lead to a trusted CA, but its certificate need not name the host.
#[derive(Debug)]
struct ChainOnlyVerifier {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for ChainOnlyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// How this broker connects to other brokers' inter-broker listener: in
/// the clear, or over TLS with the listener's settings. Built once at
/// startup; every shard keeps a copy as an extension.
#[derive(Clone, Default)]
pub struct InterBrokerSecurity {
    pub tls: Option<futures_rustls::TlsConnector>,
    /// The mechanism and credentials of a SASL inter-broker listener.
    pub sasl: Option<crate::broker_config::sasl_settings::InterBrokerSasl>,
}

impl InterBrokerSecurity {
    pub fn from_config(config: &crate::broker_config::BrokerConfig) -> Result<Self> {
        let listener = config.listeners.inter_broker();
        let sasl = if listener.protocol.uses_sasl() {
            Some(
                crate::broker_config::sasl_settings::InterBrokerSasl::for_listener(
                    &config.security,
                    &listener.name,
                )?,
            )
        } else {
            None
        };
        if !listener.protocol.uses_tls() {
            return Ok(InterBrokerSecurity { tls: None, sasl });
        }
        let settings = config.tls_settings(&listener.name, false)?;
        let client = client_config(&settings)
            .map_err(|e| format!("inter-broker listener {}: {e}", listener.name))?;
        Ok(InterBrokerSecurity {
            tls: Some(futures_rustls::TlsConnector::from(client)),
            sasl,
        })
    }
}

/// The keywords RFC 2253 (and Java's `X500Principal.getName(RFC2253)`)
/// writes for attribute types; any other type is written as its OID.
const RFC2253_KEYWORDS: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.9", "STREET"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("0.9.2342.19200300.100.1.1", "UID"),
    ("0.9.2342.19200300.100.1.25", "DC"),
];

/// Escapes an attribute value as RFC 2253 section 2.4 asks.
fn escape_rfc2253(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// DER of a value, for `#hex` (RFC 2253 2.4): tag, length, content.
fn der_hex(tag: u8, content: &[u8]) -> String {
    let mut der = vec![tag];
    let len = content.len();
    if len < 0x80 {
        der.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        der.push(0x80 | bytes.len() as u8);
        der.extend(bytes);
    }
    der.extend_from_slice(content);
    der.iter().map(|b| format!("{b:02x}")).collect()
}

/// The subject of a DER certificate as RFC 2253 writes it: the last RDN
/// first, attribute types by keyword.
pub fn subject_rfc2253(der: &[u8]) -> Result<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| format!("the client certificate does not parse: {e}"))?;
    let mut rdns = Vec::new();
    for rdn in cert.subject().iter() {
        let mut attributes = Vec::new();
        for attribute in rdn.iter() {
            let oid = attribute.attr_type().to_id_string();
            let keyword = RFC2253_KEYWORDS
                .iter()
                .find(|(o, _)| *o == oid)
                .map(|(_, k)| *k);
            let value = attribute.attr_value();
            let text = match (keyword, attribute.as_str()) {
                (Some(k), Ok(s)) => format!("{k}={}", escape_rfc2253(s)),
                _ => format!("{oid}=#{}", der_hex(value.header.tag().0 as u8, value.data)),
            };
            attributes.push(text);
        }
        rdns.push(attributes.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

/// The principal of a client that showed `certificate`: `User:` and its
/// subject after `ssl.principal.mapping.rules`. `Err` when no rule
/// applies, which fails the connection as Kafka fails it.
pub fn certificate_principal(certificate: &[u8], mapper: &PrincipalMapper) -> Result<String> {
    let dn = subject_rfc2253(certificate)?;
    mapper
        .name_for(&dn)
        .map(|name| format!("User:{name}"))
        .ok_or_else(|| format!("no ssl.principal.mapping.rules rule applies to {dn:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc2253_escapes_what_it_must() {
        assert_eq!(escape_rfc2253("Acme, Inc."), "Acme\\, Inc.");
        assert_eq!(escape_rfc2253("#1 "), "\\#1\\ ");
        assert_eq!(escape_rfc2253("a+b=c"), "a\\+b=c");
        assert_eq!(escape_rfc2253("plain"), "plain");
    }

    /// A certificate and its key encrypted with "fixture-password"
    /// (tests/fixtures/tls/README.md).
    const ENCRYPTED_KEYSTORE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tls/encrypted-keystore.pem"
    );

    fn settings_with_password(password: Option<&str>) -> TlsSettings {
        TlsSettings {
            keystore: Some(KeyStore::File(ENCRYPTED_KEYSTORE.into())),
            key_password: password.map(str::to_string),
            truststore: None,
            client_auth: ClientAuth::None,
            enabled_protocols: vec![TlsVersion::Tls12, TlsVersion::Tls13],
            cipher_suites: Vec::new(),
            principal_mapping_rules: "DEFAULT".into(),
            endpoint_identification: true,
        }
    }

    #[test]
    fn an_encrypted_key_is_read_with_ssl_key_password() {
        // The decrypted key fits the certificate: the server builds.
        server_config(&settings_with_password(Some("fixture-password"))).unwrap();
        let e = server_config(&settings_with_password(None)).unwrap_err();
        assert!(e.contains("set ssl.key.password"), "{e}");
        let e = server_config(&settings_with_password(Some("wrong"))).unwrap_err();
        assert!(e.contains("cannot decrypt"), "{e}");
        // Inline, as ssl.keystore.key and ssl.keystore.certificate.chain.
        let pem = std::fs::read_to_string(ENCRYPTED_KEYSTORE).unwrap();
        let split = pem.find("-----BEGIN CERTIFICATE-----").unwrap();
        let inline = KeyStore::Inline {
            key: pem[..split].to_string(),
            chain: pem[split..].to_string(),
        };
        let (chain, key) = key_and_chain(&inline, Some("fixture-password")).unwrap();
        assert_eq!(chain.len(), 1);
        assert!(matches!(key, PrivateKeyDer::Pkcs8(_)));
    }

    #[test]
    fn der_values_are_written_in_hex() {
        assert_eq!(der_hex(0x16, b"a@b"), "1603614062");
        let long = vec![0u8; 200];
        assert!(der_hex(0x04, &long).starts_with("0481c8"));
    }
}
