//! Light tasks (vendor/madsim, `task::light`) are scheduled exactly as madsim schedules
//! a future (issue 38): the same logic run once as a future per node and once as light
//! tasks gives the same runs, to the nanosecond, through timers, wakes of other tasks,
//! wakes of a task by itself during its run, pauses, kills and restarts (paused nodes
//! killed and restarted too). A run's schedule is made of madsim's random draws (which
//! ready task runs next, and the clock's advance after it), so any difference in what
//! is queued, when, or how often shows as a different log.

use madsim::runtime::{Handle, Runtime};
use madsim::task::{Light, NodeId as MadsimNode};
use madsim::time::TimeHandle;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

const NODES: u32 = 6;

/// What every task shares: the log of runs, each task's latest waker, and a small
/// generator of its own (not madsim's: the logic must not draw from the schedule's
/// stream, or the two kinds of task would not be compared on the same schedule).
struct Shared {
    log: Vec<(u128, u32, u8)>,
    wakers: Vec<Option<Waker>>,
    mix: u64,
    /// The negative control: one more wake, at this run.
    extra_wake_at: Option<usize>,
}

impl Shared {
    fn next(&mut self) -> u64 {
        self.mix = self.mix.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.mix;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// One run of task `key`: logs it, then does what the shared generator says.
fn step(
    shared: &Mutex<Shared>,
    key: u32,
    state: &mut u8,
    time: &TimeHandle,
    cx: &mut Context<'_>,
) -> Poll<()> {
    let mut s = shared.lock().unwrap();
    s.log.push((time.elapsed().as_nanos(), key, *state));
    if s.extra_wake_at == Some(s.log.len()) {
        cx.waker().wake_by_ref();
    }
    s.wakers[key as usize] = Some(cx.waker().clone());
    *state = state.wrapping_add(1);
    let r = s.next();
    let after = Duration::from_micros(500 + (r >> 8) % 3_000);
    match r % 6 {
        // A timer wakes it (at least 1 ms on: madsim's sleeps are).
        0 => time.wake_after(after, cx.waker()),
        // It wakes another task, and a timer wakes it.
        1 => {
            let other = (r >> 20) as usize % NODES as usize;
            if let Some(w) = &s.wakers[other] {
                w.wake_by_ref();
            }
            time.wake_after(after, cx.waker());
        }
        // It wakes itself during its run: queued again after it.
        2 => cx.waker().wake_by_ref(),
        // Two timers, the later one left to wake it for nothing.
        3 => {
            time.wake_after(after, cx.waker());
            time.wake_after(after * 2, cx.waker());
        }
        // It waits for another task to wake it, or a late timer.
        _ => time.wake_after(Duration::from_millis(20), cx.waker()),
    }
    Poll::Pending
}

struct Node {
    shared: Arc<Mutex<Shared>>,
}

impl Light for Node {
    fn poll(&self, key: u32, state: &mut u8, time: &TimeHandle, cx: &mut Context<'_>) -> Poll<()> {
        step(&self.shared, key, state, time, cx)
    }
}

/// A run of `seed` with the nodes' tasks as futures (`light` false) or light tasks.
fn run(seed: u64, light: bool) -> Vec<(u128, u32, u8)> {
    run_with(seed, light, None)
}

fn run_with(seed: u64, light: bool, extra_wake_at: Option<usize>) -> Vec<(u128, u32, u8)> {
    let shared = Arc::new(Mutex::new(Shared {
        log: Vec::new(),
        wakers: vec![None; NODES as usize],
        mix: seed,
        extra_wake_at,
    }));
    let runtime = Runtime::with_seed_and_config(seed, madsim::Config::default());
    let handle = runtime.handle().clone();
    let process: madsim::task::LightFn = Arc::new(Node {
        shared: shared.clone(),
    });
    let mut ids: Vec<MadsimNode> = Vec::new();
    for key in 0..NODES {
        let builder = handle.create_node().name(format!("n{key}"));
        let builder = if light {
            builder.init_light(key, process.clone())
        } else {
            let shared = shared.clone();
            builder.init(move || {
                let shared = shared.clone();
                let mut state = 0u8;
                std::future::poll_fn(move |cx| {
                    let time = TimeHandle::current();
                    step(&shared, key, &mut state, &time, cx)
                })
            })
        };
        ids.push(builder.build().id());
    }
    runtime.block_on(supervise(handle, ids));
    let log = std::mem::take(&mut shared.lock().unwrap().log);
    log
}

/// Pauses, resumes, kills and restarts nodes along the run, then ends it as tenure
/// does (every node killed, one yield).
async fn supervise(handle: Handle, ids: Vec<MadsimNode>) {
    let ms = |n| madsim::time::sleep(Duration::from_millis(n));
    ms(5).await;
    handle.pause(ids[2]);
    ms(3).await;
    handle.resume(ids[2]);
    handle.kill(ids[3]);
    ms(4).await;
    handle.restart(ids[3]);
    handle.restart(ids[1]);
    handle.pause(ids[4]);
    ms(6).await;
    // A paused node killed: the tasks it held are dropped with it.
    handle.kill(ids[4]);
    ms(2).await;
    handle.restart(ids[4]);
    handle.pause(ids[5]);
    ms(3).await;
    // A paused node restarted.
    handle.restart(ids[5]);
    ms(100).await;
    for id in &ids {
        handle.kill(*id);
    }
    madsim::task::yield_now().await;
}

#[test]
fn light_tasks_are_scheduled_as_madsim_schedules_futures() {
    for seed in 0..20 {
        let futures = run(seed, false);
        let light = run(seed, true);
        assert!(
            futures.len() > 150,
            "seed {seed}: a run long enough to mean something ({} runs)",
            futures.len()
        );
        assert_eq!(futures, light, "seed {seed}");
    }
}

/// The comparison can fail: one more wake of a task by itself, at its 100th run, is
/// another schedule (the wake queues the task once more, which shifts madsim's draws).
#[test]
fn one_more_wake_is_another_schedule() {
    let futures = run(7, false);
    let perturbed = run_with(7, true, Some(100));
    assert_eq!(
        futures[..100],
        perturbed[..100],
        "the same up to the extra wake"
    );
    assert_ne!(futures, perturbed);
}
