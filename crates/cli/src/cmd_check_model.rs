//! `tenure check-model --protocol NAME`: bounded exhaustive exploration (or seeded
//! random walks) of a zoo protocol with tenure-models, the same protocol code the
//! simulator runs. Exit 0: no violation within the bounds; 1: a violation, printed as
//! a shortest counterexample; 2: bad input; 5: not judged (no violation found for a
//! variant whose bug the protocol's model declares out of its scope, or a search that
//! `--max-states` stopped before the depth bound: undecided).

use crate::Outcome;
use crate::Tools;
use clap::{Args, ValueEnum};
use serde_json::json;
use std::ops::Range;
use tenure_models::registry::WALK_DEPTH;
use tenure_models::{
    Counterexample, ModelError, Models, Progress, Query, Report, TimerModel, WalkDepth, WalkReport,
};

#[derive(Args, Debug)]
pub struct CheckModelArgs {
    /// The protocol (`tenure list` shows which the model explores).
    #[arg(long)]
    protocol: String,
    /// The variant (default: correct).
    #[arg(long, default_value = "correct")]
    variant: String,
    /// Nodes of a single-role protocol (raft, bully).
    #[arg(long, conflicts_with = "roles")]
    nodes: Option<u32>,
    /// Role counts, e.g. server=1,client=2,storage=1 (roles left out keep their default).
    #[arg(long)]
    roles: Option<String>,
    /// States at this depth are judged but not expanded. With --walk: each walk's
    /// length in steps (default: 60 events, an event being any step but a timer
    /// firing, and at most 60 x (1 + the timers pending at the start) steps).
    #[arg(long)]
    max_depth: Option<usize>,
    /// Stop (incomplete) after this many unique states: a search that finds nothing
    /// before its depth bound is then not judged (undecided, exit 5).
    #[arg(long)]
    max_states: Option<usize>,
    /// Crash budget (a crashed node may restart).
    #[arg(long)]
    crashes: Option<u32>,
    /// Message-loss budget.
    #[arg(long)]
    drops: Option<u32>,
    /// Message-duplication budget.
    #[arg(long)]
    duplicates: Option<u32>,
    /// Isolation budget: each isolation cuts one node off for an instant, every message
    /// then in flight to or from it lost at once (one fault event).
    #[arg(long)]
    isolations: Option<u32>,
    /// Time-leap budget (every clock jumps past every TTL and lease).
    #[arg(long)]
    leaps: Option<u32>,
    /// Highest term explored (protocols with terms; PBFT: its view).
    #[arg(long)]
    max_term: Option<u64>,
    /// How many nodes of the first role may turn Byzantine (at most what the protocol
    /// declares it tolerates, `max-byzantine`; 0: none).
    #[arg(long)]
    byzantine: Option<u32>,
    /// The behaviours a Byzantine node may take, comma-separated (default: the model's;
    /// equivocate, wrong-digest, silent, conflicting-views).
    #[arg(long, value_delimiter = ',')]
    behaviours: Option<Vec<tenure_core::Byzantine>>,
    /// When timers may fire.
    #[arg(long, value_enum)]
    timers: Option<Timers>,
    /// Checks to judge, comma-separated (default: the protocol's).
    #[arg(long, value_delimiter = ',')]
    checks: Option<Vec<String>>,
    /// Random walks instead of exhaustive search: N (seeds 0..N) or A..B.
    #[arg(long, value_name = "SEEDS")]
    walk: Option<String>,
    /// With --walk: shrink the counterexample found, taking steps out one at a time for
    /// as long as what is left still breaks a property (locally minimal: no single
    /// step can go; only exhaustive search shows a shortest one).
    #[arg(long, requires = "walk")]
    shrink: bool,
    /// Print a JSON report on stdout instead of text.
    #[arg(long)]
    json: bool,
    /// Stop with an error (exit 2) when the process uses more memory than this, e.g.
    /// 512MiB, 8GiB.
    #[arg(long, value_name = "SIZE", default_value = "4GiB", value_parser = parse_size)]
    max_memory: u64,
}

