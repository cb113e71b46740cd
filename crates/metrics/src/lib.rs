//! tenure-metrics: concise numbers for one run, computed from its [`History`] and its
//! message counts.
//!
//! Locks (when any client observed `Waiting`): acquire latency (`Waiting` to `Holds`)
//! and hold time (`Holds` to `Releases` or a crash) as p50/p90/p99/max, recorded in an
//! [`hdrhistogram`] at microsecond resolution (3 significant digits); wait-queue depth
//! (clients between `Waiting` and `Holds`) over time; throughput (grants and acknowledged
//! writes per simulated second); retries (`Retry` observations) per acquisition;
//! fairness as Jain's index over the clients' grant counts (R. Jain, D. Chiu, W. Hawe,
//! "A Quantitative Measure of Fairness and Discrimination for Resource Allocation in
//! Shared Computer Systems", DEC-TR-301, 1984: 1 when every client got the same, 1/n
//! when one got everything); coordinator load (messages addressed to the lock service's
//! nodes per simulated second, mean and peak over one-second windows).
//!
//! Elections (when any node observed `Leader` or `Candidate`): elections started,
//! terms that got a leader, the highest term, leaderless time (true time in which no
//! node believed it led, from the start), time to the first leader, and split votes
//! (terms in which someone stood but nobody won).
//!
//! Updates (when any client's update was acknowledged: `Acked`, `Completed`), whatever
//! the approach (a lock, compare-and-set, an idempotent request): completed updates per
//! second, update latency, retries per update, lost updates and duplicated effects
//! ([`updates`]).
//!
//! Metrics judge nothing: they are for comparing designs (`tenure compare`) and for
//! reading a run (`tenure run --metrics`).

use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tenure_core::{History, NodeId, Observation, SimTime};

pub mod updates;
pub use updates::UpdateMetrics;

/// The load on the coordination service, as the simulator counted it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Messages addressed to the coordinators (together) in each 10ms of true time;
    /// empty when unknown.
    pub to_coordinators_per_10ms: Vec<u32>,
    /// The most messages sent to each node within one millisecond.
    pub max_to_node_in_1ms: Vec<u32>,
    /// The nodes that make up the coordination (lock) service.
    pub coordinators: Vec<NodeId>,
}

/// Everything measured about one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Metrics {
    /// How long the run lasted in true time, in seconds.
    pub duration_s: f64,
    pub locks: Option<LockMetrics>,
    pub elections: Option<ElectionMetrics>,
    /// Acknowledged updates, whatever the approach (see [`updates`]).
    pub updates: Option<UpdateMetrics>,
}

/// p50/p90/p99/max of a set of durations, in milliseconds (`None` when empty).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LockMetrics {
    /// Grants (`Holds`) observed.
    pub acquisitions: u64,
    /// Waits that never ended in a grant (the client crashed, gave up, or the run ended).
    pub unfinished_waits: u64,
    pub acquire_latency: Option<Percentiles>,
    pub hold_time: Option<Percentiles>,
    /// Grants per simulated second.
    pub acquisitions_per_s: f64,
    /// Acknowledged writes to the protected resource per simulated second.
    pub acked_writes_per_s: f64,
    pub retries: u64,
    /// Retries per grant (retries when there was no grant).
    pub retries_per_acquisition: f64,
    /// Jain's index over the clients' grant counts, in (0, 1].
    pub fairness: f64,
    /// Clients that waited at least once.
    pub clients: usize,
    pub wait_queue: WaitQueue,
    pub coordinator: Option<CoordinatorLoad>,
}

/// How many clients were waiting at once.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WaitQueue {
    pub max: u32,
    /// Time-weighted mean over the run.
    pub mean: f64,
    /// The deepest queue in each window of `window_ms` (for charts).
    pub window_ms: u64,
    pub depth: Vec<u32>,
}

