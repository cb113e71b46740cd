use super::*;
use tenure_core::{RoleInfo, RoleKind, RoleSpec};

/// What the roles of [`lock_cluster`] are, as a lock protocol declares them (a role not
/// listed, like a uniform cluster's `server`, is a participant).
const LOCK_ROLES: &[RoleInfo] = &[
    RoleInfo::new("server", "", 1),
    RoleInfo::new("client", "", 3).with_kind(RoleKind::Holder),
    RoleInfo::new("storage", "", 1).with_kind(RoleKind::Resource),
];

fn lock_cluster() -> Cluster {
    Cluster::new(vec![
        RoleSpec::new("server", 1),
        RoleSpec::new("client", 3),
        RoleSpec::new("storage", 1),
    ])
    .unwrap()
}

fn scenario(profile: &str) -> Scenario {
    let text = format!(
        "duration = \"10s\"\nchecks = [\"single-leader-per-term\"]\n\n[protocol]\nname = \"raft\"\n\n[profile]\n{profile}\n"
    );
    tenure_scenario::parse(&text, "p.toml").unwrap()
}

/// Checks what every schedule promises, for one seed.
fn assert_well_formed(d: &Drawn, cluster: &Cluster, duration: Duration, p: &Profile) {
    assert!(d.duration >= duration);
    let start = round_ms(duration.mul_f64(p.window[0]));
    for w in d.faults.windows(2) {
        assert!(w[0].at <= w[1].at, "time order: {:?}", d.faults);
    }
    let Some(heal_at) = d.heal_at else {
        assert!(d.faults.is_empty());
        return;
    };
    assert!(
        heal_at + p.liveness <= d.duration,
        "the liveness phase fits"
    );
    assert!(
        d.faults
            .iter()
            .any(|e| e.at == heal_at && e.fault == Fault::Heal {}),
        "ends with a heal"
    );
    let all = restart_all_instants(d, cluster);
    let mut crashed: BTreeMap<u32, Duration> = BTreeMap::new();
    let mut restarted_early: Vec<u32> = Vec::new();
    let mut armed: Vec<u32> = Vec::new();
    for e in &d.faults {
        // The early faults come before the window, from time zero (knob `early`).
        let early = p.early > 0.0 && e.at <= p.early_window;
        assert!(
            (e.at >= start || early) && e.at <= heal_at,
            "{e:?} in the window"
        );
        let id = |n: &NodeSel| n.id().map(|n| n.0);
        match &e.fault {
            Fault::Crash {
                node: NodeSel::Leader,
            } => {
                assert_eq!(
                    cluster.roles().len(),
                    1,
                    "leaders crash in one-role clusters"
                );
                assert!(
                    all.iter().any(|t| *t > e.at),
                    "every node restarts after it"
                );
            }
            Fault::Crash {
                node: NodeSel::Holder | NodeSel::Waiter,
            }
            | Fault::PowerLoss {
                node: NodeSel::Holder | NodeSel::Waiter,
                ..
            } => {
                assert!(
                    all.iter().any(|t| *t > e.at),
                    "every node restarts after it"
                );
            }
            Fault::Crash { node } | Fault::PowerLoss { node, .. } => {
                let n = id(node).unwrap();
                assert!(cluster.contains(NodeId(n)));
                assert!(
                    crashed.insert(n, e.at).is_none(),
                    "one crash at a time per node"
                );
            }
            // A crash point's crash comes when the node has applied `at_effect` more
            // effects, which the draw cannot know: the heal restarts the node (a no-op if
            // the point never fired; the heal disarms it).
            Fault::CrashPoint { node, .. } => {
                assert!(e.at < heal_at, "crash points are armed before the heal");
                match id(node) {
                    Some(n) => {
                        assert!(cluster.contains(NodeId(n)));
                        armed.push(n);
                    }
                    // Aimed at a role (`power`): the heal restarts every node.
                    None => assert!(all.contains(&heal_at), "every node restarts at the heal"),
                }
            }
            // The heal restarts it, whether a point fired or it crashed otherwise too.
            Fault::Restart { node } if e.at == heal_at && armed.contains(&id(node).unwrap()) => {
                crashed.remove(&id(node).unwrap());
            }
            Fault::Restart { node } if all.contains(&e.at) => {
                let n = id(node).unwrap();
                if crashed.remove(&n).is_some() {
                    restarted_early.push(n);
                }
            }
            Fault::Restart { node } => {
                let n = id(node).expect("restarts name fixed nodes");
                assert!(
                    crashed.remove(&n).is_some() || restarted_early.contains(&n),
                    "a restart follows its crash"
                );
            }
            Fault::Pause { duration, .. } => {
                assert!(e.at + *duration <= heal_at, "pauses end by the heal")
            }
            Fault::ClockDrift { drift, .. } => assert!(*drift > -1.0),
            _ => {}
        }
    }
    assert!(
        crashed.is_empty(),
        "every crashed node is restarted: {crashed:?}"
    );
}

