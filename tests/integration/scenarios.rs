//! Every file in `scenarios/` meets its declared expectation with its default seed.

use crate::support::{prepare, scenario_files};
use tenure_sim::RunOptions;

#[test]
fn every_scenario_meets_its_expectation() {
    let files = scenario_files();
    assert!(files.len() >= 11, "the scenario set shrank: {files:?}");
    let mut unmet = Vec::new();
    for path in &files {
        let prepared = prepare(path);
        let report = prepared.run(prepared.scenario.seed, &RunOptions::default());
        if !report.expectation_met {
            let got: Vec<String> = report.violations.iter().map(|v| v.to_string()).collect();
            unmet.push(format!(
                "{}: expected {:?}, got {:?}",
                path.display(),
                prepared.scenario.expect,
                got
            ));
        }
    }
    assert!(
        unmet.is_empty(),
        "scenarios that missed their expectation:\n{}",
        unmet.join("\n")
    );
}

#[test]
fn every_zoo_protocol_has_scenarios() {
    let files = scenario_files();
    for entry in crate::support::zoo().entries() {
        let dir = format!("scenarios/{}/", entry.info.name);
        assert!(
            files.iter().any(|f| f.to_string_lossy().contains(&dir)),
            "protocol {} has no scenario under {dir}",
            entry.info.name
        );
    }
}
