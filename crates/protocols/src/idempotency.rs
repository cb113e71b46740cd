//! `idempotency`: a payment-like service made safe to retry with idempotency keys.
//! Sources: seed 003 ("Idempotency Example: Payment Processing": a unique transaction
//! ID makes a retried payment happen once); Stripe's API docs, "Idempotent requests";
//! Brandur Leach, "Implementing Stripe-like Idempotency Keys in Postgres" (2017), on
//! recording the key and the effect in one transaction.
//!
//! Clients issue operations, each with a fresh key (`Requested`), and retry on a
//! timeout with exponential backoff and jitter, because the network may lose or
//! duplicate requests and replies. A client persists its pending key before sending,
//! so a restarted client retries the same key. The service applies each key's effect
//! (`Applied`, e.g. charging a card) and remembers the result durably; a retry of a
//! known key gets the remembered result and no second effect. A client observes
//! `Completed` when it learns the outcome.
//!
//! What it promises (correct): every key's effect happens at most once, and exactly
//! once for every key whose client was told it succeeded, whatever the network loses
//! or duplicates and however often the service crashes or loses power.
//!
//! How (correct), after Brandur Leach's design (the key row is inserted and locked in
//! one transaction before the work, the effect and the result are committed with it,
//! and a request that died mid-way leaves the key "in flight"), and Stripe's rule
//! that a retried key gets the result saved for it, an error included:
//! 1. a new key is first recorded durably as `Started` (store + sync) *before* its
//!    effect: a crash before that sync completes leaves no trace and no effect, so
//!    the retry applies it once;
//! 2. the effect (`Applied`), then its result `Done { ok }` is stored and synced, and
//!    only then is the client answered `ok`;
//! 3. a retry of a `Done` key gets the saved result; a retry of a key left `Started`
//!    by a crash (its effect may or may not have happened: the crash hit between the
//!    two syncs) is answered with an error, never applied again.
//!
//! Every crash point lands in one of those cases, so no key is applied twice and no
//! client is told `ok` for an effect that did not happen. (Observing `Applied` in the
//! same step as one synced record cannot do that: a crash point between the effect
//! and the record's sync applied one key twice, chaos seed 199; see the test
//! `chaos_seed_199_crash_point_between_effect_and_record_applies_once`.)
//!
//! Broken variants:
//! * `no-key`: the service ignores the key; every delivered copy of a request (a retry
//!   or a network duplicate) is applied again. Breaks exactly-once.
//! * `key-after-effect`: the service applies the effect, then records the key only
//!   after `processing_delay` (a timer: the rest of the request's processing). A crash
//!   in that window forgets the key; the client's retry applies the effect a second
//!   time. Breaks exactly-once.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, NodeId, Observation, ParamError, Protocol,
    ProtocolInfo, RoleInfo, StorageExt, VariantInfo,
};

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    /// Do the operation identified by `key` (every retry carries the same key).
    Request { key: String },
    /// The outcome of `key`.
    Reply { key: String, ok: bool },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    /// Client: thinking is over, issue the next operation.
    Think,
    /// Client: no reply in time, send the request again.
    Retry,
    /// Service (`key-after-effect`): processing of `key` is done, record it.
    Record { key: String },
}

/// How the service deduplicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dedup {
    /// Key and effect in one atomic handler.
    Atomic,
    /// No deduplication at all.
    None,
    /// Effect first, key recorded `processing_delay` later.
    KeyAfterEffect,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IdempotencyConfig {
    pub dedup: Dedup,
    /// How many operations each client issues.
    pub operations: u32,
    pub request_timeout: Duration,
    /// Jitter added to every retry timeout, drawn uniformly.
    pub retry_backoff: (Duration, Duration),
    pub think_time: (Duration, Duration),
    pub processing_delay: Duration,
    pub roles: tenure_core::Roles<IdempotencyRole>,
}

/// The roles of an idempotency cluster (`Configurable::Role`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum IdempotencyRole {
    /// The service that applies effects and remembers keys.
    Service,
    /// A client that retries its operations.
    Client,
}

/// The retry timeout doubles with each attempt, up to this many doublings.
const MAX_DOUBLINGS: u32 = 4;

fn result_key(key: &str) -> String {
    format!("idem/result/{key}")
}

