//! The sans-IO protocol trait.

use crate::{Cluster, Env, NodeId};
use std::fmt::Debug;
use std::hash::Hash;

/// A protocol node: a state machine driven by handlers. It never blocks, never reads a
/// real clock, never opens a socket and never calls a global RNG; everything it touches
/// comes through `env`.
///
/// The same value runs in the simulator and the model explorer, so a node's state is a
/// plain value: `Clone`, `Eq`, `Hash` (the explorer deduplicates states by hash), and
/// handlers must be functions of (state, input, env readings) alone.
///
/// Crash and restart: the host drops the value, keeps its [`Storage`](crate::Storage),
/// builds a fresh one with [`Protocol::new`] and calls [`Protocol::on_start`], which is
/// where durable state is read back.
pub trait Protocol: Clone + Debug + Eq + Hash + Send + 'static {
    type Msg: Clone + Debug + Eq + Hash + Ord + Send + 'static;
    type Timer: Clone + Debug + Eq + Hash + Ord + Send + 'static;
    /// Parameters and variant, shared by every node of a run.
    type Config: Clone + Debug + Send + Sync + 'static;

    /// A fresh process for `me`, before any durable state is read.
    fn new(config: &Self::Config, me: NodeId, cluster: &Cluster) -> Self;

    /// The process starts (first boot or restart): read storage, set timers.
    fn on_start(&mut self, env: &mut dyn Env<Self::Msg, Self::Timer>);

    fn on_message(
        &mut self,
        env: &mut dyn Env<Self::Msg, Self::Timer>,
        from: NodeId,
        msg: Self::Msg,
    );

    fn on_timer(&mut self, env: &mut dyn Env<Self::Msg, Self::Timer>, timer: Self::Timer);

    /// A request from outside the cluster (a scenario's `request` event). Most protocols
    /// drive their clients from timers instead and ignore this.
    fn on_request(&mut self, env: &mut dyn Env<Self::Msg, Self::Timer>, request: &Request) {
        let _ = (env, request);
    }

    /// In stream mode (`[network] mode = "stream"`), the connection to `peer` was reset:
    /// a partition outlasted the connection timeout, or `peer` crashed. Messages queued
    /// on it in either direction are lost; later sends open a new connection. Both ends
    /// are told. Datagram mode never calls this; the default ignores it.
    fn on_disconnect(&mut self, env: &mut dyn Env<Self::Msg, Self::Timer>, peer: NodeId) {
        let _ = (env, peer);
    }

    /// The simulator turned this node Byzantine (a `byzantine` fault event): from now on
    /// it lies as `behaviour` says, in its own name only (the network's sender is
    /// unforgeable). Delivered again after every restart, so the node stays Byzantine.
    /// How to lie needs protocol knowledge, so the behaviour's code lives in the
    /// protocol; one that never declared `max-byzantine` ignores it (the default), and a
    /// scenario that turns its nodes is judged beyond its assumptions anyway.
    fn on_byzantine(&mut self, env: &mut dyn Env<Self::Msg, Self::Timer>, behaviour: Byzantine) {
        let _ = (env, behaviour);
    }

    /// Whether a write to `key` must be durable before the node acts on it. A node that
    /// sends a message while a write to such a key is not yet synced gets a durability
    /// hint in the report (the shape of "reply before persist"). Return `false` for keys
    /// the protocol never needs to survive a power loss (a cache, a counter it can
    /// rebuild). Every key by default.
    fn durable(key: &str) -> bool {
        let _ = key;
        true
    }
}

/// How a Byzantine node lies (Castro & Liskov's arbitrary faults, made a finite set so a
/// profile can draw them and a scenario can name them).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    strum::Display,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Byzantine {
    /// Says different things to different nodes about one decision (a primary that
    /// orders different requests at one sequence number for two halves of the backups).
    Equivocate,
    /// Sends digests that match no request (a pre-prepare whose digest is not its
    /// request's, prepares and commits for a digest nobody proposed).
    WrongDigest,
    /// Sends nothing at all (and still receives).
    Silent,
    /// Votes for two different new views at once, to different halves of the nodes.
    ConflictingViews,
}

