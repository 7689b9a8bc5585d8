//! Consumer workers: one connection and one thread each, fetching a fixed
//! set of partitions with one Fetch in flight (as Kafka's consumer does per
//! broker), full fetches without sessions.
//!
//! Every fetched batch is validated (CRC included) and its records walked,
//! as a real consumer must, so consume throughput includes that work.
//! `consume` measures each fetch's round trip; `e2e` reads the stamp at the
//! front of each value and measures from the record's intended send time to
//! now.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use hdrhistogram::Histogram;
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code;
use pinlog::protocol::messages::fetch::{
    FetchPartition, FetchRequest, FetchResponse, FetchTopic, READ_UNCOMMITTED,
};

use crate::batch::read_batches;
use crate::client::Conn;
use crate::clock::Clock;
use crate::constants::{FETCH_MAX_BYTES, FETCH_PARTITION_MAX_BYTES, STAMP_BYTES, STAMP_MAGIC};
use crate::error::{Error, Result};
use crate::stats::{record_ns, RunState, WorkerStats};

/// What the consumer measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Fetch round trips; every record counts, by consumption time.
    Fetch,
    /// Produce-to-consume latency of the records stamped by run `run_id`;
    /// other records are skipped.
    EndToEnd { run_id: u32 },
}

#[derive(Debug, Clone)]
pub struct ConsumeConfig {
    pub topic: String,
    pub max_wait_ms: i32,
    pub measure: Measure,
    /// Records consumed before this (or, end to end, produced before it)
    /// are warmup.
    pub measure_start_ns: u64,
    /// Stop at this time, if set.
    pub end_ns: Option<u64>,
    /// Stop once all workers together consumed this many measured records.
    pub limit: Option<u64>,
    /// Verify each batch's CRC-32C (Kafka's `check.crcs`, on by default).
    pub check_crc: bool,
}

/// One partition's position.
#[derive(Debug, Clone)]
pub struct PartitionState {
    pub partition: i32,
    pub offset: i64,
    /// Catch-up target (the end offset when the run started); `None` when
    /// tailing.
    pub end: Option<i64>,
}

impl PartitionState {
    fn done(&self) -> bool {
        self.end.is_some_and(|e| self.offset >= e)
    }
}

pub struct ConsumerHandle {
    pub join: JoinHandle<()>,
    pub stats: Arc<WorkerStats>,
}

/// Shared by all consumers of a run.
pub struct ConsumerShared {
    /// Measured records consumed so far, for `limit`.
    pub consumed: AtomicU64,
    /// Set by the coordinator to end the consumers (end to end).
    pub done: AtomicBool,
}

impl ConsumerShared {
    pub fn new() -> Arc<ConsumerShared> {
        Arc::new(ConsumerShared {
            consumed: AtomicU64::new(0),
            done: AtomicBool::new(false),
        })
    }
}

#[allow(clippy::too_many_arguments)]
pub fn spawn(
    index: usize,
    conn: Conn,
    partitions: Vec<PartitionState>,
    cfg: Arc<ConsumeConfig>,
    clock: Clock,
    run: Arc<RunState>,
    shared: Arc<ConsumerShared>,
) -> Result<ConsumerHandle> {
    let version = conn.versions.require(ApiKey::Fetch, conn.addr())?;
    let stats = WorkerStats::new();
    let worker = Worker {
        conn,
        version,
        partitions,
        cfg,
        clock,
        run,
        shared,
        stats: stats.clone(),
        scratch: Vec::new(),
    };
    let join = std::thread::Builder::new()
        .name(format!("consumer-{index}"))
        .spawn(move || worker.run())
        .map_err(|e| Error::Other(format!("spawn consumer thread: {e}")))?;
    Ok(ConsumerHandle { join, stats })
}

struct Worker {
    conn: Conn,
    version: i16,
    partitions: Vec<PartitionState>,
    cfg: Arc<ConsumeConfig>,
    clock: Clock,
    run: Arc<RunState>,
    shared: Arc<ConsumerShared>,
    stats: Arc<WorkerStats>,
    /// Decompression buffer, reused.
    scratch: Vec<u8>,
}

/// Per-fetch tallies, added to the shared counters once per response.
#[derive(Default)]
struct Tally {
    records: u64,
    bytes: u64,
    warmup: u64,
    warmup_bytes: u64,
    wire: u64,
}

impl Worker {
    fn run(mut self) {
        if let Err(e) = self.fetch_loop() {
            self.run.fail(e.to_string());
        }
    }

    fn finished(&self) -> bool {
        if self.run.stopping() || self.shared.done.load(Ordering::Relaxed) {
            return true;
        }
        if self.partitions.iter().all(PartitionState::done) {
            return true;
        }
        if let Some(limit) = self.cfg.limit {
            if self.shared.consumed.load(Ordering::Relaxed) >= limit {
                return true;
            }
        }
        self.cfg
            .end_ns
            .is_some_and(|end| self.clock.now_ns() >= end)
    }

