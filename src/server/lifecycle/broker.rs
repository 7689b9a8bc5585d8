//! `pinlog serve`: the broker's lifecycle.
//!
//! Startup: bind `metrics.listen`, read the data directory's identity and
//! shutdown state, start the shards, open the metadata log on shard 0 and
//! publish its image to every shard, then listen on every shard
//! (SO_REUSEPORT) and serve `/metrics` on shard 0. Shutdown on
//! SIGINT/SIGTERM: stop accepting, let in-flight requests finish, stop the
//! metrics endpoint, close the metadata log; the shard runtime then flushes
//! every partition and writes the checkpoints and the clean-shutdown marker.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use glommio::net::TcpListener;

use crate::broker_config::sasl_settings::SaslSettings;
use crate::broker_config::BrokerConfig;
use crate::log::cleaner::CleanerOptions;
use crate::log::data_dir::DataDirLock;
use crate::memory;
use crate::metadata::image::MetadataImage;
use crate::node::state::BrokerState;
use crate::node::stop::StopHandle;
use crate::quorum::{Publish, Quorum, QuorumSettings};
use crate::security::controller_channel::ControllerChannelTls;
use crate::security::listener_tls::ListenerCertificates;
use crate::security::tls;
use crate::server::controller::{self, Controller, CONTROLLER_SHARD};
use crate::server::handlers::quota::{QuotaRegistry, ShardQuotas};
use crate::server::image_applier;
use crate::server::lifecycle::{cluster_id, controlled_shutdown, registration, storage_failure};
use crate::server::metrics::http as metrics_http;
use crate::server::network::connection::{serve_connection, ServedListener};
use crate::server::network::sasl::SaslServing;
use crate::shard::cache_budget;
use crate::shard::checkpoints;
use crate::shard::flush_policy::FlushWatch;
use crate::shard::runtime::{run_shards, ShardConfig, Shutdown};
use crate::shard::shard::{now_ms, Shard};
use crate::shard::spin;
use crate::shard::startup_progress::{StartupProgress, StartupWait, STARTUP_PROGRESS_LOG_INTERVAL};
use crate::ticks::sleep_to_next_tick;

/// How often idle shards look at the stop flag and run the flush timer.
const TICK: Duration = Duration::from_millis(50);
/// Pending connections per shard listener (the kernel caps it at somaxconn).
const LISTEN_BACKLOG: i32 = 1024;
/// How long shutdown waits for in-flight requests before closing anyway.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a shard waits for shard 0 to publish the first image.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);
/// Kafka's `log.flush.offset.checkpoint.interval.ms` default: 1 minute.
/// The checkpoints are written together, so they are written at the
/// shorter of this and `replica.high.watermark.checkpoint.interval.ms`.
const RECOVERY_POINT_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(60);

/// Blocks SIGINT and SIGTERM in this thread (and so in every thread started
/// after it) and turns them into a stop request on a dedicated thread.
fn install_signal_thread(stop: StopHandle) -> Result<(), String> {
    // SAFETY: sigemptyset/sigaddset fill a sigset_t we own (zeroed plain
    // data), pthread_sigmask reads it; signal() only changes a disposition.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return Err("cannot block SIGINT/SIGTERM".into());
        }
        // Writes to closed sockets must return EPIPE, not kill the broker.
        if libc::signal(libc::SIGPIPE, libc::SIG_IGN) == libc::SIG_ERR {
            return Err("cannot ignore SIGPIPE".into());
        }
        set
    };
    std::thread::Builder::new()
        .name("pinlog-signals".into())
        .spawn(move || {
            // The first signal asks for a controlled shutdown, a second one
            // stops at once.
            for first in [true, false] {
                let mut sig: libc::c_int = 0;
                // SAFETY: sigwait reads the sigset we own and writes one int.
                // It fails only with EINVAL for an invalid set, which this is
                // not; stop the thread rather than spin if it ever does.
                match unsafe { libc::sigwait(&set, &mut sig) } {
                    0 if first => {
                        tracing::info!("received signal {sig}: shutting down");
                        stop.request_shutdown();
                    }
                    0 => {
                        tracing::warn!("received signal {sig} again: stopping at once");
                        stop.request();
                    }
                    e => {
                        tracing::error!(
                            "sigwait failed ({e}): SIGINT/SIGTERM will not stop the broker"
                        );
                        return;
                    }
                }
            }
        })
        .map_err(|e| format!("cannot start the signal thread: {e}"))?;
    Ok(())
}

