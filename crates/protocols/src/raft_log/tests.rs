//! Single steps of one raft-log server, with the effects they must have. Each broken
//! variant's test runs the same steps on `correct` as its negative control.

use super::*;
use tenure_core::{Effect, RoleSpec, SplitMix64, Step, StorageMap};

type Effects = Vec<Effect<RaftLogMsg, RaftLogTimer>>;

/// Three servers (n0, n1, n2) and one client (n3).
fn cluster() -> Cluster {
    let spec = |role: &str, count| RoleSpec::new(role.to_string(), count);
    Cluster::new(vec![spec("server", 3), spec("client", 1)]).unwrap()
}

/// One server under test with its storage, clock and rng: a tiny host.
struct Node {
    node: RaftLog,
    config: RaftLogConfig,
    cluster: Cluster,
    storage: StorageMap,
    sync_fails: bool,
    rng: SplitMix64,
    now: LocalTime,
}

impl Node {
    fn started(variant: RaftLogVariant, me: u32) -> Node {
        Node::started_in(variant, me, cluster())
    }

    fn started_in(variant: RaftLogVariant, me: u32, cluster: Cluster) -> Node {
        let config = configure(RaftLogParams::default(), variant, &cluster).unwrap();
        let mut node = Node {
            node: RaftLog::new(&config, NodeId(me), &cluster),
            config,
            cluster,
            storage: StorageMap::new(),
            sync_fails: false,
            rng: SplitMix64(7),
            now: LocalTime(1_000_000_000),
        };
        node.step(|n, s| n.on_start(s));
        node
    }

    fn step(
        &mut self,
        f: impl FnOnce(&mut RaftLog, &mut Step<'_, RaftLogMsg, RaftLogTimer>),
    ) -> Effects {
        let me = match &self.node {
            RaftLog::Server(s) => s.me,
            RaftLog::Client(c) => c.me,
        };
        let mut step = Step::new(
            me,
            &self.cluster,
            self.now,
            self.now,
            &mut self.storage,
            &mut self.rng,
        );
        step.sync_fails = self.sync_fails;
        f(&mut self.node, &mut step);
        step.effects
    }

    fn recv(&mut self, from: u32, msg: RaftLogMsg) -> Effects {
        self.step(|n, s| n.on_message(s, NodeId(from), msg))
    }

    fn fire(&mut self, timer: RaftLogTimer) -> Effects {
        self.step(|n, s| n.on_timer(s, timer))
    }

    fn server(&self) -> &Server {
        self.node.server().unwrap()
    }

    fn restart(&mut self) -> Effects {
        let me = self.server().me;
        self.node = RaftLog::new(&self.config, me, &self.cluster);
        self.step(|n, s| n.on_start(s))
    }

    /// A follower of term `term` whose log holds entries of `terms`.
    fn follower_with(variant: RaftLogVariant, me: u32, terms: &[u64], term: u64) -> Node {
        let mut n = Node::started(variant, me);
        let entries: Vec<Entry> = terms.iter().map(|&t| noop(t)).collect();
        n.recv(0, append(term, 0, 0, entries, 0));
        assert_eq!(terms_of(n.server()), terms);
        n
    }

    /// Makes this server the leader of the next term with n1's vote.
    fn elect(&mut self) -> Effects {
        self.fire(RaftLogTimer::Election);
        let term = self.server().term;
        self.recv(
            1,
            RaftLogMsg::RequestVoteReply {
                term,
                granted: true,
            },
        )
    }
}

fn noop(term: u64) -> Entry {
    Entry {
        term,
        command: Command::Noop,
    }
}

fn put(term: u64, seq: u64, value: i64) -> Entry {
    Entry {
        term,
        command: Command::Put {
            client: NodeId(3),
            session: 1,
            seq,
            key: 0,
            value,
        },
    }
}

fn append(
    term: u64,
    prev_index: u64,
    prev_term: u64,
    entries: Vec<Entry>,
    commit: u64,
) -> RaftLogMsg {
    RaftLogMsg::AppendEntries {
        term,
        prev_log_index: prev_index,
        prev_log_term: prev_term,
        entries,
        leader_commit: commit,
        round: 1,
    }
}

fn terms_of(s: &Server) -> Vec<u64> {
    s.log.iter().map(|e| e.term).collect()
}

fn sent(effects: &Effects) -> Vec<(NodeId, &RaftLogMsg)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send { to, msg } => Some((*to, msg)),
            _ => None,
        })
        .collect()
}

