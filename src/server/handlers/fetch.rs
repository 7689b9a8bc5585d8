//! Fetch: reads on the owning shards, long polls woken by appends, and
//! incremental fetch sessions. Record bytes travel as chunks: cached `Bytes`
//! or segment file ranges that the connection reads with O_DIRECT and sends.

use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::acl::matrix;
use crate::constants::FOLLOWER_JOIN_RECHECK_MS;
use crate::fetch_session_cache::{ResolvedFetch, SentPartition, SessionPartition, SessionRequest};
use crate::log::partition_log::{PartitionLog, ReadSlice};
use crate::log::read_through;
use crate::log::segment_file::SegmentFile;
use crate::metadata::image::MetadataImage;
use crate::node::append_waiters::AppendWaiters;
use crate::node::follower_gains::FollowerGains;
use crate::node::in_flight_appends::{InFlightAppend, InFlightAppends};
use crate::node::partition_load::PartitionLoad;
use crate::node::replicas;
use crate::node::state::BrokerState;
use crate::protocol::chunks::{Chunk, FileRange, RecordData};
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::fetch::*;
use crate::replica::{FetchRefused, UNKNOWN_BROKER_EPOCH};
use crate::server::handlers::access::Access;
use crate::server::handlers::fetch_sessions::FetchSessions;
use crate::server::handlers::{check_leader_epoch, error_code_for};
use crate::server::replication::isr_changes;
use crate::server::replication::quotas::{ReplicationQuotas, Side};
use crate::shard::shard::now_ms;
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// Upper bound on how long one fetch may wait, whatever the client asks.
pub const FETCH_MAX_WAIT_MS_MAX: i32 = 30_000;
/// How often a follower's fetch that the replication throttle holds back
/// looks again whether the rate allows more (within its max wait).
const THROTTLED_RECHECK: Duration = Duration::from_millis(100);

/// One partition's read, as the owner reports it.
struct PartitionRead {
    error_code: i16,
    high_watermark: i64,
    /// The LSO; -1 with an error.
    last_stable_offset: i64,
    log_start_offset: i64,
    /// For a read_committed consumer, the aborted transactions overlapping
    /// what it may read; `None` for everyone else.
    aborted_transactions: Option<Vec<AbortedTransaction>>,
    records: RecordData,
    /// Held back by the leader's replication throttle: the fetch does not
    /// wait for appends to this partition (it has data, it may not send it).
    throttled: bool,
}

impl PartitionRead {
    fn error(code: i16) -> Self {
        PartitionRead {
            error_code: code,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            aborted_transactions: None,
            records: RecordData::Bytes(Bytes::new()),
            throttled: false,
        }
    }

    /// No records (yet), at these offsets.
    fn no_records(offsets: ReadOffsets) -> Self {
        PartitionRead {
            error_code: error_code::NONE,
            high_watermark: offsets.high_watermark,
            last_stable_offset: offsets.last_stable_offset,
            log_start_offset: offsets.log_start_offset,
            aborted_transactions: None,
            records: RecordData::Bytes(Bytes::new()),
            throttled: false,
        }
    }
}

/// A partition's offsets as one read saw them.
#[derive(Debug, Clone, Copy)]
struct ReadOffsets {
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
}

/// Who reads, and so how far: a follower to the LEO, a read_uncommitted
/// consumer to the HW, a read_committed one to the LSO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    Follower(i32),
    Consumer { read_committed: bool },
}

impl Reader {
    fn of(req: &FetchRequest) -> Reader {
        if req.replica_id >= 0 {
            Reader::Follower(req.replica_id)
        } else {
            Reader::Consumer {
                read_committed: req.isolation_level == READ_COMMITTED,
            }
        }
    }

    fn is_follower(self) -> bool {
        matches!(self, Reader::Follower(_))
    }

    /// The end of what this reader may read from `log`.
    fn visible_end(self, log: &PartitionLog) -> i64 {
        match self {
            Reader::Follower(_) => log.log_end_offset(),
            Reader::Consumer {
                read_committed: false,
            } => log.high_watermark(),
            Reader::Consumer {
                read_committed: true,
            } => log.last_stable_offset(),
        }
    }
}