/// Messages to the lock service's nodes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoordinatorLoad {
    pub nodes: Vec<NodeId>,
    pub messages: u64,
    pub per_s: f64,
    /// The busiest one-second window.
    pub peak_per_s: u32,
    /// The busiest 10ms window, as a rate per second.
    pub burst_per_s: u32,
    /// The most messages one coordinator node was sent within one millisecond: retries
    /// in lockstep are sent together.
    pub max_in_1ms: u32,
    /// Messages in each second (for charts).
    pub per_second: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ElectionMetrics {
    /// Elections started: distinct terms in which a node stood (`Candidate`); for
    /// protocols without candidacies (bully), the number of times a node became leader.
    pub elections: u64,
    /// Distinct terms in which some node believed it led.
    pub terms_with_leader: u64,
    pub max_term: u64,
    /// Times a node started believing it led.
    pub leader_changes: u64,
    /// True time in which no node believed it led, from the run's start.
    pub leaderless_ms: f64,
    /// When the first leader appeared (`None`: never).
    pub first_leader_ms: Option<f64>,
    /// Terms in which a node stood but nobody led.
    pub split_votes: u64,
    /// Election retries (`Retry { what: "election" }`).
    pub retries: u64,
}

/// The window of the wait-queue chart.
const WINDOW: Duration = Duration::from_millis(100);

/// Computes the metrics of a run.
pub fn compute(history: &History, traffic: &Traffic) -> Metrics {
    compute_all(&[(history, traffic)])
}

/// The metrics of several runs (seeds) together: latencies and hold times go into one
/// histogram, counts and times are summed, rates are over the summed duration, the wait
/// queue's and the coordinator's per-window series are the element-wise maximum and mean
/// over the runs, and the first leader is the latest over the runs.
pub fn compute_all(runs: &[(&History, &Traffic)]) -> Metrics {
    let total: Duration = runs.iter().map(|(h, _)| h.info.end.as_duration()).sum();
    Metrics {
        duration_s: total.as_secs_f64(),
        locks: lock_metrics(runs),
        elections: runs
            .iter()
            .filter_map(|(h, _)| election_metrics(h))
            .reduce(merge_elections),
        updates: updates::update_metrics(&runs.iter().map(|(h, _)| *h).collect::<Vec<_>>()),
    }
}

fn merge_elections(a: ElectionMetrics, b: ElectionMetrics) -> ElectionMetrics {
    ElectionMetrics {
        elections: a.elections + b.elections,
        terms_with_leader: a.terms_with_leader + b.terms_with_leader,
        max_term: a.max_term.max(b.max_term),
        leader_changes: a.leader_changes + b.leader_changes,
        leaderless_ms: a.leaderless_ms + b.leaderless_ms,
        first_leader_ms: a
            .first_leader_ms
            .zip(b.first_leader_ms)
            .map(|(x, y)| x.max(y)),
        split_votes: a.split_votes + b.split_votes,
        retries: a.retries + b.retries,
    }
}

fn percentiles(h: &Histogram<u64>) -> Option<Percentiles> {
    if h.is_empty() {
        return None;
    }
    let ms = |us: u64| us as f64 / 1000.0;
    Some(Percentiles {
        count: h.len(),
        p50_ms: ms(h.value_at_quantile(0.50)),
        p90_ms: ms(h.value_at_quantile(0.90)),
        p99_ms: ms(h.value_at_quantile(0.99)),
        max_ms: ms(h.max()),
    })
}

fn record(h: &mut Histogram<u64>, d: Duration) {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    // `Histogram::new` auto-resizes, so recording cannot fail for lack of range.
    h.record(us)
        .expect("an auto-resizing histogram takes any value");
}

/// Jain's fairness index of `xs`: (Σx)² / (n·Σx²); 1 for an empty or all-zero set.
pub fn jain(xs: &[u64]) -> f64 {
    let n = xs.len() as f64;
    let sum: f64 = xs.iter().map(|&x| x as f64).sum();
    let squares: f64 = xs.iter().map(|&x| (x as f64) * (x as f64)).sum();
    if squares == 0.0 {
        1.0
    } else {
        sum * sum / (n * squares)
    }
}

