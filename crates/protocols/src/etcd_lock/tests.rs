use super::*;
use crate::testkit::Net;
use std::collections::BTreeMap;
use tenure_core::{Effect, LocalTime, Observation, Rng, RoleSpec, SplitMix64, Step, StorageMap};
use tenure_core::{OpOutcome, OpValue};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn cluster(clients: u32) -> Cluster {
    Cluster::new(vec![
        RoleSpec::new("server", 1),
        RoleSpec::new("client", clients),
        RoleSpec::new("storage", 1),
    ])
    .unwrap()
}

fn params(work_ms: u64) -> EtcdLockParams {
    EtcdLockParams {
        work_duration: HumanDuration(ms(work_ms)),
        ..Default::default()
    }
}

fn config(variant: &str, p: EtcdLockParams, clients: u32) -> EtcdConfig {
    EtcdLock::configure_named(p, variant, &cluster(clients)).unwrap()
}

const SERVER: NodeId = NodeId(0);
const C1: NodeId = NodeId(1);
const C2: NodeId = NodeId(2);
const STORAGE: NodeId = NodeId(3);

struct Node {
    p: EtcdLock,
    me: NodeId,
    storage: StorageMap,
    rng: SplitMix64,
}

impl Node {
    fn new(config: &EtcdConfig, me: NodeId) -> Node {
        Node {
            p: EtcdLock::new(config, me, &cluster(2)),
            me,
            storage: StorageMap::new(),
            rng: SplitMix64(5),
        }
    }

    fn run(
        &mut self,
        at_ms: i64,
        f: impl FnOnce(&mut EtcdLock, &mut dyn Env<EtcdMsg, EtcdTimer>),
    ) -> Vec<Effect<EtcdMsg, EtcdTimer>> {
        let c = cluster(2);
        let t = LocalTime(at_ms * 1_000_000);
        let mut step = Step::new(self.me, &c, t, t, &mut self.storage, &mut self.rng);
        f(&mut self.p, &mut step);
        step.effects
    }
    fn start(&mut self, at_ms: i64) -> Vec<Effect<EtcdMsg, EtcdTimer>> {
        self.run(at_ms, |p, env| p.on_start(env))
    }
    fn recv(&mut self, at_ms: i64, from: NodeId, msg: EtcdMsg) -> Vec<Effect<EtcdMsg, EtcdTimer>> {
        self.run(at_ms, |p, env| p.on_message(env, from, msg))
    }
    fn timer(&mut self, at_ms: i64, t: EtcdTimer) -> Vec<Effect<EtcdMsg, EtcdTimer>> {
        self.run(at_ms, |p, env| p.on_timer(env, t))
    }
    fn server(&self) -> &EtcdServer {
        match &self.p {
            EtcdLock::Server(s) => s,
            _ => panic!("not a server"),
        }
    }
    fn lock(&self) -> &EtcdLockClient {
        match &self.p {
            EtcdLock::Client(c) => &c.lock,
            _ => panic!("not a client"),
        }
    }
    fn stored(&self) -> Effect<EtcdMsg, EtcdTimer> {
        Effect::Store {
            key: "etcd/data".into(),
            value: Some(serde_json::to_string(self.server().data()).unwrap()),
        }
    }
}

/// The server syncs every write before it answers, as etcd fsyncs its WAL.
fn synced() -> Effect<EtcdMsg, EtcdTimer> {
    Effect::Sync { ok: true }
}

fn send(to: NodeId, msg: EtcdMsg) -> Effect<EtcdMsg, EtcdTimer> {
    Effect::Send { to, msg }
}

fn set(timer: EtcdTimer, after: Duration) -> Effect<EtcdMsg, EtcdTimer> {
    Effect::SetTimer { timer, after }
}

// --- the server ---