/// Serves a fetch; `over_quota` (a consumer over its `consumer_byte_rate`)
/// answers, once the session is resolved, with no partition at all, as
/// Kafka's throttled fetch response does: the session's epoch moves on,
/// and what the client was last told stays as it was.
pub async fn handle(
    shard: &Rc<Shard>,
    header: &RequestHeader,
    req: FetchRequest,
    access: &Access<'_>,
    over_quota: bool,
) -> FetchResponse {
    let sessions = FetchSessions::of(shard);
    let reader = Reader::of(&req);
    let is_follower = reader.is_follower();
    let requested: Vec<SessionPartition> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| SessionPartition {
                topic: t.topic.clone(),
                partition: p.partition,
                fetch_offset: p.fetch_offset,
                partition_max_bytes: p.partition_max_bytes,
                current_leader_epoch: p.current_leader_epoch,
                last_high_watermark: -1,
                last_log_start_offset: -1,
            })
        })
        .collect();

    // Resolve which partitions this fetch covers and which session it uses.
    let forgotten: Vec<(String, i32)> = req
        .forgotten_topics_data
        .iter()
        .flat_map(|f| f.partitions.iter().map(move |p| (f.topic.clone(), *p)))
        .collect();
    let session_request = SessionRequest {
        session_id: req.session_id,
        epoch: req.session_epoch,
        privileged: is_follower,
        forgotten: &forgotten,
    };
    let now = now_ms();
    let resolved = sessions.with(|c| c.resolve(session_request, requested, now));
    let ResolvedFetch {
        session_id,
        partitions,
        incremental,
    } = match resolved {
        Ok(r) => r,
        Err(code) => {
            if let Some(count) = sessions.with(|c| c.note_rejection(client_of(header), now)) {
                tracing::warn!(
                    client = client_of(header),
                    session_id = req.session_id,
                    session_epoch = req.session_epoch,
                    rejected = count,
                    "fetch session request refused with error {}; the client should start a new \
                     session (a full fetch with epoch 0)",
                    code
                );
            }
            return FetchResponse {
                throttle_time_ms: 0,
                error_code: code,
                session_id: 0,
                responses: Vec::new(),
            };
        }
    };

    if over_quota {
        return FetchResponse {
            throttle_time_ms: 0,
            error_code: error_code::NONE,
            session_id,
            responses: Vec::new(),
        };
    }
    // Kafka's rules: a follower needs CLUSTER_ACTION, and is refused every
    // partition without it; a consumer needs READ on each topic. Asked over
    // the session's partitions, cached ones included.
    let denied: HashSet<String> = if !access.is_enabled() {
        HashSet::new()
    } else {
        let image = BrokerState::of(shard).image();
        let topics = partitions.iter().map(|p| p.topic.as_str());
        if !is_follower {
            access.denied(&image, matrix::FETCH_TOPIC, topics)
        } else if access.allows_cluster(&image, matrix::FETCH_FROM_FOLLOWER) {
            HashSet::new()
        } else {
            topics.map(str::to_string).collect()
        }
    };
    let max_wait = Duration::from_millis(req.max_wait_ms.clamp(0, FETCH_MAX_WAIT_MS_MAX) as u64);
    let mut deadline = std::time::Instant::now() + max_wait;
    // A follower whose Fetch lacks a partition it just gained here is
    // parked only briefly: its next Fetch will carry the partition.
    let lacked_gain = lacks_gain(shard, reader, &partitions);
    if lacked_gain {
        deadline = deadline
            .min(std::time::Instant::now() + Duration::from_millis(FOLLOWER_JOIN_RECHECK_MS));
    }
    // Kafka caps every fetch at its broker's `fetch.max.bytes`, whatever
    // the request asks: the response's bytes, and what is read into memory
    // for it, stay bounded. A `min_bytes` above the cap would only wait out
    // `max_wait_ms`, so it is capped too, as in Kafka.
    let fetch_max_bytes = BrokerState::of(shard).config.fetch_max_bytes;
    let response_max_bytes = (req.max_bytes.max(0) as usize).min(fetch_max_bytes);
    let min_bytes = (req.min_bytes.max(0) as usize).min(response_max_bytes);
    let mut reads = read_all(shard, &partitions, response_max_bytes, reader, &denied).await;
    loop {
        let total: usize = reads.iter().map(|r| r.records.len()).sum();
        let any_error = reads.iter().any(|r| r.error_code != error_code::NONE);
        let now = std::time::Instant::now();
        if total >= min_bytes || any_error || now >= deadline {
            break;
        }
        // Taken before the check, so that a gain between the two wakes it.
        let gained = match reader {
            Reader::Follower(id) => Some(AppendWaiters::of(shard).register_gain(id)),
            Reader::Consumer { .. } => None,
        };
        if !lacked_gain && lacks_gain(shard, reader, &partitions) {
            // An image gave the follower a partition here since it asked:
            // answer, so that its next Fetch carries it.
            FollowerGains::of(shard).borrow_mut().note_answered_early();
            break;
        }
        let gained = async move {
            match gained {
                Some(wait) => wait.await,
                None => std::future::pending().await,
            }
        };
        if reads.iter().any(|r| r.throttled) {
            // Throttled partitions have data they may not send yet: wait
            // for appends to the others, and look again after a while, as
            // Kafka's delayed fetch does.
            let others: Vec<SessionPartition> = partitions
                .iter()
                .zip(&reads)
                .filter(|(_, r)| !r.throttled)
                .map(|(p, _)| p.clone())
                .collect();
            let wait = (deadline - now).min(THROTTLED_RECHECK);
            futures_lite::future::or(wait_for_appends(shard, &others, wait, reader), gained).await;
        } else {
            futures_lite::future::or(
                wait_for_appends(shard, &partitions, deadline - now, reader),
                gained,
            )
            .await;
        }
        reads = read_all(shard, &partitions, response_max_bytes, reader, &denied).await;
    }

    // Answer in order; an incremental response carries only news.
    let mut responses: Vec<FetchableTopicResponse> = Vec::new();
    let mut sent: Vec<SentPartition> = Vec::new();
    for (p, r) in partitions.iter().zip(reads) {
        let changed = !r.records.is_empty()
            || r.error_code != error_code::NONE
            || r.high_watermark != p.last_high_watermark
            || r.log_start_offset != p.last_log_start_offset;
        if incremental && !changed {
            continue;
        }
        sent.push(SentPartition {
            topic: p.topic.clone(),
            partition: p.partition,
            high_watermark: r.high_watermark,
            log_start_offset: r.log_start_offset,
            had_records: !r.records.is_empty(),
        });
        let data = PartitionData {
            partition_index: p.partition,
            error_code: r.error_code,
            high_watermark: r.high_watermark,
            last_stable_offset: r.last_stable_offset,
            log_start_offset: r.log_start_offset,
            aborted_transactions: r.aborted_transactions,
            // librdkafka rejects a response with null records: send empty.
            records: Some(r.records),
            ..Default::default()
        };
        match responses.last_mut() {
            Some(last) if last.topic == p.topic => last.partitions.push(data),
            _ => responses.push(FetchableTopicResponse {
                topic: p.topic.clone(),
                partitions: vec![data],
            }),
        }
    }
    if session_id != 0 {
        sessions.with(|c| c.record_response(session_id, &sent));
    }
    FetchResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        session_id,
        responses,
    }
}