fn lock_metrics(runs: &[(&History, &Traffic)]) -> Option<LockMetrics> {
    let mut latency = Histogram::<u64>::new(3).expect("3 significant digits is valid");
    let mut hold = latency.clone();
    let mut grants: BTreeMap<NodeId, u64> = BTreeMap::new();
    let (mut retries, mut acked, mut unfinished) = (0u64, 0u64, 0u64);
    let mut any_wait = false;
    let mut queues = Vec::new();
    let mut loads = Vec::new();
    let mut total = Duration::ZERO;
    for (history, traffic) in runs {
        let end = history.info.end;
        total += end.as_duration();
        // (node, resource) -> when it started waiting / holding.
        let mut waiting: BTreeMap<(NodeId, String), SimTime> = BTreeMap::new();
        let mut holding: BTreeMap<(NodeId, String), SimTime> = BTreeMap::new();
        let mut depth_changes: Vec<(SimTime, u32)> = Vec::new();
        for r in &history.records {
            let before = waiting.len();
            match &r.obs {
                Observation::Waiting { resource } => {
                    any_wait = true;
                    grants.entry(r.node).or_default();
                    if waiting.insert((r.node, resource.clone()), r.time).is_some() {
                        unfinished += 1;
                    }
                }
                Observation::Holds { resource, .. } => {
                    let key = (r.node, resource.clone());
                    if let Some(since) = waiting.remove(&key) {
                        record(&mut latency, r.time.saturating_sub(since));
                    }
                    *grants.entry(r.node).or_default() += 1;
                    holding.insert(key, r.time);
                }
                Observation::Releases { resource } => {
                    if let Some(since) = holding.remove(&(r.node, resource.clone())) {
                        record(&mut hold, r.time.saturating_sub(since));
                    }
                }
                Observation::Crashed | Observation::Started => {
                    let node = r.node;
                    let gone: Vec<_> = waiting.keys().filter(|k| k.0 == node).cloned().collect();
                    unfinished += gone.len() as u64;
                    for k in gone {
                        waiting.remove(&k);
                    }
                    let held: Vec<_> = holding.keys().filter(|k| k.0 == node).cloned().collect();
                    for k in held {
                        let since = holding.remove(&k).expect("listed above");
                        record(&mut hold, r.time.saturating_sub(since));
                    }
                }
                Observation::Retry { what, .. } if what != "election" => retries += 1,
                Observation::Acked { .. } => acked += 1,
                _ => {}
            }
            if waiting.len() != before {
                depth_changes.push((r.time, waiting.len() as u32));
            }
        }
        unfinished += waiting.len() as u64;
        queues.push(wait_queue(&depth_changes, end));
        loads.extend(coordinator_load(traffic, end));
    }
    if !any_wait {
        return None;
    }
    let acquisitions: u64 = grants.values().sum();
    let secs = total.as_secs_f64().max(f64::MIN_POSITIVE);
    let counts: Vec<u64> = grants.values().copied().collect();
    Some(LockMetrics {
        acquisitions,
        unfinished_waits: unfinished,
        acquire_latency: percentiles(&latency),
        hold_time: percentiles(&hold),
        acquisitions_per_s: acquisitions as f64 / secs,
        acked_writes_per_s: acked as f64 / secs,
        retries,
        retries_per_acquisition: retries as f64 / acquisitions.max(1) as f64,
        fairness: jain(&counts),
        clients: counts.len(),
        wait_queue: merge_queues(queues, runs),
        coordinator: merge_loads(loads, total),
    })
}

fn merge_queues(queues: Vec<WaitQueue>, runs: &[(&History, &Traffic)]) -> WaitQueue {
    let mut out = WaitQueue {
        max: 0,
        mean: 0.0,
        window_ms: WINDOW.as_millis() as u64,
        depth: Vec::new(),
    };
    let mut weight = 0.0;
    for (q, (h, _)) in queues.into_iter().zip(runs) {
        let secs = h.info.end.as_duration().as_secs_f64();
        out.max = out.max.max(q.max);
        out.mean += q.mean * secs;
        weight += secs;
        if out.depth.len() < q.depth.len() {
            out.depth.resize(q.depth.len(), 0);
        }
        for (o, d) in out.depth.iter_mut().zip(q.depth) {
            *o = (*o).max(d);
        }
    }
    if weight > 0.0 {
        out.mean /= weight;
    }
    out
}

