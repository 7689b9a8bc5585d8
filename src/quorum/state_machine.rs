//! The metadata quorum's state machine: committed entries applied, in
//! order, to the metadata image, which a publisher task then publishes to
//! every shard, newest image first when several wait. The entry counts as
//! applied before its publication ends; a node answers a client for a
//! change only once its published offset has reached it (see
//! `StateMachine::published_offset`).
//!
//! Snapshots are images written as Kafka-style `.checkpoint` files in the
//! metadata partition's directory, named
//! `<end offset, 20 digits>-<epoch, 10 digits>.checkpoint` as KRaft names
//! them: record batches whose first record holds the snapshot's Raft
//! metadata (last log id and voters) and whose others are the metadata
//! records that rebuild the image.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;

use futures_lite::StreamExt;
use openraft::storage::{EntryResponder, RaftSnapshotBuilder, RaftStateMachine, Snapshot};
use openraft::EntryPayload;

use crate::log::batch::{self, BatchIter, CountRule};
use crate::log::checkpoint::write_atomically;
use crate::metadata::image::MetadataImage;
use crate::metadata::records::MetadataRecord;
use crate::quorum::types::{Applied, LogId, MetadataRaft, SnapshotMeta, StoredMembership};

/// Publishes an image to the node's shards; resolves once they serve it.
pub type Publish = Rc<dyn Fn(Arc<MetadataImage>) -> Pin<Box<dyn Future<Output = ()>>>>;

/// How often a stopping state machine looks whether the publication under
/// way has finished.
const PUBLISHER_STOP_POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// Key of the record that carries a snapshot's Raft metadata.
const SNAPSHOT_META_KEY: &[u8] = b"pinlog.snapshot.meta";
/// Image records per batch in a snapshot file.
const SNAPSHOT_RECORDS_PER_BATCH: usize = 1000;
/// Largest snapshot accepted from disk or a peer.
pub const SNAPSHOT_BYTES_MAX: usize = 256 * 1024 * 1024;

pub type SnapshotData = Vec<u8>;
type CurrentSnapshot = Snapshot<
    openraft::type_config::alias::CommittedLeaderIdOf<MetadataRaft>,
    u64,
    openraft::impls::BasicNode,
    SnapshotData,
>;

struct State {
    image: Arc<MetadataImage>,
    /// The offset of the newest image whose publication has finished: every
    /// shard of this node serves it (or a newer one). -1 before the first.
    published_offset: i64,
    /// Images applied but not yet published, oldest first.
    to_publish: VecDeque<Arc<MetadataImage>>,
    /// Whether the publisher task is running.
    publishing: bool,
    /// Set at shutdown: nothing more is published.
    publishing_stopped: bool,
    last_applied: Option<LogId>,
    membership: StoredMembership,
    snapshot: Option<CurrentSnapshot>,
}

/// The state machine; cloned handles share one state.
#[derive(Clone)]
pub struct StateMachine {
    state: Rc<RefCell<State>>,
    dir: PathBuf,
    publish: Publish,
}

