//! A check's verdict, with three values: it passed, it failed, or it was **not judged**,
//! and then why.
//!
//! Jepsen keeps three answers (`:valid? true`, `false`, `:unknown`); tenure keeps them
//! too and says which reason withheld a verdict ([`Reason`]):
//!
//! * **vacuous**: the run recorded none of the observations the check judges (a lease
//!   check over a protocol that never records `Serves`);
//! * **could not fail**: the check judged something, but nothing in this run could have
//!   broken it (one node ever held the lock; no leadership ever changed hands);
//! * **too short**: the run ended (or was stopped) before the property was due (a
//!   liveness deadline after the end);
//! * **undecided**: the check ran out of its search budget (linearizability).
//!
//! A run that goes *beyond the protocol's declared assumptions* still gets a verdict:
//! that is an annotation of a pass or a fail, naming the assumption (see
//! `tenure_sim::Report::beyond`), never a reason to withhold one.
//!
//! Every output of tenure (the headline, the per-check lines, JSON, JUnit, `verify`,
//! `fuzz`, `check-history`, `check-trace`, the library's `Outcome`) derives from
//! [`CheckVerdict`]s, through [`verdicts`] (one run) and [`Overall`] (a whole run), so
//! no path can call a check passed that was not judged.

use crate::{Checker, Judged, Violation};
use serde::{Deserialize, Serialize};
use std::fmt;
use tenure_core::RunInfo;

/// Why a check gave no verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// The run recorded none of the observations the check judges.
    Vacuous,
    /// Nothing in this run could have broken the property.
    CouldNotFail,
    /// The run ended, or was stopped, before the property was due.
    TooShort,
    /// The check's search ran out of its budget before deciding.
    Undecided,
}

impl Reason {
    /// Every reason, in a stable order.
    pub const ALL: [Reason; 4] = [
        Reason::Vacuous,
        Reason::CouldNotFail,
        Reason::TooShort,
        Reason::Undecided,
    ];

    /// `could not fail`: as the report prints it.
    pub fn words(self) -> &'static str {
        match self {
            Reason::Vacuous => "vacuous",
            Reason::CouldNotFail => "could not fail",
            Reason::TooShort => "too short",
            Reason::Undecided => "undecided",
        }
    }

    /// `could-not-fail`: as JSON and the scenario format spell it.
    pub fn key(self) -> &'static str {
        match self {
            Reason::Vacuous => "vacuous",
            Reason::CouldNotFail => "could-not-fail",
            Reason::TooShort => "too-short",
            Reason::Undecided => "undecided",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.words())
    }
}

/// A check that gave no verdict: the reason, and what the run lacked, in words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotJudged {
    pub reason: Reason,
    /// What the run lacked, or what stopped the check: `only n2 acted on a resource:
    /// mutual exclusion breaks only when two nodes act on one`.
    pub why: String,
}

impl NotJudged {
    pub fn new(reason: Reason, why: impl Into<String>) -> NotJudged {
        NotJudged {
            reason,
            why: why.into(),
        }
    }
}

impl fmt::Display for NotJudged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.reason, self.why)
    }
}

/// One check's verdict in one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail(Violation),
    NotJudged(NotJudged),
}

impl Verdict {
    pub fn is_pass(&self) -> bool {
        matches!(self, Verdict::Pass)
    }

    pub fn is_fail(&self) -> bool {
        matches!(self, Verdict::Fail(_))
    }

    pub fn not_judged(&self) -> Option<&NotJudged> {
        match self {
            Verdict::NotJudged(n) => Some(n),
            _ => None,
        }
    }

    pub fn violation(&self) -> Option<&Violation> {
        match self {
            Verdict::Fail(v) => Some(v),
            _ => None,
        }
    }

    /// `pass`, `fail` or `not-judged`: as JSON spells the value.
    pub fn key(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail(_) => "fail",
            Verdict::NotJudged(_) => "not-judged",
        }
    }
}

