//! The disk as the simulator models it: writes reach the operating system at once and
//! become durable at a sync; a process crash keeps what was written, a power loss keeps
//! only what was synced; a sync takes the node's fsync latency and the handler's later
//! effects wait for it; crash points land between two effects of a handler; disk
//! stalls and errors.
//!
//! The protocol under test is `Journal`: every 10 ms it writes `w<n>`, syncs after
//! even `n` (or after every write, with `sync_every`), and notes what it did. At boot
//! it notes the keys it finds on disk.

use std::time::Duration;
use tenure_core::{Cluster, Env, NodeId, Observation, Protocol, Record, SimTime, StorageExt as _};
use tenure_sim::{RunOutput, Sim};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Journal {
    sync_every: bool,
    n: u32,
}

const TICK: Duration = Duration::from_millis(10);

impl Protocol for Journal {
    type Msg = ();
    type Timer = ();
    type Config = bool;

    fn new(sync_every: &bool, _me: NodeId, _cluster: &Cluster) -> Self {
        Journal {
            sync_every: *sync_every,
            n: 0,
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<(), ()>) {
        let keys: Vec<String> = (1..100)
            .map(|i| format!("w{i}"))
            .filter(|k| env.get(k).is_some())
            .collect();
        self.n = keys.len() as u32;
        env.observe(note(format!("boot {}", keys.join(","))));
        env.set_timer((), TICK);
    }

    fn on_message(&mut self, _env: &mut dyn Env<(), ()>, _from: NodeId, _msg: ()) {}

    fn on_timer(&mut self, env: &mut dyn Env<(), ()>, _timer: ()) {
        self.n += 1;
        let n = self.n;
        env.observe(note(format!("write {n}")));
        env.store(&format!("w{n}"), &n);
        if self.sync_every || n.is_multiple_of(2) {
            match env.sync() {
                Ok(()) => env.observe(note(format!("synced {n}"))),
                Err(_) => env.observe(note(format!("sync failed {n}"))),
            }
        }
        env.set_timer((), TICK);
    }
}

fn note(text: String) -> Observation {
    Observation::Note { text }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn journal(sync_every: bool) -> Sim<Journal> {
    Sim::<Journal>::new(Cluster::uniform("node", 1), sync_every, 7).duration(ms(200))
}

fn notes(out: &RunOutput) -> Vec<(SimTime, String)> {
    out.history
        .records
        .iter()
        .filter_map(|r| match &r.obs {
            Observation::Note { text } => Some((r.time, text.clone())),
            _ => None,
        })
        .collect()
}

/// The text of every note that starts with `prefix`.
fn noted(out: &RunOutput, prefix: &str) -> Vec<String> {
    notes(out)
        .into_iter()
        .filter(|(_, t)| t.starts_with(prefix))
        .map(|(_, t)| t)
        .collect()
}

fn first_note(out: &RunOutput, text: &str) -> SimTime {
    notes(out)
        .into_iter()
        .find(|(_, t)| t == text)
        .unwrap_or_else(|| panic!("no note `{text}` in {:?}", notes(out)))
        .0
}

fn starts(out: &RunOutput) -> Vec<&Record> {
    out.history
        .records
        .iter()
        .filter(|r| r.obs == Observation::Started)
        .collect()
}

/// Writes w1..w5 (synced after w2 and w4), then the node dies at 55 ms and boots at
/// 60 ms.
fn killed_at_55ms(power: bool) -> RunOutput {
    journal(false)
        .at(ms(55), move |c| {
            if power {
                c.power_loss(NodeId(0))
            } else {
                c.crash(NodeId(0))
            }
        })
        .at(ms(60), |c| c.restart(NodeId(0)))
        .run()
}

#[test]
fn a_power_loss_loses_exactly_the_unsynced_writes() {
    let out = killed_at_55ms(true);
    assert_eq!(noted(&out, "boot"), ["boot ", "boot w1,w2,w3,w4"]);
}

#[test]
fn a_crash_keeps_unsynced_writes() {
    let out = killed_at_55ms(false);
    assert_eq!(noted(&out, "boot"), ["boot ", "boot w1,w2,w3,w4,w5"]);
}

#[test]
fn the_monotonic_clock_restarts_after_a_power_loss_but_not_after_a_crash() {
    let power = killed_at_55ms(true);
    let reboot = starts(&power)[1];
    assert!(reboot.time >= SimTime::from_duration(ms(60)), "{reboot:?}");
    assert!(reboot.mono.0 <= ms(6).as_nanos() as i64, "{reboot:?}");
    assert!(
        reboot.wall.0 >= ms(60).as_nanos() as i64,
        "wall reads on: {reboot:?}"
    );
    let crash = killed_at_55ms(false);
    assert!(starts(&crash)[1].mono.0 >= ms(60).as_nanos() as i64);
}

#[test]
fn a_sync_delays_the_effects_after_it_by_the_fsync_latency() {
    let out = journal(true)
        .fsync(NodeId(0), ms(30), ms(30))
        .duration(ms(100))
        .run();
    let wrote = first_note(&out, "write 1");
    let synced = first_note(&out, "synced 1");
    let waited = synced.0 - wrote.0;
    // madsim wakes a task at most 1 ms late.
    assert!(
        (ms(30).as_nanos() as u64..=ms(31).as_nanos() as u64).contains(&waited),
        "waited {waited} ns"
    );
    // The next tick is set after the sync, so ticks come every 40 ms.
    let second = first_note(&out, "write 2");
    assert!(
        second.0 - wrote.0 >= ms(40).as_nanos() as u64,
        "{:?}",
        notes(&out)
    );
}

/// w1 is written at 10 ms and its sync runs until 40 ms; the node dies at 25 ms.
fn killed_inside_the_fsync_window(power: bool) -> RunOutput {
    journal(true)
        .fsync(NodeId(0), ms(30), ms(30))
        .at(ms(25), move |c| {
            if power {
                c.power_loss(NodeId(0))
            } else {
                c.crash(NodeId(0))
            }
        })
        .at(ms(50), |c| c.restart(NodeId(0)))
        .duration(ms(60))
        .run()
}

#[test]
fn a_power_loss_inside_the_fsync_window_loses_the_write_and_what_waited_for_it() {
    let out = killed_inside_the_fsync_window(true);
    assert_eq!(noted(&out, "boot"), ["boot ", "boot "]);
    assert!(noted(&out, "synced").is_empty(), "{:?}", notes(&out));
}

#[test]
fn a_crash_inside_the_fsync_window_keeps_the_write_but_not_what_waited_for_it() {
    let out = killed_inside_the_fsync_window(false);
    assert_eq!(noted(&out, "boot"), ["boot ", "boot w1"]);
    assert!(noted(&out, "synced").is_empty(), "{:?}", notes(&out));
}

/// Armed at 5 ms, the crash point lands inside the first tick (10 ms): its effects are
/// the note `write 1` (1), the write (2), the sync (3), the note `synced 1` (4) and the
/// timer (5).
fn crash_point(after: u32, power: bool) -> RunOutput {
    journal(true)
        .at(ms(5), move |c| c.crash_point(NodeId(0), after, power))
        .at(ms(50), |c| c.restart(NodeId(0)))
        .duration(ms(60))
        .trace(true)
        .run()
}

#[test]
fn a_crash_point_between_the_write_and_the_sync() {
    let out = crash_point(2, false);
    assert_eq!(noted(&out, "write"), ["write 1"]);
    assert!(noted(&out, "synced").is_empty());
    // The write reached the OS: a process crash keeps it.
    assert_eq!(noted(&out, "boot"), ["boot ", "boot w1"]);
    let crashed = out
        .history
        .records
        .iter()
        .find(|r| r.obs == Observation::Crashed)
        .expect("crashed");
    let tick = ms(10).as_nanos() as u64;
    assert!(
        (tick..tick + 1_000_000).contains(&crashed.time.0),
        "{crashed:?}"
    );
    let traced = out.trace.as_ref().unwrap().iter().any(|e| {
        matches!(e, tenure_sim::TraceEvent::Fault { kind: "crash", detail, .. }
            if detail == "crash point, after a write")
    });
    assert!(traced, "the trace names the crash point");
}

#[test]
fn a_power_loss_crash_point_before_the_sync_loses_the_write() {
    let out = crash_point(2, true);
    assert_eq!(noted(&out, "boot"), ["boot ", "boot "]);
}

#[test]
fn a_power_loss_crash_point_after_the_sync_keeps_the_write() {
    let out = crash_point(3, true);
    assert_eq!(noted(&out, "boot"), ["boot ", "boot w1"]);
    assert!(
        noted(&out, "synced 1").is_empty(),
        "crashed before the note"
    );
}

/// The fifth effect (the timer) is the tick's last: the node crashes right after it, at
/// the tick (10 ms), not at its next effect (the next tick, 20 ms, whose input the crash
/// would swallow). The fourth (the note) is followed by the timer in the same handling:
/// the crash comes before the timer, at the same instant.
#[test]
fn a_crash_point_at_a_handlers_last_effect_crashes_right_after_it() {
    let crashed_at = |out: &RunOutput| {
        out.history
            .records
            .iter()
            .find(|r| r.obs == Observation::Crashed)
            .expect("crashed")
            .time
            .0
    };
    let tick = ms(10).as_nanos() as u64;
    let detail = |out: &RunOutput| {
        out.trace.as_ref().unwrap().iter().find_map(|e| match e {
            tenure_sim::TraceEvent::Fault {
                kind: "crash",
                detail,
                ..
            } => Some(detail.clone()),
            _ => None,
        })
    };
    let last = crash_point(5, false);
    assert!(
        (tick..tick + 1_000_000).contains(&crashed_at(&last)),
        "{:?}",
        notes(&last)
    );
    assert_eq!(noted(&last, "synced"), ["synced 1"]);
    assert!(noted(&last, "write 2").is_empty(), "{:?}", notes(&last));
    assert_eq!(
        detail(&last).as_deref(),
        Some("crash point, after a timer set")
    );
    // Control: one effect earlier (the note), the crash is before the timer, at the same
    // tick.
    let before = crash_point(4, false);
    assert!((tick..tick + 1_000_000).contains(&crashed_at(&before)));
    assert_eq!(
        detail(&before).as_deref(),
        Some("crash point, after an observation")
    );
}

#[test]
fn a_disk_error_fails_syncs_and_a_power_loss_then_loses_the_writes() {
    let out = journal(true)
        .at(ms(5), |c| c.disk_error(NodeId(0), ms(20)))
        .at(ms(35), |c| c.power_loss(NodeId(0)))
        .at(ms(40), |c| c.restart(NodeId(0)))
        .duration(ms(60))
        .run();
    assert_eq!(
        noted(&out, "sync failed"),
        ["sync failed 1", "sync failed 2"]
    );
    // w3 at 30 ms synced everything written so far.
    assert_eq!(noted(&out, "boot"), ["boot ", "boot w1,w2,w3"]);
}

#[test]
fn a_disk_stall_holds_a_sync_until_it_ends() {
    let out = journal(true)
        .fsync(NodeId(0), ms(2), ms(2))
        .at(ms(5), |c| c.disk_stall(NodeId(0), ms(50)))
        .duration(ms(100))
        .run();
    let synced = first_note(&out, "synced 1");
    let expected = ms(57).as_nanos() as u64;
    assert!(
        (expected..=expected + 1_000_000).contains(&synced.0),
        "{:?}",
        notes(&out)
    );
}

#[test]
fn disk_faults_replay_byte_identically() {
    let run = |seed: u64| {
        Sim::<Journal>::new(Cluster::uniform("node", 1), false, seed)
            .duration(ms(300))
            .fsync(NodeId(0), ms(1), ms(20))
            .at(ms(33), |c| c.crash_point(NodeId(0), 3, true))
            .at(ms(60), |c| c.restart(NodeId(0)))
            .at(ms(90), |c| c.disk_stall(NodeId(0), ms(40)))
            .at(ms(150), |c| c.power_loss(NodeId(0)))
            .at(ms(170), |c| c.restart(NodeId(0)))
            .trace(true)
            .run()
    };
    for seed in 0..5 {
        let (a, b) = (run(seed), run(seed));
        assert_eq!(
            tenure_sim::trace_hash(a.trace.as_ref().unwrap()),
            tenure_sim::trace_hash(b.trace.as_ref().unwrap()),
            "seed {seed}"
        );
    }
    let (a, b) = (run(1), run(2));
    assert_ne!(notes(&a), notes(&b), "fsync latencies come from the seed");
}
