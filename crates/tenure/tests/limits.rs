//! A run stopped by a limit is no pass: the facade panics naming the limit (its own test
//! binary, since the limits are process-wide).

use tenure::prelude::*;
use tenure::Configurable;
use tenure_protocols::raft::{Raft, RaftVariant};

fn raft() -> Simulation<Raft> {
    let cluster = Cluster::uniform("server", 5);
    let config = Raft::configure(Default::default(), RaftVariant::Correct, &cluster).unwrap();
    Simulation::<Raft>::new(cluster, config)
        .duration(secs(5))
        .check("single-leader-per-term")
}

#[test]
#[should_panic(expected = "more than 3 messages were in flight")]
fn a_run_over_the_in_flight_limit_is_not_reported_as_a_pass() {
    tenure_scenario::set_limits(tenure_scenario::Limits {
        max_in_flight: 3,
        ..tenure_scenario::Limits::DEFAULT
    });
    let _ = raft().run_seed(1);
}
