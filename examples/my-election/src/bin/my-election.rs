//! The whole `tenure` command line for this crate's own protocols:
//! `cargo run -p my-election -- verify`, `-- fuzz scenarios/planted-bug.toml`, `-- shrink ...`,
//! and for real: `-- cluster scenarios/real-cluster.toml --out DIR`.

fn main() -> std::process::ExitCode {
    tenure::cli::main_real(my_election::MyProtocols, my_election::MyProtocols)
}
