//! Backoff policies: how long a client waits before it retries a failed attempt (a lock
//! it did not get, an election that did not end).
//!
//! Every lock client (the shared [`Workload`](crate::workload::Workload) loop) and every
//! election that retries takes a [`BackoffPolicy`] from the scenario's
//! `backoff = { policy = "...", base = "...", cap = "..." }` parameter
//! ([`BackoffParams`]). The multi-lock client uses `equal-jitter` from its
//! `backoff = [base, cap]`, the sharded-lock client `uniform` from its `retry_delay`.
//! A [`Backoff`] is one client's state under a policy: how many
//! attempts of the current operation failed, the previous sleep (decorrelated jitter) and
//! the adaptive window. Randomness comes only from the node's seeded [`Rng`], so a
//! retry schedule is a pure function of the seed.
//!
//! The policies (n = failures so far in this operation, counting from 0):
//!
//! | policy | sleep | source |
//! |---|---|---|
//! | `none` | 0: retry at once | the baseline of Brooker (2015), "no backoff" |
//! | `constant` | `base` | a fixed retry interval (e.g. Redis's `SET NX` retry loop, "Distributed locks with Redis") |
//! | `uniform` | uniform in `[base, cap]` | the zoo's historical `retry_backoff = [min, max]` (randomised retry, "Distributed locks with Redis": "retry after a random delay") |
//! | `exponential` | `min(cap, base·2ⁿ)` | binary exponential backoff (Metcalfe and Boggs, "Ethernet", CACM 1976); Brooker (2015) "Exponential" |
//! | `full-jitter` | uniform in `[0, min(cap, base·2ⁿ)]` | Brooker (2015), "Full Jitter" |
//! | `equal-jitter` | `t/2` + uniform in `[0, t/2]`, `t = min(cap, base·2ⁿ)` | Brooker (2015), "Equal Jitter" |
//! | `decorrelated-jitter` | `min(cap, uniform in [base, 3·prev])`, `prev` starting at `base` | Brooker (2015), "Decorrelated Jitter" |
//! | `adaptive` | uniform in `[w/2, w]` over a window `w` that doubles on each failure and shrinks by `base` on each success, within `[base, cap]` | AIMD (Chiu and Jain, "Analysis of the increase and decrease algorithms for congestion avoidance in computer networks", 1989; Jacobson, "Congestion Avoidance and Control", SIGCOMM 1988): multiplicative decrease of the retry rate on contention, additive increase when it clears |
//!
//! Brooker = Marc Brooker, "Exponential Backoff And Jitter", AWS Architecture Blog, 2015.
//! Its lesson, which `tenure compare` over these policies shows: without jitter, clients
//! that collided once retry together and collide again (a "lock storm"); jitter spreads
//! them out, and full or decorrelated jitter cut the work the contended service does.
//!
//! Only the adaptive window outlives an operation: it learns how contended the resource
//! is across acquisitions. Nothing here is durable; a restarted client starts afresh.

use serde::{Deserialize, Serialize};
use std::time::Duration;
use tenure_core::{HumanDuration, ParamError, Rng};

/// How a client spaces its retries. See the module documentation for each policy's
/// formula and source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackoffPolicy {
    None,
    Constant { delay: Duration },
    Uniform { min: Duration, max: Duration },
    Exponential { base: Duration, cap: Duration },
    FullJitter { base: Duration, cap: Duration },
    EqualJitter { base: Duration, cap: Duration },
    DecorrelatedJitter { base: Duration, cap: Duration },
    Adaptive { base: Duration, cap: Duration },
}

/// The policy names a scenario may write, in the order of the module's table.
pub const POLICY_NAMES: [&str; 8] = [
    "none",
    "constant",
    "uniform",
    "exponential",
    "full-jitter",
    "equal-jitter",
    "decorrelated-jitter",
    "adaptive",
];

impl BackoffPolicy {
    /// The longest single wait the policy can draw (its cap, or its fixed delay): what a
    /// liveness bound must allow for one retry.
    pub fn longest(&self) -> Duration {
        match *self {
            BackoffPolicy::None => Duration::ZERO,
            BackoffPolicy::Constant { delay } => delay,
            BackoffPolicy::Uniform { max, .. } => max,
            BackoffPolicy::Exponential { cap, .. }
            | BackoffPolicy::FullJitter { cap, .. }
            | BackoffPolicy::EqualJitter { cap, .. }
            | BackoffPolicy::DecorrelatedJitter { cap, .. }
            | BackoffPolicy::Adaptive { cap, .. } => cap,
        }
    }

