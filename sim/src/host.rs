//! The node host: one madsim task per node (a light task: see [`node_process`]) that
//! sleeps until its next due item (a message arrival or a timer on its own clock) or
//! until its doorbell rings.

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

/// The node processes' poll function, shared by every node task of a run: madsim runs
/// each node's process as a light task (vendor/madsim, `task::light`), keyed by the
/// node's index, with one byte of state: 0 until it has passed the start gate, then 1.
///
/// A process: start (reading storage back), then handle what is due, forever. A crash
/// kills its task; a restart spawns it again (state 0). This is the loop that was an
/// `async fn` per node: `StartGate.await`, start, then `loop { process_due;
/// NodeWait.await }`, each wait polled as it was. Its schedule is madsim's for a future
/// (the same wakes, queue draws and clock advances), so runs are the same; what it
/// saves is the future's allocation and task metadata, which each delivery touched
/// three times (issue 38).
pub fn node_process<P: Protocol>(world: Arc<Mutex<World<P>>>) -> madsim::task::LightFn {
    Arc::new(NodeProcess { world })
}

struct NodeProcess<P: Protocol> {
    world: Arc<Mutex<World<P>>>,
}

impl<P: Protocol> madsim::task::Light for NodeProcess<P> {
    fn poll(
        &self,
        key: u32,
        state: &mut u8,
        time: &madsim::time::TimeHandle,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        let world = &self.world;
        let node = NodeId(key);
        let now = || SimTime::from_duration(time.elapsed());
        lock(world).prefetch(node);
        if *state == 0 {
            // Waits until the faults of time zero are applied (see
            // [`World::close_start_gate`]); open at once when there are none.
            if !lock(world).start_gate_open(cx.waker()) {
                return Poll::Pending;
            }
            {
                let mut w = lock(world);
                w.set_time(time);
                w.start_node(node, now());
            }
            *state = 1;
            lock(world).process_due(node, now());
        }
        // Waits until the node's doorbell rings or what it planned to wake for is due
        // (see [`World::node_waits`]: the world keeps the plan and sets the timers, so a
        // message sent to the node sets the timer for its arrival without running the
        // node first).
        loop {
            if !lock(world).node_waits(node, now(), cx.waker()) {
                return Poll::Pending;
            }
            lock(world).process_due(node, now());
        }
    }

    /// The node runs next: its slot's lines are fetched while the node before it runs
    /// (see [`World::prefetch_slot`]).
    fn warm(&self, key: u32) {
        lock(&self.world).prefetch_slot(NodeId(key));
    }

    /// After the node before it ran: what its slot points to (see
    /// [`World::prefetch_behind`]).
    fn warm_late(&self, key: u32) {
        lock(&self.world).prefetch_behind(NodeId(key));
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
    // What polling `time.sleep(..)` once does: it sets the timer (the sleep is not due:
    // its deadline is ahead), and dropping the sleep would leave the timer in place.
    time.wake_after(deadline.saturating_sub(now), waker);
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
