//! tenure-scenario: the scenario file format. A scenario (TOML) names the protocol and
//! its parameters, the cluster, network defaults, per-node clocks, an explicit fault
//! timeline, the checks, the expected outcome and a default seed.
//!
//! * [`load`] / [`parse`] read a file into a [`Scenario`]; anything wrong is a
//!   [`ScenarioError`] naming the file, the line and the field
//!   (``leader.toml:12:8: field `fault[2].node`: ...``), never a panic.
//! * [`Scenario::resolve_cluster`] and [`Scenario::validate`] check what needs the
//!   protocol's [`tenure_core::ProtocolInfo`] (roles, variants, node ids in range);
//!   [`Scenario::params`] and [`Scenario::check_params`] read the raw parameter tables
//!   into typed structs, errors again pointing into the file.
//! * [`Scenario::to_toml`] writes a scenario back in canonical layout; parsing that
//!   gives an equal scenario (except `file` and `source`), so fuzz and shrink can save
//!   what they generate.
//!
//! # Fault kinds
//!
//! Each `[[fault]]` has `at` (true time since the start), `kind`, and the kind's fields:
//!
//! | kind | fields | effect |
//! |---|---|---|
//! | `partition` | `groups = [[0, 1], [2]]` | split into groups; nodes not listed form one more group |
//! | `isolate` | `node` | cut `node` off from everyone |
//! | `cut` | `nodes = [a, b]` | cut one link, both ways |
//! | `one-way` | `from = [..]`, `to = [..]` | drop messages from `from` to `to`; the reverse works |
//! | `bridge` | `node`, `groups = [[..], [..]]` | `node` sees everyone; the groups do not see each other |
//! | `heal` | | remove every partition, cut, one-way and bridge |
//! | `crash` / `restart` | `node` | stop (storage survives) / start again |
//! | `pause` | `node`, `duration` | a GC/VM stall; resumes by itself |
//! | `clock-jump` | `node`, `by = "-3s"` | the wall clock steps |
//! | `clock-drift` | `node`, `drift = 0.01` | the clock runs at `drift` from then on |
//! | `clock-stall` | `node`, `duration` | the clocks stand still, then run on without a jump |
//! | `clock-slew` | `node`, `by = "-200ms"`, `ppm = 500` | the wall clock moves by `by` gradually |
//! | `network` | `latency?`, `loss?`, `duplicate?` | change the global defaults from then on |
//! | `request` | `node`, `name`, `arg = 0` | a client request to `node` |
//! | `power-loss` | `node`, `torn = false` | a machine crash: unsynced writes lost (the last one torn) |
//! | `byzantine` | `node`, `behaviour` | the node lies from then on: `equivocate`, `wrong-digest`, `silent`, `conflicting-views` |
//!
//! `node` fields take an id, `"leader"`, `"holder"` or `"waiter"` ([`NodeSel`]: a
//! `"holder"` or `"waiter"` event that finds nobody of its role waits for one, up to the
//! next heal); node lists take ids.
//!
//! # Checks and expectation
//!
//! `checks` lists the checkers to run; `[check.<name>]` gives one its parameters.
//! `[expect] outcome = "pass"` (the default) or `outcome = "violation"` with
//! `checker = "<one of checks>"`. An optional `[profile]` (the random fault profile
//! `tenure fuzz` draws from) is kept as written and checked by [`Scenario::validate`]
//! ([`profile::Profile::from_scenario`]), so every command rejects a bad one alike.
//!
//! # A full example
//!
#![doc = concat!("```toml\n", include_str!("example.toml"), "```")]

mod delay;
mod error;
pub mod limits;
mod links;
mod model;
mod parse;
pub mod profile;
mod resolve;
mod serde_util;
pub mod suggest;
mod write;

pub use error::{locate, ScenarioError};
pub use limits::{limits, set_limits, Exceeded, Limits};
pub use links::block_links;
pub use model::{
    CheckSpec, ClockSpec, ClusterSpec, Delay, Expectation, Fault, FaultEvent, Latency, LinkSpec,
    NetworkMode, NetworkSpec, NodeDiskSpec, NodeSel, ProcessingSpec, ProtocolSpec, Scenario,
    DEFAULT_SLEW_PPM,
};
pub use parse::{load, parse, parse_with, text};

/// The full example from the crate docs, for tests.
#[cfg(test)]
pub(crate) const EXAMPLE: &str = include_str!("example.toml");