/// Reads every partition on its owner, in parallel across owners, then
/// trims to the response byte limit in request order (the first partition
/// with data always goes whole: min-one-message).
async fn read_all(
    shard: &Rc<Shard>,
    partitions: &[SessionPartition],
    response_max_bytes: usize,
    reader: Reader,
    denied_topics: &HashSet<String>,
) -> Vec<PartitionRead> {
    let broker = BrokerState::of(shard);
    let image = broker.image();
    let mut slots: Vec<Option<PartitionRead>> = (0..partitions.len()).map(|_| None).collect();
    let mut by_owner: BTreeMap<usize, Vec<(usize, TopicPartition, i64, usize)>> = BTreeMap::new();
    for (i, p) in partitions.iter().enumerate() {
        if !denied_topics.is_empty() && denied_topics.contains(&p.topic) {
            slots[i] = Some(PartitionRead::error(error_code::TOPIC_AUTHORIZATION_FAILED));
            continue;
        }
        if let Err(code) = check_leader_epoch(&image, &p.topic, p.partition, p.current_leader_epoch)
        {
            slots[i] = Some(PartitionRead::error(code));
            continue;
        }
        let tp = TopicPartition::new(p.topic.clone(), p.partition);
        let max = (p.partition_max_bytes.max(0) as usize).min(response_max_bytes);
        by_owner
            .entry(shard.owner(&tp))
            .or_default()
            .push((i, tp, p.fetch_offset, max));
    }
    // This shard's own partitions are read in this task, after the other
    // shards have been asked: no task and no channel for the common case of
    // a fetch whose partitions all live here.
    let local = by_owner.remove(&shard.id());
    let mut tasks = Vec::new();
    for (owner, work) in by_owner {
        let shard = shard.clone();
        tasks.push(glommio::spawn_local(async move {
            shard
                .submit_to(owner, move |shard| async move {
                    read_on_owner(&shard, work, reader, response_max_bytes).await
                })
                .await
        }));
    }
    if let Some(work) = local {
        for (i, r) in read_on_owner(shard, work, reader, response_max_bytes).await {
            slots[i] = Some(r);
        }
    }
    for task in tasks {
        match task.await {
            Ok(results) => {
                for (i, r) in results {
                    slots[i] = Some(r);
                }
            }
            Err(e) => tracing::error!("fetch: owning shard unreachable: {e}"),
        }
    }
    let mut total = 0usize;
    slots
        .into_iter()
        .map(|r| {
            let mut r = r.unwrap_or_else(|| PartitionRead::error(error_code::UNKNOWN_SERVER_ERROR));
            let len = r.records.len();
            if total > 0 && total + len > response_max_bytes {
                // Over the response limit: the client asks again.
                r.records = RecordData::Bytes(Bytes::new());
            } else {
                total += len;
            }
            r
        })
        .collect()
}

