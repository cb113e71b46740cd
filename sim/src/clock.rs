//! A node's clock: `local = offset + (1 + drift) * true_time + jumps`, kept piecewise
//! linear so drift can change mid-run. Monotonic and wall readings are separate: wall
//! jumps and slews move only the wall reading, and timers run on the monotonic one.
//!
//! A *stall* (a VM freeze seen from the clock) holds both readings still until its end,
//! then lets them run on from where they stopped: the piece's start is moved into the
//! future, and a reading before it is the piece's first. A *slew* (NTP's `adjtime`)
//! moves the wall reading by a signed amount gradually, at a bounded rate measured on
//! the monotonic clock (so a stall holds it too), instead of in one step.

use tenure_core::{LocalTime, SimTime};

#[derive(Clone, Debug)]
pub struct NodeClock {
    /// True time at which the current linear piece starts.
    base_true: u64,
    /// Monotonic reading at `base_true`, in ns.
    base_mono: i64,
    /// Local nanoseconds per true nanosecond: `1 + drift`.
    rate: f64,
    /// Wall minus monotonic: the initial offset plus every jump (and every slew done).
    wall_offset: i64,
    /// A slew in progress, if any.
    slew: Option<Slew>,
}

/// A wall-clock slew: `by` nanoseconds spread over the monotonic time from `start`, at
/// `rate` wall nanoseconds per monotonic nanosecond.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Slew {
    start: i64,
    by: i64,
    rate: f64,
}

impl Slew {
    /// How far it has moved the wall clock when the monotonic clock reads `mono`.
    fn done(&self, mono: i64) -> i64 {
        let elapsed = mono.saturating_sub(self.start).max(0) as f64;
        let moved = (elapsed * self.rate).min(self.by.unsigned_abs() as f64) as i64;
        moved * self.by.signum()
    }
}

impl NodeClock {
    /// `offset_ns` is where both readings start; `drift` is a fraction (`0.01` runs 1% fast).
    pub fn new(offset_ns: i64, drift: f64) -> NodeClock {
        assert!(
            drift > -1.0,
            "a clock must move forward (drift {drift} <= -1)"
        );
        NodeClock {
            base_true: 0,
            base_mono: offset_ns,
            rate: 1.0 + drift,
            wall_offset: 0,
            slew: None,
        }
    }

    pub fn monotonic(&self, now: SimTime) -> LocalTime {
        let elapsed = now.0.saturating_sub(self.base_true) as f64;
        LocalTime(self.base_mono.saturating_add((elapsed * self.rate) as i64))
    }

    pub fn wall(&self, now: SimTime) -> LocalTime {
        let mono = self.monotonic(now).0;
        let slewed = self.slew.map_or(0, |s| s.done(mono));
        LocalTime(mono.saturating_add(self.wall_offset).saturating_add(slewed))
    }

    /// The clock stands still from `now` for `duration` of true time, then runs on at
    /// its rate from the reading it stopped at (no jump: it ends `duration * (1 +
    /// drift)` behind where it would have been). Both readings stall; a slew in progress
    /// waits too (it is measured on the monotonic clock). A stall during a stall ends
    /// at the later of the two ends.
    pub fn stall(&mut self, now: SimTime, duration: std::time::Duration) {
        let until = now.0.saturating_add(duration.as_nanos() as u64);
        self.base_mono = self.monotonic(now).0;
        self.base_true = self.base_true.max(until);
    }

    /// Whether the clock is stalled at `now`.
    pub fn stalled(&self, now: SimTime) -> bool {
        now.0 < self.base_true
    }

    /// NTP slewing: from `now` the wall clock moves by `by_ns` gradually, `ppm`
    /// millionths of the monotonic time elapsed, until it has moved by all of it. A
    /// slew still in progress is cut where it is and replaced (as `adjtime(3)`
    /// replaces the outstanding adjustment). The monotonic reading is not slewed.
    pub fn slew(&mut self, now: SimTime, by_ns: i64, ppm: f64) {
        assert!(ppm > 0.0, "a slew moves at a positive rate");
        self.settle_slew(now);
        self.slew = (by_ns != 0).then(|| Slew {
            start: self.monotonic(now).0,
            by: by_ns,
            rate: ppm / 1e6,
        });
    }

    /// Folds the part of the slew done by `now` into the wall offset and keeps the
    /// rest going from `now`.
    fn settle_slew(&mut self, now: SimTime) {
        if let Some(s) = self.slew.take() {
            let mono = self.monotonic(now).0;
            let done = s.done(mono);
            self.wall_offset = self.wall_offset.saturating_add(done);
            let rest = s.by - done;
            self.slew = (rest != 0).then_some(Slew {
                start: mono,
                by: rest,
                rate: s.rate,
            });
        }
    }

