//! The share coordinator through the wire (KIP-932's share-group state
//! APIs, keys 83-87), against a real broker: Initialize, Write (updates,
//! then a snapshot), Read, ReadSummary and Delete, the fencing of older
//! leader and state epochs, the pruning of `__share_group_state`, and the
//! state read back the same after a kill -9 and a restart. With three
//! nodes, the coordinator's broker is killed and the next leader of its
//! partition answers with the same state.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::support;
use crate::support::kafka_conn::Conn;
use crate::support::{Broker, BrokerOpts, Cluster};
use pinlog::group::share::state_records::SharePartitionKey;
use pinlog::group::share::state_store::{coordinator_key, partition_for};
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code::*;
use pinlog::protocol::messages::delete_share_group_state::*;
use pinlog::protocol::messages::find_coordinator::{
    FindCoordinatorRequest, FindCoordinatorResponse, KEY_TYPE_GROUP, KEY_TYPE_SHARE,
};
use pinlog::protocol::messages::initialize_share_group_state::*;
use pinlog::protocol::messages::list_offsets::*;
use pinlog::protocol::messages::read_share_group_state::*;
use pinlog::protocol::messages::read_share_group_state_summary::*;
use pinlog::protocol::messages::share_group_state::{
    StateBatch, StateTopic, DELIVERY_STATE_ACKNOWLEDGED, DELIVERY_STATE_ARCHIVED,
    DELIVERY_STATE_AVAILABLE,
};
use pinlog::protocol::messages::write_share_group_state::*;
use pinlog::protocol::messages::{alter_share_group_offsets, share_group_heartbeat};

const CLIENT_ID: &str = "share-state-test";
const IO_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a request may keep answering "coordinator moving or loading"
/// (topic creation, a restart's load, a failover's election).
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);
const RETRY_PAUSE: Duration = Duration::from_millis(100);
const GROUP: &str = "share-group";
const TOPIC_ID: [u8; 16] = [0x5a; 16];
const UPDATES_PER_SNAPSHOT: i64 = 3;
const PRUNE_INTERVAL_MS: i64 = 500;
const STATE_EPOCH: i32 = 1;
const LEADER_EPOCH: i32 = 4;
const START_OFFSET: i64 = 10;

fn key(partition: i32) -> SharePartitionKey {
    SharePartitionKey {
        group_id: GROUP.into(),
        topic_id: TOPIC_ID,
        partition,
    }
}

fn batch(first: i64, last: i64, state: i8, count: i16) -> StateBatch {
    StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: state,
        delivery_count: count,
    }
}

fn topics<P>(partitions: Vec<P>) -> Vec<StateTopic<P>> {
    vec![StateTopic {
        topic_id: TOPIC_ID,
        partitions,
    }]
}

fn connect(port: u16) -> Conn {
    Conn::open(
        SocketAddr::from(([127, 0, 0, 1], port)),
        CLIENT_ID,
        IO_TIMEOUT,
    )
    .expect("connect to the broker")
}

fn retriable(code: i16) -> bool {
    matches!(
        code,
        NOT_COORDINATOR | COORDINATOR_LOAD_IN_PROGRESS | COORDINATOR_NOT_AVAILABLE
    )
}

/// Repeats `call` while it answers a retriable code, within
/// [`SETTLE_TIMEOUT`]; returns its last answer.
fn settled<T>(what: &str, mut call: impl FnMut() -> (i16, T)) -> (i16, T) {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let (code, answer) = call();
        if !retriable(code) {
            return (code, answer);
        }
        assert!(
            Instant::now() < deadline,
            "{what}: still {code} after {SETTLE_TIMEOUT:?}"
        );
        std::thread::sleep(RETRY_PAUSE);
    }
}

