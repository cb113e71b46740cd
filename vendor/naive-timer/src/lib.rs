//! naive-timer 0.2.0 (a minimal timer: a heap of deadlines with callbacks), vendored
//! with a compact heap. madsim keeps each timer until its deadline (there is no
//! cancellation), so a large simulation holds hundreds of thousands of them, and in
//! the original each heap entry was 32 bytes (a `Duration` and a boxed callback):
//! popping one walked the heap's deep levels with cache misses at each.
//!
//! Here the heap is two parallel arrays: the deadlines in nanoseconds (8 bytes each,
//! the only thing a sift reads) and the index of each one's callback in a slab
//! (freed slots are reused). The sifts are the standard library's `BinaryHeap`
//! algorithms (`push`: sift up; `pop`: move the last to the root, sift down to the
//! bottom, sift up) with the original's order (by deadline alone), so every push and
//! pop makes the same comparisons with the same outcomes and the callbacks run in the
//! same order, equal deadlines included: a simulation's schedule, and so its results,
//! do not change. The tests at the bottom check this against the original.
//!
//! Deadlines are kept to the nanosecond up to `u64::MAX` ns (about 584 years);
//! later ones are clamped to that, which no simulation reaches.

#![no_std]
#![deny(missing_docs)]

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::task::Waker;
use core::time::Duration;

extern crate alloc;

/// A naive timer.
#[derive(Default)]
pub struct Timer {
    /// The heap (earliest at index 0): each entry's deadline in ns...
    deadlines: Vec<u64>,
    /// ...and its callback's slot, moved together.
    slots: Vec<u32>,
    /// The callbacks, by slot; `None` is a free slot (listed in `free`).
    callbacks: Vec<Option<Entry>>,
    free: Vec<u32>,
}

/// The type of callback function.
type Callback = Box<dyn FnOnce(Duration) + Send + Sync + 'static>;

/// What a timer does when it expires: call its callback, or wake a task. A waker is
/// kept inline (no allocation of its own, nothing more to fetch when it fires): the
/// timers of madsim's `Sleep` are all wakers (tenure's addition; see `add_waker`).
enum Entry {
    Call(Callback),
    Wake(Waker),
}

impl Timer {
    /// Add a timer.
    ///
    /// The `callback` will be called on timer expired after `deadline`.
    pub fn add(
        &mut self,
        deadline: Duration,
        callback: impl FnOnce(Duration) + Send + Sync + 'static,
    ) {
        self.insert(deadline, Entry::Call(Box::new(callback)));
    }

    /// Add a timer that wakes `waker` when it expires: the same as `add` with a
    /// callback `move |_| waker.wake()`, in the same order, without the allocation.
    pub fn add_waker(&mut self, deadline: Duration, waker: Waker) {
        self.insert(deadline, Entry::Wake(waker));
    }

