//! `tenure verify [PATH...]`: every scenario meets its declared expectation.

use crate::cmd_run::prepare;
use crate::report::{expectation_text, protocol_label, replay_command};
use crate::Tools;
use crate::{plural, scenario_files, shown, Outcome};
use clap::Args;
use std::path::{Path, PathBuf};
use tenure_sim::{Prepared, Report, RunOptions};

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Scenario files or directories (searched recursively for *.toml).
    #[arg(default_value = "scenarios")]
    paths: Vec<PathBuf>,
    /// Print one JSON object per scenario (JSON lines) instead of text.
    #[arg(long)]
    json: bool,
    /// Also write a JUnit XML report (a test case per scenario file, the replay command
    /// in a failure's text) for CI test tabs; never over an existing file.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

pub fn verify(args: VerifyArgs, tools: &Tools) -> Outcome {
    let files = match scenario_files(&args.paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("tenure: {e}");
            return Outcome::BadInput;
        }
    };
    if files.is_empty() {
        let paths: Vec<String> = args.paths.iter().map(|p| shown(p)).collect();
        eprintln!(
            "tenure: no scenario files (*.toml) under {}",
            paths.join(", ")
        );
        return Outcome::BadInput;
    }
    if let Some(j) = &args.junit {
        if let Err(e) = crate::junit::check_path(j) {
            eprintln!("tenure: {e}");
            return Outcome::BadInput;
        }
    }
    let mut cases = Vec::new();
    let outcome = verify_files(&files, args.json, &mut cases, &mut |path| {
        run_one(path, tools)
    });
    if let Some(path) = &args.junit {
        let suite = crate::junit::Suite {
            name: "tenure verify".into(),
            seconds: None,
            properties: vec![("scenarios".into(), files.len().to_string())],
            cases,
        };
        if let Err(e) = crate::junit::write(path, "tenure verify", &[suite]) {
            eprintln!("tenure: {e}");
            return Outcome::BadInput;
        }
    }
    outcome
}

/// A scenario prepared and run, or the outcome of failing to prepare it.
type Ran = Result<(Prepared, Report), Outcome>;

/// Prepares and runs one scenario with its own seed (an invalid one: its error printed).
fn run_one(path: &Path, tools: &Tools) -> Ran {
    let prepared = prepare(path, tools)?;
    let report = prepared.run(
        prepared.scenario.seed,
        &RunOptions {
            // verify prints verdicts, never the trace: keeping it would cost memory in
            // proportion to the messages of the run.
            trace: false,
            stop_at_first_violation: false,
        },
    );
    // A run stopped by a limit has no verdict: the file is bad input.
    if let Some(limit) = &report.stats.stopped_by {
        eprintln!("tenure: {}: {limit}", shown(path));
        return Err(Outcome::BadInput);
    }
    Ok((prepared, report))
}

