//! `fencing`: a TTL lock server that hands out a fencing token with every grant (Redis
//! `SET NX PX` plus a durable `INCR`), clients that pass the token with every request
//! to the storage, and a storage that rejects a token lower than the highest it has
//! seen. Source: Kleppmann, "How to do distributed locking" (2016), "Making the lock
//! safe with fencing"; also Chubby's sequencers (Burrows, OSDI 2006, section 2.4).
//!
//! What it promises: fencing safety (the storage never accepts a token lower than one
//! it already accepted) and no lost update, *even though* mutual exclusion of belief
//! is lost under a process pause: a client paused past its TTL still believes it holds
//! the lock and still writes, but its stale token is rejected.
//! `scenarios/fencing/gc-pause.toml` shows it passing the very pause that breaks
//! redis-lock.
//!
//! Broken variant `unfenced`: the storage ignores tokens (a database that was never
//! taught to check them); the paused client's stale write lands and a concurrent
//! increment is lost. Breaks no-lost-update and fencing-safety.
//!
//! The machinery is [`RedisLock`]'s; only the configuration differs.

use crate::redis_lock::{
    ExpiryClock, LockParams, Msg, RedisLock, ReleaseKind, SingleServerConfig, Timer,
};
use crate::resource::FencingMode;
use tenure_core::{
    Cluster, Configurable, Env, NodeId, ParamError, Protocol, ProtocolInfo, VariantInfo,
};

/// A fencing node: a [`RedisLock`] node run with tokens.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fencing(pub RedisLock);

impl Protocol for Fencing {
    type Msg = Msg;
    type Timer = Timer;
    type Config = SingleServerConfig;

    fn new(config: &SingleServerConfig, me: NodeId, cluster: &Cluster) -> Fencing {
        assert!(config.issue_tokens, "fencing always issues tokens");
        Fencing(RedisLock::new(config, me, cluster))
    }

    fn on_start(&mut self, env: &mut dyn Env<Msg, Timer>) {
        self.0.on_start(env);
    }

    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, msg: Msg) {
        self.0.on_message(env, from, msg);
    }

    fn on_timer(&mut self, env: &mut dyn Env<Msg, Timer>, timer: Timer) {
        self.0.on_timer(env, timer);
    }
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "fencing",
    "a TTL lock server issuing increasing fencing tokens, checked by the storage",
    crate::redis_lock::LOCK_ROLES,
    &[
        VariantInfo::new(
            "correct",
            "the storage rejects a token lower than the highest it has seen",
        ),
        VariantInfo::new(
            "unfenced",
            "the storage ignores tokens: a paused client's stale write lands",
        )
        .with_breaks(&["no-lost-update", "fencing-safety"]),
    ],
);

/// fencing's variants (names as scenarios write them).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum FencingVariant {
    Correct,
    Unfenced,
}