fn other(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// `<end offset>-<epoch>.checkpoint`, as KRaft names snapshot files.
pub fn snapshot_file_name(last: &LogId) -> String {
    format!(
        "{:020}-{:010}.checkpoint",
        last.index + 1,
        last.leader_id.term
    )
}

fn parse_snapshot_file_name(name: &str) -> Option<(u64, u64)> {
    let stem = name.strip_suffix(".checkpoint")?;
    let (end, epoch) = stem.split_once('-')?;
    if end.len() != 20 || epoch.len() != 10 {
        return None;
    }
    Some((end.parse().ok()?, epoch.parse().ok()?))
}

/// The bytes of a snapshot file.
pub fn encode_snapshot(meta: &SnapshotMeta, image: &MetadataImage) -> io::Result<Vec<u8>> {
    let meta_bytes = postcard::to_stdvec(meta).map_err(other)?;
    let base = meta.last_log_id.map_or(0, |l| l.index as i64);
    let mut out = batch::build_batch(&batch::BatchSpec {
        base_offset: base,
        leader_epoch: meta.last_log_id.map_or(0, |l| l.leader_id.term as i32),
        base_timestamp: crate::shard::shard::now_ms(),
        records: &[(0, Some(SNAPSHOT_META_KEY), &meta_bytes[..])],
    });
    let values: Vec<bytes::Bytes> = image
        .to_records()
        .iter()
        .map(MetadataRecord::encode)
        .collect();
    for chunk in values.chunks(SNAPSHOT_RECORDS_PER_BATCH) {
        let specs: Vec<batch::RecordSpec> = chunk.iter().map(|v| (0i64, None, &v[..])).collect();
        out.extend_from_slice(&batch::build_batch(&batch::BatchSpec {
            base_offset: base,
            leader_epoch: 0,
            base_timestamp: 0,
            records: &specs,
        }));
    }
    Ok(out)
}

/// The Raft metadata and the image of a snapshot file.
pub fn decode_snapshot(bytes: &[u8]) -> io::Result<(SnapshotMeta, MetadataImage)> {
    if bytes.len() > SNAPSHOT_BYTES_MAX {
        return Err(other(format!(
            "metadata snapshot of {} bytes is over the limit of {SNAPSHOT_BYTES_MAX}",
            bytes.len()
        )));
    }
    let mut meta: Option<SnapshotMeta> = None;
    let mut records = Vec::new();
    for item in BatchIter::new(bytes, CountRule::Compacted) {
        let (position, h) = item.map_err(|(p, e)| other(format!("snapshot batch at {p}: {e}")))?;
        let batch_bytes = &bytes[position..position + h.size_bytes()];
        for r in batch::records(batch_bytes).map_err(other)? {
            let r = r.map_err(other)?;
            let value = r
                .value
                .ok_or_else(|| other("snapshot record without a value"))?;
            if meta.is_none() {
                if r.key != Some(SNAPSHOT_META_KEY) {
                    return Err(other("snapshot does not start with its metadata record"));
                }
                meta = Some(postcard::from_bytes(value).map_err(other)?);
                continue;
            }
            records
                .push(MetadataRecord::decode(bytes::Bytes::copy_from_slice(value)).map_err(other)?);
        }
    }
    let meta = meta.ok_or_else(|| other("empty snapshot"))?;
    let offset = meta.last_log_id.map_or(-1, |l| l.index as i64);
    Ok((meta, MetadataImage::from_records(offset, &records)))
}

impl StateMachine {
    /// Loads the newest snapshot in `dir` (the metadata partition's
    /// directory), if any. Startup only: reads the file with blocking calls.
    pub fn open(dir: &Path, publish: Publish) -> io::Result<StateMachine> {
        // Durably, like every directory pinlog creates: the log store
        // usually created it first, but a snapshot written into a
        // directory whose own name a power loss forgets is lost with it.
        crate::log::data_dir::create_dir_durably(dir)?;
        let mut newest: Option<(u64, PathBuf)> = None;
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some((end, _)) = name.to_str().and_then(parse_snapshot_file_name) else {
                continue;
            };
            if newest.as_ref().is_none_or(|(e, _)| end > *e) {
                newest = Some((end, entry.path()));
            }
        }
        let mut state = State {
            image: Arc::new(MetadataImage::empty()),
            published_offset: -1,
            to_publish: VecDeque::new(),
            publishing: false,
            publishing_stopped: false,
            last_applied: None,
            membership: StoredMembership::default(),
            snapshot: None,
        };
        if let Some((_, path)) = newest {
            let bytes = std::fs::read(&path)?;
            let (meta, image) =
                decode_snapshot(&bytes).map_err(|e| other(format!("{}: {e}", path.display())))?;
            state.image = Arc::new(image);
            state.last_applied = meta.last_log_id;
            state.membership = meta.last_membership.clone();
            state.snapshot = Some(Snapshot {
                meta,
                snapshot: bytes,
            });
        }
        Ok(StateMachine {
            state: Rc::new(RefCell::new(state)),
            dir: dir.to_path_buf(),
            publish,
        })
    }

    /// The image of every entry applied so far.
    pub fn image(&self) -> Arc<MetadataImage> {
        self.state.borrow().image.clone()
    }

    /// The offset of the newest image every shard of this node serves; it
    /// trails [`Self::image`] while a publication is under way.
    pub fn published_offset(&self) -> i64 {
        self.state.borrow().published_offset
    }

    /// Hands `image` to the publisher, which publishes the images it is
    /// given one at a time and in order, and records each as published once
    /// every shard serves it. Each image is published, none skipped: the
    /// shards judge what an image removed against the one before it, so a
    /// topic deleted and created again under its name in two images must be
    /// seen gone in between, or its old log would be kept for the new topic.
    ///
    /// The state machine does not wait for it. A publication opens and
    /// deletes partitions on every shard; awaited here, it held up every
    /// later entry's apply, and with it each controller decision (admin
    /// requests, heartbeats, ISR changes), behind this node's file work.
    /// Whoever answers a client for a change waits for
    /// [`Self::published_offset`] instead.
    fn publish_in_background(&self, image: Arc<MetadataImage>) {
        let start = {
            let mut s = self.state.borrow_mut();
            if s.publishing_stopped {
                return;
            }
            s.to_publish.push_back(image);
            !std::mem::replace(&mut s.publishing, true)
        };
        if !start {
            return;
        }
        let sm = self.clone();
        glommio::spawn_local(async move {
            loop {
                let next = {
                    let mut s = sm.state.borrow_mut();
                    match s.to_publish.pop_front() {
                        Some(image) if !s.publishing_stopped => image,
                        _ => {
                            s.publishing = false;
                            break;
                        }
                    }
                };
                let offset = next.offset;
                (sm.publish)(next).await;
                let mut s = sm.state.borrow_mut();
                s.published_offset = s.published_offset.max(offset);
            }
        })
        .detach();
    }

    /// Stops publishing (at shutdown, once the quorum applies nothing more)
    /// and waits, up to `wait`, for a publication under way to finish, so
    /// that no shard opens a partition after it closed its logs. Whether
    /// the publisher stopped in time.
    pub async fn stop_publishing(&self, wait: std::time::Duration) -> bool {
        {
            let mut s = self.state.borrow_mut();
            s.publishing_stopped = true;
            s.to_publish.clear();
        }
        let deadline = std::time::Instant::now() + wait;
        while self.state.borrow().publishing {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            glommio::timer::sleep(PUBLISHER_STOP_POLL).await;
        }
        true
    }

    /// Writes `bytes` as the snapshot `meta` names and deletes older ones.
    async fn store_snapshot(&self, meta: &SnapshotMeta, bytes: &[u8]) -> io::Result<()> {
        let Some(last) = meta.last_log_id else {
            return Ok(());
        };
        let name = snapshot_file_name(&last);
        write_atomically(self.dir.join(&name), bytes.to_vec())
            .await
            .map_err(other)?;
        let dir = self.dir.clone();
        crate::blocking_pool::run(move || remove_snapshots_before(&dir, last.index + 1)).await;
        Ok(())
    }
}