fn initialize(c: &mut Conn, partition: i32, state_epoch: i32, start_offset: i64) -> i16 {
    let req = InitializeShareGroupStateRequest {
        group_id: GROUP.into(),
        topics: topics(vec![InitializePartition {
            partition,
            state_epoch,
            start_offset,
        }]),
    };
    let mut r = c.call(ApiKey::InitializeShareGroupState, 0, |w| req.encode(w, 0));
    let resp = InitializeShareGroupStateResponse::decode(&mut r, 0).expect("decode");
    resp.results[0].partitions[0].error_code
}

fn write(
    c: &mut Conn,
    partition: i32,
    state_epoch: i32,
    leader_epoch: i32,
    start_offset: i64,
    batches: Vec<StateBatch>,
) -> i16 {
    let req = WriteShareGroupStateRequest {
        group_id: GROUP.into(),
        topics: topics(vec![WritePartition {
            partition,
            state_epoch,
            leader_epoch,
            start_offset,
            delivery_complete_count: 0,
            state_batches: batches,
        }]),
    };
    let mut r = c.call(ApiKey::WriteShareGroupState, 1, |w| req.encode(w, 1));
    let resp = WriteShareGroupStateResponse::decode(&mut r, 1).expect("decode");
    resp.results[0].partitions[0].error_code
}

fn read(c: &mut Conn, partition: i32, leader_epoch: i32) -> ReadPartitionResult {
    let req = ReadShareGroupStateRequest {
        group_id: GROUP.into(),
        topics: topics(vec![ReadPartition {
            partition,
            leader_epoch,
        }]),
    };
    let mut r = c.call(ApiKey::ReadShareGroupState, 0, |w| req.encode(w, 0));
    let resp = ReadShareGroupStateResponse::decode(&mut r, 0).expect("decode");
    resp.results[0].partitions[0].clone()
}

fn summary(c: &mut Conn, partition: i32) -> SummaryPartitionResult {
    let req = ReadShareGroupStateSummaryRequest {
        group_id: GROUP.into(),
        topics: topics(vec![SummaryPartition {
            partition,
            leader_epoch: LEADER_EPOCH,
        }]),
    };
    let mut r = c.call(ApiKey::ReadShareGroupStateSummary, 1, |w| req.encode(w, 1));
    let resp = ReadShareGroupStateSummaryResponse::decode(&mut r, 1).expect("decode");
    resp.results[0].partitions[0].clone()
}

fn delete(c: &mut Conn, partition: i32) -> i16 {
    let req = DeleteShareGroupStateRequest {
        group_id: GROUP.into(),
        topics: topics(vec![DeletePartition { partition }]),
    };
    let mut r = c.call(ApiKey::DeleteShareGroupState, 0, |w| req.encode(w, 0));
    let resp = DeleteShareGroupStateResponse::decode(&mut r, 0).expect("decode");
    resp.results[0].partitions[0].error_code
}

fn settled_read(c: &mut Conn, partition: i32, leader_epoch: i32) -> ReadPartitionResult {
    let (code, r) = settled("read", || {
        let r = read(c, partition, leader_epoch);
        (r.error_code, r)
    });
    assert_eq!(code, NONE, "read of share partition {partition}: {r:?}");
    r
}

/// The log start offset of `__share_group_state` partition `partition`.
fn log_start(c: &mut Conn, partition: i32) -> i64 {
    let req = ListOffsetsRequest {
        replica_id: -1,
        isolation_level: 0,
        topics: vec![ListOffsetsTopic {
            name: "__share_group_state".into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: partition,
                current_leader_epoch: -1,
                timestamp: EARLIEST_TIMESTAMP,
            }],
        }],
    };
    let mut r = c.call(ApiKey::ListOffsets, 7, |w| req.encode(w, 7));
    let resp = ListOffsetsResponse::decode(&mut r, 7).expect("decode");
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.error_code, NONE, "ListOffsets of __share_group_state");
    p.offset
}

