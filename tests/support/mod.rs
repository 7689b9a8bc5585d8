//! Shared helpers for integration tests that run the real `pinlog serve`
//! binary: start, stop (clean), crash (kill -9) and restart a broker, and
//! run external commands (Kafka clients) with a time limit.
//!
//! ```ignore
//! mod support;
//! use support::{Broker, BrokerOpts};
//!
//! let mut broker = Broker::start(BrokerOpts::new().setting("num.partitions", 3));
//! // ... point a client at broker.bootstrap() ...
//! broker.kill9();   // crash
//! broker.restart(); // same data dir, same port
//! broker.stop();    // SIGTERM; asserts exit 0 and the clean-shutdown marker
//! ```
//!
//! Every broker gets its own temporary directory: `<tmp>/data` is the data
//! directory (kept across restarts), `<tmp>/broker.log` collects the
//! broker's stdout and stderr from every start, and `<tmp>/pinlog.toml` is
//! its settings file. The log's tail is printed when a test panics while
//! the broker is alive (through `Drop`), followed by the panic's message
//! again: CI shows only the end of a failed run's output, and the logs of a
//! cluster's nodes would otherwise push the reason out of it. The directory is
//! deleted when the `Broker` is dropped, except after a panic: then it is
//! kept, and its path printed, for inspection.
#![allow(dead_code)]

pub mod cli;
pub mod kafka_conn;
pub mod netns;
pub mod power;
pub mod test_ca;

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use pinlog::protocol::codec::Reader;
use pinlog::protocol::header::{decode_response_header, RequestHeader};
use pinlog::protocol::messages::api_versions::{ApiVersionsRequest, ApiVersionsResponse};

/// The path of the broker binary Cargo built for these tests.
pub const PINLOG_BIN: &str = env!("CARGO_BIN_EXE_pinlog");
/// Kafka's name for the clean-shutdown marker in the data directory.
pub const CLEAN_SHUTDOWN_MARKER: &str = ".kafka_cleanshutdown";

/// How long `start`/`restart` wait for the broker to answer ApiVersions.
const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// How long `stop` waits for the process to exit after SIGTERM. The broker
/// itself hands its leaderships over (bounded by broker.session.timeout.ms,
/// 9 s by default, usually milliseconds), gives in-flight requests 10 s
/// (`DRAIN_TIMEOUT`), then flushes.
/// Set to keep every broker's directory, not only a failed test's.
const KEEP_DIRS_ENV: &str = "PINLOG_TEST_KEEP_DIRS";
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `kill9` waits for the dead broker's ports to be released.
const PORT_RELEASE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `restart` waits for the ports of a process that exited by
/// itself (and retries a start that found one taken).
const PORT_RELEASE_AFTER_EXIT: Duration = Duration::from_secs(30);
/// Attempts at finding a free port when another process takes the one we
/// picked between probing it and the broker binding it.
const PORT_ATTEMPTS: usize = 3;
/// ApiVersions version used by the readiness probe: v3 is the first flexible
/// one, so the probe also exercises request header v2.
const PROBE_API_VERSIONS_VERSION: i16 = 3;
const API_VERSIONS_KEY: i16 = 18;

/// How to start a broker. Build with [`BrokerOpts::new`] and the setters.
#[derive(Debug, Clone)]
pub struct BrokerOpts {
    shards: usize,
    /// `--shards` of each node of a [`Cluster`]: 1 unless a test asks for
    /// more, so that clusters share this machine's 2 cores.
    cluster_shards: usize,
    /// Kafka-named settings for the `--config` TOML file.
    settings: toml::Table,
    /// Host to advertise in Metadata; the port is always the listen port.
    advertise_host: Option<String>,
    /// A whole `HOST:PORT` to advertise instead (a proxy in front).
    advertise_addr: Option<String>,
    env: Vec<(String, String)>,
    /// Soft and hard RLIMIT_NOFILE of the broker process, if set.
    open_files_limit: Option<u64>,
    /// A `.tar.gz` whose `data/` becomes the data directory before the first
    /// start (a directory written by an older release).
    seed_data: Option<PathBuf>,
    /// The address every listener binds and clients dial: loopback, or the
    /// node's address inside its network namespace.
    host: String,
    /// The network namespace the process runs in (`ip netns exec`), if any.
    netns: Option<String>,
    /// The data directory, if not `<tmp>/data` (one on a test file
    /// system, such as the power-loss one).
    data_dir: Option<PathBuf>,
}

impl Default for BrokerOpts {
    fn default() -> Self {
        BrokerOpts {
            // Two shards even on one core: partitions then live on
            // different shards, which is the interesting case.
            shards: 2,
            cluster_shards: 1,
            settings: toml::Table::new(),
            advertise_host: None,
            advertise_addr: None,
            env: Vec::new(),
            open_files_limit: None,
            seed_data: None,
            host: "127.0.0.1".to_string(),
            netns: None,
            data_dir: None,
        }
    }
}

impl BrokerOpts {
    /// Two shards, no extra settings, advertise the listen address.
    pub fn new() -> Self {
        Self::default()
    }

    /// `--shards N`.
    pub fn shards(mut self, n: usize) -> Self {
        self.shards = n;
        self
    }

    /// `--shards N` for every node of a [`Cluster`] started with these
    /// options (1 by default).
    pub fn cluster_shards(mut self, n: usize) -> Self {
        self.cluster_shards = n;
        self
    }

    /// One Kafka-named setting for the TOML file, e.g.
    /// `.setting("auto.create.topics.enable", false)` or
    /// `.setting("num.partitions", 4)`.
    pub fn setting(mut self, key: &str, value: impl Into<toml::Value>) -> Self {
        self.settings.insert(key.to_string(), value.into());
        self
    }

    /// Drops a setting, so that the broker's default applies.
    #[allow(dead_code)]
    pub fn without_setting(mut self, key: &str) -> Self {
        self.settings.remove(key);
        self
    }

    /// Advertise `HOST:<listen port>` in Metadata instead of the listen
    /// address (`--advertise`).
    pub fn advertise_host(mut self, host: &str) -> Self {
        self.advertise_host = Some(host.to_string());
        self
    }

    /// Advertise exactly `addr` (`HOST:PORT`) in Metadata, so that clients
    /// connect through something in front of the broker, such as a
    /// [`CutProxy`].
    pub fn advertise(mut self, addr: &str) -> Self {
        self.advertise_addr = Some(addr.to_string());
        self
    }

    /// Caps the broker's open files (soft and hard RLIMIT_NOFILE), as a
    /// small `ulimit -n` would.
    pub fn open_files_limit(mut self, n: u64) -> Self {
        self.open_files_limit = Some(n);
        self
    }

