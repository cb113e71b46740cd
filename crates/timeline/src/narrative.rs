//! The story of a violation in a few lines of text: what `tenure run` prints under
//! "events leading to it", and the window the timeline opens on.
//!
//! **What it promises.** The lines run until the violation is complete: to the
//! violation's time ([`Violation::time`]; for an overlap, when it began) or, for a node
//! whose involved records began before it, to that node's next action (the stale
//! holder's action that made the overlap, after its pause ended), so the action and the
//! fault that ended the pause before it are in the story. The window starts where
//! the involved nodes were last calm ([`window`]), so the fault that disturbed them is
//! in it however long ago it was, and every fault in the window is shown. Records shown:
//! the involved ones (marked `*`, however old), hand-overs (roles, leases, locks,
//! ownership, crashes and starts) and notes of any node (of the involved records' resources, if
//! they name any), and the other observations of the involved nodes; runs of one routine observation by one node (`serves term=1` again
//! and again) are one line with a count and the time of the last, and a burst of one
//! kind of observation by one node at one instant (a coordinator taking over 14
//! resources) one line with the number of the others. Retries of a client
//! and each node's first start (with the run) are left out unless involved. A pure function of the
//! report: same run, same lines.

use std::collections::{BTreeMap, BTreeSet};
use tenure_check::Violation;
use tenure_core::{NodeId, Observation, Record, SimTime};
use tenure_sim::play::Report;
use tenure_sim::TraceEvent;

/// The span of true time a violation's story covers: `start` is when the involved nodes
/// were last calm (or their first involved record), `end` when the violation was
/// complete (see the module's doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: SimTime,
    pub end: SimTime,
}

/// Faults that change how the network delivers: they touch every node.
const NETWORK: &[&str] = &[
    "partition",
    "isolate",
    "cut",
    "one-way",
    "bridge",
    "heal",
    "network",
];

/// The nodes the violation is about: those it names and those of its records.
fn involved_nodes(report: &Report, v: &Violation) -> Vec<NodeId> {
    let records = &report.history.records;
    let mut nodes: Vec<NodeId> = v.nodes.clone();
    nodes.extend(
        v.records
            .iter()
            .filter_map(|&i| records.get(i))
            .map(|r| r.node),
    );
    nodes.sort();
    nodes.dedup();
    nodes
}

/// Whether a fault on `nodes` of `kind` touches the involved nodes (all of them if
/// none is named).
fn touches(kind: &str, nodes: &[NodeId], involved: &[NodeId]) -> bool {
    involved.is_empty()
        || nodes.is_empty()
        || NETWORK.contains(&kind)
        || nodes.iter().any(|n| involved.contains(n))
}

/// What a fault opens (a state that lasts until its end) or closes, as a key.
enum Effect {
    Open(String),
    Close(Vec<String>),
    /// Takes effect at once and needs no end (a clock step, a crash point armed).
    Instant,
}

fn effect(kind: &str, nodes: &[NodeId]) -> Effect {
    let node = nodes.first().map_or(String::new(), |n| n.to_string());
    match kind {
        "crash" | "power-loss" => Effect::Open(format!("down {node}")),
        "restart" => Effect::Close(vec![format!("down {node}")]),
        "pause" => Effect::Open(format!("pause {node}")),
        "resume" => Effect::Close(vec![format!("pause {node}")]),
        "clock-stall" => Effect::Open(format!("clock-stall {node}")),
        "clock-stall-end" => Effect::Close(vec![format!("clock-stall {node}")]),
        "slow" => Effect::Open(format!("slow {node}")),
        "slow-end" => Effect::Close(vec![format!("slow {node}")]),
        "partition" | "isolate" | "cut" | "one-way" | "bridge" => {
            Effect::Open("network".to_string())
        }
        "heal" => Effect::Close(vec!["network".to_string()]),
        _ => Effect::Instant,
    }
}

