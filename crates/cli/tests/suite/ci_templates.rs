//! The CI templates in `templates/` (a GitHub Actions workflow, a Kubernetes Indexed Job
//! and its merge Job) are valid and do what they say: each is parsed as YAML and checked
//! for the structure its engine needs, and its shell scripts are run as local processes,
//! one per shard, then merged. The merged report must equal the report of one process
//! over the same seeds, and the JUnit file it writes must validate against the JUnit
//! schema (see tests/junit.rs).

use std::path::{Path, PathBuf};
use std::process::Command;
use yaml_rust2::{Yaml, YamlLoader};

use crate::common::{repo, text};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("ci-templates")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn load(file: &str) -> Vec<Yaml> {
    let path = repo().join("templates").join(file);
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    YamlLoader::load_from_str(&source).unwrap_or_else(|e| panic!("{file}: not YAML: {e}"))
}

fn s(y: &Yaml) -> &str {
    y.as_str()
        .unwrap_or_else(|| panic!("expected a string, found {y:?}"))
}

/// What the tests fuzz: a broken variant, so that there are failures to merge, over few
/// enough seeds for a test.
const OVERRIDES: [(&str, &str); 6] = [
    ("PROTOCOL", "raft"),
    ("VARIANT", "forget-vote"),
    ("PROFILE", "chaos"),
    ("SEEDS", "0..160"),
    ("BUDGET", "30m"),
    ("SHARDS", "4"),
];

/// Runs `script` with bash as the engine would (GitHub runs `bash -e`; the Kubernetes
/// container runs `bash -c`), in `dir`, with `env` (then the overrides, then `TENURE`,
/// the built binary). Its exit code.
fn run_script(script: &str, dir: &Path, env: &[(String, String)], errexit: bool) -> i32 {
    let (code, out) = run_script_with(script, dir, env, errexit, env!("CARGO_BIN_EXE_tenure"));
    assert!(matches!(code, 0 | 1), "{script}\nexit {code}\n{out}");
    code
}

/// [`run_script`] with `tenure` standing for `TENURE` (a stand-in that exits with a code
/// of the test's choosing), whatever it exits: its code and output.
fn run_script_with(
    script: &str,
    dir: &Path,
    env: &[(String, String)],
    errexit: bool,
    tenure: &str,
) -> (i32, String) {
    let mut cmd = Command::new("bash");
    cmd.arg("--noprofile").arg("--norc");
    if errexit {
        cmd.arg("-e");
    }
    cmd.arg("-c").arg(script).current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    for (k, v) in OVERRIDES {
        cmd.env(k, v);
    }
    cmd.env("TENURE", tenure);
    let out = cmd.output().expect("bash runs");
    (out.status.code().expect("exits"), text(&out))
}

/// A stand-in for `tenure` that exits with `code` (as a fuzz run stopped that way would).
fn exits_with(dir: &Path, code: i32) -> String {
    let path = dir.join(format!("tenure-exits-{code}"));
    std::fs::write(&path, format!("#!/bin/sh\nexit {code}\n")).unwrap();
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&path, perms).unwrap();
    path.display().to_string()
}

/// The report of one process over the same seeds (its `--json` summary, the last line
/// on stderr).
fn single_process_report(dir: &Path) -> serde_json::Value {
    let mut args = vec!["fuzz".to_string()];
    for (flag, var) in [
        ("--protocol", "PROTOCOL"),
        ("--variant", "VARIANT"),
        ("--profile", "PROFILE"),
        ("--seeds", "SEEDS"),
    ] {
        args.push(flag.into());
        args.push(OVERRIDES.iter().find(|(k, _)| *k == var).unwrap().1.into());
    }
    args.extend(["--json".into(), "--out".into(), "single".into()]);
    let o = Command::new(env!("CARGO_BIN_EXE_tenure"))
        .args(&args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let last = stderr.lines().last().expect("a summary line");
    serde_json::from_str::<serde_json::Value>(last).expect("JSON")["summary"].clone()
}

/// `tenure fuzz merge DIRS --json`: the one cell's summary.
fn merged_report(dir: &Path, dirs: &[&str]) -> serde_json::Value {
    let mut args = vec!["fuzz", "merge"];
    args.extend_from_slice(dirs);
    args.push("--json");
    let o = Command::new(env!("CARGO_BIN_EXE_tenure"))
        .args(&args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "one protocol/profile cell: {out}");
    serde_json::from_str::<serde_json::Value>(lines[0]).expect("JSON")["summary"].clone()
}

/// A report without what differs between one process and shards: where files are, and
/// how the run ended.
fn verdict(mut j: serde_json::Value) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                for k in [
                    "case",
                    "replay",
                    "shrunk_case",
                    "timeline",
                    "stopped",
                    "interrupted",
                    "vacuous",
                ] {
                    m.remove(k);
                }
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut j);
    j
}

