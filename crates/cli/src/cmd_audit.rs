//! `tenure audit verify FILE [--head HASH]`: checks a leadership log written by
//! `tenure run --audit OUT` (see the tenure-audit crate). Exit 0: the chain is intact
//! (and ends at HEAD, if given); 1: an entry was edited, rewritten, removed or moved,
//! named by line; 2: the file is unreadable or not a leadership log.

use crate::Outcome;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct AuditArgs {
    #[command(subcommand)]
    command: AuditCommand,
}

#[derive(Subcommand, Debug)]
enum AuditCommand {
    /// Check a leadership log's hash chain; report the first tampered, missing or
    /// reordered entry.
    Verify {
        /// The log (JSON lines) written by `tenure run --audit`.
        file: PathBuf,
        /// The head hash the run printed: also catches entries cut from the end.
        #[arg(long, value_name = "HASH")]
        head: Option<String>,
    },
}

pub fn run(args: AuditArgs) -> Outcome {
    match args.command {
        AuditCommand::Verify { file, head } => verify(&file, head.as_deref()),
    }
}

fn verify(file: &std::path::Path, head: Option<&str>) -> Outcome {
    let shown = crate::shown(file);
    if let Some(h) = head {
        if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            eprintln!("tenure: --head: expected 64 hexadecimal digits, got `{h}`");
            return Outcome::BadInput;
        }
    }
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("tenure: {shown}: {e}");
            return Outcome::BadInput;
        }
    };
    match tenure_audit::verify(&text, head) {
        Err(bad) => {
            eprintln!("tenure: {shown}:{}: {}", bad.line, bad.message);
            Outcome::BadInput
        }
        Ok(Err(problem)) => {
            println!("TAMPERED {shown}: {problem}");
            Outcome::CheckFailed
        }
        Ok(Ok(v)) => {
            println!(
                "OK {shown}: {} entr{} chained intact{}; head {}",
                v.entries,
                if v.entries == 1 { "y" } else { "ies" },
                if head.is_some() {
                    ", ending at the given head"
                } else {
                    ""
                },
                v.head
            );
            Outcome::Passed
        }
    }
}
