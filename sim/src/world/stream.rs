//! Stream mode (`[network] mode = "stream"`): TCP-like connections between every pair
//! of nodes.
//!
//! * **FIFO per link.** A message never overtakes an earlier one on the same directed
//!   link: it arrives no earlier than the previous one did. `loss` delays a message by
//!   a retransmission timeout instead of dropping it; `duplicate` does not apply.
//! * **Short partitions delay.** A message sent across a blocked link waits on its
//!   connection (`Held` in the trace); if the link heals before the connection times
//!   out, the held messages leave at the heal, in order (`Released`): the stale burst
//!   real systems see after a partition.
//! * **Long partitions and crashes reset.** A connection whose link (either direction)
//!   stays blocked for the connection timeout is reset, as keepalives or a user timeout
//!   would: what is queued on it in either direction (held, or in flight and not yet
//!   handled) is lost (`Lost`, reason `reset`) and both ends get
//!   `Protocol::on_disconnect` (`Disconnected`). Until the link heals, sends across it
//!   fail at once (dropped, reason `partition`). A crash (or power loss) resets every
//!   connection of the node at once, and its peers are told at once (its kernel, or
//!   in a power loss the peer's next retransmission, would tell them; tenure does not
//!   model the delay of the latter).
//!
//! Everything here is decided by the run's network stream and the order of events, so
//! a run stays a pure function of (code, scenario, seed).

use super::{Input, Status, World};
use crate::net::DropReason;
use crate::trace::TraceEvent;
use std::collections::VecDeque;
use std::time::Duration;
use tenure_core::{NodeId, Protocol, SimTime};

/// The connections of a stream-mode run.
pub struct Streams<M> {
    n: usize,
    connection_timeout: Duration,
    /// Per directed link (`from * n + to`): the arrival time of its latest message, the
    /// earliest the next one may arrive.
    last_at: Vec<SimTime>,
    /// Per directed link: the messages waiting on a blocked link, oldest first.
    held: Vec<VecDeque<(u64, M)>>,
    /// Per pair (`a * n + b`, `a < b`): since when its link has been broken (either
    /// direction blocked), while the connection has not yet been reset.
    broken_since: Vec<Option<SimTime>>,
    /// Per pair: the connection was reset and the link is still broken: sends fail.
    reset: Vec<bool>,
}

impl<M> Streams<M> {
    pub fn new(n: usize, connection_timeout: Duration) -> Streams<M> {
        Streams {
            n,
            connection_timeout,
            last_at: vec![SimTime::ZERO; n * n],
            held: (0..n * n).map(|_| VecDeque::new()).collect(),
            broken_since: vec![None; n * n],
            reset: vec![false; n * n],
        }
    }

    fn link(&self, from: NodeId, to: NodeId) -> usize {
        from.index() * self.n + to.index()
    }

    fn pair(&self, a: NodeId, b: NodeId) -> usize {
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        lo.index() * self.n + hi.index()
    }
}

impl<P: Protocol> World<P> {
    fn streams(&mut self) -> &mut Streams<P::Msg> {
        self.streams.as_mut().expect("stream mode")
    }

    /// Sends `msg` (already counted, `id` assigned) over the connection `from -> to`.
    pub(super) fn send_stream(
        &mut self,
        from: NodeId,
        to: NodeId,
        now: SimTime,
        id: u64,
        msg: P::Msg,
    ) {
        let pair = self.streams().pair(from, to);
        let link = self.streams().link(from, to);
        // A connection to a machine that is down is refused; one whose link is still
        // broken after a reset cannot be opened. A node that has not started yet is
        // booting with the others (the engine starts the nodes of a cluster one after
        // another at time zero, nanoseconds apart): its connection waits for it, as the
        // scenario means every node to start together.
        let slot = &self.nodes[to.index()];
        let refused = if slot.status == Status::Down && slot.incarnation > 0 {
            Some(DropReason::Down)
        } else if self.streams().reset[pair] {
            Some(DropReason::Partition)
        } else {
            None
        };
        let blocked = self.net.is_blocked(from, to);
        let deliver_at = match (refused, blocked) {
            (Some(_), _) | (None, true) => None,
            (None, false) => {
                let drawn = self.net.stream_arrival(from, to, now, &mut self.net_rng);
                let s = self.streams();
                let at = drawn.max(s.last_at[link]);
                s.last_at[link] = at;
                Some(at)
            }
        };
        if self.trace.is_some() {
            let text = format!("{msg:?}");
            self.trace(now, || TraceEvent::Sent {
                time: now,
                id,
                from,
                to,
                msg: text,
                deliver_at: deliver_at.into_iter().collect(),
                dropped: refused,
            });
        }
        if refused.is_some() {
            self.stats.messages_dropped += 1;
            return;
        }
        match deliver_at {
            Some(at) => self.push_message(from, to, id, at, msg, now),
            None => {
                self.trace(now, || TraceEvent::Held {
                    time: now,
                    id,
                    from,
                    to,
                });
                self.streams().held[link].push_back((id, msg));
            }
        }
    }

    fn push_message(
        &mut self,
        from: NodeId,
        to: NodeId,
        id: u64,
        at: SimTime,
        msg: P::Msg,
        now: SimTime,
    ) {
        self.queued(now);
        let seq = self.next_seq();
        self.push_input(to, at, seq, Input::Message { id, from, msg });
        self.due_at(to, at, now);
    }

