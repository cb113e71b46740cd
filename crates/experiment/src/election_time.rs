//! How long is a Raft cluster without a leader after its leader crashes?
//!
//! **What it reproduces.** The leader-election measurement of Ongaro and Ousterhout,
//! "In Search of an Understandable Consensus Algorithm (Extended Version)", §9.3 and
//! Figure 16 (also Ongaro's thesis, chapter 9): five servers with a broadcast time of
//! about 15 ms; the heartbeat interval is half the minimum election timeout; some
//! servers' logs are too old for them to win; the leader broadcasts a heartbeat and
//! crashes at a uniformly random point of its heartbeat interval after it; and the
//! downtime is measured for each election timeout range, 1000 trials per range (100
//! for a range without randomness).
//!
//! **One trial**, on the sim's [`Raft`] (the correct variant):
//! * Servers 0, 1 and 2 have the log `[1, 2]` and servers 3 and 4 the log `[1]`, so by
//!   the up-to-date rule (§5.4.1) only 0, 1 and 2 can win: the crashed leader is one of
//!   them, and two of its four survivors cannot replace it.
//! * The paper's setup, as it states it: five servers on a LAN with a "broadcast time
//!   (network round trip plus disk write) of roughly 15 ms", the disk write being what
//!   Raft persists before it answers (Figure 2: term and vote are "updated on stable
//!   storage before responding to RPCs"; §5.6: "0.5ms to 20ms, depending on storage
//!   technology"). So every one-way latency is drawn uniformly from
//!   [`Setup::latency`] (default 0.1–0.5 ms, a LAN) and every `sync` of a server takes
//!   a latency drawn uniformly from [`Setup::fsync`]. The stated setup would be a
//!   10–18 ms write (a round trip plus the write about 15 ms); the default is 1–3 ms,
//!   the write at which the paper's figures come out (below). tenure's Raft, like
//!   LogCabin (the paper's implementation, whose `startNewElection` writes the log
//!   metadata before its peer threads send RequestVote), syncs a new term and vote
//!   before sending anything: a candidate's RequestVote waits for its own write, a
//!   vote for the voter's, and the node handles nothing else meanwhile.
//! * Each handler may also take processing time, [`Setup::processing`] (default none:
//!   the paper states none).
//! * Once a leader is steady (every other server follows it in its term, for at least
//!   one heartbeat interval), the supervisor makes it broadcast heartbeats at once
//!   ([`Control::fire_timer`]: the paper's "synchronized broadcast of heartbeat RPCs")
//!   and crashes it `u` later, `u` drawn uniformly from `[0, heartbeat_interval)`
//!   with a generator seeded by the trial's seed.
//! * **Downtime** is the time from the crash until the first instant at which a new
//!   leader believes it leads a term and every other survivor follows it in that term
//!   (`Follower { term, leader: Some(new) }`): the paper's "until the other servers
//!   received the new leader's first heartbeat", read literally, all three of them.
//! * A trial with no such instant within [`Setup::cap`] of the crash counts as "no
//!   leader within the cap"; it is longer than every trial that finished.
//!
//! **How it can mislead.** The simulator's timers are exact and its only jitter is the
//! drawn latencies (and madsim's 1 ms minimum sleep, which makes any delay under 1 ms,
//! such as the LAN's, act as about 1 ms), while real servers also jitter in
//! scheduling; where the paper's split votes eventually resolved by such noise, a run
//! here may split forever. And with the paper's stated 15 ms broadcast time the
//! figures do not come out as the paper's: each candidate's own disk write (about
//! 14 ms) delays its RequestVote past the other survivors' timeouts, which 5 ms of
//! randomness spreads over only 5 ms, so 150–155 ms elections split term after term,
//! and 12–24 ms timeouts are shorter than a vote's two disk writes (see the book page,
//! "Election time", for the traces). With a 1–3 ms write, the default, they do.
//!
//! **Determinism.** Trial `i` of a range uses the seed [`trial_seed`]`(range, i)`, so
//! the results are a pure function of (code, range, setup, trial count), whatever the
//! number of worker threads.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tenure_core::{parse_duration, Cluster, NodeId, Observation, Record, Rng, SimTime, SplitMix64};
pub use tenure_protocols::raft::TimeoutRange;
use tenure_protocols::raft::{configure, Raft, RaftConfig, RaftParams, RaftTimer, RaftVariant};
use tenure_sim::net::LinkSettings;
use tenure_sim::Sim;
use tenure_sim::{Action, Control};

