//! A group coordinator's load of its `__consumer_offsets` partition, against
//! a real partition log: what it reads back decides where groups resume.

use crate::common::run;
use bytes::{Bytes, BytesMut};
use glommio::sync::RwLock;
use pinlog::config::LogConfig;
use pinlog::group::offsets_log::read_latest_values;
use pinlog::group::offsets_topic::OFFSETS_TOPIC;
use pinlog::group::schema::{OffsetValue, RecordKey};
use pinlog::log::batch::{build_batch, BatchSpec, RecordSpec};
use pinlog::log::partition_log::{OpenParams, PartitionLog};
use pinlog::topic_partition::TopicPartition;

fn commit_batch(key: &Bytes, offset: i64) -> BytesMut {
    let value = OffsetValue {
        offset,
        leader_epoch: -1,
        metadata: String::new(),
        commit_timestamp: 1_000,
        expire_timestamp: -1,
    }
    .encode();
    let records: Vec<RecordSpec<'_>> = vec![(0, Some(&key[..]), &value[..])];
    BytesMut::from(
        &build_batch(&BatchSpec {
            base_offset: 0,
            leader_epoch: -1,
            base_timestamp: 1_000,
            records: &records,
        })[..],
    )
}

/// Bug 5 of tests/README.md: a new coordinator whose HW still lags its log
/// (a new leader's HW is its checkpoint's until the followers fetch again)
/// loaded only up to the HW, and the group resumed from an older commit.
#[test]
fn a_load_reads_commits_past_the_high_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new(OFFSETS_TOPIC, 7);
        let params = OpenParams {
            recovery_point: 0,
            log_start_offset: 0,
            clean_shutdown: false,
            now_ms: 1_000,
        };
        let mut log = PartitionLog::open(&path, tp.clone(), LogConfig::default(), params, None)
            .await
            .unwrap();
        let key = RecordKey::Offset {
            group: "g".into(),
            topic: "t".into(),
            partition: 0,
        };
        let encoded = key.encode();
        for offset in [5, 9, 12] {
            log.append_as_leader(commit_batch(&encoded, offset), 3, None, 1_000)
                .await
                .unwrap();
        }
        // Only the first commit is below the HW.
        log.set_high_watermark(1);
        assert_eq!(log.high_watermark(), 1);
        let log = RwLock::new(log);
        let loaded = read_latest_values(&log, &tp).await.unwrap();
        assert_eq!(loaded.records, 3);
        assert_eq!(loaded.order, vec![key.clone()]);
        let value = loaded.latest[&key].clone().expect("not a tombstone");
        assert_eq!(OffsetValue::decode(value).unwrap().offset, 12);
        log.into_inner().unwrap().close().await.unwrap();
    });
}