/// The instants at which every node of the cluster is restarted (after a leader crash).
fn restart_all_instants(d: &Drawn, cluster: &Cluster) -> Vec<Duration> {
    let mut at: BTreeMap<Duration, usize> = BTreeMap::new();
    for e in &d.faults {
        if matches!(e.fault, Fault::Restart { .. }) {
            *at.entry(e.at).or_default() += 1;
        }
    }
    at.into_iter()
        .filter(|(_, n)| *n >= cluster.size())
        .map(|(t, _)| t)
        .collect()
}

#[test]
fn every_named_profile_exists_and_unknown_names_do_not() {
    for name in PROFILE_NAMES {
        let p = Profile::named(name).unwrap();
        assert_eq!(p.name, *name);
        assert_eq!(p.check(), Ok(()));
    }
    assert_eq!(Profile::named("mayhem"), None);
    assert!(PROFILE_NAMES.contains(&DEFAULT_PROFILE));
}

#[test]
fn calm_draws_nothing() {
    let d = Profile::named("calm")
        .unwrap()
        .draw(7, &Cluster::uniform("server", 5), ms(10_000));
    assert_eq!(d.faults, vec![]);
    assert_eq!(d.clocks, vec![]);
    assert_eq!(d.heal_at, None);
    assert_eq!(d.duration, ms(10_000), "no faults, nothing to recover from");
    let d = Profile::named("pauses")
        .unwrap()
        .draw(7, &Cluster::uniform("server", 5), ms(10_000));
    assert_eq!(
        d.duration,
        ms(14_000),
        "the 8s liveness phase fits after the heal at 6s"
    );
}

#[test]
fn a_draw_is_a_function_of_the_seed() {
    let p = Profile::named("chaos").unwrap();
    let c = lock_cluster();
    let a = p.draw_for(42, &c, LOCK_ROLES, ms(20_000));
    assert_eq!(a, p.draw_for(42, &c, LOCK_ROLES, ms(20_000)));
    let distinct: std::collections::BTreeSet<String> = (0..50)
        .map(|s| format!("{:?}", p.draw_for(s, &c, LOCK_ROLES, ms(20_000))))
        .collect();
    assert!(
        distinct.len() > 45,
        "seeds draw different schedules: {}",
        distinct.len()
    );
}

#[test]
fn every_profile_respects_the_protocol_over_many_seeds() {
    for name in PROFILE_NAMES {
        let p = Profile::named(name).unwrap();
        for cluster in [
            lock_cluster(),
            Cluster::uniform("server", 5),
            Cluster::uniform("server", 1),
        ] {
            for seed in 0..200 {
                let d = p.draw_for(seed, &cluster, LOCK_ROLES, ms(10_000));
                assert_well_formed(&d, &cluster, ms(10_000), &p);
            }
        }
    }
}