fn merge_loads(loads: Vec<CoordinatorLoad>, total: Duration) -> Option<CoordinatorLoad> {
    let n = loads.len();
    let first = loads.first()?.nodes.clone();
    let mut sums: Vec<u64> = Vec::new();
    let (mut messages, mut peak, mut burst, mut max_1ms) = (0u64, 0u32, 0u32, 0u32);
    for l in loads {
        messages += l.messages;
        max_1ms = max_1ms.max(l.max_in_1ms);
        peak = peak.max(l.peak_per_s);
        burst = burst.max(l.burst_per_s);
        if sums.len() < l.per_second.len() {
            sums.resize(l.per_second.len(), 0);
        }
        for (s, x) in sums.iter_mut().zip(l.per_second) {
            *s += u64::from(x);
        }
    }
    Some(CoordinatorLoad {
        nodes: first,
        messages,
        per_s: messages as f64 / total.as_secs_f64().max(f64::MIN_POSITIVE),
        peak_per_s: peak,
        burst_per_s: burst,
        max_in_1ms: max_1ms,
        per_second: sums.into_iter().map(|s| (s / n as u64) as u32).collect(),
    })
}

fn wait_queue(changes: &[(SimTime, u32)], end: SimTime) -> WaitQueue {
    let windows = end.as_nanos().div_ceil(WINDOW.as_nanos() as u64).max(1) as usize;
    let mut depth = vec![0u32; windows];
    let window_of =
        |t: SimTime| ((t.as_nanos() / WINDOW.as_nanos() as u64) as usize).min(windows - 1);
    let (mut weighted, mut current, mut since, mut max) = (0f64, 0u32, SimTime::ZERO, 0u32);
    for &(t, d) in changes {
        weighted += f64::from(current) * t.saturating_sub(since).as_secs_f64();
        // The depth held from `since` to `t` covers every window in between.
        for w in depth
            .iter_mut()
            .take(window_of(t) + 1)
            .skip(window_of(since))
        {
            *w = (*w).max(current);
        }
        let w = &mut depth[window_of(t)];
        *w = (*w).max(d);
        current = d;
        since = t;
        max = max.max(d);
    }
    weighted += f64::from(current) * end.saturating_sub(since).as_secs_f64();
    for w in depth.iter_mut().skip(window_of(since)) {
        *w = (*w).max(current);
    }
    let secs = end.as_duration().as_secs_f64();
    WaitQueue {
        max,
        mean: if secs > 0.0 { weighted / secs } else { 0.0 },
        window_ms: WINDOW.as_millis() as u64,
        depth,
    }
}

fn coordinator_load(traffic: &Traffic, end: SimTime) -> Option<CoordinatorLoad> {
    if traffic.coordinators.is_empty() || traffic.to_coordinators_per_10ms.is_empty() {
        return None;
    }
    let windows = end.as_nanos().div_ceil(10_000_000).max(1) as usize;
    let mut per_10ms = vec![0u32; windows];
    for (w, &n) in traffic.to_coordinators_per_10ms.iter().enumerate() {
        // A message sent at the run's last instant counts in the last window.
        per_10ms[w.min(windows - 1)] += n;
    }
    let per_second: Vec<u32> = per_10ms.chunks(100).map(|c| c.iter().sum()).collect();
    let messages: u64 = per_second.iter().map(|&n| u64::from(n)).sum();
    let secs = end.as_duration().as_secs_f64().max(f64::MIN_POSITIVE);
    Some(CoordinatorLoad {
        nodes: traffic.coordinators.clone(),
        messages,
        per_s: messages as f64 / secs,
        peak_per_s: per_second.iter().copied().max().unwrap_or(0),
        burst_per_s: per_10ms.iter().copied().max().unwrap_or(0) * 100,
        max_in_1ms: traffic
            .coordinators
            .iter()
            .filter_map(|n| traffic.max_to_node_in_1ms.get(n.index()))
            .copied()
            .max()
            .unwrap_or(0),
        per_second,
    })
}

