//! The node host: one madsim task per node that sleeps until its next due item (a
//! message arrival or a timer on its own clock) or until its doorbell rings.

use crate::world::World;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tenure_core::{NodeId, Protocol, SimTime};

/// True time: madsim's clock since the run started.
pub fn now() -> SimTime {
    SimTime::from_duration(madsim::time::TimeHandle::current().elapsed())
}

pub fn lock<P: Protocol>(world: &Mutex<World<P>>) -> MutexGuard<'_, World<P>> {
    // A poisoned lock means a handler panicked (a bug), which madsim re-raises anyway.
    world
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The node's process: start (reading storage back), then handle what is due, forever.
/// A crash kills this task; a restart runs it again.
pub async fn node_main<P: Protocol>(world: Arc<Mutex<World<P>>>, node: NodeId) {
    // One handle for the process's life: `TimeHandle::current()` clones it from a
    // thread-local on every call, which the hot loop below would pay twice a wake.
    let time = madsim::time::TimeHandle::current();
    let now = || SimTime::from_duration(time.elapsed());
    StartGate { world: &world }.await;
    {
        let mut w = lock(&world);
        w.set_time(&time);
        w.start_node(node, now());
    }
    loop {
        let t = now();
        lock(&world).process_due(node, t);
        NodeWait {
            world: &world,
            node,
            time: &time,
        }
        .await;
    }
}

/// Waits until the faults of time zero are applied (see [`World::close_start_gate`]);
/// ready at once when there are none.
struct StartGate<'a, P: Protocol> {
    world: &'a Mutex<World<P>>,
}

impl<P: Protocol> Future for StartGate<'_, P> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if lock(self.world).start_gate_open(cx.waker()) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// Waits until the node's doorbell rings or what it planned to wake for is due (see
/// [`World::node_waits`]: the world keeps the plan and sets the timers, so a message
/// sent to the node sets the timer for its arrival without running the node first).
pub struct NodeWait<'a, P: Protocol> {
    pub world: &'a Mutex<World<P>>,
    pub node: NodeId,
    pub time: &'a madsim::time::TimeHandle,
}

impl<P: Protocol> Future for NodeWait<'_, P> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let now = SimTime::from_duration(self.time.elapsed());
        if lock(self.world).node_waits(self.node, now, cx.waker()) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// The deadlines of the madsim timers set to wake one task that had not gone off when
/// last looked at. Kept inline (a node's hot fields in one place); when all four are
/// pending, the latest is forgotten, which at worst sets one timer more later.
pub type Wakeups = [SimTime; 4];

/// Makes sure a madsim timer wakes the task of `waker` by `at`: unless one of `set`
/// (those already set for the task) does, sets one, at least 1 ms from now (madsim
/// sleeps at least 1 ms).
///
/// madsim's timers cannot be cancelled: a `Sleep` polled once sets a timer that wakes
/// its task at its deadline even if the `Sleep` is dropped. So the caller keeps the
/// deadlines it set that have not gone off, and a new timer is set only when none of
/// them wakes the task in time. A follower whose election deadline moves on at every
/// heartbeat then sets one timer per timeout, not one per heartbeat (on a 2,001-node
/// cluster with 10 s timeouts madsim's timer heap held hundreds of thousands of stale
/// timers). A timer that goes off before the task is due wakes it for nothing: it
/// looks at its plan, which is not due, and sleeps again without running its loop.
pub fn wake_by(time: &madsim::time::TimeHandle, set: &mut Wakeups, waker: &Waker, at: SimTime) {
    let now = SimTime::from_duration(time.elapsed());
    let deadline = at.max(now + Duration::from_millis(1));
    // madsim fires a timer as soon as its deadline is reached: those at or before
    // `now` are gone.
    if set.iter().any(|d| *d > now && *d <= deadline) {
        return;
    }
    let mut sleep = time.sleep(deadline.saturating_sub(now));
    // The first poll sets the timer (the sleep is not due: its deadline is ahead);
    // dropping the sleep leaves the timer in place.
    let _ = Pin::new(&mut sleep).poll(&mut Context::from_waker(waker));
    let slot = match set.iter().position(|d| *d <= now) {
        Some(gone) => gone,
        None => (0..set.len()).max_by_key(|&i| set[i]).unwrap_or(0),
    };
    set[slot] = deadline;
}

/// When the supervisor wants to be woken, and the timers set to wake it.
pub struct Alarm {
    time: madsim::time::TimeHandle,
    /// When to wake (`SimTime::MAX`: only the doorbell wakes the task).
    wake_at: SimTime,
    set: Wakeups,
}

impl Alarm {
    pub fn new(time: madsim::time::TimeHandle) -> Alarm {
        Alarm {
            time,
            wake_at: SimTime::MAX,
            set: Wakeups::default(),
        }
    }

    /// Sleep until `next` (`SimTime::MAX`: until the doorbell rings).
    pub fn set(&mut self, next: SimTime) {
        self.wake_at = next;
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.wake_at == SimTime::MAX {
            return Poll::Pending;
        }
        let now = SimTime::from_duration(self.time.elapsed());
        if now >= self.wake_at {
            return Poll::Ready(());
        }
        wake_by(&self.time, &mut self.set, cx.waker(), self.wake_at);
        Poll::Pending
    }
}

/// The supervisor waits until its alarm goes off or its doorbell rings.
pub struct Doorbell<'a, P: Protocol> {
    pub world: &'a Mutex<World<P>>,
    pub alarm: &'a mut Alarm,
}

impl<P: Protocol> Future for Doorbell<'_, P> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        {
            let mut w = lock(self.world);
            if w.stop_requested || w.restarts_pending() || w.aim_ready() {
                return Poll::Ready(());
            }
            w.supervisor_waker = Some(cx.waker().clone());
        }
        self.alarm.poll(cx)
    }
}
