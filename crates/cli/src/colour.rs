//! Colour for verdicts on a terminal. Lines holding colour are printed with
//! `anstream::println!`, which strips the codes when stdout is not a terminal (a pipe,
//! a file, CI logs) and honours `NO_COLOR` and `CLICOLOR`/`CLICOLOR_FORCE`: a pipe
//! never gets ANSI codes.

const RESET: &str = "\x1b[0m";

/// `text` in bold green (a pass).
pub fn pass(text: &str) -> String {
    format!("\x1b[1;32m{text}{RESET}")
}

/// `text` in bold red (a failure).
pub fn fail(text: &str) -> String {
    format!("\x1b[1;31m{text}{RESET}")
}
