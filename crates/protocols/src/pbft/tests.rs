//! Single steps of PBFT replicas (no simulator): what a replica accepts and refuses.

use super::*;
use tenure_core::{Effect, RoleSpec, StepHost};

/// Replicas n0-n3 (n0 is view 0's primary), clients n4, n5.
fn cluster(replicas: u32) -> Cluster {
    let spec = |role: &str, count| RoleSpec::new(role.to_string(), count);
    Cluster::new(vec![spec("replica", replicas), spec("client", 2)]).unwrap()
}

fn config(variant: PbftVariant, replicas: u32) -> PbftConfig {
    Pbft::configure(PbftParams::default(), variant, &cluster(replicas)).unwrap()
}

fn node(config: &PbftConfig, me: u32) -> (Pbft, StepHost) {
    let cluster = cluster(config.replicas.len() as u32);
    let mut host = StepHost::new(NodeId(me), &cluster);
    let mut p = Pbft::new(config, NodeId(me), &cluster);
    let mut step = host.step();
    p.on_start(&mut step);
    (p, host)
}

fn deliver(p: &mut Pbft, host: &mut StepHost, from: u32, msg: Msg) -> Vec<Effect<Msg, Timer>> {
    let mut step = host.step();
    p.on_message(&mut step, NodeId(from), msg);
    step.effects
}

fn sent(effects: &[Effect<Msg, Timer>]) -> Vec<&Msg> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send { msg, .. } => Some(msg),
            _ => None,
        })
        .collect()
}

fn request(client: u32, t: u64) -> Signed<Req> {
    sign(
        NodeId(client),
        Req {
            client: NodeId(client),
            t,
            value: (u64::from(client) + 1) * 1_000_000 + t,
        },
    )
}

fn pre_prepare(view: u64, seq: u64, r: Signed<Req>, by: u32) -> Signed<PrePrepare> {
    let digest = digest(&r.body);
    sign(
        NodeId(by),
        PrePrepare {
            view,
            seq,
            digest,
            request: Some(r),
        },
    )
}

fn prepares(effects: &[Effect<Msg, Timer>]) -> usize {
    sent(effects)
        .iter()
        .filter(|m| matches!(m, Msg::Prepare(_)))
        .count()
}

#[test]
fn a_backup_prepares_a_valid_pre_prepare_and_refuses_a_wrong_digest_or_a_second_one() {
    let config = config(PbftVariant::Correct, 4);
    // The valid one: prepared to the three other replicas.
    let (mut b, mut host) = node(&config, 1);
    let fx = deliver(
        &mut b,
        &mut host,
        0,
        Msg::PrePrepare(pre_prepare(0, 1, request(4, 1), 0)),
    );
    assert_eq!(prepares(&fx), 3);
    // A different request at the same (view, seq): refused.
    let fx = deliver(
        &mut b,
        &mut host,
        0,
        Msg::PrePrepare(pre_prepare(0, 1, request(5, 1), 0)),
    );
    assert_eq!(prepares(&fx), 0);
    // A digest that is not its request's: refused.
    let (mut b, mut host) = node(&config, 1);
    let mut wrong = pre_prepare(0, 1, request(4, 1), 0);
    wrong.body.digest ^= 0xDEAD;
    assert_eq!(
        prepares(&deliver(&mut b, &mut host, 0, Msg::PrePrepare(wrong))),
        0
    );
    // Signed by a backup, or relayed by one: refused.
    let (mut b, mut host) = node(&config, 1);
    let by_backup = pre_prepare(0, 1, request(4, 1), 2);
    assert_eq!(
        prepares(&deliver(&mut b, &mut host, 2, Msg::PrePrepare(by_backup))),
        0
    );
    let relayed = pre_prepare(0, 1, request(4, 1), 0);
    assert_eq!(
        prepares(&deliver(&mut b, &mut host, 2, Msg::PrePrepare(relayed))),
        0
    );
    // A request "signed" in a client's name by a replica: refused.
    let (mut b, mut host) = node(&config, 1);
    let mut forged = request(4, 1);
    forged.by = NodeId(0);
    let pp = pre_prepare(0, 1, forged, 0);
    assert_eq!(
        prepares(&deliver(&mut b, &mut host, 0, Msg::PrePrepare(pp))),
        0
    );
}

