//! Unique states per second: tenure-models' explorer against stateright's BFS checker
//! driving the very same `State::actions` / `State::apply`, on the same bounds. The
//! unique-state counts must agree (both deduplicate by the same `Hash`), which also
//! cross-checks the explorer.

use stateright::{Checker, Model, Property};
use std::hash::Hash;
use tenure_core::{Cluster, Protocol};
use tenure_models::{toy, Action, Bounds, ClockModel, Explorer, SeenModel, State};
use tenure_protocols::raft::{Raft, RaftConfig, RaftVariant, TERM_KEY};

struct Adapter<P: Protocol> {
    config: P::Config,
    cluster: Cluster,
    bounds: Bounds,
    keep: fn(&State<P>) -> bool,
}

impl<P: Protocol + Sync> Model for Adapter<P>
where
    State<P>: Hash,
    P::Config: Sync,
    P::Msg: Sync,
    P::Timer: Sync,
{
    type State = State<P>;
    type Action = Action<P>;

    fn init_states(&self) -> Vec<State<P>> {
        vec![State::initial(&self.config, &self.cluster, &self.bounds).0]
    }

    fn actions(&self, state: &State<P>, actions: &mut Vec<Action<P>>) {
        actions.extend(state.actions(&self.bounds));
    }

    fn next_state(&self, last: &State<P>, action: Action<P>) -> Option<State<P>> {
        let mut next = last.clone();
        next.apply(&self.config, &self.cluster, &self.bounds, &action, 0);
        Some(next)
    }

    fn within_boundary(&self, state: &State<P>) -> bool {
        (self.keep)(state)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        // stateright stops at once without a property to look for; this one always holds.
        vec![Property::always("nodes exist", |_, s: &State<P>| {
            !s.nodes.is_empty()
        })]
    }
}

#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn compare<P: Protocol + Sync>(
    name: &str,
    config: P::Config,
    cluster: Cluster,
    bounds: Bounds,
    keep: fn(&State<P>) -> bool,
) where
    P::Config: Sync,
    P::Msg: Sync,
    P::Timer: Sync,
{
    let explorer = Explorer::<P>::new(config.clone(), cluster.clone(), bounds.clone())
        .within(Box::new(keep));
    let ours = explorer.explore();
    println!("{name}: tenure-models: {ours}");

    let started = std::time::Instant::now();
    let adapter = Adapter::<P> {
        config,
        cluster,
        bounds: bounds.clone(),
        keep,
    };
    let checker = adapter
        .checker()
        .target_max_depth(bounds.max_depth + 1)
        .spawn_bfs()
        .join();
    let secs = started.elapsed().as_secs_f64();
    let unique = checker.unique_state_count();
    println!(
        "{name}: stateright 0.30 bfs, 1 thread: {unique} unique states ({} generated), max depth {}, {secs:.3}s, {:.0} states/s",
        checker.state_count(),
        checker.max_depth().saturating_sub(1),
        unique as f64 / secs
    );
    println!(
        "{name}: ratio tenure-models / stateright = {:.2}",
        ours.unique_states_per_second / (unique as f64 / secs)
    );
}

/// The bounds of `correct_raft_passes_terms_1_one_crash_exhaustively` (models/tests/suite/raft.rs).
fn raft_keep(state: &State<Raft>) -> bool {
    let terms_ok = (0..state.nodes.len())
        .all(|i| state.stored::<u64>(tenure_core::NodeId(i as u32), TERM_KEY).is_none_or(|t| t <= 1));
    terms_ok && state.in_flight.values().all(|c| *c <= 1)
}

fn main() {
    compare::<Raft>(
        "raft correct, 3 servers, terms <= 1, 1 crash",
        RaftConfig::new(RaftVariant::Correct),
        Cluster::uniform("server", 3),
        Bounds::DEFAULT
            .with_max_crashes(1)
            .with_max_depth(40)
            .with_clock(ClockModel::Frozen)
            .with_seen(SeenModel::Leaders),
        raft_keep,
    );
    compare::<toy::Vote>(
        "toy vote, 3 nodes, 1 crash",
        toy::Variant::Correct,
        Cluster::uniform("node", 3),
        Bounds::DEFAULT.with_max_crashes(1),
        |_| true,
    );
    compare::<toy::Vote>(
        "toy vote, 4 nodes, 1 crash, 1 drop",
        toy::Variant::Correct,
        Cluster::uniform("node", 4),
        Bounds::DEFAULT.with_max_crashes(1).with_max_drops(1),
        |_| true,
    );
}
