//! `tenure real SCENARIO`: the scenario's lock clients against real servers on
//! loopback (`tenure-real`), judged by `real_verdict` as `tenure cluster` and `tenure
//! check-trace` judge; and `tenure real --table redis|etcd|zookeeper|all`: the validation tables, each row
//! run in the simulator and against the real servers, verdicts side by side.

// Real processes and real time: what this command is for.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use crate::real_verdict::{Check, ClockError};
use crate::{shown, Outcome, Tools};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tenure_sim::RunOptions;

const AFTER_HELP: &str = "\
Starts a real server process for each server node of the scenario (redis-server for
redis-lock, fencing and redlock: `--bind 127.0.0.1 --port P --dir D --save \"\"
--appendonly no`, on a free loopback port, with a data directory of its own under the
system's temporary directory; fencing's token counter gets `--appendonly yes
--appendfsync always`, as the model's is synced), and runs the zoo's own lock clients
and protected storage, unchanged, as threads of this process with real clocks and
timers. A client's requests are real commands on a connection of its own (redis-rs):
SET key owner NX PX ttl to acquire, the compare-and-delete Lua script to release, as the
model's server does them. etcd-lock: an `etcd` per server node (a one-member cluster,
client and peer URLs on 127.0.0.1), the clients speaking its v3 API through its JSON
gateway (lease grant and keep-alive, the lock's transaction, ranges, a watch for the
predecessor's delete). zookeeper (lock and election recipes): a standalone ZooKeeper
(java ZooKeeperServerMain, clientPortAddress=127.0.0.1, no AdminServer, no JMX port),
the clients speaking its wire protocol, one TCP connection per session, pinging only
when the model client pings: a paused client's session is expired by the server.

Faults from the scenario, at their times:
    pause      a server: SIGSTOP, then SIGCONT after the duration; a client: its
               thread's loop frozen for the duration (nothing handled, its messages
               and timers pile up, its connections stay open: what SIGSTOP does to a
               client process)
    crash      a server: SIGKILL (its data directory kept); a client: its thread ended,
               its state lost, its `crashed` record written
    restart    a server: the same command again (same port, same data directory); a
               client: a new thread on the same directory
    partition, isolate, cut, one-way, heal
               links blocked: what a node sends across one (a request to a server,
               a server's answer, a message to the storage) is dropped, as the
               simulator's datagram network drops it; connections stay open
    clock-jump a server's wall clock stepped by tenure's clock shim (an LD_PRELOAD
               library compiled at run time with `cc`: CLOCK_REALTIME, gettimeofday
               and time offset, monotonic clocks untouched); a client's clock
               cannot be stepped (the clients share this machine's clock)
Latency, loss, duplication and bridges, clock drift, stalls and slews, disk faults and
power loss are refused before anything starts (exit 2), with the reason. The scenario's [network]
latency is not added (loopback has its own).

Everything is kept in --out (default tenure-out/real/NAME-<unix ms>): n<K>/observations.jsonl
(each node's observations, real timestamps, tenure-runtime's format: `tenure check-trace`
reads them), n<K>/server.log (a server's own log), schedule.jsonl (every fault: planned,
applied, or why not), scenario.toml. No server process or temporary directory outlives
the command (its end, an error, a panic, Ctrl-C); a server dies with tenure even if
tenure is killed (setpriv --pdeathsig).

The verdict is `tenure check-trace`'s, with the scenario's checks: the checks that
compare time intervals of different nodes (mutual-exclusion and its belief form, ...)
are judged with a clock-error bound, 1ms by default (every client is a thread of this
process reading one clock; --clock-error changes it), stated in the report; lease-safety
and the liveness checks are not judged on real runs. A check not judged is never a pass.

Not deterministic: real processes, sockets and clocks. The same command gives another
run. `--table redis` (etcd, zookeeper, all) runs each row of the validation table in
the simulator (its seed) and --reps times against real servers, and prints the
verdicts side by side.

Needs the server: Debian's package redis-server, etcd-server or zookeeperd (apt-get
install -y PACKAGE; stop the service it starts). A missing server is bad input naming
the package. A server's clock-jump is refused for etcd and ZooKeeper (leases and
sessions run on their monotonic clocks).

Exit codes: 0 every check passed, 1 a check failed, 2 bad input (a fault or protocol a
real run cannot do, a missing server, an --out that exists) or a check that judged
nothing, 3 internal error (a server that would not start, a fault that could not be
applied), 5 no check failed but at least one was not judged. With --table: 0 every row
agrees, 1 a row disagrees.";

