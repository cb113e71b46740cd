//! The tutorial's last step: the same protocol, unchanged, as three real processes on
//! this machine (`cluster`), judged by the same check. Not deterministic (real processes
//! and clocks); what is asserted holds for any run of a correct election.

use std::path::Path;
use std::process::Command;

#[test]
fn my_election_runs_for_real_as_three_processes_and_passes_its_check() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("my-election-real");
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(env!("CARGO_BIN_EXE_my-election"))
        .args(["cluster", "scenarios/real-cluster.toml", "--out"])
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("SIGSTOP n"),
        "the leader was paused for real: {text}"
    );
    assert!(text.contains("pass single-leader-per-term"), "{text}");
    for n in 0..3 {
        assert!(out.join(format!("n{n}/observations.jsonl")).is_file());
    }
}