/// Runs the broker until SIGINT/SIGTERM.
pub fn serve(config: BrokerConfig) -> Result<(), String> {
    let stop = StopHandle::new();
    install_signal_thread(stop.clone())?;
    raise_open_files_limit();
    // A panicking shard may leave its partitions half changed, and its peers
    // may wait for it forever. Halt at once, as Kafka halts on a fatal error:
    // no other shard acknowledges anything more, no clean-shutdown marker is
    // written, and the next start runs recovery. A supervisor restarts it.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        tracing::error!(
            "a shard panicked: halting the broker with exit status {EXIT_AFTER_PANIC}; the next start runs recovery"
        );
        std::process::exit(EXIT_AFTER_PANIC);
    }));
    run(config, stop)
}

/// Exit status after a shard panic (EX_SOFTWARE).
pub const EXIT_AFTER_PANIC: i32 = 70;
/// Test-only: makes the last shard panic this many milliseconds after it
/// starts serving, so that tests can check what a shard panic does.
pub const TEST_PANIC_ENV: &str = "PINLOG_TEST_SHARD_PANIC_AFTER_MS";

/// Each partition holds a few descriptors (its active segment, indexes):
/// take the hard limit on open files rather than the often much lower soft
/// one, as Kafka's start scripts advise operators to.
fn raise_open_files_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 || lim.rlim_cur >= lim.rlim_max {
            return;
        }
        let from = lim.rlim_cur;
        lim.rlim_cur = lim.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
            tracing::info!(from, to = lim.rlim_max, "raised the open-files limit");
        }
    }
}

