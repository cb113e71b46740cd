//! The typed scenario: what a scenario file says, after parsing and the checks that need
//! no protocol (see [`crate::resolve`] for those that do).
//!
//! The serde derives here mirror the TOML layout (key names, defaults, unknown fields
//! denied), so parsing and error paths follow the file; [`Scenario`] itself is assembled
//! by [`crate::parse`].

use crate::serde_util::{drift, human, opt_human, opt_probability, probability};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;
use tenure_core::{NodeId, RoleSpec, SignedDuration};

pub use crate::delay::Delay;

/// One scenario file, parsed. Fields are public: the simulator reads them, and fuzz and
/// shrink build or edit them and write them back with [`Scenario::to_toml`].
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Where the scenario came from, as given to [`crate::parse`] (used in errors).
    pub file: String,
    /// The text it was parsed from (used by [`Scenario::error_at`] to find lines).
    pub source: String,
    /// `name`, or the file stem when not written.
    pub name: String,
    pub description: Option<String>,
    /// The default seed (`seed`, 1 when not written).
    pub seed: u64,
    /// How long the run lasts in true time; more than zero.
    pub duration: Duration,
    pub protocol: ProtocolSpec,
    pub cluster: ClusterSpec,
    pub network: NetworkSpec,
    /// Per-node clocks; nodes not listed run a perfect clock.
    pub clocks: Vec<ClockSpec>,
    /// `[disk]`: how long each node's syncs take.
    pub disk: DiskSpec,
    /// `[processing]`: how long each handler takes, per node (zero by default).
    pub processing: ProcessingSpec,
    /// The explicit fault timeline, in non-decreasing `at` order, every `at` before
    /// `duration`.
    pub faults: Vec<FaultEvent>,
    /// The checks to run, in the order written, each with its raw parameters.
    pub checks: Vec<CheckSpec>,
    pub expect: Expectation,
    /// `[expect] vacuous` (or `not_judged`): checks the scenario expects not to be
    /// judged, for any reason (vacuous, could not fail, too short, undecided); a check
    /// not judged is otherwise never a pass.
    pub expect_vacuous: Vec<String>,
    /// The random fault profile (`[profile]`), kept raw until it is specified.
    pub profile: Option<serde_json::Value>,
}

/// `[protocol]`: which protocol, which variant, and its raw parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct ProtocolSpec {
    pub name: String,
    /// `correct` unless written.
    pub variant: String,
    /// `[protocol.params]` as JSON (an object, empty when not written); the protocol
    /// reads it with [`Scenario::params`].
    pub params: serde_json::Value,
}

/// `[cluster]`: either a node count for the protocol's first role or a count per role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClusterSpec {
    /// `nodes = N`: the first role gets `N` nodes, every other role its default count.
    Nodes(u32),
    /// `[cluster.roles]`, in the order written (a count of 0 leaves a role out). Roles
    /// not written follow, in the protocol's order, with their default counts. Empty
    /// when `[cluster]` is not written: every role gets its default count.
    Roles(Vec<RoleSpec>),
}

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec::Roles(Vec::new())
    }
}

/// A uniform message delay range, written `["1ms", "5ms"]`; `min <= max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latency {
    pub min: Duration,
    pub max: Duration,
}

impl Latency {
    pub fn new(min: Duration, max: Duration) -> Latency {
        assert!(min <= max, "latency minimum {min:?} above maximum {max:?}");
        Latency { min, max }
    }
}

impl Default for Latency {
    fn default() -> Self {
        Latency::new(Duration::from_millis(1), Duration::from_millis(5))
    }
}

impl Serialize for Latency {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        [
            tenure_core::HumanDuration(self.min),
            tenure_core::HumanDuration(self.max),
        ]
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Latency {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let [min, max] = <[tenure_core::HumanDuration; 2]>::deserialize(d)?;
        if min > max {
            return Err(serde::de::Error::custom(format!(
                "the minimum `{}` is above the maximum `{}`",
                tenure_core::format_duration(min.0),
                tenure_core::format_duration(max.0)
            )));
        }
        Ok(Latency::new(min.0, max.0))
    }
}