/// The validation tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Table {
    /// redis-lock, fencing and redlock against redis-server.
    Redis,
    /// etcd-lock against etcd (Debian's etcd-server 3.4.23).
    Etcd,
    /// The ZooKeeper lock and election recipes against ZooKeeper 3.8.
    Zookeeper,
    /// Every table, one after the other.
    All,
}

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct RealArgs {
    /// The scenario (protocol, variant, parameters, cluster, duration, faults, checks).
    #[arg(required_unless_present = "table", conflicts_with = "table")]
    scenario: Option<PathBuf>,
    /// Where the logs, the servers' logs and the schedule go (must not exist).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// A bound on the error between the nodes' timestamps (default 1ms: one process,
    /// one clock), added to the tolerance of the checks that compare time intervals of
    /// different nodes.
    #[arg(long, value_name = "DURATION", value_parser = crate::parse_duration)]
    clock_error: Option<Duration>,
    /// Run a validation table: each row in the simulator and --reps times for real.
    #[arg(long, value_enum)]
    table: Option<Table>,
    /// Real repetitions of each table row.
    #[arg(long, default_value_t = 5, value_name = "N")]
    reps: u32,
}

/// One row of a validation table: a scenario, run in both worlds.
pub struct Row {
    pub label: &'static str,
    pub scenario: &'static str,
}

/// The Redis table, in order: the happy path, the pause past the TTL (two holders
/// acting), the same pause with fencing tokens (the resource stays safe), the server's
/// wall clock stepped forward (the key expires early), and Redlock on five servers,
/// one restarted without persistence (two majorities).
pub const REDIS_ROWS: &[Row] = &[
    Row {
        label: "redis-lock correct, no faults",
        scenario: "scenarios/redis-lock/real-correct.toml",
    },
    Row {
        label: "redis-lock, holder paused past its TTL",
        scenario: "scenarios/redis-lock/real-gc-pause.toml",
    },
    Row {
        label: "fencing, holder paused past its TTL",
        scenario: "scenarios/fencing/real-gc-pause.toml",
    },
    Row {
        label: "redis-lock, server clock stepped +1m",
        scenario: "scenarios/redis-lock/server-clock-jump.toml",
    },
    Row {
        label: "redlock, a server restarted, no fsync",
        scenario: "scenarios/redlock/restart-without-persistence.toml",
    },
];

/// The etcd table: the happy path; a waiter whose lease expires while it waits, with
/// the v3.5.0 client's own-key check and without it (every 3.4.x client), against the
/// etcd 3.4.23 server; the holder paused past its TTL (fencing keeps the data safe);
/// the server stopped past the TTL (every lease goes, the clients start over).
pub const ETCD_ROWS: &[Row] = &[
    Row {
        label: "etcd-lock correct, a client crash",
        scenario: "scenarios/etcd-lock/real-correct.toml",
    },
    Row {
        label: "etcd-lock, waiter lease expires (v3.5)",
        scenario: "scenarios/etcd-lock/waiter-lease-expires.toml",
    },
    Row {
        label: "etcd-lock, waiter lease expires (3.4)",
        scenario: "scenarios/etcd-lock/waiter-lease-expires-no-key-check.toml",
    },
    Row {
        label: "etcd-lock, holder paused past its TTL",
        scenario: "scenarios/etcd-lock/gc-pause.toml",
    },
    Row {
        label: "etcd-lock, server stopped past the TTL",
        scenario: "scenarios/etcd-lock/real-server-pause.toml",
    },
];

/// The ZooKeeper table: the lock recipe's happy path, its holder's session expiring
/// during a pause, the election recipe's happy path and its leader's session expiring
/// during a pause.
pub const ZOOKEEPER_ROWS: &[Row] = &[
    Row {
        label: "zookeeper lock correct",
        scenario: "scenarios/zookeeper/real-lock-correct.toml",
    },
    Row {
        label: "zookeeper lock, session expires (pause)",
        scenario: "scenarios/zookeeper/lock-session-expiry-pause.toml",
    },
    Row {
        label: "zookeeper election correct",
        scenario: "scenarios/zookeeper/real-election-correct.toml",
    },
    Row {
        label: "zookeeper election, session expires",
        scenario: "scenarios/zookeeper/election-session-expiry-pause.toml",
    },
];

fn clock_error(args: &RealArgs) -> ClockError {
    match args.clock_error {
        Some(bound) => ClockError {
            bound,
            source: "--clock-error",
        },
        None => ClockError {
            bound: Duration::from_millis(1),
            source: "tenure real (every client is a thread of one process reading one clock)",
        },
    }
}