/// A request injected by a scenario: a name and an argument, meaning what the protocol
/// says they mean.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Request {
    pub name: String,
    #[serde(default)]
    pub arg: i64,
}

/// What `tenure list` shows about a protocol, and what scenario validation checks.
///
/// Built with [`ProtocolInfo::new`] (a `const fn`, so it fits a `static`); the fields are
/// public for reading. `#[non_exhaustive]`: a field added later is not a breaking change.
///
/// ```
/// use tenure_core::{ProtocolInfo, RoleInfo, RoleKind, VariantInfo};
///
/// static INFO: ProtocolInfo = ProtocolInfo::new(
///     "my-lock",
///     "a lease lock",
///     &[
///         RoleInfo::new("server", "the lock service", 1),
///         RoleInfo::new("client", "lock clients", 2).with_kind(RoleKind::Holder),
///     ],
///     &[
///         VariantInfo::new("correct", "fenced writes"),
///         VariantInfo::new("no-fencing", "writes unfenced").with_breaks(&["mutual-exclusion"]),
///     ],
/// );
/// assert_eq!(INFO.role("client").unwrap().kind, RoleKind::Holder);
/// assert_eq!(INFO.variant("no-fencing").unwrap().breaks, ["mutual-exclusion"]);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ProtocolInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// The roles in cluster order; a scenario may give each a count.
    pub roles: &'static [RoleInfo],
    /// `correct` first, then the broken variants.
    pub variants: &'static [VariantInfo],
}

/// One role of a protocol ([`ProtocolInfo::roles`]): built with [`RoleInfo::new`] and
/// [`RoleInfo::with_kind`]; `#[non_exhaustive]`, so a field added later is not a
/// breaking change.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RoleInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub default_count: u32,
    /// What the role is, which is what fault profiles aim at (never its name).
    pub kind: RoleKind,
}

/// What a role is, as fault profiles see it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RoleKind {
    /// A participant of the protocol (a server, a replica, a candidate, a coordinator):
    /// every fault may aim at it.
    #[default]
    Participant,
    /// A client that waits for locks, holds them and acts on them: process faults
    /// (pauses, crashes, power losses) aim at it three times as often as at a
    /// participant, since a paused or crashed holder is the classic failure.
    Holder,
    /// The protected resource (the storage a lock guards): it is judged, not a
    /// participant, and its durability is its own promise, so power losses, crash
    /// points, disk latencies, stalls and slow nodes never aim at it.
    Resource,
}

/// One variant of a protocol ([`ProtocolInfo::variants`]): built with
/// [`VariantInfo::new`] and [`VariantInfo::with_breaks`]; `#[non_exhaustive]`, so a
/// field added later is not a breaking change.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct VariantInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// The checkers this variant is known to break (empty for correct variants and
    /// for cost-only variants).
    pub breaks: &'static [&'static str],
}

impl ProtocolInfo {
    /// A protocol's description: its name, a one-line summary, its roles in cluster
    /// order and its variants (`correct` first).
    pub const fn new(
        name: &'static str,
        summary: &'static str,
        roles: &'static [RoleInfo],
        variants: &'static [VariantInfo],
    ) -> ProtocolInfo {
        ProtocolInfo {
            name,
            summary,
            roles,
            variants,
        }
    }

    pub fn variant(&self, name: &str) -> Option<&VariantInfo> {
        self.variants.iter().find(|v| v.name == name)
    }
    pub fn role(&self, name: &str) -> Option<&RoleInfo> {
        self.roles.iter().find(|r| r.name == name)
    }
}

impl RoleInfo {
    /// A role of kind [`RoleKind::Participant`] (change it with [`RoleInfo::with_kind`]).
    pub const fn new(name: &'static str, summary: &'static str, default_count: u32) -> RoleInfo {
        RoleInfo {
            name,
            summary,
            default_count,
            kind: RoleKind::Participant,
        }
    }

    /// With the role's kind: what fault profiles aim at.
    pub const fn with_kind(mut self, kind: RoleKind) -> RoleInfo {
        self.kind = kind;
        self
    }
}

