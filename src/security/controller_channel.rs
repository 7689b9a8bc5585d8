//! Mutual TLS on the controller channel: the connections between the
//! controllers' listeners (`controller.listen`), which carry the metadata
//! quorum's Raft traffic, the metadata log sent to broker-only nodes, and
//! admin requests forwarded to the active controller.
//!
//! The channel speaks pinlog's own protocol, with no SASL and no
//! per-request authorization, so its one gate is the peer's certificate:
//! when `controller.listener.names` maps to SSL, both sides show a
//! certificate signed by the channel's truststore, whatever
//! `ssl.client.auth` says for the client listeners. Under an authorizer
//! the certificate's principal must also be one of `super.users`, as
//! Kafka's controllers require CLUSTER_ACTION of their peers; a static
//! list, because a restarting controller must admit its peers before it
//! has read the ACLs from the metadata log they send it.

use std::sync::Arc;

use rustls::pki_types::ServerName;

use crate::broker_config::security::ClientAuth;
use crate::broker_config::BrokerConfig;
use crate::security::tls::{certificate_principal, client_config, server_config};
use crate::ssl_principal::PrincipalMapper;

/// The controller channel's TLS, built once at startup.
pub struct ControllerChannelTls {
    /// The channel's name (`controller.listener.names`), for log lines.
    pub name: String,
    pub acceptor: futures_rustls::TlsAcceptor,
    pub connector: futures_rustls::TlsConnector,
    principal_mapper: PrincipalMapper,
    /// Under an authorizer, the principals a peer may be (`super.users`);
    /// `None` admits any certificate the truststore trusts.
    admitted: Option<Vec<String>>,
}

impl std::fmt::Debug for ControllerChannelTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerChannelTls")
            .field("name", &self.name)
            .field("admitted", &self.admitted)
            .finish_non_exhaustive()
    }
}

impl ControllerChannelTls {
    /// The channel's TLS from the settings; `None` when it runs in the
    /// clear.
    pub fn from_config(config: &BrokerConfig) -> Result<Option<Arc<Self>>, String> {
        let channel = &config.listeners.controller;
        if !channel.protocol.uses_tls() {
            return Ok(None);
        }
        let in_channel = |e: String| format!("controller channel {}: {e}", channel.name);
        let mut settings = config.tls_settings(&channel.name, true)?;
        // Every peer must show a certificate: see the module's comment.
        settings.client_auth = ClientAuth::Required;
        let server = server_config(&settings).map_err(in_channel)?;
        let client = client_config(&settings).map_err(in_channel)?;
        let principal_mapper =
            PrincipalMapper::parse(&settings.principal_mapping_rules).map_err(in_channel)?;
        Ok(Some(Arc::new(ControllerChannelTls {
            name: channel.name.clone(),
            acceptor: futures_rustls::TlsAcceptor::from(server),
            connector: futures_rustls::TlsConnector::from(client),
            principal_mapper,
            admitted: config.authorizer.as_ref().map(|a| a.super_users.clone()),
        })))
    }

    /// The principal of a peer that showed `certificate` (DER), if it may
    /// use the channel; otherwise why not, for the log.
    pub fn admit(&self, certificate: Option<&[u8]>) -> Result<String, String> {
        let certificate = certificate.ok_or("the peer showed no certificate")?;
        let principal = certificate_principal(certificate, &self.principal_mapper)?;
        admit_principal(self.admitted.as_deref(), principal)
    }

    /// The name a peer's certificate must carry for `addr` (`HOST:PORT`),
    /// when `ssl.endpoint.identification.algorithm` is https.
    pub fn server_name(addr: &str) -> Result<ServerName<'static>, String> {
        let host = addr
            .rsplit_once(':')
            .map_or(addr, |(host, _)| host)
            .trim_start_matches('[')
            .trim_end_matches(']');
        ServerName::try_from(host.to_string())
            .map_err(|e| format!("{host:?} is not a host name or address: {e}"))
    }
}

/// Whether a peer whose certificate maps to `principal` may use the
/// channel: any, or under an authorizer one of `super_users`.
fn admit_principal(super_users: Option<&[String]>, principal: String) -> Result<String, String> {
    match super_users {
        Some(users) if !users.contains(&principal) => Err(format!(
            "{principal} is not in super.users, which the controller channel admits while an \
             authorizer runs; add the nodes' certificate principals to super.users"
        )),
        _ => Ok(principal),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_an_authorizer_only_super_users_are_admitted() {
        let node = "User:CN=node-1,O=pinlog".to_string();
        assert_eq!(admit_principal(None, node.clone()), Ok(node.clone()));
        let supers = vec![node.clone(), "User:admin".to_string()];
        assert_eq!(admit_principal(Some(&supers), node.clone()), Ok(node));
        let e = admit_principal(Some(&supers), "User:CN=mallory".to_string()).unwrap_err();
        assert!(e.contains("not in super.users"), "{e}");
    }

    #[test]
    fn server_names_come_from_the_peer_address() {
        assert_eq!(
            ControllerChannelTls::server_name("127.0.0.1:9093").unwrap(),
            ServerName::try_from("127.0.0.1").unwrap()
        );
        assert_eq!(
            ControllerChannelTls::server_name("[::1]:9093").unwrap(),
            ServerName::try_from("::1").unwrap()
        );
        assert_eq!(
            ControllerChannelTls::server_name("controller-1.example:9093").unwrap(),
            ServerName::try_from("controller-1.example").unwrap()
        );
    }

    #[test]
    fn a_plaintext_channel_has_no_tls() {
        let config = BrokerConfig::load(&Default::default()).unwrap();
        assert!(ControllerChannelTls::from_config(&config)
            .unwrap()
            .is_none());
    }
}
