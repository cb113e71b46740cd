//! `tenure check-history`: verdicts and exit codes on Porcupine's corpus and on small
//! hand-written histories, bad input named by file and line.

use std::path::{Path, PathBuf};

mod common;
use common::{tenure, text};

fn scratch(name: &str, body: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-history-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

/// Porcupine's corpus, vendored in the repository (paths are relative to its root).
const CORPUS: &str = "crates/check/tests/data/porcupine/test_data";
const ETCD: &str = "crates/check/tests/data/porcupine/test_data/jepsen";

#[test]
fn a_linearizable_etcd_history_exits_0() {
    let o = tenure(&[
        "check-history",
        &format!("{ETCD}/etcd_002.log"),
        "--model",
        "cas-register",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains(": linearizable (model cas-register"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_non_linearizable_etcd_history_exits_1_and_names_the_operation() {
    let o = tenure(&[
        "check-history",
        &format!("{ETCD}/etcd_000.log"),
        "--model",
        "cas-register",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("not linearizable"), "{t}");
    assert!(t.contains("longest linearizable prefix"), "{t}");
    assert!(t.contains("cannot be placed after it: process"), "{t}");
}

#[test]
fn json_reports_the_verdict_and_the_counterexample() {
    let o = tenure(&[
        "check-history",
        &format!("{ETCD}/etcd_000.log"),
        "--model",
        "cas-register",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["verdict"], "not-linearizable");
    assert!(v["counterexample"]["stuck"]["line"].as_u64().unwrap() > 0);
    assert!(v["counterexample"]["prefix"].is_array());
}

#[test]
fn porcupines_kv_histories_are_read_as_edn() {
    let kv = format!("{CORPUS}/kv");
    let o = tenure(&[
        "check-history",
        &format!("{kv}/c10-ok.txt"),
        "--model",
        "kv",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = tenure(&[
        "check-history",
        &format!("{kv}/c10-bad.txt"),
        "--model",
        "kv",
        "--format",
        "edn",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn the_books_examples_get_their_verdicts() {
    let o = tenure(&[
        "check-history",
        "book/src/linearizability/stale-read.edn",
        "--model",
        "register",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("read() -> 1"), "{}", text(&o));
    let o = tenure(&[
        "check-history",
        "book/src/linearizability/fenced-writes.edn",
        "--model",
        "fencing",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn jsonl_histories_are_read_too() {
    let p = scratch(
        "mutex.jsonl",
        "{\"process\":0,\"type\":\"invoke\",\"f\":\"lock\"}\n\
         {\"process\":0,\"type\":\"ok\",\"f\":\"lock\"}\n\
         {\"process\":1,\"type\":\"invoke\",\"f\":\"lock\"}\n\
         {\"process\":1,\"type\":\"ok\",\"f\":\"lock\"}\n",
    );
    let o = tenure(&["check-history", p.to_str().unwrap(), "--model", "mutex"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn bad_input_exits_2_naming_file_and_line() {
    let p = scratch(
        "bad.edn",
        "{:process 0, :type :invoke, :f :read, :value nil}\n{:process 0, :type :done, :f :read}\n",
    );
    let o = tenure(&["check-history", p.to_str().unwrap(), "--model", "register"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("bad.edn:2: :type"), "{}", text(&o));

    let p = scratch(
        "cas.edn",
        "{:process 0, :type :invoke, :f :cas, :value 3}\n",
    );
    let o = tenure(&[
        "check-history",
        p.to_str().unwrap(),
        "--model",
        "cas-register",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("cas.edn:1: cas needs [from to]"),
        "{}",
        text(&o)
    );

    let o = tenure(&["check-history", p.to_str().unwrap(), "--model", "queue"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("unknown model `queue`"), "{}", text(&o));

    let o = tenure(&["check-history", "no/such/file.edn", "--model", "register"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn a_step_budget_that_runs_out_exits_3_with_unknown() {
    let o = tenure(&[
        "check-history",
        &format!("{CORPUS}/kv/c50-ok.txt"),
        "--model",
        "kv",
        "--max-steps",
        "1000",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(text(&o).contains("unknown"), "{}", text(&o));
}