    /// How wide the range the first retry delay is drawn from is (zero for the
    /// policies without jitter): how far apart two clients that failed together retry,
    /// at the least (later draws of the exponential policies spread wider).
    pub fn first_spread(&self) -> Duration {
        match *self {
            BackoffPolicy::None
            | BackoffPolicy::Constant { .. }
            | BackoffPolicy::Exponential { .. } => Duration::ZERO,
            BackoffPolicy::Uniform { min, max } => max.saturating_sub(min),
            BackoffPolicy::FullJitter { base, cap } => base.min(cap),
            BackoffPolicy::EqualJitter { base, cap } => base.min(cap) / 2,
            BackoffPolicy::DecorrelatedJitter { base, cap } => {
                base.saturating_mul(3).min(cap).saturating_sub(base)
            }
            BackoffPolicy::Adaptive { base, cap } => base.saturating_mul(2).clamp(base, cap) / 2,
        }
    }

    /// The name a scenario writes.
    pub fn name(&self) -> &'static str {
        match self {
            BackoffPolicy::None => "none",
            BackoffPolicy::Constant { .. } => "constant",
            BackoffPolicy::Uniform { .. } => "uniform",
            BackoffPolicy::Exponential { .. } => "exponential",
            BackoffPolicy::FullJitter { .. } => "full-jitter",
            BackoffPolicy::EqualJitter { .. } => "equal-jitter",
            BackoffPolicy::DecorrelatedJitter { .. } => "decorrelated-jitter",
            BackoffPolicy::Adaptive { .. } => "adaptive",
        }
    }

    /// Builds the named policy from `base` and `cap` (`constant` waits `base`;
    /// `uniform` draws in `[base, cap]`). Errors name the field.
    pub fn from_parts(name: &str, base: Duration, cap: Duration) -> Result<Self, ParamError> {
        let policy = match name {
            "none" => BackoffPolicy::None,
            "constant" => BackoffPolicy::Constant { delay: base },
            "uniform" => BackoffPolicy::Uniform {
                min: base,
                max: cap,
            },
            "exponential" => BackoffPolicy::Exponential { base, cap },
            "full-jitter" => BackoffPolicy::FullJitter { base, cap },
            "equal-jitter" => BackoffPolicy::EqualJitter { base, cap },
            "decorrelated-jitter" => BackoffPolicy::DecorrelatedJitter { base, cap },
            "adaptive" => BackoffPolicy::Adaptive { base, cap },
            other => {
                return Err(ParamError::new(
                    "backoff.policy",
                    format!(
                        "unknown policy `{other}`; known policies: {}",
                        POLICY_NAMES.join(", ")
                    ),
                ))
            }
        };
        policy.validate()?;
        Ok(policy)
    }

    /// Checks the durations; errors name the field.
    pub fn validate(&self) -> Result<(), ParamError> {
        match *self {
            BackoffPolicy::None => Ok(()),
            BackoffPolicy::Constant { delay } if delay.is_zero() => Err(ParamError::new(
                "backoff.base",
                "must be above zero (use policy \"none\" to retry at once)",
            )),
            BackoffPolicy::Constant { .. } => Ok(()),
            BackoffPolicy::Uniform { min, max } => {
                if min > max {
                    Err(ParamError::new(
                        "backoff.cap",
                        "the maximum (cap) is below the minimum (base)",
                    ))
                } else if max.is_zero() {
                    Err(ParamError::new(
                        "backoff.cap",
                        "must allow a pause above zero (use policy \"none\" to retry at once)",
                    ))
                } else {
                    Ok(())
                }
            }
            BackoffPolicy::Exponential { base, cap }
            | BackoffPolicy::FullJitter { base, cap }
            | BackoffPolicy::EqualJitter { base, cap }
            | BackoffPolicy::DecorrelatedJitter { base, cap }
            | BackoffPolicy::Adaptive { base, cap } => {
                if base.is_zero() {
                    Err(ParamError::new("backoff.base", "must be above zero"))
                } else if cap < base {
                    Err(ParamError::new("backoff.cap", "must be at least `base`"))
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// `min(cap, base·2ⁿ)`, without overflow.
fn capped_exponential(base: Duration, cap: Duration, n: u32) -> Duration {
    let factor = 1u32.checked_shl(n.min(31)).unwrap_or(u32::MAX);
    base.saturating_mul(factor).min(cap)
}

/// One client's backoff state under a policy.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Backoff {
    policy: BackoffPolicy,
    /// Failed attempts of the current operation.
    failures: u32,
    /// The previous sleep (decorrelated jitter).
    prev: Duration,
    /// The adaptive window (kept across operations).
    window: Duration,
}

impl Backoff {
    pub fn new(policy: BackoffPolicy) -> Backoff {
        let base = match policy {
            BackoffPolicy::Exponential { base, .. }
            | BackoffPolicy::FullJitter { base, .. }
            | BackoffPolicy::EqualJitter { base, .. }
            | BackoffPolicy::DecorrelatedJitter { base, .. }
            | BackoffPolicy::Adaptive { base, .. } => base,
            BackoffPolicy::Constant { delay } => delay,
            BackoffPolicy::Uniform { min, .. } => min,
            BackoffPolicy::None => Duration::ZERO,
        };
        Backoff {
            policy,
            failures: 0,
            prev: base,
            window: base,
        }
    }

    pub fn policy(&self) -> &BackoffPolicy {
        &self.policy
    }

    /// Failed attempts of the current operation so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// An attempt failed: how long to wait before the next one. Draws from `rng` only
    /// for the policies with jitter.
    pub fn on_failure<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Duration {
        let n = self.failures;
        self.failures = self.failures.saturating_add(1);
        match self.policy {
            BackoffPolicy::None => Duration::ZERO,
            BackoffPolicy::Constant { delay } => delay,
            BackoffPolicy::Uniform { min, max } => rng.duration_between(min, max),
            BackoffPolicy::Exponential { base, cap } => capped_exponential(base, cap, n),
            BackoffPolicy::FullJitter { base, cap } => {
                rng.duration_between(Duration::ZERO, capped_exponential(base, cap, n))
            }
            BackoffPolicy::EqualJitter { base, cap } => {
                let half = capped_exponential(base, cap, n) / 2;
                half + rng.duration_between(Duration::ZERO, half)
            }
            BackoffPolicy::DecorrelatedJitter { base, cap } => {
                let hi = self.prev.saturating_mul(3).max(base);
                let sleep = rng.duration_between(base, hi).min(cap);
                self.prev = sleep;
                sleep
            }
            BackoffPolicy::Adaptive { base, cap } => {
                // Contention: the window doubles (the retry rate halves).
                self.window = self.window.saturating_mul(2).clamp(base, cap);
                rng.duration_between(self.window / 2, self.window)
            }
        }
    }

    /// The operation succeeded (the lock was granted, a leader emerged): the next
    /// operation starts from the first step again; the adaptive window shrinks by `base`
    /// (the retry rate rises).
    pub fn on_success(&mut self) {
        self.reset();
        if let BackoffPolicy::Adaptive { base, cap } = self.policy {
            self.window = self.window.saturating_sub(base).clamp(base, cap);
        }
    }

    /// A new operation starts (or the last one was given up): the per-operation state
    /// (failure count, previous sleep) starts over; the adaptive window is kept.
    pub fn reset(&mut self) {
        self.failures = 0;
        self.prev = Backoff::new(self.policy).prev;
    }
}

/// The scenario's `backoff` table:
/// `backoff = { policy = "full-jitter", base = "10ms", cap = "1s" }`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackoffParams {
    /// One of [`POLICY_NAMES`].
    pub policy: String,
    /// The first (or only) sleep; `uniform`'s minimum. Default 10ms.
    #[serde(default = "default_base")]
    pub base: HumanDuration,
    /// The longest sleep; `uniform`'s maximum. Default 1s.
    #[serde(default = "default_cap")]
    pub cap: HumanDuration,
}

fn default_base() -> HumanDuration {
    HumanDuration(Duration::from_millis(10))
}

fn default_cap() -> HumanDuration {
    HumanDuration(Duration::from_secs(1))
}

impl BackoffParams {
    pub fn policy(&self) -> Result<BackoffPolicy, ParamError> {
        BackoffPolicy::from_parts(&self.policy, self.base.0, self.cap.0)
    }
}

/// The policy a lock protocol's parameters ask for: `backoff` if given, else the
/// historical `retry_backoff = [min, max]` range as a `uniform` policy (errors then name
/// `retry_backoff`).
pub fn lock_policy(
    backoff: Option<&BackoffParams>,
    retry_backoff: (Duration, Duration),
) -> Result<BackoffPolicy, ParamError> {
    match backoff {
        Some(b) => b.policy(),
        None => {
            let (min, max) = retry_backoff;
            let policy = BackoffPolicy::Uniform { min, max };
            if min > max {
                return Err(ParamError::new(
                    "retry_backoff",
                    "the minimum is above the maximum",
                ));
            }
            if max.is_zero() {
                return Err(ParamError::new(
                    "retry_backoff",
                    "must allow a pause above zero, or clients spin",
                ));
            }
            Ok(policy)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenure_core::SplitMix64;

    const MS: Duration = Duration::from_millis(1);

    fn sleeps(policy: BackoffPolicy, n: usize, seed: u64) -> Vec<Duration> {
        let mut b = Backoff::new(policy);
        let mut rng = SplitMix64(seed);
        (0..n).map(|_| b.on_failure(&mut rng)).collect()
    }

    #[test]
    fn none_retries_at_once() {
        assert_eq!(sleeps(BackoffPolicy::None, 3, 1), vec![Duration::ZERO; 3]);
    }

    #[test]
    fn constant_waits_base_every_time() {
        let p = BackoffPolicy::Constant { delay: 7 * MS };
        assert_eq!(sleeps(p, 4, 1), vec![7 * MS; 4]);
    }

    #[test]
    fn uniform_draws_within_its_range_from_the_seed() {
        let p = BackoffPolicy::Uniform {
            min: 50 * MS,
            max: 150 * MS,
        };
        let s = sleeps(p, 200, 3);
        assert!(s.iter().all(|d| (50 * MS..=150 * MS).contains(d)));
        // Not constant, and the same seed draws the same sleeps.
        assert!(s.iter().any(|d| *d != s[0]));
        assert_eq!(s, sleeps(p, 200, 3));
        assert_ne!(s, sleeps(p, 200, 4));
    }

    #[test]
    fn exponential_doubles_up_to_the_cap_without_jitter() {
        let p = BackoffPolicy::Exponential {
            base: 10 * MS,
            cap: 100 * MS,
        };
        assert_eq!(
            sleeps(p, 6, 1),
            vec![10 * MS, 20 * MS, 40 * MS, 80 * MS, 100 * MS, 100 * MS]
        );
        // The same on every seed: that is the storm.
        assert_eq!(sleeps(p, 6, 1), sleeps(p, 6, 99));
        // Far past 32 doublings it neither overflows nor passes the cap.
        assert_eq!(sleeps(p, 80, 1)[79], 100 * MS);
    }

    #[test]
    fn full_jitter_draws_below_the_exponential_ceiling() {
        let p = BackoffPolicy::FullJitter {
            base: 10 * MS,
            cap: 100 * MS,
        };
        for seed in 0..50 {
            let s = sleeps(p, 6, seed);
            for (n, d) in s.iter().enumerate() {
                assert!(*d <= capped_exponential(10 * MS, 100 * MS, n as u32));
            }
        }
        // Jitter: different seeds, different sleeps.
        assert_ne!(sleeps(p, 6, 1), sleeps(p, 6, 2));
    }

    #[test]
    fn equal_jitter_keeps_half_of_the_ceiling() {
        let p = BackoffPolicy::EqualJitter {
            base: 10 * MS,
            cap: 100 * MS,
        };
        for seed in 0..50 {
            for (n, d) in sleeps(p, 6, seed).iter().enumerate() {
                let t = capped_exponential(10 * MS, 100 * MS, n as u32);
                assert!(*d >= t / 2 && *d <= t, "{d:?} outside [{:?}, {t:?}]", t / 2);
            }
        }
        assert_ne!(sleeps(p, 6, 1), sleeps(p, 6, 2));
    }

    #[test]
    fn decorrelated_jitter_stays_within_base_and_three_times_the_previous_sleep() {
        let p = BackoffPolicy::DecorrelatedJitter {
            base: 10 * MS,
            cap: 200 * MS,
        };
        for seed in 0..50 {
            let s = sleeps(p, 10, seed);
            let mut prev = 10 * MS;
            for d in s {
                assert!(d >= 10 * MS && d <= (prev * 3).min(200 * MS));
                prev = d;
            }
        }
        assert_ne!(sleeps(p, 6, 1), sleeps(p, 6, 2));
    }

    #[test]
    fn adaptive_window_doubles_on_contention_and_shrinks_by_base_on_success() {
        let p = BackoffPolicy::Adaptive {
            base: 10 * MS,
            cap: 80 * MS,
        };
        let mut b = Backoff::new(p);
        let mut rng = SplitMix64(5);
        let mut windows = Vec::new();
        for _ in 0..4 {
            let d = b.on_failure(&mut rng);
            assert!(d >= b.window / 2 && d <= b.window);
            windows.push(b.window);
        }
        assert_eq!(windows, vec![20 * MS, 40 * MS, 80 * MS, 80 * MS]);
        // Success: additive decrease of the window, kept for the next operation.
        b.on_success();
        assert_eq!(b.window, 70 * MS);
        assert_eq!(b.failures(), 0);
        for _ in 0..10 {
            b.on_success();
        }
        assert_eq!(b.window, 10 * MS);
        // A new operation keeps what the client learned.
        b.on_failure(&mut rng);
        b.reset();
        assert_eq!(b.window, 20 * MS);
    }

    #[test]
    fn success_and_reset_start_the_exponential_over() {
        let p = BackoffPolicy::Exponential {
            base: 10 * MS,
            cap: 1000 * MS,
        };
        let mut b = Backoff::new(p);
        let mut rng = SplitMix64(1);
        b.on_failure(&mut rng);
        b.on_failure(&mut rng);
        assert_eq!(b.on_failure(&mut rng), 40 * MS);
        b.on_success();
        assert_eq!(b.on_failure(&mut rng), 10 * MS);
        b.reset();
        assert_eq!(b.on_failure(&mut rng), 10 * MS);
    }

    #[test]
    fn params_parse_and_bad_ones_name_the_field() {
        let p: BackoffParams =
            serde_json::from_str(r#"{"policy": "full-jitter", "base": "5ms", "cap": "2s"}"#)
                .unwrap();
        assert_eq!(
            p.policy().unwrap(),
            BackoffPolicy::FullJitter {
                base: 5 * MS,
                cap: Duration::from_secs(2)
            }
        );
        let p: BackoffParams = serde_json::from_str(r#"{"policy": "exponential"}"#).unwrap();
        assert_eq!(
            p.policy().unwrap(),
            BackoffPolicy::Exponential {
                base: 10 * MS,
                cap: Duration::from_secs(1)
            }
        );
        assert!(
            serde_json::from_str::<BackoffParams>(r#"{"policy": "none", "bas": "1ms"}"#).is_err()
        );
        let bad = |policy: &str, base, cap| {
            BackoffPolicy::from_parts(policy, base, cap)
                .unwrap_err()
                .field
        };
        assert_eq!(bad("jitter", MS, MS), "backoff.policy");
        assert_eq!(bad("exponential", Duration::ZERO, MS), "backoff.base");
        assert_eq!(bad("full-jitter", 10 * MS, MS), "backoff.cap");
        assert_eq!(bad("constant", Duration::ZERO, MS), "backoff.base");
        assert_eq!(bad("uniform", 10 * MS, MS), "backoff.cap");
        for name in POLICY_NAMES {
            let p = BackoffPolicy::from_parts(name, 10 * MS, 100 * MS).unwrap();
            assert_eq!(p.name(), name);
        }
    }

    #[test]
    fn the_historical_range_is_a_uniform_policy() {
        assert_eq!(
            lock_policy(None, (50 * MS, 150 * MS)).unwrap(),
            BackoffPolicy::Uniform {
                min: 50 * MS,
                max: 150 * MS
            }
        );
        let e = lock_policy(None, (Duration::ZERO, Duration::ZERO)).unwrap_err();
        assert_eq!(e.field, "retry_backoff");
        let e = lock_policy(None, (2 * MS, MS)).unwrap_err();
        assert_eq!(e.field, "retry_backoff");
        let b = BackoffParams {
            policy: "none".into(),
            base: default_base(),
            cap: default_cap(),
        };
        assert_eq!(
            lock_policy(Some(&b), (2 * MS, MS)).unwrap(),
            BackoffPolicy::None
        );
    }
}