/// The most nodes an exhaustive search takes: its states grow exponentially with
/// nodes, so more is never a legitimate bound (use `tenure fuzz` for large clusters).
pub const MAX_MODEL_NODES: usize = 16;

/// `512MiB`, `4GiB`, `4G`, `100000000` (bytes); units are powers of 1024.
fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size such as 512MiB or 4GiB"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}`; use KiB, MiB or GiB"
            ))
        }
    };
    let bytes = n
        .checked_mul(scale)
        .ok_or_else(|| format!("`{text}` is too large"))?;
    if bytes < 16 << 20 {
        return Err(format!("`{text}` is below 16MiB, too little to start"));
    }
    Ok(bytes)
}

/// `4.0GiB`-style text for a byte count.
fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1}GiB", bytes as f64 / f64::from(1u32 << 30))
    } else {
        format!("{}MiB", bytes >> 20)
    }
}

/// This process's resident memory (Linux `/proc/self/statm`; `None` elsewhere).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Timers {
    /// Any pending timer may fire at any point.
    Free,
    /// Timers fire only when no message is in flight.
    Quiet,
}

pub fn check_model(args: CheckModelArgs, tools: &Tools) -> Outcome {
    match run(&args, &tools.models) {
        Ok(outcome) => outcome,
        Err(e) => {
            // A field the user typed is named as its flag.
            let text = match e.field.as_str() {
                "protocol" | "variant" | "nodes" | "roles" | "checks" | "walk" | "byzantine" => {
                    format!("--{}: {}", e.field, e.message)
                }
                _ => e.to_string(),
            };
            // Suggest a name only for an unknown one (a known protocol without model
            // settings is told so, not offered another).
            let text = match e.field.as_str() {
                _ if !e.message.starts_with("unknown ") && !e.message.contains(" has no ") => text,
                "protocol" => crate::suggest_in(&text, &args.protocol),
                "variant" => crate::suggest_in(&text, &args.variant),
                "checks" => {
                    let unknown = e.message.strip_prefix("unknown checker `");
                    let name = unknown.and_then(|r| r.split('`').next()).unwrap_or("");
                    let all = tenure_check::all();
                    let known = all.iter().map(|c| c.name);
                    let known =
                        known.chain(tenure_models::registry::MODEL_PROPERTIES.iter().copied());
                    format!(
                        "{text}{}",
                        tenure_scenario::suggest::did_you_mean(name, known)
                    )
                }
                _ => text,
            };
            crate::bad_input(format!("check-model {text}"))
        }
    }
}

fn run(args: &CheckModelArgs, models: &Models) -> Result<Outcome, ModelError> {
    let seeds = args.walk.as_deref().map(parse_seeds).transpose()?;
    let mut query = if seeds.is_some() {
        models.query_for_walks(&args.protocol, &args.variant)?
    } else {
        models.query(&args.protocol, &args.variant)?
    };
    apply(args, &mut query)?;
    query.shrink = args.shrink;
    let entry = models.lookup(&args.protocol);
    let out_of_scope = entry.and_then(|e| e.out_of_scope(&args.variant));
    // Said only of walks: the breadth-first search is what shows these.
    let walks_miss = entry
        .and_then(|e| e.walks_miss(&args.variant))
        .filter(|_| seeds.is_some());
    if !args.json {
        println!(
            "{}",
            describe(
                &query,
                args.byzantine.is_some() || args.behaviours.is_some(),
                // Default walks count their depth in events (`WALK_DEPTH`).
                if seeds.is_some() && args.max_depth.is_none() {
                    " events"
                } else {
                    ""
                }
            )
        );
        if let Some(why) = out_of_scope {
            println!(
                "note: the model leaves `{}`'s bug out of its scope ({why}): a search that finds nothing is not judged",
                args.variant
            );
        }
        if let Some(why) = walks_miss {
            println!(
                "note: random walks are not expected to find `{}`'s bug ({why}); the breadth-first search (check-model without --walk) shows it",
                args.variant
            );
        }
    }
    let outcome = match seeds {
        Some(seeds) => {
            // The user's --max-depth is a bound in steps, as given; without one, the
            // default counts events (the step cap it derives is printed with the walks).
            let depth = match args.max_depth {
                Some(steps) => WalkDepth::Steps(steps),
                None => WALK_DEPTH,
            };
            let report = models.walk_model_to(&query, seeds.clone(), depth)?;
            print_walks(args, &query, &seeds, &report, out_of_scope, walks_miss)
        }
        None => {
            let report = models.check_model_with(&query, &mut progress_printer(args.max_memory))?;
            print_report(args, &query, &report, out_of_scope)
        }
    };
    Ok(match (outcome, out_of_scope) {
        // The model cannot show this bug: finding nothing judged nothing.
        (Outcome::Passed, Some(why)) => {
            if !args.json {
                println!(
                    "NOT JUDGED (could not fail): {why}; `tenure fuzz --protocol {} --variant {}` looks for it in the simulator",
                    args.protocol, args.variant
                );
            }
            Outcome::NotJudged
        }
        (outcome, _) => outcome,
    })
}

