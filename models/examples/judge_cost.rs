//! What judging costs: explores a few registry configurations whose correct variants
//! pass (so each search runs to its bounds) and prints unique states per second, each
//! the best of three runs. Used to measure the explorer before and after a change to
//! what it judges at each state.
//!
//! `cargo run --release -p tenure-models --example judge_cost`

fn main() {
    let models = tenure_zoo_prebuilt::models();
    let cases: &[(&str, Option<&[&str]>)] = &[
        ("redis-lock", Some(&["mutual-exclusion-belief"])),
        (
            "redis-lock",
            Some(&["mutual-exclusion", "mutual-exclusion-belief"]),
        ),
        ("fencing", None),
        ("raft", None),
        ("etcd-lock", None),
        ("zookeeper", None),
    ];
    for (protocol, checks) in cases {
        let mut query = models
            .query(protocol, "correct")
            .expect("a registry protocol");
        if let Some(checks) = checks {
            query.checks = checks.iter().map(|c| c.to_string()).collect();
        }
        let runs: Vec<tenure_models::Report> = (0..3)
            .map(|_| models.check_model(&query).expect("the query builds"))
            .collect();
        let best = runs
            .iter()
            .max_by(|a, b| {
                a.unique_states_per_second
                    .total_cmp(&b.unique_states_per_second)
            })
            .expect("three runs");
        println!(
            "{protocol} correct [{}]: {} unique states, depth {}, {}, {:.2}s, {:.0} states/s",
            query.checks.join(", "),
            best.unique_states,
            best.max_depth_reached,
            match &best.counterexample {
                Some(c) => format!("VIOLATION {} at depth {}", c.property, c.depth),
                None => "no violation".to_string(),
            },
            best.elapsed_seconds,
            best.unique_states_per_second
        );
    }
}
