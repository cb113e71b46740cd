//! tenure-pool: the one way tenure runs many seeds in parallel (`tenure fuzz`, `compare`,
//! the experiments).
//!
//! Seeds are handed out in increasing order to `jobs` worker threads; each result comes
//! back to the calling thread *in seed order*, whichever worker finished first, so what a
//! caller prints or saves is the same for any number of jobs. Nothing of a seed is kept
//! after it is handed over (constant memory per seed), except the few results that
//! finished early and wait for a slower, earlier seed.
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use tenure_pool::{run, Flow};
//! let mut squares = Vec::new();
//! let summary = run(0..5, 2, &AtomicBool::new(false), |seed| seed * seed, |seed, sq| {
//!     squares.push((seed, sq));
//!     Flow::Continue
//! });
//! assert_eq!(squares, [(0, 0), (1, 1), (2, 4), (3, 9), (4, 16)]);
//! assert_eq!((summary.handed_over, summary.stopped), (5, false));
//! ```

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;

/// What the caller wants after a result: more, or no more seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// Start no new seed; results of seeds already running are dropped.
    Halt,
}

/// How a [`run`] ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Results handed to `emit`.
    pub handed_over: u64,
    /// True when not every seed of the range was handed over (`stop` was set, or `emit`
    /// halted).
    pub stopped: bool,
}

/// Runs `work(seed)` for every seed of `seeds` on `jobs` threads (at least one) and calls
/// `emit(seed, result)` on the calling thread in seed order.
///
/// `stop` (Ctrl-C, a time limit) ends the run early: no new seed starts, and the results
/// that did finish are still handed over, in order, with gaps where a seed never ran.
/// `emit` returning [`Flow::Halt`] ends it too, without handing over anything more.
/// A panic in `work` is the caller's to catch (`std::panic::catch_unwind` inside it);
/// one that escapes is re-raised here once the other workers have stopped.
pub fn run<T, W, E>(
    seeds: Range<u64>,
    jobs: usize,
    stop: &AtomicBool,
    work: W,
    mut emit: E,
) -> Summary
where
    T: Send,
    W: Fn(u64) -> T + Sync,
    E: FnMut(u64, T) -> Flow,
{
    let next = AtomicU64::new(seeds.start);
    let halt = AtomicBool::new(false);
    let jobs = jobs.max(1);
    let mut summary = Summary::default();
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<(u64, T)>();
        for _ in 0..jobs {
            let tx = tx.clone();
            let (next, halt, work) = (&next, &halt, &work);
            scope.spawn(move || loop {
                if stop.load(Ordering::SeqCst) || halt.load(Ordering::SeqCst) {
                    break;
                }
                let seed = next.fetch_add(1, Ordering::SeqCst);
                if seed >= seeds.end || seed < seeds.start {
                    break; // also stops at u64 wrap-around
                }
                if tx.send((seed, work(seed))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut pending: BTreeMap<u64, T> = BTreeMap::new();
        let mut expected = seeds.start;
        for (seed, result) in rx {
            if halt.load(Ordering::SeqCst) {
                continue; // drain and drop
            }
            pending.insert(seed, result);
            while let Some(result) = pending.remove(&expected) {
                summary.handed_over += 1;
                let flow = emit(expected, result);
                expected = expected.wrapping_add(1);
                if flow == Flow::Halt {
                    halt.store(true, Ordering::SeqCst);
                    break;
                }
            }
        }
        if !halt.load(Ordering::SeqCst) {
            // Stopped early: what finished, in order, with gaps.
            for (seed, result) in std::mem::take(&mut pending) {
                summary.handed_over += 1;
                if emit(seed, result) == Flow::Halt {
                    break;
                }
            }
        }
    });
    summary.stopped = summary.handed_over < seeds.end.saturating_sub(seeds.start);
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn results_come_back_in_seed_order_whatever_the_jobs() {
        for jobs in [1, 2, 3, 8] {
            let mut seen = Vec::new();
            // Later seeds finish first: the order must still be by seed.
            let summary = run(
                10..30,
                jobs,
                &AtomicBool::new(false),
                |seed| {
                    std::thread::yield_now();
                    seed * 2
                },
                |seed, v| {
                    seen.push((seed, v));
                    Flow::Continue
                },
            );
            let want: Vec<(u64, u64)> = (10..30).map(|s| (s, s * 2)).collect();
            assert_eq!(seen, want, "jobs {jobs}");
            assert_eq!(
                summary,
                Summary {
                    handed_over: 20,
                    stopped: false
                }
            );
        }
    }

    #[test]
    fn halt_stops_handing_over_at_once() {
        let mut seen = Vec::new();
        let summary = run(
            0..1000,
            2,
            &AtomicBool::new(false),
            |s| s,
            |s, _| {
                seen.push(s);
                if s == 4 {
                    Flow::Halt
                } else {
                    Flow::Continue
                }
            },
        );
        assert_eq!(seen, [0, 1, 2, 3, 4]);
        assert_eq!(
            summary,
            Summary {
                handed_over: 5,
                stopped: true
            }
        );
    }

    #[test]
    fn a_stop_hands_over_what_finished_and_starts_nothing_new() {
        let stop = AtomicBool::new(false);
        let ran = AtomicUsize::new(0);
        let mut seen = Vec::new();
        let summary = run(
            0..1_000_000,
            2,
            &stop,
            |s| {
                if ran.fetch_add(1, Ordering::SeqCst) == 50 {
                    stop.store(true, Ordering::SeqCst);
                }
                s
            },
            |s, _| {
                seen.push(s);
                Flow::Continue
            },
        );
        assert!(summary.stopped);
        assert_eq!(summary.handed_over as usize, seen.len());
        assert!(seen.len() >= 50 && seen.len() < 1000, "{}", seen.len());
        assert!(seen.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(ran.load(Ordering::SeqCst), seen.len());
    }

    #[test]
    fn an_empty_range_runs_nothing() {
        let summary = run(
            5..5,
            4,
            &AtomicBool::new(false),
            |s| s,
            |_, _| Flow::Continue,
        );
        assert_eq!(summary, Summary::default());
    }
}
