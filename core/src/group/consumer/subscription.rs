//! What a group subscribes to: topic names, regular expressions resolved
//! against the cluster's topics, and the hash of the subscribed topics'
//! metadata whose change starts a new group epoch.
//!
//! Kafka takes RE2/J syntax and matches a regex against the whole topic
//! name. The `regex` crate is RE2's dialect too (linear time, no
//! backreferences), so pinlog anchors the expression and matches whole
//! names the same way. Internal topics never match: a consumer that
//! subscribes to `.*` does not consume the coordinators' own logs.

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;

use crate::group::consumer::topics::TopicsImage;

/// Topics no regular expression matches (Kafka's internal topics).
pub const INTERNAL_TOPICS: &[&str] = &["__consumer_offsets", "__transaction_state"];

/// Compiles a subscription regex for whole-name matching; the error is the
/// message INVALID_REGULAR_EXPRESSION carries.
pub fn compile(regex: &str) -> Result<Regex, String> {
    Regex::new(&format!("^(?:{regex})$")).map_err(|e| {
        format!("SubscribedTopicRegex `{regex}` is not a valid regular expression: {e}")
    })
}

/// The topics of `image` that `regex` matches, sorted. An invalid regex
/// (which validation refuses before it gets here) matches nothing.
pub fn resolve(regex: &str, image: &TopicsImage) -> Vec<String> {
    let Ok(re) = compile(regex) else {
        return Vec::new();
    };
    image
        .topics
        .keys()
        .filter(|name| !INTERNAL_TOPICS.contains(&name.as_str()) && re.is_match(name))
        .cloned()
        .collect()
}

/// Counts of how many members subscribe to each name and each regex, kept
/// up to date as members change, so that the group's subscribed topics
/// are known without a walk over the members.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubscriptionCounts {
    pub names: BTreeMap<String, usize>,
    pub regexes: BTreeMap<String, usize>,
}

impl SubscriptionCounts {
    pub fn add(&mut self, names: &[String], regex: Option<&str>) {
        for n in names {
            *self.names.entry(n.clone()).or_default() += 1;
        }
        if let Some(r) = regex {
            *self.regexes.entry(r.to_string()).or_default() += 1;
        }
    }

    pub fn remove(&mut self, names: &[String], regex: Option<&str>) {
        fn dec(map: &mut BTreeMap<String, usize>, key: &str) {
            let n = map
                .get_mut(key)
                .expect("a subscription counted before it is removed");
            *n -= 1;
            if *n == 0 {
                map.remove(key);
            }
        }
        for n in names {
            dec(&mut self.names, n);
        }
        if let Some(r) = regex {
            dec(&mut self.regexes, r);
        }
    }

    /// Every topic name the group subscribes to, with `resolved` giving
    /// each regex's topics (a regex not yet resolved adds none).
    pub fn topic_names(&self, resolved: &BTreeMap<String, Vec<String>>) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self.names.keys().cloned().collect();
        for r in self.regexes.keys() {
            if let Some(topics) = resolved.get(r) {
                out.extend(topics.iter().cloned());
            }
        }
        out
    }
}

/// A 64-bit hash of the subscribed topics' metadata: each existing topic's
/// name, id, partition count and partition racks. 0 when none exists. A
/// new partition, a deleted or re-created topic, or a rack change gives a
/// new hash, and with it a new group epoch (KIP-1101's trigger).
///
/// FNV-1a over a length-prefixed encoding: stable across builds and
/// platforms, which a value persisted in a record must be. Kafka computes
/// its hash differently, so a Kafka coordinator loading pinlog's records
/// would see a changed hash and rebalance once, which is safe.
pub fn metadata_hash(names: &BTreeSet<String>, image: &TopicsImage) -> i64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    let mut any = false;
    let mut feed = |bytes: &[u8]| {
        for b in (bytes.len() as u32).to_be_bytes().iter().chain(bytes) {
            h ^= *b as u64;
            h = h.wrapping_mul(PRIME);
        }
    };
    for name in names {
        let Some(topic) = image.by_name(name) else {
            continue;
        };
        any = true;
        feed(name.as_bytes());
        feed(&topic.id);
        feed(&topic.num_partitions().to_be_bytes());
        for racks in &topic.partition_racks {
            let mut sorted: Vec<&String> = racks.iter().collect();
            sorted.sort();
            feed(&(sorted.len() as u32).to_be_bytes());
            for r in sorted {
                feed(r.as_bytes());
            }
        }
    }
    if !any {
        return 0;
    }
    // 0 means "nothing subscribed"; a real hash never takes that value.
    if h == 0 {
        1
    } else {
        h as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regexes_match_whole_names_and_skip_internal_topics() {
        let image = TopicsImage::default()
            .with_topic("orders", 1)
            .with_topic("orders-eu", 1)
            .with_topic("xorders", 1)
            .with_topic("__consumer_offsets", 50);
        assert_eq!(resolve("orders.*", &image), vec!["orders", "orders-eu"]);
        assert_eq!(resolve("orders", &image), vec!["orders"]);
        assert!(resolve(".*", &image).iter().all(|t| !t.starts_with("__")));
        assert!(compile("(unclosed").is_err());
        assert!(resolve("(unclosed", &image).is_empty());
    }

    #[test]
    fn the_hash_moves_with_partitions_racks_and_topic_ids() {
        let names: BTreeSet<String> = ["a".to_string()].into();
        let image = TopicsImage::default().with_topic("a", 2);
        let h = metadata_hash(&names, &image);
        assert_ne!(h, 0);
        assert_eq!(h, metadata_hash(&names, &image.clone()));
        let more = TopicsImage::default().with_topic("a", 3);
        assert_ne!(h, metadata_hash(&names, &more));
        let mut racked = TopicsImage::default();
        racked.add_topic("a", 2, &["r1"]);
        assert_ne!(h, metadata_hash(&names, &racked));
        let mut recreated = image.clone();
        recreated.topics.get_mut("a").unwrap().id[0] ^= 1;
        assert_ne!(h, metadata_hash(&names, &recreated));
        assert_eq!(metadata_hash(&names, &TopicsImage::default()), 0);
    }

    #[test]
    fn counts_give_the_subscribed_topic_names() {
        let mut c = SubscriptionCounts::default();
        c.add(&["a".into(), "b".into()], None);
        c.add(&["b".into()], Some("x.*"));
        let resolved: BTreeMap<String, Vec<String>> =
            [("x.*".to_string(), vec!["x1".to_string()])].into();
        let names: Vec<String> = c.topic_names(&resolved).into_iter().collect();
        assert_eq!(names, vec!["a", "b", "x1"]);
        c.remove(&["b".into()], Some("x.*"));
        assert!(c.regexes.is_empty());
        assert_eq!(c.names.get("b"), Some(&1));
    }
}
