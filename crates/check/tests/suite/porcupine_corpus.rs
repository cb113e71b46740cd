//! Every history of Porcupine's test data (vendored in `tests/data/porcupine/`, MIT
//! licence) gets the verdict Porcupine's own tests expect (`verdicts.csv`): 102 Jepsen
//! etcd histories against the cas-register model and six kv histories against the kv model.

use std::path::PathBuf;
use tenure_check::linearizability::{check_text, search::Budget, Verdict};

/// `crates/check/tests/data/porcupine`, inside the repository.
fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/porcupine")
}

#[test]
fn every_corpus_history_gets_porcupines_verdict() {
    let root = corpus();
    let csv = std::fs::read_to_string(root.join("verdicts.csv")).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the corpus is vendored in the repository)",
            root.display()
        )
    });
    let mut checked = 0;
    let mut wrong = Vec::new();
    let (mut yes, mut no) = (0, 0);
    for line in csv.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let (name, expected) = line.split_once(',').expect("name,verdict");
        let expected: bool = expected.trim().parse().expect("true or false");
        let (dir, model) = if name.starts_with("etcd_") {
            ("test_data/jepsen", "cas-register")
        } else {
            ("test_data/kv", "kv")
        };
        let path = root.join(dir).join(name);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let report = check_text(&text, None, model, &Budget::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_ne!(
            report.verdict,
            Verdict::Unknown,
            "{name}: no budget was set"
        );
        let got = report.is_linearizable();
        if got != expected {
            wrong.push(format!(
                "{name}: expected {expected}, got {}",
                report.verdict.as_str()
            ));
        }
        if !got {
            let cx = report
                .counterexample
                .as_ref()
                .expect("a violation has a counterexample");
            assert!(
                cx.stuck.is_some(),
                "{name}: the operation that cannot be placed is named"
            );
        }
        if expected {
            yes += 1
        } else {
            no += 1
        }
        checked += 1;
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(
        checked, 108,
        "102 etcd histories (etcd_095.log is empty, without a verdict) and 6 kv histories"
    );
    assert!(yes > 0 && no > 0, "both verdicts occur");
}

#[test]
fn a_tiny_step_budget_answers_unknown_rather_than_a_verdict() {
    let path = corpus().join("test_data/kv/c50-ok.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let budget = Budget {
        max_steps: Some(4096),
        cancel: None,
    };
    let report = check_text(&text, None, "kv", &budget).unwrap();
    assert_eq!(report.verdict, Verdict::Unknown);
}
