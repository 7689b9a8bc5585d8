//! The security settings that Kafka lets an operator give for every
//! listener or for one (`listener.name.<lowercase name>.<setting>`), and
//! the TLS settings of a listener built from them.
//!
//! Values stay text, as Kafka's are, until a listener asks for its typed
//! settings; a listener's own value wins over the global one.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The TLS settings pinlog reads, by Kafka's names.
pub const SSL_KEYS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.truststore.password",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.protocol",
    "ssl.cipher.suites",
    "ssl.principal.mapping.rules",
    "ssl.endpoint.identification.algorithm",
];

/// The SASL settings pinlog reads, by Kafka's names.
pub const SASL_KEYS: &[&str] = &[
    "sasl.enabled.mechanisms",
    "sasl.mechanism.inter.broker.protocol",
    "sasl.jaas.config",
    "sasl.server.max.receive.size",
    "connections.max.reauth.ms",
    "connection.failed.authentication.delay.ms",
    "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.scope.claim.name",
    "sasl.oauthbearer.clock.skew.seconds",
];

/// Settings Kafka takes per SASL mechanism, as `<mechanism>.<setting>`
/// (`plain.sasl.jaas.config`, usually under a listener's prefix).
pub const SASL_MECHANISM_KEYS: &[&str] =
    &["sasl.jaas.config", "sasl.server.callback.handler.class"];

/// Kafka's `sasl.server.max.receive.size` default: the largest frame an
/// unauthenticated client may send.
pub const DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE: usize = 524_288;
/// Kafka's `connection.failed.authentication.delay.ms` default.
pub const DEFAULT_CONNECTION_FAILED_AUTHENTICATION_DELAY_MS: u64 = 100;
/// Kafka's `sasl.mechanism.inter.broker.protocol` default is GSSAPI, which
/// pinlog does not serve; a SASL inter-broker listener names its
/// mechanism, or gets this one.
pub const DEFAULT_INTER_BROKER_SASL_MECHANISM: &str = "PLAIN";

/// Kafka's `ssl.enabled.protocols` default.
pub const DEFAULT_SSL_ENABLED_PROTOCOLS: &str = "TLSv1.2,TLSv1.3";
/// Kafka's `ssl.principal.mapping.rules` default.
pub const DEFAULT_SSL_PRINCIPAL_MAPPING_RULES: &str = "DEFAULT";
/// Kafka's `ssl.endpoint.identification.algorithm` default: clients check
/// that the certificate names the host they connect to.
pub const DEFAULT_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM: &str = "https";

const LISTENER_PREFIX: &str = "listener.name.";

/// Security settings as given: global ones by their name, per-listener
/// ones under `listener.name.<lowercase name>.`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecuritySettings {
    values: BTreeMap<String, String>,
}

/// Whether `setting` (without a listener prefix) is one this module keeps.
fn known_setting(setting: &str) -> bool {
    if SSL_KEYS.contains(&setting) || SASL_KEYS.contains(&setting) {
        return true;
    }
    // `<mechanism>.sasl.jaas.config` and the like.
    SASL_MECHANISM_KEYS.iter().any(|k| {
        setting.strip_suffix(k).is_some_and(|prefix| {
            prefix.strip_suffix('.').is_some_and(|m| {
                crate::sasl::Mechanism::from_name(&m.to_ascii_uppercase()).is_some()
            })
        })
    })
}

/// Whether `key` is a setting this module keeps: a known one, given
/// globally or for a listener.
pub fn is_security_key(key: &str) -> bool {
    split_listener(key).is_some_and(|(_, setting)| known_setting(setting))
}

/// `listener.name.ssl.ssl.keystore.location` as (Some("ssl"),
/// "ssl.keystore.location"); a global key as (None, key).
fn split_listener(key: &str) -> Option<(Option<&str>, &str)> {
    match key.strip_prefix(LISTENER_PREFIX) {
        Some(rest) => {
            let (listener, setting) = rest.split_once('.')?;
            Some((Some(listener), setting))
        }
        None => Some((None, key)),
    }
}

impl SecuritySettings {
    /// Keeps one setting; `key` must pass `is_security_key`.
    pub fn set(&mut self, key: &str, value: String) -> Result<(), String> {
        match split_listener(key) {
            Some((listener, setting)) if known_setting(setting) => {
                if let Some(l) = listener {
                    if l.chars().any(|c| c.is_ascii_uppercase()) {
                        return Err(format!(
                            "setting {key:?}: Kafka writes the listener name in lower case: \
                             {LISTENER_PREFIX}{}.{setting}",
                            l.to_ascii_lowercase()
                        ));
                    }
                }
                self.values.insert(key.to_string(), value);
                Ok(())
            }
            _ => Err(format!("setting {key:?} is not a security setting")),
        }
    }