#[test]
fn crashes_and_pauses_leave_a_majority_of_each_role_up() {
    let p = Profile {
        events: [6, 6],
        ..Profile::named("chaos").unwrap()
    };
    let c = Cluster::uniform("server", 5);
    for seed in 0..200 {
        let d = p.draw_for(seed, &c, LOCK_ROLES, ms(10_000));
        let all = restart_all_instants(&d, &c);
        let mut intervals: Vec<(Duration, Duration)> = Vec::new();
        let mut open: BTreeMap<u32, Duration> = BTreeMap::new();
        for e in &d.faults {
            match &e.fault {
                Fault::Crash {
                    node: NodeSel::Leader | NodeSel::Holder | NodeSel::Waiter,
                }
                | Fault::PowerLoss {
                    node: NodeSel::Holder | NodeSel::Waiter,
                    ..
                } => {
                    let end = *all.iter().find(|t| **t > e.at).unwrap();
                    intervals.push((e.at, end));
                }
                Fault::Crash { node } => {
                    open.insert(node.id().unwrap().0, e.at);
                }
                Fault::Restart { node } => {
                    if let Some(from) = open.remove(&node.id().unwrap().0) {
                        intervals.push((from, e.at));
                    }
                }
                Fault::Pause {
                    node: NodeSel::Id(_),
                    duration,
                } => intervals.push((e.at, e.at + *duration)),
                _ => {}
            }
        }
        for (a, _) in &intervals {
            let down = intervals.iter().filter(|(x, y)| x <= a && a < y).count();
            assert!(down <= 2, "seed {seed}: {down} of 5 down at {a:?}");
        }
    }
}

#[test]
fn the_clocks_profile_sometimes_drifts_beyond_a_lease_bound() {
    let p = Profile::named("clocks").unwrap();
    let c = Cluster::uniform("server", 5);
    let drifts: Vec<f64> = (0..100)
        .flat_map(|seed| p.draw_for(seed, &c, LOCK_ROLES, ms(20_000)).faults)
        .filter_map(|e| match e.fault {
            Fault::ClockDrift { drift, .. } => Some(drift),
            _ => None,
        })
        .collect();
    assert!(drifts.iter().any(|d| d.abs() < 0.01), "most drift a little");
    assert!(drifts.iter().any(|d| *d < -0.2), "some clocks run far slow");
    assert!(drifts.iter().any(|d| *d > 0.2), "some clocks run far fast");
}

#[test]
fn a_profile_table_overrides_knobs_of_its_named_base() {
    let s = scenario(
        "name = \"pauses\"\npause = 0.5\npause_range = [\"1s\", \"2s\"]\nliveness = \"3s\"",
    );
    let p = Profile::from_scenario(&s).unwrap().unwrap();
    let expected = Profile {
        pause: 0.5,
        pause_range: [ms(1_000), ms(2_000)],
        liveness: ms(3_000),
        ..Profile::named("pauses").unwrap()
    };
    assert_eq!(p, expected);
    let json = p.to_json();
    assert_eq!(
        json,
        serde_json::json!({"name": "pauses", "pause": 0.5, "pause_range": ["1s", "2s"], "liveness": "3s"})
    );
    let mut again = s.clone();
    again.profile = Some(json);
    assert_eq!(Profile::from_scenario(&again).unwrap(), Some(p));
    let none = tenure_scenario::parse("duration = \"1s\"\n[protocol]\nname = \"raft\"\n", "n.toml")
        .unwrap();
    assert_eq!(Profile::from_scenario(&none).unwrap(), None);
}

#[test]
fn a_bad_knob_is_an_error_naming_the_field_and_line() {
    let cases = [
        (
            "name = \"chaos\"\npuase = 0.5",
            "profile.puase",
            "unknown profile knob `puase`",
        ),
        (
            "name = \"mayhem\"",
            "profile.name",
            "unknown profile `mayhem`",
        ),
        (
            "name = \"chaos\"\ncrash = 1.5",
            "profile.crash",
            "not a probability",
        ),
        (
            "name = \"chaos\"\npause_range = [\"2s\", \"1s\"]",
            "profile.pause_range",
            "above the maximum",
        ),
        (
            "name = \"chaos\"\nwindow = [0.5, 0.5]",
            "profile.window",
            "start before its end",
        ),
        (
            "name = \"chaos\"\nliveness = 3",
            "profile.liveness",
            "not a duration",
        ),
        (
            "name = \"chaos\"\nevents = [1]",
            "profile.events",
            "not a range",
        ),
    ];
    for (table, field, message) in cases {
        let err = Profile::from_scenario(&scenario(table)).unwrap_err();
        assert_eq!(err.field, field, "{table}");
        assert!(err.message.contains(message), "{table}: {err}");
        assert_eq!(err.file, "p.toml");
        let knob_line = if field == "profile.window" {
            9
        } else {
            8 + table.lines().count() - 1
        };
        assert_eq!(err.line, Some(knob_line), "{table}: {err}");
    }
}

