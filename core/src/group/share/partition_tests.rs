//! Unit tests of the share partition (`partition.rs`) and of its durable
//! state (`partition_state.rs`).

use crate::broker_config::share_group::SharePartitionConfig;
use crate::group::share::partition::{RecordState, SharePartition, StateWrite};
use crate::group::share::partition_state::DurableShareState;
use crate::protocol::error_code::{INVALID_RECORD_STATE, INVALID_REQUEST};
use crate::protocol::messages::share_fetch::{
    AcknowledgementBatch, AcquiredRecords, ACKNOWLEDGE_TYPE_ACCEPT, ACKNOWLEDGE_TYPE_GAP,
    ACKNOWLEDGE_TYPE_REJECT, ACKNOWLEDGE_TYPE_RELEASE, ACKNOWLEDGE_TYPE_RENEW,
};
use crate::protocol::messages::share_group_state::{
    StateBatch, DELIVERY_STATE_ACKNOWLEDGED, DELIVERY_STATE_ARCHIVED, DELIVERY_STATE_AVAILABLE,
};

const LOCK_MS: i64 = 30_000;

fn config() -> SharePartitionConfig {
    SharePartitionConfig::default()
}

fn ack(first: i64, last: i64, types: &[i8]) -> AcknowledgementBatch {
    AcknowledgementBatch {
        first_offset: first,
        last_offset: last,
        acknowledge_types: types.to_vec(),
    }
}