fn reply_success(effects: &Effects) -> Option<(bool, u64)> {
    sent(effects).into_iter().find_map(|(_, m)| match m {
        RaftLogMsg::AppendEntriesReply {
            success,
            match_index,
            ..
        } => Some((*success, *match_index)),
        _ => None,
    })
}

fn applied(effects: &Effects) -> Vec<(u64, u64)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Observe(Observation::LogApply { index, term, .. }) => Some((*index, *term)),
            _ => None,
        })
        .collect()
}

fn answers(effects: &Effects) -> Vec<Answer> {
    sent(effects)
        .into_iter()
        .filter_map(|(_, m)| match m {
            RaftLogMsg::Reply { answer, .. } => Some(*answer),
            _ => None,
        })
        .collect()
}

#[test]
fn a_follower_refuses_entries_whose_previous_entry_has_another_term() {
    // n1 holds [1, 2]; the leader of term 3 holds [1, 3] and sends index 3 after (2, 3).
    let mut n = Node::follower_with(RaftLogVariant::Correct, 1, &[1, 2], 2);
    let effects = n.recv(0, append(3, 2, 3, vec![noop(3)], 0));
    // refused, naming the prevLogIndex it refused
    assert_eq!(reply_success(&effects), Some((false, 2)));
    assert_eq!(terms_of(n.server()), [1, 2]);
    // Negative control: without the check it appends after its own term-2 entry.
    let mut n = Node::follower_with(RaftLogVariant::NoLogCheck, 1, &[1, 2], 2);
    let effects = n.recv(0, append(3, 2, 3, vec![noop(3)], 0));
    assert_eq!(reply_success(&effects), Some((true, 3)));
    assert_eq!(terms_of(n.server()), [1, 2, 3]);
}

#[test]
fn a_conflicting_entry_is_cut_with_everything_after_it() {
    // n1 holds [1, 2, 2]; the leader of term 3 sends its index 2 (term 3) after (1, 1).
    let mut n = Node::follower_with(RaftLogVariant::Correct, 1, &[1, 2, 2], 2);
    let effects = n.recv(0, append(3, 1, 1, vec![noop(3)], 0));
    assert_eq!(reply_success(&effects), Some((true, 2)));
    assert_eq!(terms_of(n.server()), [1, 3]);
    // The write is observed as the log's new end.
    assert!(effects.iter().any(|e| matches!(
        e,
        Effect::Observe(Observation::LogAppend {
            index: 2,
            term: 3,
            ..
        })
    )));
    // Negative control: no-truncate keeps its own entries and says it matches.
    let mut n = Node::follower_with(RaftLogVariant::NoTruncate, 1, &[1, 2, 2], 2);
    let effects = n.recv(0, append(3, 1, 1, vec![noop(3)], 0));
    assert_eq!(reply_success(&effects), Some((true, 2)));
    assert_eq!(terms_of(n.server()), [1, 2, 2]);
}

#[test]
fn an_acknowledgement_leaves_only_after_the_entries_are_synced() {
    let mut n = Node::started(RaftLogVariant::Correct, 1);
    let effects = n.recv(0, append(1, 0, 0, vec![noop(1)], 0));
    let sync = effects
        .iter()
        .position(|e| matches!(e, Effect::Sync { .. }))
        .expect("synced");
    let reply = effects
        .iter()
        .position(|e| matches!(e, Effect::Send { .. }))
        .expect("replied");
    assert!(sync < reply, "{effects:?}");
    // A sync that fails: no acknowledgement at all.
    let mut n = Node::started(RaftLogVariant::Correct, 1);
    n.sync_fails = true;
    let effects = n.recv(0, append(1, 0, 0, vec![noop(1)], 0));
    assert_eq!(reply_success(&effects), None);
}

