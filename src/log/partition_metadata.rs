//! `partition.metadata`: which topic a partition directory belongs to.
//!
//! Kafka writes this file in every partition directory, in this format:
//! ```text
//! version: 0
//! topic_id: <the topic id as Kafka prints a Uuid: base64url, unpadded>
//! ```
//! A directory's name says only the topic's *name*. A topic deleted and
//! created again under the same name while a broker was down leaves that
//! broker with a directory of the old topic under the new topic's name;
//! only the id tells them apart. Such a directory is a stray: it must not
//! be served (its records were never the new topic's) and is deleted
//! (Kafka's `LogManager` finds it among its stray replicas, renames it
//! with a `-stray` suffix and deletes it).
//!
//! The file is written atomically and durably (temporary file, fsync,
//! rename, fsync of the directory) before the partition takes a role, so a
//! power loss leaves either no file or the whole of it.

use std::path::Path;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use crate::error::LogResult;
use crate::log::checkpoint;

/// The file's name in a partition directory (Kafka's).
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";
/// The only version Kafka writes and reads.
const FORMAT_VERSION: u32 = 0;
/// A topic id: the 16 bytes of a Kafka Uuid.
pub type TopicId = [u8; 16];

/// A topic id as Kafka prints it (`Uuid.toString`): base64url, unpadded.
pub fn format_topic_id(id: &TopicId) -> String {
    URL_SAFE_NO_PAD.encode(id)
}

/// The file's contents for `id`.
pub fn encode(id: &TopicId) -> String {
    format!(
        "version: {FORMAT_VERSION}\ntopic_id: {}\n",
        format_topic_id(id)
    )
}

/// The topic id in a file's contents. Kafka's reader wants exactly the two
/// lines, in this order, with version 0.
pub fn decode(text: &str) -> Result<TopicId, String> {
    let mut lines = text.lines();
    let version = field(lines.next(), "version")?;
    if version != FORMAT_VERSION.to_string() {
        return Err(format!("unsupported version {version:?}"));
    }
    let id = field(lines.next(), "topic_id")?;
    let bytes = URL_SAFE_NO_PAD
        .decode(id)
        .map_err(|e| format!("topic_id {id:?} is not base64url: {e}"))?;
    let id: TopicId = bytes
        .try_into()
        .map_err(|b: Vec<u8>| format!("topic_id has {} bytes, not 16", b.len()))?;
    if let Some(extra) = lines.find(|l| !l.trim().is_empty()) {
        return Err(format!("unexpected line {extra:?}"));
    }
    Ok(id)
}

fn field<'a>(line: Option<&'a str>, key: &str) -> Result<&'a str, String> {
    let line = line.ok_or_else(|| format!("missing the {key} line"))?;
    line.strip_prefix(key)
        .and_then(|rest| rest.strip_prefix(':'))
        .map(str::trim)
        .ok_or_else(|| format!("expected {key}: ..., found {line:?}"))
}

/// What a partition directory's recorded topic id means for the topic id
/// the metadata image gives its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicIdCheck {
    /// The directory belongs to the image's topic.
    Matches,
    /// No id recorded: a directory an older pinlog wrote, or one created
    /// before the id was known. It is the image's topic (an older pinlog
    /// never checked ids, so nothing better is known) and gets the file.
    /// Kafka treats a missing file as stray; pinlog's directories from
    /// before the file existed would all be deleted on upgrade if it did.
    Unrecorded,
    /// The directory belongs to another topic of the same name, deleted
    /// since: a stray, not to be served, to be deleted.
    Stray { on_disk: TopicId },
}

/// The decision, pure: `on_disk` is the directory's recorded topic id.
pub fn check(on_disk: Option<TopicId>, image: &TopicId) -> TopicIdCheck {
    match on_disk {
        None => TopicIdCheck::Unrecorded,
        Some(id) if id == *image => TopicIdCheck::Matches,
        Some(id) => TopicIdCheck::Stray { on_disk: id },
    }
}

