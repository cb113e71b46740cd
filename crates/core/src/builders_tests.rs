//! The author types are `#[non_exhaustive]` and built with constructors and builders
//! (issue 33): every field a builder sets reads back, the constructors' defaults are what
//! a struct literal used to spell out, and the `const` ones build `static`s.
//!
//! Each test destructures its type WITHOUT `..`: a field added to the type breaks this
//! file's build until the field gets its builder (or constructor argument) and a line
//! here, so no field can be added that outside crates cannot set.

use crate::model::{Bounds, ClockModel, ModelSpec, SeenModel, TimerModel};
use crate::{
    Assumptions, Cluster, Limit, LocalTime, NodeId, Observation, Promise, ProtocolInfo, Record,
    RoleInfo, RoleKind, RoleSpec, SimTime, VariantInfo,
};
use std::time::Duration;

static ROLES: [RoleInfo; 2] = [
    RoleInfo::new("server", "grants", 1),
    RoleInfo::new("client", "holds", 3).with_kind(RoleKind::Holder),
];
static VARIANTS: [VariantInfo; 2] = [
    VariantInfo::new("correct", "right"),
    VariantInfo::new("broken", "wrong").with_breaks(&["mutual-exclusion", "fencing-safety"]),
];
static INFO: ProtocolInfo = ProtocolInfo::new("lock", "a lock", &ROLES, &VARIANTS);

#[test]
fn protocol_info_reads_back_what_its_constructor_was_given() {
    let ProtocolInfo {
        name,
        summary,
        roles,
        variants,
    } = INFO.clone();
    assert_eq!((name, summary), ("lock", "a lock"));
    assert_eq!(roles.len(), 2);
    assert_eq!(roles[1].name, "client");
    assert_eq!(variants.len(), 2);
    assert_eq!(INFO.role("server").map(|r| r.default_count), Some(1));
    assert_eq!(INFO.variant("broken").map(|v| v.summary), Some("wrong"));
}

#[test]
fn role_info_reads_back_every_field_and_defaults_to_a_participant() {
    let RoleInfo {
        name,
        summary,
        default_count,
        kind,
    } = ROLES[1].clone();
    assert_eq!(
        (name, summary, default_count, kind),
        ("client", "holds", 3, RoleKind::Holder)
    );
    // What `kind: RoleKind::Participant` spelt out in every literal.
    assert_eq!(ROLES[0].kind, RoleKind::Participant);
    for kind in [RoleKind::Participant, RoleKind::Holder, RoleKind::Resource] {
        assert_eq!(RoleInfo::new("r", "s", 2).with_kind(kind).kind, kind);
    }
}

#[test]
fn variant_info_reads_back_every_field_and_breaks_nothing_by_default() {
    let VariantInfo {
        name,
        summary,
        breaks,
    } = VARIANTS[1].clone();
    assert_eq!((name, summary), ("broken", "wrong"));
    assert_eq!(breaks, ["mutual-exclusion", "fencing-safety"]);
    assert!(VARIANTS[0].breaks.is_empty());
}

#[test]
fn bounds_builders_set_each_field_and_only_it() {
    const B: Bounds = Bounds::DEFAULT
        .with_max_depth(7)
        .with_max_states(8)
        .with_max_crashes(1)
        .with_max_drops(2)
        .with_max_duplicates(3)
        .with_max_leaps(4)
        .with_max_isolations(6)
        .with_max_byzantine(5)
        .with_behaviours(&[crate::Byzantine::Silent])
        .with_clock(ClockModel::Frozen)
        .with_seen(SeenModel::Leaders)
        .with_timers(TimerModel::Quiet);
    let Bounds {
        max_depth,
        max_states,
        max_crashes,
        max_drops,
        max_duplicates,
        max_leaps,
        max_isolations,
        max_byzantine,
        behaviours,
        clock,
        seen,
        timers,
    } = B;
    assert_eq!(max_isolations, 6);
    assert_eq!(
        (max_byzantine, behaviours),
        (5, &[crate::Byzantine::Silent][..])
    );
    assert_eq!(
        (
            max_depth,
            max_states,
            max_crashes,
            max_drops,
            max_duplicates,
            max_leaps
        ),
        (7, 8, 1, 2, 3, 4)
    );
    assert_eq!(
        (clock, seen, timers),
        (ClockModel::Frozen, SeenModel::Leaders, TimerModel::Quiet)
    );
    // One builder moves one field: the others keep their defaults.
    let d = Bounds::DEFAULT;
    assert_eq!(d.clone().with_max_leaps(4).max_depth, d.max_depth);
    assert_eq!(d.clone().with_max_depth(7).max_leaps, d.max_leaps);
    assert_eq!(d.clone().with_max_isolations(6).max_drops, d.max_drops);
    assert_eq!(d.max_isolations, 0);
    // By default no node lies, and one that is allowed to may take any behaviour.
    assert_eq!(d.max_byzantine, 0);
    assert_eq!(d.behaviours.len(), 4);
    assert_eq!(Bounds::default(), d);
}

