//! The node host: one madsim task per node that sleeps until its next due item (a
//! message arrival or a timer on its own clock) or until its doorbell rings.

use crate::world::World;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
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
    lock(&world).start_node(node, now());
    let mut alarm = Alarm::default();
    loop {
        let t = now();
        let next = lock(&world).process_due(node, t);
        alarm.set(&time, t, next);
        Doorbell {
            world: &world,
            node: Some(node),
            alarm: &mut alarm,
        }
        .await;
    }
}

/// A madsim sleep until the next due item, kept across wakes while its deadline holds.
///
/// madsim's `Sleep` registers a new timer each time it is polled while pending, and a
/// dropped `Sleep` leaves its timer behind to wake the task anyway. So the alarm polls
/// its sleep once (which registers the timer) and afterwards only looks at the clock,
/// and a loop whose next deadline did not change (a message arrived and was handled,
/// the same timer is next) keeps the sleep and its timer instead of making another.
#[derive(Default)]
pub struct Alarm {
    /// The true time the sleep ends (madsim sleeps at least 1 ms) and the sleep.
    sleep: Option<(SimTime, Pin<Box<madsim::time::Sleep>>)>,
    /// Whether the sleep's timer is registered.
    armed: bool,
}

impl Alarm {
    /// Sleep from `now` until `next` (`SimTime::MAX`: until the doorbell rings).
    pub fn set(&mut self, time: &madsim::time::TimeHandle, now: SimTime, next: SimTime) {
        if next == SimTime::MAX {
            *self = Alarm::default();
            return;
        }
        let wake_at = next.max(now + Duration::from_millis(1));
        if matches!(&self.sleep, Some((at, _)) if *at == wake_at) {
            return;
        }
        let sleep = Box::pin(time.sleep(next.saturating_sub(now)));
        *self = Alarm {
            sleep: Some((wake_at, sleep)),
            armed: false,
        };
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some((_, sleep)) = &mut self.sleep else {
            return Poll::Pending;
        };
        if std::mem::replace(&mut self.armed, true) {
            if sleep.is_elapsed() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        } else {
            sleep.as_mut().poll(cx)
        }
    }
}

/// Waits until the alarm goes off or the doorbell rings. `node: None` is the
/// supervisor's.
pub struct Doorbell<'a, P: Protocol> {
    pub world: &'a Mutex<World<P>>,
    pub node: Option<NodeId>,
    pub alarm: &'a mut Alarm,
}

impl<P: Protocol> Future for Doorbell<'_, P> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        {
            let mut w = lock(self.world);
            match self.node {
                Some(node) => {
                    if w.check_doorbell(node, cx.waker()) {
                        return Poll::Ready(());
                    }
                }
                None => {
                    if w.stop_requested || w.restarts_pending() {
                        return Poll::Ready(());
                    }
                    w.supervisor_waker = Some(cx.waker().clone());
                }
            }
        }
        self.alarm.poll(cx)
    }
}
