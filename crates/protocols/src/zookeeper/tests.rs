use super::*;
use crate::testkit::Net;
use std::collections::BTreeMap;
use tenure_core::{Effect, LocalTime, Observation, RoleSpec, SplitMix64, Step, StorageMap};
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

fn params(recipe: Recipe) -> ZooKeeperParams {
    ZooKeeperParams {
        recipe,
        ..Default::default()
    }
}

fn config(variant: &str, p: ZooKeeperParams, clients: u32) -> ZkConfig {
    ZooKeeper::configure_named(p, variant, &cluster(clients)).unwrap()
}

const SERVER: NodeId = NodeId(0);
const C1: NodeId = NodeId(1);
const C2: NodeId = NodeId(2);

/// A node with its storage, stepped at explicit monotonic times (ms).
struct Node {
    p: ZooKeeper,
    me: NodeId,
    clients: u32,
    storage: StorageMap,
    rng: SplitMix64,
}

impl Node {
    fn new(config: &ZkConfig, me: NodeId, clients: u32) -> Node {
        Node {
            p: ZooKeeper::new(config, me, &cluster(clients)),
            me,
            clients,
            storage: StorageMap::new(),
            rng: SplitMix64(3),
        }
    }

    fn run(
        &mut self,
        at_ms: i64,
        f: impl FnOnce(&mut ZooKeeper, &mut dyn Env<ZkMsg, ZkTimer>),
    ) -> Vec<Effect<ZkMsg, ZkTimer>> {
        let c = cluster(self.clients);
        let t = LocalTime(at_ms * 1_000_000);
        let mut step = Step::new(self.me, &c, t, t, &mut self.storage, &mut self.rng);
        f(&mut self.p, &mut step);
        step.effects
    }

    fn start(&mut self, at_ms: i64) -> Vec<Effect<ZkMsg, ZkTimer>> {
        self.run(at_ms, |p, env| p.on_start(env))
    }
    fn recv(&mut self, at_ms: i64, from: NodeId, msg: ZkMsg) -> Vec<Effect<ZkMsg, ZkTimer>> {
        self.run(at_ms, |p, env| p.on_message(env, from, msg))
    }
    fn timer(&mut self, at_ms: i64, t: ZkTimer) -> Vec<Effect<ZkMsg, ZkTimer>> {
        self.run(at_ms, |p, env| p.on_timer(env, t))
    }

    fn server(&self) -> &ZkServer {
        match &self.p {
            ZooKeeper::Server(s) => s,
            _ => panic!("not a server"),
        }
    }
    fn client(&self) -> &ZkClient {
        match &self.p {
            ZooKeeper::Client(c) => c,
            _ => panic!("not a client"),
        }
    }

    /// The Store effect of the server's current data.
    fn stored(&self) -> Effect<ZkMsg, ZkTimer> {
        Effect::Store {
            key: "zookeeper/data".into(),
            value: Some(serde_json::to_string(self.server().data()).unwrap()),
        }
    }
}

fn send(to: NodeId, msg: ZkMsg) -> Effect<ZkMsg, ZkTimer> {
    Effect::Send { to, msg }
}

fn set(timer: ZkTimer, after: Duration) -> Effect<ZkMsg, ZkTimer> {
    Effect::SetTimer { timer, after }
}

fn create(session: u64, xid: u64, client: u32) -> ZkMsg {
    ZkMsg::Create {
        session,
        xid,
        path: format!("/election/n-{client}-"),
        ephemeral: true,
        sequential: true,
    }
}

// --- the server ---

fn election_server() -> Node {
    let mut s = Node::new(&config("correct", params(Recipe::Election), 2), SERVER, 2);
    s.start(0);
    s
}

#[test]
fn connect_opens_a_session_and_arms_its_expiry() {
    let mut s = election_server();
    let effects = s.recv(10, C1, ZkMsg::Connect { timeout: ms(2000) });
    assert_eq!(
        effects,
        vec![
            s.stored(),
            Effect::Sync { ok: true },
            set(ZkTimer::Expire(1), ms(2000)),
            send(
                C1,
                ZkMsg::Connected {
                    session: 1,
                    timeout: ms(2000)
                }
            ),
        ]
    );
    assert_eq!(s.server().data().zxid, 1);
}

#[test]
fn sequential_create_makes_the_parent_and_numbers_the_child() {
    let mut s = election_server();
    s.recv(10, C1, ZkMsg::Connect { timeout: ms(2000) });
    let effects = s.recv(20, C1, create(1, 1, 1));
    assert_eq!(
        effects,
        vec![
            set(ZkTimer::Expire(1), ms(2000)),
            s.stored(),
            Effect::Sync { ok: true },
            send(
                C1,
                ZkMsg::Created {
                    session: 1,
                    xid: 1,
                    path: "/election/n-1-0000000000".into(),
                    czxid: 3
                }
            ),
        ]
    );
    let data = s.server().data();
    assert_eq!(data.nodes["/election"].ephemeral_owner, None);
    assert_eq!(
        data.nodes["/election/n-1-0000000000"],
        Znode {
            czxid: 3,
            ephemeral_owner: Some(1)
        }
    );
    // The next one under the same parent gets the next number.
    s.recv(20, C1, create(1, 2, 1));
    assert_eq!(
        s.server().children("/election"),
        vec!["n-1-0000000000", "n-1-0000000001"]
    );
}

