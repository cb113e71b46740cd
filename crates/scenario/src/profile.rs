//! The fault profile's *spec*: the built-in profiles, their knobs, the values each knob
//! takes, validation of a scenario's `[profile]` table and the table that gives a
//! profile back ([`Profile::to_json`]). It lives with the scenario format so that every
//! command that reads a scenario (`run`, `verify`, `fuzz`, `shrink`) validates
//! `[profile]` the same way, through [`crate::Scenario::validate`]. *Drawing* a seed's
//! faults from a profile is the fuzzer's (`tenure_fuzz::Draw`).
//!
//! Two serde types, one per shape of the same knobs:
//!
//! * [`ProfileTable`] is the `[profile]` table as written: `name` (the built-in base)
//!   and an `Option` per knob, `deny_unknown_fields`, each value checked as it is read,
//!   so an error names `profile.<knob>` and its line.
//! * [`Profile`] is a resolved profile, every knob set: the base's values with the
//!   table's overrides on top. Overriding and giving the table back are done by serde
//!   (the base and the table as JSON, merged or compared key by key), so no knob is
//!   handled by name anywhere but in these two structs.
//!
//! The knobs are described once, for users, in the book (`fuzzing.md`), and here on
//! each field of [`Profile`].

use crate::{Scenario, ScenarioError};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::time::Duration;
use tenure_core::{format_duration, parse_duration};

/// The names of the built-in profiles, in the order `--help` lists them.
pub const PROFILE_NAMES: &[&str] = &[
    "calm",
    "partitions",
    "clocks",
    "pauses",
    "crashes",
    "chaos",
    "beyond",
    "field",
    "power",
    "byzantine",
];

/// The profiles that draw within the target's declared assumptions: a correct variant
/// must pass every one of them on every seed. (`beyond` draws past the assumptions.)
pub const WITHIN_PROFILES: &[&str] = &[
    "calm",
    "partitions",
    "clocks",
    "pauses",
    "crashes",
    "chaos",
    "field",
    "power",
    "byzantine",
];

/// The profile `tenure fuzz` uses when neither the scenario nor `--profile` names one.
pub const DEFAULT_PROFILE: &str = "chaos";

/// The most events per fault kind a profile may ask for.
pub const MAX_EVENTS_PER_KIND: u32 = 100;

