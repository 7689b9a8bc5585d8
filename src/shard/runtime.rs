//! Starting and stopping the shards: one pinned glommio executor per core,
//! joined by a full channel mesh.
//!
//! Lifecycle: the main thread reads the data directory's shutdown state,
//! starts the shards, and each shard opens the partitions it owns, then runs
//! the caller's body. A shard that finishes its body keeps serving peers
//! until every shard has finished; then all close their partitions and the
//! main thread writes the checkpoints and, if all closed cleanly, the
//! clean-shutdown marker.

use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_lite::StreamExt;
use glommio::channels::channel_mesh::MeshBuilder;
use glommio::{LocalExecutorBuilder, Placement};

use crate::config::LogConfig;
use crate::constants::{
    DEFAULT_SHARD_IO_MEMORY_BYTES, READ_CACHE_FALLBACK_BYTES, SHARD_CHANNEL_DEPTH,
};
use crate::error::{LogError, LogResult};
use crate::log::data_dir::{self, DataDirState, PartitionOffsets};
use crate::shard::messages::ShardRequest;
use crate::shard::shard::Shard;
use crate::shard::startup_progress::StartupProgress;

/// How the shards run.
#[derive(Debug, Clone)]
pub struct ShardConfig {
    /// Number of shards; defaults to the number of online cores.
    pub shard_count: usize,
    /// CPUs to pin shard `i` to (`cpus[i]`); defaults to the online cores in
    /// order. With fewer CPUs than shards, shards share CPUs round-robin.
    pub cpus: Vec<usize>,
    /// How long an idle shard spins before parking in the kernel. Parking at
    /// once costs milliseconds per cross-core hop, spinning costs the core;
    /// the broker sets what `shard::spin` chooses. See `tuning/README.md`.
    pub spin_before_park: Duration,
    /// The most memory each shard's read cache may keep alive: its share of
    /// `read.cache.bytes` or of the default ceiling. Its budget under it
    /// follows the machine's free memory (`shard::cache_budget`).
    pub read_cache_bytes: usize,
    /// Aligned buffer pool for the shard's DMA reads and writes.
    pub io_memory_bytes: usize,
    pub data_dir: PathBuf,
    /// Settings for partitions opened without their own.
    pub log_defaults: LogConfig,
    /// The broker epoch this process registered with, -1 until then (or
    /// for a process that never registers). A clean shutdown writes it into
    /// the clean-shutdown marker, so that the next registration can show
    /// the controller that the shutdown was clean (KIP-966). Written once,
    /// by shard 0's registration; never on the data path.
    pub registered_broker_epoch: Arc<AtomicI64>,
    /// Each shard's stage while the broker starts, for the log.
    pub startup_progress: Arc<StartupProgress>,
}

/// The online CPUs this process may run on.
pub fn online_cpus() -> Vec<usize> {
    let mut cpus: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    cpus.sort_unstable();
    if cpus.is_empty() {
        cpus.push(0);
    }
    cpus
}

impl ShardConfig {
    /// Zero-configuration defaults for a data directory, with no spin
    /// before park: the broker chooses one for its shards' CPUs
    /// (`shard::spin`) once it has set them.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        let cpus = online_cpus();
        ShardConfig {
            shard_count: cpus.len(),
            cpus,
            spin_before_park: Duration::ZERO,
            read_cache_bytes: READ_CACHE_FALLBACK_BYTES,
            io_memory_bytes: DEFAULT_SHARD_IO_MEMORY_BYTES,
            data_dir: data_dir.into(),
            log_defaults: LogConfig::default(),
            registered_broker_epoch: Arc::new(AtomicI64::new(-1)),
            startup_progress: Arc::new(StartupProgress::default()),
        }
    }

    fn cpu_for(&self, shard: usize) -> usize {
        self.cpus[shard % self.cpus.len()]
    }

    /// The CPU of each shard, in shard order (round-robin over `cpus`).
    pub fn shard_cpus(&self) -> Vec<usize> {
        (0..self.shard_count).map(|i| self.cpu_for(i)).collect()
    }
}

/// How the shards stop once every body has finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Close every partition, write checkpoints and the clean-shutdown marker.
    Clean,
    /// Drop every partition without closing or writing anything, as a
    /// process crash would (the bytes already written stay on disk). For
    /// crash tests and the demo.
    SimulateCrash,
}

/// What a run of the shards produced.
pub struct RunOutcome<T> {
    /// Each shard's body result, by shard id.
    pub results: Vec<T>,
    /// The shutdown state read at startup.
    pub startup: DataDirState,
    pub clean: bool,
}