/// `[network]`: the defaults every message sees, and per-link overrides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    /// The delay distribution (a `["1ms", "5ms"]` range is uniform; see [`Delay`]).
    #[serde(default)]
    pub latency: Delay,
    /// Probability that a message is lost, `0..=1`.
    #[serde(default, deserialize_with = "probability")]
    pub loss: f64,
    /// Probability that a message is delivered twice, `0..=1`.
    #[serde(default, deserialize_with = "probability")]
    pub duplicate: f64,
    /// `[[network.link]]`, in the order written.
    #[serde(default, rename = "link")]
    pub links: Vec<LinkSpec>,
    /// `mode`: datagrams or TCP-like streams; not written: the protocol's own
    /// transport (`Configurable::transport`: streams for zookeeper and etcd-lock,
    /// datagrams for the rest), filled in when the scenario is prepared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<NetworkMode>,
    /// `connection_timeout` (stream mode only): how long a connection survives a broken
    /// link before both ends see it reset; [`NetworkSpec::DEFAULT_CONNECTION_TIMEOUT`]
    /// when not written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_timeout: Option<tenure_core::HumanDuration>,
}

impl Default for NetworkSpec {
    fn default() -> Self {
        NetworkSpec {
            latency: Delay::default(),
            loss: 0.0,
            duplicate: 0.0,
            links: Vec::new(),
            mode: None,
            connection_timeout: None,
        }
    }
}

impl NetworkSpec {
    /// Stream mode's connection timeout when the scenario does not set one.
    pub const DEFAULT_CONNECTION_TIMEOUT: Duration = Duration::from_secs(1);

    /// Stream mode's connection timeout, `None` in datagram mode.
    pub fn stream_timeout(&self) -> Option<Duration> {
        (self.mode == Some(NetworkMode::Stream)).then(|| {
            self.connection_timeout
                .map_or(Self::DEFAULT_CONNECTION_TIMEOUT, |t| t.0)
        })
    }
}

/// `[network] mode`: how messages travel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    /// Each message on its own: lost, duplicated or reordered as the link says; a
    /// partition drops it.
    #[default]
    Datagram,
    /// TCP-like connections: FIFO per link; a partition shorter than the connection
    /// timeout delays messages, a longer one or a crash resets the connection (queued
    /// messages lost, both ends told through `Protocol::on_disconnect`).
    Stream,
}

impl NetworkMode {
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Datagram => "datagram",
            NetworkMode::Stream => "stream",
        }
    }
}

/// `[[network.link]]`: overrides for messages from `from` to `to` (and back, if `both`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub from: NodeId,
    pub to: NodeId,
    #[serde(default)]
    pub both: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Delay>,
    #[serde(
        default,
        deserialize_with = "opt_probability",
        skip_serializing_if = "Option::is_none"
    )]
    pub loss: Option<f64>,
    #[serde(
        default,
        deserialize_with = "opt_probability",
        skip_serializing_if = "Option::is_none"
    )]
    pub duplicate: Option<f64>,
}

/// `[[clock]]`: a node's clock reads `offset + (1 + drift) * true_time`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSpec {
    pub node: NodeId,
    #[serde(default)]
    pub offset: SignedDuration,
    /// A fraction: `0.01` runs 1% fast, `-0.01` 1% slow; more than -1.
    #[serde(default, deserialize_with = "drift")]
    pub drift: f64,
}

/// `[disk]`: every node's fsync latency (`fsync`, zero unless written) and per-node
/// overrides (`[[disk.node]]`). A sync takes a latency drawn uniformly from the range;
/// the node's effects after it wait until it completes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskSpec {
    #[serde(default = "zero_latency")]
    pub fsync: Latency,
    #[serde(default, rename = "node")]
    pub nodes: Vec<NodeDiskSpec>,
}

/// `[[disk.node]]`: one node's fsync latency.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeDiskSpec {
    pub node: NodeId,
    pub fsync: Latency,
}

impl DiskSpec {
    /// The fsync latency range of `node`.
    pub fn fsync_of(&self, node: NodeId) -> Latency {
        self.nodes
            .iter()
            .rev()
            .find(|d| d.node == node)
            .map_or(self.fsync, |d| d.fsync)
    }

