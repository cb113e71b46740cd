use super::*;
use crate::testkit::Net;
use tenure_core::{Effect, Rng, SplitMix64, Step, StorageMap};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(ms: i64) -> LocalTime {
    LocalTime(ms * 1_000_000)
}

fn cluster() -> Cluster {
    Cluster::uniform("server", 5)
}

fn config(variant: &str) -> LeaderLeaseConfig {
    LeaderLease::configure_named(LeaderLeaseParams::default(), variant, &cluster()).unwrap()
}

/// Without the `resign` workload: a leader keeps its lease until something takes it
/// (for the tests that isolate or slow the leader they found).
fn steady(variant: &str) -> LeaderLeaseConfig {
    let params = LeaderLeaseParams {
        resign: false,
        ..Default::default()
    };
    LeaderLease::configure_named(params, variant, &cluster()).unwrap()
}

/// One node and what it needs to run a handler: its storage and its rng.
struct Node {
    p: LeaderLease,
    storage: StorageMap,
    rng: SplitMix64,
    /// Whether `sync` fails (a disk error).
    sync_fails: bool,
}

impl Node {
    fn new(variant: &str, me: u32) -> Node {
        Node {
            p: LeaderLease::new(&config(variant), NodeId(me), &cluster()),
            storage: StorageMap::new(),
            rng: SplitMix64(7),
            sync_fails: false,
        }
    }

    /// What the node's rng will draw next, for `duration_between(lo, hi)`.
    fn next_draw(&self, lo: Duration, hi: Duration) -> Duration {
        self.rng.clone().duration_between(lo, hi)
    }

    fn run(
        &mut self,
        mono: LocalTime,
        wall: LocalTime,
        f: impl FnOnce(&mut LeaderLease, &mut dyn Env<LeaseMsg, LeaseTimer>),
    ) -> Vec<Effect<LeaseMsg, LeaseTimer>> {
        let c = cluster();
        let me = self.p.me;
        let mut step = Step::new(me, &c, mono, wall, &mut self.storage, &mut self.rng);
        step.sync_fails = self.sync_fails;
        f(&mut self.p, &mut step);
        step.effects
    }

    fn start(&mut self, mono_ms: i64) -> Vec<Effect<LeaseMsg, LeaseTimer>> {
        self.run(at(mono_ms), at(mono_ms), |p, env| p.on_start(env))
    }
    fn timer(&mut self, mono_ms: i64, timer: LeaseTimer) -> Vec<Effect<LeaseMsg, LeaseTimer>> {
        self.run(at(mono_ms), at(mono_ms), |p, env| p.on_timer(env, timer))
    }
    fn recv(
        &mut self,
        mono_ms: i64,
        from: u32,
        msg: LeaseMsg,
    ) -> Vec<Effect<LeaseMsg, LeaseTimer>> {
        self.run(at(mono_ms), at(mono_ms), |p, env| {
            p.on_message(env, NodeId(from), msg)
        })
    }
}

fn vote_store(term: u64, voted_for: u32) -> Effect<LeaseMsg, LeaseTimer> {
    Effect::Store {
        key: VOTE_KEY.into(),
        value: Some(format!("{{\"term\":{term},\"voted_for\":{voted_for}}}")),
    }
}

fn send(to: u32, msg: LeaseMsg) -> Effect<LeaseMsg, LeaseTimer> {
    Effect::Send {
        to: NodeId(to),
        msg,
    }
}

/// Node 0 started at 0 and stood for election at 3s (after its quiet period).
fn candidate(variant: &str) -> Node {
    let mut n = Node::new(variant, 0);
    n.start(0);
    n.timer(3000, LeaseTimer::Election);
    n
}

#[test]
fn start_follows_and_arms_an_election_timer() {
    let mut n = Node::new("correct", 0);
    let timeout = n.next_draw(ms(1000), ms(1500));
    assert_eq!(
        n.start(0)[..2],
        [
            Effect::Observe(Observation::Follower {
                term: 0,
                leader: None
            }),
            Effect::SetTimer {
                timer: LeaseTimer::Election,
                after: timeout
            },
        ]
    );
}

#[test]
fn election_in_the_quiet_period_waits_it_out() {
    let mut n = Node::new("correct", 0);
    n.start(0);
    let jitter = n.next_draw(Duration::ZERO, ms(500));
    assert_eq!(
        n.timer(1200, LeaseTimer::Election),
        vec![Effect::SetTimer {
            timer: LeaseTimer::Election,
            after: ms(800) + jitter
        }]
    );
    assert_eq!(n.p.term(), 0);
}

