//! Long polls: a consumer's Fetch that finds nothing parks on the owning
//! shards (`node/append_waiters.rs`) and is answered by the next append to
//! any of its partitions, not at its `max_wait_ms`. Checked the way Kafka's
//! Java consumer fetches: in an incremental fetch session (KIP-227) whose
//! partitions span both shards, with the connection on either shard, and
//! with each partition in turn being the one appended to.
//!
//! Not a timed test: the fetch may wait 30 s, and the check only asks that
//! it answers well before that once a record is appended (a lost wake-up
//! would answer at 30 s, with no records).

use crate::support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use pinlog::log::batch::{build_batch, BatchSpec};
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code;
use pinlog::protocol::messages::fetch::{FetchPartition, FetchRequest, FetchResponse, FetchTopic};
use pinlog::protocol::messages::produce::{
    PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData,
};
use support::kafka_conn::Conn;
use support::{Broker, BrokerOpts};

const TOPIC: &str = "long-poll";
/// Enough partitions that both shards own some.
const PARTITIONS: i32 = 6;
const FETCH_VERSION: i16 = 12;
const PRODUCE_VERSION: i16 = 9;
/// The broker's cap on a fetch's wait.
const MAX_WAIT_MS: i32 = 30_000;
/// A generous bound, a third of the wait: an answered long poll takes
/// milliseconds.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// Longer than the wait, so a lost wake-up shows as a late answer rather
/// than as a read timeout.
const CONSUMER_IO_TIMEOUT: Duration = Duration::from_secs(60);
const ADMIN_IO_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections opened, so that the consumer's lands on each shard at
/// least once whatever the kernel's SO_REUSEPORT hash picks.
const CONSUMER_CONNECTIONS: usize = 4;
/// How long the test lets a fetch park before it appends. Not a bound on
/// anything: an append that lands before the fetch parks must answer it
/// at once too.
const PARK_DELAY: Duration = Duration::from_millis(200);

/// Appends one record to `partition`; its offset.
fn produce_one(conn: &mut Conn, partition: i32) -> i64 {
    let batch = build_batch(&BatchSpec {
        base_offset: 0,
        leader_epoch: -1,
        base_timestamp: 1_700_000_000_000,
        records: &[(0, None, b"wake up".as_slice())],
    });
    let mut r = conn.call(ApiKey::Produce, PRODUCE_VERSION, |w| {
        ProduceRequest {
            transactional_id: None,
            acks: 1,
            timeout_ms: 30_000,
            topics: vec![TopicProduceData {
                name: TOPIC.into(),
                partitions: vec![PartitionProduceData {
                    index: partition,
                    records: Some(Bytes::from(batch)),
                }],
            }],
        }
        .encode(w, PRODUCE_VERSION)
    });
    let resp = ProduceResponse::decode(&mut r, PRODUCE_VERSION).expect("decode Produce");
    let p = &resp.responses[0].partition_responses[0];
    assert_eq!(p.error_code, error_code::NONE, "produce to {partition}");
    p.base_offset
}

fn fetch_request(
    session_id: i32,
    session_epoch: i32,
    partitions: Vec<FetchPartition>,
    max_wait_ms: i32,
    min_bytes: i32,
) -> FetchRequest {
    FetchRequest {
        max_wait_ms,
        min_bytes,
        max_bytes: 1 << 20,
        session_id,
        session_epoch,
        topics: if partitions.is_empty() {
            Vec::new()
        } else {
            vec![FetchTopic {
                topic: TOPIC.into(),
                partitions,
            }]
        },
        ..FetchRequest::default()
    }
}

fn at(partition: i32, fetch_offset: i64) -> FetchPartition {
    FetchPartition {
        partition,
        fetch_offset,
        partition_max_bytes: 1 << 20,
        ..FetchPartition::default()
    }
}

fn fetch(conn: &mut Conn, req: &FetchRequest) -> FetchResponse {
    let mut r = conn.call(ApiKey::Fetch, FETCH_VERSION, |w| {
        req.encode(w, FETCH_VERSION)
    });
    FetchResponse::decode(&mut r, FETCH_VERSION).expect("decode Fetch")
}

/// The partitions of `resp` that carry records.
fn with_records(resp: &FetchResponse) -> Vec<i32> {
    resp.responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .filter(|p| p.records.as_ref().is_some_and(|r| !r.is_empty()))
        .map(|p| p.partition_index)
        .collect()
}

#[test]
fn a_long_poll_in_a_fetch_session_is_answered_by_an_append_on_either_shard() {
    let mut broker = Broker::start(BrokerOpts::new().shards(2));
    let addr = SocketAddr::from(([127, 0, 0, 1], broker.port()));
    let mut admin = Conn::open(addr, "long-poll-admin", ADMIN_IO_TIMEOUT).expect("connect");
    admin.create_topic(TOPIC, PARTITIONS, &[]);
    // Every partition's next offset, as the consumer knows it.
    let mut next = vec![0i64; PARTITIONS as usize];
    for connection in 0..CONSUMER_CONNECTIONS {
        let mut consumer =
            Conn::open(addr, "long-poll-consumer", CONSUMER_IO_TIMEOUT).expect("connect");
        // A full fetch with epoch 0 opens a session over every partition;
        // min_bytes 0 answers it at once.
        let all = (0..PARTITIONS).map(|p| at(p, next[p as usize])).collect();
        let opened = fetch(&mut consumer, &fetch_request(0, 0, all, 0, 0));
        assert_eq!(opened.error_code, error_code::NONE, "{opened:?}");
        assert_ne!(opened.session_id, 0, "the broker opened no fetch session");
        let session_id = opened.session_id;
        // The partition whose fetch offset moved since the last request:
        // the only one an incremental request names, as the Java consumer
        // does.
        let mut moved: Vec<FetchPartition> = Vec::new();
        for (epoch, partition) in (1..).zip(0..PARTITIONS) {
            let req = fetch_request(session_id, epoch, moved, MAX_WAIT_MS, 1);
            let id = consumer.send(ApiKey::Fetch, FETCH_VERSION, |w| {
                req.encode(w, FETCH_VERSION)
            });
            std::thread::sleep(PARK_DELAY);
            let appended_at = Instant::now();
            let offset = produce_one(&mut admin, partition);
            assert_eq!(offset, next[partition as usize]);
            let mut r = consumer.receive(ApiKey::Fetch, FETCH_VERSION, id);
            let resp = FetchResponse::decode(&mut r, FETCH_VERSION).expect("decode Fetch");
            let waited = appended_at.elapsed();
            assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
            assert_eq!(resp.session_id, session_id);
            assert!(
                waited < ANSWER_WITHIN,
                "connection {connection}: the long poll answered {waited:?} after the append \
                 to partition {partition}, not at once (a lost wake-up waits out its \
                 {MAX_WAIT_MS} ms): {resp:?}\n{}",
                broker.log()
            );
            assert_eq!(
                with_records(&resp),
                vec![partition],
                "connection {connection}: the answer carries the appended record: {resp:?}"
            );
            next[partition as usize] = offset + 1;
            moved = vec![at(partition, offset + 1)];
        }
    }
    broker.stop();
}
