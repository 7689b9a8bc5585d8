//! The broker's identity on disk: Kafka's `meta.properties` in the data
//! directory, holding `cluster.id` and `node.id`. A new directory gets a
//! fresh random cluster id; an existing one keeps its own.

use std::path::Path;

use crate::error::{LogError, LogResult};
use crate::log::checkpoint::write_atomically_blocking;
use crate::node::ids::random_uuid;

const META_PROPERTIES: &str = "meta.properties";

/// Reads `cluster.id` from `meta.properties`, creating the file if needed.
/// Blocking: runs once on the main thread before the shards start.
pub fn load_or_create(data_dir: &Path, node_id: i32) -> LogResult<String> {
    let path = data_dir.join(META_PROPERTIES);
    std::fs::create_dir_all(data_dir)
        .map_err(|e| LogError::io("create data dir", data_dir, -1, e))?;
    if let Ok(text) = std::fs::read_to_string(&path) {
        if let Some(id) = text
            .lines()
            .find_map(|l| l.strip_prefix("cluster.id="))
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            return Ok(id.to_string());
        }
    }
    let id = new_cluster_id();
    let text = format!("version=1\ncluster.id={id}\nnode.id={node_id}\n");
    write_atomically_blocking(&path, text.as_bytes())
        .map_err(|e| LogError::io("write meta.properties", &path, -1, e))?;
    Ok(id)
}

/// A random 16-byte id in Kafka's URL-safe base64 form (22 characters).
pub fn new_cluster_id() -> String {
    base64_url(&random_uuid())
}

fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_id_is_stable_once_written() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_or_create(dir.path(), 1).unwrap();
        assert_eq!(a.len(), 22);
        assert_eq!(load_or_create(dir.path(), 1).unwrap(), a);
    }
}