/// Leases 1 (client 1, key a at revision 2) and 2 (client 2, key b at revision 4);
/// client 2 watches key a.
fn two_keys() -> Node {
    let mut s = Node::new(&config("correct", params(100), 2), SERVER);
    s.start(0);
    let effects = s.recv(
        10,
        C1,
        EtcdMsg::LeaseGrant {
            req: 1,
            ttl: ms(2000),
        },
    );
    assert_eq!(
        effects,
        vec![
            set(EtcdTimer::LeaseExpire(1), ms(2000)),
            s.stored(),
            synced(),
            send(
                C1,
                EtcdMsg::LeaseGranted {
                    req: 1,
                    lease: 1,
                    ttl: ms(2000)
                }
            ),
        ]
    );
    let put = |key: &str, lease| EtcdMsg::PutIfAbsent {
        req: 2,
        key: key.into(),
        lease,
    };
    let effects = s.recv(11, C1, put("/lock/counter/1", 1));
    assert_eq!(
        effects,
        vec![
            s.stored(),
            synced(),
            send(
                C1,
                EtcdMsg::PutReply {
                    req: 2,
                    key: "/lock/counter/1".into(),
                    create_revision: Some(2)
                }
            ),
        ]
    );
    s.recv(
        12,
        C2,
        EtcdMsg::LeaseGrant {
            req: 1,
            ttl: ms(2000),
        },
    );
    s.recv(13, C2, put("/lock/counter/2", 2));
    // The same put again (a retry) changes nothing and answers the same revision.
    assert_eq!(
        s.recv(14, C2, put("/lock/counter/2", 2)),
        vec![send(
            C2,
            EtcdMsg::PutReply {
                req: 2,
                key: "/lock/counter/2".into(),
                create_revision: Some(4)
            }
        )]
    );
    let effects = s.recv(
        15,
        C2,
        EtcdMsg::WatchDelete {
            req: 5,
            key: "/lock/counter/1".into(),
            revision: 4,
        },
    );
    assert_eq!(effects, vec![s.stored(), synced()]);
    s
}

#[test]
fn predecessor_is_the_next_lower_create_revision() {
    let s = two_keys();
    assert_eq!(
        s.server().predecessor("/lock/counter", 4),
        Some("/lock/counter/1".into())
    );
    assert_eq!(s.server().predecessor("/lock/counter", 2), None);
    assert_eq!(s.server().predecessor("/lock/other", 9), None);
}

#[test]
fn delete_tells_the_watcher() {
    let mut s = two_keys();
    let effects = s.recv(
        20,
        C1,
        EtcdMsg::Delete {
            req: 3,
            key: "/lock/counter/1".into(),
        },
    );
    assert_eq!(
        effects,
        vec![
            send(
                C2,
                EtcdMsg::KeyDeleted {
                    req: 5,
                    key: "/lock/counter/1".into()
                }
            ),
            s.stored(),
            synced(),
            send(C1, EtcdMsg::Deleted { req: 3 }),
        ]
    );
    assert_eq!(s.server().data().revision, 5);
    // Watching a key that is already gone answers at once.
    assert_eq!(
        s.recv(
            21,
            C2,
            EtcdMsg::WatchDelete {
                req: 6,
                key: "/lock/counter/1".into(),
                revision: 5,
            }
        ),
        vec![send(
            C2,
            EtcdMsg::KeyDeleted {
                req: 6,
                key: "/lock/counter/1".into()
            }
        )]
    );
}

/// etcd's `waitDelete` watches from the revision its `Get` read: a predecessor deleted
/// and created again (a client's retry) before the watch arrives is reported deleted at
/// once, not watched in its new life (found by `power` with disk stalls: three waiters
/// watching each other's new keys, etcd-lock seed 1405).
#[test]
fn a_watch_from_a_revision_sees_a_delete_before_a_recreate() {
    let mut s = two_keys();
    s.recv(
        20,
        C1,
        EtcdMsg::Delete {
            req: 3,
            key: "/lock/counter/1".into(),
        },
    );
    s.recv(
        21,
        C1,
        EtcdMsg::PutIfAbsent {
            req: 4,
            key: "/lock/counter/1".into(),
            lease: 1,
        },
    );
    // C2 read its predecessor at revision 4, before the delete (5) and the put (6).
    let watch = |revision| EtcdMsg::WatchDelete {
        req: 7,
        key: "/lock/counter/1".into(),
        revision,
    };
    let deleted = send(
        C2,
        EtcdMsg::KeyDeleted {
            req: 7,
            key: "/lock/counter/1".into(),
        },
    );
    assert_eq!(s.recv(22, C2, watch(4)), vec![deleted]);
    // Read after the put, the new key is the one to watch.
    assert_eq!(s.recv(23, C2, watch(6)), vec![s.stored(), synced()]);
}

