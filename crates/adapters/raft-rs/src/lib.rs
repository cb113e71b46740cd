//! raft-rs (TiKV's Raft, the `raft` crate =0.7.0, the Rust port of etcd's raft) run
//! unmodified under tenure: an adapter that drives `RawNode` from tenure's clock,
//! network and disk, and reports what the real library did as observations.
//!
//! **What the adapter does, and the raft-rs code it follows** (read in `raft` 0.7.0):
//! * **Ticks.** A per-node timer on the node's monotonic clock calls `RawNode::tick`
//!   every `tick` (drift, stalls and pauses apply; a wall-clock step does not replay
//!   ticks, and a node late by several ticks ticks once). raft-rs counts ticks
//!   (`Raft::tick_election`, `tick_heartbeat` in `src/raft.rs`).
//! * **Ready.** Every `Ready` is handled as `RawNode::ready`'s and `Ready::messages` /
//!   `persisted_messages`' docs say (`src/raw_node.rs`): `messages()` (a leader's) go
//!   out at once; entries and hard state are written (`LogStore`, readable by raft-rs
//!   before `advance_append_async`, as its doc requires); then, if `must_sync`, tenure's
//!   `sync`; `persisted_messages()` are sent after it, so they leave only once the sync
//!   has completed (fsync latency, disk stalls, crash points and power losses act on the
//!   real code); then `on_persist_ready(number)`; committed entries are applied to a
//!   small key-value map and `advance_apply` is called. A failed sync stops the node
//!   (the page cache is then of unknown state; it resumes on restart).
//! * **Restart.** A fresh `RawNode` over the log and hard state read back from tenure's
//!   disk (after a power loss, only what was synced), `applied = 0`: the state machine
//!   is rebuilt by applying the committed log again.
//! * **Determinism without patching raft-rs.** `Raft::reset_randomized_election_timeout`
//!   draws from `rand::thread_rng()` (`src/raft.rs`), which madsim cannot intercept. It
//!   is called only from `Raft::reset`, and every `reset` changes the node's term or role
//!   (`become_follower`, `become_candidate`, `become_leader`) except the one in
//!   `Raft::new`. So the adapter re-draws the timeout from the node's seeded stream
//!   (through raft-rs's public `Raft::set_randomized_election_timeout`, which raft-rs's
//!   own tests use) right after `RawNode::new` and after every call into raft-rs in
//!   which the term or role changed. raft-rs's maps hash with FxHash: deterministic.
//! * **A panic is a finding.** Every call into raft-rs runs under `catch_unwind`; a
//!   panic is recorded as `Panicked { message, input }` (judged by `no-panic`) and the
//!   node handles nothing more until it restarts.
//! * **Workload.** Every `propose_interval` a node that believes it leads proposes a
//!   put of a random value (from its seeded stream) to one of eight keys.
//!
//! **Observations.** `Leader`/`Follower`/`Candidate` on every change of role or term
//! (a pre-candidate is a follower that knows no leader), `LogAppend` for every entry
//! written (and for the whole recovered log after a start), `LogApply` for every entry
//! applied, `Panicked`.
//!
//! **Variants.** `defaults` (raft-rs's `Config::default()` options: no PreVote, no
//! CheckQuorum, `ReadOnlyOption::Safe`), `hardened` (PreVote and CheckQuorum), and two
//! embedding bugs: `ack-before-persist` (hardened, but `persisted_messages` are sent
//! before the sync) and `stale-ready` (advances a `Ready` after taking the next one,
//! which `RawNode::ready`'s doc forbids; raft-rs's `RawNode::commit_ready` asserts it:
//! a provoked panic inside raft-rs, the negative control of `no-panic`).

mod storage;

pub use storage::LogStore;

use protobuf::Message as _;
use raft::eraftpb::{Entry, EntryType, Message};
use raft::{Config, RawNode, StateRole};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, NodeId, Observation, ParamError, Protocol,
    ProtocolInfo, RoleInfo, VariantInfo,
};

/// The variants: raft-rs's defaults, hardened options, and two embedding bugs.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum RaftRsVariant {
    Defaults,
    Hardened,
    AckBeforePersist,
    StaleReady,
}

