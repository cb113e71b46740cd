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
//! * **Messages** travel as `raft::eraftpb::Message` values: the simulator never looks
//!   into them, so the protobuf encoding a real transport would send is not built
//!   (debug builds check that every message sent reads back from its encoding
//!   unchanged, so carrying the value is carrying the bytes).
//! * **Restart.** A fresh `RawNode` over the log and hard state read back from tenure's
//!   disk (after a power loss, only what was synced; after a crash, also what was
//!   written and not synced, which the adapter syncs before raft-rs sees it: raft-rs
//!   acknowledges the log it starts from), `applied = 0`: the state machine is rebuilt
//!   by applying the committed log again.
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
//! * **Clients** (see [`client`]): every node runs a client beside its raft-rs node
//!   that reads, writes and compare-and-sets `keys` registers through the node it
//!   believes leads, with timeouts and retries. Writes are proposals
//!   (`RawNode::propose`), answered by the proposing leader once applied; reads are
//!   ReadIndex requests (`RawNode::read_index`, a fresh context per attempt), answered
//!   once the leader has applied up to the `ReadState`'s index.
//! * **Leadership transfer** (part of the workload): a node that becomes leader draws
//!   from its seeded stream how long it leads (`transfer_after`, 1 to 2 s by default),
//!   then calls `RawNode::transfer_leader` with a peer drawn at random (as an operator
//!   names one to `etcdctl move-leader`) and draws the next request. raft-rs does the
//!   rest (`src/raft.rs`, `handle_transfer_leader`: it drops proposals while the transfer
//!   runs, sends `MsgTimeoutNow` once the transferee's match is its last index, else an
//!   append first; `tick_election` gives the transfer up after an election timeout), so
//!   every run, calm ones included, has later leaders that `leader-completeness` checks.
//!   `transfer = false` turns it off (the replayed bug schedules of `scenarios/raft-rs/`
//!   do, as they were found without it).
//!
//! **Observations.** `Leader`/`Follower`/`Candidate` on every change of role or term
//! (a pre-candidate is a follower that knows no leader), `LogAppend` for every entry
//! written (and for the whole recovered log after a start), `LogApply` for every entry
//! applied, `Serves { term }` when a leader answers a read, the clients' `Invoke` /
//! `Complete`, `Panicked`.
//!
//! **Variants.** `defaults` (raft-rs's `Config::default()` options: no PreVote, no
//! CheckQuorum, `ReadOnlyOption::Safe`), `hardened` (PreVote and CheckQuorum),
//! `lease-reads` (hardened with `ReadOnlyOption::LeaseBased`), and two embedding bugs:
//! `ack-before-persist` (hardened, but `persisted_messages` are sent before the sync)
//! and `stale-ready` (advances a `Ready` after taking the next one, which
//! `RawNode::ready`'s doc forbids; raft-rs's `RawNode::commit_ready` asserts it: a
//! provoked panic inside raft-rs, the negative control of `no-panic`). Known upstream
//! bugs, replayed (book: "Known bugs, replayed"): `pre-vote-only` and
//! `check-quorum-only` (with `defaults` and `hardened`, the four PreVote x CheckQuorum
//! settings under the bridge schedule of the 2020 Cloudflare etcd outage: only
//! `defaults` loses its leader), and
//! `priority-511` (raft-rs #511: distinct `Config::priority` with PreVote on a group at
//! term 0 panics in `RaftCore::send`) with its mitigation `priority-511-term-1` (the
//! group bootstrapped at term 1).
//!
//! **Why `lease-reads` is not linearizable, even with perfect clocks** (raft-rs 0.7.0,
//! `src/raft.rs`): a `LeaseBased` ReadIndex is answered by any node in the `Leader`
//! state (`step_leader`, `MsgReadIndex`); the only lease is CheckQuorum. The leader
//! checks its quorum every `election_tick` ticks (`tick_heartbeat`), on whether each
//! peer was heard from at all since the previous check (`quorum_recently_active`). A
//! leader cut off just after hearing from a quorum passes the next check and steps down
//! only at the one after: up to 2 × `election_tick` after it last heard from a quorum.
//! Its followers stop honouring it (`in_lease` in `Raft::step`) `election_tick` ticks
//! after its last heartbeat and may elect a new leader from then on. For up to
//! `election_tick` ticks two nodes lead, and the old one answers reads from a state the
//! new one has already written past: etcd-io/raft issue #166 ("Question about
//! LeaseRead": the lease lasts up to 1.5-2 election timeouts), the same code in etcd's
//! raft. A slow leader clock or a paused leader widens the window (ticks, not time).

pub mod client;
mod storage;

pub use client::{Answer, Op, Reply, Request, Session};
pub use storage::LogStore;