/// A random fault profile. Probabilities are per seed ("is this kind of fault on for this
/// seed?"); ranges bound what a seed draws when the kind is on.
///
/// Start from a built-in profile and change the knobs you need:
///
/// ```
/// use std::time::Duration;
/// use tenure_scenario::profile::Profile;
///
/// let long_pauses = Profile {
///     pause: 0.9,
///     pause_range: [Duration::from_secs(1), Duration::from_secs(8)],
///     ..Profile::named("chaos").expect("a built-in profile")
/// };
/// assert_eq!(long_pauses.check(), Ok(()));
/// assert_eq!(long_pauses.to_json()["pause"], 0.9);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The built-in profile this one started from.
    pub name: String,
    /// Chance that a seed has partitions (isolate, split, cut, one-way, bridge).
    #[serde(deserialize_with = "de::probability")]
    pub partition: f64,
    /// Chance that a seed has crashes (each followed by a restart).
    #[serde(deserialize_with = "de::probability")]
    pub crash: f64,
    /// Chance that a crash is a flapping process (quick crash/restart cycles) rather
    /// than one outage (in clusters of one role, where every node votes).
    #[serde(deserialize_with = "de::probability")]
    pub flap: f64,
    /// Chance that a seed has process pauses (GC, VM stalls).
    #[serde(deserialize_with = "de::probability")]
    pub pause: f64,
    /// Chance that a seed has power losses (unsynced writes lost, the monotonic clock
    /// restarted) and crash points (a crash or power loss between two effects of a
    /// handler), each followed by a restart. Drawn from a stream of their own, so
    /// turning them on changes no other draw of the seed.
    #[serde(deserialize_with = "de::probability")]
    pub power: f64,
    /// Chance that a seed has disks as the field has them: each node's fsync takes
    /// time (its slowest drawn from 1 to 100 ms), power losses strike inside an fsync
    /// (crash points at a node's next sync, restarting after an outage), and with
    /// chance `flap` a node's power keeps failing as the fault window opens (through
    /// the first election, for a window that opens at the start) and through the
    /// election that follows a leader crash. Drawn from a stream of its own, so it
    /// changes no other draw.
    #[serde(deserialize_with = "de::probability")]
    pub disk: f64,
    /// Chance that a seed has wall-clock jumps.
    #[serde(deserialize_with = "de::probability")]
    pub clock_jump: f64,
    /// Chance that a seed has clock-drift changes mid-run.
    #[serde(deserialize_with = "de::probability")]
    pub clock_drift: f64,
    /// Chance that a seed starts nodes with clock offsets and small drifts.
    #[serde(deserialize_with = "de::probability")]
    pub clock_offset: f64,
    /// Chance that a seed loses messages during the fault window.
    #[serde(deserialize_with = "de::probability")]
    pub loss: f64,
    /// Chance that a seed duplicates messages during the fault window.
    #[serde(deserialize_with = "de::probability")]
    pub duplicate: f64,
    /// Chance that a seed has a slow network (latency from `latency_range`).
    #[serde(deserialize_with = "de::probability")]
    pub slow: f64,
    /// Chance that a pause, isolation, clock jump or drift aims at `"leader"` rather than
    /// a fixed node.
    #[serde(deserialize_with = "de::probability")]
    pub leader: f64,
    /// How many events each kind that is on gets, `[min, max]` (max at most
    /// [`MAX_EVENTS_PER_KIND`]).
    #[serde(deserialize_with = "de::events")]
    pub events: [u32; 2],
    /// Message loss probability when loss is on.
    #[serde(deserialize_with = "de::probability_range")]
    pub loss_range: [f64; 2],
    /// Duplication probability when duplication is on.
    #[serde(deserialize_with = "de::probability_range")]
    pub duplicate_range: [f64; 2],
    /// Bounds of the slow network's latency.
    #[serde(with = "duration_range")]
    pub latency_range: [Duration; 2],
    /// Drift magnitudes (drawn log-uniformly, either sign): `0.01` is 1% fast or slow.
    /// Above 0 and below 1.
    #[serde(deserialize_with = "de::drift_range")]
    pub drift_range: [f64; 2],
    /// Wall-clock jump magnitudes (log-uniform, either direction).
    #[serde(with = "duration_range")]
    pub jump_range: [Duration; 2],
    /// Initial clock offset magnitudes (either sign).
    #[serde(with = "duration_range")]
    pub offset_range: [Duration; 2],
    /// Pause durations.
    #[serde(with = "duration_range")]
    pub pause_range: [Duration; 2],
    /// How long a partition or a crash lasts before its heal or restart.
    #[serde(with = "duration_range")]
    pub outage_range: [Duration; 2],
    /// The fault window as fractions of the run's duration, `0 <= start < end <= 1`.
    #[serde(deserialize_with = "de::window")]
    pub window: [f64; 2],
    /// The liveness phase after the heal; the run is extended to fit it. Above zero.
    #[serde(with = "duration")]
    pub liveness: Duration,
    /// Draw past the target's declared assumptions (drift, wall-clock steps, pauses,
    /// restart delays) instead of within them; a failure then names what it broke.
    #[serde(deserialize_with = "de::boolean")]
    pub beyond_assumptions: bool,
    /// Whether crash points may be drawn (not a knob: [`Profile::within`] turns them off
    /// for targets that declare a minimum restart delay, since a crash point's crash
    /// time is not known when its restart is scheduled).
    #[serde(skip, default = "yes")]
    pub crash_points: bool,
    /// The range each node's slowest fsync is drawn from (log-uniformly) on seeds with
    /// `disk` (not a knob: [`FSYNC_RANGE`], capped by [`Profile::within`] at a
    /// declared `max_fsync`).
    #[serde(skip, default = "fsync_range")]
    pub fsync_range: [Duration; 2],
    /// Chance that a seed's links get heavy-tailed delays for the whole run: each link
    /// (both ways) an exponential, log-normal, Pareto or spiky distribution, capped at
    /// `latency_range`'s maximum (so within a declared `max_latency`).
    #[serde(deserialize_with = "de::probability")]
    pub heavy_tail: f64,
    /// Chance that a seed has clock stalls (a node's clocks stand still, then run on).
    /// Off for targets that declare a maximum drift: a stall is a rate error of 100%
    /// for its length.
    #[serde(deserialize_with = "de::probability")]
    pub clock_stall: f64,
    /// Chance that a seed has NTP slews (a wall clock moved gradually at 500 ppm).
    #[serde(deserialize_with = "de::probability")]
    pub clock_slew: f64,
    /// Chance that a seed has torn power losses (the last unsynced write torn, see
    /// the `power-loss` fault's `torn`), each followed by a restart.
    #[serde(deserialize_with = "de::probability")]
    pub torn: f64,
    /// Clock stall lengths.
    #[serde(with = "duration_range")]
    pub stall_range: [Duration; 2],
    /// Slew amounts (log-uniform, either direction); capped by a declared maximum
    /// wall-clock step.
    #[serde(with = "duration_range")]
    pub slew_range: [Duration; 2],
    /// Chance that a seed with disks (`disk`) has disk stalls: a node's syncs do not
    /// complete until the stall ends (a cloud volume's I/O freeze, a RAID rebuild).
    #[serde(deserialize_with = "de::probability")]
    pub disk_stall: f64,
    /// Chance that a seed with disks has a slow node: its processing times and fsync
    /// latencies multiplied by 2 to 10 for a while (a noisy neighbour, a throttled CPU).
    /// Off for targets that declare a maximum pause.
    #[serde(deserialize_with = "de::probability")]
    pub slow_node: f64,
    /// Disk stall and slow-node lengths; capped by a declared maximum pause (a stalled
    /// sync holds the node's handlers as a pause does).
    #[serde(with = "duration_range")]
    pub disk_stall_range: [Duration; 2],
    /// Chance that a crash, pause, isolation or clock fault drawn at a fixed node aims
    /// at `"holder"` instead (in clusters of several roles: clients and servers; this
    /// knob and `waiter`, `asymmetric` and `early` draw nothing in a cluster of one
    /// role, an election, where `leader` aims at the holder already): whichever node believes it holds a lock, a lease, a
    /// resource or a leadership when the fault fires (re-aimed at a waiter when nobody
    /// holds). Drawn per fault from a stream of its own. (In clusters with a role of
    /// holders, lock clients, a fault the profile aims at `"leader"` aims at
    /// `"holder"` whatever this knob says: lock clients record holding, not leading.)
    #[serde(deserialize_with = "de::probability")]
    pub holder: f64,
    /// Chance that such a fault aims at `"waiter"` instead: whichever node waits for a
    /// lock or stands for election when it fires (re-aimed at a holder when nobody
    /// waits).
    #[serde(deserialize_with = "de::probability")]
    pub waiter: f64,
    /// Chance that a seed has asymmetric delays for the whole run, one direction slow and
    /// the other fast: in clusters of several roles, every link from one role to another
    /// (a slow reply path, servers to clients; or slow requests), or to one node of it
    /// (one client's replies late), or some links one way only. Latencies from the top half of `latency_range`, so
    /// within a declared `max_latency`. Drawn from a stream of its own.
    #[serde(deserialize_with = "de::probability")]
    pub asymmetric: f64,
    /// Chance that a seed has faults where the first decisions are made, from time zero
    /// (applied before any node starts): crash points armed at time zero (after a few
    /// effects, or a power loss at the node's first sync) that restart after an outage
    /// from `outage_range`, a node held at its start by a short pause, and short pauses
    /// aimed at a waiter or a holder (a node with a request in flight) within
    /// `early_window`. Drawn from a stream of its own.
    #[serde(deserialize_with = "de::probability")]
    pub early: f64,
    /// How long from the start the `early` faults are drawn in.
    #[serde(with = "duration")]
    pub early_window: Duration,
    /// Chance that a seed loses power in a rack: a majority of one role's nodes (the
    /// role of a node drawn as a power loss's is; roles of at least 3 nodes) lose power
    /// at their next sync, all armed at one instant in the window, and boot again after
    /// one outage from `outage_range`. More nodes than the role tolerates down at once,
    /// on purpose: safety must survive any number of crashes, and a write acknowledged
    /// before its fsync is lost only if a majority loses it. Needs crash points (off
    /// for targets that declare a minimum restart delay). Drawn from a stream of its own.
    #[serde(deserialize_with = "de::probability")]
    pub rack: f64,
    /// Chance that a seed has Byzantine nodes (`byzantine` events, each with a behaviour
    /// drawn from the four, at time zero or in the fault window): from 1 to as many as
    /// the target declares it tolerates (`max-byzantine`), among the nodes of the
    /// cluster's first role (its replicas or servers); none for a target that declares
    /// none, which is every protocol but PBFT. Drawn from a stream of its own.
    #[serde(deserialize_with = "de::probability")]
    pub byzantine: f64,
    /// Not a knob: the most Byzantine nodes a seed may draw, set by
    /// [`Profile::within`] from the target's `max-byzantine` (0 when it declares none,
    /// and for a profile drawn beyond the assumptions).
    #[serde(skip)]
    pub byzantine_max: u32,
}

