//! Liveness bounds derived from a protocol's own parameters, shared by the zoo's
//! `Configurable::promises` (see `tenure_core::Promise`). Every bound is stated with its
//! derivation, so a report says why a wait was too long.

use crate::workload::WorkloadConfig;
use std::time::Duration;
use tenure_core::{format_duration, Cluster, Promise};

fn fmt(d: Duration) -> String {
    format_duration(d)
}

/// Scales `d` for clocks up to `drift` slow (a timer set for `d` fires after
/// `d / (1 - drift)` of true time): `None` when no drift is declared.
pub fn slow_clock(d: Duration, drift: Option<f64>) -> (Duration, String) {
    match drift {
        Some(drift) if drift > 0.0 && drift < 1.0 => (
            d.mul_f64(1.0 / (1.0 - drift)),
            format!(" / (1 - max drift {drift})"),
        ),
        _ => (d, String::new()),
    }
}

/// How long a lock held by a client that crashed or was paused may stay taken, with
/// its derivation: the TTL or session, plus, for servers that expire keys by their wall
/// clock (real Redis), the largest backward wall step the protocol declares, since a
/// backward step of `j` keeps a key `j` longer.
#[derive(Clone, Debug, PartialEq)]
pub struct Lease {
    pub duration: Duration,
    pub text: String,
}

impl Lease {
    /// A plain lease or session of `d`.
    pub fn plain(d: Duration) -> Lease {
        Lease {
            duration: d,
            text: format!("lease {}", fmt(d)),
        }
    }

    /// A key's TTL on a server that expires it by its wall clock, whose wall steps are
    /// declared to stay within `max_wall_jump` (`None`: expiry by a clock no step
    /// moves).
    pub fn ttl(ttl: Duration, max_wall_jump: Option<Duration>) -> Lease {
        match max_wall_jump {
            Some(j) if !j.is_zero() => Lease {
                duration: ttl + j,
                text: format!("(ttl {} + backward wall step max {})", fmt(ttl), fmt(j)),
            },
            _ => Lease {
                duration: ttl,
                text: format!("ttl {}", fmt(ttl)),
            },
        }
    }
}

/// `lock-liveness` for a lock client workload: after the calm, a lock held by a client
/// that crashed or was paused frees within `lease` (its TTL or session), a waiter whose
/// request or reply was lost retries within `request_timeout` plus the longest backoff,
/// and the holder at the calm works at most `work_duration`. Progress form (`fair =
/// false`): some waiter gets it within one such round. Fair form (a FIFO queue): every
/// waiter, behind at most every other client, each holding `work_duration` and each
/// handover costing at most a lease (a lost release notice is found by a resync after a
/// silent lease).
pub fn lock_liveness(
    w: &WorkloadConfig,
    lease: Duration,
    acquire_timeout: Duration,
    drift: Option<f64>,
    cluster: &Cluster,
    fair: bool,
) -> Promise {
    lock_liveness_for(
        w,
        Lease::plain(lease),
        acquire_timeout,
        drift,
        cluster,
        fair,
    )
}

/// [`lock_liveness`] with a [`Lease`] that says how it is derived.
pub fn lock_liveness_for(
    w: &WorkloadConfig,
    lease: Lease,
    acquire_timeout: Duration,
    drift: Option<f64>,
    cluster: &Cluster,
    fair: bool,
) -> Promise {
    let round = lease.duration
        + acquire_timeout
        + w.request_timeout
        + w.backoff.longest()
        + w.work_duration;
    let round_text = format!(
        "{} + acquire timeout {} + request timeout {} + backoff max {} + work {}",
        lease.text,
        fmt(acquire_timeout),
        fmt(w.request_timeout),
        fmt(w.backoff.longest()),
        fmt(w.work_duration)
    );
    let (base, text) = if fair {
        let clients = cluster.count("client").max(1) as u32;
        (
            round + w.work_duration * clients + lease.duration,
            format!(
                "({round_text}) + {clients} clients x work {} + {}",
                fmt(w.work_duration),
                lease.text
            ),
        )
    } else {
        (round, format!("({round_text})"))
    };
    let (within, scale) = slow_clock(base, drift);
    Promise::new("lock-liveness")
        .within(within, format!("{text}{scale}"))
        .with("per_waiter", fair)
}
