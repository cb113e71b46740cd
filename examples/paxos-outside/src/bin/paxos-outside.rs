//! The whole `tenure` command line for this crate's protocol:
//! `cargo run -p paxos-outside -- fuzz --protocol paxos --variant V --profile P`.

fn main() -> std::process::ExitCode {
    tenure::cli::main(paxos_outside::PaxosProtocols)
}
