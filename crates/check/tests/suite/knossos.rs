//! Knossos's own `cas-register` test histories get Knossos's verdicts: `good/` is
//! linearizable, `bad/` is not. A few are vendored in `tests/data/knossos/` (EPL-1.0,
//! see its README); the ignored test runs all of them from a Knossos checkout:
//!
//! ```sh
//! TENURE_KNOSSOS_DATA=path/to/knossos/data cargo test -p tenure-check --test suite knossos:: -- --ignored
//! ```

use std::path::{Path, PathBuf};
use tenure_check::linearizability::{check_text, search::Budget, Verdict};

/// Every `*.edn` of `<root>/cas-register/{good,bad}`, with its expected verdict, sorted.
fn histories(root: &Path) -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    for (dir, linearizable) in [("good", true), ("bad", false)] {
        let d = root.join("cas-register").join(dir);
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for e in entries {
            let p = e.expect("a directory entry").path();
            if p.extension().is_some_and(|x| x == "edn") {
                out.push((p, linearizable));
            }
        }
    }
    out.sort();
    out
}

/// Checks each history; returns the disagreements.
fn judge(root: &Path) -> (usize, Vec<String>) {
    let all = histories(root);
    let mut wrong = Vec::new();
    for (path, expected) in &all {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        match check_text(&text, None, "cas-register", &Budget::default()) {
            Err(e) => wrong.push(format!("{name}: unreadable: {e}")),
            Ok(r) if r.verdict == Verdict::Unknown => wrong.push(format!("{name}: unknown")),
            Ok(r) if r.is_linearizable() != *expected => wrong.push(format!(
                "{name}: expected linearizable={expected}, got {}",
                r.text()
            )),
            Ok(_) => {}
        }
    }
    (all.len(), wrong)
}

#[test]
fn the_vendored_knossos_histories_get_knossos_verdicts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/knossos");
    let (n, wrong) = judge(&root);
    assert_eq!(n, 11, "the vendored histories");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
#[ignore = "needs TENURE_KNOSSOS_DATA: the data/ directory of a Knossos checkout"]
fn every_knossos_cas_register_history_gets_knossos_verdict() {
    let root = PathBuf::from(
        std::env::var_os("TENURE_KNOSSOS_DATA")
            .expect("TENURE_KNOSSOS_DATA: the data/ directory of a Knossos checkout"),
    );
    let (n, wrong) = judge(&root);
    eprintln!("{n} Knossos histories, {} disagreements", wrong.len());
    assert!(n >= 120, "{n} histories under {}", root.display());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
