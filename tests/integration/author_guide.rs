//! The book's author guide (`book/src/author-guide.md`), followed as written: every block
//! the page marks `file=PATH` is written out as a crate outside the workspace (with the
//! repository beside it as `../tenure`, as the page's dependency line says), the crate
//! is built by path, and every `cargo run -q -- ...` line of the page's `sh` blocks runs
//! against it with the exit code the page states (`# exit N`; none means 0): `fuzz`
//! finds the planted bugs, `check-model` finds one by walks and says the other is out of
//! its scope, `verify` meets the scenario, `cluster` runs it as real processes.
//!
//! What it costs (issue 33: it runs in CI): the crate is built in the workspace's own
//! target directory (the one this test binary sits in), with the workspace's
//! `[profile.dev*]` tables passed by `--config`, so cargo computes the same units for the
//! registry dependencies as `cargo test --workspace` did and reuses them. tenure's own
//! crates are compiled again: cargo hashes a path dependency by its path relative to the
//! workspace root, which for a crate outside the workspace is its absolute path, so no
//! unit of the workspace can serve. The test builds them unoptimised (`opt-level = 0`, a
//! `--config` override by name): about a minute and a half on two cores, against five with
//! the workspace's `opt-level = 1`; the page's commands run in seconds either way.
//! The page's `Cargo.toml`, sources and `.cargo/config.toml` are used as written.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_path_buf()
}

/// The page's blocks: (info string, body, first line of the body).
fn blocks(page: &str) -> Vec<(String, String, usize)> {
    let mut out = Vec::new();
    let mut open: Option<(String, Vec<&str>, usize)> = None;
    for (i, line) in page.lines().enumerate() {
        match &mut open {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    open = Some((info.trim().to_string(), Vec::new(), i + 2));
                }
            }
            Some((info, body, start)) if line.trim() == "```" => {
                out.push((std::mem::take(info), body.join("\n") + "\n", *start));
                open = None;
            }
            Some((_, body, _)) => body.push(line),
        }
    }
    out
}

/// The files the page gives: (path in the crate, contents).
fn files(page: &str) -> Vec<(String, String)> {
    blocks(page)
        .into_iter()
        .filter_map(|(info, body, _)| {
            let file = info.split(',').find_map(|p| p.strip_prefix("file="))?;
            Some((file.to_string(), body))
        })
        .collect()
}

/// The commands the page runs: (page line, arguments after `cargo run -q --`, exit).
fn commands(page: &str) -> Vec<(usize, Vec<String>, i32)> {
    let mut out = Vec::new();
    for (info, body, start) in blocks(page) {
        if info != "sh" {
            continue;
        }
        for (i, line) in body.lines().enumerate() {
            let Some(rest) = line.trim().strip_prefix("cargo run -q -- ") else {
                continue;
            };
            let (args, exit) = match rest.split_once('#') {
                Some((args, comment)) => {
                    let code = comment.trim().strip_prefix("exit").map(str::trim);
                    let code = code.and_then(|c| c.parse().ok());
                    (args, code.expect("a comment is `# exit N`"))
                }
                None => (rest, 0),
            };
            let args = args.split_whitespace().map(str::to_string).collect();
            out.push((start + i, args, exit));
        }
    }
    out
}

#[test]
fn the_page_gives_the_whole_crate_and_commands_for_every_tool() {
    let page = std::fs::read_to_string(repo().join("book/src/author-guide.md")).unwrap();
    let files = files(&page);
    let names: Vec<&str> = files.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        names,
        [
            "Cargo.toml",
            ".cargo/config.toml",
            "src/bin/ttl-lock.rs",
            "src/lib.rs",
            "cluster.toml"
        ]
    );
    let tools: Vec<String> = commands(&page)
        .into_iter()
        .map(|(_, args, _)| args[0].clone())
        .collect();
    for tool in ["fuzz", "check-model", "verify", "cluster"] {
        assert!(tools.iter().any(|t| t == tool), "{tool}: {tools:?}");
    }
    // The crate declares a model and its real catalogue, and depends on tenure by path.
    let lib = &files[3].1;
    assert!(lib.contains("fn model()") && lib.contains("impl RealCatalogue"));
    assert!(files[0].1.contains("path = \"../tenure/crates/tenure\""));
}