async fn read_on_owner(
    shard: &Rc<Shard>,
    work: Vec<(usize, TopicPartition, i64, usize)>,
    reader: Reader,
    budget: usize,
) -> Vec<(usize, PartitionRead)> {
    let is_follower = reader.is_follower();
    let replica_id = match reader {
        Reader::Follower(id) => id,
        Reader::Consumer { .. } => -1,
    };
    let mut out = Vec::with_capacity(work.len());
    // Reads through the read cache, in flight: (index in `out`, partition,
    // task). Their bytes count against `budget`, the response's limit, so
    // that a fetch of many partitions does not read more from the disk than
    // its response can carry; past it, file ranges go to the connection,
    // which reads them as it sends (and drops those over the limit).
    let mut read_through = Vec::new();
    let mut planned = 0u64;
    let budget = budget as u64;
    let quotas = ReplicationQuotas::of(shard);
    let broker = BrokerState::of(shard);
    let image = broker.image();
    let local = broker.node_id();
    let in_flight = InFlightAppends::of(shard);
    for (i, tp, offset, max_bytes) in work {
        let Some(led) = replicas::led_partition(shard, &tp) else {
            out.push((i, PartitionRead::error(error_code::NOT_LEADER_OR_FOLLOWER)));
            continue;
        };
        if is_follower {
            if let Some(group) = in_flight.get(&tp).filter(|g| g.covers(offset)) {
                // The leader is writing this group and holds the log's lock:
                // replicate it meanwhile.
                let read = read_in_flight(shard, &tp, &led, &group, replica_id, offset, max_bytes);
                out.push((i, read));
                continue;
            }
        }
        let Ok(mut log) = led.log.write().await else {
            out.push((i, PartitionRead::error(error_code::KAFKA_STORAGE_ERROR)));
            continue;
        };
        if !replicas::still_local(shard, &tp, &led.log) {
            // Moved to another shard while this read waited for the lock.
            out.push((i, PartitionRead::error(error_code::NOT_LEADER_OR_FOLLOWER)));
            continue;
        }
        if is_follower && offset <= log.log_end_offset() {
            // The fetch offset is the follower's LEO: it may move the HW
            // (waking produces and consumers) or return it to the ISR.
            match count_follower_fetch(shard, &tp, &led, &image, replica_id, offset, now_ms()) {
                Ok(true) => replicas::sync_high_watermark(shard, &tp, &mut log),
                Ok(false) => {}
                Err(refused) => {
                    out.push((i, refused));
                    continue;
                }
            }
        }
        let hw = log.high_watermark();
        let offsets = ReadOffsets {
            high_watermark: hw,
            last_stable_offset: log.last_stable_offset(),
            log_start_offset: log.log_start_offset(),
        };
        let max_offset = reader.visible_end(&log);
        // Kafka lists the aborted transactions up to the end of the read;
        // up to the LSO is a superset the consumer handles alike (it drops
        // the batches of listed producers from each one's first offset on).
        let aborted_transactions = (reader
            == Reader::Consumer {
                read_committed: true,
            })
        .then(|| {
            log.aborted_txns(offset, max_offset)
                .into_iter()
                .map(|t| AbortedTransaction {
                    producer_id: t.producer_id,
                    first_offset: t.first_offset,
                })
                .collect::<Vec<_>>()
        });
        let now = now_ms();
        if is_follower {
            let in_isr = led.state.borrow().isr().contains(&replica_id);
            if quotas.must_wait(&image, Side::Leader, &tp, local, in_isr, now) {
                // Kafka's leader-side throttle: the partition answers with
                // no records until the rate allows more.
                let throttled = PartitionRead {
                    throttled: true,
                    ..PartitionRead::no_records(offsets)
                };
                out.push((i, throttled));
                continue;
            }
        }
        let result = log.read(offset, max_bytes, max_offset, true).await;
        drop(log);
        if let Ok(r) = &result {
            PartitionLoad::of(shard).record_out(&tp, r.len_bytes());
        }
        if let (true, Ok(r)) = (is_follower, &result) {
            quotas.record(&image, Side::Leader, &tp, local, r.len_bytes(), now);
        }
        let read = match result {
            Ok(r)
                if r.fill.is_some()
                    && (planned == 0 || planned + read_through::memory_needed(&r) <= budget) =>
            {
                // A miss of the read cache: read it through the cache here,
                // on the owner, so the next reader finds it in memory. The
                // other partitions' reads go on meanwhile. The task waits
                // only on this shard's io_uring, never on another shard, so
                // keeping its handle is safe (ARCHITECTURE.md, sharp edges).
                planned += read_through::memory_needed(&r);
                let task = glommio::spawn_local(read_through::into_memory(r));
                read_through.push((out.len(), tp.clone(), task));
                PartitionRead {
                    aborted_transactions,
                    ..PartitionRead::no_records(offsets)
                }
            }
            Ok(r) => {
                let mut chunks = Vec::with_capacity(r.slices.len());
                let mut failed = None;
                for s in r.slices {
                    match s {
                        ReadSlice::Cached(b) => chunks.push(Chunk::Bytes(b)),
                        ReadSlice::File {
                            file,
                            position,
                            len,
                        } => match SegmentFile::dup_of(&file) {
                            Ok(file) => chunks.push(Chunk::File(FileRange {
                                file: Arc::new(file),
                                position,
                                len,
                            })),
                            Err(e) => failed = Some(e),
                        },
                    }
                }
                match failed {
                    Some(e) => {
                        tracing::error!(partition = %tp, "fetch cannot share the segment file: {e}");
                        PartitionRead::error(error_code::KAFKA_STORAGE_ERROR)
                    }
                    None => PartitionRead {
                        records: RecordData::Chunks(chunks),
                        aborted_transactions,
                        ..PartitionRead::no_records(offsets)
                    },
                }
            }
            Err(e) => PartitionRead {
                error_code: error_code_for(&e),
                ..PartitionRead::no_records(offsets)
            },
        };
        out.push((i, read));
    }
    for (at, tp, task) in read_through {
        let read = &mut out[at].1;
        match task.await {
            Ok(bytes) => {
                read.records = RecordData::Chunks(bytes.into_iter().map(Chunk::Bytes).collect())
            }
            Err(e) => {
                tracing::error!(partition = %tp, "fetch cannot read the segment: {e}");
                *read = PartitionRead::error(error_code::KAFKA_STORAGE_ERROR);
            }
        }
    }
    out
}