    /// How much of the slew in progress is still to come at `now` (0 if none).
    pub fn slew_remaining(&self, now: SimTime) -> i64 {
        self.slew
            .map_or(0, |s| s.by - s.done(self.monotonic(now).0))
    }

    /// Steps the wall clock by `by_ns` (forward if positive). Monotonic is untouched.
    pub fn jump(&mut self, by_ns: i64) {
        self.wall_offset = self.wall_offset.saturating_add(by_ns);
    }

    /// From `now` on, the clock runs at `1 + drift`.
    pub fn set_drift(&mut self, now: SimTime, drift: f64) {
        assert!(
            drift > -1.0,
            "a clock must move forward (drift {drift} <= -1)"
        );
        // A stall in progress keeps its end: the new rate applies from there.
        self.base_mono = self.monotonic(now).0;
        self.base_true = self.base_true.max(now.0);
        self.rate = 1.0 + drift;
    }

    /// The machine reboots at `now`: the monotonic clock starts again from zero (a new
    /// origin), the wall clock reads on as before. A stall or slew in progress ends
    /// there (the kernel's outstanding `adjtime` adjustment is lost with it).
    pub fn reboot(&mut self, now: SimTime) {
        let wall = self.wall(now).0;
        self.base_true = now.0;
        self.base_mono = 0;
        self.wall_offset = wall;
        self.slew = None;
    }

    pub fn drift(&self) -> f64 {
        self.rate - 1.0
    }

