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
        .spawn(move || async move { f().await })
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
