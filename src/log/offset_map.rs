//! The log cleaner's key to offset map, in bounded memory (Kafka's
//! `SkimpyOffsetMap`).
//!
//! Keys are not stored, only a 128-bit hash of each: a slot is the hash and
//! the key's latest offset, 24 bytes, so the memory a clean may use
//! (`log.cleaner.dedupe.buffer.size`) bounds the number of keys it can map.
//! The table is open addressing with linear probing; it refuses new keys
//! once `log.cleaner.io.buffer.load.factor` of its slots are taken, and the
//! clean then stops at the last batch it mapped whole.
//!
//! Two records with different keys but equal hashes would make the cleaner
//! drop the older one as if overwritten. Kafka takes that risk with MD5;
//! here the hash is two SipHash-1-3 runs under random keys drawn for each
//! map, so a collision needs about 2^64 keys and cannot be aimed at by a
//! producer who does not know the keys.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// Bytes one slot takes: the 128-bit key hash and an offset.
pub const OFFSET_MAP_SLOT_BYTES: usize = std::mem::size_of::<Slot>();

/// A slot: the two hash words and the offset plus one, so that an all-zero
/// slot is empty and a new table is zeroed memory the kernel hands out page
/// by page as the map fills, not memory written up front.
type Slot = [u64; 3];

fn is_empty(slot: &Slot) -> bool {
    slot[2] == 0
}

/// Latest offset of each key hash, for one clean.
pub struct OffsetMap {
    slots: Vec<Slot>,
    entries: usize,
    max_entries: usize,
    hashers: [RandomState; 2],
    /// The last offset whose batch was mapped whole (Kafka's
    /// `latestOffset`); -1 when nothing was.
    latest_offset: i64,
}

impl OffsetMap {
    /// A map in at most `memory_bytes` that needs room for no more than
    /// `expected_keys` keys (a clean never maps more keys than the offsets
    /// it covers, so a small dirty range needs no large table).
    pub fn new(memory_bytes: u64, load_factor: f64, expected_keys: u64) -> OffsetMap {
        assert!(
            load_factor > 0.0 && load_factor < 1.0,
            "load factor {load_factor} must leave empty slots for probing"
        );
        let by_memory = (memory_bytes / OFFSET_MAP_SLOT_BYTES as u64).max(2);
        let by_need = ((expected_keys as f64 / load_factor).ceil() as u64).saturating_add(1);
        let slots = by_memory.min(by_need).max(2) as usize;
        let max_entries = ((slots as f64 * load_factor) as usize).clamp(1, slots - 1);
        OffsetMap {
            slots: vec![[0u64; 3]; slots],
            entries: 0,
            max_entries,
            hashers: [RandomState::new(), RandomState::new()],
            latest_offset: -1,
        }
    }

    fn hash(&self, key: &[u8]) -> [u64; 2] {
        let mut out = [0u64; 2];
        for (o, state) in out.iter_mut().zip(&self.hashers) {
            let mut h = state.build_hasher();
            h.write(key);
            *o = h.finish();
        }
        out
    }

    /// The slot holding `hash`, or the empty slot where it would go.
    fn find(&self, hash: [u64; 2]) -> usize {
        let n = self.slots.len();
        let mut i = (hash[0] % n as u64) as usize;
        loop {
            let s = &self.slots[i];
            if is_empty(s) || s[..2] == hash {
                return i;
            }
            i = (i + 1) % n;
        }
    }

    /// Records `offset` as the latest of `key`. Returns `false`, changing
    /// nothing, when the key is new and the map is full.
    pub fn put(&mut self, key: &[u8], offset: i64) -> bool {
        assert!(offset >= 0, "negative offset {offset} in the offset map");
        let hash = self.hash(key);
        let i = self.find(hash);
        if is_empty(&self.slots[i]) {
            if self.is_full() {
                return false;
            }
            self.entries += 1;
        }
        self.slots[i] = [hash[0], hash[1], offset as u64 + 1];
        true
    }

    /// The latest offset mapped for `key`.
    pub fn get(&self, key: &[u8]) -> Option<i64> {
        let s = &self.slots[self.find(self.hash(key))];
        (!is_empty(s)).then(|| s[2] as i64 - 1)
    }

    pub fn len(&self) -> usize {
        self.entries
    }
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }
    /// No new key fits any more.
    pub fn is_full(&self) -> bool {
        self.entries >= self.max_entries
    }
    /// How many keys the map can take.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }
    /// Fraction of the key capacity in use.
    pub fn utilization(&self) -> f64 {
        self.entries as f64 / self.max_entries as f64
    }
    pub fn latest_offset(&self) -> i64 {
        self.latest_offset
    }
    /// Moves the end of the mapped range forward (never back).
    pub fn update_latest_offset(&mut self, offset: i64) {
        self.latest_offset = self.latest_offset.max(offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_offsets_replace_earlier_ones() {
        let mut m = OffsetMap::new(1 << 20, 0.9, 100);
        assert!(m.put(b"a", 1));
        assert!(m.put(b"b", 2));
        assert!(m.put(b"a", 7));
        assert_eq!(m.get(b"a"), Some(7));
        assert_eq!(m.get(b"b"), Some(2));
        assert_eq!(m.get(b"c"), None);
        assert_eq!(m.get(b""), None);
        assert!(m.put(b"", 9), "an empty key is a key");
        assert_eq!(m.get(b""), Some(9));
        assert_eq!(m.len(), 3);
    }

    #[test]
    fn a_full_map_refuses_new_keys_but_updates_known_ones() {
        // Memory for 10 slots: 9 keys at load factor 0.9.
        let mut m = OffsetMap::new(10 * OFFSET_MAP_SLOT_BYTES as u64, 0.9, u64::MAX);
        assert_eq!(m.max_entries(), 9);
        for i in 0..9u32 {
            assert!(m.put(&i.to_be_bytes(), i as i64));
        }
        assert!(m.is_full());
        assert!(!m.put(b"new", 100));
        assert_eq!(m.get(b"new"), None);
        assert!(m.put(&3u32.to_be_bytes(), 300));
        assert_eq!(m.get(&3u32.to_be_bytes()), Some(300));
        for i in 0..9u32 {
            let want = if i == 3 { 300 } else { i as i64 };
            assert_eq!(m.get(&i.to_be_bytes()), Some(want));
        }
    }

    #[test]
    fn the_table_is_sized_by_need_within_the_memory_bound() {
        let small = OffsetMap::new(128 << 20, 0.9, 10);
        assert!(small.slots.len() <= 13, "{}", small.slots.len());
        assert!(small.max_entries() >= 10);
        let bounded = OffsetMap::new(1 << 20, 0.9, u64::MAX);
        assert_eq!(bounded.slots.len(), (1 << 20) / OFFSET_MAP_SLOT_BYTES);
    }

    #[test]
    fn many_keys_all_found() {
        let mut m = OffsetMap::new(8 << 20, 0.9, 100_000);
        for i in 0..100_000u64 {
            assert!(m.put(format!("key-{i}").as_bytes(), i as i64));
        }
        for i in 0..100_000u64 {
            assert_eq!(m.get(format!("key-{i}").as_bytes()), Some(i as i64));
        }
        m.update_latest_offset(5);
        m.update_latest_offset(3);
        assert_eq!(m.latest_offset(), 5);
    }
}