/// When the involved nodes were last calm before the violation: the first fault of the
/// last stretch of faults touching them (a pause until its resume, a crash until its
/// restart, a partition until the heal, a clock step on its own) that began at or before
/// the violation. `None` if no fault touched them by then.
fn disturbed_since(trace: &[TraceEvent], involved: &[NodeId], end: SimTime) -> Option<SimTime> {
    let mut open: Vec<String> = Vec::new();
    let mut since = None;
    for e in trace {
        let TraceEvent::Fault {
            time, kind, nodes, ..
        } = e
        else {
            continue;
        };
        if *time > end {
            break;
        }
        if *kind == "skipped" || !touches(kind, nodes, involved) {
            continue;
        }
        let calm = open.is_empty();
        match effect(kind, nodes) {
            Effect::Open(key) => {
                if calm {
                    since = Some(*time);
                }
                if !open.contains(&key) {
                    open.push(key);
                }
            }
            Effect::Close(keys) => {
                // An end with nothing open (a restart of a running node) disturbs nothing.
                open.retain(|k| !keys.contains(k));
            }
            Effect::Instant => {
                if calm {
                    since = Some(*time);
                }
            }
        }
    }
    since
}

/// The window of `v`'s story (see the module's doc): from when the involved nodes were
/// last calm (else their first involved record, else the violation) to when the
/// violation was complete.
pub fn window(report: &Report, v: &Violation) -> Window {
    let end = completed_at(report, v);
    let involved = involved_nodes(report, v);
    // Calm is judged up to the violation: what disturbed the nodes came before it.
    let disturbed = report
        .trace
        .as_deref()
        .and_then(|t| disturbed_since(t, &involved, v.time));
    let first_record = v
        .records
        .iter()
        .filter_map(|&i| report.history.records.get(i))
        .map(|r| r.time)
        .filter(|t| *t <= end)
        .min();
    let start = disturbed.or(first_record).unwrap_or(end).min(end);
    Window { start, end }
}

/// When `v` was complete: for an overlap reported at its start, the first action after
/// it of a node whose involved records began earlier (the stale holder's action that
/// made the overlap, after its pause ended), else the violation's time. An action is an
/// `Acts` or `Serves` of a kind the node's involved records have; beliefs never extend
/// the story.
fn completed_at(report: &Report, v: &Violation) -> SimTime {
    let records = &report.history.records;
    let involved: Vec<&Record> = v.records.iter().filter_map(|&i| records.get(i)).collect();
    let mut earlier: Vec<NodeId> = involved
        .iter()
        .filter(|r| r.time < v.time)
        .map(|r| r.node)
        .collect();
    earlier.sort();
    earlier.dedup();
    earlier
        .iter()
        .filter_map(|&node| {
            // Actions only: a belief's overlap is complete when it begins.
            let kinds: Vec<&str> = involved
                .iter()
                .filter(|r| r.node == node && is_action(&r.obs))
                .map(|r| r.obs.kind())
                .collect();
            records
                .iter()
                .find(|r| r.time > v.time && r.node == node && kinds.contains(&r.obs.kind()))
                .map(|r| r.time)
        })
        .min()
        .map_or(v.time, |t| t.max(v.time))
}

/// What a node does on the strength of a lock, lease or leadership (judged by the
/// action checks), as opposed to what it believes.
fn is_action(obs: &Observation) -> bool {
    matches!(obs, Observation::Acts { .. } | Observation::Serves { .. })
}

/// Observations that change who holds what, and notes written for people: shown for
/// any node.
fn is_handover(obs: &Observation) -> bool {
    matches!(
        obs,
        Observation::Note { .. }
            | Observation::Started
            | Observation::Crashed
            | Observation::Leader { .. }
            | Observation::Follower { .. }
            | Observation::Candidate { .. }
            | Observation::LeaseStart { .. }
            | Observation::LeaseEnd { .. }
            | Observation::Holds { .. }
            | Observation::Releases { .. }
            | Observation::GivesUp { .. }
            | Observation::Owns { .. }
            | Observation::Disowns { .. }
    )
}

/// The resource an observation is about, if any.
fn resource(obs: &Observation) -> Option<&str> {
    match obs {
        Observation::Waiting { resource }
        | Observation::Holds { resource, .. }
        | Observation::Releases { resource }
        | Observation::Acts { resource, .. }
        | Observation::GivesUp { resource }
        | Observation::Owns { resource, .. }
        | Observation::Disowns { resource, .. }
        | Observation::Write { resource, .. }
        | Observation::Acked { resource, .. } => Some(resource),
        _ => None,
    }
}

/// `leader term=3`, `holds resource=lock token=7`.
pub fn describe(obs: &Observation) -> String {
    super::model::describe(obs)
}