/// One check's verdict in one run, with what it judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckVerdict {
    /// The check's name.
    pub check: String,
    pub verdict: Verdict,
    /// What the check judged (its counts), whatever the verdict.
    pub judged: Judged,
}

impl CheckVerdict {
    /// `pass`, `FAIL at 0.171_284s: ...`, `not judged (too short): ...`: one line.
    pub fn words(&self) -> String {
        match &self.verdict {
            Verdict::Pass => "pass".to_string(),
            Verdict::Fail(v) => format!("FAIL at {}: {}", v.time, v.message),
            Verdict::NotJudged(n) => format!("not judged ({}): {}", n.reason, n.why),
        }
    }

    /// As JSON: `{"check", "verdict", "reason"?, "why"?, "violation"?, "judged"}`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "check": self.check,
            "verdict": self.verdict.key(),
            "judged": self.judged,
        });
        match &self.verdict {
            Verdict::Pass => {}
            Verdict::Fail(violation) => v["violation"] = serde_json::json!(violation),
            Verdict::NotJudged(n) => {
                v["reason"] = serde_json::json!(n.reason.key());
                v["why"] = serde_json::json!(n.why);
            }
        }
        v
    }
}

/// The verdict of a whole run over its checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Overall {
    /// Every check was judged and passed (and there was at least one).
    Pass,
    /// Some check failed.
    Fail,
    /// No check failed, and some check was not judged (or there was no check at all).
    NotJudged,
}

impl Overall {
    /// The run's verdict over `verdicts`: any failure fails it; otherwise any check not
    /// judged (or no check at all) leaves it not judged; otherwise it passed.
    pub fn of(verdicts: &[CheckVerdict]) -> Overall {
        if verdicts.iter().any(|v| v.verdict.is_fail()) {
            Overall::Fail
        } else if verdicts.is_empty() || verdicts.iter().any(|v| !v.verdict.is_pass()) {
            Overall::NotJudged
        } else {
            Overall::Pass
        }
    }

    /// `PASS`, `FAIL`, `NOT JUDGED`: the headline's word.
    pub fn headline(self) -> &'static str {
        match self {
            Overall::Pass => "PASS",
            Overall::Fail => "FAIL",
            Overall::NotJudged => "NOT JUDGED",
        }
    }

    /// `pass`, `fail`, `not-judged`: as JSON spells it.
    pub fn key(self) -> &'static str {
        match self {
            Overall::Pass => "pass",
            Overall::Fail => "fail",
            Overall::NotJudged => "not-judged",
        }
    }
}

/// How a run's checkers ended: the one place a checker's result becomes a verdict.
///
/// `violations[i]` is checker `i`'s first violation, if any. A run `stopped` early (at a
/// violation, to save the rest of a fuzz seed) did not reach its end: a check that found
/// nothing by then is not judged (too short), as is every liveness check of a run whose
/// checkers were never finished. Otherwise a check that found nothing is not judged when
/// it says so ([`Checker::not_judged`]: vacuous, could not fail, too short, undecided),
/// and passed otherwise.
pub fn verdicts(
    checkers: &[Box<dyn Checker>],
    violations: Vec<Option<Violation>>,
    stopped: Option<&StoppedAt>,
) -> Vec<CheckVerdict> {
    checkers
        .iter()
        .zip(violations)
        .map(|(c, found)| {
            let judged = c.judged().unwrap_or_else(|| Judged::not_reported(c.name()));
            let verdict = match found {
                Some(v) => Verdict::Fail(v),
                None => match stopped {
                    Some(at) => Verdict::NotJudged(NotJudged::new(
                        Reason::TooShort,
                        format!(
                            "the run stopped at {} ({}), before this check could be judged \
                             to the end",
                            at.time, at.because
                        ),
                    )),
                    None => match c.not_judged() {
                        Some(n) => Verdict::NotJudged(n),
                        None => Verdict::Pass,
                    },
                },
            };
            // The counts say "vacuous" only where the verdict does.
            let mut judged = judged;
            if !matches!(&verdict, Verdict::NotJudged(n) if n.reason == Reason::Vacuous) {
                judged.vacuous = None;
            }
            CheckVerdict {
                check: c.name().to_string(),
                verdict,
                judged,
            }
        })
        .collect()
}

