//! The trace: every observation plus what the network, the timers and the faults did,
//! for `--trace` (JSON lines), the timeline picture and the determinism check.

use crate::net::DropReason;
use serde::Serialize;
use tenure_core::{NodeId, Record, SimTime};

/// One line of a trace. Message and timer payloads are their `Debug` text.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum TraceEvent {
    /// A node's observation (what the checkers see).
    Observed(Record),
    /// A message was sent; `deliver_at` is empty when it was dropped.
    Sent {
        time: SimTime,
        id: u64,
        from: NodeId,
        to: NodeId,
        msg: String,
        deliver_at: Vec<SimTime>,
        #[serde(skip_serializing_if = "Option::is_none")]
        dropped: Option<DropReason>,
    },
    /// A message reached its receiver's handler.
    Delivered {
        time: SimTime,
        id: u64,
        from: NodeId,
        to: NodeId,
    },
    /// A message arrived while its receiver was down, or (stream mode) its connection
    /// was reset.
    Lost {
        time: SimTime,
        id: u64,
        to: NodeId,
        reason: DropReason,
    },
    /// Stream mode: a message sent across a blocked link waits on its connection.
    Held {
        time: SimTime,
        id: u64,
        from: NodeId,
        to: NodeId,
    },
    /// Stream mode: the link healed before the connection timed out; a held message
    /// goes on its way, in order, arriving at `deliver_at`.
    Released {
        time: SimTime,
        id: u64,
        deliver_at: SimTime,
    },
    /// Stream mode: `node` learns that its connection to `peer` was reset
    /// (`Protocol::on_disconnect` runs).
    Disconnected {
        time: SimTime,
        node: NodeId,
        peer: NodeId,
    },
    /// After a stall (a pause, or a busy handler), `node`'s overdue messages and
    /// timers are handled in this order, drawn from the seed.
    Reordered {
        time: SimTime,
        node: NodeId,
        order: Vec<String>,
    },
    /// A timer fired.
    Timer {
        time: SimTime,
        node: NodeId,
        timer: String,
    },
    /// A fault (or its end) was applied.
    Fault {
        time: SimTime,
        kind: &'static str,
        nodes: Vec<NodeId>,
        detail: String,
    },
}

impl TraceEvent {
    pub fn time(&self) -> SimTime {
        match self {
            TraceEvent::Observed(r) => r.time,
            TraceEvent::Sent { time, .. }
            | TraceEvent::Delivered { time, .. }
            | TraceEvent::Lost { time, .. }
            | TraceEvent::Held { time, .. }
            | TraceEvent::Released { time, .. }
            | TraceEvent::Disconnected { time, .. }
            | TraceEvent::Reordered { time, .. }
            | TraceEvent::Timer { time, .. }
            | TraceEvent::Fault { time, .. } => *time,
        }
    }

    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).expect("trace events serialize")
    }
}

/// A 64-bit FNV-1a hash of a trace's JSON lines: equal traces, equal hashes.
pub fn trace_hash(events: &[TraceEvent]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for e in events {
        for b in e.to_json_line().bytes().chain(std::iter::once(b'\n')) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}
