//! Named listeners, as Kafka names them: `listeners`,
//! `advertised.listeners`, `listener.security.protocol.map` and
//! `inter.broker.listener.name` (or `security.inter.broker.protocol`).
//!
//! A listener is a name (`PLAINTEXT`, `SSL`, `INTERNAL`, ...), an address
//! to bind, an address to advertise, and a security protocol taken from the
//! map by its name. `--listen HOST:PORT` is the shorthand for one
//! PLAINTEXT listener, and with no setting at all the broker has exactly
//! that listener on 127.0.0.1:9092.

use std::collections::BTreeMap;
use std::net::SocketAddr;

/// The listener `--listen` and the zero-config broker define.
pub const DEFAULT_LISTENER_NAME: &str = "PLAINTEXT";
/// Kafka's usual `controller.listener.names`: the name the controller
/// channel's security protocol and `listener.name.controller.*` settings
/// are found under.
pub const DEFAULT_CONTROLLER_LISTENER_NAME: &str = "CONTROLLER";

/// Kafka's `SecurityProtocol`, with its ids (BrokerRegistration carries
/// them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    /// Kafka's id of the protocol.
    pub fn id(self) -> i16 {
        match self {
            SecurityProtocol::Plaintext => 0,
            SecurityProtocol::Ssl => 1,
            SecurityProtocol::SaslPlaintext => 2,
            SecurityProtocol::SaslSsl => 3,
        }
    }

    pub fn from_id(id: i16) -> Option<SecurityProtocol> {
        SecurityProtocol::ALL.into_iter().find(|p| p.id() == id)
    }

    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    pub fn parse(s: &str) -> Option<SecurityProtocol> {
        SecurityProtocol::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
    }

    /// Whether connections on this protocol are encrypted with TLS.
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Whether clients authenticate with SASL before anything else.
    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

impl std::fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One listener, settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    /// Upper case, as Kafka normalizes it.
    pub name: String,
    pub bind: SocketAddr,
    pub advertised_host: String,
    pub advertised_port: u16,
    pub protocol: SecurityProtocol,
}

impl Listener {
    /// `HOST:PORT` clients are told to connect to.
    pub fn advertised(&self) -> String {
        format!("{}:{}", self.advertised_host, self.advertised_port)
    }
}

/// The listener settings as given, before they are settled.
#[derive(Debug, Clone, Default)]
pub struct ListenerSettings {
    /// `listeners`.
    pub listeners: Option<String>,
    /// `advertised.listeners`.
    pub advertised_listeners: Option<String>,
    /// `listener.security.protocol.map`.
    pub protocol_map: Option<String>,
    /// `inter.broker.listener.name`.
    pub inter_broker_listener_name: Option<String>,
    /// `security.inter.broker.protocol`: names the listener of that name.
    pub inter_broker_protocol: Option<String>,
    /// `listen` (the file's key, or `--listen`): one PLAINTEXT listener.
    pub listen: Option<String>,
    /// `advertise` (or `--advertise`): the PLAINTEXT listener's advertised
    /// address.
    pub advertise: Option<String>,
    /// `controller.listener.names`.
    pub controller_listener_names: Option<String>,
}

/// The controller channel (pinlog's own protocol on `controller.listen`):
/// the name its settings are found under, and whether it runs in the clear
/// or over mutual TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerListener {
    /// Upper case; `listener.name.<lower case>.ssl.*` configure it.
    pub name: String,
    /// PLAINTEXT or SSL: the channel authenticates peers by certificate,
    /// not by SASL.
    pub protocol: SecurityProtocol,
}

/// The listeners, settled: every one bound and advertised, with its
/// protocol; and the one other brokers connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listeners {
    pub all: Vec<Listener>,
    /// `inter.broker.listener.name`.
    pub inter_broker: String,
    /// `controller.listener.names`.
    pub controller: ControllerListener,
}

impl Listeners {
    pub fn get(&self, name: &str) -> Option<&Listener> {
        self.all.iter().find(|l| l.name == name)
    }

    /// The listener replica fetchers and coordinators connect to.
    pub fn inter_broker(&self) -> &Listener {
        self.get(&self.inter_broker)
            .expect("settling checks the inter-broker listener exists")
    }
}