/// Runs every file with `run`, prints a line per file and the summary.
fn verify_files(
    files: &[PathBuf],
    json: bool,
    cases: &mut Vec<crate::junit::Case>,
    run: &mut dyn FnMut(&Path) -> Ran,
) -> Outcome {
    use crate::junit::{Case, Verdict};
    let case = |file: &str, verdict: Verdict, out: Option<String>| Case {
        name: file.to_string(),
        classname: "tenure verify".into(),
        seconds: None,
        verdict,
        out,
    };
    let (mut met, mut unmet, mut invalid, mut internal) = (0usize, 0usize, 0usize, 0usize);
    let mut not_judged_files = 0usize;
    for path in files {
        let file = shown(path);
        // A panic (a bug in tenure or a protocol) is that file's internal error; the
        // other files still run and the summary still prints.
        let attempt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(path)));
        let (prepared, report) = match attempt {
            Ok(Ok(done)) => done,
            Ok(Err(_)) => {
                invalid += 1;
                cases.push(case(
                    &file,
                    Verdict::Error {
                        ty: "invalid".into(),
                        message: "invalid scenario (the error is on stderr)".into(),
                        text: format!("{} run {file}", crate::program()),
                    },
                    None,
                ));
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"scenario": file, "status": "invalid"})
                    );
                } else {
                    println!("ERROR {file}: invalid (the error is above)");
                }
                continue;
            }
            Err(panic) => {
                internal += 1;
                let what = panic_text(&panic);
                cases.push(case(
                    &file,
                    Verdict::Error {
                        ty: "internal-error".into(),
                        message: what.clone(),
                        text: "a bug in tenure or in a protocol".into(),
                    },
                    None,
                ));
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"scenario": file, "status": "internal-error", "message": what})
                    );
                } else {
                    println!(
                        "ERROR {file}: internal error (a bug in tenure or in a protocol): {what}"
                    );
                }
                continue;
            }
        };
        let s = &prepared.scenario;
        let mut got = if report.passed() && report.not_judged().next().is_some() {
            "no violation".to_string()
        } else if report.passed() {
            "pass".to_string()
        } else {
            let names: Vec<&str> = report.violations.iter().map(|v| v.checker).collect();
            format!("violation of {}", names.join(", "))
        };
        let not_judged: Vec<String> = report
            .not_judged()
            .filter_map(|v| Some(format!("{} ({})", v.check, v.verdict.not_judged()?.reason)))
            .collect();
        if !not_judged.is_empty() {
            got += &format!("; not judged: {}", not_judged.join(", "));
        }
        let unexpected = crate::report::unexpected_not_judged(&prepared, &report);
        let replay = replay_command(&file, s.seed);
        // Unmet only because a check was not judged: exit 5 and a skipped JUnit case,
        // not a failure.
        let only_not_judged = !report.expectation_met
            && tenure_sim::play::expectation_parts(s, &report.verdicts, report.stopped_early)
                .outcome;
        cases.push(if report.expectation_met {
            case(
                &file,
                Verdict::Passed,
                Some(format!(
                    "{} seed {}: {got}, as expected",
                    protocol_label(s),
                    s.seed
                )),
            )
        } else if only_not_judged {
            case(
                &file,
                Verdict::Skipped {
                    message: format!(
                        "{} seed {}: not judged: {}",
                        protocol_label(s),
                        s.seed,
                        unexpected.join("; ")
                    ),
                },
                None,
            )
        } else {
            let mut text: Vec<String> = report.violations.iter().map(|v| v.to_string()).collect();
            text.extend(unexpected.iter().map(|v| v.to_string()));
            text.push(format!("replay: {replay}"));
            case(
                &file,
                Verdict::Failure {
                    ty: "expectation".into(),
                    message: format!(
                        "{} seed {}: expected {}, got {got}",
                        protocol_label(s),
                        s.seed,
                        expectation_text(&s.expect)
                    ),
                    text: text.join("\n"),
                },
                None,
            )
        });
        if report.expectation_met {
            met += 1;
        } else {
            unmet += 1;
            if only_not_judged {
                not_judged_files += 1;
            }
        }
        if json {
            let mut j = crate::report::json_report(s, &file, &report);
            j["status"] = serde_json::json!(if report.expectation_met {
                "met"
            } else {
                "unmet"
            });
            println!("{j}");
        } else if report.expectation_met {
            anstream::println!(
                "{}    {file} ({}) seed {}: {got}, as expected",
                crate::colour::pass("ok"),
                protocol_label(s),
                s.seed
            );
        } else {
            anstream::println!(
                "{}  {file} ({}) seed {}: expected {}, got {got}",
                crate::colour::fail("FAIL"),
                protocol_label(s),
                s.seed,
                expectation_text(&s.expect)
            );
            for v in &report.violations {
                println!("      {v}");
            }
            for v in &unexpected {
                println!("      {v}");
            }
            println!("      replay: {replay}");
        }
    }
    let total = files.len();
    let mut summary = format!(
        "tenure verify: {}: {met} met {}, {unmet} did not, {invalid} invalid",
        plural(total as u64, "scenario", "scenarios"),
        if met == 1 {
            "its expectation"
        } else {
            "their expectation"
        }
    );
    if internal > 0 {
        summary += &format!(
            ", {internal} internal {}",
            if internal == 1 { "error" } else { "errors" }
        );
    }
    if not_judged_files > 0 {
        summary += &format!(" ({not_judged_files} only because a check was not judged: exit 5)");
    }
    eprintln!("{summary}");
    if internal > 0 {
        Outcome::Internal
    } else if invalid > 0 {
        Outcome::BadInput
    } else if unmet > not_judged_files {
        Outcome::CheckFailed
    } else if not_judged_files > 0 {
        Outcome::NotJudged
    } else {
        Outcome::Passed
    }
}

/// The message a panic carried (`panic!` gives a `&str` or a `String`).
pub fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_file_is_an_internal_error_and_the_others_still_run() {
        let good = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/bully/coordinator-crash.toml");
        let files = vec![PathBuf::from("boom.toml"), good.clone()];
        let tools = crate::Tools::new(
            tenure_zoo_prebuilt::protocols(),
            tenure_zoo_prebuilt::models(),
        );
        let mut ran = Vec::new();
        let outcome = verify_files(&files, false, &mut Vec::new(), &mut |p| {
            ran.push(p.to_path_buf());
            if p.ends_with("boom.toml") {
                panic!("boom");
            }
            run_one(p, &tools)
        });
        assert_eq!(outcome, Outcome::Internal);
        assert_eq!(ran, files, "the file after the panic still ran");
        let outcome = verify_files(&[good], false, &mut Vec::new(), &mut |p| run_one(p, &tools));
        assert_eq!(outcome, Outcome::Passed);
    }

    #[test]
    fn panic_messages_are_read_from_str_and_string() {
        let p = std::panic::catch_unwind(|| panic!("plain")).unwrap_err();
        assert_eq!(panic_text(&p), "plain");
        let p = std::panic::catch_unwind(|| panic!("{}", 7)).unwrap_err();
        assert_eq!(panic_text(&p), "7");
    }
}
