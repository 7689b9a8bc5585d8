//! Putting a run together: validate the options, prepare the topic, open
//! every connection (so a broker that is not there fails before the clock
//! starts), start the workers, print progress while they run, and build the
//! report. A failure mid-run stops every worker; the report then carries
//! what was measured so far and the error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use pinlog::protocol::api::ApiKey;
use pinlog::protocol::messages::list_offsets::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP};

use crate::client::Conn;
use crate::clock::Clock;
use crate::cluster::{self, IfMissing, Topic};
use crate::compression::Compression;
use crate::constants::{
    BATCH_BYTES_MAX, DEFAULT_DURATION, MAX_IN_FLIGHT_LIMIT, PROGRESS_INTERVAL, RECORD_SIZE_MAX,
    STAMP_BYTES, WORKERS_MAX,
};
use crate::consumer::{self, ConsumeConfig, ConsumerShared, Measure, PartitionState};
use crate::error::{Error, Result};
use crate::producer::{self, KeySpace, ProduceConfig, Window};
use crate::report::{self, ms, Percentiles, Report};
use crate::stats::{totals, RunState, WorkerStats};
use crate::{Common, ConsumeArgs, ProduceArgs, StartAt};

/// Longest `--linger-ms`: beyond a minute a batch is not lingering.
const LINGER_MS_MAX: u64 = 60_000;
/// How often the coordinating thread checks on the workers.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Prints the report (text or JSON), writes the histogram and plot, and
/// picks the exit code: 0 for a complete run, 1 for a failed one.
pub fn finish(
    common: &Common,
    outcome: Result<(Report, hdrhistogram::Histogram<u64>)>,
) -> ExitCode {
    let (report, hist) = match outcome {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if common.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.text());
    }
    let mut ok = report.failure.is_none();
    if let Some(path) = &common.histogram {
        let written =
            std::fs::File::create(path).and_then(|mut f| report::write_hgrm(&hist, &mut f));
        if let Err(e) = written {
            eprintln!("error: write {}: {e}", path.display());
            ok = false;
        }
    }
    if let Some(path) = &common.plot {
        let mut text = Vec::new();
        let series = report::write_hgrm(&hist, &mut text).map(|()| crate::plot::Series {
            name: format!("{} {}", report.mode, report.latency_kind),
            points: crate::plot::parse_hgrm(&String::from_utf8_lossy(&text)),
        });
        let title = format!("{} latency by percentile ({})", report.mode, report.topic);
        let written = series
            .and_then(|s| std::fs::write(path, crate::plot::svg(&[s], &title, "latency (ms)")));
        if let Err(e) = written {
            eprintln!("error: write {}: {e}", path.display());
            ok = false;
        }
    }
    if let Some(f) = &report.failure {
        eprintln!("error: the run failed: {f}");
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `pinlog-loadgen plot`.
pub fn plot_files(out: &Path, title: &str, y_label: &str, files: &[PathBuf]) -> ExitCode {
    let mut series = Vec::with_capacity(files.len());
    for f in files {
        match crate::plot::load(f) {
            Ok(s) => series.push(s),
            Err(e) => {
                eprintln!("error: read {}: {e}", f.display());
                return ExitCode::FAILURE;
            }
        }
    }
    match std::fs::write(out, crate::plot::svg(&series, title, y_label)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: write {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}

fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

fn check_common(c: &Common) -> Result<()> {
    if c.partitions.is_some_and(|p| p < 1) {
        return Err(usage("--partitions must be at least 1"));
    }
    if c.records == Some(0) {
        return Err(usage("--records must be at least 1"));
    }
    if c.duration.is_some_and(|d| d.is_zero()) {
        return Err(usage("--duration must be positive"));
    }
    if c.request_timeout_ms == 0 || c.request_timeout_ms > i32::MAX as u64 {
        return Err(usage("--request-timeout-ms must be in 1..=2147483647"));
    }
    Ok(())
}

fn check_produce(p: &ProduceArgs) -> Result<()> {
    if !(1..=RECORD_SIZE_MAX).contains(&p.record_size) {
        return Err(usage(format!(
            "--record-size must be in 1..={RECORD_SIZE_MAX}"
        )));
    }
    if !(1..=BATCH_BYTES_MAX).contains(&p.batch_bytes) {
        return Err(usage(format!(
            "--batch-bytes must be in 1..={BATCH_BYTES_MAX}"
        )));
    }
    if p.linger_ms > LINGER_MS_MAX {
        return Err(usage(format!(
            "--linger-ms must be at most {LINGER_MS_MAX}"
        )));
    }
    if !(1..=WORKERS_MAX).contains(&p.producers) {
        return Err(usage(format!("--producers must be in 1..={WORKERS_MAX}")));
    }
    if !(1..=MAX_IN_FLIGHT_LIMIT).contains(&p.max_in_flight) {
        return Err(usage(format!(
            "--max-in-flight must be in 1..={MAX_IN_FLIGHT_LIMIT}"
        )));
    }
    if p.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        return Err(usage(
            "--rate must be a positive number of records per second",
        ));
    }
    Ok(())
}

fn check_consume(common: &Common, c: &ConsumeArgs) -> Result<()> {
    if !(1..=WORKERS_MAX).contains(&c.consumers) {
        return Err(usage(format!("--consumers must be in 1..={WORKERS_MAX}")));
    }
    // A fetch may legitimately take max-wait; the socket timeout must not
    // fire first.
    if c.fetch_max_wait_ms < 0 || c.fetch_max_wait_ms as u64 >= common.request_timeout_ms {
        return Err(usage(
            "--fetch-max-wait-ms must be at least 0 and below --request-timeout-ms",
        ));
    }
    Ok(())
}

fn timeout(c: &Common) -> Duration {
    Duration::from_millis(c.request_timeout_ms)
}

/// The measured window, in the run clock's nanoseconds.
#[derive(Debug, Clone, Copy)]
struct Plan {
    start_ns: u64,
    measure_start_ns: u64,
    end_ns: Option<u64>,
}

fn plan(c: &Common, clock: &Clock) -> Plan {
    let start_ns = clock.now_ns();
    let measure_start_ns = start_ns + c.warmup.as_nanos() as u64;
    let duration = match (c.duration, c.records) {
        (Some(d), _) => Some(d),
        (None, Some(_)) => None,
        (None, None) => Some(DEFAULT_DURATION),
    };
    Plan {
        start_ns,
        measure_start_ns,
        end_ns: duration.map(|d| measure_start_ns + d.as_nanos() as u64),
    }
}

/// An id for this run's value stamps: different across runs and processes.
fn run_id(clock: &Clock) -> u32 {
    let t = clock.unix_ns(0);
    (t ^ (t >> 32) ^ std::process::id() as u64) as u32
}

/// `n`'s share of `total` for worker `i` of `n` (the first ones get one more).
fn share(total: u64, i: usize, n: usize) -> u64 {
    total / n as u64 + u64::from((i as u64) < total % n as u64)
}

struct Producers {
    handles: Vec<JoinHandle<()>>,
    stats: Vec<Arc<WorkerStats>>,
    version: i16,
}

fn setting(k: &'static str, v: impl ToString) -> (&'static str, String) {
    (k, v.to_string())
}

fn produce_settings(p: &ProduceArgs, topic: &Topic) -> Vec<(&'static str, String)> {
    vec![
        setting("partitions", topic.partitions.len()),
        setting("record_size", p.record_size),
        (
            "key_space",
            report::json_str(match p.key_space {
                KeySpace::Uniform => "uniform",
                KeySpace::None => "none",
            }),
        ),
        setting("batch_bytes", p.batch_bytes),
        setting("linger_ms", p.linger_ms),
        setting("acks", p.acks),
        ("compression", report::json_str(p.compression.name())),
        setting("producers", p.producers),
        (
            "rate",
            p.rate.map_or("null".to_string(), |r| format!("{r}")),
        ),
        setting("max_in_flight", p.max_in_flight),
    ]
}

fn common_settings(c: &Common) -> Vec<(&'static str, String)> {
    vec![
        ("bootstrap", report::json_str(&c.bootstrap)),
        ("warmup_s", format!("{}", c.warmup.as_secs_f64())),
        (
            "duration_s",
            c.duration
                .map_or("null".to_string(), |d| format!("{}", d.as_secs_f64())),
        ),
        (
            "records",
            c.records.map_or("null".to_string(), |r| r.to_string()),
        ),
    ]
}

#[allow(clippy::too_many_arguments)]
fn start_producers(
    c: &Common,
    p: &ProduceArgs,
    topic: &Topic,
    clock: Clock,
    plan: Plan,
    run: &Arc<RunState>,
    run_id: u32,
    conns: Vec<(Conn, Vec<i32>)>,
) -> Result<Producers> {
    let n = conns.len();
    let cfg = Arc::new(ProduceConfig {
        topic: topic.name.clone(),
        record_size: p.record_size,
        keys: p.key_space,
        batch_bytes: p.batch_bytes,
        linger_ns: p.linger_ms * 1_000_000,
        acks: p.acks,
        compression: p.compression,
        rate_per_worker: p.rate.map(|r| r / n as f64),
        max_in_flight: p.max_in_flight,
        timeout_ms: c.request_timeout_ms as i32,
        run_id,
        payload_pool: producer::payload_pool(
            p.record_size,
            p.compression != Compression::None,
            u64::from(run_id),
        ),
    });
    let mut out = Producers {
        handles: Vec::with_capacity(n),
        stats: Vec::with_capacity(n),
        version: 0,
    };
    for (i, (conn, partitions)) in conns.into_iter().enumerate() {
        out.version = conn.versions.require(ApiKey::Produce, conn.addr())?;
        let window = Window {
            start_ns: plan.start_ns,
            measure_start_ns: plan.measure_start_ns,
            end_ns: plan.end_ns,
            quota: c.records.map(|r| share(r, i, n)),
        };
        let seed = (u64::from(run_id) << 16) ^ i as u64;
        let h = producer::spawn(
            i,
            conn,
            partitions,
            cfg.clone(),
            window,
            clock,
            run.clone(),
            seed,
        )?;
        out.handles.push(h.join);
        out.stats.push(h.stats);
    }
    Ok(out)
}

/// Opens producer connections; each first checks (with bounded retries)
/// that its leader serves its partitions, so that a just-created topic does
/// not greet the first requests with NOT_LEADER errors.
fn open_producer_conns(
    c: &Common,
    p: &ProduceArgs,
    topic: &Topic,
) -> Result<Vec<(Conn, Vec<i32>)>> {
    cluster::assign(topic, p.producers, true)?
        .into_iter()
        .map(|a| {
            let mut conn = Conn::open(&a.addr, timeout(c))?;
            cluster::list_offsets(&mut conn, &topic.name, &a.partitions, LATEST_TIMESTAMP)?;
            Ok((conn, a.partitions))
        })
        .collect()
}

/// `pinlog-loadgen produce`.
pub fn produce(c: &Common, p: &ProduceArgs) -> Result<(Report, hdrhistogram::Histogram<u64>)> {
    check_common(c)?;
    check_produce(p)?;
    let topic = cluster::prepare_topic(
        &c.bootstrap,
        &c.topic,
        IfMissing::Create(c.partitions),
        timeout(c),
    )?;
    let conns = open_producer_conns(c, p, &topic)?;
    let clock = Clock::new();
    let run = RunState::new();
    let plan = plan(c, &clock);
    let producers = start_producers(c, p, &topic, clock, plan, &run, run_id(&clock), conns)?;
    let mut progress = Progress::new(c, clock, plan);
    let handles = producers.handles;
    wait(|| {
        progress.tick(|secs, prev| {
            let t = totals(&producers.stats);
            let line = format!(
                "produce {}  p50 {}  p99 {}  errors {}",
                rate_text(
                    t.records + t.warmup_records,
                    t.bytes + t.warmup_bytes,
                    prev,
                    secs
                ),
                pct(&t.hist, 0.5),
                pct(&t.hist, 0.99),
                t.errors
            );
            (
                line,
                [t.records + t.warmup_records, t.bytes + t.warmup_bytes],
            )
        });
        handles.iter().all(JoinHandle::is_finished)
    });
    join(&run, handles);
    let t = totals(&producers.stats);
    let mut settings = common_settings(c);
    settings.extend(produce_settings(p, &topic));
    settings.push(setting("produce_version", producers.version));
    let report = Report {
        mode: "produce",
        topic: topic.name.clone(),
        records: t.records,
        bytes: t.bytes,
        duration_s: window_s(plan, t.last_ns),
        errors: t.errors,
        warmup_records: t.warmup_records,
        wire_bytes: t.wire_bytes,
        requests: t.requests,
        latency_kind: if p.acks == 0 {
            "none (acks=0)"
        } else {
            "produce"
        },
        latency: Percentiles::of(&t.hist),
        failure: run.failure(),
        error_codes: run.error_codes(),
        settings,
        ..Default::default()
    };
    Ok((report, t.hist))
}

/// Opens consumer connections and positions each partition.
fn open_consumers(
    c: &Common,
    a: &ConsumeArgs,
    topic: &Topic,
    start: StartAt,
    catch_up: bool,
) -> Result<Vec<(Conn, Vec<PartitionState>)>> {
    cluster::assign(topic, a.consumers, false)?
        .into_iter()
        .map(|asg| {
            let mut conn = Conn::open(&asg.addr, timeout(c))?;
            let ts = match start {
                StartAt::Earliest => EARLIEST_TIMESTAMP,
                StartAt::Latest => LATEST_TIMESTAMP,
            };
            let starts = cluster::list_offsets(&mut conn, &topic.name, &asg.partitions, ts)?;
            let ends = if catch_up {
                Some(cluster::list_offsets(
                    &mut conn,
                    &topic.name,
                    &asg.partitions,
                    LATEST_TIMESTAMP,
                )?)
            } else {
                None
            };
            let parts = asg
                .partitions
                .iter()
                .enumerate()
                .map(|(i, &partition)| PartitionState {
                    partition,
                    offset: starts[i],
                    end: ends.as_ref().map(|e| e[i]),
                })
                .collect();
            Ok((conn, parts))
        })
        .collect()
}

struct Consumers {
    handles: Vec<JoinHandle<()>>,
    stats: Vec<Arc<WorkerStats>>,
    shared: Arc<ConsumerShared>,
    version: i16,
}

fn start_consumers(
    conns: Vec<(Conn, Vec<PartitionState>)>,
    cfg: ConsumeConfig,
    clock: Clock,
    run: &Arc<RunState>,
) -> Result<Consumers> {
    let cfg = Arc::new(cfg);
    let shared = ConsumerShared::new();
    let mut out = Consumers {
        handles: Vec::new(),
        stats: Vec::new(),
        shared: shared.clone(),
        version: 0,
    };
    for (i, (conn, parts)) in conns.into_iter().enumerate() {
        out.version = conn.versions.require(ApiKey::Fetch, conn.addr())?;
        let h = consumer::spawn(
            i,
            conn,
            parts,
            cfg.clone(),
            clock,
            run.clone(),
            shared.clone(),
        )?;
        out.handles.push(h.join);
        out.stats.push(h.stats);
    }
    Ok(out)
}

/// `pinlog-loadgen consume`.
pub fn consume(
    c: &Common,
    a: &ConsumeArgs,
    start: StartAt,
) -> Result<(Report, hdrhistogram::Histogram<u64>)> {
    check_common(c)?;
    check_consume(c, a)?;
    let catch_up = start == StartAt::Earliest && c.duration.is_none() && c.records.is_none();
    if start == StartAt::Latest && c.duration.is_none() && c.records.is_none() {
        return Err(usage("consume --from latest needs --duration or --records"));
    }
    let if_missing = match c.partitions {
        Some(n) => IfMissing::Create(Some(n)),
        None => IfMissing::Fail,
    };
    let topic = cluster::prepare_topic(&c.bootstrap, &c.topic, if_missing, timeout(c))?;
    let conns = open_consumers(c, a, &topic, start, catch_up)?;
    let clock = Clock::new();
    let run = RunState::new();
    let mut plan = plan(c, &clock);
    if catch_up {
        plan.end_ns = None;
    }
    let consumers = start_consumers(
        conns,
        ConsumeConfig {
            topic: topic.name.clone(),
            max_wait_ms: a.fetch_max_wait_ms,
            measure: Measure::Fetch,
            measure_start_ns: plan.measure_start_ns,
            end_ns: plan.end_ns,
            limit: c.records,
            check_crc: !a.no_crc_check,
        },
        clock,
        &run,
    )?;
    let mut progress = Progress::new(c, clock, plan);
    let handles = consumers.handles;
    wait(|| {
        progress.tick(|secs, prev| {
            let t = totals(&consumers.stats);
            let line = format!(
                "consume {}  fetch p50 {}  p99 {}",
                rate_text(
                    t.records + t.warmup_records,
                    t.bytes + t.warmup_bytes,
                    prev,
                    secs
                ),
                pct(&t.hist, 0.5),
                pct(&t.hist, 0.99),
            );
            (
                line,
                [t.records + t.warmup_records, t.bytes + t.warmup_bytes],
            )
        });
        handles.iter().all(JoinHandle::is_finished)
    });
    join(&run, handles);
    let t = totals(&consumers.stats);
    let mut settings = common_settings(c);
    settings.push(setting("partitions", topic.partitions.len()));
    settings.push(setting("consumers", a.consumers));
    settings.push((
        "from",
        report::json_str(if start == StartAt::Earliest {
            "earliest"
        } else {
            "latest"
        }),
    ));
    settings.push(setting("fetch_version", consumers.version));
    let report = Report {
        mode: "consume",
        topic: topic.name.clone(),
        records: t.records,
        bytes: t.bytes,
        duration_s: window_s(plan, t.last_ns),
        errors: t.errors,
        warmup_records: t.warmup_records,
        wire_bytes: t.wire_bytes,
        requests: t.requests,
        latency_kind: "fetch",
        latency: Percentiles::of(&t.hist),
        failure: run.failure(),
        error_codes: run.error_codes(),
        settings,
        ..Default::default()
    };
    Ok((report, t.hist))
}

/// `pinlog-loadgen e2e`.
pub fn e2e(
    c: &Common,
    p: &ProduceArgs,
    a: &ConsumeArgs,
) -> Result<(Report, hdrhistogram::Histogram<u64>)> {
    check_common(c)?;
    check_produce(p)?;
    check_consume(c, a)?;
    if p.record_size < STAMP_BYTES {
        return Err(usage(format!(
            "e2e needs --record-size of at least {STAMP_BYTES}: each value carries its send time"
        )));
    }
    let topic = cluster::prepare_topic(
        &c.bootstrap,
        &c.topic,
        IfMissing::Create(c.partitions),
        timeout(c),
    )?;
    // Consumers are positioned at the end before anything is produced.
    let consumer_conns = open_consumers(c, a, &topic, StartAt::Latest, false)?;
    let producer_conns = open_producer_conns(c, p, &topic)?;
    let clock = Clock::new();
    let run = RunState::new();
    let plan = plan(c, &clock);
    let id = run_id(&clock);
    let consumers = start_consumers(
        consumer_conns,
        ConsumeConfig {
            topic: topic.name.clone(),
            max_wait_ms: a.fetch_max_wait_ms,
            measure: Measure::EndToEnd { run_id: id },
            measure_start_ns: plan.measure_start_ns,
            end_ns: None,
            limit: None,
            check_crc: !a.no_crc_check,
        },
        clock,
        &run,
    )?;
    let producers = start_producers(c, p, &topic, clock, plan, &run, id, producer_conns)?;
    let mut progress = Progress::new(c, clock, plan);
    let drain = timeout(c);
    let mut producers_done_ns: Option<u64> = None;
    let mut handles = consumers.handles;
    let producer_handles = producers.handles;
    wait(|| {
        progress.tick(|secs, prev| {
            let pt = totals(&producers.stats);
            let ct = totals(&consumers.stats);
            let line = format!(
                "e2e produce {}  consume {}  e2e p50 {}  p99 {}  errors {}",
                rate_text(
                    pt.records + pt.warmup_records,
                    pt.bytes + pt.warmup_bytes,
                    prev,
                    secs
                ),
                rate_text(
                    ct.records + ct.warmup_records,
                    ct.bytes + ct.warmup_bytes,
                    &prev[2..],
                    secs
                ),
                pct(&ct.hist, 0.5),
                pct(&ct.hist, 0.99),
                pt.errors
            );
            (
                line,
                [
                    pt.records + pt.warmup_records,
                    pt.bytes + pt.warmup_bytes,
                    ct.records + ct.warmup_records,
                    ct.bytes + ct.warmup_bytes,
                ],
            )
        });
        if producers_done_ns.is_none() && producer_handles.iter().all(JoinHandle::is_finished) {
            producers_done_ns = Some(clock.now_ns());
        }
        if let Some(done_at) = producers_done_ns {
            // Wait for the consumers to see every acknowledged record, but
            // not longer than one request timeout.
            let pt = totals(&producers.stats);
            let ct = totals(&consumers.stats);
            let caught_up = ct.records + ct.warmup_records >= pt.records + pt.warmup_records;
            if caught_up || clock.now_ns() >= done_at + drain.as_nanos() as u64 {
                consumers.shared.done.store(true, Ordering::Relaxed);
            }
        }
        handles.iter().all(JoinHandle::is_finished) && producers_done_ns.is_some()
    });
    handles.extend(producer_handles);
    join(&run, handles);
    let pt = totals(&producers.stats);
    let ct = totals(&consumers.stats);
    let produced = pt.records;
    // Acknowledged records that never arrived count as errors too.
    let missing = (pt.records + pt.warmup_records).saturating_sub(ct.records + ct.warmup_records);
    let mut settings = common_settings(c);
    settings.extend(produce_settings(p, &topic));
    settings.push(setting("consumers", a.consumers));
    settings.push(setting("produce_version", producers.version));
    settings.push(setting("fetch_version", consumers.version));
    let report = Report {
        mode: "e2e",
        topic: topic.name.clone(),
        records: ct.records,
        bytes: ct.bytes,
        duration_s: window_s(plan, ct.last_ns.max(pt.last_ns)),
        errors: pt.errors + ct.errors + missing,
        warmup_records: ct.warmup_records,
        wire_bytes: ct.wire_bytes,
        requests: pt.requests + ct.requests,
        latency_kind: "end_to_end",
        latency: Percentiles::of(&ct.hist),
        produced: Some(produced),
        produce_latency: Some(Percentiles::of(&pt.hist)),
        failure: run.failure(),
        error_codes: run.error_codes(),
        settings,
    };
    Ok((report, ct.hist))
}

/// Seconds from the start of measurement to the last completed record.
fn window_s(plan: Plan, last_ns: u64) -> f64 {
    last_ns.saturating_sub(plan.measure_start_ns) as f64 / 1e9
}

/// Polls `done` until it returns true. Worker threads end on their own
/// (every socket operation has a timeout), so this always returns.
fn wait(mut done: impl FnMut() -> bool) {
    while !done() {
        std::thread::sleep(POLL_INTERVAL);
    }
}

fn join(run: &RunState, handles: Vec<JoinHandle<()>>) {
    for h in handles {
        if h.join().is_err() {
            run.fail("a worker thread panicked".into());
        }
    }
}

/// A percentile for the progress line, "-" before the first sample.
fn pct(h: &hdrhistogram::Histogram<u64>, q: f64) -> String {
    if h.is_empty() {
        "-".to_string()
    } else {
        ms(h.value_at_quantile(q))
    }
}

/// "12345 rec/s  12.06 MB/s" over the last interval.
fn rate_text(records: u64, bytes: u64, prev: &[u64], secs: f64) -> String {
    let r = records.saturating_sub(prev[0]) as f64 / secs;
    let b = bytes.saturating_sub(prev[1]) as f64 / (1024.0 * 1024.0) / secs;
    format!("{r:>10.0} rec/s {b:>8.2} MB/s")
}

/// The once-a-second progress line on stderr.
struct Progress {
    quiet: bool,
    clock: Clock,
    plan: Plan,
    next_ns: u64,
    last_ns: u64,
    prev: Vec<u64>,
}

impl Progress {
    fn new(c: &Common, clock: Clock, plan: Plan) -> Progress {
        let interval = PROGRESS_INTERVAL.as_nanos() as u64;
        Progress {
            quiet: c.quiet,
            clock,
            plan,
            next_ns: plan.start_ns + interval,
            last_ns: plan.start_ns,
            prev: vec![0; 4],
        }
    }

    /// Prints a line if a second has passed. `line(seconds since the last
    /// line, previous counters)` returns the text and the new counters.
    fn tick<const N: usize>(&mut self, line: impl FnOnce(f64, &[u64]) -> (String, [u64; N])) {
        let now = self.clock.now_ns();
        if self.quiet || now < self.next_ns {
            return;
        }
        let secs = (now - self.last_ns) as f64 / 1e9;
        let (text, counters) = line(secs, &self.prev);
        let elapsed = (now - self.plan.start_ns) as f64 / 1e9;
        let phase = if now < self.plan.measure_start_ns {
            " (warmup)"
        } else {
            ""
        };
        eprintln!("[{elapsed:>7.1}s] {text}{phase}");
        self.prev = counters.to_vec();
        self.last_ns = now;
        self.next_ns = now + PROGRESS_INTERVAL.as_nanos() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up() {
        for (total, n) in [(10u64, 3usize), (2, 5), (1_000_000, 7)] {
            let sum: u64 = (0..n).map(|i| share(total, i, n)).sum();
            assert_eq!(sum, total);
        }
        assert_eq!(share(10, 0, 3), 4);
        assert_eq!(share(10, 2, 3), 3);
    }
}