fn bad(key: &str, why: impl std::fmt::Display) -> String {
    format!("setting {key:?}: {why}")
}

/// `NAME://HOST:PORT,...` as (name, host, port), names upper-cased.
fn parse_list(key: &str, s: &str) -> Result<Vec<(String, String, u16)>, String> {
    let mut out: Vec<(String, String, u16)> = Vec::new();
    for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, address) = entry.split_once("://").ok_or_else(|| {
            bad(
                key,
                format!(
                    "{entry:?} is not NAME://HOST:PORT (for example PLAINTEXT://127.0.0.1:9092)"
                ),
            )
        })?;
        let name = name.trim().to_ascii_uppercase();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(bad(
                key,
                format!("{entry:?}: {name:?} is not a listener name"),
            ));
        }
        let (host, port) = address
            .rsplit_once(':')
            .ok_or_else(|| bad(key, format!("{entry:?} has no port")))?;
        let port: u16 = port
            .parse()
            .map_err(|_| bad(key, format!("{entry:?}: {port:?} is not a port")))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if out.iter().any(|(n, _, _)| *n == name) {
            return Err(bad(key, format!("listener {name} is named twice")));
        }
        out.push((name, host.to_string(), port));
    }
    if out.is_empty() {
        return Err(bad(key, "names no listener"));
    }
    Ok(out)
}

/// `NAME:PROTOCOL,...`; Kafka's default maps the four protocols' names to
/// themselves.
fn parse_protocol_map(s: Option<&str>) -> Result<BTreeMap<String, SecurityProtocol>, String> {
    let key = "listener.security.protocol.map";
    let Some(s) = s else {
        return Ok(SecurityProtocol::ALL
            .into_iter()
            .map(|p| (p.name().to_string(), p))
            .collect());
    };
    let mut map = BTreeMap::new();
    for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, protocol) = entry
            .split_once(':')
            .ok_or_else(|| bad(key, format!("{entry:?} is not NAME:PROTOCOL")))?;
        let protocol = SecurityProtocol::parse(protocol).ok_or_else(|| {
            bad(
                key,
                format!(
                    "{protocol:?} in {entry:?} is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"
                ),
            )
        })?;
        if map
            .insert(name.trim().to_ascii_uppercase(), protocol)
            .is_some()
        {
            return Err(bad(key, format!("{name} is mapped twice")));
        }
    }
    Ok(map)
}

fn bind_address(key: &str, name: &str, host: &str, port: u16) -> Result<SocketAddr, String> {
    // Kafka binds every interface for an empty host.
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    let ip: std::net::IpAddr = host.parse().map_err(|_| {
        bad(
            key,
            format!(
                "listener {name}: {host:?} is not an IP address; pinlog binds numeric addresses \
                 (use 0.0.0.0 for every interface, and put the name in advertised.listeners)"
            ),
        )
    })?;
    Ok(SocketAddr::new(ip, port))
}