/// A failed sync (`disk-error`) acknowledges nothing: the reply waits, with the data
/// still to be written, until a later handler's sync succeeds.
#[test]
fn a_failed_sync_holds_the_replies_until_a_sync_succeeds() {
    let mut s = election_server();
    s.recv(10, C1, ZkMsg::Connect { timeout: ms(2000) });
    let c = cluster(2);
    let t = LocalTime(20_000_000);
    let mut step = Step::new(SERVER, &c, t, t, &mut s.storage, &mut s.rng);
    step.sync_fails = true;
    s.p.on_message(&mut step, C1, create(1, 1, 1));
    let failed = step.effects;
    assert!(
        !failed.iter().any(|e| matches!(e, Effect::Send { .. })),
        "nothing is acknowledged before it is durable: {failed:?}"
    );
    assert!(failed.contains(&Effect::Sync { ok: false }), "{failed:?}");
    // The next request's handler syncs both changes and sends both replies, in order.
    let effects = s.recv(30, C1, create(1, 2, 1));
    assert!(effects.contains(&Effect::Sync { ok: true }), "{effects:?}");
    let xids: Vec<u64> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send {
                msg: ZkMsg::Created { xid, .. },
                ..
            } => Some(*xid),
            _ => None,
        })
        .collect();
    assert_eq!(xids, [1, 2]);
}

#[test]
fn requests_on_an_unknown_session_get_session_expired() {
    let mut s = election_server();
    assert_eq!(
        s.recv(10, C1, ZkMsg::Ping { session: 7 }),
        vec![send(C1, ZkMsg::SessionExpired { session: 7 })]
    );
}

/// Two sessions: 1 (client 1) owns node ...0, 2 (client 2) owns ...1 and watches ...0.
fn two_in_queue() -> Node {
    let mut s = election_server();
    s.recv(10, C1, ZkMsg::Connect { timeout: ms(2000) });
    s.recv(10, C2, ZkMsg::Connect { timeout: ms(2000) });
    s.recv(20, C1, create(1, 1, 1));
    s.recv(20, C2, create(2, 1, 2));
    let effects = s.recv(
        30,
        C2,
        ZkMsg::Exists {
            session: 2,
            xid: 2,
            path: "/election/n-1-0000000000".into(),
            watch: true,
        },
    );
    assert_eq!(
        effects,
        vec![
            set(ZkTimer::Expire(2), ms(2000)),
            s.stored(),
            Effect::Sync { ok: true },
            send(
                C2,
                ZkMsg::Stat {
                    session: 2,
                    xid: 2,
                    path: "/election/n-1-0000000000".into(),
                    czxid: Some(4)
                }
            ),
        ]
    );
    s
}

#[test]
fn delete_fires_the_exists_watch_once() {
    let mut s = two_in_queue();
    let effects = s.recv(
        40,
        C1,
        ZkMsg::Delete {
            session: 1,
            xid: 2,
            path: "/election/n-1-0000000000".into(),
        },
    );
    assert_eq!(
        effects,
        vec![
            set(ZkTimer::Expire(1), ms(2000)),
            // The change is durable before its watch fires.
            s.stored(),
            Effect::Sync { ok: true },
            send(
                C2,
                ZkMsg::Watch {
                    session: 2,
                    path: "/election/n-1-0000000000".into(),
                    event: ZkEvent::NodeDeleted,
                    seq: 0,
                }
            ),
            send(C1, ZkMsg::Deleted { session: 1, xid: 2 }),
        ]
    );
    assert!(s.server().data().data_watches.is_empty(), "one-shot");
}

#[test]
fn get_children_watch_fires_on_every_change_to_the_parent() {
    let mut s = two_in_queue();
    s.recv(
        40,
        C2,
        ZkMsg::GetChildren {
            session: 2,
            xid: 3,
            path: "/election".into(),
            watch: true,
        },
    );
    let effects = s.recv(50, C1, create(1, 2, 1));
    assert_eq!(
        effects[3],
        send(
            C2,
            ZkMsg::Watch {
                session: 2,
                path: "/election".into(),
                event: ZkEvent::ChildrenChanged,
                seq: 0,
            }
        )
    );
}

#[test]
fn expiry_deletes_the_ephemerals_and_fires_their_watches() {
    let mut s = two_in_queue();
    // Session 1 was last heard at 20ms: it expires at 2020ms.
    let effects = s.timer(2020, ZkTimer::Expire(1));
    assert_eq!(
        effects,
        vec![
            Effect::Observe(Observation::Note {
                text: "session 1 of n1 expired".into()
            }),
            s.stored(),
            Effect::Sync { ok: true },
            send(
                C2,
                ZkMsg::Watch {
                    session: 2,
                    path: "/election/n-1-0000000000".into(),
                    event: ZkEvent::NodeDeleted,
                    seq: 0,
                }
            ),
        ]
    );
    assert_eq!(s.server().children("/election"), vec!["n-2-0000000001"]);
    assert_eq!(s.server().data().zxid, 6);
    // Its next ping learns it is gone.
    assert_eq!(
        s.recv(2500, C1, ZkMsg::Ping { session: 1 }),
        vec![send(C1, ZkMsg::SessionExpired { session: 1 })]
    );
}

#[test]
fn an_early_expiry_timer_waits_for_the_deadline() {
    let mut s = two_in_queue();
    assert_eq!(
        s.timer(1000, ZkTimer::Expire(1)),
        vec![set(ZkTimer::Expire(1), ms(1020))]
    );
}

#[test]
fn restart_keeps_the_tree_and_gives_sessions_a_fresh_timeout() {
    let s = two_in_queue();
    let mut fresh = Node::new(&config("correct", params(Recipe::Election), 2), SERVER, 2);
    fresh.storage = s.storage.clone();
    assert_eq!(
        fresh.start(9000),
        vec![
            set(ZkTimer::Expire(1), ms(2000)),
            set(ZkTimer::Expire(2), ms(2000))
        ]
    );
    assert_eq!(fresh.server().data(), s.server().data());
}