fn apply(args: &CheckModelArgs, query: &mut Query) -> Result<(), ModelError> {
    if let Some(n) = args.nodes {
        query.set_nodes(n)?;
    }
    if let Some(roles) = &args.roles {
        query.set_roles(roles)?;
    }
    if query.cluster.size() > MAX_MODEL_NODES {
        return Err(ModelError {
            field: if args.roles.is_some() { "roles" } else { "nodes" }.to_string(),
            message: format!(
                "{} nodes are more than the model checker's limit of {MAX_MODEL_NODES} (its states grow exponentially with nodes); use `tenure fuzz` or `tenure run` for large clusters",
                query.cluster.size()
            ),
        });
    }
    let b = &mut query.bounds;
    if let Some(d) = args.max_depth {
        b.max_depth = d;
    }
    if let Some(s) = args.max_states {
        b.max_states = s;
    }
    if let Some(c) = args.crashes {
        b.max_crashes = c;
    }
    if let Some(d) = args.drops {
        b.max_drops = d;
    }
    if let Some(d) = args.duplicates {
        b.max_duplicates = d;
    }
    if let Some(l) = args.leaps {
        b.max_leaps = l;
    }
    if let Some(i) = args.isolations {
        b.max_isolations = i;
    }
    if let Some(n) = args.byzantine {
        b.max_byzantine = n;
    }
    if let Some(behaviours) = &args.behaviours {
        // The bounds hold a `'static` slice (they fit a `static` spec); a command runs
        // one query, so this one list lives as long as the process anyway.
        let mut list = behaviours.clone();
        list.sort();
        list.dedup();
        b.behaviours = Box::leak(list.into_boxed_slice());
    }
    if let Some(t) = args.timers {
        b.timers = match t {
            Timers::Free => TimerModel::Free,
            Timers::Quiet => TimerModel::Quiet,
        };
    }
    if let Some(t) = args.max_term {
        query.max_term = t;
    }
    if let Some(checks) = &args.checks {
        query.checks = checks.iter().map(|c| c.trim().to_string()).collect();
    }
    Ok(())
}

/// `N` (seeds 0..N) or `A..B`.
fn parse_seeds(text: &str) -> Result<Range<u64>, ModelError> {
    let bad = || ModelError {
        field: "walk".to_string(),
        message: format!("`{text}` is not a seed count N or a range A..B"),
    };
    let num = |s: &str| -> Result<u64, ModelError> {
        let s = s.trim();
        s.parse()
            .map_err(|_| match s.bytes().all(|b| b.is_ascii_digit()) {
                true if !s.is_empty() => ModelError {
                    field: "walk".to_string(),
                    message: format!("`{s}` is too large: seeds go up to {}", u64::MAX),
                },
                _ => bad(),
            })
    };
    let range = match text.split_once("..") {
        Some((a, b)) => num(a)?..num(b)?,
        None => 0..num(text)?,
    };
    if range.is_empty() {
        return Err(bad());
    }
    Ok(range)
}