#[test]
fn model_spec_builders_set_each_field_and_new_keeps_the_old_defaults() {
    static SPEC: ModelSpec = ModelSpec::new("scope", &[("server", 1)])
        .with_roles(&[("server", 2), ("client", 1)])
        .with_out_of_scope(&[("broken", "why")])
        .with_walks_miss(&[("rare", "a narrow schedule")])
        .with_stands_for(&[("prop", "checker")])
        .with_bounds(Bounds::DEFAULT.with_max_depth(5))
        .with_variant_bounds(&[("deep", Bounds::DEFAULT.with_max_depth(9))])
        .with_max_term(3)
        .with_term_key("term")
        .with_copies(2)
        .with_checks(&["mutual-exclusion"])
        .with_check_params(&[("mutual-exclusion", r#"{"x": 1}"#)])
        .with_params(r#"{"a": 1}"#)
        .with_walk_params(r#"{"a": 2}"#);
    let ModelSpec {
        scope,
        out_of_scope,
        walks_miss,
        stands_for,
        roles,
        bounds,
        variant_bounds,
        max_term,
        term_key,
        copies,
        checks,
        check_params,
        params,
        walk_params,
    } = SPEC.clone();
    assert_eq!(check_params, [("mutual-exclusion", r#"{"x": 1}"#)]);
    assert_eq!(scope, "scope");
    assert_eq!(out_of_scope, [("broken", "why")]);
    assert_eq!(walks_miss, [("rare", "a narrow schedule")]);
    assert_eq!(stands_for, [("prop", "checker")]);
    assert_eq!(SPEC.checker_for("prop"), "checker");
    assert_eq!(SPEC.checker_for("mutual-exclusion"), "mutual-exclusion");
    assert_eq!(roles, [("server", 2), ("client", 1)]);
    assert_eq!(bounds, Bounds::DEFAULT.with_max_depth(5));
    assert_eq!(variant_bounds.len(), 1);
    // A variant with bounds of its own gets them; every other variant the spec's.
    assert_eq!(SPEC.bounds_for("deep").max_depth, 9);
    assert_eq!(SPEC.bounds_for("correct").max_depth, 5);
    assert_eq!((max_term, term_key), (3, Some("term")));
    assert_eq!(copies, 2);
    assert_eq!(checks, ["mutual-exclusion"]);
    assert_eq!((params, walk_params), (r#"{"a": 1}"#, r#"{"a": 2}"#));

    // What a literal based on `..ModelSpec::new(..)` left out.
    let new = ModelSpec::new("s", &[("node", 3)]);
    assert!(new.out_of_scope.is_empty() && new.stands_for.is_empty() && new.checks.is_empty());
    assert!(new.check_params.is_empty() && new.walks_miss.is_empty());
    assert_eq!(new.bounds, Bounds::DEFAULT);
    assert!(new.variant_bounds.is_empty());
    assert_eq!((new.max_term, new.term_key), (0, None));
    assert_eq!(new.copies, 1);
    assert_eq!((new.params, new.walk_params), ("{}", "{}"));
    assert_eq!(new.roles, [("node", 3)]);
}

#[test]
fn assumptions_builders_set_each_field_take_a_limit_or_an_option() {
    let ms = Duration::from_millis;
    let a = Assumptions::new()
        .with_max_drift(Limit::new(0.01, "drift"))
        .with_max_wall_jump(Limit::new(ms(1), "jump"))
        .with_max_pause(Limit::new(ms(2), "pause"))
        .with_min_restart_delay(Limit::new(ms(3), "restart"))
        .with_max_latency(Some(Limit::new(ms(4), "latency")))
        .with_max_fsync(Limit::new(ms(5), "fsync"))
        .with_reliable_network("synchronous")
        .with_max_byzantine(Limit::new(1, "f"));
    let Assumptions {
        max_drift,
        max_wall_jump,
        max_pause,
        min_restart_delay,
        max_latency,
        max_fsync,
        reliable_network,
        max_byzantine,
    } = a.clone();
    assert_eq!(max_drift, Some(Limit::new(0.01, "drift")));
    assert_eq!(max_wall_jump, Some(Limit::new(ms(1), "jump")));
    assert_eq!(max_pause, Some(Limit::new(ms(2), "pause")));
    assert_eq!(min_restart_delay, Some(Limit::new(ms(3), "restart")));
    assert_eq!(max_latency, Some(Limit::new(ms(4), "latency")));
    assert_eq!(max_fsync, Some(Limit::new(ms(5), "fsync")));
    assert_eq!(reliable_network.as_deref(), Some("synchronous"));
    assert_eq!(max_byzantine, Some(Limit::new(1, "f")));

    // `None` leaves (or sets back) a field unset, as `..Default::default()` did.
    let none: Option<Limit<Duration>> = None;
    assert_eq!(a.with_max_latency(none).max_latency, None);
    assert_eq!(Assumptions::new(), Assumptions::default());
    assert!(Assumptions::new().describe().is_empty());

    let Limit { value, why } = Limit::new(ms(9), String::from("why"));
    assert_eq!((value, why.as_str()), (ms(9), "why"));
}

#[test]
fn promise_reads_back_its_check_and_parameters() {
    let Promise { check, params } =
        Promise::new("lock-liveness").within(Duration::from_millis(1500), "2 x ttl");
    assert_eq!(check, "lock-liveness");
    assert_eq!(
        params,
        serde_json::json!({"within": "1500ms", "bound": "2 x ttl"})
    );
}

#[test]
fn role_spec_and_record_read_back_their_constructor_arguments() {
    let RoleSpec { role, count } = RoleSpec::new("client", 2);
    assert_eq!((role.as_str(), count), ("client", 2));
    let cluster = Cluster::new(vec![RoleSpec::new("server", 1), RoleSpec::new("client", 2)])
        .expect("a valid cluster");
    assert_eq!((cluster.count("server"), cluster.count("client")), (1, 2));

    let Record {
        time,
        node,
        mono,
        wall,
        obs,
    } = Record::new(
        SimTime(5),
        NodeId(2),
        LocalTime(6),
        LocalTime(-7),
        Observation::Leader { term: 3 },
    );
    assert_eq!(
        (time, node, mono, wall),
        (SimTime(5), NodeId(2), LocalTime(6), LocalTime(-7))
    );
    assert_eq!(obs, Observation::Leader { term: 3 });
}