/// The state the tests write to share partition 0: acknowledged,
/// available after two deliveries, archived.
fn written_batches() -> Vec<StateBatch> {
    vec![
        batch(10, 14, DELIVERY_STATE_ACKNOWLEDGED, 1),
        batch(15, 19, DELIVERY_STATE_AVAILABLE, 2),
        batch(20, 20, DELIVERY_STATE_ARCHIVED, 5),
    ]
}

#[test]
fn state_survives_a_crash_and_the_topic_is_pruned() {
    let mut broker = Broker::start(
        BrokerOpts::new()
            .shards(2)
            .setting("share.coordinator.state.topic.num.partitions", 1)
            .setting(
                "share.coordinator.snapshot.update.records.per.snapshot",
                UPDATES_PER_SNAPSHOT,
            )
            .setting(
                "share.coordinator.state.topic.prune.interval.ms",
                PRUNE_INTERVAL_MS,
            ),
    );
    let mut c = connect(broker.port());

    // The first request creates __share_group_state; it answers once the
    // coordinator has loaded it.
    for p in 0..3 {
        let (code, _) = settled("initialize", || {
            (initialize(&mut c, p, STATE_EPOCH, START_OFFSET), ())
        });
        assert_eq!(code, NONE, "initialize share partition {p}");
    }
    let r = read(&mut c, 0, LEADER_EPOCH);
    assert_eq!((r.error_code, r.state_epoch, r.start_offset), (NONE, 1, 10));
    assert!(r.state_batches.is_empty());

    // Updates, then (past UPDATES_PER_SNAPSHOT) a snapshot, each folded in.
    let batches = written_batches();
    for b in &batches {
        assert_eq!(
            write(&mut c, 0, STATE_EPOCH, LEADER_EPOCH, START_OFFSET, vec![*b]),
            NONE
        );
    }
    assert_eq!(
        write(&mut c, 0, STATE_EPOCH, LEADER_EPOCH, 12, vec![]),
        NONE,
        "the write past the limit (a snapshot)"
    );
    let expected = vec![
        batch(12, 14, DELIVERY_STATE_ACKNOWLEDGED, 1),
        batch(15, 19, DELIVERY_STATE_AVAILABLE, 2),
        batch(20, 20, DELIVERY_STATE_ARCHIVED, 5),
    ];
    let r = read(&mut c, 0, LEADER_EPOCH);
    assert_eq!((r.error_code, r.start_offset), (NONE, 12));
    assert_eq!(r.state_batches, expected);

    // Fencing: an older leader epoch, then an older state epoch.
    assert_eq!(
        write(&mut c, 0, STATE_EPOCH, LEADER_EPOCH - 1, 12, vec![]),
        FENCED_LEADER_EPOCH
    );
    assert_eq!(
        write(&mut c, 0, STATE_EPOCH - 1, LEADER_EPOCH, 12, vec![]),
        FENCED_STATE_EPOCH
    );
    assert_eq!(
        read(&mut c, 0, LEADER_EPOCH - 1).error_code,
        FENCED_LEADER_EPOCH
    );
    assert_eq!(
        initialize(&mut c, 0, STATE_EPOCH - 1, 0),
        FENCED_STATE_EPOCH
    );

    let s = summary(&mut c, 0);
    assert_eq!(
        (s.error_code, s.state_epoch, s.leader_epoch, s.start_offset),
        (NONE, STATE_EPOCH, LEADER_EPOCH, 12)
    );

    // Delete: the state is gone, and reads as never initialized.
    assert_eq!(delete(&mut c, 2), NONE);
    assert_eq!(delete(&mut c, 2), NONE, "deleting again succeeds");
    let r = read(&mut c, 2, LEADER_EPOCH);
    assert_eq!(
        (r.error_code, r.state_epoch, r.start_offset),
        (NONE, 0, -1),
        "deleted state reads as uninitialized"
    );
    let r = read(&mut c, 7, LEADER_EPOCH);
    assert_eq!(
        (r.error_code, r.start_offset),
        (NONE, -1),
        "never initialized"
    );

    // FindCoordinator's SHARE key type names this broker; a malformed key
    // is refused.
    let req = FindCoordinatorRequest {
        key_type: KEY_TYPE_SHARE,
        coordinator_keys: vec![coordinator_key(&key(0)), "no-partition".into()],
        ..FindCoordinatorRequest::default()
    };
    let mut r = c.call(ApiKey::FindCoordinator, 6, |w| req.encode(w, 6));
    let resp = FindCoordinatorResponse::decode(&mut r, 6).expect("decode");
    assert_eq!(resp.coordinators[0].error_code, NONE, "{resp:?}");
    assert_eq!(resp.coordinators[0].port, i32::from(broker.port()));
    assert_eq!(resp.coordinators[1].error_code, INVALID_REQUEST);

    // Pruning: share partition 0's old records go; share partition 1's
    // snapshot (its initialization) is now the oldest needed.
    let state_partition = partition_for(&key(0), 1);
    assert_eq!(state_partition, 0);
    let pruned = support::wait_for(Duration::from_secs(20), || {
        log_start(&mut c, state_partition) > 0
    });
    assert!(pruned, "the log start offset of __share_group_state moved");

    // A crash, and the state read back from the log.
    broker.kill9();
    broker.restart();
    let mut c = connect(broker.port());
    let r = settled_read(&mut c, 0, LEADER_EPOCH);
    assert_eq!((r.state_epoch, r.start_offset), (STATE_EPOCH, 12));
    assert_eq!(
        r.state_batches, expected,
        "share partition 0 after the restart"
    );
    let r = settled_read(&mut c, 1, LEADER_EPOCH);
    assert_eq!((r.state_epoch, r.start_offset), (STATE_EPOCH, START_OFFSET));
    assert_eq!(
        read(&mut c, 2, LEADER_EPOCH).start_offset,
        -1,
        "still deleted"
    );
    // The fences hold across the restart.
    assert_eq!(
        write(&mut c, 0, STATE_EPOCH, LEADER_EPOCH - 1, 12, vec![]),
        FENCED_LEADER_EPOCH
    );
    broker.stop();
}