/// What the correct service records durably for a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum KeyRecord {
    /// Recorded before the effect; still there after a restart: the request died
    /// between its two syncs (its effect may or may not have happened).
    Started,
    /// The effect happened and this is its result.
    Done { ok: bool },
}

/// The payment-like service.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Service {
    dedup: Dedup,
    processing_delay: Duration,
    /// Keys applied but not yet recorded (`key-after-effect`), with who asked. Volatile.
    processing: BTreeMap<String, NodeId>,
}

impl Service {
    fn on_request(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, key: String) {
        match self.dedup {
            Dedup::None => {
                env.observe(Observation::Applied { key: key.clone() });
                env.send(from, Msg::Reply { key, ok: true });
            }
            Dedup::Atomic => {
                let record = result_key(&key);
                let ok = match env.load::<KeyRecord>(&record) {
                    Some(KeyRecord::Done { ok }) => ok,
                    // Left by a request that died between its syncs: answered with an
                    // error (Stripe saves and replays a failed request's error), never
                    // applied again.
                    Some(KeyRecord::Started) => false,
                    None => {
                        // The key first, durably: no effect without it.
                        if env.store_synced(&record, &KeyRecord::Started).is_err() {
                            return;
                        }
                        env.observe(Observation::Applied { key: key.clone() });
                        // The result, durably, before the client hears `ok`; a failed
                        // sync answers nothing (a retry reads the result back).
                        if env
                            .store_synced(&record, &KeyRecord::Done { ok: true })
                            .is_err()
                        {
                            return;
                        }
                        true
                    }
                };
                env.send(from, Msg::Reply { key, ok });
            }
            Dedup::KeyAfterEffect => {
                if let Some(ok) = env.load::<bool>(&result_key(&key)) {
                    env.send(from, Msg::Reply { key, ok });
                } else if !self.processing.contains_key(&key) {
                    env.observe(Observation::Applied { key: key.clone() });
                    self.processing.insert(key.clone(), from);
                    env.set_timer(Timer::Record { key }, self.processing_delay);
                }
                // Else a retry while processing: the reply goes out when it is done.
            }
        }
    }

    fn on_record(&mut self, env: &mut dyn Env<Msg, Timer>, key: String) {
        let Some(from) = self.processing.remove(&key) else {
            return;
        };
        if env.store_synced(&result_key(&key), &true).is_err() {
            return;
        }
        env.send(from, Msg::Reply { key, ok: true });
    }
}

/// What a client keeps durably.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct ClientRecord {
    next_seq: u64,
    pending: Option<String>,
}

const CLIENT_KEY: &str = "idem/client";

/// A client issuing operations and retrying them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    me: NodeId,
    service: NodeId,
    config: IdempotencyConfig,
    record: ClientRecord,
    attempt: u32,
    /// The record is synced as it is now (sends wait for that).
    synced: bool,
}

impl Client {
    fn on_start(&mut self, env: &mut dyn Env<Msg, Timer>) {
        self.record = env.load(CLIENT_KEY).unwrap_or_default();
        if self.record.pending.is_some() {
            // Restarted with an operation in flight: retry it under the same key.
            self.send_pending(env);
        } else {
            self.think(env);
        }
    }

    fn think(&mut self, env: &mut dyn Env<Msg, Timer>) {
        if self.record.next_seq < u64::from(self.config.operations) {
            let (lo, hi) = self.config.think_time;
            let pause = env.duration_between(lo, hi);
            env.set_timer(Timer::Think, pause);
        }
    }

    fn on_think(&mut self, env: &mut dyn Env<Msg, Timer>) {
        if self.record.pending.is_some() {
            return;
        }
        let key = format!("{}-{}", self.me, self.record.next_seq);
        self.record.next_seq += 1;
        self.record.pending = Some(key.clone());
        self.synced = false;
        env.observe(Observation::Requested { key });
        self.attempt = 0;
        self.send_pending(env);
    }