    /// `setting` for `listener` (its upper-case name): the listener's own
    /// value, else the global one.
    pub fn get(&self, listener: &str, setting: &str) -> Option<&str> {
        let own = format!(
            "{LISTENER_PREFIX}{}.{setting}",
            listener.to_ascii_lowercase()
        );
        self.values
            .get(&own)
            .or_else(|| self.values.get(setting))
            .map(String::as_str)
    }

    /// Per-listener settings naming a listener that does not exist, so a
    /// misspelt name is refused rather than ignored.
    pub fn unknown_listeners(&self, listeners: &[&str]) -> Vec<String> {
        self.values
            .keys()
            .filter_map(|k| split_listener(k)?.0)
            .filter(|l| !listeners.iter().any(|n| n.eq_ignore_ascii_case(l)))
            .map(str::to_string)
            .collect()
    }
}

/// `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Requested,
    Required,
}

/// A TLS protocol version `ssl.enabled.protocols` may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

/// PEM text from a file or given inline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PemSource {
    File(PathBuf),
    Inline(String),
}

/// The broker's own certificate chain and private key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyStore {
    /// `ssl.keystore.location`: one PEM file holding the key and the chain.
    File(PathBuf),
    /// `ssl.keystore.certificate.chain` and `ssl.keystore.key`.
    Inline { chain: String, key: String },
}

/// One listener's TLS settings, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    pub keystore: Option<KeyStore>,
    /// `ssl.key.password`: the key is an encrypted PKCS#8 key.
    pub key_password: Option<String>,
    /// `ssl.truststore.*`: the CAs whose certificates are trusted; without
    /// one, the system's roots (clients) or none (client certificates).
    pub truststore: Option<PemSource>,
    pub client_auth: ClientAuth,
    pub enabled_protocols: Vec<TlsVersion>,
    /// `ssl.cipher.suites`, IANA names; empty allows every suite of the
    /// enabled protocols.
    pub cipher_suites: Vec<String>,
    /// `ssl.principal.mapping.rules`, as given.
    pub principal_mapping_rules: String,
    /// `ssl.endpoint.identification.algorithm` is `https`: a client checks
    /// that the peer's certificate names the host it connected to.
    pub endpoint_identification: bool,
}

fn bad(listener: &str, key: &str, why: impl std::fmt::Display) -> String {
    format!("listener {listener}, setting {key:?}: {why}")
}

fn pem_only(listener: &str, key: &str, value: Option<&str>) -> Result<(), String> {
    match value {
        None => Ok(()),
        Some(t) if t.eq_ignore_ascii_case("PEM") => Ok(()),
        Some(t) => Err(bad(
            listener,
            key,
            format!(
                "pinlog reads PEM stores, not {t}; convert it, for example with \
                 `openssl pkcs12 -in store.p12 -nodes -out store.pem`, and set {key} = \"PEM\""
            ),
        )),
    }
}