/// Deletes the snapshot files that end before `end`; a failure only leaves
/// a stale file behind, which the next snapshot removes.
fn remove_snapshots_before(dir: &Path, end: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if let Some((e, _)) = name.to_str().and_then(parse_snapshot_file_name) {
            if e < end {
                if let Err(err) = std::fs::remove_file(entry.path()) {
                    tracing::warn!(file = %entry.path().display(), "cannot remove an old metadata snapshot: {err}");
                }
            }
        }
    }
}

impl RaftSnapshotBuilder<MetadataRaft> for StateMachine {
    type SnapshotData = SnapshotData;

    async fn build_snapshot(&mut self) -> Result<CurrentSnapshot, io::Error> {
        let (meta, image) = self.snapshot_to_build();
        self.finish_build(meta, &image).await
    }
}

impl StateMachine {
    /// What a snapshot built now holds: the applied state.
    fn snapshot_to_build(&self) -> (SnapshotMeta, Arc<MetadataImage>) {
        let s = self.state.borrow();
        (
            SnapshotMeta {
                last_log_id: s.last_applied,
                last_membership: s.membership.clone(),
            },
            s.image.clone(),
        )
    }

    /// Writes the snapshot of `image` and makes it the current one, unless
    /// a newer one became current meanwhile. openraft builds snapshots in
    /// a task of their own, so a snapshot the leader sent can be installed
    /// while this one is written; replacing it would offer lagging
    /// followers an older snapshot than the log still covers.
    async fn finish_build(
        &self,
        meta: SnapshotMeta,
        image: &MetadataImage,
    ) -> Result<CurrentSnapshot, io::Error> {
        let bytes = encode_snapshot(&meta, image)?;
        self.store_snapshot(&meta, &bytes).await?;
        let snapshot = Snapshot {
            meta,
            snapshot: bytes,
        };
        let mut s = self.state.borrow_mut();
        let newer = s
            .snapshot
            .as_ref()
            .is_none_or(|current| current.meta.last_log_id <= snapshot.meta.last_log_id);
        if newer {
            s.snapshot = Some(snapshot.clone());
        }
        Ok(snapshot)
    }
}