/// Where a follower's acknowledgement of `entries` falls among its effects: before
/// (`true`) or after the first sync.
fn acks_before_sync(variant: RaftLogVariant) -> bool {
    let mut n = Node::started(variant, 1);
    let effects = n.recv(0, append(1, 0, 0, vec![noop(1), put(1, 1, 7)], 0));
    let sync = effects
        .iter()
        .position(|e| matches!(e, Effect::Sync { .. }))
        .expect("synced");
    let reply = effects
        .iter()
        .position(|e| {
            matches!(
                e,
                Effect::Send {
                    msg: RaftLogMsg::AppendEntriesReply { success: true, .. },
                    ..
                }
            )
        })
        .expect("acknowledged");
    reply < sync
}

#[test]
fn an_ack_before_fsync_follower_acknowledges_entries_it_has_not_synced() {
    // etcd #14140's symptom: the acknowledgement leaves before the fsync, so a power loss
    // inside that fsync loses entries the leader counted. Negative control: `correct`
    // syncs first (as in the test above).
    assert!(acks_before_sync(RaftLogVariant::AckBeforeFsync));
    assert!(!acks_before_sync(RaftLogVariant::Correct));
}

#[test]
fn a_restarted_server_reports_and_keeps_its_log_term_and_vote() {
    let mut n = Node::follower_with(RaftLogVariant::Correct, 1, &[1, 1, 2], 2);
    let effects = n.restart();
    assert_eq!(terms_of(n.server()), [1, 1, 2]);
    assert_eq!(n.server().term, 2);
    let reported: Vec<u64> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Observe(Observation::LogAppend { index, .. }) => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(reported, [1, 2, 3]);
    // A truncation is stored too: the cut entries do not come back.
    n.recv(0, append(3, 1, 1, vec![noop(3)], 0));
    n.restart();
    assert_eq!(terms_of(n.server()), [1, 3]);
}

/// Figure 8 (c), on three servers: n0 leads term 4 and holds [1, 2]; n1 holds [1, 2]
/// too (n0 just replicated index 2 of term 2 to it), so a majority holds index 2.
fn figure_8_leader(variant: RaftLogVariant) -> (Node, Effects) {
    let mut n = Node::follower_with(variant, 0, &[1, 2], 3);
    n.elect(); // term 4, no-op appended at index 3
    assert_eq!(n.server().term, 4);
    assert_eq!(terms_of(n.server()), [1, 2, 4]);
    // n1 acknowledges up to index 2: not the no-op.
    let effects = n.recv(
        1,
        RaftLogMsg::AppendEntriesReply {
            term: 4,
            success: true,
            match_index: 2,
            last_index: 2,
            round: 1,
        },
    );
    (n, effects)
}

#[test]
fn a_leader_commits_no_entry_of_an_earlier_term_by_counting_replicas() {
    let (n, effects) = figure_8_leader(RaftLogVariant::Correct);
    assert_eq!(n.server().commit_index(), 0);
    assert_eq!(applied(&effects), []);
    // Negative control: commit-old-term commits index 2 (term 2) and applies it.
    let (n, effects) = figure_8_leader(RaftLogVariant::CommitOldTerm);
    assert_eq!(n.server().commit_index(), 2);
    assert_eq!(applied(&effects), [(1, 1), (2, 2)]);
}

#[test]
fn once_an_entry_of_its_term_commits_the_earlier_ones_commit_with_it() {
    let (mut n, _) = figure_8_leader(RaftLogVariant::Correct);
    let effects = n.recv(
        1,
        RaftLogMsg::AppendEntriesReply {
            term: 4,
            success: true,
            match_index: 3,
            last_index: 3,
            round: 1,
        },
    );
    assert_eq!(applied(&effects), [(1, 1), (2, 2), (3, 4)]);
}