/// Prepared with 2f matching prepares (its own among them), committed-local with 2f + 1
/// commits: then it executes, records `Decides` and replies.
#[test]
fn a_replica_executes_after_a_quorum_of_commits_and_not_before() {
    let config = config(PbftVariant::Correct, 4);
    let (mut b, mut host) = node(&config, 1);
    let r = request(4, 1);
    let d = digest(&r.body);
    let vote = |by: u32| {
        sign(
            NodeId(by),
            Vote {
                view: 0,
                seq: 1,
                digest: d,
            },
        )
    };
    deliver(
        &mut b,
        &mut host,
        0,
        Msg::PrePrepare(pre_prepare(0, 1, r, 0)),
    );
    let fx = deliver(&mut b, &mut host, 2, Msg::Prepare(vote(2)));
    let commits = sent(&fx)
        .iter()
        .filter(|m| matches!(m, Msg::Commit(_)))
        .count();
    assert_eq!(
        commits, 3,
        "prepared with its own and n2's prepare: commits"
    );
    let fx = deliver(&mut b, &mut host, 2, Msg::Commit(vote(2)));
    assert!(!fx
        .iter()
        .any(|e| matches!(e, Effect::Observe(Observation::Decides { .. }))));
    let fx = deliver(&mut b, &mut host, 3, Msg::Commit(vote(3)));
    assert!(fx.contains(&Effect::Observe(Observation::Decides {
        instance: 1,
        value: 5_000_001
    })));
    assert!(sent(&fx).contains(&&Msg::Reply {
        view: 0,
        t: 1,
        result: 5_000_001
    }));
}

/// The small-quorum variant's flaw in one step: a single prepare (its own) prepares.
#[test]
fn small_quorum_prepares_on_its_own_prepare_alone_and_correct_does_not() {
    for (variant, replicas, commits) in [
        (PbftVariant::SmallQuorum, 3, 2),
        (PbftVariant::Correct, 4, 0),
    ] {
        let config = config(variant, replicas);
        let (mut b, mut host) = node(&config, 1);
        let fx = deliver(
            &mut b,
            &mut host,
            0,
            Msg::PrePrepare(pre_prepare(0, 1, request(replicas, 1), 0)),
        );
        let n = sent(&fx)
            .iter()
            .filter(|m| matches!(m, Msg::Commit(_)))
            .count();
        assert_eq!(n, commits, "{variant}");
    }
}

fn cert(config: &PbftConfig, seq: u64, r: Signed<Req>, signers: &[u32]) -> Cert {
    let pp = pre_prepare(0, seq, r, 0);
    let prepares = signers
        .iter()
        .map(|&s| {
            sign(
                NodeId(s),
                Vote {
                    view: 0,
                    seq,
                    digest: pp.body.digest,
                },
            )
        })
        .collect();
    let c = Cert { pp, prepares };
    let _ = config;
    c
}

#[test]
fn a_certificate_needs_2f_prepares_of_distinct_backups() {
    let config = config(PbftVariant::Correct, 4);
    assert!(config.valid_cert(&cert(&config, 1, request(4, 1), &[1, 2]), 1));
    assert!(!config.valid_cert(&cert(&config, 1, request(4, 1), &[1]), 1));
    assert!(!config.valid_cert(&cert(&config, 1, request(4, 1), &[1, 1]), 1));
    // The primary's own prepare does not count.
    assert!(!config.valid_cert(&cert(&config, 1, request(4, 1), &[0, 1]), 1));
    // Not from an earlier view than the view change's.
    assert!(!config.valid_cert(&cert(&config, 1, request(4, 1), &[1, 2]), 0));
}

