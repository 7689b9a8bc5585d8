//! One SASL listener's settings, checked: its mechanisms, PLAIN's users
//! from the JAAS config, how OAUTHBEARER tokens are validated, and the
//! limits of an unauthenticated connection. Also what this broker sends
//! as a client of another broker's SASL inter-broker listener.
//!
//! A mechanism's JAAS config is looked up as Kafka looks it up:
//! `listener.name.<listener>.<mechanism>.sasl.jaas.config`, then
//! `<mechanism>.sasl.jaas.config`, then `sasl.jaas.config` (for the
//! listener, then globally).

use std::path::PathBuf;

use super::security::{
    SecuritySettings, DEFAULT_CONNECTION_FAILED_AUTHENTICATION_DELAY_MS,
    DEFAULT_INTER_BROKER_SASL_MECHANISM, DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE,
};
use crate::sasl::jaas::{LoginCredentials, SaslLogins};
use crate::sasl::jwks::SignedValidatorConfig;
use crate::sasl::jwt::UnsecuredValidatorConfig;
use crate::sasl::plain::PlainUsers;
use crate::sasl::Mechanism;

/// Kafka's validator of signed tokens: naming it (or setting the JWKS
/// URL) selects signed-token validation.
pub const KAFKA_JWT_VALIDATOR_CLASS: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler";

/// How OAUTHBEARER tokens are validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OAuthBearerValidation {
    /// Kafka's default: unsecured (`alg: none`) tokens.
    Unsecured(UnsecuredValidatorConfig),
    /// Signed tokens, checked against the keys of a JWKS file
    /// (`sasl.oauthbearer.jwks.endpoint.url` as a `file:` URL).
    Signed {
        jwks_file: PathBuf,
        config: SignedValidatorConfig,
    },
}

/// A SASL listener's settings.
#[derive(Debug, Clone)]
pub struct SaslSettings {
    pub mechanisms: Vec<Mechanism>,
    /// PLAIN's users (`user_<name>="<password>"`), when PLAIN is enabled.
    pub plain_users: PlainUsers,
    pub oauthbearer: OAuthBearerValidation,
    /// `connections.max.reauth.ms`: 0 means sessions do not expire.
    pub connections_max_reauth_ms: i64,
    /// `sasl.server.max.receive.size`.
    pub max_receive_size: usize,
    /// `connection.failed.authentication.delay.ms`.
    pub failed_authentication_delay_ms: u64,
}

fn bad(listener: &str, key: &str, why: impl std::fmt::Display) -> String {
    format!("listener {listener}, setting {key:?}: {why}")
}

/// The JAAS config of `mechanism` on `listener`, if any.
fn jaas_config<'a>(
    settings: &'a SecuritySettings,
    listener: &str,
    mechanism: Mechanism,
) -> Option<(&'a str, String)> {
    let own = format!("{}.sasl.jaas.config", mechanism.name().to_ascii_lowercase());
    settings.get(listener, &own).map(|v| (v, own)).or_else(|| {
        settings
            .get(listener, "sasl.jaas.config")
            .map(|v| (v, "sasl.jaas.config".to_string()))
    })
}

fn logins(
    settings: &SecuritySettings,
    listener: &str,
    mechanism: Mechanism,
) -> Result<SaslLogins, String> {
    match jaas_config(settings, listener, mechanism) {
        Some((text, key)) => {
            SaslLogins::from_config(text).map_err(|e| bad(listener, &key, e.to_string()))
        }
        None => Ok(SaslLogins::default()),
    }
}

fn number<T: std::str::FromStr>(
    settings: &SecuritySettings,
    listener: &str,
    key: &str,
    default: T,
) -> Result<T, String> {
    match settings.get(listener, key) {
        None => Ok(default),
        Some(v) => v
            .trim()
            .parse()
            .map_err(|_| bad(listener, key, format!("{v:?} is not a non-negative number"))),
    }
}