fn yes() -> bool {
    true
}

fn fsync_range() -> [Duration; 2] {
    FSYNC_RANGE
}

/// The range each node's slowest fsync is drawn from (log-uniformly) on seeds with
/// power losses inside an fsync: from 1 ms, a fast SSD's flush, to 100 ms, a loaded
/// spinning disk or a network block device's tail (etcd warns of fsyncs over 10 ms and
/// logs "slow fdatasync" past 1 s), the scale of an election timeout's randomness
/// (150 ms over 150-300 ms in the Raft paper's LAN setup), so a slow disk can reorder
/// an election as a slow link can.
pub const FSYNC_RANGE: [Duration; 2] = [Duration::from_millis(1), Duration::from_millis(100)];

/// The `[profile]` table as written: the built-in profile it starts from (`name`,
/// default [`DEFAULT_PROFILE`]) and the knobs it overrides, each checked as it is read
/// (the same checks as [`Profile`]'s). Any other key is an error.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileTable {
    #[serde(default, deserialize_with = "de::name")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crash: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flap: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_jump: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_drift: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_offset: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leader: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_events")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<[u32; 2]>,
    #[serde(default, deserialize_with = "de::opt_probability_range")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_range: Option<[f64; 2]>,
    #[serde(default, deserialize_with = "de::opt_probability_range")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_range: Option<[f64; 2]>,
    #[serde(default, with = "opt_duration_range")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_range: Option<[Duration; 2]>,
    #[serde(default, deserialize_with = "de::opt_drift_range")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift_range: Option<[f64; 2]>,
    #[serde(default, with = "opt_duration_range")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jump_range: Option<[Duration; 2]>,
    #[serde(default, with = "opt_duration_range")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_range: Option<[Duration; 2]>,
    #[serde(default, with = "opt_duration_range")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_range: Option<[Duration; 2]>,
    #[serde(default, with = "opt_duration_range")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outage_range: Option<[Duration; 2]>,
    #[serde(default, deserialize_with = "de::opt_window")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<[f64; 2]>,
    #[serde(default, with = "opt_duration")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub liveness: Option<Duration>,
    #[serde(default, deserialize_with = "de::opt_boolean")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beyond_assumptions: Option<bool>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heavy_tail: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_stall: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_slew: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torn: Option<f64>,
    #[serde(default, with = "opt_duration_range")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stall_range: Option<[Duration; 2]>,
    #[serde(default, with = "opt_duration_range")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slew_range: Option<[Duration; 2]>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_stall: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_node: Option<f64>,
    #[serde(default, with = "opt_duration_range")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_stall_range: Option<[Duration; 2]>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiter: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asymmetric: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub early: Option<f64>,
    #[serde(default, with = "opt_duration")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub early_window: Option<Duration>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rack: Option<f64>,
    #[serde(default, deserialize_with = "de::opt_probability")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub byzantine: Option<f64>,
}

