//! Fuzzing, shrinking and reproducing.
//!
//! * [`profile`]: fault profiles; each seed draws its own rates, then an explicit fault
//!   schedule, from a ChaCha stream of the seed that no run uses (swarm testing).
//! * [`target`]: what is fuzzed: a scenario (or a protocol's built-in default) plus a
//!   profile; [`Target::case`] is a seed's replayable scenario.
//! * [`engine`]: runs seeds on worker threads and hands outcomes over in seed order,
//!   so results do not depend on the number of threads; [`shard`] splits a seed range.
//! * [`shrink`]: reduces a failing scenario to a minimal one that fails the same checker.
//! * [`triage`]: failures grouped by check and shrunk schedule; one report over many
//!   seeds, of a run or of shards merged.

pub mod coverage;
pub mod engine;

pub mod profile;
pub mod regressions;
pub mod shrink;
pub mod target;
pub mod triage;

pub use coverage::{Coverage, Landed};
pub use engine::{
    case_stem, fuzz, only_check, run_seed, shard, Divergence, Failure, FuzzOptions, FuzzSummary,
    SeedOutcome, SeedResult, VACUITY_PROBE_SEEDS,
};
pub use profile::{
    fuzz_rng, Draw, Drawn, Profile, ProfileTable, DEFAULT_PROFILE, PROFILE_NAMES, WITHIN_PROFILES,
};
pub use shrink::{
    healed, shrink, shrink_clock_settings, shrink_faults, FaultSteps, ShrinkError, Shrunk, Size,
};
pub use target::{
    broken_assumptions, default_scenario, draw, fit_liveness, liveness_bound, Target,
};
pub use triage::{
    signature, Example, Group, NotJudgedLine, Report, ReportBuilder, SeedLine, ShrunkLine,
    DEFAULT_KEEP,
};

/// The zoo's protocols, for this crate's tests.
#[cfg(test)]
pub(crate) fn zoo() -> tenure_sim::Protocols {
    tenure_zoo_prebuilt::protocols()
}