/// Runs the broker until `stop` is requested; no signal handling. Each
/// broker has its own handle, so several can run in one process.
pub fn run(config: BrokerConfig, stop: StopHandle) -> Result<(), String> {
    let started = Instant::now();
    // Bound here, before any shard starts, so that a port in use stops the
    // broker at once with an error naming the setting; shard 0 serves it.
    let metrics_listener = match metrics_http::bind(config.metrics_listen) {
        Ok(l) => Some(l),
        Err(e) if !config.metrics_listen_explicit => {
            tracing::warn!(
                "metrics endpoint disabled: {e}; set \"metrics.listen\" to a free HOST:PORT to serve it"
            );
            None
        }
        Err(e) => return Err(e),
    };
    let metrics_listener = Arc::new(Mutex::new(metrics_listener));
    // Every shard binds the Kafka port with SO_REUSEPORT, which would let a
    // second broker of the same user share the port silently. A plain bind
    // first fails loudly when anything already listens there. A
    // controller-only node serves no clients and binds no Kafka port.
    if config.cluster.broker_role {
        for l in &config.listeners.all {
            std::net::TcpListener::bind(l.bind).map_err(|e| {
                format!(
                    "cannot listen on {} (listener {}): {e}; is another broker running there? \
                     choose another address with --listen or listeners",
                    l.bind, l.name
                )
            })?;
        }
    }
    let certificates = Arc::new(ListenerCertificates::build(&config)?);
    let served_listeners = Arc::new(served_listeners(&config, &certificates)?);
    let inter_broker_security = tls::InterBrokerSecurity::from_config(&config)?;
    let quota_registry = Arc::new(QuotaRegistry::default());
    // Held until `run` returns; the kernel releases it if the process dies.
    let _data_dir_lock = DataDirLock::acquire(&config.data_dir)?;
    let cluster_id: Option<String> = cluster_id::load(&config.data_dir, config.node_id)?;
    let mut shard_config = ShardConfig::new(&config.data_dir);
    if let Some(n) = config.shards {
        shard_config.shard_count = n;
    }
    // The read cache's ceiling: read.cache.bytes, or three quarters of the
    // memory limit; each shard's watch keeps its budget under it, following
    // the memory that is free (`memory.rs`).
    let machine_memory = memory::read_memory();
    let read_cache_ceiling = config.read_cache_bytes.unwrap_or_else(|| {
        usize::try_from(memory::default_ceiling_bytes(&machine_memory)).unwrap_or(usize::MAX)
    });
    let read_cache_budget = memory::cache_budget(
        &machine_memory,
        memory::ShardCache {
            used_bytes: 0,
            budget_bytes: read_cache_ceiling as u64,
            ceiling_bytes: read_cache_ceiling as u64,
            shards: 1,
        },
    );
    shard_config.read_cache_bytes = read_cache_ceiling / shard_config.shard_count.max(1);
    let spin = spin::choose(
        config.spin_before_park_us,
        &shard_config.shard_cpus(),
        &spin::read_cpu(),
    );
    shard_config.spin_before_park = spin.spin;
    shard_config.io_memory_bytes = config.io_memory_bytes;
    shard_config.log_defaults = config.log.clone();
    let shards = shard_config.shard_count;
    let progress = shard_config.startup_progress.clone();
    let config = Arc::new(config);
    tracing::info!(
        data_dir = %config.data_dir.display(),
        shards,
        node_id = config.node_id,
        cluster_id = cluster_id.as_deref().unwrap_or("(new: adopts the quorum's)"),
        read_cache_ceiling_bytes = read_cache_ceiling,
        read_cache_set = config.read_cache_bytes.is_some(),
        read_cache_budget_bytes = read_cache_budget,
        memory_limit_bytes = ?machine_memory.limit_bytes(),
        memory_free_bytes = ?machine_memory.free_bytes(),
        memory_pressure_some_avg10 = ?machine_memory.pressure_some_avg10,
        spin_before_park_us = spin.spin.as_micros() as u64,
        spin_reason = spin.reason,
        "starting pinlog {}",
        env!("CARGO_PKG_VERSION")
    );
    let watch = watch_startup(progress.clone(), shards);
    let outcome = run_shards(shard_config, Shutdown::Clean, move |shard| {
        let config = config.clone();
        let cluster_id = cluster_id.clone();
        let metrics_listener = match shard.id() {
            0 => metrics_listener
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take(),
            _ => None,
        };
        let stop = stop.clone();
        let listeners = served_listeners.clone();
        shard.set_extension(Rc::new(inter_broker_security.clone()));
        shard.set_extension(Rc::new(certificates.clone()));
        shard.set_extension(Rc::new(ShardQuotas::new(quota_registry.clone())));
        async move {
            shard_main(
                shard,
                config,
                cluster_id,
                started,
                metrics_listener,
                listeners,
                stop,
            )
            .await
        }
    })
    .map_err(|e| e.to_string());
    // The shards stopped, or never started (run_shards returns early on a
    // data directory it cannot read): the watch ends at once either way.
    progress.end();
    if watch.join().is_err() {
        tracing::error!("the start-progress watch panicked");
    }
    let outcome = outcome?;
    let mut failed = None;
    for r in outcome.results {
        if let Err(e) = r {
            failed.get_or_insert(e);
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    tracing::info!(clean = outcome.clean, "pinlog stopped");
    Ok(())
}

/// Logs every shard's stage each `STARTUP_PROGRESS_LOG_INTERVAL` until all
/// serve or the shards stop (see `shard::startup_progress`).
fn watch_startup(progress: Arc<StartupProgress>, shards: usize) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let started = Instant::now();
        while let StartupWait::Slow(stages) = progress.wait(shards, STARTUP_PROGRESS_LOG_INTERVAL) {
            tracing::warn!(
                "pinlog is still starting after {} s: {stages}",
                started.elapsed().as_secs()
            );
        }
    })
}

