//! The Bully algorithm: the highest id that is up becomes coordinator, sans-IO.
//!
//! **Promises.** On a reliable network with accurate failure detection, the live node
//! with the highest id ends up coordinator and every other live node follows it: a node
//! that suspects the coordinator (or starts) sends Election to every higher id; any
//! higher node that is up Answers and runs its own election; a node that gets no Answer
//! within `answer_timeout` is the highest one up and broadcasts Coordinator. A
//! coordinator that hears Coordinator or Heartbeat from a higher id yields.
//!
//! **How it fails.** Bully trusts timeouts as failure detection and has no quorum and
//! no terms. Under a partition each side elects its own highest node: two coordinators
//! at once (split brain), by design, not by bug, so there is no broken variant; a
//! scenario shows it. A slow coordinator (a pause, a lossy link) is declared dead and
//! replaced while it still believes it leads.
//!
//! **Observations.** Bully has no terms, so it observes `Leader { term: 0 }` and
//! `Follower { term: 0, leader }` (leader `None` while an election runs), and a
//! coordinator ACTS as such (`Serves { term: 0 }`) when it announces itself and at every
//! heartbeat. The `single-leader-per-term` checker is therefore meaningless here (every
//! leader is in "term 0") and no bully scenario uses it. Bully's single-leadership check
//! is `single-leader-at-a-time`, judged in true time on ACTIONS: two coordinators
//! interleaving their heartbeats. (`single-leader-at-a-time-belief` judges the beliefs;
//! under a pause the paused coordinator believes but does not act.)
//!
//! **Retries.** A node that got an Answer but no Coordinator message in time elects
//! again. With the `backoff` parameter (see [`crate::backoff`]) it first waits as the
//! policy says (observing `Retry { what: "election" }`), so that nodes whose higher
//! peer keeps dying do not re-elect in lockstep; without it (the default) it re-elects
//! at once, as Garcia-Molina's algorithm does.
//!
//! **Sources.** H. Garcia-Molina, "Elections in a Distributed Computing System", IEEE
//! Transactions on Computers C-31(1), 1982; the "highest ID wins" rule of the
//! coordination-patterns article this project was seeded from (its leader-election
//! section).

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod tests;

use crate::backoff::{Backoff, BackoffParams, BackoffPolicy};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, NodeId, Observation, ParamError, Protocol,
    ProtocolInfo, RoleInfo, VariantInfo,
};

static INFO: ProtocolInfo = ProtocolInfo::new(
    "bully",
    "the Bully algorithm: the highest id that is up becomes coordinator",
    &[RoleInfo::new(
        "node",
        "a node that may become coordinator",
        5,
    )],
    &[VariantInfo::new(
        "correct",
        "Garcia-Molina's Bully; split brain under a partition is inherent",
    )],
);

/// Bully's parameters as a scenario's `[protocol.params]` table writes them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BullyParams {
    /// How long an electing node waits for an Answer from a higher id.
    pub answer_timeout: HumanDuration,
    /// How long a node that got an Answer waits for the Coordinator message.
    pub coordinator_timeout: HumanDuration,
    /// How often the coordinator sends Heartbeat to the others.
    pub heartbeat_interval: HumanDuration,
    /// How long a follower waits without a heartbeat before it suspects the coordinator.
    pub leader_timeout: HumanDuration,
    /// How long to wait before electing again when the higher node that answered never
    /// announced itself: `{ policy = "full-jitter", base = "50ms", cap = "1s" }`;
    /// absent: elect again at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff: Option<BackoffParams>,
}

impl Default for BullyParams {
    fn default() -> Self {
        let ms = |n| HumanDuration(Duration::from_millis(n));
        BullyParams {
            answer_timeout: ms(100),
            coordinator_timeout: ms(300),
            heartbeat_interval: ms(50),
            leader_timeout: ms(200),
            backoff: None,
        }
    }
}

/// Bully's checked configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BullyConfig {
    pub answer_timeout: Duration,
    pub coordinator_timeout: Duration,
    pub heartbeat_interval: Duration,
    pub leader_timeout: Duration,
    /// The wait before electing again after a CoordinatorWait timeout.
    pub backoff: BackoffPolicy,
}

impl Default for BullyConfig {
    fn default() -> Self {
        let p = BullyParams::default();
        BullyConfig {
            answer_timeout: p.answer_timeout.0,
            coordinator_timeout: p.coordinator_timeout.0,
            heartbeat_interval: p.heartbeat_interval.0,
            leader_timeout: p.leader_timeout.0,
            backoff: BackoffPolicy::None,
        }
    }
}

