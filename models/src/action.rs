//! What the environment may do next from a state, written the way a counterexample
//! reads: `n1 -> n2 RequestVote { term: 2 } delivered`, `n2 timer Election fired`.

use std::fmt;
use tenure_core::{Byzantine, NodeId, Protocol};

/// One transition of the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action<P: Protocol> {
    /// One copy of an in-flight message reaches a live node.
    Deliver {
        from: NodeId,
        to: NodeId,
        msg: P::Msg,
    },
    /// One copy of an in-flight message is lost (uses the drop budget).
    Drop {
        from: NodeId,
        to: NodeId,
        msg: P::Msg,
    },
    /// One more copy of an in-flight message (uses the duplicate budget).
    Duplicate {
        from: NodeId,
        to: NodeId,
        msg: P::Msg,
    },
    /// A pending timer fires (timing is free: any pending timer, at any point).
    Fire { node: NodeId, timer: P::Timer },
    /// The process dies: its value and timers are gone, its storage stays (uses the
    /// crash budget).
    Crash { node: NodeId },
    /// A crashed node starts again: `new` + `on_start` (and `on_byzantine` again if it
    /// was turned, as the simulator does).
    Restart { node: NodeId },
    /// A live node of the cluster's first role turns Byzantine for the rest of the run:
    /// the host records `Observation::Byzantine` and the node gets
    /// `Protocol::on_byzantine(behaviour)` (uses the Byzantine budget).
    Turn { node: NodeId, behaviour: Byzantine },
    /// For an instant `node` is cut off: every message then in flight to or from it is
    /// lost, as one fault event (uses the isolation budget). Enabled only while some
    /// message to or from it is in flight.
    Isolate { node: NodeId },
    /// Every clock moves forward by [`crate::state::LEAP`], past every deadline (uses
    /// the leap budget).
    Leap,
}

impl<P: Protocol> fmt::Display for Action<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Deliver { from, to, msg } => write!(f, "{from} -> {to} {msg:?} delivered"),
            Action::Drop { from, to, msg } => write!(f, "message {from} -> {to} {msg:?} dropped"),
            Action::Duplicate { from, to, msg } => {
                write!(f, "message {from} -> {to} {msg:?} duplicated")
            }
            Action::Fire { node, timer } => write!(f, "{node} timer {timer:?} fired"),
            Action::Crash { node } => write!(f, "{node} crashed"),
            Action::Restart { node } => write!(f, "{node} restarted"),
            Action::Turn { node, behaviour } => write!(f, "{node} turned Byzantine ({behaviour})"),
            Action::Isolate { node } => write!(
                f,
                "{node} isolated: every message in flight to or from it lost"
            ),
            Action::Leap => write!(f, "time leaps 1h on every clock"),
        }
    }
}