#[test]
fn another_broker_answers_with_the_same_state_after_the_coordinator_dies() {
    let mut cluster = Cluster::start(
        3,
        BrokerOpts::new()
            .setting("share.coordinator.state.topic.num.partitions", 1)
            .setting("share.coordinator.state.topic.replication.factor", 3)
            .setting(
                "share.coordinator.snapshot.update.records.per.snapshot",
                UPDATES_PER_SNAPSHOT,
            ),
    );
    let ports: Vec<u16> = (1..=3).map(|i| cluster.node(i).port()).collect();
    // Find the coordinator: the one node that does not answer
    // NOT_COORDINATOR once the topic exists.
    let mut c = connect(ports[0]);
    let _ = settled("topic creation", || {
        let code = initialize(&mut c, 0, STATE_EPOCH, START_OFFSET);
        // Any node's answer will do here: the topic now exists.
        (
            if code == COORDINATOR_NOT_AVAILABLE {
                code
            } else {
                NONE
            },
            (),
        )
    });
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    let coordinator = loop {
        let found = (0..3).find(|&i| {
            let mut c = connect(ports[i]);
            initialize(&mut c, 0, STATE_EPOCH, START_OFFSET) == NONE
        });
        if let Some(i) = found {
            break i;
        }
        assert!(Instant::now() < deadline, "no node became the coordinator");
        std::thread::sleep(RETRY_PAUSE);
    };
    let mut c = connect(ports[coordinator]);
    for b in written_batches() {
        assert_eq!(
            write(&mut c, 0, STATE_EPOCH, LEADER_EPOCH, START_OFFSET, vec![b]),
            NONE
        );
    }
    let before = read(&mut c, 0, LEADER_EPOCH);
    assert_eq!(before.error_code, NONE);
    assert_eq!(before.state_batches, written_batches());

    cluster.node(coordinator + 1).kill9();
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    let after = 'found: loop {
        for i in (0..3).filter(|&i| i != coordinator) {
            let mut c = connect(ports[i]);
            let r = read(&mut c, 0, LEADER_EPOCH);
            if r.error_code == NONE {
                break 'found r;
            }
            assert!(retriable(r.error_code), "node {}: {r:?}", i + 1);
        }
        assert!(
            Instant::now() < deadline,
            "no other node answered for the share partition"
        );
        std::thread::sleep(RETRY_PAUSE);
    };
    assert_eq!(after.state_batches, before.state_batches);
    assert_eq!(
        (after.state_epoch, after.start_offset),
        (before.state_epoch, before.start_offset)
    );
}