/// Settles the listeners from what was given.
pub fn settle(s: &ListenerSettings) -> Result<Listeners, String> {
    let protocols = parse_protocol_map(s.protocol_map.as_deref())?;
    let mut given: Vec<(String, String, u16)> = match &s.listeners {
        Some(text) => parse_list("listeners", text)?,
        None => vec![(
            DEFAULT_LISTENER_NAME.to_string(),
            "127.0.0.1".to_string(),
            9092,
        )],
    };
    if let Some(listen) = &s.listen {
        let addr: SocketAddr = listen.parse().map_err(|e| {
            bad(
                "listen",
                format!("{listen:?} is not HOST:PORT with a numeric host ({e})"),
            )
        })?;
        match given
            .iter_mut()
            .find(|(n, _, _)| n == DEFAULT_LISTENER_NAME)
        {
            Some(entry) => {
                entry.1 = addr.ip().to_string();
                entry.2 = addr.port();
            }
            None => {
                return Err(bad(
                    "listen",
                    "the listeners setting names no PLAINTEXT listener for --listen to move; \
                     change the address in listeners instead",
                ))
            }
        }
    }
    let mut all = Vec::with_capacity(given.len());
    for (name, host, port) in &given {
        let protocol = *protocols.get(name).ok_or_else(|| {
            bad(
                "listener.security.protocol.map",
                format!(
                    "listener {name} has no security protocol; add {name}:PLAINTEXT (or SSL, \
                     SASL_PLAINTEXT, SASL_SSL) to listener.security.protocol.map"
                ),
            )
        })?;
        let bind = bind_address("listeners", name, host, *port)?;
        // Until advertised.listeners says otherwise, a listener advertises
        // where it binds; an unspecified address is no place to connect to.
        let advertised_host = if bind.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            bind.ip().to_string()
        };
        all.push(Listener {
            name: name.clone(),
            bind,
            advertised_host,
            advertised_port: *port,
            protocol,
        });
    }
    if let Some(text) = &s.advertised_listeners {
        for (name, host, port) in parse_list("advertised.listeners", text)? {
            let listener = all.iter_mut().find(|l| l.name == name).ok_or_else(|| {
                bad(
                    "advertised.listeners",
                    format!(
                        "{name} is not in listeners; advertise only listeners the broker binds"
                    ),
                )
            })?;
            if host.is_empty() || host == "0.0.0.0" || host == "::" {
                return Err(bad(
                    "advertised.listeners",
                    format!("listener {name} advertises {host:?}, where no client can connect; name this machine's host"),
                ));
            }
            listener.advertised_host = host;
            listener.advertised_port = port;
        }
    }
    if let Some(advertise) = &s.advertise {
        let listener = all
            .iter_mut()
            .find(|l| l.name == DEFAULT_LISTENER_NAME)
            .ok_or_else(|| {
                bad(
                    "advertise",
                    "there is no PLAINTEXT listener to advertise; use advertised.listeners",
                )
            })?;
        let (host, port) = advertise
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
            .ok_or_else(|| bad("advertise", format!("{advertise:?} is not HOST:PORT")))?;
        listener.advertised_host = host.to_string();
        listener.advertised_port = port;
    }
    let inter_broker = match (&s.inter_broker_listener_name, &s.inter_broker_protocol) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "inter.broker.listener.name",
                "set inter.broker.listener.name or security.inter.broker.protocol, not both",
            ))
        }
        (Some(name), None) => name.trim().to_ascii_uppercase(),
        (None, Some(protocol)) => {
            let p = SecurityProtocol::parse(protocol).ok_or_else(|| {
                bad(
                    "security.inter.broker.protocol",
                    format!("{protocol:?} is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"),
                )
            })?;
            p.name().to_string()
        }
        // Kafka's default names the PLAINTEXT listener; a broker without
        // one uses its first listener rather than refusing to start.
        (None, None) => all
            .iter()
            .find(|l| l.name == DEFAULT_LISTENER_NAME)
            .unwrap_or(&all[0])
            .name
            .clone(),
    };
    if !all.iter().any(|l| l.name == inter_broker) {
        let names: Vec<&str> = all.iter().map(|l| l.name.as_str()).collect();
        return Err(bad(
            "inter.broker.listener.name",
            format!(
                "{inter_broker} is not a listener (the listeners are {}); name one of them",
                names.join(", ")
            ),
        ));
    }
    let mut ports: Vec<SocketAddr> = all.iter().map(|l| l.bind).collect();
    ports.sort();
    if let Some(w) = ports.windows(2).find(|w| w[0] == w[1]) {
        return Err(bad(
            "listeners",
            format!("two listeners bind {}; give each its own port", w[0]),
        ));
    }
    let controller = settle_controller(s, &protocols, &all)?;
    Ok(Listeners {
        all,
        inter_broker,
        controller,
    })
}