/// The cluster size of the paper's measurement.
pub const SERVERS: u32 = 5;

/// The paper's election timeout ranges (ms): the top graph of Figure 16 varies the
/// randomness, the bottom graph scales the minimum.
pub const PAPER_RANGES_MS: [(u64, u64); 10] = [
    (150, 150),
    (150, 151),
    (150, 155),
    (150, 175),
    (150, 200),
    (150, 300),
    (12, 24),
    (25, 50),
    (50, 100),
    (100, 200),
];

/// Trials per range in the paper.
pub const PAPER_TRIALS: usize = 1000;
/// Trials for a range without randomness, where the paper ran 100.
pub const FIXED_TIMEOUT_TRIALS: usize = 100;

/// When server 0 is made to stand for election.
const WARMUP_START: Duration = Duration::from_millis(1);
/// How often the supervisor looks for a steady leader during the warm-up.
const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// The shortest minimum election timeout accepted: madsim sleeps at least 1 ms, and
/// the heartbeat interval is half the minimum.
const MIN_TIMEOUT: Duration = Duration::from_millis(2);
/// The longest election timeout accepted.
const MAX_TIMEOUT: Duration = Duration::from_secs(60);

/// The parts of the setup that are not the timeout range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// One-way message latency, drawn uniformly per message. Default 0.1–0.5 ms: the
    /// paper's servers were on a LAN, and its broadcast time was mostly the disk write.
    pub latency: (Duration, Duration),
    /// Every server's fsync latency, drawn uniformly per sync (Raft syncs a new term
    /// and vote before it sends). Default 1–3 ms: the write at which Figure 16's
    /// figures come out. The paper's stated broadcast time ("roughly 15ms", mostly the
    /// disk write) on an election's path, 10–18 ms, does not give them (see the
    /// module's "How it can mislead" and the book page).
    pub fsync: (Duration, Duration),
    /// Every server's processing time per handler, drawn uniformly per handler (the
    /// node handles nothing else meanwhile). Default zero: the paper states none.
    pub processing: (Duration, Duration),
    /// A trial with no new leader this long after the crash counts as "no leader".
    pub cap: Duration,
    /// The longest the cluster may take to elect its first, steady leader (server 0
    /// is made to stand first, alone, so it usually takes one election; with disk
    /// writes longer than the election timeout it may never come:
    /// [`Outcome::NeverSteady`]).
    pub warmup_cap: Duration,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            latency: (Duration::from_micros(100), Duration::from_micros(500)),
            fsync: (Duration::from_millis(1), Duration::from_millis(3)),
            processing: (Duration::ZERO, Duration::ZERO),
            cap: Duration::from_secs(10),
            warmup_cap: Duration::from_secs(10),
        }
    }
}

/// The paper's ranges.
pub fn paper_ranges() -> Vec<TimeoutRange> {
    PAPER_RANGES_MS
        .iter()
        .map(|(min, max)| TimeoutRange {
            min: Duration::from_millis(*min),
            max: Duration::from_millis(*max),
        })
        .collect()
}

/// Parses a range as the paper writes it, in milliseconds (`150-155`, `12.5-25`), or
/// with units (`150ms-155ms`, `1s-2s`).
pub fn parse_range(text: &str) -> Result<TimeoutRange, String> {
    let (lo, hi) = text
        .split_once('-')
        .ok_or_else(|| format!("`{text}` is not a range like `150-300` (milliseconds)"))?;
    let bound = |part: &str| -> Result<Duration, String> {
        let part = part.trim();
        match part.parse::<f64>() {
            Ok(ms) if ms.is_finite() && ms >= 0.0 => {
                Ok(Duration::from_nanos((ms * 1e6).round() as u64))
            }
            Ok(_) => Err(format!("`{part}` in `{text}` is not a duration")),
            Err(_) => parse_duration(part).map_err(|e| format!("in `{text}`: {e}")),
        }
    };
    let range = TimeoutRange {
        min: bound(lo)?,
        max: bound(hi)?,
    };
    if range.min > range.max {
        return Err(format!("`{text}`: the minimum is above the maximum"));
    }
    if range.min < MIN_TIMEOUT {
        return Err(format!(
            "`{text}`: the minimum must be at least 2ms (the heartbeat interval is half \
             of it, and the simulator's timers resolve 1ms)"
        ));
    }
    if range.max > MAX_TIMEOUT {
        return Err(format!("`{text}`: the maximum must be at most 60s"));
    }
    Ok(range)
}

