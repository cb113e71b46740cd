//! The end of `tenure fuzz` and all of `tenure fuzz merge`: a [`Report`] in words, as
//! JSON and as JUnit XML. Both commands build their report with the same function from
//! the same JSON lines, so the merge of shards prints what one process over the same
//! seeds prints (paths aside).

use crate::junit::{Case, Suite, Verdict};
use crate::report::replay_command;
use std::io::Write;
use tenure_fuzz::{Group, Report};

/// At most this many seeds are listed for an unshrunk group (the rest are counted).
const LISTED_SEEDS: usize = 20;

fn seed_list(seeds: &[u64]) -> String {
    let shown: Vec<String> = seeds
        .iter()
        .take(LISTED_SEEDS)
        .map(u64::to_string)
        .collect();
    let more = seeds.len().saturating_sub(LISTED_SEEDS);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

fn group_title(g: &Group) -> String {
    let n = g.seeds.len();
    let seeds = format!(
        "{n} seed{}: {}",
        if n == 1 { "" } else { "s" },
        seed_list(&g.seeds)
    );
    match &g.signature {
        Some(sig) => format!("{} after [{sig}] ({seeds})", g.checker),
        None => format!("{}, not shrunk ({seeds})", g.checker),
    }
}

/// The failures in words: each group with its examples and their replay commands.
/// `resolve` turns a path as a line wrote it into one usable from here; `print_one` is
/// the command that prints any seed's case (`tenure fuzz --protocol raft ... --print`).
pub fn print_findings(
    out: &mut dyn Write,
    r: &Report,
    resolve: &dyn Fn(&str) -> String,
    print_one: &str,
) {
    if !r.groups.is_empty() {
        let _ = writeln!(
            out,
            "failing seeds by check and shrunk fault schedule (the first {} of each check kept and shrunk; --keep N):",
            r.keep
        );
    }
    for g in &r.groups {
        let _ = writeln!(out, "  {}", group_title(g));
        for e in &g.examples {
            let _ = writeln!(out, "    seed {}: {}", e.seed, e.message);
            if let Some(case) = &e.case {
                let case = resolve(case);
                let _ = writeln!(out, "      replay: {}", replay_command(&case, e.seed));
            }
            if let Some(s) = &e.shrunk {
                match &s.case {
                    Some(case) => {
                        let _ = writeln!(
                            out,
                            "      shrunk to {}: {}",
                            shrunk_size(s),
                            replay_command(&resolve(case), s.seed)
                        );
                    }
                    None => {
                        let _ = writeln!(out, "      shrunk to {}", shrunk_size(s));
                    }
                }
            }
            if let Some(t) = &e.timeline {
                let _ = writeln!(out, "      timeline: {}", resolve(t));
            }
        }
        if g.signature.is_none() {
            let _ = writeln!(
                out,
                "    any of them: {print_one} --print SEED > case.toml, then {} run case.toml --seed SEED",
                crate::program()
            );
        }
    }
    for (seed, outcome, message) in &r.internal {
        let _ = writeln!(out, "  seed {seed}: {outcome}: {message}");
    }
}

pub fn print_coverage(out: &mut dyn Write, r: &Report) {
    for line in r.coverage.lines() {
        let _ = writeln!(out, "coverage: {line}");
    }
    if let Some((seed, hint)) = &r.first_hint {
        let _ = writeln!(
            out,
            "durability hint (not a failure) in {} of {} seeds; first, seed {seed}: {hint}",
            r.hint_seeds, r.seeds
        );
    }
}

/// Per check, the seeds in which nothing failed but it was not judged, with why; then
/// the checks judged in no seed at all (no verdict over the run: exit 5), which it
/// returns. `tenure fuzz` and `tenure fuzz merge` print these same lines over the same
/// seeds, however they were sharded.
pub fn print_not_judged(out: &mut dyn Write, r: &Report) -> Vec<String> {
    for c in &r.not_judged_by_check {
        if c.total() > 0 {
            let _ = writeln!(out, "  {}: {}", c.check, c.words());
        }
    }
    let never = r.never_judged();
    if !never.is_empty() {
        let _ = writeln!(
            out,
            "NOT JUDGED in any seed: {} (no verdict over this run: exit 5)",
            never.join(", ")
        );
    }
    never
}

/// The report's per-check "not judged" counts as JSON (`not_judged`, `never_judged`).
fn not_judged_json(r: &Report, j: &mut serde_json::Value) {
    j["never_judged"] = serde_json::json!(r.never_judged());
    j["not_judged"] = r
        .not_judged_by_check
        .iter()
        .map(|c| {
            serde_json::json!({
                "check": c.check,
                "seeds": c.seeds,
                "not_judged": c.total(),
                "reasons": c.reasons.iter().map(|(reason, n, seed, why)| serde_json::json!({
                    "reason": reason.key(), "seeds": n, "first_seed": seed, "why": why
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
}

/// The report as JSON: [`Report::verdict_json`] plus where each example's files are
/// (resolved from here).
pub fn report_json(r: &Report, resolve: &dyn Fn(&str) -> String) -> serde_json::Value {
    let mut j = r.verdict_json();
    j["not_judged_seeds"] = serde_json::json!(r.not_judged);
    not_judged_json(r, &mut j);
    if let Some(groups) = j["groups"].as_array_mut() {
        for (gj, g) in groups.iter_mut().zip(&r.groups) {
            if let Some(examples) = gj["examples"].as_array_mut() {
                for (ej, e) in examples.iter_mut().zip(&g.examples) {
                    ej["case"] = serde_json::json!(e.case.as_deref().map(resolve));
                    ej["replay"] = serde_json::json!(e
                        .case
                        .as_deref()
                        .map(|c| replay_command(&resolve(c), e.seed)));
                    ej["shrunk_case"] = serde_json::json!(e
                        .shrunk
                        .as_ref()
                        .and_then(|s| s.case.as_deref())
                        .map(resolve));
                    ej["timeline"] = serde_json::json!(e.timeline.as_deref().map(resolve));
                }
            }
        }
    }
    j
}

/// One JUnit test suite per report: a test case per check (passed, skipped if it judged
/// nothing, or one failing case per group of its failures, with the replay commands), and
/// an error case per panic, nondeterministic seed or run limit.
pub fn junit_suite(r: &Report, seconds: Option<f64>, resolve: &dyn Fn(&str) -> String) -> Suite {
    let classname = format!("{}.{}", r.target.replace('/', "."), r.profile);
    let mut cases = Vec::new();
    let mut checks: Vec<String> = r.coverage.checks.iter().map(|(c, _)| c.clone()).collect();
    for g in &r.groups {
        if !checks.contains(&g.checker) {
            checks.push(g.checker.clone());
        }
    }
    for check in &checks {
        let judged = r
            .coverage
            .checks
            .iter()
            .find(|(c, _)| c == check)
            .map_or(0, |(_, n)| *n);
        let groups: Vec<&Group> = r.groups.iter().filter(|g| &g.checker == check).collect();
        let summary = format!("judged something in {judged} of {} seeds", r.seeds);
        if groups.is_empty() {
            let verdict = if judged == 0 {
                Verdict::Skipped {
                    message: format!(
                        "{check} judged nothing in any of {} seeds: not a pass",
                        r.seeds
                    ),
                }
            } else {
                Verdict::Passed
            };
            cases.push(Case {
                name: check.clone(),
                classname: classname.clone(),
                seconds: None,
                verdict,
                out: Some(summary.clone()),
            });
        }
        for g in groups {
            let mut text = vec![group_title(g)];
            for e in &g.examples {
                text.push(format!("seed {}: {}", e.seed, e.message));
                if let Some(case) = &e.case {
                    text.push(format!(
                        "  replay: {}",
                        replay_command(&resolve(case), e.seed)
                    ));
                }
                if let Some(s) = &e.shrunk {
                    if let Some(case) = &s.case {
                        text.push(format!(
                            "  shrunk: {}",
                            replay_command(&resolve(case), s.seed)
                        ));
                    }
                }
            }
            let name = match &g.signature {
                Some(sig) => format!("{check} [{sig}]"),
                None => format!("{check} (not shrunk)"),
            };
            let first = g.examples.first();
            let message = match first {
                Some(e) => format!(
                    "{} seed{} failed; seed {}: {}",
                    g.seeds.len(),
                    if g.seeds.len() == 1 { "" } else { "s" },
                    e.seed,
                    e.message
                ),
                None => format!(
                    "{} more seeds failed: {}",
                    g.seeds.len(),
                    seed_list(&g.seeds)
                ),
            };
            cases.push(Case {
                name,
                classname: classname.clone(),
                seconds: None,
                verdict: Verdict::Failure {
                    ty: check.clone(),
                    message,
                    text: text.join("\n"),
                },
                out: Some(summary.clone()),
            });
        }
    }
    for (seed, outcome, message) in &r.internal {
        cases.push(Case {
            name: format!("seed {seed}"),
            classname: classname.clone(),
            seconds: None,
            verdict: Verdict::Error {
                ty: outcome.clone(),
                message: message.clone(),
                text: format!(
                    "re-run: {} fuzz ... --seeds {seed}..{}",
                    crate::program(),
                    seed + 1
                ),
            },
            out: None,
        });
    }
    Suite {
        name: format!(
            "{} under {} (seeds {})",
            r.target,
            r.profile,
            r.covered_text()
        ),
        seconds,
        properties: vec![
            ("target".into(), r.target.clone()),
            ("profile".into(), r.profile.clone()),
            ("seeds".into(), r.seeds.to_string()),
            ("covered".into(), r.covered_text()),
            ("failed".into(), r.failed.to_string()),
            ("not_judged".into(), r.not_judged.to_string()),
        ],
        cases,
    }
}

/// `2 fault events`, or `1 fault event and 2 clock settings`.
fn shrunk_size(s: &tenure_fuzz::ShrunkLine) -> String {
    let faults = format!(
        "{} fault event{}",
        s.faults,
        if s.faults == 1 { "" } else { "s" }
    );
    match s.clocks {
        0 => faults,
        n => format!(
            "{faults} and {n} clock setting{}",
            if n == 1 { "" } else { "s" }
        ),
    }
}