static INFO: ProtocolInfo = ProtocolInfo {
    name: "raft-rs",
    summary: "raft-rs 0.7.0 (TiKV's Raft, the `raft` crate), the real library run unmodified \
              through an adapter: ticks, Ready handling, a log on tenure's disk",
    roles: &[RoleInfo {
        name: "server",
        summary: "a raft-rs RawNode with a key-value state machine",
        default_count: 5,
        kind: tenure_core::RoleKind::Participant,
    }],
    variants: &[
        VariantInfo {
            name: "defaults",
            summary: "raft-rs's default options: no PreVote, no CheckQuorum, Safe reads",
            breaks: &[],
        },
        VariantInfo {
            name: "hardened",
            summary: "PreVote and CheckQuorum on",
            breaks: &[],
        },
        VariantInfo {
            name: "ack-before-persist",
            summary: "an embedding bug: persisted_messages (votes, append acks) are sent \
                      before the sync completes, so a power loss forgets what was promised",
            breaks: &[
                "state-machine-safety",
                "log-matching",
                "single-leader-per-term",
                // raft-rs's own fatal error for a log that lost acknowledged entries
                // (`RaftLog::commit_to`: "to_commit is out of range").
                "no-panic",
            ],
        },
        VariantInfo {
            name: "stale-ready",
            summary: "an embedding bug: takes a second Ready before advancing the first, \
                      then advances the first; raft-rs panics (RawNode::commit_ready)",
            breaks: &["no-panic"],
        },
    ],
};

/// The adapter's parameters, as a scenario's `[protocol.params]` writes them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RaftRsParams {
    /// How often `RawNode::tick` is called (on the node's monotonic clock).
    pub tick: HumanDuration,
    /// raft-rs's `election_tick`: the randomized timeout is drawn from
    /// `[election_tick, 2 * election_tick)` ticks.
    pub election_tick: u32,
    /// raft-rs's `heartbeat_tick`.
    pub heartbeat_tick: u32,
    /// How often a node that believes it leads proposes a put.
    pub propose_interval: HumanDuration,
}

impl Default for RaftRsParams {
    fn default() -> Self {
        // 10 ms ticks: elections after 150-300 ms, heartbeats every 50 ms, as the zoo's
        // Raft (etcd's defaults are 100 ms ticks, 10 and 1).
        RaftRsParams {
            tick: HumanDuration(Duration::from_millis(10)),
            election_tick: 15,
            heartbeat_tick: 5,
            propose_interval: HumanDuration(Duration::from_millis(50)),
        }
    }
}

/// What every node of a run shares.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RaftRsConfig {
    pub variant: RaftRsVariant,
    pub tick: Duration,
    pub election_tick: usize,
    pub heartbeat_tick: usize,
    pub propose_interval: Duration,
    pub nodes: u64,
}

impl RaftRsConfig {
    fn raft_config(&self, id: u64) -> Config {
        let hardened = self.variant != RaftRsVariant::Defaults;
        Config {
            id,
            election_tick: self.election_tick,
            heartbeat_tick: self.heartbeat_tick,
            min_election_tick: self.election_tick,
            max_election_tick: 2 * self.election_tick,
            pre_vote: hardened,
            check_quorum: hardened,
            max_size_per_msg: 1 << 20,
            max_inflight_msgs: 256,
            applied: 0,
            ..Config::default()
        }
    }
}

/// A raft-rs message on tenure's network: its protobuf encoding (what a real transport
/// sends), shown in traces as a one-line summary.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RaftRsMsg(pub Vec<u8>);

impl RaftRsMsg {
    fn encode(m: &Message) -> RaftRsMsg {
        RaftRsMsg(m.write_to_bytes().expect("raft messages encode"))
    }
    fn decode(&self) -> Option<Message> {
        Message::parse_from_bytes(&self.0).ok()
    }
}

impl fmt::Debug for RaftRsMsg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.decode() {
            Some(m) => write!(f, "{}", summary(&m)),
            None => write!(f, "undecodable {} bytes", self.0.len()),
        }
    }
}

fn summary(m: &Message) -> String {
    let mut s = format!(
        "{:?} {}->{} t{} lt{} i{} c{}",
        m.get_msg_type(),
        m.from,
        m.to,
        m.term,
        m.log_term,
        m.index,
        m.commit
    );
    if !m.entries.is_empty() {
        s.push_str(&format!(" +{}", m.entries.len()));
    }
    if m.reject {
        s.push_str(&format!(" reject(hint {})", m.reject_hint));
    }
    s
}

/// The adapter's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RaftRsTimer {
    Tick,
    Propose,
}