impl TlsSettings {
    /// The TLS settings of `listener`. `server` asks for the broker's side
    /// of the listener, which needs a keystore; a client of it (another
    /// broker) may go without one.
    pub fn for_listener(
        settings: &SecuritySettings,
        listener: &str,
        server: bool,
    ) -> Result<TlsSettings, String> {
        let get = |k: &str| settings.get(listener, k);
        pem_only(listener, "ssl.keystore.type", get("ssl.keystore.type"))?;
        pem_only(listener, "ssl.truststore.type", get("ssl.truststore.type"))?;
        if get("ssl.keystore.password").is_some() {
            return Err(bad(
                listener,
                "ssl.keystore.password",
                "a PEM keystore has no store password; give the key's password as ssl.key.password",
            ));
        }
        if get("ssl.truststore.password").is_some() {
            return Err(bad(
                listener,
                "ssl.truststore.password",
                "a PEM truststore has no password; remove the setting",
            ));
        }
        let keystore = match (
            get("ssl.keystore.location"),
            get("ssl.keystore.certificate.chain"),
            get("ssl.keystore.key"),
        ) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err(bad(
                    listener,
                    "ssl.keystore.location",
                    "give the keystore as a file or inline (ssl.keystore.certificate.chain and ssl.keystore.key), not both",
                ))
            }
            (Some(path), None, None) => Some(KeyStore::File(PathBuf::from(path))),
            (None, Some(chain), Some(key)) => Some(KeyStore::Inline {
                chain: chain.to_string(),
                key: key.to_string(),
            }),
            (None, Some(_), None) | (None, None, Some(_)) => {
                return Err(bad(
                    listener,
                    "ssl.keystore.key",
                    "an inline keystore needs both ssl.keystore.certificate.chain and ssl.keystore.key",
                ))
            }
            (None, None, None) => None,
        };
        if server && keystore.is_none() {
            return Err(format!(
                "listener {listener} uses TLS but has no certificate: set ssl.keystore.location \
                 (a PEM file with the private key and the certificate chain), or \
                 ssl.keystore.certificate.chain and ssl.keystore.key, for it or for every listener \
                 (listener.name.{}.ssl.keystore.location)",
                listener.to_ascii_lowercase()
            ));
        }
        let truststore = match (
            get("ssl.truststore.location"),
            get("ssl.truststore.certificates"),
        ) {
            (Some(_), Some(_)) => return Err(bad(
                listener,
                "ssl.truststore.location",
                "give the truststore as a file or inline (ssl.truststore.certificates), not both",
            )),
            (Some(path), None) => Some(PemSource::File(PathBuf::from(path))),
            (None, Some(pem)) => Some(PemSource::Inline(pem.to_string())),
            (None, None) => None,
        };
        let client_auth = match get("ssl.client.auth").map(str::trim) {
            None | Some("none") => ClientAuth::None,
            Some("requested") => ClientAuth::Requested,
            Some("required") => ClientAuth::Required,
            Some(other) => {
                return Err(bad(
                    listener,
                    "ssl.client.auth",
                    format!("{other:?} is not none, requested or required"),
                ))
            }
        };
        if server && client_auth != ClientAuth::None && truststore.is_none() {
            return Err(bad(
                listener,
                "ssl.client.auth",
                "client certificates are checked against ssl.truststore.location (or \
                 ssl.truststore.certificates): set the CA that signs them",
            ));
        }
        let mut enabled_protocols = Vec::new();
        for p in get("ssl.enabled.protocols")
            .unwrap_or(DEFAULT_SSL_ENABLED_PROTOCOLS)
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let v = match p {
                "TLSv1.2" => TlsVersion::Tls12,
                "TLSv1.3" => TlsVersion::Tls13,
                other => {
                    return Err(bad(
                        listener,
                        "ssl.enabled.protocols",
                        format!("{other:?} is not enabled here: pinlog speaks TLSv1.2 and TLSv1.3"),
                    ))
                }
            };
            if !enabled_protocols.contains(&v) {
                enabled_protocols.push(v);
            }
        }
        if enabled_protocols.is_empty() {
            return Err(bad(
                listener,
                "ssl.enabled.protocols",
                "enables no protocol; use TLSv1.2,TLSv1.3",
            ));
        }
        enabled_protocols.sort();
        let cipher_suites = get("ssl.cipher.suites")
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let principal_mapping_rules = get("ssl.principal.mapping.rules")
            .unwrap_or(DEFAULT_SSL_PRINCIPAL_MAPPING_RULES)
            .to_string();
        crate::ssl_principal::PrincipalMapper::parse(&principal_mapping_rules)
            .map_err(|e| bad(listener, "ssl.principal.mapping.rules", e))?;
        let endpoint_identification = match get("ssl.endpoint.identification.algorithm")
            .unwrap_or(DEFAULT_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM)
            .trim()
        {
            "" => false,
            a if a.eq_ignore_ascii_case("https") => true,
            other => {
                return Err(bad(
                    listener,
                    "ssl.endpoint.identification.algorithm",
                    format!("{other:?} is not https or empty"),
                ))
            }
        };
        Ok(TlsSettings {
            keystore,
            key_password: get("ssl.key.password").map(str::to_string),
            truststore,
            client_auth,
            enabled_protocols,
            cipher_suites,
            principal_mapping_rules,
            endpoint_identification,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> SecuritySettings {
        let mut s = SecuritySettings::default();
        for (k, v) in pairs {
            assert!(is_security_key(k), "{k}");
            s.set(k, v.to_string()).unwrap();
        }
        s
    }

    #[test]
    fn a_listeners_own_setting_wins_over_the_global_one() {
        let s = settings(&[
            ("ssl.keystore.location", "/etc/pinlog/broker.pem"),
            (
                "listener.name.internal.ssl.keystore.location",
                "/etc/pinlog/internal.pem",
            ),
        ]);
        assert_eq!(
            s.get("INTERNAL", "ssl.keystore.location"),
            Some("/etc/pinlog/internal.pem")
        );
        assert_eq!(
            s.get("SSL", "ssl.keystore.location"),
            Some("/etc/pinlog/broker.pem")
        );
        assert_eq!(s.unknown_listeners(&["SSL"]), vec!["internal".to_string()]);
        assert!(s.unknown_listeners(&["SSL", "INTERNAL"]).is_empty());
    }

    #[test]
    fn unknown_and_upper_case_keys_are_refused() {
        assert!(!is_security_key("ssl.keystore.locaton"));
        assert!(!is_security_key("listener.name.ssl.num.partitions"));
        let mut s = SecuritySettings::default();
        let e = s
            .set("listener.name.SSL.ssl.keystore.location", "x".into())
            .unwrap_err();
        assert!(e.contains("lower case"), "{e}");
    }

    #[test]
    fn tls_settings_take_kafkas_defaults() {
        let s = settings(&[("ssl.keystore.location", "/k.pem")]);
        let t = TlsSettings::for_listener(&s, "SSL", true).unwrap();
        assert_eq!(t.keystore, Some(KeyStore::File("/k.pem".into())));
        assert_eq!(t.client_auth, ClientAuth::None);
        assert_eq!(
            t.enabled_protocols,
            vec![TlsVersion::Tls12, TlsVersion::Tls13]
        );
        assert!(t.cipher_suites.is_empty());
        assert_eq!(t.principal_mapping_rules, "DEFAULT");
        assert!(t.endpoint_identification);
    }

    #[test]
    fn inline_pem_and_mutual_tls() {
        let s = settings(&[
            (
                "ssl.keystore.certificate.chain",
                "-----BEGIN CERTIFICATE-----",
            ),
            ("ssl.keystore.key", "-----BEGIN PRIVATE KEY-----"),
            ("ssl.truststore.certificates", "-----BEGIN CERTIFICATE-----"),
            ("ssl.client.auth", "required"),
            ("ssl.enabled.protocols", "TLSv1.3"),
            ("ssl.endpoint.identification.algorithm", ""),
        ]);
        let t = TlsSettings::for_listener(&s, "SSL", true).unwrap();
        assert!(matches!(t.keystore, Some(KeyStore::Inline { .. })));
        assert!(matches!(t.truststore, Some(PemSource::Inline(_))));
        assert_eq!(t.client_auth, ClientAuth::Required);
        assert_eq!(t.enabled_protocols, vec![TlsVersion::Tls13]);
        assert!(!t.endpoint_identification);
    }

    #[test]
    fn mistakes_name_the_setting_and_the_fix() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[], "has no certificate"),
            (
                &[
                    ("ssl.keystore.location", "/k.pem"),
                    ("ssl.keystore.type", "JKS"),
                ],
                "convert it",
            ),
            (
                &[
                    ("ssl.keystore.location", "/k.pem"),
                    ("ssl.keystore.password", "x"),
                ],
                "ssl.key.password",
            ),
            (
                &[
                    ("ssl.keystore.location", "/k.pem"),
                    ("ssl.keystore.key", "x"),
                ],
                "not both",
            ),
            (&[("ssl.keystore.key", "x")], "needs both"),
            (
                &[
                    ("ssl.keystore.location", "/k.pem"),
                    ("ssl.client.auth", "required"),
                ],
                "signs them",
            ),
            (
                &[
                    ("ssl.keystore.location", "/k.pem"),
                    ("ssl.client.auth", "always"),
                ],
                "none, requested or required",
            ),
            (
                &[
                    ("ssl.keystore.location", "/k.pem"),
                    ("ssl.enabled.protocols", "TLSv1.1"),
                ],
                "TLSv1.2 and TLSv1.3",
            ),
            (
                &[
                    ("ssl.keystore.location", "/k.pem"),
                    ("ssl.principal.mapping.rules", "RULE:^CN=(.*)$"),
                ],
                "ssl.principal.mapping.rules",
            ),
        ];
        for (pairs, want) in cases {
            let e = TlsSettings::for_listener(&settings(pairs), "SSL", true).unwrap_err();
            assert!(e.contains(want), "{pairs:?}: {e}");
        }
        // A client side (another broker connecting) needs no keystore.
        assert!(TlsSettings::for_listener(&settings(&[]), "SSL", false).is_ok());
    }
}