/// Checks `params` and resolves them.
pub fn configure(params: BullyParams) -> Result<BullyConfig, ParamError> {
    let config = BullyConfig {
        answer_timeout: params.answer_timeout.0,
        coordinator_timeout: params.coordinator_timeout.0,
        heartbeat_interval: params.heartbeat_interval.0,
        leader_timeout: params.leader_timeout.0,
        backoff: match &params.backoff {
            Some(b) => b.policy()?,
            None => BackoffPolicy::None,
        },
    };
    for (field, value) in [
        ("answer_timeout", config.answer_timeout),
        ("coordinator_timeout", config.coordinator_timeout),
        ("heartbeat_interval", config.heartbeat_interval),
        ("leader_timeout", config.leader_timeout),
    ] {
        if value.is_zero() {
            return Err(ParamError::new(field, "must be more than 0"));
        }
    }
    if config.heartbeat_interval >= config.leader_timeout {
        return Err(ParamError::new(
            "leader_timeout",
            format!(
                "must be above heartbeat_interval {}, or followers suspect a healthy coordinator",
                tenure_core::format_duration(config.heartbeat_interval)
            ),
        ));
    }
    Ok(config)
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BullyMsg {
    /// "I am running an election": sent to every higher id.
    Election,
    /// "I am up and higher than you; I take over": the reply to Election.
    Answer,
    /// "I am the coordinator": sent to everyone by the winner.
    Coordinator,
    /// The coordinator is alive.
    Heartbeat,
}

/// Each state owns exactly one timer (see [`BullyState::timer`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BullyTimer {
    /// Electing: no Answer came in time, so we win.
    AnswerWait,
    /// Awaiting coordinator: the higher node that Answered went quiet; elect again.
    CoordinatorWait,
    /// Coordinator: send the next heartbeat.
    Heartbeat,
    /// Follower: the coordinator went quiet; elect again.
    LeaderCheck,
    /// Backing off: elect again.
    RetryWait,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BullyState {
    /// Built but not yet started.
    Down,
    /// Sent Election to the higher ids; waiting for an Answer.
    Electing,
    /// A higher id Answered; waiting for its Coordinator message.
    AwaitingCoordinator,
    Coordinator,
    Follower {
        leader: NodeId,
    },
    /// The higher node that Answered never announced itself; waiting `after` (the
    /// backoff) before electing again.
    Retrying {
        after: Duration,
    },
}

impl BullyState {
    /// The timer this state runs and for how long.
    fn timer(self, config: &BullyConfig) -> Option<(BullyTimer, Duration)> {
        match self {
            BullyState::Down => None,
            BullyState::Electing => Some((BullyTimer::AnswerWait, config.answer_timeout)),
            BullyState::AwaitingCoordinator => {
                Some((BullyTimer::CoordinatorWait, config.coordinator_timeout))
            }
            BullyState::Coordinator => Some((BullyTimer::Heartbeat, config.heartbeat_interval)),
            BullyState::Follower { .. } => Some((BullyTimer::LeaderCheck, config.leader_timeout)),
            BullyState::Retrying { after } => Some((BullyTimer::RetryWait, after)),
        }
    }
}

/// One Bully node. It keeps nothing on disk: a restarted node simply starts an election.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Bully {
    me: NodeId,
    peers: Vec<NodeId>,
    config: BullyConfig,
    state: BullyState,
    announced: Option<Observation>,
    backoff: Backoff,
}

impl Bully {
    pub fn state(&self) -> BullyState {
        self.state
    }

    fn higher(&self) -> Vec<NodeId> {
        self.peers
            .iter()
            .copied()
            .filter(|p| *p > self.me)
            .collect()
    }

    /// Moves to `state`: stops the old state's timer, (re)starts the new one's, and
    /// observes the belief if it changed.
    fn enter(&mut self, env: &mut dyn Env<BullyMsg, BullyTimer>, state: BullyState) {
        let old = self.state.timer(&self.config).map(|(t, _)| t);
        let new = state.timer(&self.config);
        self.state = state;
        if let Some(old) = old.filter(|o| Some(o) != new.as_ref().map(|(t, _)| t)) {
            env.cancel_timer(&old);
        }
        if let Some((timer, after)) = new {
            env.set_timer(timer, after);
        }
        self.announce(env);
    }

