//! Single steps of one Raft node, with the exact effects they must have.

use super::*;
use std::time::Duration;
use tenure_core::{Effect, Rng, SplitMix64, Step, StorageMap};

type Effects = Vec<Effect<RaftMsg, RaftTimer>>;

const MS: Duration = Duration::from_millis(1);

/// One node under test with its storage, clock and rng: a tiny host.
struct Node {
    raft: Raft,
    config: RaftConfig,
    cluster: Cluster,
    storage: StorageMap,
    rng: SplitMix64,
    now: LocalTime,
}

impl Node {
    /// Node `me` of a 5-server cluster, started (its start effects are dropped).
    fn started(config: RaftConfig, me: u32) -> Node {
        let cluster = Cluster::uniform("server", 5);
        let raft = Raft::new(&config, NodeId(me), &cluster);
        let mut node = Node {
            raft,
            config,
            cluster,
            storage: StorageMap::new(),
            rng: SplitMix64(42),
            now: LocalTime(1_000_000_000),
        };
        node.start();
        node
    }

    fn me(&self) -> NodeId {
        self.raft.me
    }

    fn step<R>(
        &mut self,
        f: impl FnOnce(&mut Raft, &mut Step<'_, RaftMsg, RaftTimer>) -> R,
    ) -> Effects {
        let mut step = Step::new(
            self.raft.me,
            &self.cluster,
            self.now,
            self.now,
            &mut self.storage,
            &mut self.rng,
        );
        f(&mut self.raft, &mut step);
        step.effects
    }

    fn start(&mut self) -> Effects {
        self.step(|r, s| r.on_start(s))
    }

    /// Crash and restart over the same storage.
    fn restart(&mut self) -> Effects {
        self.raft = Raft::new(&self.config, self.me(), &self.cluster);
        self.start()
    }

    fn recv(&mut self, from: u32, msg: RaftMsg) -> Effects {
        self.step(|r, s| r.on_message(s, NodeId(from), msg))
    }

    fn fire(&mut self, timer: RaftTimer) -> Effects {
        self.step(|r, s| r.on_timer(s, timer))
    }

    fn advance(&mut self, d: Duration) {
        self.now = self.now + d;
    }

    /// The election timeout the next draw will produce.
    fn next_timeout(&self) -> Duration {
        let range = self.config.election_timeout_of(self.me());
        self.rng.clone().duration_between(range.min, range.max)
    }

    /// Makes the node leader of term 1 (votes from n1 and n2).
    fn elect(&mut self) {
        self.fire(RaftTimer::Election);
        self.recv(1, vote_reply(1, true, false));
        self.recv(2, vote_reply(1, true, false));
        assert_eq!(self.raft.role(), Role::Leader);
    }
}

fn request_vote(term: u64, last_log_index: u64, last_log_term: u64) -> RaftMsg {
    RaftMsg::RequestVote {
        term,
        last_log_index,
        last_log_term,
        pre_vote: false,
    }
}

fn pre_vote(term: u64) -> RaftMsg {
    RaftMsg::RequestVote {
        term,
        last_log_index: 0,
        last_log_term: 0,
        pre_vote: true,
    }
}

fn sync() -> Effect<RaftMsg, RaftTimer> {
    Effect::Sync { ok: true }
}

fn store(key: &str, value: &str) -> Effect<RaftMsg, RaftTimer> {
    Effect::Store {
        key: key.into(),
        value: Some(value.into()),
    }
}

fn send(to: u32, msg: RaftMsg) -> Effect<RaftMsg, RaftTimer> {
    Effect::Send {
        to: NodeId(to),
        msg,
    }
}

fn set_timer(timer: RaftTimer, after: Duration) -> Effect<RaftMsg, RaftTimer> {
    Effect::SetTimer { timer, after }
}

fn observe(obs: Observation) -> Effect<RaftMsg, RaftTimer> {
    Effect::Observe(obs)
}

fn follower(term: u64, leader: Option<u32>) -> Effect<RaftMsg, RaftTimer> {
    observe(Observation::Follower {
        term,
        leader: leader.map(NodeId),
    })
}

fn heartbeat(term: u64) -> RaftMsg {
    RaftMsg::AppendEntries { term }
}

#[test]
fn start_observes_follower_and_sets_the_election_timer() {
    let cluster = Cluster::uniform("server", 5);
    let config = RaftConfig::new(RaftVariant::Correct);
    let mut node = Node {
        raft: Raft::new(&config, NodeId(0), &cluster),
        config,
        cluster,
        storage: StorageMap::new(),
        rng: SplitMix64(42),
        now: LocalTime(0),
    };
    let timeout = node.next_timeout();
    assert!((150 * MS..=300 * MS).contains(&timeout));
    assert_eq!(
        node.start(),
        vec![follower(0, None), set_timer(RaftTimer::Election, timeout)]
    );
}

#[test]
fn granting_a_vote_stores_term_and_vote_then_replies() {
    let mut node = Node::started(RaftConfig::new(RaftVariant::Correct), 0);
    let timeout = node.next_timeout();
    assert_eq!(
        node.recv(3, request_vote(1, 0, 0)),
        vec![
            follower(1, None),
            store("term", "1"),
            store("voted_for", "3"),
            sync(),
            send(3, vote_reply(1, true, false)),
            set_timer(RaftTimer::Election, timeout),
        ]
    );
    // A second candidate in the same term is refused, and nothing is stored.
    assert_eq!(
        node.recv(4, request_vote(1, 0, 0)),
        vec![send(4, vote_reply(1, false, false))]
    );
}

#[test]
fn forget_vote_does_not_store_the_vote() {
    let mut node = Node::started(RaftConfig::new(RaftVariant::ForgetVote), 0);
    let timeout = node.next_timeout();
    assert_eq!(
        node.recv(3, request_vote(1, 0, 0)),
        vec![
            follower(1, None),
            store("term", "1"),
            sync(),
            send(3, vote_reply(1, true, false)),
            set_timer(RaftTimer::Election, timeout),
        ]
    );
}

#[test]
fn after_a_restart_the_correct_variant_refuses_a_second_vote_in_the_term() {
    let mut node = Node::started(RaftConfig::new(RaftVariant::Correct), 0);
    node.recv(3, request_vote(1, 0, 0));
    let timeout = node.next_timeout();
    assert_eq!(
        node.restart(),
        vec![follower(1, None), set_timer(RaftTimer::Election, timeout)]
    );
    assert_eq!(node.raft.voted_for(), Some(NodeId(3)));
    assert_eq!(
        node.recv(4, request_vote(1, 0, 0)),
        vec![send(4, vote_reply(1, false, false))]
    );
}

#[test]
fn after_a_restart_forget_vote_votes_twice_in_one_term() {
    let mut node = Node::started(RaftConfig::new(RaftVariant::ForgetVote), 0);
    node.recv(3, request_vote(1, 0, 0));
    node.restart();
    assert_eq!(node.raft.term(), 1);
    assert_eq!(node.raft.voted_for(), None);
    let timeout = node.next_timeout();
    assert_eq!(
        node.recv(4, request_vote(1, 0, 0)),
        vec![
            send(4, vote_reply(1, true, false)),
            set_timer(RaftTimer::Election, timeout),
        ]
    );
}

#[test]
fn a_candidate_with_a_stale_log_is_refused() {
    let mut config = RaftConfig::new(RaftVariant::Correct);
    config.logs.insert(NodeId(0), vec![1, 2]);
    let mut node = Node::started(config, 0);
    assert_eq!(
        node.raft.term(),
        2,
        "the term starts at the log's last term"
    );
    // Same last term, shorter log: refused, but the term is still adopted.
    assert_eq!(
        node.recv(3, request_vote(3, 1, 2)),
        vec![
            follower(3, None),
            store("term", "3"),
            sync(),
            send(3, vote_reply(3, false, false)),
        ]
    );
    // Older last term, longer log: refused.
    assert_eq!(
        node.recv(4, request_vote(3, 5, 1)),
        vec![send(4, vote_reply(3, false, false))]
    );
    // Newer last term wins whatever the length.
    let timeout = node.next_timeout();
    assert_eq!(
        node.recv(1, request_vote(3, 1, 3)),
        vec![
            store("voted_for", "1"),
            sync(),
            send(1, vote_reply(3, true, false)),
            set_timer(RaftTimer::Election, timeout),
        ]
    );
}

#[test]
fn an_election_timeout_starts_an_election() {
    let mut node = Node::started(RaftConfig::new(RaftVariant::Correct), 0);
    let timeout = node.next_timeout();
    let rv = request_vote(1, 0, 0);
    assert_eq!(
        node.fire(RaftTimer::Election),
        vec![
            observe(Observation::Candidate { term: 1 }),
            set_timer(RaftTimer::Election, timeout),
            store("term", "1"),
            store("voted_for", "0"),
            sync(),
            send(1, rv.clone()),
            send(2, rv.clone()),
            send(3, rv.clone()),
            send(4, rv),
        ]
    );
}

#[test]
fn a_candidate_becomes_leader_on_a_majority_and_sends_heartbeats() {
    let mut node = Node::started(RaftConfig::new(RaftVariant::Correct), 0);
    node.fire(RaftTimer::Election);
    assert_eq!(node.recv(1, vote_reply(1, true, false)), vec![]);
    // A refusal does not count.
    assert_eq!(node.recv(3, vote_reply(1, false, false)), vec![]);
    assert_eq!(
        node.recv(2, vote_reply(1, true, false)),
        vec![
            observe(Observation::Leader { term: 1 }),
            Effect::CancelTimer {
                timer: RaftTimer::Election
            },
            Effect::Observe(Observation::Serves { term: 1 }),
            send(1, heartbeat(1)),
            send(2, heartbeat(1)),
            send(3, heartbeat(1)),
            send(4, heartbeat(1)),
            set_timer(RaftTimer::Heartbeat, 50 * MS),
        ]
    );
    // Later votes change nothing; heartbeats keep going.
    assert_eq!(node.recv(4, vote_reply(1, true, false)), vec![]);
    assert_eq!(
        node.fire(RaftTimer::Heartbeat),
        vec![
            Effect::Observe(Observation::Serves { term: 1 }),
            send(1, heartbeat(1)),
            send(2, heartbeat(1)),
            send(3, heartbeat(1)),
            send(4, heartbeat(1)),
            set_timer(RaftTimer::Heartbeat, 50 * MS),
        ]
    );
}

#[test]
fn a_follower_observes_its_leader_once_and_resets_its_timer() {
    let mut node = Node::started(RaftConfig::new(RaftVariant::Correct), 0);
    let timeout = node.next_timeout();
    let ok = RaftMsg::AppendEntriesReply {
        term: 1,
        success: true,
    };
    assert_eq!(
        node.recv(2, heartbeat(1)),
        vec![
            follower(1, Some(2)),
            store("term", "1"),
            sync(),
            send(2, ok.clone()),
            set_timer(RaftTimer::Election, timeout),
        ]
    );
    let timeout = node.next_timeout();
    assert_eq!(
        node.recv(2, heartbeat(1)),
        vec![send(2, ok), set_timer(RaftTimer::Election, timeout)]
    );
    // A stale leader is told the current term.
    assert_eq!(
        node.recv(4, heartbeat(0)),
        vec![send(
            4,
            RaftMsg::AppendEntriesReply {
                term: 1,
                success: false
            }
        )]
    );
}

#[test]
fn a_candidate_follows_a_leader_of_its_own_term() {
    let mut node = Node::started(RaftConfig::new(RaftVariant::Correct), 0);
    node.fire(RaftTimer::Election);
    let timeout = node.next_timeout();
    assert_eq!(
        node.recv(3, heartbeat(1)),
        vec![
            follower(1, Some(3)),
            send(
                3,
                RaftMsg::AppendEntriesReply {
                    term: 1,
                    success: true
                }
            ),
            set_timer(RaftTimer::Election, timeout),
        ]
    );
    // The vote it gave itself stands.
    assert_eq!(node.raft.voted_for(), Some(NodeId(0)));
}

#[test]
fn a_leader_steps_down_on_a_higher_term() {
    let mut node = Node::started(RaftConfig::new(RaftVariant::Correct), 0);
    node.elect();
    let timeout = node.next_timeout();
    assert_eq!(
        node.recv(
            3,
            RaftMsg::AppendEntriesReply {
                term: 5,
                success: false
            }
        ),
        vec![
            follower(5, None),
            Effect::CancelTimer {
                timer: RaftTimer::Heartbeat
            },
            set_timer(RaftTimer::Election, timeout),
            store("term", "5"),
            store("voted_for", "null"),
            sync(),
        ]
    );
    assert_eq!(node.raft.role(), Role::Follower);
}

#[test]
fn a_no_step_down_leader_ignores_a_higher_term() {
    let mut node = Node::started(RaftConfig::new(RaftVariant::NoStepDown), 0);
    node.elect();
    assert_eq!(node.recv(3, heartbeat(5)), vec![]);
    assert_eq!(node.recv(3, request_vote(5, 0, 0)), vec![]);
    assert_eq!(node.raft.role(), Role::Leader);
    assert_eq!(node.raft.term(), 1);
}

#[test]
fn a_pre_vote_keeps_the_term_and_needs_a_majority() {
    let mut config = RaftConfig::new(RaftVariant::Correct);
    config.pre_vote = true;
    let mut node = Node::started(config, 0);
    let timeout = node.next_timeout();
    let pv = pre_vote(1);
    assert_eq!(
        node.fire(RaftTimer::Election),
        vec![
            set_timer(RaftTimer::Election, timeout),
            send(1, pv.clone()),
            send(2, pv.clone()),
            send(3, pv.clone()),
            send(4, pv),
        ]
    );
    assert_eq!(
        (node.raft.term(), node.raft.role()),
        (0, Role::PreCandidate)
    );
    assert_eq!(node.recv(1, vote_reply(1, true, true)), vec![]);
    // The second pre-vote makes a majority: now a real election in term 1.
    let timeout = node.next_timeout();
    let rv = request_vote(1, 0, 0);
    assert_eq!(
        node.recv(2, vote_reply(1, true, true)),
        vec![
            observe(Observation::Candidate { term: 1 }),
            set_timer(RaftTimer::Election, timeout),
            store("term", "1"),
            store("voted_for", "0"),
            sync(),
            send(1, rv.clone()),
            send(2, rv.clone()),
            send(3, rv.clone()),
            send(4, rv),
        ]
    );
}

#[test]
fn a_pre_vote_is_refused_while_the_leader_is_fresh() {
    let mut config = RaftConfig::new(RaftVariant::Correct);
    config.pre_vote = true;
    let mut node = Node::started(config, 0);
    node.recv(2, heartbeat(1));
    node.advance(100 * MS);
    assert_eq!(
        node.recv(3, pre_vote(2)),
        vec![send(3, vote_reply(1, false, true))]
    );
    // A real RequestVote is ignored too (thesis §4.2.3): the term does not move.
    assert_eq!(
        node.recv(3, request_vote(2, 0, 0)),
        vec![send(3, vote_reply(1, false, false))]
    );
    assert_eq!(node.raft.term(), 1);
    // Once the minimum election timeout has passed, the pre-vote is granted, and
    // still nothing is stored.
    node.advance(50 * MS);
    assert_eq!(
        node.recv(3, pre_vote(2)),
        vec![send(3, vote_reply(2, true, true))]
    );
    assert_eq!((node.raft.term(), node.raft.voted_for()), (1, None));
}

#[test]
fn with_etcd_rules_and_no_check_quorum_a_pre_vote_is_granted_while_the_leader_is_fresh() {
    // etcd-io/raft `Step`: without CheckQuorum there is no lease; `canVote` grants a
    // pre-vote for a later term to any candidate whose log is up to date.
    let mut config = RaftConfig::new(RaftVariant::Correct);
    config.pre_vote = true;
    config.vote_rules = VoteRules::Etcd;
    let mut node = Node::started(config, 0);
    node.recv(2, heartbeat(1));
    node.advance(100 * MS);
    assert_eq!(
        node.recv(3, pre_vote(2)),
        vec![send(3, vote_reply(2, true, true))]
    );
    assert_eq!((node.raft.term(), node.raft.voted_for()), (1, None));
}

#[test]
fn with_etcd_rules_and_check_quorum_votes_in_the_lease_are_ignored_without_a_reply() {
    let mut config = RaftConfig::new(RaftVariant::Correct);
    config.pre_vote = true;
    config.check_quorum = true;
    config.vote_rules = VoteRules::Etcd;
    let mut node = Node::started(config, 0);
    node.recv(2, heartbeat(1));
    node.advance(100 * MS);
    assert_eq!(node.recv(3, pre_vote(2)), vec![]);
    assert_eq!(node.recv(3, request_vote(2, 0, 0)), vec![]);
    assert_eq!(node.raft.term(), 1);
    // After the minimum election timeout the lease is over: the pre-vote is granted.
    node.advance(50 * MS);
    assert_eq!(
        node.recv(3, pre_vote(2)),
        vec![send(3, vote_reply(2, true, true))]
    );
}

#[test]
fn with_etcd_rules_a_voter_that_knows_a_leader_refuses_a_vote_in_its_term() {
    // etcd `canVote`: no vote cast, but a leader known in this term: refuse. (The
    // thesis rules would grant it; no second leader can win that term either way.)
    let mut config = RaftConfig::new(RaftVariant::Correct);
    config.vote_rules = VoteRules::Etcd;
    let mut node = Node::started(config, 0);
    node.recv(2, heartbeat(1));
    assert_eq!(
        node.recv(3, request_vote(1, 0, 0)),
        vec![send(3, vote_reply(1, false, false))]
    );
    assert_eq!(node.raft.voted_for(), None);
}

#[test]
fn a_refused_pre_vote_with_a_higher_term_catches_up() {
    let mut config = RaftConfig::new(RaftVariant::Correct);
    config.pre_vote = true;
    let mut node = Node::started(config, 0);
    node.fire(RaftTimer::Election);
    assert_eq!(
        node.recv(1, vote_reply(4, false, true)),
        vec![follower(4, None), store("term", "4"), sync()]
    );
    assert_eq!(node.raft.role(), Role::Follower);
}

#[test]
fn check_quorum_steps_a_leader_down_when_it_hears_from_no_majority() {
    let mut config = RaftConfig::new(RaftVariant::Correct);
    config.check_quorum = true;
    let mut node = Node::started(config, 0);
    node.elect();
    let ok = RaftMsg::AppendEntriesReply {
        term: 1,
        success: true,
    };
    node.advance(100 * MS);
    node.recv(1, ok.clone());
    node.advance(100 * MS);
    // 200ms in: only n1 answered within the last 150ms; with self that is 2 of 5.
    let timeout = node.next_timeout();
    assert_eq!(
        node.fire(RaftTimer::Heartbeat),
        vec![
            follower(1, None),
            Effect::CancelTimer {
                timer: RaftTimer::Heartbeat
            },
            set_timer(RaftTimer::Election, timeout),
        ]
    );
    assert_eq!(node.raft.role(), Role::Follower);
}

#[test]
fn check_quorum_keeps_a_leader_that_hears_from_a_majority() {
    let mut config = RaftConfig::new(RaftVariant::Correct);
    config.check_quorum = true;
    let mut node = Node::started(config, 0);
    node.elect();
    let ok = RaftMsg::AppendEntriesReply {
        term: 1,
        success: true,
    };
    node.advance(100 * MS);
    node.recv(1, ok.clone());
    node.recv(2, ok);
    node.advance(100 * MS);
    let effects = node.fire(RaftTimer::Heartbeat);
    assert_eq!(effects.len(), 6, "{effects:?}");
    assert_eq!(effects[0], Effect::Observe(Observation::Serves { term: 1 }));
    assert_eq!(node.raft.role(), Role::Leader);
}

#[test]
fn a_per_node_timeout_override_is_used() {
    let mut config = RaftConfig::new(RaftVariant::Correct);
    let slow = TimeoutRange {
        min: 900 * MS,
        max: 900 * MS,
    };
    config.timeouts.insert(NodeId(2), slow);
    let mut node = Node::started(config.clone(), 2);
    assert_eq!(
        node.restart(),
        vec![follower(0, None), set_timer(RaftTimer::Election, 900 * MS)]
    );
    let mut other = Node::started(config, 1);
    let timeout = other.next_timeout();
    assert!(timeout <= 300 * MS);
    assert_eq!(
        other.restart(),
        vec![follower(0, None), set_timer(RaftTimer::Election, timeout)]
    );
}

#[test]
fn a_single_node_elects_itself_at_once() {
    let cluster = Cluster::uniform("server", 1);
    let config = RaftConfig::new(RaftVariant::Correct);
    let mut raft = Raft::new(&config, NodeId(0), &cluster);
    let mut storage = StorageMap::new();
    let mut rng = SplitMix64(1);
    let mut step = Step::new(
        NodeId(0),
        &cluster,
        LocalTime(0),
        LocalTime(0),
        &mut storage,
        &mut rng,
    );
    raft.on_timer(&mut step, RaftTimer::Election);
    assert_eq!(raft.role(), Role::Leader);
    assert_eq!(
        step.observed(),
        vec![
            &Observation::Candidate { term: 1 },
            &Observation::Leader { term: 1 },
            &Observation::Serves { term: 1 }
        ]
    );
}

// ----- configure -----

fn params(json: &str) -> RaftParams {
    serde_json::from_str(json).unwrap()
}

fn configure_error(json: &str) -> ParamError {
    let cluster = Cluster::uniform("server", 5);
    Raft::configure_named(params(json), "correct", &cluster).unwrap_err()
}

#[test]
fn configure_reads_defaults_and_overrides() {
    let cluster = Cluster::uniform("server", 5);
    let config = Raft::configure_named(params("{}"), "no-step-down", &cluster).unwrap();
    assert_eq!(config, RaftConfig::new(RaftVariant::NoStepDown));
    let config = Raft::configure_named(
        params(
            r#"{"pre_vote": true, "logs": {"1": [1, 1, 2]},
                "timeouts": {"4": ["400ms", "500ms"]}}"#,
        ),
        "forget-vote",
        &cluster,
    )
    .unwrap();
    assert!(config.pre_vote && !config.check_quorum);
    assert_eq!(config.log_of(NodeId(1)), &[1, 1, 2]);
    assert_eq!(config.log_of(NodeId(0)), &[] as &[u64]);
    assert_eq!(config.election_timeout_of(NodeId(4)).min, 400 * MS);
    assert_eq!(config.election_timeout_of(NodeId(3)).max, 300 * MS);
}