    fn insert(&mut self, deadline: Duration, entry: Entry) {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.callbacks[slot as usize] = Some(entry);
                slot
            }
            None => {
                let slot = u32::try_from(self.callbacks.len()).expect("at most 2^32 timers");
                self.callbacks.push(Some(entry));
                slot
            }
        };
        let deadline = nanos(deadline);
        self.deadlines.push(deadline);
        self.slots.push(slot);
        let last = self.deadlines.len() - 1;
        self.sift_up(0, last, deadline, slot);
    }

    /// Expire timers.
    ///
    /// Given the current time `now`, trigger and remove all expired timers.
    pub fn expire(&mut self, now: Duration) {
        let now_ns = nanos(now);
        while self.deadlines.first().is_some_and(|d| *d <= now_ns) {
            let slot = self.pop_root();
            let entry = self.callbacks[slot as usize].take().expect("a live slot");
            self.free.push(slot);
            self.prefetch_root();
            match entry {
                Entry::Call(callback) => callback(now),
                Entry::Wake(waker) => waker.wake(),
            }
        }
    }

    /// The waker of the next timer to expire, if that timer wakes one (tenure's
    /// addition: what will run next, to fetch its memory ahead).
    pub fn peek_waker(&self) -> Option<&Waker> {
        let slot = *self.slots.first()?;
        match self.callbacks[slot as usize].as_ref() {
            Some(Entry::Wake(waker)) => Some(waker),
            _ => None,
        }
    }

    /// Asks the processor for the next timer's entry (tenure's addition): it is read
    /// when that timer expires, at least one task's run from now, and in a large
    /// simulation it has left the caches since it was set.
    fn prefetch_root(&self) {
        #[cfg(target_arch = "x86_64")]
        if let Some(&slot) = self.slots.first() {
            let entry: *const Option<Entry> = &self.callbacks[slot as usize];
            // SAFETY: a prefetch never faults and changes no memory.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    entry.cast::<i8>(),
                );
            }
        }
    }

    /// Get next timer.
    pub fn next(&self) -> Option<Duration> {
        self.deadlines.first().map(|d| Duration::from_nanos(*d))
    }

    /// `BinaryHeap::sift_up` for the entry (`deadline`, `slot`) whose place is `pos`:
    /// it rises while it is due strictly earlier than its parent.
    fn sift_up(&mut self, start: usize, mut pos: usize, deadline: u64, slot: u32) {
        while pos > start {
            let parent = (pos - 1) / 2;
            if deadline >= self.deadlines[parent] {
                break;
            }
            self.deadlines[pos] = self.deadlines[parent];
            self.slots[pos] = self.slots[parent];
            pos = parent;
        }
        self.deadlines[pos] = deadline;
        self.slots[pos] = slot;
    }

    /// `BinaryHeap::pop` of a non-empty heap: returns the root's slot.
    fn pop_root(&mut self) -> u32 {
        let deadline = self.deadlines.pop().expect("not empty");
        let slot = self.slots.pop().expect("not empty");
        if self.deadlines.is_empty() {
            return slot;
        }
        let root = self.slots[0];
        self.sift_down_to_bottom(deadline, slot);
        root
    }

    /// `BinaryHeap::sift_down_to_bottom(0)` with (`deadline`, `slot`) in the hole at
    /// the root: the hole goes down to a leaf along the earlier child (the right one
    /// on a tie), then the entry rises from there.
    fn sift_down_to_bottom(&mut self, deadline: u64, slot: u32) {
        let end = self.deadlines.len();
        let mut pos = 0;
        let mut child = 1;
        while child <= end.saturating_sub(2) {
            child += usize::from(self.deadlines[child] >= self.deadlines[child + 1]);
            self.deadlines[pos] = self.deadlines[child];
            self.slots[pos] = self.slots[child];
            pos = child;
            child = 2 * pos + 1;
        }
        if child == end - 1 {
            self.deadlines[pos] = self.deadlines[child];
            self.slots[pos] = self.slots[child];
            pos = child;
        }
        self.sift_up(0, pos, deadline, slot);
    }
}