    /// Start from the data directory in `tar_gz` (its `data/` entry), as
    /// an older release left it.
    pub fn seed_data(mut self, tar_gz: impl Into<PathBuf>) -> Self {
        self.seed_data = Some(tar_gz.into());
        self
    }

    /// An environment variable for the broker process, e.g. `RUST_LOG`.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// Run inside network namespace `netns` (see [`netns::Testbed`]),
    /// listening on `host`, the node's address there.
    pub fn in_netns(mut self, netns: &str, host: &str) -> Self {
        self.netns = Some(netns.to_string());
        self.host = host.to_string();
        self
    }

    /// Keep the data directory at `path` (which the test owns and
    /// removes) instead of `<tmp>/data`.
    pub fn data_dir(mut self, path: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(path.into());
        self
    }

    /// The address the broker listens on and clients dial.
    pub fn host(&self) -> &str {
        &self.host
    }
}

/// A `pinlog serve` process on a free loopback port with its own temporary
/// data directory. Dropping it kills the process (kill -9) and deletes the
/// directory.
pub struct Broker {
    opts: BrokerOpts,
    /// Holds the data directory, the log and the settings file. `None`
    /// only inside `drop`, after the directory was kept for inspection.
    root: Option<tempfile::TempDir>,
    port: u16,
    child: Option<Child>,
    starts: usize,
    /// Length of the log file when the current process was started, so that
    /// startup errors are looked for in this start's output only.
    log_offset: usize,
}