impl RaftStateMachine<MetadataRaft> for StateMachine {
    type SnapshotData = SnapshotData;
    type SnapshotBuilder = StateMachine;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), io::Error> {
        let s = self.state.borrow();
        Ok((s.last_applied, s.membership.clone()))
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> Result<(), io::Error>
    where
        Strm: futures_lite::Stream<Item = Result<EntryResponder<MetadataRaft>, io::Error>> + Unpin,
    {
        let mut responders = Vec::new();
        let mut changed = false;
        while let Some(item) = entries.next().await {
            let (entry, responder) = item?;
            let index = entry.log_id.index;
            let mut s = self.state.borrow_mut();
            match &entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(proposal) => {
                    let mut image = (*s.image).clone();
                    for bytes in &proposal.records {
                        let record = MetadataRecord::decode(bytes::Bytes::copy_from_slice(bytes))
                            .map_err(|e| other(format!("metadata entry {index}: {e}")))?;
                        image.apply(index as i64, &record);
                    }
                    image.offset = index as i64;
                    s.image = Arc::new(image);
                    changed = true;
                }
                EntryPayload::Membership(m) => {
                    s.membership = StoredMembership::new(Some(entry.log_id), m.clone());
                }
            }
            s.last_applied = Some(entry.log_id);
            if let Some(r) = responder {
                responders.push((r, index));
            }
        }
        if changed {
            self.publish_in_background(self.image());
        }
        for (r, offset) in responders {
            r.send(Applied { offset });
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Self::SnapshotData,
    ) -> Result<(), io::Error> {
        let (stored_meta, image) = decode_snapshot(&snapshot)?;
        if stored_meta.last_log_id != meta.last_log_id {
            return Err(other(format!(
                "snapshot data ends at {:?} but its metadata says {:?}",
                stored_meta.last_log_id, meta.last_log_id
            )));
        }
        self.store_snapshot(meta, &snapshot).await?;
        let image = Arc::new(image);
        {
            let mut s = self.state.borrow_mut();
            s.image = image.clone();
            s.last_applied = meta.last_log_id;
            s.membership = meta.last_membership.clone();
            s.snapshot = Some(Snapshot {
                meta: meta.clone(),
                snapshot,
            });
        }
        self.publish_in_background(image);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<CurrentSnapshot>, io::Error> {
        Ok(self.state.borrow().snapshot.clone())
    }
}

#[cfg(test)]
mod tests {
    use openraft::storage::RaftStateMachine;

    use super::*;
    use crate::quorum::types::log_id;

    /// An image with offset `offset` and, when `with_topic`, one topic.
    fn image_at(offset: i64, with_topic: bool) -> Arc<MetadataImage> {
        let mut image = MetadataImage::empty();
        if with_topic {
            image.apply(
                offset,
                &MetadataRecord::Topic {
                    name: "t".into(),
                    topic_id: [offset as u8; 16],
                },
            );
        }
        image.offset = offset;
        Arc::new(image)
    }

    /// Images handed over while a publication is under way are each
    /// published, in order: a topic deleted and created again under its
    /// name must be seen gone in between. The published offset follows.
    #[test]
    fn every_image_is_published_in_order_while_the_state_machine_goes_on() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let dir = tempfile::tempdir().unwrap();
                let seen: Rc<RefCell<Vec<(i64, bool)>>> = Rc::default();
                let gate = Rc::new(std::cell::Cell::new(false));
                let publish: Publish = {
                    let (seen, gate) = (seen.clone(), gate.clone());
                    Rc::new(move |image: Arc<MetadataImage>| {
                        let (seen, gate) = (seen.clone(), gate.clone());
                        Box::pin(async move {
                            while !gate.get() {
                                glommio::timer::sleep(std::time::Duration::from_millis(1)).await;
                            }
                            seen.borrow_mut()
                                .push((image.offset, image.topic("t").is_some()));
                        })
                    })
                };
                let sm = StateMachine::open(dir.path(), publish).unwrap();
                // Created, deleted, created again, all while the first
                // publication waits at the gate.
                sm.publish_in_background(image_at(1, true));
                sm.publish_in_background(image_at(2, false));
                sm.publish_in_background(image_at(3, true));
                glommio::timer::sleep(std::time::Duration::from_millis(5)).await;
                assert_eq!(sm.published_offset(), -1, "nothing published yet");
                gate.set(true);
                for _ in 0..1000 {
                    if sm.published_offset() == 3 {
                        break;
                    }
                    glommio::timer::sleep(std::time::Duration::from_millis(1)).await;
                }
                assert_eq!(sm.published_offset(), 3);
                assert_eq!(*seen.borrow(), [(1, true), (2, false), (3, true)]);
            })
            .expect("executor")
            .join()
            .expect("test thread");
    }

    /// A stopping state machine waits for the publication under way and
    /// publishes nothing after it.
    #[test]
    fn stopping_waits_for_the_publication_under_way_and_drops_the_rest() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let dir = tempfile::tempdir().unwrap();
                let seen: Rc<RefCell<Vec<i64>>> = Rc::default();
                let publish: Publish = {
                    let seen = seen.clone();
                    Rc::new(move |image: Arc<MetadataImage>| {
                        let seen = seen.clone();
                        Box::pin(async move {
                            glommio::timer::sleep(std::time::Duration::from_millis(20)).await;
                            seen.borrow_mut().push(image.offset);
                        })
                    })
                };
                let sm = StateMachine::open(dir.path(), publish).unwrap();
                sm.publish_in_background(image_at(1, false));
                sm.publish_in_background(image_at(2, false));
                glommio::timer::sleep(std::time::Duration::from_millis(5)).await;
                assert!(sm.stop_publishing(std::time::Duration::from_secs(5)).await);
                assert_eq!(
                    *seen.borrow(),
                    [1],
                    "the one under way finished, the next never began"
                );
                sm.publish_in_background(image_at(3, false));
                glommio::timer::sleep(std::time::Duration::from_millis(50)).await;
                assert_eq!(*seen.borrow(), [1]);
                assert_eq!(sm.published_offset(), 1);
            })
            .expect("executor")
            .join()
            .expect("test thread");
    }

    /// openraft builds a snapshot in a task of its own, so a snapshot the
    /// leader sends can be installed while one is being written. The
    /// older one must not become the current snapshot after it.
    #[test]
    fn a_snapshot_built_before_an_install_does_not_replace_it() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let dir = tempfile::tempdir().unwrap();
                let publish: Publish = Rc::new(|_image| Box::pin(async {}));
                let mut sm = StateMachine::open(dir.path(), publish).unwrap();
                // The build captures the state before the install...
                let (building, image) = sm.snapshot_to_build();
                let installed = SnapshotMeta {
                    last_log_id: Some(log_id(2, 10)),
                    last_membership: StoredMembership::default(),
                };
                let bytes = encode_snapshot(&installed, &MetadataImage::empty()).unwrap();
                sm.install_snapshot(&installed, bytes).await.unwrap();
                // ...and finishes after it.
                let built = sm.finish_build(building, &image).await.unwrap();
                assert_eq!(built.meta.last_log_id, None);
                let current = sm
                    .get_current_snapshot()
                    .await
                    .unwrap()
                    .expect("a snapshot");
                assert_eq!(current.meta.last_log_id, Some(log_id(2, 10)));
            })
            .expect("executor")
            .join()
            .expect("test thread");
    }
}
