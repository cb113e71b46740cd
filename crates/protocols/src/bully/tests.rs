//! Single steps of one Bully node, with the exact effects they must have.

use super::*;
use tenure_core::{Effect, LocalTime, SplitMix64, Step, StorageMap};

type Effects = Vec<Effect<BullyMsg, BullyTimer>>;

const MS: Duration = Duration::from_millis(1);

/// One node of a 5-node cluster under test.
struct Node {
    bully: Bully,
    cluster: Cluster,
    storage: StorageMap,
    rng: SplitMix64,
}

impl Node {
    fn new(me: u32) -> Node {
        let cluster = Cluster::uniform("node", 5);
        Node {
            bully: Bully::new(&BullyConfig::default(), NodeId(me), &cluster),
            cluster,
            storage: StorageMap::new(),
            rng: SplitMix64(7),
        }
    }

    /// Started, with its start effects dropped.
    fn started(me: u32) -> Node {
        let mut node = Node::new(me);
        node.start();
        node
    }

    fn step(&mut self, f: impl FnOnce(&mut Bully, &mut Step<'_, BullyMsg, BullyTimer>)) -> Effects {
        let mut step = Step::new(
            self.bully.me,
            &self.cluster,
            LocalTime(0),
            LocalTime(0),
            &mut self.storage,
            &mut self.rng,
        );
        f(&mut self.bully, &mut step);
        step.effects
    }

    fn start(&mut self) -> Effects {
        self.step(|b, s| b.on_start(s))
    }

    fn recv(&mut self, from: u32, msg: BullyMsg) -> Effects {
        self.step(|b, s| b.on_message(s, NodeId(from), msg))
    }

    fn fire(&mut self, timer: BullyTimer) -> Effects {
        self.step(|b, s| b.on_timer(s, timer))
    }
}

fn send(to: u32, msg: BullyMsg) -> Effect<BullyMsg, BullyTimer> {
    Effect::Send {
        to: NodeId(to),
        msg,
    }
}

fn set_timer(timer: BullyTimer, after: Duration) -> Effect<BullyMsg, BullyTimer> {
    Effect::SetTimer { timer, after }
}

fn cancel(timer: BullyTimer) -> Effect<BullyMsg, BullyTimer> {
    Effect::CancelTimer { timer }
}

fn follower(leader: Option<u32>) -> Effect<BullyMsg, BullyTimer> {
    Effect::Observe(Observation::Follower {
        term: 0,
        leader: leader.map(NodeId),
    })
}

fn leader() -> Effect<BullyMsg, BullyTimer> {
    Effect::Observe(Observation::Leader { term: 0 })
}

/// The coordinator acts as such (announces itself, heartbeats).
fn serves() -> Effect<BullyMsg, BullyTimer> {
    Effect::Observe(Observation::Serves { term: 0 })
}

#[test]
fn a_node_starts_by_asking_the_higher_ids() {
    let mut node = Node::new(2);
    assert_eq!(
        node.start(),
        vec![
            set_timer(BullyTimer::AnswerWait, 100 * MS),
            follower(None),
            send(3, BullyMsg::Election),
            send(4, BullyMsg::Election),
        ]
    );
}

#[test]
fn the_highest_id_declares_itself_at_once() {
    let mut node = Node::new(4);
    let everyone: Vec<_> = (0..4).map(|n| send(n, BullyMsg::Coordinator)).collect();
    let mut expected = vec![
        set_timer(BullyTimer::Heartbeat, 50 * MS),
        leader(),
        serves(),
    ];
    expected.extend(everyone);
    assert_eq!(node.start(), expected);
}

#[test]
fn no_answer_in_time_makes_a_node_coordinator() {
    let mut node = Node::started(2);
    assert_eq!(
        node.fire(BullyTimer::AnswerWait),
        vec![
            cancel(BullyTimer::AnswerWait),
            set_timer(BullyTimer::Heartbeat, 50 * MS),
            leader(),
            serves(),
            send(0, BullyMsg::Coordinator),
            send(1, BullyMsg::Coordinator),
            send(3, BullyMsg::Coordinator),
            send(4, BullyMsg::Coordinator),
        ]
    );
    assert_eq!(
        node.fire(BullyTimer::Heartbeat),
        vec![
            serves(),
            send(0, BullyMsg::Heartbeat),
            send(1, BullyMsg::Heartbeat),
            send(3, BullyMsg::Heartbeat),
            send(4, BullyMsg::Heartbeat),
            set_timer(BullyTimer::Heartbeat, 50 * MS),
        ]
    );
}

#[test]
fn an_answer_makes_a_node_wait_for_the_coordinator_then_follow_it() {
    let mut node = Node::started(2);
    assert_eq!(
        node.recv(4, BullyMsg::Answer),
        vec![
            cancel(BullyTimer::AnswerWait),
            set_timer(BullyTimer::CoordinatorWait, 300 * MS),
        ]
    );
    assert_eq!(
        node.recv(4, BullyMsg::Coordinator),
        vec![
            cancel(BullyTimer::CoordinatorWait),
            set_timer(BullyTimer::LeaderCheck, 200 * MS),
            follower(Some(4)),
        ]
    );
    // Heartbeats from the coordinator only push the suspicion back.
    assert_eq!(
        node.recv(4, BullyMsg::Heartbeat),
        vec![set_timer(BullyTimer::LeaderCheck, 200 * MS)]
    );
    // A stale timer of an old state does nothing.
    assert_eq!(node.fire(BullyTimer::AnswerWait), vec![]);
}

#[test]
fn a_silent_coordinator_after_an_answer_means_a_new_election() {
    let mut node = Node::started(2);
    node.recv(4, BullyMsg::Answer);
    assert_eq!(
        node.fire(BullyTimer::CoordinatorWait),
        vec![
            cancel(BullyTimer::CoordinatorWait),
            set_timer(BullyTimer::AnswerWait, 100 * MS),
            send(3, BullyMsg::Election),
            send(4, BullyMsg::Election),
        ]
    );
}

#[test]
fn with_a_backoff_policy_a_silent_coordinator_means_a_retry_after_the_backoff() {
    let mut node = Node::new(2);
    node.bully = Bully::new(
        &BullyConfig {
            backoff: BackoffPolicy::Exponential {
                base: 40 * MS,
                cap: 1000 * MS,
            },
            ..BullyConfig::default()
        },
        NodeId(2),
        &node.cluster,
    );
    node.start();
    for (attempt, wait) in [(1, 40 * MS), (2, 80 * MS)] {
        node.recv(4, BullyMsg::Answer);
        assert_eq!(
            node.fire(BullyTimer::CoordinatorWait),
            vec![
                Effect::Observe(Observation::Retry {
                    what: "election".into(),
                    attempt
                }),
                cancel(BullyTimer::CoordinatorWait),
                set_timer(BullyTimer::RetryWait, wait),
            ]
        );
        assert_eq!(node.bully.state(), BullyState::Retrying { after: wait });
        assert_eq!(
            node.fire(BullyTimer::RetryWait),
            vec![
                cancel(BullyTimer::RetryWait),
                set_timer(BullyTimer::AnswerWait, 100 * MS),
                send(3, BullyMsg::Election),
                send(4, BullyMsg::Election),
            ]
        );
    }
    // A coordinator emerging resets the backoff: the next retry waits `base` again.
    node.recv(4, BullyMsg::Coordinator);
    node.fire(BullyTimer::LeaderCheck);
    node.recv(4, BullyMsg::Answer);
    let effects = node.fire(BullyTimer::CoordinatorWait);
    assert_eq!(effects[2], set_timer(BullyTimer::RetryWait, 40 * MS));
    // While backing off, a lower node's Election is answered and starts our election.
    let effects = node.recv(1, BullyMsg::Election);
    assert_eq!(effects[0], send(1, BullyMsg::Answer));
    assert_eq!(node.bully.state(), BullyState::Electing);
}

#[test]
fn a_bad_backoff_parameter_names_its_field() {
    let params = BullyParams {
        backoff: Some(crate::backoff::BackoffParams {
            policy: "exponential".into(),
            base: HumanDuration(Duration::ZERO),
            cap: HumanDuration(MS),
        }),
        ..BullyParams::default()
    };
    assert_eq!(configure(params).unwrap_err().field, "backoff.base");
}

#[test]
fn a_follower_that_suspects_the_coordinator_runs_an_election() {
    let mut node = Node::started(2);
    node.recv(4, BullyMsg::Coordinator);
    assert_eq!(
        node.fire(BullyTimer::LeaderCheck),
        vec![
            cancel(BullyTimer::LeaderCheck),
            set_timer(BullyTimer::AnswerWait, 100 * MS),
            follower(None),
            send(3, BullyMsg::Election),
            send(4, BullyMsg::Election),
        ]
    );
}

#[test]
fn an_election_from_a_lower_id_is_answered_and_taken_over() {
    let mut node = Node::started(2);
    node.recv(4, BullyMsg::Coordinator);
    assert_eq!(
        node.recv(0, BullyMsg::Election),
        vec![
            send(0, BullyMsg::Answer),
            cancel(BullyTimer::LeaderCheck),
            set_timer(BullyTimer::AnswerWait, 100 * MS),
            follower(None),
            send(3, BullyMsg::Election),
            send(4, BullyMsg::Election),
        ]
    );
    // While electing, another one is only answered.
    assert_eq!(
        node.recv(1, BullyMsg::Election),
        vec![send(1, BullyMsg::Answer)]
    );
}

#[test]
fn a_coordinator_answers_an_election_and_reasserts_itself() {
    let mut node = Node::started(4);
    let mut expected = vec![send(1, BullyMsg::Answer)];
    expected.extend((0..4).map(|n| send(n, BullyMsg::Coordinator)));
    assert_eq!(node.recv(1, BullyMsg::Election), expected);
    assert_eq!(node.bully.state(), BullyState::Coordinator);
}

#[test]
fn a_coordinator_yields_to_a_higher_id() {
    let mut node = Node::started(2);
    node.fire(BullyTimer::AnswerWait);
    assert_eq!(node.bully.state(), BullyState::Coordinator);
    assert_eq!(
        node.recv(3, BullyMsg::Heartbeat),
        vec![
            cancel(BullyTimer::Heartbeat),
            set_timer(BullyTimer::LeaderCheck, 200 * MS),
            follower(Some(3)),
        ]
    );
}

#[test]
fn a_coordinator_bullies_a_lower_claimant() {
    let mut node = Node::started(2);
    node.fire(BullyTimer::AnswerWait);
    assert_eq!(
        node.recv(1, BullyMsg::Coordinator),
        vec![send(1, BullyMsg::Coordinator)]
    );
    assert_eq!(node.bully.state(), BullyState::Coordinator);
}

#[test]
fn a_follower_keeps_the_higher_of_two_coordinators() {
    let mut node = Node::started(1);
    node.recv(4, BullyMsg::Coordinator);
    assert_eq!(node.recv(3, BullyMsg::Heartbeat), vec![]);
    assert_eq!(
        node.bully.state(),
        BullyState::Follower { leader: NodeId(4) }
    );
}

#[test]
fn configure_errors_name_the_field() {
    let error = |json: &str| {
        let params: BullyParams = serde_json::from_str(json).unwrap();
        Bully::configure_named(params, "correct", &Cluster::uniform("node", 3))
            .unwrap_err()
            .field
    };
    assert_eq!(error(r#"{"answer_timeout": "0"}"#), "answer_timeout");
    assert_eq!(
        error(r#"{"coordinator_timeout": "0"}"#),
        "coordinator_timeout"
    );
    assert_eq!(
        error(r#"{"heartbeat_interval": "0"}"#),
        "heartbeat_interval"
    );
    assert_eq!(error(r#"{"leader_timeout": "50ms"}"#), "leader_timeout");
    assert!(serde_json::from_str::<BullyParams>(r#"{"timeout": "1s"}"#).is_err());
    let ok = Bully::configure_named(
        BullyParams::default(),
        "correct",
        &Cluster::uniform("node", 3),
    );
    assert_eq!(ok, Ok(BullyConfig::default()));
    let info = Bully::info();
    assert_eq!((info.name, info.roles[0].name), ("bully", "node"));
    assert_eq!(info.variants.len(), 1);
    assert!(info.variants[0].breaks.is_empty());
}