/// The range as the paper labels it, in milliseconds: `150-155`.
pub fn range_label(range: &TimeoutRange) -> String {
    format!("{}-{}", ms_text(range.min), ms_text(range.max))
}

fn ms_text(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns.is_multiple_of(1_000_000) {
        (ns / 1_000_000).to_string()
    } else {
        let text = format!("{:.6}", ns as f64 / 1e6);
        text.trim_end_matches('0').to_string()
    }
}

/// How many trials a range gets when `trials` are asked for: a range without
/// randomness gets at most [`FIXED_TIMEOUT_TRIALS`], as in the paper.
pub fn trials_for(range: &TimeoutRange, trials: usize) -> usize {
    if range.min == range.max {
        trials.min(FIXED_TIMEOUT_TRIALS)
    } else {
        trials
    }
}

/// Half the minimum election timeout, as in the paper.
pub fn heartbeat_interval(range: &TimeoutRange) -> Duration {
    range.min / 2
}

/// The Raft configuration of a trial: the range, its heartbeat interval, and logs that
/// make servers 3 and 4 ineligible.
pub fn raft_config(range: &TimeoutRange) -> RaftConfig {
    let hms = |d: Duration| tenure_core::HumanDuration(d);
    let mut params = RaftParams {
        election_timeout: [hms(range.min), hms(range.max)],
        heartbeat_interval: hms(heartbeat_interval(range)),
        ..RaftParams::default()
    };
    for node in 0..SERVERS {
        let log = if node < 3 { vec![1, 2] } else { vec![1] };
        params.logs.insert(node.to_string(), log);
    }
    configure(params, RaftVariant::Correct, &cluster())
        .unwrap_or_else(|e| panic!("parse_range admits only valid ranges: {e}"))
}

fn cluster() -> Cluster {
    Cluster::uniform("server", SERVERS)
}

/// The seed of trial `index` of `range`.
pub fn trial_seed(range: &TimeoutRange, index: usize) -> u64 {
    let min = range.min.as_nanos() as u64;
    let max = range.max.as_nanos() as u64;
    let base = SplitMix64(min.rotate_left(32) ^ max).next_u64();
    SplitMix64(base ^ index as u64).next_u64()
}

/// How a trial ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A new leader was known to every survivor this long after the crash.
    Elected(Duration),
    /// No new leader within the cap.
    NoLeader,
    /// The cluster never had a steady leader to crash within the warm-up cap (its
    /// elections kept splitting): counted as "no leader".
    NeverSteady,
}

/// One trial's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trial {
    pub seed: u64,
    pub outcome: Outcome,
    /// The crashed leader and when it crashed (true time); `None` if no leader was
    /// ever steady ([`Outcome::NeverSteady`]).
    pub crash: Option<(NodeId, SimTime)>,
    /// How long after its synchronized heartbeat broadcast the leader crashed.
    pub crash_after: Duration,
    /// The new leader and its term.
    pub new_leader: Option<(NodeId, u64)>,
    /// How many terms the replacement took (1 when the first election won).
    pub terms: Option<u64>,
}

impl Trial {
    /// The downtime, if a new leader was elected within the cap.
    pub fn downtime(&self) -> Option<Duration> {
        match self.outcome {
            Outcome::Elected(d) => Some(d),
            Outcome::NoLeader | Outcome::NeverSteady => None,
        }
    }
}

/// What a node last said it believes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Belief {
    Unknown,
    Down,
    Leader(u64),
    Follower(u64, Option<NodeId>),
}

/// Follows the observations of a trial: when a leader is steady before the crash, and
/// when every survivor follows a new one after it.
#[derive(Clone, Debug)]
pub struct Tracker {
    beliefs: Vec<Belief>,
    /// The leader every server agrees on (and its term), and since when.
    agreed: Option<(NodeId, u64, SimTime)>,
    /// The leader when the crash came, and its term.
    old_leader: Option<(NodeId, u64)>,
    crash: Option<(NodeId, SimTime)>,
    elected: Option<(NodeId, u64, SimTime)>,
}

