//! my-election: a term-based leader election, written the way a tenure user writes
//! their own protocol (only the `tenure` facade and serde).
//!
//! **What it promises:** at most one leader per term (Raft's Election Safety, Ongaro &
//! Ousterhout 2014, §5.2), and after the faults stop, a leader within a few election
//! timeouts.
//!
//! **How it works:** a node that hears nothing from a leader for a random election
//! timeout starts a new term, votes for itself and asks the others for their votes. A
//! node grants one vote per term, to the first candidate that asks, and writes the
//! vote to storage before it answers. A candidate with votes from a majority leads and
//! sends heartbeats. A node that sees a higher term joins it as a follower.
//!
//! **The planted bug** (`Config::with_planted_bug`): a node forgets to check whom it
//! already voted for in this term, so two candidates of one term can both win a
//! majority. The tests in `tests/` find it by sweeping seeds.

mod checker;

pub use checker::TermsNeverGoBack;

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::time::Duration;
use tenure::prelude::*;

/// Shared by every node of a run.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// A follower stands for election after hearing nothing for a time drawn from this
    /// range (on its own clock).
    pub election_timeout: (Duration, Duration),
    /// How often a leader sends heartbeats.
    pub heartbeat_interval: Duration,
    /// The planted bug: grant a vote to every candidate of the current term.
    pub vote_twice: bool,
}

impl Config {
    pub fn correct() -> Config {
        Config {
            election_timeout: (Duration::from_millis(150), Duration::from_millis(300)),
            heartbeat_interval: Duration::from_millis(50),
            vote_twice: false,
        }
    }

    pub fn with_planted_bug() -> Config {
        Config {
            vote_twice: true,
            ..Config::correct()
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    RequestVote { term: u64 },
    Vote { term: u64 },
    Heartbeat { term: u64 },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Timer {
    Election,
    Heartbeat,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Follower { leader: Option<NodeId> },
    Candidate { votes: BTreeSet<NodeId> },
    Leader,
}

/// What survives a crash: the term and this term's vote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Durable {
    term: u64,
    voted_for: Option<NodeId>,
}

/// One node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MyElection {
    config: Config,
    me: NodeId,
    peers: Vec<NodeId>,
    term: u64,
    voted_for: Option<NodeId>,
    role: Role,
}

type E<'a> = &'a mut dyn Env<Msg, Timer>;

impl MyElection {
    fn majority(&self) -> usize {
        let cluster_size = self.peers.len() + 1;
        cluster_size / 2 + 1
    }

    /// Makes the term and vote durable before anything that depends on them is sent:
    /// `store_synced` writes and fsyncs, so a power loss cannot forget a vote already
    /// given. A failed sync (a `disk-error` fault) is not drawn by the profiles this
    /// example uses; a production node would stop answering until its disk works again.
    fn persist(&self, env: E<'_>) {
        let durable = Durable {
            term: self.term,
            voted_for: self.voted_for,
        };
        let _not_drawn_here = env.store_synced("durable", &durable);
    }

    fn reset_election_timer(&self, env: E<'_>) {
        let (lo, hi) = self.config.election_timeout;
        let after = env.duration_between(lo, hi);
        env.set_timer(Timer::Election, after);
    }

    fn follow(&mut self, env: E<'_>, term: u64, leader: Option<NodeId>) {
        let new_term = term > self.term;
        if new_term {
            self.term = term;
            self.voted_for = None;
            self.persist(env);
        }
        let role = Role::Follower { leader };
        if new_term || self.role != role {
            if self.role == Role::Leader {
                env.cancel_timer(&Timer::Heartbeat);
            }
            self.role = role;
            env.observe(Observation::Follower { term, leader });
        }
        self.reset_election_timer(env);
    }

    fn stand(&mut self, env: E<'_>) {
        self.term += 1;
        self.voted_for = Some(self.me);
        self.persist(env);
        self.role = Role::Candidate {
            votes: BTreeSet::from([self.me]),
        };
        env.observe(Observation::Candidate { term: self.term });
        for &peer in &self.peers {
            env.send(peer, Msg::RequestVote { term: self.term });
        }
        self.reset_election_timer(env);
        self.count_votes(env);
    }

    fn count_votes(&mut self, env: E<'_>) {
        let Role::Candidate { votes } = &self.role else {
            return;
        };
        if votes.len() < self.majority() {
            return;
        }
        self.role = Role::Leader;
        env.observe(Observation::Leader { term: self.term });
        env.cancel_timer(&Timer::Election);
        self.send_heartbeats(env);
    }

    fn send_heartbeats(&self, env: E<'_>) {
        for &peer in &self.peers {
            env.send(peer, Msg::Heartbeat { term: self.term });
        }
        env.set_timer(Timer::Heartbeat, self.config.heartbeat_interval);
    }

