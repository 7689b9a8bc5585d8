//! Storage benchmarks with a custom harness. Every comparison runs a pinlog
//! path and a raw baseline in the same process, interleaved round by round
//! (the order rotates each round), and reports the ratio of the two measured
//! in the same round; the table shows medians over the rounds.
//!
//! Sections, all run by default or chosen by name
//! (`cargo bench --bench storage -- append hop`):
//!
//! - `append`: 64 KiB producer batches through `PartitionLog::append_as_leader`
//!   with default settings and one fdatasync at the end, against the same
//!   bytes written with glommio's `DmaStreamWriter` (64 KiB buffers, its
//!   default write-behind of 4) and with one awaited 64 KiB `DmaFile::write_at`
//!   at a time (queue depth 1, the I/O pattern of the log itself).
//! - `recovery`: reopening a crashed log of 128 MiB segments with full
//!   recovery, against a raw O_DIRECT read of the same files in the recovery's
//!   own 4 MiB chunks (queue depth 1) and with `DmaStreamReader` read-ahead.
//! - `read`: `PartitionLog::read` of random offsets from the read cache and
//!   from the segment files, with and without copying the bytes out; misses
//!   read through a small read cache; and raw random O_DIRECT reads of
//!   64 KiB (what the offset scan reads) and 4 KiB.
//! - `hop`: cross-shard round trips (`Shard::ping`) between two shards with
//!   `spin_before_park` = 0 and = the spin on reserved cores, back to back
//!   and paced.
//!
//! Environment: `PINLOG_BENCH_SCALE` (default 1) multiplies every data size
//! and iteration count (0.02 gives a smoke run of a few seconds);
//! `PINLOG_BENCH_ROUNDS` (default 5) sets the interleaved rounds;
//! `PINLOG_BENCH_ONLY=<variant>` runs just that variant of each chosen
//! section and prints no table, for profiling one path with `perf record`.
//! Variants: `log`, `stream`, `qd1` (append); `recover`, `raw_qd1`,
//! `raw_stream` (recovery); `cache`, `cache_copy`, `disk`, `disk_copy`,
//! `read_through`, `raw_64k`, `raw_4k` (read); `spin0`, `spin` (hop).
//!
//! Data lives in temporary directories under Cargo's `target/tmp`, on the
//! same filesystem as the build: O_DIRECT needs a real filesystem, not tmpfs.
//! Progress goes to stderr; the results table goes to stdout.

use std::future::Future;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use futures_lite::AsyncWriteExt;
use glommio::io::{DmaFile, DmaStreamReaderBuilder, DmaStreamWriterBuilder, OpenOptions};
use glommio::{LocalExecutorBuilder, Placement};
use hdrhistogram::Histogram;
use pinlog::config::LogConfig;
use pinlog::constants::{
    DMA_ALIGNMENT, READ_SCAN_CHUNK_BYTES, RECOVERY_READ_CHUNK_BYTES,
    RESERVED_CORE_SPIN_BEFORE_PARK_US,
};
use pinlog::log::batch::{build_batch, BatchSpec, RecordSpec};
use pinlog::log::batch_cache::BatchCache;
use pinlog::log::direct_io::ensure_probed;
use pinlog::log::partition_log::{OpenParams, PartitionLog};
use pinlog::log::read_through;
use pinlog::log::segment::segment_file_path;
use pinlog::shard::runtime::{run_shards, ShardConfig, Shutdown};
use pinlog::shard::shard::Shard;
use pinlog::topic_partition::TopicPartition;

const MIB: u64 = 1024 * 1024;
/// Records per producer batch and the size of each record's value: a batch
/// of about 64 KiB.
const BATCH_RECORDS: usize = 64;
const RECORD_VALUE_BYTES: usize = 1000;
/// Bytes appended per append run at scale 1.
const APPEND_TOTAL_BYTES: u64 = 1024 * MIB;
/// Write size of the raw baselines.
const RAW_WRITE_BYTES: usize = 64 * 1024;
/// Bytes of segments recovered per recovery run at scale 1.
const RECOVERY_TOTAL_BYTES: u64 = 1024 * MIB;
const RECOVERY_SEGMENT_BYTES: u64 = 128 * MIB;
/// Buffer size and read-ahead of the `DmaStreamReader` baseline.
const STREAM_READ_BUFFER_BYTES: usize = 1024 * 1024;
const STREAM_READ_AHEAD: usize = 4;
/// Size of each log the read section reads from, at scale 1.
const READ_LOG_BYTES: u64 = 256 * MIB;
/// Kafka's default `max.partition.fetch.bytes`.
const FETCH_MAX_BYTES: usize = 1024 * 1024;
/// What `Segment::translate_offset` reads to find a batch header.
const SCAN_READ_BYTES: usize = READ_SCAN_CHUNK_BYTES;
/// Reads per round at scale 1; disk reads move about 1 MiB each.
const CACHE_READS: usize = 20_000;
/// The read-through variant's cache: far below the log, so that random
/// reads miss it.
const READ_THROUGH_CACHE_BYTES: usize = 8 * MIB as usize;
const DISK_READS: usize = 2_000;
/// Round trips per hop run at scale 1, and the warm-up before them.
const HOP_PINGS: usize = 20_000;
const HOP_PINGS_PACED: usize = 2_000;
const HOP_WARMUP_PINGS: usize = 500;
/// Idle time between paced pings: longer than the reserved-core spin.
const HOP_PACE: Duration = Duration::from_millis(1);
const BENCH_TOPIC: &str = "bench";

