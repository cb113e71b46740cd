//! `tenure check-history`: verdicts and exit codes on Porcupine's corpus and on small
//! hand-written histories, bad input named by file and line.

use std::path::{Path, PathBuf};

use crate::common::{tenure, text};

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
fn a_step_budget_that_runs_out_exits_5_not_judged_undecided() {
    let o = tenure(&[
        "check-history",
        &format!("{CORPUS}/kv/c50-ok.txt"),
        "--model",
        "kv",
        "--max-steps",
        "1000",
    ]);
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    assert!(text(&o).contains("unknown"), "{}", text(&o));
}

/// Knossos's test histories vendored in the repository (EPL-1.0, see its README).
const KNOSSOS: &str = "crates/check/tests/data/knossos/cas-register";

#[test]
fn knossos_histories_get_knossos_verdicts_failed_cas_and_lists_included() {
    // The only operation that cannot be placed when a failed cas is read as "the
    // compare came back false" is such a cas: Jepsen's :fail constrains nothing.
    let o = tenure(&[
        "check-history",
        &format!("{KNOSSOS}/good/memstress3-54.edn"),
        "--model",
        "cas-register",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // An EDN list `( ... )` with `;` comments between the operations.
    let o = tenure(&[
        "check-history",
        &format!("{KNOSSOS}/bad/rethink-fail-minimal.edn"),
        "--model",
        "cas-register",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("cannot be placed after it: process 1: read() -> 3 (lines 4-7)"),
        "{}",
        text(&o)
    );
}

#[test]
fn an_error_in_an_edn_list_names_file_and_line() {
    let p = scratch(
        "list.edn",
        "; a Knossos-style list\n(\n{:process 0, :type :invoke, :f :read, :value nil}\n; between\n{:process 0, :type :ok, :f :read, :value [1}\n)\n",
    );
    let o = tenure(&["check-history", p.to_str().unwrap(), "--model", "register"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("list.edn:5: "), "{}", text(&o));
}

#[test]
fn a_process_that_invokes_after_an_info_is_bad_input() {
    let p = scratch(
        "retired.jsonl",
        "{\"process\":0,\"type\":\"invoke\",\"f\":\"write\",\"value\":1}\n\
         {\"process\":0,\"type\":\"info\",\"f\":\"write\"}\n\
         {\"process\":0,\"type\":\"invoke\",\"f\":\"read\"}\n",
    );
    let o = tenure(&["check-history", p.to_str().unwrap(), "--model", "register"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("retired.jsonl:3: process 0 invokes read after its write"),
        "{}",
        text(&o)
    );
    // After a failure the process may go on.
    let p = scratch(
        "failed.jsonl",
        "{\"process\":0,\"type\":\"invoke\",\"f\":\"write\",\"value\":1}\n\
         {\"process\":0,\"type\":\"fail\",\"f\":\"write\"}\n\
         {\"process\":0,\"type\":\"invoke\",\"f\":\"read\"}\n\
         {\"process\":0,\"type\":\"ok\",\"f\":\"read\",\"value\":null}\n",
    );
    let o = tenure(&["check-history", p.to_str().unwrap(), "--model", "register"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn a_timeout_answers_unknown_with_exit_5_never_a_guess() {
    // Twelve concurrent appends of different strings, then a get no order explains:
    // refuting it means trying 12! orders, far more than 300 ms allow.
    let mut h = String::new();
    for p in 0..12 {
        h.push_str(&format!(
            "{{:process {p}, :type :invoke, :f :append, :key \"a\", :value \"{p:x}\"}}\n"
        ));
    }
    for p in 0..12 {
        h.push_str(&format!(
            "{{:process {p}, :type :ok, :f :append, :key \"a\", :value \"{p:x}\"}}\n"
        ));
    }
    h.push_str("{:process 20, :type :invoke, :f :get, :key \"a\", :value nil}\n");
    h.push_str("{:process 20, :type :ok, :f :get, :key \"a\", :value \"zz\"}\n");
    let p = scratch("expensive.edn", &h);
    let o = tenure(&[
        "check-history",
        p.to_str().unwrap(),
        "--model",
        "kv",
        "--timeout",
        "300ms",
    ]);
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    assert!(text(&o).contains(": unknown (model kv"), "{}", text(&o));
}
