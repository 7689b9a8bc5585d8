//! Producer workers: one connection each, a writer thread that schedules
//! records and sends produce requests, and a reader thread that matches
//! responses and records latencies.
//!
//! **Open loop.** With `--rate`, record `i` of a worker has the intended
//! send time `start + i / rate`, fixed in advance. The writer appends
//! records lazily (whenever it wakes, every record whose time has come) and
//! stamps each with its intended time; latency is measured from that time to
//! the acknowledgement. A broker stall therefore shows up in the latency of
//! every record that should have been sent during it, not just the one
//! request that was stuck (no coordinated omission). Without `--rate` the
//! writer runs flat out and latency is measured from when each record was
//! created.
//!
//! **Batching** follows Kafka's producer: a batch per partition, closed when
//! the next record would not fit in `--batch-bytes` or when its first record
//! is `--linger-ms` old; a request carries the closed batches (at most one
//! per partition, as Kafka requires from Produce v3 on) up to
//! `MAX_REQUEST_BYTES`. Without keys, records go to one partition at a time
//! and move on when its batch closes (Kafka's sticky partitioner).
//!
//! **Pipelining** is bounded by `--max-in-flight` tokens: the writer takes
//! one per request and the reader returns it with the response. Responses
//! arrive in request order, so the reader pops a FIFO of what was sent.

use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;

use bytes::Bytes;
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code;
use pinlog::protocol::messages::produce::{
    PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData,
};

use crate::batch::{record_size, BatchBuilder};
use crate::client::{Conn, FrameReader, FrameWriter};
use crate::clock::{Clock, Rng};
use crate::compression::{Compression, Compressor};
use crate::constants::{
    KEY_BYTES, MAX_REQUEST_BYTES, PAYLOAD_POOL_BYTES, STAMP_BYTES, STAMP_MAGIC,
};
use crate::error::{Error, Result};
use crate::stats::{record_ns, RunState, WorkerStats};

/// Flat out, the clock is read once per this many records: creation times
/// within a few microseconds are the same for latency purposes.
const CLOCK_READ_EVERY_RECORDS: u64 = 64;

/// `--key-space`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KeySpace {
    /// Random 16-hex-digit keys, spread uniformly over the partitions.
    Uniform,
    /// Null keys; sticky partitioning.
    None,
}

/// Settings shared by every producer worker.
#[derive(Debug, Clone)]
pub struct ProduceConfig {
    pub topic: String,
    pub record_size: usize,
    pub keys: KeySpace,
    pub batch_bytes: usize,
    pub linger_ns: u64,
    /// 0, 1 or -1.
    pub acks: i16,
    pub compression: Compression,
    /// Records per second for this worker, or `None` for flat out.
    pub rate_per_worker: Option<f64>,
    pub max_in_flight: usize,
    pub timeout_ms: i32,
    /// Identifies this run's records in value stamps.
    pub run_id: u32,
    /// Record values are slices of this, from `payload_pool`.
    pub payload_pool: Arc<Vec<u8>>,
}

/// Random capital letters (as in Kafka's ProducerPerformance) from which
/// each record value takes a slice at a random offset.
///
/// Kafka's tool repeats one payload for every record, which LZ codecs then
/// compress 40-fold. When compressing, a pool much larger than their windows
/// (snappy 32 KiB, lz4 64 KiB) and than a batch keeps values as compressible
/// as random text really is: gzip and zstd to about 60% (log2(26) of 8
/// bits), lz4 and snappy not at all. Uncompressed, the bytes never matter to
/// a broker, and one cache-hot payload saves the client a cache miss per
/// record (measured: about twice the client's CPU at 1 GB/s).
pub fn payload_pool(record_size: usize, compressed: bool, seed: u64) -> Arc<Vec<u8>> {
    let len = if compressed {
        PAYLOAD_POOL_BYTES.max(2 * record_size)
    } else {
        record_size
    };
    let mut rng = Rng::new(seed);
    Arc::new((0..len).map(|_| b'A' + rng.below(26) as u8).collect())
}

/// When a worker starts, when measurement starts, and when it stops.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub start_ns: u64,
    /// Records intended before this are warmup.
    pub measure_start_ns: u64,
    /// No record is intended at or after this.
    pub end_ns: Option<u64>,
    /// Measured records this worker produces, at most.
    pub quota: Option<u64>,
}

/// A worker's thread handle; joining it also joins its reader.
pub struct ProducerHandle {
    pub join: JoinHandle<()>,
    pub stats: Arc<WorkerStats>,
}

