//! The Wing-Gong-Lowe search, as Porcupine implements it (`checker.go`, `checkSingle`):
//! the history is a doubly linked list of call and return entries in time order; the
//! search walks it, linearizes the first call whose operation the model accepts in the
//! current state (lifting the call and its return out of the list), and backtracks when
//! it meets the return of an operation it has not linearized yet. A cache of (set of
//! linearized operations, model state) prunes every configuration already explored
//! (Lowe, "Testing for linearizability", 2017, section 3).
//!
//! Operations whose outcome is unknown (`info`) have a call entry but no return entry:
//! they may be linearized anywhere after their call, or never. The search succeeds when
//! every operation that returned is linearized.

use super::model::Model;
use std::sync::atomic::{AtomicBool, Ordering};

/// How much work the search may do before answering "unknown".
#[derive(Clone, Copy, Debug, Default)]
pub struct Budget<'a> {
    /// At most this many search steps (deterministic; `None` = no limit).
    pub max_steps: Option<u64>,
    /// Checked every few thousand steps: when set, the search stops with "unknown"
    /// (the CLI sets it from a timer thread for `--timeout`).
    pub cancel: Option<&'a AtomicBool>,
}

/// One operation of a partition, ready for the search.
pub(crate) struct Item<'a, I, O> {
    /// Index of the operation in the whole history.
    pub op: usize,
    pub input: &'a I,
    pub output: &'a O,
    /// Positions of the call and the return (`None`: never returned).
    pub call: usize,
    pub ret: Option<usize>,
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Linearizable,
    /// `prefix`: the longest linearizable prefix found (history operation indices, in
    /// linearization order); `stuck`: the operation whose return the search could not
    /// get past at that point.
    Illegal {
        prefix: Vec<usize>,
        stuck: Option<usize>,
    },
    Unknown,
}

const NIL: u32 = u32::MAX;

struct Bits(Vec<u64>);

impl Bits {
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }
}

/// A cache key borrowed for lookups: hashes and compares like the owned
/// `(Box<[u64]>, State)`, so a cache hit costs no allocation.
#[derive(Hash)]
struct Probe<'p, S>(&'p [u64], &'p S);

impl<S: Eq> hashbrown::Equivalent<(Box<[u64]>, S)> for Probe<'_, S> {
    fn equivalent(&self, key: &(Box<[u64]>, S)) -> bool {
        *self.0 == *key.0 && *self.1 == key.1
    }
}

/// A search over one partition that can be run in slices of steps, so that partitions
/// are searched round-robin: a cheap refutation of one key is found even when another
/// key's search is expensive (Porcupine gets the same from one goroutine per partition
/// and stopping them all at the first failure).
pub(crate) struct Searcher<'i, 'a, M: Model> {
    model: &'i M,
    items: &'i [Item<'a, M::Input, M::Output>],
    next: Vec<u32>,
    prev: Vec<u32>,
    node_item: Vec<u32>,
    node_is_ret: Vec<bool>,
    ret_node: Vec<u32>,
    remaining_returns: usize,
    linearized: Bits,
    // Only ever asked `contains`/`insert`, never iterated: its order cannot reach a
    // verdict, so a hash set (fast, allocation-free probes) keeps the search deterministic.
    cache: hashbrown::HashSet<(Box<[u64]>, M::State)>,
    /// The stack of linearized calls: (call node, state before it).
    calls: Vec<(u32, M::State)>,
    best: Vec<usize>,
    stuck: Option<usize>,
    state: M::State,
    entry: u32,
}