#[test]
fn a_duplicate_put_is_applied_once() {
    // Two copies of the client's put seq 1 (a retry that also got committed), then seq 2.
    let mut n = Node::started(RaftLogVariant::Correct, 1);
    n.recv(
        0,
        append(
            1,
            0,
            0,
            vec![put(1, 1, 10), put(1, 1, 10), put(1, 2, 20)],
            0,
        ),
    );
    n.recv(0, append(1, 3, 1, vec![], 2));
    assert_eq!(n.server().kv.get(&0), Some(&10));
    assert_eq!(n.server().sessions.get(&(NodeId(3), 1)), Some(&1));
    n.recv(0, append(1, 3, 1, vec![], 3));
    assert_eq!(n.server().kv.get(&0), Some(&20));
    // A late copy of seq 1 after seq 2 changes nothing.
    n.recv(0, append(1, 3, 1, vec![put(1, 1, 10)], 4));
    assert_eq!(n.server().kv.get(&0), Some(&20));
}

/// n0 leads term 1 with its no-op committed; a get from the client arrives.
fn leader_with_read(variant: RaftLogVariant) -> (Node, Effects) {
    let mut n = Node::started(variant, 0);
    n.elect();
    n.recv(
        1,
        RaftLogMsg::AppendEntriesReply {
            term: 1,
            success: true,
            match_index: 1,
            last_index: 1,
            round: 1,
        },
    );
    assert_eq!(n.server().commit_index(), 1);
    let get = RaftLogMsg::Request(Request {
        attempt: 9,
        session: 1,
        seq: 0,
        op: Op::Get { key: 0 },
    });
    let effects = n.recv(3, get);
    (n, effects)
}

#[test]
fn a_read_waits_for_a_heartbeat_round_a_majority_acknowledges() {
    let (mut n, effects) = leader_with_read(RaftLogVariant::Correct);
    assert_eq!(answers(&effects), []);
    let round = n.server().round;
    let effects = n.recv(
        2,
        RaftLogMsg::AppendEntriesReply {
            term: 1,
            success: true,
            match_index: 1,
            last_index: 1,
            round,
        },
    );
    assert_eq!(answers(&effects), [Answer::Ok(Some(0))]);
    // Negative control: read-without-readindex answers at once.
    let (_, effects) = leader_with_read(RaftLogVariant::ReadWithoutReadindex);
    assert_eq!(answers(&effects), [Answer::Ok(Some(0))]);
}

#[test]
fn a_lease_answers_reads_without_a_round_and_only_while_it_lasts() {
    // Round 1 (sent at election) acknowledged by n1: a lease from then.
    let (mut n, effects) = leader_with_read(RaftLogVariant::LeaseReads);
    assert_eq!(answers(&effects), [Answer::Ok(Some(0))]);
    // Past the lease: a round again.
    n.now = n.now + n.config.lease;
    let get = RaftLogMsg::Request(Request {
        attempt: 10,
        session: 1,
        seq: 0,
        op: Op::Get { key: 0 },
    });
    let effects = n.recv(3, get);
    assert_eq!(answers(&effects), []);
}

#[test]
fn with_leases_a_follower_that_heard_from_a_leader_refuses_votes() {
    let vote = RaftLogMsg::RequestVote {
        term: 5,
        last_log_index: 9,
        last_log_term: 4,
    };
    let granted = |effects: &Effects| {
        sent(effects)
            .iter()
            .any(|(_, m)| matches!(m, RaftLogMsg::RequestVoteReply { granted: true, .. }))
    };
    let mut n = Node::follower_with(RaftLogVariant::LeaseReads, 1, &[1], 1);
    assert!(!granted(&n.recv(2, vote.clone())));
    assert_eq!(n.server().term, 1, "the term is not taken either");
    n.now = n.now + n.config.election_timeout.0;
    assert!(granted(&n.recv(2, vote.clone())));
    // Control: the correct variant (ReadIndex, no lease) votes at once.
    let mut n = Node::follower_with(RaftLogVariant::Correct, 1, &[1], 1);
    assert!(granted(&n.recv(2, vote)));
}