    fn fetch_loop(&mut self) -> Result<()> {
        while !self.finished() {
            let request = FetchRequest {
                max_wait_ms: self.cfg.max_wait_ms,
                min_bytes: 1,
                max_bytes: FETCH_MAX_BYTES as i32,
                isolation_level: READ_UNCOMMITTED,
                topics: vec![FetchTopic {
                    topic: self.cfg.topic.clone(),
                    partitions: self
                        .partitions
                        .iter()
                        .filter(|p| !p.done())
                        .map(|p| FetchPartition {
                            partition: p.partition,
                            fetch_offset: p.offset,
                            partition_max_bytes: FETCH_PARTITION_MAX_BYTES as i32,
                            ..Default::default()
                        })
                        .collect(),
                }],
                ..Default::default()
            };
            let v = self.version;
            let sent_ns = self.clock.now_ns();
            let id = self
                .conn
                .writer
                .send(ApiKey::Fetch, v, |w| request.encode(w, v))?;
            let mut r = self.conn.reader.read_response(ApiKey::Fetch, v, id)?;
            let resp = FetchResponse::decode(&mut r, v)
                .map_err(|e| Error::decode(self.conn.addr(), "Fetch response", e))?;
            let now = self.clock.now_ns();
            if resp.error_code != error_code::NONE {
                return Err(self.broker_error("Fetch", resp.error_code));
            }
            let mut tally = Tally::default();
            let mut hist = self.stats.hist();
            for t in resp.responses.iter().filter(|t| t.topic == self.cfg.topic) {
                for p in &t.partitions {
                    let Some(i) = self
                        .partitions
                        .iter()
                        .position(|s| s.partition == p.partition_index)
                    else {
                        continue;
                    };
                    if p.error_code != error_code::NONE {
                        drop(hist);
                        return Err(self.broker_error(
                            &format!("Fetch {}-{}", self.cfg.topic, p.partition_index),
                            p.error_code,
                        ));
                    }
                    let Some(records) = p.records.as_ref().and_then(|r| r.as_bytes()) else {
                        continue;
                    };
                    let from = self.partitions[i].offset;
                    let measure = self.cfg.measure;
                    let measure_start = self.cfg.measure_start_ns;
                    let clock = self.clock;
                    let check_crc = self.cfg.check_crc;
                    let consumed = read_batches(
                        &records,
                        from,
                        check_crc,
                        &mut self.scratch,
                        |_offset, value| match measure {
                            Measure::Fetch => {
                                if now >= measure_start {
                                    tally.records += 1;
                                    tally.bytes += value.len() as u64;
                                } else {
                                    tally.warmup += 1;
                                    tally.warmup_bytes += value.len() as u64;
                                }
                            }
                            Measure::EndToEnd { run_id } => {
                                let Some(sent) = stamp(value, run_id) else {
                                    return;
                                };
                                let sent = clock.ns_of_unix(sent);
                                if sent >= measure_start {
                                    tally.records += 1;
                                    tally.bytes += value.len() as u64;
                                    record_e2e(&mut hist, now, sent);
                                } else {
                                    tally.warmup += 1;
                                    tally.warmup_bytes += value.len() as u64;
                                }
                            }
                        },
                    )
                    .map_err(|detail| Error::Protocol {
                        addr: self.conn.addr().to_string(),
                        detail: format!("{}-{}: {detail}", self.cfg.topic, p.partition_index),
                    })?;
                    if let Some(next) = consumed.next_offset {
                        self.partitions[i].offset = next;
                    }
                    if now >= measure_start {
                        tally.wire += consumed.batch_bytes;
                    }
                }
            }
            if self.cfg.measure == Measure::Fetch && now >= self.cfg.measure_start_ns {
                record_ns(&mut hist, now - sent_ns);
            }
            drop(hist);
            let c = &self.stats.counters;
            self.stats.add(&c.records, tally.records);
            self.stats.add(&c.bytes, tally.bytes);
            self.stats.add(&c.warmup_records, tally.warmup);
            self.stats.add(&c.warmup_bytes, tally.warmup_bytes);
            self.stats.add(&c.wire_bytes, tally.wire);
            self.stats.add(&c.requests, 1);
            if tally.records + tally.warmup > 0 {
                self.stats.completed_at(now);
            }
            self.shared
                .consumed
                .fetch_add(tally.records, Ordering::Relaxed);
        }
        Ok(())
    }

    fn broker_error(&self, what: &str, code: i16) -> Error {
        self.run.note_error(code);
        Error::Broker {
            addr: self.conn.addr().to_string(),
            what: what.to_string(),
            code,
        }
    }
}

fn record_e2e(hist: &mut Histogram<u64>, now: u64, sent: u64) {
    record_ns(hist, now.saturating_sub(sent));
}

/// The intended send time (Unix ns) in a value stamped by run `run_id`.
pub fn stamp(value: &[u8], run_id: u32) -> Option<u64> {
    if value.len() < STAMP_BYTES || value[..4] != STAMP_MAGIC {
        return None;
    }
    let id = u32::from_be_bytes(value[4..8].try_into().ok()?);
    (id == run_id).then(|| u64::from_be_bytes(value[8..16].try_into().expect("8 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_matched_by_run() {
        let mut v = Vec::new();
        v.extend_from_slice(&STAMP_MAGIC);
        v.extend_from_slice(&7u32.to_be_bytes());
        v.extend_from_slice(&123u64.to_be_bytes());
        v.extend_from_slice(b"payload");
        assert_eq!(stamp(&v, 7), Some(123));
        assert_eq!(stamp(&v, 8), None);
        assert_eq!(stamp(&v[..10], 7), None);
        assert_eq!(stamp(b"XXXXXXXXXXXXXXXXXXXX", 7), None);
    }
}
