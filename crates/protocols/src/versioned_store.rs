//! `versioned-store`: optimistic concurrency as the alternative to locks. A storage node
//! keeps a counter per resource with a version; clients read-modify-write it with
//! compare-and-set (`CAS key expected_version new_value`) and retry from a fresh read
//! when another client's write got in first. No lock, no lease, no lock service.
//!
//! What it promises (variant `correct`): every acknowledged increment is in the final
//! value (`no-lost-update`), whatever the pauses and delays, because a write computed
//! from a stale read carries a stale version and is refused. The cost under contention
//! is retries: the client observes `Custom { name: "retries" }` with each acknowledged
//! increment (how many refused attempts it took), and `Acked` as the lock clients do.
//! The version is the store's own fencing token: Kleppmann, "How to do distributed
//! locking" (2016) notes that a compare-and-set on the data makes the lock unnecessary
//! for correctness. Sources: Kung and Robinson, "On Optimistic Methods for Concurrency
//! Control" (TODS 1981); issue 13 ("optimistic concurrency (versioned objects) as the
//! alternative to locks").
//!
//! Broken variant:
//! * `blind-write`: the store ignores the expected version (a plain `PUT`), so two
//!   clients that read the same value both write, and one increment is lost (breaks
//!   `no-lost-update`).
//!
//! Every write that reaches the store is observed as `Write { token: version }`
//! (accepted or refused), which `no-lost-update` reads.
//!
//! A client also records its operations with Jepsen's conventions, as the lock
//! clients' workload does ([`Observation::Invoke`] / [`Observation::Complete`], key = the
//! resource): the read (ok with the value, info if no reply came) and the
//! compare-and-set, `cas [seen new]` (ok if accepted, fail if refused, info if no reply
//! came); and `Retry { what: resource, attempt }` each time it starts again after a
//! refused or unanswered write. `tenure compare --updates` reads these: an update runs
//! from its first `Invoke` to its `Acked`.

use crate::redis_lock::{check_role_count, the_one};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, NodeId, Observation, OpOutcome, OpValue, ParamError,
    Protocol, ProtocolInfo, RoleInfo, StorageExt, VariantInfo,
};

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    Read {
        op: u64,
        key: String,
    },
    ReadReply {
        op: u64,
        version: u64,
        value: i64,
    },
    /// Write `value` if the version is still `expected`.
    Cas {
        op: u64,
        key: String,
        expected: u64,
        value: i64,
    },
    CasReply {
        op: u64,
        ok: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    Think,
    /// The work between read and write is done.
    Work,
    /// No reply in time: start the read-modify-write again.
    Reply,
    /// The pause after a refused write is over.
    Retry,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    pub storage: NodeId,
    pub resource: String,
    /// `false`: the store ignores the expected version (`blind-write`).
    pub check_version: bool,
    pub amount: i64,
    pub work_duration: Duration,
    pub think_time: (Duration, Duration),
    pub retry_delay: (Duration, Duration),
    pub request_timeout: Duration,
    pub roles: tenure_core::Roles<VersionedStoreRole>,
}

/// The roles of a versioned-store cluster (`Configurable::Role`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum VersionedStoreRole {
    /// The store of versioned cells.
    Storage,
    /// A client doing read-modify-write updates.
    Client,
}

const CELLS_KEY: &str = "versioned/cells";

/// The versioned store: resource -> (version, value), durable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Store {
    check_version: bool,
    cells: BTreeMap<String, (u64, i64)>,
}

