//! The book keeps itself honest: every command it shows is run and its output checked,
//! and its table of contents links exactly the pages that exist.
//!
//! The convention (also told to readers in book/src/intro.md, "How to read the
//! commands"): in a
//! ```` ```console ```` block, a line `$ tenure <args>` is a command run with the built
//! `tenure` binary from the repository root; an optional trailing `# exit N` gives the
//! expected exit code (default 0). The lines after it, up to the next `$ ` line or the end
//! of the block, are the quoted output, compared with the command's output (stdout and
//! stderr merged, as a terminal shows them) line by line: after trimming, each quoted
//! line equals a whole output line, and consecutive quoted lines are consecutive output
//! lines. A line `...` stands for output left out (any number of lines), and `...`
//! inside a line for a part of it left out (timings); output before the first quoted
//! line and after the last may be left out too. Blank lines are ignored. Other code
//! blocks (```` ```sh ````, ```` ```toml ````, ...) are not run.
//!
//! Failures name the page, the line, the command, and what was expected against what
//! came out.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Pages SUMMARY.md links that other people are still writing. mdBook would create an
/// empty file for a missing link on build; this list lets the table of contents name
/// them before they land. Remove an entry when its page lands.
const PENDING: &[&str] = &[];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

fn book_src() -> PathBuf {
    repo().join("book/src")
}

/// Every `*.md` under `dir`, as paths relative to `root`, sorted.
fn pages(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            pages(root, &p, out);
        } else if p.extension().is_some_and(|e| e == "md") {
            out.push(p.strip_prefix(root).expect("under the root").to_path_buf());
        }
    }
}

fn all_pages() -> Vec<PathBuf> {
    let src = book_src();
    let mut out = Vec::new();
    pages(&src, &src, &mut out);
    out
}

/// One command shown in a console block, with what the page says it prints.
#[derive(Debug, PartialEq)]
struct Shown {
    page: String,
    /// 1-based line of the `$ ` line in the page.
    line: usize,
    /// The command as written after `$ ` (without the `# exit` comment).
    command: String,
    args: Vec<String>,
    exit: i32,
    expected: Vec<String>,
    /// The 1-based page line of each `expected` line.
    expected_at: Vec<usize>,
}

/// Splits a command line into words: whitespace separates, single and double quotes
/// group (no escapes inside single quotes; `\"` and `\\` inside double quotes).
fn words(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("unclosed single quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => word.push(c),
                            None => return Err("unclosed double quote".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("unclosed double quote".into()),
                    }
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        out.push(word);
    }
    Ok(out)
}

/// Reads a `$ ` line: the words after `tenure`, and the expected exit code.
fn command_line(text: &str) -> Result<(String, Vec<String>, i32), String> {
    let (command, exit) = match text.find(" #") {
        Some(i) => {
            let comment = text[i + 2..].trim();
            let code = comment
                .strip_prefix("exit")
                .map(str::trim)
                .and_then(|n| n.parse::<i32>().ok())
                .ok_or_else(|| {
                    format!(
                        "the only comment allowed on a `$ ` line is `# exit N`, found `#{}`",
                        &text[i + 2..]
                    )
                })?;
            (text[..i].trim(), code)
        }
        None => (text.trim(), 0),
    };
    let mut w = words(command)?;
    if w.first().map(String::as_str) != Some("tenure") {
        return Err(format!(
            "a console block runs only `tenure` commands; show other commands in a ```sh block: `{command}`"
        ));
    }
    w.remove(0);
    Ok((command.to_string(), w, exit))
}