/// Starts a producer worker on an open connection.
#[allow(clippy::too_many_arguments)]
pub fn spawn(
    index: usize,
    conn: Conn,
    partitions: Vec<i32>,
    cfg: Arc<ProduceConfig>,
    window: Window,
    clock: Clock,
    run: Arc<RunState>,
    seed: u64,
) -> Result<ProducerHandle> {
    let version = conn.versions.require(ApiKey::Produce, conn.addr())?;
    let compressor = match cfg.compression {
        Compression::None => None,
        c => Some(Compressor::new(c).map_err(|e| Error::Other(format!("{c:?} compressor: {e}")))?),
    };
    let stats = WorkerStats::new();
    let (writer, reader, _) = conn.split();
    let worker = Writer::new(
        writer,
        partitions,
        cfg,
        window,
        clock,
        run,
        stats.clone(),
        version,
        compressor,
        seed,
    );
    let join = std::thread::Builder::new()
        .name(format!("producer-{index}"))
        .spawn(move || worker.run(reader))
        .map_err(|e| Error::Other(format!("spawn producer thread: {e}")))?;
    Ok(ProducerHandle { join, stats })
}

/// A closed batch waiting to be sent.
struct ReadyBatch {
    partition: i32,
    bytes: Bytes,
    /// Intended (or creation) time of each record, monotonic ns.
    intended: Vec<u64>,
}

/// What the reader needs to account for one sent request.
struct InFlight {
    correlation_id: i32,
    batches: Vec<(i32, Vec<u64>)>,
}

/// The batch being filled for one partition.
struct OpenBatch {
    partition: i32,
    builder: BatchBuilder,
    intended: Vec<u64>,
    /// Intended time of its first record: linger counts from here.
    first_ns: u64,
}

struct Writer {
    frames: FrameWriter,
    cfg: Arc<ProduceConfig>,
    window: Window,
    clock: Clock,
    run: Arc<RunState>,
    stats: Arc<WorkerStats>,
    version: i16,
    compressor: Option<Compressor>,
    rng: Rng,
    open: Vec<OpenBatch>,
    sticky: usize,
    ready: VecDeque<ReadyBatch>,
    ready_bytes: usize,
    /// Records scheduled so far (warmup included), and measured ones.
    seq: u64,
    measured: u64,
    /// Records per batch, estimated from the record size.
    records_per_batch: u64,
    held_tokens: usize,
}

impl Writer {
    #[allow(clippy::too_many_arguments)]
    fn new(
        frames: FrameWriter,
        partitions: Vec<i32>,
        cfg: Arc<ProduceConfig>,
        window: Window,
        clock: Clock,
        run: Arc<RunState>,
        stats: Arc<WorkerStats>,
        version: i16,
        compressor: Option<Compressor>,
        seed: u64,
    ) -> Writer {
        let rng = Rng::new(seed);
        let key_len = (cfg.keys == KeySpace::Uniform).then_some(KEY_BYTES);
        let one = record_size(0, 0, key_len, cfg.record_size);
        let records_per_batch = (cfg.batch_bytes / one).max(1) as u64;
        let open = partitions
            .iter()
            .map(|&partition| OpenBatch {
                partition,
                builder: BatchBuilder::new(cfg.batch_bytes),
                intended: Vec::new(),
                first_ns: 0,
            })
            .collect();
        Writer {
            frames,
            cfg,
            window,
            clock,
            run,
            stats,
            version,
            compressor,
            rng,
            open,
            sticky: 0,
            ready: VecDeque::new(),
            ready_bytes: 0,
            seq: 0,
            measured: 0,
            records_per_batch,
            held_tokens: 0,
        }
    }

    fn run(mut self, reader: FrameReader) {
        let (inflight_tx, inflight_rx) = mpsc::channel::<InFlight>();
        let (token_tx, token_rx) = mpsc::channel::<()>();
        for _ in 0..self.cfg.max_in_flight {
            token_tx.send(()).expect("receiver alive");
        }
        let acks = self.cfg.acks;
        let reader_thread = (acks != 0).then(|| {
            let ctx = ReaderCtx {
                frames: reader,
                version: self.version,
                clock: self.clock,
                measure_start_ns: self.window.measure_start_ns,
                record_size: self.cfg.record_size as u64,
                run: self.run.clone(),
                stats: self.stats.clone(),
            };
            std::thread::Builder::new()
                .name("producer-reader".into())
                .spawn(move || ctx.run(inflight_rx, token_tx))
                .expect("spawn producer reader thread")
        });
        if let Err(e) = self.write_loop(&inflight_tx, &token_rx) {
            self.run.fail(e.to_string());
            // Wakes the reader if it is blocked on this socket.
            self.frames.shutdown();
        }
        drop(inflight_tx);
        if let Some(t) = reader_thread {
            if t.join().is_err() {
                self.run.fail("a producer reader thread panicked".into());
            }
        }
    }