impl ProfileTable {
    /// The profile this table describes: its base with its overrides. `(knob, message)`
    /// when the base is unknown or the result fails [`Profile::check`].
    pub fn resolve(&self) -> Result<Profile, (&'static str, String)> {
        let name = self.name.as_deref().unwrap_or(DEFAULT_PROFILE);
        let base = Profile::builtin(name).map_err(|e| ("name", e))?;
        // Every key of the table replaces the base's (serde does the per-knob work).
        let mut merged = to_object(&base);
        for (knob, value) in to_object(self) {
            merged.insert(knob, value);
        }
        let mut profile: Profile = serde_json::from_value(Value::Object(merged))
            .expect("a built-in base with checked overrides is a profile");
        profile.name = name.to_string();
        profile.check()?;
        Ok(profile)
    }
}

/// `value` as a JSON object (both profile types serialize to one).
fn to_object(value: &impl Serialize) -> serde_json::Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(m)) => m,
        other => unreachable!("a profile serializes to an object: {other:?}"),
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

impl Profile {
    /// This profile with its ranges cut to what `assumptions` declares the target is
    /// designed for (unless [`Profile::beyond_assumptions`]): drifts up to `max_drift`,
    /// wall-clock steps up to `max_wall_jump`, pauses up to `max_pause`, and crash
    /// outages at least `min_restart_delay`. Only ranges change, never the random calls
    /// made, so a seed draws the same events, some of them smaller.
    pub fn within(&self, assumptions: &tenure_core::Assumptions) -> Profile {
        let mut p = self.clone();
        if p.beyond_assumptions {
            return p;
        }
        if assumptions.reliable_network.is_some() {
            p.partition = 0.0;
            p.loss = 0.0;
        }
        if let Some(l) = &assumptions.max_drift {
            p.drift_range[1] = p.drift_range[1].min(l.value);
            p.drift_range[0] = p.drift_range[0].min(p.drift_range[1] / 10.0).max(1e-6);
        }
        let cap = |range: &mut [Duration; 2], max: Duration| {
            range[1] = range[1].min(max);
            range[0] = range[0].min(range[1] / 10);
        };
        if let Some(l) = &assumptions.max_wall_jump {
            cap(&mut p.jump_range, l.value);
        }
        if let Some(l) = &assumptions.max_pause {
            cap(&mut p.pause_range, l.value);
            cap(&mut p.disk_stall_range, l.value);
            // A slow node's syncs stretch by its factor: a pause of unknown length.
            p.slow_node = 0.0;
        }
        if let Some(l) = &assumptions.max_latency {
            cap(&mut p.latency_range, l.value);
        }
        if let Some(l) = &assumptions.max_fsync {
            cap(&mut p.fsync_range, l.value);
        }
        if let Some(l) = &assumptions.max_drift {
            // A stalled clock stands still: past any drift bound while it lasts.
            p.clock_stall = 0.0;
            // A slew changes the wall clock's rate by 500ppm.
            if l.value < 500e-6 {
                p.clock_slew = 0.0;
            }
        }
        if let Some(l) = &assumptions.max_wall_jump {
            cap(&mut p.slew_range, l.value);
        }
        p.byzantine_max = assumptions.max_byzantine.as_ref().map_or(0, |l| l.value);
        if let Some(l) = &assumptions.min_restart_delay {
            p.crash_points = false;
            p.outage_range[0] = p.outage_range[0].max(l.value);
            p.outage_range[1] = p.outage_range[1].max(p.outage_range[0]);
        }
        p
    }

    /// Everything off: only the liveness phase. The base of every other profile.
    fn calm() -> Profile {
        Profile {
            name: "calm".to_string(),
            partition: 0.0,
            crash: 0.0,
            flap: 0.3,
            pause: 0.0,
            power: 0.0,
            disk: 0.0,
            clock_jump: 0.0,
            clock_drift: 0.0,
            clock_offset: 0.0,
            loss: 0.0,
            duplicate: 0.0,
            slow: 0.0,
            leader: 0.3,
            events: [1, 3],
            loss_range: [0.01, 0.3],
            duplicate_range: [0.01, 0.2],
            latency_range: [ms(1), ms(150)],
            drift_range: [0.001, 0.7],
            jump_range: [ms(100), Duration::from_secs(60)],
            offset_range: [ms(0), Duration::from_secs(5)],
            pause_range: [ms(100), Duration::from_secs(6)],
            outage_range: [ms(5), Duration::from_secs(5)],
            window: [0.1, 0.6],
            liveness: Duration::from_secs(8),
            beyond_assumptions: false,
            crash_points: true,
            fsync_range: FSYNC_RANGE,
            heavy_tail: 0.0,
            clock_stall: 0.0,
            clock_slew: 0.0,
            torn: 0.0,
            stall_range: [ms(50), Duration::from_secs(2)],
            // ntpd slews offsets below 128ms and steps larger ones
            slew_range: [ms(1), ms(128)],
            disk_stall: 0.0,
            slow_node: 0.0,
            disk_stall_range: [ms(50), Duration::from_secs(2)],
            holder: 0.0,
            waiter: 0.0,
            asymmetric: 0.0,
            early: 0.0,
            early_window: ms(100),
            rack: 0.0,
            byzantine: 0.0,
            byzantine_max: 0,
        }
    }

    /// A built-in profile by name, or an error that lists the names (and the one meant,
    /// for a typo): for `?` in code that builds its own profile.
    ///
    /// ```
    /// # use tenure_scenario::profile::Profile;
    /// assert_eq!(Profile::builtin("pauses").unwrap().pause, 1.0);
    /// let err = Profile::builtin("chaso").unwrap_err();
    /// assert!(err.ends_with("did you mean `chaos`?"), "{err}");
    /// ```
    pub fn builtin(name: &str) -> Result<Profile, String> {
        Profile::named(name).ok_or_else(|| {
            format!(
                "unknown profile `{name}`; known profiles: {}{}",
                PROFILE_NAMES.join(", "),
                crate::suggest::did_you_mean(name, PROFILE_NAMES.iter().copied())
            )
        })
    }