/// One node: a raft-rs `RawNode` and the state machine it applies to.
pub struct RaftRs {
    me: NodeId,
    config: RaftRsConfig,
    /// `None` before `on_start`, and after a panic or a failed sync (halted).
    node: Option<RawNode<LogStore>>,
    /// What raft-rs's term and role were after the last call (for the re-draw).
    last_seen: (u64, StateRole),
    /// The role last observed: (term, role, leader).
    announced: Option<(u64, StateRole, u64)>,
    kv: BTreeMap<String, u64>,
}

impl fmt::Debug for RaftRs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (term, role) = self.last_seen;
        f.debug_struct("RaftRs")
            .field("me", &self.me)
            .field("term", &term)
            .field("role", &role)
            .field("halted", &self.node.is_none())
            .finish()
    }
}

/// The model explorer clones and hashes states; raft-rs's `RawNode` is neither `Clone`
/// nor `Hash`, and raft-rs declares no model, so only the simulator runs it, and the
/// simulator never clones a protocol value.
impl Clone for RaftRs {
    fn clone(&self) -> Self {
        panic!("a raft-rs node cannot be cloned (RawNode is not Clone); only the simulator runs it")
    }
}

impl PartialEq for RaftRs {
    fn eq(&self, other: &Self) -> bool {
        self.me == other.me && self.last_seen == other.last_seen && self.kv == other.kv
    }
}
impl Eq for RaftRs {}
impl std::hash::Hash for RaftRs {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.me.hash(state);
        self.last_seen.0.hash(state);
        (self.last_seen.1 as u8).hash(state);
        self.kv.hash(state);
    }
}

/// raft-rs's id of a tenure node (raft ids start at 1).
fn raft_id(node: NodeId) -> u64 {
    u64::from(node.0) + 1
}

fn node_of(id: u64) -> NodeId {
    NodeId((id - 1) as u32)
}

/// FNV-1a of an entry's type and bytes.
fn digest(e: &Entry) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let ty = e.get_entry_type() as u8;
    for b in std::iter::once(ty)
        .chain(e.data.iter().copied())
        .chain(e.context.iter().copied())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".to_string())
}

type E<'a> = dyn Env<RaftRsMsg, RaftRsTimer> + 'a;

impl RaftRs {
    fn voters(&self) -> Vec<u64> {
        (1..=self.config.nodes).collect()
    }

