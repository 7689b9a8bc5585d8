//! Broker settings: Kafka's names and defaults, from flags, `PINLOG_*`
//! environment variables, a TOML file, and defaults, in that precedence.
//!
//! The TOML file uses Kafka's setting names as quoted keys, for example
//!
//! ```toml
//! "data-dir" = "/var/lib/pinlog"
//! "num.partitions" = 6
//! "log.segment.bytes" = 536870912
//! ```
//!
//! Unknown keys are refused with the list of known ones, so a typo never
//! silently falls back to a default.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub mod authorizer;
pub mod consumer_group;
pub mod group;
pub mod listeners;
pub mod sasl_settings;
pub mod security;
pub mod share_coordinator;
pub mod share_group;
pub mod transaction;

use self::authorizer::{AuthorizerSettings, AUTHORIZER_KEYS};
use self::consumer_group::{ConsumerGroupConfig, CONSUMER_GROUP_KEYS};
use self::group::{GroupConfig, GROUP_KEYS};
use self::listeners::{ListenerSettings, Listeners};
use self::security::{SecuritySettings, TlsSettings};
use self::share_coordinator::{ShareCoordinatorConfig, SHARE_COORDINATOR_KEYS};
use self::share_group::{ShareGroupSettings, SHARE_GROUP_KEYS};
use self::transaction::{TransactionConfig, TRANSACTION_KEYS};
use crate::config::{CleanerConfig, CleanupPolicy, LogConfig};
use crate::constants::*;

/// Kafka's `socket.request.max.bytes` default: 100 MiB.
pub const DEFAULT_SOCKET_REQUEST_MAX_BYTES: usize = 100 * 1024 * 1024;
/// Kafka's `connections.max.idle.ms` default: 10 minutes.
pub const DEFAULT_CONNECTIONS_MAX_IDLE_MS: u64 = 600_000;
/// Kafka's `fetch.max.bytes` default: 55 MiB.
pub const DEFAULT_FETCH_MAX_BYTES: usize = 55 * 1024 * 1024;
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9092";
pub const DEFAULT_METRICS_LISTEN: &str = "127.0.0.1:9644";
pub const DEFAULT_DATA_DIR: &str = "./pinlog-data";
/// Kafka's `log.retention.check.interval.ms` default: 5 minutes.
pub const DEFAULT_RETENTION_CHECK_INTERVAL_MS: u64 = 5 * 60 * 1000;
/// Kafka's `max.incremental.fetch.session.cache.slots` default: sessions the
/// broker keeps in all. Sessions live on the connection's shard, so each
/// shard gets an even share (Kafka splits its cache in 8 the same way).
pub const FETCH_SESSION_CACHE_SLOTS_DEFAULT: usize = 1000;

/// `message.timestamp.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// The names of the settings the config file set: DescribeConfigs
    /// reports them as STATIC_BROKER_CONFIG, the others as Kafka's
    /// defaults (DEFAULT_CONFIG).
    pub file_settings: BTreeSet<String>,
    pub data_dir: PathBuf,
    /// Where the inter-broker listener binds (see `listeners`).
    pub listen: SocketAddr,
    /// The inter-broker listener's advertised `HOST:PORT`.
    pub advertise: String,
    /// `listeners`, `advertised.listeners`, `listener.security.protocol.map`
    /// and `inter.broker.listener.name`, settled.
    pub listeners: Listeners,
    /// `ssl.*`, globally and per listener.
    pub security: SecuritySettings,
    pub shards: Option<usize>,
    /// `node.id`.
    pub node_id: i32,
    /// `num.partitions`.
    pub num_partitions: i32,
    /// `default.replication.factor`.
    pub default_replication_factor: i16,
    /// `auto.create.topics.enable`.
    pub auto_create_topics_enable: bool,
    /// `socket.request.max.bytes`.
    pub socket_request_max_bytes: usize,
    /// `connections.max.idle.ms`: a client connection with no request in
    /// flight and none arriving for this long is closed.
    pub connections_max_idle_ms: u64,
    /// `fetch.max.bytes`: the most record bytes one fetch response carries,
    /// whatever the request asks, so that a fetch cannot make the broker
    /// read a whole segment into memory. As in Kafka (KIP-74), a first
    /// batch larger than this still goes out whole.
    pub fetch_max_bytes: usize,
    /// `message.timestamp.type` default for topics.
    pub message_timestamp_type: TimestampType,
    /// `metrics.listen`.
    pub metrics_listen: SocketAddr,
    /// Whether `metrics.listen` was set rather than defaulted: a default
    /// port taken by another broker on the machine disables the endpoint
    /// with a warning instead of stopping the broker.
    pub metrics_listen_explicit: bool,
    /// `read.cache.bytes`: the most memory the read cache of the whole
    /// broker may keep alive, split over the shards; `None` takes three
    /// quarters of the machine's (or cgroup's) memory
    /// (`memory::default_ceiling_bytes`). Under it, each shard's budget
    /// follows the memory that is free, and shrinks below it when the
    /// machine runs short (`memory.rs`).
    pub read_cache_bytes: Option<usize>,
    /// `shard.spin.before.park.us`: how long an idle shard spins before
    /// it parks; `None` spins only on cores the broker has to itself
    /// (`shard::spin` decides at startup).
    pub spin_before_park_us: Option<u64>,
    /// `shard.io.memory.bytes`: aligned buffer pool for DMA reads and writes.
    pub io_memory_bytes: usize,
    /// `max.incremental.fetch.session.cache.slots`: fetch sessions (KIP-227)
    /// the broker keeps, split evenly over its shards.
    pub fetch_session_cache_slots: usize,
    /// `log.retention.check.interval.ms`: how often each shard applies
    /// `retention.ms` and `retention.bytes`.
    pub retention_check_interval_ms: u64,
    /// Defaults for every topic's log settings (`log.*`, `message.max.bytes`).
    pub log: LogConfig,
    /// The group coordinator's settings (`group.*`, `offsets.*`).
    pub group: GroupConfig,
    /// The consumer-group protocol's settings (KIP-848, `group.consumer.*`).
    pub consumer_group: ConsumerGroupConfig,
    /// `group.share.*` (KIP-932).
    pub share_group: ShareGroupSettings,
    /// The transaction coordinator's settings (`transaction.*`).
    pub transaction: TransactionConfig,
    /// The share coordinator's settings (`share.coordinator.*`, KIP-932).
    pub share_coordinator: ShareCoordinatorConfig,
    /// The log cleaner (`log.cleaner.*`).
    pub cleaner: CleanerConfig,
    /// `process.roles`, `controller.quorum.*`, `controller.listen`.
    pub cluster: ClusterConfig,
    pub replication: ReplicationConfig,
    /// The core balancer (`shard.balancer.*`).
    pub balancer: ShardBalancerConfig,
    /// `authorizer.class.name`, `super.users`,
    /// `allow.everyone.if.no.acl.found` as given.
    pub authorizer_settings: AuthorizerSettings,
    /// The authorizer they settle to; `None` (the default, no
    /// `authorizer.class.name`) allows every request.
    pub authorizer: Option<crate::acl::AuthorizerConfig>,
}