#[test]
fn applying_a_draw_writes_an_explicit_replayable_schedule() {
    let mut s = scenario("name = \"chaos\"");
    s.network.loss = 0.05;
    let p = Profile::from_scenario(&s).unwrap().unwrap();
    let cluster = Cluster::uniform("server", 5);
    let seed = (0..100)
        .find(|seed| {
            let d = p.draw_for(*seed, &cluster, LOCK_ROLES, s.duration);
            d.faults
                .iter()
                .any(|e| matches!(e.fault, Fault::Network { loss: Some(_), .. }))
                && !d.clocks.is_empty()
        })
        .expect("some seed degrades the network and skews clocks");
    let d = p.draw_for(seed, &cluster, LOCK_ROLES, s.duration);
    let applied = d.apply_to(&s);
    assert_eq!(applied.profile, None);
    assert_eq!(applied.seed, seed);
    assert_eq!(applied.duration, d.duration);
    assert_eq!(applied.clocks, d.clocks);
    assert_eq!(applied.faults.len(), d.faults.len());
    let reset = applied
        .faults
        .iter()
        .rev()
        .find(|e| matches!(e.fault, Fault::Network { .. }))
        .unwrap();
    assert_eq!(
        reset.fault,
        Fault::Network {
            latency: Some(s.network.latency),
            loss: Some(0.05),
            duplicate: Some(0.0)
        },
        "the heal puts the scenario's own network back"
    );
    let reparsed = tenure_scenario::parse(&applied.to_toml(), "again.toml").unwrap();
    assert_eq!(reparsed.faults, applied.faults);
    assert_eq!(reparsed.clocks, applied.clocks);
    assert_eq!(reparsed.duration, applied.duration);
}

#[test]
fn a_drawn_schedule_is_applied_and_the_run_extended_to_fit_its_liveness_phase() {
    use tenure_check::Checker;
    use tenure_core::{Configurable, Observation, Protocol};
    use tenure_protocols::raft::Raft;
    use tenure_sim::Sim;
    let cluster = Cluster::uniform("node", 5);
    let profile = Profile::named("chaos").unwrap();
    let drawn = (0..50)
        .map(|seed| profile.draw_for(seed, &cluster, LOCK_ROLES, Duration::from_secs(2)))
        .find(|d| {
            d.faults
                .iter()
                .any(|e| matches!(e.fault, Fault::Crash { .. }))
        })
        .expect("chaos crashes a node within 50 seeds");
    assert!(drawn.duration > Duration::from_secs(2));
    let config: <Raft as Protocol>::Config =
        Raft::configure_named(Default::default(), "correct", &cluster).unwrap();
    let checkers: Vec<Box<dyn Checker>> =
        vec![
            tenure_check::build("single-leader-per-term", &serde_json::Value::Null, &cluster)
                .unwrap(),
        ];
    let sim =
        Sim::<Raft>::new(cluster.clone(), config, drawn.seed).duration(Duration::from_secs(2));
    let run = drawn.apply(sim).run_checked(checkers, true);
    assert!(run.violations.is_empty(), "{:?}", run.violations);
    assert_eq!(
        run.output.history.info.end,
        tenure_core::SimTime::from_duration(drawn.duration)
    );
    assert!(run
        .output
        .history
        .records
        .iter()
        .any(|r| r.obs == Observation::Crashed));
}

#[test]
fn disks_flap_a_nodes_power_through_the_first_election_but_never_the_storages() {
    let p = Profile {
        flap: 1.0,
        ..Profile::named("power").unwrap()
    };
    let storage = NodeSel::Id(4);
    for cluster in [Cluster::uniform("server", 5), lock_cluster()] {
        let mut flapped = 0;
        for seed in 0..50 {
            let d = p.draw_for(seed, &cluster, LOCK_ROLES, ms(10_000));
            let points: Vec<(Duration, NodeSel)> = d
                .faults
                .iter()
                .filter_map(|e| match e.fault {
                    Fault::CrashPoint {
                        node,
                        at_sync: true,
                        power: true,
                        ..
                    } => Some((e.at, node)),
                    _ => None,
                })
                .collect();
            if cluster.roles().len() > 1 {
                assert!(
                    points.iter().all(|(_, n)| *n != storage),
                    "seed {seed}: the protected resource's power never fails"
                );
            }
            // The window opens at the start: a point armed at 0 fires at the node's
            // first sync, in a consensus protocol its first election's.
            if points.iter().any(|(at, _)| at.is_zero()) {
                flapped += 1;
            }
        }
        // Unless the role's budget is taken by the crash points drawn before it.
        assert!(flapped >= 25, "{flapped} of 50 seeds flap from the start");
    }
}

