//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::future::Future;

use bytes::BytesMut;
use glommio::{LocalExecutorBuilder, Placement};
use pinlog::log::batch::{build_batch, BatchSpec, RecordSpec};

/// Runs `f` on a fresh glommio executor on this thread.
pub fn run<F, T>(f: impl FnOnce() -> F + Send + 'static) -> T
where
    F: Future<Output = T> + 'static,
    T: Send + 'static,
{
    LocalExecutorBuilder::new(Placement::Unbound)
        .spawn(move || async move {
            pinlog::blocking_pool::keep_reactor_ticking();
            f().await
        })
        .expect("start glommio executor")
        .join()
        .expect("executor panicked")
}

/// A producer batch of `n` records with `value_len`-byte values, record `i`
/// at timestamp `ts + i`.
pub fn producer_batch(n: usize, value_len: usize, ts: i64) -> BytesMut {
    let value = vec![0xabu8; value_len];
    let key = b"key".to_vec();
    let recs: Vec<RecordSpec> = (0..n)
        .map(|i| (i as i64, Some(&key[..]), &value[..]))
        .collect();
    BytesMut::from(
        &build_batch(&BatchSpec {
            base_offset: 0,
            leader_epoch: -1,
            base_timestamp: ts,
            records: &recs,
        })[..],
    )
}

/// splitmix64: a seeded generator whose sequence is fixed by this file
/// alone, so that a seed replays the same run whatever crate versions the
/// build picks (the fault suite's schedules, the simulation's runs).
pub struct SeededRng(pub u64);

impl SeededRng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}
