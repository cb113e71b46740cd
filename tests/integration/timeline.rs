//! The timeline picture of the GC-pause lock scenario shows what happened where it
//! happened: the pause band of the paused client, both `Holds` bars, and the violation
//! at its true time (read back from the data attributes the page emits).

use crate::support::{prepare, repo_root};
use tenure_sim::RunOptions;

/// The `data-*` attributes of every element of `kind` in `html`, as (name, value) pairs.
fn elements(html: &str, kind: &str) -> Vec<Vec<(String, String)>> {
    let needle = format!("data-kind=\"{kind}\"");
    html.match_indices(&needle)
        .map(|(at, _)| {
            let end = at + html[at..].find('>').expect("a closed tag");
            let mut attrs = Vec::new();
            for part in html[at..end].split("\" ") {
                if let Some((k, v)) = part.split_once("=\"") {
                    attrs.push((k.trim().to_string(), v.trim_end_matches('"').to_string()));
                }
            }
            attrs
        })
        .collect()
}

fn attr(attrs: &[(String, String)], name: &str) -> String {
    attrs
        .iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no {name} in {attrs:?}"))
        .1
        .clone()
}

fn ns(attrs: &[(String, String)], name: &str) -> u64 {
    attr(attrs, name).parse().expect("a number of nanoseconds")
}

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

#[test]
fn gc_pause_timeline_shows_the_pause_both_holders_and_the_violation() {
    let prepared = prepare(&repo_root().join("scenarios/redis-lock/gc-pause.toml"));
    let options = RunOptions {
        trace: true,
        stop_at_first_violation: false,
    };
    let report = prepared.run(prepared.scenario.seed, &options);
    let html = tenure_timeline::render(&prepared.scenario.name, &prepared.cluster, &report);

    // The pause: node 1, from 1s for 5s (the scenario's [[fault]]).
    let pauses = elements(&html, "pause");
    assert_eq!(pauses.len(), 1, "{pauses:?}");
    let p = &pauses[0];
    assert_eq!(attr(p, "data-node"), "1");
    let (start, end) = (ns(p, "data-start-ns"), ns(p, "data-end-ns"));
    assert!((S..S + MS).contains(&start), "pause starts at 1s: {start}");
    assert!(
        (5 * S..5 * S + MS).contains(&(end - start)),
        "lasts 5s: {start}..{end}"
    );

    // The violation: a vertical marker at its true time, inside the pause.
    let v = &report.violations[0];
    assert_eq!(v.checker, "mutual-exclusion-belief");
    let marks = elements(&html, "violation");
    assert_eq!(marks.len(), 1);
    assert_eq!(attr(&marks[0], "data-checker"), "mutual-exclusion-belief");
    assert_eq!(ns(&marks[0], "data-t-ns"), v.time.as_nanos());
    assert!(start < v.time.as_nanos() && v.time.as_nanos() < end);

    // Both holders: n1's Holds bar spans the violation (it holds through its pause),
    // n2's starts at the violation; both are the records the violation names.
    let holds = elements(&html, "holds");
    let t = v.time.as_nanos();
    let covering: Vec<_> = holds
        .iter()
        .filter(|h| ns(h, "data-start-ns") <= t && t < ns(h, "data-end-ns"))
        .collect();
    let nodes: Vec<String> = covering.iter().map(|h| attr(h, "data-node")).collect();
    assert_eq!(nodes, ["1", "2"], "{covering:?}");
    assert!(
        ns(covering[0], "data-end-ns") >= end,
        "n1 holds until after it resumes"
    );
    assert_eq!(ns(covering[1], "data-start-ns"), t);
    for h in &covering {
        let record: usize = attr(h, "data-record").parse().unwrap();
        assert!(v.records.contains(&record));
    }
    assert_eq!(elements(&html, "involved").len(), v.records.len());
    assert!(html.contains(&format!("mutual-exclusion-belief violated at {}", v.time)));

    // Same run, same bytes.
    let again = prepared.run(prepared.scenario.seed, &options);
    assert_eq!(
        html,
        tenure_timeline::render(&prepared.scenario.name, &prepared.cluster, &again)
    );
}
