//! `pinlog-loadgen connect`: a connection storm. Each thread opens a
//! connection, makes it ready for requests, and closes it, over and over:
//! TCP connect, the TLS handshake and the SASL login when
//! `--command-config` asks for them, and ApiVersions (which every Kafka
//! client sends first). The latency of a connection is from its connect
//! call to the end of its login; the report's records are connections.
//!
//! It measures what a broker pays when clients reconnect en masse (a
//! deployment restarting, a load balancer failing over): connections per
//! second, and how long a client waits for its connection under that load.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::client::Conn;
use crate::constants::{DEFAULT_DURATION, PROGRESS_INTERVAL, WORKERS_MAX};
use crate::error::{Error, Result};
use crate::report::{Percentiles, Report};
use crate::stats::{new_histogram, record_ns};
use crate::{Common, StormArgs};

/// Consecutive failed connections after which a thread gives up: the broker
/// is refusing everyone, which is a failed run, not a slow one.
const CONSECUTIVE_FAILURES_MAX: u64 = 100;

struct Shared {
    measuring: AtomicBool,
    stop: AtomicBool,
    connections: AtomicU64,
    warmup_connections: AtomicU64,
    errors: AtomicU64,
    failure: Mutex<Option<String>>,
}

/// Runs the storm for `--duration` (or until `--records` connections).
pub fn connect_storm(c: &Common, s: &StormArgs) -> Result<(Report, Histogram<u64>)> {
    if s.threads == 0 || s.threads > WORKERS_MAX {
        return Err(Error::Usage(format!(
            "--threads must be in 1..={WORKERS_MAX}"
        )));
    }
    let timeout = Duration::from_millis(c.request_timeout_ms);
    // One connection first, so that a wrong address or password is one
    // clear error rather than a storm of them.
    Conn::open(&c.bootstrap, timeout)?;
    let shared = Arc::new(Shared {
        measuring: AtomicBool::new(c.warmup.is_zero()),
        stop: AtomicBool::new(false),
        connections: AtomicU64::new(0),
        warmup_connections: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        failure: Mutex::new(None),
    });
    let workers: Vec<_> = (0..s.threads)
        .map(|_| {
            let shared = shared.clone();
            let addr = c.bootstrap.clone();
            let limit = c.records;
            std::thread::spawn(move || storm_thread(&shared, &addr, timeout, limit))
        })
        .collect();

    let started = Instant::now();
    let warmup_end = started + c.warmup;
    let mut measured_from = if c.warmup.is_zero() {
        Some(started)
    } else {
        None
    };
    let duration = c.duration.unwrap_or(if c.records.is_some() {
        Duration::MAX
    } else {
        DEFAULT_DURATION
    });
    let mut last = (Instant::now(), 0u64);
    loop {
        std::thread::sleep(PROGRESS_INTERVAL.min(Duration::from_millis(100)));
        let now = Instant::now();
        if measured_from.is_none() && now >= warmup_end {
            shared.measuring.store(true, Ordering::Relaxed);
            measured_from = Some(now);
        }
        let done = shared.connections.load(Ordering::Relaxed);
        let finished = measured_from.is_some_and(|from| now - from >= duration)
            || c.records.is_some_and(|n| done >= n)
            || shared.failure.lock().map_or(true, |f| f.is_some());
        if !c.quiet && now - last.0 >= PROGRESS_INTERVAL {
            let rate = (done - last.1) as f64 / (now - last.0).as_secs_f64();
            eprintln!(
                "[connect {:5.1}s] {done} connections, {rate:.0}/s, {} errors{}",
                (now - started).as_secs_f64(),
                shared.errors.load(Ordering::Relaxed),
                if measured_from.is_none() {
                    " (warmup)"
                } else {
                    ""
                }
            );
            last = (now, done);
        }
        if finished {
            break;
        }
    }
    let ended = Instant::now();
    shared.stop.store(true, Ordering::Relaxed);
    let mut hist = new_histogram();
    for w in workers {
        let h = w
            .join()
            .map_err(|_| Error::Other("a connect thread panicked".into()))?;
        hist.add(&h).expect("histograms of the same bounds");
    }
    let failure = shared.failure.lock().ok().and_then(|f| f.clone());
    let report = Report {
        mode: "connect",
        topic: String::new(),
        records: shared.connections.load(Ordering::Relaxed),
        duration_s: measured_from.map_or(0.0, |from| (ended - from).as_secs_f64()),
        errors: shared.errors.load(Ordering::Relaxed),
        warmup_records: shared.warmup_connections.load(Ordering::Relaxed),
        latency_kind: "connect_to_ready",
        latency: Percentiles::of(&hist),
        failure,
        settings: vec![
            ("threads", s.threads.to_string()),
            (
                "security_protocol",
                format!("\"{}\"", crate::transport::security().protocol.name()),
            ),
        ],
        ..Report::default()
    };
    Ok((report, hist))
}

/// One thread of the storm: connect, log in, close, until told to stop.
fn storm_thread(
    shared: &Shared,
    addr: &str,
    timeout: Duration,
    limit: Option<u64>,
) -> Histogram<u64> {
    let mut hist = new_histogram();
    let mut consecutive_failures = 0;
    while !shared.stop.load(Ordering::Relaxed) {
        let measuring = shared.measuring.load(Ordering::Relaxed);
        let t0 = Instant::now();
        match Conn::open(addr, timeout) {
            Ok(conn) => {
                let elapsed = t0.elapsed();
                drop(conn);
                consecutive_failures = 0;
                if !measuring {
                    shared.warmup_connections.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let n = shared.connections.fetch_add(1, Ordering::Relaxed) + 1;
                record_ns(&mut hist, elapsed.as_nanos() as u64);
                if limit.is_some_and(|l| n >= l) {
                    break;
                }
            }
            Err(e) => {
                shared.errors.fetch_add(1, Ordering::Relaxed);
                consecutive_failures += 1;
                if consecutive_failures >= CONSECUTIVE_FAILURES_MAX {
                    if let Ok(mut f) = shared.failure.lock() {
                        f.get_or_insert(format!(
                            "{consecutive_failures} connections in a row failed; the last: {e}"
                        ));
                    }
                    break;
                }
            }
        }
    }
    hist
}