    /// Takes a pipelining token without blocking, if one is free.
    fn try_token(&mut self, tokens: &Receiver<()>) -> bool {
        if self.held_tokens > 0 {
            return true;
        }
        match tokens.try_recv() {
            Ok(()) => {
                self.held_tokens += 1;
                true
            }
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => false,
        }
    }

    /// Blocks for a token; an error means the reader is gone (it recorded
    /// why).
    fn take_token(&mut self, tokens: &Receiver<()>) -> Result<()> {
        if self.held_tokens == 0 {
            tokens
                .recv()
                .map_err(|_| Error::Other("producer connection lost".into()))?;
            self.held_tokens += 1;
        }
        Ok(())
    }

    fn write_loop(&mut self, inflight: &Sender<InFlight>, tokens: &Receiver<()>) -> Result<()> {
        let unlimited = self.cfg.rate_per_worker.is_none();
        let interval_ns = self.cfg.rate_per_worker.map(|r| 1e9 / r);
        let mut generating = true;
        loop {
            if self.run.stopping() {
                return Ok(());
            }
            let now = self.clock.now_ns();
            if generating {
                generating = self.generate(now, interval_ns, tokens)?;
            }
            self.close_lingering(now, !generating)?;
            if !self.ready.is_empty() {
                if self.cfg.acks != 0 {
                    self.take_token(tokens)?;
                }
                // Time passed while waiting for the token: top the request
                // up with what became due meanwhile.
                if generating && !unlimited {
                    let now = self.clock.now_ns();
                    generating = self.generate(now, interval_ns, tokens)?;
                    self.close_lingering(now, !generating)?;
                }
                self.send(inflight)?;
                continue;
            }
            if !generating && self.open.iter().all(|b| b.builder.is_empty()) {
                return Ok(());
            }
            if let Some(interval) = interval_ns {
                self.clock.sleep_until(self.next_wake(interval));
            }
        }
    }

    fn intended_ns(&self, seq: u64, interval_ns: f64) -> u64 {
        self.window.start_ns + (seq as f64 * interval_ns) as u64
    }

    /// Appends every record that is due (open loop) or, flat out, records
    /// until a request's worth is ready. Returns whether generation goes on.
    fn generate(
        &mut self,
        now: u64,
        interval_ns: Option<f64>,
        tokens: &Receiver<()>,
    ) -> Result<bool> {
        let mut now = now;
        loop {
            if self.ready_bytes >= MAX_REQUEST_BYTES {
                return Ok(true);
            }
            let intended = match interval_ns {
                Some(i) => self.intended_ns(self.seq, i),
                None => {
                    // Flat out: send as soon as a request can go.
                    if !self.ready.is_empty() && (self.cfg.acks == 0 || self.try_token(tokens)) {
                        return Ok(true);
                    }
                    if self.seq % CLOCK_READ_EVERY_RECORDS == 0 {
                        now = self.clock.now_ns();
                    }
                    now
                }
            };
            // The end is checked before the time, so that a finished worker
            // flushes at once instead of at its next record's time.
            if self.window.end_ns.is_some_and(|end| intended >= end) {
                return Ok(false);
            }
            let measured = intended >= self.window.measure_start_ns;
            if measured && self.window.quota.is_some_and(|q| self.measured >= q) {
                return Ok(false);
            }
            if intended > now {
                return Ok(true);
            }
            self.append(intended)?;
            self.seq += 1;
            if measured {
                self.measured += 1;
            }
        }
    }