#[test]
fn lease_expiry_deletes_its_keys() {
    let mut s = two_keys();
    // Lease 1 was granted at 10ms: it expires at 2010ms.
    assert_eq!(
        s.timer(1000, EtcdTimer::LeaseExpire(1)),
        vec![set(EtcdTimer::LeaseExpire(1), ms(1010))]
    );
    let effects = s.timer(2010, EtcdTimer::LeaseExpire(1));
    assert_eq!(
        effects,
        vec![
            Effect::Observe(Observation::Note {
                text: "lease 1 of n1 expired".into()
            }),
            send(
                C2,
                EtcdMsg::KeyDeleted {
                    req: 5,
                    key: "/lock/counter/1".into()
                }
            ),
            s.stored(),
            synced(),
        ]
    );
    assert_eq!(
        s.recv(2100, C1, EtcdMsg::KeepAlive { req: 9, lease: 1 }),
        vec![send(
            C1,
            EtcdMsg::KeepAliveReply {
                req: 9,
                lease: 1,
                ttl: None
            }
        )]
    );
    // A put on the dead lease is refused.
    assert_eq!(
        s.recv(
            2101,
            C1,
            EtcdMsg::PutIfAbsent {
                req: 10,
                key: "/lock/counter/1".into(),
                lease: 1
            }
        ),
        vec![send(
            C1,
            EtcdMsg::PutReply {
                req: 10,
                key: "/lock/counter/1".into(),
                create_revision: None
            }
        )]
    );
}

#[test]
fn keepalive_pushes_the_expiry_out() {
    let mut s = two_keys();
    assert_eq!(
        s.recv(1500, C1, EtcdMsg::KeepAlive { req: 3, lease: 1 }),
        vec![
            set(EtcdTimer::LeaseExpire(1), ms(2000)),
            send(
                C1,
                EtcdMsg::KeepAliveReply {
                    req: 3,
                    lease: 1,
                    ttl: Some(ms(2000))
                }
            ),
        ]
    );
    assert_eq!(
        s.timer(2010, EtcdTimer::LeaseExpire(1)),
        vec![set(EtcdTimer::LeaseExpire(1), ms(1490))]
    );
}

/// A keep-alive handled after its lease's TTL ran out, before the expiry timer (a
/// stalled server handles the requests that piled up first), does not bring the lease
/// back: it is revoked then, its keys deleted, and the answer is "gone", as etcd's
/// `lessor.Renew` answers an expired lease.
#[test]
fn a_keepalive_after_the_ttl_does_not_renew_the_lease() {
    let mut s = two_keys();
    // Lease 1 was granted at 10ms: it ran out at 2010ms.
    let effects = s.recv(3000, C1, EtcdMsg::KeepAlive { req: 9, lease: 1 });
    assert_eq!(
        effects,
        vec![
            Effect::Observe(Observation::Note {
                text: "lease 1 of n1 expired".into()
            }),
            send(
                C2,
                EtcdMsg::KeyDeleted {
                    req: 5,
                    key: "/lock/counter/1".into()
                }
            ),
            s.stored(),
            synced(),
            send(
                C1,
                EtcdMsg::KeepAliveReply {
                    req: 9,
                    lease: 1,
                    ttl: None
                }
            ),
        ]
    );
    // Its late timer finds nothing to do.
    assert_eq!(s.timer(3001, EtcdTimer::LeaseExpire(1)), vec![]);
}

// --- the client ---

