//! Time: one monotonic clock for scheduling and latency, anchored to Unix
//! time once so that record timestamps and value stamps are wall-clock
//! values that never go backwards within a run.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
    unix_ns_at_start: u64,
}

impl Clock {
    pub fn new() -> Clock {
        let unix_ns_at_start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Clock {
            start: Instant::now(),
            unix_ns_at_start,
        }
    }

    /// Nanoseconds since the clock was made (monotonic).
    pub fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// The Unix time (ns) of monotonic instant `ns`.
    pub fn unix_ns(&self, ns: u64) -> u64 {
        self.unix_ns_at_start + ns
    }

    /// The Unix time (ms) of monotonic instant `ns`: a record timestamp.
    pub fn unix_ms(&self, ns: u64) -> i64 {
        (self.unix_ns(ns) / 1_000_000) as i64
    }

    /// The monotonic instant of Unix time `unix_ns`, saturating at the
    /// clock's start.
    pub fn ns_of_unix(&self, unix_ns: u64) -> u64 {
        unix_ns.saturating_sub(self.unix_ns_at_start)
    }

    /// Sleeps until monotonic instant `ns` (no-op if it has passed).
    pub fn sleep_until(&self, ns: u64) {
        let now = self.now_ns();
        if ns > now {
            std::thread::sleep(std::time::Duration::from_nanos(ns - now));
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// A small, fast, seedable generator (xorshift64*): keys and payload bytes
/// need to be varied, not cryptographic, and a dependency is not worth it.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // SplitMix64 scrambles the seed so that nearby seeds diverge, and
        // the state is never zero (xorshift's fixed point).
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0), by multiply-shift.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_conversions_round_trip() {
        let c = Clock::new();
        let ns = 1_234_567_890;
        assert_eq!(c.ns_of_unix(c.unix_ns(ns)), ns);
        assert_eq!(c.unix_ms(ns), ((c.unix_ns(0) + ns) / 1_000_000) as i64);
        assert!(c.now_ns() < 60_000_000_000);
    }

    #[test]
    fn rng_is_roughly_uniform_and_seeded() {
        let mut r = Rng::new(7);
        let mut buckets = [0u32; 8];
        for _ in 0..80_000 {
            buckets[r.below(8) as usize] += 1;
        }
        for b in buckets {
            assert!((9_000..11_000).contains(&b), "{buckets:?}");
        }
        assert_eq!(Rng::new(1).next_u64(), Rng::new(1).next_u64());
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }
}