/// One line: what is explored, under which bounds.
fn describe(q: &Query, byzantine_asked: bool, depth_unit: &str) -> String {
    let roles: Vec<String> = q
        .cluster
        .roles()
        .iter()
        .map(|r| format!("{}={}", r.role, r.count))
        .collect();
    let b = &q.bounds;
    // The bound on the stored term, named by the key's last part: `term` (raft),
    // `pbft/view` (views), `promised/round` (multi-paxos's ballot rounds).
    let terms = q.term_key.map_or(String::new(), |key| {
        let name = key.rsplit('/').next().unwrap_or(key);
        format!("{name}s <= {}, ", q.max_term)
    });
    // Shown where the model gives Byzantine nodes, and wherever it was asked for (so a
    // run with `--byzantine 0` says it had none).
    let byzantine = if b.max_byzantine > 0 || byzantine_asked {
        // `byzantine_asked`: --byzantine or --behaviours was given.
        let first = q.cluster.roles().first().map_or("", |r| r.role.as_str());
        let behaviours: Vec<String> = b.behaviours.iter().map(|x| x.to_string()).collect();
        format!(
            ", byzantine <= {} ({first}s; {})",
            b.max_byzantine,
            behaviours.join(", ")
        )
    } else {
        String::new()
    };
    // Shown only where isolations are allowed, so that other headers stay as they were.
    let isolations = if b.max_isolations > 0 {
        format!(", isolations <= {}", b.max_isolations)
    } else {
        String::new()
    };
    format!(
        "check-model {} {} on {}: {terms}depth <= {}{depth_unit}, states <= {}, crashes <= {}, drops <= {}{isolations}, duplicates <= {}, leaps <= {}{byzantine}, timers {}; checks {}",
        q.protocol,
        q.variant,
        roles.join(","),
        b.max_depth,
        b.max_states,
        b.max_crashes,
        b.max_drops,
        b.max_duplicates,
        b.max_leaps,
        match b.timers {
            TimerModel::Free => "free",
            TimerModel::Quiet => "quiet",
        },
        q.checks.join(", ")
    )
}

/// What was explored, for the JSON reports: the cluster, every bound and the checks.
fn explored_json(q: &Query) -> serde_json::Value {
    let b = &q.bounds;
    let roles: serde_json::Map<String, serde_json::Value> = q
        .cluster
        .roles()
        .iter()
        .map(|r| (r.role.clone(), json!(r.count)))
        .collect();
    json!({
        "roles": roles,
        "max_depth": b.max_depth,
        "max_states": b.max_states,
        "max_term": q.max_term,
        "crashes": b.max_crashes,
        "drops": b.max_drops,
        "isolations": b.max_isolations,
        "duplicates": b.max_duplicates,
        "leaps": b.max_leaps,
        "byzantine": b.max_byzantine,
        "byzantine_behaviours": b.behaviours.iter().map(|x| x.to_string()).collect::<Vec<_>>(),
        "timers": match b.timers {
            TimerModel::Free => "free",
            TimerModel::Quiet => "quiet",
        },
        "checks": q.checks,
    })
}

/// Prints progress on stderr about once a second of wall time, and stops the process
/// (exit 2) when its memory passes `max_memory`.
// Wall time decides only when to print; it never affects the exploration.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn progress_printer(max_memory: u64) -> impl FnMut(&Progress) {
    let started = std::time::Instant::now();
    let mut last = started;
    move |p: &Progress| {
        if let Some(rss) = resident_bytes().filter(|r| *r > max_memory) {
            crate::error(format!(
                "check-model --max-memory: memory use {} is above the limit of {} after {} unique states (depth {}); lower --max-states or --max-depth, or raise --max-memory",
                size_text(rss),
                size_text(max_memory),
                p.unique_states,
                p.depth
            ));
            std::process::exit(i32::from(Outcome::BadInput.code()));
        }
        let now = std::time::Instant::now();
        if now.duration_since(last).as_secs_f64() < 1.0 {
            return;
        }
        last = now;
        let elapsed = now.duration_since(started).as_secs_f64();
        eprintln!(
            "  ... {} distinct states found, {} of them expanded, depth {}, {:.0} states/s",
            p.unique_states,
            p.states_explored,
            p.depth,
            p.unique_states as f64 / elapsed.max(1e-9)
        );
    }
}