#[test]
fn configure_errors_name_the_field() {
    let field = |json| configure_error(json).field;
    assert_eq!(
        field(r#"{"election_timeout": ["300ms", "150ms"]}"#),
        "election_timeout"
    );
    assert_eq!(
        field(r#"{"heartbeat_interval": "200ms"}"#),
        "election_timeout"
    );
    assert_eq!(
        field(r#"{"heartbeat_interval": "0"}"#),
        "heartbeat_interval"
    );
    assert_eq!(field(r#"{"logs": {"7": [1]}}"#), "logs.7");
    assert_eq!(field(r#"{"logs": {"two": [1]}}"#), "logs.two");
    assert_eq!(field(r#"{"logs": {"2": [2, 1]}}"#), "logs.2");
    assert_eq!(field(r#"{"logs": {"2": [0, 1]}}"#), "logs.2");
    assert_eq!(
        field(r#"{"timeouts": {"3": ["100ms", "50ms"]}}"#),
        "timeouts.3"
    );
    assert_eq!(
        field(r#"{"timeouts": {"5": ["200ms", "300ms"]}}"#),
        "timeouts.5"
    );
    assert!(configure_error(r#"{"logs": {"2": [2, 1]}}"#)
        .message
        .contains("decrease"));
    // Unknown parameters are refused by serde.
    assert!(serde_json::from_str::<RaftParams>(r#"{"pre_votes": true}"#).is_err());
}

#[test]
fn info_lists_correct_first_and_what_each_variant_breaks() {
    let info = Raft::info();
    assert_eq!(info.name, "raft");
    assert_eq!(info.roles[0].name, "server");
    assert_eq!(info.roles[0].default_count, 5);
    let names: Vec<_> = info.variants.iter().map(|v| v.name).collect();
    assert_eq!(
        names,
        [
            "correct",
            "forget-vote",
            "no-step-down",
            "reply-before-sync",
            "etcd-8334",
            "hashicorp-609"
        ]
    );
    for v in info.variants {
        assert!(<RaftVariant as tenure_core::Variant>::parse(v.name).is_some());
    }
    assert_eq!(
        info.variant("forget-vote").unwrap().breaks,
        ["single-leader-per-term"]
    );
}

/// A node over a [`tenure_core::StepHost`], which keeps what was synced apart from what
/// was written, so power losses can be played.
struct Disked {
    host: tenure_core::StepHost,
    config: RaftConfig,
    raft: Raft,
}

impl Disked {
    fn started(variant: RaftVariant) -> Disked {
        let cluster = Cluster::uniform("server", 5);
        let config = RaftConfig::new(variant);
        let mut node = Disked {
            host: tenure_core::StepHost::new(NodeId(0), &cluster),
            raft: Raft::new(&config, NodeId(0), &cluster),
            config,
        };
        node.boot();
        node
    }

    fn boot(&mut self) {
        self.raft = Raft::new(&self.config, NodeId(0), &self.host.cluster);
        let mut step = self.host.step();
        self.raft.on_start(&mut step);
    }

    fn recv(&mut self, from: u32, msg: RaftMsg) -> Effects {
        let mut step = self.host.step();
        self.raft.on_message(&mut step, NodeId(from), msg);
        step.effects
    }

    fn power_loss_and_reboot(&mut self) {
        self.host.power_loss();
        self.boot();
    }
}

fn position(effects: &Effects, pred: impl Fn(&Effect<RaftMsg, RaftTimer>) -> bool) -> usize {
    effects
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("not found in {effects:?}"))
}

#[test]
fn the_correct_variant_syncs_its_vote_before_replying() {
    let mut node = Disked::started(RaftVariant::Correct);
    let effects = node.recv(3, request_vote(1, 0, 0));
    let sync = position(&effects, |e| *e == Effect::Sync { ok: true });
    let reply = position(&effects, |e| *e == send(3, vote_reply(1, true, false)));
    assert!(sync < reply, "{effects:?}");
    node.power_loss_and_reboot();
    assert_eq!(
        node.raft.voted_for(),
        Some(NodeId(3)),
        "the synced vote survives"
    );
    assert_eq!(
        node.recv(4, request_vote(1, 0, 0)),
        vec![send(4, vote_reply(1, false, false))]
    );
}

#[test]
fn reply_before_sync_sends_its_vote_before_syncing_it() {
    let mut node = Disked::started(RaftVariant::ReplyBeforeSync);
    let effects = node.recv(3, request_vote(1, 0, 0));
    let sync = position(&effects, |e| *e == Effect::Sync { ok: true });
    let reply = position(&effects, |e| *e == send(3, vote_reply(1, true, false)));
    assert!(reply < sync, "{effects:?}");
}

#[test]
fn reply_before_sync_votes_twice_in_a_term_when_power_fails_before_the_sync() {
    let mut node = Disked::started(RaftVariant::ReplyBeforeSync);
    // The sync never completes (the machine dies during it): modelled as a failed sync.
    node.host.sync_fails = true;
    let effects = node.recv(3, request_vote(1, 0, 0));
    assert!(effects.contains(&send(3, vote_reply(1, true, false))));
    node.host.sync_fails = false;
    node.power_loss_and_reboot();
    assert_eq!((node.raft.term(), node.raft.voted_for()), (0, None));
    let effects = node.recv(4, request_vote(1, 0, 0));
    assert!(
        effects.contains(&send(4, vote_reply(1, true, false))),
        "a second vote in term 1: {effects:?}"
    );
}

#[test]
fn the_correct_variant_says_nothing_while_its_disk_fails() {
    let mut node = Disked::started(RaftVariant::Correct);
    node.host.sync_fails = true;
    let effects = node.recv(3, request_vote(1, 0, 0));
    assert!(effects.contains(&Effect::Sync { ok: false }), "{effects:?}");
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::Send { .. })),
        "no reply rests on an unsynced vote: {effects:?}"
    );
    // The disk recovers: the next message syncs the pending vote first.
    node.host.sync_fails = false;
    let effects = node.recv(3, request_vote(1, 0, 0));
    let sync = position(&effects, |e| *e == Effect::Sync { ok: true });
    let reply = position(&effects, |e| *e == send(3, vote_reply(1, true, false)));
    assert!(sync < reply, "{effects:?}");
}

/// A follower of n2 that timed out: a pre-candidate of term 1 (asking for term 2).
fn timed_out_pre_candidate(variant: RaftVariant) -> Node {
    let mut config = RaftConfig::new(variant);
    config.pre_vote = true;
    config.check_quorum = true;
    config.vote_rules = VoteRules::Etcd;
    let mut node = Node::started(config, 0);
    node.recv(2, heartbeat(1));
    node.advance(400 * MS);
    node.fire(RaftTimer::Election);
    assert_eq!(node.raft.role(), Role::PreCandidate);
    node
}

#[test]
fn an_etcd_pre_candidate_grants_another_pre_candidates_pre_vote() {
    // etcd since PR #8334: `becomePreCandidate` forgets the leader, so it is in no lease.
    let mut node = timed_out_pre_candidate(RaftVariant::Correct);
    assert_eq!(node.raft.leader(), None);
    assert_eq!(
        node.recv(3, pre_vote(2)),
        vec![send(3, vote_reply(2, true, true))]
    );
}

#[test]
fn an_etcd_8334_pre_candidate_keeps_its_leader_and_ignores_pre_votes() {
    // The negative control of the test above: the same steps, the bug's variant.
    let mut node = timed_out_pre_candidate(RaftVariant::Etcd8334);
    assert_eq!(node.raft.leader(), Some(NodeId(2)));
    assert_eq!(node.recv(3, pre_vote(2)), vec![]);
    // Its lease runs out one minimum election timeout after it timed out.
    node.advance(150 * MS);
    assert_eq!(
        node.recv(3, pre_vote(2)),
        vec![send(3, vote_reply(2, true, true))]
    );
}

/// A follower of n2 under hashicorp's pre-vote rules receives a pre-vote from n2 itself
/// (stepped down) 10 ms after n2's last heartbeat; returns what granting it did.
fn grant_a_pre_vote(variant: RaftVariant) -> Effects {
    let mut config = RaftConfig::new(variant);
    config.pre_vote = true;
    config.vote_rules = VoteRules::Hashicorp;
    let mut node = Node::started(config, 0);
    node.recv(2, heartbeat(1));
    node.advance(10 * MS);
    // Another node's pre-vote is refused: "rejecting pre-vote request since we have a
    // leader".
    assert_eq!(
        node.recv(3, pre_vote(2)),
        vec![send(3, vote_reply(1, false, true))]
    );
    node.recv(2, pre_vote(2))
}

#[test]
fn granting_a_pre_vote_leaves_the_election_timer_alone() {
    assert_eq!(
        grant_a_pre_vote(RaftVariant::Correct),
        vec![send(2, vote_reply(2, true, true))]
    );
}

#[test]
fn a_hashicorp_609_voter_restarts_its_election_timer_on_granting_a_pre_vote() {
    // The negative control of the test above: `setLastContact` before PR #609.
    let effects = grant_a_pre_vote(RaftVariant::Hashicorp609);
    assert_eq!(effects[0], send(2, vote_reply(2, true, true)));
    assert!(
        matches!(
            effects[1..],
            [Effect::SetTimer {
                timer: RaftTimer::Election,
                ..
            }]
        ),
        "{effects:?}"
    );
}