    /// Sends the pending operation, its record synced first: a key sent and then lost
    /// to a power loss would be issued again for another operation, which the service
    /// would take for a retry of the first. A failed sync sends nothing; the retry
    /// timer tries again.
    fn send_pending(&mut self, env: &mut dyn Env<Msg, Timer>) {
        let key = self.record.pending.clone().expect("an operation in flight");
        if !self.synced {
            if env.store_synced(CLIENT_KEY, &self.record).is_err() {
                env.set_timer(Timer::Retry, self.config.request_timeout);
                return;
            }
            self.synced = true;
        }
        env.send(self.service, Msg::Request { key });
        let doublings = self.attempt.min(MAX_DOUBLINGS);
        let (lo, hi) = self.config.retry_backoff;
        let timeout = self.config.request_timeout * (1 << doublings) + env.duration_between(lo, hi);
        env.set_timer(Timer::Retry, timeout);
    }

    fn on_retry(&mut self, env: &mut dyn Env<Msg, Timer>) {
        if self.record.pending.is_some() {
            self.attempt += 1;
            self.send_pending(env);
        }
    }

    fn on_reply(&mut self, env: &mut dyn Env<Msg, Timer>, key: String, ok: bool) {
        if self.record.pending.as_ref() != Some(&key) {
            return; // A duplicate or a reply to an earlier operation.
        }
        self.record.pending = None;
        self.synced = false;
        env.store(CLIENT_KEY, &self.record);
        env.cancel_timer(&Timer::Retry);
        env.observe(Observation::Completed { key, ok });
        self.think(env);
    }
}

/// An idempotency node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Idempotency {
    Service(Service),
    Client(Client),
}

impl Protocol for Idempotency {
    type Msg = Msg;
    type Timer = Timer;
    type Config = IdempotencyConfig;

