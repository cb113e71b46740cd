//! The `tenure` binary: the whole command line over the zoo's catalogue.

fn main() -> std::process::ExitCode {
    tenure_cli::main(tenure_zoo::Zoo)
}
