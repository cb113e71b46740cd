//! raft-log (issue 34) on three servers with no clients, each leader's no-op its entry:
//! breadth-first search finds `commit-old-term`'s shortest counterexample, Figure 8 of
//! the Raft paper on three servers (21 steps), and `correct` passes the same bounds.

use crate::{shortest, zoo};
use tenure_models::TimerModel;

/// The bounds `commit-old-term` is searched with by default: timers only when no
/// message is in flight, three isolations, terms up to 4, depth 21; and random walks
/// are declared to miss it.
#[test]
fn raft_log_declares_the_figure_8_search_for_commit_old_term() {
    let models = zoo();
    let entry = models
        .lookup("raft-log")
        .expect("raft-log is in the registry");
    assert!(entry.in_scope("commit-old-term"));
    assert!(entry.walks_miss("commit-old-term").is_some());
    assert!(entry.walks_miss("correct").is_none());
    let q = models.query("raft-log", "commit-old-term").unwrap();
    let b = &q.bounds;
    assert_eq!(
        (
            b.max_depth,
            b.max_isolations,
            b.max_drops,
            b.timers,
            q.max_term
        ),
        (21, 3, 0, TimerModel::Quiet, 4)
    );
    // The other variants keep the spec's bounds: free timers, no isolation.
    let q = models.query("raft-log", "no-truncate").unwrap();
    assert_eq!(
        (q.bounds.max_depth, q.bounds.max_isolations, q.bounds.timers),
        (7, 0, TimerModel::Free)
    );
}

/// Every state to depth 20 passes and a state at depth 21 breaks leader-completeness:
/// n0 leads term 1 and is isolated with its entry; n1 leads term 2 and is isolated
/// with its own; n0 leads term 3, sends its term-1 entry to n2 and commits it, a
/// majority holding it (the broken rule); n0 is isolated, and n1, whose last entry is of
/// term 2, wins term 4 with n2's vote, without the committed entry. About 3 minutes in a
/// release build.
#[test]
#[ignore = "12.5 million states: run with --release -- --ignored"]
fn breadth_first_search_finds_figure_8_as_commit_old_terms_shortest_counterexample() {
    let (report, cex) = shortest("raft-log", "commit-old-term", "leader-completeness", 21);
    assert_eq!(report.unique_states, 12_533_021);
    let isolations = cex.steps.iter().filter(|s| s.contains("isolated")).count();
    assert_eq!(isolations, 3, "{cex}");
    assert!(
        cex.message.starts_with("n1 became leader of term 4 at ")
            && cex
                .message
                .contains("without the committed entry at index 1 (term 1"),
        "{cex}"
    );
}

/// The negative control: `correct` commits only entries of its own term, and every
/// state to depth 21 within the same bounds passes (17.2 million states, about 6
/// minutes in a release build).
#[test]
#[ignore = "17.2 million states: run with --release -- --ignored"]
fn breadth_first_search_passes_correct_raft_log_within_the_figure_8_bounds() {
    let models = zoo();
    let mut q = models.query("raft-log", "correct").unwrap();
    q.bounds = models
        .query("raft-log", "commit-old-term")
        .unwrap()
        .bounds
        .clone();
    let report = models.check_model(&q).unwrap();
    println!("{report}");
    assert!(report.counterexample.is_none(), "{report}");
    assert!(report.complete, "{report}");
    assert_eq!(report.unique_states, 17_207_208);
}