impl SaslSettings {
    /// The settings of SASL listener `listener`; the error names the
    /// setting to change.
    pub fn for_listener(
        settings: &SecuritySettings,
        listener: &str,
    ) -> Result<SaslSettings, String> {
        let key = "sasl.enabled.mechanisms";
        let Some(list) = settings.get(listener, key) else {
            return Err(format!(
                "listener {listener} uses SASL but names no mechanism: set sasl.enabled.mechanisms \
                 (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER), for it or for every listener \
                 (listener.name.{}.sasl.enabled.mechanisms)",
                listener.to_ascii_lowercase()
            ));
        };
        let mechanisms =
            Mechanism::parse_enabled(list).map_err(|e| bad(listener, key, e.to_string()))?;
        if mechanisms.is_empty() {
            return Err(bad(listener, key, "enables no mechanism"));
        }
        let mut plain_users = PlainUsers::new(Vec::new());
        if mechanisms.contains(&Mechanism::Plain) {
            let plain = logins(settings, listener, Mechanism::Plain)?.plain;
            match plain {
                Some(p) if !p.users.is_empty() => plain_users = p.users,
                _ => {
                    return Err(format!(
                        "listener {listener} enables PLAIN but lists no user: set \
                         listener.name.{}.plain.sasl.jaas.config to \
                         'org.apache.kafka.common.security.plain.PlainLoginModule required \
                         user_admin=\"<password>\";' (one user_<name> per user)",
                        listener.to_ascii_lowercase()
                    ))
                }
            }
        }
        let oauthbearer = oauthbearer_validation(settings, listener)?;
        let connections_max_reauth_ms: i64 =
            number(settings, listener, "connections.max.reauth.ms", 0)?;
        if connections_max_reauth_ms < 0 {
            return Err(bad(
                listener,
                "connections.max.reauth.ms",
                "must not be negative",
            ));
        }
        Ok(SaslSettings {
            mechanisms,
            plain_users,
            oauthbearer,
            connections_max_reauth_ms,
            max_receive_size: number(
                settings,
                listener,
                "sasl.server.max.receive.size",
                DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE,
            )?,
            failed_authentication_delay_ms: number(
                settings,
                listener,
                "connection.failed.authentication.delay.ms",
                DEFAULT_CONNECTION_FAILED_AUTHENTICATION_DELAY_MS,
            )?,
        })
    }
}

fn oauthbearer_validation(
    settings: &SecuritySettings,
    listener: &str,
) -> Result<OAuthBearerValidation, String> {
    let handler = settings.get(listener, "oauthbearer.sasl.server.callback.handler.class");
    let url = settings.get(listener, "sasl.oauthbearer.jwks.endpoint.url");
    if handler.is_none() && url.is_none() {
        let options = logins(settings, listener, Mechanism::OAuthBearer)?
            .oauthbearer
            .unwrap_or_default();
        return UnsecuredValidatorConfig::from_jaas_options(&options)
            .map(OAuthBearerValidation::Unsecured)
            .map_err(|e| bad(listener, "oauthbearer.sasl.jaas.config", e));
    }
    if let Some(h) = handler.filter(|h| *h != KAFKA_JWT_VALIDATOR_CLASS) {
        return Err(bad(
            listener,
            "oauthbearer.sasl.server.callback.handler.class",
            format!("{h} is not a handler pinlog has; use {KAFKA_JWT_VALIDATOR_CLASS} with sasl.oauthbearer.jwks.endpoint.url"),
        ));
    }
    let url = url.ok_or_else(|| {
        bad(
            listener,
            "sasl.oauthbearer.jwks.endpoint.url",
            "signed tokens are checked against a JWKS: set it to a file: URL of the keys",
        )
    })?;
    let jwks_file = url.strip_prefix("file://").ok_or_else(|| {
        bad(
            listener,
            "sasl.oauthbearer.jwks.endpoint.url",
            format!("{url:?}: pinlog reads the JWKS from a file (file:///path/jwks.json); fetch the provider's keys into it"),
        )
    })?;
    let mut config = SignedValidatorConfig::default();
    if let Some(a) = settings.get(listener, "sasl.oauthbearer.expected.audience") {
        config.expected_audiences = a
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect();
    }
    config.expected_issuer = settings
        .get(listener, "sasl.oauthbearer.expected.issuer")
        .map(str::to_string);
    if let Some(c) = settings.get(listener, "sasl.oauthbearer.sub.claim.name") {
        config.sub_claim = c.to_string();
    }
    if let Some(c) = settings.get(listener, "sasl.oauthbearer.scope.claim.name") {
        config.scope_claim = c.to_string();
    }
    config.clock_skew_s = number(
        settings,
        listener,
        "sasl.oauthbearer.clock.skew.seconds",
        config.clock_skew_s,
    )?;
    Ok(OAuthBearerValidation::Signed {
        jwks_file: PathBuf::from(jwks_file),
        config,
    })
}

/// What this broker sends to another broker's SASL inter-broker listener:
/// `sasl.mechanism.inter.broker.protocol` and the `username`/`password`
/// of that mechanism's JAAS config on the listener.
#[derive(Debug, Clone)]
pub struct InterBrokerSasl {
    pub mechanism: Mechanism,
    pub credentials: LoginCredentials,
}

