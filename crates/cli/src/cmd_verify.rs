//! `tenure verify [PATH...]`: every scenario meets its declared expectation.

use crate::cmd_run::prepare;
use crate::report::{expectation_text, protocol_label, replay_command};
use crate::{plural, scenario_files, shown, Outcome};
use clap::Args;
use std::path::PathBuf;
use tenure_sim::RunOptions;

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Scenario files or directories (searched recursively for *.toml).
    #[arg(default_value = "scenarios")]
    paths: Vec<PathBuf>,
    /// Print one JSON object per scenario (JSON lines) instead of text.
    #[arg(long)]
    json: bool,
}

pub fn verify(args: VerifyArgs) -> Outcome {
    let files = match scenario_files(&args.paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("tenure: {e}");
            return Outcome::BadInput;
        }
    };
    if files.is_empty() {
        eprintln!("tenure: no scenario files (*.toml) under {:?}", args.paths);
        return Outcome::BadInput;
    }
    let (mut met, mut unmet, mut invalid, mut internal) = (0usize, 0usize, 0usize, 0usize);
    for path in &files {
        let file = shown(path);
        // A panic (a bug in tenure or a protocol) is that file's internal error; the
        // other files still run and the summary still prints.
        let attempt = std::panic::catch_unwind(|| {
            let prepared = prepare(path)?;
            let report = prepared.run(
                prepared.scenario.seed,
                &RunOptions {
                    trace: true,
                    stop_at_first_violation: false,
                },
            );
            Ok::<_, Outcome>((prepared, report))
        });
        let (prepared, report) = match attempt {
            Ok(Ok(done)) => done,
            Ok(Err(_)) => {
                invalid += 1;
                if args.json {
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
                if args.json {
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
        let got = if report.passed() {
            "pass".to_string()
        } else {
            let names: Vec<&str> = report.violations.iter().map(|v| v.checker).collect();
            format!("violation of {}", names.join(", "))
        };
        if report.expectation_met {
            met += 1;
        } else {
            unmet += 1;
        }
        if args.json {
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
            println!("      replay: {}", replay_command(&file, s.seed));
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
    eprintln!("{summary}");
    if internal > 0 {
        Outcome::Internal
    } else if invalid > 0 {
        Outcome::BadInput
    } else if unmet > 0 {
        Outcome::CheckFailed
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