#[derive(Debug, Clone)]
struct Settings {
    scale: f64,
    rounds: usize,
    sections: Vec<String>,
    only: Option<String>,
    tmp_root: PathBuf,
}

impl Settings {
    fn from_env() -> Settings {
        let scale = env_number("PINLOG_BENCH_SCALE", 1.0);
        assert!(scale > 0.0, "PINLOG_BENCH_SCALE must be positive");
        let rounds = env_number("PINLOG_BENCH_ROUNDS", 5.0) as usize;
        // Cargo passes `--bench`; anything else not starting with `-` names
        // a section.
        let sections = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with('-'))
            .collect();
        Settings {
            scale,
            rounds: rounds.max(1),
            sections,
            only: std::env::var("PINLOG_BENCH_ONLY").ok(),
            tmp_root: PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        }
    }

    fn wants(&self, section: &str) -> bool {
        self.sections.is_empty() || self.sections.iter().any(|s| s == section)
    }

    /// Whether to run `variant` (always, unless `PINLOG_BENCH_ONLY` names
    /// another).
    fn runs(&self, variant: &str) -> bool {
        self.only.as_deref().is_none_or(|only| only == variant)
    }

    /// A profiling run of one variant measures nothing side by side.
    fn profiling(&self) -> bool {
        self.only.is_some()
    }

    fn bytes(&self, full: u64) -> u64 {
        ((full as f64 * self.scale) as u64).max(4 * MIB)
    }

    fn count(&self, full: usize, min: usize) -> usize {
        ((full as f64 * self.scale) as usize).max(min)
    }

    fn tempdir(&self) -> tempfile::TempDir {
        std::fs::create_dir_all(&self.tmp_root).expect("create target/tmp");
        tempfile::tempdir_in(&self.tmp_root).expect("create temp dir under target/tmp")
    }
}

fn env_number(name: &str, default: f64) -> f64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v} is not a number")),
        Err(_) => default,
    }
}

/// One line of the summary that compares a result with its target.
struct Verdict {
    metric: String,
    value: String,
    target: String,
    met: Option<bool>,
}

fn main() {
    let settings = Settings::from_env();
    eprintln!(
        "storage bench: scale {}, {} rounds, data under {}",
        settings.scale,
        settings.rounds,
        settings.tmp_root.display()
    );
    let mut verdicts = Vec::new();
    if settings.wants("append") {
        let s = settings.clone();
        verdicts.extend(on_executor(move || bench_append(s)));
    }
    if settings.wants("recovery") {
        let s = settings.clone();
        verdicts.extend(on_executor(move || bench_recovery(s)));
    }
    if settings.wants("read") {
        let s = settings.clone();
        verdicts.extend(on_executor(move || bench_read(s)));
    }
    if settings.wants("hop") {
        verdicts.extend(bench_hop(&settings));
    }
    println!("\n## Summary against targets\n");
    println!("| metric | result | target | met |");
    println!("|---|---|---|---|");
    for v in &verdicts {
        let met = match v.met {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        };
        println!("| {} | {} | {} | {} |", v.metric, v.value, v.target, met);
    }
}

/// Runs one section on a glommio executor pinned to CPU 0.
fn on_executor<T, F>(section: impl FnOnce() -> F + Send + 'static) -> T
where
    F: Future<Output = T> + 'static,
    T: Send + 'static,
{
    LocalExecutorBuilder::new(Placement::Fixed(0))
        .name("storage-bench")
        .spawn(move || async move { section().await })
        .expect("start glommio executor")
        .join()
        .expect("bench executor panicked")
}

fn now_ms() -> i64 {
    pinlog::shard::shard::now_ms()
}

/// A producer batch of [`BATCH_RECORDS`] records with distinct
/// [`RECORD_VALUE_BYTES`]-byte values, as a client would send it.
fn producer_batch(base_timestamp: i64) -> Vec<u8> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let values: Vec<Vec<u8>> = (0..BATCH_RECORDS)
        .map(|_| {
            (0..RECORD_VALUE_BYTES)
                .map(|_| xorshift(&mut seed) as u8)
                .collect()
        })
        .collect();
    let records: Vec<RecordSpec> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (i as i64, None, &v[..]))
        .collect();
    build_batch(&BatchSpec {
        base_offset: 0,
        leader_epoch: -1,
        base_timestamp,
        records: &records,
    })
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn open_params(clean_shutdown: bool) -> OpenParams {
    OpenParams {
        recovery_point: 0,
        log_start_offset: 0,
        clean_shutdown,
        now_ms: now_ms(),
    }
}