    fn on_request_vote(&mut self, env: E<'_>, from: NodeId, term: u64) {
        if term > self.term {
            self.follow(env, term, None);
        }
        let free = self.voted_for.is_none() || self.voted_for == Some(from);
        if term == self.term && (free || self.config.vote_twice) {
            self.voted_for = Some(from);
            self.persist(env);
            env.send(from, Msg::Vote { term });
            self.reset_election_timer(env);
        }
    }
}

impl Protocol for MyElection {
    type Msg = Msg;
    type Timer = Timer;
    type Config = Config;

    fn new(config: &Config, me: NodeId, cluster: &Cluster) -> MyElection {
        MyElection {
            config: config.clone(),
            me,
            peers: cluster.peers(me).collect(),
            term: 0,
            voted_for: None,
            role: Role::Follower { leader: None },
        }
    }

    fn on_start(&mut self, env: E<'_>) {
        let durable: Durable = env.load("durable").unwrap_or_default();
        self.term = durable.term;
        self.voted_for = durable.voted_for;
        env.observe(Observation::Follower {
            term: self.term,
            leader: None,
        });
        self.reset_election_timer(env);
    }

    fn on_message(&mut self, env: E<'_>, from: NodeId, msg: Msg) {
        match msg {
            Msg::RequestVote { term } => self.on_request_vote(env, from, term),
            Msg::Vote { term } if term == self.term => {
                if let Role::Candidate { votes } = &mut self.role {
                    votes.insert(from);
                }
                self.count_votes(env);
            }
            Msg::Vote { .. } => {} // a vote from an old term
            Msg::Heartbeat { term } if term >= self.term => self.follow(env, term, Some(from)),
            Msg::Heartbeat { .. } => {} // from a deposed leader
        }
    }

    fn on_timer(&mut self, env: E<'_>, timer: Timer) {
        match timer {
            Timer::Election => self.stand(env),
            Timer::Heartbeat if self.role == Role::Leader => self.send_heartbeats(env),
            Timer::Heartbeat => {}
        }
    }
}

#[cfg(test)]
mod tests {
    //! Handlers in isolation: effects asserted exactly, no simulator.
    use super::*;
    use tenure::{Effect, StepHost};

    fn node(config: Config) -> (MyElection, Cluster) {
        let cluster = Cluster::uniform("node", 3);
        (MyElection::new(&config, NodeId(0), &cluster), cluster)
    }

    fn durable(term: u64, voted_for: Option<u32>) -> Effect<Msg, Timer> {
        let d = Durable {
            term,
            voted_for: voted_for.map(NodeId),
        };
        Effect::Store {
            key: "durable".into(),
            value: Some(serde_json_text(&d)),
        }
    }

    fn serde_json_text(d: &Durable) -> String {
        tenure::serde_json::to_string(d).unwrap()
    }

    #[test]
    fn a_node_votes_once_per_term() {
        let (mut n, cluster) = node(Config::correct());
        let mut host = StepHost::new(NodeId(0), &cluster);
        let mut step = host.step();
        n.on_message(&mut step, NodeId(1), Msg::RequestVote { term: 1 });
        n.on_message(&mut step, NodeId(2), Msg::RequestVote { term: 1 });
        let sent: Vec<_> = step
            .sent()
            .into_iter()
            .map(|(to, m)| (to, m.clone()))
            .collect();
        assert_eq!(sent, vec![(NodeId(1), Msg::Vote { term: 1 })]);
        let stores: Vec<_> = step
            .effects
            .iter()
            .filter(|e| matches!(e, Effect::Store { .. }))
            .cloned()
            .collect();
        assert_eq!(stores, vec![durable(1, None), durable(1, Some(1))]);
    }

    #[test]
    fn the_planted_bug_votes_twice() {
        let (mut n, cluster) = node(Config::with_planted_bug());
        let mut host = StepHost::new(NodeId(0), &cluster);
        let mut step = host.step();
        n.on_message(&mut step, NodeId(1), Msg::RequestVote { term: 1 });
        n.on_message(&mut step, NodeId(2), Msg::RequestVote { term: 1 });
        let sent: Vec<_> = step
            .sent()
            .into_iter()
            .map(|(to, m)| (to, m.clone()))
            .collect();
        assert_eq!(
            sent,
            vec![
                (NodeId(1), Msg::Vote { term: 1 }),
                (NodeId(2), Msg::Vote { term: 1 })
            ]
        );
    }

    #[test]
    fn a_candidate_with_a_majority_leads_and_sends_heartbeats() {
        let (mut n, cluster) = node(Config::correct());
        let mut host = StepHost::new(NodeId(0), &cluster);
        let mut step = host.step();
        n.on_timer(&mut step, Timer::Election);
        step.effects.clear();
        n.on_message(&mut step, NodeId(2), Msg::Vote { term: 1 });
        assert_eq!(
            step.effects,
            vec![
                Effect::Observe(Observation::Leader { term: 1 }),
                Effect::CancelTimer {
                    timer: Timer::Election
                },
                Effect::Send {
                    to: NodeId(1),
                    msg: Msg::Heartbeat { term: 1 }
                },
                Effect::Send {
                    to: NodeId(2),
                    msg: Msg::Heartbeat { term: 1 }
                },
                Effect::SetTimer {
                    timer: Timer::Heartbeat,
                    after: Duration::from_millis(50)
                },
            ]
        );
    }