#[test]
fn election_bumps_the_term_stores_the_vote_and_asks_everyone() {
    let mut n = Node::new("correct", 0);
    n.start(0);
    let timeout = n.next_draw(ms(1000), ms(1500));
    let req = LeaseMsg::RequestLease {
        term: 1,
        round: 1,
        leader: false,
    };
    assert_eq!(
        n.timer(3000, LeaseTimer::Election),
        vec![
            vote_store(1, 0),
            Effect::Sync { ok: true },
            Effect::Observe(Observation::Candidate { term: 1 }),
            send(1, req.clone()),
            send(2, req.clone()),
            send(3, req.clone()),
            send(4, req),
            Effect::SetTimer {
                timer: LeaseTimer::Election,
                after: timeout
            },
        ]
    );
    assert_eq!(
        n.p.promise(),
        Some(Promise {
            to: NodeId(0),
            until: at(5000),
            term: 1,
            leader: false
        })
    );
}

#[test]
fn voter_grants_and_promises_by_its_own_clock() {
    let mut v = Node::new("correct", 1);
    v.start(0);
    let timeout = v.next_draw(ms(1000), ms(1500));
    let effects = v.recv(
        3002,
        0,
        LeaseMsg::RequestLease {
            term: 1,
            round: 1,
            leader: false,
        },
    );
    assert_eq!(
        effects,
        vec![
            vote_store(1, 0),
            Effect::Sync { ok: true },
            Effect::Observe(Observation::Follower {
                term: 1,
                leader: None
            }),
            send(0, LeaseMsg::Grant { term: 1, round: 1 }),
            Effect::SetTimer {
                timer: LeaseTimer::Election,
                after: timeout
            },
        ]
    );
    assert_eq!(
        v.p.promise(),
        Some(Promise {
            to: NodeId(0),
            until: at(5002),
            term: 1,
            leader: false
        })
    );
}

#[test]
fn voter_refuses_another_node_until_its_promise_runs_out() {
    let mut v = Node::new("correct", 1);
    v.start(0);
    v.recv(
        3002,
        0,
        LeaseMsg::RequestLease {
            term: 1,
            round: 1,
            leader: false,
        },
    );
    // Promised to a mere candidate: no hint (the candidate may release it early).
    assert_eq!(
        v.recv(
            4000,
            2,
            LeaseMsg::RequestLease {
                term: 2,
                round: 1,
                leader: false
            }
        ),
        vec![send(
            2,
            LeaseMsg::Reject {
                term: 1,
                round: 1,
                retry_after: None
            }
        )]
    );
    // Promised to a leader (a renewal): come back when its lease has run out.
    v.recv(
        4100,
        0,
        LeaseMsg::RequestLease {
            term: 1,
            round: 2,
            leader: true,
        },
    );
    assert_eq!(
        v.recv(
            4200,
            2,
            LeaseMsg::RequestLease {
                term: 2,
                round: 2,
                leader: false
            }
        ),
        vec![send(
            2,
            LeaseMsg::Reject {
                term: 1,
                round: 2,
                retry_after: Some(ms(1900))
            }
        )]
    );
    // Its term did not move, so the leader's renewals still get through.
    assert_eq!(v.p.term(), 1);
}

#[test]
fn a_split_vote_releases_the_grants_and_steps_back() {
    let mut n = candidate("correct");
    n.recv(3004, 1, LeaseMsg::Grant { term: 1, round: 1 });
    let none = LeaseMsg::Reject {
        term: 1,
        round: 1,
        retry_after: None,
    };
    assert_eq!(n.recv(3005, 2, none.clone()), vec![]);
    assert_eq!(n.recv(3005, 3, none.clone()), vec![]);
    // A third refusal of five: this attempt cannot win.
    let jitter = n.next_draw(Duration::ZERO, ms(500));
    assert_eq!(
        n.recv(3006, 4, none),
        vec![
            send(1, LeaseMsg::Release { term: 1, round: 1 }),
            Effect::SetTimer {
                timer: LeaseTimer::Election,
                after: jitter
            },
        ]
    );
    assert_eq!(n.p.promise(), None);
    // The next timer starts a fresh attempt in a higher term.
    let effects = n.timer(3300, LeaseTimer::Election);
    assert_eq!(
        effects[..3],
        [
            vote_store(2, 0),
            Effect::Sync { ok: true },
            Effect::Observe(Observation::Candidate { term: 2 }),
        ]
    );
}

