//! Explores every variant of every registry protocol with the registry's defaults and
//! prints one report each: the figures in the crate docs and the book come from here.
//!
//! `cargo run --release -p tenure-models --example zoo [PROTOCOL]`

use tenure_models::registry::entries;
use tenure_models::{check_model, Query};

fn main() {
    let only = std::env::args().nth(1);
    for entry in entries() {
        let info = entry.info();
        if only.as_deref().is_some_and(|o| o != info.name) {
            continue;
        }
        for variant in info.variants {
            let query = Query::new(info.name, variant.name).expect("registry defaults");
            let report = check_model(&query).expect("registry defaults build");
            print!("{} {}: {report}", info.name, variant.name);
        }
    }
}