/// Every command shown in the console blocks of `text` (a page named `page`).
fn parse_page(page: &str, text: &str) -> Result<Vec<Shown>, String> {
    let mut out: Vec<Shown> = Vec::new();
    let mut fence: Option<(String, bool)> = None; // (the fence itself, is console)
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = raw.trim_start();
        if let Some((marker, console)) = &fence {
            if trimmed.starts_with(marker.as_str()) && trimmed.trim_end() == marker.as_str() {
                fence = None;
                continue;
            }
            if !*console {
                continue;
            }
            let line = raw.trim();
            if let Some(rest) = line.strip_prefix("$ ") {
                let (command, args, exit) =
                    command_line(rest).map_err(|e| format!("{page}:{line_no}: {e}"))?;
                out.push(Shown {
                    page: page.to_string(),
                    line: line_no,
                    command,
                    args,
                    exit,
                    expected: Vec::new(),
                    expected_at: Vec::new(),
                });
            } else if line == "$" {
                return Err(format!("{page}:{line_no}: an empty `$` line"));
            } else if !line.is_empty() {
                match out.last_mut() {
                    Some(shown) if shown.line > 0 => {
                        shown.expected.push(line.to_string());
                        shown.expected_at.push(line_no);
                    }
                    _ => {
                        return Err(format!(
                            "{page}:{line_no}: output before any `$ tenure` line in a console block"
                        ))
                    }
                }
            }
            continue;
        }
        let ticks = trimmed.chars().take_while(|c| *c == '`').count();
        let tildes = trimmed.chars().take_while(|c| *c == '~').count();
        let (n, ch) = if ticks >= 3 {
            (ticks, '`')
        } else if tildes >= 3 {
            (tildes, '~')
        } else {
            continue;
        };
        let info = trimmed[n..].trim();
        let lang = info
            .split(|c: char| c == ',' || c.is_whitespace())
            .next()
            .unwrap_or("");
        let console = lang == "console";
        if console {
            // A new block: outputs may not run on from the previous block's command.
            out.push(Shown {
                page: String::new(),
                line: 0,
                command: String::new(),
                args: Vec::new(),
                exit: 0,
                expected: Vec::new(),
                expected_at: Vec::new(),
            });
        }
        fence = Some((ch.to_string().repeat(n), console));
    }
    if let Some((marker, _)) = fence {
        return Err(format!(
            "{page}: a code block opened with {marker} is never closed"
        ));
    }
    out.retain(|s| s.line > 0);
    Ok(out)
}

/// Whether the output line `line` is what the quoted line `want` shows: equal after
/// trimming, where a `...` inside `want` matches any text.
fn line_matches(want: &str, line: &str) -> bool {
    let (want, line) = (want.trim(), line.trim());
    if !want.contains("...") {
        return want == line;
    }
    let parts: Vec<&str> = want.split("...").collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !line.starts_with(first) || line.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &line[first.len()..];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// Matches `expected` against `actual` (see the module doc): every quoted line matches
/// a whole output line, in order; consecutive quoted lines match consecutive output
/// lines unless a `...` line stands between them. Returns the first unmatched line.
fn first_unmatched<'a>(expected: &'a [String], actual: &str) -> Option<&'a str> {
    let lines: Vec<&str> = actual.lines().filter(|l| !l.trim().is_empty()).collect();
    // The quoted lines in runs that must be adjacent; a `...` line separates runs.
    let mut runs: Vec<Vec<&'a str>> = vec![Vec::new()];
    for want in expected {
        if want.trim() == "..." {
            runs.push(Vec::new());
        } else {
            runs.last_mut()
                .expect("one run at least")
                .push(want.as_str());
        }
    }
    let mut next = 0;
    for run in runs.iter().filter(|r| !r.is_empty()) {
        let fits = |at: usize| {
            at + run.len() <= lines.len()
                && run
                    .iter()
                    .enumerate()
                    .all(|(k, w)| line_matches(w, lines[at + k]))
        };
        match (next..lines.len()).find(|&at| fits(at)) {
            Some(at) => next = at + run.len(),
            None => {
                // Name the first quoted line of the run that has no place.
                let start = (next..lines.len()).find(|&at| line_matches(run[0], lines[at]));
                let Some(start) = start else {
                    return Some(run[0]);
                };
                let bad = run
                    .iter()
                    .enumerate()
                    .find(|(k, w)| lines.get(start + k).is_none_or(|l| !line_matches(w, l)));
                return Some(bad.map_or(run[0], |(_, w)| w));
            }
        }
    }
    None
}

