//! `tenure experiment election-time`: a quick run has the table's structure, repeats
//! byte for byte for any --jobs, orders the ranges as the Raft paper's Figure 16 does,
//! rejects bad options with exit 2, and never overwrites a file it did not write.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{stdout, tenure};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh scratch directory named after the test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("experiment-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const QUICK: &[&str] = &[
    "experiment",
    "election-time",
    "--trials",
    "20",
    "--ranges",
    "150-150,150-155,150-300,12-24,25-50",
    "--cap",
    "3s",
    "--json",
];

fn quick(out: &Path, jobs: &str) -> Output {
    let mut args = QUICK.to_vec();
    args.extend(["--jobs", jobs, "--out", out.to_str().unwrap()]);
    tenure(&args)
}

fn median(lines: &[serde_json::Value], range: &str) -> Option<f64> {
    let line = lines.iter().find(|l| l["range"] == range).unwrap();
    line["median"].as_f64()
}

#[test]
fn a_quick_run_is_deterministic_and_ordered_as_in_the_paper() {
    let out = scratch("quick");
    let a = quick(&out, "1");
    assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
    let b = quick(&out, "2");
    assert_eq!(stdout(&a), stdout(&b), "same results for --jobs 1 and 2");

    let lines: Vec<serde_json::Value> = stdout(&a)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5, "one JSON object per range");
    for l in &lines {
        for key in [
            "range",
            "trials",
            "no_leader",
            "cap_ms",
            "min",
            "p10",
            "p25",
            "median",
            "mean",
            "p75",
            "p90",
            "p99",
            "max",
        ] {
            assert!(l.get(key).is_some(), "{key} missing from {l}");
        }
        assert_eq!(l["trials"], 20);
    }
    // No randomness: every survivor stands at once and the votes split, every term.
    let fixed = lines.iter().find(|l| l["range"] == "150-150").unwrap();
    assert_eq!(fixed["no_leader"], 20);
    assert!(fixed["median"].is_null());
    // Five milliseconds of randomness against a 2 ms write before each candidate's
    // RequestVote (the default fsync): most elections end in one or a few terms.
    let none = |r: &str| {
        let line = lines.iter().find(|l| l["range"] == r).unwrap();
        line["no_leader"].as_u64().unwrap()
    };
    let m = |r| median(&lines, r).unwrap_or_else(|| panic!("{r} has a median"));
    assert!(none("150-155") <= 2, "{lines:?}");
    assert!((100.0..=1000.0).contains(&m("150-155")), "{lines:?}");
    // More randomness ends it sooner; a smaller minimum is faster while it stays well
    // above the two writes.
    assert_eq!(none("150-300"), 0);
    assert!((110.0..=400.0).contains(&m("150-300")), "{lines:?}");
    assert!(none("12-24") <= 2, "{lines:?}");
    assert!(m("12-24") < m("150-300"), "{lines:?}");
    assert!(m("25-50") < m("150-300"), "{lines:?}");
    assert!(
        m("25-50") >= 12.5 + 1.0 + 1.0,
        "at least half the minimum and two 1ms writes"
    );

    // The two plots, self-contained SVG.
    for name in ["randomness.svg", "timeout-scale.svg"] {
        let svg = std::fs::read_to_string(out.join(name)).unwrap();
        assert!(svg.contains("<svg") && svg.contains("150-300 ms"), "{name}");
        assert!(stderr(&a).contains(name));
    }
    assert!(
        stderr(&a).contains("election-time: 100 trials in"),
        "{}",
        stderr(&a)
    );
}

#[test]
fn the_table_names_its_columns() {
    let out = scratch("table");
    let o = tenure(&[
        "experiment",
        "election-time",
        "--trials",
        "3",
        "--ranges",
        "150-300",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("one-way latency 100us-500us, fsync 1ms-3ms, heartbeat"),
        "{text}"
    );
    assert!(
        text.contains("range      trials no leader     min     p10     p25  median    mean     p75     p90     p99     max"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("150-300         3         0")),
        "{text}"
    );
}

#[test]
fn a_file_tenure_did_not_write_is_never_overwritten() {
    let out = scratch("keep");
    std::fs::write(out.join("randomness.svg"), "my own drawing").unwrap();
    let args = |out: &Path| {
        let o = tenure(&[
            "experiment",
            "election-time",
            "--trials",
            "2",
            "--ranges",
            "150-300",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stderr(&o)
    };
    let first = args(&out);
    assert_eq!(
        std::fs::read_to_string(out.join("randomness.svg")).unwrap(),
        "my own drawing"
    );
    assert!(first.contains("randomness-2.svg"), "{first}");
    let second = args(&out);
    assert!(
        second.contains("randomness-2.svg"),
        "its own file is replaced: {second}"
    );
    assert!(!out.join("randomness-3.svg").exists());
}

#[test]
fn bad_options_are_exit_2_naming_the_option() {
    for (args, needle) in [
        (&["--ranges", "300-150"][..], "--ranges"),
        (&["--ranges", "1-3"][..], "at least 2ms"),
        (&["--jobs", "0"][..], "--jobs"),
        (&["--trials", "0"][..], "--trials"),
        (&["--latency", "10-5"][..], "--latency"),
        (&["--cap", "soon"][..], "--cap"),
        (&["--fsync", "18-10"][..], "--fsync"),
        (&["--fsync", "0-2s"][..], "at most 1s"),
        (&["--fsync", "fast"][..], "--fsync"),
        (&["--processing", "1-0.5"][..], "--processing"),
        (&["--processing", "0-5s"][..], "at most 1s"),
    ] {
        let mut all = vec!["experiment", "election-time"];
        all.extend(args);
        let o = tenure(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"));
    }
}

#[test]
fn fsync_and_processing_are_options_and_in_the_header() {
    let out = scratch("options");
    let o = tenure(&[
        "experiment",
        "election-time",
        "--trials",
        "3",
        "--ranges",
        "150-300",
        "--latency",
        "1-2",
        "--fsync",
        "2ms-4ms",
        "--processing",
        "0.1-0.2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("one-way latency 1ms-2ms, fsync 2ms-4ms, processing 100us-200us,"),
        "{text}"
    );
}

/// Issue 27: into a pipe (as here) a range prints one progress line, not one per tenth
/// of its trials (ten ranges made about 90 lines in a CI log).
#[test]
fn a_pipe_gets_one_progress_line_per_range() {
    let out = scratch("pipe-progress");
    let o = tenure(&[
        "experiment",
        "election-time",
        "--trials",
        "300",
        "--ranges",
        "150-300",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("election-time: 300 trials in"), "{err}");
    assert!(
        !err.lines().any(|l| l.contains("/300 trials")),
        "within-range progress in a pipe:\n{err}"
    );
}
