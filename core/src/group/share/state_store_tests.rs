use super::*;
use crate::protocol::messages::share_group_state::{
    DELIVERY_STATE_ACKNOWLEDGED, DELIVERY_STATE_AVAILABLE,
};

fn key(partition: i32) -> SharePartitionKey {
    SharePartitionKey {
        group_id: "g".into(),
        topic_id: [7; 16],
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

fn write(start: i64, batches: Vec<StateBatch>) -> StateWrite {
    StateWrite {
        start_offset: start,
        delivery_complete_count: 0,
        state_batches: batches,
    }
}

/// Plans, "writes" at `offset` and replays: what the shell does.
fn commit(store: &mut ShareStateStore, offset: i64, record: ShareStateRecord) {
    // Through the bytes, as a load would see it.
    let decoded = ShareStateRecord::decode(record.encode_key(), record.encode_value())
        .expect("decodes")
        .expect("a share state record");
    assert_eq!(decoded, record);
    store.replay(offset, &decoded);
}

#[test]
fn the_coordinator_partition_is_kafkas() {
    let k = SharePartitionKey {
        group_id: "group".into(),
        topic_id: [0; 16],
        partition: 3,
    };
    // Uuid.toString of sixteen zero bytes.
    assert_eq!(coordinator_key(&k), "group:AAAAAAAAAAAAAAAAAAAAAA:3");
    assert_eq!(
        partition_for(&k, 50),
        crate::group::offsets_topic::partition_for("group:AAAAAAAAAAAAAAAAAAAAAA:3", 50)
    );
    for p in 0..20 {
        assert!((0..50).contains(&partition_for(&key(p), 50)));
    }
}

#[test]
fn an_uninitialized_share_partition_reads_as_kafka_answers_it() {
    let store = ShareStateStore::new();
    let read = store.read(&key(0), 3, 500, 0).unwrap();
    assert_eq!(read.start_offset, UNINITIALIZED_START_OFFSET);
    assert_eq!(read.state_epoch, DEFAULT_STATE_EPOCH);
    assert!(!read.initialized && read.state_batches.is_empty());
    assert!(read.leader_epoch_record.is_none());
    assert_eq!(store.summary(&key(0)).unwrap().start_offset, -1);
    assert!(store.delete(&key(0)).unwrap().is_empty());
}

#[test]
fn initialize_writes_a_snapshot_and_bumps_its_epoch_and_fences_older_state_epochs() {
    let mut store = ShareStateStore::new();
    let r = store.initialize(&key(0), 1, 10, 5).unwrap();
    let ShareStateRecord::Snapshot { value: Some(v), .. } = &r else {
        panic!("{r:?}")
    };
    assert_eq!(
        (v.snapshot_epoch, v.state_epoch, v.start_offset),
        (0, 1, 10)
    );
    commit(&mut store, 0, r);
    let read = store.read(&key(0), EPOCH_UNSET, 500, 0).unwrap();
    assert_eq!((read.state_epoch, read.start_offset), (1, 10));
    assert!(read.initialized);

    assert_eq!(
        store.initialize(&key(0), 0, 0, 5),
        Err(error_code::FENCED_STATE_EPOCH)
    );
    let again = store.initialize(&key(0), 2, 20, 6).unwrap();
    let ShareStateRecord::Snapshot { value: Some(v), .. } = &again else {
        panic!()
    };
    assert_eq!((v.snapshot_epoch, v.state_epoch), (1, 2));
    assert_eq!(
        store.initialize(&key(-1), 0, 0, 0),
        Err(error_code::INVALID_REQUEST)
    );
}

#[test]
fn writes_are_fenced_by_leader_epoch_then_state_epoch() {
    let mut store = ShareStateStore::new();
    let r = store.initialize(&key(0), 2, 0, 0).unwrap();
    commit(&mut store, 0, r);
    let w = write(0, vec![batch(0, 4, DELIVERY_STATE_ACKNOWLEDGED, 1)]);
    let r = store.write(&key(0), 2, 5, &w, 500, 0).unwrap();
    commit(&mut store, 1, r);
    assert_eq!(
        store.write(&key(0), 2, 4, &w, 500, 0),
        Err(error_code::FENCED_LEADER_EPOCH)
    );
    assert_eq!(
        store.write(&key(0), 1, 5, &w, 500, 0),
        Err(error_code::FENCED_STATE_EPOCH)
    );
    // The same or newer epochs pass.
    assert!(store.write(&key(0), 2, 5, &w, 500, 0).is_ok());
    assert!(store.write(&key(0), 3, 6, &w, 500, 0).is_ok());
    // A reader of an older leader epoch is fenced too.
    assert_eq!(
        store.read(&key(0), 4, 500, 0),
        Err(error_code::FENCED_LEADER_EPOCH)
    );
}

#[test]
fn updates_until_the_limit_then_a_snapshot_of_the_next_epoch() {
    let mut store = ShareStateStore::new();
    let r = store.initialize(&key(0), 0, 0, 0).unwrap();
    commit(&mut store, 0, r);
    let per_snapshot = 3;
    let mut offset = 1;
    for i in 0..per_snapshot {
        let w = write(i, vec![batch(i, i, DELIVERY_STATE_ACKNOWLEDGED, 1)]);
        let r = store
            .write(&key(0), 0, 1, &w, per_snapshot as u32, 0)
            .unwrap();
        let ShareStateRecord::Update { value: Some(v), .. } = &r else {
            panic!("write {i} should be an update: {r:?}")
        };
        assert_eq!(v.snapshot_epoch, 0);
        commit(&mut store, offset, r);
        offset += 1;
    }
    let w = write(2, vec![batch(5, 9, DELIVERY_STATE_AVAILABLE, 2)]);
    let r = store
        .write(&key(0), 0, 1, &w, per_snapshot as u32, 0)
        .unwrap();
    let ShareStateRecord::Snapshot { value: Some(v), .. } = &r else {
        panic!("the write past the limit should be a snapshot: {r:?}")
    };
    assert_eq!(v.snapshot_epoch, 1);
    assert_eq!(v.start_offset, 2);
    assert_eq!(
        v.state_batches,
        vec![
            batch(2, 2, DELIVERY_STATE_ACKNOWLEDGED, 1),
            batch(5, 9, DELIVERY_STATE_AVAILABLE, 2)
        ]
    );
    commit(&mut store, offset, r);
    // The next write is an update of the new snapshot epoch again.
    let r = store
        .write(&key(0), 0, 1, &w, per_snapshot as u32, 0)
        .unwrap();
    assert!(
        matches!(r, ShareStateRecord::Update { value: Some(ref v), .. } if v.snapshot_epoch == 1)
    );
    // With 0 updates per snapshot every write is a snapshot.
    assert!(matches!(
        store.write(&key(0), 0, 1, &w, 0, 0).unwrap(),
        ShareStateRecord::Snapshot { .. }
    ));
}

#[test]
fn a_write_without_state_is_a_first_snapshot() {
    let store = ShareStateStore::new();
    let w = write(3, vec![batch(3, 4, DELIVERY_STATE_ACKNOWLEDGED, 1)]);
    let r = store.write(&key(0), 1, 0, &w, 500, 0).unwrap();
    let ShareStateRecord::Snapshot { value: Some(v), .. } = &r else {
        panic!("{r:?}")
    };
    assert_eq!((v.snapshot_epoch, v.state_epoch, v.start_offset), (0, 1, 3));
    assert_eq!(v.state_batches.len(), 1);
}

#[test]
fn a_newer_reader_epoch_is_written_before_it_is_answered() {
    let mut store = ShareStateStore::new();
    let r = store.initialize(&key(0), 0, 0, 0).unwrap();
    commit(&mut store, 0, r);
    let read = store.read(&key(0), 3, 500, 0).unwrap();
    let record = read.leader_epoch_record.expect("a record for epoch 3");
    commit(&mut store, 1, record);
    assert_eq!(store.get(&key(0)).unwrap().leader_epoch, 3);
    assert!(store
        .read(&key(0), 3, 500, 0)
        .unwrap()
        .leader_epoch_record
        .is_none());
    // As in Kafka, a reader without an epoch is older than any.
    assert_eq!(
        store.read(&key(0), EPOCH_UNSET, 500, 0),
        Err(error_code::FENCED_LEADER_EPOCH)
    );
}

#[test]
fn delete_writes_tombstones_and_the_state_is_gone() {
    let mut store = ShareStateStore::new();
    let r = store.initialize(&key(0), 0, 0, 0).unwrap();
    commit(&mut store, 0, r);
    let tombstones = store.delete(&key(0)).unwrap();
    assert_eq!(tombstones.len(), 2);
    for (i, t) in tombstones.into_iter().enumerate() {
        commit(&mut store, 1 + i as i64, t);
    }
    assert!(store.get(&key(0)).is_none());
    assert!(!store.read(&key(0), 0, 500, 0).unwrap().initialized);
}

#[test]
fn the_prune_point_is_the_oldest_latest_snapshot() {
    let mut store = ShareStateStore::new();
    assert_eq!(store.prune_point(), 0);
    let r = store.initialize(&key(0), 0, 0, 0).unwrap();
    commit(&mut store, 0, r);
    let r = store.initialize(&key(1), 0, 0, 0).unwrap();
    commit(&mut store, 1, r);
    let w = write(0, vec![batch(0, 0, DELIVERY_STATE_ACKNOWLEDGED, 1)]);
    // Updates do not move it.
    let r = store.write(&key(0), 0, 0, &w, 1, 0).unwrap();
    commit(&mut store, 2, r);
    assert_eq!(store.prune_point(), 0);
    // A new snapshot of key 0 does; key 1's snapshot at 1 is now the oldest.
    let r = store.write(&key(0), 0, 0, &w, 1, 0).unwrap();
    assert!(matches!(r, ShareStateRecord::Snapshot { .. }));
    commit(&mut store, 3, r);
    assert_eq!(store.prune_point(), 1);
    // Deleting key 1 leaves key 0's snapshot.
    for t in store.delete(&key(1)).unwrap() {
        commit(&mut store, 4, t);
    }
    assert_eq!(store.prune_point(), 3);
    // Nothing left: everything replayed may go.
    for t in store.delete(&key(0)).unwrap() {
        commit(&mut store, 5, t);
    }
    assert_eq!(store.prune_point(), 6);
}

#[test]
fn a_load_from_the_prune_point_rebuilds_the_same_state() {
    let mut store = ShareStateStore::new();
    let mut log: Vec<ShareStateRecord> = Vec::new();
    let mut append = |store: &mut ShareStateStore, r: ShareStateRecord| {
        commit(store, log.len() as i64, r.clone());
        log.push(r);
    };
    for p in 0..3 {
        let r = store.initialize(&key(p), 0, 0, 0).unwrap();
        append(&mut store, r);
    }
    for i in 0..20i64 {
        let p = (i % 3) as i32;
        let w = write(i, vec![batch(i, i + 2, DELIVERY_STATE_ACKNOWLEDGED, 1)]);
        let r = store.write(&key(p), 0, 1, &w, 2, 0).unwrap();
        append(&mut store, r);
    }
    for t in store.delete(&key(2)).unwrap() {
        append(&mut store, t);
    }
    let from = store.prune_point();
    assert!(from > 0, "something can be pruned");
    let mut loaded = ShareStateStore::new();
    for (offset, r) in log.iter().enumerate().skip(from as usize) {
        loaded.replay(offset as i64, r);
    }
    for p in 0..3 {
        assert_eq!(
            loaded.get(&key(p)),
            store.get(&key(p)),
            "share partition {p}"
        );
    }
}

#[test]
fn hostile_batches_never_panic() {
    let mut store = ShareStateStore::new();
    let r = store.initialize(&key(0), 0, i64::MAX, 0).unwrap();
    commit(&mut store, 0, r);
    let w = write(
        i64::MIN,
        vec![
            batch(i64::MAX, i64::MIN, 0, 0),
            batch(i64::MIN, i64::MAX, 2, -1),
            batch(5, 5, 9, i16::MAX),
        ],
    );
    for n in 0..3 {
        let r = store.write(&key(0), 0, 0, &w, n, 0).unwrap();
        commit(&mut store, 1 + n as i64, r);
    }
    let _ = store.read(&key(0), 0, 500, 0).unwrap();
}