/// Runs `tenure args` from the repository root; returns (exit code, merged output).
/// stdout and stderr go to one pipe (through `sh`, so this builds on the workspace's
/// `rust-version`, before `std::io::pipe`), in the order a terminal shows them.
fn run(args: &[String]) -> (Option<i32>, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg("exec \"$0\" \"$@\" 2>&1")
        .arg(env!("CARGO_BIN_EXE_tenure"))
        .args(args)
        .current_dir(repo())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("sh runs tenure");
    // Progress lines come once a second of real time (`check-model`'s "... N distinct
    // states found"): how many a run prints depends on the machine's load, so a page
    // never quotes them and they are not part of the output compared.
    let text = String::from_utf8_lossy(&out.stdout);
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !(l.starts_with("  ... ") && l.contains(" distinct states found, ")))
        .collect();
    (out.status.code(), kept.join("\n") + "\n")
}

/// Removes what an earlier run of this test left at a path the command writes with
/// `--audit`, so the page's command prints the same every time (tenure replaces its own
/// earlier log but says so). Only paths under `tenure-out/` (git-ignored, the book's
/// scratch directory) are touched.
fn clear_audit_output(args: &[String]) {
    for pair in args.windows(2) {
        if pair[0] == "--audit" && pair[1].starts_with("tenure-out/") {
            let _ = std::fs::remove_file(repo().join(&pair[1]));
        }
    }
}

/// With `TENURE_BLESS_BOOK=1`, a quoted output that no longer matches is rewritten from
/// the tool's output (after a change that moves every run's fine timing): each quoted
/// line that has no place is replaced by the output line where it belongs (the next
/// one after a quoted line it must follow, else the most similar one after the last
/// match). Lines with a `...` elision inside are left for a person to mend, as are
/// commands, exit codes and the prose around the blocks. Review the diff.
fn bless_enabled() -> bool {
    std::env::var_os("TENURE_BLESS_BOOK").is_some_and(|v| v == "1")
}

/// The page lines to rewrite for `shown` (line number, new text), given its output.
fn blessed(shown: &Shown, actual: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = actual.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out = Vec::new();
    let mut next = 0;
    let mut adjacent = false;
    for (want, &at) in shown.expected.iter().zip(&shown.expected_at) {
        if want.trim() == "..." {
            adjacent = false;
            continue;
        }
        let found = if adjacent {
            (next < lines.len() && line_matches(want, lines[next])).then_some(next)
        } else {
            (next..lines.len()).find(|&i| line_matches(want, lines[i]))
        };
        let place = match found {
            Some(i) => Some(i),
            None if want.contains("...") => None,
            None if adjacent => (next < lines.len()).then_some(next),
            None => (next..lines.len()).max_by(|&a, &b| {
                let sim = |i: usize| strsim::normalized_levenshtein(want.trim(), lines[i].trim());
                sim(a).total_cmp(&sim(b)).then(b.cmp(&a))
            }),
        };
        match place {
            Some(i) => {
                if found.is_none() {
                    out.push((at, lines[i].trim_end().to_string()));
                }
                next = i + 1;
                adjacent = true;
            }
            None => adjacent = false,
        }
    }
    out
}