// --- the client ---

fn election_client(variant: &str) -> Node {
    let mut c = Node::new(&config(variant, params(Recipe::Election), 2), C2, 2);
    assert_eq!(
        c.start(0),
        vec![
            send(SERVER, ZkMsg::Connect { timeout: ms(2000) }),
            set(ZkTimer::Ping, Duration::from_nanos(666_666_666)),
        ]
    );
    let effects = c.recv(
        2,
        SERVER,
        ZkMsg::Connected {
            session: 2,
            timeout: ms(2000),
        },
    );
    assert_eq!(
        effects,
        vec![
            check_set(),
            send(SERVER, protected_create(&c, 2, 1)),
            reply_due(1),
        ]
    );
    c
}

/// The client's create, protected by its GUID.
fn protected_create(c: &Node, session: u64, xid: u64) -> ZkMsg {
    ZkMsg::Create {
        session,
        xid,
        path: format!("/election/_c_{}-n-2-", guid(c)),
        ephemeral: true,
        sequential: true,
    }
}

fn guid(c: &Node) -> String {
    c.client()
        .recipe
        .guid()
        .expect("a create was sent")
        .to_string()
}

/// The name of client 2's node with sequence `seq`.
fn mine(c: &Node, seq: u64) -> String {
    format!("_c_{}-n-2-{seq:010}", guid(c))
}

/// The reply to `xid` is due within a third of the session timeout.
fn reply_due(xid: u64) -> Effect<ZkMsg, ZkTimer> {
    set(ZkTimer::Request(xid), Duration::from_nanos(666_666_666))
}

fn answered(xid: u64) -> Effect<ZkMsg, ZkTimer> {
    Effect::CancelTimer {
        timer: ZkTimer::Request(xid),
    }
}

fn check_set() -> Effect<ZkMsg, ZkTimer> {
    set(ZkTimer::SessionCheck, Duration::from_nanos(1_333_333_333))
}

fn created(c: &mut Node, seq: u64) -> Vec<Effect<ZkMsg, ZkTimer>> {
    let path = format!("/election/{}", mine(c, seq));
    c.recv(
        4,
        SERVER,
        ZkMsg::Created {
            session: 2,
            xid: 1,
            path,
            czxid: 9,
        },
    )
}