fn default_out(name: &str) -> PathBuf {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    PathBuf::from("tenure-out/real").join(format!("{name}-{ms}"))
}

fn stop_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    // Another command in this process may have set it already: then Ctrl-C is theirs.
    let _ = ctrlc::set_handler(move || s.store(true, Ordering::SeqCst));
    stop
}

/// The scenario's checks, as `real_verdict` takes them.
fn checks_of(s: &tenure_scenario::Scenario) -> Vec<Check> {
    s.checks
        .iter()
        .map(|c| Check {
            name: c.name.clone(),
            params: c.params.clone(),
        })
        .collect()
}

/// One real run of `scenario` into `out`: the verdict (or the outcome of an error).
fn real_once(
    scenario: &tenure_scenario::Scenario,
    out: &Path,
    ce: ClockError,
    quiet: bool,
    stop: &AtomicBool,
) -> Result<(crate::real_verdict::Verdict, usize), Outcome> {
    let opts = tenure_real::Options { out, quiet, stop };
    let finished = match tenure_real::run(scenario, &opts) {
        Ok(f) => f,
        Err(tenure_real::RealError::BadInput(m)) => return Err(crate::bad_input(m)),
        Err(tenure_real::RealError::Internal(m)) => {
            crate::error(m);
            return Err(Outcome::Internal);
        }
    };
    if finished.interrupted {
        eprintln!("tenure real: interrupted; judging the logs so far");
    }
    let history = crate::cmd_check_trace::load(&finished.dirs).map_err(crate::bad_input)?;
    let verdict = crate::real_verdict::judge(&history, &checks_of(scenario), Some(ce))
        .map_err(crate::bad_input)?;
    Ok((verdict, finished.errors))
}

pub fn run(args: RealArgs, tools: &Tools) -> Outcome {
    if let Some(table) = args.table {
        return run_table(table, &args, tools);
    }
    let Some(path) = args.scenario.as_deref() else {
        return crate::bad_input("give a scenario, or --table");
    };
    let prepared = match crate::cmd_run::prepare(path, tools) {
        Ok(p) => p,
        Err(o) => return o,
    };
    let scenario = &prepared.scenario;
    if let Err(e) = tenure_real::check(scenario) {
        return crate::bad_input(e);
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(&scenario.name));
    let stop = stop_flag();
    let (verdict, errors) = match real_once(scenario, &out, clock_error(&args), false, &stop) {
        Ok(v) => v,
        Err(o) => return o,
    };
    println!(
        "tenure real: {} ({}/{}): a real run, not deterministic: another run may differ; kept in {}",
        shown(path),
        scenario.protocol.name,
        scenario.protocol.variant,
        shown(&out)
    );
    for line in verdict.lines() {
        println!("{line}");
    }
    let outcome = verdict.outcome();
    match outcome {
        Outcome::CheckFailed | Outcome::BadInput => outcome,
        _ if errors > 0 => {
            crate::error(format!(
                "{errors} of the scenario's faults, nodes or servers went wrong (see {}): this was not the scenario's run, whatever its checks say",
                shown(&out.join("schedule.jsonl"))
            ));
            Outcome::Internal
        }
        _ => outcome,
    }
}

/// A verdict in one word.
fn word(o: Outcome) -> &'static str {
    match o {
        Outcome::Passed => "pass",
        Outcome::CheckFailed => "FAIL",
        Outcome::NotJudged => "not-judged",
        Outcome::BadInput => "bad-input",
        Outcome::Internal => "error",
        Outcome::Interrupted => "interrupted",
    }
}