    /// The true time at which the monotonic clock reads `deadline` (never before `now`).
    pub fn true_time_at(&self, now: SimTime, deadline: LocalTime) -> SimTime {
        let mono_now = self.monotonic(now);
        if deadline <= mono_now {
            return now;
        }
        // Solve base_mono + (t - base_true) * rate >= deadline for the first t at or
        // after which the reading has reached the deadline.
        let local_ns = (deadline.0 as f64) - (self.base_mono as f64);
        let mut t = self
            .base_true
            .saturating_add((local_ns / self.rate).ceil() as u64);
        // Float rounding: at most a step or two. Bounded, so that a reading that
        // saturates (a huge drift or offset) cannot spin here.
        for _ in 0..16 {
            if self.monotonic(SimTime(t)) >= deadline || t == u64::MAX {
                break;
            }
            t += 1;
        }
        SimTime(t.max(now.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_fast_clock_reaches_its_deadline_early_in_true_time() {
        let fast = NodeClock::new(0, 0.10);
        let deadline = LocalTime(110 * MS as i64);
        assert_eq!(fast.true_time_at(SimTime(0), deadline), SimTime(100 * MS));
        let slow = NodeClock::new(0, -0.5);
        assert_eq!(
            slow.true_time_at(SimTime(0), LocalTime(50 * MS as i64)),
            SimTime(100 * MS)
        );
    }

    #[test]
    fn wall_jumps_leave_monotonic_alone() {
        let mut c = NodeClock::new(5 * MS as i64, 0.0);
        c.jump(-(3 * MS as i64));
        assert_eq!(c.monotonic(SimTime(MS)), LocalTime(6 * MS as i64));
        assert_eq!(c.wall(SimTime(MS)), LocalTime(3 * MS as i64));
    }

    #[test]
    fn drift_changes_are_continuous() {
        let mut c = NodeClock::new(0, 0.0);
        c.set_drift(SimTime(100 * MS), 1.0);
        assert_eq!(c.monotonic(SimTime(100 * MS)), LocalTime(100 * MS as i64));
        assert_eq!(c.monotonic(SimTime(150 * MS)), LocalTime(200 * MS as i64));
        assert_eq!(
            c.true_time_at(SimTime(100 * MS), LocalTime(300 * MS as i64)),
            SimTime(200 * MS)
        );
    }

    #[test]
    fn extreme_clocks_saturate_instead_of_panicking_or_spinning() {
        for (offset, drift) in [(i64::MAX - 5, 1e300), (i64::MIN + 5, 1e-300), (0, 1e18)] {
            let mut c = NodeClock::new(offset, drift);
            c.jump(i64::MAX);
            let now = SimTime(5 * MS);
            let far = LocalTime(c.monotonic(now).0.saturating_add(1));
            assert!(c.true_time_at(now, far) >= now);
            c.set_drift(now, 99.0);
            assert!(c.true_time_at(now, LocalTime(i64::MAX)) >= now);
        }
    }

    #[test]
    fn a_reboot_restarts_monotonic_and_keeps_wall() {
        let mut c = NodeClock::new(5 * MS as i64, 0.5);
        let before = c.wall(SimTime(10 * MS));
        c.reboot(SimTime(10 * MS));
        assert_eq!(c.monotonic(SimTime(10 * MS)), LocalTime(0));
        assert_eq!(c.wall(SimTime(10 * MS)), before);
        assert_eq!(c.monotonic(SimTime(12 * MS)), LocalTime(3 * MS as i64));
    }

    #[test]
    fn deadlines_in_the_past_fire_now() {
        let c = NodeClock::new(0, 0.0);
        assert_eq!(c.true_time_at(SimTime(7), LocalTime(3)), SimTime(7));
    }

    #[test]
    fn a_stall_freezes_both_readings_then_resumes_without_a_jump() {
        let mut c = NodeClock::new(0, 0.0);
        c.jump(7 * MS as i64);
        c.stall(SimTime(100 * MS), std::time::Duration::from_millis(300));
        for t in [100, 150, 399, 400] {
            assert_eq!(
                c.monotonic(SimTime(t * MS)),
                LocalTime(100 * MS as i64),
                "{t}"
            );
            assert_eq!(c.wall(SimTime(t * MS)), LocalTime(107 * MS as i64), "{t}");
        }
        assert!(c.stalled(SimTime(399 * MS)) && !c.stalled(SimTime(400 * MS)));
        // Then it runs on from where it stopped, 300ms behind.
        assert_eq!(c.monotonic(SimTime(450 * MS)), LocalTime(150 * MS as i64));
        // A timer due at 120ms of monotonic time fires 300ms late in true time.
        assert_eq!(
            c.true_time_at(SimTime(200 * MS), LocalTime(120 * MS as i64)),
            SimTime(420 * MS)
        );
        // A drift change inside the stall does not end it.
        c.stall(SimTime(500 * MS), std::time::Duration::from_millis(100));
        c.set_drift(SimTime(550 * MS), 1.0);
        assert_eq!(c.monotonic(SimTime(600 * MS)), LocalTime(200 * MS as i64));
        assert_eq!(c.monotonic(SimTime(610 * MS)), LocalTime(220 * MS as i64));
    }

    #[test]
    fn a_slew_converges_at_its_rate_and_leaves_monotonic_alone() {
        let mut c = NodeClock::new(0, 0.0);
        // -200ms at ntpd's 500ppm takes 400s of clock time.
        c.slew(SimTime(0), -200 * MS as i64, 500.0);
        let s = 1_000 * MS;
        assert_eq!(
            c.wall(SimTime(100 * s)).0,
            (100 * s) as i64 - 50 * MS as i64
        );
        assert_eq!(c.monotonic(SimTime(100 * s)).0, (100 * s) as i64);
        assert_eq!(c.slew_remaining(SimTime(100 * s)), -150 * MS as i64);
        assert_eq!(
            c.wall(SimTime(400 * s)).0,
            (400 * s) as i64 - 200 * MS as i64
        );
        assert_eq!(
            c.wall(SimTime(900 * s)).0,
            (900 * s) as i64 - 200 * MS as i64
        );
        assert_eq!(c.slew_remaining(SimTime(900 * s)), 0);
        // Never faster than the rate: between any two readings the wall clock moves
        // within 500ppm of the monotonic clock.
        let mut c = NodeClock::new(0, 0.01);
        c.slew(SimTime(0), 30 * MS as i64, 500.0);
        let mut last = (c.monotonic(SimTime(0)).0, c.wall(SimTime(0)).0);
        for k in 1..200u64 {
            let t = SimTime(k * 337 * MS);
            let (m, w) = (c.monotonic(t).0, c.wall(t).0);
            let (dm, dw) = ((m - last.0) as f64, (w - last.1) as f64);
            assert!(dw >= dm && dw <= dm * 1.0005 + 1.0, "{k}: {dm} {dw}");
            last = (m, w);
        }
        assert_eq!(c.slew_remaining(SimTime(200 * 337 * MS)), 0);
    }

    #[test]
    fn a_new_slew_replaces_the_rest_and_a_stall_holds_a_slew() {
        let s = 1_000 * MS;
        let mut c = NodeClock::new(0, 0.0);
        c.slew(SimTime(0), 100 * MS as i64, 1000.0);
        c.slew(SimTime(50 * s), -10 * MS as i64, 1000.0);
        // 50ms done by 50s; then -10ms over 10s.
        assert_eq!(c.wall(SimTime(70 * s)).0, (70 * s) as i64 + 40 * MS as i64);
        let mut c = NodeClock::new(0, 0.0);
        c.slew(SimTime(0), 100 * MS as i64, 1000.0);
        c.stall(SimTime(10 * s), std::time::Duration::from_secs(10));
        assert_eq!(c.wall(SimTime(20 * s)).0, (10 * s) as i64 + 10 * MS as i64);
        assert_eq!(c.wall(SimTime(30 * s)).0, (20 * s) as i64 + 20 * MS as i64);
        // A reboot ends the slew where it is.
        c.reboot(SimTime(30 * s));
        assert_eq!(c.wall(SimTime(40 * s)).0, (30 * s) as i64 + 20 * MS as i64);
    }
}
