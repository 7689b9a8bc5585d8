//! The TLS of the broker's listeners, reloadable: a certificate rotates
//! without a restart when `kafka-configs.sh` alters the broker's
//! `listener.name.<listener>.ssl.*` settings (per broker, as Kafka's
//! dynamic SSL settings are), and new connections are served with it at
//! once; connections already open keep theirs.
//!
//! The settings' files are read again on every alter, so re-setting the
//! same path picks up a file replaced in place, as in Kafka.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use crate::broker_config::BrokerConfig;
use crate::security::tls::server_config;
use crate::ssl_principal::PrincipalMapper;

/// One TLS listener's acceptor, replaced on a reload, and its principal
/// mapping rules (read at startup only).
pub struct TlsServing {
    acceptor: RwLock<futures_rustls::TlsAcceptor>,
    pub principal_mapper: PrincipalMapper,
}

impl TlsServing {
    /// The acceptor for a new connection. An uncontended read lock per
    /// accepted connection; never taken per request.
    pub fn acceptor(&self) -> futures_rustls::TlsAcceptor {
        self.acceptor
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// Every TLS listener of this broker, by name, shared by all shards.
pub struct ListenerCertificates {
    listeners: BTreeMap<String, Arc<TlsServing>>,
}

/// `config`'s security settings with the dynamic ones (`listener.name.*`
/// TLS settings this broker's metadata holds) over them.
fn with_dynamic(
    config: &BrokerConfig,
    dynamic: &BTreeMap<String, String>,
) -> Result<BrokerConfig, String> {
    let mut config = config.clone();
    for (name, value) in dynamic {
        config.security.set(name, value.clone())?;
    }
    Ok(config)
}

/// The server configurations of `config`'s TLS listeners, with `dynamic`
/// over the static settings.
fn acceptors(
    config: &BrokerConfig,
    dynamic: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, futures_rustls::TlsAcceptor>, String> {
    let config = with_dynamic(config, dynamic)?;
    let mut out = BTreeMap::new();
    for l in config
        .listeners
        .all
        .iter()
        .filter(|l| l.protocol.uses_tls())
    {
        let settings = config.tls_settings(&l.name, true)?;
        let server = server_config(&settings).map_err(|e| format!("listener {}: {e}", l.name))?;
        out.insert(l.name.clone(), futures_rustls::TlsAcceptor::from(server));
    }
    Ok(out)
}

impl ListenerCertificates {
    /// Every TLS listener's configuration from the static settings: a
    /// certificate that cannot be read stops the broker at startup, naming
    /// the file and the setting.
    pub fn build(config: &BrokerConfig) -> Result<ListenerCertificates, String> {
        let mut listeners = BTreeMap::new();
        for (name, acceptor) in acceptors(config, &BTreeMap::new())? {
            let settings = config.tls_settings(&name, true)?;
            let principal_mapper = PrincipalMapper::parse(&settings.principal_mapping_rules)
                .map_err(|e| format!("listener {name}: {e}"))?;
            listeners.insert(
                name,
                Arc::new(TlsServing {
                    acceptor: RwLock::new(acceptor),
                    principal_mapper,
                }),
            );
        }
        Ok(ListenerCertificates { listeners })
    }

    /// The TLS of listener `name`, if it uses TLS.
    pub fn listener(&self, name: &str) -> Option<Arc<TlsServing>> {
        self.listeners.get(name).cloned()
    }

    /// Checks that `dynamic` (the broker's dynamic TLS settings as they
    /// would be after an alter) gives every TLS listener a working
    /// configuration, reading the files they name.
    pub fn check(config: &BrokerConfig, dynamic: &BTreeMap<String, String>) -> Result<(), String> {
        acceptors(config, dynamic).map(|_| ())
    }

    /// Builds every TLS listener's configuration with `dynamic` over the
    /// static settings and, only if all build, serves new connections with
    /// them. Returns the listeners reloaded.
    pub fn reload(
        &self,
        config: &BrokerConfig,
        dynamic: &BTreeMap<String, String>,
    ) -> Result<Vec<String>, String> {
        let fresh = acceptors(config, dynamic)?;
        let mut reloaded = Vec::with_capacity(fresh.len());
        for (name, acceptor) in fresh {
            if let Some(serving) = self.listeners.get(&name) {
                *serving
                    .acceptor
                    .write()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) = acceptor;
                reloaded.push(name);
            }
        }
        Ok(reloaded)
    }
}
