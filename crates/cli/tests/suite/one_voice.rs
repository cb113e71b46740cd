//! One voice (issue 27): every subcommand reports bad input alike, exit 2 with each
//! error line starting with `tenure: ` (clap's usage errors included), and every name a
//! user types (protocol, variant, profile, fault kind, checker, knob, field, role,
//! parameter, model, policy) gets a "did you mean" when it is close to a known one.
//! The scenario files are the corpus in `tests/bad-input/` (see its README).

use std::path::PathBuf;
use std::process::Output;

use crate::common::{repo, tenure, text};

/// What every error line starts with (`tenure_cli::ERROR_PREFIX`).
const PREFIX: &str = tenure_cli::ERROR_PREFIX;

/// The headers and summaries some commands print on stderr (not errors): `tenure
/// verify: 3 scenarios: ...`, `tenure fuzz: FILE, profile ...`, `tenure shrink: FILE seed N`.
const SUMMARIES: [&str; 3] = ["tenure verify: ", "tenure fuzz: ", "tenure shrink: "];

/// Exit 2, at least one error line, and every line that is not clap's usage block, an
/// indented detail, a command's summary or blank starts with [`PREFIX`], the line that
/// says `says` among them; never a panic.
fn assert_one_voice(what: &str, o: &Output, says: &str) {
    let t = text(o);
    assert_eq!(o.status.code(), Some(2), "{what}: exit 2 expected\n{t}");
    assert!(!t.contains("panicked"), "{what}: a panic\n{t}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(char::is_whitespace))
        .filter(|l| !l.starts_with("Usage: ") && !l.starts_with("For more information"))
        .filter(|l| !SUMMARIES.iter().any(|s| l.starts_with(s)))
        .collect();
    assert!(!lines.is_empty(), "{what}: no error line\n{t}");
    for l in &lines {
        assert!(
            l.starts_with(PREFIX),
            "{what}: an error line without the prefix `{PREFIX}`: {l}\n{t}"
        );
    }
    assert!(
        lines.iter().any(|l| l.contains(says)) || stderr.contains(says),
        "{what}: should say `{says}`\n{t}"
    );
}

/// The corpus: each file with the text its first line (`# says: ...`) promises.
fn corpus() -> Vec<(PathBuf, String)> {
    let dir = repo().join("crates/cli/tests/bad-input");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the corpus is in {}", dir.display());
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let says = text
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("# says: "))
                .unwrap_or_else(|| panic!("{}: no `# says:` first line", p.display()))
                .to_string();
            (p, says)
        })
        .collect()
}

#[test]
fn every_bad_scenario_is_refused_alike_by_every_subcommand_that_reads_one() {
    for (path, says) in corpus() {
        let file = path
            .strip_prefix(repo())
            .unwrap_or(&path)
            .to_str()
            .unwrap()
            .to_string();
        let name = path.file_name().unwrap().to_str().unwrap();
        let commands: [&[&str]; 5] = [
            &["run", &file],
            &["verify", &file],
            &[
                "fuzz",
                &file,
                "--seeds",
                "0..1",
                "--out",
                "/nonexistent-never-written",
            ],
            &["shrink", &file],
            &["compare", &file, &file, "--seeds", "1"],
        ];
        for args in commands {
            let o = tenure(args);
            let what = format!("tenure {}", args.join(" "));
            assert_one_voice(&what, &o, &says);
            // The message names the file and a line.
            assert!(
                String::from_utf8_lossy(&o.stderr).contains(&format!("{name}:")),
                "{what}: the file is not named\n{}",
                text(&o)
            );
        }
    }
}