    /// Whether everything is at its default (zero latency, no overrides).
    pub fn is_default(&self) -> bool {
        self.fsync == zero_latency() && self.nodes.is_empty()
    }
}

impl Default for DiskSpec {
    fn default() -> Self {
        DiskSpec {
            fsync: zero_latency(),
            nodes: Vec::new(),
        }
    }
}

/// `[processing]`: the processing time every handler takes, drawn uniformly from `time`
/// (default zero), with per-node overrides (`[[processing.node]]`). While a handler's
/// time runs, the node's later messages and timers wait.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessingSpec {
    #[serde(default = "zero_latency")]
    pub time: Latency,
    #[serde(default, rename = "node")]
    pub nodes: Vec<NodeProcessingSpec>,
    /// `order_after_stall = true`: after a stall (a pause's end, a handler's processing
    /// time) a node handles the messages and timers that fell due meanwhile in an order
    /// drawn from the seed (traced as `reordered`), not by due time: a runtime that
    /// reads several connections and timers in no set order (Go's `select`). Each
    /// sender's messages keep their arrival order (one connection); the senders, timers
    /// and outside requests are raced. Off by default. The simulator only; real runs (`cluster`) have whatever order their
    /// runtime gives.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub order_after_stall: bool,
}

/// `[[processing.node]]`: one node's processing time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeProcessingSpec {
    pub node: NodeId,
    pub time: Latency,
}

impl ProcessingSpec {
    /// The processing time range of `node`.
    pub fn time_of(&self, node: NodeId) -> Latency {
        self.nodes
            .iter()
            .rev()
            .find(|d| d.node == node)
            .map_or(self.time, |d| d.time)
    }

    /// Whether everything is at its default (zero, no overrides, arrival order).
    pub fn is_default(&self) -> bool {
        self.time == zero_latency() && self.nodes.is_empty() && !self.order_after_stall
    }
}

impl Default for ProcessingSpec {
    fn default() -> Self {
        ProcessingSpec {
            time: zero_latency(),
            nodes: Vec::new(),
            order_after_stall: false,
        }
    }
}

/// ntpd's slew rate limit, in parts per million: `clock-slew`'s default `ppm`.
pub const DEFAULT_SLEW_PPM: f64 = 500.0;

/// The fastest slew a scenario may ask for (chrony's default `maxslewrate` is 83,333).
pub const MAX_SLEW_PPM: f64 = 100_000.0;

fn default_slew_ppm() -> f64 {
    DEFAULT_SLEW_PPM
}

fn is_default_slew_ppm(ppm: &f64) -> bool {
    *ppm == DEFAULT_SLEW_PPM
}

fn slew_ppm<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = f64::deserialize(d)?;
    if v > 0.0 && v <= MAX_SLEW_PPM {
        Ok(v)
    } else {
        Err(serde::de::Error::custom(format!(
            "slew rate {v} ppm is out of range; write a number above 0, at most {MAX_SLEW_PPM} (ntpd slews at 500)"
        )))
    }
}

/// The largest `slow` factor a scenario may ask for.
pub const MAX_SLOW_FACTOR: f64 = 1000.0;

fn zero_latency() -> Latency {
    Latency::new(Duration::ZERO, Duration::ZERO)
}

/// One entry of the fault timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultEvent {
    /// True time since the start of the run.
    pub at: Duration,
    pub fault: Fault,
}

/// Which node a fault applies to: a fixed id, or a role resolved when the event fires
/// (the simulator resolves it from what the nodes believe at that instant, see
/// [`tenure_core::Beliefs`]): `"leader"`, the node that believes it leads the highest
/// term (none: the event is skipped); `"holder"`, a node that believes it holds a lock,
/// a lease, a resource or a leadership; `"waiter"`, a node waiting for a lock or
/// standing for election. A `"holder"` (`"waiter"`) event that finds none waits for one,
/// up to the next heal ([`FaultEvent::aim_deadline`]); then it is re-aimed at a waiter (a
/// holder), or skipped when nobody holds or waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeSel {
    Id(u32),
    Leader,
    Holder,
    Waiter,
}