    fn new(config: &IdempotencyConfig, me: NodeId, cluster: &Cluster) -> Idempotency {
        match config.roles.get(me) {
            IdempotencyRole::Service => Idempotency::Service(Service {
                dedup: config.dedup,
                processing_delay: config.processing_delay,
                processing: BTreeMap::new(),
            }),
            IdempotencyRole::Client => Idempotency::Client(Client {
                me,
                service: cluster
                    .with_role("service")
                    .next()
                    .expect("configure checked there is a service"),
                config: config.clone(),
                record: ClientRecord::default(),
                attempt: 0,
                synced: false,
            }),
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<Msg, Timer>) {
        if let Idempotency::Client(c) = self {
            c.on_start(env);
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, msg: Msg) {
        match (self, msg) {
            (Idempotency::Service(s), Msg::Request { key }) => s.on_request(env, from, key),
            (Idempotency::Client(c), Msg::Reply { key, ok }) => c.on_reply(env, key, ok),
            _ => {}
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<Msg, Timer>, timer: Timer) {
        match (self, timer) {
            (Idempotency::Service(s), Timer::Record { key }) => s.on_record(env, key),
            (Idempotency::Client(c), Timer::Think) => c.on_think(env),
            (Idempotency::Client(c), Timer::Retry) => c.on_retry(env),
            _ => {}
        }
    }
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IdempotencyParams {
    /// How many operations each client issues.
    pub operations: u32,
    /// The first retry timeout; it doubles with each retry (up to 16×).
    pub request_timeout: HumanDuration,
    /// Jitter added to every retry timeout.
    pub retry_backoff: [HumanDuration; 2],
    pub think_time: [HumanDuration; 2],
    /// `key-after-effect`: how long after the effect the key is recorded.
    pub processing_delay: HumanDuration,
}

impl Default for IdempotencyParams {
    fn default() -> IdempotencyParams {
        let ms = |n| HumanDuration(Duration::from_millis(n));
        IdempotencyParams {
            operations: 20,
            request_timeout: ms(200),
            retry_backoff: [ms(0), ms(100)],
            think_time: [ms(50), ms(200)],
            processing_delay: ms(500),
        }
    }
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "idempotency",
    "a payment-like service that applies each idempotency key once, under retries",
    &[
        RoleInfo::new("service", "the payment-like service", 1),
        RoleInfo::new(
            "client",
            "clients issuing keyed operations and retrying them",
            3,
        )
        .with_kind(tenure_core::RoleKind::Holder),
    ],
    &[
        VariantInfo::new(
            "correct",
            "the key and the effect are recorded in one atomic handler",
        ),
        VariantInfo::new(
            "no-key",
            "every delivered request is applied: retries and duplicates charge again",
        )
        .with_breaks(&["exactly-once"]),
        VariantInfo::new(
            "key-after-effect",
            "the key is recorded after the effect: a crash in between charges again on retry",
        )
        .with_breaks(&["exactly-once"]),
    ],
);

/// idempotency's variants (names as scenarios write them).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum IdempotencyVariant {
    Correct,
    NoKey,
    KeyAfterEffect,
}

impl Configurable for Idempotency {
    type Params = IdempotencyParams;
    type Variant = IdempotencyVariant;
    type Role = IdempotencyRole;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: IdempotencyParams,
        variant: IdempotencyVariant,
        cluster: &Cluster,
    ) -> Result<IdempotencyConfig, ParamError> {
        let dedup = match variant {
            IdempotencyVariant::Correct => Dedup::Atomic,
            IdempotencyVariant::NoKey => Dedup::None,
            IdempotencyVariant::KeyAfterEffect => Dedup::KeyAfterEffect,
        };
        if cluster.count("service") != 1 {
            return Err(ParamError::new(
                "cluster.roles.service",
                format!(
                    "needs exactly 1 `service` node, got {}",
                    cluster.count("service")
                ),
            ));
        }
        if params.request_timeout.0.is_zero() {
            return Err(ParamError::new("request_timeout", "must be above zero"));
        }
        for (field, [lo, hi]) in [
            ("retry_backoff", params.retry_backoff),
            ("think_time", params.think_time),
        ] {
            if lo > hi {
                return Err(ParamError::new(field, "the minimum is above the maximum"));
            }
        }
        Ok(IdempotencyConfig {
            dedup,
            operations: params.operations,
            request_timeout: params.request_timeout.0,
            retry_backoff: (params.retry_backoff[0].0, params.retry_backoff[1].0),
            think_time: (params.think_time[0].0, params.think_time[1].0),
            processing_delay: params.processing_delay.0,
            roles: tenure_core::Roles::of(cluster)?,
        })
    }

    fn promises(_config: &IdempotencyConfig, _cluster: &Cluster) -> Vec<tenure_core::Promise> {
        vec![tenure_core::Promise::new("exactly-once")]
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        use tenure_core::model::{Bounds, ClockModel, ModelSpec};
        Ok(ModelSpec::new(
            "one service, one client issuing one operation and retrying on its timer; \
             a crash of the service and a duplicated message",
            &[("service", 1), ("client", 1)],
        )
        .with_bounds(
            Bounds::DEFAULT
                .with_max_depth(40)
                .with_max_crashes(1)
                .with_max_duplicates(1)
                .with_clock(ClockModel::Frozen),
        )
        .with_checks(&["exactly-once"])
        .with_params(r#"{ "operations": 1 }"#)
        .with_walk_params(r#"{ "operations": 3 }"#))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenure_core::{Effect, LocalTime, Rng, RoleSpec, SplitMix64, Step, StepHost, StorageMap};

    const SERVICE: NodeId = NodeId(0);
    const CLIENT: NodeId = NodeId(1);

    fn cluster() -> Cluster {
        Cluster::new(vec![
            RoleSpec::new("service", 1),
            RoleSpec::new("client", 2),
        ])
        .unwrap()
    }

    fn node(variant: &str, me: NodeId) -> Idempotency {
        let config =
            Idempotency::configure_named(IdempotencyParams::default(), variant, &cluster())
                .unwrap();
        Idempotency::new(&config, me, &cluster())
    }

    /// Runs `f` on `node` as `me` with the given durable storage; returns the effects.
    fn run(
        node: &mut Idempotency,
        me: NodeId,
        storage: &mut StorageMap,
        f: impl FnOnce(&mut Idempotency, &mut dyn Env<Msg, Timer>),
    ) -> Vec<Effect<Msg, Timer>> {
        let cluster = cluster();
        let mut rng = SplitMix64(1);
        let mut step = Step::new(me, &cluster, LocalTime(0), LocalTime(0), storage, &mut rng);
        f(node, &mut step);
        step.effects
    }

    fn request(key: &str) -> Msg {
        Msg::Request { key: key.into() }
    }

    fn applied(key: &str) -> Effect<Msg, Timer> {
        Effect::Observe(Observation::Applied { key: key.into() })
    }

    fn reply(key: &str) -> Effect<Msg, Timer> {
        Effect::Send {
            to: CLIENT,
            msg: Msg::Reply {
                key: key.into(),
                ok: true,
            },
        }
    }

    #[test]
    fn correct_applies_and_records_a_key_once() {
        let mut s = node("correct", SERVICE);
        let mut st = StorageMap::new();
        let first = run(&mut s, SERVICE, &mut st, |s, env| {
            s.on_message(env, CLIENT, request("k"))
        });
        assert_eq!(
            first,
            vec![
                Effect::Store {
                    key: "idem/result/k".into(),
                    value: Some(r#""started""#.into())
                },
                Effect::Sync { ok: true },
                applied("k"),
                Effect::Store {
                    key: "idem/result/k".into(),
                    value: Some(r#"{"done":{"ok":true}}"#.into())
                },
                Effect::Sync { ok: true },
                reply("k"),
            ]
        );
        // A retry, even after a crash and restart, gets the recorded result only.
        let mut restarted = node("correct", SERVICE);
        run(&mut restarted, SERVICE, &mut st, |s, env| s.on_start(env));
        let retry = run(&mut restarted, SERVICE, &mut st, |s, env| {
            s.on_message(env, CLIENT, request("k"))
        });
        assert_eq!(retry, vec![reply("k")]);
    }

    #[test]
    fn no_key_applies_every_copy() {
        let mut s = node("no-key", SERVICE);
        let mut st = StorageMap::new();
        for _ in 0..2 {
            let effects = run(&mut s, SERVICE, &mut st, |s, env| {
                s.on_message(env, CLIENT, request("k"))
            });
            assert_eq!(effects, vec![applied("k"), reply("k")]);
        }
    }

    #[test]
    fn key_after_effect_records_late_and_forgets_on_a_crash() {
        let mut s = node("key-after-effect", SERVICE);
        let mut st = StorageMap::new();
        let first = run(&mut s, SERVICE, &mut st, |s, env| {
            s.on_message(env, CLIENT, request("k"))
        });
        assert_eq!(
            first,
            vec![
                applied("k"),
                Effect::SetTimer {
                    timer: Timer::Record { key: "k".into() },
                    after: Duration::from_millis(500)
                },
            ]
        );
        // A retry while processing is not applied again.
        let dup = run(&mut s, SERVICE, &mut st, |s, env| {
            s.on_message(env, CLIENT, request("k"))
        });
        assert!(dup.is_empty());
        // A crash in the window: the fresh process applies the retry again.
        let mut restarted = node("key-after-effect", SERVICE);
        let again = run(&mut restarted, SERVICE, &mut st, |s, env| {
            s.on_message(env, CLIENT, request("k"))
        });
        assert_eq!(again[0], applied("k"));
        // Without the crash, the record timer stores the key and replies.
        let done = run(&mut s, SERVICE, &mut st, |s, env| {
            s.on_timer(env, Timer::Record { key: "k".into() })
        });
        assert_eq!(
            done,
            vec![
                Effect::Store {
                    key: "idem/result/k".into(),
                    value: Some("true".into())
                },
                Effect::Sync { ok: true },
                reply("k"),
            ]
        );
    }

    /// Chaos seed 199 (`tenure fuzz --protocol idempotency --profile chaos`): a power
    /// loss armed as a crash point landed between the effect and the sync of its key
    /// record, and the client's retry applied the key a second time. Every crash point
    /// of the first request's handling, a process crash (unsynced writes survive) or a
    /// power loss (only synced writes survive), followed by a restart and the retry:
    /// the key is applied at most once, and once if the client is told `ok`.
    #[test]
    fn chaos_seed_199_crash_point_between_effect_and_record_applies_once() {
        let mut s = node("correct", SERVICE);
        let mut st = StorageMap::new();
        let first = run(&mut s, SERVICE, &mut st, |s, env| {
            s.on_message(env, CLIENT, request("k"))
        });
        let is_applied = |e: &Effect<Msg, Timer>| *e == applied("k");
        let ok_reply = |effects: &[Effect<Msg, Timer>]| effects.iter().any(|e| *e == reply("k"));
        for cut in 0..=first.len() {
            for power in [false, true] {
                // The disk after the crash point fires before effect `cut`.
                let (mut durable, mut unsynced) = (StorageMap::new(), StorageMap::new());
                for e in &first[..cut] {
                    match e {
                        Effect::Store { key, value } => {
                            unsynced.insert(key.clone(), value.clone().unwrap());
                        }
                        Effect::Sync { ok: true } => durable.append(&mut unsynced),
                        _ => {}
                    }
                }
                if !power {
                    durable.append(&mut unsynced);
                }
                let mut applied_count = first[..cut].iter().filter(|e| is_applied(e)).count();
                let mut told_ok = ok_reply(&first[..cut]);
                let mut restarted = node("correct", SERVICE);
                run(&mut restarted, SERVICE, &mut durable, |s, env| {
                    s.on_start(env)
                });
                for _ in 0..2 {
                    let retry = run(&mut restarted, SERVICE, &mut durable, |s, env| {
                        s.on_message(env, CLIENT, request("k"))
                    });
                    applied_count += retry.iter().filter(|e| is_applied(e)).count();
                    told_ok |= ok_reply(&retry);
                }
                let at = format!("crash point before effect {cut}, power loss {power}");
                assert!(applied_count <= 1, "{at}: applied {applied_count} times");
                assert!(
                    !told_ok || applied_count == 1,
                    "{at}: told ok, never applied"
                );
            }
        }
        // (The broken variants are the negative controls of `exactly-once`: `no-key`
        // and `key-after-effect`, whose crash window this test's loop would hit.)
    }

    /// [`run`] on a host whose syncs fail (a disk error).
    fn run_failing(
        node: &mut Idempotency,
        host: &mut StepHost,
        f: impl FnOnce(&mut Idempotency, &mut dyn Env<Msg, Timer>),
    ) -> Vec<Effect<Msg, Timer>> {
        host.sync_fails = true;
        let mut step = host.step();
        f(node, &mut step);
        step.effects
    }

    #[test]
    fn correct_sends_no_reply_when_the_key_record_fails_to_sync() {
        let mut s = node("correct", SERVICE);
        let mut host = StepHost::new(SERVICE, &cluster());
        let effects = run_failing(&mut s, &mut host, |s, env| {
            s.on_message(env, CLIENT, request("k"))
        });
        assert_eq!(
            effects,
            vec![
                Effect::Store {
                    key: "idem/result/k".into(),
                    value: Some(r#""started""#.into())
                },
                Effect::Sync { ok: false },
            ],
            "no effect and no reply rest on an unsynced key"
        );
        assert!(host.durable.is_empty());
        // Control: the same request on a working disk is answered.
        let mut s = node("correct", SERVICE);
        let mut host = StepHost::new(SERVICE, &cluster());
        let mut step = host.step();
        s.on_message(&mut step, CLIENT, request("k"));
        assert_eq!(step.effects.last(), Some(&reply("k")));
    }

    #[test]
    fn key_after_effect_sends_no_reply_when_the_late_record_fails_to_sync() {
        let mut s = node("key-after-effect", SERVICE);
        let mut st = StorageMap::new();
        run(&mut s, SERVICE, &mut st, |s, env| {
            s.on_message(env, CLIENT, request("k"))
        });
        let mut host = StepHost::new(SERVICE, &cluster());
        host.storage = st;
        let effects = run_failing(&mut s, &mut host, |s, env| {
            s.on_timer(env, Timer::Record { key: "k".into() })
        });
        assert_eq!(
            effects,
            vec![
                Effect::Store {
                    key: "idem/result/k".into(),
                    value: Some("true".into())
                },
                Effect::Sync { ok: false },
            ]
        );
    }

    #[test]
    fn client_persists_its_key_before_requesting_then_retries_with_backoff() {
        let mut c = node("correct", CLIENT);
        let mut st = StorageMap::new();
        let effects = run(&mut c, CLIENT, &mut st, |c, env| {
            c.on_timer(env, Timer::Think)
        });
        let jitter = SplitMix64(1).duration_between(Duration::ZERO, Duration::from_millis(100));
        assert_eq!(
            effects,
            vec![
                Effect::Observe(Observation::Requested { key: "n1-0".into() }),
                Effect::Store {
                    key: CLIENT_KEY.into(),
                    value: Some(r#"{"next_seq":1,"pending":"n1-0"}"#.into())
                },
                Effect::Sync { ok: true },
                Effect::Send {
                    to: SERVICE,
                    msg: request("n1-0")
                },
                Effect::SetTimer {
                    timer: Timer::Retry,
                    after: Duration::from_millis(200) + jitter
                },
            ]
        );
        let retry = run(&mut c, CLIENT, &mut st, |c, env| {
            c.on_timer(env, Timer::Retry)
        });
        assert_eq!(
            retry,
            vec![
                Effect::Send {
                    to: SERVICE,
                    msg: request("n1-0")
                },
                Effect::SetTimer {
                    timer: Timer::Retry,
                    after: Duration::from_millis(400) + jitter
                },
            ]
        );
    }

    #[test]
    fn client_completes_once_and_ignores_duplicate_replies() {
        let mut c = node("correct", CLIENT);
        let mut st = StorageMap::new();
        run(&mut c, CLIENT, &mut st, |c, env| {
            c.on_timer(env, Timer::Think)
        });
        let reply = Msg::Reply {
            key: "n1-0".into(),
            ok: true,
        };
        let effects = run(&mut c, CLIENT, &mut st, |c, env| {
            c.on_message(env, SERVICE, reply.clone())
        });
        assert_eq!(
            effects[..3],
            [
                Effect::Store {
                    key: CLIENT_KEY.into(),
                    value: Some(r#"{"next_seq":1,"pending":null}"#.into())
                },
                Effect::CancelTimer {
                    timer: Timer::Retry
                },
                Effect::Observe(Observation::Completed {
                    key: "n1-0".into(),
                    ok: true
                }),
            ]
        );
        assert!(matches!(
            effects[3],
            Effect::SetTimer {
                timer: Timer::Think,
                ..
            }
        ));
        assert!(run(&mut c, CLIENT, &mut st, |c, env| c
            .on_message(env, SERVICE, reply))
        .is_empty());
    }

    #[test]
    fn restarted_client_retries_its_pending_key() {
        let mut c = node("correct", CLIENT);
        let mut st = StorageMap::new();
        run(&mut c, CLIENT, &mut st, |c, env| {
            c.on_timer(env, Timer::Think)
        });
        let mut restarted = node("correct", CLIENT);
        let effects = run(&mut restarted, CLIENT, &mut st, |c, env| c.on_start(env));
        assert_eq!(effects[1], Effect::Sync { ok: true });
        assert_eq!(
            effects[2],
            Effect::Send {
                to: SERVICE,
                msg: request("n1-0")
            }
        );
        // The next operation gets a fresh key.
        let done = Msg::Reply {
            key: "n1-0".into(),
            ok: true,
        };
        run(&mut restarted, CLIENT, &mut st, |c, env| {
            c.on_message(env, SERVICE, done)
        });
        let next = run(&mut restarted, CLIENT, &mut st, |c, env| {
            c.on_timer(env, Timer::Think)
        });
        assert_eq!(
            next[0],
            Effect::Observe(Observation::Requested { key: "n1-1".into() })
        );
    }

    #[test]
    fn client_stops_after_its_operations() {
        let params = IdempotencyParams {
            operations: 0,
            ..IdempotencyParams::default()
        };
        let config = Idempotency::configure_named(params, "correct", &cluster()).unwrap();
        let mut c = Idempotency::new(&config, CLIENT, &cluster());
        let mut st = StorageMap::new();
        assert!(run(&mut c, CLIENT, &mut st, |c, env| c.on_start(env)).is_empty());
    }

    #[test]
    fn params_and_info() {
        assert!(serde_json::from_str::<IdempotencyParams>(r#"{"operation": 3}"#).is_err());
        let p = IdempotencyParams {
            think_time: [
                HumanDuration(Duration::from_secs(2)),
                HumanDuration(Duration::ZERO),
            ],
            ..IdempotencyParams::default()
        };
        assert_eq!(
            Idempotency::configure_named(p, "correct", &cluster())
                .unwrap_err()
                .field,
            "think_time"
        );
        let info = Idempotency::info();
        assert_eq!(info.variants[0].name, "correct");
        assert_eq!(info.variant("no-key").unwrap().breaks, ["exactly-once"]);
        assert_eq!(
            info.variant("key-after-effect").unwrap().breaks,
            ["exactly-once"]
        );
    }
}
