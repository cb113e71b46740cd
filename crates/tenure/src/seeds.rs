//! Which seeds a sweep runs, and how a failing seed is replayed.
//!
//! `TENURE_SEED=N` runs exactly seed `N` (the replay command a failure prints);
//! `TENURE_SEEDS=A..B` (or `A..=B`) overrides a sweep's range. The test's name comes from
//! the test harness, which runs each `#[test]` on a thread named after it.

use std::ops::Range;

/// The variable that runs exactly one seed.
pub const SEED_VAR: &str = "TENURE_SEED";
/// The variable that overrides a sweep's range.
pub const SEEDS_VAR: &str = "TENURE_SEEDS";

/// What a sweep runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeedPlan {
    /// Exactly this seed (`TENURE_SEED`): the regressions file is not consulted.
    One(u64),
    /// The regressions file's seeds first, then this range.
    Range(Range<u64>),
}

/// The plan from the two variables' values (`None` when unset) and the test's range.
/// An unreadable value is an error that names the variable.
pub fn plan(
    seed: Option<&str>,
    seeds: Option<&str>,
    range: Range<u64>,
) -> Result<SeedPlan, String> {
    if let Some(text) = seed {
        let n = text.trim().parse::<u64>().map_err(|_| {
            format!("{SEED_VAR}=`{text}` is not a seed; write a whole number, e.g. {SEED_VAR}=42")
        })?;
        return Ok(SeedPlan::One(n));
    }
    match seeds {
        Some(text) => parse_range(text).map(SeedPlan::Range),
        None => Ok(SeedPlan::Range(range)),
    }
}

/// The plan from the process environment.
pub fn plan_from_env(range: Range<u64>) -> Result<SeedPlan, String> {
    let seed = std::env::var(SEED_VAR).ok();
    let seeds = std::env::var(SEEDS_VAR).ok();
    plan(seed.as_deref(), seeds.as_deref(), range)
}

/// `A..B` (end excluded) or `A..=B` (end included).
fn parse_range(text: &str) -> Result<Range<u64>, String> {
    let bad =
        || format!("{SEEDS_VAR}=`{text}` is not a seed range; write e.g. {SEEDS_VAR}=0..1000");
    let t = text.trim();
    let (lo, hi, inclusive) = if let Some((lo, hi)) = t.split_once("..=") {
        (lo, hi, true)
    } else if let Some((lo, hi)) = t.split_once("..") {
        (lo, hi, false)
    } else {
        return Err(bad());
    };
    let lo: u64 = lo.trim().parse().map_err(|_| bad())?;
    let hi: u64 = hi.trim().parse().map_err(|_| bad())?;
    let end = if inclusive {
        hi.checked_add(1).ok_or_else(bad)?
    } else {
        hi
    };
    if end < lo {
        return Err(format!("{SEEDS_VAR}=`{text}` ends before it starts"));
    }
    Ok(lo..end)
}

/// The running test's name (`module::test`), from the harness's thread name; `None`
/// outside a test thread.
pub fn current_test_name() -> Option<String> {
    let thread = std::thread::current();
    match thread.name() {
        Some("main") | None => None,
        Some(name) => Some(name.to_string()),
    }
}

/// The command that replays `seed` of `test` in `package`.
pub fn replay_command(seed: u64, package: Option<&str>, test: &str) -> String {
    match package {
        Some(p) => format!("{SEED_VAR}={seed} cargo test -p {p} {test}"),
        None => format!("{SEED_VAR}={seed} cargo test {test}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_range_is_used_when_nothing_is_set() {
        assert_eq!(plan(None, None, 0..500), Ok(SeedPlan::Range(0..500)));
    }

    #[test]
    fn one_seed_wins_over_a_range() {
        assert_eq!(
            plan(Some("17"), Some("0..9"), 0..500),
            Ok(SeedPlan::One(17))
        );
        assert_eq!(plan(Some(" 17 "), None, 0..500), Ok(SeedPlan::One(17)));
    }

    #[test]
    fn a_range_overrides_the_tests() {
        assert_eq!(
            plan(None, Some("100..200"), 0..5),
            Ok(SeedPlan::Range(100..200))
        );
        assert_eq!(plan(None, Some("3..=5"), 0..5), Ok(SeedPlan::Range(3..6)));
        assert_eq!(plan(None, Some("7..7"), 0..5), Ok(SeedPlan::Range(7..7)));
    }

    #[test]
    fn bad_values_name_the_variable() {
        assert_eq!(
            plan(Some("forty"), None, 0..5),
            Err(
                "TENURE_SEED=`forty` is not a seed; write a whole number, e.g. TENURE_SEED=42"
                    .into()
            )
        );
        assert_eq!(
            plan(None, Some("100"), 0..5),
            Err("TENURE_SEEDS=`100` is not a seed range; write e.g. TENURE_SEEDS=0..1000".into())
        );
        assert_eq!(
            plan(None, Some("9..2"), 0..5),
            Err("TENURE_SEEDS=`9..2` ends before it starts".into())
        );
        assert!(plan(None, Some("0..=18446744073709551615"), 0..5).is_err());
    }

    #[test]
    fn the_test_name_is_the_harness_thread_name() {
        let name = current_test_name().expect("tests run on named threads");
        assert!(
            name.ends_with("the_test_name_is_the_harness_thread_name"),
            "{name}"
        );
    }

    #[test]
    fn replay_commands_name_the_package_when_known() {
        assert_eq!(
            replay_command(17, Some("my-election"), "finds_the_bug"),
            "TENURE_SEED=17 cargo test -p my-election finds_the_bug"
        );
        assert_eq!(replay_command(3, None, "t"), "TENURE_SEED=3 cargo test t");
    }
}
