//! Counters and latency histograms shared between worker threads and the
//! thread that prints progress, and the run's stop/failure state.
//!
//! Each worker owns one `WorkerStats`: counters are atomics, the histogram
//! sits behind a mutex that only its worker and, once a second, the
//! progress printer take, so there is no contention to speak of.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use hdrhistogram::Histogram;

use crate::constants::{HISTOGRAM_MAX_US, HISTOGRAM_SIGFIGS};

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_US, HISTOGRAM_SIGFIGS)
        .expect("valid histogram bounds")
}

/// Records `ns` nanoseconds as microseconds, clamped into the histogram's
/// range (a sub-microsecond latency counts as 1 µs, anything beyond an hour
/// as an hour) so that no sample is ever dropped.
pub fn record_ns(h: &mut Histogram<u64>, ns: u64) {
    let us = (ns / 1000).clamp(1, HISTOGRAM_MAX_US);
    h.record(us).expect("value clamped into range");
}

#[derive(Default)]
pub struct Counters {
    /// Records completed in the measured window (acked, or consumed).
    pub records: AtomicU64,
    /// Their value bytes.
    pub bytes: AtomicU64,
    /// Records completed during warmup (not in `records`), and their bytes.
    pub warmup_records: AtomicU64,
    pub warmup_bytes: AtomicU64,
    /// Records that failed: error codes, lost requests.
    pub errors: AtomicU64,
    /// Bytes on the wire (batches sent or fetched), measured window only.
    pub wire_bytes: AtomicU64,
    /// Produce or fetch requests completed.
    pub requests: AtomicU64,
    /// Monotonic ns of the last completed record (0 when none).
    pub last_ns: AtomicU64,
}

pub struct WorkerStats {
    pub counters: Counters,
    hist: Mutex<Histogram<u64>>,
}

impl WorkerStats {
    pub fn new() -> Arc<WorkerStats> {
        Arc::new(WorkerStats {
            counters: Counters::default(),
            hist: Mutex::new(new_histogram()),
        })
    }

    pub fn hist(&self) -> MutexGuard<'_, Histogram<u64>> {
        // A worker that panicked mid-record leaves a consistent histogram.
        self.hist.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn add(&self, field: &AtomicU64, n: u64) {
        field.fetch_add(n, Ordering::Relaxed);
    }

    pub fn completed_at(&self, ns: u64) {
        self.counters.last_ns.fetch_max(ns, Ordering::Relaxed);
    }
}

/// Totals over a set of workers.
#[derive(Debug, Clone)]
pub struct Totals {
    pub records: u64,
    pub bytes: u64,
    pub warmup_records: u64,
    pub warmup_bytes: u64,
    pub errors: u64,
    pub wire_bytes: u64,
    pub requests: u64,
    pub last_ns: u64,
    pub hist: Histogram<u64>,
}

pub fn totals(workers: &[Arc<WorkerStats>]) -> Totals {
    let mut t = Totals {
        records: 0,
        bytes: 0,
        warmup_records: 0,
        warmup_bytes: 0,
        errors: 0,
        wire_bytes: 0,
        requests: 0,
        last_ns: 0,
        hist: new_histogram(),
    };
    for w in workers {
        let c = &w.counters;
        t.records += c.records.load(Ordering::Relaxed);
        t.bytes += c.bytes.load(Ordering::Relaxed);
        t.warmup_records += c.warmup_records.load(Ordering::Relaxed);
        t.warmup_bytes += c.warmup_bytes.load(Ordering::Relaxed);
        t.errors += c.errors.load(Ordering::Relaxed);
        t.wire_bytes += c.wire_bytes.load(Ordering::Relaxed);
        t.requests += c.requests.load(Ordering::Relaxed);
        t.last_ns = t.last_ns.max(c.last_ns.load(Ordering::Relaxed));
        t.hist.add(&*w.hist()).expect("same bounds");
    }
    t
}

/// Whether the run should stop, and the first fatal error, if any.
#[derive(Default)]
pub struct RunState {
    stop: AtomicBool,
    failure: Mutex<Option<String>>,
    /// Kafka error codes seen in responses, with how often (rare path).
    error_codes: Mutex<BTreeMap<i16, u64>>,
}

impl RunState {
    pub fn new() -> Arc<RunState> {
        Arc::new(RunState::default())
    }

    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Records a fatal error (the first one wins) and stops the run.
    pub fn fail(&self, what: String) {
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() {
            *f = Some(what);
        }
        drop(f);
        self.stop();
    }

    /// Counts a Kafka error code from a response.
    pub fn note_error(&self, code: i16) {
        *self
            .error_codes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(code)
            .or_default() += 1;
    }

    pub fn error_codes(&self) -> BTreeMap<i16, u64> {
        self.error_codes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_clamped_not_dropped() {
        let mut h = new_histogram();
        record_ns(&mut h, 10);
        record_ns(&mut h, u64::MAX);
        assert_eq!(h.len(), 2);
        assert_eq!(h.min(), 1);
        assert!(h.max() >= HISTOGRAM_MAX_US);
    }

    #[test]
    fn first_failure_wins() {
        let s = RunState::new();
        assert!(!s.stopping());
        s.fail("a".into());
        s.fail("b".into());
        assert!(s.stopping());
        assert_eq!(s.failure().as_deref(), Some("a"));
    }
}
