//! What the timeline draws, extracted from a [`Report`] as plain data: belief bars,
//! status bands, point marks, network segments, messages and clock offsets. Everything is
//! in true time and in a deterministic order (record order, then trace order).

use std::collections::BTreeMap;
use tenure_core::{NodeId, Observation, OpOutcome, OpValue, SimTime};
use tenure_sim::net::DropReason;
use tenure_sim::play::Report;
use tenure_sim::trace::TraceEvent;

/// An interval on one node's lane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bar {
    pub node: NodeId,
    pub kind: BarKind,
    pub start: SimTime,
    pub end: SimTime,
    /// Short text drawn inside the bar (`term 3`, `counter #7`).
    pub label: String,
    /// The record that started it (for highlighting involved records).
    pub record: Option<usize>,
    /// Still open when the run ended.
    pub open: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum BarKind {
    Leader,
    Candidate,
    Follower,
    Holds,
    Lease,
    Waiting,
    /// The process was down (crashed, not yet restarted).
    Down,
    /// The process was paused (GC, VM stall).
    Pause,
    /// A client operation, from its invocation to its completion (`Invoke` /
    /// `Complete`); drawn on the role row, which lock clients do not use.
    Op,
}

impl BarKind {
    pub fn name(self) -> &'static str {
        match self {
            BarKind::Leader => "leader",
            BarKind::Candidate => "candidate",
            BarKind::Follower => "follower",
            BarKind::Holds => "holds",
            BarKind::Lease => "lease",
            BarKind::Waiting => "waiting",
            BarKind::Down => "down",
            BarKind::Pause => "pause",
            BarKind::Op => "op",
        }
    }

    /// Which row of the lane: 0 roles, 1 locks and leases, 2 the whole lane (bands).
    pub fn row(self) -> u8 {
        match self {
            BarKind::Leader | BarKind::Candidate | BarKind::Follower | BarKind::Op => 0,
            BarKind::Holds | BarKind::Lease | BarKind::Waiting => 1,
            BarKind::Down | BarKind::Pause => 2,
        }
    }
}

/// An instant on one node's lane (or on the network lane when `node` is `None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    pub node: Option<NodeId>,
    /// `crash`, `restart`, `write`, `write-rejected`, `clock-jump`, `clock-drift`,
    /// `network`, `skipped`, or an observation kind (`acked`, `note`, ...).
    pub kind: String,
    pub time: SimTime,
    pub label: String,
    pub record: Option<usize>,
}

/// A stretch of time with some link blocked, and what was blocked (cumulative until the
/// next heal).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetSegment {
    pub start: SimTime,
    pub end: SimTime,
    pub label: String,
    pub nodes: Vec<NodeId>,
}

/// What became of one copy of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Reached the receiver's handler at `handled` (later than its arrival if the
    /// receiver was paused).
    Delivered { handled: SimTime },
    /// Never left: blocked by a partition or lost on the link; or (stream mode,
    /// `DropReason::Reset`) lost with its connection, held or in flight.
    Dropped(DropReason),
    /// Arrived while the receiver was down.
    LostDown,
    /// Still on its way when the run ended.
    InFlight,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub id: u64,
    pub from: NodeId,
    pub to: NodeId,
    pub sent: SimTime,
    /// When it reached the receiver's machine (`None` if dropped at send).
    pub arrived: Option<SimTime>,
    pub fate: Fate,
    /// The message's `Debug` text.
    pub text: String,
}

impl Message {
    /// Where its arrow ends in true time.
    pub fn end(&self) -> SimTime {
        match self.fate {
            Fate::Delivered { handled } => handled,
            _ => self.arrived.unwrap_or(self.sent),
        }
    }
}

/// One node's clock offsets (reading minus true time, ns) at the instants it recorded
/// something.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClockTrack {
    /// `(true time, mono - true, wall - true)`, at most [`MAX_CLOCK_POINTS`].
    pub points: Vec<(SimTime, i64, i64)>,
}

pub const MAX_CLOCK_POINTS: usize = 240;

impl ClockTrack {
    pub fn is_exact(&self) -> bool {
        self.points.iter().all(|p| p.1 == 0 && p.2 == 0)
    }
    pub fn wall_range(&self) -> (i64, i64) {
        range(self.points.iter().map(|p| p.2))
    }
    pub fn mono_range(&self) -> (i64, i64) {
        range(self.points.iter().map(|p| p.1))
    }
}

