//! DescribeLogDirs: the broker's one log directory and the size of each
//! partition's log in it.
//!
//! Kafka (`ReplicaManager.describeLogDirs`) answers one result per log
//! directory, named by its absolute path, listing the requested partitions
//! it holds (all of them for a null topic list); requested partitions the
//! broker does not hold are left out, and so are topics left with no
//! partition. `offset_lag` is how far the log end trails the high watermark,
//! 0 for a leader; there are no future logs (AlterReplicaLogDirs) in pinlog.
//!
//! Each shard reports the partitions it owns. The volume's total and usable
//! bytes (v4) come from statvfs(3), as Java's `FileStore` gets them.
//! pinlog takes a single partition offline after an I/O error, where Kafka
//! takes the whole directory offline; a directory holding an offline
//! partition is reported with KAFKA_STORAGE_ERROR and its online partitions.

use std::collections::{BTreeMap, HashSet};
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_log_dirs::*;
use crate::server::handlers::access::Access;
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// One local partition's log, as its owner reports it.
struct LogSize {
    tp: TopicPartition,
    size_bytes: u64,
    /// The log took an I/O error and serves nothing.
    offline: bool,
}

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DescribeLogDirsRequest,
    access: &Access<'_>,
) -> DescribeLogDirsResponse {
    if !access.allows_cluster(&BrokerState::of(shard).image(), matrix::DESCRIBE_LOG_DIRS) {
        return DescribeLogDirsResponse {
            error_code: error_code::CLUSTER_AUTHORIZATION_FAILED,
            ..Default::default()
        };
    }
    let wanted: Option<Arc<HashSet<TopicPartition>>> = req.topics.map(|topics| {
        Arc::new(
            topics
                .into_iter()
                .flat_map(|t| {
                    t.partitions
                        .into_iter()
                        .map(move |p| TopicPartition::new(t.topic.clone(), p))
                })
                .collect(),
        )
    });
    let mut sizes = Vec::new();
    let mut error_code = error_code::NONE;
    for s in 0..shard.shard_count() {
        let wanted = wanted.clone();
        let reported = shard
            .submit_to(s, move |shard| async move {
                local_sizes(&shard, wanted.as_deref()).await
            })
            .await;
        match reported {
            Ok(local) => sizes.extend(local),
            Err(e) => {
                tracing::error!("describe log dirs: shard {s} unreachable: {e}");
                error_code = error_code::KAFKA_STORAGE_ERROR;
            }
        }
    }
    if sizes.iter().any(|l| l.offline) {
        error_code = error_code::KAFKA_STORAGE_ERROR;
    }
    let data_dir = shard.config().data_dir.clone();
    let log_dir = log_dir_name(&data_dir);
    // statvfs is a blocking call: keep it off the shard thread.
    let dir = data_dir.clone();
    let (total_bytes, usable_bytes) =
        match crate::blocking_pool::run(move || volume_bytes(&dir)).await {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(dir = %data_dir.display(), "statvfs failed: {e}");
                (UNKNOWN_BYTES, UNKNOWN_BYTES)
            }
        };
    DescribeLogDirsResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        results: vec![DescribeLogDirsResult {
            error_code,
            log_dir,
            topics: group_by_topic(sizes),
            total_bytes,
            usable_bytes,
        }],
    }
}

/// The sizes of this shard's partitions that `wanted` names (all when
/// `None`).
async fn local_sizes(shard: &Shard, wanted: Option<&HashSet<TopicPartition>>) -> Vec<LogSize> {
    let mut out = Vec::new();
    for tp in shard.local_partitions() {
        if wanted.is_some_and(|w| !w.contains(&tp)) {
            continue;
        }
        let Some(log) = shard.local_log(&tp) else {
            continue;
        };
        let Ok(log) = log.read().await else {
            continue;
        };
        out.push(LogSize {
            size_bytes: log.size_bytes(),
            offline: log.is_offline(),
            tp,
        });
    }
    out
}

/// Online partitions by topic, both in order; offline ones are left out.
fn group_by_topic(sizes: Vec<LogSize>) -> Vec<DescribeLogDirsTopic> {
    let mut topics: BTreeMap<String, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
    for l in sizes.into_iter().filter(|l| !l.offline) {
        topics
            .entry(l.tp.topic)
            .or_default()
            .push(DescribeLogDirsPartition {
                partition_index: l.tp.partition,
                partition_size: i64::try_from(l.size_bytes).unwrap_or(i64::MAX),
                // A leader's log end never trails its high watermark.
                offset_lag: 0,
                is_future_key: false,
            });
    }
    topics
        .into_iter()
        .map(|(name, mut partitions)| {
            partitions.sort_by_key(|p| p.partition_index);
            DescribeLogDirsTopic { name, partitions }
        })
        .collect()
}

/// The total and usable bytes of the volume holding `dir`, as Java's
/// `FileStore.getTotalSpace` and `getUsableSpace` compute them (blocks
/// times the fragment size; usable counts only blocks free to unprivileged
/// users). Sizes beyond `i64::MAX` are reported as `i64::MAX`, as Kafka does.
fn volume_bytes(dir: &Path) -> io::Result<(i64, i64)> {
    let path = CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: an all-zero `statvfs` is a valid value of the plain C struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `st` is a valid out pointer; both
    // outlive the call.
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let fragment = st.f_frsize as u128;
    let clamp = |blocks: u128| i64::try_from(blocks * fragment).unwrap_or(i64::MAX);
    Ok((clamp(st.f_blocks as u128), clamp(st.f_bavail as u128)))
}

/// The directory's name in the answer: its absolute path, as Kafka's
/// `Path.toAbsolutePath` gives it (symlinks and `..` are not resolved).
fn log_dir_name(dir: &Path) -> String {
    std::path::absolute(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(topic: &str, partition: i32, size_bytes: u64, offline: bool) -> LogSize {
        LogSize {
            tp: TopicPartition::new(topic.to_string(), partition),
            size_bytes,
            offline,
        }
    }

    #[test]
    fn partitions_are_grouped_by_topic_in_order() {
        let topics = group_by_topic(vec![
            size("orders", 2, 300, false),
            size("audit", 0, 10, false),
            size("orders", 0, 100, false),
            size("broken", 0, 5, true),
        ]);
        let names: Vec<&str> = topics.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["audit", "orders"],
            "offline partitions are left out"
        );
        let orders: Vec<(i32, i64)> = topics[1]
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.partition_size))
            .collect();
        assert_eq!(orders, [(0, 100), (2, 300)]);
        assert!(topics[1]
            .partitions
            .iter()
            .all(|p| p.offset_lag == 0 && !p.is_future_key));
    }

    #[test]
    fn volume_bytes_are_plausible() {
        let dir = tempfile::tempdir().unwrap();
        let (total, usable) = volume_bytes(dir.path()).unwrap();
        assert!(total > 0, "{total}");
        assert!((0..=total).contains(&usable), "{usable} of {total}");
        assert!(volume_bytes(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn the_log_dir_is_reported_absolute() {
        let name = log_dir_name(Path::new("data"));
        assert!(Path::new(&name).is_absolute(), "{name}");
        assert!(name.ends_with("/data"), "{name}");
        assert_eq!(log_dir_name(Path::new("/srv/pinlog")), "/srv/pinlog");
    }
}