use client::{Client, Open, MAX_ATTEMPTS};

use protobuf::Message as _;
use raft::eraftpb::{Entry, EntryType, Message};
use raft::{Config, RawNode, ReadOnlyOption, StateRole};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, NodeId, Observation, OpOutcome, ParamError,
    Protocol, ProtocolInfo, RoleInfo, VariantInfo,
};

/// The variants: raft-rs's defaults, hardened options, lease reads, and two embedding
/// bugs.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum RaftRsVariant {
    Defaults,
    Hardened,
    LeaseReads,
    AckBeforePersist,
    StaleReady,
    PreVoteOnly,
    CheckQuorumOnly,
    #[strum(serialize = "priority-511")]
    Priority511,
    #[strum(serialize = "priority-511-term-1")]
    Priority511Term1,
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "raft-rs",
    "raft-rs 0.7.0 (TiKV's Raft, the `raft` crate), the real library run unmodified \
     through an adapter: ticks, Ready handling, a log on tenure's disk",
    &[RoleInfo::new(
        "server",
        "a raft-rs RawNode with a key-value state machine",
        5,
    )],
    &[
        VariantInfo::new(
            "defaults",
            "raft-rs's default options: no PreVote, no CheckQuorum, Safe reads (under \
             the bridge of the November 2020 Cloudflare etcd outage leadership never \
             settles: scenarios/raft-rs/bridge-defaults.toml)",
        ),
        VariantInfo::new("hardened", "PreVote and CheckQuorum on"),
        VariantInfo::new(
            "lease-reads",
            "hardened, with LeaseBased reads (ReadOnlyOption::LeaseBased): a leader \
             answers reads without a quorum round, trusting CheckQuorum; a leader \
             cut off from its peers serves stale reads for up to an election \
             timeout after another is elected (etcd-io/raft #166; TiKV #15035: a \
             voter that restarts knows no leader, so it is in no lease and elects \
             a rival while the old leader's lease runs)",
        )
        .with_breaks(&["linearizability"]),
        VariantInfo::new(
            "ack-before-persist",
            "an embedding bug: persisted_messages (votes, append acks) are sent \
             before the sync completes, so a power loss forgets what was promised; \
             raft 0.7.0 then panics in RaftLog::commit_to (\"to_commit is out of \
             range\") when the leader's heartbeat names a commit the follower lost \
             (etcd #10166; raft-rs PR #575, open)",
        )
        .with_breaks(&[
            "state-machine-safety",
            "log-matching",
            "leader-completeness",
            "single-leader-per-term",
            // raft-rs's own fatal error for a log that lost acknowledged entries
            // (`RaftLog::commit_to`: "to_commit is out of range").
            "no-panic",
        ]),
        VariantInfo::new(
            "stale-ready",
            "an embedding bug: takes a second Ready before advancing the first, \
             then advances the first; raft-rs panics (RawNode::commit_ready)",
        )
        .with_breaks(&["no-panic"]),
        VariantInfo::new(
            "pre-vote-only",
            "PreVote without CheckQuorum (raft 0.7.0, as etcd-raft can be configured): keeps a \
             leader under the bridge of the November 2020 Cloudflare etcd outage, \
             which `defaults` does not (scenarios/raft-rs/bridge-*.toml)",
        ),
        VariantInfo::new(
            "check-quorum-only",
            "CheckQuorum without PreVote (raft 0.7.0, as etcd-raft can be configured): keeps a \
             leader under the bridge of the November 2020 Cloudflare etcd outage, \
             which `defaults` does not (scenarios/raft-rs/bridge-*.toml)",
        ),
        VariantInfo::new(
            "priority-511",
            "raft-rs #511 (open, in raft 0.7.0): hardened, with distinct election \
             priorities (node n: n + 1); a fresh group is at term 0, a voter of \
             higher priority rejects a pre-vote with its own term 0 and raft-rs \
             panics (\"term should be set when sending MsgRequestPreVoteResponse\")",
        )
        .with_breaks(&["no-panic"]),
        VariantInfo::new(
            "priority-511-term-1",
            "the mitigation of raft-rs #511 (raft 0.7.0 unpatched; BusyJay on #511: \
             a group should not start at term 0): priority-511 with the group \
             bootstrapped at term 1",
        ),
    ],
);

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
    /// How many registers the clients use (`k0`, `k1`, ...).
    pub keys: u8,
    /// How long (on the client's wall clock) the clients use the same registers before
    /// moving on to the next `keys` (Jepsen's independent keys).
    pub key_period: HumanDuration,
    /// The share of operations that are reads, in percent (the rest are half writes,
    /// half compare-and-sets).
    pub reads: u8,
    /// How long a client waits between one operation's end and the next one's start.
    pub think: HumanDuration,
    /// How long a client waits for an answer before the attempt ends `info`.
    pub request_timeout: HumanDuration,
    /// Attempts per operation, retries included.
    pub max_attempts: u32,
    /// Whether leaders hand their leadership over (`RawNode::transfer_leader`).
    pub transfer: bool,
    /// The range a new leader draws how long it leads from before it asks raft-rs to
    /// transfer its leadership to a peer drawn at random (and again after each request,
    /// in case raft-rs gave the transfer up).
    pub transfer_after: [HumanDuration; 2],
}