#[test]
fn a_leader_counts_itself_only_for_entries_it_synced() {
    let mut n = Node::started(RaftLogVariant::Correct, 0);
    n.elect();
    n.sync_fails = true;
    let put = RaftLogMsg::Request(Request {
        attempt: 1,
        session: 1,
        seq: 1,
        op: Op::Put { key: 0, value: 5 },
    });
    n.recv(3, put);
    assert_eq!(n.server().durable_len, 1, "only the no-op is durable");
    // n1 holds both: without the leader itself there is no majority for index 2.
    n.recv(
        1,
        RaftLogMsg::AppendEntriesReply {
            term: 1,
            success: true,
            match_index: 2,
            last_index: 2,
            round: 1,
        },
    );
    assert_eq!(n.server().commit_index(), 1);
    n.sync_fails = false;
    n.fire(RaftLogTimer::Heartbeat);
    assert_eq!(n.server().commit_index(), 2);
}

#[test]
fn a_duplicated_reply_starts_no_second_stream_of_appends() {
    // n0 leads term 1 and has three entries for n1 (the no-op and two puts).
    let mut n = Node::started(RaftLogVariant::Correct, 0);
    n.elect();
    for seq in 1..=2 {
        let put = RaftLogMsg::Request(Request {
            attempt: seq,
            session: 1,
            seq,
            op: Op::Put { key: 0, value: 5 },
        });
        n.recv(3, put);
    }
    let ack = RaftLogMsg::AppendEntriesReply {
        term: 1,
        success: true,
        match_index: 1,
        last_index: 1,
        round: 1,
    };
    let to_n1 = |effects: &Effects| {
        sent(effects)
            .iter()
            .filter(|(to, m)| *to == NodeId(1) && matches!(m, RaftLogMsg::AppendEntries { .. }))
            .count()
    };
    assert_eq!(
        to_n1(&n.recv(1, ack.clone())),
        1,
        "news: the next entry goes out"
    );
    assert_eq!(
        to_n1(&n.recv(1, ack)),
        0,
        "the same reply again: nothing more"
    );
    // A refusal is acted on once too: n1 refuses the probe after index 3.
    let refusal = RaftLogMsg::AppendEntriesReply {
        term: 1,
        success: false,
        match_index: 1,
        last_index: 0,
        round: 1,
    };
    assert_eq!(to_n1(&n.recv(1, refusal.clone())), 1);
    assert_eq!(to_n1(&n.recv(1, refusal)), 0);
}

/// One server (n0) and one client (n1): a single voter. The client's put of 7 to k0 is
/// committed, applied and answered; the process then crashes before the commit index it
/// advanced is written (etcd saves the HardState while it applies), restarts, is elected
/// again, and the client reads k0. Returns the answers to that read: at once, and after
/// the next heartbeat tick.
fn single_voter_read_after_losing_the_commit_index(
    variant: RaftLogVariant,
) -> (Vec<Answer>, Vec<Answer>) {
    let spec = |role: &str, count| RoleSpec::new(role.to_string(), count);
    let cluster = Cluster::new(vec![spec("server", 1), spec("client", 1)]).unwrap();
    let mut n = Node::started_in(variant, 0, cluster);
    n.fire(RaftLogTimer::Election);
    assert_eq!(n.server().role(), Role::Leader);
    n.fire(RaftLogTimer::Heartbeat);
    assert_eq!(n.server().commit_index(), 1, "the no-op");
    let request = |attempt, op| {
        RaftLogMsg::Request(Request {
            attempt,
            session: 1,
            seq: 1,
            op,
        })
    };
    n.recv(1, request(1, Op::Put { key: 0, value: 7 }));
    let effects = n.fire(RaftLogTimer::Heartbeat);
    assert_eq!(answers(&effects), [Answer::Ok(None)], "the put is answered");
    assert_eq!(n.server().commit_index(), 2);
    // The crash: the commit index on disk is still the one before the put.
    n.storage.insert(COMMIT_KEY.to_string(), "1".to_string());
    n.restart();
    assert_eq!(n.server().commit_index(), 1);
    n.fire(RaftLogTimer::Election);
    assert_eq!(n.server().role(), Role::Leader);
    let at_once = answers(&n.recv(1, request(2, Op::Get { key: 0 })));
    let after_tick = answers(&n.fire(RaftLogTimer::Heartbeat));
    (at_once, after_tick)
}