/// A follower's fetch from `offset`, within or at the end of `group`, the
/// leader's group commit being written: served from the group's bytes
/// without the log's lock (`node::in_flight_appends`). The fetch counts as
/// under the lock: it may move the HW, which stays within what the leader
/// has written (the writer copies it into the log when its write is done),
/// or return the follower to the ISR.
fn read_in_flight(
    shard: &Rc<Shard>,
    tp: &TopicPartition,
    led: &replicas::LedPartition,
    group: &InFlightAppend,
    replica_id: i32,
    offset: i64,
    max_bytes: usize,
) -> PartitionRead {
    let broker = BrokerState::of(shard);
    let image = broker.image();
    let now = now_ms();
    match count_follower_fetch(shard, tp, led, &image, replica_id, offset, now) {
        // acks=all produces wait on the state's HW.
        Ok(true) => AppendWaiters::of(shard).notify(tp),
        Ok(false) => {}
        Err(refused) => return refused,
    }
    let (high_watermark, in_isr) = {
        let state = led.state.borrow();
        (state.high_watermark(), state.isr().contains(&replica_id))
    };
    let offsets = ReadOffsets {
        high_watermark,
        last_stable_offset: group.last_stable_offset.min(high_watermark),
        log_start_offset: group.log_start_offset,
    };
    let quotas = ReplicationQuotas::of(shard);
    let local = broker.node_id();
    if quotas.must_wait(&image, Side::Leader, tp, local, in_isr, now) {
        return PartitionRead {
            throttled: true,
            ..PartitionRead::no_records(offsets)
        };
    }
    let batches = group.read_from(offset, max_bytes);
    if !batches.is_empty() {
        InFlightAppends::of(shard).count_fetch_served();
    }
    let len: u64 = batches.iter().map(|b| b.len() as u64).sum();
    PartitionLoad::of(shard).record_out(tp, len);
    quotas.record(&image, Side::Leader, tp, local, len, now);
    PartitionRead {
        records: RecordData::Chunks(batches.into_iter().map(Chunk::Bytes).collect()),
        ..PartitionRead::no_records(offsets)
    }
}

