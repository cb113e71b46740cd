//! `tenure experiment election-time`: the Raft paper's leader-election measurement
//! (§9.3, Figure 16) as a table, JSON lines and two CDF plots.

use crate::Outcome;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tenure_experiment::election_time::{
    self as et, parse_range, plots, range_label, run_range, table, trials_for, RangeResult, Setup,
};
use tenure_experiment::plot::MARKER;

#[derive(Args, Debug)]
pub struct ExperimentArgs {
    #[command(subcommand)]
    experiment: Experiment,
}

#[derive(Subcommand, Debug)]
enum Experiment {
    /// Crash a Raft leader over and over and time the election that replaces it, for
    /// each election timeout range (Ongaro and Ousterhout, §9.3, Figure 16).
    ElectionTime(ElectionTimeArgs),
}

#[derive(Args, Debug)]
pub struct ElectionTimeArgs {
    /// Trials per timeout range (a range without randomness gets at most 100, as in
    /// the paper).
    #[arg(long, default_value_t = et::PAPER_TRIALS)]
    trials: usize,
    /// Election timeout ranges in milliseconds, comma-separated, e.g. 150-150,150-300
    /// [default: the paper's ten]
    #[arg(long, value_delimiter = ',')]
    ranges: Vec<String>,
    /// Worker threads; the results are the same for any number [default: the number
    /// of CPUs]
    #[arg(long, value_parser = crate::parse_jobs)]
    jobs: Option<usize>,
    /// Print one JSON object per range (JSON lines) instead of the table.
    #[arg(long)]
    json: bool,
    /// Where the two plots go (SVG). A file not written by tenure is never
    /// overwritten: the plot gets a new name instead.
    #[arg(long, default_value = "tenure-out/election-time")]
    out: PathBuf,
    /// One-way message latency, drawn uniformly per message: a range in ms (0.1-0.5)
    /// or with units (100us-500us). Default: a LAN, as the paper's cluster was (its
    /// 15 ms broadcast time was "mostly the disk write"). The simulator wakes a node
    /// at least 1 ms after it last slept, so delays under 1 ms act as about 1 ms.
    #[arg(long, default_value = "0.1-0.5")]
    latency: String,
    /// fsync latency of every server, drawn uniformly per sync, in ms or with units.
    /// Raft syncs its term and vote before sending anything that depends on them (a
    /// vote, a RequestVote, a reply in a new term). Default 1-3: the write at which
    /// the paper's Figure 16 comes out. Its stated broadcast time of about 15 ms,
    /// mostly the disk write (§9.3; §5.6: 0.5-20 ms), would be 10-18; with that on
    /// every election's path, 150-155 ms elections split for seconds (see the book).
    #[arg(long, default_value = "1-3")]
    fsync: String,
    /// Processing time of every handler, drawn uniformly per handler, in ms or with
    /// units (the node handles nothing else meanwhile). Default 0-0: the paper
    /// states none, and the simulator rounds a node's wake to at least 1 ms.
    #[arg(long, default_value = "0-0")]
    processing: String,
    /// A trial with no new leader this long after the crash counts as "no leader".
    #[arg(long, default_value = "10s")]
    cap: String,
}

pub fn experiment(args: ExperimentArgs) -> Outcome {
    match args.experiment {
        Experiment::ElectionTime(a) => election_time(a),
    }
}

fn bad(message: String) -> Outcome {
    crate::bad_input(format!("experiment election-time: {message}"))
}

fn election_time(args: ElectionTimeArgs) -> Outcome {
    let ranges = if args.ranges.is_empty() {
        et::paper_ranges()
    } else {
        match args
            .ranges
            .iter()
            .map(|r| parse_range(r))
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(r) => r,
            Err(e) => return bad(format!("--ranges: {e}")),
        }
    };
    if !(1..=1_000_000).contains(&args.trials) {
        return bad(format!(
            "--trials: {} is not between 1 and 1000000",
            args.trials
        ));
    }
    let jobs = match args.jobs {
        Some(0) => return bad("--jobs: must be at least 1".to_string()),
        Some(j) => j,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let latency = match plain_range(&args.latency) {
        Ok(r) => r,
        Err(e) => return bad(format!("--latency: {e}")),
    };
    let fsync = match bounded_range(&args.fsync, Duration::from_secs(1)) {
        Ok(r) => r,
        Err(e) => return bad(format!("--fsync: {e}")),
    };
    let processing = match bounded_range(&args.processing, Duration::from_secs(1)) {
        Ok(r) => r,
        Err(e) => return bad(format!("--processing: {e}")),
    };
    let cap = match tenure_core::parse_duration(&args.cap) {
        Ok(d) if d >= Duration::from_millis(100) && d <= Duration::from_secs(3600) => d,
        Ok(_) => return bad(format!("--cap: `{}` is not between 100ms and 1h", args.cap)),
        Err(e) => return bad(format!("--cap: {e}")),
    };
    let setup = Setup {
        latency,
        fsync,
        processing,
        cap,
        ..Setup::default()
    };

    // The plots' folder is checked before the trials, so a bad --out costs nothing.
    if let Err(e) = check_out_dir(&args.out) {
        return bad(e);
    }
    let results = run_all(&ranges, &setup, args.trials, jobs);

    if args.json {
        for r in &results {
            println!("{}", r.json(&setup));
        }
    } else {
        print!("{}", table(&results, &setup));
    }
    for (name, svg) in plots(&results, &setup) {
        match write_plot(&args.out, name, &svg) {
            Ok(path) => eprintln!("wrote {}", path.display()),
            Err(e) => {
                return bad(format!("cannot write a plot: {e}"));
            }
        }
    }
    Outcome::Passed
}