    fn append(&mut self, intended: u64) -> Result<()> {
        let mut key_buf = [0u8; KEY_BYTES];
        let (slot, key) = match self.cfg.keys {
            KeySpace::None => (self.sticky, None),
            KeySpace::Uniform => {
                let k = self.rng.next_u64();
                hex(k, &mut key_buf);
                let slot = (k % self.open.len() as u64) as usize;
                (slot, Some(&key_buf[..]))
            }
        };
        let timestamp = self.clock.unix_ms(intended);
        let size = self.cfg.record_size;
        let key_len = key.map(<[u8]>::len);
        let batch_bytes = self.cfg.batch_bytes;
        let full = |b: &OpenBatch| {
            !b.builder.is_empty() && b.builder.size_with(timestamp, key_len, size) > batch_bytes
        };
        let slot = if full(&self.open[slot]) {
            self.close(slot)?;
            if self.cfg.keys == KeySpace::None {
                self.sticky
            } else {
                slot
            }
        } else {
            slot
        };
        // Each value is a different slice of the shared payload pool.
        let pool = &self.cfg.payload_pool;
        let at = self.rng.below((pool.len() - size + 1) as u64) as usize;
        let payload = &pool[at..at + size];
        let mut stamp = [0u8; STAMP_BYTES];
        let (head, tail): (&[u8], &[u8]) = if size >= STAMP_BYTES {
            stamp[..4].copy_from_slice(&STAMP_MAGIC);
            stamp[4..8].copy_from_slice(&self.cfg.run_id.to_be_bytes());
            stamp[8..].copy_from_slice(&self.clock.unix_ns(intended).to_be_bytes());
            (&stamp, &payload[STAMP_BYTES..])
        } else {
            (&[], payload)
        };
        let b = &mut self.open[slot];
        if b.builder.is_empty() {
            b.first_ns = intended;
        }
        b.builder.append(timestamp, key, head, tail);
        b.intended.push(intended);
        // Close now if the next record of this size would not fit, rather
        // than waiting for that record to arrive.
        if b.builder.size_with(timestamp, key_len, size) > batch_bytes {
            self.close(slot)?;
        }
        Ok(())
    }

    /// Closes the batch in `slot` into the ready queue; without keys, the
    /// next records go to the next partition.
    fn close(&mut self, slot: usize) -> Result<()> {
        let b = &mut self.open[slot];
        let bytes = b
            .builder
            .finish(self.compressor.as_mut())
            .map_err(|e| Error::Other(format!("compress a batch: {e}")))?;
        let intended = std::mem::replace(
            &mut b.intended,
            Vec::with_capacity(self.records_per_batch as usize),
        );
        self.ready_bytes += bytes.len();
        self.ready.push_back(ReadyBatch {
            partition: b.partition,
            bytes,
            intended,
        });
        if self.cfg.keys == KeySpace::None && slot == self.sticky {
            self.sticky = (self.sticky + 1) % self.open.len();
        }
        Ok(())
    }

    /// Closes batches whose linger has expired (all of them at the end).
    fn close_lingering(&mut self, now: u64, all: bool) -> Result<()> {
        for slot in 0..self.open.len() {
            let b = &self.open[slot];
            if !b.builder.is_empty() && (all || b.first_ns + self.cfg.linger_ns <= now) {
                self.close(slot)?;
            }
        }
        Ok(())
    }

    /// When there is something to do next, in open-loop mode: the earliest
    /// linger deadline, or the time a batch could fill up. Early wake-ups
    /// are harmless (records are appended lazily), late ones are not.
    fn next_wake(&self, interval_ns: f64) -> u64 {
        let linger = self.cfg.linger_ns;
        let mut wake = self.intended_ns(self.seq, interval_ns) + linger;
        let mut room = self.records_per_batch;
        for b in &self.open {
            if !b.builder.is_empty() {
                wake = wake.min(b.first_ns + linger);
                room = room.min(
                    self.records_per_batch
                        .saturating_sub(b.builder.count() as u64),
                );
            }
        }
        wake = wake.min(self.intended_ns(self.seq + room.saturating_sub(1), interval_ns));
        if let Some(end) = self.window.end_ns {
            wake = wake.min(end);
        }
        wake
    }