impl NodeSel {
    /// Every selector that names a role, as written in files.
    pub const ROLES: &'static [&'static str] = &["leader", "holder", "waiter"];

    /// The fixed node, if this is not a role.
    pub fn id(self) -> Option<NodeId> {
        match self {
            NodeSel::Id(n) => Some(NodeId(n)),
            NodeSel::Leader | NodeSel::Holder | NodeSel::Waiter => None,
        }
    }

    /// The role this selector aims at, if it is not a fixed node.
    pub fn aim(self) -> Option<tenure_core::Aim> {
        match self {
            NodeSel::Id(_) => None,
            NodeSel::Leader => Some(tenure_core::Aim::Leader),
            NodeSel::Holder => Some(tenure_core::Aim::Holder),
            NodeSel::Waiter => Some(tenure_core::Aim::Waiter),
        }
    }

    /// The selector of a role by its name (`"leader"`, `"holder"`, `"waiter"`).
    pub fn role(name: &str) -> Option<NodeSel> {
        match name {
            "leader" => Some(NodeSel::Leader),
            "holder" => Some(NodeSel::Holder),
            "waiter" => Some(NodeSel::Waiter),
            _ => None,
        }
    }
}

impl fmt::Display for NodeSel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeSel::Id(n) => write!(f, "{n}"),
            _ => write!(f, "{}", self.aim().expect("a role").name()),
        }
    }
}

impl Serialize for NodeSel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            NodeSel::Id(n) => s.serialize_u32(*n),
            _ => s.serialize_str(self.aim().expect("a role").name()),
        }
    }
}