fn range(first: i64, last: i64, delivery_count: i16) -> AcquiredRecords {
    AcquiredRecords {
        first_offset: first,
        last_offset: last,
        delivery_count,
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

#[test]
fn acquisition_takes_new_records_up_to_the_fetch_limit_and_the_log_end() {
    let mut p = SharePartition::new(config(), 0, 10);
    let a = p.acquire("m1", 5, 100, 0);
    assert_eq!(a.acquired, vec![range(10, 14, 1)]);
    assert_eq!(a.state_write, None, "an acquisition alone writes nothing");
    assert_eq!((p.start_offset(), p.end_offset()), (10, 14));
    assert_eq!(p.owner(12), Some("m1"));
    assert_eq!(p.next_lock_deadline_ms(), Some(LOCK_MS));
    // Only up to the fetchable end (the high watermark).
    let b = p.acquire("m2", 100, 17, 1);
    assert_eq!(b.acquired, vec![range(15, 16, 1)]);
    assert!(p.acquire("m2", 100, 17, 2).acquired.is_empty());
    p.check_invariants();
}

#[test]
fn the_window_is_bounded_by_max_record_locks() {
    let c = SharePartitionConfig {
        max_record_locks: 100,
        ..config()
    };
    let mut p = SharePartition::new(c, 0, 0);
    assert_eq!(
        p.acquire("m1", 500, 1_000, 0).acquired,
        vec![range(0, 99, 1)]
    );
    assert!(p.acquire("m2", 500, 1_000, 0).acquired.is_empty());
    // Accepting the first 10 moves the SPSO and frees 10 slots.
    let out = p.acknowledge("m1", &[ack(0, 9, &[ACKNOWLEDGE_TYPE_ACCEPT])], 1);
    assert_eq!(out.error, None);
    assert_eq!(p.start_offset(), 10);
    assert_eq!(
        p.acquire("m2", 500, 1_000, 2).acquired,
        vec![range(100, 109, 1)]
    );
    assert_eq!(p.in_flight_records(), 100);
}

#[test]
fn accept_reject_and_gap_are_final_and_move_the_start_offset() {
    let mut p = SharePartition::new(config(), 3, 0);
    p.acquire("m1", 6, 100, 0);
    let types = [
        ACKNOWLEDGE_TYPE_ACCEPT,
        ACKNOWLEDGE_TYPE_REJECT,
        ACKNOWLEDGE_TYPE_GAP,
        ACKNOWLEDGE_TYPE_ACCEPT,
    ];
    let out = p.acknowledge("m1", &[ack(0, 3, &types)], 5);
    assert_eq!(out.error, None);
    assert_eq!(p.start_offset(), 4);
    assert_eq!(
        out.state_write,
        Some(StateWrite {
            start_offset: 4,
            delivery_complete_count: 0,
            state_batches: vec![],
        })
    );
    // A done record past an open one stays in the window and is written.
    let out = p.acknowledge("m1", &[ack(5, 5, &[ACKNOWLEDGE_TYPE_ACCEPT])], 6);
    assert_eq!(p.start_offset(), 4);
    assert_eq!(p.record(5), Some((RecordState::Acknowledged, 1)));
    assert_eq!(
        out.state_write.unwrap(),
        StateWrite {
            start_offset: 4,
            delivery_complete_count: 1,
            state_batches: vec![batch(5, 5, DELIVERY_STATE_ACKNOWLEDGED, 1)],
        }
    );
    p.check_invariants();
}

#[test]
fn a_released_record_is_delivered_again_with_a_higher_count() {
    let mut p = SharePartition::new(config(), 0, 0);
    p.acquire("m1", 3, 100, 0);
    let out = p.acknowledge("m1", &[ack(1, 1, &[ACKNOWLEDGE_TYPE_RELEASE])], 1);
    assert_eq!(
        out.state_write.unwrap().state_batches,
        vec![batch(1, 1, DELIVERY_STATE_AVAILABLE, 1)]
    );
    let a = p.acquire("m2", 10, 5, 2);
    assert_eq!(a.acquired, vec![range(1, 1, 2), range(3, 4, 1)]);
    assert_eq!(p.owner(1), Some("m2"));
}

#[test]
fn an_expired_lock_makes_the_record_available_again() {
    let mut p = SharePartition::new(config(), 0, 0);
    p.acquire("m1", 2, 100, 1_000);
    assert_eq!(p.expire_locks(1_000 + LOCK_MS - 1), None);
    let w = p.expire_locks(1_000 + LOCK_MS).unwrap();
    assert_eq!(
        w.state_batches,
        vec![batch(0, 1, DELIVERY_STATE_AVAILABLE, 1)]
    );
    assert_eq!(p.record(0), Some((RecordState::Available, 1)));
    assert_eq!(p.next_lock_deadline_ms(), None);
    // The late acknowledgement of the old owner is refused.
    let out = p.acknowledge("m1", &[ack(0, 1, &[ACKNOWLEDGE_TYPE_ACCEPT])], 40_000);
    assert_eq!(out.error.unwrap().error_code, INVALID_RECORD_STATE);
}

#[test]
fn a_lock_past_its_deadline_is_not_honoured_before_the_timer_fires() {
    let mut p = SharePartition::new(config(), 0, 0);
    p.acquire("m1", 1, 100, 0);
    let out = p.acknowledge("m1", &[ack(0, 0, &[ACKNOWLEDGE_TYPE_ACCEPT])], LOCK_MS);
    assert_eq!(out.error.unwrap().error_code, INVALID_RECORD_STATE);
    // The expiry itself is written, refusal or not.
    assert_eq!(
        out.state_write.unwrap().state_batches,
        vec![batch(0, 0, DELIVERY_STATE_AVAILABLE, 1)]
    );
}

#[test]
fn renew_extends_the_lock() {
    let mut p = SharePartition::new(config(), 0, 0);
    p.acquire("m1", 1, 100, 0);
    let out = p.acknowledge("m1", &[ack(0, 0, &[ACKNOWLEDGE_TYPE_RENEW])], 20_000);
    assert_eq!(out, Default::default());
    assert_eq!(p.next_lock_deadline_ms(), Some(20_000 + LOCK_MS));
    assert_eq!(p.expire_locks(LOCK_MS), None);
}

#[test]
fn the_delivery_count_limit_archives_instead_of_redelivering() {
    let mut p = SharePartition::new(config(), 0, 0);
    let mut now = 0;
    for delivery in 1..=5 {
        let a = p.acquire("m1", 1, 1, now);
        assert_eq!(a.acquired, vec![range(0, 0, delivery)]);
        now += LOCK_MS;
    }
    // The fifth lock expires: archived, and the SPSO moves past it.
    let w = p.expire_locks(now).unwrap();
    assert_eq!(w.start_offset, 1);
    assert_eq!(p.start_offset(), 1);
    assert!(p.acquire("m1", 1, 1, now).acquired.is_empty());
}

#[test]
fn release_at_the_limit_archives_too() {
    let c = SharePartitionConfig {
        delivery_count_limit: 2,
        ..config()
    };
    let mut p = SharePartition::new(c, 0, 0);
    p.acquire("m1", 2, 2, 0);
    p.acknowledge("m1", &[ack(0, 1, &[ACKNOWLEDGE_TYPE_RELEASE])], 1);
    p.acquire("m2", 1, 2, 2);
    let out = p.acknowledge("m2", &[ack(0, 0, &[ACKNOWLEDGE_TYPE_RELEASE])], 3);
    assert_eq!(
        out.state_write.unwrap().start_offset,
        1,
        "archived at 2 deliveries"
    );
    assert_eq!(p.record(1), Some((RecordState::Available, 1)));
}

#[test]
fn invalid_acknowledgements_get_kafkas_error_codes_and_change_nothing() {
    let mut p = SharePartition::new(config(), 0, 10);
    p.acquire("m1", 5, 100, 0);
    p.acquire("m2", 5, 100, 0);
    let accept = [ACKNOWLEDGE_TYPE_ACCEPT];
    let cases: Vec<(Vec<AcknowledgementBatch>, i16)> = vec![
        // Another member's record.
        (vec![ack(15, 15, &accept)], INVALID_RECORD_STATE),
        // Partly another member's: nothing is applied.
        (vec![ack(10, 15, &accept)], INVALID_RECORD_STATE),
        // Wholly below the start offset.
        (vec![ack(0, 9, &accept)], INVALID_RECORD_STATE),
        // Past the acquired records.
        (vec![ack(20, 21, &accept)], INVALID_REQUEST),
        (vec![ack(12, 25, &accept)], INVALID_REQUEST),
        // Malformed batches.
        (vec![ack(12, 11, &accept)], INVALID_REQUEST),
        (vec![ack(10, 12, &[])], INVALID_REQUEST),
        (vec![ack(10, 12, &[1, 1])], INVALID_REQUEST),
        (vec![ack(10, 10, &[9])], INVALID_REQUEST),
        (
            vec![ack(10, 12, &accept), ack(12, 13, &accept)],
            INVALID_REQUEST,
        ),
    ];
    for (batches, code) in cases {
        let out = p.acknowledge("m1", &batches, 1);
        assert_eq!(out.error.map(|e| e.error_code), Some(code), "{batches:?}");
        assert_eq!(out.state_write, None);
        for o in 10..20 {
            assert_eq!(p.record(o).unwrap().0, RecordState::Acquired, "{batches:?}");
        }
    }
    // Not acquired (any more).
    p.acknowledge("m1", &[ack(10, 10, &accept)], 2);
    p.acknowledge("m1", &[ack(13, 13, &[ACKNOWLEDGE_TYPE_RELEASE])], 2);
    let out = p.acknowledge("m1", &[ack(13, 13, &accept)], 3);
    assert_eq!(out.error.unwrap().error_code, INVALID_RECORD_STATE);
    // A batch reaching below the start offset skips what is done.
    let out = p.acknowledge("m1", &[ack(5, 12, &accept)], 4);
    assert_eq!(out.error, None);
    assert_eq!(p.start_offset(), 13);
}

#[test]
fn a_member_leaving_releases_what_it_holds() {
    let mut p = SharePartition::new(config(), 0, 0);
    p.acquire("m1", 3, 100, 0);
    p.acquire("m2", 3, 100, 0);
    let w = p.release_member("m1", 1).unwrap();
    assert_eq!(
        w.state_batches,
        vec![batch(0, 2, DELIVERY_STATE_AVAILABLE, 1)]
    );
    assert_eq!(p.owner(3), Some("m2"));
    assert_eq!(p.release_member("nobody", 2), None);
}

#[test]
fn the_log_start_offset_archives_what_it_passes() {
    let mut p = SharePartition::new(config(), 0, 0);
    p.acquire("m1", 5, 100, 0);
    let w = p.on_log_start_offset(3).unwrap();
    assert_eq!(
        (w.start_offset, p.start_offset(), p.end_offset()),
        (3, 3, 4)
    );
    assert_eq!(p.on_log_start_offset(2), None);
    p.on_log_start_offset(50).unwrap();
    assert_eq!((p.start_offset(), p.in_flight_records()), (50, 0));
    assert_eq!(p.acquire("m1", 1, 100, 1).acquired, vec![range(50, 50, 1)]);
    p.check_invariants();
}

#[test]
fn loading_redelivers_only_what_was_not_done() {
    let batches = [
        batch(10, 11, DELIVERY_STATE_ACKNOWLEDGED, 1),
        batch(12, 12, DELIVERY_STATE_AVAILABLE, 2),
        batch(13, 13, DELIVERY_STATE_ARCHIVED, 5),
        batch(16, 16, DELIVERY_STATE_ACKNOWLEDGED, 1),
    ];
    let mut p = SharePartition::load(config(), 1, 10, &batches).unwrap();
    assert_eq!((p.start_offset(), p.end_offset()), (12, 16));
    assert_eq!(p.record(14), Some((RecordState::Available, 0)), "a gap");
    let a = p.acquire("m1", 100, 18, 0);
    assert_eq!(
        a.acquired,
        vec![range(12, 12, 3), range(14, 15, 1), range(17, 17, 1)]
    );
    p.check_invariants();
}

#[test]
fn loading_refuses_what_it_cannot_trust() {
    let bad = [
        vec![
            batch(0, 3, DELIVERY_STATE_AVAILABLE, 1),
            batch(2, 5, DELIVERY_STATE_AVAILABLE, 1),
        ],
        vec![batch(0, 3, 1, 1)],
        vec![batch(3, 0, DELIVERY_STATE_AVAILABLE, 1)],
        vec![batch(0, 1_000_000, DELIVERY_STATE_AVAILABLE, 1)],
        vec![batch(0, 0, DELIVERY_STATE_AVAILABLE, -1)],
        vec![batch(5, i64::MAX, DELIVERY_STATE_AVAILABLE, 1)],
    ];
    for batches in bad {
        assert!(
            SharePartition::load(config(), 0, 0, &batches).is_err(),
            "{batches:?}"
        );
    }
    assert!(SharePartition::load(config(), 0, -1, &[]).is_err());
}

#[test]
fn a_stored_count_past_a_lowered_limit_is_archived_not_delivered() {
    let batches = [batch(0, 0, DELIVERY_STATE_AVAILABLE, 7)];
    let mut p = SharePartition::load(config(), 0, 0, &batches).unwrap();
    let a = p.acquire("m1", 1, 2, 0);
    assert_eq!(a.acquired, vec![range(1, 1, 1)]);
    assert_eq!(a.state_write.unwrap().start_offset, 1);
}

#[test]
fn durable_state_overlays_writes_and_drops_what_falls_below_the_start() {
    let mut d = DurableShareState::initialized(1, 0);
    let write = |start, batches: Vec<StateBatch>| StateWrite {
        start_offset: start,
        delivery_complete_count: 0,
        state_batches: batches,
    };
    d.apply_write(1, &write(0, vec![batch(0, 9, DELIVERY_STATE_AVAILABLE, 1)]));
    d.apply_write(
        1,
        &write(0, vec![batch(3, 4, DELIVERY_STATE_ACKNOWLEDGED, 1)]),
    );
    assert_eq!(
        d.state_batches(),
        vec![
            batch(0, 2, DELIVERY_STATE_AVAILABLE, 1),
            batch(3, 4, DELIVERY_STATE_ACKNOWLEDGED, 1),
            batch(5, 9, DELIVERY_STATE_AVAILABLE, 1),
        ]
    );
    d.apply_write(1, &write(4, vec![batch(8, 8, DELIVERY_STATE_ARCHIVED, 5)]));
    assert_eq!(
        d.state_batches(),
        vec![
            batch(4, 4, DELIVERY_STATE_ACKNOWLEDGED, 1),
            batch(5, 7, DELIVERY_STATE_AVAILABLE, 1),
            batch(8, 8, DELIVERY_STATE_ARCHIVED, 5),
            batch(9, 9, DELIVERY_STATE_AVAILABLE, 1),
        ]
    );
    // The start offset never goes back.
    d.apply_write(1, &write(2, vec![]));
    assert_eq!(d.start_offset, 4);
    assert_eq!(d.updates_since_snapshot, 4);
}

#[test]
fn durable_state_replays_snapshots_and_updates_of_their_epoch() {
    use crate::group::share::state_records::{
        SharePartitionKey, ShareStateRecord, ShareUpdateValue,
    };
    let key = SharePartitionKey {
        group_id: "g".into(),
        topic_id: [1; 16],
        partition: 0,
    };
    let mut d = DurableShareState::initialized(2, 5);
    d.apply_write(
        3,
        &StateWrite {
            start_offset: 5,
            delivery_complete_count: 1,
            state_batches: vec![batch(6, 6, DELIVERY_STATE_ACKNOWLEDGED, 1)],
        },
    );
    let snapshot = ShareStateRecord::Snapshot {
        key: key.clone(),
        value: Some(d.to_snapshot(1, 2)),
    };
    let update = |snapshot_epoch| ShareStateRecord::Update {
        key: key.clone(),
        value: Some(ShareUpdateValue {
            snapshot_epoch,
            leader_epoch: 3,
            start_offset: -1,
            delivery_complete_count: 2,
            state_batches: vec![batch(7, 7, DELIVERY_STATE_ARCHIVED, 5)],
        }),
    };
    let mut state = None;
    for r in [&snapshot, &update(9), &update(0)] {
        // Through the bytes, as a load reads them.
        let back = ShareStateRecord::decode(r.encode_key(), r.encode_value())
            .unwrap()
            .unwrap();
        DurableShareState::replay(&mut state, &back);
    }
    let state = state.unwrap();
    assert_eq!(state.start_offset, 5);
    assert_eq!(
        state.state_batches(),
        vec![
            batch(6, 6, DELIVERY_STATE_ACKNOWLEDGED, 1),
            batch(7, 7, DELIVERY_STATE_ARCHIVED, 5),
        ],
        "the update of another snapshot epoch is ignored"
    );
    let p = SharePartition::load(
        config(),
        state.state_epoch,
        state.start_offset,
        &state.state_batches(),
    )
    .unwrap();
    assert_eq!((p.start_offset(), p.end_offset()), (5, 7));
    let mut gone = Some(state);
    DurableShareState::replay(&mut gone, &ShareStateRecord::Snapshot { key, value: None });
    assert_eq!(gone, None);
}

#[test]
fn a_record_expired_and_acquired_again_in_one_call_is_written_as_before_this_delivery() {
    let mut p = SharePartition::new(config(), 0, 0);
    p.acquire("m1", 1, 1, 0);
    let a = p.acquire("m2", 1, 1, LOCK_MS);
    assert_eq!(a.acquired, vec![range(0, 0, 2)]);
    // Stored as Kafka stores it: available, delivered once; a crash now
    // hands it out again as its second delivery.
    assert_eq!(
        a.state_write.unwrap().state_batches,
        vec![batch(0, 0, DELIVERY_STATE_AVAILABLE, 1)]
    );
}

#[test]
fn durable_state_takes_extreme_offsets_without_overflowing() {
    let mut d = DurableShareState::initialized(1, 0);
    let write = |start, batches: Vec<StateBatch>| StateWrite {
        start_offset: start,
        delivery_complete_count: 0,
        state_batches: batches,
    };
    d.apply_write(
        1,
        &write(0, vec![batch(0, i64::MAX, DELIVERY_STATE_AVAILABLE, 1)]),
    );
    d.apply_write(
        1,
        &write(
            i64::MAX,
            vec![batch(i64::MAX, i64::MAX, DELIVERY_STATE_ARCHIVED, 1)],
        ),
    );
    assert_eq!(
        d.state_batches(),
        vec![batch(i64::MAX, i64::MAX, DELIVERY_STATE_ARCHIVED, 1)]
    );
    // A malformed batch is ignored rather than trusted.
    d.apply_write(
        1,
        &write(i64::MAX, vec![batch(9, 3, DELIVERY_STATE_AVAILABLE, 1)]),
    );
    assert_eq!(d.state_batches().len(), 1);
}

/// read_committed: what a member acquired from an aborted transaction is
/// archived, never delivered again, and the SPSO moves past it.
#[test]
fn records_of_aborted_transactions_are_archived_not_delivered() {
    let mut p = SharePartition::new(config(), 0, 0);
    let mut got = p.acquire("m", 100, 10, 0).acquired;
    assert_eq!(got, vec![range(0, 9, 1)]);
    // Offsets 0-3 were an aborted transaction; 8-20 another, partly
    // past the window.
    let write = p
        .archive_acquired("m", &[(0, 3), (8, 20)], &mut got)
        .expect("a write");
    assert_eq!(write.start_offset, 4);
    assert_eq!(got, vec![range(4, 7, 1)], "the member gets 4-7 only");
    assert_eq!(p.record(8), Some((RecordState::Archived, 1)));
    assert_eq!(p.record(5).map(|r| r.0), Some(RecordState::Acquired));
    // Another member's records are not its to archive.
    let mut theirs = vec![range(4, 7, 1)];
    assert!(p
        .archive_acquired("other", &[(4, 7)], &mut theirs)
        .is_none());
    assert_eq!(theirs, vec![range(4, 7, 1)]);
    p.check_invariants();
}

/// A group's configs change under a loaded partition: the next
/// acquisition takes the new lock duration.
#[test]
fn a_changed_config_applies_to_later_acquisitions() {
    let mut p = SharePartition::new(config(), 0, 0);
    p.acquire("m", 1, 10, 0);
    p.set_config(SharePartitionConfig {
        record_lock_duration_ms: 15_000,
        ..config()
    });
    p.acquire("m", 1, 10, 0);
    assert_eq!(p.next_lock_deadline_ms(), Some(15_000));
    assert_eq!(p.expire_locks(15_000).map(|w| w.start_offset), Some(0));
    assert_eq!(p.record(1).map(|r| r.0), Some(RecordState::Available));
    assert_eq!(p.record(0).map(|r| r.0), Some(RecordState::Acquired));
}

#[test]
fn records_are_acquirable_again_once_released_or_their_lock_expires() {
    let mut p = SharePartition::new(config(), 0, 0);
    assert!(!p.has_acquirable_records(0), "an empty window");
    assert_eq!(p.acquire("m1", 3, 3, 0).acquired, vec![range(0, 2, 1)]);
    assert!(!p.has_acquirable_records(1), "all three are held");
    // Accepting one makes nothing acquirable.
    let out = p.acknowledge("m1", &[ack(0, 0, &[ACKNOWLEDGE_TYPE_ACCEPT])], 1);
    assert_eq!(out.error, None);
    assert!(!p.has_acquirable_records(1));
    // Releasing one does.
    let out = p.acknowledge("m1", &[ack(1, 1, &[ACKNOWLEDGE_TYPE_RELEASE])], 2);
    assert_eq!(out.error, None);
    assert!(p.has_acquirable_records(2));
    assert_eq!(p.acquire("m2", 10, 3, 3).acquired, vec![range(1, 1, 2)]);
    assert!(!p.has_acquirable_records(3));
    // A lock that expired counts, before anything expired it.
    assert!(p.has_acquirable_records(LOCK_MS + 1));
    p.check_invariants();
}
