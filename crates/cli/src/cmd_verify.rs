//! `tenure verify [PATH...]`: every scenario meets its declared expectation.

use crate::cmd_run::prepare;
use crate::report::{expectation_text, protocol_label, replay_command};
use crate::Tools;
use crate::{scenario_files, shown, Outcome};
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

pub fn verify(args: VerifyArgs, tools: &Tools) -> Outcome {
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
    let (mut met, mut unmet, mut invalid) = (0usize, 0usize, 0usize);
    for path in &files {
        let file = shown(path);
        let prepared = match prepare(path, tools) {
            Ok(p) => p,
            Err(_) => {
                invalid += 1;
                if args.json {
                    println!(
                        "{}",
                        serde_json::json!({"scenario": file, "status": "invalid"})
                    );
                }
                continue;
            }
        };
        let s = &prepared.scenario;
        let report = prepared.run(
            s.seed,
            &RunOptions {
                trace: true,
                stop_at_first_violation: false,
            },
        );
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
            println!(
                "ok    {file} ({}) seed {}: {got}, as expected",
                protocol_label(s),
                s.seed
            );
        } else {
            println!(
                "FAIL  {file} ({}) seed {}: expected {}, got {got}",
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
    eprintln!("tenure verify: {total} scenarios: {met} met their expectation, {unmet} did not, {invalid} invalid");
    if invalid > 0 {
        Outcome::BadInput
    } else if unmet > 0 {
        Outcome::CheckFailed
    } else {
        Outcome::Passed
    }
}