/// Client 1 started at 0 (lease asked, req 1), granted lease 7 at 2ms, and its think
/// timer fired at 200ms (put sent, req 2).
fn acquiring(variant: &str) -> Node {
    let mut c = Node::new(&config(variant, params(100), 2), C1);
    let think = c.rng.clone().duration_between(ms(100), ms(300));
    assert_eq!(
        c.start(0),
        vec![
            send(
                SERVER,
                EtcdMsg::LeaseGrant {
                    req: 1,
                    ttl: ms(2000)
                }
            ),
            set(EtcdTimer::KeepAlive, Duration::from_nanos(666_666_666)),
            set(EtcdTimer::Workload(WorkloadTimer::Think), think),
        ]
    );
    assert_eq!(
        c.recv(
            2,
            SERVER,
            EtcdMsg::LeaseGranted {
                req: 1,
                lease: 7,
                ttl: ms(2000)
            }
        ),
        vec![set(EtcdTimer::LeaseCheck, ms(1998))]
    );
    assert_eq!(
        c.timer(200, EtcdTimer::Workload(WorkloadTimer::Think)),
        vec![
            Effect::Observe(Observation::Waiting {
                resource: "counter".into()
            }),
            send(
                SERVER,
                EtcdMsg::PutIfAbsent {
                    req: 2,
                    key: "/lock/counter/7".into(),
                    lease: 7
                }
            ),
        ]
    );
    c
}

fn put_reply(revision: u64) -> EtcdMsg {
    EtcdMsg::PutReply {
        req: 2,
        key: "/lock/counter/7".into(),
        create_revision: Some(revision),
    }
}

#[test]
fn with_no_lower_key_the_client_holds_with_its_create_revision() {
    let mut c = acquiring("correct");
    assert_eq!(
        c.recv(202, SERVER, put_reply(9)),
        vec![send(
            SERVER,
            EtcdMsg::GetPredecessor {
                req: 3,
                prefix: "/lock/counter".into(),
                before: 9
            }
        )]
    );
    assert_eq!(
        c.recv(
            204,
            SERVER,
            EtcdMsg::Predecessor {
                req: 3,
                key: None,
                revision: 9,
            }
        ),
        vec![
            Effect::CancelTimer {
                timer: EtcdTimer::Workload(WorkloadTimer::Retry)
            },
            Effect::Observe(Observation::Holds {
                resource: "counter".into(),
                token: 9
            }),
            Effect::Observe(Observation::Acts {
                resource: "counter".into(),
                token: 9
            }),
            send(
                STORAGE,
                EtcdMsg::Resource(ResourceMsg::Read {
                    resource: "counter".into(),
                    op: 1,
                    token: Some(9)
                })
            ),
            Effect::Observe(Observation::Invoke {
                f: "read".into(),
                key: "counter".into(),
                value: OpValue::Nil
            }),
            set(EtcdTimer::Workload(WorkloadTimer::Request), ms(1000)),
        ]
    );
    assert!(c.lock().holding());
}

#[test]
fn a_waiter_watches_its_predecessor_and_looks_again_when_it_goes() {
    let mut c = acquiring("correct");
    c.recv(202, SERVER, put_reply(9));
    assert_eq!(
        c.recv(
            204,
            SERVER,
            EtcdMsg::Predecessor {
                req: 3,
                key: Some("/lock/counter/5".into()),
                revision: 9,
            }
        ),
        vec![send(
            SERVER,
            EtcdMsg::WatchDelete {
                req: 4,
                key: "/lock/counter/5".into(),
                revision: 9,
            }
        )]
    );
    // A deletion of some other key (or an old watch) is ignored.
    assert_eq!(
        c.recv(
            300,
            SERVER,
            EtcdMsg::KeyDeleted {
                req: 4,
                key: "/lock/counter/3".into()
            }
        ),
        vec![]
    );
    assert_eq!(
        c.recv(
            301,
            SERVER,
            EtcdMsg::KeyDeleted {
                req: 4,
                key: "/lock/counter/5".into()
            }
        ),
        vec![send(
            SERVER,
            EtcdMsg::GetPredecessor {
                req: 5,
                prefix: "/lock/counter".into(),
                before: 9
            }
        )]
    );
}

/// `acquiring(variant)` that had to wait behind /lock/counter/5 and then saw it go:
/// its next answer about a predecessor is `None`.
fn waited(variant: &str) -> Node {
    let mut c = acquiring(variant);
    c.recv(202, SERVER, put_reply(9));
    let lower = Some("/lock/counter/5".to_string());
    c.recv(
        204,
        SERVER,
        EtcdMsg::Predecessor {
            req: 3,
            key: lower,
            revision: 9,
        },
    );
    let deleted = EtcdMsg::KeyDeleted {
        req: 4,
        key: "/lock/counter/5".into(),
    };
    c.recv(301, SERVER, deleted);
    c
}