    /// Sends one request with ready batches (one per partition), up to
    /// `MAX_REQUEST_BYTES` (or a single larger batch).
    fn send(&mut self, inflight: &Sender<InFlight>) -> Result<()> {
        let mut partitions = Vec::new();
        let mut batches: Vec<(i32, Vec<u64>)> = Vec::new();
        let mut bytes = 0;
        // The queue is bounded: generation stops once MAX_REQUEST_BYTES
        // are ready.
        let mut deferred = VecDeque::new();
        while let Some(b) = self.ready.pop_front() {
            let duplicate = batches.iter().any(|(p, _)| *p == b.partition);
            if duplicate || (bytes > 0 && bytes + b.bytes.len() > MAX_REQUEST_BYTES) {
                deferred.push_back(b);
                continue;
            }
            bytes += b.bytes.len();
            partitions.push(PartitionProduceData {
                index: b.partition,
                records: Some(b.bytes),
            });
            batches.push((b.partition, b.intended));
        }
        self.ready = deferred;
        self.ready_bytes -= bytes;
        let request = ProduceRequest {
            transactional_id: None,
            acks: self.cfg.acks,
            timeout_ms: self.cfg.timeout_ms,
            topics: vec![TopicProduceData {
                name: self.cfg.topic.clone(),
                partitions,
            }],
        };
        let v = self.version;
        let correlation_id = self
            .frames
            .send(ApiKey::Produce, v, |w| request.encode(w, v))?;
        drop(request);
        let c = &self.stats.counters;
        self.stats.add(&c.wire_bytes, bytes as u64);
        if self.cfg.acks == 0 {
            // No response will come: count the records as done now.
            let now = self.clock.now_ns();
            for (_, intended) in &batches {
                let measured = intended
                    .iter()
                    .filter(|&&t| t >= self.window.measure_start_ns)
                    .count() as u64;
                self.stats.add(&c.records, measured);
                self.stats
                    .add(&c.bytes, measured * self.cfg.record_size as u64);
                let warmup = intended.len() as u64 - measured;
                self.stats.add(&c.warmup_records, warmup);
                self.stats
                    .add(&c.warmup_bytes, warmup * self.cfg.record_size as u64);
            }
            self.stats.add(&c.requests, 1);
            self.stats.completed_at(now);
            return Ok(());
        }
        self.held_tokens -= 1;
        inflight
            .send(InFlight {
                correlation_id,
                batches,
            })
            .map_err(|_| Error::Other("producer connection lost".into()))
    }
}

/// Lower-case hex of `v` into 16 bytes.
fn hex(v: u64, out: &mut [u8; KEY_BYTES]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (i, o) in out.iter_mut().enumerate() {
        *o = DIGITS[((v >> (60 - 4 * i)) & 0xf) as usize];
    }
}

struct ReaderCtx {
    frames: FrameReader,
    version: i16,
    clock: Clock,
    measure_start_ns: u64,
    record_size: u64,
    run: Arc<RunState>,
    stats: Arc<WorkerStats>,
}

impl ReaderCtx {
    fn run(mut self, inflight: Receiver<InFlight>, tokens: Sender<()>) {
        while let Ok(sent) = inflight.recv() {
            match self.complete(&sent) {
                Ok(()) => {
                    // The writer may be gone already; nothing to return to.
                    let _ = tokens.send(());
                }
                Err(e) => {
                    self.run.fail(e.to_string());
                    self.lost(&sent);
                    // Dropping the token sender tells the writer to stop;
                    // what it already sent is lost too.
                    drop(tokens);
                    for s in inflight.iter() {
                        self.lost(&s);
                    }
                    return;
                }
            }
        }
    }

    fn lost(&self, sent: &InFlight) {
        let n: usize = sent.batches.iter().map(|(_, i)| i.len()).sum();
        self.stats.add(&self.stats.counters.errors, n as u64);
    }

    fn complete(&mut self, sent: &InFlight) -> Result<()> {
        let v = self.version;
        let mut r = self
            .frames
            .read_response(ApiKey::Produce, v, sent.correlation_id)?;
        let resp = ProduceResponse::decode(&mut r, v)
            .map_err(|e| Error::decode(self.frames.addr(), "Produce response", e))?;
        let now = self.clock.now_ns();
        let c = &self.stats.counters;
        let mut hist = self.stats.hist();
        for (partition, intended) in &sent.batches {
            let code = resp
                .responses
                .iter()
                .flat_map(|t| &t.partition_responses)
                .find(|p| p.index == *partition)
                .map_or(error_code::UNKNOWN_SERVER_ERROR, |p| p.error_code);
            if code != error_code::NONE {
                self.stats.add(&c.errors, intended.len() as u64);
                self.run.note_error(code);
                continue;
            }
            let mut measured = 0u64;
            for &t in intended {
                if t >= self.measure_start_ns {
                    record_ns(&mut hist, now.saturating_sub(t));
                    measured += 1;
                }
            }
            self.stats.add(&c.records, measured);
            self.stats.add(&c.bytes, measured * self.record_size);
            let warmup = intended.len() as u64 - measured;
            self.stats.add(&c.warmup_records, warmup);
            self.stats.add(&c.warmup_bytes, warmup * self.record_size);
        }
        drop(hist);
        self.stats.add(&c.requests, 1);
        self.stats.completed_at(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_hex() {
        let mut k = [0u8; KEY_BYTES];
        hex(0x0123_4567_89ab_cdef, &mut k);
        assert_eq!(&k, b"0123456789abcdef");
    }
}