/// One line of a story, before it is written out.
struct Line {
    time: SimTime,
    /// Faults before records at one instant.
    order: u8,
    text: String,
    /// For a run of one routine observation: (node, what, how many, last time).
    run: Option<(NodeId, String, usize, SimTime)>,
    /// For a burst (one node's observations of one kind at one instant): the kind, and
    /// how many more there were.
    burst: Option<(&'static str, usize)>,
}

fn record_line(r: &Record, marked: bool) -> String {
    format!(
        "{} {}  {:<4} {}",
        if marked { "*" } else { " " },
        r.time,
        r.node.to_string(),
        describe(&r.obs)
    )
}

/// The story of `v` (see the module's doc), one line per event: `* ` for an involved
/// record, `  ` otherwise, then the true time. At most `context` lines of records that
/// are not involved: past that, those nearest the start and the violation are kept and
/// one line says how many were left out in between.
pub fn lines(report: &Report, v: &Violation, context: usize) -> Vec<String> {
    let records = &report.history.records;
    let w = window(report, v);
    let involved = involved_nodes(report, v);
    let involved_records: BTreeSet<usize> = v.records.iter().copied().collect();
    let is_involved = |i: usize| involved_records.contains(&i);
    let mut out: Vec<Line> = Vec::new();

    // Faults first at one instant (a crash before the `crashed` record it causes).
    let mut events: Vec<(SimTime, u8, usize)> = Vec::new();
    if let Some(trace) = &report.trace {
        for (k, e) in trace.iter().enumerate() {
            if let TraceEvent::Fault { time, .. } = e {
                if *time >= w.start && *time <= w.end {
                    events.push((*time, 0, k));
                }
            }
        }
    }
    for (i, r) in records.iter().enumerate() {
        if r.time > w.end {
            break;
        }
        if r.time >= w.start || is_involved(i) {
            events.push((r.time, 1, i));
        }
    }
    events.sort();

    let mut resources: Vec<&str> = v
        .records
        .iter()
        .filter_map(|&i| records.get(i))
        .filter_map(|r| resource(&r.obs))
        .collect();
    resources.sort_unstable();
    resources.dedup();
    // Each node's first `started` (a set: a cluster may have thousands of nodes).
    let mut first_starts: BTreeSet<usize> = BTreeSet::new();
    let mut started: BTreeSet<NodeId> = BTreeSet::new();
    for (i, r) in records.iter().enumerate() {
        if r.obs == Observation::Started && started.insert(r.node) {
            first_starts.insert(i);
        }
    }

    // The open run of each node: the index of its line in `out`; and its open burst.
    let mut runs: BTreeMap<NodeId, usize> = BTreeMap::new();
    let mut bursts: BTreeMap<NodeId, usize> = BTreeMap::new();
    // Whether record `r` joins its node's burst (and is counted there).
    let joins = |out: &mut [Line], bursts: &BTreeMap<NodeId, usize>, r: &Record| {
        let Some(&at) = bursts.get(&r.node) else {
            return false;
        };
        let line = &mut out[at];
        match &mut line.burst {
            Some((kind, more)) if line.time == r.time && *kind == r.obs.kind() => {
                *more += 1;
                true
            }
            _ => false,
        }
    };
    for (time, kind, k) in events {
        if kind == 0 {
            let Some(TraceEvent::Fault {
                kind,
                nodes,
                detail,
                ..
            }) = report.trace.as_ref().map(|t| &t[k])
            else {
                continue;
            };
            // A fault on a node breaks its run: what it does after is news.
            if nodes.is_empty() || NETWORK.contains(kind) {
                runs.clear();
                bursts.clear();
            } else {
                for n in nodes {
                    runs.remove(n);
                    bursts.remove(n);
                }
            }
            let who: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
            out.push(Line {
                time,
                order: 0,
                text: format!("  {time}  fault {kind} {} {detail}", who.join(","))
                    .trim_end()
                    .to_string(),
                run: None,
                burst: None,
            });
            continue;
        }
        let r = &records[k];
        if is_involved(k) {
            runs.remove(&r.node);
            bursts.remove(&r.node);
            out.push(Line {
                time,
                order: 1,
                text: record_line(r, true),
                run: None,
                burst: None,
            });
            continue;
        }
        // Retries are noise (a waiting client may retry hundreds of times), and so is
        // every node starting with the run (its first `started`).
        if matches!(r.obs, Observation::Retry { .. }) || first_starts.contains(&k) {
            continue;
        }
        // Another node's dealings with another resource are another story.
        let elsewhere = !involved.contains(&r.node)
            && !resources.is_empty()
            && resource(&r.obs).is_some_and(|x| !resources.contains(&x));
        if elsewhere {
            continue;
        }
        if is_handover(&r.obs) {
            runs.remove(&r.node);
            if joins(&mut out, &bursts, r) {
                continue;
            }
            bursts.insert(r.node, out.len());
            out.push(Line {
                time,
                order: 1,
                text: record_line(r, false),
                run: None,
                burst: Some((r.obs.kind(), 0)),
            });
            continue;
        }
        if !involved.is_empty() && !involved.contains(&r.node) {
            continue;
        }
        let what = describe(&r.obs);
        if let Some(&at) = runs.get(&r.node) {
            if let Some((_, w, n, last)) = &mut out[at].run {
                if *w == what {
                    *n += 1;
                    *last = time;
                    continue;
                }
            }
        }
        if joins(&mut out, &bursts, r) {
            runs.remove(&r.node);
            continue;
        }
        runs.insert(r.node, out.len());
        bursts.insert(r.node, out.len());
        out.push(Line {
            time,
            order: 1,
            text: record_line(r, false),
            run: Some((r.node, what, 1, time)),
            burst: Some((r.obs.kind(), 0)),
        });
    }
    let mut lines: Vec<(SimTime, u8, String, bool)> = out
        .into_iter()
        .map(|l| {
            let mut text = match &l.run {
                Some((_, _, n, last)) if *n > 1 => format!("{}  x{n} to {last}", l.text),
                _ => l.text,
            };
            if let Some((kind, more)) = l.burst {
                if more > 0 {
                    text.push_str(&format!("  (+{more} more {kind})"));
                }
            }
            let plain = l.order == 1 && !text.starts_with('*');
            (l.time, l.order, text, plain)
        })
        .collect();
    if let Some(trace) = &report.trace {
        if let Some((t, text)) = drops_line(trace, w.start, w.end) {
            lines.push((t, 0, text, false));
        }
    }
    lines.sort_by_key(|l| (l.0, l.1));
    let mut out = elide(lines, context);
    out.extend(clock_lines(report, &involved, w));
    out
}

/// The clocks of the involved nodes, from their own records in the window: a line for
/// each node whose monotonic or wall clock is off true time or runs at another rate
/// (`clock n1: monotonic -638ms off true time at 2.153s, running 30% slow`); none when
/// every involved clock is exact. A clock bug's story is its clocks, which no fault
/// line shows when they were set off from the start (`[[clock]]`).
pub fn clock_lines(report: &Report, involved: &[NodeId], w: Window) -> Vec<String> {
    let mut out = Vec::new();
    for &node in involved {
        let mine = || {
            report
                .history
                .records
                .iter()
                .filter(move |r| r.node == node && r.time <= w.end)
        };
        let Some(last) = mine().next_back() else {
            continue;
        };
        // The rate over the story's window (a drift may have begun mid-run), else over
        // the node's whole life so far.
        let first = mine()
            .find(|r| r.time >= w.start && r.time < last.time)
            .or_else(|| mine().next())
            .unwrap_or(last);
        let off = |local: tenure_core::LocalTime, t: SimTime| local.0 - t.as_nanos() as i64;
        // To the millisecond: the story is read by people.
        let ms = |n: i64| n / 1_000_000 * 1_000_000;
        let mono_off = ms(off(last.mono, last.time));
        let wall_off = ms(off(last.wall, last.time));
        let span = last.time.as_nanos().saturating_sub(first.time.as_nanos());
        // The rate between the two records, on the monotonic clock (a wall clock's
        // jump is not a rate); a power loss reboots the monotonic clock, so when it
        // went back the rate is not shown.
        let rate = (span > 0 && last.mono.0 >= first.mono.0).then(|| {
            let d = (last.mono.0 - first.mono.0) as f64 / span as f64;
            d - 1.0
        });
        let mut parts = Vec::new();
        if mono_off.unsigned_abs() >= 1_000_000 {
            parts.push(format!(
                "monotonic {} off true time",
                tenure_core::SignedDuration(mono_off)
            ));
        }
        if wall_off.unsigned_abs() >= 1_000_000 && wall_off != mono_off {
            parts.push(format!(
                "wall {} off true time",
                tenure_core::SignedDuration(wall_off)
            ));
        }
        if let Some(rate) = rate.filter(|r| r.abs() >= 0.0005) {
            parts.push(format!(
                "running {:.1}% {}",
                rate.abs() * 100.0,
                if rate < 0.0 { "slow" } else { "fast" }
            ));
        }
        if !parts.is_empty() {
            out.push(format!(
                "  clock {node}: {} (at {})",
                parts.join(", "),
                last.time
            ));
        }
    }
    out
}

/// Keeps at most `context` plain record lines: a third of them nearest the start, the
/// rest nearest the violation, and one line for those left out.
fn elide(lines: Vec<(SimTime, u8, String, bool)>, context: usize) -> Vec<String> {
    let plain: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].3).collect();
    if plain.len() <= context {
        return lines.into_iter().map(|l| l.2).collect();
    }
    let head = context / 3;
    let tail = context - head;
    let cut: Vec<usize> = plain[head..plain.len() - tail].to_vec();
    let mut out = Vec::new();
    let mut said = false;
    for (i, l) in lines.into_iter().enumerate() {
        if cut.binary_search(&i).is_ok() {
            if !said {
                out.push(format!(
                    "  ... {} more observation{} (not involved)",
                    cut.len(),
                    if cut.len() == 1 { "" } else { "s" }
                ));
                said = true;
            }
            continue;
        }
        out.push(l.2);
    }
    out
}