/// O re-issues the highest-view certificate's request and fills gaps with null
/// requests; a NEW-VIEW whose O differs is refused.
#[test]
fn a_new_view_reissues_prepared_requests_and_a_doctored_one_is_refused() {
    let config = config(PbftVariant::Correct, 4);
    let c = cert(&config, 2, request(4, 1), &[1, 2]);
    let vcs: Vec<Signed<ViewChange>> = [1u32, 2, 3]
        .iter()
        .map(|&by| {
            let prepared = if by == 1 { vec![c.clone()] } else { vec![] };
            sign(NodeId(by), ViewChange { view: 1, prepared })
        })
        .collect();
    let o = config.new_view_pps(1, &vcs);
    assert_eq!(o.len(), 2);
    assert_eq!(o[0].request, None);
    assert_eq!(o[0].digest, NULL_DIGEST);
    assert_eq!(o[1].digest, c.pp.body.digest);
    let nv = |pps: Vec<PrePrepare>| {
        sign(
            NodeId(1),
            NewView {
                view: 1,
                vcs: vcs.clone(),
                pps: pps.into_iter().map(|pp| sign(NodeId(1), pp)).collect(),
            },
        )
    };
    // Honest: n2 enters view 1 and prepares both.
    let (mut b, mut host) = node(&config, 2);
    let fx = deliver(&mut b, &mut host, 1, Msg::NewView(nv(o.clone())));
    assert_eq!(prepares(&fx), 2 * 3);
    // Doctored: seq 2 made a null request (hiding the prepared one).
    let mut doctored = o.clone();
    doctored[1] = PrePrepare {
        view: 1,
        seq: 2,
        digest: NULL_DIGEST,
        request: None,
    };
    let (mut b, mut host) = node(&config, 2);
    assert_eq!(
        prepares(&deliver(&mut b, &mut host, 1, Msg::NewView(nv(doctored)))),
        0
    );
}

#[test]
fn configure_names_the_cluster_each_variant_needs() {
    let err =
        Pbft::configure(PbftParams::default(), PbftVariant::Correct, &cluster(3)).unwrap_err();
    assert_eq!(err.field, "cluster");
    assert!(err.to_string().contains("at least 4 replicas"), "{err}");
    let err =
        Pbft::configure(PbftParams::default(), PbftVariant::SmallQuorum, &cluster(2)).unwrap_err();
    assert!(err.to_string().contains("at least 3 replicas"), "{err}");
    let c = config(PbftVariant::SmallCluster, 3);
    assert_eq!((c.quorum, c.replicas.len()), (3, 3));
    // On the built-in 4 replicas the first 3f = 3 form the group; the fourth stands by
    // and sends nothing, whatever it is told.
    let c = config(PbftVariant::SmallQuorum, 4);
    assert_eq!((c.quorum, c.replicas.len()), (2, 3));
    let four = cluster(4);
    let mut host = StepHost::new(NodeId(3), &four);
    let mut spare = Pbft::new(&c, NodeId(3), &four);
    assert!(matches!(spare, Pbft::Spare));
    let mut step = host.step();
    spare.on_start(&mut step);
    assert!(step.effects.is_empty(), "{:?}", step.effects);
    let reply = Msg::Reply {
        view: 0,
        t: 1,
        result: 1,
    };
    assert!(deliver(&mut spare, &mut host, 0, reply).is_empty());
}

/// Regression (found by `power`, seed 1: a client crashed while the number of its next
/// request was being synced): the restarted client sent the request it had never
/// recorded as proposed, and `validity` saw an honest replica decide a value nobody had
/// proposed. A restarted client records its current request again.
#[test]
fn a_restarted_client_records_its_request_as_proposed_again() {
    let config = config(PbftVariant::Correct, 4);
    let (_, mut host) = node(&config, 4); // first boot: request 1 (5_000_001) written
    let cluster = cluster(4);
    let mut again = Pbft::new(&config, NodeId(4), &cluster);
    let mut step = host.step();
    again.on_start(&mut step);
    assert!(step
        .effects
        .contains(&Effect::Observe(Observation::Proposes {
            instance: 1,
            value: 5_000_001
        })));
    assert!(step
        .effects
        .iter()
        .any(|e| matches!(e, Effect::Send { msg: Msg::Request(r), .. } if r.body.t == 1)));
}