impl<'de> Deserialize<'de> for NodeSel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = NodeSel;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    "a node id (an integer), \"leader\", \"holder\" or \"waiter\""
                )
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<NodeSel, E> {
                u32::try_from(v)
                    .map(NodeSel::Id)
                    .map_err(|_| E::custom(format!("node id {v} is too large")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<NodeSel, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::custom(format!(
                        "node id {v} is negative; ids count from 0"
                    ))),
                }
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<NodeSel, E> {
                NodeSel::role(v).ok_or_else(|| {
                    E::custom(format!(
                        "expected a node id (an integer), \"leader\", \"holder\" or \"waiter\", found \"{v}\"{}",
                        crate::suggest::did_you_mean(v, NodeSel::ROLES.iter().copied())
                    ))
                })
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// What happens at a fault event. In a file: `kind = "<kebab-case name>"` plus the
/// variant's fields. Single `node` fields take a [`NodeSel`]; node lists take ids.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Fault {
    /// Split into `groups`; nodes not listed form one more group together.
    Partition { groups: Vec<Vec<NodeId>> },
    /// Cut `node` off from everyone, both ways.
    Isolate { node: NodeSel },
    /// Cut the one link between two nodes, both ways.
    Cut { nodes: [NodeId; 2] },
    /// Drop messages from any of `from` to any of `to`; the reverse direction works.
    OneWay { from: Vec<NodeId>, to: Vec<NodeId> },
    /// A partial partition: `node` sees everyone, the groups do not see each other.
    Bridge {
        node: NodeSel,
        groups: Vec<Vec<NodeId>>,
    },
    /// Remove every partition, cut, one-way and bridge.
    Heal {},
    /// Stop the process: volatile state and timers are lost, storage survives.
    Crash { node: NodeSel },
    /// Start a crashed process again.
    Restart { node: NodeSel },
    /// Stall the process (GC, VM) for `duration`; it resumes by itself, beliefs intact.
    Pause {
        node: NodeSel,
        #[serde(with = "human")]
        duration: Duration,
    },
    /// Step the node's wall clock by `by` (monotonic time does not jump).
    ClockJump { node: NodeSel, by: SignedDuration },
    /// The node's clock runs at `drift` from now on.
    ClockDrift {
        node: NodeSel,
        #[serde(deserialize_with = "drift")]
        drift: f64,
    },
    /// The node's clocks (wall and monotonic) stand still for `duration` of true time,
    /// then run on from where they stopped (no jump): a VM freeze seen from its clock.
    /// The process keeps running; its timers fire `duration` late.
    ClockStall {
        node: NodeSel,
        #[serde(with = "human")]
        duration: Duration,
    },
    /// NTP slewing: the node's wall clock moves by `by` gradually, at `ppm` parts per
    /// million of its own rate (500 by default, ntpd's limit), instead of stepping.
    /// The monotonic clock is not slewed (see the book's clocks page).
    ClockSlew {
        node: NodeSel,
        by: SignedDuration,
        #[serde(
            default = "default_slew_ppm",
            deserialize_with = "slew_ppm",
            skip_serializing_if = "is_default_slew_ppm"
        )]
        ppm: f64,
    },
    /// Change the global network defaults from now on (fields not written keep theirs).
    Network {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        latency: Option<Delay>,
        #[serde(
            default,
            deserialize_with = "opt_probability",
            skip_serializing_if = "Option::is_none"
        )]
        loss: Option<f64>,
        #[serde(
            default,
            deserialize_with = "opt_probability",
            skip_serializing_if = "Option::is_none"
        )]
        duplicate: Option<f64>,
    },
    /// A client request delivered to `node` (see `tenure_core::Request`).
    Request {
        node: NodeSel,
        name: String,
        #[serde(default)]
        arg: i64,
    },
    /// The node's machine loses power: like `crash`, and every write it had not synced
    /// is lost; its monotonic clock restarts from a new origin. `restart` boots it.
    /// With `torn = true` the last unsynced write is torn instead of lost whole: the
    /// disk keeps a seeded prefix of it, which fails its checksum, so a read of that
    /// key gives what was synced before it.
    PowerLoss {
        node: NodeSel,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        torn: bool,
    },
    /// A crash inside the node's handling: it keeps running and crashes right after
    /// applying `at_effect` more effects (sends, timer changes, writes, syncs,
    /// observations): between two effects of one handler if that is where the count
    /// ends, or as the handler ends if it is its last effect (not at the node's next
    /// effect, which may come much later). With `power = true` it is a power loss. With
    /// `at_sync = true` the count starts at the node's next sync (`at_effect = 0`:
    /// right before it, the writes it would have made durable still unsynced). With
    /// `restart_after` the node boots again that long after the crash (else a
    /// `restart` event or the heal's restart boots it).
    CrashPoint {
        node: NodeSel,
        at_effect: u32,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        at_sync: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        power: bool,
        #[serde(default, with = "opt_human", skip_serializing_if = "Option::is_none")]
        restart_after: Option<Duration>,
    },
    /// The node's syncs hang for `duration`: a sync begun before its end completes no
    /// earlier than that (plus the node's fsync latency).
    DiskStall {
        node: NodeSel,
        #[serde(with = "human")]
        duration: Duration,
    },
    /// The node's syncs fail for `duration`: the protocol sees an error, nothing it
    /// wrote becomes durable by that sync.
    DiskError {
        node: NodeSel,
        #[serde(with = "human")]
        duration: Duration,
    },
    /// The node turns slow for `duration` (gray failure: alive, but slow): its
    /// processing times and fsync latencies are multiplied by `factor` (1..=1000).
    Slow {
        node: NodeSel,
        factor: f64,
        #[serde(with = "human")]
        duration: Duration,
    },
    /// One direction of one link turns slow for `duration`: messages from `from` to
    /// `node` take `latency`, the way back keeps its own; then the link is what it was.
    /// Either end may be a role, resolved when it fires: `from = 0, node = "holder"`
    /// is a slow reply path from node 0 to whoever holds then.
    SlowLink {
        from: NodeSel,
        node: NodeSel,
        latency: Delay,
        #[serde(with = "human")]
        duration: Duration,
    },
    /// The node turns Byzantine from now on, for the rest of the run (restarts
    /// included): it lies as `behaviour` says (`equivocate`, `wrong-digest`, `silent`,
    /// `conflicting-views`), in its own name only. Within the assumptions only for a
    /// protocol that declares `max-byzantine`, and only up to it.
    Byzantine {
        node: NodeSel,
        behaviour: tenure_core::Byzantine,
    },
}