/// The controller channel's name and protocol. Kafka lists the controller
/// listener in `listeners` too; pinlog's controllers have their own
/// address (`controller.listen`) and protocol, so the name only selects
/// the protocol from the map (PLAINTEXT when the map does not name it) and
/// the `listener.name.<name>.ssl.*` settings.
fn settle_controller(
    s: &ListenerSettings,
    protocols: &BTreeMap<String, SecurityProtocol>,
    all: &[Listener],
) -> Result<ControllerListener, String> {
    let key = "controller.listener.names";
    let name = match &s.controller_listener_names {
        None => DEFAULT_CONTROLLER_LISTENER_NAME.to_string(),
        Some(names) => {
            let names: Vec<&str> = names
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .collect();
            match names.as_slice() {
                [one] => one.to_ascii_uppercase(),
                [] => return Err(bad(key, "names no listener")),
                _ => return Err(bad(
                    key,
                    "pinlog's controllers have one channel (controller.listen); name one listener",
                )),
            }
        }
    };
    if all.iter().any(|l| l.name == name) {
        return Err(bad(
            key,
            format!(
                "{name} is also in listeners, which serve Kafka clients; pinlog's controllers \
                 listen on controller.listen, so give the controller channel a name of its own \
                 (the default is {DEFAULT_CONTROLLER_LISTENER_NAME})"
            ),
        ));
    }
    let protocol = protocols
        .get(&name)
        .copied()
        .unwrap_or(SecurityProtocol::Plaintext);
    if protocol.uses_sasl() {
        return Err(bad(
            "listener.security.protocol.map",
            format!(
                "the controller channel {name} is mapped to {protocol}; it authenticates peers \
                 by certificate: map {name} to SSL (mutual TLS) or PLAINTEXT"
            ),
        ));
    }
    Ok(ControllerListener { name, protocol })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settle_str(listeners: &str) -> Result<Listeners, String> {
        settle(&ListenerSettings {
            listeners: Some(listeners.to_string()),
            ..ListenerSettings::default()
        })
    }

    #[test]
    fn zero_config_is_one_plaintext_listener() {
        let l = settle(&ListenerSettings::default()).unwrap();
        assert_eq!(l.all.len(), 1);
        assert_eq!(l.inter_broker().name, "PLAINTEXT");
        assert_eq!(l.all[0].advertised(), "127.0.0.1:9092");
        assert_eq!(l.all[0].protocol, SecurityProtocol::Plaintext);
    }

    #[test]
    fn listen_moves_the_plaintext_listener_and_advertise_its_address() {
        let l = settle(&ListenerSettings {
            listen: Some("0.0.0.0:9999".into()),
            advertise: Some("broker-1.example:9999".into()),
            ..ListenerSettings::default()
        })
        .unwrap();
        assert_eq!(l.all[0].bind.to_string(), "0.0.0.0:9999");
        assert_eq!(l.all[0].advertised(), "broker-1.example:9999");
        let e = settle(&ListenerSettings {
            listeners: Some("SSL://127.0.0.1:9093".into()),
            listen: Some("127.0.0.1:9092".into()),
            ..ListenerSettings::default()
        })
        .unwrap_err();
        assert!(e.contains("no PLAINTEXT listener"), "{e}");
    }

    #[test]
    fn the_controller_channel_takes_its_protocol_from_the_map() {
        let l = settle(&ListenerSettings::default()).unwrap();
        assert_eq!(l.controller.name, "CONTROLLER");
        assert_eq!(l.controller.protocol, SecurityProtocol::Plaintext);
        let l = settle(&ListenerSettings {
            listeners: Some("SASL_SSL://127.0.0.1:9092".into()),
            protocol_map: Some("SASL_SSL:SASL_SSL,QUORUM:SSL".into()),
            controller_listener_names: Some("quorum".into()),
            ..ListenerSettings::default()
        })
        .unwrap();
        assert_eq!(l.controller.name, "QUORUM");
        assert_eq!(l.controller.protocol, SecurityProtocol::Ssl);
        let refused = |names: &str, map: &str| {
            settle(&ListenerSettings {
                protocol_map: Some(map.into()),
                controller_listener_names: Some(names.into()),
                ..ListenerSettings::default()
            })
            .unwrap_err()
        };
        let e = refused("CONTROLLER", "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL");
        assert!(e.contains("map CONTROLLER to SSL"), "{e}");
        let e = refused("PLAINTEXT", "PLAINTEXT:PLAINTEXT");
        assert!(e.contains("also in listeners"), "{e}");
        let e = refused("A,B", "PLAINTEXT:PLAINTEXT");
        assert!(e.contains("name one listener"), "{e}");
    }

    #[test]
    fn kafkas_listener_settings_settle_with_its_defaults() {
        let l = settle(&ListenerSettings {
            listeners: Some(
                "PLAINTEXT://127.0.0.1:9092, ssl://:9093,INTERNAL://10.0.0.5:9094".into(),
            ),
            advertised_listeners: Some(
                "SSL://kafka-1.example:19093,INTERNAL://10.0.0.5:9094".into(),
            ),
            protocol_map: Some("PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:SASL_SSL".into()),
            inter_broker_listener_name: Some("internal".into()),
            ..ListenerSettings::default()
        })
        .unwrap();
        assert_eq!(l.all.len(), 3);
        let ssl = l.get("SSL").unwrap();
        assert_eq!(ssl.bind.to_string(), "0.0.0.0:9093");
        assert_eq!(ssl.advertised(), "kafka-1.example:19093");
        assert_eq!(ssl.protocol, SecurityProtocol::Ssl);
        assert_eq!(l.inter_broker().protocol, SecurityProtocol::SaslSsl);
        assert_eq!(l.get("PLAINTEXT").unwrap().advertised(), "127.0.0.1:9092");
    }

    #[test]
    fn the_inter_broker_listener_defaults_to_plaintext_or_the_first() {
        let l = settle_str("SSL://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092").unwrap();
        assert_eq!(l.inter_broker, "PLAINTEXT");
        let l = settle_str("SSL://127.0.0.1:9093,SASL_SSL://127.0.0.1:9094").unwrap();
        assert_eq!(l.inter_broker, "SSL");
        let l = settle(&ListenerSettings {
            listeners: Some("SSL://127.0.0.1:9093,SASL_SSL://127.0.0.1:9094".into()),
            inter_broker_protocol: Some("SASL_SSL".into()),
            ..ListenerSettings::default()
        })
        .unwrap();
        assert_eq!(l.inter_broker, "SASL_SSL");
    }

    #[test]
    fn mistakes_are_refused_with_what_to_change() {
        let cases = [
            ("PLAINTEXT:127.0.0.1:9092", "NAME://HOST:PORT"),
            ("PLAINTEXT://127.0.0.1", "no port"),
            ("PLAINTEXT://127.0.0.1:x", "not a port"),
            ("CLIENT://127.0.0.1:9092", "listener.security.protocol.map"),
            ("PLAINTEXT://localhost:9092", "not an IP address"),
            (
                "PLAINTEXT://127.0.0.1:9092,plaintext://127.0.0.1:9093",
                "named twice",
            ),
            (
                "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9092",
                "two listeners bind",
            ),
        ];
        for (text, want) in cases {
            let e = settle_str(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
        let e = settle(&ListenerSettings {
            listeners: Some("PLAINTEXT://127.0.0.1:9092".into()),
            advertised_listeners: Some("SSL://h:1".into()),
            ..ListenerSettings::default()
        })
        .unwrap_err();
        assert!(e.contains("not in listeners"), "{e}");
        let e = settle(&ListenerSettings {
            listeners: Some("PLAINTEXT://0.0.0.0:9092".into()),
            advertised_listeners: Some("PLAINTEXT://0.0.0.0:9092".into()),
            ..ListenerSettings::default()
        })
        .unwrap_err();
        assert!(e.contains("no client can connect"), "{e}");
        let e = settle(&ListenerSettings {
            inter_broker_listener_name: Some("REPLICATION".into()),
            ..ListenerSettings::default()
        })
        .unwrap_err();
        assert!(e.contains("not a listener"), "{e}");
        let e = settle(&ListenerSettings {
            protocol_map: Some("PLAINTEXT:TLS".into()),
            ..ListenerSettings::default()
        })
        .unwrap_err();
        assert!(e.contains("not PLAINTEXT, SSL"), "{e}");
    }

    #[test]
    fn protocol_ids_are_kafkas() {
        assert_eq!(SecurityProtocol::Plaintext.id(), 0);
        assert_eq!(SecurityProtocol::Ssl.id(), 1);
        assert_eq!(SecurityProtocol::SaslPlaintext.id(), 2);
        assert_eq!(SecurityProtocol::SaslSsl.id(), 3);
        for p in SecurityProtocol::ALL {
            assert_eq!(SecurityProtocol::from_id(p.id()), Some(p));
            assert_eq!(SecurityProtocol::parse(p.name()), Some(p));
        }
    }
}