    /// The blocked links changed (a partition, cut, isolation, one-way split, bridge or
    /// heal): newly broken connections start their timeout, healed ones send what they
    /// held, in order.
    pub fn network_changed(&mut self, now: SimTime) {
        if self.streams.is_none() {
            return;
        }
        let n = self.cluster.size() as u32;
        for a in (0..n).map(NodeId) {
            for b in (a.0 + 1..n).map(NodeId) {
                let broken = self.net.is_blocked(a, b) || self.net.is_blocked(b, a);
                let pair = self.streams().pair(a, b);
                if broken {
                    let s = self.streams();
                    if s.broken_since[pair].is_none() && !s.reset[pair] {
                        s.broken_since[pair] = Some(now);
                        // Their next wake may now be the timeout.
                        self.ring(a);
                        self.ring(b);
                    }
                } else {
                    let s = self.streams();
                    s.broken_since[pair] = None;
                    s.reset[pair] = false;
                    self.release(a, b, now);
                    self.release(b, a, now);
                }
            }
        }
    }

    /// Sends what `from -> to` held, in order, now that the link is open.
    fn release(&mut self, from: NodeId, to: NodeId, now: SimTime) {
        let link = self.streams().link(from, to);
        let held = std::mem::take(&mut self.streams().held[link]);
        for (id, msg) in held {
            let drawn = self.net.stream_arrival(from, to, now, &mut self.net_rng);
            let s = self.streams();
            let at = drawn.max(s.last_at[link]);
            s.last_at[link] = at;
            self.trace(now, || TraceEvent::Released {
                time: now,
                id,
                deliver_at: at,
            });
            self.push_message(from, to, id, at, msg, now);
        }
    }

    /// When `node` must next wake to reset one of its connections (`SimTime::MAX`:
    /// never, as things stand).
    pub(super) fn connection_deadline(&self, node: NodeId) -> SimTime {
        let Some(s) = &self.streams else {
            return SimTime::MAX;
        };
        (0..s.n as u32)
            .map(NodeId)
            .filter(|p| *p != node)
            .filter_map(|p| s.broken_since[s.pair(node, p)])
            .map(|since| since + s.connection_timeout)
            .min()
            .unwrap_or(SimTime::MAX)
    }

    /// Resets every connection whose link has been broken for the timeout by `now`.
    pub(super) fn expire_connections(&mut self, now: SimTime) {
        let n = self.cluster.size() as u32;
        for a in (0..n).map(NodeId) {
            for b in (a.0 + 1..n).map(NodeId) {
                let s = self.streams();
                let pair = s.pair(a, b);
                let timeout = s.connection_timeout;
                if s.broken_since[pair].is_some_and(|since| since + timeout <= now) {
                    s.broken_since[pair] = None;
                    s.reset[pair] = true;
                    self.reset_connection(a, b, now);
                }
            }
        }
    }

    /// `node` crashed: every connection it had is reset, and its peers are told.
    pub(super) fn reset_connections_of(&mut self, node: NodeId, now: SimTime) {
        for peer in (0..self.cluster.size() as u32).map(NodeId) {
            if peer == node {
                continue;
            }
            let broken = self.net.is_blocked(node, peer) || self.net.is_blocked(peer, node);
            let s = self.streams();
            let pair = s.pair(node, peer);
            // A new connection can be opened once the machine is back, unless the link
            // is broken (then it waits for the heal, like any reset connection).
            s.broken_since[pair] = None;
            s.reset[pair] = broken;
            self.reset_connection(node, peer, now);
        }
    }

    /// The connection between `a` and `b` is reset: what is queued on it either way is
    /// lost, and each end that is not down is told.
    fn reset_connection(&mut self, a: NodeId, b: NodeId, now: SimTime) {
        for (from, to) in [(a, b), (b, a)] {
            let link = self.streams().link(from, to);
            self.streams().last_at[link] = SimTime::ZERO;
            let held = std::mem::take(&mut self.streams().held[link]);
            let mut lost: Vec<u64> = held.into_iter().map(|(id, _)| id).collect();
            let inbox = &mut self.nodes[to.index()].inbox;
            let inputs = &mut self.inputs;
            let mut in_flight: Vec<(u64, u64)> = Vec::new();
            inbox.retain(|d| match *inputs.get(d.input) {
                Input::Message { id, from: f, .. } if f == from => {
                    in_flight.push((d.seq, id));
                    inputs.take(d.input);
                    false
                }
                _ => true,
            });
            // The heap's order is not the sending order: sort by scheduling order.
            in_flight.sort_unstable();
            self.in_flight -= in_flight.len();
            lost.extend(in_flight.into_iter().map(|(_, id)| id));
            for id in lost {
                self.stats.messages_dropped += 1;
                self.trace(now, || TraceEvent::Lost {
                    time: now,
                    id,
                    to,
                    reason: DropReason::Reset,
                });
            }
        }
        for (node, peer) in [(a, b), (b, a)] {
            if self.nodes[node.index()].status == Status::Down {
                continue;
            }
            self.queued(now);
            let seq = self.next_seq();
            self.push_input(node, now, seq, Input::Disconnect { peer });
            self.ring(node);
        }
    }
}