/// `d` in nanoseconds, clamped to `u64::MAX` (about 584 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use alloc::collections::BinaryHeap;
    use alloc::sync::Arc;
    use core::cmp::Ordering;
    use std::sync::Mutex;

    /// naive-timer 0.2.0's timer, as published: the reference for the order of callbacks.
    #[derive(Default)]
    struct Original {
        events: BinaryHeap<Event>,
    }

    struct Event {
        deadline: Duration,
        callback: Callback,
    }

    impl PartialEq for Event {
        fn eq(&self, other: &Self) -> bool {
            self.deadline.eq(&other.deadline)
        }
    }
    impl Eq for Event {}
    // As published (the reference must compare exactly as the original does).
    #[allow(clippy::non_canonical_partial_ord_impl)]
    impl PartialOrd for Event {
        fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
            other.deadline.partial_cmp(&self.deadline)
        }
    }
    impl Ord for Event {
        fn cmp(&self, other: &Event) -> Ordering {
            other.deadline.cmp(&self.deadline)
        }
    }

    impl Original {
        fn add(
            &mut self,
            deadline: Duration,
            callback: impl FnOnce(Duration) + Send + Sync + 'static,
        ) {
            self.events.push(Event {
                deadline,
                callback: Box::new(callback),
            });
        }
        fn expire(&mut self, now: Duration) {
            while let Some(t) = self.events.peek() {
                if t.deadline > now {
                    break;
                }
                let event = self.events.pop().unwrap();
                (event.callback)(now);
            }
        }
        fn next(&self) -> Option<Duration> {
            self.events.peek().map(|e| e.deadline)
        }
    }

    /// A waker that records its number when woken.
    struct Recorder {
        n: u64,
        fired: Arc<Mutex<Vec<(u64, Duration)>>>,
    }

    impl alloc::task::Wake for Recorder {
        fn wake(self: Arc<Self>) {
            self.fired.lock().unwrap().push((self.n, Duration::MAX));
        }
    }

    /// SplitMix64: a small deterministic generator for the test's schedule.
    struct Mix(u64);
    impl Mix {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    #[test]
    fn fires_in_the_original_order_ties_included() {
        for seed in 0..20 {
            let mut rng = Mix(seed);
            let mut original = Original::default();
            let mut compact = Timer::default();
            let fired_original = Arc::new(Mutex::new(Vec::new()));
            let fired_compact = Arc::new(Mutex::new(Vec::new()));
            let mut now = Duration::ZERO;
            let mut id = 0u64;
            for _ in 0..20_000 {
                if rng.below(3) == 0 {
                    // Advance like madsim: to the next deadline plus a little, or further.
                    assert_eq!(original.next(), compact.next());
                    now = match compact.next() {
                        Some(next) if rng.below(2) == 0 => next + Duration::from_nanos(50),
                        _ => now + Duration::from_nanos(rng.below(2_000)),
                    };
                    original.expire(now);
                    compact.expire(now);
                    assert_eq!(
                        *fired_original.lock().unwrap(),
                        *fired_compact.lock().unwrap()
                    );
                } else {
                    // Few distinct deadlines, so many ties; some already due.
                    let deadline = now + Duration::from_nanos(rng.below(40) * 100)
                        - Duration::from_nanos(rng.below(2) * now.as_nanos().min(100) as u64);
                    id += 1;
                    let (a, b, n) = (fired_original.clone(), fired_compact.clone(), id);
                    if rng.below(2) == 0 {
                        original.add(deadline, move |at| a.lock().unwrap().push((n, at)));
                        compact.add(deadline, move |at| b.lock().unwrap().push((n, at)));
                    } else {
                        // A waker (madsim's `Sleep`): as a callback that wakes it.
                        original.add(deadline, move |_| {
                            a.lock().unwrap().push((n, Duration::MAX));
                        });
                        let waker = Waker::from(Arc::new(Recorder { n, fired: b }));
                        compact.add_waker(deadline, waker);
                    }
                }
            }
            original.expire(Duration::MAX);
            compact.expire(Duration::MAX);
            assert_eq!(original.next(), None);
            assert_eq!(compact.next(), None);
            let fired = fired_compact.lock().unwrap();
            assert_eq!(fired.len() as u64, id, "every timer fired once");
            assert_eq!(*fired_original.lock().unwrap(), *fired);
        }
    }

    #[test]
    fn slots_are_reused() {
        let mut timer = Timer::default();
        for round in 0..100u64 {
            for k in 0..10u64 {
                timer.add(Duration::from_nanos(round * 100 + k), |_| {});
            }
            timer.expire(Duration::from_nanos(round * 100 + 99));
        }
        assert_eq!(timer.callbacks.len(), 10);
        assert!(timer.next().is_none());
    }
}
