//! `tenure list`: what can be run and checked.

use crate::Outcome;
use crate::Tools;
use clap::Args;

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Print as JSON.
    #[arg(long)]
    json: bool,
}

/// What a protocol declares with its default parameters: its promises (checks, with
/// derived bounds) and its assumptions, in words.
fn declared(tools: &Tools, name: &str) -> (Vec<String>, Vec<String>) {
    let prepared = tenure_fuzz::default_scenario(&tools.protocols, name, None)
        .ok()
        .and_then(|s| tenure_sim::Prepared::new(s, &tools.protocols).ok());
    let Some(p) = prepared else {
        return (Vec::new(), Vec::new());
    };
    let promises = p
        .promises
        .iter()
        .map(
            |pr| match pr.params.get("within").and_then(|w| w.as_str()) {
                Some(within) => format!(
                    "{} within {within} ({})",
                    pr.check,
                    pr.params
                        .get("bound")
                        .and_then(|b| b.as_str())
                        .unwrap_or_default()
                ),
                None => pr.check.to_string(),
            },
        )
        .collect();
    (promises, p.assumptions.describe())
}

/// What a built-in profile draws: per seed, the chance of each kind of fault it turns
/// on (the knobs other than ranges and modifiers), and whether it draws past the target's
/// declared assumptions.
fn draws(name: &str) -> (Vec<(&'static str, f64)>, bool) {
    let p = tenure_scenario::profile::Profile::named(name).expect("a built-in profile");
    let chances = [
        ("partition", p.partition),
        ("crash", p.crash),
        ("pause", p.pause),
        ("power", p.power),
        ("disk", p.disk),
        ("clock_jump", p.clock_jump),
        ("clock_drift", p.clock_drift),
        ("clock_offset", p.clock_offset),
        ("clock_stall", p.clock_stall),
        ("clock_slew", p.clock_slew),
        ("loss", p.loss),
        ("duplicate", p.duplicate),
        ("heavy_tail", p.heavy_tail),
        ("slow", p.slow),
        ("slow_node", p.slow_node),
        ("disk_stall", p.disk_stall),
        ("torn", p.torn),
        ("asymmetric", p.asymmetric),
        ("early", p.early),
        ("byzantine", p.byzantine),
    ];
    let on = chances.into_iter().filter(|(_, c)| *c > 0.0).collect();
    (on, p.beyond_assumptions)
}

/// Whether `check-model` explores `protocol`, or why not.
fn model_support(tools: &Tools, protocol: &str) -> Result<(), &'static str> {
    match tools.models.lookup(protocol) {
        Some(_) => Ok(()),
        None => Err(tools
            .models
            .not_modelled()
            .iter()
            .find(|(n, _)| *n == protocol)
            .map_or("not in the model checker's catalogue", |(_, why)| why)),
    }
}

pub fn list(args: ListArgs, tools: &Tools) -> Outcome {
    let entries = tools.protocols.entries();
    if args.json {
        let protocols: Vec<serde_json::Value> = entries
            .iter()
            .map(|e| {
                let (promises, assumptions) = declared(tools, e.info.name);
                serde_json::json!({
                    "name": e.info.name,
                    "promises": promises,
                    "assumptions": assumptions,
                    "summary": e.info.summary,
                    "roles": e.info.roles.iter().map(|r| serde_json::json!({"name": r.name, "default_count": r.default_count, "summary": r.summary})).collect::<Vec<_>>(),
                    "variants": e.info.variants.iter().map(|v| serde_json::json!({"name": v.name, "summary": v.summary, "breaks": v.breaks})).collect::<Vec<_>>(),
                    "check_model": match model_support(tools, e.info.name) {
                        Ok(()) => serde_json::json!({"explored": true}),
                        Err(why) => serde_json::json!({"explored": false, "why": why}),
                    },
                })
            })
            .collect();
        let checkers: Vec<serde_json::Value> = tenure_check::all()
            .iter()
            .map(|c| serde_json::json!({"name": c.name, "kind": c.kind, "summary": c.summary, "property": c.property, "source": c.source, "params": c.params, "own": tenure_check::is_custom(c.name)}))
            .collect();
        let profiles: Vec<serde_json::Value> = tenure_scenario::profile::PROFILE_NAMES
            .iter()
            .map(|name| {
                let (on, beyond) = draws(name);
                let chances: serde_json::Map<String, serde_json::Value> = on
                    .into_iter()
                    .map(|(k, c)| (k.to_string(), c.into()))
                    .collect();
                serde_json::json!({"name": name, "chances": chances, "beyond_assumptions": beyond})
            })
            .collect();
        let out = serde_json::json!({"protocols": protocols, "checkers": checkers, "fault_kinds": tenure_scenario::Fault::KINDS, "profiles": profiles});
        println!("{}", serde_json::to_string_pretty(&out).expect("json"));
        return Outcome::Passed;
    }
    println!("PROTOCOLS");
    for e in entries {
        println!("  {:<14} {}", e.info.name, e.info.summary);
        let roles: Vec<String> = e
            .info
            .roles
            .iter()
            .map(|r| format!("{} (default {})", r.name, r.default_count))
            .collect();
        println!("    roles:    {}", roles.join(", "));
        for v in e.info.variants {
            let breaks = if v.breaks.is_empty() {
                String::new()
            } else {
                format!("  [breaks {}]", v.breaks.join(", "))
            };
            println!("    variant:  {:<20} {}{breaks}", v.name, v.summary);
        }
        let (promises, assumptions) = declared(tools, e.info.name);
        for p in promises {
            println!("    promises: {p}");
        }
        for a in assumptions {
            println!("    assumes:  {a}");
        }
        match model_support(tools, e.info.name) {
            Ok(()) => println!("    model:    explored by `tenure check-model`"),
            Err(why) => println!("    model:    not explored by `tenure check-model`: {why}"),
        }
    }
    println!("\nCHECKERS");
    for c in tenure_check::all() {
        let own = if tenure_check::is_custom(c.name) {
            ", this program's own"
        } else {
            ""
        };
        println!("  {:<32} {} ({}{own})", c.name, c.summary, c.kind.name());
        if !c.params.is_empty() {
            println!("  {:<32} params: {}", "", c.params);
        }
    }
    println!(
        "\nFAULT KINDS\n  {}",
        tenure_scenario::Fault::KINDS.join(", ")
    );
    println!(
        "\nFAULT PROFILES (tenure fuzz --profile P; per seed, the chance of each kind of fault)"
    );
    for name in tenure_scenario::profile::PROFILE_NAMES {
        let (on, beyond) = draws(name);
        let on: Vec<String> = on.iter().map(|(k, c)| format!("{k} {c}")).collect();
        let on = if on.is_empty() {
            "no fault kind (a baseline)".to_string()
        } else {
            on.join(", ")
        };
        let beyond = if beyond {
            "; past the target's declared assumptions"
        } else {
            ""
        };
        println!("  {name:<11} {on}{beyond}");
    }
    Outcome::Passed
}
