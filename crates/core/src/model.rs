//! What the model checker (tenure-models) needs to know about a protocol, declared by the
//! protocol itself ([`crate::Configurable::model`]) so the zoo is listed once: the bounds
//! within which exploring it means something, its default cluster, parameters and checks,
//! and what the model can and cannot show.

use crate::{Byzantine, LocalTime, Observation};
use std::time::Duration;

/// One handler call advances a node's model clock by this much ([`ClockModel::Steps`]).
pub const TICK: Duration = Duration::from_millis(1);

/// Limits on the exploration and on the faults the environment may inject.
///
/// Built from [`Bounds::DEFAULT`] with one `const fn` builder per field
/// (`Bounds::DEFAULT.with_max_depth(12).with_max_crashes(1)`); the fields are public for
/// reading. `#[non_exhaustive]`: a field added later is not a breaking change.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
    /// How many times the environment may isolate a node for an instant: every message
    /// then in flight to or from it is lost at once (`Action::Isolate`, one fault event
    /// where dropping them one by one would take as many steps as there are messages).
    /// Zero: messages are lost only one at a time, within [`Bounds::max_drops`].
    pub max_isolations: u32,
    /// How many nodes the environment may turn Byzantine (each with one of
    /// [`Bounds::behaviours`], through `Protocol::on_byzantine`), among the nodes of the
    /// cluster's first role, as the `byzantine` fuzz profile draws them. The explorer
    /// refuses more than the protocol declares it tolerates (`max-byzantine`).
    pub max_byzantine: u32,
    /// The behaviours a node turned Byzantine may take (not a bound, but what the model
    /// explores): every one by default.
    pub behaviours: &'static [Byzantine],
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
        max_isolations: 0,
        max_byzantine: 0,
        behaviours: <Byzantine as strum::VariantArray>::VARIANTS,
        clock: ClockModel::Steps,
        seen: SeenModel::All,
        timers: TimerModel::Free,
    };

    /// With `max_depth`: states at this depth are judged but not expanded.
    pub const fn with_max_depth(mut self, max_depth: usize) -> Bounds {
        self.max_depth = max_depth;
        self
    }

    /// With `max_states`: stop (incomplete) once this many unique states are kept.
    pub const fn with_max_states(mut self, max_states: usize) -> Bounds {
        self.max_states = max_states;
        self
    }

    /// With `max_crashes`: how many crashes the environment may inject.
    pub const fn with_max_crashes(mut self, max_crashes: u32) -> Bounds {
        self.max_crashes = max_crashes;
        self
    }

    /// With `max_drops`: how many messages the environment may drop.
    pub const fn with_max_drops(mut self, max_drops: u32) -> Bounds {
        self.max_drops = max_drops;
        self
    }

    /// With `max_duplicates`: how many messages the environment may duplicate.
    pub const fn with_max_duplicates(mut self, max_duplicates: u32) -> Bounds {
        self.max_duplicates = max_duplicates;
        self
    }

    /// With `max_leaps`: how many times time may leap.
    pub const fn with_max_leaps(mut self, max_leaps: u32) -> Bounds {
        self.max_leaps = max_leaps;
        self
    }

    /// With `max_isolations`: how many times a node may be isolated (every message in
    /// flight to or from it lost at once).
    pub const fn with_max_isolations(mut self, max_isolations: u32) -> Bounds {
        self.max_isolations = max_isolations;
        self
    }

    /// With `max_byzantine`: how many nodes the environment may turn Byzantine.
    pub const fn with_max_byzantine(mut self, max_byzantine: u32) -> Bounds {
        self.max_byzantine = max_byzantine;
        self
    }

    /// With `behaviours`: the behaviours a node turned Byzantine may take.
    pub const fn with_behaviours(mut self, behaviours: &'static [Byzantine]) -> Bounds {
        self.behaviours = behaviours;
        self
    }

    /// With `clock`: what node clocks read.
    pub const fn with_clock(mut self, clock: ClockModel) -> Bounds {
        self.clock = clock;
        self
    }

    /// With `seen`: which observations tell paths apart.
    pub const fn with_seen(mut self, seen: SeenModel) -> Bounds {
        self.seen = seen;
        self
    }

    /// With `timers`: when timers may fire.
    pub const fn with_timers(mut self, timers: TimerModel) -> Bounds {
        self.timers = timers;
        self
    }
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
///
/// Built with [`ModelSpec::new`] and one `const fn` builder per other field, so it fits
/// a `static`; the fields are public for reading. `#[non_exhaustive]`: a field added
/// later is not a breaking change.
///
/// ```
/// use tenure_core::model::{Bounds, ModelSpec};
///
/// static MODEL: ModelSpec = ModelSpec::new("two clients and one lock server", &[("server", 1), ("client", 2)])
///     .with_bounds(Bounds::DEFAULT.with_max_depth(12).with_max_crashes(1))
///     .with_checks(&["mutual-exclusion"])
///     .with_params(r#"{"rounds": 1}"#);
/// assert_eq!(MODEL.bounds.max_depth, 12);
/// assert_eq!(MODEL.checks, ["mutual-exclusion"]);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ModelSpec {
    /// What the model covers for this protocol, in a sentence or two.
    pub scope: &'static str,
    /// Broken variants whose failure the model cannot show, and why.
    pub out_of_scope: &'static [(&'static str, &'static str)],
    /// Broken variants the breadth-first search shows failing but random walks are not
    /// expected to, and why (a schedule too particular for a uniform walk to draw): a
    /// walk of them that finds nothing is a pass of the walks taken, with this said.
    pub walks_miss: &'static [(&'static str, &'static str)],
    /// Model properties that stand for a simulator checker, as (property, checker).
    pub stands_for: &'static [(&'static str, &'static str)],
    /// The default cluster, as (role, count).
    pub roles: &'static [(&'static str, u32)],
    pub bounds: Bounds,
    /// Bounds for some variants instead of [`ModelSpec::bounds`], as (variant, bounds):
    /// a variant whose shortest counterexample lies deeper or needs a fault the others
    /// do not (a crash), so that the default search of that variant finds it.
    pub variant_bounds: &'static [(&'static str, Bounds)],
    /// States in which a node stored a term above this are pruned (protocols with
    /// [`ModelSpec::term_key`]).
    pub max_term: u64,
    /// The stored key holding the node's term, if it has terms: a JSON number stored
    /// under that key, or `key/field` for a number field of a JSON object stored under
    /// `key` (PBFT's view, `pbft/view`).
    pub term_key: Option<&'static str>,
    /// How many copies of one message may be in flight without a duplicate fault (1 by
    /// default): states with more are pruned, so heartbeats that re-send what is still
    /// in flight do not pile up. A protocol that sends the same message twice in one
    /// step (Multi-Paxos: a new leader's accepts, then its first heartbeat's re-sends
    /// of them) needs 2, or the paths through that step are pruned.
    pub copies: u32,
    /// The checks judged by default.
    pub checks: &'static [&'static str],
    /// Parameters (a JSON object) for some of the checks, as (check, params): those a
    /// protocol's promise gives its check (PBFT's `validity` with `by_value`). A check
    /// not listed is built with its defaults.
    pub check_params: &'static [(&'static str, &'static str)],
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
            walks_miss: &[],
            stands_for: &[],
            roles,
            bounds: Bounds::DEFAULT,
            variant_bounds: &[],
            max_term: 0,
            term_key: None,
            copies: 1,
            checks: &[],
            check_params: &[],
            params: "{}",
            walk_params: "{}",
        }
    }

    /// With the default cluster, as (role, count).
    pub const fn with_roles(mut self, roles: &'static [(&'static str, u32)]) -> ModelSpec {
        self.roles = roles;
        self
    }

    /// With `out_of_scope`: broken variants whose failure the model cannot show, and why.
    pub const fn with_out_of_scope(
        mut self,
        out_of_scope: &'static [(&'static str, &'static str)],
    ) -> ModelSpec {
        self.out_of_scope = out_of_scope;
        self
    }

    /// With `walks_miss`: broken variants the search shows failing but random walks are
    /// not expected to, and why.
    pub const fn with_walks_miss(
        mut self,
        walks_miss: &'static [(&'static str, &'static str)],
    ) -> ModelSpec {
        self.walks_miss = walks_miss;
        self
    }

    /// With `stands_for`: model properties that stand for a simulator checker, as (property, checker).
    pub const fn with_stands_for(
        mut self,
        stands_for: &'static [(&'static str, &'static str)],
    ) -> ModelSpec {
        self.stands_for = stands_for;
        self
    }

    /// The simulator checker a model property stands for ([`ModelSpec::stands_for`]),
    /// or the property itself when it is a checker's own name.
    pub fn checker_for<'a>(&self, property: &'a str) -> &'a str {
        self.stands_for
            .iter()
            .find(|(p, _)| *p == property)
            .map_or(property, |(_, checker)| checker)
    }

    /// With `bounds`: the exploration and fault bounds.
    pub const fn with_bounds(mut self, bounds: Bounds) -> ModelSpec {
        self.bounds = bounds;
        self
    }

    /// With `variant_bounds`: bounds for some variants instead of the spec's, as
    /// (variant, bounds).
    pub const fn with_variant_bounds(
        mut self,
        variant_bounds: &'static [(&'static str, Bounds)],
    ) -> ModelSpec {
        self.variant_bounds = variant_bounds;
        self
    }

    /// The bounds `variant` is explored with by default: its own
    /// ([`ModelSpec::variant_bounds`]) or the spec's.
    pub fn bounds_for(&self, variant: &str) -> &Bounds {
        self.variant_bounds
            .iter()
            .find(|(v, _)| *v == variant)
            .map_or(&self.bounds, |(_, b)| b)
    }

    /// With `max_term`: states in which a node stored a term above this are pruned.
    pub const fn with_max_term(mut self, max_term: u64) -> ModelSpec {
        self.max_term = max_term;
        self
    }

    /// With `term_key`: the stored key holding the node's term (a protocol with terms).
    pub const fn with_term_key(mut self, term_key: &'static str) -> ModelSpec {
        self.term_key = Some(term_key);
        self
    }

    /// With `copies`: how many copies of one message may be in flight without a
    /// duplicate fault (see [`ModelSpec::copies`]).
    pub const fn with_copies(mut self, copies: u32) -> ModelSpec {
        self.copies = copies;
        self
    }

    /// With `checks`: the checks judged by default.
    pub const fn with_checks(mut self, checks: &'static [&'static str]) -> ModelSpec {
        self.checks = checks;
        self
    }

    /// With `check_params`: parameters for some of the checks, as (check, JSON object).
    pub const fn with_check_params(
        mut self,
        check_params: &'static [(&'static str, &'static str)],
    ) -> ModelSpec {
        self.check_params = check_params;
        self
    }

    /// With `params`: parameters (a JSON object) for exhaustive search.
    pub const fn with_params(mut self, params: &'static str) -> ModelSpec {
        self.params = params;
        self
    }

    /// With `walk_params`: parameters (a JSON object) for random walks.
    pub const fn with_walk_params(mut self, walk_params: &'static str) -> ModelSpec {
        self.walk_params = walk_params;
        self
    }
}