impl Default for RaftRsParams {
    fn default() -> Self {
        // 10 ms ticks: elections after 150-300 ms, heartbeats every 50 ms, as the zoo's
        // Raft (etcd's defaults are 100 ms ticks, 10 and 1). Clients: two registers, a
        // read-heavy mix (80% reads: the workload lease reads are for), an operation
        // every 20 ms or so per node, another attempt after 25 ms without an answer (a
        // commit is a round trip and an fsync; an answer to any attempt counts), four
        // attempts.
        RaftRsParams {
            tick: HumanDuration(Duration::from_millis(10)),
            election_tick: 15,
            heartbeat_tick: 5,
            keys: 2,
            key_period: HumanDuration(Duration::from_secs(1)),
            reads: 80,
            think: HumanDuration(Duration::from_millis(20)),
            request_timeout: HumanDuration(Duration::from_millis(25)),
            max_attempts: 4,
            transfer: true,
            transfer_after: [
                HumanDuration(Duration::from_secs(1)),
                HumanDuration(Duration::from_secs(2)),
            ],
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
    pub keys: u8,
    pub key_period: Duration,
    pub reads: u8,
    pub think: Duration,
    pub request_timeout: Duration,
    pub max_attempts: u32,
    /// How long a leader leads before it asks for a transfer, drawn from this range;
    /// `None`: never.
    pub transfer_after: Option<(Duration, Duration)>,
    pub nodes: u64,
}

impl RaftRsConfig {
    fn raft_config(&self, id: u64) -> Config {
        use RaftRsVariant::*;
        let pre_vote = !matches!(self.variant, Defaults | CheckQuorumOnly);
        let check_quorum = !matches!(self.variant, Defaults | PreVoteOnly);
        let priority = match self.variant {
            Priority511 | Priority511Term1 => id as i64,
            _ => 0,
        };
        Config {
            id,
            election_tick: self.election_tick,
            heartbeat_tick: self.heartbeat_tick,
            min_election_tick: self.election_tick,
            max_election_tick: 2 * self.election_tick,
            pre_vote,
            check_quorum,
            priority,
            read_only_option: if self.variant == RaftRsVariant::LeaseReads {
                ReadOnlyOption::LeaseBased
            } else {
                ReadOnlyOption::Safe
            },
            max_size_per_msg: 1 << 20,
            max_inflight_msgs: 256,
            applied: 0,
            ..Config::default()
        }
    }
}

/// What travels on tenure's network: raft-rs's messages (shown in traces as a one-line
/// summary), and the clients' requests and the service's replies.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RaftRsMsg {
    Raft(RaftMessage),
    Request(Request),
    Reply(Reply),
}

/// A raft-rs message as it leaves `Ready::messages` / `persisted_messages`, carried by
/// value: the simulator delivers (loses, delays, duplicates) messages whole and never
/// inspects their bytes, so encoding each one to protobuf on send and decoding it on
/// receipt (a real transport's work, `Message::write_to_bytes` / `parse_from_bytes`)
/// would only cost time. Nothing is lost by skipping it: raft-rs's messages are proto3,
/// whose encoding round-trips every field, and debug builds check that on every send
/// ([`send`]). `Hash` and `Ord` (which only the model explorer uses, and raft-rs has
/// no model) are those of the protobuf encoding, as when the bytes were carried.
#[derive(Clone, PartialEq)]
pub struct RaftMessage(pub Box<Message>);

impl RaftMessage {
    /// The protobuf encoding, what a real transport sends.
    pub fn encode(&self) -> Vec<u8> {
        self.0.write_to_bytes().expect("raft messages encode")
    }
}

/// raft-rs's messages hold no floats: equality is total.
impl Eq for RaftMessage {}

impl std::hash::Hash for RaftMessage {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.encode().hash(state);
    }
}

impl PartialOrd for RaftMessage {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for RaftMessage {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.encode().cmp(&other.encode())
    }
}

impl fmt::Debug for RaftRsMsg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RaftRsMsg::Raft(m) => write!(f, "{}", summary(&m.0)),
            RaftRsMsg::Request(r) => write!(f, "Request {} #{:x}", r.op, r.attempt),
            RaftRsMsg::Reply(r) => write!(f, "Reply {:?} #{:x}", r.answer, r.attempt),
        }
    }
}