fn how_far(report: &Report) -> String {
    if report.counterexample.is_some() {
        "stopped at the first violation".to_string()
    } else if !report.complete {
        format!(
            "cut by max-states at depth {} (every state to depth {} judged)",
            report.judged_depth + 1,
            report.judged_depth
        )
    } else if report.depth_cut > 0 {
        format!(
            "cut by max-depth ({} states not expanded)",
            report.depth_cut
        )
    } else {
        "complete".to_string()
    }
}

fn print_counterexample(cex: &Counterexample) {
    println!(
        "VIOLATION {} at depth {}: {}",
        cex.property, cex.depth, cex.message
    );
    println!("  0. every node started");
    for (i, step) in cex.steps.iter().enumerate() {
        println!("  {}. {step}", i + 1);
    }
}

fn counterexample_json(cex: &Counterexample) -> serde_json::Value {
    json!({
        "property": cex.property,
        "message": cex.message,
        "depth": cex.depth,
        "steps": cex.steps,
    })
}

/// The verdict's key in JSON: a violation fails; nothing found passes, unless the
/// model declared the variant's bug out of its scope or the search was cut short.
fn verdict_key(violation: bool, out_of_scope: Option<&str>) -> &'static str {
    match (violation, out_of_scope) {
        (true, _) => "fail",
        (false, Some(_)) => "not-judged",
        (false, None) => "pass",
    }
}

/// Why a search that found nothing judged less than the bounds asked: `max_states`
/// stopped it before the depth bound (it says what did pass, but not what was asked).
fn undecided(q: &Query, report: &Report) -> Option<String> {
    (report.counterexample.is_none() && !report.complete).then(|| {
        format!(
            "--max-states {} stopped the search at depth {} of the {} asked; every state to \
             depth {} passed. Raise --max-states (and --max-memory) to judge depth {}, or \
             ask --max-depth {} for a complete search",
            q.bounds.max_states,
            report.judged_depth + 1,
            q.bounds.max_depth,
            report.judged_depth,
            q.bounds.max_depth,
            report.judged_depth
        )
    })
}

fn print_report(
    args: &CheckModelArgs,
    q: &Query,
    report: &Report,
    out_of_scope: Option<&str>,
) -> Outcome {
    let undecided = undecided(q, report);
    if args.json {
        let out = json!({
            "protocol": q.protocol,
            "variant": q.variant,
            "mode": "explore",
            "explored": explored_json(q),
            "states_explored": report.states_explored,
            "unique_states": report.unique_states,
            "transitions": report.transitions,
            "max_depth_reached": report.max_depth_reached,
            "depth_cut": report.depth_cut,
            "complete": report.complete,
            "elapsed_seconds": report.elapsed_seconds,
            "states_per_second": report.unique_states_per_second,
            "judged_depth": report.judged_depth,
            "violation": report.counterexample.as_ref().map(counterexample_json),
            "verdict": if undecided.is_some() {
                "not-judged"
            } else {
                verdict_key(report.counterexample.is_some(), out_of_scope)
            },
            "out_of_scope": out_of_scope,
            "undecided": undecided,
        });
        println!("{out:#}");
    } else {
        match &report.counterexample {
            Some(cex) => print_counterexample(cex),
            None if undecided.is_some() => println!("no violation in the states explored"),
            None => println!("no violation within the bounds"),
        }
        println!(
            "explored {}, {} unique, depth reached {}, {}, {:.0} states/s ({:.2}s)",
            crate::plural(report.states_explored, "state", "states"),
            report.unique_states,
            report.max_depth_reached,
            how_far(report),
            report.unique_states_per_second,
            report.elapsed_seconds
        );
        if let Some(why) = &undecided {
            println!("NOT JUDGED (undecided): {why}");
        }
    }
    if report.counterexample.is_some() {
        Outcome::CheckFailed
    } else if undecided.is_some() {
        Outcome::NotJudged
    } else {
        Outcome::Passed
    }
}