#[test]
fn an_attempt_out_of_time_is_released_before_trying_again() {
    let mut n = candidate("correct");
    n.recv(3004, 1, LeaseMsg::Grant { term: 1, round: 1 });
    let jitter = n.next_draw(Duration::ZERO, ms(500));
    assert_eq!(
        n.timer(4200, LeaseTimer::Election),
        vec![
            send(1, LeaseMsg::Release { term: 1, round: 1 }),
            Effect::SetTimer {
                timer: LeaseTimer::Election,
                after: jitter
            },
        ]
    );
    // A late grant for the released attempt is ignored.
    assert_eq!(
        n.recv(4201, 2, LeaseMsg::Grant { term: 1, round: 1 }),
        vec![]
    );
}

#[test]
fn release_frees_a_candidate_promise_but_not_a_leader_one() {
    let mut v = Node::new("correct", 1);
    v.start(0);
    v.recv(
        3002,
        0,
        LeaseMsg::RequestLease {
            term: 1,
            round: 1,
            leader: false,
        },
    );
    assert_eq!(
        v.recv(3010, 0, LeaseMsg::Release { term: 1, round: 1 }),
        vec![]
    );
    assert_eq!(v.p.promise(), None);
    v.recv(
        3020,
        0,
        LeaseMsg::RequestLease {
            term: 1,
            round: 2,
            leader: true,
        },
    );
    v.recv(3030, 0, LeaseMsg::Release { term: 1, round: 2 });
    assert!(v.p.promise().is_some());
}

#[test]
fn voter_refuses_a_stale_term_and_a_second_candidate_in_one_term() {
    let mut v = Node::new("correct", 1);
    v.start(0);
    v.recv(
        3002,
        0,
        LeaseMsg::RequestLease {
            term: 3,
            round: 1,
            leader: false,
        },
    );
    assert_eq!(
        v.recv(
            6000,
            2,
            LeaseMsg::RequestLease {
                term: 2,
                round: 4,
                leader: false
            }
        ),
        vec![send(
            2,
            LeaseMsg::Reject {
                term: 3,
                round: 4,
                retry_after: None
            }
        )]
    );
    assert_eq!(
        v.recv(
            6001,
            2,
            LeaseMsg::RequestLease {
                term: 3,
                round: 5,
                leader: false
            }
        ),
        vec![send(
            2,
            LeaseMsg::Reject {
                term: 3,
                round: 5,
                retry_after: None
            }
        )]
    );
}

#[test]
fn renewal_extends_the_promise_and_names_the_leader() {
    let mut v = Node::new("correct", 1);
    v.start(0);
    v.recv(
        3002,
        0,
        LeaseMsg::RequestLease {
            term: 1,
            round: 1,
            leader: false,
        },
    );
    let timeout = v.next_draw(ms(1000), ms(1500));
    assert_eq!(
        v.recv(
            3502,
            0,
            LeaseMsg::RequestLease {
                term: 1,
                round: 2,
                leader: true
            }
        ),
        vec![
            Effect::Observe(Observation::Follower {
                term: 1,
                leader: Some(NodeId(0))
            }),
            send(0, LeaseMsg::Grant { term: 1, round: 2 }),
            Effect::SetTimer {
                timer: LeaseTimer::Election,
                after: timeout
            },
        ]
    );
    assert_eq!(
        v.p.promise(),
        Some(Promise {
            to: NodeId(0),
            until: at(5502),
            term: 1,
            leader: true
        })
    );
}

#[test]
fn majority_of_grants_starts_the_lease_measured_from_the_send_time() {
    let mut n = candidate("correct");
    assert_eq!(
        n.recv(3005, 1, LeaseMsg::Grant { term: 1, round: 1 }),
        vec![]
    );
    // Sent at 3s; lease 2s minus margin 2s*2*0.01 + 10ms = 50ms: it ends at 4.95s.
    assert_eq!(
        n.recv(3007, 2, LeaseMsg::Grant { term: 1, round: 1 }),
        vec![
            Effect::Observe(Observation::Leader { term: 1 }),
            Effect::Observe(Observation::LeaseStart { term: 1 }),
            Effect::CancelTimer {
                timer: LeaseTimer::Election
            },
            Effect::SetTimer {
                timer: LeaseTimer::Renew,
                after: ms(500)
            },
            Effect::SetTimer {
                timer: LeaseTimer::LeaseEnd,
                after: ms(1943)
            },
            // The lease runs: the first read is served at once, the next one
            // `serve_interval` (10ms by default) later.
            Effect::Observe(Observation::Serves { term: 1 }),
            Effect::SetTimer {
                timer: LeaseTimer::Serve,
                after: ms(10)
            },
        ]
    );
    // A fourth grant changes nothing.
    assert_eq!(
        n.recv(3008, 3, LeaseMsg::Grant { term: 1, round: 1 }),
        vec![]
    );
    assert_eq!(n.p.role(), LeaseRole::Leader);
}

