//! The broker's identity on disk: Kafka's `meta.properties` in the data
//! directory, holding `cluster.id` and `node.id`. A new directory has
//! none: the node learns the quorum's cluster id when it registers and
//! writes it then (no format step). An existing one keeps its own, and a
//! quorum of another cluster refuses it.

use std::path::Path;

use crate::log::checkpoint::write_atomically;

const META_PROPERTIES: &str = "meta.properties";

/// Reads `cluster.id` from `meta.properties`; `None` for a new data
/// directory. Refuses a directory written by a node with another
/// `node.id`. Blocking: runs once on the main thread before the shards
/// start.
pub fn load(data_dir: &Path, node_id: i32) -> Result<Option<String>, String> {
    let path = data_dir.join(META_PROPERTIES);
    crate::log::data_dir::create_dir_durably(data_dir).map_err(|e| {
        format!(
            "cannot create the data directory {}: {e}",
            data_dir.display()
        )
    })?;
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let value = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if let Some(stored) = value("node.id=") {
        if stored != node_id.to_string() {
            return Err(format!(
                "{} belongs to node.id {stored}, but this node is configured with node.id {node_id}; set node.id to {stored}, or use another data directory",
                path.display()
            ));
        }
    }
    Ok(value("cluster.id="))
}

/// Writes `meta.properties` for a node that adopted the quorum's cluster
/// id.
pub async fn store(data_dir: &Path, cluster_id: &str, node_id: i32) -> Result<(), String> {
    let path = data_dir.join(META_PROPERTIES);
    let text = format!("version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n");
    write_atomically(path.clone(), text.into_bytes())
        .await
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_directory_has_no_id_and_another_node_id_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path(), 1).unwrap(), None);
        std::fs::write(
            dir.path().join(META_PROPERTIES),
            "version=1\ncluster.id=abc\nnode.id=1\n",
        )
        .unwrap();
        assert_eq!(load(dir.path(), 1).unwrap().as_deref(), Some("abc"));
        let e = load(dir.path(), 2).unwrap_err();
        assert!(e.contains("node.id 1") && e.contains("node.id 2"), "{e}");
    }
}
