//! A node's timers: each set timer's deadline on the node's monotonic clock and its
//! scheduling order, in the timers' order (as the `BTreeMap` they replace kept them).

use smallvec::SmallVec;
use tenure_core::LocalTime;

/// A timer's deadline on the node's monotonic clock, and its scheduling order.
pub type Deadline = (LocalTime, u64);

/// Sorted by timer, up to two kept inline in the node's slot. Most nodes have one or
/// two timers set (a Raft follower its election timer, a leader also its heartbeat):
/// a `BTreeMap` kept even one in a node of its own, one more cache line (from another
/// allocation) for every delivery to read. Same contents, same order of iteration.
pub struct Timers<T> {
    entries: SmallVec<[(T, Deadline); 2]>,
}

impl<T: Ord> Timers<T> {
    pub fn new() -> Self {
        Timers {
            entries: SmallVec::new(),
        }
    }

    fn find(&self, timer: &T) -> Result<usize, usize> {
        self.entries.binary_search_by(|(k, _)| k.cmp(timer))
    }

    /// Sets `timer` (a timer already set keeps its key and takes the new deadline, as
    /// `BTreeMap::insert` does).
    pub fn insert(&mut self, timer: T, deadline: Deadline) {
        match self.find(&timer) {
            Ok(i) => self.entries[i].1 = deadline,
            Err(i) => self.entries.insert(i, (timer, deadline)),
        }
    }

    pub fn remove(&mut self, timer: &T) -> Option<Deadline> {
        let i = self.find(timer).ok()?;
        Some(self.entries.remove(i).1)
    }

    pub fn contains_key(&self, timer: &T) -> bool {
        self.find(timer).is_ok()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// In the timers' order.
    pub fn iter(&self) -> impl Iterator<Item = (&T, &Deadline)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use tenure_core::{Rng, SplitMix64};

    /// The same operations on the `BTreeMap` the timers were kept in, and on `Timers`:
    /// the same answers and the same contents in the same order after each.
    #[test]
    fn behaves_as_the_btree_map_it_replaced() {
        for seed in 0..50 {
            let mut rng = SplitMix64(seed);
            let mut map: BTreeMap<u8, Deadline> = BTreeMap::new();
            let mut timers: Timers<u8> = Timers::new();
            for step in 0..500u64 {
                let key = rng.range_inclusive(0, 5) as u8;
                match rng.range_inclusive(0, 9) {
                    0..=4 => {
                        let d = (LocalTime(rng.range_inclusive(0, 1000) as i64), step);
                        map.insert(key, d);
                        timers.insert(key, d);
                    }
                    5..=7 => assert_eq!(map.remove(&key), timers.remove(&key)),
                    8 => assert_eq!(map.contains_key(&key), timers.contains_key(&key)),
                    _ => {
                        if rng.range_inclusive(0, 9) == 0 {
                            map.clear();
                            timers.clear();
                        }
                    }
                }
                let a: Vec<(u8, Deadline)> = map.iter().map(|(k, v)| (*k, *v)).collect();
                let b: Vec<(u8, Deadline)> = timers.iter().map(|(k, v)| (*k, *v)).collect();
                assert_eq!(a, b, "seed {seed} step {step}");
            }
        }
    }
}