fn mb_per_s(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / elapsed.as_secs_f64() / 1e6
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn min_max(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

/// Per-round ratios `a[i] / b[i]`.
fn ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x / y).collect()
}

fn ratio_cell(r: &[f64]) -> String {
    let (lo, hi) = min_max(r);
    format!("{:.3} ({:.3}–{:.3})", median(r), lo, hi)
}

/// One line of a throughput table: MB/s per round and, for a baseline, the
/// per-round ratios of the measured path to it.
struct RateRow<'a> {
    name: &'a str,
    rates: &'a [f64],
    ratios: Option<&'a [f64]>,
}

fn print_rate_table(ratio_label: &str, rows: &[RateRow<'_>]) {
    println!("| path | MB/s (median) | MB/s (min–max) | {ratio_label} (median, min–max) |");
    println!("|---|---|---|---|");
    for row in rows {
        let (lo, hi) = min_max(row.rates);
        println!(
            "| {} | {:.1} | {lo:.1}–{hi:.1} | {} |",
            row.name,
            median(row.rates),
            row.ratios.map_or("-".to_string(), ratio_cell)
        );
    }
}

/// Writes dirty pages back and empties the page cache, so that a timed run
/// starts cold. O_DIRECT reads bypass the cache anyway; the indexes are
/// mmap'ed and do not. Returns whether the cache could be dropped (root).
fn drop_page_cache() -> bool {
    let synced = std::process::Command::new("sync")
        .status()
        .is_ok_and(|s| s.success());
    synced && std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

/// Flushes the filesystem (e.g. after deleting a previous round's 1 GiB
/// file) so that background writeback does not land in the next timed run.
fn settle_disk() {
    let _settled = std::process::Command::new("sync").status();
}

// ---------------------------------------------------------------------------
// append

async fn bench_append(settings: Settings) -> Vec<Verdict> {
    let batch = producer_batch(now_ms());
    let batches = (settings.bytes(APPEND_TOTAL_BYTES) / batch.len() as u64) as usize;
    let total = (batches * batch.len()) as u64;
    eprintln!(
        "append: {batches} batches of {} bytes = {:.1} MiB per run",
        batch.len(),
        total as f64 / MIB as f64
    );
    let probe_dir = settings.tempdir();
    ensure_probed(probe_dir.path())
        .await
        .expect("probe O_DIRECT");

    let variants = ["log", "stream", "qd1"];
    let mut results: [Vec<f64>; 3] = Default::default();
    for round in 0..settings.rounds {
        for k in 0..variants.len() {
            let v = (round + k) % variants.len();
            if !settings.runs(variants[v]) {
                continue;
            }
            let dir = settings.tempdir();
            settle_disk();
            let elapsed = match variants[v] {
                "log" => append_via_log(dir.path(), &batch, batches).await,
                "stream" => write_raw_stream(&dir.path().join("raw"), &batch, batches).await,
                _ => write_raw_qd1(&dir.path().join("raw"), &batch, total).await,
            };
            let rate = mb_per_s(total, elapsed);
            eprintln!("append round {round}: {:>6} {rate:8.1} MB/s", variants[v]);
            results[v].push(rate);
        }
    }
    if settings.profiling() {
        return Vec::new();
    }
    let [log, stream, qd1] = &results;
    let vs_stream = ratios(log, stream);
    let vs_qd1 = ratios(log, qd1);
    println!(
        "\n## Append: {:.0} MiB in {}-byte batches, {} rounds\n",
        total as f64 / MIB as f64,
        batch.len(),
        settings.rounds
    );
    print_rate_table(
        "log / this",
        &[
            RateRow {
                name: "PartitionLog::append_as_leader + flush",
                rates: log,
                ratios: None,
            },
            RateRow {
                name: "raw DmaStreamWriter 64 KiB, write-behind 4 + fdatasync",
                rates: stream,
                ratios: Some(&vs_stream),
            },
            RateRow {
                name: "raw DmaFile::write_at 64 KiB, queue depth 1 + fdatasync",
                rates: qd1,
                ratios: Some(&vs_qd1),
            },
        ],
    );
    vec![
        Verdict {
            metric: "append / raw DmaStreamWriter".into(),
            value: format!("{:.3}", median(&vs_stream)),
            target: ">= 0.9".into(),
            met: Some(median(&vs_stream) >= 0.9),
        },
        Verdict {
            metric: "append / raw write_at QD1".into(),
            value: format!("{:.3}", median(&vs_qd1)),
            target: "(same I/O pattern)".into(),
            met: None,
        },
    ]
}

/// Appends `batches` copies of `batch` to a fresh log and flushes once. The
/// clock runs only inside `append_as_leader` and `flush`: copying the batch
/// into a fresh `BytesMut` stands in for the network layer and is excluded.
async fn append_via_log(dir: &Path, batch: &[u8], batches: usize) -> Duration {
    let tp = TopicPartition::new(BENCH_TOPIC, 0);
    let mut log = PartitionLog::open(dir, tp, LogConfig::default(), open_params(false), None)
        .await
        .expect("open log");
    // Becoming leader writes the epoch checkpoint once; not part of the
    // steady-state append rate.
    log.assign_epoch_start_offset(0, 0)
        .await
        .expect("assign epoch");
    let now = now_ms();
    let mut busy = Duration::ZERO;
    for _ in 0..batches {
        let bytes = BytesMut::from(batch);
        let started = Instant::now();
        log.append_as_leader(bytes, 0, None, now)
            .await
            .expect("append");
        busy += started.elapsed();
    }
    let started = Instant::now();
    log.flush().await.expect("flush");
    busy += started.elapsed();
    assert_eq!(log.size_bytes(), (batches * batch.len()) as u64);
    assert_eq!(log.segment_count(), 1, "the append run must not roll");
    log.close().await.expect("close log");
    busy
}

async fn create_dma(path: &Path) -> DmaFile {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .dma_open(path)
        .await
        .expect("create raw file")
}

/// Writes `batches` copies of `batch` through a `DmaStreamWriter` and syncs.
async fn write_raw_stream(path: &Path, batch: &[u8], batches: usize) -> Duration {
    let file = create_dma(path).await;
    let mut writer = DmaStreamWriterBuilder::new(file)
        .with_buffer_size(RAW_WRITE_BYTES)
        .build();
    let started = Instant::now();
    for _ in 0..batches {
        writer.write_all(batch).await.expect("stream write");
    }
    writer.sync().await.expect("stream sync");
    let elapsed = started.elapsed();
    writer.close().await.expect("close stream");
    elapsed
}

/// Writes `total` bytes of repeated `batch` bytes in aligned 64 KiB DMA
/// writes, one at a time, and fdatasyncs.
async fn write_raw_qd1(path: &Path, batch: &[u8], total: u64) -> Duration {
    let file = create_dma(path).await;
    let started = Instant::now();
    let mut position = 0u64;
    let mut from = 0usize;
    while position < total {
        let remaining = total - position;
        let len = (RAW_WRITE_BYTES as u64).min(remaining.div_ceil(DMA_ALIGNMENT) * DMA_ALIGNMENT);
        let len = len as usize;
        let mut buf = file.alloc_dma_buffer(len);
        let out = buf.as_bytes_mut();
        let mut filled = 0usize;
        while filled < len {
            let n = (len - filled).min(batch.len() - from);
            out[filled..filled + n].copy_from_slice(&batch[from..from + n]);
            filled += n;
            from = (from + n) % batch.len();
        }
        let written = file.write_at(buf, position).await.expect("raw write");
        assert_eq!(written, len, "short raw write");
        position += len as u64;
    }
    file.fdatasync().await.expect("raw fdatasync");
    let elapsed = started.elapsed();
    file.close().await.expect("close raw file");
    elapsed
}

// ---------------------------------------------------------------------------
// recovery

async fn bench_recovery(settings: Settings) -> Vec<Verdict> {
    let data = settings.tempdir();
    ensure_probed(data.path()).await.expect("probe O_DIRECT");
    let batch = producer_batch(now_ms());
    let target = settings.bytes(RECOVERY_TOTAL_BYTES);
    let segment_bytes = settings.bytes(RECOVERY_SEGMENT_BYTES);
    let batches = (target / batch.len() as u64) as usize;
    let config = LogConfig {
        segment_bytes,
        ..LogConfig::default()
    };
    let tp = TopicPartition::new(BENCH_TOPIC, 0);
    {
        let mut log = PartitionLog::open(
            data.path(),
            tp.clone(),
            config.clone(),
            open_params(false),
            None,
        )
        .await
        .expect("open log");
        let now = now_ms();
        for _ in 0..batches {
            log.append_as_leader(BytesMut::from(&batch[..]), 0, None, now)
                .await
                .expect("append");
        }
        log.flush().await.expect("flush");
        eprintln!(
            "recovery: wrote {} segments, {:.1} MiB; dropping the log without close",
            log.segment_count(),
            log.size_bytes() as f64 / MIB as f64
        );
        // Dropped here without close(): the files look as after a crash.
    }
    let log_dir = data.path().join(tp.dir_name());
    let mut segment_files: Vec<PathBuf> = std::fs::read_dir(&log_dir)
        .expect("list log dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    segment_files.sort();

    // An untimed first recovery cuts the active segment's DMA padding and
    // rebuilds the indexes, so that every timed run sees the same files.
    let (settle_bytes, _) = recover_log(data.path(), &tp, &config).await;
    eprintln!("recovery: settle run scanned {settle_bytes} bytes");

    let cache_dropped = drop_page_cache();
    if !cache_dropped {
        eprintln!("recovery: cannot drop the page cache (not root?); indexes may be warm");
    }
    let variants = ["recover", "raw_qd1", "raw_stream"];
    let mut rates: [Vec<f64>; 3] = Default::default();
    let mut scanned = 0u64;
    for round in 0..settings.rounds {
        for k in 0..variants.len() {
            let v = (round + k) % variants.len();
            if !settings.runs(variants[v]) {
                continue;
            }
            drop_page_cache();
            let (bytes, elapsed) = match variants[v] {
                "recover" => recover_log(data.path(), &tp, &config).await,
                "raw_qd1" => read_raw_qd1(&segment_files).await,
                _ => read_raw_stream(&segment_files).await,
            };
            scanned = scanned.max(bytes);
            let rate = mb_per_s(bytes, elapsed);
            eprintln!(
                "recovery round {round}: {:>10} {rate:8.1} MB/s ({bytes} bytes in {elapsed:?})",
                variants[v]
            );
            rates[v].push(rate);
        }
    }
    if settings.profiling() {
        return Vec::new();
    }
    let [recover, qd1, stream] = &rates;
    let vs_qd1 = ratios(recover, qd1);
    let vs_stream = ratios(recover, stream);
    println!(
        "\n## Recovery: {:.0} MiB in {} segments of {} MiB, {} rounds, page cache dropped: {}\n",
        scanned as f64 / MIB as f64,
        segment_files.len(),
        segment_bytes / MIB,
        settings.rounds,
        if cache_dropped { "yes" } else { "no" }
    );
    print_rate_table(
        "recovery / this",
        &[
            RateRow {
                name: "PartitionLog::open, unclean, recovery point 0",
                rates: recover,
                ratios: None,
            },
            RateRow {
                name: "raw DmaFile::read_at_aligned 4 MiB, queue depth 1",
                rates: qd1,
                ratios: Some(&vs_qd1),
            },
            RateRow {
                name: "raw DmaStreamReader 1 MiB buffers, read-ahead 4",
                rates: stream,
                ratios: Some(&vs_stream),
            },
        ],
    );
    vec![
        Verdict {
            metric: "recovery / raw read (4 MiB, QD1)".into(),
            value: format!("{:.3}", median(&vs_qd1)),
            target: ">= 0.7".into(),
            met: Some(median(&vs_qd1) >= 0.7),
        },
        Verdict {
            metric: "recovery / raw read (stream, read-ahead 4)".into(),
            value: format!("{:.3}", median(&vs_stream)),
            target: ">= 0.7".into(),
            met: Some(median(&vs_stream) >= 0.7),
        },
    ]
}

/// Opens the log as after a crash with recovery point 0, so that every
/// segment is validated and re-indexed, then drops it without closing.
/// Returns the bytes scanned and the time `open` took.
async fn recover_log(dir: &Path, tp: &TopicPartition, config: &LogConfig) -> (u64, Duration) {
    let started = Instant::now();
    let log = PartitionLog::open(dir, tp.clone(), config.clone(), open_params(false), None)
        .await
        .expect("recover log");
    let elapsed = started.elapsed();
    let report = log.recovery_report().clone();
    assert_eq!(
        report.segments_recovered, report.segments,
        "every segment must be recovered"
    );
    assert_eq!(report.segments_deleted, 0, "recovery deleted segments");
    (report.bytes_scanned, elapsed)
}

async fn read_raw_qd1(files: &[PathBuf]) -> (u64, Duration) {
    let started = Instant::now();
    let mut total = 0u64;
    for path in files {
        let file = DmaFile::open(path).await.expect("open segment");
        let size = file.file_size().await.expect("stat segment");
        let mut position = 0u64;
        while position < size {
            let chunk = file
                .read_at_aligned(position, RECOVERY_READ_CHUNK_BYTES)
                .await
                .expect("raw read");
            if chunk.is_empty() {
                break;
            }
            black_box(&chunk[..]);
            position += chunk.len() as u64;
        }
        total += position.min(size);
        file.close().await.expect("close segment");
    }
    (total, started.elapsed())
}

async fn read_raw_stream(files: &[PathBuf]) -> (u64, Duration) {
    let started = Instant::now();
    let mut total = 0u64;
    for path in files {
        let file = DmaFile::open(path).await.expect("open segment");
        let size = file.file_size().await.expect("stat segment");
        let mut reader = DmaStreamReaderBuilder::new(file)
            .with_buffer_size(STREAM_READ_BUFFER_BYTES)
            .with_read_ahead(STREAM_READ_AHEAD)
            .with_end_pos(size)
            .build();
        loop {
            let chunk = reader
                .get_buffer_aligned(STREAM_READ_BUFFER_BYTES as u64)
                .await
                .expect("stream read");
            if chunk.is_empty() {
                break;
            }
            black_box(&chunk[..]);
            total += chunk.len() as u64;
        }
        reader.close().await.expect("close stream");
    }
    (total, started.elapsed())
}

// ---------------------------------------------------------------------------
// read

async fn bench_read(settings: Settings) -> Vec<Verdict> {
    let data = settings.tempdir();
    ensure_probed(data.path()).await.expect("probe O_DIRECT");
    let batch = producer_batch(now_ms());
    let batches = (settings.bytes(READ_LOG_BYTES) / batch.len() as u64) as usize;
    let cache = BatchCache::shared(2 * batches * batch.len());
    let mut cached = PartitionLog::open(
        data.path(),
        TopicPartition::new(BENCH_TOPIC, 0),
        LogConfig::default(),
        open_params(false),
        Some(cache.clone()),
    )
    .await
    .expect("open cached log");
    let mut uncached = PartitionLog::open(
        data.path(),
        TopicPartition::new(BENCH_TOPIC, 1),
        LogConfig::default(),
        open_params(false),
        None,
    )
    .await
    .expect("open uncached log");
    // Written with no cache, then read through one far smaller than it:
    // random reads miss, read the disk, fill and evict.
    let mut through = PartitionLog::open(
        data.path(),
        TopicPartition::new(BENCH_TOPIC, 2),
        LogConfig::default(),
        open_params(false),
        Some(BatchCache::shared(READ_THROUGH_CACHE_BYTES)),
    )
    .await
    .expect("open read-through log");
    let now = now_ms();
    for log in [&mut cached, &mut uncached, &mut through] {
        for _ in 0..batches {
            log.append_as_leader(BytesMut::from(&batch[..]), 0, None, now)
                .await
                .expect("append");
        }
        log.flush().await.expect("flush");
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
    }
    let leo = cached.log_end_offset();
    let log_bytes = uncached.size_bytes();
    eprintln!(
        "read: two logs of {batches} batches ({:.0} MiB, {leo} records); cache holds {:.0} MiB",
        log_bytes as f64 / MIB as f64,
        cache.borrow().used_bytes() as f64 / MIB as f64
    );
    // The uncached log's only segment, opened separately for the raw reads.
    let segment_path = segment_file_path(uncached.dir(), 0, "log");
    let raw_file = DmaFile::open(&segment_path)
        .await
        .expect("open segment for raw reads");
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let offsets: Vec<i64> = (0..settings.count(CACHE_READS, 100))
        .map(|_| (xorshift(&mut seed) % leo as u64) as i64)
        .collect();
    let disk_reads = settings.count(DISK_READS, 50);
    let blocks = (log_bytes - SCAN_READ_BYTES as u64) / DMA_ALIGNMENT;
    let positions: Vec<u64> = (0..disk_reads)
        .map(|_| (xorshift(&mut seed) % blocks) * DMA_ALIGNMENT)
        .collect();

    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Variant {
        CacheLookup,
        CacheCopy,
        DiskLookup,
        DiskCopy,
        ReadThrough,
        Raw(usize),
    }
    let variants = [
        (Variant::CacheLookup, "cache", "read cache hit, slices only"),
        (
            Variant::CacheCopy,
            "cache_copy",
            "read cache hit + LogReadResult::to_vec",
        ),
        (
            Variant::DiskLookup,
            "disk",
            "segment file, lookup only (no cache)",
        ),
        (
            Variant::DiskCopy,
            "disk_copy",
            "segment file + LogReadResult::to_vec",
        ),
        (
            Variant::ReadThrough,
            "read_through",
            "read cache miss, read through (8 MiB cache)",
        ),
        (
            Variant::Raw(SCAN_READ_BYTES),
            "raw_64k",
            "raw DmaFile::read_at_aligned 64 KiB, random",
        ),
        (
            Variant::Raw(DMA_ALIGNMENT as usize),
            "raw_4k",
            "raw DmaFile::read_at_aligned 4 KiB, random",
        ),
    ];
    let mut per_read_us: [Vec<f64>; 7] = Default::default();
    let mut rates: [Vec<f64>; 7] = Default::default();
    let mut reads_per_round = [0usize; 7];
    for round in 0..settings.rounds {
        for k in 0..variants.len() {
            let v = (round + k) % variants.len();
            let (variant, id, name) = variants[v];
            if !settings.runs(id) {
                continue;
            }
            let mut bytes = 0u64;
            let started = Instant::now();
            let reads = match variant {
                Variant::ReadThrough => {
                    for &offset in &offsets[..disk_reads] {
                        let r = through
                            .read(offset, FETCH_MAX_BYTES, leo, true)
                            .await
                            .expect("read");
                        let out = read_through::into_memory(r).await.expect("read through");
                        bytes += out.iter().map(|b| b.len() as u64).sum::<u64>();
                        black_box(&out);
                    }
                    disk_reads
                }
                Variant::Raw(len) => {
                    for &position in &positions {
                        let r = raw_file
                            .read_at_aligned(position, len)
                            .await
                            .expect("raw read");
                        bytes += r.len() as u64;
                        black_box(&r[..]);
                    }
                    positions.len()
                }
                _ => {
                    let (log, reads, from_cache) = match variant {
                        Variant::CacheLookup | Variant::CacheCopy => {
                            (&mut cached, offsets.len(), true)
                        }
                        _ => (&mut uncached, disk_reads, false),
                    };
                    let copy = matches!(variant, Variant::CacheCopy | Variant::DiskCopy);
                    for &offset in &offsets[..reads] {
                        let r = log
                            .read(offset, FETCH_MAX_BYTES, leo, true)
                            .await
                            .expect("read");
                        assert_eq!(r.from_cache, from_cache, "{name}: wrong source");
                        if copy {
                            let out = r.to_vec().await.expect("materialise read");
                            bytes += out.len() as u64;
                            black_box(&out);
                        } else {
                            bytes += r.len_bytes();
                            black_box(&r);
                        }
                    }
                    reads
                }
            };
            let elapsed = started.elapsed();
            let us = elapsed.as_secs_f64() * 1e6 / reads as f64;
            let rate = mb_per_s(bytes, elapsed);
            eprintln!("read round {round}: {name:44} {us:9.2} µs/read {rate:10.1} MB/s");
            per_read_us[v].push(us);
            rates[v].push(rate);
            reads_per_round[v] = reads;
        }
    }
    raw_file.close().await.expect("close raw file");
    cached.close().await.expect("close cached log");
    uncached.close().await.expect("close uncached log");
    through.close().await.expect("close read-through log");
    if settings.profiling() {
        return Vec::new();
    }
    println!(
        "\n## Read: random offsets, max_bytes {} KiB, logs of {:.0} MiB, {} rounds\n",
        FETCH_MAX_BYTES / 1024,
        log_bytes as f64 / MIB as f64,
        settings.rounds
    );
    println!("| path | reads/round | µs per read (median) | MB/s (median) |");
    println!("|---|---|---|---|");
    for (v, (_, _, name)) in variants.iter().enumerate() {
        println!(
            "| {name} | {} | {:.2} | {:.1} |",
            reads_per_round[v],
            median(&per_read_us[v]),
            median(&rates[v])
        );
    }
    let copy_speedup = ratios(&rates[1], &rates[3]);
    let through_vs_disk = ratios(&per_read_us[4], &per_read_us[3]);
    let lookup_vs_raw64 = ratios(&per_read_us[2], &per_read_us[5]);
    let raw4_vs_raw64 = ratios(&per_read_us[6], &per_read_us[5]);
    println!(
        "\nRead cache hit / segment file, MB/s, both copied out: {}",
        ratio_cell(&copy_speedup)
    );
    println!(
        "Read-through miss / segment file copied out, µs per read: {}",
        ratio_cell(&through_vs_disk)
    );
    println!(
        "Disk lookup / raw 64 KiB read, µs per read: {}",
        ratio_cell(&lookup_vs_raw64)
    );
    println!(
        "Raw 4 KiB / raw 64 KiB read, µs per read: {}",
        ratio_cell(&raw4_vs_raw64)
    );
    vec![
        Verdict {
            metric: "read cache hit, µs per 1 MiB fetch (slices)".into(),
            value: format!("{:.2}", median(&per_read_us[0])),
            target: "measured".into(),
            met: None,
        },
        Verdict {
            metric: "read from disk, µs per lookup (no copy)".into(),
            value: format!("{:.1}", median(&per_read_us[2])),
            target: "measured".into(),
            met: None,
        },
        Verdict {
            metric: "read from disk, µs per 1 MiB fetch (to_vec)".into(),
            value: format!("{:.1}", median(&per_read_us[3])),
            target: "measured".into(),
            met: None,
        },
        Verdict {
            metric: "read cache hit / disk, MB/s both copied".into(),
            value: format!("{:.1}", median(&copy_speedup)),
            target: "measured".into(),
            met: None,
        },
    ]
}

// ---------------------------------------------------------------------------
// hop

fn bench_hop(settings: &Settings) -> Vec<Verdict> {
    // What a shard spins on a core reserved for it (`shard::spin`), against
    // none, the default on shared cores.
    let reserved_spin = Duration::from_micros(RESERVED_CORE_SPIN_BEFORE_PARK_US);
    let spins = [Duration::ZERO, reserved_spin];
    let spin_ids = ["spin0", "spin"];
    let pings = settings.count(HOP_PINGS, 200);
    let paced_pings = settings.count(HOP_PINGS_PACED, 50);
    // [pace][spin] -> merged histogram and per-round p99s.
    let mut merged: Vec<Vec<Histogram<u64>>> = (0..2)
        .map(|_| (0..2).map(|_| new_histogram()).collect())
        .collect();
    let mut p99s: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); 2]; 2];
    for (p, pace) in [None, Some(HOP_PACE)].into_iter().enumerate() {
        let n = if pace.is_some() { paced_pings } else { pings };
        for round in 0..settings.rounds {
            for k in 0..spins.len() {
                let s = (round + k) % spins.len();
                if !settings.runs(spin_ids[s]) {
                    continue;
                }
                let h = hop_run(settings, spins[s], n, pace);
                let p99 = h.value_at_quantile(0.99) as f64 / 1e3;
                eprintln!(
                    "hop round {round}: pace {pace:?} spin {:?}: p50 {:.1} µs p99 {p99:.1} µs",
                    spins[s],
                    h.value_at_quantile(0.5) as f64 / 1e3
                );
                p99s[p][s].push(p99);
                merged[p][s].add(&h).expect("merge histograms");
            }
        }
    }
    if settings.profiling() {
        return Vec::new();
    }
    println!(
        "\n## Cross-shard hop: Shard::ping shard 0 -> 1, 2 shards on CPUs {:?}, {} rounds\n",
        pinlog::shard::runtime::online_cpus(),
        settings.rounds
    );
    println!(
        "| traffic | spin_before_park | pings | p50 µs | p99 µs | p99.9 µs | max µs | p99 per round µs |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (p, label) in [
        "back to back".to_string(),
        format!("paced, {} ms idle", HOP_PACE.as_millis()),
    ]
    .iter()
    .enumerate()
    {
        for (s, spin) in spins.iter().enumerate() {
            let h = &merged[p][s];
            let rounds: Vec<String> = p99s[p][s].iter().map(|v| format!("{v:.1}")).collect();
            println!(
                "| {label} | {} µs | {} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
                spin.as_micros(),
                h.len(),
                h.value_at_quantile(0.5) as f64 / 1e3,
                h.value_at_quantile(0.99) as f64 / 1e3,
                h.value_at_quantile(0.999) as f64 / 1e3,
                h.max() as f64 / 1e3,
                rounds.join(", ")
            );
        }
    }
    let spin_gain = ratios(&p99s[0][0], &p99s[0][1]);
    println!(
        "\nBack-to-back p99, spin 0 / spin {} µs (per round): {}",
        reserved_spin.as_micros(),
        ratio_cell(&spin_gain)
    );
    vec![
        Verdict {
            metric: "hop p99, back to back, spin 0".into(),
            value: format!(
                "{:.1} µs",
                merged[0][0].value_at_quantile(0.99) as f64 / 1e3
            ),
            target: "measured".into(),
            met: None,
        },
        Verdict {
            metric: format!(
                "hop p99, back to back, spin {} µs",
                reserved_spin.as_micros()
            ),
            value: format!(
                "{:.1} µs",
                merged[0][1].value_at_quantile(0.99) as f64 / 1e3
            ),
            target: "measured".into(),
            met: None,
        },
        Verdict {
            metric: "hop p99 ratio spin 0 / reserved-core spin".into(),
            value: format!("{:.1}x", median(&spin_gain)),
            target: "measured".into(),
            met: None,
        },
    ]
}