/// The core balancer's settings: pinlog's own (Kafka has no cores to
/// balance), under `shard.balancer.*`. Off by default: see the tuning
/// guide's operations section for when to turn it on.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardBalancerConfig {
    /// `shard.balancer.enable`.
    pub enable: bool,
    /// `shard.balancer.interval.ms`: how often the load is measured.
    pub interval_ms: u64,
    /// `shard.balancer.threshold.percent`: a shard is hot when its load
    /// exceeds the mean over the shards by more than this.
    pub threshold_percent: u64,
    /// `shard.balancer.sustain.ms`: the window the rates are averaged over;
    /// a shard must be hot over a whole window before a partition moves off
    /// it, and a move starts a new window.
    pub sustain_ms: u64,
    /// `shard.balancer.min.bytes.per.sec`: a hot shard carrying less than
    /// this (bytes in + out per second) is left alone.
    pub min_bytes_per_sec: u64,
}

impl Default for ShardBalancerConfig {
    fn default() -> Self {
        ShardBalancerConfig {
            enable: false,
            interval_ms: 10_000,
            threshold_percent: 25,
            sustain_ms: 60_000,
            min_bytes_per_sec: 4 * 1024 * 1024,
        }
    }
}

/// The replica fetchers' and the ISR's settings, under Kafka's names and
/// with its defaults.
#[derive(Debug, Clone)]
pub struct ReplicationConfig {
    /// `replica.fetch.max.bytes`: bytes asked per partition per fetch.
    pub fetch_max_bytes: u64,
    /// `replica.fetch.response.max.bytes`: bytes asked per fetch response.
    pub fetch_response_max_bytes: u64,
    /// `replica.fetch.wait.max.ms`: how long a follower's fetch may wait.
    pub fetch_wait_max_ms: u64,
    /// `replica.fetch.min.bytes`.
    pub fetch_min_bytes: u64,
    /// `replica.fetch.backoff.ms`: the pause after a failed fetch.
    pub fetch_backoff_ms: u64,
    /// `replica.lag.time.max.ms`: a follower that has not caught up for
    /// this long leaves the ISR.
    pub lag_time_max_ms: u64,
    /// `replica.socket.timeout.ms`: a fetch with no answer for this long
    /// fails and the connection is dropped.
    pub socket_timeout_ms: u64,
    /// `replica.high.watermark.checkpoint.interval.ms`: how often every
    /// partition's HW goes to `replication-offset-checkpoint`.
    pub high_watermark_checkpoint_interval_ms: u64,
}

impl Default for ReplicationConfig {
    fn default() -> Self {
        ReplicationConfig {
            fetch_max_bytes: 1024 * 1024,
            fetch_response_max_bytes: 10 * 1024 * 1024,
            fetch_wait_max_ms: 500,
            fetch_min_bytes: 1,
            fetch_backoff_ms: 1000,
            lag_time_max_ms: 30_000,
            socket_timeout_ms: 30_000,
            high_watermark_checkpoint_interval_ms: 5_000,
        }
    }
}

/// Kafka's `controller.quorum.election.timeout.ms` default.
pub const DEFAULT_QUORUM_ELECTION_TIMEOUT_MS: u64 = 1000;
/// Kafka's `controller.quorum.fetch.timeout.ms` default.
pub const DEFAULT_QUORUM_FETCH_TIMEOUT_MS: u64 = 2000;
/// Kafka's `controller.quorum.request.timeout.ms` default.
pub const DEFAULT_QUORUM_REQUEST_TIMEOUT_MS: u64 = 2000;
/// Kafka's `broker.heartbeat.interval.ms` default.
pub const DEFAULT_BROKER_HEARTBEAT_INTERVAL_MS: u64 = 2000;
/// Kafka's `broker.session.timeout.ms` default.
pub const DEFAULT_BROKER_SESSION_TIMEOUT_MS: u64 = 9000;
/// Kafka's `auto.leader.rebalance.enable` default.
pub const DEFAULT_AUTO_LEADER_REBALANCE_ENABLE: bool = true;
/// Kafka's `leader.imbalance.check.interval.seconds` default.
pub const DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS: u64 = 300;
/// Kafka's `leader.imbalance.per.broker.percentage` default.
pub const DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE: u64 = 10;
/// The controller address of a one-voter quorum nobody configured. A
/// single voter has no peers, so nothing listens there unless
/// `controller.listen` asks for it.
pub const DEFAULT_CONTROLLER_ADDRESS: &str = "127.0.0.1:9093";