fn range(it: impl Iterator<Item = i64>) -> (i64, i64) {
    it.fold((i64::MAX, i64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

/// Everything the timeline draws.
#[derive(Clone, Debug, Default)]
pub struct Model {
    pub end: SimTime,
    pub bars: Vec<Bar>,
    pub marks: Vec<Mark>,
    pub net: Vec<NetSegment>,
    pub messages: Vec<Message>,
    pub clocks: Vec<ClockTrack>,
    pub has_trace: bool,
    /// The window of true time the page opens on: the whole run, or for a run with a
    /// violation the first violation's story (see [`initial_view`]).
    pub view: (SimTime, SimTime),
}

/// Open beliefs of one node, keyed by what they are about.
#[derive(Default)]
struct Open {
    role: Option<(BarKind, SimTime, String, usize)>,
    holds: BTreeMap<String, (SimTime, String, usize)>,
    leases: BTreeMap<u64, (SimTime, usize)>,
    waiting: BTreeMap<String, (SimTime, usize)>,
    /// The open client operation: (invoked at, `cas [0 1]`, its record).
    op: Option<(SimTime, String, usize)>,
    down: Option<SimTime>,
    pause: Option<SimTime>,
}

fn bar(
    node: NodeId,
    kind: BarKind,
    start: SimTime,
    end: SimTime,
    label: String,
    record: Option<usize>,
    open: bool,
) -> Bar {
    Bar {
        node,
        kind,
        start,
        end,
        label,
        record,
        open,
    }
}

impl Open {
    /// Ends every belief (a crash or a fresh start).
    fn close_beliefs(&mut self, node: NodeId, at: SimTime, open: bool, out: &mut Vec<Bar>) {
        if let Some((start, label, rec)) = self.op.take() {
            let label = format!("{label} → unknown");
            out.push(bar(node, BarKind::Op, start, at, label, Some(rec), open));
        }
        if let Some((kind, start, label, rec)) = self.role.take() {
            out.push(bar(node, kind, start, at, label, Some(rec), open));
        }
        for (_, (start, label, rec)) in std::mem::take(&mut self.holds) {
            out.push(bar(node, BarKind::Holds, start, at, label, Some(rec), open));
        }
        for (term, (start, rec)) in std::mem::take(&mut self.leases) {
            let label = format!("lease t{term}");
            out.push(bar(node, BarKind::Lease, start, at, label, Some(rec), open));
        }
        for (res, (start, rec)) in std::mem::take(&mut self.waiting) {
            let label = format!("waits {res}");
            out.push(bar(
                node,
                BarKind::Waiting,
                start,
                at,
                label,
                Some(rec),
                open,
            ));
        }
    }
}

/// The window the page opens on: for a run with a violation, its first violation's
/// narrative window ([`crate::narrative::window`]: from when the involved nodes were last
/// calm to the violation) with a margin of a fifth of it (at least 20 ms) on each side,
/// so the fault that started it and what follows the violation at once are in view;
/// for a passing run, the whole run.
pub fn initial_view(report: &Report) -> (SimTime, SimTime) {
    let end = report.history.info.end;
    let Some(v) = report.violations.first() else {
        return (SimTime::ZERO, end);
    };
    let w = crate::narrative::window(report, v);
    let span = w.end.as_nanos().saturating_sub(w.start.as_nanos());
    let pad = (span / 5).max(20_000_000);
    let from = SimTime(w.start.as_nanos().saturating_sub(pad));
    let to = SimTime((w.end.as_nanos() + pad).min(end.as_nanos().max(1)));
    (from, to.max(from))
}

/// Extracts the model of a run.
pub fn build(report: &Report) -> Model {
    let history = &report.history;
    let end = history.info.end;
    let n = history.info.cluster.size();
    let mut open: Vec<Open> = (0..n).map(|_| Open::default()).collect();
    let mut bars = Vec::new();
    let mut marks = Vec::new();

    for (i, r) in history.records.iter().enumerate() {
        let node = r.node;
        let o = &mut open[node.index()];
        let t = r.time;
        let set_role = |o: &mut Open, kind: BarKind, label: String, bars: &mut Vec<Bar>| {
            if let Some((k, start, l, rec)) = o.role.take() {
                bars.push(bar(node, k, start, t, l, Some(rec), false));
            }
            o.role = Some((kind, t, label, i));
        };
        match &r.obs {
            Observation::Started => {
                o.close_beliefs(node, t, false, &mut bars);
                if let Some(start) = o.down.take() {
                    bars.push(bar(
                        node,
                        BarKind::Down,
                        start,
                        t,
                        "down".into(),
                        None,
                        false,
                    ));
                    marks.push(Mark {
                        node: Some(node),
                        kind: "restart".into(),
                        time: t,
                        label: "restarted".into(),
                        record: Some(i),
                    });
                }
            }
            Observation::Crashed => {
                o.close_beliefs(node, t, false, &mut bars);
                o.down = Some(t);
                marks.push(Mark {
                    node: Some(node),
                    kind: "crash".into(),
                    time: t,
                    label: "crashed".into(),
                    record: Some(i),
                });
            }
            Observation::Leader { term } => {
                set_role(o, BarKind::Leader, format!("leader t{term}"), &mut bars)
            }
            Observation::Candidate { term } => {
                set_role(o, BarKind::Candidate, format!("cand t{term}"), &mut bars)
            }
            Observation::Follower { term, leader } => {
                let label = match leader {
                    Some(l) => format!("t{term} → {l}"),
                    None => format!("t{term}"),
                };
                set_role(o, BarKind::Follower, label, &mut bars)
            }
            Observation::LeaseStart { term } => {
                o.leases.entry(*term).or_insert((t, i));
            }
            Observation::LeaseEnd { term } => {
                if let Some((start, rec)) = o.leases.remove(term) {
                    let label = format!("lease t{term}");
                    bars.push(bar(node, BarKind::Lease, start, t, label, Some(rec), false));
                }
            }
            Observation::Waiting { resource } => {
                o.waiting.entry(resource.clone()).or_insert((t, i));
            }
            Observation::Holds { resource, token } => {
                if let Some((start, rec)) = o.waiting.remove(resource) {
                    let label = format!("waits {resource}");
                    bars.push(bar(
                        node,
                        BarKind::Waiting,
                        start,
                        t,
                        label,
                        Some(rec),
                        false,
                    ));
                }
                let label = if *token == 0 {
                    format!("holds {resource}")
                } else {
                    format!("holds {resource} #{token}")
                };
                if let Some((start, l, rec)) = o.holds.insert(resource.clone(), (t, label, i)) {
                    bars.push(bar(node, BarKind::Holds, start, t, l, Some(rec), false));
                }
            }
            Observation::Releases { resource } => {
                if let Some((start, l, rec)) = o.holds.remove(resource) {
                    bars.push(bar(node, BarKind::Holds, start, t, l, Some(rec), false));
                }
                if let Some((start, rec)) = o.waiting.remove(resource) {
                    let label = format!("waits {resource}");
                    bars.push(bar(
                        node,
                        BarKind::Waiting,
                        start,
                        t,
                        label,
                        Some(rec),
                        false,
                    ));
                }
            }
            Observation::Write {
                client,
                token,
                accepted,
                value,
                ..
            } => {
                let tok = token.map_or(String::new(), |t| format!(" #{t}"));
                marks.push(Mark {
                    node: Some(node),
                    kind: if *accepted { "write" } else { "write-rejected" }.into(),
                    time: t,
                    label: format!(
                        "write from {client}{tok} value {value}: {}",
                        if *accepted { "accepted" } else { "rejected" }
                    ),
                    record: Some(i),
                });
            }
            Observation::Invoke { f, value, .. } => {
                let label = match value {
                    OpValue::Nil => f.clone(),
                    OpValue::Int(v) => format!("{f} {v}"),
                    OpValue::Pair(a, b) => format!("{f} [{a} {b}]"),
                };
                o.op = Some((t, label, i));
            }
            Observation::Complete { outcome, value, .. } if o.op.is_some() => {
                let (start, label, rec) = o.op.take().expect("an open operation");
                let result = match (outcome, value) {
                    (OpOutcome::Ok, OpValue::Int(v)) if label.starts_with("read") => {
                        format!("→ {v}")
                    }
                    (OpOutcome::Ok, _) => "ok".to_string(),
                    (OpOutcome::Fail, _) => "fail".to_string(),
                    (OpOutcome::Info, _) => "→ unknown".to_string(),
                };
                let label = format!("{label} {result}");
                bars.push(bar(node, BarKind::Op, start, t, label, Some(rec), false));
            }
            other => marks.push(Mark {
                node: Some(node),
                kind: other.kind().into(),
                time: t,
                label: describe(other),
                record: Some(i),
            }),
        }
    }

    let mut model = Model {
        end,
        clocks: clock_tracks(report, n),
        has_trace: report.trace.is_some(),
        view: initial_view(report),
        ..Model::default()
    };
    if let Some(trace) = &report.trace {
        faults(trace, &mut open, &mut bars, &mut marks, &mut model.net, end);
    }
    for (i, o) in open.iter_mut().enumerate() {
        let node = NodeId(i as u32);
        o.close_beliefs(node, end, true, &mut bars);
        if let Some(start) = o.down.take() {
            bars.push(bar(
                node,
                BarKind::Down,
                start,
                end,
                "down".into(),
                None,
                true,
            ));
        }
        if let Some(start) = o.pause.take() {
            bars.push(bar(
                node,
                BarKind::Pause,
                start,
                end,
                "paused".into(),
                None,
                true,
            ));
        }
    }
    if let Some(trace) = &report.trace {
        model.messages = messages(trace, &bars, end);
        disconnects(trace, &mut marks);
    }
    bars.sort_by_key(|b| (b.node, b.kind.row(), b.start, b.kind, b.end));
    marks.sort_by_key(|m| (m.time, m.node));
    model.bars = bars;
    model.marks = marks;
    model
}

/// `holds resource=counter token=0` (the narrative's wording).
pub fn describe(obs: &Observation) -> String {
    let mut out = obs.kind().to_string();
    if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(obs) {
        for (k, v) in map {
            if k == "kind" {
                continue;
            }
            let v = match v {
                serde_json::Value::String(s) => s,
                serde_json::Value::Null => "none".to_string(),
                other => other.to_string(),
            };
            out.push_str(&format!(" {k}={v}"));
        }
    }
    out
}

const PARTITIONS: &[&str] = &["partition", "isolate", "cut", "one-way", "bridge"];

fn faults(
    trace: &[TraceEvent],
    open: &mut [Open],
    bars: &mut Vec<Bar>,
    marks: &mut Vec<Mark>,
    net: &mut Vec<NetSegment>,
    end: SimTime,
) {
    // The blocked state since the last heal: (since, labels so far, nodes).
    let mut blocked: Option<(SimTime, Vec<String>, Vec<NodeId>)> = None;
    for e in trace {
        let TraceEvent::Fault {
            time,
            kind,
            nodes,
            detail,
        } = e
        else {
            continue;
        };
        let t = *time;
        let who: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
        if PARTITIONS.contains(kind) {
            let label = match *kind {
                "bridge" => format!("bridge via {} {detail}", who.join(",")),
                "partition" => format!("partition {detail}"),
                "one-way" => format!("one-way {detail}"),
                _ => format!("{kind} {}", who.join(",")),
            };
            let (labels, mut all) = match blocked.take() {
                Some((since, labels, all)) => {
                    net.push(NetSegment {
                        start: since,
                        end: t,
                        label: labels.join("; "),
                        nodes: all.clone(),
                    });
                    (labels, all)
                }
                None => (Vec::new(), Vec::new()),
            };
            let mut labels = labels;
            labels.push(label);
            all.extend(nodes.iter().copied());
            all.sort();
            all.dedup();
            blocked = Some((t, labels, all));
            continue;
        }
        match *kind {
            "heal" => {
                if let Some((since, labels, all)) = blocked.take() {
                    net.push(NetSegment {
                        start: since,
                        end: t,
                        label: labels.join("; "),
                        nodes: all,
                    });
                }
                marks.push(Mark {
                    node: None,
                    kind: "heal".into(),
                    time: t,
                    label: "heal".into(),
                    record: None,
                });
            }
            "pause" => {
                let node = nodes[0];
                open[node.index()].pause = Some(t);
            }
            "resume" => {
                let node = nodes[0];
                if let Some(start) = open[node.index()].pause.take() {
                    bars.push(bar(
                        node,
                        BarKind::Pause,
                        start,
                        t,
                        "paused".into(),
                        None,
                        false,
                    ));
                }
            }
            "clock-jump" | "clock-drift" => marks.push(Mark {
                node: nodes.first().copied(),
                kind: (*kind).into(),
                time: t,
                label: if *kind == "clock-jump" {
                    format!("wall clock jumps {detail}")
                } else {
                    format!("clock drift {detail}")
                },
                record: None,
            }),
            // A crash ends a pause; crashes and restarts show from the records.
            "crash" => {
                let node = nodes[0];
                if let Some(start) = open[node.index()].pause.take() {
                    bars.push(bar(
                        node,
                        BarKind::Pause,
                        start,
                        t,
                        "paused".into(),
                        None,
                        false,
                    ));
                }
            }
            "restart" => {}
            _ => marks.push(Mark {
                node: None,
                kind: (*kind).into(),
                time: t,
                label: format!("{kind} {detail}").trim().to_string(),
                record: None,
            }),
        }
    }
    if let Some((since, labels, all)) = blocked {
        net.push(NetSegment {
            start: since,
            end,
            label: labels.join("; "),
            nodes: all,
        });
    }
}

/// Stream mode: a mark where a node learned that a connection was reset.
fn disconnects(trace: &[TraceEvent], marks: &mut Vec<Mark>) {
    for e in trace {
        if let TraceEvent::Disconnected { time, node, peer } = e {
            marks.push(Mark {
                node: Some(*node),
                kind: "disconnect".into(),
                time: *time,
                label: format!("connection to {peer} reset"),
                record: None,
            });
        }
    }
}

fn messages(trace: &[TraceEvent], bars: &[Bar], end: SimTime) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    // id -> indices into `out` of the copies still waiting for their fate.
    let mut pending: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for e in trace {
        match e {
            TraceEvent::Sent {
                time,
                id,
                from,
                to,
                msg,
                deliver_at,
                dropped,
            } => {
                if let Some(reason) = dropped {
                    out.push(Message {
                        id: *id,
                        from: *from,
                        to: *to,
                        sent: *time,
                        arrived: None,
                        fate: Fate::Dropped(*reason),
                        text: msg.clone(),
                    });
                    continue;
                }
                let mut at: Vec<Option<SimTime>> = deliver_at.iter().copied().map(Some).collect();
                at.sort();
                if at.is_empty() {
                    // Stream mode: held on a blocked link; `Released` says when it arrives.
                    at.push(None);
                }
                let slots = pending.entry(*id).or_default();
                for a in at {
                    slots.push(out.len());
                    out.push(Message {
                        id: *id,
                        from: *from,
                        to: *to,
                        sent: *time,
                        arrived: a,
                        fate: Fate::InFlight,
                        text: msg.clone(),
                    });
                }
            }
            TraceEvent::Delivered { time, id, .. } => {
                if let Some(slots) = pending.get_mut(id) {
                    if !slots.is_empty() {
                        let k = slots.remove(0);
                        out[k].fate = Fate::Delivered { handled: *time };
                    }
                }
            }
            TraceEvent::Released { id, deliver_at, .. } => {
                if let Some(k) = pending.get(id).and_then(|slots| slots.first()) {
                    out[*k].arrived = Some(*deliver_at);
                }
            }
            TraceEvent::Lost { id, reason, .. } => {
                if let Some(slots) = pending.get_mut(id) {
                    if !slots.is_empty() {
                        let k = slots.remove(0);
                        out[k].fate = match reason {
                            DropReason::Reset => Fate::Dropped(DropReason::Reset),
                            _ => Fate::LostDown,
                        };
                    }
                }
            }
            _ => {}
        }
    }
    // Copies that arrived at a node that was down and never came back were never traced
    // as lost: find them from the down bands.
    for m in out.iter_mut().filter(|m| m.fate == Fate::InFlight) {
        // Still held on a blocked link at the end (stream mode): in flight.
        let Some(at) = m.arrived else { continue };
        let down = bars.iter().any(|b| {
            b.node == m.to && b.kind == BarKind::Down && b.start <= at && (b.open || at < b.end)
        });
        if at <= end && down {
            m.fate = Fate::LostDown;
        }
    }
    out
}

fn clock_tracks(report: &Report, n: usize) -> Vec<ClockTrack> {
    let mut all: Vec<Vec<(SimTime, i64, i64)>> = vec![Vec::new(); n];
    for r in &report.history.records {
        let t = r.time.as_nanos() as i64;
        let p = (r.time, r.mono.0 - t, r.wall.0 - t);
        let track = &mut all[r.node.index()];
        // Keep the points where the offset changes (and the first one).
        if track.last().is_none_or(|l| (l.1, l.2) != (p.1, p.2)) {
            track.push(p);
        }
    }
    all.into_iter()
        .map(|points| {
            let points = if points.len() > MAX_CLOCK_POINTS {
                let step = points.len().div_ceil(MAX_CLOCK_POINTS);
                let last = *points.last().expect("non-empty");
                let mut kept: Vec<_> = points.into_iter().step_by(step).collect();
                if kept.last() != Some(&last) {
                    kept.push(last);
                }
                kept
            } else {
                points
            };
            ClockTrack { points }
        })
        .collect()
}