fn new_histogram() -> Histogram<u64> {
    // 1 ns to 60 s, 3 significant digits.
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("histogram bounds")
}

/// Starts two shards; shard 0 pings shard 1 `pings` times (after a warm-up),
/// optionally idling `pace` between pings, and returns the latencies in ns.
fn hop_run(
    settings: &Settings,
    spin: Duration,
    pings: usize,
    pace: Option<Duration>,
) -> Histogram<u64> {
    let data = settings.tempdir();
    let mut config = ShardConfig::new(data.path());
    config.shard_count = 2;
    config.spin_before_park = spin;
    let outcome = run_shards(
        config,
        Shutdown::Clean,
        move |shard: Rc<Shard>| async move {
            if shard.id() != 0 {
                return None;
            }
            for _ in 0..HOP_WARMUP_PINGS {
                shard.ping(1).await.expect("warm-up ping");
            }
            let mut h = new_histogram();
            for _ in 0..pings {
                if let Some(pace) = pace {
                    glommio::timer::sleep(pace).await;
                }
                let started = Instant::now();
                let from = shard.ping(1).await.expect("ping");
                let ns = started.elapsed().as_nanos() as u64;
                assert_eq!(from, 1, "pong from the wrong shard");
                h.record(ns.max(1)).expect("record latency");
            }
            Some(h)
        },
    )
    .expect("run shards");
    outcome
        .results
        .into_iter()
        .flatten()
        .next()
        .expect("shard 0 returns its histogram")
}