fn check_merged_equals_single(dir: &Path, shard_dirs: &[&str]) {
    let single = verdict(single_process_report(dir));
    let merged = verdict(merged_report(dir, shard_dirs));
    assert!(
        single["failed"].as_u64().unwrap() > 0,
        "the test needs failures to merge: {single:#}"
    );
    assert!(!single["groups"].as_array().unwrap().is_empty());
    assert_eq!(merged, single, "merged shards == one process");

    // A shard's artefact given twice (a re-run upload): its seeds count once, and each
    // failure is still one entry.
    let mut twice: Vec<&str> = shard_dirs.to_vec();
    twice.push(shard_dirs[0]);
    assert_eq!(verdict(merged_report(dir, &twice)), single);
}

#[test]
fn the_github_actions_workflow_is_valid_and_its_shards_merge_to_the_single_run() {
    let doc = &load("github-actions-fuzz.yml")[0];
    assert!(!doc["on"]["schedule"].is_badvalue(), "runs on a schedule");
    let env: Vec<(String, String)> = doc["env"]
        .as_hash()
        .expect("an env block")
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Yaml::Integer(i) => i.to_string(),
                other => s(other).to_string(),
            };
            (s(k).to_string(), v)
        })
        .collect();
    let shards: usize = env
        .iter()
        .find(|(k, _)| k == "SHARDS")
        .unwrap()
        .1
        .parse()
        .unwrap();
    let fuzz = &doc["jobs"]["fuzz"];
    let matrix: Vec<i64> = fuzz["strategy"]["matrix"]["shard"]
        .as_vec()
        .expect("a matrix over shards")
        .iter()
        .map(|y| y.as_i64().unwrap())
        .collect();
    assert_eq!(
        matrix,
        (1..=shards as i64).collect::<Vec<_>>(),
        "the matrix is 1..=SHARDS"
    );
    assert_eq!(fuzz["strategy"]["fail-fast"].as_bool(), Some(false));
    let steps = fuzz["steps"].as_vec().unwrap();
    let upload = steps
        .iter()
        .find(|st| {
            st["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .expect("shards upload their output");
    assert_eq!(
        upload["if"].as_str(),
        Some("always()"),
        "uploaded when a seed fails too"
    );
    // "Re-run failed jobs" uploads under the same name again: v4 refuses that unless told
    // to replace the earlier attempt's artefact.
    for job in ["fuzz", "merge"] {
        for st in doc["jobs"][job]["steps"].as_vec().unwrap() {
            if st["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
            {
                assert_eq!(
                    st["with"]["overwrite"].as_bool(),
                    Some(true),
                    "{job}: an upload that survives a re-run: {st:?}"
                );
            }
        }
    }
    let artefact = s(&upload["with"]["name"]).replace("${{ matrix.shard }}", "");
    let script = steps
        .iter()
        .filter_map(|st| st["run"].as_str())
        .find(|r| r.contains("fuzz --protocol"))
        .expect("a fuzz step");
    let merge = &doc["jobs"]["merge"];
    assert_eq!(s(&merge["needs"]), "fuzz");
    assert_eq!(
        merge["if"].as_str(),
        Some("always()"),
        "merges failed shards too"
    );
    let msteps = merge["steps"].as_vec().unwrap();
    let download = msteps
        .iter()
        .find(|st| {
            st["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/download-artifact@"))
        })
        .expect("the merge downloads the shards");
    assert_eq!(
        s(&download["with"]["pattern"]),
        format!("{artefact}*"),
        "it downloads what the shards uploaded"
    );
    let into = s(&download["with"]["path"]);
    let merge_script = msteps
        .iter()
        .filter_map(|st| st["run"].as_str())
        .find(|r| r.contains("fuzz merge"))
        .expect("a merge step");

    // The shards, as the matrix runs them.
    let dir = scratch("github");
    for k in 1..=shards {
        let mut env = env.clone();
        env.push(("SHARD".into(), k.to_string()));
        run_script(script, &dir, &env, true);
        // download-artifact puts each artefact in <path>/<name>/.
        let to = dir.join(into).join(format!("{artefact}{k}"));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::rename(dir.join("out").join(k.to_string()), &to).unwrap();
    }
    assert_eq!(
        run_script(merge_script, &dir, &env, true),
        1,
        "a seed failed"
    );
    let junit = dir.join("tenure-fuzz.xml");
    assert!(junit.exists(), "the merge writes its JUnit file");
    crate::common::validate_junit(&junit);

    let shard_dirs: Vec<String> = (1..=shards)
        .map(|k| format!("{into}/{artefact}{k}"))
        .collect();
    let refs: Vec<&str> = shard_dirs.iter().map(String::as_str).collect();
    check_merged_equals_single(&dir, &refs);
}

/// The container of a Job's pod template, and its script (`bash -c <script>`).
fn container(job: &Yaml) -> (&Yaml, &str) {
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    let command: Vec<&str> = c["command"].as_vec().unwrap().iter().map(s).collect();
    assert_eq!(command, ["/bin/bash", "-c"]);
    (c, s(&c["args"][0]))
}

fn env_of(c: &Yaml) -> Vec<(String, String)> {
    c["env"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|e| (s(&e["name"]).to_string(), s(&e["value"]).to_string()))
        .collect()
}

#[test]
fn the_kubernetes_indexed_job_is_valid_and_its_shards_merge_to_the_single_run() {
    let docs = load("kubernetes-fuzz.yaml");
    assert_eq!(docs.len(), 2, "a volume claim and the Job");
    assert_eq!(s(&docs[0]["kind"]), "PersistentVolumeClaim");
    assert_eq!(
        s(&docs[0]["spec"]["accessModes"][0]),
        "ReadWriteMany",
        "every shard writes to it"
    );
    let job = &docs[1];
    assert_eq!(s(&job["apiVersion"]), "batch/v1");
    assert_eq!(s(&job["kind"]), "Job");
    assert_eq!(s(&job["spec"]["completionMode"]), "Indexed");
    let (c, script) = container(job);
    let env = env_of(c);
    let get = |k: &str| env.iter().find(|(n, _)| n == k).unwrap().1.clone();
    let shards: i64 = get("SHARDS").parse().unwrap();
    assert_eq!(job["spec"]["completions"].as_i64(), Some(shards));
    assert_eq!(job["spec"]["parallelism"].as_i64(), Some(shards));
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(s(&pod["restartPolicy"]), "Never");
    // Read-write-many needs a class that offers it: named, not left to the default.
    assert!(
        !s(&docs[0]["spec"]["storageClassName"]).is_empty(),
        "the claim names its storage class"
    );
    // A locally loaded `tenure:latest` image is never pulled.
    assert_eq!(s(&c["imagePullPolicy"]), "IfNotPresent");
    // One eviction does not fail the Job; bad input and internal errors do, at once.
    let rules = job["spec"]["podFailurePolicy"]["rules"]
        .as_vec()
        .expect("a pod failure policy");
    assert!(
        rules.iter().any(|r| s(&r["action"]) == "Ignore"
            && s(&r["onPodConditions"][0]["type"]) == "DisruptionTarget"),
        "evictions are ignored: {rules:?}"
    );
    let fail_job = rules
        .iter()
        .find(|r| s(&r["action"]) == "FailJob")
        .expect("a FailJob rule");
    assert_eq!(s(&fail_job["onExitCodes"]["containerName"]), s(&c["name"]));
    let codes: Vec<i64> = fail_job["onExitCodes"]["values"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(codes, [2, 3], "bad input and internal errors fail the Job");
    let mount = &c["volumeMounts"][0];
    assert_eq!(
        s(&mount["mountPath"]),
        get("RESULTS"),
        "results go to the volume"
    );
    assert_eq!(s(&pod["volumes"][0]["name"]), s(&mount["name"]));
    assert_eq!(
        s(&pod["volumes"][0]["persistentVolumeClaim"]["claimName"]),
        s(&docs[0]["metadata"]["name"])
    );

    let merge_docs = load("kubernetes-fuzz-merge.yaml");
    assert_eq!(merge_docs.len(), 1);
    let (mc, merge_script) = container(&merge_docs[0]);
    assert_eq!(s(&mc["volumeMounts"][0]["mountPath"]), get("RESULTS"));
    assert_eq!(s(&mc["imagePullPolicy"]), "IfNotPresent");
    assert_eq!(
        s(&merge_docs[0]["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["type"]),
        "DisruptionTarget"
    );

    // What each exit code of `tenure fuzz` makes of the shard's pod: results (passed,
    // failed, not judged) succeed for the merge to judge; a shard stopped by SIGTERM
    // (exit 4: an eviction) fails its pod, which the policy above runs again; bad input
    // and internal errors fail it.
    let stand_in = scratch("kubernetes-exit-codes");
    for (tenure_exits, pod_exits) in [(0, 0), (1, 0), (5, 0), (4, 4), (2, 2), (3, 3)] {
        let mut env = env.clone();
        env.retain(|(k, _)| k != "RESULTS");
        env.push((
            "RESULTS".into(),
            stand_in.join("results").display().to_string(),
        ));
        env.push(("JOB_COMPLETION_INDEX".into(), "0".into()));
        let tenure = exits_with(&stand_in, tenure_exits);
        let (code, out) = run_script_with(script, &stand_in, &env, false, &tenure);
        assert_eq!(code, pod_exits, "tenure exits {tenure_exits}: {out}");
    }

    let dir = scratch("kubernetes");
    let results = dir.join("results");
    let local = |mut env: Vec<(String, String)>| {
        env.retain(|(k, _)| k != "RESULTS");
        env.push(("RESULTS".into(), results.display().to_string()));
        env
    };
    for index in 0..shards {
        let mut env = local(env.clone());
        env.push(("JOB_COMPLETION_INDEX".into(), index.to_string()));
        assert_eq!(
            run_script(script, &dir, &env, false),
            0,
            "a failing seed is a result, not a failed pod"
        );
        let code = std::fs::read_to_string(results.join(format!("shard-{}/exit-code", index + 1)))
            .unwrap();
        assert!(matches!(code.trim(), "0" | "1"), "{code}");
    }
    // A shard run again after an eviction finds its earlier attempt's folder: it runs
    // again over it, and its lines are the new attempt's alone.
    let first = std::fs::read_to_string(results.join("shard-1/seeds.jsonl")).unwrap();
    let mut env = local(env.clone());
    env.push(("JOB_COMPLETION_INDEX".into(), "0".into()));
    assert_eq!(
        run_script(script, &dir, &env, false),
        0,
        "a rerun of shard 1"
    );
    let again = std::fs::read_to_string(results.join("shard-1/seeds.jsonl")).unwrap();
    assert_eq!(
        again, first,
        "the rerun's lines replace the first attempt's"
    );
    assert_eq!(run_script(merge_script, &dir, &local(env_of(mc)), false), 1);
    crate::common::validate_junit(&results.join("tenure-fuzz.xml"));

    let shard_dirs: Vec<String> = (1..=shards).map(|k| format!("results/shard-{k}")).collect();
    let refs: Vec<&str> = shard_dirs.iter().map(String::as_str).collect();
    check_merged_equals_single(&dir, &refs);
}