/// The target directory this test binary was built in (cargo marks its top with
/// `CACHEDIR.TAG`): `target/` or wherever `CARGO_TARGET_DIR` / `--target-dir` put it.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors()
        .find(|d| d.join("CACHEDIR.TAG").is_file())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| repo().join("target"))
}

/// A cargo config with the workspace's `[profile.dev]` table (with its `package` and
/// `build-override` tables), and tenure's crates (the workspace's path dependencies) at
/// `opt-level = 0`.
fn build_config(manifest: &str) -> String {
    let manifest: toml::Table = manifest.parse().expect("the workspace's Cargo.toml");
    let mut dev = manifest["profile"]["dev"]
        .as_table()
        .expect("a [profile.dev] table")
        .clone();
    let ours: Vec<&String> = manifest["workspace"]["dependencies"]
        .as_table()
        .expect("[workspace.dependencies]")
        .iter()
        .filter(|(_, dep)| dep.get("path").is_some())
        .map(|(name, _)| name)
        .collect();
    let packages = dev
        .get_mut("package")
        .and_then(toml::Value::as_table_mut)
        .expect("[profile.dev.package.*] tables");
    assert!(packages.contains_key("*") && ours.iter().any(|n| *n == "tenure"));
    for name in ours {
        let mut opt = toml::Table::new();
        opt.insert("opt-level".into(), 0.into());
        packages.insert(name.clone(), opt.into());
    }
    let mut profile = toml::Table::new();
    profile.insert("dev".into(), dev.into());
    let mut config = toml::Table::new();
    config.insert("profile".into(), profile.into());
    toml::to_string(&config).expect("a table serializes")
}

#[test]
fn the_author_guide_builds_an_outside_crate_that_fuzzes_explores_and_runs_for_real() {
    let page = std::fs::read_to_string(repo().join("book/src/author-guide.md")).unwrap();
    // A fixed place per checkout, so the paths of tenure's crates (and so their units)
    // are the same from one run to the next; outside the repository, which is a workspace
    // the crate is not a member of.
    let base = std::env::temp_dir().join(format!(
        "tenure-author-guide{}",
        repo().display().to_string().replace('/', "-")
    ));
    let _ = std::fs::remove_dir_all(&base);
    let krate = base.join("ttl-lock");
    for (file, body) in files(&page) {
        let path = krate.join(&file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, body).unwrap();
    }
    std::os::unix::fs::symlink(repo(), base.join("tenure")).unwrap();
    std::fs::copy(repo().join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();

    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let config = base.join("workspace-profile.toml");
    std::fs::write(&config, build_config(&manifest)).unwrap();
    let target = target_dir();
    let build = Command::new(env!("CARGO"))
        .args(["build", "--offline", "--config"])
        .arg(&config)
        .current_dir(&krate)
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .unwrap();
    assert!(
        build.success(),
        "the guide's crate builds outside the workspace"
    );
    let bin = target.join("debug/ttl-lock");

    for (line, args, exit) in commands(&page) {
        let o = Command::new(&bin)
            .args(&args)
            .current_dir(&krate)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            o.status.code(),
            Some(exit),
            "book/src/author-guide.md:{line}: `{}`:\n{text}",
            args.join(" ")
        );
        match args[0].as_str() {
            "fuzz" if exit == 1 => assert!(text.contains("mutual-exclusion violated"), "{text}"),
            "check-model" if exit == 5 => assert!(text.contains("NOT JUDGED"), "{text}"),
            "cluster" => assert!(text.contains("pass mutual-exclusion"), "{text}"),
            _ => {}
        }
    }
    let _ = std::fs::remove_dir_all(&base);
}
