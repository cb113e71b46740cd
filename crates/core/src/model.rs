//! What the model checker (tenure-models) needs to know about a protocol, declared by the
//! protocol itself ([`crate::Configurable::model`]) so the zoo is listed once: the bounds
//! within which exploring it means something, its default cluster, parameters and checks,
//! and what the model can and cannot show.

use crate::{LocalTime, Observation};
use std::time::Duration;

/// One handler call advances a node's model clock by this much ([`ClockModel::Steps`]).
pub const TICK: Duration = Duration::from_millis(1);

/// Limits on the exploration and on the faults the environment may inject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// States at this depth are judged but not expanded.
    pub max_depth: usize,
    /// Stop (incomplete) once this many unique states are kept.
    pub max_states: usize,
    pub max_crashes: u32,
    pub max_drops: u32,
    pub max_duplicates: u32,
    /// How many times time may leap ([`Action::Leap`]: every clock moves past every
    /// deadline). Zero: no TTL, lease or session ever expires by the clock.
    pub max_leaps: u32,
    /// What node clocks read (not a bound, but part of what the model abstracts).
    pub clock: ClockModel,
    /// Which observations tell paths apart (not a bound either).
    pub seen: SeenModel,
    /// When timers may fire.
    pub timers: TimerModel,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds::DEFAULT
    }
}

impl Bounds {
    /// The defaults, usable in constants.
    pub const DEFAULT: Bounds = Bounds {
        max_depth: 30,
        max_states: 1_000_000,
        max_crashes: 0,
        max_drops: 0,
        max_duplicates: 0,
        max_leaps: 0,
        clock: ClockModel::Steps,
        seen: SeenModel::All,
        timers: TimerModel::Free,
    };
}

/// When a pending timer may fire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TimerModel {
    /// At any point: timing is entirely free (an asynchronous network, where a timeout
    /// says nothing about whether the other side is alive).
    #[default]
    Free,
    /// Only when no message is in flight anywhere: timeouts are longer than any
    /// round trip, as timeout-based failure detectors assume. Lost messages (the drop
    /// budget) and crashes are then the only way a timeout can be wrong.
    Quiet,
}

/// What a node's clock reads in the model. Either way timers fire in any order, so no
/// reading says anything about real elapsed time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ClockModel {
    /// `steps × 1ms`, where `steps` counts the node's handler calls. A protocol that
    /// stores a reading (Raft's last leader contact) then has a state per step count,
    /// which weakens deduplication.
    #[default]
    Steps,
    /// Always 0: a protocol that stores readings keeps the same state whatever the
    /// count, so deduplication works as for a clock-free protocol. Every interval
    /// measured is zero (a leader contact is always fresh), as with `Steps` at model
    /// depths, where steps × 1ms stays far below any timeout.
    Frozen,
}

impl ClockModel {
    /// The reading after `steps` handler calls.
    pub fn reading(self, steps: u64) -> LocalTime {
        match self {
            ClockModel::Steps => LocalTime(0) + TICK * steps as u32,
            ClockModel::Frozen => LocalTime(0),
        }
    }
}

/// Which observations a [`State`] remembers (in [`State::seen`]) and so which paths
/// deduplication keeps apart. Keep what the path checks judge, and no more: each kept
/// observation multiplies the state space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SeenModel {
    /// Every observation (sound for any checker that judges the set of beliefs held).
    #[default]
    All,
    /// Only `Leader` observations: enough for single leader per term.
    Leaders,
    /// None: only sound for state invariants.
    Nothing,
}

impl SeenModel {
    pub fn keeps(self, obs: &Observation) -> bool {
        match self {
            SeenModel::All => true,
            SeenModel::Leaders => matches!(obs, Observation::Leader { .. }),
            SeenModel::Nothing => false,
        }
    }
}

/// How the explorer runs a protocol: declared by the protocol
/// ([`crate::Configurable::model`]).
#[derive(Clone, Debug)]
pub struct ModelSpec {
    /// What the model covers for this protocol, in a sentence or two.
    pub scope: &'static str,
    /// Broken variants whose failure the model cannot show, and why.
    pub out_of_scope: &'static [(&'static str, &'static str)],
    /// Model properties that stand for a simulator checker, as (property, checker).
    pub stands_for: &'static [(&'static str, &'static str)],
    /// The default cluster, as (role, count).
    pub roles: &'static [(&'static str, u32)],
    pub bounds: Bounds,
    /// States in which a node stored a term above this are pruned (protocols with
    /// [`ModelSpec::term_key`]).
    pub max_term: u64,
    /// The stored key holding the node's term, if it has terms.
    pub term_key: Option<&'static str>,
    /// The checks judged by default.
    pub checks: &'static [&'static str],
    /// Parameters (a JSON object) for exhaustive search: a bounded workload.
    pub params: &'static str,
    /// Parameters for random walks, which are cheap and go deep: a longer workload.
    pub walk_params: &'static str,
}

impl ModelSpec {
    /// A spec with everything at its default: fill in what matters.
    pub const fn new(scope: &'static str, roles: &'static [(&'static str, u32)]) -> ModelSpec {
        ModelSpec {
            scope,
            out_of_scope: &[],
            stands_for: &[],
            roles,
            bounds: Bounds::DEFAULT,
            max_term: 0,
            term_key: None,
            checks: &[],
            params: "{}",
            walk_params: "{}",
        }
    }
}