fn holds(effects: &[Effect<EtcdMsg, EtcdTimer>]) -> bool {
    effects
        .iter()
        .any(|e| matches!(e, Effect::Observe(Observation::Holds { .. })))
}

/// the etcd v3.5.0 client and later (PR #11408): after waiting, the client Gets its own key and holds only
/// if it is still there with its create revision.
#[test]
fn after_waiting_the_client_checks_its_own_key_before_it_holds() {
    let mut c = waited("correct");
    let none = EtcdMsg::Predecessor {
        req: 5,
        key: None,
        revision: 9,
    };
    assert_eq!(
        c.recv(302, SERVER, none),
        vec![send(
            SERVER,
            EtcdMsg::Get {
                req: 6,
                key: "/lock/counter/7".into()
            }
        )]
    );
    let present = EtcdMsg::GetReply {
        req: 6,
        key: "/lock/counter/7".into(),
        create_revision: Some(9),
    };
    assert!(holds(&c.recv(303, SERVER, present)));
    assert!(c.lock().holding());

    // The key went with the lease while it waited: ErrSessionExpired, no hold, a new
    // lease, and the acquire fails (the workload backs off and retries).
    let mut c = waited("correct");
    c.recv(
        302,
        SERVER,
        EtcdMsg::Predecessor {
            req: 5,
            key: None,
            revision: 9,
        },
    );
    let gone = EtcdMsg::GetReply {
        req: 6,
        key: "/lock/counter/7".into(),
        create_revision: None,
    };
    let effects = c.recv(303, SERVER, gone);
    assert!(!holds(&effects), "{effects:?}");
    assert!(!c.lock().holding());
    assert_eq!(c.lock().key(), None);
    assert!(
        effects.iter().any(|e| matches!(
            e,
            Effect::Send {
                msg: EtcdMsg::LeaseGrant { .. },
                ..
            }
        )),
        "{effects:?}"
    );
}

/// The pre-3.5 (3.4.x) client holds as soon as no lower key is left, whether its own key
/// still exists or not (the Jepsen etcd 3.4.3 finding).
#[test]
fn the_pre_fix_client_holds_without_checking_its_key() {
    let mut c = waited("no-key-check");
    let effects = c.recv(
        302,
        SERVER,
        EtcdMsg::Predecessor {
            req: 5,
            key: None,
            revision: 9,
        },
    );
    assert!(holds(&effects), "{effects:?}");
    assert!(!effects.iter().any(|e| matches!(
        e,
        Effect::Send {
            msg: EtcdMsg::Get { .. },
            ..
        }
    )));
}

/// A client that never waited holds at once, as `Mutex.Lock` does when its put already
/// shows it as the owner.
#[test]
fn a_client_that_never_waited_holds_without_a_get() {
    let mut c = acquiring("correct");
    c.recv(202, SERVER, put_reply(9));
    assert!(holds(&c.recv(
        204,
        SERVER,
        EtcdMsg::Predecessor {
            req: 3,
            key: None,
            revision: 9,
        }
    )));
}

fn holding(variant: &str) -> Node {
    let mut c = acquiring(variant);
    c.recv(202, SERVER, put_reply(9));
    c.recv(
        204,
        SERVER,
        EtcdMsg::Predecessor {
            req: 3,
            key: None,
            revision: 9,
        },
    );
    c
}

#[test]
fn keepalive_goes_on_while_holding_except_in_no_keepalive() {
    let mut c = holding("correct");
    assert_eq!(
        c.timer(667, EtcdTimer::KeepAlive),
        vec![
            set(EtcdTimer::KeepAlive, Duration::from_nanos(666_666_666)),
            send(SERVER, EtcdMsg::KeepAlive { req: 4, lease: 7 }),
        ]
    );
    // The answer extends the lease from when the keep-alive was sent.
    assert_eq!(
        c.recv(
            669,
            SERVER,
            EtcdMsg::KeepAliveReply {
                req: 4,
                lease: 7,
                ttl: Some(ms(2000))
            }
        ),
        vec![set(EtcdTimer::LeaseCheck, ms(1998))]
    );
    let mut b = holding("no-keepalive");
    assert_eq!(
        b.timer(667, EtcdTimer::KeepAlive),
        vec![set(EtcdTimer::KeepAlive, Duration::from_nanos(666_666_666))]
    );
    // Nor does it notice its lease running out.
    assert_eq!(b.timer(2000, EtcdTimer::LeaseCheck), vec![]);
    assert!(b.lock().holding());
}