impl Broker {
    /// Starts a broker and waits until it answers ApiVersions; panics (with
    /// the broker's log) if it does not within 20 s.
    pub fn start(opts: BrokerOpts) -> Broker {
        let root = tempfile::Builder::new()
            .prefix("pinlog-broker-")
            .tempdir()
            .expect("create a temporary directory for the broker");
        let mut broker = Broker {
            opts,
            root: Some(root),
            port: 0,
            child: None,
            starts: 0,
            log_offset: 0,
        };
        if let Some(tar_gz) = &broker.opts.seed_data {
            let out = run_command(
                Command::new("tar")
                    .arg("-xzf")
                    .arg(tar_gz)
                    .arg("-C")
                    .arg(broker.root()),
                None,
                Duration::from_secs(60),
            );
            assert!(out.success(), "unpack {}: {out}", tar_gz.display());
            assert!(
                broker.data_dir().is_dir(),
                "{} has no data/",
                tar_gz.display()
            );
        }
        for attempt in 1..=PORT_ATTEMPTS {
            broker.port = free_port();
            broker.write_config();
            broker.spawn();
            match broker.wait_ready() {
                Ok(()) => return broker,
                // Another process took the port between our probe and the
                // broker's bind: pick another one.
                Err(Startup::PortTaken) if attempt < PORT_ATTEMPTS => continue,
                Err(e) => broker.fail(&format!("broker did not start: {e:?}")),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Starts a broker without waiting for it to answer: the nodes of a
    /// new cluster only answer once a majority of them runs. Pair with
    /// [`Broker::await_ready`].
    pub fn launch(opts: BrokerOpts) -> Broker {
        let root = tempfile::Builder::new()
            .prefix("pinlog-node-")
            .tempdir()
            .expect("create a temporary directory for the node");
        let mut broker = Broker {
            opts,
            root: Some(root),
            port: free_port(),
            child: None,
            starts: 0,
            log_offset: 0,
        };
        broker.write_config();
        broker.spawn();
        broker
    }

    /// Waits until a [`Broker::launch`]ed broker answers ApiVersions.
    pub fn await_ready(&mut self) {
        if let Err(e) = self.wait_ready() {
            self.fail(&format!("node did not start: {e:?}"));
        }
    }

    /// Like [`Broker::await_ready`], but says why instead of failing.
    pub fn try_await_ready(&mut self) -> Result<(), String> {
        self.wait_ready().map_err(|e| format!("{e:?}"))
    }

    /// Starts the stopped process again without waiting (see
    /// [`Broker::restart`]).
    /// A new Kafka port, and a new metrics port unless the test chose one,
    /// for the next start: for a first start that found a port taken.
    fn take_new_ports(&mut self) {
        self.port = free_port();
        self.write_config();
    }

    pub fn relaunch(&mut self) {
        if self.is_running() {
            self.stop();
        }
        self.child = None;
        self.spawn();
    }

    /// Waits (at most `timeout`) for the process to exit by itself; its
    /// status, or `None` if it still runs (then it is killed).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let status = wait_timeout(&mut child, timeout);
        if status.is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
        status
    }

    /// Sends `signal` (SIGSTOP, SIGCONT) to the running process.
    pub fn signal(&self, signal: libc::c_int) {
        let pid = self.pid().expect("the node is running") as libc::pid_t;
        // SAFETY: kill(2) on the pid of a child we have not reaped yet.
        assert_eq!(
            unsafe { libc::kill(pid, signal) },
            0,
            "kill -{signal} {pid}"
        );
    }

    /// `HOST:PORT` (loopback unless the broker runs in a namespace), for
    /// a client's bootstrap servers.
    pub fn bootstrap(&self) -> String {
        format!("{}:{}", self.opts.host, self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// What Metadata should return for this broker: `HOST:PORT`.
    pub fn advertised(&self) -> String {
        if let Some(addr) = &self.opts.advertise_addr {
            return addr.clone();
        }
        let host = self
            .opts
            .advertise_host
            .as_deref()
            .unwrap_or(&self.opts.host);
        format!("{host}:{}", self.port)
    }

    /// The data directory (`--data-dir`), kept across restarts.
    pub fn data_dir(&self) -> PathBuf {
        match &self.opts.data_dir {
            Some(dir) => dir.clone(),
            None => self.root().join("data"),
        }
    }

    /// The file collecting the broker's stdout and stderr.
    pub fn log_path(&self) -> PathBuf {
        self.root().join("broker.log")
    }

    /// Everything the broker printed so far, over all its starts.
    pub fn log(&self) -> String {
        std::fs::read(self.log_path())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_else(|e| format!("(cannot read {}: {e})", self.log_path().display()))
    }

    /// The temporary directory holding everything of this broker.
    pub fn root(&self) -> &Path {
        self.root.as_ref().expect("present until drop").path()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn is_running(&mut self) -> bool {
        match &mut self.child {
            Some(c) => c.try_wait().expect("poll the broker process").is_none(),
            None => false,
        }
    }

    /// Clean shutdown: SIGTERM, wait (at most 30 s), then assert exit status
    /// 0 and that the broker wrote `.kafka_cleanshutdown`.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            self.fail("stop(): the broker is not running");
        };
        // SAFETY: kill(2) on the pid of a child we have not reaped yet.
        let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        assert_eq!(rc, 0, "kill -TERM {}", child.id());
        let status = match wait_timeout(&mut child, STOP_TIMEOUT) {
            Some(s) => s,
            None => {
                let _ = child.kill();
                let _ = child.wait();
                self.fail(&format!(
                    "the broker did not exit within {STOP_TIMEOUT:?} of SIGTERM (killed it)"
                ));
            }
        };
        if !status.success() {
            self.fail(&format!("after SIGTERM the broker exited with {status}"));
        }
        let marker = self.data_dir().join(CLEAN_SHUTDOWN_MARKER);
        if !marker.exists() {
            self.fail(&format!(
                "the broker exited 0 but wrote no clean-shutdown marker {}",
                marker.display()
            ));
        }
    }

    /// Crash: SIGKILL and reap. The data directory is left as the crash
    /// left it; the clean-shutdown marker must be absent (a running broker
    /// deletes it at startup, as Kafka does).
    pub fn kill9(&mut self) {
        let Some(mut child) = self.child.take() else {
            self.fail("kill9(): the broker is not running");
        };
        child.kill().expect("kill -9 the broker");
        child.wait().expect("reap the broker");
        self.wait_ports_released();
        let marker = self.data_dir().join(CLEAN_SHUTDOWN_MARKER);
        if marker.exists() {
            self.fail(&format!(
                "{} exists after a crash: the next start would skip recovery",
                marker.display()
            ));
        }
    }

    /// Waits (at most [`PORT_RELEASE_TIMEOUT`]) until the broker's ports
    /// can be bound again. Measured here: a killed broker's listening
    /// sockets outlive the reaped process by a few milliseconds (most
    /// likely because glommio accepts through io_uring, and the kernel tears
    /// a ring and the files its requests hold down asynchronously after the
    /// process exits), so an immediate restart fails with "metrics.listen
    /// ... is in use". A real supervisor restarts later than that.
    /// Like [`Broker::wait_ports_released`], but gives up quietly: the
    /// start that follows reports a port still taken.
    fn wait_ports_released_for(&self, timeout: Duration) {
        if self.opts.netns.is_some() {
            // Its ports live in another network stack; the start that
            // follows reports a port still taken.
            return;
        }
        let deadline = Instant::now() + timeout;
        for port in [Some(self.port), self.metrics_port()].into_iter().flatten() {
            while !bindable_by_pinlog(port) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }

    fn wait_ports_released(&self) {
        if self.opts.netns.is_some() {
            return;
        }
        let deadline = Instant::now() + PORT_RELEASE_TIMEOUT;
        let ports = [Some(self.port), self.metrics_port(), self.controller_port()];
        for port in ports.into_iter().flatten() {
            while !bindable_by_pinlog(port) {
                if Instant::now() >= deadline {
                    self.fail(&format!(
                        "port {port} still in use {PORT_RELEASE_TIMEOUT:?} after kill -9; its \
                         sockets:\n{}",
                        sockets_on(port)
                    ));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }

    /// The port of `metrics.listen` from the settings file, if it is a
    /// loopback address this harness can probe.
    pub fn metrics_port(&self) -> Option<u16> {
        self.setting_port("metrics.listen")
    }

    /// The port of `controller.listen` from the settings file, if set.
    pub fn controller_port(&self) -> Option<u16> {
        self.setting_port("controller.listen")
    }

    fn setting_port(&self, key: &str) -> Option<u16> {
        let text = std::fs::read_to_string(self.config_path()).ok()?;
        let table: toml::Table = text.parse().ok()?;
        let addr: SocketAddr = table.get(key)?.as_str()?.parse().ok()?;
        Some(addr.port())
    }

    /// The value of `family` on shard 0 in the node's `/metrics`, if it
    /// answers.
    pub fn metric(&self, family: &str) -> Option<f64> {
        self.metric_on_shards(family, |labels| labels.contains("shard=\"0\""))
    }

    /// The sum of `family` over every shard in the node's `/metrics`.
    pub fn metric_total(&self, family: &str) -> Option<f64> {
        self.metric_on_shards(family, |_| true)
    }

    /// The broker process's resident memory, in KiB.
    pub fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }

    fn metric_on_shards(&self, family: &str, shard: impl Fn(&str) -> bool) -> Option<f64> {
        let port = self.metrics_port()?;
        let mut stream = TcpStream::connect((self.opts.host.as_str(), port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(
            stream,
            "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).ok()?;
        let values: Vec<f64> = text
            .lines()
            .filter(|l| l.starts_with(family) && l[family.len()..].starts_with('{'))
            .filter(|l| shard(l))
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect();
        (!values.is_empty()).then(|| values.iter().sum())
    }

    /// Starts the broker again on the same data directory, port and
    /// settings, after [`Broker::stop`] or [`Broker::kill9`] (a running
    /// broker is stopped cleanly first). Waits until it answers.
    pub fn restart(&mut self) {
        if self.is_running() {
            self.stop();
        }
        self.child = None;
        // A process that exited by itself (a panic's exit) may hold its
        // ports a while longer, as after kill -9: the kernel tears its
        // io_uring rings, and the sockets their requests hold, down
        // asynchronously. One CI machine took over 5 s after an exit with a
        // dead shard's accept still queued. Wait, and retry a start that
        // found the port taken, within a bound.
        let deadline = Instant::now() + PORT_RELEASE_AFTER_EXIT;
        loop {
            self.wait_ports_released_for(deadline.saturating_duration_since(Instant::now()));
            self.spawn();
            match self.wait_ready() {
                Ok(()) => return,
                Err(Startup::PortTaken) if Instant::now() < deadline => {
                    // The probe found the ports free but the broker's bind
                    // did not: a pause before the next start, so that the
                    // bounded loop does not spawn processes back to back.
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => {
                    let holders = [Some(self.port), self.metrics_port()]
                        .into_iter()
                        .flatten()
                        .map(|p| format!("port {p}:\n{}", sockets_on(p)))
                        .collect::<Vec<_>>()
                        .join("\n");
                    self.fail(&format!(
                        "broker did not restart: {e:?}; sockets on its ports:\n{holders}"
                    ))
                }
            }
        }
    }

    /// Changes a setting for the next [`Broker::restart`]; the settings
    /// file is rewritten now (the running broker read it at its start).
    #[allow(dead_code)]
    pub fn set_setting(&mut self, key: &str, value: impl Into<toml::Value>) {
        self.opts.settings.insert(key.to_string(), value.into());
        self.write_config();
    }

    /// Sets an environment variable for the next [`Broker::restart`],
    /// replacing its value if [`BrokerOpts::env`] set one.
    #[allow(dead_code)]
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.clear_env(key);
        self.opts.env.push((key.to_string(), value.to_string()));
    }

    /// Drops an environment variable set with [`BrokerOpts::env`], for the
    /// next [`Broker::restart`].
    #[allow(dead_code)]
    pub fn clear_env(&mut self, key: &str) {
        self.opts.env.retain(|(k, _)| k != key);
    }

    /// Panics with `msg` and the broker's log.
    #[track_caller]
    pub fn fail(&self, msg: &str) -> ! {
        panic!(
            "{msg}\n--- broker log ({}) ---\n{}--- end of broker log ---",
            self.log_path().display(),
            self.log()
        );
    }

    fn write_config(&self) {
        let mut settings = self.opts.settings.clone();
        // The metrics endpoint defaults to a fixed port (9644); give every
        // broker its own so parallel tests never collide on it, unless the
        // test chose one.
        settings
            .entry("metrics.listen")
            .or_insert_with(|| format!("{}:{}", self.opts.host, free_port()).into());
        let text = toml::to_string(&settings).expect("settings serialise to TOML");
        std::fs::write(self.config_path(), text).expect("write the broker's settings file");
    }

    fn config_path(&self) -> PathBuf {
        self.root().join("pinlog.toml")
    }

    fn spawn(&mut self) {
        remember_panics();
        self.starts += 1;
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("open the broker log");
        let mut cmd = match &self.opts.netns {
            // `ip netns exec` enters the namespace and execs the broker, so
            // the child's pid is the broker's own (for kill -9 and SIGSTOP).
            Some(ns) => {
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", ns]).arg(PINLOG_BIN);
                cmd
            }
            None => Command::new(PINLOG_BIN),
        };
        cmd.arg("serve")
            .arg("--data-dir")
            .arg(self.data_dir())
            .arg("--listen")
            .arg(format!("{}:{}", self.opts.host, self.port))
            .arg("--shards")
            .arg(self.opts.shards.to_string())
            .arg("--config")
            .arg(self.config_path());
        if let Some(addr) = &self.opts.advertise_addr {
            cmd.arg("--advertise").arg(addr);
        } else if let Some(host) = &self.opts.advertise_host {
            cmd.arg("--advertise").arg(format!("{host}:{}", self.port));
        }
        // Settings come from this test alone: a PINLOG_* variable of the
        // caller's environment (PINLOG_ADVERTISE, say) would otherwise
        // apply wherever no flag above overrides it. RUST_LOG is inherited
        // on purpose, to debug a test with a more verbose broker log.
        for (var, _) in std::env::vars_os() {
            if var.to_string_lossy().starts_with("PINLOG_") {
                cmd.env_remove(var);
            }
        }
        // Plain text in the log file, no ANSI colour codes.
        cmd.env("NO_COLOR", "1");
        for (k, v) in &self.opts.env {
            cmd.env(k, v);
        }
        if let Some(n) = self.opts.open_files_limit {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit is async-signal-safe, as pre_exec requires.
            unsafe {
                cmd.pre_exec(move || {
                    let lim = libc::rlimit {
                        rlim_cur: n,
                        rlim_max: n,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        self.log_offset = log.metadata().map(|m| m.len() as usize).unwrap_or(0);
        writeln!(
            log,
            "=== test harness: start #{} of {cmd:?} ===",
            self.starts
        )
        .expect("write the broker log");
        let stderr = log.try_clone().expect("clone the log file handle");
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(stderr));
        self.child = Some(cmd.spawn().expect("spawn pinlog serve"));
    }

    /// Appends every thread's kernel wait channel and, where gdb is
    /// installed, its stack to the broker's log: a start that hangs (rare,
    /// tests/README.md "Open: a start that hangs") then says where.
    fn append_stacks_to_log(&self) {
        let Some(pid) = self.child.as_ref().map(|c| c.id()) else {
            return;
        };
        let mut report = format!("=== test harness: the start hung; threads of pid {pid} ===\n");
        report.push_str(&thread_states(&format!("/proc/{pid}/task")));
        // Bounded: gdb on a process it cannot attach to gives up at once.
        if let Ok(out) = Command::new("timeout")
            .args(["60", "gdb", "-batch", "-p", &pid.to_string()])
            .args(["-ex", "thread apply all bt"])
            .stdin(Stdio::null())
            .output()
        {
            report.push_str(&String::from_utf8_lossy(&out.stdout));
        }
        // The broker may wait on this process: a test's FUSE file system
        // serves its requests from threads here (tests/broker/power_loss.rs).
        report.push_str("=== the test process's own threads (kernel stacks) ===\n");
        report.push_str(&thread_states("/proc/self/task"));
        report.push_str("=== end of threads ===\n");
        if let Ok(mut log) = OpenOptions::new().append(true).open(self.log_path()) {
            let _ = log.write_all(report.as_bytes());
        }
    }

    /// Polls until ApiVersions works, the process exits, or the deadline.
    fn wait_ready(&mut self) -> Result<(), Startup> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let addr: SocketAddr = format!("{}:{}", self.opts.host, self.port)
            .parse()
            .expect("the broker's host is an IP address");
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .expect("spawned")
                .try_wait()
                .expect("poll the broker process")
            {
                self.child = None;
                let this_start = self.log().get(self.log_offset..).unwrap_or("").to_string();
                // The Kafka port ("cannot listen on ...") or the metrics
                // port ("metrics.listen ... is in use") was taken.
                let taken = this_start.contains("cannot listen on")
                    || (this_start.contains("metrics.listen") && this_start.contains("in use"));
                return Err(if taken {
                    Startup::PortTaken
                } else {
                    Startup::Exited(status)
                });
            }
            match api_versions_probe(addr) {
                Ok(()) => return Ok(()),
                Err(e) if Instant::now() >= deadline => {
                    self.append_stacks_to_log();
                    let _ = self.child.as_mut().expect("spawned").kill();
                    let _ = self.child.take().expect("spawned").wait();
                    return Err(Startup::NotReady(format!(
                        "no ApiVersions answer within {READY_TIMEOUT:?} (last error: {e})"
                    )));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let was_running = match self.child.take() {
            Some(mut child) => {
                let _ = child.kill();
                let _ = child.wait();
                true
            }
            None => false,
        };
        if std::thread::panicking() && was_running {
            // The test failed with the broker alive: show its side, then
            // why the test failed once more, so that it ends the output.
            eprintln!(
                "--- broker log ({}) ---\n{}\n--- end of broker log ---",
                self.log_path().display(),
                tail(&self.log(), BROKER_LOG_TAIL_ON_PANIC),
            );
        }
        // Keep the data directory and log of a failed test, or of every
        // test when PINLOG_TEST_KEEP_DIRS is set (to study a passing run).
        if std::thread::panicking() || std::env::var_os(KEEP_DIRS_ENV).is_some() {
            if let Some(root) = self.root.take() {
                eprintln!(
                    "kept the broker's directory for inspection: {}",
                    root.keep().display()
                );
            }
        }
        if std::thread::panicking() && was_running {
            eprintln!("{}", last_panic_summary());
        }
    }
}

#[derive(Debug)]
enum Startup {
    PortTaken,
    Exited(ExitStatus),
    NotReady(String),
}

/// The Apache Kafka release whose clients and tools the tests run.
pub const KAFKA_VERSION: &str = "4.4.0";

/// The Kafka jars, fetched by tests/kafka/fetch-kafka.sh (a no-op when they
/// are there; CI runs it beforehand). Panics with what to install when
/// they cannot be had.
pub fn kafka_libs() -> PathBuf {
    let libs = std::env::var_os("PINLOG_KAFKA_LIBS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| {
                Path::new(&home)
                    .join(".cache/pinlog")
                    .join(format!("kafka-{KAFKA_VERSION}"))
                    .join("libs")
            })
        })
        .expect("neither PINLOG_KAFKA_LIBS nor HOME is set: cannot place the Kafka jars");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kafka/fetch-kafka.sh");
    let out = run_command(
        Command::new(&script).arg(&libs),
        None,
        Duration::from_secs(600),
    );
    assert!(
        out.success(),
        "the Kafka {KAFKA_VERSION} jars in {} (fetching them failed:\n{out}) are not available; \
         install them with `apt-get install maven; tests/kafka/fetch-kafka.sh` (CI does), \
         or set PINLOG_SKIP_CLIENT_TESTS=1 to skip the client tests",
        libs.display()
    );
    libs
}

/// Several combined-mode nodes (`process.roles=broker,controller`) on
/// loopback forming one metadata quorum, with short timeouts so that
/// elections and fencing happen within a test's patience.
pub struct Cluster {
    pub nodes: Vec<Broker>,
}

/// The quorum and session timeouts of test clusters (Kafka's defaults are
/// 2 s fetch, 1 s election, 2 s heartbeat, 9 s session).
pub const TEST_FETCH_TIMEOUT_MS: i64 = 1000;
pub const TEST_ELECTION_TIMEOUT_MS: i64 = 500;
pub const TEST_HEARTBEAT_INTERVAL_MS: i64 = 200;
pub const TEST_SESSION_TIMEOUT_MS: i64 = 1500;
/// How long a new cluster may take to elect a leader and register every
/// node.
const CLUSTER_READY_TIMEOUT: Duration = Duration::from_secs(60);

impl Cluster {
    /// Starts `n` nodes with ids 1..=n; `opts` applies to each (one shard,
    /// no spinning: several nodes share this machine's cores).
    pub fn start(n: usize, opts: BrokerOpts) -> Cluster {
        Self::start_placed(&vec![None; n], opts)
    }

    /// Starts one node per entry of `places`, node `i + 1` inside the
    /// network namespace and on the address `places[i]` names (see
    /// [`netns::Testbed::place`]), or on loopback where it is `None`.
    pub fn start_placed(places: &[Option<(String, String)>], opts: BrokerOpts) -> Cluster {
        Self::start_nodes(places, opts, &|_, node| node)
    }

    /// Like [`Cluster::start`], where `each(id, options)` gives node `id`
    /// (1-based) options of its own, such as a listener port or a
    /// certificate: every node starts from `opts` and the cluster's own
    /// settings.
    pub fn start_each(
        n: usize,
        opts: BrokerOpts,
        each: impl Fn(usize, BrokerOpts) -> BrokerOpts,
    ) -> Cluster {
        Self::start_nodes(&vec![None; n], opts, &each)
    }

    fn start_nodes(
        places: &[Option<(String, String)>],
        opts: BrokerOpts,
        each: &dyn Fn(usize, BrokerOpts) -> BrokerOpts,
    ) -> Cluster {
        let controllers: Vec<(String, u16)> = places
            .iter()
            .map(|place| {
                let host = place.as_ref().map_or("127.0.0.1", |(_, host)| host);
                (host.to_string(), free_port())
            })
            .collect();
        let voters = controllers
            .iter()
            .enumerate()
            .map(|(i, (host, port))| format!("{}@{host}:{port}", i + 1))
            .collect::<Vec<_>>()
            .join(",");
        let nodes: Vec<Broker> = controllers
            .iter()
            .zip(places)
            .enumerate()
            .map(|(i, ((host, port), place))| {
                let mut node = each(i + 1, Self::node_opts(&opts, i as i64 + 1, &voters, *port));
                if let Some((ns, host)) = place {
                    node = node.in_netns(ns, host);
                }
                let listen = format!("{host}:{port}");
                Broker::launch(node.setting("controller.listen", listen))
            })
            .collect();
        let mut cluster = Cluster { nodes };
        let deadline = Instant::now() + CLUSTER_READY_TIMEOUT;
        for node in &mut cluster.nodes {
            while Instant::now() < deadline {
                match node.wait_ready() {
                    Ok(()) => break,
                    // Another process (another node's metrics endpoint, in
                    // one CI run) took its Kafka or metrics port between our
                    // probe and its bind. Nobody knows those ports yet, so
                    // it takes new ones; its controller port stays, as the
                    // voters name it.
                    Err(Startup::PortTaken) => node.take_new_ports(),
                    Err(_) => {}
                }
                node.relaunch();
            }
        }
        cluster
    }

    /// The settings of node `id` of a cluster with `voters`. A timeout
    /// `opts` sets itself wins over the test default.
    pub fn node_opts(opts: &BrokerOpts, id: i64, voters: &str, controller_port: u16) -> BrokerOpts {
        let mut node = BrokerOpts::new()
            .setting("node.id", id)
            .setting("controller.quorum.voters", voters)
            .setting("controller.listen", format!("127.0.0.1:{controller_port}"))
            .setting("controller.quorum.fetch.timeout.ms", TEST_FETCH_TIMEOUT_MS)
            .setting(
                "controller.quorum.election.timeout.ms",
                TEST_ELECTION_TIMEOUT_MS,
            )
            .setting("broker.heartbeat.interval.ms", TEST_HEARTBEAT_INTERVAL_MS)
            .setting("broker.session.timeout.ms", TEST_SESSION_TIMEOUT_MS)
            .setting("shard.spin.before.park.us", 0);
        let own = opts.clone().shards(opts.cluster_shards);
        for (k, v) in &own.settings {
            if !matches!(
                k.as_str(),
                "node.id" | "controller.quorum.voters" | "controller.listen"
            ) {
                node.settings.insert(k.clone(), v.clone());
            }
        }
        BrokerOpts {
            settings: node.settings,
            ..own
        }
    }

    /// `controller.quorum.voters` of this cluster.
    pub fn voters(&self) -> String {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let port = n
                    .controller_port()
                    .expect("a cluster node has a controller port");
                format!("{}@{}:{port}", i + 1, n.opts.host)
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Node `id` (1-based).
    pub fn node(&mut self, id: usize) -> &mut Broker {
        &mut self.nodes[id - 1]
    }

    /// Every node's bootstrap address, comma-separated.
    pub fn bootstrap(&self) -> String {
        self.nodes
            .iter()
            .map(Broker::bootstrap)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Panics with `msg` and every node's log.
    #[track_caller]
    pub fn fail(&self, msg: &str) -> ! {
        let mut logs = String::new();
        for (i, n) in self.nodes.iter().enumerate() {
            logs.push_str(&format!(
                "--- node {} log ---\n{}",
                i + 1,
                tail(&n.log(), 80)
            ));
        }
        panic!("{msg}\n{logs}--- end of logs ---");
    }
}

/// Whether pinlog could listen on loopback `port` now. pinlog binds its
/// listeners with SO_REUSEADDR and SO_REUSEPORT, so the socket a killed
/// node leaves in FIN-WAIT-2 (a peer that has not closed its end yet) does
/// not keep its successor from binding; a plain bind would wait for it.
pub fn bindable_by_pinlog(port: u16) -> bool {
    let Ok(socket) = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
    else {
        return false;
    };
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    socket.set_reuse_address(true).is_ok()
        && socket.set_reuse_port(true).is_ok()
        && socket.bind(&addr.into()).is_ok()
}

/// Polls `cond` every 50 ms until it holds or `timeout` passes; whether it
/// held.
pub fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A loopback port that was free a moment ago (bind to port 0, read it,
/// release it), and that no earlier call in this test process returned.
///
/// The second condition matters because pinlog listens with SO_REUSEPORT:
/// the kernel lets two of its processes bind the same port and then deals
/// connections out between them. Tests in one binary run in parallel, and
/// a port released here can be handed out again before the broker it was
/// meant for binds it; two clusters would then share a port, and a client
/// of one would now and then reach the other (seen in CI: a node "closed
/// the connection" on ApiVersions).
pub fn free_port() -> u16 {
    static HANDED_OUT: std::sync::Mutex<BTreeSet<u16>> = std::sync::Mutex::new(BTreeSet::new());
    // Bounded: the ephemeral range has tens of thousands of ports and a
    // test process hands out at most a few hundred.
    for _ in 0..FREE_PORT_ATTEMPTS {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("bind 127.0.0.1:0")
            .port();
        let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        if handed_out.insert(port) {
            return port;
        }
    }
    panic!("no loopback port that this test process has not used after {FREE_PORT_ATTEMPTS} tries");
}

/// How many ports [`free_port`] draws before it gives up.
const FREE_PORT_ATTEMPTS: usize = 1000;

/// One ApiVersions round trip with pinlog's own codec; `Ok` when the
/// broker answers with error code 0 and a non-empty API list.
pub fn api_versions_probe(addr: SocketAddr) -> Result<(), String> {
    let timeout = Duration::from_secs(2);
    let mut stream = TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| e.to_string())?;
    api_versions_round_trip(&mut stream)
}

/// One ApiVersions round trip on a connected stream (plain, or TLS set up
/// by the caller); `Ok` as for [`api_versions_probe`].
pub fn api_versions_round_trip(stream: &mut (impl Read + Write)) -> Result<(), String> {
    let version = PROBE_API_VERSIONS_VERSION;
    let correlation_id = 7;
    let mut body = BytesMut::new();
    RequestHeader {
        api_key: API_VERSIONS_KEY,
        api_version: version,
        correlation_id,
        client_id: Some("pinlog-test-probe".into()),
    }
    .encode(&mut body, 2);
    ApiVersionsRequest {
        client_software_name: "pinlog-tests".into(),
        client_software_version: "0".into(),
    }
    .encode(&mut body, version);
    let response = round_trip(stream, &body)?;
    let mut r = Reader::new(response);
    // ApiVersions responses always use response header v0.
    let got = decode_response_header(&mut r, 0).map_err(|e| e.to_string())?;
    if got != correlation_id {
        return Err(format!("correlation id {got}, expected {correlation_id}"));
    }
    let resp = ApiVersionsResponse::decode(&mut r, version).map_err(|e| e.to_string())?;
    if resp.error_code != 0 || resp.api_keys.is_empty() {
        return Err(format!("unexpected ApiVersions response {resp:?}"));
    }
    Ok(())
}

/// Writes one size-prefixed request and reads one size-prefixed response
/// (returned without its size).
pub fn round_trip(stream: &mut (impl Read + Write), request: &[u8]) -> Result<Bytes, String> {
    let mut frame = BytesMut::with_capacity(4 + request.len());
    frame.put_i32(request.len() as i32);
    frame.put_slice(request);
    stream.write_all(&frame).map_err(|e| e.to_string())?;
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).map_err(|e| e.to_string())?;
    let size = (&size[..]).get_i32();
    if !(0..=64 << 20).contains(&size) {
        return Err(format!("response size {size}"));
    }
    let mut buf = vec![0u8; size as usize];
    stream.read_exact(&mut buf).map_err(|e| e.to_string())?;
    Ok(Bytes::from(buf))
}

/// What a command did, from [`run_command`].
#[derive(Debug)]
pub struct CmdOutput {
    /// What ran, for messages.
    pub what: String,
    /// `None` when it was killed at the time limit.
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl CmdOutput {
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    pub fn timed_out(&self) -> bool {
        self.status.is_none()
    }

    /// Panics with the full output unless the command exited 0.
    pub fn assert_success(&self) -> &Self {
        assert!(self.success(), "command failed:\n{self}");
        self
    }
}

impl CmdOutput {
    /// The command, its status, the last `stdout_lines` lines of stdout
    /// and the last 200 of stderr.
    pub fn display_with(&self, stdout_lines: usize) -> String {
        let status = match self.status {
            Some(s) => s.to_string(),
            None => "KILLED at the time limit".to_string(),
        };
        format!(
            "$ {}\n{status} after {:.1?}\n--- stdout ---\n{}\n--- stderr ---\n{}\n--- end ---",
            self.what,
            self.elapsed,
            tail(&self.stdout, stdout_lines),
            tail(&self.stderr, 200)
        )
    }
}

impl std::fmt::Display for CmdOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display_with(200))
    }
}

/// Each thread under `tasks` (a `/proc/<pid>/task` directory): its id,
/// name, state, kernel wait channel and, where readable (as root), its
/// kernel stack.
fn thread_states(tasks: &str) -> String {
    let mut report = String::new();
    let Ok(tasks) = std::fs::read_dir(tasks) else {
        return report;
    };
    for task in tasks.flatten() {
        let read = |f: &str| {
            std::fs::read_to_string(task.path().join(f))
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        // The state letter follows the command name in `stat`.
        let stat = read("stat");
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .unwrap_or("?")
            .to_string();
        report.push_str(&format!(
            "{} {} state={state} wchan={}\n",
            task.file_name().to_string_lossy(),
            read("comm"),
            read("wchan"),
        ));
        let stack = read("stack");
        if state == "D" || (!stack.is_empty() && state != "R") {
            for line in stack.lines() {
                report.push_str(&format!("    {line}\n"));
            }
        }
    }
    report
}

/// How many of a live broker's last log lines its `Drop` prints when the
/// test panicked (the whole log stays in the kept directory).
const BROKER_LOG_TAIL_ON_PANIC: usize = 150;

/// How much of a panic's message [`last_panic_summary`] repeats: its first
/// lines, before any log the message carries.
const PANIC_SUMMARY_LINES: usize = 25;

thread_local! {
    /// The message of the last panic on this thread: a test's brokers
    /// are dropped on the thread whose panic ended it, and tests run in
    /// parallel on threads of their own.
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Installs (once) a panic hook that remembers each panic's message and
/// location for [`last_panic_summary`], then reports it as before.
fn remember_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(a panic without a message)".into());
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let thread = std::thread::current().name().unwrap_or("?").to_string();
            LAST_PANIC.with(|last| {
                *last.borrow_mut() = Some(format!("thread '{thread}' panicked{at}:\n{msg}"));
            });
            previous(info);
        }));
    });
}

/// The last panic's location and the first lines of its message, framed
/// as the test's failure.
fn last_panic_summary() -> String {
    let Some(msg) = LAST_PANIC.with(|last| last.borrow().clone()) else {
        return String::new();
    };
    // A message that carries logs (Broker::fail, Cluster::fail) repeats
    // only what comes before them.
    let head = msg.split("\n--- ").next().unwrap_or(&msg);
    let head: Vec<&str> = head.lines().take(PANIC_SUMMARY_LINES).collect();
    format!(
        "=== the test failed: ===\n{}\n=== (the whole message is above) ===",
        head.join("\n")
    )
}

/// The last `lines` lines of `s`, with a note of how many were left out.
pub fn tail(s: &str, lines: usize) -> String {
    let all: Vec<&str> = s.lines().collect();
    if all.len() <= lines {
        return s.to_string();
    }
    format!(
        "[... {} earlier lines left out ...]\n{}",
        all.len() - lines,
        all[all.len() - lines..].join("\n")
    )
}

/// Produces records `k<i>\tv<i>` for `i` in `from..from + count` to
/// `topic` through kcat with acks=all; its output says whether every one
/// was acknowledged.
#[allow(dead_code)]
pub fn kcat_produce(bootstrap: &str, topic: &str, from: usize, count: usize) -> CmdOutput {
    let input: String = (from..from + count)
        .map(|i| format!("k{i}\tv{i}\n"))
        .collect();
    run_command(
        Command::new("kcat").args([
            "-P",
            "-b",
            bootstrap,
            "-t",
            topic,
            "-K",
            "\t",
            "-X",
            "acks=all",
            "-X",
            "message.timeout.ms=30000",
        ]),
        Some(input.as_bytes()),
        Duration::from_secs(60),
    )
}

/// How many records `topic` holds, read from the start through kcat.
#[allow(dead_code)]
pub fn kcat_count(bootstrap: &str, topic: &str) -> usize {
    let out = run_command(
        Command::new("kcat")
            .args([
                "-C",
                "-b",
                bootstrap,
                "-t",
                topic,
                "-o",
                "beginning",
                "-e",
                "-q",
            ])
            .stdin(std::process::Stdio::null()),
        None,
        Duration::from_secs(60),
    );
    out.stdout.lines().filter(|l| !l.is_empty()).count()
}

/// `kafka-cluster.sh unregister --id ID` (Kafka's ClusterTool) through
/// `bootstrap`, with the Kafka jars CI fetches.
#[allow(dead_code)]
pub fn kafka_unregister_broker(bootstrap: &str, id: i32) -> CmdOutput {
    let jars = format!("{}/*", kafka_libs().display());
    run_command(
        Command::new("java")
            .args(["-XX:TieredStopAtLevel=1", "-cp", &jars])
            .arg("org.apache.kafka.tools.ClusterTool")
            .args([
                "unregister",
                "--bootstrap-server",
                bootstrap,
                "--id",
                &id.to_string(),
            ]),
        None,
        Duration::from_secs(120),
    )
}

/// `kafka-features.sh ARGS --bootstrap-server BOOTSTRAP` (Kafka's
/// FeatureCommand), with the Kafka jars CI fetches.
pub fn kafka_features(bootstrap: &str, args: &[&str]) -> CmdOutput {
    let jars = format!("{}/*", kafka_libs().display());
    run_command(
        Command::new("java")
            .args(["-XX:TieredStopAtLevel=1", "-cp", &jars])
            .arg("org.apache.kafka.tools.FeatureCommand")
            .args(["--bootstrap-server", bootstrap])
            .args(args),
        None,
        Duration::from_secs(120),
    )
}

/// One row of `kafka-features.sh describe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedFeature {
    pub supported_min: i16,
    pub supported_max: i16,
    pub finalized_level: i16,
    pub epoch: i64,
}

/// The row of `feature` in the output of `kafka-features.sh describe`
/// (`Feature: NAME  SupportedMinVersion: 0  SupportedMaxVersion: 2
/// FinalizedVersionLevel: 2  Epoch: 7`), if it lists the feature.
pub fn described_feature(describe_stdout: &str, feature: &str) -> Option<DescribedFeature> {
    describe_stdout.lines().find_map(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        let value = |key: &str| -> Option<&str> {
            let at = words.iter().position(|w| *w == key)?;
            words.get(at + 1).copied()
        };
        if value("Feature:")? != feature {
            return None;
        }
        Some(DescribedFeature {
            supported_min: value("SupportedMinVersion:")?.parse().ok()?,
            supported_max: value("SupportedMaxVersion:")?.parse().ok()?,
            finalized_level: value("FinalizedVersionLevel:")?.parse().ok()?,
            epoch: value("Epoch:")?.parse().ok()?,
        })
    })
}

/// Runs `pinlog serve` with `args` on a new data directory and a free
/// port, expecting it to refuse to start: it must exit (not time out) with
/// a failure, and its message must contain every one of `mentions`.
#[allow(dead_code)]
pub fn assert_serve_refused(args: &[&str], mentions: &[&str]) {
    let dir = tempfile::tempdir().expect("create a temporary data directory");
    let data = dir.path().join("data");
    let listen = format!("127.0.0.1:{}", free_port());
    let mut all = vec![
        "serve",
        "--data-dir",
        data.to_str().expect("a UTF-8 path"),
        "--listen",
        &listen,
    ];
    all.extend_from_slice(args);
    let out = run_command(
        Command::new(PINLOG_BIN).args(&all),
        None,
        Duration::from_secs(30),
    );
    assert!(!out.success() && !out.timed_out(), "{out}");
    for m in mentions {
        assert!(out.stderr.contains(m), "the message names {m:?}: {out}");
    }
}

/// Runs `cmd` to completion or for at most `timeout` (then kills it),
/// feeding it `stdin` and collecting stdout and stderr (lossy UTF-8).
pub fn run_command(cmd: &mut Command, stdin: Option<&[u8]>, timeout: Duration) -> CmdOutput {
    let what = format!("{cmd:?}");
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    // Feed stdin and drain both pipes on threads, so that a child that
    // fills a pipe never blocks the time limit below.
    let feeder = stdin.map(|input| {
        let input = input.to_vec();
        let mut pipe = child.stdin.take().expect("piped stdin");
        std::thread::spawn(move || {
            // A child that exits early closes the pipe: not our error.
            let _ = pipe.write_all(&input);
        })
    });
    let out = drain(child.stdout.take().expect("piped stdout"));
    let err = drain(child.stderr.take().expect("piped stderr"));
    let status = wait_timeout(&mut child, timeout);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    if let Some(f) = feeder {
        let _ = f.join();
    }
    CmdOutput {
        what,
        status,
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
        elapsed: started.elapsed(),
    }
}

fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Waits for `child` for at most `timeout`; `None` if it is still running.
pub fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("poll child process") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first `name` on `PATH` that is a file.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Creates a file in `dir` with `contents` and returns its path.
pub fn write_file(dir: &Path, name: &str, contents: &[u8]) -> PathBuf {
    let path = dir.join(name);
    File::create(&path)
        .and_then(|mut f| f.write_all(contents))
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    path
}

/// A loopback TCP proxy whose connections the test can cut at once, as a
/// network failure or a broker-side close would: clients see their
/// connections drop, while the broker keeps running (and keeps its fetch
/// sessions). Point a broker's advertised address at it
/// ([`BrokerOpts::advertise`]), then [`CutProxy::forward_to`] the broker.
pub struct CutProxy {
    port: u16,
    shared: std::sync::Arc<ProxyShared>,
    acceptor: Option<std::thread::JoinHandle<()>>,
}

struct ProxyShared {
    target: std::sync::Mutex<Option<SocketAddr>>,
    /// Both ends of every live connection, to shut down on a cut.
    streams: std::sync::Mutex<Vec<TcpStream>>,
    stop: std::sync::atomic::AtomicBool,
}

/// How often the proxy's accept loop checks for stop.
const PROXY_POLL: Duration = Duration::from_millis(10);

impl CutProxy {
    /// Listens on a free loopback port; connections are refused (closed)
    /// until [`CutProxy::forward_to`] names the target.
    pub fn start() -> CutProxy {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{Arc, Mutex};
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        listener.set_nonblocking(true).expect("non-blocking accept");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(ProxyShared {
            target: Mutex::new(None),
            streams: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let acceptor = std::thread::spawn(move || {
            while !s.stop.load(Ordering::SeqCst) {
                let client = match listener.accept() {
                    Ok((c, _)) => c,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(PROXY_POLL);
                        continue;
                    }
                    Err(_) => continue,
                };
                let target = *s.target.lock().unwrap();
                let Some(target) = target else { continue };
                let Ok(upstream) = TcpStream::connect(target) else {
                    continue;
                };
                let _ = client.set_nonblocking(false);
                let _ = client.set_nodelay(true);
                let _ = upstream.set_nodelay(true);
                let (Ok(c2), Ok(u2)) = (client.try_clone(), upstream.try_clone()) else {
                    continue;
                };
                {
                    let mut streams = s.streams.lock().unwrap();
                    streams.push(c2);
                    streams.push(u2);
                }
                let (Ok(mut c_read), Ok(mut u_read)) = (client.try_clone(), upstream.try_clone())
                else {
                    continue;
                };
                let (mut c_write, mut u_write) = (client, upstream);
                // Each direction copies until either side closes; a cut
                // shuts both sockets down, which ends both copies.
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c_read, &mut u_write);
                    let _ = u_write.shutdown(std::net::Shutdown::Both);
                });
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut u_read, &mut c_write);
                    let _ = c_write.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        CutProxy {
            port,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// `127.0.0.1:PORT` of the proxy.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Forwards new connections to `target` (`HOST:PORT`).
    pub fn forward_to(&self, target: &str) {
        *self.shared.target.lock().unwrap() = Some(target.parse().expect("a socket address"));
    }

    /// Shuts down every live connection; returns how many there were.
    pub fn cut_all(&self) -> usize {
        let streams: Vec<TcpStream> = self.shared.streams.lock().unwrap().drain(..).collect();
        for s in &streams {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        streams.len() / 2
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.shared
            .stop
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.cut_all();
        if let Some(t) = self.acceptor.take() {
            let _ = t.join();
        }
    }
}

/// Spawns `cmd` with its stdout and stderr in `<dir>/<name>.out`, for a
/// long-running client the test watches while it runs.
pub fn spawn_logged(cmd: &mut Command, dir: &Path, name: &str) -> Child {
    let out = File::create(dir.join(format!("{name}.out"))).expect("create the client's log");
    let err = out.try_clone().expect("clone the client's log handle");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {name}: {e}"))
}

/// What a client started with [`spawn_logged`] wrote so far.
pub fn read_logged(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(format!("{name}.out"))).unwrap_or_default()
}

/// `pinlog cluster describe --json` through `node`, parsed.
#[allow(dead_code)]
pub fn cluster_describe(node: &Broker) -> Option<serde_json::Value> {
    let out = run_command(
        Command::new(PINLOG_BIN).args([
            "cluster",
            "describe",
            "--json",
            "--bootstrap-server",
            &node.bootstrap(),
        ]),
        None,
        Duration::from_secs(60),
    );
    if !out.success() {
        return None;
    }
    serde_json::from_str(&out.stdout).ok()
}

/// The record batches of a segment file, without the zeros that pad an
/// active segment to the direct-I/O block size (a closed or recovered
/// segment has none): replicas hold the same batches, but only the active
/// segment of a running broker is padded. Walks the batches by their
/// length fields and stops at the first that is not whole.
pub fn segment_batches(path: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap_or_default();
    let end = pinlog::log::batch::whole_batches_len(&bytes);
    bytes.truncate(end);
    bytes
}

/// The sockets `ss` lists on `port`, with their processes: who holds a
/// port a test expected free, for its failure message.
fn sockets_on(port: u16) -> String {
    Command::new("ss")
        .args(["-tanp"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.contains(&format!(":{port} ")))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}