/// Where a run stopped early, and why (`mutual-exclusion was violated`, a limit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoppedAt {
    pub time: tenure_core::SimTime,
    pub because: String,
}

/// Offline: feeds every record of `history` to every checker, finishes them, and gives
/// each its verdict (see [`verdicts`]).
pub fn judge_history(
    history: &tenure_core::History,
    checkers: &mut [Box<dyn Checker>],
) -> Vec<CheckVerdict> {
    let found = crate::run_checkers(history, checkers);
    verdicts(checkers, found, None)
}

/// Finishes `checker` at `info` if it found nothing yet (a helper for hosts that feed
/// records themselves).
pub fn finish_into(checker: &mut dyn Checker, slot: &mut Option<Violation>, info: &RunInfo) {
    if slot.is_none() {
        *slot = checker.finish(info);
    }
}

/// A count of verdicts: `3 passed, 1 failed, 2 not judged`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub passed: u64,
    pub failed: u64,
    pub not_judged: u64,
}

impl Tally {
    pub fn of(verdicts: &[CheckVerdict]) -> Tally {
        let mut t = Tally::default();
        for v in verdicts {
            t.add(&v.verdict);
        }
        t
    }

    pub fn add(&mut self, v: &Verdict) {
        match v {
            Verdict::Pass => self.passed += 1,
            Verdict::Fail(_) => self.failed += 1,
            Verdict::NotJudged(_) => self.not_judged += 1,
        }
    }

    /// `2 passed, 1 not judged` (zero counts left out; `no checks` when all are zero).
    pub fn words(&self) -> String {
        let mut parts = Vec::new();
        if self.passed > 0 {
            parts.push(format!("{} passed", self.passed));
        }
        if self.failed > 0 {
            parts.push(format!("{} failed", self.failed));
        }
        if self.not_judged > 0 {
            parts.push(format!("{} not judged", self.not_judged));
        }
        if parts.is_empty() {
            "no checks".to_string()
        } else {
            parts.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenure_core::SimTime;

    fn cv(check: &str, verdict: Verdict) -> CheckVerdict {
        CheckVerdict {
            check: check.to_string(),
            verdict,
            judged: Judged::not_reported(check),
        }
    }

    fn violation(check: &'static str) -> Violation {
        Violation {
            checker: check,
            time: SimTime(5),
            nodes: vec![],
            message: "broke".into(),
            records: vec![],
        }
    }

    #[test]
    fn a_run_with_no_checks_or_a_check_not_judged_is_not_a_pass() {
        assert_eq!(Overall::of(&[]), Overall::NotJudged);
        let nj = Verdict::NotJudged(NotJudged::new(Reason::TooShort, "ended early"));
        assert_eq!(
            Overall::of(&[cv("a", Verdict::Pass), cv("b", nj.clone())]),
            Overall::NotJudged
        );
        assert_eq!(
            Overall::of(&[cv("a", Verdict::Fail(violation("a"))), cv("b", nj)]),
            Overall::Fail
        );
        assert_eq!(Overall::of(&[cv("a", Verdict::Pass)]), Overall::Pass);
    }

    #[test]
    fn json_names_the_reason_and_the_words_say_it() {
        let v = cv(
            "lock-liveness",
            Verdict::NotJudged(NotJudged::new(Reason::CouldNotFail, "one holder")),
        );
        let j = v.to_json();
        assert_eq!(j["verdict"], "not-judged");
        assert_eq!(j["reason"], "could-not-fail");
        assert_eq!(v.words(), "not judged (could not fail): one holder");
        let t = Tally::of(&[v, cv("x", Verdict::Pass)]);
        assert_eq!(t.words(), "1 passed, 1 not judged");
    }
}