impl VariantInfo {
    /// A variant that breaks no checker (change it with [`VariantInfo::with_breaks`]).
    pub const fn new(name: &'static str, summary: &'static str) -> VariantInfo {
        VariantInfo {
            name,
            summary,
            breaks: &[],
        }
    }

    /// With the checkers this variant is known to break.
    pub const fn with_breaks(mut self, breaks: &'static [&'static str]) -> VariantInfo {
        self.breaks = breaks;
        self
    }
}

/// A protocol's variants as a type: `correct` and its broken twins, each named as a
/// scenario writes it (`variant = "no-drift-margin"`). `configure` matches on it, so a
/// variant the code does not handle does not compile, and a name the scenario misspells
/// never reaches the protocol.
///
/// Derive it with [`strum`]: `#[derive(Clone, Copy, Debug, PartialEq, Eq,
/// strum::Display, strum::EnumString, strum::VariantArray)]` and
/// `#[strum(serialize_all = "kebab-case")]`; any such enum is a `Variant`.
pub trait Variant: Copy + Eq + Debug + std::fmt::Display + Send + Sync + 'static {
    /// Every variant, in the order of [`ProtocolInfo::variants`] (`correct` first).
    fn all() -> &'static [Self];

    /// The variant a scenario names, if there is one.
    fn parse(name: &str) -> Option<Self> {
        Self::all().iter().copied().find(|v| v.to_string() == name)
    }
}

impl<T> Variant for T
where
    T: strum::VariantArray + Copy + Eq + Debug + std::fmt::Display + Send + Sync + 'static,
{
    fn all() -> &'static [Self] {
        T::VARIANTS
    }
}

/// A protocol the `tenure` tool can build from a scenario file: it describes itself and
/// turns parameters plus a variant name into its [`Protocol::Config`].
///
/// Parameters arrive as JSON (a scenario's `[protocol.params]` table) and are read into
/// `Params` with `#[serde(deny_unknown_fields)]`, so a misspelt parameter is an error.
pub trait Configurable: Protocol {
    type Params: serde::de::DeserializeOwned + Default + Debug;
    /// Its variants; their names are those of `info().variants`, in that order.
    type Variant: Variant;
    /// Its roles; their names are those of `info().roles`, in that order. Derived like
    /// a variant enum (any [`Variant`] type will do); a single-role protocol may use
    /// [`roles::Node`] or [`roles::Server`]. `configure` reads a cluster's roles into
    /// [`Roles`] once, so `Protocol::new` matches on the enum and no role is looked up
    /// by name at run time.
    type Role: Variant;

    fn info() -> &'static ProtocolInfo;

    /// An error names the parameter at fault.
    fn configure(
        params: Self::Params,
        variant: Self::Variant,
        cluster: &Cluster,
    ) -> Result<Self::Config, ParamError>;

    /// [`configure`](Self::configure) by the variant's name, as a scenario writes it; an
    /// unknown name is an error on the `variant` field.
    fn configure_named(
        params: Self::Params,
        variant: &str,
        cluster: &Cluster,
    ) -> Result<Self::Config, ParamError> {
        let Some(typed) = <Self::Variant as Variant>::parse(variant) else {
            return Err(ParamError::new(
                "variant",
                format!("{} has no variant `{variant}`", Self::info().name),
            ));
        };
        Self::configure(params, typed, cluster)
    }

    /// The properties this protocol promises, as checks with the parameters that make
    /// them mean what it promises (liveness bounds derived from its own timeouts, with
    /// the derivation). `tenure fuzz --protocol` judges exactly these; a scenario that
    /// lists one of these checks gets these parameters unless it sets its own. Empty:
    /// the tools fall back to the checks its broken variants break.
    fn promises(config: &Self::Config, cluster: &Cluster) -> Vec<crate::Promise> {
        let _ = (config, cluster);
        Vec::new()
    }

    /// The environment it is designed for: fuzz profiles draw within it by default.
    fn assumptions(config: &Self::Config) -> crate::Assumptions {
        let _ = config;
        crate::Assumptions::default()
    }