/// `--out` is a folder (made if missing) that tenure can write into.
fn check_out_dir(dir: &Path) -> Result<(), String> {
    let shown = dir.display();
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "--out {shown}: is a file; --out names the folder the plots go into"
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("--out {shown}: cannot create: {e}"))?;
    let probe = dir.join(format!(".tenure-probe-{}", std::process::id()));
    std::fs::write(&probe, "")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| format!("--out {shown}: cannot write: {e}"))
}

/// A latency range: `lo-hi` in ms or with units; any non-negative values, lo <= hi.
fn plain_range(text: &str) -> Result<(Duration, Duration), String> {
    let (lo, hi) = text
        .split_once('-')
        .ok_or_else(|| format!("`{text}` is not a range like `5-10` (milliseconds)"))?;
    let one = |part: &str| -> Result<Duration, String> {
        match part.trim().parse::<f64>() {
            Ok(ms) if ms.is_finite() && ms >= 0.0 => {
                Ok(Duration::from_nanos((ms * 1e6).round() as u64))
            }
            _ => tenure_core::parse_duration(part),
        }
    };
    let (lo, hi) = (one(lo)?, one(hi)?);
    if lo > hi {
        return Err(format!("`{text}`: the minimum is above the maximum"));
    }
    Ok((lo, hi))
}

/// A range as [`plain_range`] reads it, whose maximum is at most `max`.
fn bounded_range(text: &str, max: Duration) -> Result<(Duration, Duration), String> {
    let range = plain_range(text)?;
    if range.1 > max {
        return Err(format!(
            "`{text}`: the maximum must be at most {}",
            tenure_core::format_duration(max)
        ));
    }
    Ok(range)
}

/// Runs every range, reporting progress on stderr. Wall-clock time is read only for
/// that report; it never affects a trial.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn run_all(
    ranges: &[et::TimeoutRange],
    setup: &Setup,
    trials: usize,
    jobs: usize,
) -> Vec<RangeResult> {
    let start = std::time::Instant::now();
    let mut total = 0;
    // The lines within a range are for a person watching; a pipe or a log gets one line
    // per range (ten tenths of ten ranges were 90 lines of noise in a CI log).
    let live = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let results = ranges
        .iter()
        .map(|range| {
            let n = trials_for(range, trials);
            let began = std::time::Instant::now();
            let tenth = AtomicUsize::new(0);
            let progress = |done: usize| {
                // A line at every tenth of a long range, so a slow run shows life.
                let t = done * 10 / n;
                if live && n >= 200 && t > tenth.fetch_max(t, Ordering::Relaxed) && done < n {
                    eprintln!("  {} ms: {done}/{n} trials", range_label(range));
                }
            };
            let result = RangeResult {
                range: *range,
                trials: run_range(range, setup, n, jobs, &progress),
            };
            total += n;
            eprintln!(
                "election-time: {} ms: {} in {:.1}s",
                range_label(range),
                crate::plural(n as u64, "trial", "trials"),
                began.elapsed().as_secs_f64()
            );
            result
        })
        .collect();
    eprintln!(
        "election-time: {} in {:.1}s on {}",
        crate::plural(total as u64, "trial", "trials"),
        start.elapsed().as_secs_f64(),
        crate::plural(jobs as u64, "thread", "threads")
    );
    results
}

/// Writes `svg` as `dir/name`, unless a file there was not written by tenure: then as
/// `name-2`, `name-3`, ... (the first free or tenure-written one).
fn write_plot(dir: &Path, name: &str, svg: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, "svg"));
    for k in 1..1000 {
        let file = if k == 1 {
            name.to_string()
        } else {
            format!("{stem}-{k}.{ext}")
        };
        let path = dir.join(file);
        let ours = match std::fs::read_to_string(&path) {
            Ok(text) => text.starts_with(MARKER),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(_) => false, // unreadable: not ours to replace
        };
        if ours {
            std::fs::write(&path, svg)?;
            return Ok(path);
        }
    }
    Err(std::io::Error::other(format!(
        "{}: 999 files named {stem}-N.{ext} that tenure did not write",
        dir.display()
    )))
}
