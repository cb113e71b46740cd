//! Explores every variant of every registry protocol with the registry's defaults and
//! prints one report each: the figures in the crate docs and the book come from here.
//!
//! `cargo run --release -p tenure-models --example zoo [PROTOCOL]`

fn main() {
    let only = std::env::args().nth(1);
    let models = zoo();
    for entry in models.entries() {
        let info = entry.info();
        if only.as_deref().is_some_and(|o| o != info.name) {
            continue;
        }
        for variant in info.variants {
            let query = zoo()
                .query(info.name, variant.name)
                .expect("registry defaults");
            let report = zoo().check_model(&query).expect("registry defaults build");
            print!("{} {}: {report}", info.name, variant.name);
        }
    }
}

fn zoo() -> tenure_models::Models {
    tenure_zoo_prebuilt::models()
}