/// Reads the topic id recorded in `dir`; `None` when there is no file.
/// A file that does not parse (only something outside pinlog could write
/// one: pinlog writes it atomically) counts as none and is logged, so the
/// image's id is written over it: refusing to open the partition would
/// take it offline for good.
///
/// Blocks the calling thread: only for a partition's open, like the
/// directory listing there.
pub fn read_blocking(dir: &Path) -> LogResult<Option<TopicId>> {
    let path = dir.join(PARTITION_METADATA_FILE);
    let Some(bytes) = checkpoint::read_checkpoint_file(&path)? else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&bytes);
    match decode(&text) {
        Ok(id) => Ok(Some(id)),
        Err(reason) => {
            tracing::warn!(
                path = %path.display(),
                "ignoring an unreadable {PARTITION_METADATA_FILE} ({reason}); the topic id \
                 of the metadata image is written over it"
            );
            Ok(None)
        }
    }
}

/// Records `id` in `dir` durably: temporary file, fsync, rename, fsync of
/// the directory.
pub async fn write(dir: &Path, id: &TopicId) -> LogResult<()> {
    let path = dir.join(PARTITION_METADATA_FILE);
    checkpoint::write_atomically(path, encode(id).into_bytes()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: TopicId = [
        0x3b, 0x1f, 0x52, 0x0e, 0x8a, 0x55, 0x4c, 0x0d, 0x9e, 0x61, 0x0f, 0xfa, 0x10, 0x2c, 0x77,
        0xe4,
    ];

    #[test]
    fn the_file_is_kafkas_format_and_reads_back() {
        let text = encode(&ID);
        // Kafka's Uuid.toString of these bytes: 22 base64url characters.
        assert_eq!(text, "version: 0\ntopic_id: Ox9SDopVTA2eYQ_6ECx35A\n");
        assert_eq!(decode(&text), Ok(ID));
    }

    #[test]
    fn a_file_kafka_wrote_reads() {
        // Kafka's Uuid.ONE_UUID (fifteen zero bytes, then 1) as its
        // toString prints it.
        let id = decode("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n").unwrap();
        assert_eq!(id, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn malformed_files_are_refused() {
        for bad in [
            "",
            "version: 1\ntopic_id: Ox9SDopVTA2eYQ_6ECx35A\n",
            "topic_id: Ox9SDopVTA2eYQ_6ECx35A\nversion: 0\n",
            "version: 0\n",
            "version: 0\ntopic_id: Ox9SDopVTA2eYQ\n",
            "version: 0\ntopic_id: Ox9SDopVTA2eYQ_6ECx35A\nextra: 1\n",
            "version: 0\ntopic_id: !!!!!!!!!!!!!!!!!!!!!!\n",
        ] {
            assert!(decode(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_directory_of_another_topic_id_is_a_stray_and_one_without_the_file_is_kept() {
        let other: TopicId = [9; 16];
        assert_eq!(check(Some(ID), &ID), TopicIdCheck::Matches);
        assert_eq!(check(None, &ID), TopicIdCheck::Unrecorded);
        assert_eq!(
            check(Some(other), &ID),
            TopicIdCheck::Stray { on_disk: other }
        );
    }

    #[test]
    fn the_file_is_written_durably_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().to_path_buf();
        assert_eq!(read_blocking(&dir).unwrap(), None);
        std::fs::write(dir.join(PARTITION_METADATA_FILE), "garbage").unwrap();
        assert_eq!(
            read_blocking(&dir).unwrap(),
            None,
            "unreadable counts as none"
        );
        let written = dir.clone();
        glommio::LocalExecutorBuilder::default()
            .make()
            .unwrap()
            .run(async move { write(&written, &ID).await.unwrap() });
        assert_eq!(read_blocking(&dir).unwrap(), Some(ID));
        let tmp = format!(
            "{PARTITION_METADATA_FILE}{}",
            checkpoint::CHECKPOINT_TMP_SUFFIX
        );
        assert!(!dir.join(tmp).exists());
    }
}