/// Waits until any of `partitions` gets an append past its fetch offset, or
/// `timeout` passes.
async fn wait_for_appends(
    shard: &Rc<Shard>,
    partitions: &[SessionPartition],
    timeout: Duration,
    reader: Reader,
) {
    let mut by_owner: BTreeMap<usize, Vec<(TopicPartition, i64)>> = BTreeMap::new();
    for p in partitions {
        let tp = TopicPartition::new(p.topic.clone(), p.partition);
        by_owner
            .entry(shard.owner(&tp))
            .or_default()
            .push((tp, p.fetch_offset));
    }
    if by_owner.len() == 1 {
        if let Some(work) = by_owner.remove(&shard.id()) {
            // All of them live here: wait in this task, on one timer.
            wait_on_owner(shard, work, timeout, reader).await;
            return;
        }
    }
    let (tx, rx) = glommio::channels::local_channel::new_bounded::<()>(by_owner.len().max(1));
    let tx = Rc::new(tx);
    for (owner, work) in by_owner {
        let shard = shard.clone();
        let tx = tx.clone();
        glommio::spawn_local(async move {
            let _ = shard
                .submit_to(owner, move |shard| async move {
                    wait_on_owner(&shard, work, timeout, reader).await
                })
                .await;
            let _ = tx.try_send(());
        })
        .detach();
    }
    let _ = futures_lite::future::or(async { rx.recv().await.map(|_| ()) }, async {
        glommio::timer::sleep(timeout).await;
        None
    })
    .await;
}