#[test]
fn a_lease_run_out_by_its_own_clock_ends_the_hold() {
    let mut c = holding("correct");
    let effects = c.timer(2000, EtcdTimer::LeaseCheck);
    // `Session.Done()`: the read in flight is abandoned, the hold ends, the client
    // thinks again (no release: its key went with the lease).
    assert!(matches!(
        effects.last(),
        Some(Effect::SetTimer {
            timer: EtcdTimer::Workload(WorkloadTimer::Think),
            ..
        })
    ));
    assert_eq!(
        effects[..effects.len() - 1],
        [
            Effect::CancelTimer {
                timer: EtcdTimer::LeaseCheck
            },
            send(
                SERVER,
                EtcdMsg::LeaseGrant {
                    req: 4,
                    ttl: ms(2000)
                }
            ),
            Effect::CancelTimer {
                timer: EtcdTimer::Workload(WorkloadTimer::Request)
            },
            Effect::Observe(Observation::Complete {
                f: "read".into(),
                key: "counter".into(),
                outcome: OpOutcome::Info,
                value: OpValue::Nil
            }),
            Effect::CancelTimer {
                timer: EtcdTimer::Workload(WorkloadTimer::Validity)
            },
            Effect::Observe(Observation::Releases {
                resource: "counter".into()
            }),
        ]
    );
    assert_eq!(c.lock().lease(), None);
    assert_eq!(c.lock().key(), None);
}

#[test]
fn a_stale_put_reply_deletes_the_unwanted_key() {
    let mut c = acquiring("correct");
    assert_eq!(
        c.recv(
            202,
            SERVER,
            EtcdMsg::PutReply {
                req: 1,
                key: "/lock/counter/6".into(),
                create_revision: Some(3)
            }
        ),
        vec![send(
            SERVER,
            EtcdMsg::Delete {
                req: 3,
                key: "/lock/counter/6".into()
            }
        )]
    );
}