async fn shard_main(
    shard: Rc<Shard>,
    config: Arc<BrokerConfig>,
    cluster_id: Option<String>,
    started: Instant,
    metrics_listener: Option<std::net::TcpListener>,
    served_listeners: Arc<Vec<Arc<ServedListener>>>,
    stop: StopHandle,
) -> Result<(), String> {
    // Replica fetchers find the stop request here.
    shard.set_extension(Rc::new(stop.clone()));
    if shard.cache().borrow().ceiling_bytes() > 0 {
        let (cache, stop) = (shard.cache().clone(), stop.clone());
        let watch = cache_budget::watch(cache, shard.shard_count(), move || !stop.is_requested());
        glommio::spawn_local(watch).detach();
    }
    if config.cluster.voters.len() > 1 {
        let (shard, config, stop) = (shard.clone(), config.clone(), stop.clone());
        glommio::spawn_local(async move {
            storage_failure::exit_on_storage_failure(shard, &config.data_dir, stop).await
        })
        .detach();
    }
    // Before any shard can serve a request that writes checkpoints.
    checkpoints::install(&shard);
    let progress = shard.config().startup_progress.clone();
    if shard.id() == CONTROLLER_SHARD {
        glommio::spawn_local(controlled_shutdown::watch(shard.clone(), stop.clone())).detach();
        progress.set(
            shard.id(),
            "starting the metadata quorum, then registering with its controller",
        );
        start_controller(&shard, &config, &cluster_id, &stop).await?;
        if !config.cluster.broker_role {
            // The quorum has caught up; a controller-only node's other
            // shards serve nothing, so its start is over.
            progress.end();
            return serve_controller_only(&shard, &config, metrics_listener, &stop).await;
        }
    } else {
        progress.set(
            shard.id(),
            "waiting for shard 0 to start the metadata quorum",
        );
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        while shard.extension::<BrokerState>().is_none() {
            if Instant::now() > deadline {
                return Err("shard 0 did not publish the metadata image in time".into());
            }
            glommio::timer::sleep(Duration::from_millis(5)).await;
        }
        // Shard 0 sets every shard's state first, then waits for the
        // quorum; serve only once it has caught up and applied the roles
        // of the image current then. (On a controller-only node, never:
        // these shards wait here for the stop.)
        progress.set(
            shard.id(),
            "waiting for shard 0 to catch up with the quorum and register",
        );
        while !BrokerState::of(&shard).is_serving() {
            if stop.is_requested() {
                return Ok(());
            }
            glommio::timer::sleep(Duration::from_millis(5)).await;
        }
    }
    let mut bound = Vec::with_capacity(served_listeners.len());
    for served in served_listeners.iter() {
        let socket = bind_shard_listener(served.listener.bind).map_err(|e| {
            format!(
                "cannot listen on {} (listener {}): {e}; is another broker running there? \
                 choose another address with --listen or listeners",
                served.listener.bind, served.listener.name
            )
        })?;
        bound.push((socket, served.clone()));
    }
    progress.serving(shard.id(), shard.shard_count());
    if shard.id() == 0 {
        let partitions: usize = BrokerState::of(&shard)
            .image()
            .topics
            .values()
            .map(|t| t.partitions.len())
            .sum();
        let startup = shard.startup();
        // How much recovery had to do, over every shard.
        let (mut segments_recovered, mut bytes_scanned, mut bytes_truncated) = (0usize, 0u64, 0u64);
        for s in 0..shard.shard_count() {
            if let Ok(summaries) = shard
                .submit_to(s, |shard| async move { shard.local_summaries().await })
                .await
            {
                for p in summaries {
                    segments_recovered += p.recovery.segments_recovered;
                    bytes_scanned += p.recovery.bytes_scanned;
                    bytes_truncated += p.recovery.bytes_truncated;
                }
            }
        }
        tracing::info!(
            segments_recovered,
            bytes_scanned,
            bytes_truncated,
            "{}",
            if startup.clean_shutdown {
                "clean shutdown found: no recovery needed"
            } else if startup.partitions.is_empty() {
                "new data directory"
            } else {
                "no clean-shutdown marker: recovered segments past the recovery point"
            }
        );
        let listeners: Vec<String> = config
            .listeners
            .all
            .iter()
            .map(|l| format!("{}://{} (advertised {})", l.name, l.bind, l.advertised()))
            .collect();
        tracing::info!(
            listeners = %listeners.join(", "),
            inter_broker_listener = %config.listeners.inter_broker,
            metrics_listen = %config.metrics_listen,
            shards = shard.shard_count(),
            partitions,
            clean_shutdown_before = startup.clean_shutdown,
            startup_ms = started.elapsed().as_millis() as u64,
            "pinlog is serving Kafka clients"
        );
    }
    glommio::spawn_local(
        crate::server::replication::isr_changes::expire_lagging_followers(
            shard.clone(),
            stop.clone(),
        ),
    )
    .detach();
    let active = Rc::new(Cell::new(0usize));
    if shard.id() + 1 == shard.shard_count() {
        if let Some(ms) = std::env::var(TEST_PANIC_ENV)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            glommio::spawn_local(async move {
                glommio::timer::sleep(Duration::from_millis(ms)).await;
                panic!("{TEST_PANIC_ENV} asked this shard to panic");
            })
            .detach();
        }
    }
    spawn_timers(&shard, &config, stop.clone());
    crate::server::shard_placement::balancer::spawn(&shard, &config.balancer, stop.clone());
    crate::group::coordinator::start(&shard, stop.clone());
    crate::server::txn_coordinator::start(&shard, stop.clone());
    crate::server::share_state::start(&shard, stop.clone());
    let cleaner_task = spawn_cleaner(&shard, &config, stop.clone());
    let metrics_task = metrics_listener.map(|l| metrics_http::spawn(&shard, l, stop.clone()));
    let accept_loops: Vec<_> = bound
        .into_iter()
        .map(|(socket, served)| {
            glommio::spawn_local(accept_connections(
                shard.clone(),
                socket,
                served,
                active.clone(),
                stop.clone(),
            ))
        })
        .collect();
    for accept_loop in accept_loops {
        // Each ends, dropping its socket, once the stop is requested.
        accept_loop.await;
    }
    if shard.id() == CONTROLLER_SHARD {
        // Before the drain: the quorum gets its next leader while this
        // node's requests finish, not after.
        if let Some(c) = shard.extension::<Controller>() {
            c.quorum().hand_over_leadership().await;
        }
    }
    let deadline = Instant::now() + DRAIN_TIMEOUT;
    while active.get() > 0 && Instant::now() < deadline {
        glommio::timer::sleep(TICK).await;
    }
    if active.get() > 0 {
        tracing::warn!(
            shard = shard.id(),
            connections = active.get(),
            "closing connections with requests still in flight"
        );
    }
    if let Some(task) = metrics_task {
        // Ends by itself once the stop request is set (bounded; see metrics_http).
        task.await;
    }
    if let Some(task) = cleaner_task {
        // Stops within one batch once the stop request is set, so that every
        // partition log is free to close.
        task.await;
    }
    if shard.id() == CONTROLLER_SHARD {
        close_controller(&shard).await?;
    }
    Ok(())
}