    fn announce(&mut self, env: &mut dyn Env<BullyMsg, BullyTimer>) {
        let obs = match self.state {
            BullyState::Down => return,
            BullyState::Coordinator => Observation::Leader { term: 0 },
            BullyState::Follower { leader } => Observation::Follower {
                term: 0,
                leader: Some(leader),
            },
            BullyState::Electing
            | BullyState::AwaitingCoordinator
            | BullyState::Retrying { .. } => Observation::Follower {
                term: 0,
                leader: None,
            },
        };
        if self.announced.as_ref() != Some(&obs) {
            env.observe(obs.clone());
            self.announced = Some(obs);
        }
    }

    fn broadcast(&self, env: &mut dyn Env<BullyMsg, BullyTimer>, msg: BullyMsg) {
        for peer in &self.peers {
            env.send(*peer, msg.clone());
        }
    }

    fn start_election(&mut self, env: &mut dyn Env<BullyMsg, BullyTimer>) {
        let higher = self.higher();
        if higher.is_empty() {
            self.become_coordinator(env);
            return;
        }
        self.enter(env, BullyState::Electing);
        for node in higher {
            env.send(node, BullyMsg::Election);
        }
    }

    fn become_coordinator(&mut self, env: &mut dyn Env<BullyMsg, BullyTimer>) {
        self.backoff.on_success();
        self.enter(env, BullyState::Coordinator);
        env.observe(Observation::Serves { term: 0 });
        self.broadcast(env, BullyMsg::Coordinator);
    }

    // ----- message handlers -----

    /// A lower id runs an election: bully it, and make sure a coordinator emerges.
    fn on_election(&mut self, env: &mut dyn Env<BullyMsg, BullyTimer>, from: NodeId) {
        if from > self.me {
            return; // Election goes to higher ids only; a confused sender
        }
        env.send(from, BullyMsg::Answer);
        match self.state {
            // Our own election is what would follow; its outcome is known.
            BullyState::Coordinator => self.broadcast(env, BullyMsg::Coordinator),
            BullyState::Electing | BullyState::AwaitingCoordinator => {}
            BullyState::Down | BullyState::Follower { .. } | BullyState::Retrying { .. } => {
                self.start_election(env)
            }
        }
    }

    fn on_answer(&mut self, env: &mut dyn Env<BullyMsg, BullyTimer>, from: NodeId) {
        if self.state == BullyState::Electing && from > self.me {
            self.enter(env, BullyState::AwaitingCoordinator);
        }
    }

    /// Coordinator or Heartbeat from `from`: a claim that `from` leads.
    fn on_claim(&mut self, env: &mut dyn Env<BullyMsg, BullyTimer>, from: NodeId) {
        if from < self.me {
            if self.state == BullyState::Coordinator {
                env.send(from, BullyMsg::Coordinator); // bully the lower claimant
            }
            return;
        }
        if let BullyState::Follower { leader } = self.state {
            if leader > from {
                return; // we follow a higher coordinator; `from` will yield to it
            }
        }
        self.backoff.on_success();
        self.enter(env, BullyState::Follower { leader: from });
    }

    // ----- timer handler -----

    fn on_timeout(&mut self, env: &mut dyn Env<BullyMsg, BullyTimer>, timer: BullyTimer) {
        let current = self.state.timer(&self.config).map(|(t, _)| t);
        if current != Some(timer.clone()) {
            return; // left the state that set it
        }
        match timer {
            BullyTimer::AnswerWait => self.become_coordinator(env),
            BullyTimer::CoordinatorWait if self.config.backoff != BackoffPolicy::None => {
                let after = self.backoff.on_failure(env);
                env.observe(Observation::Retry {
                    what: "election".to_string(),
                    attempt: self.backoff.failures(),
                });
                self.enter(env, BullyState::Retrying { after });
            }
            BullyTimer::CoordinatorWait | BullyTimer::LeaderCheck | BullyTimer::RetryWait => {
                self.start_election(env)
            }
            BullyTimer::Heartbeat => {
                // The coordinator acts as such: it issues a command (its heartbeat).
                env.observe(Observation::Serves { term: 0 });
                self.broadcast(env, BullyMsg::Heartbeat);
                env.set_timer(BullyTimer::Heartbeat, self.config.heartbeat_interval);
            }
        }
    }
}

impl Protocol for Bully {
    type Msg = BullyMsg;
    type Timer = BullyTimer;
    type Config = BullyConfig;

