//! The node host: one madsim task per node that sleeps until its next due item (a
//! message arrival or a timer on its own clock) or until its doorbell rings.

use crate::world::World;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
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
    lock(&world).start_node(node, now());
    loop {
        let next = lock(&world).process_due(node, now());
        let sleep = (next != SimTime::MAX)
            .then(|| Box::pin(madsim::time::sleep(next.saturating_sub(now()))));
        Doorbell {
            world: &world,
            node: Some(node),
            sleep,
        }
        .await;
    }
}

/// Waits until the sleep ends or the doorbell rings. `node: None` is the supervisor's.
pub struct Doorbell<'a, P: Protocol> {
    pub world: &'a Mutex<World<P>>,
    pub node: Option<NodeId>,
    pub sleep: Option<Pin<Box<madsim::time::Sleep>>>,
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
                    if w.stop_requested {
                        return Poll::Ready(());
                    }
                    w.supervisor_waker = Some(cx.waker().clone());
                }
            }
        }
        match &mut self.sleep {
            Some(sleep) => sleep.as_mut().poll(cx),
            None => Poll::Pending,
        }
    }
}