impl InterBrokerSasl {
    pub fn for_listener(
        settings: &SecuritySettings,
        listener: &str,
    ) -> Result<InterBrokerSasl, String> {
        let key = "sasl.mechanism.inter.broker.protocol";
        let name = settings
            .get(listener, key)
            .unwrap_or(DEFAULT_INTER_BROKER_SASL_MECHANISM);
        let mechanism = Mechanism::from_name(name.trim())
            .filter(|m| *m != Mechanism::OAuthBearer)
            .ok_or_else(|| {
                bad(
                    listener,
                    key,
                    format!("{name:?}: brokers authenticate to each other with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"),
                )
            })?;
        let logins = logins(settings, listener, mechanism)?;
        let credentials = match mechanism {
            Mechanism::Plain => logins.plain.and_then(|p| p.own),
            _ => logins.scram.filter(|c| !c.username.is_empty()),
        };
        let credentials = credentials.ok_or_else(|| {
            format!(
                "listener {listener} is the inter-broker listener and uses SASL: its {} JAAS config \
                 (listener.name.{}.{}.sasl.jaas.config) needs username=\"...\" password=\"...\", \
                 the credentials this broker logs in to the others with",
                mechanism.name(),
                listener.to_ascii_lowercase(),
                mechanism.name().to_ascii_lowercase()
            )
        })?;
        Ok(InterBrokerSasl {
            mechanism,
            credentials,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> SecuritySettings {
        let mut s = SecuritySettings::default();
        for (k, v) in pairs {
            assert!(super::super::security::is_security_key(k), "{k}");
            s.set(k, v.to_string()).unwrap();
        }
        s
    }

    const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
        username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";";

    #[test]
    fn plain_users_come_from_the_listeners_jaas_config() {
        let s = settings(&[
            ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"),
            ("listener.name.sasl_ssl.plain.sasl.jaas.config", PLAIN_JAAS),
            ("connections.max.reauth.ms", "60000"),
        ]);
        let sasl = SaslSettings::for_listener(&s, "SASL_SSL").unwrap();
        assert_eq!(
            sasl.mechanisms,
            vec![Mechanism::Plain, Mechanism::ScramSha512]
        );
        assert!(sasl.plain_users.verify("alice", "alice-secret"));
        assert!(!sasl.plain_users.verify("alice", "admin-secret"));
        assert_eq!(sasl.connections_max_reauth_ms, 60_000);
        assert_eq!(sasl.max_receive_size, 524_288);
        assert_eq!(sasl.failed_authentication_delay_ms, 100);
        assert!(matches!(
            sasl.oauthbearer,
            OAuthBearerValidation::Unsecured(_)
        ));
        let own = InterBrokerSasl::for_listener(&s, "SASL_SSL").unwrap();
        assert_eq!(own.mechanism, Mechanism::Plain);
        assert_eq!(own.credentials.username, "admin");
    }

    #[test]
    fn signed_tokens_need_a_jwks_file() {
        let s = settings(&[
            ("sasl.enabled.mechanisms", "OAUTHBEARER"),
            (
                "sasl.oauthbearer.jwks.endpoint.url",
                "file:///etc/pinlog/jwks.json",
            ),
            ("sasl.oauthbearer.expected.audience", "kafka, pinlog"),
        ]);
        let sasl = SaslSettings::for_listener(&s, "SASL_PLAINTEXT").unwrap();
        match sasl.oauthbearer {
            OAuthBearerValidation::Signed { jwks_file, config } => {
                assert_eq!(jwks_file, PathBuf::from("/etc/pinlog/jwks.json"));
                assert_eq!(config.expected_audiences, vec!["kafka", "pinlog"]);
            }
            other => panic!("{other:?}"),
        }
        let s = settings(&[
            ("sasl.enabled.mechanisms", "OAUTHBEARER"),
            (
                "sasl.oauthbearer.jwks.endpoint.url",
                "https://idp.example/jwks",
            ),
        ]);
        let e = SaslSettings::for_listener(&s, "SASL_PLAINTEXT").unwrap_err();
        assert!(e.contains("from a file"), "{e}");
    }

    #[test]
    fn mistakes_name_the_setting_and_the_fix() {
        let e = SaslSettings::for_listener(&settings(&[]), "SASL_SSL").unwrap_err();
        assert!(e.contains("sasl.enabled.mechanisms"), "{e}");
        let e = SaslSettings::for_listener(
            &settings(&[("sasl.enabled.mechanisms", "GSSAPI")]),
            "SASL_SSL",
        )
        .unwrap_err();
        assert!(e.contains("GSSAPI"), "{e}");
        let e = SaslSettings::for_listener(
            &settings(&[("sasl.enabled.mechanisms", "PLAIN")]),
            "SASL_SSL",
        )
        .unwrap_err();
        assert!(e.contains("lists no user"), "{e}");
        let e = InterBrokerSasl::for_listener(
            &settings(&[("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512")]),
            "SASL_SSL",
        )
        .unwrap_err();
        assert!(e.contains("username"), "{e}");
    }
}