    /// How the model checker explores this protocol, or why it does not (its promises
    /// are about durations and drift, which only the simulator models).
    fn model() -> Result<crate::model::ModelSpec, &'static str> {
        Err("it declares no model settings")
    }

    /// How the real system's nodes talk, and so how a scenario that does not set
    /// `[network] mode` runs it: ZooKeeper's and etcd's clients hold TCP (gRPC)
    /// connections, so a short partition delays their messages and a long one resets
    /// the connection; most protocols are modelled on datagrams.
    fn transport() -> Transport {
        Transport::Datagram
    }

    /// The term a message carries, for the model's `steps-down-on-higher-term`
    /// (protocols without terms: `None`).
    fn message_term(msg: &Self::Msg) -> Option<u64> {
        let _ = msg;
        None
    }
}

/// How a protocol's messages travel when a scenario does not say (see
/// [`Configurable::transport`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Each message on its own: lost, duplicated or reordered as the network says.
    Datagram,
    /// TCP-like connections (`[network] mode = "stream"`).
    Stream,
}

/// Which role each node of a cluster plays, typed: read once (in `configure`, where an
/// unknown name is an error on the `cluster` field), then looked up by node.
///
/// ```
/// use tenure_core::{Cluster, NodeId, RoleSpec, Roles};
/// #[derive(Clone, Copy, Debug, PartialEq, Eq, strum::Display, strum::VariantArray)]
/// #[strum(serialize_all = "kebab-case")]
/// enum Role { Server, Client }
/// let cluster = Cluster::new(vec![RoleSpec::new("server", 1), RoleSpec::new("client", 2)]).unwrap();
/// let roles: Roles<Role> = Roles::of(&cluster).unwrap();
/// assert_eq!(roles.get(NodeId(0)), Role::Server);
/// assert_eq!(roles.get(NodeId(2)), Role::Client);
/// let other = Cluster::new(vec![RoleSpec::new("server", 1), RoleSpec::new("witness", 1)]).unwrap();
/// let err = Roles::<Role>::of(&other).unwrap_err();
/// assert_eq!(err.field, "cluster");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Roles<R>(Vec<R>);

impl<R: Variant> Roles<R> {
    /// Each node's role as `R`; a role `R` does not name is an error on `cluster`.
    pub fn of(cluster: &Cluster) -> Result<Roles<R>, ParamError> {
        let mut by_node = Vec::with_capacity(cluster.size());
        for node in cluster.nodes() {
            let name = cluster.role_of(node);
            let Some(role) = R::parse(name) else {
                let known: Vec<String> = R::all().iter().map(|r| r.to_string()).collect();
                return Err(ParamError::new(
                    "cluster",
                    format!("no role `{name}` here; the roles are {}", known.join(", ")),
                ));
            };
            by_node.push(role);
        }
        Ok(Roles(by_node))
    }

    /// The role `node` plays (a node of the cluster these roles were read from).
    pub fn get(&self, node: NodeId) -> R {
        self.0[node.index()]
    }
}

/// Ready-made role types for protocols whose nodes all play one role.
pub mod roles {
    /// One role, `node`.
    #[derive(
        Clone,
        Copy,
        Debug,
        PartialEq,
        Eq,
        Hash,
        strum::Display,
        strum::EnumString,
        strum::VariantArray,
    )]
    #[strum(serialize_all = "kebab-case")]
    pub enum Node {
        Node,
    }

    /// One role, `server`.
    #[derive(
        Clone,
        Copy,
        Debug,
        PartialEq,
        Eq,
        Hash,
        strum::Display,
        strum::EnumString,
        strum::VariantArray,
    )]
    #[strum(serialize_all = "kebab-case")]
    pub enum Server {
        Server,
    }
}

/// A parameter that makes no sense (e.g. a minimum above its maximum).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// The parameter's name, as written in the scenario (`election_timeout`).
    pub field: String,
    pub message: String,
}

impl ParamError {
    pub fn new(field: &str, message: impl Into<String>) -> ParamError {
        ParamError {
            field: field.to_string(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ParamError {}
