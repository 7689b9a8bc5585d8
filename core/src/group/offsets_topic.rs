//! `__consumer_offsets`: which partition a group lives on. The server
//! creates the topic the first time a client looks for a coordinator
//! (`server/handlers/offsets_topic.rs`), as Kafka does.

pub use crate::metadata::OFFSETS_TOPIC;

/// Kafka's group-to-partition mapping: `Utils.abs(groupId.hashCode()) %
/// partitions`, with Java's UTF-16 string hash, so a group lands on the
/// same partition number it would in Kafka.
pub fn partition_for(group_id: &str, partitions: i32) -> i32 {
    let mut h: i32 = 0;
    for unit in group_id.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(unit as i32);
    }
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_land_on_kafkas_partitions() {
        assert_eq!(partition_for("", 50), 0);
        // Java: "my-group".hashCode() == 1042187312 (no overflow needed to
        // compute it by hand: it is the usual 31-polynomial).
        let h = "my-group"
            .encode_utf16()
            .fold(0i64, |h, c| (h * 31 + c as i64) as i32 as i64);
        assert_eq!(partition_for("my-group", 50), (h as i32).abs() % 50);
        // "polygenelubricants" hashes to Integer.MIN_VALUE in Java, whose
        // Utils.abs is 0.
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        for g in ["a", "group-1", "éè", "consumer-group-with-a-long-name"] {
            assert!((0..50).contains(&partition_for(g, 50)));
        }
    }
}
