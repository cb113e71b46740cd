//! Progress of long runs, on stderr only: never on stdout, so never in `--json` output
//! or in a pipe's data. On a terminal a bar (`indicatif`: it redraws at most 20 times a
//! second and only on a terminal) with seeds done, seeds per second, failures and the
//! simulated time covered; otherwise a plain line every [`LINE_EVERY`] seconds. Nothing
//! at all for a short run: the bar appears after [`BAR_AFTER`] seconds, the first line
//! after [`LINE_EVERY`].
//!
//! "Simulated time covered" is the sum of the simulated time of the seeds finished so
//! far (each to its end, or to where it stopped at its first violation).
//!
//! Wall-clock time comes in as an argument (the caller's one real-time helper), is used
//! for display only and never affects a run.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Duration;

/// Seconds before the bar appears on a terminal.
pub const BAR_AFTER: f64 = 2.0;
/// Seconds between two plain progress lines (and before the first).
pub const LINE_EVERY: f64 = 10.0;

/// Where progress goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A bar on stderr, a terminal.
    Bar,
    /// Plain lines on stderr (a file or a pipe).
    Lines,
}

impl Mode {
    /// The mode for this process's stderr.
    pub fn of_stderr() -> Mode {
        use std::io::IsTerminal;
        if std::io::stderr().is_terminal() {
            Mode::Bar
        } else {
            Mode::Lines
        }
    }
}

pub struct Progress {
    /// `tenure fuzz`: the prefix of plain lines.
    what: &'static str,
    /// What is counted: `seed` (fuzz) or `run` (compare), made plural with an `s`.
    unit: &'static str,
    mode: Mode,
    /// Seeds in the run, if known (`--time` runs have no end).
    total: Option<u64>,
    started: f64,
    last_line: f64,
    done: u64,
    failed: u64,
    simulated: Duration,
    bar: Option<ProgressBar>,
    /// Plain lines written so far (for tests).
    lines: u64,
    /// Appended to each update (`lowest check coverage 97%`).
    note: String,
}

impl Progress {
    /// Progress of a run of `total` seeds (if known) that started at `now` (seconds).
    pub fn new(what: &'static str, mode: Mode, total: Option<u64>, now: f64) -> Progress {
        Progress {
            what,
            unit: "seed",
            mode,
            total,
            started: now,
            last_line: now,
            done: 0,
            failed: 0,
            simulated: Duration::ZERO,
            bar: None,
            lines: 0,
            note: String::new(),
        }
    }

    /// Counts `unit`s (`run`: a compare counts its runs, seeds of several alternatives).
    pub fn counting(mut self, unit: &'static str) -> Progress {
        self.unit = unit;
        self
    }

    /// One more seed finished at `now`, having simulated `simulated`.
    pub fn seed_done(&mut self, now: f64, simulated: Duration, failed: bool) {
        self.done += 1;
        self.failed += u64::from(failed);
        self.simulated += simulated;
        let elapsed = now - self.started;
        match self.mode {
            Mode::Bar => {
                if self.bar.is_none() && elapsed >= BAR_AFTER {
                    self.bar = Some(new_bar(self.total, self.unit, ProgressDrawTarget::stderr()));
                }
                if let Some(bar) = &self.bar {
                    bar.set_position(self.done);
                    bar.set_message(self.counts(elapsed));
                }
            }
            Mode::Lines => {
                if now - self.last_line >= LINE_EVERY {
                    self.last_line = now;
                    self.lines += 1;
                    eprintln!("{}", self.line(elapsed));
                }
            }
        }
    }

    /// What the next updates add at their end (coverage so far).
    pub fn set_note(&mut self, note: String) {
        self.note = note;
    }