    /// Runs `f` (a call into raft-rs and the handling of its Readys) under
    /// `catch_unwind`; a panic is recorded, with `input()` (what the node was handling,
    /// built only then), and halts the node.
    fn guarded(
        &mut self,
        env: &mut E<'_>,
        input: impl FnOnce() -> String,
        f: impl FnOnce(&mut RaftRs, &mut E<'_>),
    ) {
        if self.node.is_none() {
            return;
        }
        let result = catch_unwind(AssertUnwindSafe(|| f(self, env)));
        if let Err(panic) = result {
            self.node = None;
            env.observe(Observation::Panicked {
                message: panic_message(&*panic),
                input: input(),
            });
        }
    }

    /// After a call into raft-rs: re-draw the election timeout if the term or role
    /// changed (raft-rs drew it from `thread_rng`), and observe a new role.
    fn after_call(&mut self, env: &mut E<'_>) {
        let Some(node) = self.node.as_mut() else {
            return;
        };
        let now = (node.raft.term, node.raft.state);
        if now != self.last_seen {
            self.last_seen = now;
            redraw(node, &self.config, env);
        }
        let role = (node.raft.term, node.raft.state, node.raft.leader_id);
        if self.announced != Some(role) {
            self.announced = Some(role);
            let (term, state, leader) = role;
            env.observe(match state {
                StateRole::Leader => Observation::Leader { term },
                StateRole::Candidate => Observation::Candidate { term },
                StateRole::Follower | StateRole::PreCandidate => Observation::Follower {
                    term,
                    leader: (leader != raft::INVALID_ID).then(|| node_of(leader)),
                },
            });
        }
    }

    /// Handles every pending `Ready`, as `RawNode::ready`'s doc says.
    fn handle_readies(&mut self, env: &mut E<'_>) {
        loop {
            self.after_call(env);
            let Some(node) = self.node.as_mut() else {
                return;
            };
            if !node.has_ready() {
                return;
            }
            let mut rd = node.ready();
            if self.config.variant == RaftRsVariant::StaleReady {
                // The bug: a second Ready taken before the first is advanced, then the
                // first advanced.
                let _second = node.ready();
            }
            for m in rd.take_messages() {
                send(env, &m);
            }
            assert!(
                rd.snapshot().get_metadata().index == 0,
                "raft-rs sent a snapshot, but the log is never compacted"
            );
            if !rd.entries().is_empty() {
                node.mut_store().append(rd.entries(), env);
                for e in rd.entries() {
                    env.observe(Observation::LogAppend {
                        index: e.index,
                        term: e.term,
                        digest: digest(e),
                    });
                }
            }
            if let Some(hs) = rd.hs() {
                let hs = hs.clone();
                node.mut_store().set_hard_state(&hs, env);
            }
            let persisted = rd.take_persisted_messages();
            let committed = rd.take_committed_entries();
            let must_sync = rd.must_sync();
            let number = rd.number();
            node.advance_append_async(rd);
            if self.config.variant == RaftRsVariant::AckBeforePersist {
                for m in &persisted {
                    send(env, m);
                }
            }
            if must_sync && env.sync().is_err() {
                env.observe(Observation::Note {
                    text: "fsync failed: the node stops until it restarts".to_string(),
                });
                self.node = None;
                return;
            }
            if self.config.variant != RaftRsVariant::AckBeforePersist {
                for m in &persisted {
                    send(env, m);
                }
            }
            node.on_persist_ready(number);
            for e in &committed {
                apply(&mut self.kv, e);
                env.observe(Observation::LogApply {
                    index: e.index,
                    term: e.term,
                    digest: digest(e),
                });
            }
            if !committed.is_empty() {
                node.advance_apply();
            }
        }
    }
}

/// raft-rs's own `thread_rng` draw replaced by one from the node's seeded stream.
fn redraw(node: &mut RawNode<LogStore>, config: &RaftRsConfig, env: &mut E<'_>) {
    let lo = config.election_tick as u64;
    let hi = 2 * config.election_tick as u64 - 1;
    let t = env.range_inclusive(lo, hi) as usize;
    node.raft.set_randomized_election_timeout(t);
}

fn send(env: &mut E<'_>, m: &Message) {
    env.send(node_of(m.to), RaftRsMsg::encode(m));
}

/// The state machine: `put <key> <value>` entries; empty (leader) entries change nothing.
fn apply(kv: &mut BTreeMap<String, u64>, e: &Entry) {
    if e.get_entry_type() != EntryType::EntryNormal || e.data.is_empty() {
        return;
    }
    let text = String::from_utf8_lossy(&e.data);
    let mut words = text.split(' ');
    if let (Some("put"), Some(key), Some(value)) = (words.next(), words.next(), words.next()) {
        if let Ok(v) = value.parse() {
            kv.insert(key.to_string(), v);
        }
    }
}

impl Protocol for RaftRs {
    type Msg = RaftRsMsg;
    type Timer = RaftRsTimer;
    type Config = RaftRsConfig;

    fn new(config: &RaftRsConfig, me: NodeId, _cluster: &Cluster) -> RaftRs {
        RaftRs {
            me,
            config: config.clone(),
            node: None,
            last_seen: (0, StateRole::Follower),
            announced: None,
            kv: BTreeMap::new(),
        }
    }

    fn on_start(&mut self, env: &mut E<'_>) {
        let store = LogStore::load(self.voters(), env);
        for e in &store.entries {
            env.observe(Observation::LogAppend {
                index: e.index,
                term: e.term,
                digest: digest(e),
            });
        }
        let config = self.config.raft_config(raft_id(self.me));
        let logger = slog::Logger::root(slog::Discard, slog::o!());
        match catch_unwind(AssertUnwindSafe(|| RawNode::new(&config, store, &logger))) {
            Ok(Ok(mut node)) => {
                redraw(&mut node, &self.config, env);
                self.last_seen = (node.raft.term, node.raft.state);
                self.node = Some(node);
            }
            Ok(Err(e)) => {
                env.observe(Observation::Panicked {
                    message: format!("RawNode::new failed: {e}"),
                    input: "start".to_string(),
                });
                return;
            }
            Err(panic) => {
                env.observe(Observation::Panicked {
                    message: panic_message(&*panic),
                    input: "start".to_string(),
                });
                return;
            }
        }
        self.guarded(env, || "start".to_string(), |s, env| s.handle_readies(env));
        env.set_timer(RaftRsTimer::Tick, self.config.tick);
        env.set_timer(RaftRsTimer::Propose, self.config.propose_interval);
    }

