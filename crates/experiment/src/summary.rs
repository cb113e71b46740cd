//! Percentiles of a set of trials. A trial that never finished (it hit its time cap)
//! counts as longer than every trial that did, so a percentile that falls on one is
//! unknown ("beyond the cap") rather than silently dropped, and so is the mean.

use std::time::Duration;

/// The spread of one set of trials, in milliseconds. `None` means "beyond the cap".
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub trials: usize,
    /// Trials that did not finish within the cap.
    pub unfinished: usize,
    pub min: Option<f64>,
    pub p10: Option<f64>,
    pub p25: Option<f64>,
    pub median: Option<f64>,
    pub mean: Option<f64>,
    pub p75: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

impl Summary {
    /// The fields in table order, with their names.
    pub fn fields(&self) -> [(&'static str, Option<f64>); 9] {
        [
            ("min", self.min),
            ("p10", self.p10),
            ("p25", self.p25),
            ("median", self.median),
            ("mean", self.mean),
            ("p75", self.p75),
            ("p90", self.p90),
            ("p99", self.p99),
            ("max", self.max),
        ]
    }
}

/// Summarises trials (`None`: did not finish). Percentiles are nearest-rank: the p-th
/// percentile of n sorted values is the value at rank ceil(p * n / 100).
pub fn summarize(values: &[Option<Duration>]) -> Summary {
    assert!(!values.is_empty(), "a summary needs at least one trial");
    let mut finished: Vec<Duration> = values.iter().flatten().copied().collect();
    finished.sort();
    let n = values.len();
    let unfinished = n - finished.len();
    let rank = |p: u32| -> Option<f64> {
        let k = (p as usize * n).div_ceil(100).max(1);
        finished.get(k - 1).map(|d| ms(*d))
    };
    let mean = (unfinished == 0).then(|| {
        let total: u128 = finished.iter().map(Duration::as_nanos).sum();
        round_us(total as f64 / n as f64 / 1e6)
    });
    Summary {
        trials: n,
        unfinished,
        min: rank(0),
        p10: rank(10),
        p25: rank(25),
        median: rank(50),
        mean,
        p75: rank(75),
        p90: rank(90),
        p99: rank(99),
        max: rank(100),
    }
}

/// Milliseconds, rounded to the microsecond (so printing is stable).
pub fn ms(d: Duration) -> f64 {
    round_us(d.as_nanos() as f64 / 1e6)
}

fn round_us(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(ms: u64) -> Option<Duration> {
        Some(Duration::from_millis(ms))
    }

    #[test]
    fn nearest_rank_percentiles_of_finished_trials() {
        let values: Vec<_> = (1..=10).map(|i| d(i * 10)).collect();
        let s = summarize(&values);
        assert_eq!(s.trials, 10);
        assert_eq!(s.unfinished, 0);
        assert_eq!(s.min, Some(10.0));
        assert_eq!(s.p10, Some(10.0));
        assert_eq!(s.p25, Some(30.0));
        assert_eq!(s.median, Some(50.0));
        assert_eq!(s.mean, Some(55.0));
        assert_eq!(s.p75, Some(80.0));
        assert_eq!(s.p90, Some(90.0));
        assert_eq!(s.p99, Some(100.0));
        assert_eq!(s.max, Some(100.0));
    }

    #[test]
    fn unfinished_trials_sort_last_and_hide_the_mean() {
        let values = vec![d(30), None, d(10), None];
        let s = summarize(&values);
        assert_eq!(s.unfinished, 2);
        assert_eq!(s.min, Some(10.0));
        assert_eq!(s.median, Some(30.0), "rank 2 of [10, 30, -, -]");
        assert_eq!(s.p75, None);
        assert_eq!(s.max, None);
        assert_eq!(
            s.mean, None,
            "the mean of trials that never ended is unknown"
        );
    }

    #[test]
    fn nothing_finished_means_nothing_known() {
        let s = summarize(&[None, None]);
        assert!(s.fields().iter().all(|(_, v)| v.is_none()));
    }

    #[test]
    fn milliseconds_are_rounded_to_the_microsecond() {
        assert_eq!(ms(Duration::from_nanos(1_234_567)), 1.235);
    }
}