/// A message's one-line summary for traces and panic reports (its header fields,
/// copied out so that it can be formatted after the message was handed to raft-rs).
#[derive(Clone, Copy)]
struct Summary {
    msg_type: raft::eraftpb::MessageType,
    from: u64,
    to: u64,
    term: u64,
    log_term: u64,
    index: u64,
    commit: u64,
    entries: usize,
    reject: Option<u64>,
}

fn summary(m: &Message) -> Summary {
    Summary {
        msg_type: m.get_msg_type(),
        from: m.from,
        to: m.to,
        term: m.term,
        log_term: m.log_term,
        index: m.index,
        commit: m.commit,
        entries: m.entries.len(),
        reject: m.reject.then_some(m.reject_hint),
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} {}->{} t{} lt{} i{} c{}",
            self.msg_type, self.from, self.to, self.term, self.log_term, self.index, self.commit
        )?;
        if self.entries > 0 {
            write!(f, " +{}", self.entries)?;
        }
        if let Some(hint) = self.reject {
            write!(f, " reject(hint {hint})")?;
        }
        Ok(())
    }
}

/// The adapter's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RaftRsTimer {
    Tick,
    /// The client's thinking is over: start the next operation.
    Client,
    /// No answer to the client's attempt (by its id) in time.
    Timeout(u64),
    /// The leader of this term asks raft-rs to hand its leadership over.
    Transfer(u64),
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
    /// The state machine: the registers (absent: 0), each client session's last write
    /// and its answer, and the last index applied.
    kv: BTreeMap<u32, i64>,
    sessions: BTreeMap<(NodeId, u64), (u64, Answer)>,
    applied: u64,
    /// Writes this node proposed, by attempt: the client to answer once applied.
    proposed: BTreeMap<u64, NodeId>,
    /// Reads waiting for their `ReadState`, by attempt: the client and key.
    reading: BTreeMap<u64, (NodeId, u32)>,
    /// Reads with a read index, waiting for the node to apply up to it:
    /// (index, attempt, client, key).
    ready_reads: Vec<(u64, u64, NodeId, u32)>,
    /// This node's client.
    client: Client,
    /// Messages between this node's client and its server, delivered after the
    /// current handler (no re-entry).
    local: std::collections::VecDeque<RaftRsMsg>,
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
            if now.1 == StateRole::Leader && self.config.nodes > 1 {
                if let Some((lo, hi)) = self.config.transfer_after {
                    let after = env.duration_between(lo, hi);
                    env.set_timer(RaftRsTimer::Transfer(now.0), after);
                }
            }
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
                send(env, m);
            }
            for rs in rd.take_read_states() {
                let attempt = <[u8; 8]>::try_from(rs.request_ctx.as_slice())
                    .map(u64::from_le_bytes)
                    .ok();
                if let Some((client, key)) = attempt.and_then(|a| self.reading.remove(&a)) {
                    self.ready_reads
                        .push((rs.index, attempt.unwrap_or_default(), client, key));
                }
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
            let mut persisted = rd.take_persisted_messages();
            let committed = rd.take_committed_entries();
            let must_sync = rd.must_sync();
            let number = rd.number();
            node.advance_append_async(rd);
            if self.config.variant == RaftRsVariant::AckBeforePersist {
                for m in std::mem::take(&mut persisted) {
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
            // (Empty for `ack-before-persist`: sent before the sync.)
            for m in persisted {
                send(env, m);
            }
            node.on_persist_ready(number);
            for e in &committed {
                let done = apply(&mut self.kv, &mut self.sessions, e);
                self.applied = e.index;
                env.observe(Observation::LogApply {
                    index: e.index,
                    term: e.term,
                    digest: digest(e),
                });
                if let Some((attempt, answer)) = done {
                    if let Some(client) = self.proposed.remove(&attempt) {
                        self.reply(env, client, Reply { attempt, answer });
                    }
                }
            }
            if !committed.is_empty() {
                if let Some(node) = self.node.as_mut() {
                    node.advance_apply();
                }
            }
            self.answer_reads(env);
        }
    }

    /// Answers the reads whose read index this node has applied, from its registers.
    fn answer_reads(&mut self, env: &mut E<'_>) {
        let applied = self.applied;
        let (due, waiting) = std::mem::take(&mut self.ready_reads)
            .into_iter()
            .partition(|&(index, ..)| index <= applied);
        self.ready_reads = waiting;
        let due: Vec<(u64, u64, NodeId, u32)> = due;
        for (_, attempt, client, key) in due {
            let term = self.last_seen.0;
            env.observe(Observation::Serves { term });
            let value = self.kv.get(&key).copied().unwrap_or(0);
            self.reply(
                env,
                client,
                Reply {
                    attempt,
                    answer: Answer::Ok(value),
                },
            );
        }
    }

    /// Sends a reply to `client` (this node's own client through `local`).
    fn reply(&mut self, env: &mut E<'_>, client: NodeId, reply: Reply) {
        if client == self.me {
            self.local.push_back(RaftRsMsg::Reply(reply));
        } else {
            env.send(client, RaftRsMsg::Reply(reply));
        }
    }

    /// The service's side of a client request.
    fn serve(&mut self, env: &mut E<'_>, from: NodeId, req: Request) {
        let Some(node) = self.node.as_mut() else {
            return; // halted: no answer; the client times out
        };
        if node.raft.state != StateRole::Leader {
            let leader = node.raft.leader_id;
            let hint = (leader != raft::INVALID_ID).then(|| node_of(leader));
            let reply = Reply {
                attempt: req.attempt,
                answer: Answer::NotLeader(hint),
            };
            self.reply(env, from, reply);
            return;
        }
        match req.op.entry(req.attempt, req.id) {
            None => {
                // Bounded: a client has one attempt open, and a leader that steps down
                // forgets its reads (raft-rs drops their ReadIndex state too).
                self.reading.insert(req.attempt, (from, req.op.key()));
                node.read_index(req.attempt.to_le_bytes().to_vec());
            }
            Some(data) => match node.propose(vec![], data) {
                Ok(()) => {
                    if self.proposed.len() >= MAX_PROPOSED {
                        // Proposals that never committed (overwritten after a change
                        // of leader); their clients have long timed out.
                        self.proposed.clear();
                    }
                    self.proposed.insert(req.attempt, from);
                }
                Err(_) => {
                    let reply = Reply {
                        attempt: req.attempt,
                        answer: Answer::Dropped,
                    };
                    self.reply(env, from, reply);
                }
            },
        }
        self.handle_readies(env);
    }

    /// The node this node's client sends to: its guess (see [`Client::guess`]), else
    /// the leader its raft-rs node knows of, else itself.
    fn target(&self) -> NodeId {
        let known = self
            .node
            .as_ref()
            .map(|n| n.raft.leader_id)
            .filter(|&l| l != raft::INVALID_ID)
            .map(node_of);
        self.client.guess.or(known).unwrap_or(self.me)
    }

    /// The client starts its next operation: a read, a write or a compare-and-set of a
    /// random register, drawn from the node's seeded stream.
    fn next_operation(&mut self, env: &mut E<'_>) {
        if self.client.open.is_some() {
            return;
        }
        let period = self.config.key_period.as_nanos().max(1) as i64;
        let generation = env.wall().as_nanos().max(0).div_euclid(period);
        let first = u32::try_from(generation)
            .unwrap_or(u32::MAX / 32)
            .saturating_mul(u32::from(self.config.keys));
        let key = first + env.range_inclusive(0, u64::from(self.config.keys) - 1) as u32;
        let value = (env.next_u64() % 1_000_000) as i64 + 1;
        let dice = env.range_inclusive(0, 199);
        let reads = 2 * u64::from(self.config.reads);
        let op = match dice {
            d if d < reads => Op::Read { key },
            d if (d - reads) % 2 == 0 => Op::Write { key, value },
            _ => Op::Cas {
                key,
                from: self.client.seen.get(&key).copied().unwrap_or(0),
                to: value,
            },
        };
        if self.client.session == 0 {
            self.client.session = env.next_u64() | 1;
        }
        if !matches!(op, Op::Read { .. }) {
            self.client.seq += 1;
        }
        env.observe(Observation::Invoke {
            f: op.f().to_string(),
            key: op.key_name(),
            value: op.value(),
        });
        self.client.open = Some(Open {
            op,
            id: Session {
                client: self.me,
                session: self.client.session,
                seq: self.client.seq,
            },
            attempts: Vec::new(),
            to: self.me,
            unknown: false,
        });
        self.attempt(env);
    }

    /// One more attempt at the open operation, on the node the client believes leads;
    /// or, when the attempts are used up, the operation ends.
    fn attempt(&mut self, env: &mut E<'_>) {
        let to = self.target();
        let Some(open) = self.client.open.as_mut() else {
            return;
        };
        if open.attempts.len() as u32 >= self.config.max_attempts {
            let outcome = if open.unknown {
                OpOutcome::Info
            } else {
                OpOutcome::Fail
            };
            let value = open.op.value();
            self.complete(env, outcome, value);
            return;
        }
        let attempt = env.next_u64();
        open.attempts.push(attempt);
        open.to = to;
        // A request on the network may be delivered late, or twice (a duplicating
        // network), and proposed by a node that refused an earlier copy: from now on
        // "not the leader" does not mean "never applied".
        open.unknown |= to != self.me;
        env.set_timer(RaftRsTimer::Timeout(attempt), self.config.request_timeout);
        let req = RaftRsMsg::Request(Request {
            attempt,
            id: open.id,
            op: open.op,
        });
        if to == self.me {
            self.local.push_back(req);
        } else {
            env.send(to, req);
        }
    }

    /// The open operation ends: recorded, and the client thinks before the next one.
    fn complete(&mut self, env: &mut E<'_>, outcome: OpOutcome, value: tenure_core::OpValue) {
        let Some(open) = self.client.open.take() else {
            return;
        };
        for a in &open.attempts {
            env.cancel_timer(&RaftRsTimer::Timeout(*a));
        }
        env.observe(Observation::Complete {
            f: open.op.f().to_string(),
            key: open.op.key_name(),
            outcome,
            value,
        });
        env.set_timer(RaftRsTimer::Client, self.config.think);
    }

    /// The client gets an answer.
    fn on_reply(&mut self, env: &mut E<'_>, from: NodeId, reply: Reply) {
        let Some(open) = &self.client.open else {
            return;
        };
        if !open.attempts.contains(&reply.attempt) {
            return; // an answer to an operation that already ended
        }
        let op = open.op;
        let (outcome, value) = reply.answer.outcome(op);
        let hint = match reply.answer {
            Answer::NotLeader(hint) => hint,
            _ => None,
        };
        match reply.answer {
            Answer::Ok(v) => {
                self.client.guess = Some(from);
                self.client.seen.insert(op.key(), v);
                self.complete(env, outcome, value);
            }
            Answer::CasFailed => {
                self.client.guess = Some(from);
                self.complete(env, outcome, value);
            }
            Answer::NotLeader(_) | Answer::Dropped => {
                if reply.attempt != *open.attempts.last().unwrap_or(&0) {
                    return; // an older attempt's: the client has moved on
                }
                match hint {
                    // The leader named: try it now.
                    Some(leader) => {
                        self.client.guess = Some(leader);
                        env.cancel_timer(&RaftRsTimer::Timeout(reply.attempt));
                        self.attempt(env);
                    }
                    // No leader known (an election), or the proposal dropped: the next
                    // attempt, on the next node, when this one's timeout fires.
                    None => self.client.guess = Some(self.next_node(from)),
                }
            }
        }
    }

    /// The node after `n`, in turn.
    fn next_node(&self, n: NodeId) -> NodeId {
        NodeId(((u64::from(n.0) + 1) % self.config.nodes) as u32)
    }

    /// Delivers the messages between this node's client and server, in order.
    fn pump(&mut self, env: &mut E<'_>) {
        // Bounded: each delivery ends an attempt or starts at most one more, and an
        // operation has at most `max_attempts` attempts.
        while let Some(msg) = self.local.pop_front() {
            let me = self.me;
            self.dispatch(env, me, msg);
        }
    }

    fn dispatch(&mut self, env: &mut E<'_>, from: NodeId, msg: RaftRsMsg) {
        match msg {
            RaftRsMsg::Raft(m) => {
                let summary = summary(&m.0);
                let input = || format!("{summary} from {from}");
                self.guarded(env, input, |s, env| {
                    if let Some(node) = s.node.as_mut() {
                        // An error (a message from an unknown peer, a local message
                        // type) is raft-rs refusing the input; nothing changed.
                        let _ = node.step(*m.0);
                    }
                    s.handle_readies(env);
                });
            }
            RaftRsMsg::Request(req) => {
                let input = || format!("{} from {from}", req.op);
                self.guarded(env, input, |s, env| s.serve(env, from, req));
            }
            RaftRsMsg::Reply(reply) => self.on_reply(env, from, reply),
        }
    }
}