    #[test]
    fn the_vote_survives_a_restart() {
        let (mut n, cluster) = node(Config::correct());
        let mut host = StepHost::new(NodeId(0), &cluster);
        n.on_message(&mut host.step(), NodeId(1), Msg::RequestVote { term: 4 });
        // A new process over the same storage: what a crash and restart leaves.
        let mut restarted = MyElection::new(&Config::correct(), NodeId(0), &cluster);
        let mut step = host.step();
        restarted.on_start(&mut step);
        restarted.on_message(&mut step, NodeId(2), Msg::RequestVote { term: 4 });
        assert_eq!(step.sent(), vec![]);
        assert_eq!((restarted.term, restarted.voted_for), (4, Some(NodeId(1))));
    }
}

/// Scenario parameters (`[protocol.params]`): the election timeout range and the
/// heartbeat interval, as durations (`"150ms"`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub election_timeout: Option<[HumanDuration; 2]>,
    pub heartbeat_interval: Option<HumanDuration>,
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "my-election",
    "a term-based leader election written as an outside user would (the tutorial's)",
    &[RoleInfo::new("node", "votes and leads", 5)],
    &[
        VariantInfo::new("correct", "one vote per term, kept across restarts"),
        VariantInfo::new(
            "vote-twice",
            "the planted bug: grants a vote to every candidate of the current term",
        )
        .with_breaks(&["single-leader-per-term"]),
    ],
);

/// The variants a scenario can name: `variant = "vote-twice"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MyVariant {
    Correct,
    VoteTwice,
}

impl Variant for MyVariant {
    fn all() -> &'static [MyVariant] {
        &[MyVariant::Correct, MyVariant::VoteTwice]
    }
}

impl std::fmt::Display for MyVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MyVariant::Correct => "correct",
            MyVariant::VoteTwice => "vote-twice",
        })
    }
}

/// What the `tenure` command line needs to run `my-election` from a scenario file.
impl Configurable for MyElection {
    type Params = Params;
    type Variant = MyVariant;
    type Role = tenure::roles::Node;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: Params,
        variant: MyVariant,
        _cluster: &Cluster,
    ) -> Result<Config, ParamError> {
        let mut config = match variant {
            MyVariant::Correct => Config::correct(),
            MyVariant::VoteTwice => Config::with_planted_bug(),
        };
        if let Some([min, max]) = params.election_timeout {
            if min.0 > max.0 || min.0.is_zero() {
                return Err(ParamError::new(
                    "election_timeout",
                    "give [min, max] with 0 < min <= max",
                ));
            }
            config.election_timeout = (min.0, max.0);
        }
        if let Some(h) = params.heartbeat_interval {
            if h.0.is_zero() || h.0 >= config.election_timeout.0 {
                return Err(ParamError::new(
                    "heartbeat_interval",
                    "must be above zero and below the election timeout's minimum",
                ));
            }
            config.heartbeat_interval = h.0;
        }
        Ok(config)
    }

    /// The model checker's view (`check-model --protocol my-election`): three nodes,
    /// messages delivered in any order or never, timers firing at any point, clocks
    /// frozen (only the order of events matters to who votes for whom), terms up to 2.
    fn model() -> Result<tenure::model::ModelSpec, &'static str> {
        use tenure::model::{Bounds, ClockModel, ModelSpec, SeenModel};
        Ok(ModelSpec::new(
            "three nodes; messages delivered in any order or never, timers firing at \
             any point, terms up to 2",
            &[("node", 3)],
        )
        .with_bounds(
            Bounds::DEFAULT
                .with_max_depth(8)
                .with_clock(ClockModel::Frozen)
                .with_seen(SeenModel::Leaders),
        )
        .with_max_term(2)
        .with_term_key("durable/term")
        .with_checks(&["single-leader-per-term"]))
    }
}

/// This crate's catalogue: what its `my-election` binary (the whole `tenure` command
/// line, `src/bin/my-election.rs`) can run from a scenario file.
pub struct MyProtocols;

impl Catalogue for MyProtocols {
    fn visit<V: Visitor>(&self, v: &mut V) {
        v.visit::<MyElection>();
    }
}

/// Its messages are serde, so it also runs as real processes (`node`, `cluster`).
impl RealCatalogue for MyProtocols {
    fn visit_real<V: RealVisitor>(&self, v: &mut V) {
        v.visit::<MyElection>();
    }
}