async fn close_controller(shard: &Rc<Shard>) -> Result<(), String> {
    if let Some(c) = shard.extension::<Controller>() {
        c.close(shard)
            .await
            .map_err(|e| format!("closing the metadata log failed: {e}"))?;
    }
    Ok(())
}

/// A controller-only node (`process.roles=controller`): a voter of the
/// quorum and, when elected, the active controller, but no broker. It
/// registers no broker, hosts no partitions and opens no Kafka listener;
/// brokers forward admin requests to it over the controller listener.
/// Serves `/metrics` on shard 0 and waits for the stop.
async fn serve_controller_only(
    shard: &Rc<Shard>,
    config: &BrokerConfig,
    metrics_listener: Option<std::net::TcpListener>,
    stop: &StopHandle,
) -> Result<(), String> {
    tracing::info!(
        node_id = config.node_id,
        controller_listen = ?config.cluster.controller_listen,
        metrics_listen = %config.metrics_listen,
        "pinlog is running as a controller only (process.roles=controller): no Kafka listener"
    );
    let metrics_task = metrics_listener.map(|l| metrics_http::spawn(shard, l, stop.clone()));
    while !stop.is_requested() {
        sleep_to_next_tick(TICK).await;
    }
    if let Some(c) = shard.extension::<Controller>() {
        c.quorum().hand_over_leadership().await;
    }
    if let Some(task) = metrics_task {
        task.await;
    }
    close_controller(shard).await
}

