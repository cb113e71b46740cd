//! How many random walks it takes to break a variant: `walkseed PROTOCOL VARIANT SEEDS`.
use tenure_models::registry::WALK_DEPTH;
use tenure_models::{walk_model, Query};
fn main() {
    let mut a = std::env::args().skip(1);
    let (p, v) = (a.next().unwrap(), a.next().unwrap());
    let n: u64 = a.next().unwrap().parse().unwrap();
    let mut q = Query::for_walks(&p, &v).unwrap();
    if let Some(m) = a.next() {
        q.params = serde_json::from_str(&m).unwrap();
    }
    if let Some(l) = a.next() {
        q.bounds.max_leaps = l.parse().unwrap();
    }
    let r = walk_model(&q, 0..n, WALK_DEPTH).unwrap();
    let found = r
        .failure
        .map(|f| (f.seed, f.counterexample.property, f.counterexample.depth));
    println!("{} seeds, {} steps, {found:?}", r.seeds_run, r.steps_total);
}