#[test]
fn disks_stall_and_slow_participants_until_the_heal_at_most() {
    let p = Profile::named("power").unwrap();
    let storage = NodeSel::Id(4);
    let (mut stalls, mut slow) = (0, 0);
    for seed in 0..200 {
        let d = p.draw_for(seed, &lock_cluster(), LOCK_ROLES, ms(10_000));
        let heal_at = d.heal_at.expect("power always draws faults");
        for e in &d.faults {
            let (node, until) = match &e.fault {
                Fault::DiskStall { node, duration } => {
                    stalls += 1;
                    (*node, e.at + *duration)
                }
                Fault::Slow {
                    node,
                    factor,
                    duration,
                } => {
                    slow += 1;
                    assert!((2.0..=10.0).contains(factor), "seed {seed}: {factor}");
                    (*node, e.at + *duration)
                }
                _ => continue,
            };
            assert_ne!(
                node, storage,
                "seed {seed}: the protected resource's disk is fine"
            );
            assert!(until <= heal_at, "seed {seed}: {e:?} outlasts the heal");
            assert!(until - e.at <= p.disk_stall_range[1]);
        }
    }
    assert!(
        stalls >= 100 && slow >= 50,
        "{stalls} stalls, {slow} slow nodes"
    );
    // Other profiles draw none: their seeds are as they were.
    for name in ["chaos", "crashes", "field"] {
        let q = Profile::named(name).unwrap();
        for seed in 0..50 {
            let d = q.draw_for(seed, &lock_cluster(), LOCK_ROLES, ms(10_000));
            assert!(!d
                .faults
                .iter()
                .any(|e| matches!(e.fault, Fault::DiskStall { .. } | Fault::Slow { .. })));
        }
    }
}

#[test]
fn a_declared_maximum_pause_caps_disk_stalls_and_turns_slow_nodes_off() {
    let assumptions = tenure_core::Assumptions::new()
        .with_max_pause(tenure_core::Limit::new(ms(300), "the lease's margin"));
    let p = Profile::named("power").unwrap().within(&assumptions);
    assert_eq!(p.disk_stall_range[1], ms(300));
    assert_eq!(p.slow_node, 0.0);
    assert_eq!(p.disk_stall, 0.5);
}

/// A declared `max_fsync` cuts every drawn disk's slowest fsync at it, and changes
/// nothing else a seed draws (the same random calls, a smaller range).
#[test]
fn a_declared_maximum_fsync_caps_every_drawn_disk_and_nothing_else() {
    let assumptions = tenure_core::Assumptions::new()
        .with_max_fsync(tenure_core::Limit::new(ms(5), "a tenth of the heartbeat"));
    let free = Profile::named("power").unwrap();
    let capped = free.within(&assumptions);
    assert_eq!(capped.fsync_range[1], ms(5));
    let c = lock_cluster();
    let mut slower = 0;
    for seed in 0..50 {
        let a = free.draw_for(seed, &c, LOCK_ROLES, ms(10_000));
        let b = capped.draw_for(seed, &c, LOCK_ROLES, ms(10_000));
        assert_eq!(a.faults, b.faults, "seed {seed}: the same events");
        assert_eq!(a.links, b.links, "seed {seed}");
        assert_eq!(a.disks.len(), b.disks.len(), "seed {seed}: the same disks");
        for (x, y) in a.disks.iter().zip(&b.disks) {
            assert_eq!(x.node, y.node);
            assert!(y.fsync.max <= ms(5), "seed {seed}: {y:?}");
            slower += usize::from(x.fsync.max > ms(5));
        }
    }
    assert!(
        slower > 0,
        "the uncapped profile draws disks slower than 5ms"
    );
}

