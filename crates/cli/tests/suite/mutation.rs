//! Mutation fuzzing of the scenario reader, in-process: thousands of files made from the
//! shipped scenarios by deleting, duplicating and swapping lines, putting extreme values
//! in place of numbers and strings, misspelling keys, truncating and inserting invalid
//! UTF-8. Each goes through what `tenure run` does before a run (UTF-8 check, parse,
//! validate against the protocol, build checkers and protocol config). None may panic,
//! and every rejection must say what is wrong, on which line, and (when the error is
//! about a written key) which field.

use std::path::{Path, PathBuf};

/// SplitMix64: a tiny deterministic generator, enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1.5",
    "-0.999",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "-9223372036854775808",
    "1e300",
    "-1e300",
    "nan",
    "inf",
    "-inf",
    "99999999999999999999999",
    "\"7\"",
    "[]",
    "{}",
];

const STRINGS: &[&str] = &[
    "\"\"",
    "\"0s\"",
    "\"-1s\"",
    "\"1ns\"",
    "\"999999999h\"",
    "\"1e400ms\"",
    "\"leader\"",
    "\"nope\"",
    "\"18446744073709551615\"",
    "\"5\"",
    "3",
    "-3",
    "true",
    "[\"1ms\", \"1h\"]",
    "{ a = 1 }",
];

fn shipped() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut out = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("scenarios/ is readable") {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "toml") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// One mutation of `source`, chosen by `rng`.
fn mutate(source: &str, rng: &mut Rng) -> Vec<u8> {
    let mut lines: Vec<String> = source.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return Vec::new();
    }
    let i = rng.below(lines.len());
    match rng.below(9) {
        0 => {
            lines.remove(i);
        }
        1 => {
            let l = lines[i].clone();
            lines.insert(i, l);
        }
        2 => {
            let j = rng.below(lines.len());
            lines.swap(i, j);
        }
        3 | 4 => {
            // A value: the text after `=` on a line that has one.
            if let Some((key, _)) = lines[i].split_once('=') {
                let value = if rng.below(2) == 0 {
                    rng.pick(NUMBERS)
                } else {
                    rng.pick(STRINGS)
                };
                lines[i] = format!("{key}= {value}");
            }
        }
        5 => {
            // A key misspelt: drop or double one of its characters.
            if let Some((key, value)) = lines[i].split_once('=') {
                let mut key: Vec<char> = key.chars().collect();
                if key.len() > 2 {
                    let k = rng.below(key.len() - 1);
                    if rng.below(2) == 0 {
                        key.remove(k);
                    } else {
                        key.insert(k, key[k]);
                    }
                }
                lines[i] = format!("{}={value}", key.into_iter().collect::<String>());
            }
        }
        6 => {
            let text = lines.join("\n");
            let mut cut = rng.below(text.len() + 1);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            return text.as_bytes()[..cut].to_vec();
        }
        7 => {
            let mut bytes = lines.join("\n").into_bytes();
            let at = rng.below(bytes.len() + 1);
            bytes.insert(at, [0xff, 0xc3, 0x80][rng.below(3)]);
            return bytes;
        }
        _ => {
            // A whole extra table or event that the file did not have.
            let extra = [
                "[[clock]]\nnode = 0\ndrift = 1e300",
                "[[clock]]\nnode = 0\noffset = \"9999999h\"",
                "[[fault]]\nat = \"1s\"\nkind = \"clock-drift\"\nnode = 0\ndrift = 9223372036854775807",
                "[[fault]]\nat = \"1s\"\nkind = \"clock-jump\"\nnode = \"leader\"\nby = \"-99999h\"",
                "[[fault]]\nat = \"1s\"\nkind = \"pause\"\nnode = 0\nduration = \"999999h\"",
                "[cluster]\nnodes = 4294967295",
                "[network]\nlatency = [\"0ns\", \"0ns\"]",
                "[profile]\nname = \"nope\"\npause = 7",
            ];
            lines.push(rng.pick(&extra).to_string());
        }
    }
    lines.join("\n").into_bytes()
}

/// What `tenure run` does before the run: read, parse, validate, prepare.
fn check(bytes: &[u8], file: &str) -> Result<(), tenure_scenario::ScenarioError> {
    let text = tenure_scenario::text(bytes, file)?;
    let scenario = tenure_scenario::parse(text, file)?;
    static ZOO: std::sync::OnceLock<tenure_sim::Protocols> = std::sync::OnceLock::new();
    let zoo = ZOO.get_or_init(tenure_zoo_prebuilt::protocols);
    tenure_sim::Prepared::new(scenario, zoo).map(|_| ())
}

#[test]
fn no_mutated_scenario_panics_and_every_rejection_says_where() {
    let files = shipped();
    assert!(files.len() >= 20, "found only {} scenarios", files.len());
    let per_file = 6000 / files.len() + 1;
    let mut rng = Rng(14);
    let (mut total, mut accepted, mut with_field) = (0usize, 0usize, 0usize);
    let mut problems = Vec::new();
    for path in &files {
        let source = std::fs::read_to_string(path).unwrap();
        for _ in 0..per_file {
            let bytes = mutate(&source, &mut rng);
            total += 1;
            let result = std::panic::catch_unwind(|| check(&bytes, "m.toml"));
            let shown = || String::from_utf8_lossy(&bytes).into_owned();
            match result {
                Err(_) => problems.push(format!("PANIC on a mutation of {path:?}:\n{}", shown())),
                Ok(Ok(())) => accepted += 1,
                Ok(Err(e)) => {
                    if e.message.trim().is_empty() {
                        problems.push(format!("empty reason: {e}\n{}", shown()));
                    }
                    if e.line.is_none() {
                        problems.push(format!("no line: {e}\n{}", shown()));
                    }
                    if e.field.is_empty() {
                        // Allowed only where no key is written on the error's line
                        // (syntax errors between keys, an empty file, bad UTF-8).
                        let text = String::from_utf8_lossy(&bytes);
                        let line = e
                            .line
                            .and_then(|l| text.lines().nth(l - 1))
                            .unwrap_or("")
                            .trim();
                        let keyed = line.split_once('=').is_some_and(|(k, _)| {
                            let k = k.trim();
                            !k.is_empty()
                                && k.chars()
                                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
                        });
                        if keyed && !e.message.starts_with("invalid UTF-8") {
                            problems.push(format!("no field: {e}\n{}", shown()));
                        }
                    } else {
                        with_field += 1;
                    }
                }
            }
        }
    }
    eprintln!(
        "{total} mutated files: {accepted} accepted, {} rejected ({with_field} naming a field), {} problems",
        total - accepted,
        problems.len()
    );
    assert!(
        problems.is_empty(),
        "{} problems; the first ones:\n{}",
        problems.len(),
        problems
            .iter()
            .take(8)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n----\n")
    );
    assert!(accepted > total / 20, "some mutations leave a valid file");
    assert!(total - accepted > total / 2, "most mutations are rejected");
}
