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
#[cfg(feature = "proptest")]
pub mod proptest;
pub mod regressions;
pub mod seeds;
mod simulation;

pub use outcome::{CheckerFailures, Outcome, SweepCount, SweepReport, TestContext};
pub use simulation::{Shrunk, Simulation, Timeline};

pub use serde_json;
/// Run metrics ([`Outcome::metrics`]) and the leadership audit log
/// ([`Outcome::audit_log`]).
pub use tenure_audit as audit;
pub use tenure_check::{catalog, Checker, CheckerInfo, Violation};
pub use tenure_core::*;
pub use tenure_fuzz::{Profile, PROFILE_NAMES};
pub use tenure_metrics as metrics;
pub use tenure_scenario::{Fault, FaultEvent, NodeSel};
pub use tenure_sim::{Control, LinkOverride, LinkSettings, Stats, Status};

use std::time::Duration;

/// The whole `tenure` command line for your own protocols: in your crate's
/// `src/bin/NAME.rs`, `fn main() -> ExitCode { tenure::cli::main(MyProtocols) }`, where
/// `MyProtocols` is a [`Catalogue`] of your [`Configurable`] protocols. Join the zoo with
/// `(tenure::cli::Zoo, MyProtocols)` to run both.
pub mod cli {
    pub use tenure_cli::{main, Tools};
    pub use tenure_zoo::Zoo;
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
        ParamError, Protocol, ProtocolInfo, Record, RoleInfo, RoleSpec, RunInfo, SimTime,
        StorageExt, Variant, VariantInfo, Visitor,
    };
}