/// The most writes a leader remembers to answer.
const MAX_PROPOSED: usize = 4096;

/// raft-rs's own `thread_rng` draw replaced by one from the node's seeded stream.
fn redraw(node: &mut RawNode<LogStore>, config: &RaftRsConfig, env: &mut E<'_>) {
    let lo = config.election_tick as u64;
    let hi = 2 * config.election_tick as u64 - 1;
    let t = env.range_inclusive(lo, hi) as usize;
    node.raft.set_randomized_election_timeout(t);
}

fn send(env: &mut E<'_>, m: Message) {
    // What a real transport would carry: the message must read back from its protobuf
    // encoding unchanged, or passing it by value would differ from sending its bytes.
    debug_assert!(
        Message::parse_from_bytes(&m.write_to_bytes().expect("raft messages encode"))
            .is_ok_and(|back| back == m),
        "a raft-rs message does not round-trip through protobuf: {}",
        summary(&m)
    );
    env.send(node_of(m.to), RaftRsMsg::Raft(RaftMessage(Box::new(m))));
}

/// The state machine: applies a client's write or compare-and-set entry once per
/// session number (empty leader entries and anything else change nothing) and says what
/// to answer the attempt that proposed it (a duplicate: the first answer).
fn apply(
    kv: &mut BTreeMap<u32, i64>,
    sessions: &mut BTreeMap<(NodeId, u64), (u64, Answer)>,
    e: &Entry,
) -> Option<(u64, Answer)> {
    if e.get_entry_type() != EntryType::EntryNormal {
        return None;
    }
    let (attempt, id, op) = Op::parse_entry(&e.data)?;
    if let Some(&(seq, answer)) = sessions.get(&(id.client, id.session)) {
        if id.seq < seq {
            return None; // a retry of a write the client has given up on
        }
        if id.seq == seq {
            return Some((attempt, answer)); // a duplicate: applied once, answered again
        }
    }
    let answer = match op {
        Op::Read { .. } => return None,
        Op::Write { key, value } => {
            kv.insert(key, value);
            Answer::Ok(value)
        }
        Op::Cas { key, from, to } => {
            if kv.get(&key).copied().unwrap_or(0) == from {
                kv.insert(key, to);
                Answer::Ok(to)
            } else {
                Answer::CasFailed
            }
        }
    };
    sessions.insert((id.client, id.session), (id.seq, answer));
    Some((attempt, answer))
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
            sessions: BTreeMap::new(),
            applied: 0,
            proposed: BTreeMap::new(),
            reading: BTreeMap::new(),
            ready_reads: Vec::new(),
            client: Client::default(),
            local: std::collections::VecDeque::new(),
        }
    }

    /// Every key must survive a power loss but the commit index, which raft-rs does not
    /// ask to be durable (`Ready::must_sync` is false when only it moved).
    fn durable(key: &str) -> bool {
        key != storage::COMMIT_KEY
    }

    fn on_start(&mut self, env: &mut E<'_>) {
        let mut store = LogStore::load(self.voters(), env);
        if self.config.variant == RaftRsVariant::Priority511Term1 && store.hard_state.term == 0 {
            // The #511 mitigation: a group that never ran starts at term 1, not 0, so a
            // rejection carries a term (raft-rs's `RaftCore::send` insists on one).
            store.hard_state.term = 1;
        }
        for e in &store.entries {
            env.observe(Observation::LogAppend {
                index: e.index,
                term: e.term,
                digest: digest(e),
            });
        }
        // What a restarted process reads back may be writes its predecessor never synced
        // (they outlive a crash in the page cache, not a power loss). raft-rs takes the
        // log it is given as stable and acknowledges it, so make it durable first, as a
        // database's crash recovery fsyncs before it trusts its files. (Found by fuzzing
        // `hardened` under `power`, seed 1598: a follower acknowledged index 41 after a
        // crash, lost 39-41 in a power loss, and raft-rs panicked "to_commit 41 is out
        // of range [last_index 38]".)
        if env.sync().is_err() {
            env.observe(Observation::Note {
                text: "fsync of the recovered log failed: the node stops until it restarts"
                    .to_string(),
            });
            return;
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
        env.set_timer(RaftRsTimer::Client, self.config.think);
    }

    fn on_message(&mut self, env: &mut E<'_>, from: NodeId, msg: RaftRsMsg) {
        self.dispatch(env, from, msg);
        self.pump(env);
    }

    fn on_timer(&mut self, env: &mut E<'_>, timer: RaftRsTimer) {
        self.timer(env, timer);
        self.pump(env);
    }
}