/// The control plane's settings.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// `process.roles` includes `controller`: this node is a voter.
    pub controller_role: bool,
    /// `process.roles` includes `broker`: this node serves clients.
    pub broker_role: bool,
    /// `controller.quorum.voters`, parsed: node id to `HOST:PORT`.
    pub voters: std::collections::BTreeMap<i32, String>,
    /// `controller.listen`: where this node takes controller RPCs.
    pub controller_listen: Option<SocketAddr>,
    pub election_timeout_ms: u64,
    pub fetch_timeout_ms: u64,
    pub request_timeout_ms: u64,
    /// `broker.heartbeat.interval.ms` (Kafka: 2000).
    pub heartbeat_interval_ms: u64,
    /// `broker.session.timeout.ms` (Kafka: 9000): a broker not heard from
    /// for this long is fenced.
    pub session_timeout_ms: u64,
    /// `broker.rack`: placement spreads a partition's replicas over racks.
    pub rack: Option<String>,
    /// `auto.leader.rebalance.enable` (Kafka: true): the active controller
    /// moves leaderships back to preferred replicas by itself.
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds` (Kafka: 300).
    pub leader_imbalance_check_interval_seconds: u64,
    /// `leader.imbalance.per.broker.percentage` (Kafka: 10): the share of a
    /// broker's preferred partitions led elsewhere that triggers balancing.
    pub leader_imbalance_per_broker_percentage: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            controller_role: true,
            broker_role: true,
            voters: std::collections::BTreeMap::new(),
            controller_listen: None,
            election_timeout_ms: DEFAULT_QUORUM_ELECTION_TIMEOUT_MS,
            fetch_timeout_ms: DEFAULT_QUORUM_FETCH_TIMEOUT_MS,
            request_timeout_ms: DEFAULT_QUORUM_REQUEST_TIMEOUT_MS,
            heartbeat_interval_ms: DEFAULT_BROKER_HEARTBEAT_INTERVAL_MS,
            session_timeout_ms: DEFAULT_BROKER_SESSION_TIMEOUT_MS,
            rack: None,
            auto_leader_rebalance_enable: DEFAULT_AUTO_LEADER_REBALANCE_ENABLE,
            leader_imbalance_check_interval_seconds:
                DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS,
            leader_imbalance_per_broker_percentage: DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE,
        }
    }
}

/// A controller (`process.roles` includes `controller`): a voter, in
/// `controller.quorum.voters` (by default the only one), listening where
/// the other voters are told to connect.
fn settle_voter(node_id: i32, c: &mut ClusterConfig) -> Result<(), String> {
    if c.voters.is_empty() {
        // Zero-config: a quorum of this node alone.
        let address = c
            .controller_listen
            .map_or(DEFAULT_CONTROLLER_ADDRESS.to_string(), |a| a.to_string());
        c.voters.insert(node_id, address);
    }
    let Some(own) = c.voters.get(&node_id) else {
        let ids: Vec<String> = c.voters.keys().map(i32::to_string).collect();
        return Err(bad(
                "controller.quorum.voters",
                format!(
                    "this node is a controller with node.id {}, but the voters are {}; add {}@HOST:PORT to controller.quorum.voters or set node.id to one of them",
                    node_id,
                    ids.join(", "),
                    node_id
                ),
            ));
    };
    if c.voters.len() > 1 && c.controller_listen.is_none() {
        // Listen where the other voters are told to connect.
        c.controller_listen = Some(own.parse().map_err(|_| {
                bad(
                    "controller.listen",
                    format!("this node's voter address {own:?} is a name, not an IP address; set controller.listen to the HOST:PORT to bind"),
                )
            })?);
    }
    Ok(())
}

/// A node with `process.roles=broker`: it learns the metadata log from the
/// voters without being one (see `quorum::observer`), so the voter list
/// names the controllers and must not name this node. It listens for the
/// log on `controller.listen`, by default an ephemeral port on the client
/// listener's address.
fn settle_broker_only(
    node_id: i32,
    listen: SocketAddr,
    c: &mut ClusterConfig,
) -> Result<(), String> {
    if c.voters.is_empty() {
        return Err(bad(
            "controller.quorum.voters",
            "a broker-only node (process.roles=broker) learns the metadata from the \
             controllers: list them in controller.quorum.voters",
        ));
    }
    if c.voters.contains_key(&node_id) {
        return Err(bad(
            "process.roles",
            format!(
                "node.id {node_id} is in controller.quorum.voters, but process.roles has no \
                 controller; add controller to process.roles, or give this broker a node.id \
                 that is not a voter's"
            ),
        ));
    }
    c.controller_listen
        .get_or_insert_with(|| SocketAddr::new(listen.ip(), 0));
    Ok(())
}

/// `process.roles`: `broker`, `controller`, or both (in either order).
pub fn parse_process_roles(s: &str) -> Result<(bool, bool), String> {
    let (mut broker, mut controller) = (false, false);
    for role in s.split(',').map(str::trim) {
        match role {
            "broker" => broker = true,
            "controller" => controller = true,
            other => {
                return Err(bad(
                    "process.roles",
                    format!("{other:?} is not a role; use broker, controller or broker,controller"),
                ))
            }
        }
    }
    if !broker && !controller {
        return Err(bad(
            "process.roles",
            "name at least one of broker, controller",
        ));
    }
    Ok((broker, controller))
}

/// `controller.quorum.voters`: `1@host:port,2@host:port,...`.
pub fn parse_voters(s: &str) -> Result<std::collections::BTreeMap<i32, String>, String> {
    let key = "controller.quorum.voters";
    let mut voters = std::collections::BTreeMap::new();
    for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (id, address) = entry
            .split_once('@')
            .ok_or_else(|| bad(key, format!("{entry:?} is not ID@HOST:PORT")))?;
        let id: i32 = id
            .parse()
            .map_err(|_| bad(key, format!("{id:?} in {entry:?} is not a node id")))?;
        let (host, port) = address
            .rsplit_once(':')
            .ok_or_else(|| bad(key, format!("{address:?} in {entry:?} is not HOST:PORT")))?;
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(bad(
                key,
                format!("{address:?} in {entry:?} is not HOST:PORT"),
            ));
        }
        if voters.insert(id, address.to_string()).is_some() {
            return Err(bad(key, format!("node id {id} is listed twice")));
        }
    }
    if voters.is_empty() {
        return Err(bad(key, "lists no voter"));
    }
    Ok(voters)
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            data_dir: PathBuf::from(DEFAULT_DATA_DIR),
            listen: DEFAULT_LISTEN.parse().expect("valid default"),
            advertise: DEFAULT_LISTEN.to_string(),
            listeners: listeners::settle(&ListenerSettings::default())
                .expect("the default listener settles"),
            security: SecuritySettings::default(),
            shards: None,
            node_id: 1,
            num_partitions: 1,
            default_replication_factor: 1,
            auto_create_topics_enable: true,
            socket_request_max_bytes: DEFAULT_SOCKET_REQUEST_MAX_BYTES,
            connections_max_idle_ms: DEFAULT_CONNECTIONS_MAX_IDLE_MS,
            fetch_max_bytes: DEFAULT_FETCH_MAX_BYTES,
            message_timestamp_type: TimestampType::CreateTime,
            metrics_listen: DEFAULT_METRICS_LISTEN.parse().expect("valid default"),
            metrics_listen_explicit: false,
            read_cache_bytes: None,
            spin_before_park_us: None,
            io_memory_bytes: DEFAULT_SHARD_IO_MEMORY_BYTES,
            retention_check_interval_ms: DEFAULT_RETENTION_CHECK_INTERVAL_MS,
            fetch_session_cache_slots: FETCH_SESSION_CACHE_SLOTS_DEFAULT,
            log: LogConfig::default(),
            group: GroupConfig::default(),
            consumer_group: ConsumerGroupConfig::default(),
            share_group: ShareGroupSettings::default(),
            transaction: TransactionConfig::default(),
            share_coordinator: ShareCoordinatorConfig::default(),
            cleaner: CleanerConfig::default(),
            cluster: ClusterConfig::default(),
            replication: ReplicationConfig::default(),
            balancer: ShardBalancerConfig::default(),
            authorizer_settings: AuthorizerSettings::default(),
            authorizer: None,
            file_settings: BTreeSet::new(),
        }
    }
}

/// Values given on the command line or in the environment (already merged
/// by clap: a flag wins over its `PINLOG_*` variable).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub data_dir: Option<PathBuf>,
    pub listen: Option<String>,
    pub advertise: Option<String>,
    pub shards: Option<usize>,
    pub config_file: Option<ConfigFile>,
    pub node_id: Option<i32>,
    pub process_roles: Option<String>,
    pub controller_quorum_voters: Option<String>,
    pub controller_listen: Option<String>,
}

/// The settings file, read by the caller: this crate does no I/O.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// Where it was read from, for messages.
    pub path: PathBuf,
    pub text: String,
}

/// Every key the TOML file accepts.
pub const KNOWN_KEYS: &[&str] = &[
    "data-dir",
    "listen",
    "advertise",
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "inter.broker.listener.name",
    "security.inter.broker.protocol",
    "shards",
    "node.id",
    "process.roles",
    "controller.quorum.voters",
    "controller.listen",
    "controller.listener.names",
    "controller.quorum.election.timeout.ms",
    "controller.quorum.fetch.timeout.ms",
    "controller.quorum.request.timeout.ms",
    "broker.heartbeat.interval.ms",
    "broker.session.timeout.ms",
    "broker.rack",
    "auto.leader.rebalance.enable",
    "leader.imbalance.check.interval.seconds",
    "leader.imbalance.per.broker.percentage",
    "num.partitions",
    "default.replication.factor",
    "auto.create.topics.enable",
    transaction::PARTITION_VERIFICATION_KEY,
    "socket.request.max.bytes",
    "connections.max.idle.ms",
    "fetch.max.bytes",
    "message.max.bytes",
    "message.timestamp.type",
    "metrics.listen",
    "read.cache.bytes",
    "shard.spin.before.park.us",
    "shard.io.memory.bytes",
    "shard.balancer.enable",
    "shard.balancer.interval.ms",
    "shard.balancer.threshold.percent",
    "shard.balancer.sustain.ms",
    "shard.balancer.min.bytes.per.sec",
    "max.incremental.fetch.session.cache.slots",
    "replica.fetch.max.bytes",
    "replica.fetch.response.max.bytes",
    "replica.fetch.wait.max.ms",
    "replica.fetch.min.bytes",
    "replica.fetch.backoff.ms",
    "replica.lag.time.max.ms",
    "replica.socket.timeout.ms",
    "replica.high.watermark.checkpoint.interval.ms",
    "log.segment.bytes",
    "log.roll.ms",
    "log.index.size.max.bytes",
    "log.index.interval.bytes",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.retention.ms",
    "log.retention.bytes",
    "log.retention.check.interval.ms",
    "log.preallocate",
    "log.cleanup.policy",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms",
    "log.cleaner.enable",
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.size",
];

fn bad(key: &str, why: impl std::fmt::Display) -> String {
    format!("setting {key:?}: {why}")
}

fn int(key: &str, v: &toml::Value) -> Result<i64, String> {
    v.as_integer()
        .ok_or_else(|| bad(key, format!("expected an integer, got {v}")))
}
/// `a = { b = 1 }` (what TOML makes of the bare `a.b = 1`) as `("a.b", 1)`.
fn flatten_dotted_keys(table: toml::Table) -> Vec<(String, toml::Value)> {
    let mut out = Vec::new();
    let mut pending: Vec<(String, toml::Table)> = vec![(String::new(), table)];
    while let Some((prefix, table)) = pending.pop() {
        for (key, value) in table {
            let name = if prefix.is_empty() {
                key
            } else {
                format!("{prefix}.{key}")
            };
            match value {
                toml::Value::Table(inner) => pending.push((name, inner)),
                other => out.push((name, other)),
            }
        }
    }
    out
}

fn non_negative(key: &str, v: &toml::Value) -> Result<u64, String> {
    let i = int(key, v)?;
    u64::try_from(i).map_err(|_| bad(key, "must not be negative"))
}
fn positive(key: &str, v: &toml::Value) -> Result<u64, String> {
    match non_negative(key, v)? {
        0 => Err(bad(key, "must be at least 1")),
        n => Ok(n),
    }
}
fn boolean(key: &str, v: &toml::Value) -> Result<bool, String> {
    v.as_bool()
        .ok_or_else(|| bad(key, format!("expected true or false, got {v}")))
}
/// A setting Kafka keeps as text: a string, or a number or boolean
/// written bare.
fn setting_text(key: &str, v: &toml::Value) -> Result<String, String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        other => Err(bad(key, format!("expected a string, got {other}"))),
    }
}
fn string(key: &str, v: &toml::Value) -> Result<String, String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| bad(key, format!("expected a string, got {v}")))
}
fn addr(key: &str, s: &str) -> Result<SocketAddr, String> {
    s.parse().map_err(|e| {
        bad(
            key,
            format!("{s:?} is not HOST:PORT with a numeric host ({e})"),
        )
    })
}

impl BrokerConfig {
    /// Builds the configuration: defaults, then the file, then overrides.
    pub fn load(overrides: &Overrides) -> Result<BrokerConfig, String> {
        let mut c = BrokerConfig::default();
        let mut listener_settings = ListenerSettings::default();
        if let Some(file) = &overrides.config_file {
            c.apply_file(&file.path, &file.text, &mut listener_settings)?;
        }
        if let Some(d) = &overrides.data_dir {
            c.data_dir = d.clone();
        }
        if let Some(l) = &overrides.listen {
            addr("--listen", l)?;
            listener_settings.listen = Some(l.clone());
        }
        if let Some(a) = &overrides.advertise {
            listener_settings.advertise = Some(a.clone());
        }
        c.listeners = listeners::settle(&listener_settings)?;
        let inter_broker = c.listeners.inter_broker();
        c.listen = inter_broker.bind;
        c.advertise = inter_broker.advertised();
        if let Some(s) = overrides.shards {
            c.shards = Some(s);
        }
        if let Some(id) = overrides.node_id {
            c.node_id = id;
        }
        if let Some(r) = &overrides.process_roles {
            (c.cluster.broker_role, c.cluster.controller_role) = parse_process_roles(r)?;
        }
        if let Some(v) = &overrides.controller_quorum_voters {
            c.cluster.voters = parse_voters(v)?;
        }
        if let Some(l) = &overrides.controller_listen {
            c.cluster.controller_listen = Some(addr("--controller-listen", l)?);
        }
        c.settle_cluster()?;
        c.settle_security()?;
        c.authorizer = c.authorizer_settings.settle()?;
        c.validate()?;
        Ok(c)
    }

    /// Fills in the quorum's defaults and refuses combinations that cannot
    /// work, naming the setting to change.
    fn settle_cluster(&mut self) -> Result<(), String> {
        let c = &mut self.cluster;
        if c.controller_role {
            settle_voter(self.node_id, c)?;
        } else {
            settle_broker_only(self.node_id, self.listen, c)?;
        }
        if c.heartbeat_interval_ms >= c.session_timeout_ms {
            return Err(bad(
                "broker.heartbeat.interval.ms",
                format!(
                    "{} ms is not below broker.session.timeout.ms ({} ms): every broker would be fenced between heartbeats",
                    c.heartbeat_interval_ms, c.session_timeout_ms
                ),
            ));
        }
        if c.controller_listen == Some(self.listen) {
            return Err(bad(
                "controller.listen",
                format!(
                    "{} is also the client listener (listen); give the controllers their own port",
                    self.listen
                ),
            ));
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), String> {
        if self.shards == Some(0) {
            return Err("--shards must be at least 1".into());
        }
        if self.num_partitions < 1 {
            return Err(bad("num.partitions", "must be at least 1"));
        }
        let (host, port) = self.advertise.rsplit_once(':').ok_or_else(|| {
            bad(
                "advertise",
                format!("{:?} is not HOST:PORT", self.advertise),
            )
        })?;
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(bad(
                "advertise",
                format!("{:?} is not HOST:PORT", self.advertise),
            ));
        }
        // At most Kafka's Int.MaxValue: index entries hold 32-bit positions.
        if self.log.segment_bytes < 1024 || self.log.segment_bytes > i32::MAX as u64 {
            return Err(bad(
                "log.segment.bytes",
                "must be between 1 KiB and 2147483647 (2 GiB - 1)",
            ));
        }
        self.group.validate()?;
        self.consumer_group.validate()?;
        self.share_group.validate()?;
        Ok(())
    }

    /// The advertised host and port.
    pub fn advertised_host_port(&self) -> (String, i32) {
        let (h, p) = self
            .advertise
            .rsplit_once(':')
            .unwrap_or(("127.0.0.1", "9092"));
        (h.to_string(), p.parse().unwrap_or(9092))
    }

    /// Applies a TOML file; returns whether it set `advertise`. Kafka's names
    /// may be written quoted (`"num.partitions" = 12`) or bare
    /// (`num.partitions = 12`, which TOML reads as nested tables), or grouped
    /// under a table header (`[log]` then `segment.bytes = ...`).
    fn apply_file(
        &mut self,
        path: &Path,
        text: &str,
        listener_settings: &mut ListenerSettings,
    ) -> Result<(), String> {
        let table: toml::Table = text
            .parse()
            .map_err(|e| format!("config file {} is not valid TOML: {e}", path.display()))?;
        for (key, v) in &flatten_dotted_keys(table) {
            self.file_settings.insert(key.clone());
            match key.as_str() {
                "data-dir" | "log.dirs" => self.data_dir = PathBuf::from(string(key, v)?),
                "listen" => {
                    let l = string(key, v)?;
                    addr(key, &l)?;
                    listener_settings.listen = Some(l);
                }
                "advertise" => listener_settings.advertise = Some(string(key, v)?),
                "listeners" => listener_settings.listeners = Some(string(key, v)?),
                "advertised.listeners" => {
                    listener_settings.advertised_listeners = Some(string(key, v)?)
                }
                "listener.security.protocol.map" => {
                    listener_settings.protocol_map = Some(string(key, v)?)
                }
                "inter.broker.listener.name" => {
                    listener_settings.inter_broker_listener_name = Some(string(key, v)?)
                }
                "security.inter.broker.protocol" => {
                    listener_settings.inter_broker_protocol = Some(string(key, v)?)
                }
                "controller.listener.names" => {
                    listener_settings.controller_listener_names = Some(string(key, v)?)
                }
                k if security::is_security_key(k) => self.security.set(k, setting_text(key, v)?)?,
                k if AUTHORIZER_KEYS.contains(&k) => {
                    self.authorizer_settings.set(k, setting_text(key, v)?)
                }
                "shards" => self.shards = Some(non_negative(key, v)? as usize),
                "node.id" => self.node_id = int(key, v)? as i32,
                "process.roles" => {
                    (self.cluster.broker_role, self.cluster.controller_role) =
                        parse_process_roles(&string(key, v)?)?
                }
                "controller.quorum.voters" => self.cluster.voters = parse_voters(&string(key, v)?)?,
                "controller.listen" => {
                    self.cluster.controller_listen = Some(addr(key, &string(key, v)?)?)
                }
                "controller.quorum.election.timeout.ms" => {
                    self.cluster.election_timeout_ms = positive(key, v)?
                }
                "controller.quorum.fetch.timeout.ms" => {
                    self.cluster.fetch_timeout_ms = positive(key, v)?
                }
                "controller.quorum.request.timeout.ms" => {
                    self.cluster.request_timeout_ms = positive(key, v)?
                }
                "broker.heartbeat.interval.ms" => {
                    self.cluster.heartbeat_interval_ms = positive(key, v)?
                }
                "broker.session.timeout.ms" => self.cluster.session_timeout_ms = positive(key, v)?,
                "broker.rack" => self.cluster.rack = Some(string(key, v)?),
                "auto.leader.rebalance.enable" => {
                    self.cluster.auto_leader_rebalance_enable = boolean(key, v)?
                }
                "leader.imbalance.check.interval.seconds" => {
                    self.cluster.leader_imbalance_check_interval_seconds = positive(key, v)?
                }
                "leader.imbalance.per.broker.percentage" => {
                    let pct = non_negative(key, v)?;
                    if pct > 100 {
                        return Err(format!("{key} must be a percentage (0-100), not {pct}"));
                    }
                    self.cluster.leader_imbalance_per_broker_percentage = pct
                }
                "num.partitions" => self.num_partitions = int(key, v)? as i32,
                "default.replication.factor" => {
                    self.default_replication_factor = int(key, v)? as i16
                }
                "auto.create.topics.enable" => self.auto_create_topics_enable = boolean(key, v)?,
                "replica.fetch.max.bytes" => self.replication.fetch_max_bytes = positive(key, v)?,
                "replica.fetch.response.max.bytes" => {
                    self.replication.fetch_response_max_bytes = positive(key, v)?
                }
                "replica.fetch.wait.max.ms" => {
                    self.replication.fetch_wait_max_ms = non_negative(key, v)?
                }
                "replica.fetch.min.bytes" => self.replication.fetch_min_bytes = positive(key, v)?,
                "replica.fetch.backoff.ms" => {
                    self.replication.fetch_backoff_ms = non_negative(key, v)?
                }
                "replica.lag.time.max.ms" => self.replication.lag_time_max_ms = positive(key, v)?,
                "replica.socket.timeout.ms" => {
                    self.replication.socket_timeout_ms = positive(key, v)?
                }
                "replica.high.watermark.checkpoint.interval.ms" => {
                    self.replication.high_watermark_checkpoint_interval_ms = positive(key, v)?
                }
                "max.incremental.fetch.session.cache.slots" => {
                    self.fetch_session_cache_slots = non_negative(key, v)? as usize
                }
                "connections.max.idle.ms" => self.connections_max_idle_ms = positive(key, v)?,
                "socket.request.max.bytes" => {
                    self.socket_request_max_bytes = non_negative(key, v)? as usize
                }
                "fetch.max.bytes" => self.fetch_max_bytes = positive(key, v)? as usize,
                "message.max.bytes" => self.log.max_batch_bytes = non_negative(key, v)? as usize,
                "message.timestamp.type" => {
                    self.message_timestamp_type = match string(key, v)?.as_str() {
                        "CreateTime" => TimestampType::CreateTime,
                        "LogAppendTime" => TimestampType::LogAppendTime,
                        other => {
                            return Err(bad(
                                key,
                                format!("{other:?} is not CreateTime or LogAppendTime"),
                            ))
                        }
                    }
                }
                "metrics.listen" => {
                    self.metrics_listen = addr(key, &string(key, v)?)?;
                    self.metrics_listen_explicit = true;
                }
                "read.cache.bytes" => self.read_cache_bytes = Some(non_negative(key, v)? as usize),
                "tail.cache.bytes" => {
                    return Err(bad(
                        key,
                        "the tail cache became the read cache: set read.cache.bytes, the \
                         memory of the whole broker (split over the shards), instead"
                            .to_string(),
                    ))
                }
                "shard.spin.before.park.us" => {
                    self.spin_before_park_us = Some(non_negative(key, v)?)
                }
                "shard.io.memory.bytes" => self.io_memory_bytes = non_negative(key, v)? as usize,
                "shard.balancer.enable" => self.balancer.enable = boolean(key, v)?,
                "shard.balancer.interval.ms" => self.balancer.interval_ms = positive(key, v)?,
                "shard.balancer.threshold.percent" => {
                    self.balancer.threshold_percent = non_negative(key, v)?
                }
                "shard.balancer.sustain.ms" => self.balancer.sustain_ms = non_negative(key, v)?,
                "shard.balancer.min.bytes.per.sec" => {
                    self.balancer.min_bytes_per_sec = non_negative(key, v)?
                }
                "log.segment.bytes" => self.log.segment_bytes = non_negative(key, v)?,
                "log.roll.ms" => self.log.segment_ms = int(key, v)?,
                "log.index.size.max.bytes" => self.log.segment_index_bytes = non_negative(key, v)?,
                "log.index.interval.bytes" => self.log.index_interval_bytes = non_negative(key, v)?,
                "log.flush.interval.messages" => self.log.flush_messages = non_negative(key, v)?,
                "log.flush.interval.ms" => self.log.flush_ms = non_negative(key, v)?,
                "log.retention.ms" => self.log.retention_ms = int(key, v)?,
                "log.retention.bytes" => self.log.retention_bytes = int(key, v)?,
                "log.retention.check.interval.ms" => {
                    let ms = non_negative(key, v)?;
                    if ms == 0 {
                        return Err(bad(key, "must be at least 1"));
                    }
                    self.retention_check_interval_ms = ms;
                }
                "log.preallocate" => self.log.preallocate = boolean(key, v)?,
                transaction::PARTITION_VERIFICATION_KEY => {
                    self.transaction.partition_verification_enable = boolean(key, v)?
                }
                k if GROUP_KEYS.contains(&k) => self.group.set(k, int(key, v)?)?,
                k if CONSUMER_GROUP_KEYS.contains(&k) => {
                    // A number, a string, or (the assignors) a list.
                    let text = match v {
                        toml::Value::String(s) => s.clone(),
                        toml::Value::Array(items) => items
                            .iter()
                            .map(|i| i.as_str().map(str::to_string).unwrap_or(i.to_string()))
                            .collect::<Vec<_>>()
                            .join(","),
                        other => other.to_string(),
                    };
                    self.consumer_group.set(k, &text)?
                }
                k if TRANSACTION_KEYS.contains(&k) => self.transaction.set(k, int(key, v)?)?,
                k if SHARE_GROUP_KEYS.contains(&k) => self.share_group.set(k, int(key, v)?)?,
                k if SHARE_COORDINATOR_KEYS.contains(&k) => {
                    self.share_coordinator.set(k, int(key, v)?)?
                }
                "log.cleanup.policy" => {
                    let s = string(key, v)?;
                    self.log.cleanup_policy = CleanupPolicy::parse(&s).ok_or_else(|| {
                        bad(
                            key,
                            format!("{s:?} is not delete, compact or compact,delete"),
                        )
                    })?
                }
                "log.cleaner.delete.retention.ms" => {
                    self.log.delete_retention_ms = non_negative(key, v)? as i64
                }
                "log.cleaner.min.cleanable.ratio" => {
                    let r = v
                        .as_float()
                        .or_else(|| v.as_integer().map(|i| i as f64))
                        .ok_or_else(|| bad(key, format!("expected a number, got {v}")))?;
                    if !(0.0..=1.0).contains(&r) {
                        return Err(bad(key, "must be between 0 and 1"));
                    }
                    self.log.min_cleanable_dirty_ratio = r;
                }
                "log.cleaner.min.compaction.lag.ms" => {
                    self.log.min_compaction_lag_ms = non_negative(key, v)? as i64
                }
                "log.cleaner.max.compaction.lag.ms" => {
                    let ms = non_negative(key, v)? as i64;
                    if ms < 1 {
                        return Err(bad(key, "must be at least 1"));
                    }
                    self.log.max_compaction_lag_ms = ms;
                }
                "log.cleaner.enable" => self.cleaner.enable = boolean(key, v)?,
                "log.cleaner.backoff.ms" => self.cleaner.backoff_ms = non_negative(key, v)?,
                "log.cleaner.dedupe.buffer.size" => {
                    self.cleaner.dedupe_buffer_size = non_negative(key, v)?
                }
                "log.cleaner.io.buffer.size" => self.cleaner.io_buffer_size = non_negative(key, v)?,
                other => {
                    return Err(format!(
                        "unknown setting {other:?} in {}; known settings: \
                         {}, {}, {}, {}, {}, {}, {}, {}, {} (the ssl.* and sasl.* ones also as \
                         listener.name.<listener>.<setting>)",
                        path.display(),
                        KNOWN_KEYS.join(", "),
                        AUTHORIZER_KEYS.join(", "),
                        GROUP_KEYS.join(", "),
                        CONSUMER_GROUP_KEYS.join(", "),
                        SHARE_GROUP_KEYS.join(", "),
                        TRANSACTION_KEYS.join(", "),
                        SHARE_COORDINATOR_KEYS.join(", "),
                        security::SSL_KEYS.join(", "),
                        security::SASL_KEYS.join(", ")
                    ))
                }
            }
        }
        Ok(())
    }

    /// Checks every listener's security settings now, so that a broker
    /// with a TLS listener it cannot serve refuses to start, naming the
    /// setting, instead of failing its first client.
    fn settle_security(&self) -> Result<(), String> {
        let controller = &self.listeners.controller;
        let names: Vec<&str> = self
            .listeners
            .all
            .iter()
            .map(|l| l.name.as_str())
            .chain([controller.name.as_str()])
            .collect();
        if let Some(unknown) = self.security.unknown_listeners(&names).first() {
            return Err(format!(
                "settings for listener.name.{unknown}.*, but {} is not in listeners ({})",
                unknown.to_ascii_uppercase(),
                names.join(", ")
            ));
        }
        for l in &self.listeners.all {
            if l.protocol.uses_sasl() {
                sasl_settings::SaslSettings::for_listener(&self.security, &l.name)?;
            }
            if l.protocol.uses_tls() {
                TlsSettings::for_listener(&self.security, &l.name, true)?;
            }
        }
        let inter_broker = self.listeners.inter_broker();
        if inter_broker.protocol.uses_sasl() {
            sasl_settings::InterBrokerSasl::for_listener(&self.security, &inter_broker.name)?;
        }
        if controller.protocol.uses_tls() {
            let tls = TlsSettings::for_listener(&self.security, &controller.name, true)?;
            if tls.truststore.is_none() {
                return Err(format!(
                    "the controller channel {} runs over mutual TLS, which needs the CA that \
                     signs every node's certificate: set listener.name.{}.ssl.truststore.location",
                    controller.name,
                    controller.name.to_ascii_lowercase()
                ));
            }
        }
        Ok(())
    }

    /// The TLS settings of a TLS listener (checked at load).
    pub fn tls_settings(&self, listener: &str, server: bool) -> Result<TlsSettings, String> {
        TlsSettings::for_listener(&self.security, listener, server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A settings file with `text`, as `pinlog serve --config` reads it.
    fn file(text: &str) -> Option<ConfigFile> {
        Some(ConfigFile {
            path: PathBuf::from("pinlog.toml"),
            text: text.to_string(),
        })
    }

    #[test]
    fn defaults_are_kafkas_and_zero_config_works() {
        let c = BrokerConfig::load(&Overrides::default()).unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:9092");
        assert_eq!(c.advertise, "127.0.0.1:9092");
        assert_eq!(c.num_partitions, 1);
        assert!(c.auto_create_topics_enable);
        assert_eq!(c.socket_request_max_bytes, 100 * 1024 * 1024);
        assert_eq!(c.connections_max_idle_ms, 600_000);
        assert_eq!(c.fetch_max_bytes, 57_671_680);
        assert_eq!(c.log.segment_bytes, 1 << 30);
        assert!(c.cleaner.enable);
        assert_eq!(c.cleaner.backoff_ms, 15_000);
        assert_eq!(c.log.cleanup_policy, CleanupPolicy::DELETE);
        assert_eq!(c.log.delete_retention_ms, 86_400_000);
    }

    #[test]
    fn the_controller_channel_over_tls_needs_a_certificate_and_a_truststore() {
        let load = |text: &str| {
            BrokerConfig::load(&Overrides {
                config_file: file(text),
                ..Overrides::default()
            })
        };
        let map = "\"listener.security.protocol.map\" = \"PLAINTEXT:PLAINTEXT,CONTROLLER:SSL\"\n";
        let e = load(map).unwrap_err();
        assert!(
            e.contains("listener CONTROLLER uses TLS but has no certificate"),
            "{e}"
        );
        let keystore = "\"listener.name.controller.ssl.keystore.location\" = \"node.pem\"\n";
        let e = load(&format!("{map}{keystore}")).unwrap_err();
        assert!(
            e.contains("listener.name.controller.ssl.truststore.location"),
            "{e}"
        );
        let truststore = "\"listener.name.controller.ssl.truststore.location\" = \"ca.pem\"\n";
        let c = load(&format!("{map}{keystore}{truststore}")).unwrap();
        assert_eq!(
            c.listeners.controller.protocol,
            listeners::SecurityProtocol::Ssl
        );
        let tls = c.tls_settings("CONTROLLER", true).unwrap();
        assert!(tls.truststore.is_some());
    }

    #[test]
    fn cleaner_settings_take_kafkas_names() {
        let text =
            "\"log.cleanup.policy\" = \"compact\"\n\"log.cleaner.min.cleanable.ratio\" = 0.2\n\
             \"log.cleaner.backoff.ms\" = 100\n\"log.cleaner.enable\" = false\n";
        let c = BrokerConfig::load(&Overrides {
            config_file: file(text),
            ..Overrides::default()
        })
        .unwrap();
        assert_eq!(c.log.cleanup_policy, CleanupPolicy::COMPACT);
        assert_eq!(c.log.min_cleanable_dirty_ratio, 0.2);
        assert_eq!(c.cleaner.backoff_ms, 100);
        assert!(!c.cleaner.enable);
        let text = "\"log.cleaner.min.cleanable.ratio\" = 2.0\n";
        let e = BrokerConfig::load(&Overrides {
            config_file: file(text),
            ..Overrides::default()
        })
        .unwrap_err();
        assert!(e.contains("between 0 and 1"), "{e}");
    }

    #[test]
    fn the_high_watermark_checkpoint_interval_takes_kafkas_name_and_default() {
        let c = BrokerConfig::load(&Overrides::default()).unwrap();
        assert_eq!(c.replication.high_watermark_checkpoint_interval_ms, 5_000);
        let text = "\"replica.high.watermark.checkpoint.interval.ms\" = 250\n";
        let c = BrokerConfig::load(&Overrides {
            config_file: file(text),
            ..Overrides::default()
        })
        .unwrap();
        assert_eq!(c.replication.high_watermark_checkpoint_interval_ms, 250);
        let text = "\"replica.high.watermark.checkpoint.interval.ms\" = 0\n";
        assert!(BrokerConfig::load(&Overrides {
            config_file: file(text),
            ..Overrides::default()
        })
        .is_err());
    }

    #[test]
    fn flags_beat_the_file_and_the_file_beats_defaults() {
        let text =
            "\"listen\" = \"127.0.0.1:9999\"\n\"num.partitions\" = 6\n\"data-dir\" = \"/x\"\n";
        let c = BrokerConfig::load(&Overrides {
            config_file: file(text),
            data_dir: Some("/y".into()),
            ..Overrides::default()
        })
        .unwrap();
        assert_eq!(c.num_partitions, 6);
        assert_eq!(c.listen.port(), 9999);
        assert_eq!(c.advertise, "127.0.0.1:9999", "advertise follows listen");
        assert_eq!(c.data_dir, PathBuf::from("/y"));
    }

    #[test]
    fn the_spin_before_park_is_chosen_from_the_cores_unless_set() {
        let c = BrokerConfig::load(&Overrides::default()).unwrap();
        assert_eq!(c.spin_before_park_us, None);
        for (text, spin) in [
            ("\"shard.spin.before.park.us\" = 0\n", 0),
            ("\"shard.spin.before.park.us\" = 50\n", 50),
        ] {
            let c = BrokerConfig::load(&Overrides {
                config_file: file(text),
                ..Overrides::default()
            })
            .unwrap();
            assert_eq!(c.spin_before_park_us, Some(spin));
        }
        let text = "\"shard.spin.before.park.us\" = -1\n";
        assert!(BrokerConfig::load(&Overrides {
            config_file: file(text),
            ..Overrides::default()
        })
        .is_err());
    }

    #[test]
    fn bare_dotted_keys_and_table_headers_name_kafka_settings() {
        let text =
            "num.partitions = 7\n\"read.cache.bytes\" = 4096\n[log]\nsegment.bytes = 2097152\n";
        let c = BrokerConfig::load(&Overrides {
            config_file: file(text),
            ..Overrides::default()
        })
        .unwrap();
        assert_eq!(c.num_partitions, 7);
        assert_eq!(c.read_cache_bytes, Some(4096));
        assert_eq!(c.log.segment_bytes, 2 * 1024 * 1024);
    }

    #[test]
    fn consumer_group_settings_take_kafka_names_and_defaults() {
        let c = BrokerConfig::load(&Overrides::default()).unwrap();
        assert_eq!(c.consumer_group, ConsumerGroupConfig::default());
        assert_eq!(c.consumer_group.session_timeout_ms, 45_000);
        let text = "\"group.consumer.min.session.timeout.ms\" = 6000\n\
                    \"group.consumer.session.timeout.ms\" = 6000\n\
                    \"group.consumer.min.heartbeat.interval.ms\" = 500\n\
                    \"group.consumer.heartbeat.interval.ms\" = 500\n\
                    \"group.consumer.assignors\" = [\"range\", \"uniform\"]\n";
        let c = BrokerConfig::load(&Overrides {
            config_file: file(text),
            ..Overrides::default()
        })
        .unwrap();
        assert_eq!(c.consumer_group.session_timeout_ms, 6000);
        assert_eq!(c.consumer_group.heartbeat_interval_ms, 500);
        assert_eq!(c.consumer_group.default_assignor(), "range");
        let text = "\"group.consumer.session.timeout.ms\" = 1000\n";
        let e = BrokerConfig::load(&Overrides {
            config_file: file(text),
            ..Overrides::default()
        })
        .unwrap_err();
        assert!(e.contains("group.consumer.session.timeout.ms"), "{e}");
    }

    #[test]
    fn unknown_and_malformed_settings_are_explained() {
        let text = "\"num.partitons\" = 3\n";
        let e = BrokerConfig::load(&Overrides {
            config_file: file(text),
            ..Overrides::default()
        })
        .unwrap_err();
        assert!(
            e.contains("unknown setting") && e.contains("num.partitions"),
            "{e}"
        );
        let text = "\"num.partitions\" = \"three\"\n";
        let e = BrokerConfig::load(&Overrides {
            config_file: file(text),
            ..Overrides::default()
        })
        .unwrap_err();
        assert!(e.contains("expected an integer"), "{e}");
    }

    #[test]
    fn the_authorizer_is_off_by_default_and_on_with_kafkas_class() {
        let c = BrokerConfig::load(&Overrides::default()).unwrap();
        assert_eq!(c.authorizer, None);
        let c = BrokerConfig::load(&Overrides {
            config_file: file(
                "\"authorizer.class.name\" = \"org.apache.kafka.metadata.authorizer.StandardAuthorizer\"\n\
                 \"super.users\" = \"User:admin;User:broker\"\n\
                 \"allow.everyone.if.no.acl.found\" = false\n",
            ),
            ..Overrides::default()
        })
        .unwrap();
        let authorizer = c.authorizer.expect("on");
        assert_eq!(authorizer.super_users, vec!["User:admin", "User:broker"]);
        assert!(!authorizer.allow_everyone_if_no_acl_found);
    }
}