impl Fault {
    /// Every `kind` a fault event may have, as written in files.
    pub const KINDS: &'static [&'static str] = &[
        "partition",
        "isolate",
        "cut",
        "one-way",
        "bridge",
        "heal",
        "crash",
        "restart",
        "pause",
        "clock-jump",
        "clock-drift",
        "network",
        "request",
        "power-loss",
        "crash-point",
        "disk-stall",
        "disk-error",
        "slow",
        "clock-stall",
        "clock-slew",
        "slow-link",
        "byzantine",
    ];

    /// This fault's `kind`, as written in files.
    /// The one node a single-node fault aims at (a fixed node or "the leader"); `None`
    /// for faults of the network or of several nodes.
    pub fn node(&self) -> Option<&NodeSel> {
        match self {
            Fault::Isolate { node }
            | Fault::Bridge { node, .. }
            | Fault::Crash { node }
            | Fault::Restart { node }
            | Fault::Pause { node, .. }
            | Fault::ClockJump { node, .. }
            | Fault::ClockDrift { node, .. }
            | Fault::Request { node, .. }
            | Fault::PowerLoss { node, .. }
            | Fault::ClockStall { node, .. }
            | Fault::ClockSlew { node, .. }
            | Fault::CrashPoint { node, .. }
            | Fault::DiskStall { node, .. }
            | Fault::DiskError { node, .. }
            | Fault::Slow { node, .. }
            | Fault::SlowLink { node, .. }
            | Fault::Byzantine { node, .. } => Some(node),
            Fault::Partition { .. }
            | Fault::Cut { .. }
            | Fault::OneWay { .. }
            | Fault::Heal {}
            | Fault::Network { .. } => None,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Partition { .. } => "partition",
            Fault::Isolate { .. } => "isolate",
            Fault::Cut { .. } => "cut",
            Fault::OneWay { .. } => "one-way",
            Fault::Bridge { .. } => "bridge",
            Fault::Heal {} => "heal",
            Fault::Crash { .. } => "crash",
            Fault::Restart { .. } => "restart",
            Fault::Pause { .. } => "pause",
            Fault::ClockJump { .. } => "clock-jump",
            Fault::ClockDrift { .. } => "clock-drift",
            Fault::Network { .. } => "network",
            Fault::Request { .. } => "request",
            Fault::PowerLoss { .. } => "power-loss",
            Fault::CrashPoint { .. } => "crash-point",
            Fault::DiskStall { .. } => "disk-stall",
            Fault::DiskError { .. } => "disk-error",
            Fault::Slow { .. } => "slow",
            Fault::SlowLink { .. } => "slow-link",
            Fault::ClockStall { .. } => "clock-stall",
            Fault::ClockSlew { .. } => "clock-slew",
            Fault::Byzantine { .. } => "byzantine",
        }
    }
}

impl Fault {
    /// How long the fault lasts once applied, for the faults that end by themselves (a
    /// pause, a disk stall or error, a slow node or link, a clock stall).
    pub fn lasts(&self) -> Option<Duration> {
        match self {
            Fault::Pause { duration, .. }
            | Fault::DiskStall { duration, .. }
            | Fault::DiskError { duration, .. }
            | Fault::Slow { duration, .. }
            | Fault::SlowLink { duration, .. }
            | Fault::ClockStall { duration, .. } => Some(*duration),
            _ => None,
        }
    }
}

impl FaultEvent {
    /// Until when the fault `events[index]` may wait for a node to aim at, when it is
    /// aimed at `"holder"` or `"waiter"` and nobody holds or waits as it fires: the
    /// timeline's next `heal` after it (else `end`, the end of the run), less what the
    /// fault lasts (at least 1 ms), so that it is over by the heal. `None` when it does
    /// not wait: a
    /// fixed node or `"leader"` (strict, as it always was); a crash or a power loss (its
    /// outage is drawn against a restart at a fixed time, and a later crash would
    /// shorten it below a declared minimum restart delay; a crash point, which fires at
    /// a time nobody knows in advance, does wait); a restart or a request; or no time
    /// left before the heal.
    pub fn aim_deadline(events: &[FaultEvent], index: usize, end: Duration) -> Option<Duration> {
        let e = events.get(index)?;
        let aim = e.fault.node()?.aim()?;
        if aim == tenure_core::Aim::Leader
            || matches!(
                e.fault,
                Fault::Crash { .. }
                    | Fault::PowerLoss { .. }
                    | Fault::Restart { .. }
                    | Fault::Request { .. }
            )
        {
            return None;
        }
        let heal = events
            .iter()
            .filter(|h| matches!(h.fault, Fault::Heal {}) && h.at > e.at)
            .map(|h| h.at)
            .min()
            .unwrap_or(end)
            .min(end);
        // Over by the heal: a fault with no duration of its own (an isolation, a clock
        // step, a crash point) is applied 1 ms before it at the latest, never at the
        // heal's instant, where it would come after the heal and outlast it.
        let lasts = e
            .fault
            .lasts()
            .unwrap_or_default()
            .max(Duration::from_millis(1));
        let until = heal.saturating_sub(lasts);
        (until > e.at).then_some(until)
    }
}