impl RaftRs {
    fn timer(&mut self, env: &mut E<'_>, timer: RaftRsTimer) {
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
            RaftRsTimer::Client => self.next_operation(env),
            RaftRsTimer::Transfer(term) => {
                let leads = self
                    .node
                    .as_ref()
                    .is_some_and(|n| n.raft.state == StateRole::Leader && n.raft.term == term);
                let Some((lo, hi)) = self.config.transfer_after.filter(|_| leads) else {
                    return;
                };
                // A peer drawn at random (raft ids are node index + 1), as an operator
                // names one to `etcdctl move-leader`; and a later request in case raft-rs
                // gives this one up (`tick_election`: after an election timeout).
                let me = u64::from(self.me.0);
                let k = env.range_inclusive(0, self.config.nodes - 2);
                let target = if k >= me { k + 2 } else { k + 1 };
                let after = env.duration_between(lo, hi);
                env.set_timer(RaftRsTimer::Transfer(term), after);
                self.guarded(
                    env,
                    || format!("transfer_leader({target})"),
                    |s, env| {
                        if let Some(node) = s.node.as_mut() {
                            node.transfer_leader(target);
                        }
                        s.handle_readies(env);
                    },
                );
            }
            RaftRsTimer::Timeout(attempt) => {
                let Some(open) = self.client.open.as_mut() else {
                    return;
                };
                if open.attempts.last() != Some(&attempt) {
                    return;
                }
                // No answer: the attempt may still take effect. Try the node after the
                // silent one.
                open.unknown = true;
                let silent = open.to;
                self.client.guess = Some(self.next_node(silent));
                self.attempt(env);
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
        if !(1..=16).contains(&params.keys) {
            return Err(ParamError::new("keys", "must be from 1 to 16"));
        }
        if params.key_period.0 < Duration::from_millis(1) {
            return Err(ParamError::new("key_period", "must be at least 1ms"));
        }
        if params.reads > 100 {
            return Err(ParamError::new("reads", "is a percentage: from 0 to 100"));
        }
        let [after_min, after_max] = params.transfer_after;
        if after_min.0.is_zero() || after_min.0 > after_max.0 {
            return Err(ParamError::new(
                "transfer_after",
                "must be a range [min, max] with 0 < min <= max",
            ));
        }
        if params.think.0.is_zero() {
            return Err(ParamError::new("think", "must be more than 0"));
        }
        if params.request_timeout.0.is_zero() {
            return Err(ParamError::new("request_timeout", "must be more than 0"));
        }
        if !(1..=MAX_ATTEMPTS).contains(&params.max_attempts) {
            return Err(ParamError::new(
                "max_attempts",
                format!("must be from 1 to {MAX_ATTEMPTS}"),
            ));
        }
        tenure_core::Roles::<tenure_core::roles::Server>::of(cluster)?;
        Ok(RaftRsConfig {
            variant,
            tick: params.tick.0,
            election_tick: params.election_tick as usize,
            heartbeat_tick: params.heartbeat_tick as usize,
            keys: params.keys,
            key_period: params.key_period.0,
            reads: params.reads,
            think: params.think.0,
            request_timeout: params.request_timeout.0,
            max_attempts: params.max_attempts,
            transfer_after: params
                .transfer
                .then_some((params.transfer_after[0].0, params.transfer_after[1].0)),
            nodes: cluster.size() as u64,
        })
    }

    fn promises(_config: &RaftRsConfig, _cluster: &Cluster) -> Vec<tenure_core::Promise> {
        use tenure_core::Promise;
        vec![
            Promise::new("single-leader-per-term"),
            Promise::new("log-matching"),
            Promise::new("leader-completeness"),
            Promise::new("state-machine-safety"),
            // one register per key, starting at 0, with read, write and compare-and-set
            Promise::new("linearizability").with("model", "cas-register"),
            Promise::new("no-panic"),
        ]
    }

    fn assumptions(config: &RaftRsConfig) -> tenure_core::Assumptions {
        use tenure_core::{format_duration as f, Limit};
        let heartbeat = config.tick * config.heartbeat_tick as u32;
        let min_timeout = config.tick * config.election_tick as u32;
        let slack = min_timeout.saturating_sub(heartbeat);
        let lease = config.variant == RaftRsVariant::LeaseReads;
        tenure_core::Assumptions::new()
            .with_max_drift(if lease {
                Limit::new(
                    0.05,
                    "LeaseBased reads \"can be affected by clock drift\" (raft-rs \
                     src/read_only.rs): the leader's lease and its followers' are counted in \
                     ticks of their own clocks, so they must tick at about the same rate",
                )
            } else {
                Limit::new(
                    0.5,
                    "the safety of log replication needs no clock (ticks only time elections)",
                )
            })
            .with_max_pause(lease.then(|| {
                Limit::new(
                    heartbeat,
                    format!(
                        "a paused leader counts no ticks, so its lease outlasts the pause; \
                         its followers stop honouring it one election timeout ({}) after \
                         its last heartbeat: at most one heartbeat interval",
                        f(min_timeout)
                    ),
                )
            }))
            .with_max_latency(Limit::new(
                slack / 2,
                format!(
                    "a stable leader needs broadcast time << election timeout (Raft §5.6): \
                     heartbeats every {} must reach a follower within its shortest timeout {}; \
                     half of the {} between them",
                    f(heartbeat),
                    f(min_timeout),
                    f(slack)
                ),
            ))
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        Err("raft-rs's RawNode cannot be cloned or hashed, so the explorer cannot step it")
    }
}

#[cfg(test)]
mod tests;
