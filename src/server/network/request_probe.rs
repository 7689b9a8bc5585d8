//! What the network edge counts on each shard: requests and errors per
//! API, latency histograms, and bytes in and out. Like Redpanda's probes,
//! each shard counts into its own [`ShardProbe`] (a shard extension of
//! plain `Cell`s and `RefCell`s): a request never touches memory another
//! core writes. The metrics room reads these counters at scrape time and
//! renders them (`server/metrics/`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

use hdrhistogram::Histogram;

use crate::protocol::api::{ApiKey, SUPPORTED_APIS};
use crate::protocol::chunks::Chunk;
use crate::server::network::dispatch::Outcome;
use crate::shard::shard::Shard;

/// Upper bounds (inclusive, in microseconds) of the Prometheus latency
/// buckets, from 100 µs to 10 s; `+Inf` is implied. Close to Prometheus'
/// default buckets, with more resolution below a millisecond, where a
/// thread-per-core broker answers most requests.
pub const LATENCY_BUCKET_BOUNDS_US: [u64; 16] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// Largest latency the HdrHistogram tells apart; longer requests are counted
/// at this value (they land in `+Inf` either way) and their exact time still
/// goes into `_sum`.
pub const LATENCY_TRACKABLE_MAX_US: u64 = 60_000_000;

/// HdrHistogram precision: 2 significant digits keep each bucket within 1%
/// of its bound at about 20 KiB per histogram (14 APIs per shard); 3 digits
/// would cost about 140 KiB each.
const LATENCY_SIGNIFICANT_DIGITS: u8 = 2;

const _: () = {
    let n = LATENCY_BUCKET_BOUNDS_US.len();
    let mut i = 1;
    while i < n {
        assert!(LATENCY_BUCKET_BOUNDS_US[i - 1] < LATENCY_BUCKET_BOUNDS_US[i]);
        i += 1;
    }
    assert!(LATENCY_BUCKET_BOUNDS_US[0] >= 1);
    // Every finite bucket must be answerable from the histogram.
    assert!(LATENCY_BUCKET_BOUNDS_US[n - 1] < LATENCY_TRACKABLE_MAX_US);
};

/// One API's counters on one shard.
struct ApiProbe {
    /// Requests of this API whose header named it, answered or not.
    requests: Cell<u64>,
    /// Requests that closed the connection instead of being answered
    /// (unsupported version, malformed body).
    errors: Cell<u64>,
    /// Latency of the answered requests (including acks=0 produces).
    latency_us: RefCell<Histogram<u64>>,
    /// Exact sum of the latencies in `latency_us`, for `_sum`.
    latency_sum_us: Cell<u64>,
}

impl ApiProbe {
    fn new() -> ApiProbe {
        ApiProbe {
            requests: Cell::new(0),
            errors: Cell::new(0),
            latency_us: RefCell::new(
                Histogram::new_with_bounds(1, LATENCY_TRACKABLE_MAX_US, LATENCY_SIGNIFICANT_DIGITS)
                    .expect("constant histogram bounds are valid"),
            ),
            latency_sum_us: Cell::new(0),
        }
    }

    fn record_latency(&self, us: u64) {
        self.latency_us.borrow_mut().saturating_record(us);
        add(&self.latency_sum_us, us);
    }

    fn snapshot(&self, api: ApiKey) -> ApiSnapshot {
        let h = self.latency_us.borrow();
        let mut latency_buckets = [0u64; LATENCY_BUCKET_BOUNDS_US.len()];
        for (slot, bound) in latency_buckets.iter_mut().zip(LATENCY_BUCKET_BOUNDS_US) {
            *slot = h.count_between(0, bound);
        }
        ApiSnapshot {
            api,
            requests: self.requests.get(),
            errors: self.errors.get(),
            latency_buckets,
            latency_count: h.len(),
            latency_sum_us: self.latency_sum_us.get(),
        }
    }
}

/// A shard's metrics, kept as a shard extension and touched only by that
/// shard's thread.
pub struct ShardProbe {
    /// One per API, in [`SUPPORTED_APIS`] order.
    apis: Vec<ApiProbe>,
    /// Frames whose header was unreadable or named an unknown API.
    unknown_requests: Cell<u64>,
    /// Kafka request bytes read, size prefixes included.
    bytes_received: Cell<u64>,
    /// Kafka response bytes written, size prefixes included.
    bytes_sent: Cell<u64>,
}

/// What [`ShardProbe::request_started`] remembers until the request ends.
pub struct RequestTimer {
    api: Option<ApiKey>,
    started: Instant,
}

impl ShardProbe {
    pub(crate) fn new() -> ShardProbe {
        ShardProbe {
            apis: SUPPORTED_APIS.iter().map(|_| ApiProbe::new()).collect(),
            unknown_requests: Cell::new(0),
            bytes_received: Cell::new(0),
            bytes_sent: Cell::new(0),
        }
    }

    /// The probe of `shard`, created on first use so that every shard has
    /// one whether or not it has served a connection yet.
    pub fn of(shard: &Shard) -> Rc<ShardProbe> {
        if let Some(p) = shard.extension::<ShardProbe>() {
            return p;
        }
        let p = Rc::new(ShardProbe::new());
        shard.set_extension(p.clone());
        p
    }

    fn api(&self, key: ApiKey) -> &ApiProbe {
        let i = SUPPORTED_APIS
            .iter()
            .position(|a| a.key == key)
            .expect("every ApiKey has a row in SUPPORTED_APIS");
        &self.apis[i]
    }