    fn new(config: &BullyConfig, me: NodeId, cluster: &Cluster) -> Bully {
        Bully {
            me,
            peers: cluster.peers(me).collect(),
            config: *config,
            state: BullyState::Down,
            announced: None,
            backoff: Backoff::new(config.backoff),
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<BullyMsg, BullyTimer>) {
        assert_eq!(self.state, BullyState::Down, "started twice");
        self.start_election(env);
    }

    fn on_message(&mut self, env: &mut dyn Env<BullyMsg, BullyTimer>, from: NodeId, msg: BullyMsg) {
        if self.state == BullyState::Down {
            return;
        }
        match msg {
            BullyMsg::Election => self.on_election(env, from),
            BullyMsg::Answer => self.on_answer(env, from),
            BullyMsg::Coordinator | BullyMsg::Heartbeat => self.on_claim(env, from),
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<BullyMsg, BullyTimer>, timer: BullyTimer) {
        self.on_timeout(env, timer);
    }
}

/// bully's variants: only the correct one (its lesson is in the scenarios' faults).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum BullyVariant {
    Correct,
}

impl Configurable for Bully {
    type Params = BullyParams;
    type Variant = BullyVariant;
    type Role = tenure_core::roles::Node;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: BullyParams,
        variant: BullyVariant,
        _cluster: &Cluster,
    ) -> Result<BullyConfig, ParamError> {
        let BullyVariant::Correct = variant;
        configure(params)
    }

    fn promises(config: &BullyConfig, _cluster: &Cluster) -> Vec<tenure_core::Promise> {
        use tenure_core::{format_duration as f, Promise};
        // After the calm the highest live node notices a dead or missing leader within
        // `leader_timeout` and an election round takes `answer_timeout` +
        // `coordinator_timeout`; a round that a higher node interrupts restarts once per
        // node above, so three rounds cover a restart racing the election.
        let round = config.leader_timeout + config.answer_timeout + config.coordinator_timeout;
        let within = (round * 3 + config.heartbeat_interval) * 2;
        let bound = format!(
            "(3 x (leader timeout {} + answer timeout {} + coordinator timeout {}) + heartbeat {}) / (1 - max drift 0.5)",
            f(config.leader_timeout),
            f(config.answer_timeout),
            f(config.coordinator_timeout),
            f(config.heartbeat_interval)
        );
        // A coordinator that takes over announces itself; the one it replaces acts
        // until the announcement reaches it: one message delay, at most half the answer
        // timeout (the bully algorithm's wait for a round trip).
        let delay = config.answer_timeout / 2;
        vec![
            Promise::new("single-leader-at-a-time").overlap(
                delay,
                format!(
                    "one message delay for the announcement: answer timeout {} / 2 (a round trip)",
                    f(config.answer_timeout)
                ),
            ),
            Promise::new("leader-liveness").within(within, bound),
        ]
    }

    fn assumptions(config: &BullyConfig) -> tenure_core::Assumptions {
        use tenure_core::format_duration as f;
        // A synchronous system also means no process stops for longer than the others
        // wait for it: a coordinator paused past a follower's leader timeout (on a clock
        // up to 1.5x fast) looks dead, a lower node takes over, and the coordinator
        // acts again when it resumes. Half of what the heartbeat leaves is kept for
        // message delays.
        let wait = config.leader_timeout.mul_f64(1.0 / 1.5);
        let max_pause = wait.saturating_sub(config.heartbeat_interval) / 2;
        let max_pause = Duration::from_millis(max_pause.as_millis() as u64);
        tenure_core::Assumptions::new()
            .with_max_latency(tenure_core::Limit::new(
                config.answer_timeout / 2,
                format!(
                    "a synchronous system: the answer timeout {} waits for a round trip",
                    f(config.answer_timeout)
                ),
            ))
            .with_max_pause(tenure_core::Limit::new(
                max_pause,
                format!(
                    "a synchronous system: a coordinator must not stop for longer than its \
                     followers wait, (leader timeout {} / (1 + max drift 0.5) - heartbeat {}) / 2",
                    f(config.leader_timeout),
                    f(config.heartbeat_interval)
                ),
            ))
            .with_reliable_network(
                "the bully algorithm assumes a synchronous system: a partition or a lost \
                 message makes a live leader look dead (Garcia-Molina 1982)",
            )
            .with_max_drift(tenure_core::Limit::new(
                0.5,
                "timeouts only detect failures; the liveness bound allows timers up to 2x slow",
            ))
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        use tenure_core::model::{Bounds, ModelSpec, TimerModel};
        Ok(ModelSpec::new(
            "elections with timeouts that are longer than any round trip (timers fire \
             only when no message is in flight); a lost message or a free timer \
             order makes a wrong failure detector",
            &[("node", 3)],
        )
        .with_bounds(Bounds::DEFAULT.with_timers(TimerModel::Quiet))
        .with_checks(&["one-leader-at-a-time"]))
    }
}