    /// A built-in profile by name (see [`PROFILE_NAMES`]).
    pub fn named(name: &str) -> Option<Profile> {
        let base = Profile::calm();
        let p = match name {
            "calm" => base,
            "partitions" => Profile {
                partition: 1.0,
                loss: 0.4,
                duplicate: 0.3,
                slow: 0.3,
                // one direction of a link slow, the other fast (a slow reply path)
                asymmetric: 0.5,
                holder: 0.2,
                ..base
            },
            "clocks" => Profile {
                clock_jump: 0.8,
                clock_drift: 0.8,
                clock_offset: 0.8,
                // a lease outlives its holder's clock only when someone else takes over
                partition: 0.5,
                // the holder's clock is the one that matters; a slow reply path moves
                // when a holder believes its lease began
                holder: 0.3,
                asymmetric: 0.3,
                ..base
            },
            "pauses" => Profile {
                pause: 1.0,
                events: [1, 4],
                // a paused holder is the classic failure; a paused waiter is granted late
                holder: 0.4,
                waiter: 0.2,
                ..base
            },
            "crashes" => Profile {
                crash: 1.0,
                power: 0.5,
                // Disks (`disk`) are `power`'s; off here, so crashes seeds found and pinned
                // before are unchanged (`[profile] disk = 1` turns them on).
                loss: 0.2,
                duplicate: 0.2,
                // a crashed holder is the classic failure
                holder: 0.8,
                waiter: 0.1,
                early: 0.3,
                ..base
            },
            "chaos" => Profile {
                partition: 0.5,
                crash: 0.8,
                flap: 0.7,
                pause: 0.5,
                power: 0.3,
                // Disks (`disk`) stay off by default, so chaos seeds found and pinned
                // before are unchanged; `[profile] disk = 1` turns them on.
                clock_jump: 0.4,
                clock_drift: 0.4,
                clock_offset: 0.4,
                loss: 0.3,
                duplicate: 0.3,
                slow: 0.6,
                events: [2, 5],
                // from the start: the first election is the busiest moment
                window: [0.0, 0.6],
                holder: 0.4,
                waiter: 0.15,
                asymmetric: 0.3,
                early: 0.3,
                ..base
            },
            // chaos, past the target's declared assumptions: what each assumption is for
            "beyond" => Profile {
                beyond_assumptions: true,
                ..Profile::named("chaos").expect("chaos exists")
            },
            // faults as production has them: heavy-tailed and spiky links, clock stalls
            // and NTP slews, torn power losses, besides some of everything else
            "field" => Profile {
                heavy_tail: 0.8,
                clock_stall: 0.5,
                clock_slew: 0.5,
                torn: 0.5,
                partition: 0.3,
                crash: 0.3,
                pause: 0.3,
                clock_offset: 0.3,
                loss: 0.2,
                duplicate: 0.2,
                events: [1, 4],
                window: [0.0, 0.6],
                holder: 0.6,
                asymmetric: 0.5,
                early: 0.2,
                ..base
            },
            // durability faults: power losses inside fsyncs (disks), slow disks, power
            // flapping through the election after a leader crash, with crashes aimed at
            // the leader to start elections and slow links to split them
            "power" => Profile {
                disk: 1.0,
                crash: 1.0,
                leader: 1.0,
                flap: 0.9,
                slow: 0.8,
                disk_stall: 0.5,
                slow_node: 0.5,
                events: [1, 4],
                // quick reboots (a voter back before the election it voted in is over)
                // as well as long outages
                outage_range: [ms(5), Duration::from_secs(1)],
                // from the start: the first election is the busiest moment
                window: [0.0, 0.6],
                // power losses in the first fsyncs, where one-shot decisions are made
                early: 0.5,
                // a rack's power fails: a majority of one role loses its unsynced writes
                rack: 0.3,
                // in clusters of several roles, half the crashes and crash points are
                // aimed at whoever holds (the leader's counterpart: a lock or lease
                // holder, a proposer with its promises)
                holder: 0.5,
                ..base
            },
            // Byzantine nodes up to the target's declared max-byzantine (none for a
            // protocol that declares none: then a light mix of the crash-fault kinds),
            // with some crashes, partitions, loss and pauses besides
            "byzantine" => Profile {
                byzantine: 1.0,
                crash: 0.3,
                partition: 0.3,
                pause: 0.3,
                loss: 0.2,
                duplicate: 0.2,
                events: [1, 3],
                window: [0.0, 0.6],
                ..base
            },
            _ => return None,
        };
        Some(Profile {
            name: name.to_string(),
            ..p
        })
    }

    /// The scenario's `[profile]` table, if it has one: `name` (default
    /// [`DEFAULT_PROFILE`]) picks the base, any other key overrides one knob. Errors name
    /// `profile.<knob>` and its line.
    pub fn from_scenario(scenario: &Scenario) -> Result<Option<Profile>, ScenarioError> {
        let Some(table) = &scenario.profile else {
            return Ok(None);
        };
        if !table.is_object() {
            return Err(scenario.error_at("profile", "expected a table of profile knobs"));
        }
        let table: ProfileTable = serde_path_to_error::deserialize(table).map_err(|e| {
            let (path, inner) = (e.path().clone(), e.into_inner());
            let mut err =
                crate::parse::de_error(&scenario.file, &scenario.source, "profile", &path, &inner);
            if let Some(knob) = err
                .message
                .strip_prefix("unknown field `")
                .and_then(|rest| rest.split('`').next())
            {
                err.message = format!(
                    "unknown profile knob `{knob}`; known knobs: name, {}{}",
                    Profile::KNOBS.join(", "),
                    crate::suggest::did_you_mean(knob, Profile::KNOBS.iter().copied())
                );
            }
            err
        })?;
        table
            .resolve()
            .map(Some)
            .map_err(|(knob, msg)| scenario.error_at(&format!("profile.{knob}"), msg))
    }

