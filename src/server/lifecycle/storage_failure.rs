//! What a broker of a cluster does when its disk fails: it stops.
//!
//! An I/O error takes a partition offline (`LogError::Offline` for every
//! later call), and a full or failing disk soon takes every partition of the
//! data directory with it. A single broker keeps serving the partitions that
//! still work. A broker of a cluster instead exits, as Kafka does when its
//! last log directory fails: its replicas on healthy disks elsewhere can then
//! lead (the controller fences a closed port at once), where a broker that
//! stays registered would keep its leaderships and answer every write with
//! KAFKA_STORAGE_ERROR. Acknowledged records are already in the files, so
//! the exit loses nothing; the next start runs recovery, and the broker
//! rejoins once the disk has room again.

use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use crate::node::stop::StopHandle;
use crate::shard::shard::Shard;

/// Exit status after a storage failure (EX_IOERR).
pub const EXIT_STORAGE_FAILURE: i32 = 74;
/// How often a shard looks at its count of failed logs: a cheap read of a
/// counter, so that a failing broker is gone (and fenced) within this.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Exits the process once any log of `shard` went offline from an I/O
/// error, or a checkpoint or the metadata log failed to write, until `stop`.
pub async fn exit_on_storage_failure(shard: Rc<Shard>, data_dir: &Path, stop: StopHandle) {
    let failures = shard.storage_failures();
    while !stop.is_requested() {
        crate::ticks::sleep_to_next_tick(POLL_INTERVAL).await;
        if failures.get() > 0 {
            tracing::error!(
                shard = shard.id(),
                data_dir = %data_dir.display(),
                "{} storage error(s): a partition taken offline, or a checkpoint or the \
                 metadata log that could not be written (see the error above; \"No space \
                 left on device\" is a full disk): a broker of a cluster stops so that replicas \
                 on healthy disks take over its leaderships. Free space or repair the disk \
                 under {}, then start the broker again: it recovers its logs and catches up. \
                 Exiting with status {EXIT_STORAGE_FAILURE}",
                failures.get(),
                data_dir.display()
            );
            std::process::exit(EXIT_STORAGE_FAILURE);
        }
    }
}
