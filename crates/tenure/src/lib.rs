//! tenure: test your own coordination protocol in your own crate.
//!
//! Implement [`Protocol`] for your node (a sans-IO state machine: it touches the world
//! only through its [`Env`]), then in a `#[test]` build a [`Simulation`], add checkers
//! and faults, and run one seed or sweep many:
//!
//! ```ignore
//! use tenure::prelude::*;
//!
//! #[test]
//! fn one_leader_per_term() {
//!     let sim = Simulation::<MyElection>::new(Cluster::uniform("node", 5), config)
//!         .duration(secs(30))
//!         .profile("chaos")                                    // faults drawn from the seed
//!         .check("single-leader-per-term")                     // a built-in checker
//!         .checker(|_cluster| Box::new(MyChecker::default()))  // your own
//!         .faults(|s| s.at(secs(2), |c| c.crash(NodeId(0))));  // an explicit timeline
//!     sim.run_seed(42).assert_ok(); // one seed
//!     sim.sweep(0..500);            // many; panics at the first failure
//! }
//! ```
//!
//! A failure panics with the checker, the violation, the seed and the command that
//! replays it (`TENURE_SEED=<n> cargo test <test name>`). `TENURE_SEEDS=A..B` overrides a
//! sweep's range. Failing seeds are saved to `tenure-regressions/<test name>.txt` in your
//! package (commit it) and re-run first on every sweep.
//!
//! Your crate must build with `--cfg madsim` (the simulator runs on madsim): put
//! `[build] rustflags = ["--cfg", "madsim"]` in its `.cargo/config.toml`.
//!
//! The book's "Test your own protocol" page walks through `examples/my-election`.

mod outcome;
pub mod paths;
#[cfg(feature = "proptest")]
pub mod proptest;
pub use tenure_fuzz::regressions;
pub mod seeds;
mod simulation;

pub use outcome::{CheckerFailures, Outcome, SweepCount, SweepReport, TestContext};
pub use simulation::{Shrunk, Simulation, Timeline};

pub use serde_json;
/// Run metrics ([`Outcome::metrics`]) and the leadership audit log
/// ([`Outcome::audit_log`]).
pub use tenure_audit as audit;
pub use tenure_check::custom::{register as register_checker, CustomChecker};
pub use tenure_check::{catalog, CheckError, CheckKind, Checker, CheckerInfo, Violation};
/// What a checker of your own says when a run gave it nothing to judge
/// ([`Checker::not_judged`]).
pub use tenure_check::{NotJudged, Reason};
pub use tenure_core::*;
pub use tenure_fuzz::{Profile, PROFILE_NAMES};
pub use tenure_metrics as metrics;
pub use tenure_scenario::{ClockSpec, Fault, FaultEvent, NodeSel};
pub use tenure_sim::{Control, DurabilityHint, LinkOverride, LinkSettings, Stats, Status};

use std::time::Duration;

/// The whole `tenure` command line for your own protocols: in your crate's
/// `src/bin/NAME.rs`, `fn main() -> ExitCode { tenure::cli::main(MyProtocols) }`, where
/// `MyProtocols` is a [`Catalogue`] of your [`Configurable`] protocols. Join the zoo with
/// `(tenure::cli::Zoo, MyProtocols)` to run both. `main_real(catalogue, real)` also runs
/// the protocols `real` lists as real processes (`node`, `cluster`, `check-trace`).
/// [`cli::Main`] also takes your own checkers:
/// `tenure::cli::Main::new(MyProtocols).checker(my_checker()).run()`.
pub mod cli {
    pub use tenure_cli::{main, main_real, Main, Tools};
    pub use tenure_zoo::Zoo;
}

/// Fault profiles, typed: what each fuzzed seed draws. A [`fuzz::Profile`] is a plain
/// struct whose fields are the knobs (each documented there, and in the book's
/// "Fuzzing and shrinking" page); start from a built-in one and change what you need.
/// [`Simulation::fault_profile`] checks the knobs and draws each seed's faults from it.
///
/// ```
/// use tenure::fuzz::Profile;
/// use tenure::prelude::*;
/// use tenure_protocols::raft::{Raft, RaftVariant};
///
/// # fn main() -> Result<(), String> {
/// let cluster = Cluster::uniform("server", 5);
/// let config = Raft::configure(Default::default(), RaftVariant::Correct, &cluster).unwrap();
/// // Chaos, where every seed pauses nodes for half a second to three seconds.
/// let long_pauses = Profile {
///     pause: 1.0,
///     pause_range: [millis(500), secs(3)],
///     ..Profile::builtin("chaos")?
/// };
/// Simulation::<Raft>::new(cluster, config)
///     .duration(secs(10))
///     .fault_profile(long_pauses)
///     .check("single-leader-per-term")
///     .sweep(0..20); // a correct Raft keeps one leader per term: no panic
/// # Ok(())
/// # }
/// ```
pub mod fuzz {
    pub use tenure_fuzz::{
        Draw, Drawn, Profile, ProfileTable, DEFAULT_PROFILE, PROFILE_NAMES, WITHIN_PROFILES,
    };
}

/// `n` seconds.
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// `n` milliseconds.
pub fn millis(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// What a protocol and its tests need: `use tenure::prelude::*;`.
pub mod prelude {
    pub use crate::{millis, secs, Checker, Control, Outcome, Simulation, Violation};
    pub use tenure_core::{
        Catalogue, Cluster, Configurable, Env, HumanDuration, LocalTime, NodeId, Observation,
        ParamError, Protocol, ProtocolInfo, RealCatalogue, RealVisitor, Record, RoleInfo, RoleSpec,
        Roles, RunInfo, SimTime, StorageExt, Variant, VariantInfo, Visitor,
    };
}