    /// The knobs a `[profile]` table may set, besides `name`, in the order of the
    /// fields (a test keeps this list equal to them).
    pub const KNOBS: &'static [&'static str] = &[
        "partition",
        "crash",
        "flap",
        "pause",
        "power",
        "disk",
        "clock_jump",
        "clock_drift",
        "clock_offset",
        "loss",
        "duplicate",
        "slow",
        "leader",
        "events",
        "loss_range",
        "duplicate_range",
        "latency_range",
        "drift_range",
        "jump_range",
        "offset_range",
        "pause_range",
        "outage_range",
        "window",
        "liveness",
        "beyond_assumptions",
        "heavy_tail",
        "clock_stall",
        "clock_slew",
        "torn",
        "stall_range",
        "slew_range",
        "disk_stall",
        "slow_node",
        "disk_stall_range",
        "holder",
        "waiter",
        "asymmetric",
        "early",
        "early_window",
        "rack",
        "byzantine",
    ];

    /// What a field's own check cannot see (a profile built in code is checked only
    /// here); `(knob, message)` on error.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let probabilities = [
            ("partition", self.partition),
            ("crash", self.crash),
            ("flap", self.flap),
            ("pause", self.pause),
            ("power", self.power),
            ("disk", self.disk),
            ("clock_jump", self.clock_jump),
            ("clock_drift", self.clock_drift),
            ("clock_offset", self.clock_offset),
            ("loss", self.loss),
            ("duplicate", self.duplicate),
            ("slow", self.slow),
            ("leader", self.leader),
            ("heavy_tail", self.heavy_tail),
            ("clock_stall", self.clock_stall),
            ("clock_slew", self.clock_slew),
            ("torn", self.torn),
            ("disk_stall", self.disk_stall),
            ("slow_node", self.slow_node),
            ("holder", self.holder),
            ("waiter", self.waiter),
            ("asymmetric", self.asymmetric),
            ("early", self.early),
            ("rack", self.rack),
            ("byzantine", self.byzantine),
        ];
        for (knob, p) in probabilities {
            if !(0.0..=1.0).contains(&p) {
                return Err((knob, format!("{p} {NOT_A_PROBABILITY}")));
            }
        }
        if self.window[0] >= self.window[1] || self.window[0] < 0.0 || self.window[1] > 1.0 {
            return Err((
                "window",
                "the fault window must have a start before its end, both from 0 to 1".to_string(),
            ));
        }
        if self.events[0] > self.events[1] {
            return Err(("events", "the minimum is above the maximum".to_string()));
        }
        if self.holder + self.waiter > 1.0 {
            return Err((
                "waiter",
                format!(
                    "holder {} + waiter {} is above 1: they are chances of one fault",
                    self.holder, self.waiter
                ),
            ));
        }
        if self.early_window.is_zero() {
            return Err((
                "early_window",
                "the early window must be longer than zero".to_string(),
            ));
        }
        if self.events[1] > MAX_EVENTS_PER_KIND {
            return Err((
                "events",
                format!("at most {MAX_EVENTS_PER_KIND} events per fault kind"),
            ));
        }
        if self.liveness.is_zero() {
            return Err((
                "liveness",
                "the liveness phase must be longer than zero".to_string(),
            ));
        }
        if self.drift_range[0] <= 0.0 {
            return Err((
                "drift_range",
                "drift magnitudes must be above 0 (they are drawn log-uniformly)".to_string(),
            ));
        }
        if self.drift_range[1] >= 1.0 || self.drift_range[0] > self.drift_range[1] {
            return Err((
                "drift_range",
                "drift magnitudes must be below 1, the minimum not above the maximum".to_string(),
            ));
        }
        let ranges = [
            ("loss_range", self.loss_range),
            ("duplicate_range", self.duplicate_range),
        ];
        for (knob, [a, b]) in ranges {
            if !(0.0..=1.0).contains(&a) || !(0.0..=1.0).contains(&b) || a > b {
                return Err((
                    knob,
                    "write [minimum, maximum], both from 0 to 1".to_string(),
                ));
            }
        }
        let durations = [
            ("latency_range", self.latency_range),
            ("jump_range", self.jump_range),
            ("offset_range", self.offset_range),
            ("pause_range", self.pause_range),
            ("outage_range", self.outage_range),
            ("stall_range", self.stall_range),
            ("slew_range", self.slew_range),
            ("disk_stall_range", self.disk_stall_range),
        ];
        for (knob, [a, b]) in durations {
            if a > b {
                return Err((knob, "the minimum is above the maximum".to_string()));
            }
        }
        Ok(())
    }

    /// The `[profile]` table that gives back this profile: `name` and every knob that
    /// differs from the named profile.
    pub fn to_json(&self) -> Value {
        let base = Profile::named(&self.name).unwrap_or_else(Profile::calm);
        let base = to_object(&base);
        let mut table = serde_json::Map::new();
        table.insert("name".into(), self.name.clone().into());
        for (knob, value) in to_object(self) {
            if knob != "name" && base.get(&knob) != Some(&value) {
                table.insert(knob, value);
            }
        }
        Value::Object(table)
    }
}

