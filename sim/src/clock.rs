//! A node's clock: `local = offset + (1 + drift) * true_time + jumps`, kept piecewise
//! linear so drift can change mid-run. Monotonic and wall readings are separate: wall
//! jumps move only the wall reading, and timers run on the monotonic one.

use tenure_core::{LocalTime, SimTime};

#[derive(Clone, Debug)]
pub struct NodeClock {
    /// True time at which the current linear piece starts.
    base_true: u64,
    /// Monotonic reading at `base_true`, in ns.
    base_mono: i64,
    /// Local nanoseconds per true nanosecond: `1 + drift`.
    rate: f64,
    /// Wall minus monotonic: the initial offset plus every jump.
    wall_offset: i64,
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
        }
    }

    pub fn monotonic(&self, now: SimTime) -> LocalTime {
        let elapsed = now.0.saturating_sub(self.base_true) as f64;
        LocalTime(self.base_mono.saturating_add((elapsed * self.rate) as i64))
    }

    pub fn wall(&self, now: SimTime) -> LocalTime {
        LocalTime(self.monotonic(now).0.saturating_add(self.wall_offset))
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
        self.base_mono = self.monotonic(now).0;
        self.base_true = now.0;
        self.rate = 1.0 + drift;
    }

    /// The machine reboots at `now`: the monotonic clock starts again from zero (a new
    /// origin), the wall clock reads on as before.
    pub fn reboot(&mut self, now: SimTime) {
        let wall = self.wall(now).0;
        self.base_true = now.0;
        self.base_mono = 0;
        self.wall_offset = wall;
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
}
