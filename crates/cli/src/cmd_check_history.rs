//! `tenure check-history FILE --model M`: is a client history linearizable?
//!
//! Exit codes: 0 linearizable, 1 not, 2 bad input (the file and line at fault), 3 no
//! answer within `--timeout` (or an internal error).

use crate::Outcome;
use clap::Args;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tenure_check::linearizability::formats::Format;
use tenure_check::linearizability::search::Budget;
use tenure_check::linearizability::{check_text, Verdict, MODELS};

#[derive(Args, Debug)]
pub struct CheckHistoryArgs {
    /// The history: a Jepsen EDN file (maps per line, or one vector or list), a
    /// Porcupine/Jepsen etcd log, or tenure's JSON lines.
    file: PathBuf,
    /// The sequential model: register, cas-register, kv, mutex or fencing.
    #[arg(long)]
    model: String,
    /// The file's format: jepsen-log, edn or jsonl (detected from the file if not given).
    #[arg(long)]
    format: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Give up with "unknown" (not judged: undecided, exit 5) after this long, e.g. 10s, 500ms, 2m.
    #[arg(long, default_value = "10s")]
    timeout: String,
    /// Also give up after this many search steps (deterministic, unlike --timeout).
    #[arg(long)]
    max_steps: Option<u64>,
}

/// `10s`, `500ms`, `2m`, `1.5s`.
fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| c.is_ascii_alphabetic())?);
    let n: f64 = num.trim().parse().ok()?;
    if !n.is_finite() || n < 0.0 {
        return None;
    }
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}

pub fn run(args: CheckHistoryArgs) -> Outcome {
    let shown = crate::shown(&args.file);
    if !MODELS.iter().any(|(m, _)| *m == args.model) {
        let message = format!(
            "--model: unknown model `{}`; known models: {}",
            args.model,
            MODELS.iter().map(|m| m.0).collect::<Vec<_>>().join(", ")
        );
        return crate::bad_input(crate::suggest_in(&message, &args.model));
    }
    let format = match args.format.as_deref() {
        None => None,
        Some(f) => match Format::from_name(f) {
            Some(f) => Some(f),
            None => {
                let message = format!(
                    "--format: unknown format `{f}`; known formats: {}",
                    Format::NAMES.join(", ")
                );
                return crate::bad_input(crate::suggest_in(&message, f));
            }
        },
    };
    let Some(timeout) = parse_duration(&args.timeout) else {
        crate::error(format!(
            "--timeout: expected a duration such as 10s, 500ms or 2m, got `{}`",
            args.timeout
        ));
        return Outcome::BadInput;
    };
    let text = match std::fs::read_to_string(&args.file) {
        Ok(t) => t,
        Err(e) => {
            crate::error(format!("{shown}: {e}"));
            return Outcome::BadInput;
        }
    };
    // The timeout is wall-clock by nature: a timer thread raises a flag the search
    // polls. It can only turn an answer into "unknown", never change a verdict.
    let cancel = Arc::new(AtomicBool::new(false));
    {
        let cancel = Arc::clone(&cancel);
        std::thread::spawn(move || {
            std::thread::sleep(timeout);
            cancel.store(true, Ordering::Relaxed);
        });
    }
    let budget = Budget {
        max_steps: args.max_steps,
        cancel: Some(&cancel),
    };
    let report = match check_text(&text, format, &args.model, &budget) {
        Ok(r) => r,
        Err(e) => {
            if e.line == 0 {
                crate::error(format!("{shown}: {}", e.message));
            } else {
                crate::error(format!("{shown}:{}: {}", e.line, e.message));
            }
            return Outcome::BadInput;
        }
    };
    if args.json {
        let mut v = serde_json::to_value(&report).expect("reports serialize");
        v["file"] = serde_json::Value::String(shown.clone());
        println!("{}", serde_json::to_string_pretty(&v).expect("json"));
    } else {
        print!("{shown}: {}", report.text());
        if report.verdict == Verdict::Unknown {
            println!(
                "not judged (undecided): no answer within --timeout {} / --max-steps: the search gave up (raise them to search longer)",
                args.timeout
            );
        }
    }
    match report.verdict {
        Verdict::Linearizable => Outcome::Passed,
        Verdict::NotLinearizable => Outcome::CheckFailed,
        Verdict::Unknown => Outcome::NotJudged,
    }
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_read_with_units() {
        assert_eq!(parse_duration("10s"), Some(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("10"), None);
        assert_eq!(parse_duration("-1s"), None);
        assert_eq!(parse_duration("3parsecs"), None);
    }
}