#[test]
fn no_drift_margin_ends_the_lease_a_full_duration_after_sending() {
    let mut n = candidate("no-drift-margin");
    n.recv(3005, 1, LeaseMsg::Grant { term: 1, round: 1 });
    let effects = n.recv(3007, 2, LeaseMsg::Grant { term: 1, round: 1 });
    assert_eq!(
        effects[4],
        Effect::SetTimer {
            timer: LeaseTimer::LeaseEnd,
            after: ms(1993)
        }
    );
}

#[test]
fn grants_for_an_old_round_or_after_the_lease_would_end_are_ignored() {
    let mut n = candidate("correct");
    assert_eq!(
        n.recv(3005, 1, LeaseMsg::Grant { term: 1, round: 9 }),
        vec![]
    );
    n.recv(3005, 1, LeaseMsg::Grant { term: 1, round: 1 });
    // Grants that arrive after sent_at + lease - margin are worth nothing.
    assert_eq!(
        n.recv(4950, 2, LeaseMsg::Grant { term: 1, round: 1 }),
        vec![]
    );
    assert_eq!(n.p.role(), LeaseRole::Candidate);
}

fn leader(variant: &str) -> Node {
    let mut n = candidate(variant);
    n.recv(3005, 1, LeaseMsg::Grant { term: 1, round: 1 });
    n.recv(3007, 2, LeaseMsg::Grant { term: 1, round: 1 });
    n
}

#[test]
fn renew_timer_asks_again_and_rearms() {
    let mut n = leader("correct");
    let req = LeaseMsg::RequestLease {
        term: 1,
        round: 2,
        leader: true,
    };
    assert_eq!(
        n.timer(3500, LeaseTimer::Renew),
        vec![
            send(1, req.clone()),
            send(2, req.clone()),
            send(3, req.clone()),
            send(4, req),
            Effect::SetTimer {
                timer: LeaseTimer::Renew,
                after: ms(500)
            },
        ]
    );
    n.recv(3503, 3, LeaseMsg::Grant { term: 1, round: 2 });
    // 3.5s + 1.95s = 5.45s.
    assert_eq!(
        n.recv(3504, 4, LeaseMsg::Grant { term: 1, round: 2 }),
        vec![Effect::SetTimer {
            timer: LeaseTimer::LeaseEnd,
            after: ms(1946)
        }]
    );
}

#[test]
fn lease_end_steps_down() {
    let mut n = leader("correct");
    let timeout = n.next_draw(ms(1000), ms(1500));
    assert_eq!(
        n.timer(4950, LeaseTimer::LeaseEnd),
        vec![
            Effect::Observe(Observation::LeaseEnd { term: 1 }),
            Effect::Observe(Observation::Follower {
                term: 1,
                leader: None
            }),
            Effect::CancelTimer {
                timer: LeaseTimer::Renew
            },
            Effect::CancelTimer {
                timer: LeaseTimer::Serve
            },
            Effect::SetTimer {
                timer: LeaseTimer::Election,
                after: timeout
            },
        ]
    );
    assert_eq!(n.p.role(), LeaseRole::Follower);
}

/// client-go's `ReleaseOnCancel`: the leader stops acting on its lease (no more
/// `Serves`, renewals or lease-end timer) before it tells the voters, then stands again
/// only after every follower's timer could have fired.
#[test]
fn resign_stops_acting_then_releases_the_voters_and_steps_back() {
    let mut n = leader("correct");
    let back = n.next_draw(ms(1000), ms(1500));
    assert_eq!(
        n.timer(4000, LeaseTimer::Resign),
        vec![
            Effect::CancelTimer {
                timer: LeaseTimer::LeaseEnd
            },
            Effect::CancelTimer {
                timer: LeaseTimer::Renew
            },
            Effect::CancelTimer {
                timer: LeaseTimer::Serve
            },
            Effect::Observe(Observation::LeaseEnd { term: 1 }),
            Effect::Observe(Observation::Follower {
                term: 1,
                leader: None
            }),
            send(1, LeaseMsg::Resign { term: 1 }),
            send(2, LeaseMsg::Resign { term: 1 }),
            send(3, LeaseMsg::Resign { term: 1 }),
            send(4, LeaseMsg::Resign { term: 1 }),
            Effect::SetTimer {
                timer: LeaseTimer::Election,
                after: ms(1500) + back
            },
        ]
    );
    assert_eq!(n.p.role(), LeaseRole::Follower);
    assert_eq!(n.p.lease_end(), None);
    // Not leading, the moment passes without anything to release.
    assert_eq!(n.timer(4100, LeaseTimer::Resign), vec![]);
}

