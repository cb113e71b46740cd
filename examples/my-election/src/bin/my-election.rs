//! The whole `tenure` command line for this crate's own protocols:
//! `cargo run -p my-election -- verify`, `-- fuzz scenarios/planted-bug.toml`, `-- shrink ...`.

fn main() -> std::process::ExitCode {
    tenure::cli::main(my_election::MyProtocols)
}
