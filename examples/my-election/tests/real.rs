//! The tutorial's last step: the same protocol, unchanged, as five real processes on this
//! machine (`cluster`), its leader cut off by a loopback partition and the next one
//! killed with SIGKILL, judged by the same check. Not deterministic (real processes and
//! clocks); what is asserted holds for any run of a correct election.

use std::path::Path;
use std::process::Command;

#[test]
fn my_election_runs_for_real_as_five_processes_and_passes_its_check() {
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
        text.contains("isolate: 8 links blocked"),
        "the leader was cut off: {text}"
    );
    assert!(text.contains("SIGKILL n"), "a leader was killed: {text}");
    assert!(text.contains("pass single-leader-per-term"), "{text}");
    let mut leaders = 0;
    for n in 0..5 {
        let log = std::fs::read_to_string(out.join(format!("n{n}/observations.jsonl"))).unwrap();
        leaders += usize::from(log.contains("\"kind\":\"leader\""));
    }
    assert!(
        leaders >= 2,
        "a new leader after the first was cut off: {text}"
    );
}