const NOT_A_PROBABILITY: &str = "is not a probability; write a number from 0 to 1";

/// The checks of single values, as `(value) -> Result<T, message>`; the messages name
/// the value and how to write it.
mod check {
    use super::*;

    pub fn probability(v: &Value) -> Result<f64, String> {
        match v.as_f64() {
            Some(p) if (0.0..=1.0).contains(&p) => Ok(p),
            _ => Err(format!("{v} {NOT_A_PROBABILITY}")),
        }
    }

    pub fn fraction(v: &Value) -> Result<f64, String> {
        probability(v)
            .map_err(|_| format!("{v} is not a fraction of the run; write a number from 0 to 1"))
    }

    pub fn drift_magnitude(v: &Value) -> Result<f64, String> {
        match v.as_f64() {
            Some(d) if (0.0..1.0).contains(&d) => Ok(d),
            _ => Err(format!(
                "{v} is not a drift magnitude; write a fraction from 0 to below 1"
            )),
        }
    }

    pub fn count(v: &Value) -> Result<u32, String> {
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("{v} is not a count; write a whole number from 0 up"))
    }

    pub fn duration(v: &Value) -> Result<Duration, String> {
        match v.as_str() {
            Some(s) => parse_duration(s),
            None => Err(format!(
                "{v} is not a duration; write e.g. \"150ms\" or \"2s\""
            )),
        }
    }

    pub fn boolean(v: &Value) -> Result<bool, String> {
        v.as_bool()
            .ok_or_else(|| format!("expected true or false, found {v}"))
    }

    pub fn name(v: &Value) -> Result<String, String> {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| "expected a profile name (a string)".to_string())
    }

    /// `[a, b]` with `a <= b`, each checked by `one`.
    pub fn ordered_pair<T: PartialOrd + std::fmt::Debug + Copy>(
        v: &Value,
        one: impl Fn(&Value) -> Result<T, String>,
    ) -> Result<[T; 2], String> {
        let [a, b] = match v.as_array().map(Vec::as_slice) {
            Some([a, b]) => [one(a)?, one(b)?],
            _ => return Err(format!("{v} is not a range; write [minimum, maximum]")),
        };
        if a <= b {
            Ok([a, b])
        } else {
            Err(format!("the minimum {a:?} is above the maximum {b:?}"))
        }
    }

    pub fn events(v: &Value) -> Result<[u32; 2], String> {
        ordered_pair(v, count)
    }
    pub fn probability_range(v: &Value) -> Result<[f64; 2], String> {
        ordered_pair(v, probability)
    }
    pub fn drift_range(v: &Value) -> Result<[f64; 2], String> {
        ordered_pair(v, drift_magnitude)
    }
    pub fn window(v: &Value) -> Result<[f64; 2], String> {
        ordered_pair(v, fraction)
    }
    pub fn duration_range(v: &Value) -> Result<[Duration; 2], String> {
        ordered_pair(v, duration)
    }
}

/// serde `deserialize_with` functions over [`check`]: each reads the value as JSON and
/// checks it, so a bad value is a serde error at its knob's path.
mod de {
    use super::*;

    fn via<'de, D: Deserializer<'de>, T>(
        d: D,
        f: fn(&Value) -> Result<T, String>,
    ) -> Result<T, D::Error> {
        let v = Value::deserialize(d)?;
        f(&v).map_err(serde::de::Error::custom)
    }

    pub fn probability<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        via(d, check::probability)
    }
    pub fn opt_probability<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        via(d, check::probability).map(Some)
    }
    pub fn events<'de, D: Deserializer<'de>>(d: D) -> Result<[u32; 2], D::Error> {
        via(d, check::events)
    }
    pub fn opt_events<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[u32; 2]>, D::Error> {
        via(d, check::events).map(Some)
    }
    pub fn probability_range<'de, D: Deserializer<'de>>(d: D) -> Result<[f64; 2], D::Error> {
        via(d, check::probability_range)
    }
    pub fn opt_probability_range<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<[f64; 2]>, D::Error> {
        via(d, check::probability_range).map(Some)
    }
    pub fn drift_range<'de, D: Deserializer<'de>>(d: D) -> Result<[f64; 2], D::Error> {
        via(d, check::drift_range)
    }
    pub fn opt_drift_range<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[f64; 2]>, D::Error> {
        via(d, check::drift_range).map(Some)
    }
    pub fn window<'de, D: Deserializer<'de>>(d: D) -> Result<[f64; 2], D::Error> {
        via(d, check::window)
    }
    pub fn opt_window<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[f64; 2]>, D::Error> {
        via(d, check::window).map(Some)
    }
    pub fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        via(d, check::boolean)
    }
    pub fn opt_boolean<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
        via(d, check::boolean).map(Some)
    }
    pub fn name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        via(d, check::name).map(Some)
    }
    pub fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        via(d, check::duration)
    }
    pub fn duration_range<'de, D: Deserializer<'de>>(d: D) -> Result<[Duration; 2], D::Error> {
        via(d, check::duration_range)
    }
}

/// A duration as a human string (`"150ms"`).
mod duration {
    use super::*;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }
    pub use super::de::duration as deserialize;
}

mod opt_duration {
    use super::*;
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::duration::serialize(d, s),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        super::de::duration(d).map(Some)
    }
}