/// Runs `body` on every shard and stops them as `shutdown` says.
pub fn run_shards<F, Fut, T>(
    config: ShardConfig,
    shutdown: Shutdown,
    body: F,
) -> LogResult<RunOutcome<T>>
where
    F: Fn(Rc<Shard>) -> Fut + Send + Clone + 'static,
    Fut: std::future::Future<Output = T> + 'static,
    T: Send + 'static,
{
    assert!(config.shard_count > 0, "shard count must be at least 1");
    let startup = data_dir::load_data_dir(&config.data_dir)?;
    let startup_shared = Arc::new(startup.clone());
    let config = Arc::new(config);
    let mesh = MeshBuilder::full(config.shard_count, SHARD_CHANNEL_DEPTH);
    let mut handles = Vec::with_capacity(config.shard_count);
    for id in 0..config.shard_count {
        let config = config.clone();
        let startup = startup_shared.clone();
        let mesh = mesh.clone();
        let body = body.clone();
        let builder = LocalExecutorBuilder::new(Placement::Fixed(config.cpu_for(id)))
            .name(&format!("pinlog-shard-{id}"))
            .spin_before_park(config.spin_before_park)
            .io_memory(config.io_memory_bytes);
        let handle = builder
            .spawn(move || async move {
                crate::blocking_pool::keep_reactor_ticking();
                shard_main(id, config, startup, mesh, shutdown, body).await
            })
            .map_err(|e| LogError::io("start shard", format!("shard-{id}"), -1, e))?;
        handles.push(handle);
    }
    let mut results = Vec::with_capacity(handles.len());
    let mut offsets: Vec<PartitionOffsets> = Vec::new();
    let mut clean = true;
    let mut failure = None;
    for (id, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok(Ok((r, o, c))) => {
                results.push(r);
                offsets.extend(o);
                clean &= c;
            }
            Ok(Err(e)) => {
                clean = false;
                failure.get_or_insert(e);
            }
            Err(e) => {
                clean = false;
                failure.get_or_insert(LogError::io(
                    "shard exited",
                    format!("shard-{id}"),
                    -1,
                    std::io::Error::other(format!("{e:?}")),
                ));
            }
        }
    }
    if let Some(e) = failure {
        return Err(e);
    }
    if shutdown == Shutdown::Clean {
        offsets.sort_by(|a, b| a.tp.cmp(&b.tp));
        let broker_epoch = config.registered_broker_epoch.load(Ordering::Relaxed);
        data_dir::write_shutdown_state(&config.data_dir, &offsets, clean, broker_epoch)?;
    }
    Ok(RunOutcome {
        results,
        startup,
        clean,
    })
}

async fn shard_main<F, Fut, T>(
    id: usize,
    config: Arc<ShardConfig>,
    startup: Arc<DataDirState>,
    mesh: MeshBuilder<ShardRequest, glommio::channels::channel_mesh::Full>,
    shutdown: Shutdown,
    body: F,
) -> LogResult<(T, Vec<PartitionOffsets>, bool)>
where
    F: Fn(Rc<Shard>) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let progress = config.startup_progress.clone();
    progress.set(id, "joining the other shards' channel mesh");
    let (senders, mut receivers) = mesh.join().await.map_err(|_| {
        LogError::io(
            "join shard mesh",
            format!("shard-{id}"),
            -1,
            std::io::Error::other("mesh join failed"),
        )
    })?;
    let shard = Rc::new(Shard::new(id, config.clone(), startup, senders));
    // Every peer's Done lands here; the shard stops serving after all.
    let (done_tx, done_rx) = async_channel_pair();
    // Open this shard's partitions before serving peers, so that no peer
    // request races the startup recovery of a partition.
    shard.open_owned_partitions().await?;
    progress.set(id, "starting the broker on this shard");
    for (_peer, stream) in receivers.streams() {
        let shard = shard.clone();
        let done_tx = done_tx.clone();
        glommio::spawn_local(async move {
            let mut stream = stream;
            let mut counted = false;
            while let Some(req) = stream.next().await {
                if matches!(req, ShardRequest::Done) {
                    if !counted {
                        counted = true;
                        done_tx.notify();
                    }
                    continue;
                }
                let shard = shard.clone();
                glommio::spawn_local(shard.handle(req)).detach();
            }
            // A peer that died (panicked) closes its stream without Done;
            // it will send nothing more either.
            if !counted {
                done_tx.notify();
            }
        })
        .detach();
    }
    let result = body(shard.clone()).await;
    for peer in 0..config.shard_count {
        if peer != id {
            // A peer that already left cannot need anything from us.
            let _ = shard_senders(&shard)
                .send_to(peer, ShardRequest::Done)
                .await;
        }
    }
    done_rx.wait_for(config.shard_count - 1).await;
    match shutdown {
        Shutdown::Clean => {
            let (offsets, clean) = shard.close_all().await;
            Ok((result, offsets, clean))
        }
        Shutdown::SimulateCrash => {
            shard.abandon_all();
            Ok((result, Vec::new(), false))
        }
    }
}

fn shard_senders(shard: &Shard) -> &glommio::channels::channel_mesh::Senders<ShardRequest> {
    shard.senders()
}

/// A shard-local counter that tasks can wait on.
#[derive(Clone)]
struct DoneCounter {
    count: Rc<std::cell::Cell<usize>>,
    event: Rc<glommio::sync::Semaphore>,
}

fn async_channel_pair() -> (DoneCounter, DoneCounter) {
    let c = DoneCounter {
        count: Rc::new(std::cell::Cell::new(0)),
        event: Rc::new(glommio::sync::Semaphore::new(0)),
    };
    (c.clone(), c)
}

impl DoneCounter {
    fn notify(&self) {
        self.count.set(self.count.get() + 1);
        self.event.signal(1);
    }
    async fn wait_for(&self, n: usize) {
        while self.count.get() < n {
            // Closed only on shutdown of the executor, which cannot happen
            // while this task runs.
            let _ = self.event.acquire(1).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_shards_than_cpus_share_them_round_robin() {
        let mut config = ShardConfig::new("data");
        config.cpus = vec![3, 5];
        config.shard_count = 3;
        assert_eq!(config.shard_cpus(), vec![3, 5, 3]);
        assert_eq!(config.spin_before_park, Duration::ZERO);
    }
}