fn check_blessing(shown: &Shown, bless: &mut Vec<(String, usize, String)>) -> Result<(), String> {
    clear_audit_output(&shown.args);
    let (code, text) = run(&shown.args);
    if bless_enabled() && first_unmatched(&shown.expected, &text).is_some() {
        for (at, line) in blessed(shown, &text) {
            bless.push((shown.page.clone(), at, line));
        }
    }
    let here = format!("{}:{}: $ {}", shown.page, shown.line, shown.command);
    if code != Some(shown.exit) {
        return Err(format!(
            "{here}\n  expected exit {}, got {code:?}\n  output:\n{}",
            shown.exit,
            indent(&text)
        ));
    }
    if let Some(missing) = first_unmatched(&shown.expected, &text) {
        return Err(format!(
            "{here}\n  this expected line was not found (in order) in the output:\n    {missing}\n  expected:\n{}\n  output:\n{}",
            indent(&shown.expected.join("\n")),
            indent(&text)
        ));
    }
    Ok(())
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_command_in_the_book_runs_as_shown() {
    std::fs::create_dir_all(repo().join("tenure-out")).expect("tenure-out/ for outputs");
    let mut all = Vec::new();
    for page in all_pages() {
        let text = std::fs::read_to_string(book_src().join(&page)).expect("a page");
        let name = format!("book/src/{}", page.display());
        all.extend(parse_page(&name, &text).unwrap_or_else(|e| panic!("{e}")));
    }
    assert!(
        all.len() >= 10,
        "the book shows only {} commands: is the parser broken?",
        all.len()
    );
    // Two workers, page by page: a page's commands run in order in one worker, because
    // a later one may read what an earlier one wrote (fuzz saves a case, shrink reads it).
    let mut pages: Vec<&str> = all.iter().map(|c| c.page.as_str()).collect();
    pages.dedup();
    let failures: Vec<String> = std::thread::scope(|s| {
        let halves: Vec<_> = [0, 1]
            .iter()
            .map(|&w| {
                let mine_pages: Vec<&str> = pages.iter().skip(w).step_by(2).copied().collect();
                let mine: Vec<&Shown> = all
                    .iter()
                    .filter(|c| mine_pages.contains(&c.page.as_str()))
                    .collect();
                s.spawn(move || {
                    let mut bless = Vec::new();
                    let failures = mine
                        .into_iter()
                        .filter_map(|c| check_blessing(c, &mut bless).err())
                        .collect::<Vec<_>>();
                    (failures, bless)
                })
            })
            .collect();
        let mut failures = Vec::new();
        for h in halves {
            let (f, bless) = h.join().expect("a worker");
            failures.extend(f);
            rewrite(bless);
        }
        failures
    });
    assert!(
        failures.is_empty(),
        "{} of {} book commands did not run as shown:\n\n{}",
        failures.len(),
        all.len(),
        failures.join("\n\n")
    );
}

/// Writes blessed lines into their pages (see [`bless_enabled`]), keeping each line's
/// indentation in the page as the output has it.
fn rewrite(bless: Vec<(String, usize, String)>) {
    let mut by_page: std::collections::BTreeMap<String, Vec<(usize, String)>> =
        std::collections::BTreeMap::new();
    for (page, at, line) in bless {
        by_page.entry(page).or_default().push((at, line));
    }
    for (page, edits) in by_page {
        let path = repo().join(&page);
        let text = std::fs::read_to_string(&path).expect("a page");
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        for (at, line) in edits {
            lines[at - 1] = line;
        }
        let mut new = lines.join("\n");
        if text.ends_with('\n') {
            new.push('\n');
        }
        std::fs::write(&path, new).expect("the page is writable");
        eprintln!("blessed {page}");
    }
}

/// The `(target.md)` links of SUMMARY.md, with their line numbers.
fn summary_links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(open) = rest.find("](") {
            let after = &rest[open + 2..];
            let Some(close) = after.find(')') else { break };
            out.push((i + 1, after[..close].to_string()));
            rest = &after[close + 1..];
        }
    }
    out
}

/// Blocks in these languages are files (a CI config, a manifest, source), not a command
/// and what it printed: a `tenure` inside one is part of the file.
const FILE_LANGUAGES: &[&str] = &["rust", "toml", "yaml", "yml", "json", "edn", "ignore"];

/// The commands a shell block may show besides `tenure` and `cargo`.
const SHELL_WORDS: &[&str] = &[
    "tenure", "cargo", "mkdir", "printf", "cd", "git", "export", "rm", "ls", "mdbook",
];

/// Whether `line` is a shell command: its first word (after `VAR=value` settings) is
/// one of [`SHELL_WORDS`].
fn is_command(line: &str) -> bool {
    let word = line
        .split_whitespace()
        .find(|w| !(w.contains('=') && w.chars().next().is_some_and(|c| c.is_ascii_uppercase())));
    word.is_some_and(|w| SHELL_WORDS.contains(&w))
}