fn run_table(table: Table, args: &RealArgs, tools: &Tools) -> Outcome {
    if table == Table::All {
        let base = args.out.clone().unwrap_or_else(|| default_out("table"));
        if base.exists() {
            return crate::bad_input(format!("--out {}: exists; name a new folder", shown(&base)));
        }
        let mut worst = Outcome::Passed;
        for (t, name) in [
            (Table::Redis, "redis"),
            (Table::Etcd, "etcd"),
            (Table::Zookeeper, "zookeeper"),
        ] {
            let one = RealArgs {
                scenario: None,
                out: Some(base.join(name)),
                clock_error: args.clock_error,
                table: Some(t),
                reps: args.reps,
            };
            match run_table(t, &one, tools) {
                Outcome::Passed => {}
                o @ (Outcome::CheckFailed | Outcome::NotJudged) => worst = o,
                o => return o,
            }
        }
        return worst;
    }
    let rows = match table {
        Table::Redis => REDIS_ROWS,
        Table::Etcd => ETCD_ROWS,
        Table::Zookeeper | Table::All => ZOOKEEPER_ROWS,
    };
    if args.reps == 0 {
        return crate::bad_input("--reps 0: a table needs at least one real run per row");
    }
    let base = args.out.clone().unwrap_or_else(|| default_out("table"));
    if base.exists() {
        return crate::bad_input(format!("--out {}: exists; name a new folder", shown(&base)));
    }
    let mut prepared = Vec::new();
    for row in rows {
        let p = Path::new(row.scenario);
        if !p.is_file() {
            return crate::bad_input(format!(
                "{}: not found (the table's scenarios are the repository's: run from its root)",
                row.scenario
            ));
        }
        match crate::cmd_run::prepare(p, tools) {
            Ok(pr) => {
                if let Err(e) = tenure_real::check(&pr.scenario) {
                    return crate::bad_input(e);
                }
                prepared.push(pr)
            }
            Err(o) => return o,
        }
    }
    let stop = stop_flag();
    let ce = clock_error(args);
    eprintln!(
        "tenure real --table: {} rows, the simulator once (the scenario's seed) and {} real runs each; real runs are not deterministic; kept in {}",
        rows.len(),
        args.reps,
        shown(&base)
    );
    let mut lines = Vec::new();
    let mut disagree = 0;
    for (i, (row, pr)) in rows.iter().zip(&prepared).enumerate() {
        let s = &pr.scenario;
        let report = pr.run(s.seed, &RunOptions::default());
        let sim = if report.stats.stopped_by.is_some() {
            Outcome::BadInput
        } else if report.passed() {
            Outcome::Passed
        } else {
            Outcome::CheckFailed
        };
        let mut real = Vec::new();
        for rep in 0..args.reps {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let out = base.join(format!("row{}-rep{}", i + 1, rep + 1));
            let o = match real_once(s, &out, ce, true, &stop) {
                Ok((v, 0)) => v.outcome(),
                Ok(_) => Outcome::Internal,
                Err(o) => o,
            };
            eprintln!(
                "tenure real --table: row {} ({}) rep {}: {}",
                i + 1,
                row.label,
                rep + 1,
                word(o)
            );
            real.push(o);
        }
        let same = real.iter().filter(|o| **o == sim).count();
        // A row agrees when at least 4 in 5 real runs (80%) give the simulator's verdict.
        let agrees = same * 5 >= real.len() * 4 && !real.is_empty();
        if !agrees {
            disagree += 1;
        }
        lines.push((row, s, sim, real, same, agrees));
    }
    let checks = |s: &tenure_scenario::Scenario| {
        s.checks
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "validation table: {} (the simulator: the scenario's seed; real: {} runs against the real server, not deterministic)",
        match table {
            Table::Redis => "redis-server (redis-lock, fencing, redlock)",
            Table::Etcd => "etcd 3.4 (etcd-lock)",
            Table::Zookeeper | Table::All => "ZooKeeper 3.8 (the lock and election recipes)",
        },
        args.reps
    );
    for (row, s, sim, real, same, agrees) in &lines {
        println!(
            "{:<40} {:<11} real {:<40} {}/{} {}",
            row.label,
            format!("sim {}", word(*sim)),
            real.iter().map(|o| word(*o)).collect::<Vec<_>>().join(" "),
            same,
            real.len(),
            if *agrees { "agree" } else { "DISAGREE" }
        );
        println!("    {} [{}]", row.scenario, checks(s));
    }
    if stop.load(Ordering::SeqCst) {
        return Outcome::Interrupted;
    }
    if disagree > 0 {
        Outcome::CheckFailed
    } else {
        Outcome::Passed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row of every table names a scenario of the repository that a real run can
    /// take (its protocol, variant and faults), and the etcd and ZooKeeper rows are the
    /// protocols their tables say.
    #[test]
    fn every_table_row_is_a_scenario_a_real_run_takes() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for (rows, protocols) in [
            (REDIS_ROWS, &["redis-lock", "fencing", "redlock"][..]),
            (ETCD_ROWS, &["etcd-lock"][..]),
            (ZOOKEEPER_ROWS, &["zookeeper"][..]),
        ] {
            for row in rows {
                let s = tenure_scenario::load(&root.join(row.scenario))
                    .unwrap_or_else(|e| panic!("{}: {e}", row.scenario));
                assert!(
                    protocols.contains(&s.protocol.name.as_str()),
                    "{}: {}",
                    row.scenario,
                    s.protocol.name
                );
                if let Err(e) = tenure_real::check(&s) {
                    panic!("{}: {e}", row.scenario);
                }
            }
        }
    }
}