/// Shard 0's start: every shard's broker state, then the metadata quorum,
/// whose committed image reaches every shard before any serves a client.
async fn start_controller(
    shard: &Rc<Shard>,
    config: &Arc<BrokerConfig>,
    cluster_id: &Option<String>,
    stop: &StopHandle,
) -> Result<(), String> {
    let local_cluster_id: Arc<str> = cluster_id.as_deref().unwrap_or("").into();
    let empty = Arc::new(MetadataImage::empty());
    for s in 0..shard.shard_count() {
        let (config, cluster_id, image) = (config.clone(), local_cluster_id.clone(), empty.clone());
        shard
            .submit_to(s, move |shard| async move {
                shard.set_extension(Rc::new(BrokerState::new(config, cluster_id, image)));
            })
            .await
            .map_err(|e| e.to_string())?;
    }
    let cluster = &config.cluster;
    let settings = QuorumSettings {
        node_id: config.node_id,
        voters: cluster.voters.clone(),
        listen: cluster.controller_listen,
        observer_host: config.advertise.rsplit_once(':').map_or_else(
            || config.listen.ip().to_string(),
            |(host, _)| host.to_string(),
        ),
        election_timeout_ms: cluster.election_timeout_ms,
        fetch_timeout_ms: cluster.fetch_timeout_ms,
        request_timeout_ms: cluster.request_timeout_ms,
        tls: ControllerChannelTls::from_config(config)?,
    };
    let publisher = shard.clone();
    let publish: Publish = Rc::new(move |image| {
        let shard = publisher.clone();
        Box::pin(async move {
            if let Err(e) = image_applier::publish(&shard, image).await {
                tracing::error!("cannot apply the metadata image on every shard: {e}");
            }
        })
    });
    let quorum = Quorum::start(
        &config.data_dir,
        shard.startup(),
        settings,
        publish.clone(),
        controller::forward_handler(shard.clone()),
        shard.storage_failures(),
    )
    .await?;
    shard.set_extension(Rc::new(Controller::new(
        quorum.clone(),
        cluster.session_timeout_ms,
    )));
    // Checked on the active controller; a tenth of the session timeout
    // fences a silent broker within about 1.1 session timeouts.
    glommio::spawn_local(controller::fence_expired_brokers(
        shard.clone(),
        Duration::from_millis((cluster.session_timeout_ms / 10).max(10)),
        stop.clone(),
    ))
    .detach();
    if cluster.auto_leader_rebalance_enable {
        glommio::spawn_local(controller::balance_preferred_leaders(
            shard.clone(),
            Duration::from_secs(cluster.leader_imbalance_check_interval_seconds),
            cluster.leader_imbalance_per_broker_percentage as u32,
            stop.clone(),
        ))
        .detach();
    }
    // The snapshot the quorum starts from is applied without an entry.
    let image = quorum.image();
    if image.offset >= 0 {
        publish(image).await;
    }
    quorum.wait_until_caught_up(stop).await?;
    if !cluster.broker_role {
        // A controller only: no registration. The cluster id is the one
        // the quorum agreed on when its first broker registered.
        if let (None, Some(agreed)) = (cluster_id, quorum.image().cluster_id.clone()) {
            cluster_id::store(&config.data_dir, &agreed, config.node_id).await?;
            tracing::info!(cluster_id = %agreed, "adopted the quorum's cluster id");
        }
        return Ok(());
    }
    let lifecycle = registration::join(shard, cluster_id.clone(), stop)
        .await
        .map_err(|registration::JoinRefused(why)| why)?;
    let agreed = quorum
        .image()
        .cluster_id
        .clone()
        .ok_or("the quorum registered this broker without agreeing on a cluster id")?;
    if cluster_id.is_none() {
        cluster_id::store(&config.data_dir, &agreed, config.node_id).await?;
        tracing::info!(cluster_id = %agreed, "adopted the quorum's cluster id");
    }
    // The controller unfenced this process. Wait until the local image
    // holds that too, with the leaderships it brought back, so that the
    // replicas' first image (published below) is the one clients are then
    // served by, not one in which this broker is still fenced.
    let epoch = lifecycle.broker_epoch();
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    while !quorum
        .image()
        .brokers
        .get(&config.node_id)
        .is_some_and(|b| b.epoch == epoch && !b.fenced)
    {
        if stop.is_requested() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the controller unfenced this broker (epoch {epoch}), but the local metadata \
                 did not show it within {STARTUP_TIMEOUT:?}; check the quorum's health with \
                 `pinlog cluster describe`"
            ));
        }
        glommio::timer::sleep(Duration::from_millis(5)).await;
    }
    // The controlled shutdown heartbeats with this registration.
    shard.set_extension(lifecycle.clone());
    glommio::spawn_local(registration::keep_heartbeating(
        shard.clone(),
        lifecycle,
        Duration::from_millis(cluster.heartbeat_interval_ms),
        stop.clone(),
    ))
    .detach();
    let agreed: Arc<str> = agreed.into();
    for s in 0..shard.shard_count() {
        let agreed = agreed.clone();
        shard
            .submit_to(s, move |shard| async move {
                BrokerState::of(&shard).set_cluster_id(agreed)
            })
            .await
            .map_err(|e| e.to_string())?;
    }
    on_every_shard(shard, |b| b.set_caught_up()).await?;
    // The replicas' first image: the current one, which holds this
    // process's registration (the images replayed before only set the
    // image, see `image_applier::apply_image`).
    publish(quorum.image()).await;
    // Only now may the other shards open their listeners: before, a client
    // could find every partition of this broker without a leader (found by
    // a fresh-clone CI run: a consumer got NOT_LEADER_OR_FOLLOWER just
    // after a single broker's crash restart).
    // Certificates rotated at runtime before this start: the listeners
    // open with them.
    crate::server::handlers::listener_certificates::apply_rotated(shard);
    on_every_shard(shard, |b| b.set_serving()).await?;
    Ok(())
}