/// One entry of `checks`, with its `[check.<name>]` table as JSON (an empty object when
/// not written).
#[derive(Clone, Debug, PartialEq)]
pub struct CheckSpec {
    pub name: String,
    pub params: serde_json::Value,
}

/// `[expect]`: what the run must end with.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Expectation {
    /// Every check passes.
    #[default]
    Pass,
    /// `checker` (one of the scenario's checks) reports a violation.
    Violation { checker: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_or_waiter_fault_waits_until_the_next_heal_less_its_duration() {
        let ms = Duration::from_millis;
        let e = |at, fault| FaultEvent { at: ms(at), fault };
        let pause = |node| Fault::Pause {
            node,
            duration: ms(30),
        };
        let events = [
            e(10, pause(NodeSel::Holder)),
            e(20, pause(NodeSel::Waiter)),
            e(30, pause(NodeSel::Leader)),
            e(40, pause(NodeSel::Id(1))),
            e(
                50,
                Fault::Crash {
                    node: NodeSel::Holder,
                },
            ),
            e(
                60,
                Fault::PowerLoss {
                    node: NodeSel::Holder,
                    torn: false,
                },
            ),
            e(
                70,
                Fault::CrashPoint {
                    node: NodeSel::Holder,
                    at_effect: 1,
                    at_sync: false,
                    power: false,
                    restart_after: None,
                },
            ),
            e(
                80,
                Fault::Restart {
                    node: NodeSel::Holder,
                },
            ),
            e(100, Fault::Heal {}),
            e(110, pause(NodeSel::Holder)),
            e(190, pause(NodeSel::Holder)),
            e(200, Fault::Heal {}),
            e(
                300,
                Fault::Isolate {
                    node: NodeSel::Holder,
                },
            ),
        ];
        let until = |i| FaultEvent::aim_deadline(&events, i, ms(1000));
        assert_eq!(until(0), Some(ms(70)), "the heal at 100 ms less 30 ms");
        assert_eq!(until(1), Some(ms(70)));
        assert_eq!(until(2), None, "\"leader\" stays strict");
        assert_eq!(until(3), None, "a fixed node");
        assert_eq!(until(4), None, "a crash does not wait");
        assert_eq!(until(5), None, "a power loss does not wait");
        assert_eq!(
            until(6),
            Some(ms(99)),
            "a crash point waits to 1 ms before the heal"
        );
        assert_eq!(until(7), None, "a restart does not wait");
        assert_eq!(until(9), Some(ms(170)), "the next heal, not the first");
        assert_eq!(until(10), None, "no time left: over after the heal");
        assert_eq!(
            until(12),
            Some(ms(999)),
            "no heal after it: the end of the run"
        );
        assert_eq!(until(99), None);
    }

    #[test]
    fn every_kind_is_listed_and_named_by_serde() {
        let faults = [
            Fault::Partition { groups: vec![] },
            Fault::Isolate {
                node: NodeSel::Leader,
            },
            Fault::Cut {
                nodes: [NodeId(0), NodeId(1)],
            },
            Fault::OneWay {
                from: vec![],
                to: vec![],
            },
            Fault::Bridge {
                node: NodeSel::Id(0),
                groups: vec![],
            },
            Fault::Heal {},
            Fault::Crash {
                node: NodeSel::Id(1),
            },
            Fault::Restart {
                node: NodeSel::Id(1),
            },
            Fault::Pause {
                node: NodeSel::Id(1),
                duration: Duration::from_secs(1),
            },
            Fault::ClockJump {
                node: NodeSel::Id(1),
                by: SignedDuration(-1),
            },
            Fault::ClockDrift {
                node: NodeSel::Id(1),
                drift: 0.5,
            },
            Fault::Network {
                latency: None,
                loss: None,
                duplicate: None,
            },
            Fault::Request {
                node: NodeSel::Id(1),
                name: "put".into(),
                arg: 0,
            },
            Fault::PowerLoss {
                node: NodeSel::Leader,
                torn: true,
            },
            Fault::CrashPoint {
                node: NodeSel::Id(2),
                at_effect: 3,
                at_sync: true,
                power: true,
                restart_after: Some(Duration::from_millis(20)),
            },
            Fault::DiskStall {
                node: NodeSel::Id(0),
                duration: Duration::from_secs(2),
            },
            Fault::DiskError {
                node: NodeSel::Id(0),
                duration: Duration::from_millis(5),
            },
            Fault::Slow {
                node: NodeSel::Id(1),
                factor: 10.0,
                duration: Duration::from_secs(1),
            },
            Fault::ClockStall {
                node: NodeSel::Id(1),
                duration: Duration::from_millis(300),
            },
            Fault::ClockSlew {
                node: NodeSel::Leader,
                by: SignedDuration(-200_000_000),
                ppm: 500.0,
            },
            Fault::SlowLink {
                from: NodeSel::Id(0),
                node: NodeSel::Holder,
                latency: Delay::uniform(Duration::from_millis(50), Duration::from_millis(100)),
                duration: Duration::from_secs(2),
            },
            Fault::Byzantine {
                node: NodeSel::Id(0),
                behaviour: tenure_core::Byzantine::Equivocate,
            },
        ];
        let kinds: Vec<&str> = faults.iter().map(Fault::kind).collect();
        assert_eq!(kinds, Fault::KINDS);
        for f in &faults {
            let json = serde_json::to_value(f).unwrap();
            let tag = json.as_object().unwrap().keys().next().unwrap().clone();
            assert_eq!(tag, f.kind());
            assert_eq!(&serde_json::from_value::<Fault>(json).unwrap(), f);
        }
    }

    #[test]
    fn node_selectors_read_ids_and_roles() {
        assert_eq!(
            serde_json::from_str::<NodeSel>("3").unwrap(),
            NodeSel::Id(3)
        );
        assert_eq!(
            serde_json::from_str::<NodeSel>("\"leader\"").unwrap(),
            NodeSel::Leader
        );
        for sel in [NodeSel::Leader, NodeSel::Holder, NodeSel::Waiter] {
            let json = serde_json::to_string(&sel).unwrap();
            assert_eq!(json, format!("\"{sel}\""));
            assert_eq!(serde_json::from_str::<NodeSel>(&json).unwrap(), sel);
            assert_eq!(sel.id(), None);
        }
        let err = serde_json::from_str::<NodeSel>("\"boss\"").unwrap_err();
        assert!(err.to_string().contains("\"leader\""), "{err}");
        assert!(err.to_string().contains("\"holder\""), "{err}");
        let err = serde_json::from_str::<NodeSel>("\"holdr\"").unwrap_err();
        assert!(err.to_string().contains("did you mean `holder`?"), "{err}");
        let err = serde_json::from_str::<NodeSel>("-1").unwrap_err();
        assert!(err.to_string().contains("negative"), "{err}");
        assert_eq!(NodeSel::Leader.id(), None);
        assert_eq!(NodeSel::Id(2).id(), Some(NodeId(2)));
    }

    #[test]
    fn latency_rejects_min_above_max() {
        let l: Latency = serde_json::from_str(r#"["1ms","5ms"]"#).unwrap();
        assert_eq!(
            l,
            Latency::new(Duration::from_millis(1), Duration::from_millis(5))
        );
        let err = serde_json::from_str::<Latency>(r#"["5ms","1ms"]"#).unwrap_err();
        assert!(err.to_string().contains("above the maximum"), "{err}");
    }
}