/// The blocks of `text` that show a `tenure` or `cargo` command with output, or a `$ `
/// line, outside a ```` ```console ```` block (so the test would not run them): page
/// line and what is wrong.
fn unchecked_outputs(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    // The open block: its first line, its language and its lines (page line, text).
    type Block = (usize, String, Vec<(usize, String)>);
    let mut block: Option<Block> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        match &mut block {
            None if line.starts_with("```") => {
                let lang = line
                    .trim_start_matches('`')
                    .split([',', ' '])
                    .next()
                    .unwrap_or("");
                block = Some((i + 1, lang.to_string(), Vec::new()));
            }
            None => {}
            Some((start, lang, lines)) if line.starts_with("```") => {
                let lang = std::mem::take(lang);
                let start = *start;
                let lines = std::mem::take(lines);
                block = None;
                if lang == "console" || FILE_LANGUAGES.contains(&lang.as_str()) {
                    continue;
                }
                if let Some((at, _)) = lines.iter().find(|(_, l)| l.starts_with("$ ")) {
                    out.push((
                        *at,
                        format!("a `$` line in a ```{lang} block is not run: make it ```console"),
                    ));
                    continue;
                }
                // A block that opens with a command (an output block may quote a replay
                // command further down, as a panic message does).
                let shows_command =
                    lines
                        .iter()
                        .find(|(_, l)| !l.is_empty())
                        .is_some_and(|(_, l)| {
                            is_command(l)
                                && l.split_whitespace().any(|w| w == "tenure" || w == "cargo")
                        });
                if let Some((at, l)) = lines.iter().find(|(_, l)| !l.is_empty() && !is_command(l)) {
                    if shows_command {
                        out.push((
                            *at,
                            format!(
                                "the ```{lang} block at line {start} shows a command and output (`{l}`), which the test does not check: make it ```console"
                            ),
                        ));
                    }
                }
            }
            Some((_, _, lines)) => lines.push((i + 1, line.to_string())),
        }
    }
    out
}