fn children(xid: u64, names: &[&str]) -> ZkMsg {
    ZkMsg::Children {
        session: 2,
        xid,
        path: "/election".into(),
        children: names.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn created_node_reads_the_queue_with_a_watch_only_in_herd() {
    for (variant, watch) in [("correct", false), ("herd", true)] {
        let mut c = election_client(variant);
        assert_eq!(
            created(&mut c, 1),
            vec![
                check_set(),
                answered(1),
                send(
                    SERVER,
                    ZkMsg::GetChildren {
                        session: 2,
                        xid: 2,
                        path: "/election".into(),
                        watch
                    }
                ),
                reply_due(2),
            ]
        );
    }
}

#[test]
fn lowest_sequence_leads() {
    let mut c = election_client("correct");
    created(&mut c, 1);
    // Sorted by sequence, not by name: ours (...1) comes before n-1-...3.
    let me = mine(&c, 1);
    let effects = c.recv(6, SERVER, children(2, &["n-1-0000000003", &me]));
    assert_eq!(
        effects,
        vec![
            check_set(),
            answered(2),
            Effect::Observe(Observation::Leader { term: 1 })
        ]
    );
    assert!(c.client().recipe.leading());
}

#[test]
fn a_waiter_watches_its_predecessor_and_the_leader() {
    let mut c = election_client("correct");
    created(&mut c, 5);
    let me = mine(&c, 5);
    let effects = c.recv(
        6,
        SERVER,
        children(2, &["n-1-0000000000", &me, "n-3-0000000003"]),
    );
    assert_eq!(
        effects,
        vec![
            check_set(),
            answered(2),
            Effect::Observe(Observation::Follower {
                term: 0,
                leader: Some(NodeId(1))
            }),
            send(
                SERVER,
                ZkMsg::Exists {
                    session: 2,
                    xid: 3,
                    path: "/election/n-3-0000000003".into(),
                    watch: true
                }
            ),
            reply_due(3),
        ]
    );
    // The predecessor exists: then it watches the leader too.
    let effects = c.recv(
        7,
        SERVER,
        ZkMsg::Stat {
            session: 2,
            xid: 3,
            path: "/election/n-3-0000000003".into(),
            czxid: Some(8),
        },
    );
    assert_eq!(
        effects,
        vec![
            check_set(),
            answered(3),
            send(
                SERVER,
                ZkMsg::Exists {
                    session: 2,
                    xid: 4,
                    path: "/election/n-1-0000000000".into(),
                    watch: true
                }
            ),
            reply_due(4),
        ]
    );
    c.recv(
        7,
        SERVER,
        ZkMsg::Stat {
            session: 2,
            xid: 4,
            path: "/election/n-1-0000000000".into(),
            czxid: Some(5),
        },
    );
    // Its predecessor goes: it reads the queue again.
    let effects = c.recv(
        8,
        SERVER,
        ZkMsg::Watch {
            session: 2,
            path: "/election/n-3-0000000003".into(),
            event: ZkEvent::NodeDeleted,
            seq: 0,
        },
    );
    assert_eq!(
        effects,
        vec![
            check_set(),
            send(
                SERVER,
                ZkMsg::GetChildren {
                    session: 2,
                    xid: 5,
                    path: "/election".into(),
                    watch: false
                }
            ),
            reply_due(5),
        ]
    );
    // The same event again (a duplicate) changes nothing.
    let dup = ZkMsg::Watch {
        session: 2,
        path: "/election/n-3-0000000003".into(),
        event: ZkEvent::NodeDeleted,
        seq: 0,
    };
    assert_eq!(c.recv(9, SERVER, dup), vec![]);
}

#[test]
fn a_herd_waiter_sets_no_exists_watch_and_rereads_on_any_change() {
    let mut c = election_client("herd");
    created(&mut c, 5);
    let me = mine(&c, 5);
    let effects = c.recv(6, SERVER, children(2, &["n-1-0000000000", &me]));
    assert_eq!(
        effects,
        vec![
            check_set(),
            answered(2),
            Effect::Observe(Observation::Follower {
                term: 0,
                leader: Some(NodeId(1))
            }),
        ]
    );
    let effects = c.recv(
        9,
        SERVER,
        ZkMsg::Watch {
            session: 2,
            path: "/election".into(),
            event: ZkEvent::ChildrenChanged,
            seq: 0,
        },
    );
    assert_eq!(
        effects[1],
        send(
            SERVER,
            ZkMsg::GetChildren {
                session: 2,
                xid: 3,
                path: "/election".into(),
                watch: true
            }
        )
    );
}

fn leader_client() -> Node {
    let mut c = election_client("correct");
    created(&mut c, 1);
    let me = mine(&c, 1);
    c.recv(6, SERVER, children(2, &[&me]));
    c
}

#[test]
fn a_suspected_session_gives_up_leadership() {
    let mut c = leader_client();
    assert_eq!(
        c.timer(1400, ZkTimer::SessionCheck),
        vec![Effect::Observe(Observation::Follower {
            term: 1,
            leader: None
        })]
    );
    // The server answers again: it reads the queue and leads again.
    let effects = c.recv(
        1500,
        SERVER,
        ZkMsg::Pong {
            session: 2,
            events: 0,
        },
    );
    assert_eq!(
        effects[1],
        send(
            SERVER,
            ZkMsg::GetChildren {
                session: 2,
                xid: 3,
                path: "/election".into(),
                watch: false
            }
        )
    );
}

#[test]
fn an_expired_session_ends_leadership_and_reconnects() {
    let mut c = leader_client();
    assert_eq!(
        c.recv(5000, SERVER, ZkMsg::SessionExpired { session: 2 }),
        vec![
            Effect::Observe(Observation::Follower {
                term: 1,
                leader: None
            }),
            Effect::CancelTimer {
                timer: ZkTimer::SessionCheck
            },
            send(SERVER, ZkMsg::Connect { timeout: ms(2000) }),
        ]
    );
    // The new session re-joins the queue.
    let effects = c.recv(
        5002,
        SERVER,
        ZkMsg::Connected {
            session: 4,
            timeout: ms(2000),
        },
    );
    assert_eq!(effects[1], send(SERVER, protected_create(&c, 4, 3)));
}

#[test]
fn lock_holder_gets_the_czxid_as_its_token() {
    let cfg = config("correct", params(Recipe::Lock), 2);
    let mut c = Node::new(&cfg, C1, 2);
    c.start(0);
    c.timer(200, ZkTimer::Workload(WorkloadTimer::Think));
    c.recv(
        201,
        SERVER,
        ZkMsg::Connected {
            session: 1,
            timeout: ms(2000),
        },
    );
    c.recv(
        202,
        SERVER,
        ZkMsg::Created {
            session: 1,
            xid: 1,
            path: "/lock/counter/n-1-0000000000".into(),
            czxid: 7,
        },
    );
    let effects = c.recv(
        203,
        SERVER,
        ZkMsg::Children {
            session: 1,
            xid: 2,
            path: "/lock/counter".into(),
            children: vec!["n-1-0000000000".into()],
        },
    );
    assert_eq!(
        effects,
        vec![
            check_set(),
            answered(2),
            Effect::CancelTimer {
                timer: ZkTimer::Workload(WorkloadTimer::Retry)
            },
            Effect::Observe(Observation::Holds {
                resource: "counter".into(),
                token: 7
            }),
            Effect::Observe(Observation::Acts {
                resource: "counter".into(),
                token: 7
            }),
            send(
                NodeId(3),
                ZkMsg::Resource(ResourceMsg::Read {
                    resource: "counter".into(),
                    op: 1,
                    token: Some(7)
                })
            ),
            Effect::Observe(Observation::Invoke {
                f: "read".into(),
                key: "counter".into(),
                value: OpValue::Nil
            }),
            set(ZkTimer::Workload(WorkloadTimer::Request), ms(1000)),
        ]
    );
    // Losing the session ends the belief at once.
    let effects = c.recv(3000, SERVER, ZkMsg::SessionExpired { session: 1 });
    assert_eq!(
        effects[..2],
        [
            Effect::CancelTimer {
                timer: ZkTimer::SessionCheck
            },
            send(SERVER, ZkMsg::Connect { timeout: ms(2000) }),
        ]
    );
    // The read in flight is abandoned (its outcome unknown), then the hold ends.
    assert_eq!(
        effects[2..5],
        [
            Effect::CancelTimer {
                timer: ZkTimer::Workload(WorkloadTimer::Request)
            },
            Effect::Observe(Observation::Complete {
                f: "read".into(),
                key: "counter".into(),
                outcome: OpOutcome::Info,
                value: OpValue::Nil
            }),
            Effect::CancelTimer {
                timer: ZkTimer::Workload(WorkloadTimer::Validity)
            },
        ]
    );
    assert!(effects.contains(&Effect::Observe(Observation::Releases {
        resource: "counter".into()
    })));
}

#[test]
fn with_a_backoff_policy_an_expired_election_client_reconnects_after_growing_waits() {
    let mut p = params(Recipe::Election);
    p.backoff = Some(crate::backoff::BackoffParams {
        policy: "exponential".into(),
        base: HumanDuration(ms(100)),
        cap: HumanDuration(ms(1000)),
    });
    let mut c = Node::new(&config("correct", p, 2), C2, 2);
    c.start(0);
    c.recv(
        2,
        SERVER,
        ZkMsg::Connected {
            session: 2,
            timeout: ms(2000),
        },
    );
    // Expired: no Connect at once, a Ping timer after the first backoff instead.
    let effects = c.recv(5000, SERVER, ZkMsg::SessionExpired { session: 2 });
    assert_eq!(effects[effects.len() - 1..], [set(ZkTimer::Ping, ms(100))]);
    assert!(!effects.iter().any(|e| matches!(
        e,
        Effect::Send {
            msg: ZkMsg::Connect { .. },
            ..
        }
    )));
    // Each Ping without a session is a retry, observed, and waits twice as long.
    for (attempt, wait) in [(1, 200), (2, 400)] {
        assert_eq!(
            c.timer(5100, ZkTimer::Ping),
            vec![
                Effect::Observe(Observation::Retry {
                    what: "election".into(),
                    attempt
                }),
                send(SERVER, ZkMsg::Connect { timeout: ms(2000) }),
                set(ZkTimer::Ping, ms(wait)),
            ]
        );
    }
    // Connected: the backoff starts over for the next expiry.
    c.recv(
        6000,
        SERVER,
        ZkMsg::Connected {
            session: 5,
            timeout: ms(2000),
        },
    );
    let effects = c.recv(9000, SERVER, ZkMsg::SessionExpired { session: 5 });
    assert_eq!(effects.last(), Some(&set(ZkTimer::Ping, ms(100))));
    // The lock recipe keeps the backoff for its workload only.
    let mut p = params(Recipe::Lock);
    p.backoff = Some(crate::backoff::BackoffParams {
        policy: "none".into(),
        base: HumanDuration(ms(1)),
        cap: HumanDuration(ms(1)),
    });
    assert_eq!(config("correct", p, 2).reconnect, None);
}

#[test]
fn params_are_checked() {
    let err = serde_json::from_str::<ZooKeeperParams>(r#"{"recipe": "lock", "sesion": "1s"}"#);
    assert!(err.unwrap_err().to_string().contains("sesion"));
    let p: ZooKeeperParams = serde_json::from_str(r#"{"recipe": "lock"}"#).unwrap();
    assert_eq!(p.recipe, Recipe::Lock);
    let only_server = Cluster::uniform("server", 1);
    let err =
        ZooKeeper::configure_named(params(Recipe::Election), "correct", &only_server).unwrap_err();
    assert_eq!(err.field, "cluster.roles.client");
    let mut p = params(Recipe::Election);
    p.session_timeout = HumanDuration(ms(5));
    assert_eq!(
        ZooKeeper::configure_named(p, "correct", &cluster(2))
            .unwrap_err()
            .field,
        "session_timeout"
    );
    let info = ZooKeeper::info();
    assert_eq!(
        info.roles.iter().map(|r| r.name).collect::<Vec<_>>(),
        ["server", "client", "storage"]
    );
    assert_eq!(info.variants[0].name, "correct");
    assert!(info.variants.iter().all(|v| v.breaks.is_empty()));
}

// --- whole runs on the test network ---

/// Belief intervals (true time ns) per node: from `starts` to `ends` or a crash.
fn intervals(
    net: &Net<ZooKeeper>,
    starts: impl Fn(&Observation) -> bool,
    ends: impl Fn(&Observation) -> bool,
) -> Vec<(NodeId, u64, u64)> {
    let mut open: BTreeMap<NodeId, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for (t, node, obs) in &net.records {
        if starts(obs) {
            open.entry(*node).or_insert(*t);
        } else if ends(obs) || *obs == Observation::Crashed {
            if let Some(s) = open.remove(node) {
                out.push((*node, s, *t));
            }
        }
    }
    out.extend(open.into_iter().map(|(n, s)| (n, s, net.now)));
    out
}

fn overlapping(iv: &[(NodeId, u64, u64)]) -> usize {
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

fn leader_intervals(net: &Net<ZooKeeper>) -> Vec<(NodeId, u64, u64)> {
    intervals(
        net,
        |o| matches!(o, Observation::Leader { .. }),
        |o| matches!(o, Observation::Follower { .. }),
    )
}

fn hold_intervals(net: &Net<ZooKeeper>) -> Vec<(NodeId, u64, u64)> {
    intervals(
        net,
        |o| matches!(o, Observation::Holds { .. }),
        |o| matches!(o, Observation::Releases { .. }),
    )
}

fn recipe_client(net: &Net<ZooKeeper>, id: u32) -> &ZkRecipeClient {
    match net.node(id) {
        ZooKeeper::Client(c) => &c.recipe,
        _ => panic!("n{id} is not a client"),
    }
}

#[test]
fn election_hands_over_when_the_leader_crashes() {
    let cfg = config("correct", params(Recipe::Election), 3);
    let mut net = Net::start(cfg, cluster(3), 1);
    net.run_until(ms(1000));
    let leaders: Vec<u32> = (1..=3)
        .filter(|&i| recipe_client(&net, i).leading())
        .collect();
    assert_eq!(leaders.len(), 1);
    net.crash(leaders[0]);
    net.run_until(ms(10_000));
    let iv = leader_intervals(&net);
    assert_eq!(iv.len(), 2, "{iv:?}");
    assert_eq!(overlapping(&iv), 0);
    // The new leader took over once the old session expired, not before: its last
    // ping was at 667ms, so the server expired it at 2667ms.
    assert!(iv[1].1 >= 2_667_000_000, "{iv:?}");
}

#[test]
fn election_survives_a_partitioned_leader() {
    let cfg = config("correct", params(Recipe::Election), 3);
    let mut net = Net::start(cfg, cluster(3), 2);
    net.run_until(ms(1000));
    let leader = (1..=3).find(|&i| recipe_client(&net, i).leading()).unwrap();
    net.isolate(leader);
    net.run_until(ms(8000));
    net.heal();
    net.run_until(ms(15_000));
    let iv = leader_intervals(&net);
    assert!(iv.len() >= 2, "{iv:?}");
    assert_eq!(
        overlapping(&iv),
        0,
        "the partitioned leader suspected in time"
    );
}

#[test]
fn election_session_expiry_during_a_pause_makes_two_leaders() {
    let cfg = config("correct", params(Recipe::Election), 3);
    let mut net = Net::start(cfg, cluster(3), 3);
    net.run_until(ms(1000));
    let leader = (1..=3).find(|&i| recipe_client(&net, i).leading()).unwrap();
    net.pause(leader, ms(5000));
    net.run_until(ms(10_000));
    assert!(overlapping(&leader_intervals(&net)) >= 1);
}

fn lock_params(work_ms: u64) -> ZooKeeperParams {
    ZooKeeperParams {
        recipe: Recipe::Lock,
        work_duration: HumanDuration(ms(work_ms)),
        ..Default::default()
    }
}

fn accepted_writes(net: &Net<ZooKeeper>) -> Vec<(u64, Option<u64>)> {
    net.records
        .iter()
        .filter_map(|(t, _, o)| match o {
            Observation::Write {
                accepted: true,
                token,
                ..
            } => Some((*t, *token)),
            _ => None,
        })
        .collect()
}

#[test]
fn lock_recipe_excludes_and_loses_no_update() {
    let cfg = config("correct", lock_params(100), 3);
    let mut net = Net::start(cfg, cluster(3), 4);
    net.run_until(ms(20_000));
    let holds = hold_intervals(&net);
    assert!(holds.len() > 30, "{} holds", holds.len());
    assert_eq!(overlapping(&holds), 0);
    let acked = net
        .records
        .iter()
        .filter(|(_, _, o)| matches!(o, Observation::Acked { .. }))
        .count();
    let ZooKeeper::Storage(r) = net.node(4) else {
        panic!()
    };
    assert!(acked as i64 >= r.value("counter") - 1 && r.value("counter") >= acked as i64);
    // Tokens only grow.
    let tokens: Vec<_> = accepted_writes(&net).iter().map(|w| w.1.unwrap()).collect();
    assert!(tokens.windows(2).all(|w| w[0] <= w[1]), "{tokens:?}");
}

#[test]
fn lock_session_expiry_during_a_pause_breaks_exclusion_but_fencing_holds() {
    let cfg = config("correct", lock_params(1000), 3);
    let mut net = Net::start(cfg, cluster(3), 5);
    net.run_until(ms(600));
    let holder = (1..=3)
        .find(|&i| recipe_client(&net, i).leading())
        .expect("someone holds the lock");
    net.pause(holder, ms(5000));
    net.run_until(ms(12_000));
    assert!(overlapping(&hold_intervals(&net)) >= 1);
    let rejected = net
        .records
        .iter()
        .filter(|(_, _, o)| {
            matches!(o, Observation::Write { accepted: false, client, .. } if client.0 == holder)
        })
        .count();
    assert_eq!(rejected, 1, "the paused holder's stale write is fenced off");
    let tokens: Vec<_> = accepted_writes(&net).iter().map(|w| w.1.unwrap()).collect();
    assert!(tokens.windows(2).all(|w| w[0] <= w[1]), "{tokens:?}");
}

/// Ten clients queue for the lock; the first holder releases. Returns the watch
/// notifications and getChildren requests from that release to the next `Holds`.
fn one_handover(variant: &str) -> (usize, usize) {
    let cfg = config(variant, lock_params(3000), 10);
    let mut net = Net::<ZooKeeper>::start(cfg, cluster(10), 6);
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
    assert!(release <= second);
    (
        net.count_sent(release, second, |m| matches!(m, ZkMsg::Watch { .. })),
        net.count_sent(release, second, |m| matches!(m, ZkMsg::GetChildren { .. })),
    )
}

#[test]
fn one_release_wakes_one_waiter_but_the_herd_wakes_them_all() {
    assert_eq!(one_handover("correct"), (1, 1));
    assert_eq!(one_handover("herd"), (9, 9));
}

// --- CONNECTIONLOSS: lost replies and events, restarts ---

/// The messages among `effects`.
fn msgs(effects: &[Effect<ZkMsg, ZkTimer>]) -> Vec<ZkMsg> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send { msg, .. } => Some(msg.clone()),
            _ => None,
        })
        .collect()
}

/// Delivers `msgs` from `from` to `to` at `at_ms`; returns what `to` sends.
fn deliver(to: &mut Node, at_ms: i64, from: NodeId, msgs_in: Vec<ZkMsg>) -> Vec<ZkMsg> {
    let mut out = Vec::new();
    for m in msgs_in {
        out.extend(msgs(&to.recv(at_ms, from, m)));
    }
    out
}

/// Runs client `c` (node `id`) against the server until neither has more to say,
/// starting from `out` (the client's messages), 1ms a hop; returns every message the
/// client sent.
fn converse(
    c: &mut Node,
    id: NodeId,
    s: &mut Node,
    at_ms: &mut i64,
    out: Vec<ZkMsg>,
) -> Vec<ZkMsg> {
    let mut all = out.clone();
    let mut out = out;
    while !out.is_empty() {
        *at_ms += 1;
        let back = deliver(s, *at_ms, id, out);
        *at_ms += 1;
        out = deliver(c, *at_ms, SERVER, back);
        all.extend(out.clone());
    }
    all
}

fn is_create(m: &ZkMsg) -> bool {
    matches!(m, ZkMsg::Create { .. })
}

#[test]
fn a_lost_create_reply_is_found_by_its_guid_not_created_twice() {
    let cfg = config("correct", params(Recipe::Election), 2);
    let mut s = election_server();
    let mut c = Node::new(&cfg, C2, 2);
    let connect = msgs(&c.start(0));
    let connected = deliver(&mut s, 1, C2, connect);
    let create = deliver(&mut c, 2, SERVER, connected);
    assert!(matches!(create[..], [ZkMsg::Create { .. }]));
    // The server creates the node; its reply is lost.
    let lost = deliver(&mut s, 3, C2, create);
    assert!(matches!(lost[..], [ZkMsg::Created { .. }]), "{lost:?}");
    assert_eq!(s.server().children("/election").len(), 1);
    // A third of the session timeout later the reply is overdue: CONNECTIONLOSS. The
    // client reconnects in the same session.
    let out = msgs(&c.timer(700, ZkTimer::Request(1)));
    assert_eq!(out, vec![ZkMsg::Reconnect { session: 1, xid: 2 }]);
    assert!(c.client().recipe.reconnecting());
    let mut t = 700;
    let after = converse(&mut c, C2, &mut s, &mut t, out);
    // It looked for its GUID, found its node, and created no other.
    assert!(
        matches!(&after[1], ZkMsg::GetChildren { watch: false, .. }),
        "{after:?}"
    );
    assert!(!after.iter().any(is_create), "{after:?}");
    let children = s.server().children("/election");
    assert_eq!(children.len(), 1, "{children:?}");
    assert_eq!(
        c.client().recipe.node(),
        Some(format!("/election/{}", children[0]).as_str())
    );
    assert!(children[0].starts_with(&format!("_c_{}-n-2-", guid(&c))));
    assert!(c.client().recipe.leading());
}

#[test]
fn a_create_lost_on_the_way_is_retried_with_the_same_guid() {
    let cfg = config("correct", params(Recipe::Election), 2);
    let mut s = election_server();
    let mut c = Node::new(&cfg, C2, 2);
    let connect = msgs(&c.start(0));
    let connected = deliver(&mut s, 1, C2, connect);
    let first = deliver(&mut c, 2, SERVER, connected); // lost: the server never sees it
    let out = msgs(&c.timer(700, ZkTimer::Request(1)));
    let mut t = 700;
    let after = converse(&mut c, C2, &mut s, &mut t, out);
    let creates: Vec<&ZkMsg> = after.iter().filter(|m| is_create(m)).collect();
    assert_eq!(creates.len(), 1, "{after:?}");
    let path = |m: &ZkMsg| match m {
        ZkMsg::Create { path, .. } => path.clone(),
        _ => unreachable!(),
    };
    assert_eq!(path(creates[0]), path(&first[0]), "the same GUID");
    assert_eq!(s.server().children("/election").len(), 1);
    assert!(c.client().recipe.leading());
}

/// A server and two election clients in the queue: C1 leads, C2 watches C1's node.
fn two_clients_in_queue() -> (Node, Node, Node, i64) {
    let cfg = config("correct", params(Recipe::Election), 2);
    let mut s = election_server();
    let mut c1 = Node::new(&cfg, C1, 2);
    let mut c2 = Node::new(&cfg, C2, 2);
    let mut t = 0;
    let out = msgs(&c1.start(t));
    converse(&mut c1, C1, &mut s, &mut t, out);
    let out = msgs(&c2.start(t));
    converse(&mut c2, C2, &mut s, &mut t, out);
    assert!(c1.client().recipe.leading());
    assert!(!c2.client().recipe.leading());
    (s, c1, c2, t)
}

#[test]
fn a_lost_watch_event_is_noticed_and_set_again_after_reconnecting() {
    let (mut s, _c1, mut c2, t) = two_clients_in_queue();
    // C2 pings; C1 has gone silent, and its session expires.
    let ping = msgs(&c2.timer(t + 600, ZkTimer::Ping));
    let pong = deliver(&mut s, t + 601, C2, ping);
    deliver(&mut c2, t + 602, SERVER, pong);
    let lost = msgs(&s.timer(t + 2000, ZkTimer::Expire(1)));
    assert!(
        matches!(
            &lost[..],
            [ZkMsg::Watch {
                session: 2,
                event: ZkEvent::NodeDeleted,
                seq: 0,
                ..
            }]
        ),
        "{lost:?}"
    );
    // The event is lost. C2's next pong says one event was sent; it waits a ping
    // interval for it, then counts the connection as lost.
    let ping = msgs(&c2.timer(t + 2100, ZkTimer::Ping));
    let pong = deliver(&mut s, t + 2101, C2, ping);
    assert_eq!(
        pong,
        vec![ZkMsg::Pong {
            session: 2,
            events: 1
        }]
    );
    deliver(&mut c2, t + 2102, SERVER, pong);
    assert!(!c2.client().recipe.leading());
    let out = msgs(&c2.timer(t + 2800, ZkTimer::Ping));
    assert!(
        matches!(out[..], [ZkMsg::Reconnect { session: 2, .. }]),
        "{out:?}"
    );
    // Reconnected, it sets its watches again; the server sees the watched node is
    // gone and fires at once; C2 reads the queue and leads.
    let mut t = t + 2800;
    let after = converse(&mut c2, C2, &mut s, &mut t, out);
    assert!(
        after
            .iter()
            .any(|m| matches!(m, ZkMsg::SetWatches { exists, .. } if exists.len() == 1)),
        "{after:?}"
    );
    assert!(c2.client().recipe.leading());
}

#[test]
fn a_lost_get_children_reply_is_retried_after_reconnecting() {
    let cfg = config("correct", params(Recipe::Election), 2);
    let mut s = election_server();
    let mut c = Node::new(&cfg, C2, 2);
    let connect = msgs(&c.start(0));
    let connected = deliver(&mut s, 1, C2, connect);
    let create = deliver(&mut c, 2, SERVER, connected);
    let created = deliver(&mut s, 3, C2, create);
    let get_children = deliver(&mut c, 4, SERVER, created);
    assert!(matches!(
        get_children[..],
        [ZkMsg::GetChildren { xid: 2, .. }]
    ));
    let _lost = deliver(&mut s, 5, C2, get_children);
    assert!(!c.client().recipe.leading());
    let out = msgs(&c.timer(700, ZkTimer::Request(2)));
    let mut t = 700;
    let after = converse(&mut c, C2, &mut s, &mut t, out);
    assert!(
        matches!(
            after[..],
            [ZkMsg::Reconnect { .. }, ZkMsg::GetChildren { .. }]
        ),
        "{after:?}"
    );
    assert!(c.client().recipe.leading());
    // A reply that comes after all (late, or duplicated) changes nothing.
    let late = ZkMsg::Children {
        session: 1,
        xid: 2,
        path: "/election".into(),
        children: s.server().children("/election"),
    };
    assert_eq!(c.recv(t + 1, SERVER, late), vec![]);
}

#[test]
fn a_duplicated_request_is_handled_once() {
    let mut s = election_server();
    s.recv(1, C1, ZkMsg::Connect { timeout: ms(2000) });
    s.recv(2, C1, create(1, 1, 1));
    assert_eq!(s.recv(3, C1, create(1, 1, 1)), vec![]);
    assert_eq!(s.server().children("/election"), vec!["n-1-0000000000"]);
}

#[test]
fn a_restarted_client_gets_a_new_session_and_its_old_node_expires() {
    let cfg = config("correct", params(Recipe::Election), 3);
    let mut net = Net::start(cfg, cluster(3), 5);
    net.run_until(ms(1000));
    let leader = (1..=3).find(|&i| recipe_client(&net, i).leading()).unwrap();
    let old_session = recipe_client(&net, leader).session().unwrap();
    let old_node = recipe_client(&net, leader).node().unwrap().to_string();
    net.crash(leader);
    net.restart(leader);
    net.run_until(ms(1100));
    let new_session = recipe_client(&net, leader).session().unwrap();
    assert_ne!(new_session, old_session);
    let server = |net: &Net<ZooKeeper>| match net.node(0) {
        ZooKeeper::Server(s) => s.data().clone(),
        _ => unreachable!(),
    };
    // The old session lives on at the server until its timeout, with its node.
    assert!(server(&net).sessions.contains_key(&old_session));
    assert!(server(&net).nodes.contains_key(&old_node));
    net.run_until(ms(10_000));
    assert!(!server(&net).sessions.contains_key(&old_session));
    assert!(!server(&net).nodes.contains_key(&old_node));
    // Its expiry woke the next in line, and every follower learned who leads now.
    let leaders: Vec<u32> = (1..=3)
        .filter(|&i| recipe_client(&net, i).leading())
        .collect();
    assert_eq!(leaders.len(), 1, "{leaders:?}");
    let beliefs = net.beliefs();
    for i in 1..=3u32 {
        if i != leaders[0] {
            assert!(
                matches!(beliefs[&NodeId(i)], Observation::Follower { leader: Some(l), .. } if l == NodeId(leaders[0])),
                "n{i}: {:?}",
                beliefs[&NodeId(i)]
            );
        }
    }
}

#[test]
fn a_watch_event_that_overtakes_the_exists_reply_still_counts() {
    let mut c = election_client("correct");
    created(&mut c, 5);
    let me = mine(&c, 5);
    c.recv(6, SERVER, children(2, &["n-1-0000000000", &me]));
    // The predecessor goes before the reply to the exists that watched it arrives.
    let effects = c.recv(
        7,
        SERVER,
        ZkMsg::Watch {
            session: 2,
            path: "/election/n-1-0000000000".into(),
            event: ZkEvent::NodeDeleted,
            seq: 0,
        },
    );
    assert!(
        matches!(msgs(&effects)[..], [ZkMsg::GetChildren { xid: 4, .. }]),
        "{effects:?}"
    );
    // The late reply changes nothing.
    let stat = ZkMsg::Stat {
        session: 2,
        xid: 3,
        path: "/election/n-1-0000000000".into(),
        czxid: Some(4),
    };
    assert_eq!(msgs(&c.recv(8, SERVER, stat)), vec![]);
}