async fn wait_on_owner(
    shard: &Rc<Shard>,
    work: Vec<(TopicPartition, i64)>,
    timeout: Duration,
    reader: Reader,
) {
    // Registered before the check, so an append between the check and the
    // wait (while another partition's lock is awaited) is not missed.
    let tps: Vec<TopicPartition> = work.iter().map(|(tp, _)| tp.clone()).collect();
    let waiters = AppendWaiters::of(shard);
    let wait = match reader.is_follower() {
        // A follower is woken also when a write starts, to fetch it.
        true => waiters.register_follower(&tps),
        false => waiters.register(&tps),
    };
    let in_flight = InFlightAppends::of(shard);
    // Data may have arrived between the read and now: answer at once.
    for (tp, offset) in &work {
        if reader.is_follower() {
            if let Some(group) = in_flight.get(tp) {
                if group.end_offset() > *offset {
                    return;
                }
                // The writer holds the log's lock, and the log ends where
                // the group begins: nothing else to look at.
                continue;
            }
        }
        if let Some(log) = shard.local_log(tp) {
            if let Ok(log) = log.read().await {
                if reader.visible_end(&log) > *offset {
                    return;
                }
            }
        }
    }
    futures_lite::future::or(wait, glommio::timer::sleep(timeout)).await;
}

/// Whether a follower's Fetch over `partitions` lacks a partition an image
/// just gave the follower on this leader (`node::follower_gains`).
fn lacks_gain(shard: &Shard, reader: Reader, partitions: &[SessionPartition]) -> bool {
    let Reader::Follower(id) = reader else {
        return false;
    };
    let fetched = |tp: &TopicPartition| {
        partitions
            .iter()
            .any(|p| p.partition == tp.partition && p.topic == tp.topic)
    };
    FollowerGains::of(shard)
        .borrow_mut()
        .lacks(id, fetched, now_ms())
}

/// Counts a follower's fetch from `offset` (its LEO) in the partition's
/// replica state, and proposes the ISR expansion it may complete. `Ok`
/// says whether the state's HW advanced (the caller brings it to the log
/// or to the waiters); `Err` is the answer for a refused fetch.
fn count_follower_fetch(
    shard: &Rc<Shard>,
    tp: &TopicPartition,
    led: &replicas::LedPartition,
    image: &MetadataImage,
    replica_id: i32,
    offset: i64,
    now: i64,
) -> Result<bool, PartitionRead> {
    let fetched = led.state.borrow_mut().on_follower_fetch_from(
        replica_id,
        offset,
        now,
        fetcher_epoch(image, replica_id),
        isr_eligible(image, replica_id),
    );
    match fetched {
        Ok(f) => {
            if let Some(change) = f.expand {
                isr_changes::propose(shard, tp.clone(), change);
            }
            Ok(f.high_watermark_advanced.is_some())
        }
        Err(FetchRefused::NotLeader) => {
            Err(PartitionRead::error(error_code::NOT_LEADER_OR_FOLLOWER))
        }
        Err(FetchRefused::NotAReplica) => {
            tracing::warn!(
                partition = %tp,
                replica = replica_id,
                "refused a replica fetch from broker {replica_id}: it holds no replica \
                 of this partition"
            );
            Err(PartitionRead::error(error_code::NOT_LEADER_OR_FOLLOWER))
        }
    }
}

/// Whether the follower's broker may join an ISR, as this broker's image
/// has it (Kafka's `isReplicaIsrEligible`): registered, unfenced and not in
/// controlled shutdown. A parked fetch of a broker killed meanwhile is
/// answered, and counted, after the controller fenced it.
fn isr_eligible(image: &MetadataImage, replica_id: i32) -> bool {
    image
        .brokers
        .get(&replica_id)
        .is_some_and(|b| !b.fenced && !b.in_controlled_shutdown)
}

/// A follower's broker epoch as this broker's image has it while serving
/// its fetch: what an ISR expansion based on the fetch sends (KIP-903).
fn fetcher_epoch(image: &MetadataImage, replica_id: i32) -> i64 {
    image
        .brokers
        .get(&replica_id)
        .map_or(UNKNOWN_BROKER_EPOCH, |b| b.epoch)
}

/// The client id to name in log lines.
fn client_of(header: &RequestHeader) -> &str {
    header.client_id.as_deref().unwrap_or("-")
}