/// The moment to release is drawn once, at start, after the quiet period, the first
/// election and one renewal, and within one lease of that.
#[test]
fn start_draws_the_one_moment_to_release() {
    let mut n = Node::new("correct", 0);
    let mut rng = n.rng.clone();
    let timeout = rng.duration_between(ms(1000), ms(1500));
    // q = lease 2s + election timeout max 1.5s + renew 0.5s.
    let at = rng.duration_between(ms(4000), ms(6000));
    assert_eq!(
        n.start(0)[1..],
        [
            Effect::SetTimer {
                timer: LeaseTimer::Election,
                after: timeout
            },
            Effect::SetTimer {
                timer: LeaseTimer::Resign,
                after: at
            },
        ]
    );
    let mut n = Node {
        p: LeaderLease::new(&steady("correct"), NodeId(0), &cluster()),
        ..Node::new("correct", 0)
    };
    assert!(n.start(0).iter().all(|e| !matches!(
        e,
        Effect::SetTimer {
            timer: LeaseTimer::Resign,
            ..
        }
    )));
}

/// A voter forgets its promise to a leader that resigned (a `Release` would not: a
/// leader's promise is kept), so another candidate is granted at once; a stale or
/// foreign resignation changes nothing.
#[test]
fn resign_frees_a_leader_promise_for_its_term_only() {
    let mut v = Node::new("correct", 1);
    v.start(0);
    let renewal = LeaseMsg::RequestLease {
        term: 1,
        round: 1,
        leader: true,
    };
    v.recv(3000, 0, renewal);
    assert!(v.p.promise().is_some_and(|p| p.leader));
    v.recv(3010, 0, LeaseMsg::Release { term: 1, round: 1 });
    assert!(
        v.p.promise().is_some(),
        "a release keeps a leader's promise"
    );
    v.recv(3020, 2, LeaseMsg::Resign { term: 1 });
    v.recv(3020, 0, LeaseMsg::Resign { term: 0 });
    assert!(
        v.p.promise().is_some(),
        "only its holder's resignation of its term"
    );
    v.recv(3030, 0, LeaseMsg::Resign { term: 1 });
    assert_eq!(v.p.promise(), None);
    let effects = v.recv(
        3040,
        2,
        LeaseMsg::RequestLease {
            term: 2,
            round: 1,
            leader: false,
        },
    );
    assert!(
        effects.contains(&send(2, LeaseMsg::Grant { term: 2, round: 1 })),
        "{effects:?}"
    );
}

/// A leader whose lease ran out while its resignation was due (a pause) steps down as
/// its lease-end timer would: nothing to release.
#[test]
fn resign_after_the_lease_ran_out_is_a_lease_end() {
    let mut n = leader("correct");
    let effects = n.timer(6000, LeaseTimer::Resign);
    assert_eq!(
        effects[1],
        Effect::Observe(Observation::LeaseEnd { term: 1 })
    );
    assert!(
        effects.iter().all(|e| !matches!(e, Effect::Send { .. })),
        "{effects:?}"
    );
}

#[test]
fn wall_clock_lease_believes_longer_after_a_backward_step() {
    let mut n = leader("wall-clock-lease");
    // The wall clock was stepped back 3s: the timer fires on time, the wall says 1.95s.
    let effects = n.run(at(4950), at(1950), |p, env| {
        p.on_timer(env, LeaseTimer::LeaseEnd)
    });
    assert_eq!(
        effects,
        vec![Effect::SetTimer {
            timer: LeaseTimer::LeaseEnd,
            after: ms(3000)
        }]
    );
    assert_eq!(n.p.role(), LeaseRole::Leader);
    // The monotonic lease ignores the wall clock.
    let mut m = leader("correct");
    let effects = m.run(at(4950), at(1950), |p, env| {
        p.on_timer(env, LeaseTimer::LeaseEnd)
    });
    assert_eq!(
        effects[0],
        Effect::Observe(Observation::LeaseEnd { term: 1 })
    );
}