fn print_walks(
    args: &CheckModelArgs,
    q: &Query,
    seeds: &Range<u64>,
    report: &WalkReport,
    out_of_scope: Option<&str>,
    walks_miss: Option<&str>,
) -> Outcome {
    if args.json {
        let out = json!({
            "protocol": q.protocol,
            "variant": q.variant,
            "mode": "walk",
            "explored": explored_json(q),
            "seeds": [seeds.start, seeds.end],
            "seeds_run": report.seeds_run,
            "steps_total": report.steps_total,
            "events_total": report.events_total,
            "depth": match report.depth {
                WalkDepth::Steps(steps) => json!({ "steps": steps }),
                WalkDepth::Events(events) => json!({
                    "events": events,
                    "timers_at_start": report.timers_at_start,
                    "max_steps": report.max_steps,
                }),
            },
            "violation": report.failure.as_ref().map(|f| {
                let mut v = counterexample_json(&f.counterexample);
                v["seed"] = json!(f.seed);
                if let Some(walked) = f.walked_depth {
                    v["walked_depth"] = json!(walked);
                }
                v
            }),
            "verdict": verdict_key(report.failure.is_some(), out_of_scope),
            "out_of_scope": out_of_scope,
            "walks_miss": walks_miss,
        });
        println!("{out:#}");
    } else {
        match &report.failure {
            Some(f) => {
                match f.walked_depth {
                    Some(walked) => println!(
                        "walk seed {} breaks {} (its {walked} steps shrunk to {}):",
                        f.seed, f.counterexample.property, f.counterexample.depth
                    ),
                    None => {
                        println!("walk seed {} breaks {}:", f.seed, f.counterexample.property)
                    }
                }
                print_counterexample(&f.counterexample);
            }
            None => println!("no violation in any walk"),
        }
        println!(
            "walked {} ({}..{}), {} in all, {} of them events, depth <= {}",
            crate::plural(report.seeds_run, "seed", "seeds"),
            seeds.start,
            seeds.end,
            crate::plural(report.steps_total, "step", "steps"),
            report.events_total,
            match report.depth {
                WalkDepth::Steps(steps) => steps.to_string(),
                WalkDepth::Events(events) => format!(
                    "{events} events (walk default), at most {} steps = {events} x (1 + {} pending at the start)",
                    report.max_steps,
                    crate::plural(report.timers_at_start as u64, "timer", "timers"),
                ),
            }
        );
    }
    if report.failure.is_some() {
        Outcome::CheckFailed
    } else {
        Outcome::Passed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--max-depth`'s help states the default walk depth: it must name the
    /// registry's numbers, not an older copy of them.
    #[test]
    fn max_depth_help_states_the_default_walk_depth() {
        use clap::Args as _;
        use tenure_models::registry::WALK_EVENTS;
        let cmd = CheckModelArgs::augment_args(clap::Command::new("check-model"));
        let help = cmd
            .get_arguments()
            .find(|a| a.get_id() == "max_depth")
            .and_then(|a| a.get_help())
            .expect("--max-depth has a help text")
            .to_string();
        assert!(
            help.contains(&format!("default: {WALK_EVENTS} events"))
                && help.contains(&format!("at most {WALK_EVENTS} x (1 + ")),
            "{help}"
        );
    }

    #[test]
    fn sizes_read_with_binary_units() {
        assert_eq!(parse_size("4GiB"), Ok(4 << 30));
        assert_eq!(parse_size("512m"), Ok(512 << 20));
        assert_eq!(parse_size("33554432"), Ok(32 << 20));
        assert!(parse_size("1MiB").unwrap_err().contains("below 16MiB"));
        assert!(parse_size("4TB").unwrap_err().contains("unknown unit"));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
        assert_eq!(size_text(4 << 30), "4.0GiB");
        assert_eq!(size_text(300 << 20), "300MiB");
    }

    #[test]
    fn this_process_has_a_resident_size() {
        if cfg!(target_os = "linux") {
            assert!(resident_bytes().is_some_and(|b| b > 0));
        }
    }
}