/// Issue 33: in a cluster of lock clients nobody records `Leader`, so a fault the
/// profile aims at the leader aims at the holder instead; and a share of the faults
/// drawn at fixed nodes aims at the holder or a waiter.
#[test]
fn in_a_cluster_of_lock_clients_faults_aim_at_holders_and_waiters_not_at_the_leader() {
    let p = Profile::named("pauses").unwrap();
    let c = lock_cluster();
    let mut aims: BTreeMap<String, usize> = BTreeMap::new();
    for seed in 0..200 {
        for e in p.draw_for(seed, &c, LOCK_ROLES, ms(10_000)).faults {
            if let Some(sel) = e.fault.node() {
                let what = match sel.aim() {
                    Some(aim) => aim.name().to_string(),
                    None => "fixed".to_string(),
                };
                *aims.entry(what).or_default() += 1;
            }
        }
    }
    assert_eq!(aims.get("leader"), None, "{aims:?}");
    assert!(
        aims["holder"] > aims["waiter"] && aims["waiter"] > 20,
        "{aims:?}"
    );
    assert!(aims["fixed"] > 50, "{aims:?}");
    // In a cluster of one role (an election) nothing changes: `leader` stays.
    let uniform = Cluster::uniform("server", 5);
    let sels: Vec<NodeSel> = (0..200)
        .flat_map(|seed| p.draw(seed, &uniform, ms(10_000)).faults)
        .filter_map(|e| e.fault.node().copied())
        .collect();
    assert!(sels.contains(&NodeSel::Leader));
    assert!(!sels.contains(&NodeSel::Holder) && !sels.contains(&NodeSel::Waiter));
}