    fn on_message(&mut self, env: &mut E<'_>, from: NodeId, msg: RaftRsMsg) {
        let Some(m) = msg.decode() else {
            return;
        };
        let input = || format!("{msg:?} from {from}");
        self.guarded(env, input, |s, env| {
            if let Some(node) = s.node.as_mut() {
                // An error (a message from an unknown peer, a local message type) is
                // raft-rs refusing the input; nothing changed.
                let _ = node.step(m);
            }
            s.handle_readies(env);
        });
    }

    fn on_timer(&mut self, env: &mut E<'_>, timer: RaftRsTimer) {
        match timer {
            RaftRsTimer::Tick => {
                if self.node.is_none() {
                    return; // halted: no more ticks until a restart
                }
                env.set_timer(RaftRsTimer::Tick, self.config.tick);
                self.guarded(
                    env,
                    || "tick".to_string(),
                    |s, env| {
                        if let Some(node) = s.node.as_mut() {
                            node.tick();
                        }
                        s.handle_readies(env);
                    },
                );
            }
            RaftRsTimer::Propose => {
                if self.node.is_none() {
                    return;
                }
                env.set_timer(RaftRsTimer::Propose, self.config.propose_interval);
                let leads = self
                    .node
                    .as_ref()
                    .is_some_and(|n| n.raft.state == StateRole::Leader);
                if !leads {
                    return;
                }
                let value = env.next_u64() >> 1;
                let data = format!("put k{} {value}", value % 8).into_bytes();
                self.guarded(
                    env,
                    || "propose".to_string(),
                    |s, env| {
                        if let Some(node) = s.node.as_mut() {
                            // A refused proposal (a leader stepping down meanwhile) is lost,
                            // as a client's would be.
                            let _ = node.propose(vec![], data);
                        }
                        s.handle_readies(env);
                    },
                );
            }
        }
    }
}

impl Configurable for RaftRs {
    type Params = RaftRsParams;
    type Variant = RaftRsVariant;
    type Role = tenure_core::roles::Server;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: RaftRsParams,
        variant: RaftRsVariant,
        cluster: &Cluster,
    ) -> Result<RaftRsConfig, ParamError> {
        if params.tick.0.is_zero() {
            return Err(ParamError::new("tick", "must be more than 0"));
        }
        if params.heartbeat_tick == 0 {
            return Err(ParamError::new("heartbeat_tick", "must be more than 0"));
        }
        if params.election_tick <= params.heartbeat_tick {
            return Err(ParamError::new(
                "election_tick",
                "must be more than heartbeat_tick (raft-rs's Config::validate)",
            ));
        }
        if params.propose_interval.0.is_zero() {
            return Err(ParamError::new("propose_interval", "must be more than 0"));
        }
        tenure_core::Roles::<tenure_core::roles::Server>::of(cluster)?;
        Ok(RaftRsConfig {
            variant,
            tick: params.tick.0,
            election_tick: params.election_tick as usize,
            heartbeat_tick: params.heartbeat_tick as usize,
            propose_interval: params.propose_interval.0,
            nodes: cluster.size() as u64,
        })
    }

    fn promises(_config: &RaftRsConfig, _cluster: &Cluster) -> Vec<tenure_core::Promise> {
        use tenure_core::Promise;
        vec![
            Promise::new("single-leader-per-term"),
            Promise::new("log-matching"),
            Promise::new("state-machine-safety"),
            Promise::new("no-panic"),
        ]
    }

    fn assumptions(config: &RaftRsConfig) -> tenure_core::Assumptions {
        use tenure_core::{format_duration as f, Limit};
        let heartbeat = config.tick * config.heartbeat_tick as u32;
        let min_timeout = config.tick * config.election_tick as u32;
        let slack = min_timeout.saturating_sub(heartbeat);
        tenure_core::Assumptions {
            max_drift: Some(Limit::new(
                0.5,
                "the safety of log replication needs no clock (ticks only time elections)",
            )),
            max_latency: Some(Limit::new(
                slack / 2,
                format!(
                    "a stable leader needs broadcast time << election timeout (Raft §5.6): \
                     heartbeats every {} must reach a follower within its shortest timeout {}; \
                     half of the {} between them",
                    f(heartbeat),
                    f(min_timeout),
                    f(slack)
                ),
            )),
            ..Default::default()
        }
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        Err("raft-rs's RawNode cannot be cloned or hashed, so the explorer cannot step it")
    }
}

#[cfg(test)]
mod tests;
