//! Not part of the example proper: tenure's own check that the book's "Test your own
//! protocol" page (`book/src/tutorial.md`) quotes this crate exactly. Every ```rust and
//! ```toml block of the page must appear, verbatim, in one of the files it quotes (this
//! crate's, and `examples/k8s-lease` for the sections on declarations and named checkers).

use std::path::Path;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The bodies of the page's fenced blocks of `lang`, with the line each starts on.
fn blocks(page: &str, lang: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut current: Option<(usize, Vec<&str>)> = None;
    for (i, line) in page.lines().enumerate() {
        match &mut current {
            None if line.trim() == format!("```{lang}") => current = Some((i + 2, Vec::new())),
            None => {}
            Some((start, body)) if line.trim() == "```" => {
                found.push((*start, body.join("\n")));
                current = None;
            }
            Some((_, body)) => body.push(line),
        }
    }
    found
}

#[test]
fn the_tutorial_quotes_the_example_exactly() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repo = crate_dir.join("../..");
    let page = read(&repo.join("book/src/tutorial.md"));
    let sources: String = [
        "src/lib.rs",
        "src/checker.rs",
        "src/bin/my-election.rs",
        "scenarios/planted-bug.toml",
        "tests/fuzz.rs",
        "Cargo.toml",
    ]
    .iter()
    .map(|f| read(&crate_dir.join(f)))
    .chain([read(&repo.join(".cargo/config.toml"))])
    // The page's section on declarations quotes the second example crate.
    .chain([read(&repo.join("examples/k8s-lease/src/lib.rs"))])
    .chain([read(&repo.join("examples/k8s-lease/src/transitions.rs"))])
    .chain([read(&repo.join("examples/k8s-lease/src/bin/k8s-lease.rs"))])
    .collect::<Vec<_>>()
    .join("\n");
    let mut quoted = 0;
    for lang in ["rust", "toml"] {
        for (line, body) in blocks(&page, lang) {
            assert!(
                sources.contains(&body),
                "book/src/tutorial.md:{line}: this ```{lang} block is not in examples/my-election \
                 (update the page from the code):\n{body}"
            );
            quoted += 1;
        }
    }
    assert!(quoted >= 8, "only {quoted} blocks quoted");
}