impl Configurable for Fencing {
    type Params = LockParams;
    type Variant = FencingVariant;
    type Role = crate::workload::LockRole;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: LockParams,
        variant: FencingVariant,
        cluster: &Cluster,
    ) -> Result<SingleServerConfig, ParamError> {
        let mode = match variant {
            FencingVariant::Correct => FencingMode::Fenced,
            FencingVariant::Unfenced => FencingMode::Unfenced,
        };
        // Tokens, not expiry, keep the resource safe here: the server times TTLs on
        // its monotonic clock, so wall steps need no declared bound.
        params.single_server(
            cluster,
            ExpiryClock::Monotonic,
            true,
            ReleaseKind::CompareAndDelete,
            true,
            mode,
        )
    }

    fn promises(config: &SingleServerConfig, cluster: &Cluster) -> Vec<tenure_core::Promise> {
        let ttl = config.ttl.unwrap_or_default();
        vec![
            tenure_core::Promise::new("fencing-safety"),
            tenure_core::Promise::new("no-lost-update"),
            crate::promises::lock_liveness(
                &config.workload,
                ttl,
                config.acquire_timeout,
                Some(0.1),
                cluster,
                false,
            ),
        ]
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        use tenure_core::model::ModelSpec;
        Ok(ModelSpec::new(
            "one lock server issuing tokens, a fenced (or unfenced) storage, clients \
             making one acquire attempt each; time may leap once, which pauses \
             whoever does not run past the TTL",
            &[("server", 1), ("client", 2), ("storage", 1)],
        )
        .with_bounds(
            tenure_core::model::Bounds::DEFAULT
                .with_max_depth(40)
                .with_max_leaps(1)
                .with_max_duplicates(0)
                .with_clock(tenure_core::model::ClockModel::Frozen),
        )
        .with_checks(&["fencing-safety", "no-lost-update"])
        .with_params(r#"{ "max_attempts": 1 }"#)
        .with_walk_params(r#"{ "max_attempts": 6 }"#))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock_server::LockMsg;
    use crate::redis_lock::tests::{lock_cluster, run};
    use crate::resource::ResourceMsg;
    use crate::workload::WorkloadTimer;
    use std::time::Duration;
    use tenure_core::{Effect, Observation};

    const SERVER: NodeId = NodeId(0);
    const CLIENT: NodeId = NodeId(1);
    const STORAGE: NodeId = NodeId(3);

    fn config(variant: &str) -> SingleServerConfig {
        Fencing::configure_named(LockParams::default(), variant, &lock_cluster()).unwrap()
    }

    #[test]
    fn server_grants_with_increasing_tokens() {
        let mut s = Fencing::new(&config("correct"), SERVER, &lock_cluster());
        let set = |req, owner| {
            Msg::Lock(LockMsg::Set {
                req,
                key: "counter".into(),
                owner,
                ttl: Some(Duration::from_millis(100)),
            })
        };
        // `run` gives each step fresh storage, so the counter is read from memory.
        let first = run(&mut s, SERVER, 0, 1, |s, env| {
            s.on_message(env, CLIENT, set(1, 7))
        });
        assert_eq!(
            first,
            vec![
                Effect::Store {
                    key: "lock/last_token".into(),
                    value: Some("1".into())
                },
                Effect::Sync { ok: true },
                Effect::Send {
                    to: CLIENT,
                    msg: Msg::Lock(LockMsg::SetReply {
                        req: 1,
                        granted: true,
                        token: Some(1)
                    })
                },
            ]
        );
        // After the first lock expired, the next grant carries token 2.
        let second = run(&mut s, SERVER, 200, 1, |s, env| {
            s.on_message(env, NodeId(2), set(1, 8))
        });
        assert_eq!(
            second,
            vec![
                Effect::Store {
                    key: "lock/last_token".into(),
                    value: Some("2".into())
                },
                Effect::Sync { ok: true },
                Effect::Send {
                    to: NodeId(2),
                    msg: Msg::Lock(LockMsg::SetReply {
                        req: 1,
                        granted: true,
                        token: Some(2)
                    })
                },
            ]
        );
    }

    #[test]
    fn client_holds_with_its_token_and_passes_it_on() {
        let mut c = Fencing::new(&config("correct"), CLIENT, &lock_cluster());
        run(&mut c, CLIENT, 0, 1, |c, env| {
            c.on_timer(env, Timer::Workload(WorkloadTimer::Think))
        });
        let grant = Msg::Lock(LockMsg::SetReply {
            req: 1,
            granted: true,
            token: Some(33),
        });
        let effects = run(&mut c, CLIENT, 10, 1, |c, env| {
            c.on_message(env, SERVER, grant)
        });
        assert_eq!(
            effects[2],
            Effect::Observe(Observation::Holds {
                resource: "counter".into(),
                token: 33
            })
        );
        assert_eq!(
            effects[4],
            Effect::Observe(Observation::Acts {
                resource: "counter".into(),
                token: 33
            })
        );
        assert_eq!(
            effects[5],
            Effect::Send {
                to: STORAGE,
                msg: Msg::Resource(ResourceMsg::Read {
                    resource: "counter".into(),
                    op: 1,
                    token: Some(33)
                })
            }
        );
    }

    #[test]
    fn storage_is_fenced_only_in_the_correct_variant() {
        let stale = Msg::Resource(ResourceMsg::Write {
            resource: "counter".into(),
            op: 1,
            token: Some(1),
            value: 1,
            based_on: Some(0),
        });
        let fresh = Msg::Resource(ResourceMsg::Write {
            resource: "counter".into(),
            op: 1,
            token: Some(2),
            value: 1,
            based_on: Some(0),
        });
        for (variant, accepted) in [("correct", false), ("unfenced", true)] {
            let mut s = Fencing::new(&config(variant), STORAGE, &lock_cluster());
            run(&mut s, STORAGE, 0, 1, |s, env| {
                s.on_message(env, NodeId(2), fresh.clone())
            });
            let effects = run(&mut s, STORAGE, 1, 1, |s, env| {
                s.on_message(env, CLIENT, stale.clone())
            });
            let write = effects
                .iter()
                .find_map(|e| match e {
                    Effect::Observe(Observation::Write { accepted, .. }) => Some(*accepted),
                    _ => None,
                })
                .unwrap();
            assert_eq!(write, accepted, "variant {variant}");
        }
    }

    #[test]
    fn info_lists_what_unfenced_breaks() {
        let info = Fencing::info();
        assert_eq!(info.name, "fencing");
        assert_eq!(info.variants[0].name, "correct");
        assert_eq!(
            info.variant("unfenced").unwrap().breaks,
            ["no-lost-update", "fencing-safety"]
        );
    }
}