    /// Called when a whole request frame (without its 4-byte size prefix)
    /// has been read.
    pub fn request_started(&self, frame: &[u8]) -> RequestTimer {
        add(&self.bytes_received, frame.len() as u64 + 4);
        // The API key is the frame's first field; dispatch decodes it again,
        // which costs less than threading it back out of every return path.
        let api = frame
            .get(..2)
            .and_then(|b| ApiKey::from_i16(i16::from_be_bytes([b[0], b[1]])));
        RequestTimer {
            api,
            started: Instant::now(),
        }
    }

    /// Called when the request's outcome is known (its response built).
    pub fn request_finished(&self, timer: RequestTimer, outcome: &Outcome) {
        let Some(key) = timer.api else {
            add(&self.unknown_requests, 1);
            return;
        };
        let api = self.api(key);
        add(&api.requests, 1);
        match outcome {
            Outcome::Close(_) | Outcome::RespondThenClose(..) => add(&api.errors, 1),
            Outcome::Respond(_) | Outcome::RespondThrottled(..) | Outcome::NoResponse => {
                let us = u64::try_from(timer.started.elapsed().as_micros()).unwrap_or(u64::MAX);
                api.record_latency(us);
            }
        }
    }

    /// Called after a response has been written to the socket.
    pub fn response_sent(&self, bytes: u64) {
        add(&self.bytes_sent, bytes);
    }

    /// Each API's counters, in [`SUPPORTED_APIS`] order.
    pub fn api_snapshots(&self) -> Vec<ApiSnapshot> {
        SUPPORTED_APIS
            .iter()
            .zip(&self.apis)
            .map(|(a, p)| p.snapshot(a.key))
            .collect()
    }

    /// Frames whose header was unreadable or named an unknown API.
    pub fn unknown_requests(&self) -> u64 {
        self.unknown_requests.get()
    }

    /// Kafka request bytes read, size prefixes included.
    pub fn bytes_received(&self) -> u64 {
        self.bytes_received.get()
    }

    /// Kafka response bytes written, size prefixes included.
    pub fn bytes_sent(&self) -> u64 {
        self.bytes_sent.get()
    }
}

/// Counters wrap rather than panic: a wrapped counter is a reset to
/// Prometheus, which it handles, and a panic would take the shard down.
fn add(c: &Cell<u64>, n: u64) {
    c.set(c.get().wrapping_add(n));
}

/// Bytes a response puts on the wire.
pub fn response_bytes(chunks: &[Chunk]) -> u64 {
    chunks.iter().map(|c| c.len() as u64).sum()
}

/// One API's metrics on one shard, at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiSnapshot {
    pub api: ApiKey,
    pub requests: u64,
    pub errors: u64,
    /// Cumulative counts: answered requests that took at most
    /// `LATENCY_BUCKET_BOUNDS_US[i]` µs (to within the histogram's 1%).
    pub latency_buckets: [u64; LATENCY_BUCKET_BOUNDS_US.len()],
    pub latency_count: u64,
    pub latency_sum_us: u64,
}

/// For the renderer's tests: an answered request with an exact latency.
#[cfg(test)]
impl ShardProbe {
    pub(crate) fn record_answered(&self, key: ApiKey, latency_us: u64) {
        let api = self.api(key);
        add(&api.requests, 1);
        api.record_latency(latency_us);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timer(api: Option<ApiKey>) -> RequestTimer {
        RequestTimer {
            api,
            started: Instant::now(),
        }
    }

    #[test]
    fn request_outcomes_are_counted_per_api() {
        let p = ShardProbe::new();
        let frame = (ApiKey::Metadata as i16).to_be_bytes();
        let t = p.request_started(&frame);
        assert_eq!(t.api, Some(ApiKey::Metadata));
        p.request_finished(t, &Outcome::NoResponse);
        p.request_finished(timer(Some(ApiKey::Metadata)), &Outcome::Close("x".into()));
        p.request_finished(timer(None), &Outcome::Close("x".into()));
        let unknown = p.request_started(&[0x7f, 0x7f, 0, 0]);
        assert_eq!(unknown.api, None);
        p.response_sent(10);
        let apis = p.api_snapshots();
        let m = &apis[SUPPORTED_APIS
            .iter()
            .position(|a| a.key == ApiKey::Metadata)
            .unwrap()];
        assert_eq!((m.requests, m.errors, m.latency_count), (2, 1, 1));
        assert_eq!(p.unknown_requests(), 1);
        assert_eq!(p.bytes_received(), 2 + 4 + 4 + 4);
        assert_eq!(p.bytes_sent(), 10);
    }

    #[test]
    fn latency_buckets_are_cumulative() {
        let p = ShardProbe::new();
        for us in [50, 200, 3_000, 20_000_000, 100_000_000] {
            p.api(ApiKey::Produce).record_latency(us);
        }
        let apis = p.api_snapshots();
        let a = &apis[0];
        assert_eq!(a.api, ApiKey::Produce);
        // Beyond the trackable maximum a value is clamped in the buckets but
        // exact in the sum.
        assert_eq!(a.latency_count, 5);
        assert_eq!(a.latency_sum_us, 120_003_250);
        assert_eq!(a.latency_buckets[0], 1, "≤100 µs");
        assert_eq!(a.latency_buckets[1], 2, "≤250 µs");
        assert_eq!(a.latency_buckets[5], 3, "≤5 ms");
        assert_eq!(*a.latency_buckets.last().unwrap(), 3, "≤10 s");
        assert!(a.latency_buckets.windows(2).all(|w| w[0] <= w[1]));
    }
}