/// Runs `f` on every shard's broker state, one shard after another.
async fn on_every_shard(shard: &Rc<Shard>, f: fn(&BrokerState)) -> Result<(), String> {
    for s in 0..shard.shard_count() {
        shard
            .submit_to(s, move |shard| async move { f(&BrokerState::of(&shard)) })
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Accepts one listener's connections on this shard until the stop, each
/// served by its own task; `active` counts them for the drain.
async fn accept_connections(
    shard: Rc<Shard>,
    socket: TcpListener,
    served: Arc<ServedListener>,
    active: Rc<Cell<usize>>,
    stop: StopHandle,
) {
    loop {
        let accepted = futures_lite::future::or(async { Some(socket.accept().await) }, async {
            while !stop.is_requested() {
                sleep_to_next_tick(TICK).await;
            }
            None
        })
        .await;
        match accepted {
            None => break,
            Some(Ok(stream)) => {
                let (shard, active, stop) = (shard.clone(), active.clone(), stop.clone());
                let served = served.clone();
                active.set(active.get() + 1);
                glommio::spawn_local(async move {
                    serve_connection(shard, stream, stop, served).await;
                    active.set(active.get() - 1);
                })
                .detach();
            }
            Some(Err(e)) => {
                tracing::warn!(listener = %served.listener.name, "accept failed: {e}");
                glommio::timer::sleep(TICK).await;
            }
        }
    }
}

/// Every listener as the shards serve it, with its TLS (built once in
/// `certificates`, replaced there when a certificate rotates).
fn served_listeners(
    config: &BrokerConfig,
    certificates: &ListenerCertificates,
) -> Result<Vec<Arc<ServedListener>>, String> {
    let mut out = Vec::with_capacity(config.listeners.all.len());
    for l in &config.listeners.all {
        let tls = certificates.listener(&l.name);
        let sasl = if l.protocol.uses_sasl() {
            let settings = SaslSettings::for_listener(&config.security, &l.name)?;
            Some(Arc::new(
                SaslServing::new(settings).map_err(|e| format!("listener {}: {e}", l.name))?,
            ))
        } else {
            None
        };
        out.push(Arc::new(ServedListener {
            listener: l.clone(),
            tls,
            sasl,
        }));
    }
    Ok(out)
}

/// Each shard's own listener on the Kafka port: SO_REUSEPORT gives every
/// shard its own accept queue, and SO_REUSEADDR lets a restarted broker bind
/// while the previous run's connections sit in TIME_WAIT (glommio's own
/// bind sets only the first). The plain bind in `run` still refuses a port
/// another broker listens on.
fn bind_shard_listener(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    use std::os::fd::{FromRawFd, IntoRawFd};
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    let std_listener: std::net::TcpListener = socket.into();
    // SAFETY: the descriptor is a listening TCP socket whose ownership moves
    // to glommio's listener.
    Ok(unsafe { TcpListener::from_raw_fd(std_listener.into_raw_fd()) })
}

/// The log cleaner of this shard (`log.cleaner.enable`): cleans while logs
/// need it, then waits `log.cleaner.backoff.ms`, as Kafka's cleaner threads
/// back off when they find nothing to do. Its own task, so that a long
/// clean never delays the flush timer.
fn spawn_cleaner(
    shard: &Rc<Shard>,
    config: &BrokerConfig,
    stop: StopHandle,
) -> Option<glommio::Task<()>> {
    if !config.cleaner.enable {
        return None;
    }
    let shards = shard.shard_count();
    let options = CleanerOptions {
        dedupe_buffer_bytes: config.cleaner.dedupe_buffer_per_shard(shards),
        io_buffer_bytes: config.cleaner.io_buffer_per_shard(shards),
        failpoint: None,
    };
    let backoff = Duration::from_millis(config.cleaner.backoff_ms);
    let s = shard.clone();
    Some(glommio::spawn_local(async move {
        let stopping = || stop.is_requested();
        while !stopping() {
            if s.cleaner_tick(&options, &stopping).await > 0 {
                continue;
            }
            let idle_since = Instant::now();
            while !stopping() && idle_since.elapsed() < backoff {
                sleep_to_next_tick(TICK.min(backoff)).await;
            }
        }
    }))
}

/// The flush-policy timer (`flush.ms`), the retention check and the
/// periodic offset checkpoints (shard 0).
fn spawn_timers(shard: &Rc<Shard>, config: &BrokerConfig, stop: StopHandle) {
    let s = shard.clone();
    let retention_check_interval = Duration::from_millis(config.retention_check_interval_ms);
    let checkpoint_interval = RECOVERY_POINT_CHECKPOINT_INTERVAL.min(Duration::from_millis(
        config.replication.high_watermark_checkpoint_interval_ms,
    ));
    glommio::spawn_local(async move {
        let mut last_retention = Instant::now();
        let mut last_checkpoint = Instant::now();
        let mut flush_watch = FlushWatch::default();
        while !stop.is_requested() {
            sleep_to_next_tick(TICK).await;
            if let Err(e) = flush_watch.tick(&s, Instant::now(), now_ms()).await {
                tracing::error!(shard = s.id(), "flush failed: {e}");
            }
            if last_retention.elapsed() >= retention_check_interval {
                last_retention = Instant::now();
                s.retention_tick().await;
            }
            if s.id() == checkpoints::CHECKPOINT_SHARD
                && last_checkpoint.elapsed() >= checkpoint_interval
            {
                last_checkpoint = Instant::now();
                checkpoints::checkpoint_all(&s).await;
            }
        }
    })
    .detach();
}