fn election_metrics(history: &History) -> Option<ElectionMetrics> {
    let end = history.info.end;
    let mut candidate_terms = BTreeSet::new();
    let mut leader_terms = BTreeSet::new();
    let mut leading: BTreeSet<NodeId> = BTreeSet::new();
    let (mut leader_changes, mut retries, mut candidacies) = (0u64, 0u64, 0u64);
    let mut leaderless = Duration::ZERO;
    let mut leaderless_since = Some(SimTime::ZERO);
    let mut first_leader = None;
    let mut any = false;
    for r in &history.records {
        match &r.obs {
            Observation::Leader { term } => {
                any = true;
                leader_terms.insert(*term);
                if leading.insert(r.node) {
                    leader_changes += 1;
                }
                first_leader.get_or_insert(r.time);
            }
            Observation::Candidate { term } => {
                any = true;
                candidacies += 1;
                candidate_terms.insert(*term);
                leading.remove(&r.node);
            }
            Observation::Follower { .. } | Observation::Crashed => {
                leading.remove(&r.node);
            }
            Observation::Retry { what, .. } if what == "election" => retries += 1,
            _ => {}
        }
        match (leading.is_empty(), leaderless_since) {
            (true, None) => leaderless_since = Some(r.time),
            (false, Some(since)) => {
                leaderless += r.time.saturating_sub(since);
                leaderless_since = None;
            }
            _ => {}
        }
    }
    if !any {
        return None;
    }
    if let Some(since) = leaderless_since {
        leaderless += end.saturating_sub(since);
    }
    let elections = if candidacies > 0 {
        candidate_terms.len() as u64
    } else {
        leader_changes
    };
    Some(ElectionMetrics {
        elections,
        terms_with_leader: leader_terms.len() as u64,
        max_term: leader_terms
            .iter()
            .chain(&candidate_terms)
            .copied()
            .max()
            .unwrap_or(0),
        leader_changes,
        leaderless_ms: leaderless.as_secs_f64() * 1000.0,
        first_leader_ms: first_leader.map(|t| t.as_millis_f64()),
        split_votes: candidate_terms.difference(&leader_terms).count() as u64,
        retries,
    })
}

/// The metrics as indented text lines, for `tenure run --metrics`.
pub fn text(m: &Metrics) -> Vec<String> {
    let mut out = Vec::new();
    let pct = |p: &Option<Percentiles>| match p {
        Some(p) => format!(
            "p50 {:.1}ms  p90 {:.1}ms  p99 {:.1}ms  max {:.1}ms  (n={})",
            p.p50_ms, p.p90_ms, p.p99_ms, p.max_ms, p.count
        ),
        None => "none".to_string(),
    };
    if let Some(l) = &m.locks {
        out.push(format!("acquire latency: {}", pct(&l.acquire_latency)));
        out.push(format!("hold time:       {}", pct(&l.hold_time)));
        out.push(format!(
            "throughput:      {:.2} grants/s, {:.2} acked writes/s ({} grants, {} unfinished waits)",
            l.acquisitions_per_s, l.acked_writes_per_s, l.acquisitions, l.unfinished_waits
        ));
        out.push(format!(
            "retries:         {} ({:.2} per acquisition)",
            l.retries, l.retries_per_acquisition
        ));
        out.push(format!(
            "fairness:        Jain's index {:.3} over {} clients",
            l.fairness, l.clients
        ));
        out.push(format!(
            "wait queue:      max {} waiting, mean {:.2}",
            l.wait_queue.max, l.wait_queue.mean
        ));
        if let Some(c) = &l.coordinator {
            out.push(format!(
                "coordinator:     {:.1} msgs/s, peak {} in one second, {}/s in the busiest 10ms, up to {} in one millisecond ({} messages to {})",
                c.per_s,
                c.peak_per_s,
                c.burst_per_s,
                c.max_in_1ms,
                c.messages,
                c.nodes
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        }
    }
    if let Some(e) = &m.elections {
        out.push(format!(
            "elections:       {} started, {} terms with a leader (max term {}), {} split votes, {} retries",
            e.elections, e.terms_with_leader, e.max_term, e.split_votes, e.retries
        ));
        out.push(format!(
            "leadership:      {} leader changes; first leader at {}; leaderless {:.1}ms of {:.1}ms",
            e.leader_changes,
            e.first_leader_ms
                .map_or("never".to_string(), |t| format!("{t:.1}ms")),
            e.leaderless_ms,
            m.duration_s * 1000.0
        ));
    }
    if let Some(u) = &m.updates {
        out.push(format!(
            "updates:         {:.2}/s ({} completed, {} abandoned); latency {}",
            u.per_s,
            u.completed,
            u.abandoned,
            pct(&u.latency)
        ));
        out.push(format!(
            "update outcome:  {} lost, {} duplicated; retries {}",
            u.lost,
            u.duplicated,
            match (u.retries, u.retries_per_update) {
                (Some(n), Some(per)) => format!("{n} ({per:.2} per update)"),
                _ => "not recorded by these clients".to_string(),
            }
        ));
    }
    if out.is_empty() {
        out.push("no lock or election observations to measure".to_string());
    }
    out
}

#[cfg(test)]
mod tests;
