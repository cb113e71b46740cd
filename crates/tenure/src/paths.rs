//! One verdict on every path: a (protocol, variant, profile, seed) judged through
//! `tenure fuzz --protocol`, through the scenario file `--print` writes run as `tenure
//! run` runs it, and through the library's [`Simulation`] must come out the same, down
//! to the violation's time and words and what each check judged.
//!
//! [`same_verdict_on_every_path`] checks that for a range of seeds; tenure's own tests
//! run it over every protocol of the zoo and both example crates, and your crate can run
//! it over yours.

use crate::Simulation;
use serde_json::{json, Value};
use std::ops::Range;
use tenure_check::{Judged, Violation};
use tenure_core::{Catalogue, Configurable, Visitor};
use tenure_fuzz::{SeedResult, Target};
use tenure_sim::{Prepared, Protocols, RunOptions};

/// A verdict as JSON: pass or the first violation (checker, time, words), and what each
/// check judged.
fn verdict(seed: u64, first: Option<(&str, u64, &str)>, judged: &[Judged]) -> Value {
    let judged: Vec<Value> = judged
        .iter()
        .map(|j| json!({"check": j.check, "summary": j.summary, "vacuous": j.vacuous.is_some()}))
        .collect();
    match first {
        None => json!({"seed": seed, "outcome": "pass", "judged": judged}),
        Some((checker, time_ns, message)) => json!({
            "seed": seed,
            "outcome": "violation",
            "checker": checker,
            "time_ns": time_ns,
            "message": message,
            "judged": judged,
        }),
    }
}

fn first(v: &[Violation]) -> Option<(&str, u64, &str)> {
    v.first()
        .map(|v| (v.checker, v.time.as_nanos(), v.message.as_str()))
}

/// Runs `seeds` of `protocol`'s `variant` (its correct one if `None`) under `profile`
/// on three paths, as `tenure fuzz --protocol` builds it (its default cluster,
/// parameters and checks): the fuzzer, the scenario `--print` writes (parsed back and
/// run), and the library ([`Simulation::new`] with the same checks). Returns how many
/// seeds agreed, or the first disagreement with each path's verdict as JSON.
pub fn same_verdict_on_every_path<C: Catalogue>(
    catalogue: &C,
    protocol: &str,
    variant: Option<&str>,
    profile: &str,
    seeds: Range<u64>,
) -> Result<u64, String> {
    let protocols = Protocols::of(catalogue);
    let target = Target::for_protocol(&protocols, protocol, variant, Some(profile))
        .map_err(|e| e.to_string())?;
    let mut library = Library {
        target: &target,
        profile,
        seeds: seeds.clone(),
        verdicts: None,
    };
    catalogue.visit(&mut library);
    let library = library
        .verdicts
        .ok_or_else(|| format!("the catalogue has no protocol `{protocol}`"))?;
    let mut agreed = 0;
    for (seed, lib) in seeds.zip(library) {
        let fuzzed = tenure_fuzz::run_seed(&target, seed, false);
        let fuzz = match &fuzzed.result {
            SeedResult::Pass => verdict(seed, None, &fuzzed.judged),
            SeedResult::Fail(f) => verdict(
                seed,
                Some((f.checker, f.time.as_nanos(), &f.message)),
                &fuzzed.judged,
            ),
            other => return Err(format!("seed {seed}: the fuzzer gave {other:?}")),
        };
        let text = target.case(seed).to_toml();
        let case = tenure_scenario::parse(&text, "printed.toml")
            .map_err(|e| format!("seed {seed}: --print wrote a file that does not parse: {e}"))?;
        let prepared = Prepared::new(case, &protocols)
            .map_err(|e| format!("seed {seed}: --print wrote an invalid file: {e}"))?;
        let report = prepared.run(
            seed,
            &RunOptions {
                trace: false,
                stop_at_first_violation: true,
            },
        );
        let printed = verdict(seed, first(&report.violations), &report.judged);
        if fuzz != printed || fuzz != lib {
            return Err(format!(
                "{}/{} profile {profile} seed {seed}: the paths disagree\n  fuzz:    {fuzz}\n  printed: {printed}\n  library: {lib}",
                target.base.protocol.name, target.base.protocol.variant
            ));
        }
        agreed += 1;
    }
    Ok(agreed)
}

/// The library path: finds the protocol's type in the catalogue and sweeps it.
struct Library<'a> {
    target: &'a Target,
    profile: &'a str,
    seeds: Range<u64>,
    verdicts: Option<Vec<Value>>,
}

impl Visitor for Library<'_> {
    fn visit<P: Configurable>(&mut self) {
        let base = &self.target.base;
        if P::info().name != base.protocol.name {
            return;
        }
        let params: P::Params = base.params().expect("the fuzz target's parameters read");
        let config = P::configure_named(params, &base.protocol.variant, &self.target.cluster)
            .expect("the fuzz target's configuration is valid");
        let mut sim = Simulation::<P>::new(self.target.cluster.clone(), config)
            .duration(base.duration)
            .network(tenure_sim::LinkSettings {
                latency: base.network.latency.clone(),
                loss: base.network.loss,
                duplicate: base.network.duplicate,
            })
            .profile(self.profile)
            .named("same_verdict_on_every_path");
        for c in &base.checks {
            sim = sim.check_with(&c.name, c.params.clone());
        }
        self.verdicts = Some(
            self.seeds
                .clone()
                .map(|seed| {
                    let o = sim.run_seed(seed);
                    verdict(seed, first(&o.violations), &o.judged)
                })
                .collect(),
        );
    }
}

/// The variants of `protocol` in `catalogue` (empty if it has no such protocol).
pub fn variants<C: Catalogue>(catalogue: &C, protocol: &str) -> Vec<&'static str> {
    struct Find<'a>(&'a str, Vec<&'static str>);
    impl Visitor for Find<'_> {
        fn visit<P: Configurable>(&mut self) {
            let info = P::info();
            if info.name == self.0 {
                self.1 = info.variants.iter().map(|v| v.name).collect();
            }
        }
    }
    let mut find = Find(protocol, Vec::new());
    catalogue.visit(&mut find);
    find.1
}