#[test]
fn candidate_retries_just_after_the_promise_it_was_refused_on() {
    let mut n = candidate("correct");
    let jitter = n.next_draw(Duration::ZERO, ms(500));
    assert_eq!(
        n.recv(
            3004,
            1,
            LeaseMsg::Reject {
                term: 0,
                round: 1,
                retry_after: Some(ms(700))
            }
        ),
        vec![Effect::SetTimer {
            timer: LeaseTimer::Election,
            after: ms(700) + jitter
        }]
    );
    n.recv(3004, 3, LeaseMsg::Grant { term: 1, round: 1 });
    // A higher term is adopted (and stored) but the vote is not, and the stale attempt
    // is given up: its voters are released (the timer stays where the lease hint put it).
    assert_eq!(
        n.recv(
            3005,
            2,
            LeaseMsg::Reject {
                term: 4,
                round: 1,
                retry_after: None
            }
        ),
        vec![
            Effect::Store {
                key: VOTE_KEY.into(),
                value: Some("{\"term\":4,\"voted_for\":null}".into())
            },
            Effect::Sync { ok: true },
            send(3, LeaseMsg::Release { term: 1, round: 1 }),
        ]
    );
    // A grant for the stale attempt is ignored.
    assert_eq!(
        n.recv(3006, 4, LeaseMsg::Grant { term: 1, round: 1 }),
        vec![]
    );
}

#[test]
fn restart_reads_the_vote_back() {
    let n = candidate("correct");
    let storage = n.storage.clone();
    let mut fresh = Node::new("correct", 0);
    fresh.storage = storage;
    fresh.start(9000);
    assert_eq!(fresh.p.term(), 1);
    // And grants nothing during its quiet period, not even to the node it voted for.
    assert_eq!(
        fresh.recv(
            9001,
            2,
            LeaseMsg::RequestLease {
                term: 2,
                round: 1,
                leader: false
            }
        ),
        vec![send(
            2,
            LeaseMsg::Reject {
                term: 1,
                round: 1,
                retry_after: Some(ms(1999))
            }
        )]
    );
}