impl Store {
    pub fn new(check_version: bool) -> Store {
        Store {
            check_version,
            cells: BTreeMap::new(),
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, msg: Msg) {
        match msg {
            Msg::Read { op, key } => {
                let (version, value) = self.cells.get(&key).copied().unwrap_or((0, 0));
                env.send(from, Msg::ReadReply { op, version, value });
            }
            Msg::Cas {
                op,
                key,
                expected,
                value,
            } => {
                let cell = self.cells.entry(key.clone()).or_insert((0, 0));
                let mut ok = !self.check_version || cell.0 == expected;
                // What the client read, when the store can tell: the version it expects
                // is the current one (a blind write of another version is not judged by
                // the write chain, only by the end-of-run total).
                let based_on = (cell.0 == expected).then_some(cell.1);
                if ok {
                    let before = *cell;
                    *cell = (cell.0 + 1, value);
                    // Durable before it is acknowledged, as a database syncs its log
                    // before replying; a failed sync refuses the write.
                    if env.store_synced(CELLS_KEY, &self.cells).is_err() {
                        self.cells.insert(key.clone(), before);
                        ok = false;
                    }
                }
                let version = self.cells[&key].0;
                env.observe(Observation::Write {
                    resource: key,
                    client: from,
                    token: Some(version),
                    accepted: ok,
                    value,
                    based_on,
                });
                env.send(from, Msg::CasReply { op, ok });
            }
            Msg::ReadReply { .. } | Msg::CasReply { .. } => {}
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Thinking,
    Reading,
    Working,
    Writing,
    BackingOff,
}

/// A client doing read-modify-write with compare-and-set.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    config: Config,
    phase: Phase,
    op: u64,
    read: (u64, i64),
    /// Refused writes of the current increment.
    retries: i64,
    /// Attempts of the current increment started again (refused or unanswered writes).
    attempts: u32,
    /// The open operation, if any: its `f` and the value it was invoked with.
    open: Option<(&'static str, OpValue)>,
}

impl Client {
    pub fn new(config: Config) -> Client {
        Client {
            config,
            phase: Phase::Thinking,
            op: 0,
            read: (0, 0),
            retries: 0,
            attempts: 0,
            open: None,
        }
    }

    fn think(&mut self, env: &mut dyn Env<Msg, Timer>) {
        self.phase = Phase::Thinking;
        let (lo, hi) = self.config.think_time;
        let pause = env.duration_between(lo, hi);
        env.set_timer(Timer::Think, pause);
    }

    /// Records the invocation of operation `f` (see [`Observation::Invoke`]).
    fn invoke(&mut self, env: &mut dyn Env<Msg, Timer>, f: &'static str, value: OpValue) {
        self.open = Some((f, value));
        env.observe(Observation::Invoke {
            f: f.to_string(),
            key: self.config.resource.clone(),
            value,
        });
    }

    /// Records how the open operation ended (`value`: what it returned; `None`: the
    /// invocation's value, as Jepsen's completions repeat it).
    fn complete(
        &mut self,
        env: &mut dyn Env<Msg, Timer>,
        outcome: OpOutcome,
        value: Option<OpValue>,
    ) {
        let Some((f, invoked)) = self.open.take() else {
            return;
        };
        let value = match outcome {
            OpOutcome::Info => OpValue::Nil,
            _ => value.unwrap_or(invoked),
        };
        env.observe(Observation::Complete {
            f: f.to_string(),
            key: self.config.resource.clone(),
            outcome,
            value,
        });
    }

    /// The increment starts again from a fresh read (after a refused or lost write).
    fn retry(&mut self, env: &mut dyn Env<Msg, Timer>) {
        self.attempts += 1;
        env.observe(Observation::Retry {
            what: self.config.resource.clone(),
            attempt: self.attempts,
        });
    }

    fn read(&mut self, env: &mut dyn Env<Msg, Timer>) {
        self.phase = Phase::Reading;
        self.invoke(env, "read", OpValue::Nil);
        self.op += 1;
        env.send(
            self.config.storage,
            Msg::Read {
                op: self.op,
                key: self.config.resource.clone(),
            },
        );
        env.set_timer(Timer::Reply, self.config.request_timeout);
    }

    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, msg: Msg) {
        match msg {
            Msg::ReadReply { op, version, value }
                if op == self.op && self.phase == Phase::Reading =>
            {
                env.cancel_timer(&Timer::Reply);
                self.complete(env, OpOutcome::Ok, Some(OpValue::Int(value)));
                self.read = (version, value);
                self.phase = Phase::Working;
                env.set_timer(Timer::Work, self.config.work_duration);
            }
            Msg::CasReply { op, ok } if op == self.op && self.phase == Phase::Writing => {
                env.cancel_timer(&Timer::Reply);
                let outcome = if ok { OpOutcome::Ok } else { OpOutcome::Fail };
                self.complete(env, outcome, None);
                if ok {
                    self.attempts = 0;
                    env.observe(Observation::Acked {
                        resource: self.config.resource.clone(),
                        amount: self.config.amount,
                    });
                    env.observe(Observation::Custom {
                        name: "retries".into(),
                        value: std::mem::take(&mut self.retries),
                    });
                    self.think(env);
                } else {
                    self.retries += 1;
                    self.retry(env);
                    self.phase = Phase::BackingOff;
                    let (lo, hi) = self.config.retry_delay;
                    let delay = env.duration_between(lo, hi);
                    env.set_timer(Timer::Retry, delay);
                }
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<Msg, Timer>, timer: Timer) {
        match (timer, self.phase) {
            (Timer::Think, Phase::Thinking) | (Timer::Retry, Phase::BackingOff) => self.read(env),
            (Timer::Work, Phase::Working) => {
                self.phase = Phase::Writing;
                let new = self.read.1 + self.config.amount;
                self.invoke(env, "cas", OpValue::Pair(self.read.1, new));
                self.op += 1;
                env.send(
                    self.config.storage,
                    Msg::Cas {
                        op: self.op,
                        key: self.config.resource.clone(),
                        expected: self.read.0,
                        value: self.read.1 + self.config.amount,
                    },
                );
                env.set_timer(Timer::Reply, self.config.request_timeout);
            }
            // A lost reply: the write may or may not have happened; a fresh read tells.
            (Timer::Reply, Phase::Reading) => {
                self.complete(env, OpOutcome::Info, None);
                self.read(env);
            }
            (Timer::Reply, Phase::Writing) => {
                self.complete(env, OpOutcome::Info, None);
                self.retry(env);
                self.read(env);
            }
            _ => {}
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum VersionedStore {
    Storage(Store),
    Client(Box<Client>),
}

impl Protocol for VersionedStore {
    type Msg = Msg;
    type Timer = Timer;
    type Config = Config;

    fn new(config: &Config, me: NodeId, _cluster: &Cluster) -> VersionedStore {
        match config.roles.get(me) {
            VersionedStoreRole::Storage => {
                VersionedStore::Storage(Store::new(config.check_version))
            }
            VersionedStoreRole::Client => {
                VersionedStore::Client(Box::new(Client::new(config.clone())))
            }
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<Msg, Timer>) {
        match self {
            VersionedStore::Storage(s) => s.cells = env.load(CELLS_KEY).unwrap_or_default(),
            VersionedStore::Client(c) => {
                // Operation ids start at a random point, so a reply meant for the process
                // that ran before a crash never matches a request of this one.
                c.op = env.next_u64() >> 1;
                c.think(env);
            }
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, msg: Msg) {
        match self {
            VersionedStore::Storage(s) => s.on_message(env, from, msg),
            VersionedStore::Client(c) => c.on_message(env, msg),
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<Msg, Timer>, timer: Timer) {
        if let VersionedStore::Client(c) = self {
            c.on_timer(env, timer);
        }
    }
}

/// The scenario parameters of `versioned-store`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VersionedStoreParams {
    /// The protected counter's name.
    pub resource: String,
    /// How much each read-modify-write adds.
    pub amount: i64,
    /// How long a client works between its read and its write.
    pub work_duration: HumanDuration,
    pub think_time: [HumanDuration; 2],
    /// The pause before a fresh read after a refused write.
    pub retry_delay: [HumanDuration; 2],
    pub request_timeout: HumanDuration,
}

impl Default for VersionedStoreParams {
    fn default() -> VersionedStoreParams {
        let ms = |n| HumanDuration(Duration::from_millis(n));
        VersionedStoreParams {
            resource: "counter".into(),
            amount: 1,
            work_duration: ms(100),
            think_time: [ms(100), ms(300)],
            retry_delay: [ms(10), ms(50)],
            request_timeout: ms(1_000),
        }
    }
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "versioned-store",
    "optimistic concurrency: read-modify-write with compare-and-set on a versioned store, retry on conflict",
    &[
        RoleInfo::new(
            "storage",
            "the versioned store (a counter and its version per resource)",
            1,
        )
        .with_kind(tenure_core::RoleKind::Resource),
        RoleInfo::new(
            "client",
            "clients: read, work, compare-and-set, retry from a fresh read on conflict",
            3,
        )
        .with_kind(tenure_core::RoleKind::Holder),
    ],
    &[
        VariantInfo::new("correct", "the store writes only if the version is still the one read"),
        VariantInfo::new(
            "blind-write",
            "the store ignores the version (a plain PUT): concurrent increments are lost",
        )
        .with_breaks(&["no-lost-update"]),
    ],
);

/// versioned-store's variants (names as scenarios write them).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum VersionedStoreVariant {
    Correct,
    BlindWrite,
}

impl Configurable for VersionedStore {
    type Params = VersionedStoreParams;
    type Variant = VersionedStoreVariant;
    type Role = VersionedStoreRole;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        p: VersionedStoreParams,
        variant: VersionedStoreVariant,
        cluster: &Cluster,
    ) -> Result<Config, ParamError> {
        let check_version = match variant {
            VersionedStoreVariant::Correct => true,
            VersionedStoreVariant::BlindWrite => false,
        };
        check_role_count(cluster, "storage", 1, 1)?;
        check_role_count(cluster, "client", 1, usize::MAX)?;
        if p.resource.is_empty() {
            return Err(ParamError::new("resource", "must not be empty"));
        }
        if p.request_timeout.0.is_zero() {
            return Err(ParamError::new("request_timeout", "must be above zero"));
        }
        for (name, [lo, hi]) in [("think_time", p.think_time), ("retry_delay", p.retry_delay)] {
            if lo.0 > hi.0 {
                return Err(ParamError::new(name, "the minimum is above the maximum"));
            }
        }
        Ok(Config {
            storage: the_one(cluster, "storage"),
            resource: p.resource,
            check_version,
            amount: p.amount,
            work_duration: p.work_duration.0,
            think_time: (p.think_time[0].0, p.think_time[1].0),
            retry_delay: (p.retry_delay[0].0, p.retry_delay[1].0),
            request_timeout: p.request_timeout.0,
            roles: tenure_core::Roles::of(cluster)?,
        })
    }

    /// What compare-and-set on a version promises: no accepted write is computed from a
    /// stale read.
    fn promises(_config: &Config, _cluster: &Cluster) -> Vec<tenure_core::Promise> {
        vec![tenure_core::Promise::new("no-lost-update")]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis_lock::tests::run_in;
    use crate::testkit::Net;
    use tenure_core::{Effect, RoleSpec};

    fn cluster() -> Cluster {
        Cluster::new(vec![
            RoleSpec::new("storage", 1),
            RoleSpec::new("client", 3),
        ])
        .unwrap()
    }

    fn config(variant: &str) -> Config {
        VersionedStore::configure_named(VersionedStoreParams::default(), variant, &cluster())
            .unwrap()
    }

    fn cas(op: u64, expected: u64, value: i64) -> Msg {
        Msg::Cas {
            op,
            key: "counter".into(),
            expected,
            value,
        }
    }

    fn write(
        client: u32,
        version: u64,
        accepted: bool,
        value: i64,
        based_on: Option<i64>,
    ) -> Effect<Msg, Timer> {
        Effect::Observe(Observation::Write {
            resource: "counter".into(),
            client: NodeId(client),
            token: Some(version),
            accepted,
            value,
            based_on,
        })
    }

    #[test]
    fn cas_writes_only_over_the_version_read_and_blind_writes_do_not_check() {
        let mut s = Store::new(true);
        let step = |s: &mut Store, from: u32, msg: Msg| {
            run_in(&cluster(), s, NodeId(0), 0, 1, |s, env| {
                s.on_message(env, NodeId(from), msg)
            })
        };
        let first = step(&mut s, 1, cas(1, 0, 5));
        assert_eq!(
            first,
            vec![
                Effect::Store {
                    key: CELLS_KEY.into(),
                    value: Some("{\"counter\":[1,5]}".into())
                },
                Effect::Sync { ok: true },
                write(1, 1, true, 5, Some(0)),
                Effect::Send {
                    to: NodeId(1),
                    msg: Msg::CasReply { op: 1, ok: true }
                },
            ]
        );
        // n2 read version 0 too: refused.
        assert_eq!(
            step(&mut s, 2, cas(7, 0, 3)),
            vec![
                write(2, 1, false, 3, None),
                Effect::Send {
                    to: NodeId(2),
                    msg: Msg::CasReply { op: 7, ok: false }
                },
            ]
        );
        let mut blind = Store::new(false);
        step(&mut blind, 1, cas(1, 0, 5));
        let lost = step(&mut blind, 2, cas(7, 0, 3));
        assert_eq!(lost[2], write(2, 2, true, 3, None));
    }

    fn op(invoke: bool, f: &str, outcome: OpOutcome, value: OpValue) -> Effect<Msg, Timer> {
        Effect::Observe(if invoke {
            Observation::Invoke {
                f: f.into(),
                key: "counter".into(),
                value,
            }
        } else {
            Observation::Complete {
                f: f.into(),
                key: "counter".into(),
                outcome,
                value,
            }
        })
    }

    #[test]
    fn a_refused_write_is_retried_from_a_fresh_read_and_the_retries_are_observed() {
        use OpOutcome::{Fail, Ok};
        let mut c = Client::new(config("correct"));
        let step = |c: &mut Client, f: &dyn Fn(&mut Client, &mut dyn Env<Msg, Timer>)| {
            run_in(&cluster(), c, NodeId(1), 0, 1, |c, env| f(c, env))
        };
        let effects = step(&mut c, &|c, env| c.on_timer(env, Timer::Think));
        assert_eq!(effects[0], op(true, "read", Ok, OpValue::Nil));
        let effects = step(&mut c, &|c, env| {
            c.on_message(
                env,
                Msg::ReadReply {
                    op: 1,
                    version: 4,
                    value: 40,
                },
            )
        });
        assert_eq!(effects[1], op(false, "read", Ok, OpValue::Int(40)));
        let effects = step(&mut c, &|c, env| c.on_timer(env, Timer::Work));
        assert_eq!(
            effects[..2],
            [
                op(true, "cas", Ok, OpValue::Pair(40, 41)),
                Effect::Send {
                    to: NodeId(0),
                    msg: Msg::Cas {
                        op: 2,
                        key: "counter".into(),
                        expected: 4,
                        value: 41
                    }
                }
            ]
        );
        let effects = step(&mut c, &|c, env| {
            c.on_message(env, Msg::CasReply { op: 2, ok: false })
        });
        assert!(
            matches!(
                &effects[..],
                [
                    Effect::CancelTimer {
                        timer: Timer::Reply
                    },
                    Effect::Observe(Observation::Complete {
                        outcome: Fail,
                        value: OpValue::Pair(40, 41),
                        ..
                    }),
                    Effect::Observe(Observation::Retry { what, attempt: 1 }),
                    Effect::SetTimer {
                        timer: Timer::Retry,
                        ..
                    }
                ] if what == "counter"
            ),
            "{effects:?}"
        );
        let effects = step(&mut c, &|c, env| c.on_timer(env, Timer::Retry));
        assert_eq!(
            effects[..2],
            [
                op(true, "read", Ok, OpValue::Nil),
                Effect::Send {
                    to: NodeId(0),
                    msg: Msg::Read {
                        op: 3,
                        key: "counter".into()
                    }
                }
            ]
        );
        step(&mut c, &|c, env| {
            c.on_message(
                env,
                Msg::ReadReply {
                    op: 3,
                    version: 5,
                    value: 45,
                },
            )
        });
        step(&mut c, &|c, env| c.on_timer(env, Timer::Work));
        let effects = step(&mut c, &|c, env| {
            c.on_message(env, Msg::CasReply { op: 4, ok: true })
        });
        assert_eq!(
            effects[1..4],
            [
                op(false, "cas", Ok, OpValue::Pair(45, 46)),
                Effect::Observe(Observation::Acked {
                    resource: "counter".into(),
                    amount: 1
                }),
                Effect::Observe(Observation::Custom {
                    name: "retries".into(),
                    value: 1
                }),
            ]
        );
    }

    /// The final value and the number of acknowledged increments after 20s.
    fn run(variant: &str) -> (i64, usize) {
        let mut net = Net::start(config(variant), cluster(), 5);
        net.run_until(Duration::from_secs(20));
        let acked = net
            .records
            .iter()
            .filter(|(_, _, o)| matches!(o, Observation::Acked { .. }))
            .count();
        let VersionedStore::Storage(s) = net.node(0) else {
            unreachable!("node 0 is the storage")
        };
        (s.cells.get("counter").map_or(0, |c| c.1), acked)
    }

    #[test]
    fn with_versions_every_acked_increment_counts_and_blind_writes_lose_some() {
        let (value, acked) = run("correct");
        assert!(acked > 50, "{acked}");
        assert_eq!(value, acked as i64);
        let (value, acked) = run("blind-write");
        assert!(value < acked as i64, "{value} of {acked}");
    }
}