/// One line summing up the messages dropped (partition, loss) or lost (receiver down)
/// in `[start, end]`, at the time of the first: who to whom, most frequent links first.
fn drops_line(trace: &[TraceEvent], start: SimTime, end: SimTime) -> Option<(SimTime, String)> {
    let mut senders: BTreeMap<u64, NodeId> = BTreeMap::new();
    // reason -> (from, to) -> count
    let mut by: BTreeMap<&'static str, BTreeMap<(String, String), u64>> = BTreeMap::new();
    let mut first = None;
    let mut total = 0u64;
    for e in trace {
        let (time, from, to, reason) = match e {
            TraceEvent::Sent {
                id,
                from,
                to,
                time,
                dropped,
                ..
            } => {
                senders.insert(*id, *from);
                match dropped {
                    Some(r) => (*time, Some(*from), *to, drop_reason(*r)),
                    None => continue,
                }
            }
            TraceEvent::Lost {
                time,
                id,
                to,
                reason,
            } => (*time, senders.get(id).copied(), *to, drop_reason(*reason)),
            _ => continue,
        };
        if time < start || time > end {
            continue;
        }
        first.get_or_insert(time);
        total += 1;
        let from = from.map_or("?".to_string(), |f| f.to_string());
        *by.entry(reason)
            .or_default()
            .entry((from, to.to_string()))
            .or_default() += 1;
    }
    let first = first?;
    let parts: Vec<String> = by
        .iter()
        .map(|(reason, links)| {
            let mut links: Vec<(&(String, String), &u64)> = links.iter().collect();
            links.sort_by_key(|(link, k)| (std::cmp::Reverse(**k), (*link).clone()));
            let n: u64 = links.iter().map(|(_, k)| **k).sum();
            let mut shown: Vec<String> = links
                .iter()
                .take(3)
                .map(|((f, t), k)| format!("{f}->{t} x{k}"))
                .collect();
            if links.len() > 3 {
                shown.push("...".to_string());
            }
            format!("{n} by {reason} ({})", shown.join(", "))
        })
        .collect();
    Some((
        first,
        format!(
            "  {first}  dropped {total} message{} up to {end}: {}",
            if total == 1 { "" } else { "s" },
            parts.join("; ")
        ),
    ))
}

fn drop_reason(r: tenure_sim::DropReason) -> &'static str {
    match r {
        tenure_sim::DropReason::Partition => "partition",
        tenure_sim::DropReason::Loss => "loss",
        tenure_sim::DropReason::Down => "receiver down",
        tenure_sim::DropReason::Reset => "connection reset",
    }
}
