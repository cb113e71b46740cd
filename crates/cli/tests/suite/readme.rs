//! The README's command table covers every subcommand and every flag (issue 27): the
//! commands and their flags come from `tenure --help` and each command's `--help`, so a
//! flag added to the command line fails this test until the README names it.

use crate::common::{repo, stdout, tenure};

/// The subcommands listed under `Commands:` in `help` (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The long flags in `help`, each with the heading it is listed under.
fn flags(help: &str) -> Vec<(String, String)> {
    let mut heading = String::new();
    let mut out = Vec::new();
    for line in help.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            heading = line.trim_end_matches(':').to_string();
            continue;
        }
        let t = line.trim_start();
        if !line.starts_with("  ") || !t.starts_with('-') {
            continue;
        }
        let flag = t
            .split([' ', ',', '='])
            .find(|w| w.starts_with("--"))
            .map(str::to_string);
        if let Some(flag) = flag.filter(|f| f != "--help" && f != "--version") {
            out.push((heading.clone(), flag));
        }
    }
    out
}

/// Every command (`run`, `experiment election-time`, ...) with its help text.
fn commands() -> Vec<(String, String)> {
    let top = stdout(&tenure(&["--help"]));
    let mut out = Vec::new();
    let mut todo: Vec<String> = subcommands(&top);
    while let Some(path) = todo.pop() {
        let mut args: Vec<&str> = path.split(' ').collect();
        args.push("--help");
        let help = stdout(&tenure(&args));
        let subs = subcommands(&help);
        if subs.is_empty() {
            out.push((path, help));
        } else {
            todo.extend(subs.into_iter().map(|s| format!("{path} {s}")));
        }
    }
    out.sort();
    out
}

/// Whether `text` names `flag` as a whole word (`--seed` is not in `--seeds`).
fn names(text: &str, flag: &str) -> bool {
    text.match_indices(flag).any(|(i, _)| {
        let next = text[i + flag.len()..].chars().next();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

#[test]
fn the_readme_command_table_names_every_command_and_flag() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let rows: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("| `tenure "))
        .collect();
    let commands = commands();
    assert!(commands.len() >= 10, "commands: {commands:?}");
    let mut missing = Vec::new();
    for (path, help) in &commands {
        // A row is a command's when its first cell starts with `tenure PATH`.
        let cells: Vec<&str> = rows
            .iter()
            .map(|r| r.split(" | ").next().unwrap_or(""))
            .filter(|c| {
                let rest = c.trim_start_matches("| `tenure ");
                rest.strip_prefix(path.as_str())
                    .is_some_and(|r| r.starts_with([' ', '`']))
            })
            .collect();
        if cells.is_empty() {
            missing.push(format!("no row for `tenure {path}`"));
            continue;
        }
        let cells = cells.join(" ");
        for (heading, flag) in flags(help) {
            if heading.starts_with("Limits") {
                // Global limits: named once, anywhere in the README.
                if !names(&readme, &flag) {
                    missing.push(format!("the limit {flag}"));
                }
            } else if !names(&cells, &flag) {
                missing.push(format!("`tenure {path}` {flag}"));
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    missing.retain(|m| seen.insert(m.clone()));
    assert!(
        missing.is_empty(),
        "the README's command table leaves out:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn the_limit_flags_are_grouped_under_one_heading_in_every_help() {
    for (path, help) in commands() {
        for (heading, flag) in flags(&help) {
            if flag.starts_with("--max-")
                && [
                    "--max-duration",
                    "--max-nodes",
                    "--max-faults",
                    "--max-in-flight",
                    "--max-trace-events",
                ]
                .contains(&flag.as_str())
            {
                assert!(
                    heading.starts_with("Limits"),
                    "tenure {path} --help lists {flag} under `{heading}`"
                );
            }
        }
    }
}