#[test]
fn a_single_voter_that_lost_its_commit_index_answers_read_index_with_a_stale_value() {
    // etcd-io/raft PR #105: the single-voter shortcut answers with `raftLog.committed`,
    // restored from a HardState written after the put was answered: k0 reads 0, not 7.
    let (at_once, _) =
        single_voter_read_after_losing_the_commit_index(RaftLogVariant::SingleVoterReadIndex);
    assert_eq!(at_once, [Answer::Ok(Some(0))]);
    // Negative control, the PR's fix: the read index is at least what this voter has
    // persisted (the no-op of the new term), so the read waits for it to commit.
    let (at_once, after_tick) =
        single_voter_read_after_losing_the_commit_index(RaftLogVariant::SingleVoterReadIndex105);
    assert_eq!(at_once, []);
    assert_eq!(after_tick, [Answer::Ok(Some(7))]);
}

/// Thesis §3.10: a leader handing over refuses new requests, sends `TimeoutNow` only once
/// the target holds its whole log, and after an election timeout gives up and accepts
/// requests again; the target of `TimeoutNow` starts an election at once.
#[test]
fn a_transfer_catches_the_target_up_before_timeout_now_and_is_given_up_in_time() {
    let is_timeout_now = |m: &&RaftLogMsg| matches!(m, RaftLogMsg::TimeoutNow { .. });
    let put = |attempt, value| {
        RaftLogMsg::Request(Request {
            attempt,
            session: 1,
            seq: attempt,
            op: Op::Put { key: 0, value },
        })
    };
    let mut n = Node::started(RaftLogVariant::Correct, 0);
    n.elect();
    let effects = n.fire(RaftLogTimer::Transfer);
    let target = n.server().transferee.expect("a transfer started");
    // The target's log lacks the leader's no-op: an append first, no TimeoutNow.
    let out = sent(&effects);
    assert!(!out.iter().map(|(_, m)| m).any(is_timeout_now));
    assert!(out
        .iter()
        .any(|(to, m)| *to == target && matches!(m, RaftLogMsg::AppendEntries { .. })));
    assert!(effects.iter().any(|e| matches!(
        e,
        Effect::SetTimer {
            timer: RaftLogTimer::TransferAbort,
            after,
        } if *after == n.config.election_timeout.1
    )));
    // No new request while handing over.
    let effects = n.recv(3, put(1, 7));
    assert_eq!(answers(&effects), [Answer::NotLeader(None)]);
    assert_eq!(n.server().last_index(), 1);
    // The target acknowledges the whole log: TimeoutNow, once.
    let round = n.server().round;
    let ack = RaftLogMsg::AppendEntriesReply {
        term: 1,
        success: true,
        match_index: 1,
        last_index: 1,
        round,
    };
    let effects = n.recv(target.0, ack.clone());
    assert_eq!(
        sent(&effects),
        [(target, &RaftLogMsg::TimeoutNow { term: 1 })]
    );
    let effects = n.recv(target.0, ack);
    assert!(!sent(&effects).iter().map(|(_, m)| m).any(is_timeout_now));
    // Not elected within an election timeout: the leader resumes.
    n.fire(RaftLogTimer::TransferAbort);
    assert_eq!(n.server().transferee, None);
    n.recv(3, put(2, 8));
    assert_eq!(n.server().last_index(), 2);

    // The target: an election at once, in the next term.
    let mut f = Node::follower_with(RaftLogVariant::Correct, 1, &[1], 1);
    let effects = f.recv(0, RaftLogMsg::TimeoutNow { term: 1 });
    assert_eq!((f.server().term(), f.server().role()), (2, Role::Candidate));
    assert!(sent(&effects)
        .iter()
        .any(|(_, m)| matches!(m, RaftLogMsg::RequestVote { term: 2, .. })));
    // A stale TimeoutNow (an earlier term's leader) starts nothing.
    let mut f = Node::follower_with(RaftLogVariant::Correct, 1, &[1], 3);
    f.recv(0, RaftLogMsg::TimeoutNow { term: 2 });
    assert_eq!((f.server().term(), f.server().role()), (3, Role::Follower));
}