#[test]
fn params_reject_unknown_fields_and_bad_values() {
    let err = serde_json::from_str::<LeaderLeaseParams>(r#"{"lease_durration": "2s"}"#);
    assert!(err.unwrap_err().to_string().contains("lease_durration"));
    let p: LeaderLeaseParams =
        serde_json::from_str(r#"{"lease_duration": "4s", "election_timeout": ["1s", "2s"]}"#)
            .unwrap();
    assert_eq!(p.lease_duration.0, ms(4000));

    let bad = |p: LeaderLeaseParams| {
        LeaderLease::configure_named(p, "correct", &cluster())
            .unwrap_err()
            .field
    };
    assert_eq!(
        bad(LeaderLeaseParams {
            max_drift: 0.7,
            ..Default::default()
        }),
        "max_drift"
    );
    assert_eq!(
        bad(LeaderLeaseParams {
            renew_interval: HumanDuration(ms(1990)),
            ..Default::default()
        }),
        "renew_interval"
    );
    assert_eq!(
        bad(LeaderLeaseParams {
            election_timeout: [HumanDuration(ms(900)), HumanDuration(ms(800))],
            ..Default::default()
        }),
        "election_timeout"
    );
    assert_eq!(
        bad(LeaderLeaseParams {
            lease_duration: HumanDuration(ms(10)),
            ..Default::default()
        }),
        "lease_duration"
    );
    assert_eq!(config("correct").margin, ms(50));
    assert_eq!(config("no-drift-margin").margin, Duration::ZERO);
}

#[test]
fn info_lists_correct_first_and_what_the_others_break() {
    let info = LeaderLease::info();
    assert_eq!(info.name, "leader-lease");
    assert_eq!(info.variants[0].name, "correct");
    assert!(info.variants[0].breaks.is_empty());
    for v in &info.variants[1..] {
        assert_eq!(v.breaks, &["lease-safety"]);
    }
    assert_eq!(info.roles[0].default_count, 5);
}

// --- whole runs on the test network ---

/// Every node's lease intervals in true time (ns): LeaseStart to LeaseEnd, a crash, or
/// the end of the run.
fn lease_intervals(net: &Net<LeaderLease>) -> Vec<Interval> {
    let mut open: std::collections::BTreeMap<NodeId, u64> = Default::default();
    let mut out = Vec::new();
    for (t, node, obs) in &net.records {
        match obs {
            Observation::LeaseStart { .. } => {
                open.insert(*node, *t);
            }
            Observation::LeaseEnd { .. } | Observation::Crashed => {
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

/// A node's lease in true time (ns): (node, start, end).
type Interval = (NodeId, u64, u64);

fn overlaps(net: &Net<LeaderLease>) -> Vec<(Interval, Interval)> {
    let iv = lease_intervals(net);
    let mut out = Vec::new();
    for (i, a) in iv.iter().enumerate() {
        for b in &iv[i + 1..] {
            if a.0 != b.0 && a.1 < b.2 && b.1 < a.2 {
                out.push((*a, *b));
            }
        }
    }
    out
}

fn current_leader(net: &Net<LeaderLease>) -> Option<u32> {
    (0..5).find(|&i| net.node(i).role() == LeaseRole::Leader)
}

/// Runs until a leader holds its lease, then slows its clock by `drift`, isolates it,
/// and runs on.
fn isolate_a_leader(
    variant: &str,
    seed: u64,
    drift: f64,
    wall_back: Option<Duration>,
) -> Net<LeaderLease> {
    let mut net = Net::start(steady(variant), cluster(), seed);
    net.run_until(ms(6000));
    let leader = current_leader(&net).expect("a leader within 6s");
    net.set_drift(leader, drift);
    net.run_until(ms(7000));
    net.isolate(leader);
    if let Some(by) = wall_back {
        net.step_wall(leader, by, true);
    }
    net.run_until(ms(20_000));
    assert!(
        lease_intervals(&net)
            .iter()
            .any(|(n, s, _)| n.0 != leader && *s > 7_000_000_000),
        "someone else took over"
    );
    net
}

#[test]
fn a_leader_emerges_renews_and_keeps_the_lease() {
    let mut net = Net::start(steady("correct"), cluster(), 1);
    net.run_until(ms(20_000));
    let iv = lease_intervals(&net);
    assert_eq!(iv.len(), 1, "one lease, renewed all along: {iv:?}");
    // Nobody else ever stood once the lease was held.
    let leader = iv[0].0;
    let starts: Vec<_> = net
        .records
        .iter()
        .filter(|(t, _, o)| matches!(o, Observation::Candidate { .. }) && *t > iv[0].1)
        .collect();
    assert_eq!(
        starts,
        Vec::<&(u64, NodeId, Observation)>::new(),
        "leader {leader}"
    );
}

/// The `resign` workload: every leader releases its lease once, so over 20s the lease
/// passes from node to node (several holders), never with two at once.
#[test]
fn resigning_leaders_hand_the_lease_over_without_overlap() {
    for seed in 1..=10 {
        let mut net = Net::start(config("correct"), cluster(), seed);
        net.run_until(ms(20_000));
        let iv = lease_intervals(&net);
        let holders: BTreeSet<NodeId> = iv.iter().map(|i| i.0).collect();
        assert!(holders.len() >= 2, "seed {seed}: {iv:?}");
        assert_eq!(overlaps(&net), vec![], "seed {seed}");
        // The control: without it, one leader keeps the lease all along.
        let mut net = Net::start(steady("correct"), cluster(), seed);
        net.run_until(ms(20_000));
        let holders: BTreeSet<NodeId> = lease_intervals(&net).iter().map(|i| i.0).collect();
        assert_eq!(holders.len(), 1, "seed {seed}");
    }
}

#[test]
fn correct_hands_over_without_overlap_under_drift_within_bound() {
    for seed in 1..=20 {
        let mut net = Net::start(steady("correct"), cluster(), seed);
        for i in 0..5 {
            net.set_drift(i, if i % 2 == 0 { -0.01 } else { 0.01 });
        }
        net.run_until(ms(6000));
        let leader = current_leader(&net).expect("a leader");
        net.set_drift(leader, -0.01);
        net.isolate(leader);
        net.run_until(ms(20_000));
        assert_eq!(overlaps(&net), vec![], "seed {seed}");
        assert!(
            lease_intervals(&net).len() >= 2,
            "seed {seed}: a new leader took over"
        );
    }
}

#[test]
fn correct_survives_a_wall_clock_step() {
    for seed in 1..=10 {
        let net = isolate_a_leader("correct", seed, 0.0, Some(ms(3000)));
        assert_eq!(overlaps(&net), vec![], "seed {seed}");
    }
}

#[test]
fn no_drift_margin_overlaps_when_the_leader_clock_runs_slow() {
    let broken = (1..=10)
        .filter(|&seed| {
            !overlaps(&isolate_a_leader("no-drift-margin", seed, -0.2, None)).is_empty()
        })
        .count();
    assert!(broken >= 8, "only {broken} of 10 seeds overlapped");
    // The margin covers a drift within its bound.
    for seed in 1..=10 {
        assert_eq!(
            overlaps(&isolate_a_leader("correct", seed, -0.01, None)),
            vec![]
        );
    }
}

#[test]
fn wall_clock_lease_overlaps_after_a_backward_step() {
    let broken = (1..=10)
        .filter(|&seed| {
            !overlaps(&isolate_a_leader(
                "wall-clock-lease",
                seed,
                0.0,
                Some(ms(3000)),
            ))
            .is_empty()
        })
        .count();
    assert_eq!(broken, 10);
}

#[test]
fn a_crashed_voter_keeps_quiet_after_restart() {
    let mut net = Net::start(steady("correct"), cluster(), 3);
    net.run_until(ms(6000));
    let leader = current_leader(&net).unwrap();
    // Crash and restart every other node: the leader keeps its lease only if a majority
    // still promises it; whatever happens, no overlap.
    for i in (0..5).filter(|&i| i != leader) {
        net.crash(i);
        net.restart(i);
    }
    net.isolate(leader);
    net.run_until(ms(20_000));
    assert_eq!(overlaps(&net), vec![]);
}

#[test]
fn the_leaseholder_serves_only_while_its_clock_says_the_lease_runs() {
    let mut n = leader("correct");
    // The lease ends at 4.95s by its monotonic clock.
    assert_eq!(
        n.timer(4900, LeaseTimer::Serve),
        vec![
            Effect::Observe(Observation::Serves { term: 1 }),
            Effect::SetTimer {
                timer: LeaseTimer::Serve,
                after: ms(10)
            },
        ]
    );
    // Woken after a pause, the serve timer comes before the overdue lease-end timer:
    // it checks the clock, steps down and serves nothing.
    let effects = n.timer(9000, LeaseTimer::Serve);
    assert_eq!(
        effects[0],
        Effect::CancelTimer {
            timer: LeaseTimer::LeaseEnd
        }
    );
    assert_eq!(
        effects[1],
        Effect::Observe(Observation::LeaseEnd { term: 1 })
    );
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::Observe(Observation::Serves { .. }))),
        "{effects:?}"
    );
    assert_eq!(n.p.role(), LeaseRole::Follower);
    assert_eq!(n.timer(9100, LeaseTimer::Serve), vec![]);
}

#[test]
fn a_voter_whose_vote_fails_to_sync_promises_nothing() {
    let mut v = Node::new("correct", 1);
    v.start(0);
    let request = LeaseMsg::RequestLease {
        term: 1,
        round: 1,
        leader: false,
    };
    v.sync_fails = true;
    assert_eq!(
        v.recv(3002, 0, request.clone()),
        vec![vote_store(1, 0), Effect::Sync { ok: false }],
        "no grant rests on an unsynced vote"
    );
    assert_eq!(v.p.promise(), None);
    // The candidate's retry while the disk still fails: still no grant.
    assert_eq!(
        v.recv(3050, 0, request.clone()),
        vec![vote_store(1, 0), Effect::Sync { ok: false }]
    );
    assert_eq!(v.p.promise(), None);
    // The disk recovers: the vote is synced, then granted.
    v.sync_fails = false;
    let effects = v.recv(3100, 0, request);
    assert_eq!(
        effects[..3],
        [
            vote_store(1, 0),
            Effect::Sync { ok: true },
            Effect::Observe(Observation::Follower {
                term: 1,
                leader: None
            }),
        ]
    );
    assert!(effects.contains(&send(0, LeaseMsg::Grant { term: 1, round: 1 })));
    assert_eq!(v.p.promise().map(|p| p.to), Some(NodeId(0)));
}

#[test]
fn a_candidate_whose_vote_fails_to_sync_does_not_stand() {
    let mut n = Node::new("correct", 0);
    n.start(0);
    n.sync_fails = true;
    let timeout = n.next_draw(ms(1000), ms(1500));
    assert_eq!(
        n.timer(3000, LeaseTimer::Election),
        vec![
            vote_store(1, 0),
            Effect::Sync { ok: false },
            Effect::SetTimer {
                timer: LeaseTimer::Election,
                after: timeout
            },
        ],
        "no Candidate observation and no RequestLease"
    );
    assert_eq!(n.p.role(), LeaseRole::Follower);
    assert_eq!(n.p.promise(), None);
    // Control: with a working disk the next timer stands for election.
    n.sync_fails = false;
    let effects = n.timer(4500, LeaseTimer::Election);
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Observe(Observation::Candidate { .. }))),
        "{effects:?}"
    );
}