impl Tracker {
    pub fn new(servers: usize) -> Tracker {
        Tracker {
            beliefs: vec![Belief::Unknown; servers],
            agreed: None,
            old_leader: None,
            crash: None,
            elected: None,
        }
    }

    /// Feeds one record; true once a new leader is followed by every survivor.
    pub fn on_record(&mut self, record: &Record) -> bool {
        let i = record.node.index();
        self.beliefs[i] = match record.obs {
            Observation::Started => Belief::Unknown,
            Observation::Crashed => Belief::Down,
            Observation::Leader { term } => Belief::Leader(term),
            Observation::Follower { term, leader } => Belief::Follower(term, leader),
            // A candidate follows nobody; for agreement it is as good as unknown.
            Observation::Candidate { .. } => Belief::Unknown,
            _ => self.beliefs[i],
        };
        if record.obs == Observation::Crashed && self.crash.is_none() {
            self.crash = Some((record.node, record.time));
            self.old_leader = self.agreed.map(|(leader, term, _)| (leader, term));
        }
        let now_agreed = self.agreement();
        self.agreed = match (self.agreed, now_agreed) {
            (Some((l, t, since)), Some((l2, t2))) if (l, t) == (l2, t2) => Some((l, t, since)),
            (_, Some((l, t))) => Some((l, t, record.time)),
            (_, None) => None,
        };
        if self.crash.is_some() && self.elected.is_none() {
            if let Some((leader, term)) = now_agreed {
                self.elected = Some((leader, term, record.time));
                return true;
            }
        }
        false
    }

    /// The leader every live server agrees on: it believes it leads a term and every
    /// other live server follows it in that term.
    fn agreement(&self) -> Option<(NodeId, u64)> {
        let (leader, term) = self.beliefs.iter().enumerate().find_map(|(i, b)| match b {
            Belief::Leader(t) => Some((NodeId(i as u32), *t)),
            _ => None,
        })?;
        let all_follow = self.beliefs.iter().enumerate().all(|(i, b)| {
            i == leader.index() || *b == Belief::Down || *b == Belief::Follower(term, Some(leader))
        });
        all_follow.then_some((leader, term))
    }

    /// The steady leader and its term, if every server has followed it since `since`.
    fn steady_since(&self, at_least: Duration, now: SimTime) -> Option<(NodeId, u64)> {
        let (leader, term, since) = self.agreed?;
        (now.saturating_sub(since) >= at_least).then_some((leader, term))
    }

    fn result(&self, seed: u64, crash_after: Duration, cap: Duration) -> Trial {
        let Some((crashed, crash_at)) = self.crash else {
            // No leader was ever steady (the warm-up's own elections kept splitting,
            // as when the disk write is longer than the election timeout): no crash.
            return Trial {
                seed,
                outcome: Outcome::NeverSteady,
                crash: None,
                crash_after,
                new_leader: None,
                terms: None,
            };
        };
        let elected = self
            .elected
            .filter(|(_, _, at)| at.saturating_sub(crash_at) <= cap);
        let outcome = match elected {
            Some((_, _, at)) => Outcome::Elected(at.saturating_sub(crash_at)),
            None => Outcome::NoLeader,
        };
        let old_term = self.old_leader.map(|(_, t)| t);
        Trial {
            seed,
            outcome,
            crash: Some((crashed, crash_at)),
            crash_after,
            new_leader: elected.map(|(l, t, _)| (l, t)),
            terms: elected.zip(old_term).map(|((_, t, _), old)| t - old),
        }
    }
}

fn lock(tracker: &Mutex<Tracker>) -> MutexGuard<'_, Tracker> {
    tracker
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs trial `index` of `range`.
pub fn run_trial(range: &TimeoutRange, setup: &Setup, index: usize) -> Trial {
    trial(range, setup, index, false).0
}

/// Runs trial `index` of `range` with the simulator's full trace (messages, timers,
/// syncs, faults): the same trial as [`run_trial`]'s, to see why it took as long as
/// it did.
pub fn run_trial_traced(
    range: &TimeoutRange,
    setup: &Setup,
    index: usize,
) -> (Trial, Vec<tenure_sim::trace::TraceEvent>) {
    let (trial, trace) = trial(range, setup, index, true);
    (trial, trace.unwrap_or_default())
}