impl<'i, 'a, M: Model> Searcher<'i, 'a, M> {
    pub(crate) fn new(model: &'i M, items: &'i [Item<'a, M::Input, M::Output>]) -> Self {
        let n = items.len();
        // Entries: node 0 is the head sentinel; then calls and returns in time order.
        let mut order: Vec<(usize, bool, u32)> = Vec::with_capacity(2 * n);
        for (i, it) in items.iter().enumerate() {
            order.push((it.call, false, i as u32));
            if let Some(r) = it.ret {
                order.push((r, true, i as u32));
            }
        }
        // At equal times calls come before returns (Porcupine's `byTime`).
        order.sort_unstable();
        let len = order.len() + 1;
        let mut next = vec![NIL; len];
        let mut prev = vec![NIL; len];
        let mut node_item = vec![0u32; len];
        let mut node_is_ret = vec![false; len];
        let mut ret_node = vec![NIL; n];
        for (k, &(_, is_ret, item)) in order.iter().enumerate() {
            let node = k + 1;
            node_item[node] = item;
            node_is_ret[node] = is_ret;
            if is_ret {
                ret_node[item as usize] = node as u32;
            }
            prev[node] = (node - 1) as u32;
            next[node - 1] = node as u32;
        }
        let entry = next[0];
        Searcher {
            model,
            items,
            next,
            prev,
            node_item,
            node_is_ret,
            ret_node,
            remaining_returns: items.iter().filter(|it| it.ret.is_some()).count(),
            linearized: Bits(vec![0; n.div_ceil(64).max(1)]),
            cache: hashbrown::HashSet::new(),
            calls: Vec::new(),
            best: Vec::new(),
            stuck: None,
            state: model.init(),
            entry,
        }
    }

    fn lift(&mut self, node: u32) {
        let (p, x) = (self.prev[node as usize], self.next[node as usize]);
        self.next[p as usize] = x;
        if x != NIL {
            self.prev[x as usize] = p;
        }
    }

    fn unlift(&mut self, node: u32) {
        let (p, x) = (self.prev[node as usize], self.next[node as usize]);
        self.next[p as usize] = node;
        if x != NIL {
            self.prev[x as usize] = node;
        }
    }

    /// Searches for at most `slice` steps (adding them to `steps`); `None` if the
    /// search is not finished yet.
    pub(crate) fn run(&mut self, slice: u64, steps: &mut u64) -> Option<Outcome> {
        let mut left = slice;
        loop {
            if self.remaining_returns == 0 {
                return Some(Outcome::Linearizable);
            }
            if left == 0 {
                return None;
            }
            left -= 1;
            *steps += 1;
            let entry = self.entry;
            if entry != NIL && !self.node_is_ret[entry as usize] {
                let item = self.node_item[entry as usize] as usize;
                let it = &self.items[item];
                if let Some(new_state) = self.model.step(&self.state, it.input, it.output) {
                    self.linearized.set(item);
                    let probe = Probe(&self.linearized.0, &new_state);
                    if !self.cache.contains(&probe) {
                        let key = self.linearized.0.clone().into_boxed_slice();
                        self.cache.insert((key, new_state.clone()));
                        let old = std::mem::replace(&mut self.state, new_state);
                        self.calls.push((entry, old));
                        self.lift(entry);
                        let r = self.ret_node[item];
                        if r != NIL {
                            self.lift(r);
                            self.remaining_returns -= 1;
                        }
                        self.entry = self.next[0];
                        continue;
                    }
                    self.linearized.clear(item);
                }
                self.entry = self.next[entry as usize];
                continue;
            }
            // A return of an operation not linearized yet (or the end): backtrack.
            if self.calls.len() > self.best.len() || (self.best.is_empty() && self.stuck.is_none())
            {
                self.best = self
                    .calls
                    .iter()
                    .map(|(c, _)| self.items[self.node_item[*c as usize] as usize].op)
                    .collect();
                self.stuck =
                    (entry != NIL).then(|| self.items[self.node_item[entry as usize] as usize].op);
            }
            let Some((call, old_state)) = self.calls.pop() else {
                return Some(Outcome::Illegal {
                    prefix: std::mem::take(&mut self.best),
                    stuck: self.stuck,
                });
            };
            self.state = old_state;
            let item = self.node_item[call as usize] as usize;
            self.linearized.clear(item);
            let r = self.ret_node[item];
            if r != NIL {
                self.unlift(r);
                self.remaining_returns += 1;
            }
            self.unlift(call);
            self.entry = self.next[call as usize];
        }
    }
}

/// Steps per slice when several partitions are searched round-robin.
pub(crate) const SLICE: u64 = 1 << 14;

/// Searches every partition round-robin, a slice of steps each, and stops at the first
/// that is not linearizable. Returns the index of that partition with its outcome, or
/// `Linearizable` / `Unknown` for the whole.
pub(crate) fn check_partitions<M: Model>(
    model: &M,
    partitions: &[&[Item<'_, M::Input, M::Output>]],
    budget: &Budget<'_>,
    steps: &mut u64,
) -> (usize, Outcome) {
    let mut live: Vec<(usize, Searcher<'_, '_, M>)> = partitions
        .iter()
        .enumerate()
        .map(|(i, items)| (i, Searcher::new(model, items)))
        .collect();
    while !live.is_empty() {
        let mut k = 0;
        while k < live.len() {
            if budget.max_steps.is_some_and(|m| *steps >= m)
                || budget.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
            {
                return (0, Outcome::Unknown);
            }
            let slice = match budget.max_steps {
                Some(m) => SLICE.min(m - *steps),
                None => SLICE,
            };
            match live[k].1.run(slice, steps) {
                None => k += 1,
                Some(Outcome::Linearizable) => {
                    live.remove(k);
                }
                Some(other) => return (live[k].0, other),
            }
        }
    }
    (0, Outcome::Linearizable)
}