#[test]
fn bad_flags_and_names_on_the_command_line_are_refused_alike() {
    const FILE: &str = "scenarios/bully/coordinator-crash.toml";
    let cases: &[(&[&str], &str)] = &[
        // clap's own errors, in tenure's voice
        (&["rnu"], "unrecognized subcommand"),
        (
            &["run", FILE, "--sed", "1"],
            "a similar argument exists: '--seed'",
        ),
        (&["run"], "required"),
        // negative numbers: no tip to write `-- -5`, which does not work
        (
            &["fuzz", "--protocol", "raft", "--time", "-5s"],
            "--time -5s: a negative value",
        ),
        (
            &["fuzz", "--protocol", "raft", "--seeds", "-5..2"],
            "--seeds -5..2: a negative value",
        ),
        (
            &["run", FILE, "--seed", "-1"],
            "--seed -1: a negative value",
        ),
        (
            &[
                "fuzz",
                "--protocol",
                "raft",
                "--seeds",
                "0..99999999999999999999999",
            ],
            "is too large: seeds go up to 18446744073709551615",
        ),
        (
            &[
                "check-model",
                "--protocol",
                "raft",
                "--walk",
                "0..99999999999999999999999",
            ],
            "is too large: seeds go up to 18446744073709551615",
        ),
        // did you mean, for every name typed on the command line
        (
            &["fuzz", "--protocol", "rafft", "--seeds", "0..1"],
            "did you mean `raft`?",
        ),
        (
            &[
                "fuzz",
                "--protocol",
                "raft",
                "--variant",
                "forget-vot",
                "--seeds",
                "0..1",
            ],
            "did you mean `forget-vote`?",
        ),
        (
            &[
                "fuzz",
                "--protocol",
                "raft",
                "--profile",
                "chaoss",
                "--seeds",
                "0..1",
            ],
            "did you mean `chaos`?",
        ),
        (
            &["check-model", "--protocol", "raf"],
            "unknown protocol `raf`",
        ),
        (
            &["check-model", "--protocol", "raf"],
            "did you mean `raft`?",
        ),
        (
            &[
                "check-model",
                "--protocol",
                "raft",
                "--variant",
                "forget-vot",
            ],
            "did you mean `forget-vote`?",
        ),
        (
            &[
                "check-model",
                "--protocol",
                "raft",
                "--checks",
                "single-leader-per-trem",
            ],
            "did you mean `single-leader-per-term`?",
        ),
        (
            &["check-history", "--model", "registr", "x.edn"],
            "did you mean `register`?",
        ),
        (
            &["compare", FILE, "--backoff", "expnential"],
            "did you mean `exponential`?",
        ),
        // other bad input, one voice
        (
            &["check-history", "--model", "register", "no-such-file.edn"],
            "no-such-file.edn",
        ),
        (
            &["audit", "verify", "no-such-log.jsonl"],
            "no-such-log.jsonl",
        ),
        (
            &["experiment", "election-time", "--trials", "0"],
            "--trials",
        ),
        (&["run", "no-such-file.toml"], "no-such-file.toml"),
        (&["verify", "no-such-dir"], "no-such-dir"),
    ];
    for (args, says) in cases {
        let o = tenure(args);
        assert_one_voice(&format!("tenure {}", args.join(" ")), &o, says);
    }
}

#[test]
fn a_protocol_without_model_settings_is_told_so_not_offered_another() {
    // sharded-lock is a real protocol the model checker does not explore: no "unknown
    // protocol", no suggestion of redis-lock.
    let o = tenure(&["check-model", "--protocol", "sharded-lock"]);
    assert_one_voice(
        "check-model sharded-lock",
        &o,
        "a protocol the model checker does not explore",
    );
    let t = text(&o);
    assert!(!t.contains("did you mean"), "{t}");
    assert!(!t.contains("unknown protocol"), "{t}");
    assert!(t.contains("tenure fuzz --protocol sharded-lock"), "{t}");
    // A stranger gets neither a suggestion nor the no-model-settings message.
    let o = tenure(&["check-model", "--protocol", "viewstamped"]);
    assert_one_voice(
        "check-model viewstamped",
        &o,
        "unknown protocol `viewstamped`",
    );
    assert!(!text(&o).contains("did you mean"), "{}", text(&o));
}