/// Issue 27: every block that shows a `tenure` or `cargo` command with its output is a
/// console block, which `every_command_in_the_book_runs_as_shown` runs, whatever tag
/// it was written with. Shell blocks may show commands alone (to paste).
#[test]
fn every_command_shown_with_its_output_is_in_a_console_block() {
    let mut wrong = Vec::new();
    for page in all_pages() {
        let text = std::fs::read_to_string(book_src().join(&page)).expect("a page");
        for (line, what) in unchecked_outputs(&text) {
            wrong.push(format!("book/src/{}:{line}: {what}", page.display()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn an_output_outside_a_console_block_is_found() {
    let page = "text\n\n```sh\ntenure fuzz --protocol raft\n# FAIL seed 7\n```\n\n```sh\ncargo test\nTENURE_SEED=1 cargo test x\n```\n\n```text\n$ tenure list\n```\n\n```yaml\nrun: |\n  tenure fuzz\n```\n\n```text\npanicked: seed 1\n  TENURE_SEED=1 cargo test x\n```\n";
    let found = unchecked_outputs(page);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].0, 5);
    assert_eq!(found[1].0, 14);
}

#[test]
fn summary_links_every_page_and_only_pages_that_exist() {
    let src = book_src();
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).expect("SUMMARY.md");
    let mut linked = BTreeSet::new();
    let mut problems = Vec::new();
    for (line, target) in summary_links(&summary) {
        if !target.ends_with(".md") || target.contains("://") {
            problems.push(format!(
                "SUMMARY.md:{line}: `{target}` is not a page of the book (a .md under book/src)"
            ));
            continue;
        }
        if !src.join(&target).is_file() && !PENDING.contains(&target.as_str()) {
            problems.push(format!(
                "SUMMARY.md:{line}: `{target}` does not exist (mdBook would create it empty); write it or add it to PENDING in crates/cli/tests/suite/book.rs"
            ));
        }
        if !linked.insert(target.clone()) {
            problems.push(format!("SUMMARY.md:{line}: `{target}` is linked twice"));
        }
    }
    for page in all_pages() {
        let name = page.to_string_lossy().replace('\\', "/");
        if name != "SUMMARY.md" && !linked.contains(&name) {
            problems.push(format!(
                "book/src/{name} is not linked from SUMMARY.md (mdBook would not build it)"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn links_between_pages_point_at_pages() {
    let src = book_src();
    let mut problems = Vec::new();
    for page in all_pages() {
        let text = std::fs::read_to_string(src.join(&page)).expect("a page");
        let dir = page.parent().unwrap_or(Path::new(""));
        let mut in_code = false;
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
            }
            if in_code {
                continue;
            }
            for (_, target) in summary_links(line) {
                let path = target.split('#').next().unwrap_or("");
                if path.is_empty() || path.contains("://") || !path.ends_with(".md") {
                    continue;
                }
                let resolved = normalize(&dir.join(path));
                let name = resolved.to_string_lossy().replace('\\', "/");
                if !src.join(&resolved).is_file() && !PENDING.contains(&name.as_str()) {
                    problems.push(format!(
                        "book/src/{}:{}: link to `{target}`, which does not exist",
                        page.display(),
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn scenario_files_named_in_the_book_exist() {
    let mut problems = Vec::new();
    for page in all_pages() {
        let text = std::fs::read_to_string(book_src().join(&page)).expect("a page");
        for (i, line) in text.lines().enumerate() {
            for word in line.split(|c: char| c.is_whitespace() || "`()[],;".contains(c)) {
                let is_path = (word.starts_with("scenarios/") || word.starts_with("book/src/"))
                    && word.ends_with(".toml");
                if is_path && !repo().join(word).is_file() {
                    problems.push(format!(
                        "book/src/{}:{}: `{word}` does not exist",
                        page.display(),
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `a/../b.md` -> `b.md` (no filesystem access).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

#[test]
fn the_parser_reads_the_convention() {
    let page = "text\n\
```console\n\
$ tenure run a.toml --seed 3  # exit 1\n\
FAIL a.toml\n\
...\n\
\n\
  replay: tenure run a.toml --seed 3\n\
$ tenure list\n\
```\n\
```sh\n\
$ cargo build\n\
```\n\
```console\n\
$ tenure verify 'scenarios/raft dir'\n\
```\n";
    let shown = parse_page("p.md", page).unwrap();
    assert_eq!(shown.len(), 3);
    assert_eq!(shown[0].line, 3);
    assert_eq!(shown[0].args, ["run", "a.toml", "--seed", "3"]);
    assert_eq!(shown[0].exit, 1);
    assert_eq!(
        shown[0].expected,
        ["FAIL a.toml", "...", "replay: tenure run a.toml --seed 3"]
    );
    assert_eq!(shown[1].args, ["list"]);
    assert_eq!(shown[1].exit, 0);
    assert!(shown[1].expected.is_empty());
    assert_eq!(shown[2].args, ["verify", "scenarios/raft dir"]);

    let err = parse_page("p.md", "```console\n$ cargo build\n```\n").unwrap_err();
    assert!(err.contains("p.md:2") && err.contains("```sh"), "{err}");
    let err = parse_page("p.md", "```console\n$ tenure list # all\n```\n").unwrap_err();
    assert!(err.contains("# exit N"), "{err}");
    let err = parse_page("p.md", "```console\noutput\n```\n").unwrap_err();
    assert!(err.contains("before any"), "{err}");
    let err = parse_page("p.md", "```console\n$ tenure list\n").unwrap_err();
    assert!(err.contains("never closed"), "{err}");
}

#[test]
fn blessing_rewrites_only_the_quoted_lines_that_moved() {
    let page = [
        "```console",
        "$ tenure run a.toml  # exit 1",
        "FAIL a.toml: x violated at 1.500_000s",
        "  n1 and n2 both led from 1.500_000s",
        "...",
        "  replay: tenure run a.toml --seed ...",
        "  passed: y in ...s",
        "```",
        "",
    ]
    .join("\n");
    let shown = &parse_page("p.md", &page).unwrap()[0];
    assert_eq!(shown.expected_at, [3, 4, 5, 6, 7]);
    let out = [
        "tenure: a.toml seed 1",
        "FAIL a.toml: x violated at 1.500_100s",
        "  n1 and n2 both led from 1.500_100s",
        "  events leading to it",
        "  replay: tenure run a.toml --seed 1",
        "  passed: z in 2s",
    ]
    .join("\n");
    // The two timed lines move (the second must follow the first) and keep the
    // output's indentation; the elided replay line still matches; a line with an
    // elision that no longer matches is left for a person.
    assert_eq!(
        blessed(shown, &out),
        [
            (3, "FAIL a.toml: x violated at 1.500_100s".to_string()),
            (4, "  n1 and n2 both led from 1.500_100s".to_string()),
        ]
    );
    // Nothing moved: nothing to rewrite.
    let same = "FAIL a.toml: x violated at 1.500_000s\n  n1 and n2 both led from 1.500_000s\n";
    let first_two = Shown {
        expected: shown.expected[..2].to_vec(),
        expected_at: shown.expected_at[..2].to_vec(),
        ..parse_page("p.md", &page).unwrap().remove(0)
    };
    assert!(blessed(&first_two, same).is_empty());
}

#[test]
fn matching_is_whole_lines_in_order_with_elisions() {
    let out = "tenure: a.toml seed 1\nFAIL a.toml: x violated at 1.5s\n  extra\n  met\n";
    let e = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let m = |v: &[&str]| first_unmatched(&e(v), out).map(str::to_string);
    assert_eq!(m(&["tenure: a.toml seed 1", "...", "met"]), None);
    assert_eq!(
        m(&["FAIL a.toml: x violated at ...s", "extra", "met"]),
        None
    );
    assert_eq!(m(&["FAIL a.toml: ...", "...", "met"]), None);
    // A part of a line is not the line (a file suffix left out, say).
    assert_eq!(
        m(&["FAIL a.toml: x violated"]),
        Some("FAIL a.toml: x violated".into())
    );
    // An output line the page leaves out without `...` is a difference.
    assert_eq!(
        m(&["FAIL a.toml: x violated at 1.5s", "met"]),
        Some("met".into())
    );
    assert_eq!(m(&["met", "...", "extra"]), Some("extra".into()));
    assert_eq!(
        m(&["met", "...", "met"]),
        Some("met".into()),
        "one actual line matches one expected line"
    );
    assert_eq!(m(&["PASS"]), Some("PASS".into()));
    assert!(line_matches("a...c", "abc") && line_matches("a...c", "ac"));
    assert!(!line_matches("ab...bc", "abc"));
}

/// The quick start tells the reader to edit the first scenario twice; both edits, made
/// as the page says, give what the page says.
#[test]
fn the_quick_start_edits_work_as_written() {
    let page = std::fs::read_to_string(book_src().join("quick-start.md")).unwrap();
    assert!(
        page.contains("Change `outcome` to `\"pass\"` and delete the `checker` line"),
        "the page still tells the edits tested here"
    );
    let original =
        std::fs::read_to_string(book_src().join("examples/first-scenario.toml")).unwrap();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("book-quick-start");
    std::fs::create_dir_all(&dir).unwrap();

    // 1. outcome = "pass", checker deleted: the run fails the check, the expectation is
    //    NOT met.
    let expect_pass: String = original
        .lines()
        .filter(|l| !l.starts_with("checker ="))
        .map(|l| {
            if l.starts_with("outcome =") {
                "outcome = \"pass\""
            } else {
                l
            }
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(expect_pass, original);
    let file = dir.join("expect-pass.toml");
    std::fs::write(&file, &expect_pass).unwrap();
    let (code, out) = run(&["run".to_string(), file.display().to_string()]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("the scenario expects pass: NOT met"), "{out}");

    // 2. The pause removed (the [[fault]] table): both checks pass, and the expectation
    //    (still a violation) is not met.
    let mut no_pause = String::new();
    let mut in_fault = false;
    for l in original.lines() {
        if l.starts_with('[') {
            in_fault = l == "[[fault]]";
        }
        if !in_fault {
            no_pause.push_str(l);
            no_pause.push('\n');
        }
    }
    assert!(!no_pause.contains("kind = \"pause\"") && no_pause.contains("[expect]"));
    let file = dir.join("no-pause.toml");
    std::fs::write(&file, &no_pause).unwrap();
    let (code, out) = run(&["run".to_string(), file.display().to_string()]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("2 checks passed"), "{out}");
    // The checker the example expects to fail, as its `checker = "..."` line names it.
    let checker = original
        .lines()
        .find_map(|l| l.strip_prefix("checker ="))
        .map(|v| v.trim().trim_matches('"').to_string())
        .expect("the example names the checker it expects to fail");
    assert!(
        out.contains(&format!(
            "the scenario expects violation of {checker}: NOT met"
        )),
        "{out}"
    );
}
