//! Updates: what a client set out to change and got acknowledged, whatever the approach
//! (a lock around a read-modify-write, optimistic compare-and-set, an idempotent request
//! the service applies), so that `tenure compare --updates` can put the approaches side
//! by side under the same contention.
//!
//! * An update **completes** at an `Acked { resource, amount }` (a lock client's or a
//!   compare-and-set client's write was accepted) or a `Completed { key, ok: true }` (an
//!   idempotent request's outcome came back).
//! * It **starts** at the client's first `Waiting` (it asks for the lock), `Invoke` (it
//!   reads, optimistically) or `Requested` (it sends a keyed request) after its previous
//!   update ended. Every retry in between (a refused lock, a refused compare-and-set, a
//!   resent request) belongs to the same update, so its latency is what the caller
//!   waited. A `Completed { ok: false }`, a crash or a restart ends it without
//!   completing (`abandoned`).
//! * **Retries** are the `Retry` observations of clients (lock acquires and
//!   compare-and-sets started again), per completed update; unknown (`None`) for a run
//!   whose clients issue keyed requests (`Requested`) and record no `Retry`, because
//!   such clients (the zoo's `idempotency`) resend without saying so.
//! * **Lost** updates: per resource, the acknowledged amounts (`Acked`) missing from the
//!   value of its last accepted `Write` at the end of the run (the `no-lost-update`
//!   checker's total, as a number); per keyed request, a `Completed { ok: true }` whose
//!   key was never `Applied`. **Duplicated** effects: `Applied` records of a key beyond
//!   its first (what `exactly-once` forbids).

use crate::{percentiles, record, Percentiles};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tenure_core::{History, NodeId, Observation, SimTime};

/// The updates of one or several runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UpdateMetrics {
    /// Updates acknowledged (`Acked`, `Completed { ok: true }`).
    pub completed: u64,
    /// Updates started and never completed (a failed request, a crash, the run ended).
    pub abandoned: u64,
    /// Completed updates per simulated second.
    pub per_s: f64,
    /// From the start of an update to its acknowledgement.
    pub latency: Option<Percentiles>,
    /// `Retry` observations (`None`: the clients do not record their retries).
    pub retries: Option<u64>,
    pub retries_per_update: Option<f64>,
    /// Acknowledged increments missing from the final value, plus acknowledged keyed
    /// requests never applied.
    pub lost: i64,
    /// Effects applied more than once (`Applied` of a key beyond its first).
    pub duplicated: u64,
}

/// The update metrics of several runs together (`None` when no run has an update).
pub fn update_metrics(runs: &[&History]) -> Option<UpdateMetrics> {
    let mut latency = Histogram::<u64>::new(3).expect("3 significant digits is valid");
    let (mut completed, mut abandoned, mut retries) = (0u64, 0u64, 0u64);
    let (mut lost, mut duplicated) = (0i64, 0u64);
    let (mut any, mut keyed, mut retry_seen) = (false, false, false);
    let mut total = Duration::ZERO;
    for history in runs {
        total += history.info.end.as_duration();
        // client -> when its open update started.
        let mut open: BTreeMap<NodeId, SimTime> = BTreeMap::new();
        // resource -> (acknowledged amount, value of the last accepted write).
        let mut cells: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
        let mut applied: BTreeMap<&str, u64> = BTreeMap::new();
        let mut acked_keys: BTreeSet<&str> = BTreeSet::new();
        for r in &history.records {
            match &r.obs {
                Observation::Waiting { .. } | Observation::Invoke { .. } => {
                    open.entry(r.node).or_insert(r.time);
                }
                Observation::Requested { .. } => {
                    keyed = true;
                    open.entry(r.node).or_insert(r.time);
                }
                Observation::Acked { resource, amount } => {
                    any = true;
                    cells.entry(resource).or_default().0 += amount;
                    completed += 1;
                    if let Some(since) = open.remove(&r.node) {
                        record(&mut latency, r.time.saturating_sub(since));
                    }
                }
                Observation::Completed { key, ok } => {
                    any = true;
                    match (ok, open.remove(&r.node)) {
                        (true, since) => {
                            completed += 1;
                            acked_keys.insert(key);
                            if let Some(since) = since {
                                record(&mut latency, r.time.saturating_sub(since));
                            }
                        }
                        (false, Some(_)) => abandoned += 1,
                        (false, None) => {}
                    }
                }
                Observation::Write {
                    resource,
                    accepted: true,
                    value,
                    ..
                } => cells.entry(resource).or_default().1 = *value,
                Observation::Applied { key } => *applied.entry(key).or_default() += 1,
                Observation::Retry { what, .. } if what != "election" => {
                    retry_seen = true;
                    retries += 1;
                }
                Observation::Crashed | Observation::Started if open.remove(&r.node).is_some() => {
                    abandoned += 1;
                }
                _ => {}
            }
        }
        abandoned += open.len() as u64;
        lost += cells
            .values()
            .map(|(acked, value)| (acked - value).max(0))
            .sum::<i64>();
        lost += acked_keys
            .iter()
            .filter(|k| !applied.contains_key(*k))
            .count() as i64;
        duplicated += applied.values().map(|n| n - 1).sum::<u64>();
    }
    if !any {
        return None;
    }
    let known = retry_seen || !keyed;
    let secs = total.as_secs_f64().max(f64::MIN_POSITIVE);
    Some(UpdateMetrics {
        completed,
        abandoned,
        per_s: completed as f64 / secs,
        latency: percentiles(&latency),
        retries: known.then_some(retries),
        retries_per_update: known.then(|| retries as f64 / completed.max(1) as f64),
        lost,
        duplicated,
    })
}