fn trial(
    range: &TimeoutRange,
    setup: &Setup,
    index: usize,
    trace: bool,
) -> (Trial, Option<Vec<tenure_sim::trace::TraceEvent>>) {
    let seed = trial_seed(range, index);
    let heartbeat = heartbeat_interval(range);
    // The crash's place in the heartbeat interval: its own stream, drawn up front.
    let mut draw = SplitMix64(seed ^ 0x6372_6173_6821_2121);
    let crash_after =
        Duration::from_nanos(draw.range_inclusive(0, heartbeat.as_nanos() as u64 - 1));
    let plan = Plan {
        heartbeat,
        crash_after,
        cap: setup.cap,
        warmup_cap: setup.warmup_cap,
    };
    let tracker = Arc::new(Mutex::new(Tracker::new(SERVERS as usize)));
    let hook_tracker = tracker.clone();
    let watch_tracker = tracker.clone();
    let duration = setup.warmup_cap + heartbeat + setup.cap + Duration::from_secs(1);
    let network = LinkSettings {
        latency: tenure_sim::net::Delay::uniform(setup.latency.0, setup.latency.1),
        loss: 0.0,
        duplicate: 0.0,
    };
    let mut sim = Sim::<Raft>::new(cluster(), raft_config(range), seed)
        .duration(duration)
        .network(network)
        .trace(trace);
    for node in cluster().nodes() {
        sim = sim.fsync(node, setup.fsync.0, setup.fsync.1).processing(
            node,
            setup.processing.0,
            setup.processing.1,
        );
    }
    let run = sim
        // The warm-up: server 0 stands first, so each trial starts from a steady
        // leader at once (with equal timeouts all five would stand together).
        .at(WARMUP_START, |c: &mut Control<'_, Raft>| {
            c.fire_timer(NodeId(0), RaftTimer::Election);
        })
        .on_record(Box::new(move |_, record| {
            lock(&hook_tracker).on_record(record)
        }))
        .at(POLL_INTERVAL, move |c: &mut Control<'_, Raft>| {
            watch(watch_tracker, plan)(c)
        })
        .run();
    assert!(
        run.stopped_early,
        "every trial ends by its own stop (new leader, cap, or warm-up cap)"
    );
    let trial = lock(&tracker).result(seed, crash_after, setup.cap);
    (trial, run.trace)
}

/// The timing of one trial's crash.
#[derive(Clone, Copy, Debug)]
struct Plan {
    heartbeat: Duration,
    crash_after: Duration,
    cap: Duration,
    warmup_cap: Duration,
}

/// Waits for a steady leader, then makes it broadcast heartbeats and crashes it
/// `crash_after` later; stops the run `cap` after the crash.
fn watch(tracker: Arc<Mutex<Tracker>>, plan: Plan) -> Action<Raft> {
    Box::new(move |c: &mut Control<'_, Raft>| {
        let steady = lock(&tracker).steady_since(plan.heartbeat, c.now());
        match steady {
            Some((leader, _)) if c.leader() == Some(leader) => {
                let fired = c.fire_timer(leader, RaftTimer::Heartbeat);
                assert!(fired, "a live leader always has its heartbeat timer set");
                c.after(
                    plan.crash_after,
                    Box::new(move |c: &mut Control<'_, Raft>| {
                        c.crash(leader);
                        c.after(plan.cap, Box::new(|c: &mut Control<'_, Raft>| c.stop()));
                    }),
                );
            }
            _ if c.now() >= SimTime::from_duration(plan.warmup_cap) => c.stop(),
            _ => c.after(POLL_INTERVAL, watch(tracker, plan)),
        }
    })
}

/// Runs `trials` trials of `range` on `jobs` threads; `progress` is called after each
/// trial with the number done. The result is in trial order, whatever `jobs` is.
pub fn run_range(
    range: &TimeoutRange,
    setup: &Setup,
    trials: usize,
    jobs: usize,
    progress: &(dyn Fn(usize) + Sync),
) -> Vec<Trial> {
    let mut results = Vec::with_capacity(trials);
    tenure_pool::run(
        0..trials as u64,
        jobs,
        &std::sync::atomic::AtomicBool::new(false),
        |i| run_trial(range, setup, i as usize),
        |_, trial| {
            results.push(trial);
            progress(results.len());
            tenure_pool::Flow::Continue
        },
    );
    results
}

mod report;
#[cfg(test)]
mod tests;

pub use report::{plots, table, RangeResult};