#[test]
fn params_are_checked() {
    let err = serde_json::from_str::<EtcdLockParams>(r#"{"tll": "1s"}"#);
    assert!(err.unwrap_err().to_string().contains("tll"));
    let p: EtcdLockParams =
        serde_json::from_str(r#"{"ttl": "5s", "resource_mode": "unfenced"}"#).unwrap();
    assert_eq!(p.resource_mode, FencingMode::Unfenced);
    let p = EtcdLockParams {
        ttl: HumanDuration(ms(10)),
        ..Default::default()
    };
    assert_eq!(
        EtcdLock::configure_named(p, "correct", &cluster(2))
            .unwrap_err()
            .field,
        "ttl"
    );
    let no_storage =
        Cluster::new(vec![RoleSpec::new("server", 1), RoleSpec::new("client", 2)]).unwrap();
    assert_eq!(
        EtcdLock::configure_named(EtcdLockParams::default(), "correct", &no_storage)
            .unwrap_err()
            .field,
        "cluster.roles.storage"
    );
    let info = EtcdLock::info();
    assert_eq!(info.variants[0].name, "correct");
    assert_eq!(info.variants[1].breaks, &["mutual-exclusion"]);
}

// --- whole runs on the test network ---

fn hold_intervals(net: &Net<EtcdLock>) -> Vec<(NodeId, u64, u64)> {
    let mut open: BTreeMap<NodeId, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for (t, node, obs) in &net.records {
        match obs {
            Observation::Holds { .. } => {
                open.insert(*node, *t);
            }
            Observation::Releases { .. } | Observation::Crashed => {
                if let Some(s) = open.remove(node) {
                    out.push((*node, s, *t));
                }
            }
            _ => {}
        }
    }
    out.extend(open.into_iter().map(|(n, s)| (n, s, net.now)));
    out
}

fn overlapping(net: &Net<EtcdLock>) -> usize {
    let iv = hold_intervals(net);
    let mut n = 0;
    for (i, a) in iv.iter().enumerate() {
        for b in &iv[i + 1..] {
            if a.0 != b.0 && a.1 < b.2 && b.1 < a.2 {
                n += 1;
            }
        }
    }
    n
}

fn writes(net: &Net<EtcdLock>, accepted: bool) -> Vec<(NodeId, u64)> {
    net.records
        .iter()
        .filter_map(|(_, _, o)| match o {
            Observation::Write {
                accepted: a,
                token,
                client,
                ..
            } if *a == accepted => Some((*client, token.unwrap())),
            _ => None,
        })
        .collect()
}

fn holder(net: &Net<EtcdLock>, clients: u32) -> Option<u32> {
    (1..=clients).find(|&i| match net.node(i) {
        EtcdLock::Client(c) => c.lock.holding(),
        _ => false,
    })
}

#[test]
fn correct_excludes_and_counts_every_update() {
    let mut net = Net::<EtcdLock>::start(config("correct", params(100), 3), cluster(3), 1);
    net.run_until(ms(20_000));
    assert!(hold_intervals(&net).len() > 30);
    assert_eq!(overlapping(&net), 0);
    assert!(writes(&net, false).is_empty());
    let tokens: Vec<u64> = writes(&net, true).iter().map(|w| w.1).collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
    let EtcdLock::Storage(r) = net.node(4) else {
        panic!()
    };
    assert_eq!(r.value("counter"), tokens.len() as i64);
}

#[test]
fn correct_hands_over_when_the_holder_crashes() {
    let mut net = Net::<EtcdLock>::start(config("correct", params(1000), 3), cluster(3), 2);
    net.run_until(ms(700));
    let h = holder(&net, 3).expect("someone holds");
    net.crash(h);
    net.run_until(ms(6000));
    assert_eq!(overlapping(&net), 0);
    assert!(hold_intervals(&net).iter().any(|(n, _, _)| n.0 != h));
}

#[test]
fn no_keepalive_loses_the_lease_under_a_long_hold() {
    let mut net = Net::<EtcdLock>::start(config("no-keepalive", params(3000), 3), cluster(3), 3);
    net.run_until(ms(15_000));
    assert!(overlapping(&net) >= 1);
    // Fencing still rejects the late writer.
    assert!(!writes(&net, false).is_empty());
    let correct = {
        let mut n = Net::<EtcdLock>::start(config("correct", params(3000), 3), cluster(3), 3);
        n.run_until(ms(15_000));
        n
    };
    assert_eq!(overlapping(&correct), 0);
}

#[test]
fn a_pause_beyond_the_ttl_breaks_exclusion_but_fencing_holds() {
    let mut net = Net::<EtcdLock>::start(config("correct", params(1000), 3), cluster(3), 4);
    net.run_until(ms(700));
    let h = holder(&net, 3).expect("someone holds");
    net.pause(h, ms(5000));
    net.run_until(ms(15_000));
    assert!(overlapping(&net) >= 1);
    let rejected = writes(&net, false);
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].0, NodeId(h));
    let tokens: Vec<u64> = writes(&net, true).iter().map(|w| w.1).collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

#[test]
fn one_release_wakes_one_waiter() {
    let mut net = Net::<EtcdLock>::start(config("correct", params(3000), 10), cluster(10), 5);
    net.run_until(ms(10_000));
    let mut holds = net
        .records
        .iter()
        .filter(|(_, _, o)| matches!(o, Observation::Holds { .. }));
    let (first, second) = (holds.next().unwrap().0, holds.next().unwrap().0);
    let release = net
        .records
        .iter()
        .find(|(t, _, o)| *t > first && matches!(o, Observation::Releases { .. }))
        .unwrap()
        .0;
    let deleted = net.count_sent(release, second, |m| matches!(m, EtcdMsg::KeyDeleted { .. }));
    assert_eq!(deleted, 1);
}