/// `[min, max]` durations as human strings.
mod duration_range {
    use super::*;
    pub fn serialize<S: Serializer>(r: &[Duration; 2], s: S) -> Result<S::Ok, S::Error> {
        [format_duration(r[0]), format_duration(r[1])].serialize(s)
    }
    pub use super::de::duration_range as deserialize;
}

mod opt_duration_range {
    use super::*;
    pub fn serialize<S: Serializer>(r: &Option<[Duration; 2]>, s: S) -> Result<S::Ok, S::Error> {
        match r {
            Some(r) => super::duration_range::serialize(r, s),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[Duration; 2]>, D::Error> {
        super::de::duration_range(d).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_knob_list_is_the_fields_of_a_profile() {
        let fields: Vec<String> = to_object(&Profile::named("calm").unwrap())
            .keys()
            .filter(|k| *k != "name")
            .cloned()
            .collect();
        let mut knobs: Vec<String> = Profile::KNOBS.iter().map(|k| k.to_string()).collect();
        knobs.sort();
        let mut fields = fields;
        fields.sort();
        assert_eq!(knobs, fields);
        // The table has the same keys.
        let every: serde_json::Map<String, Value> = to_object(&Profile::named("beyond").unwrap());
        let table: ProfileTable = serde_json::from_value(Value::Object(every)).unwrap();
        assert_eq!(table.resolve().unwrap(), Profile::named("beyond").unwrap());
    }

    #[test]
    fn every_built_in_profile_passes_its_own_check_and_gives_back_its_name() {
        for name in PROFILE_NAMES {
            let p = Profile::named(name).unwrap();
            assert_eq!(p.check(), Ok(()), "{name}");
            assert_eq!(p.to_json(), serde_json::json!({ "name": name }));
            let table: ProfileTable = serde_json::from_value(p.to_json()).unwrap();
            assert_eq!(table.resolve().unwrap(), p);
        }
        assert!(PROFILE_NAMES.contains(&DEFAULT_PROFILE));
        for name in WITHIN_PROFILES {
            assert!(!Profile::named(name).unwrap().beyond_assumptions, "{name}");
        }
    }

    #[test]
    fn an_empty_table_is_the_default_profile() {
        let p = ProfileTable::default().resolve().unwrap();
        assert_eq!(p, Profile::named(DEFAULT_PROFILE).unwrap());
    }

    #[test]
    fn a_table_overrides_only_what_it_names() {
        let table: ProfileTable = serde_json::from_value(serde_json::json!({
            "name": "pauses",
            "pause": 0.25,
            "outage_range": ["1s", "2s"],
            "beyond_assumptions": true,
        }))
        .unwrap();
        let p = table.resolve().unwrap();
        assert_eq!(
            p,
            Profile {
                pause: 0.25,
                outage_range: [ms(1000), ms(2000)],
                beyond_assumptions: true,
                ..Profile::named("pauses").unwrap()
            }
        );
        assert_eq!(
            p.to_json(),
            serde_json::json!({"name": "pauses", "pause": 0.25, "outage_range": ["1s", "2s"], "beyond_assumptions": true})
        );
    }

    #[test]
    fn bad_values_are_refused_with_their_reason() {
        let cases = [
            (serde_json::json!({"pause": 7}), "7 is not a probability"),
            (serde_json::json!({"pause": "x"}), "is not a probability"),
            (serde_json::json!({"events": [3, 1]}), "above the maximum"),
            (serde_json::json!({"events": [-1, 1]}), "not a count"),
            (
                serde_json::json!({"drift_range": [0.1, 1.0]}),
                "drift magnitude",
            ),
            (
                serde_json::json!({"window": [0.5, 1.5]}),
                "fraction of the run",
            ),
            (serde_json::json!({"liveness": 5}), "not a duration"),
            (serde_json::json!({"liveness": "5 parsecs"}), "unit"),
            (
                serde_json::json!({"beyond_assumptions": 1}),
                "true or false",
            ),
            (serde_json::json!({"name": 3}), "a profile name"),
            (serde_json::json!({"puase": 0.1}), "unknown field `puase`"),
            (serde_json::json!({"crash_points": false}), "unknown field"),
        ];
        for (table, says) in cases {
            let err = serde_json::from_value::<ProfileTable>(table.clone()).unwrap_err();
            assert!(err.to_string().contains(says), "{table}: {err}");
        }
        let resolve = |t: serde_json::Value| {
            serde_json::from_value::<ProfileTable>(t)
                .unwrap()
                .resolve()
                .unwrap_err()
        };
        let (knob, msg) = resolve(serde_json::json!({"name": "chaso"}));
        assert_eq!(knob, "name");
        assert!(msg.contains("did you mean `chaos`?"), "{msg}");
        assert_eq!(resolve(serde_json::json!({"events": [1, 101]})).0, "events");
        assert_eq!(resolve(serde_json::json!({"liveness": "0s"})).0, "liveness");
        assert_eq!(
            resolve(serde_json::json!({"drift_range": [0.0, 0.1]})).0,
            "drift_range"
        );
    }

    #[test]
    fn a_profile_built_in_code_is_checked_knob_by_knob() {
        let chaos = Profile::named("chaos").unwrap();
        let bad = Profile {
            pause: 1.5,
            ..chaos.clone()
        };
        assert_eq!(bad.check().unwrap_err().0, "pause");
        let bad = Profile {
            pause_range: [ms(10), ms(1)],
            ..chaos.clone()
        };
        assert_eq!(bad.check().unwrap_err().0, "pause_range");
        let bad = Profile {
            loss_range: [0.5, 0.1],
            ..chaos
        };
        assert_eq!(bad.check().unwrap_err().0, "loss_range");
    }
}