    /// Runs `print` (which writes to stdout) with the bar out of the way.
    pub fn print(&self, print: impl FnOnce()) {
        match &self.bar {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }

    /// Removes the bar (before the summary).
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// `12 seeds/s · 0 failed · 2h03m simulated`
    fn counts(&self, elapsed: f64) -> String {
        let rate = if elapsed > 0.0 {
            self.done as f64 / elapsed
        } else {
            0.0
        };
        let note = if self.note.is_empty() {
            String::new()
        } else {
            format!(" · {}", self.note)
        };
        format!(
            "{rate:.0} {}s/s · {} failed · {} simulated{note}",
            self.unit,
            self.failed,
            human(self.simulated)
        )
    }

    /// `tenure fuzz: 120 of 1000 seeds, 12 seeds/s, 0 failed, 2h03m simulated`
    fn line(&self, elapsed: f64) -> String {
        let of = self.total.map_or(String::new(), |t| format!(" of {t}"));
        format!(
            "{}: {}{of} {}{}, {}",
            self.what,
            self.done,
            self.unit,
            if self.total.unwrap_or(self.done) == 1 {
                ""
            } else {
                "s"
            },
            self.counts(elapsed).replace(" · ", ", ")
        )
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

fn new_bar(total: Option<u64>, unit: &str, target: ProgressDrawTarget) -> ProgressBar {
    let (bar, template) = match total {
        Some(n) => (
            ProgressBar::with_draw_target(Some(n), target),
            format!("{{wide_bar}} {{pos}}/{{len}} {unit}s · {{msg}}"),
        ),
        None => (
            ProgressBar::with_draw_target(None, target),
            format!("{{spinner}} {{pos}} {unit}s · {{msg}}"),
        ),
    };
    bar.set_style(ProgressStyle::with_template(&template).expect("a valid template"));
    bar
}

/// A long duration, short: `950ms`, `12.3s`, `4m05s`, `2h03m`, `3d04h`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s < 1 {
        format!("{}ms", d.as_millis())
    } else if s < 60 {
        format!("{:.1}s", d.as_secs_f64())
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else if s < 86_400 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else {
        format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_short() {
        assert_eq!(human(Duration::from_millis(950)), "950ms");
        assert_eq!(human(Duration::from_millis(12_345)), "12.3s");
        assert_eq!(human(Duration::from_secs(245)), "4m05s");
        assert_eq!(human(Duration::from_secs(2 * 3600 + 180)), "2h03m");
        assert_eq!(human(Duration::from_secs(3 * 86_400 + 4 * 3600)), "3d04h");
    }

    #[test]
    fn a_short_run_prints_nothing_and_a_long_one_a_line_every_ten_seconds() {
        let mut p = Progress::new("tenure fuzz", Mode::Lines, Some(1000), 100.0);
        for i in 0..50 {
            p.seed_done(100.0 + f64::from(i) * 0.1, Duration::from_secs(20), false);
        }
        assert_eq!(p.lines, 0, "5 seconds: no line");
        for i in 0..1000 {
            p.seed_done(105.0 + f64::from(i) * 0.1, Duration::from_secs(20), i == 7);
        }
        assert_eq!(p.lines, 10, "100 more seconds: a line every 10");
        assert_eq!(
            p.line(105.0),
            "tenure fuzz: 1050 of 1000 seeds, 10 seeds/s, 1 failed, 5h50m simulated"
        );
        let mut p = Progress::new("tenure fuzz", Mode::Lines, None, 0.0);
        p.seed_done(1.0, Duration::from_secs(1), false);
        assert_eq!(
            p.line(1.0),
            "tenure fuzz: 1 seed, 1 seeds/s, 0 failed, 1.0s simulated"
        );
        let mut p = Progress::new("tenure compare", Mode::Lines, Some(40), 0.0).counting("run");
        p.seed_done(2.0, Duration::from_secs(1), true);
        assert_eq!(
            p.line(2.0),
            "tenure compare: 1 of 40 runs, 0 runs/s, 1 failed, 1.0s simulated"
        );
    }

    #[test]
    fn the_bar_waits_before_it_appears() {
        let mut p = Progress::new("tenure fuzz", Mode::Bar, Some(10), 0.0);
        p.seed_done(1.0, Duration::from_secs(1), false);
        assert!(p.bar.is_none(), "not for a short run");
        p.seed_done(2.5, Duration::from_secs(1), true);
        assert!(p.bar.is_some());
        assert_eq!(p.lines, 0, "a bar, no lines");
        assert_eq!(p.bar.as_ref().unwrap().position(), 2);
        p.finish();
        assert!(p.bar.is_none());
    }
}