/// Crashes aimed at a role restart every node at the end of the outage, like a leader's,
/// and no other outage of the seed spans that restart (it would end it early).
#[test]
fn a_crash_aimed_at_the_holder_restarts_every_node_and_cuts_no_other_outage_short() {
    let p = Profile::named("crashes").unwrap();
    let c = lock_cluster();
    let mut aimed = 0;
    for seed in 0..300 {
        let d = p.draw_for(seed, &c, LOCK_ROLES, ms(10_000));
        let restarts = restart_all_instants(&d, &c);
        for e in &d.faults {
            if let Fault::Crash {
                node: NodeSel::Holder | NodeSel::Waiter,
            }
            | Fault::PowerLoss {
                node: NodeSel::Holder | NodeSel::Waiter,
                ..
            } = e.fault
            {
                aimed += 1;
                let end = *restarts.iter().find(|t| **t > e.at).expect("restarted");
                // Every fixed crash or power loss is either over by `end` or starts at or
                // after it.
                let mut open: BTreeMap<u32, Duration> = BTreeMap::new();
                for f in &d.faults {
                    match &f.fault {
                        Fault::Crash {
                            node: NodeSel::Id(n),
                        }
                        | Fault::PowerLoss {
                            node: NodeSel::Id(n),
                            ..
                        } => {
                            open.insert(*n, f.at);
                        }
                        Fault::Restart {
                            node: NodeSel::Id(n),
                        } if f.at != end => {
                            if let Some(from) = open.remove(n) {
                                assert!(
                                    !(from < end && end < f.at),
                                    "seed {seed}: n{n} down {from:?}..{:?} spans the restart at {end:?}",
                                    f.at
                                );
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    assert!(aimed > 30, "{aimed} crashes aimed at a role");
}

/// The new draws come from streams of their own: turning `asymmetric` or `early` on
/// adds links and events and moves none of the others.
#[test]
fn asymmetric_delays_and_early_faults_add_to_a_draw_and_move_nothing() {
    let c = lock_cluster();
    let base = Profile {
        asymmetric: 0.0,
        early: 0.0,
        ..Profile::named("chaos").unwrap()
    };
    let mut one_way = 0;
    let mut slow_paths = 0;
    let mut early = 0;
    for seed in 0..200 {
        let without = base.draw_for(seed, &c, LOCK_ROLES, ms(10_000));
        for knob in ["asymmetric", "early"] {
            let mut p = base.clone();
            match knob {
                "asymmetric" => p.asymmetric = 1.0,
                _ => p.early = 1.0,
            }
            let with = p.draw_for(seed, &c, LOCK_ROLES, ms(10_000));
            for l in &without.links {
                assert!(with.links.contains(l), "seed {seed} {knob}: {l:?} moved");
            }
            let mut rest = with.faults.clone();
            for e in &without.faults {
                let i = rest
                    .iter()
                    .position(|f| f == e)
                    .unwrap_or_else(|| panic!("seed {seed} {knob}: {e:?} moved"));
                rest.remove(i);
            }
            for e in &rest {
                match &e.fault {
                    Fault::SlowLink { latency, .. } => {
                        slow_paths += 1;
                        assert!(latency.max() <= p.latency_range[1]);
                    }
                    _ if knob == "early" => {
                        early += 1;
                        assert!(e.at <= p.early_window || e.at == with.heal_at.unwrap());
                    }
                    other => panic!("seed {seed}: {other:?} added by {knob}"),
                }
            }
            one_way += with
                .links
                .iter()
                .filter(|l| !l.both && !without.links.contains(l))
                .count();
        }
    }
    assert!(
        one_way > 100 && slow_paths > 100 && early > 100,
        "{one_way} {slow_paths} {early}"
    );
}

/// Early faults: crash points armed at time zero (applied before any node starts) that
/// restart within the early window, and pauses aimed at waiters and holders in it.
#[test]
fn early_faults_strike_from_time_zero_and_restart_in_time_to_rejoin() {
    let p = Profile {
        early: 1.0,
        ..Profile::named("crashes").unwrap()
    };
    let c = lock_cluster();
    let (mut points, mut aimed_pauses) = (0, 0);
    for seed in 0..100 {
        for e in p.draw_for(seed, &c, LOCK_ROLES, ms(10_000)).faults {
            match e.fault {
                Fault::CrashPoint {
                    restart_after: Some(r),
                    ..
                } if e.at.is_zero() => {
                    points += 1;
                    assert!(r <= p.early_window, "{r:?}");
                }
                Fault::Pause {
                    node: NodeSel::Holder | NodeSel::Waiter,
                    ..
                } if e.at <= p.early_window => aimed_pauses += 1,
                _ => {}
            }
        }
    }
    assert!(points > 50 && aimed_pauses > 50, "{points} {aimed_pauses}");
}

/// Issue 35: `byzantine` draws Byzantine nodes of the first role only, from 1 to the
/// declared `max-byzantine`, and none for a target that declares none; `chaos`, which
/// does not turn the knob on, draws exactly the same events for a target that declares
/// one as for one that does not (a stream of its own).
#[test]
fn byzantine_nodes_are_drawn_only_up_to_the_declared_max() {
    let cluster = Cluster::new(vec![
        RoleSpec::new("replica", 7),
        RoleSpec::new("client", 2),
    ])
    .unwrap();
    let declared = |f: u32| {
        tenure_core::Assumptions::new().with_max_byzantine(tenure_core::Limit::new(f, "a test's f"))
    };
    let liars = |p: &Profile, seed: u64| -> Vec<u32> {
        let mut nodes: Vec<u32> = p
            .draw(seed, &cluster, ms(10_000))
            .faults
            .iter()
            .filter_map(|e| match &e.fault {
                Fault::Byzantine { node, .. } => node.id().map(|n| n.0),
                _ => None,
            })
            .collect();
        nodes.sort();
        nodes.dedup();
        nodes
    };
    let byzantine = Profile::named("byzantine").unwrap();
    let mut most = 0;
    for seed in 0..200 {
        let two = liars(&byzantine.within(&declared(2)), seed);
        assert!(!two.is_empty() && two.len() <= 2, "seed {seed}: {two:?}");
        assert!(two.iter().all(|&n| n < 7), "replicas only: {two:?}");
        most = most.max(two.len());
        assert_eq!(
            liars(
                &byzantine.within(&tenure_core::Assumptions::default()),
                seed
            ),
            Vec::<u32>::new()
        );
    }
    assert_eq!(most, 2, "up to the declared max");
    let chaos = Profile::named("chaos").unwrap();
    for seed in 0..50 {
        assert_eq!(
            chaos.within(&declared(2)).draw(seed, &cluster, ms(10_000)),
            chaos
                .within(&tenure_core::Assumptions::default())
                .draw(seed, &cluster, ms(10_000))
        );
    }
}