/// The partitions the reset below writes, one state each: enough that the
/// reset takes a while on any machine.
const RESET_PARTITIONS: i32 = 4_000;
/// How long after the reset is sent the join is sent, so that the reset
/// has begun; four times as long at each further attempt.
const JOIN_AFTER: Duration = Duration::from_millis(15);
/// Attempts after the first, should the join come before the reset began.
const JOIN_ATTEMPTS: u32 = 2;
/// Below this, what was left of the reset when the join came is too
/// short to tell a join that waited from one that did not.
const RESET_LEFT_MIN: Duration = Duration::from_millis(40);

/// AlterShareGroupOffsets checks that the share group is empty, then
/// writes each partition's new state to the share coordinator; no member
/// may join in between, or it would read the state the reset is replacing
/// (Kafka checks and writes in one coordinator step). A join sent while a
/// reset of many partitions is under way is answered only once the reset
/// is done, and both succeed.
#[test]
fn a_share_group_join_waits_for_an_offsets_reset_under_way() {
    const RESET_GROUP: &str = "reset-group";
    const TOPIC: &str = "reset-many";
    let broker = Broker::start(BrokerOpts::new());
    let created = support::run_command(
        std::process::Command::new(support::PINLOG_BIN)
            .args(["topic", "create", TOPIC, "--partitions"])
            .arg(RESET_PARTITIONS.to_string())
            .args(["--bootstrap-server", &broker.bootstrap()]),
        None,
        SETTLE_TIMEOUT,
    );
    assert!(created.success(), "create {TOPIC}: {created}");
    let reset = |partitions: i32| {
        let req = alter_share_group_offsets::AlterShareGroupOffsetsRequest {
            group_id: RESET_GROUP.into(),
            topics: vec![alter_share_group_offsets::AlterTopicRequest {
                topic_name: TOPIC.into(),
                partitions: (0..partitions)
                    .map(|p| alter_share_group_offsets::AlterPartitionRequest {
                        partition_index: p,
                        start_offset: 0,
                    })
                    .collect(),
            }],
        };
        move |w: &mut bytes::BytesMut| req.encode(w, 0)
    };
    let decode_reset = |mut r| {
        alter_share_group_offsets::AlterShareGroupOffsetsResponse::decode(&mut r, 0)
            .expect("decode AlterShareGroupOffsets")
    };
    let join = |w: &mut bytes::BytesMut| {
        share_group_heartbeat::ShareGroupHeartbeatRequest {
            group_id: RESET_GROUP.into(),
            member_id: "member-0000000000000000001".into(),
            member_epoch: 0,
            rack_id: None,
            subscribed_topic_names: Some(vec![TOPIC.into()]),
        }
        .encode(w, 1)
    };
    let decode_join = |mut r| {
        share_group_heartbeat::ShareGroupHeartbeatResponse::decode(&mut r, 1)
            .expect("decode ShareGroupHeartbeat")
    };

    // FindCoordinator creates __consumer_offsets, as a client's first
    // call; the first reset creates __share_group_state.
    let mut admin = connect(broker.port());
    settled("finding the group's coordinator", || {
        let req = FindCoordinatorRequest {
            key_type: KEY_TYPE_GROUP,
            coordinator_keys: vec![RESET_GROUP.into()],
            ..FindCoordinatorRequest::default()
        };
        let mut r = admin.call(ApiKey::FindCoordinator, 6, |w| req.encode(w, 6));
        let resp = FindCoordinatorResponse::decode(&mut r, 6).expect("decode FindCoordinator");
        (resp.coordinators[0].error_code, ())
    });
    settled("a first reset", || {
        let r = decode_reset(admin.call(ApiKey::AlterShareGroupOffsets, 0, reset(1)));
        (r.error_code, ())
    });

    // The join must come once the reset has begun: if it came first, the
    // reset is rightly refused (NON_EMPTY_GROUP), the member leaves, and
    // the next attempt waits longer before joining.
    let mut attempt = 0;
    let (reset_sent, join_sent, reset_done, join_answer, join_done) = loop {
        let join_after = JOIN_AFTER * 4u32.pow(attempt);
        let mut member = connect(broker.port());
        let reset_sent = Instant::now();
        let reset_id = admin.send(ApiKey::AlterShareGroupOffsets, 0, reset(RESET_PARTITIONS));
        std::thread::sleep(join_after);
        let join_sent = Instant::now();
        let join_id = member.send(ApiKey::ShareGroupHeartbeat, 1, join);
        let joined = std::thread::spawn(move || {
            let r = decode_join(member.receive(ApiKey::ShareGroupHeartbeat, 1, join_id));
            (r, Instant::now(), member)
        });
        let reset_answer = decode_reset(admin.receive(ApiKey::AlterShareGroupOffsets, 0, reset_id));
        let reset_done = Instant::now();
        let (join_answer, join_done, mut member) = joined.join().expect("the join's reader");
        if reset_answer.error_code == NON_EMPTY_GROUP && attempt < JOIN_ATTEMPTS {
            eprintln!("the join came before the reset began ({join_after:?} after it); again");
            let leave = |w: &mut bytes::BytesMut| {
                share_group_heartbeat::ShareGroupHeartbeatRequest {
                    group_id: RESET_GROUP.into(),
                    member_id: join_answer.member_id.clone().unwrap_or_default(),
                    member_epoch: -1,
                    rack_id: None,
                    subscribed_topic_names: None,
                }
                .encode(w, 1)
            };
            let left = decode_join(member.call(ApiKey::ShareGroupHeartbeat, 1, leave));
            assert_eq!(left.error_code, NONE, "the member's leave: {left:?}");
            attempt += 1;
            continue;
        }
        assert_eq!(reset_answer.error_code, NONE, "{reset_answer:?}");
        let refused: Vec<_> = reset_answer.responses[0]
            .partitions
            .iter()
            .filter(|p| p.error_code != NONE)
            .collect();
        assert!(refused.is_empty(), "partitions not reset: {refused:?}");
        break (reset_sent, join_sent, reset_done, join_answer, join_done);
    };
    assert_eq!(join_answer.error_code, NONE, "{join_answer:?}");
    let reset_left = reset_done.saturating_duration_since(join_sent);
    eprintln!(
        "the reset took {:?}; the join, sent {:?} into it, was answered in {:?}",
        reset_done - reset_sent,
        join_sent - reset_sent,
        join_done - join_sent
    );
    assert!(
        reset_left >= RESET_LEFT_MIN,
        "the reset of {RESET_PARTITIONS} partitions ended {reset_left:?} after the join was \
         sent: too soon to tell whether the join waited; raise RESET_PARTITIONS"
    );
    assert!(
        join_done - join_sent >= reset_left / 2,
        "the join was answered {:?} after it was sent, while the reset went on {reset_left:?} \
         after that: a member joined the group while its offsets were being reset",
        join_done - join_sent
    );
}
